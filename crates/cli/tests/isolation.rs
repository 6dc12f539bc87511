//! `inspect`, `check` and `bench` survive plugins that crash or hang in
//! each entry point: the plugin runs in a child process, the report names
//! the signal or the timeout and the stage, and `--json` still prints
//! exactly one object.

use std::path::{Path, PathBuf};

use serde_json::Value;

mod common;
use common::{json, xplug};

/// The providers' configurable fault plugin.
fn configurable_source() -> PathBuf {
    xplug_fixtures::workspace_root().join("crates/providers/tests/c/configurable_plugin.c")
}

/// The configurable plugin built with `-D{flag}` into `dir`.
fn faulty_plugin(dir: &Path, name: &str, flag: &str) -> PathBuf {
    xplug_fixtures::build_c_plugin(&configurable_source(), dir, name, &[&format!("-D{flag}")])
}

/// Runs `xplug --json ARGS`, expects exit code 1 and exactly one JSON
/// object on stdout.
fn json_failure(args: &[&str]) -> Value {
    let value = json(args, 1);
    assert_eq!(value["ok"], false, "{value}");
    value
}

/// The first check whose fault is set.
fn first_fault(report: &Value) -> (String, Value, String) {
    let checks = report["checks"].as_array().expect("a checks array");
    let check = checks
        .iter()
        .find(|check| !check["fault"].is_null())
        .unwrap_or_else(|| panic!("no fault in {report}"));
    (
        check["name"].as_str().unwrap().to_owned(),
        check["fault"].clone(),
        check["detail"].as_str().unwrap().to_owned(),
    )
}

/// The first check that reaches each stage.
fn first_check_reaching(stage: &str) -> &'static str {
    match stage {
        "query" => "query-max-version-0",
        "load" | "unload" => "load-unload",
        "resolve" => "resolve-nothing",
        other => panic!("no check reaches {other}"),
    }
}

const STAGES: [&str; 4] = ["query", "load", "resolve", "unload"];

#[test]
fn check_reports_a_segfault_or_abort_in_each_entry_point() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, signal) in [("CRASH_IN", "SIGSEGV"), ("ABORT_IN", "SIGABRT")] {
        for stage in STAGES {
            let name = format!("{}_{stage}", flag.to_lowercase());
            let plugin = faulty_plugin(dir.path(), &name, &format!("{flag}={stage}"));
            let report = json_failure(&["check", plugin.to_str().unwrap()]);
            let (check, fault, detail) = first_fault(&report);
            assert_eq!(check, first_check_reaching(stage), "{report}");
            assert_eq!(fault["kind"], "crashed", "{report}");
            assert_eq!(fault["signal"], signal, "{report}");
            assert_eq!(fault["stage"], stage, "{report}");
            if signal == "SIGSEGV" {
                // The child's crash reporter names the faulting function.
                assert_eq!(fault["symbol"], "fault_point", "{report}");
                assert_eq!(fault["module"], format!("lib{name}.so"), "{report}");
                let offset = fault["offset"].as_u64().expect("an offset");
                assert_eq!(
                    detail,
                    format!(
                        "crashed with {signal} during {stage} at fault_point+{offset:#x} in lib{name}.so"
                    )
                );
            } else {
                // SIGABRT is not a fault the reporter handles.
                assert!(fault["symbol"].is_null(), "{report}");
                assert_eq!(detail, format!("crashed with {signal} during {stage}"));
            }
            // The checks before the fault still ran and passed.
            let checks = report["checks"].as_array().unwrap();
            assert_eq!(checks.len(), 12, "every check is reported");
            let before = checks.iter().take_while(|c| c["name"] != check.as_str());
            assert!(before.clone().all(|c| c["ok"] == true), "{report}");
        }
    }
}

#[test]
fn check_reports_a_hang_in_each_entry_point_and_skips_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    for stage in STAGES {
        let plugin = faulty_plugin(dir.path(), &format!("hang_{stage}"), &format!("HANG_IN={stage}"));
        let report = json_failure(&["check", "--timeout", "1", plugin.to_str().unwrap()]);
        let (check, fault, detail) = first_fault(&report);
        assert_eq!(check, first_check_reaching(stage), "{report}");
        assert_eq!(fault["kind"], "timed_out", "{report}");
        assert_eq!(fault["stage"], stage, "{report}");
        assert_eq!(detail, format!("did not return from {stage} within 1 s"));
        // One hang is waited for once: the checks after it are not run.
        let checks = report["checks"].as_array().unwrap();
        let after: Vec<&Value> = checks.iter().skip_while(|c| c["name"] != check.as_str()).skip(1).collect();
        assert!(!after.is_empty());
        assert!(
            after.iter().all(|c| c["outcome"] == "skip"
                && c["detail"].as_str().unwrap().starts_with("skipped: not run: the plugin did not return")),
            "{report}"
        );
    }
}

#[test]
fn inspect_and_bench_report_a_crash_as_one_json_error() {
    let dir = tempfile::tempdir().unwrap();
    let load = faulty_plugin(dir.path(), "crash_load", "CRASH_IN=load");
    let value = json_failure(&["inspect", load.to_str().unwrap()]);
    assert_eq!(value["error"]["kind"], "plugin_crashed", "{value}");
    assert_eq!(value["error"]["fault"]["signal"], "SIGSEGV");
    assert_eq!(value["error"]["fault"]["stage"], "load");
    assert!(
        value["error"]["message"].as_str().unwrap().contains("crashed with SIGSEGV during load"),
        "{value}"
    );

    let resolve = faulty_plugin(dir.path(), "abort_resolve", "ABORT_IN=resolve");
    let value = json_failure(&["bench", "--runs", "1", resolve.to_str().unwrap(), "f_add"]);
    assert_eq!(value["error"]["kind"], "plugin_crashed", "{value}");
    assert_eq!(value["error"]["fault"]["signal"], "SIGABRT");
    assert_eq!(value["error"]["fault"]["stage"], "resolve");

    let hang = faulty_plugin(dir.path(), "hang_load", "HANG_IN=load");
    let value = json_failure(&["inspect", "--timeout", "1", hang.to_str().unwrap()]);
    assert_eq!(value["error"]["kind"], "plugin_timed_out", "{value}");
    assert_eq!(value["error"]["code"], "DEADLINE_EXCEEDED");
    assert!(
        value["error"]["message"].as_str().unwrap().contains("did not return from load within 1 s"),
        "{value}"
    );
}

#[test]
fn human_output_names_the_signal_and_stage() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = faulty_plugin(dir.path(), "crash_unload", "CRASH_IN=unload");
    let output = xplug(&["inspect", plugin.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("crashed with SIGSEGV during unload at fault_point+0x"), "{stderr}");
    let output = xplug(&["check", plugin.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("crashed with SIGSEGV during unload at fault_point+0x"), "{stdout}");
}

/// The fault of the first check that crashed, and its detail.
fn crash_fault(plugin: &Path) -> (Value, String) {
    let report = json_failure(&["check", plugin.to_str().unwrap()]);
    let (_, fault, detail) = first_fault(&report);
    assert_eq!(fault["kind"], "crashed", "{report}");
    assert_eq!(fault["signal"], "SIGSEGV", "{report}");
    (fault, detail)
}

#[test]
fn check_names_the_function_a_c_library_crashes_in() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = xplug_fixtures::build_crash_c_plugin(dir.path(), false);
    let (fault, detail) = crash_fault(&plugin);
    assert_eq!(fault["stage"], "resolve");
    assert_eq!(fault["symbol"], "crashy_resolve", "{fault}");
    assert_eq!(fault["module"], "libcrash_c.so", "{fault}");
    assert_eq!(fault["data_address"], "0x10", "{fault}");
    assert!(fault["address"].as_str().unwrap().starts_with("0x"), "{fault}");
    assert!(fault["called_from"].is_null(), "{fault}");
    let offset = fault["offset"].as_u64().unwrap();
    assert!(offset > 0, "the store is not the function's first instruction: {fault}");
    assert_eq!(
        detail,
        format!("crashed with SIGSEGV during resolve at crashy_resolve+{offset:#x} in libcrash_c.so")
    );
}

#[test]
fn a_crash_in_libc_names_the_library_and_the_plugin_function_that_called_it() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = xplug_fixtures::build_crash_c_plugin(dir.path(), true);
    let (fault, detail) = crash_fault(&plugin);
    assert!(fault["module"].as_str().unwrap().starts_with("libc"), "{fault}");
    let caller = &fault["called_from"];
    assert_eq!(caller["symbol"], "crashy_resolve", "{fault}");
    assert_eq!(caller["module"], "libcrash_c_libc.so", "{fault}");
    assert_eq!(caller["plugin"], true, "{fault}");
    assert!(
        detail.contains(&format!(
            ", called from the plugin's crashy_resolve+{:#x} in libcrash_c_libc.so",
            caller["offset"].as_u64().unwrap()
        )),
        "{detail}"
    );
}

#[test]
fn check_names_the_function_an_embedded_elf_plugin_crashes_in() {
    let plugin = xplug_fixtures::build_rust_sos_plugin("crash_plugin");
    let (fault, detail) = crash_fault(&plugin);
    assert_eq!(fault["stage"], "load");
    assert_eq!(fault["symbol"], "crash_plugin_load", "{fault}");
    assert_eq!(fault["module"], "crash_plugin.sos", "{fault}");
    let offset = fault["offset"].as_u64().unwrap();
    assert_eq!(
        detail,
        format!("crashed with SIGSEGV during load at crash_plugin_load+{offset:#x} in crash_plugin.sos")
    );
    // The same in the human report.
    let output = xplug(&["check", plugin.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("crashed with SIGSEGV during load at crash_plugin_load+0x"), "{stdout}");
}

#[test]
#[cfg(unix)]
fn in_process_keeps_the_old_behaviour() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let plugin = faulty_plugin(dir.path(), "crash_load", "CRASH_IN=load");
    let output = xplug(&["--in-process", "inspect", plugin.to_str().unwrap()]);
    assert_eq!(output.status.signal(), Some(libc_sigsegv()), "the plugin's crash is the tool's crash");
    // A good plugin is the same either way.
    let good = xplug_fixtures::build_minimal_c_plugin(dir.path());
    let isolated = xplug(&["--json", "inspect", good.to_str().unwrap()]);
    let in_process = xplug(&["--json", "--in-process", "inspect", good.to_str().unwrap()]);
    assert_eq!(isolated.status.code(), Some(0));
    assert_eq!(isolated.stdout, in_process.stdout);
}

/// SIGSEGV's number (11 on every Linux and BSD target).
fn libc_sigsegv() -> i32 {
    11
}
