//! The parent's signal handler, exercised in this process: a SIGTERM that
//! arrives while a probe runs kills the probe's process group, then reaches
//! the disposition that was there before (here a handler of the test's, so
//! the test survives it); an ignored signal stays ignored; both are back as
//! they were when the probe ends. One test: dispositions are per process.
#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use xplug_fixtures::process::dies;
use xplug_probe::{Probe, ProbeFailure, Signal};

/// The signal the test's own handler caught.
static CAUGHT: AtomicI32 = AtomicI32::new(0);

extern "C" fn previous_handler(signal: libc::c_int) {
    CAUGHT.store(signal, Ordering::SeqCst);
}

/// The handler address installed for `signal`.
fn disposition(signal: libc::c_int) -> libc::sighandler_t {
    // SAFETY: an all-zero sigaction is a valid value of this plain C struct.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: only reads the disposition into `action`.
    assert_eq!(unsafe { libc::sigaction(signal, std::ptr::null(), &mut action) }, 0);
    action.sa_sigaction
}

/// Installs `handler` for `signal`.
fn set_disposition(signal: libc::c_int, handler: libc::sighandler_t) {
    // SAFETY: an all-zero sigaction is a valid value of this plain C struct.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = handler;
    // SAFETY: `action` is valid; `handler` is SIG_DFL, SIG_IGN or an
    // async-signal-safe `extern "C" fn(c_int)` (one atomic store).
    assert_eq!(unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) }, 0);
}

fn pids(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file).unwrap_or_default().lines().filter_map(|line| line.parse().ok()).collect()
}

#[test]
fn sigterm_during_a_probe_kills_its_group_then_reaches_the_previous_disposition() {
    let mine = previous_handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
    set_disposition(libc::SIGTERM, mine);
    set_disposition(libc::SIGINT, libc::SIG_IGN);

    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let mut command = Command::new("sh");
    command.args(["-c", "sleep 1000 & echo $! >> \"$PIDS\"; echo $$ >> \"$PIDS\"; exec sleep 1000"]);
    command.env("PIDS", &pid_file);
    // The timeout bounds a test gone wrong; the signal ends the probe.
    let probe = std::thread::spawn(move || Probe::new(command).timeout(Duration::from_secs(60)).run());
    let running = (0..3000).any(|_| {
        if pids(&pid_file).len() == 2 {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
        false
    });
    assert!(running, "the probe child did not start");
    assert_ne!(disposition(libc::SIGTERM), mine, "the probe's handler is installed while it runs");
    assert_eq!(disposition(libc::SIGINT), libc::SIG_IGN, "an ignored signal stays ignored");

    // SAFETY: `raise` has no memory preconditions.
    assert_eq!(unsafe { libc::raise(libc::SIGTERM) }, 0);
    let output = probe.join().unwrap().unwrap();

    assert_eq!(CAUGHT.load(Ordering::SeqCst), libc::SIGTERM, "the previous handler got the signal");
    assert_eq!(
        output.failure(),
        Some(&ProbeFailure::Crashed { signal: Signal(libc::SIGKILL), stage: None, site: None })
    );
    for pid in pids(&pid_file) {
        assert!(dies(pid), "process {pid} of the probe's group survived the SIGTERM");
    }
    assert_eq!(disposition(libc::SIGTERM), mine, "the previous disposition is back");
    assert_eq!(disposition(libc::SIGINT), libc::SIG_IGN);
    set_disposition(libc::SIGTERM, libc::SIG_DFL);
    set_disposition(libc::SIGINT, libc::SIG_DFL);
}
