//! The manager against the reference model of
//! `docs/src/reference/resolution.md#reference-model`, on random providers
//! (honest, failing, lying) and random requests (sorted or not, optional
//! names, pre-filled slots, duplicates), through every entry point: the Rust
//! API, the traced variant, the manager as an `ImportProvider`, and the C
//! provider function.

mod common;

use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use common::*;
use proptest::prelude::*;
use xplug_manager::providers::abi::{Resolution, StatusCode};
use xplug_manager::providers::{ImportProvider, ResolveRequest, SymbolName};
use xplug_manager::{Manager, SlotSource, suggest};

fn behaviour() -> impl Strategy<Value = Behaviour> {
    prop_oneof![
        6 => Just(Behaviour::Honest),
        1 => prop_oneof![
            Just(StatusCode::INTERNAL),
            Just(StatusCode::UNAVAILABLE),
            Just(StatusCode::INVALID_ARGUMENT),
            Just(StatusCode::NOT_FOUND),
        ]
        .prop_map(Behaviour::Fails),
        1 => Just(Behaviour::LiarOk),
        1 => Just(Behaviour::LiarNotFound),
    ]
}

fn provider_spec() -> impl Strategy<Value = ProviderSpec> {
    (proptest::array::uniform12(proptest::bool::weighted(0.3)), behaviour(), any::<bool>())
        .prop_map(|(exports, behaviour, lists_exports)| ProviderSpec { exports, behaviour, lists_exports })
}

fn import() -> impl Strategy<Value = Import> {
    (0..SYMBOLS, proptest::bool::weighted(0.3), proptest::bool::weighted(0.1))
        .prop_map(|(symbol, optional, prefilled)| Import { symbol, optional, prefilled })
}

fn request() -> impl Strategy<Value = Vec<Import>> {
    (proptest::collection::vec(import(), 0..10), any::<bool>()).prop_map(|(mut imports, sorted)| {
        if sorted {
            imports.sort_by_key(|import| symbol_name(import.symbol));
        }
        imports
    })
}

fn build(specs: &[ProviderSpec]) -> (Manager, Arc<Mutex<Vec<usize>>>) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let manager = Manager::new();
    for (id, spec) in specs.iter().enumerate() {
        manager.register_provider(Arc::new(FakeProvider::new(id, spec.clone(), calls.clone()))).unwrap();
    }
    (manager, calls)
}

/// Which registration index filled a slot, decoded from the fake pointer.
fn filler(function: *mut c_void) -> Option<usize> {
    let value = function as usize;
    (0x10_0000..0x900_0000).contains(&value).then(|| (value - 0x10_0000) / 0x100)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn manager_matches_the_reference_model(
        specs in proptest::collection::vec(provider_spec(), 0..6),
        imports in request(),
    ) {
        let (manager, calls) = build(&specs);
        let indexed: Vec<(usize, &ProviderSpec)> = specs.iter().enumerate().collect();
        let expected = model(&indexed, &imports);

        // Plain resolve.
        let mut buffers = RequestBuffers::new(&imports);
        let names: Vec<SymbolName<'_>> = buffers.names.iter().map(|n| SymbolName::new(n)).collect();
        let mut request = ResolveRequest::new(&names, &mut buffers.fns, &mut buffers.contexts).unwrap();
        let result = manager.resolve(&mut request);
        prop_assert_eq!(&buffers.fns, &expected.fns);
        prop_assert_eq!(&buffers.contexts, &expected.contexts);
        prop_assert_eq!(outcome_of(&result), expected.outcome.clone());
        prop_assert_eq!(&*calls.lock().unwrap(), &expected.calls);
        if let Err(error) = &result {
            prop_assert_eq!(error.code(), match &expected.outcome {
                Outcome::Failed { code, .. } => *code,
                _ => StatusCode::NOT_FOUND,
            });
            // Every suggestion is a real export of a listing provider, close
            // to the missing name, and not the name itself.
            for missing in error.missing_imports() {
                prop_assert_eq!(&missing.name, &imports[missing.index].declared());
                if let Some(suggestion) = &missing.suggestion {
                    let bare = symbol_name(imports[missing.index].symbol);
                    prop_assert!(specs.iter().any(|s| s.lists_exports
                        && (0..SYMBOLS).any(|x| s.exports[x] && symbol_name(x) == suggestion)));
                    prop_assert!(suggestion != bare);
                    let limit = suggest::max_suggestion_distance(bare.len());
                    prop_assert!(suggest::edit_distance_within(bare.as_bytes(), suggestion.as_bytes(), limit).is_some());
                }
            }
        }

        // Traced resolve: same slots, and each slot attributed to the
        // provider whose pointer it holds.
        calls.lock().unwrap().clear();
        let mut buffers = RequestBuffers::new(&imports);
        let names: Vec<SymbolName<'_>> = buffers.names.iter().map(|n| SymbolName::new(n)).collect();
        let mut request = ResolveRequest::new(&names, &mut buffers.fns, &mut buffers.contexts).unwrap();
        let (trace, traced) = manager.resolve_traced(&mut request);
        prop_assert_eq!(&buffers.fns, &expected.fns);
        prop_assert_eq!(&*calls.lock().unwrap(), &expected.calls);
        prop_assert_eq!(outcome_of(&traced), expected.outcome.clone());
        // The trace is complete on success and on failure alike.
        prop_assert_eq!(&trace.called, &expected.calls);
        for (slot, source) in trace.slots.iter().enumerate() {
            let want = if imports[slot].prefilled {
                SlotSource::Prefilled
            } else if let Some(index) = filler(expected.fns[slot]) {
                SlotSource::Provider { index, name: format!("fake{index}").into() }
            } else {
                SlotSource::Empty
            };
            prop_assert_eq!(source, &want);
        }

        // The manager as an `ImportProvider`.
        let mut buffers = RequestBuffers::new(&imports);
        let names: Vec<SymbolName<'_>> = buffers.names.iter().map(|n| SymbolName::new(n)).collect();
        let mut request = ResolveRequest::new(&names, &mut buffers.fns, &mut buffers.contexts).unwrap();
        let as_provider = ImportProvider::resolve(&manager, &mut request);
        prop_assert_eq!(&buffers.fns, &expected.fns);
        match (&as_provider, &expected.outcome) {
            (Ok(resolution), Outcome::Ok(want)) => prop_assert_eq!(resolution, want),
            (Err(error), Outcome::Failed { code, .. }) => prop_assert_eq!(error.code(), *code),
            (Err(error), Outcome::Missing(missing)) => {
                prop_assert_eq!(error.code(), StatusCode::NOT_FOUND);
                let is_count = matches!(error,
                    xplug_manager::providers::Error::NotFound { missing: n, .. } if *n == missing.len());
                prop_assert!(is_count);
            }
            (got, want) => prop_assert!(false, "as provider: {:?}, model: {:?}", got, want),
        }

        // The manager as a provider in another's walk: the same slots, and
        // an error only for a real failure.
        let mut buffers = RequestBuffers::new(&imports);
        let names: Vec<SymbolName<'_>> = buffers.names.iter().map(|n| SymbolName::new(n)).collect();
        let mut request = ResolveRequest::new(&names, &mut buffers.fns, &mut buffers.contexts).unwrap();
        let supplied = ImportProvider::supply(&manager, &mut request);
        prop_assert_eq!(&buffers.fns, &expected.fns);
        match (&supplied, &expected.outcome) {
            (Err(error), Outcome::Failed { code, .. }) => prop_assert_eq!(error.code(), *code),
            (Ok(()), Outcome::Ok(_) | Outcome::Missing(_)) => {}
            (got, want) => prop_assert!(false, "supplied: {:?}, model: {:?}", got, want),
        }

        // Through the C function pointer.
        let mut buffers = RequestBuffers::new(&imports);
        let pointers: Vec<*const std::ffi::c_char> = buffers.names.iter().map(|n| n.as_ptr()).collect();
        let provider = manager.as_c_provider();
        let mut resolution = Resolution(0xFFFF);
        // SAFETY: the arrays hold `len` elements each and the manager lives.
        let status = unsafe {
            (provider.resolve)(provider.self_, pointers.len(), pointers.as_ptr(),
                buffers.fns.as_mut_ptr(), buffers.contexts.as_mut_ptr(), &mut resolution)
        };
        prop_assert_eq!(&buffers.fns, &expected.fns);
        prop_assert_eq!(&buffers.contexts, &expected.contexts);
        match &expected.outcome {
            Outcome::Ok(want) => {
                prop_assert_eq!(status.code(), StatusCode::OK);
                prop_assert_eq!(resolution, *want);
            }
            Outcome::Failed { code, .. } => prop_assert_eq!(status.code(), *code),
            Outcome::Missing(_) => prop_assert_eq!(status.code(), StatusCode::NOT_FOUND),
        }
    }
}

#[test]
fn zero_names_call_no_provider() {
    let spec = ProviderSpec {
        exports: [true; SYMBOLS],
        behaviour: Behaviour::Fails(StatusCode::INTERNAL),
        lists_exports: true,
    };
    let (manager, calls) = build(&[spec]);
    let mut request = ResolveRequest::new(&[], &mut [], &mut []).unwrap();
    assert_eq!(manager.resolve(&mut request).unwrap(), Resolution::NONE);
    assert!(calls.lock().unwrap().is_empty());
}

#[test]
fn only_optional_names_and_no_providers_is_ok_with_missing_optional() {
    let manager = Manager::new();
    let imports = [Import { symbol: 0, optional: true, prefilled: false }];
    let mut buffers = RequestBuffers::new(&imports);
    let names: Vec<SymbolName<'_>> = buffers.names.iter().map(|n| SymbolName::new(n)).collect();
    let mut request = ResolveRequest::new(&names, &mut buffers.fns, &mut buffers.contexts).unwrap();
    assert_eq!(manager.resolve(&mut request).unwrap(), Resolution::MISSING_OPTIONAL);
}

#[test]
fn missing_error_lists_every_name_with_suggestions() {
    let mut exports = [false; SYMBOLS];
    exports[5] = true; // sum_i64
    let spec = ProviderSpec { exports, behaviour: Behaviour::Honest, lists_exports: true };
    let (manager, _) = build(&[spec]);
    let manager = Arc::new(manager);
    let error = manager.resolve_imports(["sum_i32", "?relu", "matmul", "sum_i64", "sum_i32"]).unwrap_err();
    assert_eq!(error.code(), StatusCode::NOT_FOUND);
    let missing: Vec<(usize, &str, Option<&str>)> =
        error.missing_imports().iter().map(|m| (m.index, m.name.as_str(), m.suggestion.as_deref())).collect();
    assert_eq!(
        missing,
        [(0, "sum_i32", Some("sum_i64")), (2, "matmul", None), (4, "sum_i32", Some("sum_i64"))]
    );
    let text = error.to_string();
    assert!(text.contains("missing 3 required executable import(s)"), "{text}");
    assert!(text.contains("`sum_i32` (did you mean `sum_i64`?), `matmul`, `sum_i32`"), "{text}");
}
