//! Plugin specs: the strings of IREE's repeatable `--executable_plugin` flag,
//! extended with load parameters.
//!
//! # Grammar
//!
//! ```text
//! spec   = ["embedded:" | "static:"] path ["?" params]
//! params = pair *("&" pair)
//! pair   = key ["=" value]
//! ```
//!
//! - `path` is everything before the first `?`, taken literally (no
//!   decoding), so a library path cannot contain `?`. It must not be empty.
//! - The `embedded:` prefix, or a path ending in `.sos`, names a file for
//!   the embedded ELF loader ([`SpecTarget::EmbeddedElf`]); `static:NAME`
//!   names a plugin linked into the binary ([`SpecTarget::Static`]);
//!   anything else a file for the system loader
//!   ([`SpecTarget::SystemLibrary`]).
//! - `key` and `value` are percent-decoded: `%XX` (two hex digits, either
//!   case) is the byte `0xXX`, so any byte, including `&`, `=`, `%`, `:` and
//!   `;`, can be passed. `+` is **not** a space: it stays a literal `+`
//!   (these are not HTML form submissions, and values such as `+1` are more
//!   likely than spaces); write a space as `%20`.
//! - A pair without `=` has an empty value (a flag). Keys must not be empty.
//!   Empty pairs (`a=1&&b=2`, a trailing `&` or `?`) are rejected rather
//!   than guessed at. Repeated keys are kept, in order.
//!
//! ```
//! use xplug_manager::spec::{PluginSpec, SpecTarget};
//!
//! let spec = PluginSpec::parse("/opt/libfast.so?scale=3&name=a%26b&flag").unwrap();
//! assert_eq!(spec.target(), &SpecTarget::SystemLibrary { path: "/opt/libfast.so".into() });
//! assert_eq!(spec.path(), Some("/opt/libfast.so"));
//! assert_eq!(
//!     spec.params(),
//!     [(b"scale".to_vec(), b"3".to_vec()), (b"name".to_vec(), b"a&b".to_vec()), (b"flag".to_vec(), vec![])]
//! );
//!
//! assert_eq!(
//!     PluginSpec::parse("embedded:k.bin").unwrap().target(),
//!     &SpecTarget::EmbeddedElf { path: "k.bin".into() }
//! );
//! assert!(matches!(PluginSpec::parse("kernels.sos").unwrap().target(), SpecTarget::EmbeddedElf { .. }));
//! // A static plugin is a name, not a path.
//! let linked = PluginSpec::parse("static:sample_static").unwrap();
//! assert_eq!(linked.target(), &SpecTarget::Static { name: "sample_static".into() });
//! assert_eq!(linked.path(), None);
//! assert!(PluginSpec::parse("lib.so?=1").unwrap_err().to_string().contains("`lib.so?=1`"));
//! ```

use xplug_providers::LoadParamList;

use crate::Error;

/// The prefix that selects the embedded ELF loader.
pub const EMBEDDED_PREFIX: &str = "embedded:";
/// The prefix naming a plugin linked into the binary (`static:NAME`).
pub const STATIC_PREFIX: &str = "static:";

/// The file suffix that selects the embedded ELF loader.
pub const EMBEDDED_SUFFIX: &str = ".sos";
/// The environment variable [`env_specs`] reads (for
/// [`crate::Manager::from_env`] and tools that register its plugins among
/// others).
pub const ENV_VAR: &str = "XPLUG_PLUGINS";
/// The separator between specs in [`ENV_VAR`]: `;` on Windows (where paths
/// contain `:`), `:` elsewhere.
pub const ENV_SEPARATOR: char = if cfg!(windows) { ';' } else { ':' };

/// What a spec names, and so which loader takes it: a file for one of the
/// two file loaders, or a plugin linked into the binary.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpecTarget {
    /// A shared library for the operating system's loader
    /// (`dlopen`/`LoadLibrary`).
    SystemLibrary {
        /// The file, as written.
        path: String,
    },
    /// An embedded ELF file (`embedded:PATH`, or a path ending in `.sos`) for
    /// xplug's own loader.
    EmbeddedElf {
        /// The file, as written (without `embedded:`).
        path: String,
    },
    /// A plugin linked into the binary, found by name among
    /// `xplug_providers::static_plugins()` (`static:NAME`).
    Static {
        /// The plugin's registered name.
        name: String,
    },
}

impl SpecTarget {
    /// The file path or the static plugin's name, as written in the spec.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            Self::SystemLibrary { path } | Self::EmbeddedElf { path } => path,
            Self::Static { name } => name,
        }
    }
}

/// A parsed plugin spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginSpec {
    original: String,
    target: SpecTarget,
    params: Vec<(Vec<u8>, Vec<u8>)>,
}

impl PluginSpec {
    /// Parses `spec` (grammar in the module documentation).
    ///
    /// # Errors
    /// [`Error::InvalidSpec`], quoting the spec, when it is empty, has an
    /// empty path, an empty parameter, an empty key or a bad `%` escape.
    pub fn parse(spec: &str) -> Result<Self, Error> {
        let invalid = |reason: String| Error::InvalidSpec { spec: spec.to_owned(), reason };
        if spec.is_empty() {
            return Err(invalid("the spec is empty; give a plugin library path".into()));
        }
        let (explicit_embedded, rest) = match spec.strip_prefix(EMBEDDED_PREFIX) {
            Some(rest) => (true, rest),
            None => (false, spec),
        };
        let (is_static, rest) = match rest.strip_prefix(STATIC_PREFIX) {
            Some(name) if !explicit_embedded => (true, name),
            _ => (false, rest),
        };
        let (path, query) = match rest.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (rest, None),
        };
        if path.is_empty() {
            return Err(invalid("no library path before the parameters".into()));
        }
        let mut params = Vec::new();
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
                params.push((key, value));
            }
        }
        let target = if is_static {
            SpecTarget::Static { name: path.to_owned() }
        } else if explicit_embedded || path.ends_with(EMBEDDED_SUFFIX) {
            SpecTarget::EmbeddedElf { path: path.to_owned() }
        } else {
            SpecTarget::SystemLibrary { path: path.to_owned() }
        };
        Ok(Self { original: spec.to_owned(), target, params })
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

    /// The file the spec names (without `embedded:` and without
    /// parameters); `None` for a static plugin, which is a name.
    #[must_use]
    pub fn path(&self) -> Option<&str> {
        match &self.target {
            SpecTarget::SystemLibrary { path } | SpecTarget::EmbeddedElf { path } => Some(path),
            SpecTarget::Static { .. } => None,
        }
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
/// empty entries. On Unix the separator `:` also splits `embedded:x` and
/// `static:x`; an entry that is exactly `embedded` or `static` is therefore
/// joined back to the entry after it. A `:` inside a parameter value must be
/// written `%3A`.
#[must_use]
pub fn split_spec_list(value: &str, separator: char) -> Vec<String> {
    let prefixes = [EMBEDDED_PREFIX, STATIC_PREFIX];
    let mut specs = Vec::new();
    let mut pending_prefix: Option<&str> = None;
    for entry in value.split(separator) {
        if entry.is_empty() {
            continue;
        }
        if separator == ':'
            && pending_prefix.is_none()
            && let Some(prefix) = prefixes.into_iter().find(|prefix| prefix.trim_end_matches(':') == entry)
        {
            pending_prefix = Some(prefix);
            continue;
        }
        match pending_prefix.take() {
            Some(prefix) => specs.push(format!("{prefix}{entry}")),
            None => specs.push(entry.to_owned()),
        }
    }
    if let Some(prefix) = pending_prefix {
        // A dangling prefix with nothing after it: keep it so parsing
        // reports it with an empty path.
        specs.push(prefix.to_owned());
    }
    specs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_specs_name_a_linked_plugin() {
        let spec = PluginSpec::parse("static:sample_static?k=v").unwrap();
        assert_eq!(spec.target(), &SpecTarget::Static { name: "sample_static".into() });
        assert_eq!(spec.path(), None);
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
        assert_eq!(spec.target(), &SpecTarget::SystemLibrary { path: "libplugin.so".into() });
        assert!(spec.params().is_empty());
        assert_eq!(spec.as_str(), "libplugin.so");
        // Paths are literal: `%` and `+` and `=` stay as written.
        assert_eq!(PluginSpec::parse("/a/b%20c+d=e.so").unwrap().path(), Some("/a/b%20c+d=e.so"));
        // `embedded:` only counts as a prefix.
        assert!(matches!(
            PluginSpec::parse("/x/embedded:y.so").unwrap().target(),
            SpecTarget::SystemLibrary { .. }
        ));
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
        assert_eq!(spec.target(), &SpecTarget::EmbeddedElf { path: "/k/x.bin".into() });
        assert!(matches!(PluginSpec::parse("x.sos?a=1").unwrap().target(), SpecTarget::EmbeddedElf { .. }));
        assert_eq!(PluginSpec::parse("x.sos").unwrap().path(), Some("x.sos"));
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
    fn env_lists() {
        assert_eq!(split_spec_list("", ':'), Vec::<String>::new());
        assert_eq!(split_spec_list("a.so::b.so?x=1:", ':'), ["a.so", "b.so?x=1"]);
        assert_eq!(split_spec_list("a.so:embedded:k.bin:b.so", ':'), ["a.so", "embedded:k.bin", "b.so"]);
        assert_eq!(split_spec_list("embedded", ':'), ["embedded:"]);
        assert_eq!(split_spec_list(r"C:\a.dll;;embedded:k.bin", ';'), [r"C:\a.dll", "embedded:k.bin"]);
    }
}
