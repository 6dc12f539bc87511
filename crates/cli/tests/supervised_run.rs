//! `xplug run`'s supervised child: signals meant for the run reach the
//! program and end xplug the same way, and a debugger attached to xplug
//! gets the program in its own process. The program here reads its module
//! from stdin (`--module=-`), which the test keeps open, so the child is
//! still running when the signal comes.
#![cfg(target_os = "linux")]

use std::io::Read as _;
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use xplug_fixtures::process::dies;

/// `xplug run --module=-` with stdin a pipe the test holds open, started
/// in a process group of its own with the default actions of SIGINT and
/// SIGTERM (as a shell starts a foreground job; a test run started in the
/// background of a non-interactive shell inherits SIGINT ignored).
fn blocked_run() -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_xplug"));
    command
        .args(["run", "--module=-", "--function=main"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    let defaults = || {
        for signal in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: `signal` is async-signal-safe and takes no pointer;
            // SIG_DFL is a valid disposition for both signals.
            if unsafe { libc::signal(signal, libc::SIG_DFL) } == libc::SIG_ERR {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    };
    // SAFETY: between `fork` and `exec` the closure calls only `signal`
    // (async-signal-safe) and allocates nothing.
    unsafe { command.pre_exec(defaults) };
    command.spawn().expect("the xplug binary runs")
}

/// The pid of `parent`'s one child process, once it has started: the
/// supervised child, `xplug run` forked.
fn supervised_child(parent: u32) -> u32 {
    let children = format!("/proc/{parent}/task/{parent}/children");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let listed = std::fs::read_to_string(&children).unwrap_or_default();
        if let Some(pid) = listed.split_whitespace().next().and_then(|pid| pid.parse::<u32>().ok()) {
            return pid;
        }
        assert!(Instant::now() < deadline, "xplug run started no supervised child");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Sends `signal` to `target` (a pid, or `-pgid`).
fn send(target: i32, signal: libc::c_int) {
    // SAFETY: `kill` has no memory preconditions.
    assert_eq!(unsafe { libc::kill(target, signal) }, 0, "kill({target}, {signal})");
}

/// SIGTERM to xplug alone (a service manager's stop) kills the running
/// program, then ends xplug by SIGTERM; Ctrl-C (SIGINT to the whole
/// foreground job) ends both, xplug by SIGINT. Neither is reported as a
/// crash of the program.
#[test]
fn sigterm_and_ctrl_c_end_the_program_and_xplug_alike() {
    for (signal, whole_group) in [(libc::SIGTERM, false), (libc::SIGINT, true)] {
        let mut run = blocked_run();
        let parent = run.id();
        let child = supervised_child(parent);
        let target = i32::try_from(parent).unwrap();
        send(if whole_group { -target } else { target }, signal);
        let status = run.wait().unwrap();
        let mut stderr = String::new();
        run.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        assert_eq!(status.signal(), Some(signal), "xplug ends by the signal: {status:?}, {stderr}");
        assert!(dies(child), "the supervised child {child} outlived xplug");
        assert!(!stderr.contains("crashed"), "a request to end is not a crash: {stderr}");
    }
}

/// Under a tracer (`strace`, a debugger) xplug runs the program in its own
/// process: no supervised child is started.
#[test]
fn under_a_tracer_the_program_runs_in_xplugs_process() {
    if Command::new("strace").arg("-V").output().is_err() {
        eprintln!("strace is not installed: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("strace.log");
    // `-f`: the log shows any process xplug starts.
    let output = Command::new("strace")
        .arg("-f")
        .arg("-e")
        .arg("trace=execve")
        .arg("-o")
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_xplug"))
        .args(["run", "--module=-", "--function=main"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "an empty module is refused: {output:?}");
    let traced = std::fs::read_to_string(&log).unwrap();
    let execs = traced.lines().filter(|line| line.contains("execve(")).count();
    assert_eq!(execs, 1, "only xplug itself is executed under a tracer:\n{traced}");
    let processes = traced.lines().filter(|line| line.contains("+++ exited")).count();
    assert_eq!(processes, 1, "no supervised child under a tracer:\n{traced}");
}

/// Without a tracer the supervised child is xplug forked: nothing is
/// executed again (`strace` would make xplug run in process, so the count
/// comes from the kernel: the parent's one child runs the same binary and
/// was never given `--in-process`).
#[test]
fn the_supervised_child_is_xplug_forked_not_run_again() {
    let mut run = blocked_run();
    let parent = run.id();
    let child = supervised_child(parent);
    let read = |pid: u32, what: &str| std::fs::read(format!("/proc/{pid}/{what}")).unwrap();
    assert_eq!(read(child, "cmdline"), read(parent, "cmdline"), "the child is a copy of xplug, not re-run");
    assert_eq!(
        std::fs::read_link(format!("/proc/{child}/exe")).unwrap(),
        std::fs::read_link(format!("/proc/{parent}/exe")).unwrap()
    );
    drop(run.stdin.take());
    let status = run.wait().unwrap();
    assert_eq!(status.code(), Some(1), "an empty module is refused: {status:?}");
}

/// The child's exit code is xplug's, unchanged: a usage error found while
/// running (exit 2) stays 2, a refused module 1, and neither is a crash.
#[test]
fn the_programs_exit_code_passes_through() {
    for (device, code) in [("--device=bogus", 2), ("--device=local-sync", 1)] {
        let output = Command::new(env!("CARGO_BIN_EXE_xplug"))
            .args(["run", "--module=-", "--function=main", device])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "{device}: {stderr}");
        assert!(!stderr.contains("crashed"), "{stderr}");
    }
}
