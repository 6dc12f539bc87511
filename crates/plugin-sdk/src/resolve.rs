//! The resolver every generated plugin shares (SPEC §2), free of FFI.
//!
//! `ffi.rs` adapts it to the raw v0 resolve call; keeping the walk itself
//! safe and generic lets it be tested against a naive model.

use xplug_abi::{Resolution, bare_name, gallop_search, is_optional_bytes};

/// What a resolve pass found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// A required name was left unresolved (the call returns `NOT_FOUND`).
    pub missing_required: bool,
    /// `MISSING_OPTIONAL` when an optional name was left unresolved.
    pub resolution: Resolution,
}

/// Walks `count` requested names against `table` (sorted by `key`, strictly
/// increasing) and fills what it can.
///
/// * `name_at(i)`: the raw name of slot `i` (`?` prefix included), `None`
///   for a NULL name pointer (treated as a required name nobody has);
/// * `is_filled(i)`: whether slot `i` already holds a function (skipped,
///   never overwritten, never counted as missing);
/// * `fill(i, entry)`: offers `entry` for slot `i`; returns false when the
///   plugin declines it (then the slot counts as missing).
///
/// Each search starts from where the previous name landed, so a request
/// sorted by bare name is one merge pass; any order and duplicates are still
/// handled because [`gallop_search`] falls back to a full search.
pub(crate) fn resolve_with<'n, T>(
    table: &[T],
    key: impl Fn(&T) -> &[u8],
    count: usize,
    mut name_at: impl FnMut(usize) -> Option<&'n [u8]>,
    mut is_filled: impl FnMut(usize) -> bool,
    mut fill: impl FnMut(usize, &T) -> bool,
) -> Outcome {
    let mut outcome = Outcome { missing_required: false, resolution: Resolution::NONE };
    let mut hint = 0;
    for slot in 0..count {
        if is_filled(slot) {
            continue;
        }
        let Some(raw) = name_at(slot) else {
            outcome.missing_required = true;
            continue;
        };
        let found = match gallop_search(table, &key, bare_name(raw), hint) {
            Ok(index) => {
                hint = index;
                fill(slot, &table[index])
            }
            Err(insert) => {
                hint = insert;
                false
            }
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
    use alloc::vec::Vec;

    use proptest::prelude::*;

    use super::*;

    fn key(entry: &String) -> &[u8] {
        entry.as_bytes()
    }

    /// Runs the resolver over string inputs; returns the filled table
    /// indices per slot (pre-filled slots are `Some(usize::MAX)`).
    fn run(
        table: &[String],
        names: &[String],
        prefilled: &[bool],
        declined: &[&str],
    ) -> (Vec<Option<usize>>, Outcome) {
        let mut slots: Vec<Option<usize>> =
            prefilled.iter().map(|&filled| filled.then_some(usize::MAX)).collect();
        let filled_before: Vec<bool> = prefilled.to_vec();
        let mut writes = Vec::new();
        let outcome = resolve_with(
            table,
            key,
            names.len(),
            |i| Some(names[i].as_bytes()),
            |i| filled_before[i],
            |i, entry: &String| {
                if declined.contains(&entry.as_str()) {
                    return false;
                }
                writes.push((i, table.iter().position(|e| e == entry).unwrap()));
                true
            },
        );
        for (i, index) in writes {
            assert!(slots[i].is_none(), "slot {i} written twice or over a pre-filled value");
            slots[i] = Some(index);
        }
        (slots, outcome)
    }

    /// The obvious quadratic model of SPEC §2 for one provider.
    fn model(
        table: &[String],
        names: &[String],
        prefilled: &[bool],
        declined: &[&str],
    ) -> (Vec<Option<usize>>, Outcome) {
        let mut outcome = Outcome { missing_required: false, resolution: Resolution::NONE };
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

    #[test]
    fn sorted_unsorted_optional_and_prefilled() {
        let table = strings(&["add", "dot", "mul", "saxpy"]);
        let names = strings(&["mul", "?add", "?nope", "dot", "mul", "zzz", "add"]);
        let prefilled = [false, false, false, false, false, false, true];
        let (slots, outcome) = run(&table, &names, &prefilled, &[]);
        assert_eq!(slots, [Some(2), Some(0), None, Some(1), Some(2), None, Some(usize::MAX)]);
        assert!(outcome.missing_required);
        assert_eq!(outcome.resolution, Resolution::MISSING_OPTIONAL);

        let (_, outcome) = run(&table, &strings(&["?add", "saxpy"]), &[false, false], &[]);
        assert_eq!(outcome, Outcome { missing_required: false, resolution: Resolution::NONE });

        // A pre-filled unknown required name is not missing.
        let (slots, outcome) = run(&table, &strings(&["unknown"]), &[true], &[]);
        assert_eq!(slots, [Some(usize::MAX)]);
        assert!(!outcome.missing_required);

        // Declined entries count as missing.
        let (slots, outcome) = run(&table, &strings(&["mul", "?dot"]), &[false, false], &["mul", "dot"]);
        assert_eq!(slots, [None, None]);
        assert!(outcome.missing_required);
        assert_eq!(outcome.resolution, Resolution::MISSING_OPTIONAL);
    }

    #[test]
    fn null_name_is_missing_required() {
        let table = strings(&["a"]);
        let outcome = resolve_with(&table, key, 2, |i| (i == 1).then_some(&b"a"[..]), |_| false, |_, _| true);
        assert!(outcome.missing_required);
    }

    fn name_strategy() -> impl Strategy<Value = String> {
        // A small alphabet makes hits, near misses and shared prefixes common.
        (any::<bool>(), "[abc]{0,3}")
            .prop_map(|(optional, bare)| if optional { alloc::format!("?{bare}") } else { bare })
    }

    proptest! {
        #[test]
        fn agrees_with_model(
            table in proptest::collection::btree_set("[abc]{0,3}", 0..12),
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
            prop_assert_eq!(run(&table, &names, prefilled, &declined), model(&table, &names, prefilled, &declined));
        }
    }
}
