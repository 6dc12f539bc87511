//! `ManagerBuilder::static_plugins`: plugins linked into the binary are registered
//! first, so dynamic registrations (earlier or later) override them.

use std::ffi::{CStr, c_int, c_void};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use xplug_manager::Manager;
use xplug_manager::providers::abi::{
    EnvironmentV0, Features, Header, PluginV0, Resolution, ResolveParamsV0, Sanitizer, Status, StatusCode,
    StringPair, Version,
};
use xplug_manager::providers::{Error, ImportProvider, ResolveRequest, StaticPluginRegistration};

static LOADS: AtomicUsize = AtomicUsize::new(0);
static UNLOADS: AtomicUsize = AtomicUsize::new(0);
static STATE: u8 = 0;

unsafe extern "C" fn static_fn(_: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
    11
}

unsafe extern "C" fn dynamic_fn(_: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
    22
}

unsafe extern "C" fn load(
    _environment: *const EnvironmentV0,
    _param_count: usize,
    _params: *const StringPair,
    out_self: *mut *mut c_void,
) -> Status {
    LOADS.fetch_add(1, Ordering::SeqCst);
    // SAFETY: the host passes a writable `out_self`.
    unsafe { *out_self = std::ptr::from_ref(&STATE).cast_mut().cast() };
    Status::OK
}

unsafe extern "C" fn unload(_plugin_self: *mut c_void) {
    UNLOADS.fetch_add(1, Ordering::SeqCst);
}

/// Exports `static_only` and `shared`.
unsafe extern "C" fn resolve(
    _plugin_self: *mut c_void,
    params: *const ResolveParamsV0,
    out_resolution: *mut Resolution,
) -> Status {
    // SAFETY: the host passes valid params whose arrays hold `count` elements.
    let params = unsafe { &*params };
    let mut missing_required = false;
    let mut missing_optional = false;
    for i in 0..params.count {
        // SAFETY: `i < count`, and every name is a NUL-terminated string.
        let (slot, name) =
            unsafe { (params.out_fn_ptrs.add(i), CStr::from_ptr(*params.symbol_names.add(i))) };
        // SAFETY: `slot` is in bounds.
        if unsafe { !(*slot).is_null() } {
            continue;
        }
        let bare = xplug_manager::providers::abi::bare_name(name.to_bytes());
        if bare == b"static_only" || bare == b"shared" {
            // SAFETY: both slots are in bounds and writable.
            unsafe {
                *slot = static_fn as *mut c_void;
                *params.out_fn_contexts.add(i) = std::ptr::null_mut();
            }
        } else if name.to_bytes().first() == Some(&b'?') {
            missing_optional = true;
        } else {
            missing_required = true;
        }
    }
    // SAFETY: the host passes a writable resolution.
    unsafe {
        *out_resolution = if missing_optional { Resolution::MISSING_OPTIONAL } else { Resolution::NONE }
    };
    if missing_required { Status::from_code(StatusCode::NOT_FOUND) } else { Status::OK }
}

static HEADER: Header = Header {
    version: Version::LATEST,
    name: c"rust_static".as_ptr(),
    description: c"a static plugin linked into the test binary".as_ptr(),
    features: Features::STANDALONE,
    sanitizer: Sanitizer::NONE,
    reserved: [0; 8],
};

static PLUGIN: PluginV0 =
    PluginV0 { header: &HEADER, load: Some(load), unload: Some(unload), resolve: Some(resolve) };

unsafe extern "C" fn query(max_version: Version, _reserved: *mut c_void) -> *mut *const Header {
    if max_version < Version::V0_1 {
        return std::ptr::null_mut();
    }
    std::ptr::from_ref(&PLUGIN).cast_mut().cast()
}

xplug_manager::providers::inventory::submit! {
    // SAFETY: `query` returns NULL or the immutable v0 table above, whose
    // functions follow the v0 contract and are callable from any thread.
    unsafe { StaticPluginRegistration::new("rust_static", query) }
}

/// A dynamic provider exporting `shared` under a different function.
struct Dynamic;

impl ImportProvider for Dynamic {
    fn name(&self) -> &str {
        "dynamic"
    }
    fn resolve(&self, request: &mut ResolveRequest<'_>) -> Result<Resolution, Error> {
        for i in 0..request.len() {
            if request.names()[i].bare() == b"shared" {
                request.fill(i, dynamic_fn, std::ptr::null_mut());
            }
        }
        request.outcome("dynamic")
    }
}

#[test]
fn static_plugins_are_registered_first_and_overridden() {
    // One provider registered before, one after.
    let manager = Manager::builder().static_plugins().build().unwrap();
    manager.register_provider(Arc::new(Dynamic)).unwrap();
    assert_eq!(
        manager.providers(),
        ["dynamic", "rust_static"],
        "static plugins go first in registration order"
    );
    assert_eq!(LOADS.load(Ordering::SeqCst), 1);

    let imports = manager.resolve_imports(["shared", "static_only"]).unwrap();
    let (shared, static_only) = (imports.import(0).unwrap(), imports.import(1).unwrap());
    // SAFETY: both imports ignore their arguments.
    let (shared, static_only) = unsafe { (shared.call(&mut ()), static_only.call(&mut ())) };
    assert_eq!((shared, static_only), (22, 11), "the dynamic provider must override the static plugin");

    // The manager owns the static plugin: unloaded once when the last
    // reference (here the resolved table) goes.
    drop(manager);
    assert_eq!(UNLOADS.load(Ordering::SeqCst), 0);
    drop(imports);
    assert_eq!(UNLOADS.load(Ordering::SeqCst), 1);

    // A capacity too small for the static plugins is refused up front.
    let error = Manager::builder().capacity(0).static_plugins().build().unwrap_err();
    assert_eq!(error.code(), StatusCode::RESOURCE_EXHAUSTED);
    assert_eq!(LOADS.load(Ordering::SeqCst), 1, "nothing may be loaded when it cannot fit");
}

/// Registration order of plugin instances, recorded by `tagged_unload`.
static UNLOAD_ORDER: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

/// Loads with `self` = the value of the single-digit `tag` parameter (as an
/// address, never dereferenced), so each instance is recognisable.
unsafe extern "C" fn tagged_load(
    _environment: *const EnvironmentV0,
    param_count: usize,
    params: *const StringPair,
    out_self: *mut *mut c_void,
) -> Status {
    let mut tag = 0usize;
    for i in 0..param_count {
        // SAFETY: the host passes `param_count` pairs whose views are valid
        // for the call.
        let (key, value) = unsafe {
            let pair = &*params.add(i);
            (
                std::slice::from_raw_parts(pair.key.data.cast::<u8>(), pair.key.size),
                std::slice::from_raw_parts(pair.value.data.cast::<u8>(), pair.value.size),
            )
        };
        if let (b"tag", [digit @ b'1'..=b'9']) = (key, value) {
            tag = usize::from(digit - b'0');
        }
    }
    if tag == 0 {
        return Status::from_code(StatusCode::INVALID_ARGUMENT);
    }
    // SAFETY: the host passes a writable `out_self`.
    unsafe { *out_self = tag as *mut c_void };
    Status::OK
}

unsafe extern "C" fn tagged_unload(plugin_self: *mut c_void) {
    if let Ok(mut order) = UNLOAD_ORDER.lock() {
        order.push(plugin_self as usize);
    }
}

static TAGGED_HEADER: Header = Header {
    version: Version::LATEST,
    name: c"tagged".as_ptr(),
    description: c"records its unload order".as_ptr(),
    features: Features::STANDALONE,
    sanitizer: Sanitizer::NONE,
    reserved: [0; 8],
};

static TAGGED: PluginV0 = PluginV0 {
    header: &TAGGED_HEADER,
    load: Some(tagged_load),
    unload: Some(tagged_unload),
    resolve: Some(resolve),
};

unsafe extern "C" fn tagged_query(max_version: Version, _reserved: *mut c_void) -> *mut *const Header {
    if max_version < Version::V0_1 {
        return std::ptr::null_mut();
    }
    std::ptr::from_ref(&TAGGED).cast_mut().cast()
}

#[test]
fn owned_plugins_unload_newest_first_when_the_manager_drops() {
    let manager = Manager::new();
    for tag in ["1", "2", "3"] {
        let params = xplug_manager::providers::LoadParamList::new().with("tag", tag);
        // SAFETY: `tagged_query` follows the v0 query contract.
        let plugin = unsafe {
            xplug_manager::providers::STATIC.query_code("static plugin", tagged_query).load(&params)
        }
        .unwrap();
        manager.register_plugin(plugin).unwrap();
    }
    // A failed load is not registered and not unloaded.
    // SAFETY: as above.
    let refused = unsafe {
        xplug_manager::providers::STATIC
            .query_code("static plugin", tagged_query)
            .load(&xplug_manager::providers::LoadParamList::new())
    };
    assert_eq!(refused.unwrap_err().code(), StatusCode::INVALID_ARGUMENT);
    assert_eq!(manager.providers(), ["tagged", "tagged", "tagged"]);
    assert!(UNLOAD_ORDER.lock().unwrap().is_empty());
    drop(manager);
    assert_eq!(*UNLOAD_ORDER.lock().unwrap(), [3, 2, 1]);
}
