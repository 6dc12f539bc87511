//! Well-behaved and misbehaving C plugins loaded from files and memory:
//! resolution, calls, allocation accounting, leaks.

mod common;

use std::ffi::c_void;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use common::{build_configurable, call_binop};
use xplug_providers::abi::{Features, Resolution, Sanitizer, StatusCode, Version};
use xplug_providers::{
    AllocationStats, Error, ImportProvider, LoadParamList, Loader, Origin, Plugin, ResolveRequest,
    SYSTEM_LIBRARY, SymbolName, SystemLibraryCode,
};

fn load_file(path: &Path, params: &LoadParamList) -> Plugin {
    // SAFETY: the test plugins follow the v0 ABI.
    unsafe {
        SYSTEM_LIBRARY.open(&std::path::Path::new(&path).to_string_lossy()).and_then(|code| code.load(params))
    }
    .expect("the plugin loads")
}

fn null_slots<const N: usize>() -> [*mut c_void; N] {
    [std::ptr::null_mut(); N]
}

fn check_minimal(plugin: &Plugin) {
    assert_eq!(plugin.name(), "c_minimal");
    assert_eq!(ImportProvider::name(plugin), "c_minimal");
    let info = plugin.info();
    assert_eq!(info.description, "minimal C plugin from tests/c");
    assert_eq!(info.version, Version::LATEST);
    assert_eq!(info.features, Features::STANDALONE);
    assert_eq!(info.sanitizer, Sanitizer::NONE);
    // `load` allocated the plugin state from the host allocator.
    let stats = plugin.allocation_stats();
    assert_eq!(stats.live_allocations, 1);
    assert_eq!(stats.total_allocations, 1);
    assert!(stats.live_bytes > 0 && stats.peak_bytes == stats.live_bytes);

    let names = [SymbolName::new(c"c_add_i32"), SymbolName::new(c"?c_nope"), SymbolName::new(c"c_mul_i32")];
    let (mut fns, mut contexts) = (null_slots::<3>(), null_slots::<3>());
    let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
    assert_eq!(plugin.resolve(&mut request).unwrap(), Resolution::MISSING_OPTIONAL);
    assert!(request.is_filled(0) && !request.is_filled(1) && request.is_filled(2));
    assert_eq!(call_binop(request.function(0), request.context(0), 20, 22), (0, 42));
    // scale = 3 was passed as a load parameter.
    assert_eq!(call_binop(request.function(2), request.context(2), 2, 5), (0, 30));

    // A required name nobody exports.
    let names = [SymbolName::new(c"c_add_i32"), SymbolName::new(c"c_div_i32")];
    let (mut fns, mut contexts) = (null_slots::<2>(), null_slots::<2>());
    let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
    let error = plugin.resolve(&mut request).unwrap_err();
    assert!(
        matches!(&error, Error::NotFound { provider, missing: 1 } if *provider == "c_minimal"),
        "{error:?}"
    );
    assert!(request.is_filled(0), "a provider fills what it can");
}

#[test]
fn minimal_plugin_from_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = xplug_fixtures::build_minimal_c_plugin(dir.path());
    let plugin = load_file(&path, &LoadParamList::new().with("scale", "3"));
    assert_eq!(
        (plugin.code().loader().name(), plugin.code().origin()),
        ("system library", Some(&Origin::File(path.clone())))
    );
    check_minimal(&plugin);
    let after = plugin.unload();
    assert_eq!(after.live_allocations, 0);
    assert_eq!(after.live_bytes, 0);
    assert_eq!(after.total_allocations, 1);
}

#[test]
fn an_open_raw_library_becomes_a_plugin_and_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = xplug_fixtures::build_minimal_c_plugin(dir.path());
    // SAFETY: the file is the minimal v0 C plugin.
    let library = unsafe { xplug_providers::raw::RawLibrary::open(&path) }.unwrap();
    let params = LoadParamList::new().with("scale", "3");
    let plugin = SYSTEM_LIBRARY.library_code(library).and_then(|code| code.load(&params)).unwrap();
    assert_eq!(
        (plugin.code().loader().name(), plugin.code().origin()),
        ("system library", Some(&Origin::File(path.clone())))
    );
    assert_eq!(
        plugin
            .code()
            .downcast_ref::<SystemLibraryCode>()
            .map(SystemLibraryCode::library)
            .map(|library| library.path()),
        Some(path.as_path())
    );
    check_minimal(&plugin);
    // Back: the plugin is unloaded, the library stays open and loads again.
    let library = SYSTEM_LIBRARY.into_library(plugin).expect("the plugin came from a library");
    let again = SYSTEM_LIBRARY.library_code(library).and_then(|code| code.load(&params)).unwrap();
    check_minimal(&again);
    assert_eq!(again.unload().live_allocations, 0);
}

#[test]
fn minimal_plugin_from_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = xplug_fixtures::build_minimal_c_plugin(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    // Prove the image does not depend on the file any more.
    drop(dir);
    // SAFETY: the bytes are the minimal v0 C plugin.
    let plugin = unsafe {
        SYSTEM_LIBRARY
            .open_image("c_minimal.so", &bytes)
            .and_then(|code| code.load(&LoadParamList::new().with("scale", "3")))
    }
    .expect("the plugin loads from memory");
    assert_eq!(
        (plugin.code().loader().name(), plugin.code().origin()),
        ("system library", Some(&Origin::Memory("c_minimal.so".to_owned())))
    );
    check_minimal(&plugin);
    assert_eq!(plugin.unload().live_allocations, 0);
}

#[test]
fn relative_file_name_means_the_current_directory() {
    let dir = tempfile::tempdir().unwrap();
    let path = xplug_fixtures::build_minimal_c_plugin(dir.path());
    // Only a path relative to the current directory is testable without
    // changing it (which would race other tests): build one with `..`s.
    let cwd = std::env::current_dir().unwrap();
    let depth = cwd.components().count() - 1;
    let mut relative = std::path::PathBuf::new();
    for _ in 0..depth {
        relative.push("..");
    }
    relative.push(path.strip_prefix("/").unwrap());
    assert!(relative.is_relative());
    let plugin = load_file(&relative, &LoadParamList::new());
    assert_eq!(plugin.name(), "c_minimal");
}

#[test]
fn two_instances_of_one_library_are_independent() {
    let dir = tempfile::tempdir().unwrap();
    let path = xplug_fixtures::build_minimal_c_plugin(dir.path());
    let first = load_file(&path, &LoadParamList::new().with("scale", "2"));
    let second = load_file(&path, &LoadParamList::new().with("scale", "5"));
    let names = [SymbolName::new(c"c_mul_i32")];
    for (plugin, expected) in [(&first, 2), (&second, 5)] {
        let (mut fns, mut contexts) = (null_slots::<1>(), null_slots::<1>());
        let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
        plugin.resolve(&mut request).unwrap();
        assert_eq!(call_binop(request.function(0), request.context(0), 1, 1), (0, expected));
    }
    // Dropping one keeps the library open for the other.
    drop(first);
    let (mut fns, mut contexts) = (null_slots::<1>(), null_slots::<1>());
    let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
    second.resolve(&mut request).unwrap();
    assert_eq!(call_binop(request.function(0), request.context(0), 3, 1), (0, 15));
}

/// The `f_state` import of `configurable_plugin.c` built with `COUNT_LOADS`:
/// how many times this copy of the library has been loaded.
fn loads_seen(plugin: &Plugin) -> i32 {
    let names = [SymbolName::new(c"f_state")];
    let (mut fns, mut contexts) = (null_slots::<1>(), null_slots::<1>());
    let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
    plugin.resolve(&mut request).unwrap();
    call_binop(request.function(0), request.context(0), 0, 0).1
}

#[test]
fn memory_images_stay_distinct_while_both_are_loaded() {
    let (_dir, path) = build_configurable("count_loads", &["-DCOUNT_LOADS"]);
    let bytes = std::fs::read(&path).unwrap();
    let load_image = |name: &str| {
        // SAFETY: the test plugin follows the v0 ABI.
        unsafe { SYSTEM_LIBRARY.open_image(name, &bytes).and_then(|code| code.load(&LoadParamList::new())) }
            .unwrap()
    };
    // Each image is its own copy of the library with its own globals: the
    // second image is not handed the first one's already-open library.
    let first = load_image("first");
    let second = load_image("second");
    let third = load_image("third");
    assert_eq!([loads_seen(&first), loads_seen(&second), loads_seen(&third)], [1, 1, 1]);
    // The same file opened twice is one copy (the OS loader's rule).
    let (a, b) = (load_file(&path, &LoadParamList::new()), load_file(&path, &LoadParamList::new()));
    assert_eq!([loads_seen(&a), loads_seen(&b)], [1, 2]);
}

#[test]
fn concurrent_resolves_share_one_plugin() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Plugin>();
    let (_dir, path) = build_configurable("concurrent", &[]);
    let plugin = Arc::new(load_file(&path, &LoadParamList::new()));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let plugin = Arc::clone(&plugin);
            std::thread::spawn(move || {
                for _ in 0..200 {
                    let names = [SymbolName::new(c"f_state"), SymbolName::new(c"f_add")];
                    let (mut fns, mut contexts) = (null_slots::<2>(), null_slots::<2>());
                    let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
                    assert_eq!(plugin.resolve(&mut request).unwrap(), Resolution::NONE);
                    assert_eq!(call_binop(request.function(0), request.context(0), 0, 0), (0, 4242));
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

#[test]
fn lying_plugin_cannot_report_success_with_required_slots_empty() {
    let (_dir, path) = build_configurable("liar", &["-DLYING_RESOLVE", "-DPLUGIN_NAME=\"liar\""]);
    let plugin = load_file(&path, &LoadParamList::new());
    let names = [SymbolName::new(c"f_add"), SymbolName::new(c"?f_state")];
    let (mut fns, mut contexts) = (null_slots::<2>(), null_slots::<2>());
    let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
    let error = plugin.resolve(&mut request).unwrap_err();
    assert!(matches!(&error, Error::NotFound { provider, missing: 1 } if *provider == "liar"), "{error:?}");

    // Only optional names: OK, but with MISSING_OPTIONAL judged from the slots.
    let names = [SymbolName::new(c"?f_state")];
    let (mut fns, mut contexts) = (null_slots::<1>(), null_slots::<1>());
    let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
    assert_eq!(plugin.resolve(&mut request).unwrap(), Resolution::MISSING_OPTIONAL);
}

#[test]
fn resolve_failure_is_typed_and_names_the_plugin() {
    let (_dir, path) =
        build_configurable("resolve_fails", &["-DRESOLVE_FAILS=13", "-DPLUGIN_NAME=\"broken\""]);
    let plugin = load_file(&path, &LoadParamList::new());
    let names = [SymbolName::new(c"f_add")];
    let (mut fns, mut contexts) = (null_slots::<1>(), null_slots::<1>());
    let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
    let error = plugin.resolve(&mut request).unwrap_err();
    assert!(matches!(&error, Error::ResolveFailed { provider, .. } if provider == "broken"), "{error:?}");
    assert_eq!(error.code(), StatusCode::INTERNAL);
    assert!(error.to_string().contains("`broken`"), "{error}");

    // Zero names never reach the plugin (which would fail).
    let mut request = ResolveRequest::new(&[], &mut [], &mut []).unwrap();
    assert_eq!(plugin.resolve(&mut request).unwrap(), Resolution::NONE);
}

#[test]
fn plugin_without_unload_is_loaded_and_dropped() {
    let (_dir, path) = build_configurable("no_unload", &["-DNULL_UNLOAD"]);
    let plugin = load_file(&path, &LoadParamList::new());
    // Nobody frees the state: it shows as a leak, and nothing crashes.
    assert_eq!(plugin.unload().live_allocations, 1);
}

/// A `tracing` writer capturing everything into a shared buffer.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn leaking_plugin_reports_the_leak() {
    let (_dir, path) = build_configurable("leaky", &["-DLEAK_BYTES=100", "-DPLUGIN_NAME=\"leaky\""]);
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .finish();
    let leaked = tracing::subscriber::with_default(subscriber, || {
        let plugin = load_file(&path, &LoadParamList::new());
        assert_eq!(plugin.allocation_stats().live_allocations, 2);
        plugin.unload()
    });
    assert_eq!(leaked.live_allocations, 1);
    assert_eq!(leaked.live_bytes, 100);
    assert_eq!(leaked.total_allocations, 2);
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(log.contains("WARN"), "{log}");
    assert!(log.contains("`leaky`") && log.contains("leaked 1 allocation(s), 100 byte(s)"), "{log}");
}

#[test]
fn stats_are_balanced_after_unload_of_a_good_plugin() {
    let (_dir, path) = build_configurable("balanced", &[]);
    let plugin = load_file(&path, &LoadParamList::new());
    let during = plugin.allocation_stats();
    let after = plugin.unload();
    assert_eq!(
        after,
        AllocationStats {
            live_allocations: 0,
            live_bytes: 0,
            total_allocations: 1,
            peak_bytes: during.live_bytes
        }
    );
}
