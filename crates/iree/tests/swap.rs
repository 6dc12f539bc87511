//! Live swap under IREE's runtime (`docs/swap.md`): `tests/iree/mul_call.mlir`
//! on `local-task` with 4 workers, its kernel import (`simple_mul_workgroup`,
//! one call per 64-element workgroup) served by a swappable plugin, called
//! in a loop while another thread swaps the plugin 1 000 times between two
//! builds (`out = a * b * 2` and `* 3`). The session, its executables and
//! their resolved imports are made once; every result slice must be
//! exactly one version's computation.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use xplug_fixtures::iree_e2e;
use xplug_iree::{DeviceKind, Module, Runtime, Session, TensorView, Value};
use xplug_manager::Manager;

/// Elements per call: 64 workgroups, so 64 import calls per `@mul`.
const ELEMENTS: usize = 64 * 64;

/// `mul_call.mlir` compiled, and the two plugin builds, in `dir`.
fn prepare(dir: &std::path::Path) -> (PathBuf, [PathBuf; 2]) {
    let root = xplug_fixtures::workspace_root();
    let tools = iree_e2e::toolchain(&root).expect("IREE's tools are ready");
    let module = dir.join("mul_call.vmfb");
    iree_e2e::compile_file(&tools, &root.join("tests/iree/mul_call.mlir"), &module)
        .expect("mul_call compiles");
    let builds = [
        xplug_fixtures::build_swap_plugin(dir, "swap_x2", 2, &[]),
        xplug_fixtures::build_swap_plugin(dir, "swap_x3", 3, &[]),
    ];
    (module, builds)
}

/// Which factor every 64-element slice of `out` was computed with; panics
/// on a slice that is neither version's result, or mixes them.
fn factors(a: &[f32], b: &[f32], out: &[f32]) -> Vec<f32> {
    out.chunks(64)
        .enumerate()
        .map(|(slice, values)| {
            let first = slice * 64;
            [2.0f32, 3.0]
                .into_iter()
                .find(|&factor| {
                    values.iter().enumerate().all(|(i, &value)| value == a[first + i] * b[first + i] * factor)
                })
                .unwrap_or_else(|| panic!("slice {slice} is neither a*b*2 nor a*b*3: {:?}", &values[..4]))
        })
        .collect()
}

#[test]
fn four_local_task_workers_call_the_kernel_while_it_is_swapped_1000_times() {
    let dir = tempfile::tempdir().unwrap();
    let (module_path, builds) = prepare(dir.path());
    let specs = builds.map(|path| format!("embedded:{}", path.display()));

    let manager = Manager::new();
    // SAFETY: test plugins built from this repository.
    let handle = unsafe { manager.load_swappable(&specs[0]) }.unwrap();
    let runtime = Runtime::new().unwrap();
    let device = runtime.device(DeviceKind::LocalTask { workers: 4 }, manager.clone()).unwrap();
    let module = Module::from_file(&runtime, &module_path).unwrap();
    // Executables load and resolve their imports here, once.
    let session = Session::new(&device, &module).unwrap();

    let a: Vec<f32> = (0..ELEMENTS).map(|i| (i % 97) as f32).collect();
    let b: Vec<f32> = (0..ELEMENTS).map(|i| (i % 13 + 1) as f32).collect();
    let call = || {
        let results = session
            .call(
                "mul",
                [TensorView::new(&[ELEMENTS], &a).unwrap(), TensorView::new(&[ELEMENTS], &b).unwrap()],
            )
            .unwrap();
        let Value::Tensor(out) = &results[0] else { panic!("@mul returns a tensor") };
        factors(&a, &b, &out.to_vec::<f32>().unwrap())
    };
    assert!(call().iter().all(|&factor| factor == 2.0), "the first build serves before any swap");
    // One swap and back: the loaded executables call each build in turn.
    // SAFETY: as above.
    unsafe { handle.replace(&specs[1]) }.unwrap();
    assert!(
        call().iter().all(|&factor| factor == 3.0),
        "the executables call the new build without a reload"
    );
    // SAFETY: as above.
    unsafe { handle.replace(&specs[0]) }.unwrap();
    assert!(call().iter().all(|&factor| factor == 2.0));

    let done = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (handle, done) = (handle.clone(), Arc::clone(&done));
        std::thread::spawn(move || {
            for swap in 1..=1000usize {
                // SAFETY: as above.
                let swapped = unsafe { handle.replace(&specs[swap % 2]) }.unwrap();
                assert_eq!(swapped.rebound, 1, "one import slot: simple_mul_workgroup");
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let (mut calls, mut slices, mut by_new, mut mixed) = (0usize, 0usize, 0usize, 0usize);
    while !done.load(Ordering::SeqCst) || calls == 0 {
        let seen = call();
        calls += 1;
        slices += seen.len();
        by_new += seen.iter().filter(|&&factor| factor == 3.0).count();
        mixed += usize::from(seen.iter().any(|&factor| factor != seen[0]));
    }
    swapper.join().unwrap();
    eprintln!(
        "1000 swaps during {calls} calls of @mul ({slices} import calls on 4 workers: {by_new} by x3, {} by x2; \
         {mixed} calls saw both versions)",
        slices - by_new
    );
    // 1000 swaps end on build 0 (x2), without a new session.
    assert!(call().iter().all(|&factor| factor == 2.0));
    assert_eq!(manager.len(), 1);
}
