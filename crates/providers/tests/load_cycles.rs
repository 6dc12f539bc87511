//! 10 000 load/resolve/call/unload cycles of a Rust and of a C plugin:
//! nothing crashes, the host allocator is balanced every time, and the
//! process grows by less than 1 MiB after warm-up.
//!
//! Alone in its own test binary so no other test perturbs the RSS figures.

mod common;

use std::ffi::c_void;
use std::path::Path;

use xplug_providers::abi::Resolution;
use xplug_providers::{
    ImportProvider, LoadParamList, Loader, Plugin, ResolveRequest, SYSTEM_LIBRARY, SymbolName,
};

/// Cycles per plugin.
const CYCLES: usize = 10_000;
/// Cycles before the baseline is taken (allocator arenas, loader caches).
const WARM_UP: usize = 1_000;
/// The most the process may grow between the warm-up and the end.
const MAX_GROWTH: usize = 1 << 20;

/// Resident set size in bytes, from `/proc/self/statm`.
fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("read /proc/self/statm");
    let pages: usize = statm.split_whitespace().nth(1).expect("statm has a resident field").parse().unwrap();
    // SAFETY: `sysconf` has no preconditions.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * usize::try_from(page_size).expect("positive page size")
}

/// Runs `CYCLES` cycles of `one_cycle`; returns (RSS after warm-up, at end).
fn measure(mut one_cycle: impl FnMut(usize)) -> (usize, usize) {
    let mut warm = 0;
    for cycle in 0..CYCLES {
        one_cycle(cycle);
        if cycle + 1 == WARM_UP {
            warm = rss_bytes();
        }
    }
    (warm, rss_bytes())
}

fn resolve_one<'a>(
    plugin: &Plugin,
    names: &'a [SymbolName<'a>],
    fns: &'a mut [*mut c_void],
    contexts: &'a mut [*mut c_void],
) -> ResolveRequest<'a> {
    let mut request = ResolveRequest::new(names, fns, contexts).unwrap();
    let resolution = plugin.resolve(&mut request).unwrap();
    assert!(resolution == Resolution::NONE || resolution == Resolution::MISSING_OPTIONAL);
    request
}

#[test]
#[cfg(target_os = "linux")]
fn ten_thousand_cycles_of_a_c_and_a_rust_plugin_stay_flat() {
    let dir = tempfile::tempdir().unwrap();
    let c_path = xplug_fixtures::build_minimal_c_plugin(dir.path());
    let c_bytes = std::fs::read(&c_path).unwrap();
    let params = LoadParamList::new().with("scale", "2");
    let c_names = [SymbolName::new(c"c_mul_i32"), SymbolName::new(c"?c_missing")];

    // C: alternate the file and a memory image (a fresh mapping each time).
    let (c_warm, c_end) = measure(|cycle| {
        // SAFETY: the library is the minimal v0 C plugin.
        let plugin = unsafe {
            if cycle % 2 == 0 {
                SYSTEM_LIBRARY
                    .open(&std::path::Path::new(&c_path).to_string_lossy())
                    .and_then(|code| code.load(&params))
            } else {
                SYSTEM_LIBRARY.open_image("c_minimal", &c_bytes).and_then(|code| code.load(&params))
            }
        }
        .unwrap_or_else(|error| panic!("cycle {cycle}: {error}"));
        let (mut fns, mut contexts) =
            ([std::ptr::null_mut::<c_void>(); 2], [std::ptr::null_mut::<c_void>(); 2]);
        let request = resolve_one(&plugin, &c_names, &mut fns, &mut contexts);
        assert_eq!(common::call_binop(request.function(0), request.context(0), 3, 7), (0, 42));
        assert_eq!(plugin.allocation_stats().live_allocations, 1, "cycle {cycle}");
        let after = plugin.unload();
        assert_eq!((after.live_allocations, after.live_bytes), (0, 0), "cycle {cycle}");
    });

    // Rust: the thread-local test plugin, from its file (a Rust library is
    // pinned, so every load after the first reuses its mapping; a fresh
    // memory image each cycle would stay mapped by design).
    let rust_path = xplug_fixtures::build_rust_plugin("thread_local_plugin");
    let rust_names = [SymbolName::new(c"tls_touch")];
    let (rust_warm, rust_end) = measure(|cycle| {
        let plugin = load(&rust_path);
        let (mut fns, mut contexts) =
            ([std::ptr::null_mut::<c_void>(); 1], [std::ptr::null_mut::<c_void>(); 1]);
        let request = resolve_one(&plugin, &rust_names, &mut fns, &mut contexts);
        let mut args = [1u64, 0u64];
        // SAFETY: `tls_touch` takes two `u64` fields and no context.
        let function: xplug_providers::abi::ImportFn = unsafe { std::mem::transmute(request.function(0)) };
        // SAFETY: as above; `args` outlives the call.
        let code = unsafe { function(args.as_mut_ptr().cast(), request.context(0), std::ptr::null_mut()) };
        assert_eq!((code, args[1]), (0, cycle as u64 + 1), "cycle {cycle}: the thread's counter");
        let after = plugin.unload();
        assert_eq!((after.live_allocations, after.live_bytes), (0, 0), "cycle {cycle}");
    });

    println!(
        "C: RSS {c_warm} B after {WARM_UP} cycles, {c_end} B after {CYCLES} (growth {} B); \
         Rust: {rust_warm} B, {rust_end} B (growth {} B)",
        c_end.saturating_sub(c_warm),
        rust_end.saturating_sub(rust_warm)
    );
    assert!(c_end <= c_warm + MAX_GROWTH, "C plugin: RSS grew from {c_warm} to {c_end} bytes");
    assert!(rust_end <= rust_warm + MAX_GROWTH, "Rust plugin: RSS grew from {rust_warm} to {rust_end} bytes");
}

fn load(path: &Path) -> Plugin {
    // SAFETY: the test plugin is a v0 plugin.
    unsafe {
        SYSTEM_LIBRARY
            .open(&std::path::Path::new(&path).to_string_lossy())
            .and_then(|code| code.load(&LoadParamList::new()))
    }
    .expect("the plugin loads")
}
