//! Plugin specs: the strings of IREE's repeatable `--executable_plugin` flag,
//! extended with load parameters.
//!
//! # Grammar
//!
//! ```text
//! spec   = [prefix] path ["?" params]
//! params = pair *("&" pair)
//! pair   = key ["=" value]
//! ```
//!
//! - `path` is everything before the first `?`, taken literally (no
//!   decoding), so a library path cannot contain `?`. It must not be empty.
//! - The part before `?` goes to the first [`Loader`] of the list that
//!   claims it ([`Loader::claim`], `docs/src/reference/specs.md#loader-selection`):
//!   `static:NAME` to [`xplug_providers::STATIC`] (a plugin linked into the
//!   binary), `embedded:PATH` or a path ending in `.sos` to
//!   [`xplug_providers::EMBEDDED_ELF`], a prefix a registered loader
//!   claims to that loader, anything else to
//!   [`xplug_providers::SYSTEM_LIBRARY`] (the system loader). The
//!   [`SpecTarget`] holds the loader and what it was given.
//! - `key` and `value` are percent-decoded: `%XX` (two hex digits, either
//!   case) is the byte `0xXX`, so any byte, including `&`, `=`, `%`, `:` and
//!   `;`, can be passed. `+` is **not** a space: it stays a literal `+`
//!   (these are not HTML form submissions, and values such as `+1` are more
//!   likely than spaces); write a space as `%20`.
//! - The key `sha256` is reserved: `path.so?sha256=HEX` pins the plugin's
//!   code to that SHA-256 hash (64 hex digits, what `sha256sum` and
//!   `xplug pin` print). It is not passed to the plugin; the loader hashes
//!   the bytes it maps and refuses others ([`PluginSpec::sha256`],
//!   `docs/src/reference/specs.md#pinned-plugins`). Given twice, or not 64 hex digits,
//!   the spec is refused.
//! - A key that spells a reserved key (`sha256`, `swappable`) any other
//!   way, judged by its letters and digits alone in any case after
//!   percent-decoding (`SHA256`, `sha256%20`, `sha-256`), is refused: a
//!   pin is never passed to the plugin as a parameter by mistake.
//!   (`sha%32%35%36` decodes to `sha256` exactly, so it is the key.)
//! - A pair without `=` has an empty value (a flag). Keys must not be empty.
//!   Empty pairs (`a=1&&b=2`, a trailing `&` or `?`) are rejected rather
//!   than guessed at. Repeated keys are kept, in order.
//!
//! ```
//! use xplug_manager::providers::{EMBEDDED_ELF, STATIC, SYSTEM_LIBRARY};
//! use xplug_manager::spec::{PluginSpec, SpecTarget};
//!
//! let spec = PluginSpec::parse("/opt/libfast.so?scale=3&name=a%26b&flag").unwrap();
//! assert_eq!(spec.target(), &SpecTarget::new(&SYSTEM_LIBRARY, "/opt/libfast.so"));
//! assert_eq!(
//!     spec.params(),
//!     [(b"scale".to_vec(), b"3".to_vec()), (b"name".to_vec(), b"a&b".to_vec()), (b"flag".to_vec(), vec![])]
//! );
//!
//! assert_eq!(PluginSpec::parse("embedded:k.bin").unwrap().target(), &SpecTarget::new(&EMBEDDED_ELF, "k.bin"));
//! assert_eq!(PluginSpec::parse("kernels.sos").unwrap().target().loader().name(), "embedded ELF");
//! // A static plugin is a name, not a path.
//! let linked = PluginSpec::parse("static:sample_static").unwrap();
//! assert_eq!(linked.target(), &SpecTarget::new(&STATIC, "sample_static"));
//! assert!(PluginSpec::parse("lib.so?=1").unwrap_err().to_string().contains("`lib.so?=1`"));
//! ```

use std::fmt;

use xplug_providers::{AllowList, Code, LoadParamList, Loader, PinPolicy, Sha256Digest};

use crate::Error;

pub use xplug_providers::{EMBEDDED_PREFIX, EMBEDDED_SUFFIX, STATIC_PREFIX};

/// The environment variable [`env_specs`] reads (for
/// [`crate::Manager::from_env`] and tools that register its plugins among
/// others).
pub const ENV_VAR: &str = "XPLUG_PLUGINS";
/// The separator between specs in [`ENV_VAR`]: `;` on Windows (where paths
/// contain `:`), `:` elsewhere.
pub const ENV_SEPARATOR: char = if cfg!(windows) { ';' } else { ':' };

/// What a spec names, and the loader that takes it: the first of the
/// list ([`xplug_providers::loaders`], or a manager's own,
/// [`crate::Manager::loaders`]) whose [`Loader::claim`] accepts the spec.
#[derive(Clone)]
pub struct SpecTarget {
    loader: &'static dyn Loader,
    target: String,
}

impl fmt::Debug for SpecTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpecTarget")
            .field("loader", &self.loader.name())
            .field("target", &self.target)
            .finish()
    }
}

/// Equal when the same loader takes the same target.
impl PartialEq for SpecTarget {
    fn eq(&self, other: &Self) -> bool {
        self.loader.name() == other.loader.name() && self.target == other.target
    }
}

impl Eq for SpecTarget {}

impl SpecTarget {
    /// `target`, for `loader`.
    #[must_use]
    pub fn new(loader: &'static dyn Loader, target: impl Into<String>) -> Self {
        Self { loader, target: target.into() }
    }

    /// The loader that claimed the spec.
    #[must_use]
    pub fn loader(&self) -> &'static dyn Loader {
        self.loader
    }

    /// What the loader is given: the file path or the name, as written in
    /// the spec without the loader's prefix.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.target
    }

    /// Opens the code the target names with its loader ([`Loader::open`]),
    /// by path: it checks neither a spec's pin nor an allow-list
    /// ([`PluginSpec::open`] does).
    ///
    /// # Errors
    /// The loader's error.
    ///
    /// # Safety
    /// As [`Loader::open`]: the code must be a trusted v0 plugin.
    pub unsafe fn open(&self) -> Result<Code, xplug_providers::Error> {
        // SAFETY: forwarded to the caller.
        unsafe { self.loader.open(&self.target) }
    }
}

/// A parsed plugin spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginSpec {
    original: String,
    target: SpecTarget,
    params: Vec<(Vec<u8>, Vec<u8>)>,
    sha256: Option<Sha256Digest>,
    /// `?swappable` was given ([`SWAPPABLE_KEY`]).
    swappable: bool,
}

/// The reserved parameter key that pins a spec's code (`?sha256=HEX`).
pub const SHA256_KEY: &str = "sha256";

/// The reserved spec parameter that loads a plugin as swappable
/// ([`crate::Manager::load_swappable`]); it is not passed to the plugin.
pub const SWAPPABLE_KEY: &str = "swappable";

impl PluginSpec {
    /// Parses `spec` (grammar in the module documentation), giving it to
    /// the first of the program's loaders ([`xplug_providers::loaders`])
    /// that claims it.
    ///
    /// # Errors
    /// [`Error::InvalidSpec`], quoting the spec, when it is empty, has an
    /// empty path, an empty parameter, an empty key, a bad `%` escape, a
    /// malformed `sha256`, or a key that spells a reserved key
    /// ([`SHA256_KEY`], [`SWAPPABLE_KEY`]) other than exactly.
    pub fn parse(spec: &str) -> Result<Self, Error> {
        Self::parse_with(spec, &xplug_providers::loaders())
    }

    /// Parses `spec`, giving it to the first of `loaders` that claims it.
    ///
    /// # Errors
    /// As [`PluginSpec::parse`]; also when no loader claims the spec.
    pub fn parse_with(spec: &str, loaders: &[&'static dyn Loader]) -> Result<Self, Error> {
        let invalid = |reason: String| Error::InvalidSpec { spec: spec.to_owned(), reason };
        if spec.is_empty() {
            return Err(invalid("the spec is empty; give a plugin library path".into()));
        }
        let (body, query) = match spec.split_once('?') {
            Some((body, query)) => (body, Some(query)),
            None => (spec, None),
        };
        let Some((loader, path)) = loaders.iter().find_map(|loader| Some((*loader, loader.claim(body)?)))
        else {
            let names: Vec<&str> = loaders.iter().map(|loader| loader.name()).collect();
            return Err(invalid(format!("no loader takes it (loaders: {})", names.join(", "))));
        };
        if path.is_empty() {
            return Err(invalid("no library path before the parameters".into()));
        }
        let mut params = Vec::new();
        let mut sha256 = None;
        let mut swappable = false;
        if let Some(query) = query {
            for (number, pair) in query.split('&').enumerate() {
                if pair.is_empty() {
                    return Err(invalid(format!(
                        "parameter {} is empty; separate `key=value` pairs with single `&`s and \
                         do not end the spec with `?` or `&`",
                        number + 1
                    )));
                }
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                if key.is_empty() {
                    return Err(invalid(format!("parameter `{pair}` has an empty key")));
                }
                let key = percent_decode(key).map_err(&invalid)?;
                let value = percent_decode(value).map_err(&invalid)?;
                if let Some(reserved) = reserved_spelling(&key)
                    && key != reserved.as_bytes()
                {
                    return Err(invalid(format!(
                        "parameter key `{}` reads as the reserved key `{reserved}` (keys are compared by \
                         their letters and digits alone, in any case, so a pin is never passed to the \
                         plugin by mistake); write it exactly `{reserved}`",
                        String::from_utf8_lossy(&key).escape_debug()
                    )));
                }
                if key == SHA256_KEY.as_bytes() {
                    if sha256.is_some() {
                        return Err(invalid("`sha256` is given twice; pin one hash".into()));
                    }
                    let hex = String::from_utf8_lossy(&value);
                    sha256 = Some(Sha256Digest::parse(&hex).map_err(|reason| {
                        invalid(format!("`sha256` (a reserved key, never passed to the plugin): {reason}"))
                    })?);
                    continue;
                }
                if key == SWAPPABLE_KEY.as_bytes() {
                    if !value.is_empty() {
                        return Err(invalid(format!(
                            "`{SWAPPABLE_KEY}` is a reserved flag and takes no value; write `?{SWAPPABLE_KEY}`"
                        )));
                    }
                    swappable = true;
                    continue;
                }
                params.push((key, value));
            }
        }
        let target = SpecTarget::new(loader, path);
        Ok(Self { original: spec.to_owned(), target, params, sha256, swappable })
    }

    /// The spec as written.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.original
    }

    /// What the spec names (and so the loader that takes it).
    #[must_use]
    pub fn target(&self) -> &SpecTarget {
        &self.target
    }

    /// The hash the spec pins its code to (`?sha256=HEX`), if any.
    #[must_use]
    pub fn sha256(&self) -> Option<&Sha256Digest> {
        self.sha256.as_ref()
    }

    /// The spec as written, pinned to `digest`: its `sha256` parameter
    /// replaced (or added), every other part kept as written. What
    /// `xplug pin` prints.
    ///
    /// ```
    /// use xplug_manager::providers::Sha256Digest;
    /// use xplug_manager::spec::PluginSpec;
    ///
    /// let digest = Sha256Digest::of(b"code");
    /// let pinned = PluginSpec::parse("libfast.so?threads=4")?.pinned(&digest);
    /// assert_eq!(pinned, format!("libfast.so?threads=4&sha256={digest}"));
    /// // Pinning again replaces the hash.
    /// let again = PluginSpec::parse(&pinned)?.pinned(&Sha256Digest::of(b"rebuilt"));
    /// assert_eq!(PluginSpec::parse(&again)?.sha256(), Some(&Sha256Digest::of(b"rebuilt")));
    /// assert_eq!(PluginSpec::parse(&again)?.params(), [(b"threads".to_vec(), b"4".to_vec())]);
    /// # Ok::<(), xplug_manager::Error>(())
    /// ```
    #[must_use]
    pub fn pinned(&self, digest: &Sha256Digest) -> String {
        let (body, query) = self.original.split_once('?').unwrap_or((&self.original, ""));
        // Parsing accepted every pair: only the reserved key is dropped.
        let mut pairs: Vec<String> = query
            .split('&')
            .filter(|pair| {
                let key = pair.split_once('=').map_or(*pair, |(key, _)| key);
                !pair.is_empty() && percent_decode(key).ok().as_deref() != Some(SHA256_KEY.as_bytes())
            })
            .map(str::to_owned)
            .collect();
        pairs.push(format!("{SHA256_KEY}={digest}"));
        format!("{body}?{}", pairs.join("&"))
    }

    /// Opens the code the spec names: by path as [`SpecTarget::open`] when
    /// nothing is checked; otherwise pinned ([`xplug_providers::open_verified`]):
    /// the bytes are read once, their hash is checked against the spec's
    /// `sha256` and each of `allow_lists`, and those bytes are mapped.
    /// Plugins linked into the program (`static:`) are excepted from the
    /// allow-lists (a pin on one is refused).
    ///
    /// # Errors
    /// [`xplug_providers::Error::HashMismatch`],
    /// [`xplug_providers::Error::NotAllowed`] (nothing mapped), or the
    /// loader's error.
    ///
    /// # Safety
    /// As [`Loader::open`]: the code must be a trusted v0 plugin.
    pub unsafe fn open_verified(&self, allow_lists: &[&AllowList]) -> Result<Code, xplug_providers::Error> {
        let loader = self.target.loader();
        let linked_in = loader.name() == xplug_providers::STATIC.name();
        let policy = PinPolicy {
            sha256: self.sha256.as_ref(),
            allow_lists: if linked_in { &[] } else { allow_lists },
        };
        if policy.is_empty() {
            // SAFETY: forwarded to the caller.
            return unsafe { self.target.open() };
        }
        // SAFETY: forwarded to the caller.
        unsafe { xplug_providers::open_verified(loader, self.target.as_str(), &policy) }
    }

    /// Opens the code the spec names as [`PluginSpec::open_verified`] does,
    /// with the allow-list the `XPLUG_ALLOWED_PLUGINS` environment variable
    /// names, if any ([`AllowList::from_env`]).
    ///
    /// # Errors
    /// As [`PluginSpec::open_verified`]; the allow-list's error when it
    /// cannot be read or is malformed, or when the variable is set but
    /// empty (nothing is opened).
    ///
    /// # Safety
    /// As [`Loader::open`].
    pub unsafe fn open(&self) -> Result<Code, xplug_providers::Error> {
        let env_list = AllowList::from_env()?;
        // SAFETY: forwarded to the caller.
        unsafe { self.open_verified(&env_list.iter().collect::<Vec<_>>()) }
    }

    /// True when the spec asks for a swappable plugin (`?swappable`,
    /// [`SWAPPABLE_KEY`]), which [`crate::Manager::load_spec`] loads as
    /// [`crate::Manager::load_swappable`] does.
    ///
    /// ```
    /// use xplug_manager::spec::PluginSpec;
    ///
    /// let spec = PluginSpec::parse("libkernels.so?swappable&factor=2")?;
    /// assert!(spec.is_swappable());
    /// assert_eq!(spec.params(), [(b"factor".to_vec(), b"2".to_vec())]); // not passed to the plugin
    /// # Ok::<(), xplug_manager::Error>(())
    /// ```
    #[must_use]
    pub fn is_swappable(&self) -> bool {
        self.swappable
    }

    /// The decoded load parameters, in order.
    #[must_use]
    pub fn params(&self) -> &[(Vec<u8>, Vec<u8>)] {
        &self.params
    }

    /// The decoded load parameters as the list a plugin's `load` receives.
    ///
    /// ```
    /// use xplug_manager::spec::PluginSpec;
    ///
    /// let spec = PluginSpec::parse("libscale.so?factor=2&name=a%20b")?;
    /// let params = spec.load_params();
    /// assert_eq!(params.iter().collect::<Vec<_>>(), [(&b"factor"[..], &b"2"[..]), (b"name", b"a b")]);
    /// # Ok::<(), xplug_manager::Error>(())
    /// ```
    #[must_use]
    pub fn load_params(&self) -> LoadParamList {
        self.params.iter().cloned().collect()
    }
}

/// The reserved key ([`SHA256_KEY`], [`SWAPPABLE_KEY`]) a decoded `key`
/// names by its ASCII letters and digits alone, in any case (`SHA256`,
/// `sha256 `, `sha-256`, `Swappable%00`): a spec that spells a reserved key
/// any other way than exactly is refused, so a pin is never silently
/// passed to the plugin as a parameter.
fn reserved_spelling(key: &[u8]) -> Option<&'static str> {
    let normal: Vec<u8> =
        key.iter().filter(|byte| byte.is_ascii_alphanumeric()).map(u8::to_ascii_lowercase).collect();
    [SHA256_KEY, SWAPPABLE_KEY].into_iter().find(|reserved| normal == reserved.as_bytes())
}

/// Decodes `%XX` escapes; every other byte (including `+`) is kept.
fn percent_decode(text: &str) -> Result<Vec<u8>, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let digits = bytes.get(i + 1..i + 3);
            let value = digits
                .and_then(|digits| std::str::from_utf8(digits).ok())
                .filter(|digits| digits.bytes().all(|b| b.is_ascii_hexdigit()))
                .and_then(|digits| u8::from_str_radix(digits, 16).ok());
            match value {
                Some(value) => {
                    out.push(value);
                    i += 3;
                }
                None => {
                    let shown: String = text[i..].chars().take(3).collect();
                    return Err(format!(
                        "bad escape `{shown}` in `{text}`: `%` must be followed by two hex digits \
                         (write a literal `%` as `%25`)"
                    ));
                }
            }
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(out)
}

/// The specs listed in [`ENV_VAR`], split by [`split_spec_list`] on
/// [`ENV_SEPARATOR`]; none when the variable is unset. The one place xplug
/// reads the variable: [`crate::Manager::from_env`] loads what it returns,
/// and a tool that registers other plugins around them (the `xplug` CLI)
/// loads each with [`crate::Manager::load_spec`].
///
/// # Errors
/// [`Error::InvalidEnvironment`] when the value is not UTF-8.
///
/// # Thread-safety
/// Reads the environment; do not call while another thread modifies it.
pub fn env_specs() -> Result<Vec<String>, Error> {
    let Some(value) = std::env::var_os(ENV_VAR) else {
        return Ok(Vec::new());
    };
    let value = value.into_string().map_err(|raw| Error::InvalidEnvironment {
        variable: ENV_VAR,
        reason: format!("its value {raw:?} is not valid UTF-8; percent-encode parameter bytes"),
    })?;
    Ok(split_spec_list(&value, ENV_SEPARATOR))
}

/// Splits the value of [`ENV_VAR`] into specs: on `separator`, skipping
/// empty entries. On Unix the separator `:` also splits a loader's prefix
/// from its target (`embedded:x`, `static:x`); an entry that is exactly a
/// loader's prefix without its `:` (a loader of
/// [`xplug_providers::loaders`] claims `entry:` with an empty target) is
/// therefore joined back to the entry after it. A `:` inside a parameter
/// value must be written `%3A`.
#[must_use]
pub fn split_spec_list(value: &str, separator: char) -> Vec<String> {
    let loaders = xplug_providers::loaders();
    let is_prefix = |entry: &str| {
        let spec = format!("{entry}:");
        loaders.iter().any(|loader| loader.claim(&spec) == Some(""))
    };
    let mut specs = Vec::new();
    let mut pending_prefix: Option<&str> = None;
    for entry in value.split(separator) {
        if entry.is_empty() {
            continue;
        }
        if separator == ':' && pending_prefix.is_none() && is_prefix(entry) {
            pending_prefix = Some(entry);
            continue;
        }
        match pending_prefix.take() {
            Some(prefix) => specs.push(format!("{prefix}:{entry}")),
            None => specs.push(entry.to_owned()),
        }
    }
    if let Some(prefix) = pending_prefix {
        // A dangling prefix with nothing after it: keep it so parsing
        // reports it with an empty path.
        specs.push(format!("{prefix}:"));
    }
    specs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_specs_name_a_linked_plugin() {
        let spec = PluginSpec::parse("static:sample_static?k=v").unwrap();
        assert_eq!(spec.target(), &SpecTarget::new(&xplug_providers::STATIC, "sample_static"));
        assert_eq!(spec.params(), [(b"k".to_vec(), b"v".to_vec())]);
        assert!(PluginSpec::parse("static:").is_err());
        assert_eq!(
            split_spec_list("static:a:/x/libb.so:embedded:c.bin", ':'),
            ["static:a", "/x/libb.so", "embedded:c.bin"]
        );
    }

    fn pairs(spec: &str) -> Vec<(String, String)> {
        PluginSpec::parse(spec)
            .unwrap()
            .params()
            .iter()
            .map(|(k, v)| (String::from_utf8(k.clone()).unwrap(), String::from_utf8(v.clone()).unwrap()))
            .collect()
    }

    fn reason(spec: &str) -> String {
        let error = PluginSpec::parse(spec).unwrap_err();
        assert_eq!(error.code(), xplug_providers::abi::StatusCode::INVALID_ARGUMENT);
        let text = error.to_string();
        assert!(text.contains(&format!("`{spec}`")), "message does not quote the spec: {text}");
        text
    }

    #[test]
    fn plain_paths() {
        let spec = PluginSpec::parse("libplugin.so").unwrap();
        assert_eq!(spec.target(), &SpecTarget::new(&xplug_providers::SYSTEM_LIBRARY, "libplugin.so"));
        assert!(spec.params().is_empty());
        assert_eq!(spec.as_str(), "libplugin.so");
        // Paths are literal: `%` and `+` and `=` stay as written.
        assert_eq!(PluginSpec::parse("/a/b%20c+d=e.so").unwrap().target().as_str(), "/a/b%20c+d=e.so");
        // `embedded:` only counts as a prefix.
        assert_eq!(PluginSpec::parse("/x/embedded:y.so").unwrap().target().loader().name(), "system library");
    }

    #[test]
    fn parameters_are_decoded_in_order() {
        assert_eq!(pairs("p.so?scale=3"), [("scale".into(), "3".into())]);
        assert_eq!(
            pairs("p.so?a=1&b=&c&a=2"),
            [
                ("a".into(), "1".into()),
                ("b".into(), String::new()),
                ("c".into(), String::new()),
                ("a".into(), "2".into())
            ]
        );
        assert_eq!(pairs("p.so?k%3Dx=v%26w%25"), [("k=x".into(), "v&w%".into())]);
        assert_eq!(
            pairs("p.so?plus=a+b&space=a%20b"),
            [("plus".into(), "a+b".into()), ("space".into(), "a b".into())]
        );
        assert_eq!(pairs("p.so?v=x=y"), [("v".into(), "x=y".into())], "only the first `=` splits");
        assert_eq!(pairs("p.so?hex=%4a%4A"), [("hex".into(), "JJ".into())]);
        let raw = PluginSpec::parse("p.so?bin=%00%ff").unwrap();
        assert_eq!(raw.params()[0].1, [0x00, 0xff]);
    }

    #[test]
    fn embedded_specs() {
        let spec = PluginSpec::parse("embedded:/k/x.bin?a=1").unwrap();
        assert_eq!(spec.target(), &SpecTarget::new(&xplug_providers::EMBEDDED_ELF, "/k/x.bin"));
        assert_eq!(PluginSpec::parse("x.sos?a=1").unwrap().target().loader().name(), "embedded ELF");
        assert_eq!(PluginSpec::parse("x.sos").unwrap().target().as_str(), "x.sos");
    }

    #[test]
    fn malformed_specs_are_rejected_with_the_spec_quoted() {
        assert!(reason("").contains("empty"));
        assert!(reason("?a=1").contains("no library path"));
        assert!(reason("embedded:").contains("no library path"));
        assert!(reason("p.so?").contains("parameter 1 is empty"));
        assert!(reason("p.so?a=1&").contains("parameter 2 is empty"));
        assert!(reason("p.so?a=1&&b=2").contains("parameter 2 is empty"));
        assert!(reason("p.so?=1").contains("empty key"));
        assert!(reason("p.so?a=%").contains("bad escape `%`"));
        assert!(reason("p.so?a=%4").contains("bad escape `%4`"));
        assert!(reason("p.so?a=%zz").contains("bad escape `%zz`"));
        assert!(reason("p.so?%g1=1").contains("bad escape"));
        assert!(reason("p.so?a=%é").contains("bad escape"), "a non-ASCII byte after `%` is no escape");
    }

    #[test]
    fn a_reserved_key_spelled_any_other_way_is_refused_never_passed_on() {
        let hex = "ab".repeat(32);
        // Percent-encoding is the grammar's: the decoded key is the key.
        let encoded = PluginSpec::parse(&format!("p.so?sha%32%35%36={hex}")).unwrap();
        assert_eq!(encoded.sha256().map(ToString::to_string), Some(hex.clone()));
        assert!(encoded.params().is_empty());
        assert!(PluginSpec::parse("p.so?swapp%61ble").unwrap().is_swappable());
        for key in [
            "SHA256",
            "Sha256",
            "sha256%20",
            "%20sha256",
            "sha%20256",
            "sha256%09",
            "sha256%00",
            "SHA%32%35%36",
            "sha256%E2%80%8B",
            "%EF%BB%BFsha256",
            "sha-256",
            "sha_256",
        ] {
            let reason = reason(&format!("p.so?{key}={hex}"));
            assert!(reason.contains("reads as the reserved key `sha256`"), "{key}: {reason}");
        }
        for key in ["SWAPPABLE", "swappable%20", "Swappable%00"] {
            let reason = reason(&format!("p.so?{key}"));
            assert!(reason.contains("reads as the reserved key `swappable`"), "{key}: {reason}");
        }
        // Other keys are the plugin's, whatever their case.
        assert_eq!(
            pairs("p.so?Sha=1&sha2567=2"),
            [("Sha".into(), "1".into()), ("sha2567".into(), "2".into())]
        );
    }

    #[test]
    fn sha256_is_a_reserved_key_never_passed_to_the_plugin() {
        let hex = "ab".repeat(32);
        let spec = PluginSpec::parse(&format!("p.so?k=1&sha256={hex}&j=2")).unwrap();
        assert_eq!(spec.sha256().map(ToString::to_string), Some(hex.clone()));
        assert_eq!(pairs(&format!("p.so?k=1&sha256={}", hex.to_uppercase())), [("k".into(), "1".into())]);
        assert_eq!(PluginSpec::parse("p.so?k=1").unwrap().sha256(), None);
        assert!(reason(&format!("p.so?sha256={hex}&sha256={hex}")).contains("given twice"));
        assert!(reason("p.so?sha256=abc").contains("64 hex digits"));
        assert!(reason(&format!("p.so?sha256={}zz", "a".repeat(62))).contains("not a hex digit"));
        assert!(reason("p.so?sha256").contains("reserved key"), "an empty pin is malformed");
    }

    #[test]
    fn env_lists() {
        assert_eq!(split_spec_list("", ':'), Vec::<String>::new());
        assert_eq!(split_spec_list("a.so::b.so?x=1:", ':'), ["a.so", "b.so?x=1"]);
        assert_eq!(split_spec_list("a.so:embedded:k.bin:b.so", ':'), ["a.so", "embedded:k.bin", "b.so"]);
        assert_eq!(split_spec_list("embedded", ':'), ["embedded:"]);
        assert_eq!(split_spec_list(r"C:\a.dll;;embedded:k.bin", ';'), [r"C:\a.dll", "embedded:k.bin"]);
    }
}
