//! The committed C header against the Rust ABI: every size, alignment, field
//! offset and constant of `xplug-abi` is asserted by a C (and a C++) compiler,
//! and a minimal C plugin built against the header is loaded and driven from
//! Rust through the `xplug-abi` types.

use std::ffi::{CStr, c_void};
use std::fmt::Write as _;
use std::mem::{align_of, offset_of, size_of};

use xplug_abi::{
    Allocator, AllocatorAllocParams, AllocatorCommand, EnvironmentV0, Features, Header, ParamDecl, PluginV0,
    QueryFn, Resolution, ResolveParamsV0, Sanitizer, Status, StatusCode, StringPair, StringView, Version,
};
use xplug_fixtures::{build_minimal_c_plugin, c_compiler, compile_object, cxx_compiler, object_command};

/// C source with one static assertion per layout fact and constant.
fn static_assert_source() -> String {
    let mut c = String::from(
        "#include <stddef.h>\n#include \"xplug/executable_plugin.h\"\n\
         #ifdef __cplusplus\n#define XPLUG_ASSERT(x) static_assert(x, #x)\n\
         #else\n#define XPLUG_ASSERT(x) _Static_assert(x, #x)\n#endif\n",
    );
    let mut assert = |expr: String| writeln!(c, "XPLUG_ASSERT({expr});").unwrap();
    macro_rules! layout {
        ($rust:ty, $c:literal $(, $field:ident => $cfield:literal)*) => {{
            assert(format!("sizeof({}) == {}", $c, size_of::<$rust>()));
            assert(format!("_Alignof({}) == {}", $c, align_of::<$rust>()));
            $(assert(format!("offsetof({}, {}) == {}", $c, $cfield, offset_of!($rust, $field)));)*
        }};
    }
    layout!(Header, "iree_hal_executable_plugin_header_t",
        version => "version", name => "name", description => "description",
        features => "features", sanitizer => "sanitizer", reserved => "reserved");
    layout!(PluginV0, "iree_hal_executable_plugin_v0_t",
        header => "header", load => "load", unload => "unload", resolve => "resolve");
    layout!(EnvironmentV0, "iree_hal_executable_plugin_environment_v0_t", host_allocator => "host_allocator");
    layout!(Allocator, "iree_hal_executable_plugin_allocator_t", self_ => "self", ctl => "ctl");
    layout!(AllocatorAllocParams, "iree_hal_executable_plugin_allocator_alloc_params_t", byte_length => "byte_length");
    layout!(StringView, "iree_hal_executable_plugin_string_view_t", data => "data", size => "size");
    layout!(StringPair, "iree_hal_executable_plugin_string_pair_t", key => "key", value => "value");
    // IREE's aliases for the pair's fields share the storage of key/value.
    assert(format!(
        "offsetof(iree_hal_executable_plugin_string_pair_t, first) == {}",
        offset_of!(StringPair, key)
    ));
    assert(format!(
        "offsetof(iree_hal_executable_plugin_string_pair_t, second) == {}",
        offset_of!(StringPair, value)
    ));
    layout!(ResolveParamsV0, "iree_hal_executable_plugin_resolve_params_v0_t",
        count => "count", symbol_names => "symbol_names", out_fn_ptrs => "out_fn_ptrs",
        out_fn_contexts => "out_fn_contexts");
    layout!(ParamDecl, "xplug_param_decl_t",
        name => "name", kind => "kind", default_value => "default_value", description => "description");
    layout!(Status, "iree_hal_executable_plugin_status_t");
    layout!(Version, "iree_hal_executable_plugin_version_t");
    layout!(Features, "iree_hal_executable_plugin_features_t");
    layout!(Sanitizer, "iree_hal_executable_plugin_sanitizer_kind_t");
    layout!(Resolution, "iree_hal_executable_plugin_resolution_t");
    layout!(AllocatorCommand, "iree_hal_executable_plugin_allocator_command_t");

    for raw in 0..=17u32 {
        let name = StatusCode(raw).name().unwrap();
        assert(format!("IREE_HAL_EXECUTABLE_PLUGIN_STATUS_{name} == {raw}"));
    }
    assert(format!("IREE_HAL_EXECUTABLE_PLUGIN_STATUS_CODE_MASK == {}", StatusCode::MASK));
    for sanitizer in
        [Sanitizer::NONE, Sanitizer::ADDRESS, Sanitizer::MEMORY, Sanitizer::THREAD, Sanitizer::UNDEFINED]
    {
        let name = sanitizer.name().unwrap().to_uppercase();
        assert(format!("IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_{name} == {}", sanitizer.0));
    }
    assert(format!("IREE_HAL_EXECUTABLE_PLUGIN_FEATURE_NONE == {}", Features::NONE.0));
    assert(format!("IREE_HAL_EXECUTABLE_PLUGIN_FEATURE_STANDALONE == {}", Features::STANDALONE.0));
    assert(format!("IREE_HAL_EXECUTABLE_PLUGIN_FEATURE_FULL_STATUS == {}", Features::FULL_STATUS.0));
    assert(format!("IREE_HAL_EXECUTABLE_PLUGIN_VERSION_0_1 == {}", Version::V0_1.0));
    assert(format!("IREE_HAL_EXECUTABLE_PLUGIN_VERSION_LATEST == {}", Version::LATEST.0));
    assert(format!(
        "IREE_HAL_EXECUTABLE_PLUGIN_RESOLUTION_MISSING_OPTIONAL == {}",
        Resolution::MISSING_OPTIONAL.0
    ));
    for (command, name) in [
        (AllocatorCommand::MALLOC, "MALLOC"),
        (AllocatorCommand::CALLOC, "CALLOC"),
        (AllocatorCommand::REALLOC, "REALLOC"),
        (AllocatorCommand::FREE, "FREE"),
    ] {
        assert(format!("IREE_HAL_EXECUTABLE_PLUGIN_ALLOCATOR_COMMAND_{name} == {}", command.0));
    }
    c.push_str("int xplug_layout_checked(void) { return 1; }\n");
    c
}

#[test]
fn header_layout_matches_rust_in_c99() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("layout.c");
    std::fs::write(&source, static_assert_source()).unwrap();
    compile_object(&c_compiler(), "-std=c99", &source, &dir.path().join("layout.o"));
}

#[test]
fn header_layout_matches_rust_in_cxx() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("layout.cc");
    std::fs::write(&source, static_assert_source().replace("_Alignof", "alignof")).unwrap();
    compile_object(&cxx_compiler(), "-std=c++11", &source, &dir.path().join("layout.o"));
}

#[test]
fn a_wrong_expectation_fails_the_c_build() {
    // The assertions can fail: a deliberately wrong size must stop the compiler.
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("wrong.c");
    let text = static_assert_source().replace(
        &format!("sizeof(iree_hal_executable_plugin_header_t) == {}", size_of::<Header>()),
        &format!("sizeof(iree_hal_executable_plugin_header_t) == {}", size_of::<Header>() + 8),
    );
    std::fs::write(&source, text).unwrap();
    // The command the true assertions pass with (the tests above).
    let status = object_command(&c_compiler(), "-std=c99", &source, &dir.path().join("wrong.o"))
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "a wrong layout assertion compiled");
}

/// A host allocator over libc that counts live blocks.
unsafe extern "C" fn counting_ctl(
    allocator_self: *mut c_void,
    command: AllocatorCommand,
    params: *const c_void,
    inout_ptr: *mut *mut c_void,
) -> Status {
    // SAFETY: `allocator_self` is the `AtomicIsize` the test passed in the
    // environment, alive for the whole test.
    let live = unsafe { &*allocator_self.cast::<std::sync::atomic::AtomicIsize>() };
    match command {
        AllocatorCommand::MALLOC => {
            // SAFETY: MALLOC passes alloc params and a writable pointer slot.
            let length = unsafe { (*params.cast::<AllocatorAllocParams>()).byte_length };
            // SAFETY: plain libc allocation.
            let block = unsafe { libc::malloc(length) };
            if block.is_null() {
                return Status::from_code(StatusCode::RESOURCE_EXHAUSTED);
            }
            live.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            // SAFETY: `inout_ptr` is writable per the allocator contract.
            unsafe { *inout_ptr = block };
            Status::OK
        }
        AllocatorCommand::FREE => {
            // SAFETY: FREE passes the block to release in `*inout_ptr`; it came
            // from MALLOC above.
            unsafe { libc::free(*inout_ptr) };
            live.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            Status::OK
        }
        _ => Status::from_code(StatusCode::UNIMPLEMENTED),
    }
}

#[repr(C)]
struct BinopArgs {
    a: i32,
    b: i32,
    out: i32,
}

#[test]
fn minimal_c_plugin_builds_and_speaks_v0() {
    let dir = tempfile::tempdir().unwrap();
    let library = build_minimal_c_plugin(dir.path());
    let path = std::ffi::CString::new(library.to_str().unwrap()).unwrap();

    // SAFETY: the library is the plugin just built from our own C source; its
    // initialisers do nothing.
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!handle.is_null(), "dlopen failed");
    // SAFETY: `handle` is a live library handle.
    let symbol = unsafe { libc::dlsym(handle, xplug_abi::EXPORT_NAME.as_ptr()) };
    assert!(!symbol.is_null(), "the plugin does not export the query function");
    // SAFETY: the exported symbol is the v0 query function (C source above).
    let query: QueryFn = unsafe { std::mem::transmute::<*mut c_void, QueryFn>(symbol) };

    // SAFETY: calling the query function with a version and NULL is its contract.
    assert!(unsafe { query(Version(0), std::ptr::null_mut()) }.is_null(), "version 0 must be refused");
    // SAFETY: as above.
    let table = unsafe { query(Version::LATEST, std::ptr::null_mut()) };
    assert!(!table.is_null());
    // SAFETY: a non-NULL v0 result points at the plugin's static `PluginV0`.
    let plugin = unsafe { &*table.cast::<PluginV0>() };
    // SAFETY: the header pointer of a v0 table is valid while the library is open.
    let header = unsafe { &*plugin.header };
    assert_eq!(header.version, Version::LATEST);
    assert_eq!(header.features, Features::STANDALONE);
    assert_eq!(header.sanitizer, Sanitizer::NONE);
    assert_eq!(header.reserved, [0; 8]);
    // SAFETY: header strings are NUL-terminated statics of the plugin.
    assert_eq!(unsafe { CStr::from_ptr(header.name) }, c"c_minimal");

    let live = std::sync::atomic::AtomicIsize::new(0);
    let environment = EnvironmentV0 {
        host_allocator: Allocator {
            self_: std::ptr::from_ref(&live).cast_mut().cast(),
            ctl: Some(counting_ctl),
        },
    };
    let params = [StringPair { key: StringView::from_bytes(b"scale"), value: StringView::from_bytes(b"3") }];
    let mut state = std::ptr::null_mut();
    // SAFETY: environment and params outlive the call; `state` is writable.
    let status = unsafe { plugin.load.unwrap()(&environment, params.len(), params.as_ptr(), &mut state) };
    assert!(status.is_ok());
    assert_eq!(live.load(std::sync::atomic::Ordering::SeqCst), 1);

    let names = [c"?c_missing".as_ptr(), c"c_add_i32".as_ptr(), c"c_mul_i32".as_ptr()];
    let mut fns = [std::ptr::null_mut::<c_void>(); 3];
    let mut contexts = [std::ptr::null_mut::<c_void>(); 3];
    let request = ResolveParamsV0 {
        count: 3,
        symbol_names: names.as_ptr(),
        out_fn_ptrs: fns.as_mut_ptr(),
        out_fn_contexts: contexts.as_mut_ptr(),
    };
    let mut resolution = Resolution::NONE;
    // SAFETY: the request's arrays hold `count` elements each.
    let status = unsafe { plugin.resolve.unwrap()(state, &request, &mut resolution) };
    assert!(status.is_ok());
    assert_eq!(resolution, Resolution::MISSING_OPTIONAL);
    assert!(fns[0].is_null() && !fns[1].is_null() && !fns[2].is_null());

    let mut binop = BinopArgs { a: 6, b: 7, out: 0 };
    // SAFETY: slot 2 holds `c_mul_i32`, an import taking `BinopArgs`.
    let mul = unsafe { xplug_abi::import_fn_from_ptr(fns[2]) }.expect("slot 2 is filled");
    // SAFETY: args match the import's C struct; the context is its state.
    assert_eq!(unsafe { mul(std::ptr::from_mut(&mut binop).cast(), contexts[2], std::ptr::null_mut()) }, 0);
    assert_eq!(binop.out, 6 * 7 * 3, "the `scale` load parameter was not applied");

    // SAFETY: `state` came from a successful load and is unloaded once.
    unsafe { plugin.unload.unwrap()(state) };
    assert_eq!(live.load(std::sync::atomic::Ordering::SeqCst), 0, "the plugin leaked host memory");
    // SAFETY: nothing from the library is used after this point.
    assert_eq!(unsafe { libc::dlclose(handle) }, 0);
}
