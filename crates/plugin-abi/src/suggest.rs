//! "Did you mean" suggestions, shared by host and guest: the manager names
//! the closest exported import when one is missing, `xplug check` and the
//! SDK the closest declared load parameter when a key is unknown.
//!
//! The work is bounded so a failure path stays cheap: names longer than
//! [`MAX_SUGGESTION_NAME_LEN`] bytes get no suggestion, only candidates
//! within [`MAX_LENGTH_DIFFERENCE`] bytes of the name's length are
//! compared, and each comparison stops as soon as the distance exceeds the
//! limit. Nothing allocates (the module is `no_std`, like the crate), so a
//! standalone plugin can use it too.
//!
//! ```
//! use xplug_abi::suggest::closest;
//!
//! let declared = ["multiplier", "offset"];
//! assert_eq!(closest("multplier", declared), Some("multiplier"));
//! assert_eq!(closest("nothing_alike", declared), None);
//! ```

/// Candidates longer or shorter than the name by more than this many bytes
/// are not compared.
pub const MAX_LENGTH_DIFFERENCE: usize = 3;

/// Names longer than this get no suggestion (nor do candidates longer than
/// it), which bounds each comparison.
pub const MAX_SUGGESTION_NAME_LEN: usize = 64;

/// The Levenshtein distance between `a` and `b` (over bytes: the fewest
/// single-byte insertions, deletions and substitutions turning one into the
/// other) when it is at most `limit`; `None` as soon as it is known to
/// exceed it (the work stops there), and `None` when `b` is longer than
/// [`MAX_SUGGESTION_NAME_LEN`] bytes.
///
/// ```
/// use xplug_abi::suggest::edit_distance_within;
///
/// assert_eq!(edit_distance_within(b"kitten", b"sitting", 3), Some(3));
/// assert_eq!(edit_distance_within(b"kitten", b"sitting", 2), None);
/// ```
#[must_use]
pub fn edit_distance_within(a: &[u8], b: &[u8], limit: usize) -> Option<usize> {
    if a.len().abs_diff(b.len()) > limit || b.len() > MAX_SUGGESTION_NAME_LEN {
        return None;
    }
    // One row of the classic dynamic-programming table, indexed by a prefix
    // length of `b`: `row[j]` is the distance between the current prefix of
    // `a` and `b[..j]`.
    let mut storage = [0usize; MAX_SUGGESTION_NAME_LEN + 1];
    let row = &mut storage[..=b.len()];
    for (j, cell) in row.iter_mut().enumerate() {
        *cell = j;
    }
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
/// use xplug_abi::suggest::closest;
///
/// let exported = ["c_add_i32", "c_mul_i32"];
/// assert_eq!(closest("c_mul_i3", exported), Some("c_mul_i32"));
/// assert_eq!(closest("c_mul_i32", ["c_mul_i32"]), None, "the name itself is no suggestion");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_prefers_the_smallest_distance_then_the_first() {
        let candidates = ["abcx", "abzz", "abcy"];
        assert_eq!(closest("abcd", candidates.iter()), Some("abcx"));
        assert_eq!(closest("abcd", ["abcd"].iter()), None, "the name itself is no suggestion");
        assert_eq!(closest("ab", ["xy"].iter()), None);
        assert_eq!(closest("a", ["b"].iter()), Some("b"), "one edit is always allowed");
    }

    #[test]
    fn long_names_and_far_lengths_get_no_suggestion() {
        let long = [b'a'; MAX_SUGGESTION_NAME_LEN + 1];
        let long = core::str::from_utf8(&long).unwrap();
        let near = &long[..MAX_SUGGESTION_NAME_LEN];
        assert_eq!(closest(long, [near].iter()), None);
        assert_eq!(closest(near, [long].iter()), None);
        assert_eq!(edit_distance_within(near.as_bytes(), long.as_bytes(), 5), None);
        assert_eq!(edit_distance_within(long.as_bytes(), near.as_bytes(), 5), Some(1));
        // Within a third of the name but four bytes longer: not compared.
        assert_eq!(closest("abcdefghijklmnop", ["abcdefghijklmnopqrst"].iter()), None);
        assert_eq!(closest("abcdefghijklmnop", ["abcdefghijklmnopqrs"].iter()), Some("abcdefghijklmnopqrs"));
    }
}
