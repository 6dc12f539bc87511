//! Running the `xplug` binary from the CLI's integration tests.

#![allow(dead_code, reason = "each test binary uses a subset of these helpers")]

use std::process::{Command, Output};

use serde_json::Value;

/// The `xplug` these tests run: the package's own binary, or in
/// `xplug-cli-static`'s tests (`crates/cli/static/`, which include this
/// file) that package's `xplug-static`, the same tool with the example
/// static plugin linked in.
pub const XPLUG: &str = match option_env!("CARGO_BIN_EXE_xplug-static") {
    Some(path) => path,
    None => match option_env!("CARGO_BIN_EXE_xplug") {
        Some(path) => path,
        None => panic!("built neither as a test of xplug-cli nor of xplug-cli-static"),
    },
};

/// glibc fills freed (and fresh) heap blocks with this byte's complement
/// (and this byte), so a read of freed memory shows as garbage in the
/// output the tests compare instead of passing by luck.
pub const MALLOC_PERTURB: &str = "165";

/// Runs `xplug ARGS` without colours, with [`MALLOC_PERTURB`].
pub fn xplug(args: &[&str]) -> Output {
    Command::new(XPLUG)
        .args(args)
        .env("NO_COLOR", "1")
        .env("MALLOC_PERTURB_", MALLOC_PERTURB)
        .output()
        .expect("the xplug binary runs")
}

/// Runs `xplug --json ARGS`; its exit code and stdout parsed as exactly one
/// JSON object.
pub fn json_output(args: &[&str]) -> (Option<i32>, Value) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let output = xplug(&all);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let value: Value = serde_json::from_str(&stdout).unwrap_or_else(|error| {
        panic!(
            "xplug {all:?}: not exactly one JSON value ({error}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    assert!(value.is_object(), "xplug {all:?}: {value}");
    (output.status.code(), value)
}

/// [`json_output`], asserting the exit code.
pub fn json(args: &[&str], expected_code: i32) -> Value {
    let (code, value) = json_output(args);
    assert_eq!(code, Some(expected_code), "xplug --json {args:?}: {value}");
    value
}

/// The debug build of example plugin `name` (`sample_system`, `c_sample`,
/// ...), built once per test process by `xplug_fixtures`.
pub fn library(name: &str) -> String {
    xplug_fixtures::plugins::built_for_tests()
        .join(xplug_fixtures::plugins::library_file_name(name))
        .display()
        .to_string()
}

/// A process's output as text, invalid UTF-8 replaced.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
