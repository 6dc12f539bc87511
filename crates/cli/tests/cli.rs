//! Runs the `xplug` binary on real plugins and checks its JSON and exit codes.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;
use common::{json, xplug};

fn minimal_plugin(dir: &Path) -> PathBuf {
    xplug_fixtures::build_minimal_c_plugin(dir)
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

#[test]
fn inspect_reports_the_header_and_loader() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = minimal_plugin(dir.path());
    let value = json(&["inspect", path_str(&plugin)], 0);
    assert_eq!(value["name"], "c_minimal");
    assert_eq!(value["description"], "minimal C plugin from tests/c");
    assert_eq!(value["version"], 1);
    assert_eq!(value["features"], serde_json::json!(["standalone"]));
    assert_eq!(value["sanitizer"], "none");
    assert_eq!(value["loader"], "system library");
    // A C plugin has no xplug_plugin_exports.
    assert!(value["exports"].is_null());
}

#[test]
fn inspect_of_a_missing_file_is_a_typed_error() {
    let value = json(&["inspect", "/nonexistent/libnothing.so"], 1);
    assert_eq!(value["ok"], false);
    assert_eq!(value["error"]["kind"], "plugin_file_not_found");
    assert_eq!(value["error"]["code"], "NOT_FOUND");
    let causes = value["error"]["causes"].to_string();
    assert!(causes.contains("/nonexistent/libnothing.so does not exist"), "{value}");
    // The cause is printed once, by itself, not repeated in the message.
    assert!(!value["error"]["message"].as_str().unwrap().contains("does not exist"), "{value}");
    // Every command names the same failure the same way.
    for command in
        [&["check", "/nonexistent/libnothing.so"][..], &["bench", "/nonexistent/libnothing.so", "f"]]
    {
        let value = json(command, 1);
        assert_eq!(value["error"]["kind"], "plugin_file_not_found", "{command:?}: {value}");
        assert_eq!(value["error"]["code"], "NOT_FOUND", "{command:?}: {value}");
    }
}

#[test]
fn resolve_shows_the_provider_of_each_symbol() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = minimal_plugin(dir.path());
    let value = json(&["resolve", "--plugin", path_str(&plugin), "c_mul_i32", "?c_div_i32", "c_add_i32"], 0);
    assert_eq!(value["ok"], true);
    assert!(value["error"].is_null());
    assert_eq!(value["missing_optional"], true);
    let symbols = value["symbols"].as_array().unwrap();
    // Sorted by bare name, as IREE's compiler emits import tables.
    let names: Vec<&str> = symbols.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["c_add_i32", "?c_div_i32", "c_mul_i32"]);
    assert_eq!(symbols[0]["provider"], "c_minimal");
    assert_eq!(symbols[0]["resolved"], true);
    assert_eq!(symbols[1]["optional"], true);
    assert_eq!(symbols[1]["resolved"], false);
    assert!(symbols[1]["provider"].is_null());
    assert_eq!(symbols[2]["provider"], "c_minimal");
}

#[test]
fn resolve_with_two_plugins_names_the_newest_provider() {
    let dir = tempfile::tempdir().unwrap();
    let first = minimal_plugin(dir.path());
    // A second copy under another file name and header name.
    let code = std::fs::read_to_string(xplug_fixtures::workspace_root().join("tests/c/minimal_plugin.c"))
        .unwrap()
        .replace("\"c_minimal\"", "\"c_minimal_copy\"");
    let second = xplug_fixtures::build_c_plugin_from_code(&code, dir.path(), "c_minimal_copy", &[]);
    let value =
        json(&["resolve", "--plugin", path_str(&first), "--plugin", path_str(&second), "c_add_i32"], 0);
    assert_eq!(value["symbols"][0]["provider"], "c_minimal_copy");
    assert_eq!(value["symbols"][0]["provider_index"], 1);
    let order: Vec<&str> =
        value["scan_order"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(order, ["c_minimal_copy", "c_minimal"]);
}

#[test]
fn failing_resolve_exits_1_and_lists_the_missing_names() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = minimal_plugin(dir.path());
    let value = json(&["resolve", "--plugin", path_str(&plugin), "c_add_i32", "c_sub_i32", "c_div_i32"], 1);
    assert_eq!(value["ok"], false);
    assert_eq!(value["error"]["code"], "NOT_FOUND");
    let message = value["error"]["causes"].to_string();
    assert!(message.contains("`c_sub_i32`") && message.contains("`c_div_i32`"), "{message}");
    let symbols = value["symbols"].as_array().unwrap();
    // The found one is still attributed; the missing ones have no provider.
    assert_eq!(symbols[0]["name"], "c_add_i32");
    assert_eq!(symbols[0]["provider"], "c_minimal");
    assert!(symbols[1..].iter().all(|s| s["resolved"] == false && s["provider"].is_null()));
}

#[test]
fn resolve_with_a_bad_plugin_path_exits_1_with_the_path() {
    let value = json(&["resolve", "--plugin", "/nonexistent/libnothing.so", "c_add_i32"], 1);
    // The same shape, kind and code as every other command's load failure.
    assert_eq!(value["ok"], false);
    assert_eq!(value["error"]["kind"], "plugin_file_not_found", "{value}");
    assert_eq!(value["error"]["code"], "NOT_FOUND");
    let causes = value["error"]["causes"].to_string();
    assert!(causes.contains("/nonexistent/libnothing.so does not exist"), "{causes}");
    assert_eq!(value.as_object().unwrap().keys().collect::<Vec<_>>(), ["error", "ok"], "{value}");
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(xplug(&["resolve"]).status.code(), Some(2));
    assert_eq!(xplug(&["no-such-command"]).status.code(), Some(2));
    assert_eq!(xplug(&["bench", "x.so", "f", "--runs", "0"]).status.code(), Some(2));
    let output = xplug(&["check", "--single-check", "no-such-check", "whatever.so"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown check `no-such-check`"));
}

#[test]
fn check_passes_for_a_conforming_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = minimal_plugin(dir.path());
    let value = json(&["check", path_str(&plugin), "--symbol", "c_add_i32", "--symbol", "c_mul_i32"], 0);
    assert_eq!(value["ok"], true);
    let checks = value["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 12);
    for check in checks {
        assert_eq!(check["ok"], true, "{check}");
        assert!(check["detail"].is_string());
    }
    let exports = checks.iter().find(|c| c["name"] == "resolve-exports").unwrap();
    assert_eq!(exports["detail"], "2 export(s) resolved");
}

#[test]
fn check_flags_an_inverted_version_test_and_a_leak() {
    let dir = tempfile::tempdir().unwrap();
    let code = std::fs::read_to_string(xplug_fixtures::workspace_root().join("tests/c/minimal_plugin.c"))
        .unwrap()
        // IREE's samples return NULL when max_version > 1.
        .replace(
            "max_version < IREE_HAL_EXECUTABLE_PLUGIN_VERSION_0_1",
            "max_version > IREE_HAL_EXECUTABLE_PLUGIN_VERSION_0_1",
        )
        // Forget to free the state.
        .replace("iree_hal_executable_plugin_allocator_free(state->host_allocator, state);", "(void)state;");
    let plugin = xplug_fixtures::build_c_plugin_from_code(&code, dir.path(), "c_sloppy", &[]);
    let value = json(&["check", path_str(&plugin)], 1);
    assert_eq!(value["ok"], false);
    let failed: Vec<&str> = value["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["ok"] == false)
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["query-max-version-0", "load-unload", "load-unload-params", "allocations-balanced"]);

    // One check alone, as a supervisor running checks in child processes would.
    let single = json(&["check", "--single-check", "query-max-version-0", path_str(&plugin)], 1);
    assert_eq!(single["checks"].as_array().unwrap().len(), 1);
}

#[test]
fn bench_reports_resolve_and_call_medians() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = minimal_plugin(dir.path());
    let value =
        json(&["bench", path_str(&plugin), "c_add_i32", "c_mul_i32", "--runs", "3", "--call", "16"], 0);
    assert_eq!(value["plugin"], "c_minimal");
    assert_eq!(value["resolve"]["resolved"], 2);
    assert_eq!(value["resolve"]["ok"], true);
    assert!(value["resolve"]["median_ns"].as_f64().unwrap() > 0.0);
    let calls = value["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    assert!(calls.iter().all(|c| c["result"] == 0 && c["median_ns"].as_f64().unwrap() > 0.0));
}

#[test]
fn demo_without_built_plugins_says_how_to_build_them() {
    let dir = tempfile::tempdir().unwrap();
    let output = xplug(&["demo", "--plugin-dir", path_str(dir.path())]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cargo xtask build-plugins"), "{stderr}");
}

#[test]
fn inspect_shows_the_header_of_a_plugin_the_loader_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let code = std::fs::read_to_string(xplug_fixtures::workspace_root().join("tests/c/minimal_plugin.c"))
        .unwrap()
        .replace(".sanitizer = IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_KIND", ".sanitizer = 1 /* address */");
    let plugin = xplug_fixtures::build_c_plugin_from_code(&code, dir.path(), "c_asan", &[]);
    let value = json(&["inspect", path_str(&plugin)], 1);
    assert_eq!(value["name"], "c_minimal");
    assert_eq!(value["sanitizer"], "address");
    // The loader's refusal in the one error shape every command uses.
    assert_eq!(value["ok"], false);
    assert_eq!(value["error"]["kind"], "incompatible", "{value}");
    let reason = value["error"].to_string();
    assert!(reason.contains("-fsanitize=address"), "{reason}");

    let check = json(&["check", path_str(&plugin)], 1);
    let header = check["checks"].as_array().unwrap().iter().find(|c| c["name"] == "header").unwrap();
    assert_eq!(header["ok"], false);
    assert!(header["detail"].as_str().unwrap().contains("address sanitizer"), "{header}");
}

#[test]
fn human_output_is_an_aligned_table_without_colour_when_piped() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = minimal_plugin(dir.path());
    // No NO_COLOR here: stdout is a pipe, which alone turns colour off.
    let output = Command::new(env!("CARGO_BIN_EXE_xplug"))
        .args(["resolve", "--plugin", path_str(&plugin), "c_add_i32", "?c_div_i32"])
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(!stdout.contains('\x1b'), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    let header = lines.iter().position(|l| l.starts_with("symbol")).expect("a symbol table");
    // Columns line up: "kind" starts at the same offset on every row.
    let column = lines[header].find("kind").unwrap();
    assert_eq!(&lines[header + 1][column..column + 8], "required");
    assert_eq!(&lines[header + 2][column..column + 8], "optional");
    assert!(lines[header + 1].contains("#0 c_minimal"), "{stdout}");
}

#[test]
fn check_of_a_missing_file_prints_an_error_object() {
    let value = json(&["check", "/nonexistent/libnothing.so"], 1);
    assert_eq!(value["ok"], false);
    assert_eq!(value["error"]["kind"], "plugin_file_not_found");
    assert!(value["error"]["message"].as_str().unwrap().contains("/nonexistent/libnothing.so"));
}

#[test]
fn every_command_reports_a_failure_in_one_json_shape() {
    let missing = "/nonexistent/libnothing.so";
    let commands: [&[&str]; 5] = [
        &["inspect", missing],
        &["check", missing],
        &["bench", missing, "f"],
        &["resolve", "--plugin", missing, "f"],
        &["call", missing, "f", "--hex", "00"],
    ];
    for command in commands {
        let value = json(command, 1);
        assert_eq!(value["ok"], false, "{command:?}: {value}");
        let error = value["error"].as_object().unwrap_or_else(|| panic!("{command:?}: {value}"));
        let mut keys: Vec<&str> = error.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["causes", "code", "fault", "kind", "message"], "{command:?}: {value}");
        assert_eq!(error["kind"], "plugin_file_not_found", "{command:?}: {value}");
        assert_eq!(error["code"], "NOT_FOUND", "{command:?}: {value}");
    }
}

#[test]
fn a_bare_library_name_is_searched_like_dlopen_searches() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = minimal_plugin(dir.path());
    let name = plugin.file_name().unwrap().to_str().unwrap();
    // Found through LD_LIBRARY_PATH, as `dlopen` finds it.
    let output = Command::new(env!("CARGO_BIN_EXE_xplug"))
        .args(["--json", "inspect", name])
        .env("LD_LIBRARY_PATH", dir.path())
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["name"], "c_minimal");
    // Not searched for in the current directory (as `dlopen`), and the
    // error says how to name a file there.
    let output = Command::new(env!("CARGO_BIN_EXE_xplug"))
        .args(["--json", "inspect", name])
        .env_remove("LD_LIBRARY_PATH")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["error"]["kind"], "plugin_file_not_found", "{value}");
    assert!(value["error"]["causes"].to_string().contains(&format!("./{name}")), "{value}");
    // `./NAME` is the file in the current directory.
    let output = Command::new(env!("CARGO_BIN_EXE_xplug"))
        .args(["--json", "inspect", &format!("./{name}")])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn run_refuses_two_outputs_naming_the_same_file_before_running() {
    let dir = tempfile::tempdir().unwrap();
    // No module is read: the clash is found first.
    let module = dir.path().join("absent.vmfb");
    let file = dir.path().join("out.json");
    let same =
        format!("{}/../{}/out.json", dir.path().display(), dir.path().file_name().unwrap().to_string_lossy());
    let existing = dir.path().join("existing.bin");
    std::fs::write(&existing, b"keep").unwrap();
    let link = dir.path().join("link.bin");
    std::os::unix::fs::symlink(&existing, &link).unwrap();
    let cases: [(Vec<String>, &str, &str); 4] = [
        (
            vec![format!("--profile-json={}", file.display()), format!("--profile-trace={}", file.display())],
            "--profile-json",
            "--profile-trace",
        ),
        (
            vec![format!("--profile-json={}", file.display()), format!("--profile-trace={same}")],
            "--profile-json",
            "--profile-trace",
        ),
        (
            vec![format!("--profile-trace={}", existing.display()), format!("--output=@{}", link.display())],
            "--profile-trace",
            "--output=@",
        ),
        (
            vec![format!("--output=+{}", file.display()), format!("--profile-json={}", file.display())],
            "--profile-json",
            "--output=+",
        ),
    ];
    for (flags, first, second) in cases {
        let mut args = vec!["run".to_owned(), module.display().to_string()];
        args.extend(flags);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let value = json(&args, 2);
        let message = value["error"]["message"].as_str().unwrap_or_default().to_owned();
        assert_eq!(value["error"]["kind"], "usage", "{value}");
        assert!(message.contains(first) && message.contains(second), "{args:?}: {message}");
        assert!(message.contains("name the same file"), "{message}");
    }
    assert_eq!(std::fs::read(&existing).unwrap(), b"keep", "nothing was written");
    assert!(!file.exists(), "nothing was written");
    // Several --output files may share one file, as iree-run-module allows:
    // the run goes on to read the module.
    let output = format!("--output=@{}", file.display());
    let append = format!("--output=+{}", file.display());
    let value = json(&["run", path_str(&module), &output, &append], 1);
    assert_ne!(value["error"]["kind"], "usage", "{value}");
}
