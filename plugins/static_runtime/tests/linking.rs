//! Runs the two binaries: the one that names `sample_static` finds and uses
//! it; the one that does not loses the registration.

use std::process::Command;

fn run(binary: &str) -> (bool, String) {
    let output = Command::new(binary).output().unwrap_or_else(|error| panic!("cannot run {binary}: {error}"));
    (output.status.success(), String::from_utf8_lossy(&output.stdout).into_owned())
}

#[test]
fn referenced_plugin_is_registered_and_callable() {
    let (ok, stdout) = run(env!("CARGO_BIN_EXE_static_runtime"));
    assert!(ok, "{stdout}");
    assert!(stdout.contains("static plugins: [\"sample_static\"]"), "{stdout}");
    assert!(stdout.contains("static_fma_i64(6, 7, 8) = 50"), "{stdout}");
}

#[test]
fn unreferenced_plugin_is_dropped_by_the_linker() {
    let (ok, stdout) = run(env!("CARGO_BIN_EXE_unreferenced"));
    assert!(ok);
    assert_eq!(stdout.trim(), "static plugins: []");
}

#[test]
fn library_api_reports_missing_plugins() {
    // This test binary does not name `sample_static`, so it has no static
    // plugins at all.
    let error = static_runtime::fma_through_static_plugin("sample_static", 1, 2, 3).unwrap_err();
    assert!(error.contains("add `use sample_static as _;`"), "{error}");
}
