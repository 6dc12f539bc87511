//! Live swap under IREE's runtime (`docs/src/operating/swap.md`): `tests/iree/mul_call.mlir`
//! on `local-task` with 4 workers, its kernel import (`simple_mul_workgroup`,
//! one call per 64-element workgroup) served by a swappable plugin, called
//! in a loop while another thread swaps the plugin 1 000 times between two
//! builds (`out = a * b * 2` and `* 3`). The session, its executables and
//! their resolved imports are made once; every result slice must be
//! exactly one version's computation.
//!
//! A second test holds one `@mul` call inside the old build (the plugin's
//! `hold=` point) while a swap runs, and checks, without relying on timing,
//! that the rest of that running call is served by the new build.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

use xplug_fixtures::iree_e2e;
use xplug_iree::{Call, DeviceKind, Module, Runtime, Session, TensorView, Value};
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
            .prepare(
                "mul",
                [TensorView::new(&[ELEMENTS], &a).unwrap(), TensorView::new(&[ELEMENTS], &b).unwrap()],
            )
            .and_then(Call::invoke)
            .and_then(|results| results.values())
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

    // The swapper goes on (in pairs, so it ends on x2) until 1000 swaps are
    // done and the calls have seen both builds; the calls go on until it
    // stops. Both builds serving calls of the same loaded executables is
    // what the swaps must reach; a cap turns "never" into a failure.
    let done = Arc::new(AtomicBool::new(false));
    let seen_both = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (handle, done, seen_both) = (handle.clone(), Arc::clone(&done), Arc::clone(&seen_both));
        std::thread::spawn(move || {
            let mut swaps = 0usize;
            while swaps < 1000 || (!seen_both.load(Ordering::SeqCst) && swaps < 100_000) {
                for spec in [&specs[1], &specs[0]] {
                    // SAFETY: as above.
                    let swapped = unsafe { handle.replace(spec) }.unwrap();
                    assert_eq!(swapped.rebound, 1, "one import slot: simple_mul_workgroup");
                    swaps += 1;
                }
            }
            done.store(true, Ordering::SeqCst);
            swaps
        })
    };
    let (mut calls, mut by_old, mut by_new) = (0usize, 0usize, 0usize);
    while !done.load(Ordering::SeqCst) || calls == 0 {
        let seen = call();
        calls += 1;
        by_new += seen.iter().filter(|&&factor| factor == 3.0).count();
        by_old += seen.iter().filter(|&&factor| factor == 2.0).count();
        if by_new > 0 && by_old > 0 {
            seen_both.store(true, Ordering::SeqCst);
        }
    }
    let swaps = swapper.join().unwrap();
    assert!(
        by_new > 0 && by_old > 0,
        "{swaps} swaps during {calls} calls of @mul: {by_new} import calls by x3, {by_old} by x2; the swaps \
         never reached the loaded executables' calls"
    );
    // 1000 swaps end on build 0 (x2), without a new session.
    assert!(call().iter().all(|&factor| factor == 2.0));
    assert_eq!(manager.len(), 1);
}

/// Whether a swap reaches a call that is running: one `@mul` call on a
/// one-worker device is held inside the x2 build (its first workgroup
/// waits at the plugin's `hold=` point) while `replace` points the slot at
/// x3. A second device's calls run until x3 serves one, which releases the
/// held workgroup; every workgroup of the held call that starts after it
/// must then be served by x3. Each step waits on the one before, so the
/// outcome does not depend on timing.
#[test]
fn a_swap_reaches_the_rest_of_a_running_call() {
    let dir = tempfile::tempdir().unwrap();
    let (module_path, builds) = prepare(dir.path());
    // { armed, held, last_factor }: `tests/c/swap_plugin.c`'s hold point.
    let hold: &'static [AtomicI32; 3] =
        Box::leak(Box::new([AtomicI32::new(0), AtomicI32::new(0), AtomicI32::new(0)]));
    let specs = builds.map(|path| format!("embedded:{}?hold={:x}", path.display(), hold.as_ptr() as usize));

    let manager = Manager::new();
    // SAFETY: test plugins built from this repository.
    let handle = unsafe { manager.load_swappable(&specs[0]) }.unwrap();
    let runtime = Runtime::new().unwrap();
    let held_device = runtime.device(DeviceKind::LocalTask { workers: 1 }, manager.clone()).unwrap();
    let other_device = runtime.device(DeviceKind::LocalTask { workers: 2 }, manager.clone()).unwrap();
    let module = Module::from_file(&runtime, &module_path).unwrap();
    // Both sessions resolve their imports now, before any swap.
    let held_session = Session::new(&held_device, &module).unwrap();
    let other_session = Session::new(&other_device, &module).unwrap();

    let a: Vec<f32> = (0..ELEMENTS).map(|i| (i % 97) as f32).collect();
    let b: Vec<f32> = (0..ELEMENTS).map(|i| (i % 13 + 1) as f32).collect();
    let call = |session: &Session| {
        let results = session
            .prepare(
                "mul",
                [TensorView::new(&[ELEMENTS], &a).unwrap(), TensorView::new(&[ELEMENTS], &b).unwrap()],
            )
            .and_then(Call::invoke)
            .and_then(|results| results.values())
            .unwrap();
        let Value::Tensor(out) = &results[0] else { panic!("@mul returns a tensor") };
        factors(&a, &b, &out.to_vec::<f32>().unwrap())
    };
    assert!(call(&other_session).iter().all(|&factor| factor == 2.0), "x2 serves before the swap");
    assert_eq!(hold[2].load(Ordering::SeqCst), 2, "the plugin reports to the hold point");

    let other_calls = AtomicUsize::new(0);
    let held_result = std::thread::scope(|scope| {
        hold[0].store(1, Ordering::SeqCst);
        let held_call = scope.spawn(|| call(&held_session));
        // The first workgroup of the held call is inside x2.
        while hold[1].load(Ordering::SeqCst) == 0 {
            assert!(!held_call.is_finished(), "the held call ended without being held");
            std::thread::yield_now();
        }
        // `replace` returns only when the held workgroup has left x2.
        let swap = scope.spawn(|| {
            // SAFETY: as above.
            unsafe { handle.replace(&specs[1]) }.unwrap()
        });
        // Calls through the other device: x2 until the slot points at x3,
        // then x3, whose report releases the held workgroup.
        loop {
            let seen = call(&other_session);
            let calls = other_calls.fetch_add(1, Ordering::SeqCst) + 1;
            if seen.contains(&3.0) {
                break;
            }
            if calls == 100_000 {
                // Release the held workgroup so the threads end, then fail.
                hold[2].store(-1, Ordering::SeqCst);
                panic!("{calls} calls after the swap began and x3 served none: the swap never reached them");
            }
        }
        let held_result = held_call.join().unwrap();
        assert_eq!(swap.join().unwrap().rebound, 1, "one import slot: simple_mul_workgroup");
        held_result
    });
    let by_old = held_result.iter().filter(|&&factor| factor == 2.0).count();
    let by_new = held_result.iter().filter(|&&factor| factor == 3.0).count();
    assert_eq!(
        (by_old, by_new),
        (1, held_result.len() - 1),
        "the held workgroup finishes on x2, every later one of the same call runs x3 (after {} other calls)",
        other_calls.load(Ordering::SeqCst)
    );
    assert_eq!(hold[0].load(Ordering::SeqCst), 0, "the armed point was taken once");
    assert_eq!(manager.len(), 1);
}
