//! The load environment and load parameters, as safe borrowed views.

use core::marker::PhantomData;

use xplug_abi::{FromParam, StringPair, StringView};

use crate::{Error, HostAllocator, ParamText, TypedParamDecl};

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
            let Some(decl) = declared.iter().find(|decl| decl.name().as_bytes() == param.key) else {
                // A key that is not UTF-8 is like no declared name.
                let suggestion = core::str::from_utf8(param.key).ok().and_then(|key| {
                    xplug_abi::suggest::closest(key, declared.iter().map(|decl| decl.name()))
                });
                return Err(Error::UnknownParam {
                    key: ParamText::new(param.key),
                    suggestion,
                    known: declared,
                });
            };
            if !decl.kind().accepts(param.value) {
                return Err(Error::InvalidParam {
                    key: ParamText::from(decl.name()),
                    value: ParamText::new(param.value),
                    expected: decl.kind().expected(),
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
            .or_else(|| self.declared?.iter().find(|decl| decl.name() == key)?.default().map(str::as_bytes))
    }

    /// The value of the last pair whose key is `key`, if it is UTF-8.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.get_bytes(key).and_then(|value| core::str::from_utf8(value).ok())
    }

    /// Reads the value of `key` as a `T` (`bool`, `i32`, `i64`, `u32`,
    /// `u64`, `usize`, `f32`, `f64` or `&str`); `Ok(None)` when the key is
    /// absent (and has no declared default).
    ///
    /// The value is parsed by [`crate::ParamKind::parse`] as `T`'s kind, the
    /// parser the host's check and the declared-parameter check of `load`
    /// use: a value they accept for a parameter declared as that kind is
    /// read here as the same value.
    ///
    /// # Errors
    /// [`Error::InvalidParam`] when the value is not one of `T`'s kind;
    /// [`Error::ParamReadAs`] when the plugin declares `key` as another
    /// kind than `T`'s (the declaration and the read disagree).
    pub fn parse<T: FromParam<'a>>(&self, key: &str) -> Result<Option<T>, Error> {
        if let Some(decl) = self.declared.and_then(|declared| declared.iter().find(|decl| decl.name() == key))
            && decl.kind() != T::KIND
        {
            return Err(Error::ParamReadAs {
                key: ParamText::from(decl.name()),
                declared: decl.kind(),
                read: T::KIND,
            });
        }
        let Some(raw) = self.get_bytes(key) else { return Ok(None) };
        T::from_param(raw).map(Some).ok_or_else(|| Error::InvalidParam {
            key: ParamText::from(key),
            value: ParamText::new(raw),
            expected: T::KIND.expected(),
        })
    }

    /// Like [`LoadParams::parse`] but the key must be present.
    ///
    /// # Errors
    /// [`Error::MissingParam`] when absent, else as [`LoadParams::parse`].
    pub fn require<T: FromParam<'a>>(&self, key: &str) -> Result<T, Error> {
        self.parse(key)?.ok_or_else(|| Error::MissingParam { key: ParamText::from(key) })
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
    use crate::ParamKind;

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
        assert_eq!(params.parse::<f32>("multiplier"), Ok(Some(1.0)));
        assert_eq!(params.get("disable"), Some("x"));
        // Without declarations there is no default.
        // SAFETY: as above.
        let bare = unsafe { LoadParams::from_pairs(&pairs) };
        assert_eq!(bare.get("multiplier"), None);
    }

    /// For each kind, the check before `load` accepts a value exactly when
    /// `parse` as the kind's Rust type reads it, as the value
    /// [`ParamKind::parse`] gives.
    #[test]
    fn the_check_and_parse_agree_for_every_kind() {
        const EDGES: &[&[u8]] = &[
            b"",
            b" ",
            b"true",
            b"false",
            b"1",
            b"0",
            b"-0",
            b"+0",
            b"yes",
            b"True",
            b" 1",
            b"1 ",
            b"-1",
            b"+7",
            b"2147483647",
            b"2147483648",
            b"-2147483648",
            b"-2147483649",
            b"4294967295",
            b"4294967296",
            b"9223372036854775807",
            b"9223372036854775808",
            b"-9223372036854775808",
            b"18446744073709551615",
            b"18446744073709551616",
            b"0x10",
            b"1_0",
            b"7.5",
            b".5",
            b"5.",
            b"1e3",
            b"-1e-3",
            b"3.4028235e38",
            b"3.5e38",
            b"1e308",
            b"1e309",
            b"inf",
            b"-inf",
            b"NaN",
            b"infinity",
            b"1,5",
            b"abc",
            b"\xff",
            b"\xc3\xa9",
        ];
        for &value in EDGES {
            assert_agree::<&str>(value);
            assert_agree::<bool>(value);
            assert_agree::<i32>(value);
            assert_agree::<i64>(value);
            assert_agree::<u32>(value);
            assert_agree::<u64>(value);
            assert_agree::<usize>(value);
            assert_agree::<f32>(value);
            assert_agree::<f64>(value);
        }
        // The reported bug: a declared `bool` given `1`.
        let pairs = [pair(b"verbose", b"1")];
        // SAFETY: the views borrow static byte strings.
        let params = unsafe { LoadParams::from_pairs(&pairs) }.with_declared(&BOOL);
        assert_eq!(params.check_declared(&BOOL), Ok(()));
        assert_eq!(params.parse::<bool>("verbose"), Ok(Some(true)));
    }

    const BOOL: [TypedParamDecl; 1] = [TypedParamDecl::new("verbose", ParamKind::Bool, None, "")];

    /// `value` passes `check_declared` for a parameter of `T`'s kind
    /// exactly when `parse::<T>` reads it, as `ParamKind::parse`'s value.
    fn assert_agree<T: FromParam<'static> + PartialEq + core::fmt::Debug>(value: &'static [u8]) {
        let declared: &'static [TypedParamDecl] =
            alloc::boxed::Box::leak(alloc::boxed::Box::new([TypedParamDecl::new("p", T::KIND, None, "")]));
        let pairs: &'static [StringPair] =
            alloc::boxed::Box::leak(alloc::boxed::Box::new([pair(b"p", value)]));
        // SAFETY: the views borrow static byte strings.
        let params = unsafe { LoadParams::from_pairs(pairs) }.with_declared(declared);
        let checked = params.check_declared(declared);
        let parsed = params.parse::<T>("p");
        let shown = (T::KIND.name(), alloc::string::String::from_utf8_lossy(value));
        assert_eq!(checked.is_ok(), parsed.is_ok(), "{shown:?}: {checked:?} vs {parsed:?}");
        match (checked, parsed) {
            (Ok(()), Ok(read)) => {
                let read = read.expect("present");
                assert_eq!(Some(read), T::from_param(value), "{shown:?}");
                assert!(T::KIND.parse(value).is_some(), "{shown:?}");
            }
            (Err(checked), Err(parsed)) => assert_eq!(checked, parsed, "{shown:?}"),
            _ => unreachable!(),
        }
    }

    #[test]
    fn a_declared_parameter_is_read_as_its_declared_type_only() {
        let pairs = [pair(b"multiplier", b"2")];
        // SAFETY: the views borrow static byte strings.
        let params = unsafe { LoadParams::from_pairs(&pairs) }.with_declared(&DECLARED);
        assert_eq!(params.parse::<f32>("multiplier"), Ok(Some(2.0)));
        let error = params.parse::<u32>("multiplier").unwrap_err();
        assert_eq!(
            error,
            Error::ParamReadAs {
                key: ParamText::from("multiplier"),
                declared: ParamKind::F32,
                read: ParamKind::U32
            }
        );
        assert!(error.to_string().contains("declared as `f32` but the plugin reads it as `u32`"), "{error}");
        assert_eq!(error.code(), xplug_abi::StatusCode::INTERNAL);
        // Without declarations any type reads the value.
        // SAFETY: as above.
        let bare = unsafe { LoadParams::from_pairs(&pairs) };
        assert_eq!(bare.parse::<u32>("multiplier"), Ok(Some(2)));
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
        assert_eq!(params.parse::<u32>("n"), Ok(Some(42)));
        assert_eq!(params.parse::<u32>("absent"), Ok(None));
        assert_eq!(params.get("bad"), None);
        assert_eq!(params.get_bytes("bad"), Some(&b"\xff"[..]));
        let error = params.require::<u32>("bad").unwrap_err();
        assert_eq!(
            error.to_string(),
            "load parameter `bad` has the value `\u{fffd}` but a 32-bit unsigned integer is expected; fix the value"
        );
        let missing = params.require::<u32>("multiplier").unwrap_err();
        assert!(missing.to_string().contains("`multiplier=VALUE`"), "{missing}");
        assert_eq!(
            params.iter().filter_map(|p| p.key()).collect::<alloc::vec::Vec<_>>(),
            ["n", "bad", "n", ""]
        );
    }
}
