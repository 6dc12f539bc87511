//! Load-time parameters handed to a plugin's `load`.

use xplug_abi::{StringPair, StringView};

/// Owned key/value byte strings passed to a plugin's `load` function.
///
/// Keys and values are arbitrary bytes (they cross the ABI as
/// length-delimited string views, not NUL-terminated strings). Order is kept
/// and duplicate keys are allowed: the plugin decides what they mean.
///
/// ```
/// use xplug_providers::LoadParamList;
///
/// let params = LoadParamList::new().with("scale", "3").with(b"mode".to_vec(), "fast");
/// assert_eq!(params.len(), 2);
/// let pairs: Vec<_> = params.iter().collect();
/// assert_eq!(pairs[0], (&b"scale"[..], &b"3"[..]));
///
/// let collected: LoadParamList = [("a", "1"), ("b", "2")].into_iter().collect();
/// assert_eq!(collected.iter().count(), 2);
/// ```
#[derive(Default, Clone, Debug, PartialEq, Eq)]
pub struct LoadParamList {
    pairs: Vec<(Vec<u8>, Vec<u8>)>,
}

impl LoadParamList {
    /// No parameters.
    #[must_use]
    pub const fn new() -> Self {
        Self { pairs: Vec::new() }
    }

    /// Appends `key = value`.
    pub fn push(&mut self, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) {
        self.pairs.push((key.into(), value.into()));
    }

    /// Appends `key = value` and returns `self`, for chaining.
    #[must_use]
    pub fn with(mut self, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> Self {
        self.push(key, value);
        self
    }

    /// Number of pairs.
    #[must_use]
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// True when there are no pairs.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The pairs in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.pairs.iter().map(|(key, value)| (key.as_slice(), value.as_slice()))
    }

    /// The pairs as ABI string pairs borrowing from `self` (valid while
    /// `self` is neither dropped nor mutated).
    pub(crate) fn as_string_pairs(&self) -> Vec<StringPair> {
        self.pairs
            .iter()
            .map(|(key, value)| StringPair {
                key: StringView::from_bytes(key),
                value: StringView::from_bytes(value),
            })
            .collect()
    }
}

impl<K: Into<Vec<u8>>, V: Into<Vec<u8>>> FromIterator<(K, V)> for LoadParamList {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Self { pairs: iter.into_iter().map(|(key, value)| (key.into(), value.into())).collect() }
    }
}

impl<K: Into<Vec<u8>>, V: Into<Vec<u8>>> Extend<(K, V)> for LoadParamList {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        self.pairs.extend(iter.into_iter().map(|(key, value)| (key.into(), value.into())));
    }
}
