//! Static plugins: a Rust-side v0 plugin registered with `inventory` and
//! loaded through its registration, plus a static plugin failing checks.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use xplug_providers::abi::{
    AllocatorAllocParams, AllocatorCommand, EnvironmentV0, Features, Header, PluginV0, Resolution,
    ResolveParamsV0, Sanitizer, Status, StatusCode, StringPair, Version,
};
use xplug_providers::{
    Error, ImportProvider, LoadParamList, ResolveRequest, STATIC, StaticPluginRegistration, SymbolName,
    static_plugins,
};

/// How many times `unload` ran, to prove exactly-once.
static UNLOADS: AtomicUsize = AtomicUsize::new(0);

#[expect(dead_code, reason = "read by the host through the raw pointer `query` returns")]
struct Table(PluginV0);
// SAFETY: the table is immutable; its functions are thread-safe.
unsafe impl Sync for Table {}

static HEADER: Header = Header {
    version: Version::LATEST,
    name: c"rust_static".as_ptr(),
    description: c"a static plugin written in Rust".as_ptr(),
    features: Features::NONE,
    sanitizer: Sanitizer::NONE,
    reserved: [0; 8],
};

/// The state: the allocator copied from the environment, and the value of
/// the `answer` parameter.
#[repr(C)]
struct State {
    allocator: xplug_providers::abi::Allocator,
    answer: i32,
}

unsafe extern "C" fn answer(args: *mut c_void, context: *mut c_void, _: *mut c_void) -> c_int {
    // SAFETY: resolved with the plugin state as context; params is an i32.
    unsafe { *args.cast::<i32>() = (*context.cast::<State>()).answer };
    0
}

unsafe extern "C" fn load(
    environment: *const EnvironmentV0,
    count: usize,
    params: *const StringPair,
    out_self: *mut *mut c_void,
) -> Status {
    // SAFETY: the host passes a valid environment and `count` pairs.
    let (allocator, pairs) = unsafe {
        (
            (*environment).host_allocator,
            if count == 0 { &[][..] } else { std::slice::from_raw_parts(params, count) },
        )
    };
    let mut value = 0;
    for pair in pairs {
        // SAFETY: string views point at `size` valid bytes during `load`.
        let (key, text) = unsafe {
            (
                std::slice::from_raw_parts(pair.key.data.cast::<u8>(), pair.key.size),
                std::slice::from_raw_parts(pair.value.data.cast::<u8>(), pair.value.size),
            )
        };
        if key == b"answer" {
            value = std::str::from_utf8(text).ok().and_then(|t| t.parse().ok()).unwrap_or(-1);
        }
    }
    let mut block: *mut c_void = std::ptr::null_mut();
    let alloc = AllocatorAllocParams { byte_length: size_of::<State>() };
    let ctl = allocator.ctl.expect("host allocator");
    // SAFETY: the host allocator follows the v0 allocator contract.
    let status = unsafe {
        ctl(allocator.self_, AllocatorCommand::MALLOC, std::ptr::from_ref(&alloc).cast(), &mut block)
    };
    if !status.is_ok() {
        return status;
    }
    // SAFETY: `block` is a fresh, 16-byte aligned allocation of a `State`.
    unsafe {
        block.cast::<State>().write(State { allocator, answer: value });
        *out_self = block;
    }
    Status::OK
}

unsafe extern "C" fn unload(state: *mut c_void) {
    UNLOADS.fetch_add(1, Ordering::SeqCst);
    // SAFETY: `state` is the block `load` allocated.
    let allocator = unsafe { (*state.cast::<State>()).allocator };
    let mut block = state;
    let ctl = allocator.ctl.expect("host allocator");
    // SAFETY: freeing a block of this allocator.
    unsafe { ctl(allocator.self_, AllocatorCommand::FREE, std::ptr::null(), &mut block) };
}

unsafe extern "C" fn resolve(
    state: *mut c_void,
    params: *const ResolveParamsV0,
    out: *mut Resolution,
) -> Status {
    // SAFETY: the host passes a valid args struct and out-pointer.
    let mut request = unsafe {
        *out = Resolution::NONE;
        ResolveRequest::from_params(&*params)
    };
    for index in 0..request.len() {
        if request.names()[index].bare() == b"answer" {
            request.fill(index, answer, state);
        }
    }
    match request.outcome("rust_static") {
        Ok(resolution) => {
            // SAFETY: as above.
            unsafe { *out = resolution };
            Status::OK
        }
        Err(error) => Status::from_code(error.code()),
    }
}

static TABLE: Table =
    Table(PluginV0 { header: &HEADER, load: Some(load), unload: Some(unload), resolve: Some(resolve) });

unsafe extern "C" fn query(max: Version, _: *mut c_void) -> *mut *const Header {
    if max < Version::V0_1 { std::ptr::null_mut() } else { (&raw const TABLE).cast_mut().cast() }
}

unsafe extern "C" fn query_needing_v2(_: Version, _: *mut c_void) -> *mut *const Header {
    std::ptr::null_mut()
}

// SAFETY: `query` returns NULL or the immutable table above, for the life of
// the program; its functions follow the v0 ABI.
xplug_providers::inventory::submit! { unsafe { StaticPluginRegistration::new("rust_static_registration", query) } }
// SAFETY: returns NULL only.
xplug_providers::inventory::submit! { unsafe { StaticPluginRegistration::new("needs_v2", query_needing_v2) } }

#[test]
fn registered_static_plugin_loads_resolves_and_unloads_once() {
    let registration = static_plugins()
        .into_iter()
        .find(|registration| registration.name() == "rust_static_registration")
        .expect("the registration is collected");
    let plugin =
        STATIC.registration_code(registration).load(&LoadParamList::new().with("answer", "42")).unwrap();
    assert_eq!(plugin.name(), "rust_static");
    assert_eq!((plugin.code().loader().name(), plugin.code().origin()), ("static", None));
    assert_eq!(plugin.info().description, "a static plugin written in Rust");

    let names = [SymbolName::new(c"answer"), SymbolName::new(c"?question")];
    let mut fns = [std::ptr::null_mut(); 2];
    let mut contexts = [std::ptr::null_mut(); 2];
    let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
    assert_eq!(plugin.resolve(&mut request).unwrap(), Resolution::MISSING_OPTIONAL);
    // SAFETY: the slot holds `answer`, an `ImportFn`.
    let function =
        unsafe { xplug_providers::abi::import_fn_from_ptr(request.function(0)) }.expect("resolved");
    let mut out = 0i32;
    // SAFETY: `answer` takes an i32 out-parameter and the plugin state.
    let code =
        unsafe { function(std::ptr::from_mut(&mut out).cast(), request.context(0), std::ptr::null_mut()) };
    assert_eq!(code, 0);
    assert_eq!(out, 42);

    let before = UNLOADS.load(Ordering::SeqCst);
    let stats = plugin.unload();
    assert_eq!(UNLOADS.load(Ordering::SeqCst), before + 1);
    assert_eq!((stats.live_allocations, stats.total_allocations), (0, 1));
}

#[test]
fn static_plugin_needing_a_newer_runtime_is_refused() {
    let registration =
        static_plugins().into_iter().find(|registration| registration.name() == "needs_v2").unwrap();
    let error = STATIC.registration_code(registration).load(&LoadParamList::new()).unwrap_err();
    assert!(matches!(error, Error::UnsupportedVersion { .. }), "{error:?}");
    assert_eq!(error.code(), StatusCode::FAILED_PRECONDITION);
    assert!(error.to_string().contains("`needs_v2`") && error.to_string().contains("0x00000001"), "{error}");
}

#[test]
fn from_query_loads_the_same_table() {
    // SAFETY: `query` follows the v0 contract (see the registration above).
    let plugin = unsafe { STATIC.query_code("static plugin", query).load(&LoadParamList::new()) }.unwrap();
    assert_eq!(plugin.name(), "rust_static");
    drop(plugin);
}
