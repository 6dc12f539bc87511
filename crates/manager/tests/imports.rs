//! `ResolvedImports`: lifetime, calls, thunks, unresolved slots, bad names.

use std::ffi::{c_int, c_void};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use xplug_manager::providers::abi::{ImportFn, Resolution, StatusCode};
use xplug_manager::providers::{Error, ImportProvider, ResolveRequest};
use xplug_manager::{Error as ManagerError, Manager};

#[repr(C)]
struct Binop {
    a: i32,
    b: i32,
    out: i32,
}

/// State a provider shares with its imports through the context pointer.
struct Scale {
    factor: i32,
}

unsafe extern "C" fn scaled_mul(args: *mut c_void, context: *mut c_void, reserved: *mut c_void) -> c_int {
    if !reserved.is_null() {
        return 99;
    }
    // SAFETY: callers pass a `Binop`; the context is the provider's `Scale`,
    // alive while the provider is.
    let (args, scale) = unsafe { (&mut *args.cast::<Binop>(), &*context.cast::<Scale>()) };
    args.out = args.a * args.b * scale.factor;
    0
}

unsafe extern "C" fn always_fails(_: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
    7
}

/// Exports `mul` (with its state as context) and `fail`; records its drop.
struct StatefulProvider {
    state: Box<Scale>,
    dropped: Arc<AtomicBool>,
}

impl ImportProvider for StatefulProvider {
    fn name(&self) -> &str {
        "stateful"
    }
    fn resolve(&self, request: &mut ResolveRequest<'_>) -> Result<Resolution, Error> {
        let context = std::ptr::from_ref::<Scale>(&self.state).cast_mut().cast::<c_void>();
        for i in 0..request.len() {
            match request.names()[i].bare() {
                b"mul" => {
                    request.fill(i, scaled_mul, context);
                }
                b"fail" => {
                    request.fill(i, always_fails, std::ptr::null_mut());
                }
                _ => {}
            }
        }
        request.outcome("stateful")
    }
    fn exported_names(&self) -> Option<Vec<String>> {
        Some(vec!["mul".into(), "fail".into()])
    }
}

impl Drop for StatefulProvider {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
    }
}

fn manager_with_stateful(factor: i32) -> (Manager, Arc<AtomicBool>) {
    let dropped = Arc::new(AtomicBool::new(false));
    let manager = Manager::new();
    manager
        .register_provider(Arc::new(StatefulProvider {
            state: Box::new(Scale { factor }),
            dropped: dropped.clone(),
        }))
        .unwrap();
    (manager, dropped)
}

#[test]
fn the_table_keeps_the_manager_and_its_providers_alive() {
    let (manager, dropped) = manager_with_stateful(3);
    let imports = manager.resolve_imports(["?missing", "mul"]).unwrap();
    drop(manager);
    assert!(!dropped.load(Ordering::SeqCst), "the provider was dropped while resolved imports exist");

    let mut args = Binop { a: 6, b: 7, out: 0 };
    let mul = imports.import(1).unwrap();
    // SAFETY: `mul` takes a `Binop`.
    assert_eq!(unsafe { mul.call(&mut args) }, 0);
    assert_eq!(args.out, 6 * 7 * 3);

    drop(imports);
    assert!(
        dropped.load(Ordering::SeqCst),
        "dropping the last table must drop the manager and its providers"
    );
}

#[test]
fn table_accessors() {
    let (manager, _) = manager_with_stateful(1);
    let imports = manager.resolve_imports(["fail", "?mul", "?absent"]).unwrap();
    assert_eq!(imports.len(), 3);
    assert!(!imports.is_empty());
    assert_eq!(imports.resolution(), Resolution::MISSING_OPTIONAL);
    assert_eq!(imports.name(1), Some("?mul"));
    assert_eq!(imports.name(3), None);
    assert_eq!(imports.index_of("mul"), Some(1));
    assert_eq!(imports.index_of("?mul"), Some(1));
    assert_eq!(imports.index_of("fail"), Some(0));
    assert_eq!(imports.index_of("absent"), Some(2));
    assert_eq!(imports.index_of("nothing"), None);
    assert!(
        imports.is_resolved(0)
            && imports.is_resolved(1)
            && !imports.is_resolved(2)
            && !imports.is_resolved(9)
    );
    assert!(!imports.context(1).is_null() && imports.context(0).is_null());
    assert!(imports.function(2).is_null() && imports.function(99).is_null());
    assert_eq!(imports.function(0), always_fails as ImportFn as *mut c_void);

    let all = manager.resolve_imports(["mul", "fail"]).unwrap();
    assert_eq!(all.resolution(), Resolution::NONE);
    let empty = manager.resolve_imports(Vec::<String>::new()).unwrap();
    assert!(empty.is_empty());
    assert_eq!(empty.resolution(), Resolution::NONE);
}

#[test]
fn calling_an_unresolved_or_missing_slot_is_an_error_not_a_crash() {
    let (manager, _) = manager_with_stateful(1);
    let imports = manager.resolve_imports(["?absent", "fail"]).unwrap();
    let mut args = Binop { a: 1, b: 2, out: -1 };
    // No handle on an unresolved import.
    let error = imports.import(0).unwrap_err();
    assert!(matches!(&error, ManagerError::UnresolvedImport { index: 0, name } if name == "?absent"));
    assert_eq!(error.code(), StatusCode::NOT_FOUND);
    assert!(error.to_string().contains("`?absent`"));
    // Nor out of range.
    let error = imports.import(5).unwrap_err();
    assert_eq!(error.code(), StatusCode::OUT_OF_RANGE);
    // An import's own failure code is passed through.
    let fail = imports.import(1).unwrap();
    // SAFETY: `fail` ignores its arguments.
    assert_eq!(unsafe { fail.call(&mut args) }, 7);
}

static THUNK_CALLS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn counting_thunk(
    function: ImportFn,
    args: *mut c_void,
    context: *mut c_void,
    reserved: *mut c_void,
) -> c_int {
    THUNK_CALLS.fetch_add(1, Ordering::SeqCst);
    // SAFETY: forwards the call exactly as the thunk contract says.
    unsafe { function(args, context, reserved) }
}

#[test]
fn calls_through_a_thunk() {
    let (manager, _) = manager_with_stateful(2);
    let imports = manager.resolve_imports(["mul", "?absent"]).unwrap();
    let mut args = Binop { a: 5, b: 4, out: 0 };
    let before = THUNK_CALLS.load(Ordering::SeqCst);
    let mul = imports.import(0).unwrap();
    // SAFETY: `mul` takes a `Binop`; the thunk forwards.
    assert_eq!(unsafe { mul.call_with_thunk(counting_thunk, &mut args) }, 0);
    assert_eq!(args.out, 40);
    assert_eq!(THUNK_CALLS.load(Ordering::SeqCst), before + 1);
}

#[test]
fn bad_import_names_are_typed_errors() {
    let (manager, _) = manager_with_stateful(1);
    let error = manager.resolve_imports(["mul", "bad\0name"]).unwrap_err();
    assert!(matches!(&error, ManagerError::InvalidImportName { index: 1, .. }), "{error:?}");
    assert_eq!(error.code(), StatusCode::INVALID_ARGUMENT);
    assert!(error.to_string().contains("NUL"), "{error}");
    for empty in ["", "?"] {
        let error = manager.resolve_imports([empty]).unwrap_err();
        assert!(matches!(&error, ManagerError::InvalidImportName { index: 0, .. }), "{error:?}");
    }
    let error = manager.resolve_imports(["mull"]).unwrap_err();
    assert_eq!(error.missing_imports()[0].suggestion.as_deref(), Some("mul"));
}

/// A provider that panics; the C view must turn it into INTERNAL.
struct Panicking;

impl ImportProvider for Panicking {
    fn name(&self) -> &str {
        "panicking"
    }
    fn resolve(&self, _: &mut ResolveRequest<'_>) -> Result<Resolution, Error> {
        panic!("provider bug");
    }
}

#[test]
fn the_c_provider_validates_arguments_and_contains_panics() {
    let (manager, _) = manager_with_stateful(1);
    let provider = manager.as_c_provider();
    let names = [c"mul".as_ptr(), c"?absent".as_ptr()];
    let mut fns = [std::ptr::null_mut::<c_void>(); 2];
    let mut contexts = [std::ptr::null_mut::<c_void>(); 2];

    // NULL out_resolution is allowed.
    // SAFETY: arrays of two elements; the manager is alive.
    let status = unsafe {
        (provider.resolve)(
            provider.self_,
            2,
            names.as_ptr(),
            fns.as_mut_ptr(),
            contexts.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    assert!(status.is_ok());
    assert!(!fns[0].is_null() && fns[1].is_null());

    // Zero names: OK, NULL arrays allowed, resolution written as 0.
    let mut resolution = Resolution(77);
    // SAFETY: count is 0, so the arrays are not read.
    let status = unsafe {
        (provider.resolve)(
            provider.self_,
            0,
            std::ptr::null(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut resolution,
        )
    };
    assert!(status.is_ok());
    assert_eq!(resolution, Resolution::NONE);

    // NULL arrays with names to resolve.
    // SAFETY: the function checks for NULL before reading.
    let status = unsafe {
        (provider.resolve)(
            provider.self_,
            2,
            names.as_ptr(),
            std::ptr::null_mut(),
            contexts.as_mut_ptr(),
            &mut resolution,
        )
    };
    assert_eq!(status.code(), StatusCode::INVALID_ARGUMENT);
    let null_names = [c"mul".as_ptr(), std::ptr::null()];
    // SAFETY: the function checks every name for NULL before reading it.
    let status = unsafe {
        (provider.resolve)(
            provider.self_,
            2,
            null_names.as_ptr(),
            fns.as_mut_ptr(),
            contexts.as_mut_ptr(),
            &mut resolution,
        )
    };
    assert_eq!(status.code(), StatusCode::INVALID_ARGUMENT);

    // Missing required import: NOT_FOUND.
    let missing = [c"nothing".as_ptr()];
    let mut one_fn = [std::ptr::null_mut::<c_void>()];
    let mut one_context = [std::ptr::null_mut::<c_void>()];
    // SAFETY: one-element arrays.
    let status = unsafe {
        (provider.resolve)(
            provider.self_,
            1,
            missing.as_ptr(),
            one_fn.as_mut_ptr(),
            one_context.as_mut_ptr(),
            &mut resolution,
        )
    };
    assert_eq!(status.code(), StatusCode::NOT_FOUND);

    // A panicking provider becomes INTERNAL; the host keeps working.
    let panicky = Manager::new();
    panicky.register_provider(Arc::new(Panicking)).unwrap();
    let provider = panicky.as_c_provider();
    let mut resolution = Resolution(5);
    // SAFETY: one-element arrays; the manager is alive.
    let status = unsafe {
        (provider.resolve)(
            provider.self_,
            1,
            missing.as_ptr(),
            one_fn.as_mut_ptr(),
            one_context.as_mut_ptr(),
            &mut resolution,
        )
    };
    assert_eq!(status.code(), StatusCode::INTERNAL);
    assert_eq!(resolution, Resolution::NONE);
}

/// A C host that receives IREE's provider struct and resolves through it.
const C_HOST: &str = r#"
#include <stddef.h>
#include <stdint.h>

typedef uintptr_t status_t;
typedef status_t (*resolve_fn_t)(void* self, size_t count, const char* const* symbol_names,
                                 void** out_fn_ptrs, void** out_fn_contexts, uint32_t* out_resolution);
/* IREE's iree_hal_executable_import_provider_t. */
typedef struct { void* self; resolve_fn_t resolve; } import_provider_t;
typedef int (*import_fn_t)(void* args, void* context, void* reserved);
typedef struct { int32_t a, b, out; } binop_t;

/* Returns a*b through the provider's `mul`, or a negative code on failure. */
__attribute__((visibility("default"))) int64_t host_run(import_provider_t provider, int32_t a, int32_t b,
                                                        uint32_t* out_resolution) {
  const char* names[2] = {"?absent", "mul"};
  void* fns[2] = {NULL, NULL};
  void* contexts[2] = {NULL, NULL};
  status_t status = provider.resolve(provider.self, 2, names, fns, contexts, out_resolution);
  if ((status & 0x1F) != 0) return -(int64_t)(status & 0x1F);
  if (fns[0] != NULL || fns[1] == NULL) return -100;
  binop_t args = {a, b, 0};
  int rc = ((import_fn_t)fns[1])(&args, contexts[1], NULL);
  if (rc != 0) return -200 - rc;
  return args.out;
}

__attribute__((visibility("default"))) int64_t host_missing(import_provider_t provider) {
  const char* names[1] = {"nothing"};
  void* fns[1] = {NULL};
  void* contexts[1] = {NULL};
  return (int64_t)(provider.resolve(provider.self, 1, names, fns, contexts, NULL) & 0x1F);
}
"#;

type HostRun = unsafe extern "C" fn(xplug_manager::CImportProvider<'_>, i32, i32, *mut Resolution) -> i64;
type HostMissing = unsafe extern "C" fn(xplug_manager::CImportProvider<'_>) -> i64;

#[test]
fn a_c_host_resolves_and_calls_through_the_provider_struct() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("host.c");
    std::fs::write(&source, C_HOST).unwrap();
    // Built as the C plugins are: a shared object, every warning an error.
    let library = xplug_fixtures::build_c_plugin(&source, dir.path(), "host", &[]);

    let path = std::ffi::CString::new(library.to_str().unwrap()).unwrap();
    // SAFETY: the library is the host just built; it has no initialisers.
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!handle.is_null());
    // SAFETY: the symbols are the functions defined above, with these types.
    let (run, missing) = unsafe {
        (
            std::mem::transmute::<*mut c_void, HostRun>(libc::dlsym(handle, c"host_run".as_ptr())),
            std::mem::transmute::<*mut c_void, HostMissing>(libc::dlsym(handle, c"host_missing".as_ptr())),
        )
    };

    let (manager, _) = manager_with_stateful(5);
    let mut resolution = Resolution(0xAB);
    // SAFETY: the C host follows the provider contract; the manager is alive.
    assert_eq!(unsafe { run(manager.as_c_provider(), 6, 7, &mut resolution) }, 6 * 7 * 5);
    assert_eq!(resolution, Resolution::MISSING_OPTIONAL);
    // SAFETY: as above.
    assert_eq!(unsafe { missing(manager.as_c_provider()) }, i64::from(StatusCode::NOT_FOUND.0));
    // SAFETY: nothing from the host library is used after this point.
    assert_eq!(unsafe { libc::dlclose(handle) }, 0);
}

#[test]
fn import_handles_are_checked_once_and_call_like_the_table() {
    unsafe extern "C" fn triple(
        args: *mut std::ffi::c_void,
        _: *mut std::ffi::c_void,
        _: *mut std::ffi::c_void,
    ) -> i32 {
        // SAFETY: this test passes an `i32`.
        unsafe { *args.cast::<i32>() *= 3 };
        0
    }
    let manager = std::sync::Arc::new(xplug_manager::Manager::new());
    let table = xplug_manager::providers::FnTableProvider::new(
        "handles",
        [xplug_manager::providers::FnTableEntry::new("triple", triple)],
    )
    .unwrap();
    manager.register_provider(std::sync::Arc::new(table)).unwrap();
    let imports = manager.resolve_imports(["triple", "?absent"]).unwrap();
    drop(manager); // the table keeps the manager alive

    let handle = imports.import(0).unwrap();
    assert_eq!(handle.function() as *mut std::ffi::c_void, imports.function(0));
    assert_eq!(handle.context(), imports.context(0));
    let mut value = 2i32;
    // SAFETY: `triple` takes an `i32`.
    assert_eq!(unsafe { handle.call(&mut value) }, 0);
    // SAFETY: as above.
    assert_eq!(unsafe { imports.import(0).unwrap().call(&mut value) }, 0);
    assert_eq!(value, 18);

    let unresolved = imports.import(1).unwrap_err();
    assert_eq!(unresolved.code(), xplug_manager::providers::abi::StatusCode::NOT_FOUND);
    assert!(unresolved.to_string().contains("absent"), "{unresolved}");
    let out_of_range = imports.import(7).unwrap_err();
    assert_eq!(out_of_range.code(), xplug_manager::providers::abi::StatusCode::OUT_OF_RANGE);
}
