//! "Did you mean" suggestions for missing imports.
//!
//! When a required import is missing, the manager looks through the names
//! the providers say they export ([`ImportProvider::exported_names`]) and
//! suggests the closest one by edit distance, if it is close enough to be a
//! plausible typo. The comparison itself ([`closest`] and its bounds) is
//! `xplug_abi::suggest` (through `xplug_providers::abi`), shared with the
//! SDK's load-parameter check and re-exported here; this module adds
//! [`MAX_SUGGESTED_NAMES`], the bound the manager's missing-imports error
//! applies to the number of names that get a suggestion.
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

/// How many missing names (the first ones) get a suggestion.
pub const MAX_SUGGESTED_NAMES: usize = 16;

pub use xplug_providers::abi::suggest::{
    MAX_LENGTH_DIFFERENCE, MAX_SUGGESTION_NAME_LEN, closest, edit_distance_within, max_suggestion_distance,
};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The reference: the full dynamic-programming table, unbounded.
    fn edit_distance(a: &[u8], b: &[u8]) -> usize {
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, &byte_a) in a.iter().enumerate() {
            let mut diagonal = row[0];
            row[0] = i + 1;
            for (j, &byte_b) in b.iter().enumerate() {
                let substitute = diagonal + usize::from(byte_a != byte_b);
                let (delete, insert) = (row[j + 1] + 1, row[j] + 1);
                diagonal = row[j + 1];
                row[j + 1] = substitute.min(delete).min(insert);
            }
        }
        row[b.len()]
    }

    #[test]
    fn distance_examples() {
        assert_eq!(edit_distance(b"flaw", b"lawn"), 2);
        assert_eq!(edit_distance(b"abc", b""), 3);
        assert_eq!(edit_distance(b"abc", b"acb"), 2);
        assert_eq!(edit_distance(b"c_mul_i32", b"c_mul_i64"), 2);
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
