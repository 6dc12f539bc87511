//! One error vocabulary across commands: each cause has one JSON `kind`
//! and status code whichever command meets it, status codes are named, and
//! no message is printed twice (in the cause chain, or per check).

use std::path::{Path, PathBuf};

use serde_json::Value;

mod common;
use common::{json, library, xplug};

/// A shared library that is no plugin: one C function, no query export.
fn not_a_plugin(dir: &Path) -> PathBuf {
    xplug_fixtures::build_c_plugin_from_code("int not_a_plugin(void) { return 1; }\n", dir, "notplugin", &[])
}

/// The providers' configurable C plugin built with `flags`.
fn configurable(dir: &Path, name: &str, flags: &[&str]) -> PathBuf {
    let source = xplug_fixtures::workspace_root().join("crates/providers/tests/c/configurable_plugin.c");
    xplug_fixtures::build_c_plugin(&source, dir, name, flags)
}

/// `xplug ARGS` (no JSON): its stderr.
fn stderr_of(args: &[&str]) -> String {
    String::from_utf8_lossy(&xplug(args).stderr).into_owned()
}

/// Asserts no line of `text` appears twice.
fn no_line_repeated(text: &str) {
    let lines: Vec<&str> = text.lines().map(|line| line.trim().trim_start_matches("caused by: ")).collect();
    for (i, line) in lines.iter().enumerate() {
        assert!(!lines[..i].contains(line), "line repeated: {line}\n{text}");
    }
}

fn kind_and_code(value: &Value) -> (&str, &str) {
    (value["error"]["kind"].as_str().unwrap_or("?"), value["error"]["code"].as_str().unwrap_or("?"))
}

#[test]
fn an_undeclared_load_parameter_is_unknown_param_in_every_command() {
    let spec = format!("{}?multplier=3", library("sample_system"));
    let commands: [&[&str]; 5] = [
        &["inspect", &spec],
        &["check", &spec],
        &["resolve", "--plugin", &spec, "simple_mul_workgroup"],
        &["call", &spec, "sample_system_calls", "--field", "u64:0"],
        &["bench", &spec, "simple_mul_workgroup", "--runs", "1"],
    ];
    for command in commands {
        let value = json(command, 1);
        assert_eq!(kind_and_code(&value), ("unknown_param", "INVALID_ARGUMENT"), "{command:?}: {value}");
        let text = value["error"].to_string();
        assert!(text.contains("did you mean `multiplier`?"), "{command:?}: {value}");
        no_line_repeated(&stderr_of(command));
    }
}

#[test]
fn a_plugin_that_cannot_be_loaded_is_named_once() {
    let missing = "/no/such/dir/libplugin.so";
    for command in [
        &["resolve", "--plugin", missing, "f"][..],
        &["call", missing, "f", "--hex", "00"][..],
        &["bench", missing, "f", "--runs", "1"][..],
    ] {
        let stderr = stderr_of(command);
        assert_eq!(stderr.matches("cannot load plugin").count(), 1, "{command:?}: {stderr}");
        no_line_repeated(&stderr);
        let value = json(command, 1);
        assert_eq!(kind_and_code(&value), ("plugin_file_not_found", "NOT_FOUND"), "{command:?}: {value}");
    }
}

#[test]
fn the_plugins_own_load_message_is_printed_once() {
    // A value the host's check cannot refuse (any text is a `str`) but
    // the plugin does, with its own message.
    let spec = format!("{}?disable=nope", library("sample_system"));
    for command in [
        &["call", &spec, "sample_system_calls", "--field", "u64:0"][..],
        &["resolve", "--plugin", &spec, "sample_system_calls"][..],
        &["inspect", &spec][..],
    ] {
        let stderr = stderr_of(command);
        assert_eq!(
            stderr.matches("load parameter `disable` has the value `nope`").count(),
            1,
            "{command:?}: {stderr}"
        );
        no_line_repeated(&stderr);
    }
}

#[test]
fn check_on_a_non_plugin_is_one_error_not_one_per_check() {
    let dir = tempfile::tempdir().unwrap();
    let path = not_a_plugin(dir.path());
    let path = path.to_str().unwrap();
    let value = json(&["check", path], 1);
    assert_eq!(kind_and_code(&value), ("missing_export", "NOT_FOUND"), "{value}");
    assert!(value.get("checks").is_none(), "no per-check report: {value}");
    let stderr = stderr_of(&["check", path]);
    assert_eq!(stderr.matches("iree_hal_executable_plugin_query").count(), 1, "{stderr}");
    no_line_repeated(&stderr);
    let stdout = String::from_utf8_lossy(&xplug(&["check", path]).stdout).into_owned();
    assert!(!stdout.contains("passed"), "{stdout}");
}

#[test]
fn check_stops_at_a_fatal_failure_and_counts_skips_as_skips() {
    let dir = tempfile::tempdir().unwrap();
    // `load` returns INTERNAL: `load-unload` fails, and every check after
    // it needs a loaded instance.
    let failing = configurable(dir.path(), "loadfails", &["-DLOAD_FAILS=13"]);
    let value = json(&["check", failing.to_str().unwrap()], 1);
    let checks = value["checks"].as_array().unwrap();
    let position = checks.iter().position(|c| c["name"] == "load-unload").unwrap();
    // No instance could be loaded: its own outcome, counted as a failure.
    assert_eq!(checks[position]["outcome"], "not_loaded", "{value}");
    for check in &checks[position + 1..] {
        assert_eq!(check["outcome"], "skip", "{value}");
        assert!(check["detail"].as_str().unwrap().contains("check `load-unload` failed"), "{check}");
    }
    assert_eq!(value["failed"], 1, "{value}");
    assert_eq!(value["skipped"], checks.len() - position - 1, "{value}");
    assert_eq!(value["passed"], position, "{value}");

    // A plugin without an exports list: the two checks that need names are
    // skipped, and counted as such.
    let plain = configurable(dir.path(), "plain", &[]);
    let value = json(&["check", plain.to_str().unwrap()], 0);
    let skipped: Vec<&Value> =
        value["checks"].as_array().unwrap().iter().filter(|c| c["outcome"] == "skip").collect();
    assert_eq!(value["skipped"], skipped.len(), "{value}");
    assert!(!skipped.is_empty(), "{value}");
    let stdout = String::from_utf8_lossy(&xplug(&["check", plain.to_str().unwrap()]).stdout).into_owned();
    let total = value["checks"].as_array().unwrap().len();
    assert!(
        stdout.contains(&format!(
            "{} passed, 0 failed, {} skipped of {total} checks",
            total - skipped.len(),
            skipped.len()
        )),
        "{stdout}"
    );
}

#[test]
fn an_ordinary_shared_library_given_as_embedded_is_not_standalone_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    // Like `embedded:libz.so.1`: a library that needs libc.
    let path = xplug_fixtures::build_c_plugin_from_code(
        "int not_a_plugin(void) { return 1; }\n",
        dir.path(),
        "needslibc",
        &["-Wl,--no-as-needed", "-lc"],
    );
    let spec = format!("embedded:{}", path.display());
    for command in [
        &["inspect", &spec][..],
        &["resolve", "--plugin", &spec, "f"][..],
        &["call", &spec, "f", "--hex", "00"][..],
    ] {
        let value = json(command, 1);
        assert_eq!(value["error"]["kind"], "not_standalone", "{command:?}: {value}");
        // The wrong kind of file, as any refused input: not UNIMPLEMENTED.
        assert_eq!(value["error"]["code"], "INVALID_ARGUMENT", "{command:?}: {value}");
        assert!(value["error"].to_string().contains("DT_NEEDED"), "{command:?}: {value}");
        no_line_repeated(&stderr_of(command));
    }
}
