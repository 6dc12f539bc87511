//! Crash-isolated probing: exercise a plugin in a child process, so a
//! plugin that crashes or hangs is reported instead of taking the tool down.
//!
//! A tool's crate, not a host's: a production host runs its plugins in its
//! own process and never links this. It builds on the raw layer of
//! `xplug-providers`, which reports each step it enters ([`Stage`]) to a
//! hook; [`install`] makes that hook this crate's [`mark`].
//!
//! The protocol has two sides:
//!
//! - **the child** is any process that hosts the plugin (typically the tool
//!   itself, re-run with a flag that makes it work in-process). It calls
//!   [`install`] once at start; from then on the raw layer marks each step
//!   it enters (open, query, load, resolve, unload, close); code that calls
//!   imports marks [`Stage::Call`] itself ([`mark`]), and long-running work
//!   calls [`heartbeat`]. A mark costs one relaxed atomic load when the
//!   process is not a probe child, and one `write` per change of stage when
//!   it is;
//! - **the parent** runs the child with [`Probe::run`]: it hands the child
//!   a stage file (through the [`STAGE_FILE_ENV`] environment variable),
//!   captures its output, and waits. A child that ends by a signal is
//!   [`ProbeFailure::Crashed`] ("crashed with SIGSEGV during load at
//!   crashy_load+0x1c in libcrash.so", the place coming from the child's
//!   crash reporter, which [`install`] sets up); one
//!   that writes no mark for the timeout (10 s by default) is killed, with
//!   its process group, and is [`ProbeFailure::TimedOut`] ("did not return
//!   from load within 10 s").
//!
//! ```no_run
//! use std::process::Command;
//! use std::time::Duration;
//! use xplug_probe::Probe;
//!
//! let mut child = Command::new(std::env::current_exe()?);
//! child.args(["--in-process", "inspect", "libplugin.so"]);
//! let output = Probe::new(child).timeout(Duration::from_secs(10)).run()?;
//! match output.failure() {
//!     Some(failure) => eprintln!("the plugin {failure}"),
//!     None => print!("{}", String::from_utf8_lossy(&output.stdout)),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Isolation protects the probing tool, not a production host: a plugin
//! loaded for real runs in the host's process with the host's rights
//! (`docs/loading.md#probing-in-a-child-process`).

use std::fmt;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use xplug_providers::Error;
pub use xplug_providers::embedded_elf::{CodeLocation, FaultReport};
pub use xplug_providers::raw::Stage;

/// The environment variable naming the file a probe child appends its
/// stage marks to, one stage name per line.
pub const STAGE_FILE_ENV: &str = "XPLUG_PROBE_STAGE_FILE";

/// How long a probe child may go without a mark before it is killed, unless
/// [`Probe::timeout`] says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// 1 + the stage's position in [`Stage::ALL`]: 0 is "no mark yet".
fn stage_code(stage: Stage) -> u8 {
    Stage::ALL.iter().position(|&known| known == stage).map_or(0, |index| index as u8 + 1)
}

/// A signal number, as the operating system reports it (any value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Signal(pub i32);

impl Signal {
    /// The signal's conventional name (`SIGSEGV`), when it is a common one.
    #[must_use]
    pub fn name(self) -> Option<&'static str> {
        #[cfg(unix)]
        {
            let name = match self.0 {
                libc::SIGSEGV => "SIGSEGV",
                libc::SIGABRT => "SIGABRT",
                libc::SIGBUS => "SIGBUS",
                libc::SIGILL => "SIGILL",
                libc::SIGFPE => "SIGFPE",
                libc::SIGKILL => "SIGKILL",
                libc::SIGTERM => "SIGTERM",
                libc::SIGTRAP => "SIGTRAP",
                libc::SIGSYS => "SIGSYS",
                libc::SIGPIPE => "SIGPIPE",
                libc::SIGINT => "SIGINT",
                libc::SIGHUP => "SIGHUP",
                libc::SIGQUIT => "SIGQUIT",
                _ => return None,
            };
            Some(name)
        }
        #[cfg(not(unix))]
        {
            None
        }
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "signal {}", self.0),
        }
    }
}

/// How a probe child failed to finish.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProbeFailure {
    /// The child ended by a signal.
    Crashed {
        /// The signal.
        signal: Signal,
        /// The last stage it marked (`None`: before its first mark).
        stage: Option<Stage>,
        /// Where it crashed, as the child's crash reporter wrote it (`None`
        /// when it wrote nothing: a signal it does not handle, such as
        /// `SIGABRT`, or a crash before [`install`]).
        site: Option<FaultReport>,
    },
    /// The child wrote no mark for `limit` and was killed.
    TimedOut {
        /// The stage it was in.
        stage: Option<Stage>,
        /// The timeout.
        limit: Duration,
    },
}

impl ProbeFailure {
    /// The stage the child was in.
    #[must_use]
    pub fn stage(&self) -> Option<Stage> {
        match self {
            Self::Crashed { stage, .. } | Self::TimedOut { stage, .. } => *stage,
        }
    }

    /// `crashed` or `timed_out`, for machine-readable reports.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Crashed { .. } => "crashed",
            Self::TimedOut { .. } => "timed_out",
        }
    }
}

impl fmt::Display for ProbeFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stage = |stage: &Option<Stage>| stage.map_or_else(|| "startup".to_owned(), |s| s.to_string());
        match self {
            Self::Crashed { signal, stage: at, site } => {
                write!(f, "crashed with {signal} during {}", stage(at))?;
                match site {
                    Some(site) => write!(f, " {site}"),
                    None => Ok(()),
                }
            }
            Self::TimedOut { stage: at, limit } => {
                write!(f, "did not return from {} within {}", stage(at), seconds(*limit))
            }
        }
    }
}

/// "10 s", "0.5 s".
fn seconds(limit: Duration) -> String {
    let secs = limit.as_secs_f64();
    if secs.fract() == 0.0 { format!("{secs:.0} s") } else { format!("{secs} s") }
}

/// How a probe child ended.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProbeStatus {
    /// It exited with this code.
    Exited(i32),
    /// It crashed or hung.
    Failed(ProbeFailure),
}

/// What a probe child did.
#[derive(Clone, Debug)]
pub struct ProbeOutput {
    /// How it ended.
    pub status: ProbeStatus,
    /// Everything it wrote to stdout.
    pub stdout: Vec<u8>,
    /// Everything it wrote to stderr.
    pub stderr: Vec<u8>,
    /// The last stage it marked.
    pub last_stage: Option<Stage>,
}

impl ProbeOutput {
    /// The crash or hang, if the child did not exit by itself.
    #[must_use]
    pub fn failure(&self) -> Option<&ProbeFailure> {
        match &self.status {
            ProbeStatus::Failed(failure) => Some(failure),
            ProbeStatus::Exited(_) => None,
        }
    }

    /// The exit code, if the child exited by itself.
    #[must_use]
    pub fn exit_code(&self) -> Option<i32> {
        match self.status {
            ProbeStatus::Exited(code) => Some(code),
            ProbeStatus::Failed(_) => None,
        }
    }
}

/// A child process to run under watch (the parent side of the protocol).
#[derive(Debug)]
pub struct Probe {
    command: Command,
    timeout: Duration,
}

impl Probe {
    /// A probe of `command` (its stdin is closed, its stdout and stderr
    /// captured) with the [`DEFAULT_TIMEOUT`].
    #[must_use]
    pub fn new(command: Command) -> Self {
        Self { command, timeout: DEFAULT_TIMEOUT }
    }

    /// How long the child may go without marking a stage.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Runs the child to its end, or kills it (and its process group) when
    /// it goes [`Probe::timeout`] without a mark.
    ///
    /// # Errors
    /// [`Error::Io`] when the stage file cannot be created or the child
    /// cannot be started.
    pub fn run(mut self) -> Result<ProbeOutput, Error> {
        let io = |what: &str| {
            let context = format!("cannot {what} for a probe child process");
            move |error| Error::Io { context, source: std::sync::Arc::new(error) }
        };
        let stage_file = tempfile::Builder::new()
            .prefix("xplug-probe-")
            .suffix(".stage")
            .tempfile()
            .map_err(io("create a stage file"))?;
        self.command
            .env(STAGE_FILE_ENV, stage_file.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            // Its own process group, so a timeout kills whatever it started.
            self.command.process_group(0);
        }
        let mut child = self.command.spawn().map_err(io("start"))?;
        let stdout = drain(child.stdout.take());
        let stderr = drain(child.stderr.take());

        let mut marks_seen = 0;
        let mut deadline = Instant::now() + self.timeout;
        let outcome = loop {
            if let Some(status) = child.try_wait().map_err(io("wait"))? {
                break Ok(status);
            }
            let marks = stage_file.as_file().metadata().map_or(marks_seen, |m| m.len());
            if marks != marks_seen {
                marks_seen = marks;
                deadline = Instant::now() + self.timeout;
            }
            if Instant::now() >= deadline {
                kill_group(&mut child);
                break Err(());
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let marks = std::fs::read_to_string(stage_file.path()).unwrap_or_default();
        let last_stage = marks.lines().rev().find_map(Stage::from_name);
        let status = match outcome {
            Err(()) => ProbeStatus::Failed(ProbeFailure::TimedOut { stage: last_stage, limit: self.timeout }),
            Ok(status) => match (status.code(), exit_signal(&status)) {
                (Some(code), _) => ProbeStatus::Exited(code),
                (None, Some(signal)) => {
                    let site = FaultReport::parse(&marks);
                    ProbeStatus::Failed(ProbeFailure::Crashed { signal, stage: last_stage, site })
                }
                (None, None) => ProbeStatus::Exited(-1),
            },
        };
        Ok(ProbeOutput {
            status,
            stdout: stdout.join().unwrap_or_default(),
            stderr: stderr.join().unwrap_or_default(),
            last_stage,
        })
    }
}

/// Reads `pipe` to its end on a thread of its own.
fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            // A read error ends the capture; what was read is kept.
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// Kills the child's process group (the child itself elsewhere), then
/// reaps the child.
fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: `kill` has no memory preconditions; `-pid` names the
        // process group the child leads (`process_group(0)` at spawn), which
        // exists until the child is reaped below.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
    // Already dead (or killed above): an error here changes nothing.
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(unix)]
fn exit_signal(status: &std::process::ExitStatus) -> Option<Signal> {
    use std::os::unix::process::ExitStatusExt;
    status.signal().map(Signal)
}

#[cfg(not(unix))]
fn exit_signal(_status: &std::process::ExitStatus) -> Option<Signal> {
    None
}

/// The stage file of this process, when it is a probe child.
fn stage_file() -> Option<&'static std::fs::File> {
    static FILE: OnceLock<Option<std::fs::File>> = OnceLock::new();
    FILE.get_or_init(|| {
        let path = std::env::var_os(STAGE_FILE_ENV)?;
        std::fs::OpenOptions::new().append(true).open(path).ok()
    })
    .as_ref()
}

/// The last stage marked (0: none, or not a probe child).
static LAST_MARK: AtomicU8 = AtomicU8::new(0);
/// 0: not yet known whether this process is a probe child; 1: it is not;
/// 2: it is.
static IS_CHILD: AtomicU8 = AtomicU8::new(0);

/// Makes the raw layer of `xplug-providers` report each stage it enters
/// through [`mark`], when this process is a probe child (the parent set
/// [`STAGE_FILE_ENV`]); returns whether it is one. Call it once, at start,
/// before any plugin is opened. Another hook already installed stays.
///
/// In a probe child it also installs the crash reporter
/// ([`xplug_providers::embedded_elf::install_crash_reporter`]) with the
/// stage file as its report file, so a crash inside a plugin reaches the
/// parent as the faulting function ([`ProbeFailure::Crashed`]'s `site`).
pub fn install() -> bool {
    let child = std::env::var_os(STAGE_FILE_ENV).is_some();
    if child {
        // A hook someone installed first is kept: the raw layer has one.
        let _ = xplug_providers::raw::set_stage_hook(mark);
        #[cfg(unix)]
        if let Some(file) = stage_file() {
            use std::os::fd::AsRawFd;
            // Unsupported hosts report the signal and stage only.
            let _ = xplug_providers::embedded_elf::install_crash_reporter(Some(file.as_raw_fd()));
        }
    }
    child
}

/// Marks that this process enters `stage` (the child side). Nothing
/// happens outside a probe child, or when `stage` is the stage already
/// marked.
#[inline]
pub fn mark(stage: Stage) {
    // Outside a probe child (every host), one relaxed load.
    if IS_CHILD.load(Ordering::Relaxed) != 1 {
        mark_in_child(stage);
    }
}

/// [`mark`] when this process may be a probe child.
#[cold]
#[inline(never)]
fn mark_in_child(stage: Stage) {
    if LAST_MARK.swap(stage_code(stage), Ordering::Relaxed) != stage_code(stage) {
        write_mark(stage);
    }
}

/// Marks the current stage again, so the parent knows this probe child is
/// making progress (for work that stays in one stage for long, such as a
/// benchmark's timed loop).
pub fn heartbeat() {
    let code = LAST_MARK.load(Ordering::Relaxed);
    if let Some(&stage) = Stage::ALL.get(usize::from(code).wrapping_sub(1)) {
        write_mark(stage);
    }
}

#[cold]
#[inline(never)]
fn write_mark(stage: Stage) {
    let Some(mut file) = stage_file() else {
        IS_CHILD.store(1, Ordering::Relaxed);
        return;
    };
    IS_CHILD.store(2, Ordering::Relaxed);
    // One `write` per mark, unbuffered: it reaches the file even if the
    // next instruction crashes. A failed write only loses a mark.
    let mut line = [0u8; 16];
    let name = stage.as_str().as_bytes();
    line[..name.len()].copy_from_slice(name);
    line[name.len()] = b'\n';
    let _ = file.write_all(&line[..=name.len()]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_read_as_the_issue_asks() {
        let crashed =
            ProbeFailure::Crashed { signal: Signal(libc::SIGSEGV), stage: Some(Stage::Load), site: None };
        assert_eq!(crashed.to_string(), "crashed with SIGSEGV during load");
        let hung = ProbeFailure::TimedOut { stage: Some(Stage::Load), limit: DEFAULT_TIMEOUT };
        assert_eq!(hung.to_string(), "did not return from load within 10 s");
        let early = ProbeFailure::TimedOut { stage: None, limit: Duration::from_millis(1500) };
        assert_eq!(early.to_string(), "did not return from startup within 1.5 s");
        assert_eq!(Signal(77).to_string(), "signal 77");
    }

    #[test]
    fn every_stage_has_a_mark_code() {
        for stage in Stage::ALL {
            assert_ne!(stage_code(stage), 0);
        }
    }

    #[test]
    #[cfg(unix)]
    fn a_child_killed_by_a_signal_is_a_crash_at_its_last_stage() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo query >> \"$XPLUG_PROBE_STAGE_FILE\"; echo out; kill -SEGV $$"]);
        let output = Probe::new(command).run().unwrap();
        assert_eq!(
            output.failure(),
            Some(&ProbeFailure::Crashed {
                signal: Signal(libc::SIGSEGV),
                stage: Some(Stage::Query),
                site: None
            })
        );
        assert_eq!(output.stdout, b"out\n");
    }

    #[test]
    #[cfg(unix)]
    fn a_crash_reporter_line_names_the_site() {
        let mut command = Command::new("sh");
        command.args([
            "-c",
            "printf 'resolve\\nxplug-fault\\tsignal=11\\tpc=1c\\tat_module=libx.so\\tat_symbol=f\\tat_offset=1c\\tat_plugin=1\\n' >> \"$XPLUG_PROBE_STAGE_FILE\"; kill -SEGV $$",
        ]);
        let output = Probe::new(command).run().unwrap();
        let failure = output.failure().unwrap();
        assert_eq!(failure.to_string(), "crashed with SIGSEGV during resolve at f+0x1c in libx.so");
    }

    #[test]
    #[cfg(unix)]
    fn a_silent_child_is_killed_after_the_timeout() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo resolve >> \"$XPLUG_PROBE_STAGE_FILE\"; exec sleep 30"]);
        let output = Probe::new(command).timeout(Duration::from_millis(200)).run().unwrap();
        assert_eq!(
            output.failure(),
            Some(&ProbeFailure::TimedOut { stage: Some(Stage::Resolve), limit: Duration::from_millis(200) })
        );
    }

    #[test]
    #[cfg(unix)]
    fn a_child_that_exits_keeps_its_code_and_output() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo '{\"ok\":true}'; echo note >&2; exit 3"]);
        let output = Probe::new(command).run().unwrap();
        assert_eq!(output.status, ProbeStatus::Exited(3));
        assert_eq!(output.stdout, b"{\"ok\":true}\n");
        assert_eq!(output.stderr, b"note\n");
        assert_eq!(output.last_stage, None);
    }
}
