//! "Did you mean" suggestions for missing imports.
//!
//! When a required import is missing, the manager looks through the names
//! the providers say they export ([`ImportProvider::exported_names`]) and
//! suggests the closest one by edit distance, if it is close enough to be a
//! plausible typo.
//!
//! [`ImportProvider::exported_names`]: xplug_providers::ImportProvider::exported_names

/// The Levenshtein distance between `a` and `b`, over bytes: the fewest
/// single-byte insertions, deletions and substitutions turning one into the
/// other.
///
/// ```
/// use xplug_manager::suggest::edit_distance;
///
/// assert_eq!(edit_distance(b"kitten", b"sitting"), 3);
/// assert_eq!(edit_distance(b"", b"abc"), 3);
/// assert_eq!(edit_distance(b"same", b"same"), 0);
/// ```
#[must_use]
pub fn edit_distance(a: &[u8], b: &[u8]) -> usize {
    // One row of the classic dynamic-programming table, indexed by a prefix
    // length of `b`; `row[j]` is the distance between the current prefix of
    // `a` and `b[..j]`.
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &byte_a) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &byte_b) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(byte_a != byte_b);
            let delete = row[j + 1] + 1;
            let insert = row[j] + 1;
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(delete).min(insert);
        }
    }
    row[b.len()]
}

/// The largest distance still offered as a suggestion for a name of
/// `length` bytes: a third of the name, at least one edit.
#[must_use]
pub fn max_suggestion_distance(length: usize) -> usize {
    (length / 3).max(1)
}

/// The candidate closest to `name` (a bare name, without `?`), if it is
/// within [`max_suggestion_distance`] and not `name` itself. Ties go to the
/// first candidate.
///
/// ```
/// use xplug_manager::suggest::closest;
///
/// let exported = ["c_add_i32", "c_mul_i32"];
/// assert_eq!(closest("c_mul_i3", exported), Some("c_mul_i32"));
/// assert_eq!(closest("totally_different", exported), None);
/// ```
#[must_use]
pub fn closest<'c, I, S>(name: &str, candidates: I) -> Option<&'c str>
where
    I: IntoIterator<Item = &'c S>,
    S: AsRef<str> + ?Sized + 'c,
{
    let limit = max_suggestion_distance(name.len());
    let mut best: Option<(usize, &'c str)> = None;
    for candidate in candidates {
        let candidate = candidate.as_ref();
        if candidate == name {
            continue;
        }
        // The distance is at least the difference in length; skip the table
        // when that alone is too far.
        if candidate.len().abs_diff(name.len()) > limit {
            continue;
        }
        let distance = edit_distance(name.as_bytes(), candidate.as_bytes());
        if distance <= limit && best.is_none_or(|(current, _)| distance < current) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn distance_examples() {
        assert_eq!(edit_distance(b"flaw", b"lawn"), 2);
        assert_eq!(edit_distance(b"abc", b""), 3);
        assert_eq!(edit_distance(b"abc", b"acb"), 2);
        assert_eq!(edit_distance(b"c_mul_i32", b"c_mul_i64"), 2);
    }

    #[test]
    fn closest_prefers_the_smallest_distance_then_the_first() {
        let candidates = ["abcx", "abzz", "abcy"];
        assert_eq!(closest("abcd", candidates.iter()), Some("abcx"));
        assert_eq!(closest("abcd", ["abcd"].iter()), None, "the name itself is no suggestion");
        assert_eq!(closest("ab", ["xy"].iter()), None);
        assert_eq!(closest("a", ["b"].iter()), Some("b"), "one edit is always allowed");
    }

    proptest! {
        #[test]
        fn distance_is_a_metric(a in "[abc]{0,8}", b in "[abc]{0,8}", c in "[abc]{0,8}") {
            let (a, b, c) = (a.as_bytes(), b.as_bytes(), c.as_bytes());
            prop_assert_eq!(edit_distance(a, b), edit_distance(b, a));
            prop_assert_eq!(edit_distance(a, b) == 0, a == b);
            prop_assert!(edit_distance(a, c) <= edit_distance(a, b) + edit_distance(b, c));
            prop_assert!(edit_distance(a, b) >= a.len().abs_diff(b.len()));
            prop_assert!(edit_distance(a, b) <= a.len().max(b.len()));
        }
    }
}
