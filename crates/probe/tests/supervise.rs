//! `xplug_probe::supervise`: work in a forked child, its end reported.
//! Forking needs a process with one thread, so this test has no libtest
//! harness (whose runner starts threads): `main` runs each case in turn
//! and panics on the first that fails.
#![cfg(target_os = "linux")]

use std::time::Duration;

use xplug_probe::{ProbeFailure, ProbeStatus, Stage, supervise};

fn main() {
    // The child's value is the exit code, and the child ran in another
    // process (what it changes here is not seen here).
    let parent = std::process::id();
    let mut seen_here = false;
    let output = supervise(|| {
        seen_here = true;
        u8::from(std::process::id() == parent)
    })
    .expect("a supervised child");
    assert_eq!(output.status, ProbeStatus::Exited(0), "{output:?}");
    assert!(!seen_here, "the work ran in this process");
    assert!(output.stdout.is_empty() && output.stderr.is_empty());
    println!("exit code passes through: ok");

    // Marks reach the parent through the child's stage file: the last one
    // names where a crash happened.
    let output = supervise(|| {
        xplug_probe::mark(Stage::Call);
        // SAFETY: `signal` and `raise` have no memory preconditions: the
        // default action is back (Rust's handler lets raised signals
        // through), then the child dies of SIGSEGV.
        unsafe {
            libc::signal(libc::SIGSEGV, libc::SIG_DFL);
            libc::raise(libc::SIGSEGV);
        }
        0
    })
    .expect("a supervised child");
    match output.status {
        ProbeStatus::Failed(ProbeFailure::Crashed { signal, stage, .. }) => {
            assert_eq!(signal.name(), Some("SIGSEGV"));
            assert_eq!(stage, Some(Stage::Call));
        }
        other => panic!("a crash, reported: {other:?}"),
    }
    println!("a crash is reported with its stage: ok");

    // Work that ends the process itself never marked its end.
    let output = supervise(|| std::process::exit(3)).expect("a supervised child");
    assert!(matches!(output.status, ProbeStatus::Failed(ProbeFailure::Exited { code: 3, .. })), "{output:?}");
    println!("an exit before the work returned is reported: ok");

    // A panic ends the child as a panicking `main` ends a process (its
    // message kept off the test's output).
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let output = supervise(|| panic!("in the child")).expect("a supervised child");
    std::panic::set_hook(hook);
    assert_eq!(output.status, ProbeStatus::Exited(101), "{output:?}");
    println!("a panic exits with 101: ok");

    // With a second thread, nothing is forked.
    let sleeper = std::thread::spawn(|| std::thread::sleep(Duration::from_millis(500)));
    let error = supervise(|| 0).expect_err("a process with two threads does not fork");
    assert!(error.to_string().contains("2 threads"), "{error}");
    sleeper.join().unwrap();
    println!("a threaded process is refused: ok");
}
