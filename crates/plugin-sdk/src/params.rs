//! The load environment and load parameters, as safe borrowed views.

use core::marker::PhantomData;
use core::str::FromStr;

use xplug_abi::{StringPair, StringView};

use crate::{Error, HostAllocator, ParamText};

/// What the host provides during `load`.
///
/// Borrowed for the duration of [`crate::PluginState::load`] only (the host
/// builds the environment on its stack). Keep what you need by copying it:
/// [`Environment::host_allocator`] returns a handle that stays valid.
#[derive(Debug)]
pub struct Environment<'a> {
    allocator: HostAllocator,
    _borrow: PhantomData<&'a ()>,
}

impl Environment<'_> {
    /// An environment carrying `allocator`.
    #[must_use]
    pub const fn new(allocator: HostAllocator) -> Self {
        Self { allocator, _borrow: PhantomData }
    }

    /// The host allocator; the state may store the returned copy.
    #[must_use]
    pub const fn host_allocator(&self) -> HostAllocator {
        self.allocator
    }
}

/// One `key=value` load parameter.
#[derive(Clone, Copy, Debug)]
pub struct Param<'a> {
    key: &'a [u8],
    value: &'a [u8],
}

impl<'a> Param<'a> {
    /// The key's bytes.
    #[must_use]
    pub const fn key_bytes(&self) -> &'a [u8] {
        self.key
    }

    /// The value's bytes.
    #[must_use]
    pub const fn value_bytes(&self) -> &'a [u8] {
        self.value
    }

    /// The key, if it is UTF-8.
    #[must_use]
    pub fn key(&self) -> Option<&'a str> {
        core::str::from_utf8(self.key).ok()
    }

    /// The value, if it is UTF-8.
    #[must_use]
    pub fn value(&self) -> Option<&'a str> {
        core::str::from_utf8(self.value).ok()
    }
}

/// The `key=value` parameters the host passed to `load`.
///
/// The view borrows the host's memory, which is only valid during `load`;
/// because plugin state is `'static`, the compiler refuses any attempt to
/// keep a `&str` from here in the state. Copy what you keep (`to_owned`,
/// parse into numbers, ...).
///
/// When a key appears several times, the **last** occurrence wins in
/// [`LoadParams::get`] (later flags override earlier ones);
/// [`LoadParams::iter`] yields every pair in the host's order.
///
/// A plugin that declares its parameters (`params(...)` in `#[plugin]`)
/// gets a view that knows the declarations: an absent key yields its
/// declared default, and `load` has already refused unknown keys and values
/// that are not of the declared type.
#[derive(Clone, Copy, Debug)]
pub struct LoadParams<'a> {
    pairs: &'a [StringPair],
    declared: Option<&'static [TypedParamDecl]>,
}

impl<'a> LoadParams<'a> {
    /// No parameters.
    pub const EMPTY: LoadParams<'static> = LoadParams { pairs: &[], declared: None };

    /// A view over pairs whose strings are valid for `'a`.
    ///
    /// # Safety
    /// Every pair's `key` and `value` must be valid views: `data` points at
    /// `size` readable bytes that stay unchanged for `'a` (or `size` is 0).
    #[must_use]
    pub const unsafe fn from_pairs(pairs: &'a [StringPair]) -> Self {
        Self { pairs, declared: None }
    }

    /// The same pairs, with the plugin's declared parameters: absent keys
    /// then yield their declared defaults.
    #[must_use]
    pub const fn with_declared(self, declared: &'static [TypedParamDecl]) -> Self {
        Self { pairs: self.pairs, declared: Some(declared) }
    }

    /// The declared parameters, when the plugin declares them.
    #[must_use]
    pub const fn declared(&self) -> Option<&'static [TypedParamDecl]> {
        self.declared
    }

    /// Checks every pair against `declared`: each key must be declared and
    /// each value must be of the declared type.
    ///
    /// # Errors
    /// [`Error::UnknownParam`] (with the closest declared name, if any is
    /// close) or [`Error::InvalidParam`], for the first offending pair.
    pub fn check_declared(&self, declared: &'static [TypedParamDecl]) -> Result<(), Error> {
        for param in self.iter() {
            let Some(decl) = declared.iter().find(|decl| decl.name.as_bytes() == param.key) else {
                // A key that is not UTF-8 is like no declared name.
                let suggestion = core::str::from_utf8(param.key)
                    .ok()
                    .and_then(|key| xplug_abi::suggest::closest(key, declared.iter().map(|decl| decl.name)));
                return Err(Error::UnknownParam {
                    key: ParamText::new(param.key),
                    suggestion,
                    known: declared,
                });
            };
            if !decl.kind.accepts(param.value) {
                return Err(Error::InvalidParam {
                    key: ParamText::from(decl.name),
                    value: ParamText::new(param.value),
                    expected: decl.kind.expected(),
                });
            }
        }
        Ok(())
    }

    /// Number of pairs.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.pairs.len()
    }

    /// True when there are no pairs.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Every pair, in the order the host passed them.
    pub fn iter(&self) -> impl Iterator<Item = Param<'a>> + 'a {
        self.pairs.iter().map(|pair| Param { key: view_bytes(pair.key), value: view_bytes(pair.value) })
    }

    /// The raw value of the last pair whose key is `key`.
    ///
    /// When the key is absent and the plugin declares a default for it,
    /// the default.
    #[must_use]
    pub fn get_bytes(&self, key: &str) -> Option<&'a [u8]> {
        self.iter()
            .filter(|param| param.key == key.as_bytes())
            .last()
            .map(|param| param.value)
            .or_else(|| self.declared?.iter().find(|decl| decl.name == key)?.default.map(str::as_bytes))
    }

    /// The value of the last pair whose key is `key`, if it is UTF-8.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.get_bytes(key).and_then(|value| core::str::from_utf8(value).ok())
    }

    /// Parses the value of `key`; `Ok(None)` when the key is absent.
    ///
    /// `expected` describes valid values for the error message
    /// ("a positive integer").
    ///
    /// # Errors
    /// [`Error::InvalidParam`] when the value is not UTF-8 or does not parse.
    pub fn parse<T: FromStr>(&self, key: &str, expected: &'static str) -> Result<Option<T>, Error> {
        let Some(raw) = self.get_bytes(key) else { return Ok(None) };
        core::str::from_utf8(raw).ok().and_then(|text| text.parse().ok()).map(Some).ok_or_else(|| {
            Error::InvalidParam { key: ParamText::from(key), value: ParamText::new(raw), expected }
        })
    }

    /// Like [`LoadParams::parse`] but the key must be present.
    ///
    /// # Errors
    /// [`Error::MissingParam`] when absent, else as [`LoadParams::parse`].
    pub fn require<T: FromStr>(&self, key: &str, expected: &'static str) -> Result<T, Error> {
        self.parse(key, expected)?.ok_or_else(|| Error::MissingParam { key: ParamText::from(key) })
    }
}

/// The type of a declared load parameter's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParamKind {
    /// Any UTF-8 text.
    Str,
    /// `true`, `false`, `1` or `0`.
    Bool,
    /// A 32-bit signed integer.
    I32,
    /// A 64-bit signed integer.
    I64,
    /// A 32-bit unsigned integer.
    U32,
    /// A 64-bit unsigned integer.
    U64,
    /// A pointer-sized unsigned integer.
    Usize,
    /// A finite 32-bit float.
    F32,
    /// A finite 64-bit float.
    F64,
}

impl ParamKind {
    /// Every kind, in declaration order.
    pub const ALL: [Self; 9] = [
        Self::Str,
        Self::Bool,
        Self::I32,
        Self::I64,
        Self::U32,
        Self::U64,
        Self::Usize,
        Self::F32,
        Self::F64,
    ];

    /// The name used in `params(...)` and in the exported declaration.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Str => "str",
            Self::Bool => "bool",
            Self::I32 => "i32",
            Self::I64 => "i64",
            Self::U32 => "u32",
            Self::U64 => "u64",
            Self::Usize => "usize",
            Self::F32 => "f32",
            Self::F64 => "f64",
        }
    }

    /// The kind called `name`, if any.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// Describes valid values, for error messages.
    #[must_use]
    pub const fn expected(self) -> &'static str {
        match self {
            Self::Str => "UTF-8 text",
            Self::Bool => "`true`, `false`, `1` or `0`",
            Self::I32 => "a 32-bit signed integer",
            Self::I64 => "a 64-bit signed integer",
            Self::U32 => "a 32-bit unsigned integer",
            Self::U64 => "a 64-bit unsigned integer",
            Self::Usize => "an unsigned integer",
            Self::F32 | Self::F64 => "a finite number",
        }
    }

    /// Whether `value` is a valid value of this kind.
    #[must_use]
    pub fn accepts(self, value: &[u8]) -> bool {
        let Ok(text) = core::str::from_utf8(value) else { return false };
        match self {
            Self::Str => true,
            Self::Bool => matches!(text, "true" | "false" | "1" | "0"),
            Self::I32 => text.parse::<i32>().is_ok(),
            Self::I64 => text.parse::<i64>().is_ok(),
            Self::U32 => text.parse::<u32>().is_ok(),
            Self::U64 => text.parse::<u64>().is_ok(),
            Self::Usize => text.parse::<usize>().is_ok(),
            Self::F32 => text.parse::<f32>().is_ok_and(f32::is_finite),
            Self::F64 => text.parse::<f64>().is_ok_and(f64::is_finite),
        }
    }
}

/// One load parameter a plugin declares in `#[plugin(params(...))]`:
/// name, type, optional default, description.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypedParamDecl {
    name: &'static str,
    kind: ParamKind,
    default: Option<&'static str>,
    description: &'static str,
}

impl TypedParamDecl {
    /// A declaration (the macro checks that `default` is of `kind`).
    #[must_use]
    pub const fn new(
        name: &'static str,
        kind: ParamKind,
        default: Option<&'static str>,
        description: &'static str,
    ) -> Self {
        Self { name, kind, default, description }
    }

    /// The key.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The value's type.
    #[must_use]
    pub const fn kind(&self) -> ParamKind {
        self.kind
    }

    /// The value used when the key is absent.
    #[must_use]
    pub const fn default(&self) -> Option<&'static str> {
        self.default
    }

    /// What the parameter does.
    #[must_use]
    pub const fn description(&self) -> &'static str {
        self.description
    }
}

fn view_bytes<'a>(view: StringView) -> &'a [u8] {
    if view.size == 0 || view.data.is_null() {
        return &[];
    }
    // SAFETY: `LoadParams::from_pairs`'s caller promised every view points
    // at `size` readable bytes valid for `'a`; NULL/empty views are handled
    // above.
    unsafe { core::slice::from_raw_parts(view.data.cast::<u8>(), view.size) }
}

#[cfg(test)]
mod tests {
    use alloc::string::ToString;

    use super::*;

    const DECLARED: [TypedParamDecl; 2] = [
        TypedParamDecl::new("multiplier", ParamKind::F32, Some("1.0"), "scales"),
        TypedParamDecl::new("disable", ParamKind::Str, None, "an import to decline"),
    ];

    fn pair(key: &'static [u8], value: &'static [u8]) -> StringPair {
        StringPair { key: StringView::from_bytes(key), value: StringView::from_bytes(value) }
    }

    #[test]
    fn declared_params_refuse_unknown_keys_with_a_suggestion() {
        let pairs = [pair(b"multplier", b"3")];
        // SAFETY: the views borrow static byte strings.
        let params = unsafe { LoadParams::from_pairs(&pairs) };
        let error = params.check_declared(&DECLARED).unwrap_err();
        assert_eq!(
            error,
            Error::UnknownParam {
                key: ParamText::from("multplier"),
                suggestion: Some("multiplier"),
                known: &DECLARED,
            }
        );
        assert!(error.to_string().contains("did you mean `multiplier`?"), "{error}");

        let pairs = [pair(b"zzz", b"3")];
        // SAFETY: as above.
        let error = unsafe { LoadParams::from_pairs(&pairs) }.check_declared(&DECLARED).unwrap_err();
        assert!(!error.to_string().contains("did you mean"), "{error}");
        assert!(error.to_string().contains("multiplier, disable"), "{error}");
        // SAFETY: as above.
        let error = unsafe { LoadParams::from_pairs(&pairs) }.check_declared(&[]).unwrap_err();
        assert!(error.to_string().contains("takes no load parameters"), "{error}");
    }

    #[test]
    fn declared_params_check_types_and_supply_defaults() {
        let pairs = [pair(b"multiplier", b"lots")];
        // SAFETY: the views borrow static byte strings.
        let error = unsafe { LoadParams::from_pairs(&pairs) }.check_declared(&DECLARED).unwrap_err();
        assert!(matches!(error, Error::InvalidParam { expected: "a finite number", .. }), "{error:?}");

        let pairs = [pair(b"disable", b"x")];
        // SAFETY: as above.
        let params = unsafe { LoadParams::from_pairs(&pairs) }.with_declared(&DECLARED);
        assert_eq!(params.check_declared(&DECLARED), Ok(()));
        assert_eq!(params.parse::<f32>("multiplier", "a number"), Ok(Some(1.0)));
        assert_eq!(params.get("disable"), Some("x"));
        // Without declarations there is no default.
        // SAFETY: as above.
        let bare = unsafe { LoadParams::from_pairs(&pairs) };
        assert_eq!(bare.get("multiplier"), None);
    }

    #[test]
    fn kinds_accept_their_values_only() {
        assert!(ParamKind::Bool.accepts(b"true") && !ParamKind::Bool.accepts(b"yes"));
        assert!(ParamKind::U32.accepts(b"7") && !ParamKind::U32.accepts(b"-7"));
        assert!(ParamKind::I64.accepts(b"-7") && !ParamKind::I64.accepts(b"7.5"));
        assert!(ParamKind::F64.accepts(b"7.5") && !ParamKind::F64.accepts(b"inf"));
        assert!(ParamKind::Str.accepts(b"anything") && !ParamKind::Str.accepts(b"\xff"));
        for kind in ParamKind::ALL {
            assert_eq!(ParamKind::from_name(kind.name()), Some(kind));
        }
        assert_eq!(xplug_abi::suggest::closest("multplier", ["multiplier", "offset"]), Some("multiplier"));
    }

    #[test]
    fn last_key_wins_and_values_parse() {
        let pairs = [
            StringPair { key: StringView::from_bytes(b"n"), value: StringView::from_bytes(b"1") },
            StringPair { key: StringView::from_bytes(b"bad"), value: StringView::from_bytes(b"\xff") },
            StringPair { key: StringView::from_bytes(b"n"), value: StringView::from_bytes(b"42") },
            StringPair { key: StringView::EMPTY, value: StringView::EMPTY },
        ];
        // SAFETY: every view above borrows a static byte string or is empty.
        let params = unsafe { LoadParams::from_pairs(&pairs) };
        assert_eq!(params.len(), 4);
        assert_eq!(params.get("n"), Some("42"));
        assert_eq!(params.parse::<u32>("n", "a number"), Ok(Some(42)));
        assert_eq!(params.parse::<u32>("absent", "a number"), Ok(None));
        assert_eq!(params.get("bad"), None);
        assert_eq!(params.get_bytes("bad"), Some(&b"\xff"[..]));
        let error = params.require::<u32>("bad", "a number").unwrap_err();
        assert_eq!(
            error.to_string(),
            "load parameter `bad` has the value `\u{fffd}` but a number is expected; fix the value"
        );
        let missing = params.require::<u32>("multiplier", "a number").unwrap_err();
        assert!(missing.to_string().contains("`multiplier=VALUE`"), "{missing}");
        assert_eq!(
            params.iter().filter_map(|p| p.key()).collect::<alloc::vec::Vec<_>>(),
            ["n", "bad", "n", ""]
        );
    }
}
