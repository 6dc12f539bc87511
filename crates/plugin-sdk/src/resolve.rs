//! The resolver every generated plugin shares (`docs/src/reference/resolution.md#provider-rules`), free of FFI.
//!
//! `ffi.rs` adapts it to the raw v0 resolve call; keeping the search itself
//! safe and generic lets it be tested against a naive model.
//!
//! A generated plugin carries two compile-time structures over its exports:
//! the table sorted by name, and a [`HashIndex`] of it. [`resolve_with`]
//! picks one per call ([`choose_search`]): a request that is sparse
//! relative to the table looks every name up in the hash index (one hash and
//! usually one name comparison, whatever the order); a dense request walks
//! the sorted table with [`gallop_search`], starting each search just past
//! where the previous name landed, which for a request sorted by bare name
//! (what IREE's compiler emits) is a single merge pass. Both give the same
//! result for any request, sorted or not, with or without duplicates.

use xplug_abi::{Resolution, bare_name, gallop_search, is_optional_bytes, name_hash};

/// The compile-time hash index of a plugin's sorted export table: an
/// open-addressing table whose length is a power of two, each slot holding
/// an index into the export table plus one (0 = empty), placed by linear
/// probing from `name_hash(name) & (len - 1)` (built with
/// [`xplug_abi::hash_index_insert`]).
///
/// Tables of up to 65 535 exports use 16-bit slots, larger ones 32-bit.
#[derive(Clone, Copy, Debug)]
pub enum HashIndex<'a> {
    /// 16-bit slots.
    Narrow(&'a [u16]),
    /// 32-bit slots.
    Wide(&'a [u32]),
}

impl HashIndex<'_> {
    fn len(&self) -> usize {
        match self {
            Self::Narrow(slots) => slots.len(),
            Self::Wide(slots) => slots.len(),
        }
    }

    fn slot(&self, position: usize) -> usize {
        match self {
            Self::Narrow(slots) => usize::from(slots[position]),
            // Lossless on 32- and 64-bit targets, the only ones that can
            // hold the more than 65 535 exports a wide index is built for.
            Self::Wide(slots) => slots[position] as usize,
        }
    }

    /// Whether the index can serve lookups: a power-of-two length (empty
    /// indexes are never probed).
    fn usable(&self) -> bool {
        self.len().is_power_of_two()
    }

    /// The table index of the entry whose key is `name`, if any.
    fn find<T>(&self, table: &[T], key: impl Fn(&T) -> &[u8], name: &[u8]) -> Option<usize> {
        let len = self.len();
        let mask = len - 1;
        // Keeping the low bits is the point: the mask selects them.
        let mut position = name_hash(name) as usize & mask;
        // At most `len` probes even if a malformed index had no empty slot.
        for _ in 0..len {
            let value = self.slot(position);
            if value == 0 {
                return None;
            }
            let entry = table.get(value - 1)?;
            if same_bytes(key(entry), name) {
                return Some(value - 1);
            }
            position = (position + 1) & mask;
        }
        None
    }
}

/// How a resolve pass searches the export table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Search {
    /// One hash-index lookup per name.
    Hashed,
    /// A galloping search of the sorted table from the previous landing
    /// point (a merge walk for sorted requests).
    Walk,
}

/// A request counts as sparse when `count * SPARSE_FACTOR < exports`, that
/// is when consecutive names of a sorted request land more than
/// `SPARSE_FACTOR` entries apart on average.
///
/// Why 2: a hash lookup costs the same whatever the gap (hashing the name,
/// one index slot, usually one name comparison), while walking a sorted
/// request costs one equality test when the next name is the next entry
/// and about `2 * log2(gap) + 1` comparisons otherwise. Measured on the
/// benchmark's 4 096-export plugin (raw v0 call, names spread evenly, per
/// name): the hash index takes 11 to 12.5 ns at every density, the walk
/// 5 ns at gap 1, 11.8 ns at gap 2, 14 ns at gap 4, 16 ns at gap 8 and
/// 20 ns at gap 16; they cross at a gap of about 2. Unsorted requests only
/// favour the hash index more.
const SPARSE_FACTOR: usize = 2;

/// Picks the search for a request of `count` names against `exports`
/// entries (see [`SPARSE_FACTOR`]).
pub(crate) fn choose_search(count: usize, exports: usize) -> Search {
    if count.saturating_mul(SPARSE_FACTOR) < exports { Search::Hashed } else { Search::Walk }
}

/// What a resolve pass found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// A required name was left unresolved (the call returns `NOT_FOUND`).
    pub missing_required: bool,
    /// `MISSING_OPTIONAL` when an optional name was left unresolved.
    pub resolution: Resolution,
    /// The search used.
    pub strategy: Search,
}

/// A sorted export table with its hash index.
#[derive(Clone, Copy)]
pub(crate) struct Exports<'t, T, K> {
    /// The entries, sorted by `key`, strictly increasing.
    pub table: &'t [T],
    /// The name of an entry, without NUL.
    pub key: K,
    /// The hash index of `table` (built over the same keys).
    pub index: HashIndex<'t>,
}

/// Resolves `count` requested names against `exports` and fills what it
/// can, with the strategy [`choose_search`] picks.
///
/// * `name_at(i)`: the raw name of slot `i` (`?` prefix included, length
///   already known), `None` for a NULL name pointer (treated as a required
///   name nobody has);
/// * `is_filled(i)`: whether slot `i` already holds a function (skipped,
///   never overwritten, never counted as missing);
/// * `fill(i, entry)`: offers `entry` for slot `i`; returns false when the
///   plugin declines it (then the slot counts as missing).
pub(crate) fn resolve_with<'n, T, K>(
    exports: Exports<'_, T, K>,
    count: usize,
    name_at: impl FnMut(usize) -> Option<&'n [u8]>,
    is_filled: impl FnMut(usize) -> bool,
    fill: impl FnMut(usize, &T) -> bool,
) -> Outcome
where
    K: Fn(&T) -> &[u8],
{
    let strategy = choose_search(count, exports.table.len());
    resolve_using(strategy, exports, count, name_at, is_filled, fill)
}

/// [`resolve_with`] with a given strategy (a hash lookup falls back to the
/// walk when the index is unusable).
pub(crate) fn resolve_using<'n, T, K>(
    strategy: Search,
    exports: Exports<'_, T, K>,
    count: usize,
    name_at: impl FnMut(usize) -> Option<&'n [u8]>,
    is_filled: impl FnMut(usize) -> bool,
    fill: impl FnMut(usize, &T) -> bool,
) -> Outcome
where
    K: Fn(&T) -> &[u8],
{
    let Exports { table, key, index } = exports;
    if strategy == Search::Hashed && index.usable() {
        let search = |bare: &[u8]| index.find(table, &key, bare);
        fill_slots(Search::Hashed, table, count, search, name_at, is_filled, fill)
    } else {
        // `from` is just past the previous hit: the next name of a sorted
        // request lands there or later. When it is the very next entry (a
        // request naming most exports), one equality test finds it;
        // otherwise the galloping search takes over, and it is correct for
        // any `from`.
        let mut from = 0;
        let search = |bare: &[u8]| {
            if let Some(entry) = table.get(from)
                && same_bytes(key(entry), bare)
            {
                from += 1;
                return Some(from - 1);
            }
            match gallop_search(table, &key, bare, from) {
                Ok(index) => {
                    from = index + 1;
                    Some(index)
                }
                Err(insert) => {
                    from = insert;
                    None
                }
            }
        };
        fill_slots(Search::Walk, table, count, search, name_at, is_filled, fill)
    }
}

/// Byte equality tuned for import names (a few to a few dozen bytes): 8
/// bytes per step, the last step overlapping the previous one, so short
/// names cost a couple of word compares instead of a `memcmp` call.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (Some(a_last), Some(b_last)) = (a.last_chunk::<8>(), b.last_chunk::<8>()) else {
        // Fewer than 8 bytes.
        return a == b;
    };
    let (mut a_rest, mut b_rest) = (a, b);
    while a_rest.len() > 8 {
        let (Some((a_word, a_tail)), Some((b_word, b_tail))) =
            (a_rest.split_first_chunk::<8>(), b_rest.split_first_chunk::<8>())
        else {
            break;
        };
        if a_word != b_word {
            return false;
        }
        (a_rest, b_rest) = (a_tail, b_tail);
    }
    a_last == b_last
}

/// The per-slot loop both strategies share: the resolution rules' skipping, `?`
/// handling and missing-name bookkeeping around `search`.
fn fill_slots<'n, T>(
    strategy: Search,
    table: &[T],
    count: usize,
    mut search: impl FnMut(&[u8]) -> Option<usize>,
    mut name_at: impl FnMut(usize) -> Option<&'n [u8]>,
    mut is_filled: impl FnMut(usize) -> bool,
    mut fill: impl FnMut(usize, &T) -> bool,
) -> Outcome {
    let mut outcome = Outcome { missing_required: false, resolution: Resolution::NONE, strategy };
    for slot in 0..count {
        if is_filled(slot) {
            continue;
        }
        let Some(raw) = name_at(slot) else {
            outcome.missing_required = true;
            continue;
        };
        let found = match search(bare_name(raw)) {
            Some(index) => fill(slot, &table[index]),
            None => false,
        };
        if !found {
            if is_optional_bytes(raw) {
                outcome.resolution = Resolution(outcome.resolution.0 | Resolution::MISSING_OPTIONAL.0);
            } else {
                outcome.missing_required = true;
            }
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use alloc::string::String;
    use alloc::vec;
    use alloc::vec::Vec;

    use proptest::prelude::*;
    use xplug_abi::{hash_index_capacity, hash_index_insert};

    use super::*;

    fn key(entry: &String) -> &[u8] {
        entry.as_bytes()
    }

    /// The index the macro would generate for `table`, with 32-bit slots.
    fn wide_index(table: &[String]) -> Vec<u32> {
        let mut slots = vec![0u32; hash_index_capacity(table.len())];
        for (i, name) in table.iter().enumerate() {
            let value = u32::try_from(i + 1).unwrap();
            assert!(hash_index_insert(&mut slots, name_hash(name.as_bytes()), value));
        }
        slots
    }

    fn narrow_index(table: &[String]) -> Vec<u16> {
        wide_index(table).into_iter().map(|value| u16::try_from(value).unwrap()).collect()
    }

    /// Runs the resolver over string inputs (with `strategy`, or the one it
    /// picks itself when `None`); returns the filled table indices per slot
    /// (pre-filled slots are `Some(usize::MAX)`).
    fn run(
        strategy: Option<Search>,
        table: &[String],
        names: &[String],
        prefilled: &[bool],
        declined: &[&str],
    ) -> (Vec<Option<usize>>, Outcome) {
        let wide = wide_index(table);
        let narrow = narrow_index(table);
        // Exercise both slot widths: narrow for odd-sized tables.
        let index = if table.len() % 2 == 1 { HashIndex::Narrow(&narrow) } else { HashIndex::Wide(&wide) };
        let exports = Exports { table, key, index };
        let mut slots: Vec<Option<usize>> =
            prefilled.iter().map(|&filled| filled.then_some(usize::MAX)).collect();
        let filled_before: Vec<bool> = prefilled.to_vec();
        let mut writes = Vec::new();
        let name_at = |i: usize| Some(names[i].as_bytes());
        let is_filled = |i: usize| filled_before[i];
        let fill = |i: usize, entry: &String| {
            if declined.contains(&entry.as_str()) {
                return false;
            }
            writes.push((i, table.iter().position(|e| e == entry).unwrap()));
            true
        };
        let outcome = match strategy {
            Some(strategy) => resolve_using(strategy, exports, names.len(), name_at, is_filled, fill),
            None => resolve_with(exports, names.len(), name_at, is_filled, fill),
        };
        for (i, index) in writes {
            assert!(slots[i].is_none(), "slot {i} written twice or over a pre-filled value");
            slots[i] = Some(index);
        }
        (slots, outcome)
    }

    /// The obvious quadratic model of the resolution rules
    /// (`docs/src/reference/resolution.md#reference-model`) for one provider (its
    /// `strategy` is copied from the run it is compared with).
    fn model(
        strategy: Search,
        table: &[String],
        names: &[String],
        prefilled: &[bool],
        declined: &[&str],
    ) -> (Vec<Option<usize>>, Outcome) {
        let mut outcome = Outcome { missing_required: false, resolution: Resolution::NONE, strategy };
        let slots = names
            .iter()
            .zip(prefilled)
            .map(|(name, &filled)| {
                if filled {
                    return Some(usize::MAX);
                }
                let optional = name.starts_with('?');
                let bare = name.strip_prefix('?').unwrap_or(name);
                let hit = table.iter().position(|entry| entry == bare && !declined.contains(&bare));
                if hit.is_none() {
                    if optional {
                        outcome.resolution = Resolution::MISSING_OPTIONAL;
                    } else {
                        outcome.missing_required = true;
                    }
                }
                hit
            })
            .collect();
        (slots, outcome)
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| String::from(*s)).collect()
    }

    const BOTH: [Search; 2] = [Search::Hashed, Search::Walk];

    #[test]
    fn same_bytes_agrees_with_slice_equality() {
        let base: Vec<u8> = (0u8..40).map(|i| b'a' + i % 26).collect();
        for len in 0..=base.len() {
            let a = &base[..len];
            assert!(same_bytes(a, a));
            // Equal bytes at another address.
            let copy = a.to_vec();
            assert!(same_bytes(a, &copy));
            // One byte changed anywhere, or a different length, differs.
            for at in 0..len {
                let mut b = a.to_vec();
                b[at] ^= 0x20;
                assert!(!same_bytes(a, &b), "len {len} changed at {at}");
            }
            if len > 0 {
                assert!(!same_bytes(a, &a[..len - 1]));
            }
        }
    }

    #[test]
    fn sorted_unsorted_optional_and_prefilled() {
        let table = strings(&["add", "dot", "mul", "saxpy"]);
        for strategy in BOTH {
            let names = strings(&["mul", "?add", "?nope", "dot", "mul", "zzz", "add"]);
            let prefilled = [false, false, false, false, false, false, true];
            let (slots, outcome) = run(Some(strategy), &table, &names, &prefilled, &[]);
            assert_eq!(slots, [Some(2), Some(0), None, Some(1), Some(2), None, Some(usize::MAX)]);
            assert!(outcome.missing_required);
            assert_eq!(outcome.resolution, Resolution::MISSING_OPTIONAL);
            assert_eq!(outcome.strategy, strategy);

            let (_, outcome) =
                run(Some(strategy), &table, &strings(&["?add", "saxpy"]), &[false, false], &[]);
            assert_eq!((outcome.missing_required, outcome.resolution), (false, Resolution::NONE));

            // A pre-filled unknown required name is not missing.
            let (slots, outcome) = run(Some(strategy), &table, &strings(&["unknown"]), &[true], &[]);
            assert_eq!(slots, [Some(usize::MAX)]);
            assert!(!outcome.missing_required);

            // Declined entries count as missing.
            let (slots, outcome) =
                run(Some(strategy), &table, &strings(&["mul", "?dot"]), &[false, false], &["mul", "dot"]);
            assert_eq!(slots, [None, None]);
            assert!(outcome.missing_required);
            assert_eq!(outcome.resolution, Resolution::MISSING_OPTIONAL);
        }
    }

    #[test]
    fn sparse_requests_hash_and_dense_ones_walk() {
        assert_eq!(choose_search(1, 5), Search::Hashed);
        assert_eq!(choose_search(16, 4096), Search::Hashed);
        assert_eq!(choose_search(256, 4096), Search::Hashed);
        assert_eq!(choose_search(1024, 4096), Search::Hashed);
        assert_eq!(choose_search(2047, 4096), Search::Hashed);
        assert_eq!(choose_search(2048, 4096), Search::Walk);
        assert_eq!(choose_search(4096, 4096), Search::Walk);
        assert_eq!(choose_search(1, 3), Search::Hashed);
        assert_eq!(choose_search(1, 2), Search::Walk);
        assert_eq!(choose_search(0, 0), Search::Walk);
        assert_eq!(choose_search(usize::MAX, 1), Search::Walk);

        // And `resolve_with` follows it, with the same result either way.
        let table: Vec<String> = (0..64).map(|i| alloc::format!("f{i:02}")).collect();
        let few = strings(&["f07", "?f99", "f63"]);
        let (slots, outcome) = run(None, &table, &few, &[false; 3], &[]);
        assert_eq!(outcome.strategy, Search::Hashed);
        assert_eq!(slots, [Some(7), None, Some(63)]);
        let many: Vec<String> = table.iter().rev().cloned().collect();
        let (slots, outcome) = run(None, &table, &many, &[false; 64], &[]);
        assert_eq!(outcome.strategy, Search::Walk);
        assert!(slots.iter().rev().enumerate().all(|(i, slot)| *slot == Some(i)));
    }

    #[test]
    fn unusable_index_falls_back_to_the_walk() {
        let table = strings(&["a", "b", "c"]);
        for index in [HashIndex::Wide(&[]), HashIndex::Narrow(&[0, 0, 0])] {
            let exports = Exports { table: &table, key, index };
            let names = [&b"c"[..], b"?x"];
            let outcome =
                resolve_using(Search::Hashed, exports, 2, |i| Some(names[i]), |_| false, |_, _| true);
            assert_eq!(outcome.strategy, Search::Walk);
            assert!(!outcome.missing_required);
            assert_eq!(outcome.resolution, Resolution::MISSING_OPTIONAL);
        }
    }

    #[test]
    fn null_name_is_missing_required() {
        let table = strings(&["a"]);
        let slots = wide_index(&table);
        for strategy in BOTH {
            let exports = Exports { table: &table, key, index: HashIndex::Wide(&slots) };
            let outcome = resolve_using(
                strategy,
                exports,
                2,
                |i| (i == 1).then_some(&b"a"[..]),
                |_| false,
                |_, _| true,
            );
            assert!(outcome.missing_required);
        }
    }

    fn name_strategy() -> impl proptest::strategy::Strategy<Value = String> {
        // A small alphabet makes hits, near misses and shared prefixes common.
        (any::<bool>(), "[abcd]{0,3}")
            .prop_map(|(optional, bare)| if optional { alloc::format!("?{bare}") } else { bare })
    }

    proptest! {
        /// Both strategies, and the automatic choice, agree with the model.
        /// Tables of 0 to 80 names and requests of 0 to 24 make the choice
        /// land on either side.
        #[test]
        fn agrees_with_model(
            table in proptest::collection::btree_set("[abcd]{0,3}", 0..80),
            names in proptest::collection::vec(name_strategy(), 0..24),
            prefilled_seed in proptest::collection::vec(any::<bool>(), 24),
            sort_names in any::<bool>(),
            declined_seed in 0usize..4,
        ) {
            let table: Vec<String> = table.into_iter().collect();
            let mut names = names;
            if sort_names {
                // The compiler's order: by bare name, `?` added afterwards.
                names.sort_by(|a, b| bare_name(a.as_bytes()).cmp(bare_name(b.as_bytes())));
            }
            let prefilled = &prefilled_seed[..names.len()];
            let declined: Vec<&str> = table.iter().take(declined_seed % 2).map(String::as_str).collect();
            for strategy in BOTH {
                prop_assert_eq!(
                    run(Some(strategy), &table, &names, prefilled, &declined),
                    model(strategy, &table, &names, prefilled, &declined)
                );
            }
            let chosen = choose_search(names.len(), table.len());
            prop_assert_eq!(
                run(None, &table, &names, prefilled, &declined),
                model(chosen, &table, &names, prefilled, &declined)
            );
        }
    }
}
