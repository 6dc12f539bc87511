//! "Did you mean" suggestions for missing imports.
//!
//! When a required import is missing, the manager looks through the names
//! the providers say they export ([`ImportProvider::exported_names`]) and
//! suggests the closest one by edit distance, if it is close enough to be a
//! plausible typo.
//!
//! The work is bounded, since the failure path must stay cheap however
//! many names are missing: only the first [`MAX_SUGGESTED_NAMES`] missing
//! names get a suggestion, only candidates whose length is within
//! [`MAX_LENGTH_DIFFERENCE`] bytes are compared, names longer than
//! [`MAX_SUGGESTION_NAME_LEN`] bytes get none, and each comparison stops as
//! soon as the distance exceeds the limit. The cost is at most
//! `16 × exports × 64 × 64` byte comparisons.
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

/// How many missing names (the first ones) get a suggestion.
pub const MAX_SUGGESTED_NAMES: usize = 16;

/// Candidates longer or shorter than the name by more than this many bytes
/// are not compared.
pub const MAX_LENGTH_DIFFERENCE: usize = 3;

/// Names longer than this get no suggestion (nor do candidates longer than
/// it), which bounds each comparison.
pub const MAX_SUGGESTION_NAME_LEN: usize = 64;

/// The edit distance between `a` and `b` when it is at most `limit`;
/// `None` as soon as it is known to exceed it (the work stops there).
///
/// ```
/// use xplug_manager::suggest::edit_distance_within;
///
/// assert_eq!(edit_distance_within(b"kitten", b"sitting", 3), Some(3));
/// assert_eq!(edit_distance_within(b"kitten", b"sitting", 2), None);
/// ```
#[must_use]
pub fn edit_distance_within(a: &[u8], b: &[u8], limit: usize) -> Option<usize> {
    if a.len().abs_diff(b.len()) > limit {
        return None;
    }
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &byte_a) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        let mut row_min = row[0];
        for (j, &byte_b) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(byte_a != byte_b);
            let delete = row[j + 1] + 1;
            let insert = row[j] + 1;
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(delete).min(insert);
            row_min = row_min.min(row[j + 1]);
        }
        // Every later row is at least this row's minimum.
        if row_min > limit {
            return None;
        }
    }
    Some(row[b.len()]).filter(|&distance| distance <= limit)
}

/// The largest distance still offered as a suggestion for a name of
/// `length` bytes: a third of the name, at least one edit.
#[must_use]
pub fn max_suggestion_distance(length: usize) -> usize {
    (length / 3).max(1)
}

/// The candidate closest to `name` (a bare name, without `?`), if it is
/// within [`max_suggestion_distance`] and not `name` itself. Ties go to the
/// first candidate. Only candidates within [`MAX_LENGTH_DIFFERENCE`] bytes
/// of `name`'s length are compared, and neither may be longer than
/// [`MAX_SUGGESTION_NAME_LEN`].
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
    if name.len() > MAX_SUGGESTION_NAME_LEN {
        return None;
    }
    let limit = max_suggestion_distance(name.len());
    let mut best: Option<(usize, &'c str)> = None;
    for candidate in candidates {
        let candidate = candidate.as_ref();
        if candidate == name
            || candidate.len() > MAX_SUGGESTION_NAME_LEN
            || candidate.len().abs_diff(name.len()) > MAX_LENGTH_DIFFERENCE
        {
            continue;
        }
        // Only a strictly better candidate is of interest: search within
        // one less than the best distance so far.
        let within = best.map_or(limit, |(current, _)| current.saturating_sub(1));
        if let Some(distance) = edit_distance_within(name.as_bytes(), candidate.as_bytes(), within)
            && best.is_none_or(|(current, _)| distance < current)
        {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// Suggestions for a list of missing names, in order: the closest
/// candidate ([`closest`]) for each of the first [`MAX_SUGGESTED_NAMES`],
/// `None` for the rest.
///
/// ```
/// use xplug_manager::suggest::suggest_all;
///
/// let exported = ["c_add_i32", "c_mul_i32"];
/// let missing = ["c_mul_i3", "nothing_like_it"];
/// assert_eq!(suggest_all(missing, exported), [Some("c_mul_i32"), None]);
/// ```
#[must_use]
pub fn suggest_all<'n, 'c, N, C, S>(missing: N, candidates: C) -> Vec<Option<&'c str>>
where
    N: IntoIterator<Item = &'n str>,
    C: IntoIterator<Item = &'c S>,
    C::IntoIter: Clone,
    S: AsRef<str> + ?Sized + 'c,
{
    let candidates = candidates.into_iter();
    missing
        .into_iter()
        .enumerate()
        .map(|(position, name)| {
            (position < MAX_SUGGESTED_NAMES).then(|| closest(name, candidates.clone())).flatten()
        })
        .collect()
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

    #[test]
    fn a_hundred_thousand_missing_names_get_at_most_sixteen_suggestions() {
        // 4 096 exports, 100 000 missing names each one edit from an export:
        // without the bounds this is 4e8 comparisons of ~12-byte names.
        let exported: Vec<String> = (0..4096).map(|i| format!("kernel_{i:05}")).collect();
        let missing: Vec<String> = (0..100_000).map(|i| format!("kernel_{:05}x", i % 4096)).collect();
        let suggestions = suggest_all(missing.iter().map(String::as_str), exported.iter());
        assert_eq!(suggestions.len(), missing.len(), "one entry per missing name");
        let offered: Vec<&str> = suggestions.iter().flatten().copied().collect();
        assert_eq!(offered.len(), MAX_SUGGESTED_NAMES, "only the first names get a suggestion");
        assert_eq!(offered[0], "kernel_00000");
        assert_eq!(offered[15], "kernel_00015");
    }

    #[test]
    fn long_names_and_far_lengths_get_no_suggestion() {
        let long = "a".repeat(MAX_SUGGESTION_NAME_LEN + 1);
        let near = "a".repeat(MAX_SUGGESTION_NAME_LEN);
        assert_eq!(closest(&long, [near.as_str()].iter()), None);
        // Within a third of the name but four bytes longer: not compared.
        assert_eq!(closest("abcdefghijklmnop", ["abcdefghijklmnopqrst"].iter()), None);
        assert_eq!(closest("abcdefghijklmnop", ["abcdefghijklmnopqrs"].iter()), Some("abcdefghijklmnopqrs"));
    }

    proptest! {
        #[test]
        fn bounded_distance_agrees_with_the_full_one(a in "[abc]{0,10}", b in "[abc]{0,10}", limit in 0usize..12) {
            let full = edit_distance(a.as_bytes(), b.as_bytes());
            let bounded = edit_distance_within(a.as_bytes(), b.as_bytes(), limit);
            prop_assert_eq!(bounded, (full <= limit).then_some(full));
        }

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
