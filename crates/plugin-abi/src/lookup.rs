//! The search every sorted resolver shares.
//!
//! SPEC §2: import names arrive sorted by bare name (usually), so a resolver
//! holding its exports in a sorted table can find each name starting from
//! where the previous one landed. [`gallop_search`] does that with an
//! exponential ("galloping") probe followed by a binary search, which costs
//! O(1) for neighbouring names (the merge-walk case), O(log gap) in general,
//! and falls back to a plain binary search when a name sorts before the
//! previous one (unsorted input), so it is correct for any order.

use core::cmp::Ordering;

/// Finds `name` in `table`, which must be sorted by `key` in strictly
/// increasing byte order, starting the search at index `from` (the index the
/// previous name of a sorted request landed on; 0 for the first name).
///
/// Returns `Ok(index)` of the matching entry, or `Err(insertion_point)`.
/// Either value is the right `from` for the next name of a sorted request.
/// A `from` past the end is clamped; when `name` does not sort after
/// `table[from - 1]` the whole prefix `table[..from]` is binary-searched, so
/// the result never depends on `from` being a good hint.
///
/// ```
/// let table: [&[u8]; 5] = [b"add", b"div", b"mul", b"pow", b"sub"];
/// fn key<'a>(entry: &'a &[u8]) -> &'a [u8] {
///     entry
/// }
/// let mut from = 0;
/// let mut found = Vec::new();
/// for name in [&b"div"[..], b"mod", b"sub", b"add"] {
///     match xplug_abi::gallop_search(&table, key, name, from) {
///         Ok(index) => { found.push(Some(index)); from = index; }
///         Err(insert) => { found.push(None); from = insert; }
///     }
/// }
/// assert_eq!(found, [Some(1), None, Some(4), Some(0)]);
/// ```
pub fn gallop_search<T, F>(table: &[T], key: F, name: &[u8], from: usize) -> Result<usize, usize>
where
    F: Fn(&T) -> &[u8],
{
    let len = table.len();
    let from = if from > len { len } else { from };
    if from > 0 && name <= key(&table[from - 1]) {
        // Out of order (or a hint one past the match): the name lies in the
        // prefix before the hint.
        return table[..from].binary_search_by(|entry| key(entry).cmp(name));
    }
    // Invariant: every entry in table[..low] sorts below `name`.
    let mut low = from;
    let mut step = 1usize;
    let high = loop {
        let probe = from.saturating_add(step - 1);
        if probe >= len {
            break len;
        }
        match key(&table[probe]).cmp(name) {
            Ordering::Less => {
                low = probe + 1;
                step = step.saturating_mul(2);
            }
            Ordering::Equal => return Ok(probe),
            Ordering::Greater => break probe,
        }
    };
    match table[low..high].binary_search_by(|entry| key(entry).cmp(name)) {
        Ok(index) => Ok(low + index),
        Err(index) => Err(low + index),
    }
}

#[cfg(test)]
mod tests {
    use super::gallop_search;

    fn key<'a>(entry: &'a &[u8]) -> &'a [u8] {
        entry
    }

    /// Every (table size, name, hint) combination over a small alphabet must
    /// agree with a plain binary search of the whole table.
    #[test]
    fn agrees_with_binary_search_for_every_hint() {
        let universe: [&[u8]; 12] =
            [b"a", b"aa", b"ab", b"b", b"ba", b"c", b"ca", b"cb", b"d", b"e", b"ee", b"f"];
        for mask in 0u32..(1 << 12) {
            let mut table: [&[u8]; 12] = [b""; 12];
            let mut len = 0;
            for (bit, name) in universe.iter().enumerate() {
                if mask & (1 << bit) != 0 {
                    table[len] = name;
                    len += 1;
                }
            }
            let table = &table[..len];
            for name in universe.iter().chain([&&b""[..], &&b"zz"[..], &&b"bb"[..]]) {
                let expected = table.binary_search_by(|entry| entry.cmp(name));
                for from in 0..=len + 1 {
                    let found = gallop_search(table, key, name, from);
                    match expected {
                        Ok(index) => assert_eq!(found, Ok(index), "mask {mask:#x} name {name:?} from {from}"),
                        Err(insert) => {
                            assert_eq!(found, Err(insert), "mask {mask:#x} name {name:?} from {from}")
                        }
                    }
                }
            }
        }
    }
}
