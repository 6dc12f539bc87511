//! The raw v0 layer step by step on purpose-built C plugins: each step
//! reports exactly what the plugin answered, where `Plugin` would judge.

mod common;

use std::ffi::c_void;

use common::build_configurable;
use xplug_providers::abi::{Features, Resolution, Sanitizer, StatusCode, Version};
use xplug_providers::raw::{EntryPoints, RawLibrary, RawLoadError};
use xplug_providers::{
    CountingAllocator, Error, LoadParamList, Loader, ResolveRequest, SYSTEM_LIBRARY, SymbolName,
};

fn open(path: &std::path::Path) -> RawLibrary {
    // SAFETY: the test plugins follow the v0 ABI (their faults are in what
    // they answer, not in how they are called).
    unsafe { RawLibrary::open(path) }.expect("the library opens")
}

#[test]
fn each_step_alone_on_a_good_plugin() {
    let (_dir, path) = build_configurable("raw_good", &[]);
    let library = open(&path);
    assert_eq!(library.path(), path);
    let query = library.query().unwrap();
    assert!(query.query(Version(0)).is_none(), "a v0.1 plugin answers NULL to a v0.0 host");
    let table = query.query(Version::LATEST).expect("a table");
    let header = table.header().expect("a library's header is not checked").expect("a header");
    assert_eq!(header.version, Version::LATEST);
    assert_eq!(header.name.as_deref(), Some("configurable"));
    assert_eq!(header.features, Features::STANDALONE);
    assert_eq!(header.sanitizer, Sanitizer::NONE);
    assert_eq!(table.entry_points(), EntryPoints { load: true, unload: true, resolve: true });
    assert_eq!(library.exports(), None, "a C plugin lists no exports");

    let allocator = CountingAllocator::new();
    let instance = table.load(&allocator, &LoadParamList::new().with("k", "v")).expect("load succeeds");
    assert_eq!(instance.allocation_stats().live_allocations, 1, "the plugin state");
    let names = [SymbolName::new(c"f_add"), SymbolName::new(c"?nope")];
    let (mut fns, mut contexts) = ([std::ptr::null_mut::<c_void>(); 2], [std::ptr::null_mut::<c_void>(); 2]);
    let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
    assert_eq!(instance.resolve(&mut request), (StatusCode::OK, Resolution::MISSING_OPTIONAL));
    assert!(request.is_filled(0) && !request.is_filled(1));
    let after = instance.unload();
    assert_eq!((after.live_allocations, after.total_allocations), (0, 1), "unload freed the state");
}

#[test]
fn raw_resolve_reports_a_lie_that_plugin_judges() {
    let (_dir, path) = build_configurable("raw_liar", &["-DLYING_RESOLVE"]);
    let library = open(&path);
    let table = library.query().unwrap().query(Version::LATEST).unwrap();
    let instance = table.load(&CountingAllocator::new(), &LoadParamList::new()).unwrap();
    let names = [SymbolName::new(c"f_add")];
    let (mut fns, mut contexts) = ([std::ptr::null_mut::<c_void>(); 1], [std::ptr::null_mut::<c_void>(); 1]);
    let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
    // The raw step: the plugin's word, OK, with the slot still empty.
    assert_eq!(instance.resolve(&mut request).0, StatusCode::OK);
    assert!(!request.is_filled(0));
    // The checked layer judges from the slots.
    // SAFETY: as in `open`.
    let plugin = unsafe {
        SYSTEM_LIBRARY
            .open(&std::path::Path::new(&path).to_string_lossy())
            .and_then(|code| code.load(&LoadParamList::new()))
    }
    .unwrap();
    let (mut fns, mut contexts) = ([std::ptr::null_mut::<c_void>(); 1], [std::ptr::null_mut::<c_void>(); 1]);
    let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
    let verdict = xplug_providers::ImportProvider::resolve(&plugin, &mut request);
    assert!(matches!(verdict, Err(Error::NotFound { missing: 1, .. })), "{verdict:?}");
}

#[test]
fn a_refused_load_gives_its_code_and_no_instance() {
    let (_dir, path) = build_configurable("raw_refuses", &["-DLOAD_FAILS=7", "-DUNLOAD_ABORTS_ON_NULL"]);
    let library = open(&path);
    let table = library.query().unwrap().query(Version::LATEST).unwrap();
    let refusal = table.load(&CountingAllocator::new(), &LoadParamList::new()).unwrap_err();
    assert_eq!(refusal, RawLoadError::Refused { code: StatusCode::PERMISSION_DENIED });
    // No instance exists, so the aborting `unload` can never be reached.
}

#[test]
fn a_null_load_is_reported_without_calling_anything() {
    let (_dir, path) = build_configurable("raw_null_load", &["-DNULL_LOAD"]);
    let library = open(&path);
    let table = library.query().unwrap().query(Version::LATEST).unwrap();
    assert!(!table.entry_points().load);
    let refusal = table.load(&CountingAllocator::new(), &LoadParamList::new()).unwrap_err();
    assert_eq!(refusal, RawLoadError::MissingFunction { function: "load" });
}

#[test]
fn a_missing_query_export_is_typed() {
    let (_dir, path) = build_configurable("raw_no_export", &["-DNO_EXPORT"]);
    let library = open(&path);
    let error = library.query().unwrap_err();
    assert!(
        matches!(&error, Error::MissingExport { symbol, .. } if symbol == "iree_hal_executable_plugin_query")
    );
    assert!(error.to_string().contains("cargo build --release"), "{error}");
}
