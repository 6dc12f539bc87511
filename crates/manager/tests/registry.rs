//! Registration: capacity, drop order, and resolution racing registration.

mod common;

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use xplug_manager::providers::abi::{Resolution, StatusCode};
use xplug_manager::providers::{Error, ImportProvider, ResolveRequest, SymbolName};
use xplug_manager::{Manager, SlotSource};

fn exporting(symbols: &[usize]) -> ProviderSpec {
    let mut exports = [false; SYMBOLS];
    for &symbol in symbols {
        exports[symbol] = true;
    }
    ProviderSpec { exports, behaviour: Behaviour::Honest, lists_exports: true }
}

fn resolve(
    manager: &Manager,
    imports: &[Import],
) -> (Vec<*mut c_void>, Result<Resolution, xplug_manager::Error>) {
    let mut buffers = RequestBuffers::new(imports);
    let names: Vec<SymbolName<'_>> = buffers.names.iter().map(|n| SymbolName::new(n)).collect();
    let mut request = ResolveRequest::new(&names, &mut buffers.fns, &mut buffers.contexts).unwrap();
    let result = manager.resolve(&mut request);
    (buffers.fns, result)
}

#[test]
fn registration_returns_the_index_and_name_of_what_it_added() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let manager = Manager::new();
    let first =
        manager.register_provider(Arc::new(FakeProvider::new(0, exporting(&[0]), calls.clone()))).unwrap();
    let second = manager.register_provider(Arc::new(FakeProvider::new(1, exporting(&[1]), calls))).unwrap();
    assert_eq!((first.index(), first.name()), (0, "fake0"));
    assert_eq!((second.index(), second.name()), (1, "fake1"));
    // The index is the one resolution traces name.
    let imports = [Import { symbol: 1, optional: false, prefilled: false }];
    let mut buffers = RequestBuffers::new(&imports);
    let names: Vec<SymbolName<'_>> = buffers.names.iter().map(|n| SymbolName::new(n)).collect();
    let mut request = ResolveRequest::new(&names, &mut buffers.fns, &mut buffers.contexts).unwrap();
    let (trace, result) = manager.resolve_traced(&mut request);
    assert_eq!(result.unwrap(), Resolution::NONE);
    assert!(
        matches!(trace.slots[0], SlotSource::Provider { index, .. } if index == second.index()),
        "{:?}",
        trace.slots
    );
}

#[test]
fn a_full_manager_refuses_with_resource_exhausted_and_keeps_what_it_has() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let manager = Manager::builder().capacity(2).build().unwrap();
    assert_eq!(manager.capacity(), Some(2));
    manager.register_provider(Arc::new(FakeProvider::new(0, exporting(&[0]), calls.clone()))).unwrap();
    manager.register_provider(Arc::new(FakeProvider::new(1, exporting(&[1]), calls.clone()))).unwrap();
    let error = manager
        .register_provider(Arc::new(FakeProvider::new(2, exporting(&[2]), calls.clone())))
        .unwrap_err();
    assert_eq!(error.code(), StatusCode::RESOURCE_EXHAUSTED);
    let text = error.to_string();
    assert!(text.contains("capacity of 2") && text.contains("`fake2`"), "{text}");
    assert_eq!(manager.len(), 2);
    assert_eq!(manager.providers(), ["fake1", "fake0"]);

    let imports = [0, 1].map(|symbol| Import { symbol, optional: false, prefilled: false });
    let (fns, result) = resolve(&manager, &imports);
    assert_eq!(result.unwrap(), Resolution::NONE);
    assert_eq!(fns, [fake_fn(0, 0), fake_fn(1, 1)]);
    let (_, result) = resolve(&manager, &[Import { symbol: 2, optional: false, prefilled: false }]);
    assert_eq!(result.unwrap_err().code(), StatusCode::NOT_FOUND, "the refused provider must not be visible");

    let empty = Manager::builder().capacity(0).build().unwrap();
    assert_eq!(
        empty.register_provider(Arc::new(FakeProvider::new(0, exporting(&[]), calls))).unwrap_err().code(),
        StatusCode::RESOURCE_EXHAUSTED
    );
}

#[test]
fn later_registrations_override_earlier_ones() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let manager = Manager::new();
    for id in 0..20 {
        manager
            .register_provider(Arc::new(FakeProvider::new(id, exporting(&[0, 1]), calls.clone())))
            .unwrap();
    }
    let imports = [Import { symbol: 1, optional: false, prefilled: false }];
    let mut buffers = RequestBuffers::new(&imports);
    let names: Vec<SymbolName<'_>> = buffers.names.iter().map(|n| SymbolName::new(n)).collect();
    let mut request = ResolveRequest::new(&names, &mut buffers.fns, &mut buffers.contexts).unwrap();
    let (trace, result) = manager.resolve_traced(&mut request);
    assert_eq!(result.unwrap(), Resolution::NONE);
    assert_eq!(trace.slots, [SlotSource::Provider { index: 19, name: "fake19".into() }]);
    assert_eq!(trace.called, [19], "the scan stops once every slot is filled");
    assert_eq!(manager.providers().len(), 20);
    assert_eq!(manager.providers()[0], "fake19");
}

/// Records its drop in a shared log.
struct DropLogger {
    name: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl ImportProvider for DropLogger {
    fn name(&self) -> &str {
        &self.name
    }
    fn resolve(&self, request: &mut ResolveRequest<'_>) -> Result<Resolution, Error> {
        request.outcome("drop-logger")
    }
}

impl Drop for DropLogger {
    fn drop(&mut self) {
        self.log.lock().unwrap().push(self.name.clone());
    }
}

#[test]
fn providers_are_dropped_newest_first_with_the_manager() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let manager = Manager::new();
    // More than one segment's worth, so the order crosses segment boundaries.
    for i in 0..30 {
        manager.register_provider(Arc::new(DropLogger { name: format!("p{i}"), log: log.clone() })).unwrap();
    }
    assert!(log.lock().unwrap().is_empty());
    drop(manager);
    let expected: Vec<String> = (0..30).rev().map(|i| format!("p{i}")).collect();
    assert_eq!(*log.lock().unwrap(), expected);
}

/// The provider specs the registering threads use, by provider id.
fn concurrent_spec(id: usize) -> ProviderSpec {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (id as u64 + 1).wrapping_mul(0x1000_0001));
    let mut exports = [false; SYMBOLS];
    for export in &mut exports {
        *export = rng.chance(25);
    }
    let behaviour = match rng.below(10) {
        0 => Behaviour::LiarOk,
        1 => Behaviour::LiarNotFound,
        _ => Behaviour::Honest,
    };
    ProviderSpec { exports, behaviour, lists_exports: false }
}

struct Observation {
    imports: Vec<Import>,
    before: usize,
    after: usize,
    fns: Vec<*mut c_void>,
    outcome: Outcome,
}

struct Observations(Vec<Observation>);
// SAFETY: the pointers in an observation are plain numbers (fake function
// addresses) that are never dereferenced or called.
unsafe impl Send for Observations {}

#[test]
fn resolves_racing_registrations_see_a_prefix_of_the_providers() {
    const RESOLVERS: usize = 8;
    const REGISTRARS: usize = 2;
    const RUN_FOR: Duration = Duration::from_secs(2);
    const MAX_PER_REGISTRAR: usize = 600;

    let manager = Manager::new();
    let stop = Arc::new(AtomicBool::new(false));
    let calls = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();

    let registrars: Vec<_> = (0..REGISTRARS)
        .map(|thread| {
            let (manager, calls) = (manager.clone(), calls.clone());
            std::thread::spawn(move || {
                for k in 0..MAX_PER_REGISTRAR {
                    if started.elapsed() >= RUN_FOR {
                        break;
                    }
                    let id = thread * MAX_PER_REGISTRAR + k;
                    let provider = FakeProvider::new(id, concurrent_spec(id), calls.clone());
                    manager.register_provider(Arc::new(provider)).unwrap();
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        })
        .collect();

    let resolvers: Vec<_> = (0..RESOLVERS)
        .map(|thread| {
            let (manager, stop) = (manager.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut rng = Rng(0x1234_5678 + thread as u64);
                let mut seen = Observations(Vec::new());
                while !stop.load(Ordering::Relaxed) {
                    let imports: Vec<Import> = (0..1 + rng.below(6))
                        .map(|_| Import {
                            symbol: rng.below(SYMBOLS),
                            optional: rng.chance(30),
                            prefilled: false,
                        })
                        .collect();
                    let before = manager.len();
                    let (fns, result) = resolve(&manager, &imports);
                    let after = manager.len();
                    seen.0.push(Observation { imports, before, after, fns, outcome: outcome_of(&result) });
                    // Keeps the number of observations (and the checking
                    // cost afterwards) bounded.
                    std::thread::sleep(Duration::from_micros(500));
                }
                seen
            })
        })
        .collect();

    for registrar in registrars {
        registrar.join().expect("a registering thread panicked");
    }
    stop.store(true, Ordering::Relaxed);
    let observations: Vec<Observation> =
        resolvers.into_iter().flat_map(|r| r.join().expect("a resolving thread panicked").0).collect();

    // The final registration order, oldest first, as provider ids.
    let order: Vec<usize> = manager
        .providers()
        .iter()
        .rev()
        .map(|name| name.trim_start_matches("fake").parse().unwrap())
        .collect();
    assert!(order.len() >= REGISTRARS, "the registrars registered nothing");
    let specs: HashMap<usize, ProviderSpec> = order.iter().map(|&id| (id, concurrent_spec(id))).collect();
    let providers: Vec<(usize, &ProviderSpec)> = order.iter().map(|id| (*id, &specs[id])).collect();

    assert!(!observations.is_empty());
    let mut raced = 0;
    for observation in &observations {
        assert!(observation.before <= observation.after);
        if observation.before != observation.after {
            raced += 1;
        }
        let matches_a_prefix = (observation.before..=observation.after).any(|visible| {
            let expected = model(&providers[..visible], &observation.imports);
            expected.fns == observation.fns && expected.outcome == observation.outcome
        });
        assert!(
            matches_a_prefix,
            "resolve of {:?} with {}..={} providers visible matches no prefix: {:?}",
            observation.imports, observation.before, observation.after, observation.outcome
        );
    }
    // Informational: how many resolves overlapped a registration.
    eprintln!(
        "{} resolves, {} overlapped a registration, {} providers",
        observations.len(),
        raced,
        order.len()
    );
}

#[test]
fn a_manager_cannot_be_its_own_provider_but_can_stack_on_another() {
    let inner = Manager::new();
    let outer = Manager::new();
    let error = outer.register_provider(Arc::new(outer.clone())).unwrap_err();
    assert_eq!(error.code(), StatusCode::INVALID_ARGUMENT);
    assert!(error.to_string().contains("provider of itself"), "{error}");
    assert!(outer.is_empty(), "nothing was registered");
    // Another manager is a fine provider.
    outer.register_provider(Arc::new(inner)).unwrap();
    assert_eq!(outer.len(), 1);
}

#[test]
fn a_cycle_of_managers_is_refused_at_resolve_not_a_stack_overflow() {
    let (outer, inner) = (Manager::new(), Manager::new());
    outer.register_provider(Arc::new(inner.clone())).unwrap();
    // Not the same manager, so registration cannot see the cycle.
    inner.register_provider(Arc::new(outer.clone())).unwrap();
    let error = outer.resolve_imports(["anything"]).unwrap_err();
    assert_eq!(error.code(), StatusCode::FAILED_PRECONDITION, "{error}");
    let chain = xplug_manager::Report::from(error).to_string();
    assert!(chain.contains("more than 64 deep"), "{chain}");
}
