//! Helpers shared by the integration tests: building the configurable C
//! plugin with fault flags, and calling import functions.

#![allow(dead_code, reason = "each test binary uses a different subset of the helpers")]

use std::ffi::c_void;
use std::path::{Path, PathBuf};

/// `crates/providers/tests/c/configurable_plugin.c`.
pub fn configurable_source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/configurable_plugin.c")
}

/// Builds the configurable plugin with `flags` into a fresh temporary
/// directory; returns the directory (keep it alive) and the library path.
pub fn build_configurable(name: &str, flags: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let path = xplug_fixtures::build_c_plugin(&configurable_source(), dir.path(), name, flags);
    (dir, path)
}

/// `struct { int32 a, b, out; }`, the argument block of the test imports.
#[repr(C)]
#[derive(Debug, Default)]
pub struct Binop {
    pub a: i32,
    pub b: i32,
    pub out: i32,
}

/// Calls the import in `function` with `context` on `(a, b)`; returns
/// (return code, out).
pub fn call_binop(function: *mut c_void, context: *mut c_void, a: i32, b: i32) -> (i32, i32) {
    assert!(!function.is_null(), "import slot is empty");
    let mut args = Binop { a, b, out: 0 };
    // SAFETY: the slot was filled by a provider with a v0 import function;
    // the test plugins' imports take a `Binop` and the context they were
    // resolved with.
    let function = unsafe { xplug_providers::abi::import_fn_from_ptr(function) }.expect("a resolved slot");
    // SAFETY: see above; `args` outlives the call.
    let code = unsafe { function(std::ptr::from_mut(&mut args).cast(), context, std::ptr::null_mut()) };
    (code, args.out)
}
