//! Plugin strings reach the terminal escaped: a header name or
//! description holding control characters cannot clear the screen, move
//! the cursor or recolour the report.

use std::process::Command;

#[test]
fn control_characters_in_plugin_strings_are_escaped_in_human_output() {
    let dir = tempfile::tempdir().unwrap();
    let configurable =
        xplug_fixtures::workspace_root().join("crates/providers/tests/c/configurable_plugin.c");
    let code =
        format!("#define PLUGIN_NAME \"evil\\x1b[2J\\rname\"\n#include \"{}\"\n", configurable.display());
    let plugin = xplug_fixtures::build_c_plugin_from_code(&code, dir.path(), "evil", &[]);
    let output = Command::new(env!("CARGO_BIN_EXE_xplug"))
        .args(["inspect", plugin.to_str().unwrap()])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("evil\\x1b[2J\\rname"), "{stdout}");
    assert!(!stdout.contains('\x1b') && !stdout.contains('\r'), "{stdout:?}");

    // The JSON report keeps the exact string (JSON escapes it itself).
    let output = Command::new(env!("CARGO_BIN_EXE_xplug"))
        .args(["--json", "inspect", plugin.to_str().unwrap()])
        .output()
        .unwrap();
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["name"], "evil\x1b[2J\rname");
}
