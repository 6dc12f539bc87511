//! `inspect`, `check`, `bench` and `call` survive plugins that crash, hang
//! or end the process in each entry point: the plugin runs in a child
//! process, the report names the signal, the timeout or the exit status and
//! the stage, and `--json` still prints exactly one object. The child and
//! what its plugin forks die with xplug (timeout, SIGTERM, SIGINT, SIGKILL)
//! and leave no stage file; a daemon that left the child's process group
//! cannot hold xplug.

use std::path::{Path, PathBuf};

use serde_json::Value;
#[cfg(target_os = "linux")]
use xplug_fixtures::process::{dies, is_dead, kill_survivors};

mod common;
use common::{json, xplug};

/// The providers' configurable fault plugin.
fn configurable_source() -> PathBuf {
    xplug_fixtures::workspace_root().join("crates/providers/tests/c/configurable_plugin.c")
}

/// The configurable plugin built with `-D{flag}` for each of `flags` into
/// `dir/lib{name}.so`.
fn faulty_plugin(dir: &Path, name: &str, flags: &[&str]) -> PathBuf {
    let flags: Vec<String> = flags.iter().map(|flag| format!("-D{flag}")).collect();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    xplug_fixtures::build_c_plugin(&configurable_source(), dir, name, &flags)
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
            let plugin = faulty_plugin(dir.path(), &name, &[&format!("{flag}={stage}")]);
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
        let plugin = faulty_plugin(dir.path(), &format!("hang_{stage}"), &[&format!("HANG_IN={stage}")]);
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
    let load = faulty_plugin(dir.path(), "crash_load", &["CRASH_IN=load"]);
    let value = json_failure(&["inspect", load.to_str().unwrap()]);
    assert_eq!(value["error"]["kind"], "plugin_crashed", "{value}");
    assert_eq!(value["error"]["fault"]["signal"], "SIGSEGV");
    assert_eq!(value["error"]["fault"]["stage"], "load");
    assert!(
        value["error"]["message"].as_str().unwrap().contains("crashed with SIGSEGV during load"),
        "{value}"
    );

    let resolve = faulty_plugin(dir.path(), "abort_resolve", &["ABORT_IN=resolve"]);
    let value = json_failure(&["bench", "--runs", "1", resolve.to_str().unwrap(), "f_add"]);
    assert_eq!(value["error"]["kind"], "plugin_crashed", "{value}");
    assert_eq!(value["error"]["fault"]["signal"], "SIGABRT");
    assert_eq!(value["error"]["fault"]["stage"], "resolve");

    let hang = faulty_plugin(dir.path(), "hang_load", &["HANG_IN=load"]);
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
    let plugin = faulty_plugin(dir.path(), "crash_unload", &["CRASH_IN=unload"]);
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
    let plugin = faulty_plugin(dir.path(), "crash_load", &["CRASH_IN=load"]);
    let output = xplug(&["--in-process", "inspect", plugin.to_str().unwrap()]);
    assert_eq!(output.status.signal(), Some(libc_sigsegv()), "the plugin's crash is the tool's crash");
    // A good plugin is the same either way.
    let good = xplug_fixtures::build_minimal_c_plugin(dir.path());
    let isolated = xplug(&["--json", "inspect", good.to_str().unwrap()]);
    let in_process = xplug(&["--json", "--in-process", "inspect", good.to_str().unwrap()]);
    assert_eq!(isolated.status.code(), Some(0));
    assert_eq!(isolated.stdout, in_process.stdout);
}

/// A plugin that floods stderr past the probe's limit: xplug passes on
/// the first 16 MiB, says how much it dropped, and the report is intact.
#[test]
fn a_flood_of_plugin_output_is_cut_and_said_so() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = faulty_plugin(dir.path(), "flood", &["STDERR_MIB=18"]);
    let output = xplug(&["--json", "inspect", plugin.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stdout));
    let report: Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    assert_eq!(report["ok"], true, "{report}");
    let limit = xplug_probe::OUTPUT_LIMIT;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let note = stderr.lines().last().expect("stderr ends with the note");
    // 18 MiB of lines were written; xplug keeps the first 16 MiB.
    let dropped = (18usize << 20) - limit;
    assert_eq!(
        note,
        format!(
            "xplug: the plugin's child process wrote {dropped} bytes to stderr beyond the 16 MiB xplug keeps; they \
             were dropped, so its stderr above is cut off"
        )
    );
    assert_eq!(output.stderr.len(), limit + note.len() + 1, "16 MiB of the plugin's stderr, then the note");
}

/// SIGSEGV's number (11 on every Linux and BSD target).
fn libc_sigsegv() -> i32 {
    11
}

/// The arguments that call the configurable plugin's `f_add` at `plugin`.
fn call_args(plugin: &Path) -> Vec<&str> {
    vec![
        "call",
        plugin.to_str().unwrap(),
        "f_add",
        "--field",
        "i32:2",
        "--field",
        "i32:3",
        "--field",
        "i32:0",
    ]
}

/// The commands that reach `stage` of a plugin, with their arguments.
fn commands_reaching<'a>(stage: &str, plugin: &'a Path) -> Vec<Vec<&'a str>> {
    let mut commands = vec![call_args(plugin)];
    if stage != "call" {
        commands.push(vec!["check", plugin.to_str().unwrap()]);
        commands.push(vec!["bench", "--runs", "1", plugin.to_str().unwrap(), "f_add"]);
    }
    if stage == "load" || stage == "unload" {
        commands.push(vec!["inspect", plugin.to_str().unwrap()]);
    }
    commands
}

#[test]
fn a_plugin_that_ends_the_process_is_a_failure_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    for stage in ["load", "resolve", "call", "unload"] {
        let plugin = faulty_plugin(dir.path(), &format!("exit_{stage}"), &[&format!("EXIT_IN={stage}")]);
        let expected = format!("ended the process with status 0 during {stage}");
        for args in commands_reaching(stage, &plugin) {
            let report = json_failure(&args);
            let fault = if args[0] == "check" {
                let (check, fault, detail) = first_fault(&report);
                assert_eq!(check, first_check_reaching(stage), "{report}");
                assert_eq!(detail, expected, "{report}");
                fault
            } else {
                assert_eq!(report["error"]["kind"], "plugin_exited", "{args:?}: {report}");
                let message = report["error"]["message"].as_str().unwrap();
                assert!(message.contains(&expected), "{args:?}: {report}");
                report["error"]["fault"].clone()
            };
            assert_eq!(fault["kind"], "exited", "{args:?}: {report}");
            assert_eq!(fault["stage"], stage, "{args:?}: {report}");
            assert_eq!(fault["exit_code"], 0, "{args:?}: {report}");

            // The human report: exit code 1 and the same words.
            let output = xplug(&args);
            assert_eq!(output.status.code(), Some(1), "{args:?}: {output:?}");
            let text = [output.stdout, output.stderr].concat();
            let text = String::from_utf8_lossy(&text);
            assert!(text.contains(&expected), "{args:?}: {text}");
        }
    }
    // Any status: the plugin's exit is not the tool's verdict.
    let plugin = faulty_plugin(dir.path(), "exit_3_load", &["EXIT_IN=load", "EXIT_STATUS=3"]);
    let report = json_failure(&["inspect", plugin.to_str().unwrap()]);
    assert_eq!(report["error"]["fault"]["exit_code"], 3, "{report}");
    assert!(
        report["error"]["message"].as_str().unwrap().contains("ended the process with status 3 during load"),
        "{report}"
    );
}

/// The pids the configurable plugin's sleepers wrote to `file`.
#[cfg(target_os = "linux")]
fn recorded_pids(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// The living children of process `parent`, from `/proc`.
#[cfg(target_os = "linux")]
fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                // "pid (comm) S ppid ...".
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(parent)
            })
        })
        .filter(|&pid| !is_dead(pid))
        .collect()
}

/// An `xplug ARGS` command that records the plugin's sleepers in
/// `pid_file` and makes its temporary files in `tmp`.
#[cfg(target_os = "linux")]
fn pid_recording_command(args: &[&str], pid_file: &Path, tmp: &Path) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_xplug"));
    command
        .args(args)
        .env("NO_COLOR", "1")
        .env("CONFIGURABLE_PLUGIN_PID_FILE", pid_file)
        .env("TMPDIR", tmp)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    command
}

#[test]
#[cfg(target_os = "linux")]
fn a_hang_in_each_entry_point_times_out_and_kills_what_the_plugin_forked() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // (stage, how the plugin forks): a sleeper in the child's group in each
    // entry point, and a daemon outside it in the import call.
    let cases = [
        ("load", "FORK_IN"),
        ("resolve", "FORK_IN"),
        ("call", "FORK_IN"),
        ("unload", "FORK_IN"),
        ("call", "DAEMON_IN"),
    ];
    let runs: Vec<_> = cases
        .into_iter()
        .map(|(stage, forks)| {
            let name = format!("{}_hang_{stage}", forks.to_lowercase());
            let plugin =
                faulty_plugin(dir.path(), &name, &[&format!("HANG_IN={stage}"), &format!("{forks}={stage}")]);
            let pid_file = dir.path().join(format!("{name}.pids"));
            let mut args = vec!["--json", "--timeout", "1"];
            args.extend(call_args(&plugin));
            // Both keep xplug's pipes open: without the group kill and the
            // bounded read, xplug would wait for them (120 s).
            let command = pid_recording_command(&args, &pid_file, tmp.path());
            std::thread::spawn(move || {
                let mut command = command;
                (stage, forks, command.output().unwrap(), recorded_pids(&pid_file))
            })
        })
        .collect();
    for run in runs {
        let (stage, forks, output, pids) = run.join().unwrap();
        let [forked] = pids[..] else { panic!("one forked process ({stage}, {forks}): {output:?}") };
        let alive = !is_dead(forked);
        let died = dies(forked);
        kill_survivors(&[forked]);
        assert_eq!(output.status.code(), Some(1), "{output:?}");
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(report["error"]["kind"], "plugin_timed_out", "{report}");
        assert_eq!(report["error"]["fault"]["stage"], stage, "{report}");
        let message = report["error"]["message"].as_str().unwrap();
        assert!(message.contains(&format!("did not return from {stage} within 1 s")), "{report}");
        if forks == "FORK_IN" {
            assert!(died, "the plugin's forked process {forked} outlived the timeout ({stage})");
        } else {
            // Out of the group's reach, and xplug did not wait for it.
            assert!(alive, "the daemon lived on after xplug returned");
        }
    }
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "a stage file was left");
}

#[test]
#[cfg(target_os = "linux")]
fn what_a_plugin_forks_dies_with_the_probe_child_but_a_daemon_is_out_of_reach() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // In the group: killed when the child ends, and the report is complete.
    let pid_file = dir.path().join("fork_pids");
    let plugin = faulty_plugin(dir.path(), "fork_load", &["FORK_IN=load"]);
    let output =
        pid_recording_command(&["--json", "inspect", plugin.to_str().unwrap()], &pid_file, tmp.path())
            .output()
            .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["name"], "configurable", "{report}");
    let [sleeper] = recorded_pids(&pid_file)[..] else { panic!("one sleeper") };
    let died = dies(sleeper);
    kill_survivors(&[sleeper]);
    assert!(died, "the plugin's forked process {sleeper} outlived the probe child");

    // A daemon (setsid) left the group: the probe still returns with the
    // whole report, and the daemon lives on (the test ends it).
    let pid_file = dir.path().join("daemon_pids");
    let plugin = faulty_plugin(dir.path(), "daemon_load", &["DAEMON_IN=load"]);
    let output =
        pid_recording_command(&["--json", "inspect", plugin.to_str().unwrap()], &pid_file, tmp.path())
            .output()
            .unwrap();
    let [daemon] = recorded_pids(&pid_file)[..] else { panic!("one daemon") };
    let daemon_alive = !is_dead(daemon);
    kill_survivors(&[daemon]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["name"], "configurable", "{report}");
    assert!(daemon_alive, "the daemon is out of the probe's reach, as documented");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "a stage file was left");
}

/// Starts `xplug inspect` on a plugin that forks a sleeper and hangs in
/// load, waits until both are there, sends `signal` to xplug and returns
/// how xplug ended, its probe child and the sleeper.
#[cfg(target_os = "linux")]
fn signal_while_hanging(signal: i32) -> (std::process::ExitStatus, u32, u32) {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let plugin = faulty_plugin(dir.path(), "fork_hang_load", &["FORK_IN=load", "HANG_IN=load"]);
    let mut command = pid_recording_command(
        &["--timeout", "120", "inspect", plugin.to_str().unwrap()],
        &pid_file,
        tmp.path(),
    );
    // SAFETY: between fork and exec, `signal` is async-signal-safe; the
    // test harness may run with SIGINT ignored (a background job), which
    // xplug would inherit and, rightly, keep.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut xplug = command.spawn().unwrap();
    let ready = (0..3000).find_map(|_| {
        let sleepers = recorded_pids(&pid_file);
        let children = children_of(xplug.id());
        if let ([sleeper], [child]) = (&sleepers[..], &children[..]) {
            return Some((*child, *sleeper));
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        None
    });
    let Some((child, sleeper)) = ready else {
        let _ = xplug.kill();
        panic!("the probe child never reached load");
    };
    // SAFETY: `kill` has no memory preconditions; the pid is our child's.
    unsafe { libc::kill(i32::try_from(xplug.id()).unwrap(), signal) };
    let status = xplug.wait().unwrap();
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "a stage file was left");
    (status, child, sleeper)
}

#[test]
#[cfg(target_os = "linux")]
fn sigterm_and_sigint_to_xplug_kill_its_probe_child_and_what_it_started() {
    use std::os::unix::process::ExitStatusExt;
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let (status, child, sleeper) = signal_while_hanging(signal);
        // xplug itself ends of the signal, as without a probe.
        let (child_died, sleeper_died) = (dies(child), dies(sleeper));
        kill_survivors(&[child, sleeper]);
        assert_eq!(status.signal(), Some(signal), "{status:?}");
        assert!(child_died, "probe child {child} outlived xplug (signal {signal})");
        assert!(sleeper_died, "process {sleeper} of the probe's group outlived xplug (signal {signal})");
    }
}

#[test]
#[cfg(target_os = "linux")]
fn the_probe_child_dies_with_a_killed_xplug() {
    use std::os::unix::process::ExitStatusExt;
    let (status, child, sleeper) = signal_while_hanging(libc::SIGKILL);
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    // PR_SET_PDEATHSIG: the child goes with its parent. What the child
    // forked had no such tie (nothing runs in a SIGKILLed xplug to kill
    // it); the test ends it.
    let child_died = dies(child);
    kill_survivors(&[child, sleeper]);
    assert!(child_died, "probe child {child} outlived a SIGKILLed xplug");
}
