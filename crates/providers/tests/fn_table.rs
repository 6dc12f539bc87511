//! `FnTableProvider` against `docs/src/reference/resolution.md#provider-rules`, by example
//! and against a naive reference model with proptest.

use std::ffi::{CString, c_int, c_void};

use proptest::prelude::*;
use xplug_providers::abi::{Resolution, StatusCode};
use xplug_providers::{Error, FnTableEntry, FnTableProvider, ImportProvider, ResolveRequest, SymbolName};

unsafe extern "C" fn exported(_: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
    0
}

unsafe extern "C" fn prefilled(_: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
    1
}

/// A context value that identifies entry `index` (never dereferenced).
fn tag(index: usize) -> *mut c_void {
    std::ptr::without_provenance_mut(0x1000 + index * 16)
}

fn table(names: &[&str]) -> FnTableProvider {
    FnTableProvider::new(
        "table",
        names.iter().enumerate().map(|(index, name)| {
            // SAFETY: the tag contexts are never dereferenced by anyone.
            unsafe { FnTableEntry::with_context(*name, exported, tag(index)) }
        }),
    )
    .expect("valid table")
}

fn prefilled_ptr() -> *mut c_void {
    prefilled as *mut c_void
}

fn exported_ptr() -> *mut c_void {
    exported as *mut c_void
}

#[test]
fn duplicate_and_unusable_names_are_typed_errors() {
    let error = FnTableProvider::new(
        "dups",
        [
            FnTableEntry::new("b", exported),
            FnTableEntry::new("a", exported),
            FnTableEntry::new("b", exported),
        ],
    )
    .unwrap_err();
    assert!(matches!(&error, Error::DuplicateExport { name, .. } if name == "b"), "{error:?}");
    assert_eq!(error.code(), StatusCode::ALREADY_EXISTS);
    assert!(error.to_string().contains("`dups`") && error.to_string().contains("`b`"), "{error}");

    for bad in [&b""[..], b"?opt", b"nul\0inside"] {
        let error = FnTableProvider::new("bad", [FnTableEntry::new(bad, exported)]).unwrap_err();
        assert!(matches!(error, Error::InvalidExport { .. }), "{error:?}");
        assert_eq!(error.code(), StatusCode::INVALID_ARGUMENT);
    }
}

#[test]
fn entries_are_sorted_and_listed() {
    let provider = table(&["mul", "add", "sub"]);
    assert_eq!(provider.exported_names().unwrap(), ["add", "mul", "sub"]);
    assert_eq!(provider.get(b"mul").unwrap().context(), tag(0));
    assert!(provider.get(b"div").is_none());
    assert_eq!(provider.name(), "table");
}

#[test]
fn sorted_unsorted_and_duplicate_requests() {
    let provider = table(&["a", "c", "e", "g"]);
    let requests: [&[&std::ffi::CStr]; 4] = [
        &[c"a", c"c", c"e", c"g"],
        &[c"g", c"a", c"e", c"c"],
        &[c"c", c"c", c"a", c"a", c"g", c"g"],
        &[c"?a", c"c", c"?e", c"e", c"g", c"?g"],
    ];
    for names in requests {
        let symbols: Vec<_> = names.iter().map(|name| SymbolName::new(name)).collect();
        let mut fns = vec![std::ptr::null_mut(); names.len()];
        let mut contexts = vec![std::ptr::null_mut(); names.len()];
        let mut request = ResolveRequest::new(&symbols, &mut fns, &mut contexts).unwrap();
        assert_eq!(provider.resolve(&mut request).unwrap(), Resolution::NONE, "{names:?}");
        for (index, symbol) in symbols.iter().enumerate() {
            let expected =
                ["a", "c", "e", "g"].iter().position(|name| name.as_bytes() == symbol.bare()).unwrap();
            assert_eq!(request.function(index), exported_ptr());
            assert_eq!(request.context(index), tag(expected), "{names:?} slot {index}");
        }
    }
}

#[test]
fn optional_and_missing_names() {
    let provider = table(&["b", "d"]);
    let symbols = [SymbolName::new(c"?a"), SymbolName::new(c"b"), SymbolName::new(c"?d")];
    let mut fns = [std::ptr::null_mut(); 3];
    let mut contexts = [std::ptr::null_mut(); 3];
    let mut request = ResolveRequest::new(&symbols, &mut fns, &mut contexts).unwrap();
    assert_eq!(provider.resolve(&mut request).unwrap(), Resolution::MISSING_OPTIONAL);
    assert!(!request.is_filled(0) && request.is_filled(1) && request.is_filled(2));

    let symbols = [SymbolName::new(c"b"), SymbolName::new(c"c"), SymbolName::new(c"x")];
    let mut fns = [std::ptr::null_mut(); 3];
    let mut contexts = [std::ptr::null_mut(); 3];
    let mut request = ResolveRequest::new(&symbols, &mut fns, &mut contexts).unwrap();
    let error = provider.resolve(&mut request).unwrap_err();
    assert!(matches!(&error, Error::NotFound { provider, missing: 2 } if *provider == "table"), "{error:?}");
    assert_eq!(error.code(), StatusCode::NOT_FOUND);
    assert!(request.is_filled(0), "a provider fills what it can");

    // Zero names: OK, nothing to do.
    let mut request = ResolveRequest::new(&[], &mut [], &mut []).unwrap();
    assert_eq!(provider.resolve(&mut request).unwrap(), Resolution::NONE);
}

#[test]
fn filled_slots_are_never_overwritten() {
    let provider = table(&["a", "b"]);
    let symbols = [SymbolName::new(c"a"), SymbolName::new(c"b"), SymbolName::new(c"zzz")];
    let mut fns = [prefilled_ptr(), std::ptr::null_mut(), prefilled_ptr()];
    let mut contexts = [tag(99), std::ptr::null_mut(), tag(98)];
    let mut request = ResolveRequest::new(&symbols, &mut fns, &mut contexts).unwrap();
    // `zzz` is required but already filled: not missing.
    assert_eq!(provider.resolve(&mut request).unwrap(), Resolution::NONE);
    assert_eq!(fns, [prefilled_ptr(), exported_ptr(), prefilled_ptr()]);
    assert_eq!(contexts, [tag(99), tag(1), tag(98)]);
}

/// Names over a small alphabet, so requests hit and miss the table often.
const UNIVERSE: [&str; 10] = ["a", "ab", "b", "ba", "c", "ca", "d", "e", "ee", "f"];

#[derive(Clone, Debug)]
struct Slot {
    name: usize,
    optional: bool,
    prefilled: bool,
}

fn slot() -> impl Strategy<Value = Slot> {
    (0..UNIVERSE.len(), any::<bool>(), proptest::bool::weighted(0.2))
        .prop_map(|(name, optional, prefilled)| Slot { name, optional, prefilled })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The provider agrees with `docs/src/reference/resolution.md#provider-rules`: every
    /// empty slot whose
    /// bare name is exported gets that entry; filled slots are untouched;
    /// NOT_FOUND iff a required slot stays empty, else MISSING_OPTIONAL iff
    /// an optional one does.
    #[test]
    fn matches_the_reference_model(
        exported_mask in 0u32..(1 << UNIVERSE.len()),
        mut slots in proptest::collection::vec(slot(), 0..24),
        sort_request in any::<bool>(),
    ) {
        if sort_request {
            // The order IREE's compiler emits: by bare name.
            slots.sort_by_key(|slot| UNIVERSE[slot.name]);
        }
        let exported: Vec<&str> =
            (0..UNIVERSE.len()).filter(|bit| exported_mask & (1 << bit) != 0).map(|bit| UNIVERSE[bit]).collect();
        // Build the table in reverse to prove construction sorts it.
        let provider = FnTableProvider::new(
            "model",
            exported.iter().rev().map(|name| {
                let index = UNIVERSE.iter().position(|u| u == name).unwrap();
                // SAFETY: the tag contexts are never dereferenced.
                unsafe { FnTableEntry::with_context(*name, exported_fn(), tag(index)) }
            }),
        ).unwrap();

        let owned: Vec<CString> = slots
            .iter()
            .map(|slot| CString::new(format!("{}{}", if slot.optional { "?" } else { "" }, UNIVERSE[slot.name])).unwrap())
            .collect();
        let symbols: Vec<SymbolName<'_>> = owned.iter().map(|name| SymbolName::new(name)).collect();
        let mut fns: Vec<*mut c_void> =
            slots.iter().map(|slot| if slot.prefilled { prefilled_ptr() } else { std::ptr::null_mut() }).collect();
        let mut contexts: Vec<*mut c_void> =
            slots.iter().enumerate().map(|(i, slot)| if slot.prefilled { tag(100 + i) } else { std::ptr::null_mut() }).collect();
        let mut request = ResolveRequest::new(&symbols, &mut fns, &mut contexts).unwrap();
        let result = provider.resolve(&mut request);

        // The naive reference.
        let mut expected_fns = Vec::new();
        let mut expected_contexts = Vec::new();
        let (mut missing_required, mut missing_optional) = (0, false);
        for (i, slot) in slots.iter().enumerate() {
            if slot.prefilled {
                expected_fns.push(prefilled_ptr());
                expected_contexts.push(tag(100 + i));
            } else if exported.contains(&UNIVERSE[slot.name]) {
                expected_fns.push(exported_ptr());
                expected_contexts.push(tag(slot.name));
            } else {
                expected_fns.push(std::ptr::null_mut());
                expected_contexts.push(std::ptr::null_mut());
                if slot.optional { missing_optional = true } else { missing_required += 1 }
            }
        }
        prop_assert_eq!(&fns, &expected_fns);
        prop_assert_eq!(&contexts, &expected_contexts);
        match result {
            Err(Error::NotFound { provider, missing }) if provider == "model" => prop_assert_eq!(missing, missing_required),
            Ok(resolution) => {
                prop_assert_eq!(missing_required, 0);
                prop_assert_eq!(resolution.contains(Resolution::MISSING_OPTIONAL), missing_optional);
                prop_assert!(missing_optional || resolution == Resolution::NONE);
            }
            Err(other) => prop_assert!(false, "unexpected error {other:?}"),
        }
    }
}

fn exported_fn() -> xplug_providers::abi::ImportFn {
    exported
}
