//! The search every sorted resolver shares.
//!
//! Import names arrive sorted by bare name (usually), so a resolver
//! holding its exports in a sorted table can find each name starting from
//! where the previous one landed. [`gallop_search`] does that with an
//! exponential ("galloping") probe followed by a binary search, which costs
//! O(1) for neighbouring names (the merge-walk case), O(log gap) in general,
//! and falls back to a plain binary search when a name sorts before the
//! previous one (unsorted input), so it is correct for any order.
//!
//! A request that is sparse relative to the table (a few names out of
//! thousands of exports) gains little from the order: every name is far from
//! the previous one. For that case a resolver can keep a hash index next to
//! its sorted table: [`name_hash`] is the hash, [`hash_index_capacity`] and
//! [`hash_index_insert`] build the open-addressing index (at compile time in
//! `xplug-sdk`'s `#[plugin]` macro), and the resolver probes it with the very
//! same hash at run time.

use core::cmp::Ordering;

/// Multiplier of the per-chunk mix (the 64-bit golden-ratio constant).
const CHUNK_MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;
/// First multiplier of the final avalanche.
const AVALANCHE_1: u64 = 0xFF51_AFD7_ED55_8CCD;
/// Second multiplier of the final avalanche.
const AVALANCHE_2: u64 = 0xC4CE_B9FE_1A85_EC53;

/// Folds one 64-bit word into the running hash: xor, multiply (spreads low
/// bits upwards), xorshift (brings high bits back down).
const fn mix(hash: u64, word: u64) -> u64 {
    let hash = (hash ^ word).wrapping_mul(CHUNK_MULTIPLIER);
    hash ^ (hash >> 32)
}

/// Makes every output bit depend on every input bit, so the low bits a
/// power-of-two index keeps are as good as the high ones.
const fn avalanche(mut hash: u64) -> u64 {
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(AVALANCHE_1);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(AVALANCHE_2);
    hash ^ (hash >> 33)
}

/// A fast, non-cryptographic 64-bit hash of an import name's bytes (the bare
/// name: no `?`, no NUL).
///
/// The bytes are read as 8-byte little-endian words (the last one
/// zero-padded), each folded in with a multiply and a xorshift; the length
/// seeds the state (so `a` and `a\0` differ despite the padding), and a
/// final avalanche mixes all bits. The result is the
/// same on every platform and in `const` context, which is what lets a
/// proc macro build an index that the plugin probes at run time. It is not
/// resistant to chosen collisions; the index stays correct under
/// collisions (linear probing compares the names), only slower.
///
/// ```
/// use xplug_abi::name_hash;
///
/// const ADD: u64 = name_hash(b"add_f32");
/// assert_eq!(ADD, name_hash("add_f32".as_bytes()));
/// assert_ne!(ADD, name_hash(b"add_f64"));
/// ```
#[must_use]
pub const fn name_hash(bytes: &[u8]) -> u64 {
    // Usize to u64 never truncates on the 16/32/64-bit targets Rust has.
    let mut hash = (bytes.len() as u64).wrapping_mul(AVALANCHE_2);
    let mut rest = bytes;
    while let Some((word, tail)) = rest.split_first_chunk::<8>() {
        hash = mix(hash, u64::from_le_bytes(*word));
        rest = tail;
    }
    if !rest.is_empty() {
        let mut word = 0u64;
        let mut i = 0;
        while i < rest.len() {
            word |= (rest[i] as u64) << (8 * i);
            i += 1;
        }
        hash = mix(hash, word);
    }
    avalanche(hash)
}

/// The number of slots of a hash index over `entries` names: the smallest
/// power of two that is at least twice `entries` (at least 1), so the load
/// factor stays at or below 1/2 and at least one slot is always empty, which
/// ends every probe sequence.
///
/// ```
/// assert_eq!(xplug_abi::hash_index_capacity(0), 1);
/// assert_eq!(xplug_abi::hash_index_capacity(3), 8);
/// assert_eq!(xplug_abi::hash_index_capacity(4096), 8192);
/// ```
#[must_use]
pub const fn hash_index_capacity(entries: usize) -> usize {
    let wanted = entries.saturating_mul(2);
    match wanted.checked_next_power_of_two() {
        Some(capacity) => capacity,
        // Unreachable for any real table (more than usize::MAX / 2 names).
        None => usize::MAX / 2 + 1,
    }
}

/// Inserts `value` (a table index + 1; 0 marks an empty slot) for a name
/// with hash `hash` into the open-addressing index `slots`, whose length is
/// a power of two: the first empty slot from `hash & (len - 1)` on, wrapping
/// around (linear probing).
///
/// Returns false, leaving `slots` unchanged, when `value` is 0 or `slots`
/// is empty, not a power of two long, or full.
///
/// A reader looks a name up by probing from the same start: it stops at the
/// first empty slot (absent) or at the slot whose entry has that name.
///
/// ```
/// use xplug_abi::{hash_index_capacity, hash_index_insert, name_hash};
///
/// let names: [&[u8]; 3] = [b"add", b"mul", b"sub"];
/// let mut slots = vec![0u32; hash_index_capacity(names.len())];
/// for (index, name) in names.iter().enumerate() {
///     assert!(hash_index_insert(&mut slots, name_hash(name), index as u32 + 1));
/// }
/// assert_eq!(slots.iter().filter(|&&slot| slot != 0).count(), 3);
/// ```
pub fn hash_index_insert(slots: &mut [u32], hash: u64, value: u32) -> bool {
    let len = slots.len();
    if value == 0 || !len.is_power_of_two() {
        return false;
    }
    let mask = len - 1;
    // Truncating the hash keeps its low bits, the ones the mask selects.
    let start = hash as usize & mask;
    for step in 0..len {
        let slot = &mut slots[(start + step) & mask];
        if *slot == 0 {
            *slot = value;
            return true;
        }
    }
    false
}

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
    use super::{gallop_search, hash_index_capacity, hash_index_insert, name_hash};

    /// `import_0000`..: the benchmark's names, a worst case of shared
    /// prefixes.
    fn numbered(i: usize, out: &mut [u8; 11]) -> &[u8] {
        out.copy_from_slice(b"import_0000");
        let mut n = i;
        for digit in out[7..].iter_mut().rev() {
            *digit = b'0' + (n % 10) as u8;
            n /= 10;
        }
        &out[..]
    }

    #[test]
    fn equal_inputs_hash_equal_and_length_matters() {
        const AT_COMPILE_TIME: u64 = name_hash(b"simple_mul_workgroup");
        let mut copy = [0u8; 32];
        copy[..20].copy_from_slice(b"simple_mul_workgroup");
        assert_eq!(AT_COMPILE_TIME, name_hash(&copy[..20]));
        // Exactly one chunk, a chunk plus a tail, only a tail, nothing; the
        // copy sits at another address with other bytes after it.
        for name in [&b"abcdefgh"[..], b"abcdefghi", b"abc", b""] {
            let mut copy = [0xAAu8; 16];
            copy[..name.len()].copy_from_slice(name);
            assert_eq!(name_hash(name), name_hash(&copy[..name.len()]));
        }
        // Zero padding must not collide with a shorter name.
        assert_ne!(name_hash(b"a"), name_hash(b"a\0"));
        assert_ne!(name_hash(b""), name_hash(b"\0"));
        assert_ne!(name_hash(b"abcdefgh"), name_hash(b"abcdefgh\0"));
        assert_ne!(name_hash(b"ab"), name_hash(b"ba"));
    }

    /// 4 096 names with long shared prefixes spread evenly over 8 192 index
    /// start slots: every bucket of 64 slots gets close to its share, and
    /// linear probing stays short.
    #[test]
    fn distribution_over_a_power_of_two_index() {
        const NAMES: usize = 4096;
        let capacity = hash_index_capacity(NAMES);
        assert_eq!(capacity, 8192);
        let mut buckets = [0usize; 128];
        let mut slots = [0u32; 8192];
        let mut buffer = [0u8; 11];
        for i in 0..NAMES {
            let hash = name_hash(numbered(i, &mut buffer));
            buckets[(hash as usize & (capacity - 1)) / 64] += 1;
            assert!(hash_index_insert(&mut slots, hash, i as u32 + 1));
        }
        // Expected 32 per bucket; a uniform hash stays far inside 8..=64.
        for (bucket, &hits) in buckets.iter().enumerate() {
            assert!((8..=64).contains(&hits), "bucket {bucket} got {hits} of {NAMES} names");
        }
        // Average probe length of a successful lookup.
        let mut total = 0usize;
        for i in 0..NAMES {
            let start = name_hash(numbered(i, &mut buffer)) as usize & (capacity - 1);
            let mut step = 0;
            while slots[(start + step) & (capacity - 1)] != i as u32 + 1 {
                step += 1;
            }
            total += step + 1;
        }
        assert!(total < NAMES * 2, "average probe length {} too long", total as f64 / NAMES as f64);
        // The high and low halves of the hash both vary (the avalanche).
        let (mut low_or, mut high_or) = (0u64, 0u64);
        for i in 0..64 {
            let hash = name_hash(numbered(i, &mut buffer));
            low_or |= hash & 0xFFFF_FFFF;
            high_or |= hash >> 32;
        }
        assert_eq!((low_or, high_or), (0xFFFF_FFFF, 0xFFFF_FFFF));
    }

    #[test]
    fn insert_refuses_bad_indexes_and_full_tables() {
        assert!(!hash_index_insert(&mut [], 1, 1));
        assert!(!hash_index_insert(&mut [0; 3], 1, 1));
        let mut slots = [0u32; 2];
        assert!(!hash_index_insert(&mut slots, 1, 0), "0 is the empty marker");
        assert!(hash_index_insert(&mut slots, 1, 7));
        assert_eq!(slots, [0, 7]);
        assert!(hash_index_insert(&mut slots, 1, 8), "wraps around");
        assert_eq!(slots, [8, 7]);
        assert!(!hash_index_insert(&mut slots, 0, 9), "full");
        assert_eq!(slots, [8, 7]);
        assert_eq!(hash_index_capacity(1), 2);
        assert_eq!(hash_index_capacity(usize::MAX), usize::MAX / 2 + 1);
    }

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
