//! Human output: the tables, colours, escaping and durations of
//! [`xplug_table`] (shared with `xtask`), progress on stderr, and the
//! single JSON object of `--json`.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

pub use xplug_table::{Style, Table, colour_stderr, colour_stdout, format_ns, safe, terminal_safe};

/// The first error a write to stdout met, kept for [`take_stdout_error`].
static STDOUT_ERROR: std::sync::Mutex<Option<std::io::Error>> = std::sync::Mutex::new(None);

/// Lets a closed pipe end the process as it ends a C tool such as
/// `iree-run-module`: killed by `SIGPIPE`, without a message. Rust starts
/// programs with `SIGPIPE` ignored, so that a write to a closed pipe
/// returns an error instead (which `println!` turns into a panic).
/// `xplug`'s `main` calls this first.
pub fn die_on_closed_pipe() {
    // SAFETY: `signal` with a valid signal number and `SIG_DFL` only
    // changes this process's disposition; no handler runs Rust code.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// Writes `bytes` to stdout through C's stdio (`crate::stdio`, private), the
/// stream `iree-run-module` and the plugins it runs share, so that a C
/// plugin's `printf` lines and xplug's output come out in IREE's order.
/// Whatever Rust's own stdout still holds is written out first. C
/// buffers the bytes (by line on a terminal) until [`flush_stdout`], which
/// `xplug run` calls where `iree-run-module` flushes (after `EXEC @fn`) and
/// `main` calls last, to write out the rest and report a failure.
/// When stdout is a closed pipe (and `SIGPIPE` is blocked, so the write
/// returned instead of ending the process), the process ends quietly with
/// the shell's status for `SIGPIPE` (141).
///
/// # Errors
/// Any other write error (`/dev/full`: no space left) that a write of a
/// full buffer met.
pub fn write_stdout(bytes: &[u8]) -> std::io::Result<()> {
    let written = std::io::stdout().lock().flush().and_then(|()| crate::stdio::write(bytes));
    exit_on_closed_pipe(&written);
    written
}

/// Writes out what C's stdout (and Rust's) still buffers. `main` calls it
/// last and turns an error into a failing exit: the error of a buffered
/// write is seen only there.
///
/// # Errors
/// The write error (`/dev/full`: no space left).
pub fn flush_stdout() -> std::io::Result<()> {
    let flushed = std::io::stdout().lock().flush().and_then(|()| crate::stdio::flush());
    exit_on_closed_pipe(&flushed);
    flushed
}

fn exit_on_closed_pipe(result: &std::io::Result<()>) {
    if let Err(error) = result
        && error.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(141);
    }
}

/// Prints `value` as the one JSON object of a `--json` run. A failed
/// write is kept for [`take_stdout_error`], which `main` turns into a
/// failing exit.
pub fn print_json(value: &serde_json::Value) {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".to_owned());
    text.push('\n');
    // Written out at once: the one object is all of stdout, and an error
    // (a closed pipe) must end the process before anything reaches stderr.
    if let Err(error) = write_stdout(text.as_bytes()).and_then(|()| flush_stdout()) {
        STDOUT_ERROR.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get_or_insert(error);
    }
}

/// The error the first failed [`print_json`] met, if any (taken: a second
/// call returns `None`).
pub fn take_stdout_error() -> Option<std::io::Error> {
    STDOUT_ERROR.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
}

/// Set while a progress line is on stderr, so it can be cleared.
static PROGRESS_SHOWN: AtomicBool = AtomicBool::new(false);

/// A progress indicator on stderr that appears only when its phase lasts
/// longer than a second, and disappears (on a terminal) when it ends.
#[derive(Debug)]
pub struct Progress {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// Starts watching a phase called `label`.
    pub fn start(label: &str) -> Self {
        let (stop, stopped) = mpsc::channel::<()>();
        let label = label.to_owned();
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            let terminal = std::io::stderr().is_terminal();
            let mut wait = Duration::from_secs(1);
            let spinner = ['|', '/', '-', '\\'];
            let mut tick = 0usize;
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(wait) {
                let elapsed = started.elapsed().as_secs_f64();
                let mut stderr = std::io::stderr().lock();
                if terminal {
                    let _ = write!(stderr, "\r{} {label}... {elapsed:.1}s ", spinner[tick % spinner.len()]);
                    PROGRESS_SHOWN.store(true, Ordering::Relaxed);
                    wait = Duration::from_millis(200);
                } else if tick == 0 {
                    // Not a terminal: one line, no carriage returns.
                    let _ = writeln!(stderr, "{label}... (still running after {elapsed:.0}s)");
                    wait = Duration::from_secs(3600);
                }
                let _ = stderr.flush();
                tick += 1;
            }
            if terminal && PROGRESS_SHOWN.swap(false, Ordering::Relaxed) {
                let _ = write!(std::io::stderr(), "\r\x1b[2K");
            }
        });
        Self { stop: Some(stop), thread: Some(thread) }
    }

    /// Ends the phase and clears the indicator.
    pub fn finish(mut self) {
        self.end();
    }

    fn end(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.end();
    }
}
