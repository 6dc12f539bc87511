//! 1 000 load/resolve/unload cycles of a dynamic plugin: nothing crashes,
//! the host allocator is balanced every time and the process does not grow.
//!
//! Alone in its own test binary so no other test perturbs the RSS figures.

mod common;

use std::ffi::c_void;

use xplug_providers::abi::Resolution;
use xplug_providers::{ImportProvider, LoadParamList, Plugin, ResolveRequest, SymbolName};

/// Resident set size in bytes, from `/proc/self/statm`.
fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("read /proc/self/statm");
    let pages: usize = statm.split_whitespace().nth(1).expect("statm has a resident field").parse().unwrap();
    // SAFETY: `sysconf` has no preconditions.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * usize::try_from(page_size).expect("positive page size")
}

#[test]
#[cfg(target_os = "linux")]
fn thousand_load_unload_cycles_stay_flat() {
    let dir = tempfile::tempdir().unwrap();
    let path = xplug_tests::build_minimal_c_plugin(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    let params = LoadParamList::new().with("scale", "2");
    let names = [SymbolName::new(c"c_mul_i32"), SymbolName::new(c"?c_missing")];

    let mut warm_rss = 0;
    for cycle in 0..1000 {
        // Alternate file and memory images.
        // SAFETY: the library is the minimal v0 C plugin.
        let plugin = unsafe {
            if cycle % 2 == 0 {
                Plugin::load_system_library(&path, &params)
            } else {
                Plugin::load_system_library_image("c_minimal", &bytes, &params)
            }
        }
        .unwrap_or_else(|error| panic!("cycle {cycle}: {error}"));
        let mut fns = [std::ptr::null_mut::<c_void>(); 2];
        let mut contexts = [std::ptr::null_mut::<c_void>(); 2];
        let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
        assert_eq!(plugin.resolve(&mut request).unwrap(), Resolution::MISSING_OPTIONAL);
        assert_eq!(common::call_binop(request.function(0), request.context(0), 3, 7), (0, 42));
        assert_eq!(plugin.allocation_stats().live_allocations, 1, "cycle {cycle}");
        let after = plugin.unload();
        assert_eq!((after.live_allocations, after.live_bytes), (0, 0), "cycle {cycle}");
        if cycle == 99 {
            warm_rss = rss_bytes();
        }
    }
    let end_rss = rss_bytes();
    println!("RSS after 100 warm-up cycles: {warm_rss} bytes; after 1000 cycles: {end_rss} bytes");
    assert!(
        end_rss <= warm_rss + 4 * 1024 * 1024,
        "RSS grew from {warm_rss} to {end_rss} bytes over 900 load/unload cycles"
    );
}
