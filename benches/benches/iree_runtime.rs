//! IREE's runtime with xplug's manager behind its executables
//! (`xplug-iree`), against the same runtime build with IREE's own plugin
//! manager behind them: rows (8) to (10) of `cargo xtask bench`.
//!
//! Both sides are one build of IREE's runtime from eerie-sys (CMake's
//! Release configuration under `cargo bench`: `-O3 -DNDEBUG`, as IREE
//! releases it), with the same plugins loaded from the same files, so only
//! the provider behind the loaders differs. IREE's manager is
//! `xplug-iree-reference`'s (`IreeManager`, IREE's own C), installed with
//! `Runtime::device_with_c_provider`; the production `xplug-iree` ships no
//! wrapper of it.
//!
//! - (8) the exact C call IREE's loaders make, `resolve(self, n, names, fns,
//!   contexts, &resolution)` with the slots cleared before every call:
//!   IREE's manager's pair against the pair xplug-iree installs; and IREE's
//!   call against `Manager::resolve` on a fresh `ResolveRequest` per
//!   resolve, as a Rust runtime makes one per executable.
//! - (9) module load to first result: a session on a device (executables
//!   created, imports resolved) and one call of `@mul` on 64 elements.
//! - (10) steady state: one call of `@mul` on 1M elements (local-sync).
//! - (11) the same call on a device built with a per-import profile
//!   (`DeviceBuilder::profile`, what `xplug run --profile` uses) against
//!   one without: 16 384 profiled import calls per call.
//!
//! Group names are read back by `xtask/src/bench.rs`; keep them in sync.

#![expect(missing_docs, reason = "`criterion_group!` generates an undocumented public function")]

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use xplug_benches::{LOADER_CASES, LoaderFixture, fresh_resolve, iree_manager, pair, xplug_manager};
use xplug_fixtures::iree_e2e::{self, MUL_CALL};
use xplug_fixtures::plugins::PluginProfile;
use xplug_iree::{Call, DeviceBuilder, DeviceKind, Module, ProfileOptions, Runtime, Session, Tensor};

fn plugins_dir() -> PathBuf {
    let root = xplug_fixtures::workspace_root();
    let built =
        xplug_fixtures::plugins::build(&root, PluginProfile::Release).expect("the example plugins build");
    assert!(built.iter().all(|plugin| plugin.path.is_some()), "an example plugin was skipped: {built:?}");
    xplug_fixtures::plugins::output_dir(&root, PluginProfile::Release)
}

/// (8) The loader's call through each provider, and `Manager::resolve` on a
/// fresh request, for the C example and the SDK example (1 and 4 names).
fn loader_calls(c: &mut Criterion) {
    let dir = plugins_dir();
    for case in &LOADER_CASES {
        let row = case.row;
        let fixture = LoaderFixture::new(case, &dir);
        // Every side resolves into the same slots (`LoaderSlots`), through
        // a pair taken once, as a loader keeps its provider.
        let slots = fixture.slots();
        let (iree_pair, xplug_pair) = (fixture.iree.as_c_provider(), fixture.provider.as_c_provider());
        let mut iree_call = || slots.loader_call(iree_pair);
        let mut xplug_call = || slots.loader_call(xplug_pair);
        pair(
            c,
            &format!("iree_loader_call_{row}"),
            None,
            ("iree", &mut iree_call),
            ("xplug", &mut xplug_call),
        );

        // A Rust runtime's way: a fresh ResolveRequest per executable.
        let symbols = fixture.symbols();
        let mut fresh = || fresh_resolve(&slots, &symbols, &fixture.manager);
        pair(c, &format!("iree_fresh_request_{row}"), None, ("iree", &mut iree_call), ("xplug", &mut fresh));
    }
}

struct Program {
    runtime: Runtime,
    module: Module,
    plugin: PathBuf,
}

fn program() -> Program {
    let root = xplug_fixtures::workspace_root();
    let prepared = iree_e2e::prepare(&root, PluginProfile::Release).expect("IREE and the programs are ready");
    let runtime = Runtime::new().expect("IREE's runtime");
    let module = Module::from_file(&runtime, prepared.module(MUL_CALL)).expect("mul_call.vmfb loads");
    Program { runtime, module, plugin: prepared.library("c_sample").to_owned() }
}

fn inputs(n: usize) -> [Tensor; 2] {
    let (a, b) = iree_e2e::inputs(n);
    [Tensor::from_f32(&a), Tensor::from_f32(&b)]
}

/// (9) Module load to first result, and (10) a steady-state call over 1M
/// elements, with IREE's manager and with xplug's behind the same runtime.
fn programs(c: &mut Criterion) {
    let program = program();
    let kind = DeviceKind::LocalSync;
    let iree = Arc::new(iree_manager(&program.plugin));
    // SAFETY: IREE's manager is thread-safe and its pair stays valid while
    // `iree`, which the device keeps, lives.
    let iree_device =
        unsafe { program.runtime.device_with_c_provider(kind, iree.as_c_provider(), iree.clone()) }
            .expect("device");
    let xplug_device = program.runtime.device(kind, xplug_manager(&program.plugin)).expect("device");
    let small = inputs(64);
    let first_result = |device: &xplug_iree::Device| {
        let session = Session::new(device, &program.module).expect("the module loads");
        black_box(
            session
                .prepare("mul", &small)
                .and_then(Call::invoke)
                .and_then(|results| results.values())
                .expect("the call runs"),
        );
    };
    let mut iree_first = || first_result(&iree_device);
    let mut xplug_first = || first_result(&xplug_device);
    pair(c, "iree_module_load", None, ("iree", &mut iree_first), ("xplug", &mut xplug_first));

    let large = inputs(1 << 20);
    let iree_session = Session::new(&iree_device, &program.module).expect("the module loads");
    let xplug_session = Session::new(&xplug_device, &program.module).expect("the module loads");
    let mut iree_call = || {
        black_box(
            iree_session
                .prepare("mul", &large)
                .and_then(Call::invoke)
                .and_then(|results| results.values())
                .expect("the call runs"),
        );
    };
    let mut xplug_call = || {
        black_box(
            xplug_session
                .prepare("mul", &large)
                .and_then(Call::invoke)
                .and_then(|results| results.values())
                .expect("the call runs"),
        );
    };
    pair(c, "iree_call_1m", None, ("iree", &mut iree_call), ("xplug", &mut xplug_call));

    // (11) The same call with every import call profiled.
    let profiled_device = DeviceBuilder::new(&program.runtime, kind, xplug_manager(&program.plugin))
        .profile(ProfileOptions::default())
        .build()
        .expect("device");
    let profiled_session = Session::new(&profiled_device, &program.module).expect("the module loads");
    let mut profiled_call = || {
        black_box(
            profiled_session
                .prepare("mul", &large)
                .and_then(Call::invoke)
                .and_then(|results| results.values())
                .expect("the call runs"),
        );
    };
    let mut plain_call = || {
        black_box(
            xplug_session
                .prepare("mul", &large)
                .and_then(Call::invoke)
                .and_then(|results| results.values())
                .expect("the call runs"),
        );
    };
    pair(c, "iree_call_1m_profiled", None, ("plain", &mut plain_call), ("profiled", &mut profiled_call));
    let profile = profiled_device.import_profile().expect("profiled");
    // 1M elements, one call per 64: every call of every run counted (none
    // when a criterion filter skipped the pair).
    assert_eq!(profile.imports.len(), 1);
    assert_eq!(profile.imports[0].calls % ((1 << 20) / 64), 0, "{profile:?}");
}

criterion_group!(benches, loader_calls, programs);
criterion_main!(benches);
