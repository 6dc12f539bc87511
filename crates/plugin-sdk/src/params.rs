//! The load environment and load parameters, as safe borrowed views.

use alloc::borrow::ToOwned;
use alloc::string::String;
use core::marker::PhantomData;
use core::str::FromStr;

use xplug_abi::{StringPair, StringView};

use crate::{Error, HostAllocator};

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
#[derive(Clone, Copy, Debug)]
pub struct LoadParams<'a> {
    pairs: &'a [StringPair],
}

impl<'a> LoadParams<'a> {
    /// No parameters.
    pub const EMPTY: LoadParams<'static> = LoadParams { pairs: &[] };

    /// A view over pairs whose strings are valid for `'a`.
    ///
    /// # Safety
    /// Every pair's `key` and `value` must be valid views: `data` points at
    /// `size` readable bytes that stay unchanged for `'a` (or `size` is 0).
    #[must_use]
    pub const unsafe fn from_pairs(pairs: &'a [StringPair]) -> Self {
        Self { pairs }
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
    #[must_use]
    pub fn get_bytes(&self, key: &str) -> Option<&'a [u8]> {
        self.iter().filter(|param| param.key == key.as_bytes()).last().map(|param| param.value)
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
            Error::InvalidParam {
                key: key.to_owned(),
                value: String::from_utf8_lossy(raw).into_owned(),
                expected,
            }
        })
    }

    /// Like [`LoadParams::parse`] but the key must be present.
    ///
    /// # Errors
    /// [`Error::MissingParam`] when absent, else as [`LoadParams::parse`].
    pub fn require<T: FromStr>(&self, key: &str, expected: &'static str) -> Result<T, Error> {
        self.parse(key, expected)?.ok_or_else(|| Error::MissingParam { key: key.to_owned() })
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
