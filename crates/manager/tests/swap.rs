//! Live swap through the manager (`docs/src/operating/swap.md`): a swappable plugin
//! replaced under resolved imports, the refusals that leave the old
//! version serving, a call held in flight across a swap, 4 threads calling
//! while the plugin is swapped 1 000 times, and all of it under valgrind.
//!
//! The plugins are builds of `tests/c/swap_plugin.c` with different
//! factors (`xplug_fixtures::build_swap_plugin`), loaded through xplug's
//! embedded-ELF loader (`embedded:`), so a replaced version's memory is
//! really unmapped, or through the OS loader where a test says so.

use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use xplug_manager::providers::{ImportProvider, LoadParamList, Loader, RequestSlots, SYSTEM_LIBRARY};
use xplug_manager::swap::{Error as SwapError, SwapHandle};
use xplug_manager::{Error, ErrorChain, Manager, ResolvedImports};

/// `swap_scale_i32`'s args.
#[repr(C)]
struct ScaleArgs {
    value: i32,
    out: i32,
}

/// `swap_hold_i32`'s args.
#[repr(C)]
struct HoldArgs {
    gate: *const i32,
    entered: *mut i32,
    out: i32,
}

/// The builds every test uses, made once per test binary.
struct Builds {
    dir: tempfile::TempDir,
    x2: PathBuf,
    x3: PathBuf,
}

fn builds() -> &'static Builds {
    static BUILDS: OnceLock<Builds> = OnceLock::new();
    BUILDS.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let x2 = xplug_fixtures::build_swap_plugin(dir.path(), "swap_x2", 2, &[]);
        let x3 = xplug_fixtures::build_swap_plugin(dir.path(), "swap_x3", 3, &[]);
        Builds { dir, x2, x3 }
    })
}

/// A build with extra flags, in the shared directory.
fn build(name: &str, factor: i32, extra: &[&str]) -> PathBuf {
    xplug_fixtures::build_swap_plugin(builds().dir.path(), name, factor, extra)
}

/// The spec of `path` through xplug's embedded-ELF loader, with the
/// address `unload` increments.
fn embedded(path: &Path, unloaded: &AtomicI32) -> String {
    format!("embedded:{}?unloaded={:x}", path.display(), std::ptr::from_ref(unloaded) as usize)
}

/// Calls `swap_scale_i32` (import 0 of `imports`) on `value`.
fn scale(imports: &ResolvedImports, value: i32) -> i32 {
    let import = imports.import(0).expect("resolved");
    let mut args = ScaleArgs { value, out: 0 };
    // SAFETY: `swap_scale_i32` takes a `ScaleArgs`.
    assert_eq!(unsafe { import.call(&mut args) }, 0);
    args.out
}

/// A fresh counter for `unloaded=` (the plugin keeps its address until
/// unloaded, so it is static).
fn counter() -> &'static AtomicI32 {
    static POOL: [AtomicI32; 64] = [const { AtomicI32::new(0) }; 64];
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    POOL.get(NEXT.fetch_add(1, Ordering::Relaxed)).expect("enough counters for this binary's tests")
}

/// The variable setting the stress test's swap count.
const SWAPS_VAR: &str = "XPLUG_SWAP_STRESS_SWAPS";

/// The stress test's swaps: 1 000, or 100 in the valgrind rerun (each swap
/// maps and unmaps a plugin, slow under valgrind; the ignored
/// `memcheck_clean_with_1000_swaps` runs the full count there), or
/// [`SWAPS_VAR`].
fn stress_swaps() -> usize {
    if let Some(swaps) = std::env::var(SWAPS_VAR).ok().and_then(|value| value.parse().ok()) {
        return swaps;
    }
    if std::env::var_os(xplug_fixtures::valgrind::RERUN_ENV).is_some() { 100 } else { 1000 }
}

#[test]
fn a_replaced_plugin_serves_resolved_imports_without_a_new_resolve() {
    let (old_unloaded, new_unloaded) = (counter(), counter());
    let manager = Manager::new();
    // SAFETY: a test plugin built from this repository.
    let handle = unsafe { manager.load_swappable(&embedded(&builds().x2, old_unloaded)) }.unwrap();
    let imports = manager.resolve_imports(["swap_scale_i32"]).unwrap();
    assert_eq!(scale(&imports, 7), 14);

    let new_spec = embedded(&builds().x3, new_unloaded);
    // SAFETY: as above.
    let swapped = unsafe { handle.replace(&new_spec) }.unwrap();
    assert_eq!(swapped.rebound, 1);
    assert_eq!(swapped.swaps, 1);
    assert_eq!(swapped.previous_spec, embedded(&builds().x2, old_unloaded));
    assert_eq!(
        swapped.previous_allocations.map(|stats| stats.live_allocations),
        Some(0),
        "old version freed its state"
    );
    assert_eq!(old_unloaded.load(Ordering::SeqCst), 1, "the old version's unload ran");
    assert_eq!(new_unloaded.load(Ordering::SeqCst), 0);
    // The same table, no new resolve: the new code.
    assert_eq!(scale(&imports, 7), 21);
    assert_eq!(handle.current_spec(), new_spec);
    // A later resolve gets the same slot, so the same function and context.
    let again = manager.resolve_imports(["?swap_scale_i32"]).unwrap();
    assert_eq!((again.function(0), again.context(0)), (imports.function(0), imports.context(0)));
    drop((imports, again));
    drop(manager);
    assert_eq!(new_unloaded.load(Ordering::SeqCst), 0, "the handle keeps the swappable plugin alive");
    drop(handle);
    assert_eq!(
        new_unloaded.load(Ordering::SeqCst),
        1,
        "the last of manager and handle unloads the current version"
    );
}

#[test]
fn the_spec_flag_loads_a_swappable_plugin_and_is_not_passed_to_it() {
    let unloaded = counter();
    let manager = Manager::new();
    // `swappable` is the manager's: the plugin still gets `unloaded`.
    let spec = format!("{}&swappable", embedded(&builds().x2, unloaded));
    // SAFETY: a test plugin built from this repository.
    let registered = unsafe { manager.load_spec(&spec) }.unwrap();
    let handle = registered.swap_handle().cloned().expect("a `?swappable` spec registers a swappable plugin");
    let imports = manager.resolve_imports(["swap_scale_i32"]).unwrap();
    assert_eq!(scale(&imports, 5), 10);
    // SAFETY: as above.
    unsafe { handle.replace(&embedded(&builds().x3, counter())) }.unwrap();
    assert_eq!(scale(&imports, 5), 15);
    assert_eq!(unloaded.load(Ordering::SeqCst), 1);
}

#[test]
fn a_plugin_not_loaded_as_swappable_resolves_to_its_own_function() {
    // Through the OS loader, so a second load of the same file is the
    // same code and its function pointer can be compared.
    let path = &builds().x2;
    let manager = Manager::new();
    // SAFETY: a test plugin built from this repository.
    let handle = unsafe { manager.load_spec(&path.display().to_string()) }.unwrap();
    let imports = manager.resolve_imports(["swap_scale_i32"]).unwrap();
    // SAFETY: as above.
    let plugin = unsafe {
        SYSTEM_LIBRARY
            .open(&std::path::Path::new(&path).to_string_lossy())
            .and_then(|code| code.load(&LoadParamList::new()))
    }
    .unwrap();
    let mut own = RequestSlots::for_names([c"swap_scale_i32"]);
    plugin.supply(&mut own.request()).unwrap();
    assert!(!own.fns()[0].is_null());
    assert_eq!(imports.function(0), own.fns()[0], "no wrapper: the plugin's own function");
    assert_eq!(scale(&imports, 4), 8);
    assert!(handle.swap_handle().is_none(), "a plain spec gives no swap handle");

    // The same file loaded as swappable resolves to the trampoline.
    let swappable = Manager::new();
    // SAFETY: as above.
    unsafe { swappable.load_swappable(&path.display().to_string()) }.unwrap();
    let wrapped = swappable.resolve_imports(["swap_scale_i32"]).unwrap();
    assert_ne!(wrapped.function(0), own.fns()[0]);
    assert_eq!(scale(&wrapped, 4), 8);
}

#[test]
fn shared_library_versions_swap_and_stay_mapped() {
    // Each build has its own file: the OS loader would give back the
    // pinned copy of a path it has seen.
    let manager = Manager::new();
    let unloaded = counter();
    let spec =
        |path: &Path| format!("{}?unloaded={:x}", path.display(), std::ptr::from_ref(unloaded) as usize);
    // SAFETY: test plugins built from this repository.
    let handle = unsafe { manager.load_swappable(&spec(&builds().x2)) }.unwrap();
    let imports = manager.resolve_imports(["swap_scale_i32"]).unwrap();
    assert_eq!(scale(&imports, 3), 6);
    // SAFETY: as above.
    unsafe { handle.replace(&spec(&builds().x3)) }.unwrap();
    assert_eq!(scale(&imports, 3), 9);
    assert_eq!(unloaded.load(Ordering::SeqCst), 1, "the old version's unload ran");
    // Back to the first build: its library was never closed, so it is the
    // same code, loaded again (a new `load`, a new state).
    // SAFETY: as above.
    unsafe { handle.replace(&spec(&builds().x2)) }.unwrap();
    assert_eq!(scale(&imports, 3), 6);
    assert_eq!(unloaded.load(Ordering::SeqCst), 2);
}

/// Asserts that `error` is a refused swap, the old version still serves
/// `imports`, and nothing changed.
fn assert_refused(manager: &Manager, handle: &SwapHandle, imports: &ResolvedImports, old_spec: &str) {
    assert_eq!(scale(imports, 10), 20, "the old version keeps serving");
    assert_eq!(handle.current_spec(), old_spec);
    assert_eq!(manager.len(), 1, "nothing registered or lost");
}

#[test]
fn refused_swaps_keep_the_old_version_serving() {
    let old_unloaded = counter();
    let manager = Manager::new();
    let old_spec = embedded(&builds().x2, old_unloaded);
    // SAFETY: test plugins built from this repository, here and below.
    let handle = unsafe { manager.load_swappable(&old_spec) }.unwrap();
    let imports = manager.resolve_imports(["swap_scale_i32"]).unwrap();

    // Lacks an import in use: the new version is loaded, refused, unloaded.
    let missing_unloaded = counter();
    let missing = embedded(&build("swap_no_scale", 3, &["-DOMIT_SCALE"]), missing_unloaded);
    // SAFETY: a test plugin built from this repository, or no plugin at all.
    let error = unsafe { handle.replace(&missing) }.unwrap_err();
    match &error {
        SwapError::MissingImports { plugin, spec, missing: names } => {
            assert_eq!((plugin.as_str(), spec.as_str()), ("swap_test", missing.as_str()));
            assert_eq!(names, &["swap_scale_i32"]);
        }
        other => panic!("expected MissingImports, got {other:?}"),
    }
    assert!(
        error.to_string().contains("`swap_scale_i32`")
            && error.to_string().contains("old version keeps serving")
    );
    assert_eq!(missing_unloaded.load(Ordering::SeqCst), 1, "the refused version was unloaded");
    assert_refused(&manager, &handle, &imports, &old_spec);

    // Fails the load checks (a header version newer than xplug's).
    let newer = embedded(&build("swap_newer", 3, &["-DNEWER_VERSION"]), counter());
    // SAFETY: a test plugin built from this repository, or no plugin at all.
    let error = unsafe { handle.replace(&newer) }.unwrap_err();
    let SwapError::LoadFailed { source, .. } = &error else { panic!("expected LoadFailed, got {error:?}") };
    let source = source.downcast_ref::<Error>().expect("the manager's error");
    assert!(matches!(source, Error::PluginLoad { .. }), "{source:?}");
    let chain = ErrorChain(&error).to_string();
    assert!(chain.contains("newer") || chain.contains("version"), "{chain}");
    assert_refused(&manager, &handle, &imports, &old_spec);

    // A file that does not exist, and a malformed spec.
    // SAFETY: a test plugin built from this repository, or no plugin at all.
    let error = unsafe { handle.replace("embedded:/nonexistent/swap.so") }.unwrap_err();
    assert!(matches!(error, SwapError::LoadFailed { .. }), "{error}");
    // SAFETY: a test plugin built from this repository, or no plugin at all.
    let error = unsafe { handle.replace("") }.unwrap_err();
    let SwapError::LoadFailed { source, .. } = &error else { panic!("expected LoadFailed, got {error:?}") };
    let source = source.downcast_ref::<Error>().expect("the manager's error");
    assert!(matches!(source, Error::InvalidSpec { .. }), "{source:?}");
    assert_refused(&manager, &handle, &imports, &old_spec);

    // Another plugin.
    let other_unloaded = counter();
    let other = embedded(&build("swap_other", 3, &["-DPLUGIN_NAME=\"not_swap_test\""]), other_unloaded);
    // SAFETY: a test plugin built from this repository, or no plugin at all.
    let error = unsafe { handle.replace(&other) }.unwrap_err();
    let SwapError::Incompatible { reason, .. } = &error else {
        panic!("expected Incompatible, got {error:?}")
    };
    assert!(reason.contains("not_swap_test"), "{reason}");
    assert_eq!(other_unloaded.load(Ordering::SeqCst), 1);
    assert_refused(&manager, &handle, &imports, &old_spec);

    assert_eq!(old_unloaded.load(Ordering::SeqCst), 0, "the old version was never unloaded");
    // And a good swap still works afterwards.
    // SAFETY: a test plugin built from this repository, or no plugin at all.
    unsafe { handle.replace(&embedded(&builds().x3, counter())) }.unwrap();
    assert_eq!(scale(&imports, 10), 30);
    assert_eq!(old_unloaded.load(Ordering::SeqCst), 1);
}

#[test]
fn a_call_in_flight_finishes_on_the_old_code_before_it_is_unloaded() {
    let old_unloaded = counter();
    let manager = Manager::new();
    // SAFETY: test plugins built from this repository.
    let handle = unsafe { manager.load_swappable(&embedded(&builds().x2, old_unloaded)) }.unwrap();
    let imports = Arc::new(manager.resolve_imports(["swap_scale_i32", "swap_hold_i32"]).unwrap());
    let gate = Arc::new(AtomicI32::new(0));
    let entered = Arc::new(AtomicI32::new(0));

    let held = {
        let (imports, gate, entered) = (Arc::clone(&imports), Arc::clone(&gate), Arc::clone(&entered));
        std::thread::spawn(move || {
            let mut args = HoldArgs { gate: gate.as_ptr(), entered: entered.as_ptr(), out: 0 };
            let hold = imports.import(1).unwrap();
            // SAFETY: `swap_hold_i32` takes a `HoldArgs`; the atomics outlive the call.
            assert_eq!(unsafe { hold.call(&mut args) }, 0);
            args.out
        })
    };
    while entered.load(Ordering::SeqCst) == 0 {
        std::thread::yield_now();
    }
    let swapper = {
        let spec = embedded(&builds().x3, counter());
        // SAFETY: as above.
        std::thread::spawn(move || unsafe { handle.replace(&spec) }.map(|swapped| swapped.swaps))
    };
    // The new version is published while the held call is still inside
    // the old one...
    while scale(&imports, 1) != 3 {
        std::thread::yield_now();
    }
    // ...which is not unloaded while that call runs. (The pause gives a
    // swap that did not wait the time to unload; a correct one cannot
    // finish before the gate opens, however long it is given.)
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(old_unloaded.load(Ordering::SeqCst), 0, "unloaded under a call in flight");
    assert!(!swapper.is_finished(), "replace returned while a call was inside the old version");
    gate.store(1, Ordering::SeqCst);
    assert_eq!(held.join().unwrap(), 2, "the call in flight finished on the old code");
    assert_eq!(swapper.join().unwrap().unwrap(), 1);
    assert_eq!(old_unloaded.load(Ordering::SeqCst), 1, "unloaded once the call left");
    // New calls of the held import run the new code.
    let mut args = HoldArgs { gate: gate.as_ptr(), entered: entered.as_ptr(), out: 0 };
    // SAFETY: as above.
    assert_eq!(unsafe { imports.import(1).unwrap().call(&mut args) }, 0);
    assert_eq!(args.out, 3);
}

/// `swap_call_back`'s args.
#[repr(C)]
struct CallBackArgs {
    callback: extern "C" fn(*mut c_void) -> i32,
    data: *mut c_void,
    out: i32,
}

/// What the host code run inside the import needs.
struct Inside {
    handle: SwapHandle,
    spec: String,
    error: Option<SwapError>,
}

/// Runs inside `swap_call_back`'s call: tries to swap.
extern "C" fn swap_from_inside(data: *mut c_void) -> i32 {
    // SAFETY: `data` is the `Inside` the test passes, alive for the call.
    let inside = unsafe { &mut *data.cast::<Inside>() };
    // SAFETY: a test plugin built from this repository.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe {
        inside.handle.replace(&inside.spec)
    }));
    match result {
        Ok(Err(error)) => {
            inside.error = Some(error);
            0
        }
        _ => 1,
    }
}

#[test]
fn a_swap_from_inside_an_import_call_is_refused() {
    let unloaded = counter();
    let manager = Manager::new();
    let old_spec = embedded(&builds().x2, unloaded);
    // SAFETY: a test plugin built from this repository.
    let handle = unsafe { manager.load_swappable(&old_spec) }.unwrap();
    let imports = manager.resolve_imports(["swap_scale_i32", "swap_call_back"]).unwrap();
    let mut inside = Inside { handle: handle.clone(), spec: embedded(&builds().x3, counter()), error: None };
    let mut args =
        CallBackArgs { callback: swap_from_inside, data: std::ptr::from_mut(&mut inside).cast(), out: -1 };
    // SAFETY: `swap_call_back` takes a `CallBackArgs`; `inside` outlives the call.
    assert_eq!(unsafe { imports.import(1).unwrap().call(&mut args) }, 0);
    assert_eq!(args.out, 0, "replace returned an error instead of waiting for itself");
    let error = inside.error.take().expect("refused");
    assert!(matches!(error, SwapError::InsideImport { ref plugin } if plugin == "swap_test"), "{error}");
    assert_refused(&manager, &handle, &imports, &old_spec);
    assert_eq!(unloaded.load(Ordering::SeqCst), 0);
}

/// Swaps between the two builds `swaps` times while 4 threads call
/// `swap_scale_i32`; every result must be the old or the new computation,
/// and both builds must have served calls of the same resolved imports.
fn stress(swaps: usize) {
    let manager = Manager::new();
    let specs = [embedded(&builds().x2, counter()), embedded(&builds().x3, counter())];
    // SAFETY: test plugins built from this repository.
    let handle = unsafe { manager.load_swappable(&specs[0]) }.unwrap();
    let imports = Arc::new(manager.resolve_imports(["swap_scale_i32"]).unwrap());
    let done = Arc::new(AtomicBool::new(false));
    let seen = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let workers: Vec<_> = (0..4)
        .map(|worker| {
            let (imports, done, seen) = (Arc::clone(&imports), Arc::clone(&done), Arc::clone(&seen));
            std::thread::spawn(move || {
                let mut calls = 0u64;
                let mut value = worker * 1000 + 1;
                while !done.load(Ordering::Relaxed) || calls == 0 {
                    let out = scale(&imports, value);
                    match out / value {
                        2 if out % value == 0 => seen[0].fetch_add(1, Ordering::Relaxed),
                        3 if out % value == 0 => seen[1].fetch_add(1, Ordering::Relaxed),
                        _ => panic!("{value} gave {out}: neither version's result"),
                    };
                    calls += 1;
                    value = value % 1000 + worker * 1000 + 1;
                }
                calls
            })
        })
        .collect();
    // Past `swaps`, the swaps go on until the calling threads have seen
    // both builds (capped: "never" fails instead of hanging): both serving
    // the same resolved imports is what the swaps must reach.
    let both_served = || seen.iter().all(|count| count.load(Ordering::Relaxed) > 0);
    let mut swap = 0;
    while swap < swaps || (!both_served() && swap < swaps + 100_000) {
        swap += 1;
        // SAFETY: as above.
        let swapped = unsafe { handle.replace(&specs[swap % 2]) }.unwrap();
        assert_eq!(swapped.swaps, swap as u64);
    }
    done.store(true, Ordering::Relaxed);
    let calls: u64 = workers.into_iter().map(|worker| worker.join().unwrap()).sum();
    let (x2, x3) = (seen[0].load(Ordering::Relaxed), seen[1].load(Ordering::Relaxed));
    eprintln!("{swaps} swaps under 4 calling threads ({swap} in all): {calls} calls, {x2} by x2, {x3} by x3");
    assert!(x2 > 0 && x3 > 0, "{swap} swaps reached none of {calls} calls: {x2} by x2, {x3} by x3");
    // The last swap's version serves.
    assert_eq!(scale(&imports, 1), if swap.is_multiple_of(2) { 2 } else { 3 });
}

#[test]
fn four_threads_calling_while_the_plugin_is_swapped_1000_times() {
    stress(stress_swaps());
}

#[test]
fn every_test_here_is_memcheck_clean() {
    let Some(output) = xplug_fixtures::valgrind::rerun_this_test_binary("every_test_here_is_memcheck_clean")
    else {
        return;
    };
    xplug_fixtures::valgrind::assert_clean(&output, 0, "the live swap tests");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("four_threads_calling_while_the_plugin_is_swapped_1000_times ... ok"),
        "the stress test ran under valgrind:\n{stdout}"
    );
}

/// The stress test alone under valgrind with the full 1 000 swaps
/// (about two minutes here; `cargo test -p xplug-manager --test swap --
/// --ignored`).
#[test]
#[ignore = "slow under valgrind: the CI run uses 100 swaps"]
fn memcheck_clean_with_1000_swaps() {
    assert!(xplug_fixtures::valgrind::available(), "valgrind is needed");
    let program = std::env::current_exe().expect("the test binary's path");
    let mut command = xplug_fixtures::valgrind::command(program).expect("a seccomp filter for this host");
    command
        .args(["--exact", "four_threads_calling_while_the_plugin_is_swapped_1000_times", "--nocapture"])
        .env(xplug_fixtures::valgrind::RERUN_ENV, "1")
        .env(SWAPS_VAR, "1000");
    let output = command.output().expect("valgrind starts");
    xplug_fixtures::valgrind::assert_clean(&output, 0, "1 000 swaps under 4 calling threads");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("1000 swaps under 4 calling threads"), "{stderr}");
    eprintln!("{}", stderr.lines().find(|line| line.contains("swaps under")).unwrap_or_default());
}
