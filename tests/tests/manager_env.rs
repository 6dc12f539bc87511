//! `Manager::from_env` and the `XPLUG_PLUGINS` variable.
//!
//! One test in its own binary: it changes the process environment, which
//! must not happen while other threads read it.
#![cfg(unix)]

use std::sync::Arc;

use xplug_abi::StatusCode;
use xplug_fixtures::build_minimal_c_plugin;
use xplug_manager::Manager;
use xplug_manager::spec::{ENV_SEPARATOR, ENV_VAR};

#[repr(C)]
struct Binop {
    a: i32,
    b: i32,
    out: i32,
}

fn set(value: &str) {
    // SAFETY: this binary runs a single test, so no other thread reads or
    // writes the environment concurrently.
    unsafe { std::env::set_var(ENV_VAR, value) };
}

#[test]
fn plugins_come_from_the_environment_variable() {
    let dir = tempfile::tempdir().unwrap();
    let library = build_minimal_c_plugin(dir.path()).display().to_string();

    // SAFETY: as in `set`.
    unsafe { std::env::remove_var(ENV_VAR) };
    // SAFETY: the variable is unset: nothing is loaded.
    assert!(unsafe { Manager::from_env() }.unwrap().is_empty());

    // Empty entries are skipped; the last entry wins.
    set(&format!(
        "{ENV_SEPARATOR}{library}?scale=2{ENV_SEPARATOR}{ENV_SEPARATOR}{library}?scale=4{ENV_SEPARATOR}"
    ));
    // SAFETY: the variable names the test's own minimal v0 plugin.
    let manager = Arc::new(unsafe { Manager::from_env() }.unwrap());
    assert_eq!(manager.len(), 2);
    let imports = manager.resolve_imports(["c_mul_i32"]).unwrap();
    let mut args = Binop { a: 5, b: 6, out: 0 };
    // SAFETY: `c_mul_i32` takes `struct { int32_t a, b, out; }`.
    assert_eq!(unsafe { imports.import(0).unwrap().call(&mut args) }, 0);
    assert_eq!(args.out, 5 * 6 * 4);

    set("");
    // SAFETY: nothing to load.
    assert!(unsafe { Manager::from_env() }.unwrap().is_empty());

    set(&format!("{library}{ENV_SEPARATOR}embedded{ENV_SEPARATOR}x.bin"));
    // SAFETY: the library is trusted; `x.bin` does not exist, so the
    // embedded loader reads nothing.
    let error = unsafe { Manager::from_env() }.unwrap_err();
    assert_eq!(error.code(), StatusCode::NOT_FOUND, "{error}");

    set("lib.so?=1");
    // SAFETY: refused while parsing.
    let error = unsafe { Manager::from_env() }.unwrap_err();
    assert_eq!(error.code(), StatusCode::INVALID_ARGUMENT);
    assert!(error.to_string().contains("`lib.so?=1`"), "{error}");

    // SAFETY: as in `set`.
    unsafe { std::env::remove_var(ENV_VAR) };
}
