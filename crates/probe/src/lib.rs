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
//!   it is. Last, once all plugin work is done (unload and library close
//!   included), it calls [`finish`];
//! - **the parent** runs the child with [`Probe::run`]: it hands the child
//!   a stage file (through the [`STAGE_FILE_ENV`] environment variable),
//!   captures its output, and waits. A child that ends by a signal is
//!   [`ProbeFailure::Crashed`] ("crashed with SIGSEGV during load at
//!   crashy_load+0x1c in libcrash.so", the place coming from the child's
//!   crash reporter, which [`install`] sets up); one
//!   that writes no mark for the timeout (10 s by default) is killed, with
//!   its process group, and is [`ProbeFailure::TimedOut`] ("did not return
//!   from load within 10 s"); one that exits without having called
//!   [`finish`] is [`ProbeFailure::Exited`] ("ended the process with status
//!   0 during load": the plugin called `exit`), whatever its status.
//!
//! [`supervise`] instead *supervises* long-running work of this very
//! process in a forked copy of it, with nothing executed again: the child
//! shares the parent's stdin, stdout and stderr and process group, has no
//! timeout, and the parent only waits and reports how it ended (`xplug
//! run` runs its program so). A child whose
//! start-up time counts marks stages without the crash reporter
//! ([`install_marks`]) and installs it only when asked
//! ([`report_crashes_to_parent`]).
//!
//! Nothing a probe starts outlives it ([`Probe::run`] says how, on Unix):
//! the stage file has no name on disk; the child's process group is killed
//! when the child ends or times out, and when the parent gets `SIGINT`,
//! `SIGTERM` or `SIGHUP`; on Linux the child dies with the parent thread
//! that started it (`PR_SET_PDEATHSIG`); its output is read for at most half
//! a second after it ended. Out of reach: a process that left the child's
//! process group (a daemon), and, after a `SIGKILL` to the parent, what the
//! child started.
//!
//! ```
//! use std::process::Command;
//! use std::time::Duration;
//! use xplug_probe::Probe;
//!
//! // A child that crashes: the tool lives on and says how the child ended.
//! let mut crashing = Command::new("sh");
//! crashing.args(["-c", "kill -SEGV $$"]);
//! let output = Probe::new(crashing).timeout(Duration::from_secs(10)).run()?;
//! let failure = output.failure().expect("the child crashed");
//! assert_eq!(failure.kind(), "crashed");
//! assert_eq!(failure.to_string(), "crashed with SIGSEGV during startup");
//!
//! // A child that exits before its work is done (it never called
//! // `xplug_probe::finish`): the exit is reported too, with its output.
//! let mut exiting = Command::new("sh");
//! exiting.args(["-c", "echo loading; exit 3"]);
//! let output = Probe::new(exiting).run()?;
//! assert_eq!(output.failure().map(|failure| failure.to_string()).as_deref(), Some("ended the process with status 3 during startup"));
//! assert_eq!(String::from_utf8_lossy(&output.stdout), "loading\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A tool probes a plugin by re-running itself (`std::env::current_exe()`)
//! with the work to do; the child calls [`install`] at start, marks its
//! stages ([`mark`]), and calls [`finish`] once the plugin is unloaded, so a
//! crash is reported with the stage it hit.
//!
//! Isolation protects the probing tool, not a production host: a plugin
//! loaded for real runs in the host's process with the host's rights
//! (`docs/src/reference/loading.md#probing-in-a-child-process`).

use std::fmt;
#[cfg(not(unix))]
use std::io::Read;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

pub use xplug_debug::{CodeLocation, FaultReport};
use xplug_providers::Error;
pub use xplug_providers::raw::Stage;

#[cfg(unix)]
mod unix;

/// The environment variable naming the file a probe child appends its
/// stage marks to, one stage name per line (`finished` last, from
/// [`finish`]). On Unix the path names the descriptor the child inherits
/// (`/proc/self/fd/N` on Linux, `/dev/fd/N` elsewhere): the file has no
/// name of its own.
pub const STAGE_FILE_ENV: &str = "XPLUG_PROBE_STAGE_FILE";

/// How long a probe child may go without a mark before it is killed, unless
/// [`Probe::timeout`] says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The most bytes of each of a child's streams (stdout, stderr) a probe
/// keeps: past it, the stream is still read, so the child never blocks on
/// a full pipe, but the bytes are dropped and counted
/// ([`ProbeOutput::stdout_dropped`]). A plugin that prints without end
/// cannot make the probing process grow without end.
pub const OUTPUT_LIMIT: usize = 16 << 20;

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

impl Signal {
    /// Whether the signal is a request to end (`SIGINT`, `SIGTERM`,
    /// `SIGHUP`, `SIGQUIT`: a user or a service manager; `SIGPIPE`: the
    /// reader of stdout went away), not a fault of the code that ran. A
    /// supervisor whose child ends by one passes it on
    /// ([`Signal::end_this_process`]) rather than reporting a crash.
    #[must_use]
    pub fn is_request_to_end(self) -> bool {
        #[cfg(unix)]
        {
            [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGPIPE].contains(&self.0)
        }
        #[cfg(not(unix))]
        {
            false
        }
    }

    /// Ends this process by this signal's default action, as a shell
    /// expects of a process the signal ended (`SIGINT` stops a script's
    /// loop; `SIGPIPE` ends a pipeline quietly). Returns only when that
    /// action does not end the process (a signal whose default is to be
    /// ignored or to stop), or off Unix.
    pub fn end_this_process(self) {
        #[cfg(unix)]
        unix::die_of(self.0);
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
    /// The child exited before it marked that it finished ([`finish`]):
    /// something in it (the plugin, typically, calling `exit` or `_exit`)
    /// ended the process in the middle of its work, whatever the status.
    Exited {
        /// The exit status (-1 when the system reported neither a status
        /// nor a signal).
        code: i32,
        /// The last stage it marked.
        stage: Option<Stage>,
    },
}

impl ProbeFailure {
    /// The stage the child was in.
    #[must_use]
    pub fn stage(&self) -> Option<Stage> {
        match self {
            Self::Crashed { stage, .. } | Self::TimedOut { stage, .. } | Self::Exited { stage, .. } => *stage,
        }
    }

    /// `crashed`, `timed_out` or `exited`, for machine-readable reports.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Crashed { .. } => "crashed",
            Self::TimedOut { .. } => "timed_out",
            Self::Exited { .. } => "exited",
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
            Self::Exited { code, stage: at } => {
                write!(f, "ended the process with status {code} during {}", stage(at))
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
    /// It exited with this code, after marking that it finished
    /// ([`finish`]). A child that exits without that mark is
    /// [`ProbeFailure::Exited`].
    Exited(i32),
    /// It crashed or hung.
    Failed(ProbeFailure),
}

/// What a probe child did.
#[derive(Clone, Debug)]
pub struct ProbeOutput {
    /// How it ended.
    pub status: ProbeStatus,
    /// What it wrote to stdout, up to [`OUTPUT_LIMIT`] bytes.
    pub stdout: Vec<u8>,
    /// What it wrote to stderr, up to [`OUTPUT_LIMIT`] bytes.
    pub stderr: Vec<u8>,
    /// How many bytes of stdout past [`OUTPUT_LIMIT`] were read and dropped.
    pub stdout_dropped: u64,
    /// How many bytes of stderr past [`OUTPUT_LIMIT`] were read and dropped.
    pub stderr_dropped: u64,
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
    /// How long the child may go without marking a stage.
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
    /// On Unix, nothing the probe made outlives it:
    ///
    /// - the stage file has no name in the file system (the child opens it
    ///   through its inherited descriptor), so nothing is left on disk
    ///   however the parent ends;
    /// - when the child ends, whatever it started that stayed in its process
    ///   group is killed; its output is then read for at most a short grace
    ///   period (half a second), so a process that left the group and keeps
    ///   the pipes open cannot hold the probe;
    /// - on Linux the child gets `SIGKILL` when the thread that called `run`
    ///   ends (`PR_SET_PDEATHSIG`);
    /// - while the probe runs, `SIGINT`, `SIGTERM` and `SIGHUP` to this
    ///   process kill the child's process group first, then take the
    ///   effect they had before the probe (by default, ending this process
    ///   with that signal). The previous dispositions are back when `run`
    ///   returns.
    ///
    /// # Errors
    /// [`Error::Io`] when the stage file cannot be created or the child
    /// cannot be started.
    pub fn run(mut self) -> Result<ProbeOutput, Error> {
        let io = |what: &str| io_failure(what, "probe");
        let stage_file = StageFile::create().map_err(io("create a stage file"))?;
        self.command.env(STAGE_FILE_ENV, stage_file.child_path());
        self.command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        // The child leads a process group of its own.
        #[cfg(unix)]
        unix::prepare(&mut self.command, stage_file.fd());
        #[cfg(unix)]
        let mut watch = unix::Watch::start();
        let mut child = self.command.spawn().map_err(io("start"))?;
        #[cfg(unix)]
        let pid = libc::pid_t::try_from(child.id()).unwrap_or(0);
        #[cfg(unix)]
        watch.register(-pid);
        let mut pipes = Pipes::new(child.stdout.take(), child.stderr.take());

        let mut marks_seen = 0;
        let mut deadline = Instant::now() + self.timeout;
        let timed_out = loop {
            if ended(&mut child).map_err(io("wait"))? {
                break false;
            }
            let marks = stage_file.len().unwrap_or(marks_seen);
            if marks != marks_seen {
                marks_seen = marks;
                deadline = Instant::now() + self.timeout;
            }
            if Instant::now() >= deadline {
                break true;
            }
            pipes.pump(Duration::from_millis(5));
        };
        // Ended or hung: either way, what it started in its group goes too.
        #[cfg(unix)]
        {
            unix::kill_group(pid);
            watch.unregister();
        }
        if timed_out {
            // Already dead (the group was killed above): nothing changes.
            let _ = child.kill();
        }
        let status = child.wait().map_err(io("wait"));
        #[cfg(unix)]
        drop(watch);
        let ((stdout, stdout_dropped), (stderr, stderr_dropped)) = pipes.finish(OUTPUT_GRACE);
        let status = status?;
        let marks = stage_file.contents();
        let last_stage = marks.lines().rev().find_map(Stage::from_name);
        let status = if timed_out {
            ProbeStatus::Failed(ProbeFailure::TimedOut { stage: last_stage, limit: self.timeout })
        } else {
            how_it_ended(status, &marks, last_stage)
        };
        Ok(ProbeOutput { status, stdout, stderr, stdout_dropped, stderr_dropped, last_stage })
    }
}

/// The error of a failed `what` (a verb phrase) for a `kind` child process.
fn io_failure(what: &str, kind: &str) -> impl FnOnce(std::io::Error) -> Error + use<> {
    let context = format!("cannot {what} for a {kind} child process");
    move |error| Error::Io { context, source: std::sync::Arc::new(error) }
}

/// How a child that ended by itself ended, from its wait status, what it
/// wrote to the stage file and the last stage it marked there.
fn how_it_ended(status: std::process::ExitStatus, marks: &str, last_stage: Option<Stage>) -> ProbeStatus {
    let finished = marks.lines().any(|line| line == FINISHED_MARK);
    match (status.code(), exit_signal(&status)) {
        (Some(code), _) if finished => ProbeStatus::Exited(code),
        (Some(code), _) => ProbeStatus::Failed(ProbeFailure::Exited { code, stage: last_stage }),
        (None, Some(signal)) => {
            let site = FaultReport::parse(marks);
            ProbeStatus::Failed(ProbeFailure::Crashed { signal, stage: last_stage, site })
        }
        (None, None) => ProbeStatus::Failed(ProbeFailure::Exited { code: -1, stage: last_stage }),
    }
}

/// Runs `work` in a child process forked from this one and waits for it,
/// supervised rather than captured: the child shares this process's
/// stdin, stdout, stderr and process group (it is the terminal's
/// foreground job with this process, and what it prints streams out in
/// its own order), runs as long as it likes without a timeout, and how it
/// ended comes back as a [`ProbeOutput`] (its `stdout` and `stderr`
/// empty). `SIGINT`, `SIGTERM` and `SIGHUP` sent to this
/// process kill the child first, and on Linux the child dies with the
/// thread that called this.
///
/// Cheaper than a probe of this binary run again: nothing is executed,
/// loaded or parsed a second time; the child is this process, copied as it
/// is. In the child, this function makes it a probe child ([`install_marks`],
/// and [`report_crashes_to_parent`] works there), runs `work`, marks
/// [`finish`], flushes stdout and exits with `work`'s value through `exit`
/// (C's stdio buffers are flushed and `atexit` handlers run, as at the end
/// of `main`); a panic in `work` exits with 101, as a panicking `main`
/// does. A crash in `work` is [`ProbeFailure::Crashed`], an `exit` before
/// it returns [`ProbeFailure::Exited`].
///
/// Only a process with one thread can fork safely (the copy has only the
/// forking thread, and a lock another thread held stays held there):
/// call it before starting any.
///
/// ```
/// // The child computes; a crash there would be reported, not suffered.
/// let output = xplug_probe::supervise(|| if 6 * 7 == 42 { 0 } else { 1 })?;
/// assert_eq!(output.exit_code(), Some(0));
/// # Ok::<(), xplug_providers::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidRequest`] when this process has more than one thread
/// (or, off Linux, when that cannot be known); [`Error::Io`] when the
/// stage file cannot be created or `fork` fails.
pub fn supervise(work: impl FnOnce() -> u8) -> Result<ProbeOutput, Error> {
    #[cfg(unix)]
    return supervise_forked(work);
    #[cfg(not(unix))]
    {
        let _ = work;
        Err(Error::InvalidRequest { reason: "a supervised fork needs Unix".to_owned() })
    }
}

#[cfg(unix)]
fn supervise_forked(work: impl FnOnce() -> u8) -> Result<ProbeOutput, Error> {
    let io = |what: &str| io_failure(what, "supervised");
    match unix::thread_count() {
        Some(1) => {}
        threads => {
            return Err(Error::InvalidRequest {
                reason: format!(
                    "cannot fork a supervised child: this process has {} threads, and only one may fork \
                     (start the child before any other thread)",
                    threads.map_or_else(|| "an unknown number of".to_owned(), |count| count.to_string())
                ),
            });
        }
    }
    let stage_file = StageFile::create().map_err(io("create a stage file"))?;
    let child_path = stage_file.child_path();
    // What is buffered here would otherwise be written by both processes.
    let _ = std::io::stdout().flush();
    // SAFETY: `fflush(NULL)` flushes every C output stream; no pointer is
    // passed.
    unsafe { libc::fflush(std::ptr::null_mut()) };
    let mut watch = unix::Watch::start();
    let pid = unix::fork_child(move || {
        // This process is now the probe child: the stage file (its copy of
        // the parent's descriptor, opened anew for appending, as an
        // executed child opens it) takes the marks and the crash report.
        if let Ok(file) = std::fs::OpenOptions::new().append(true).open(&child_path) {
            let _ = FORKED_STAGE_FILE.set(file);
        }
        LAST_MARK.store(0, Ordering::Relaxed);
        IS_CHILD.store(0, Ordering::Relaxed);
        install_marks();
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or(101);
        finish();
        let _ = std::io::stdout().flush();
        std::process::exit(i32::from(code))
    })
    .map_err(io("fork"))?;
    watch.register(pid);
    unix::wait_until_ended(pid);
    watch.unregister();
    let status = unix::reap(pid).map_err(io("wait"));
    drop(watch);
    let marks = stage_file.contents();
    let last_stage = marks.lines().rev().find_map(Stage::from_name);
    Ok(ProbeOutput {
        status: how_it_ended(status?, &marks, last_stage),
        stdout: Vec::new(),
        stderr: Vec::new(),
        stdout_dropped: 0,
        stderr_dropped: 0,
        last_stage,
    })
}

/// How long the output of a child that ended is still read: what it wrote
/// is in the pipes already; only a process that left its group and keeps
/// them open makes this wait whole.
const OUTPUT_GRACE: Duration = Duration::from_millis(500);

/// The line [`finish`] writes to the stage file.
const FINISHED_MARK: &str = "finished";

#[cfg(unix)]
use unix::StageFile;

/// Whether the child has ended (Unix: without reaping it, so its process
/// group cannot be reused before it is killed).
#[cfg(unix)]
fn ended(child: &mut std::process::Child) -> std::io::Result<bool> {
    Ok(libc::pid_t::try_from(child.id()).map_or(true, unix::has_ended))
}

#[cfg(not(unix))]
fn ended(child: &mut std::process::Child) -> std::io::Result<bool> {
    Ok(child.try_wait()?.is_some())
}

/// The child's stdout and stderr, read as they come.
#[cfg(unix)]
struct Pipes([unix::Pipe; 2]);

#[cfg(unix)]
impl Pipes {
    fn new(stdout: Option<std::process::ChildStdout>, stderr: Option<std::process::ChildStderr>) -> Self {
        Self([unix::Pipe::new(stdout), unix::Pipe::new(stderr)])
    }

    /// Reads what comes within `wait`.
    fn pump(&mut self, wait: Duration) {
        unix::pump(&mut self.0, wait);
    }

    /// Reads the rest, for at most `grace`; returns stdout and stderr,
    /// each with the count of bytes dropped past [`OUTPUT_LIMIT`].
    fn finish(mut self, grace: Duration) -> ((Vec<u8>, u64), (Vec<u8>, u64)) {
        unix::drain(&mut self.0, grace);
        let [stdout, stderr] = self.0;
        ((stdout.bytes, stdout.dropped), (stderr.bytes, stderr.dropped))
    }
}

/// The child's stdout and stderr, each read on a thread of its own.
#[cfg(not(unix))]
struct Pipes([std::sync::mpsc::Receiver<(Vec<u8>, u64)>; 2]);

#[cfg(not(unix))]
impl Pipes {
    fn new(stdout: Option<impl Read + Send + 'static>, stderr: Option<impl Read + Send + 'static>) -> Self {
        fn drain(pipe: Option<impl Read + Send + 'static>) -> std::sync::mpsc::Receiver<(Vec<u8>, u64)> {
            let (sender, receiver) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let (mut bytes, mut dropped) = (Vec::new(), 0);
                if let Some(mut pipe) = pipe {
                    // A read error ends the capture; what was read is kept.
                    let _ = (&mut pipe).take(OUTPUT_LIMIT as u64).read_to_end(&mut bytes);
                    dropped = std::io::copy(&mut pipe, &mut std::io::sink()).unwrap_or(0);
                }
                let _ = sender.send((bytes, dropped));
            });
            receiver
        }
        Self([drain(stdout), drain(stderr)])
    }

    fn pump(&mut self, wait: Duration) {
        std::thread::sleep(wait);
    }

    fn finish(self, grace: Duration) -> ((Vec<u8>, u64), (Vec<u8>, u64)) {
        let deadline = Instant::now() + grace;
        let [stdout, stderr] = self.0.map(|pipe| {
            pipe.recv_timeout(deadline.saturating_duration_since(Instant::now())).unwrap_or_default()
        });
        (stdout, stderr)
    }
}

/// The stage file, named (removed when the probe ends).
#[cfg(not(unix))]
struct StageFile(tempfile::NamedTempFile);

#[cfg(not(unix))]
impl StageFile {
    fn create() -> std::io::Result<Self> {
        tempfile::Builder::new().prefix("xplug-probe-").suffix(".stage").tempfile().map(Self)
    }

    fn child_path(&self) -> &std::path::Path {
        self.0.path()
    }

    fn len(&self) -> Option<u64> {
        self.0.as_file().metadata().ok().map(|metadata| metadata.len())
    }

    fn contents(&self) -> String {
        std::fs::read_to_string(self.0.path()).unwrap_or_default()
    }
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

/// The stage file of a child forked by [`supervise`] (set in the child
/// only, before it runs any work).
static FORKED_STAGE_FILE: OnceLock<std::fs::File> = OnceLock::new();

/// The stage file of this process, when it is a probe child.
fn stage_file() -> Option<&'static std::fs::File> {
    static FILE: OnceLock<Option<std::fs::File>> = OnceLock::new();
    if let Some(file) = FORKED_STAGE_FILE.get() {
        return Some(file);
    }
    FILE.get_or_init(|| {
        let path = std::env::var_os(STAGE_FILE_ENV)?;
        let file = std::fs::OpenOptions::new().append(true).open(path).ok()?;
        // A stale variable naming a pipe, a terminal or a directory is no
        // stage file: marks are not written there.
        file.metadata().ok()?.is_file().then_some(file)
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
/// ([`xplug_debug::install_crash_reporter`]) with the
/// stage file as its report file, so a crash inside a plugin reaches the
/// parent as the faulting function ([`ProbeFailure::Crashed`]'s `site`).
pub fn install() -> bool {
    let child = install_marks();
    if child {
        report_crashes_to_parent();
    }
    child
}

/// [`install`] without the crash reporter: the raw layer's stages are
/// marked, and a crash reaches the parent as its signal and stage only
/// (`site` is `None`), unless [`report_crashes_to_parent`] is called too.
/// For a child whose start-up time counts: the reporter reads the symbol
/// table of every plugin file loaded after it (milliseconds for a large
/// library). Returns whether this process is a probe child.
pub fn install_marks() -> bool {
    let child = std::env::var_os(STAGE_FILE_ENV).is_some() || FORKED_STAGE_FILE.get().is_some();
    if child {
        // A hook someone installed first is kept: the raw layer has one.
        let _ = xplug_providers::raw::set_stage_hook(mark);
    }
    child
}

/// Installs the crash reporter ([`xplug_debug::install_crash_reporter`])
/// with the stage file as its report file, so a crash reaches the parent
/// as the faulting function ([`ProbeFailure::Crashed`]'s `site`); nothing
/// outside a probe child. Call it before any plugin is loaded. Returns
/// whether it was installed (`false` off a probe child and on hosts the
/// reporter does not support).
pub fn report_crashes_to_parent() -> bool {
    #[cfg(unix)]
    if let Some(file) = stage_file() {
        use std::os::fd::AsRawFd;
        return xplug_debug::install_crash_reporter(Some(file.as_raw_fd())).is_ok();
    }
    false
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

/// Marks that this probe child finished its work: everything that runs
/// plugin code (unload and library close included) is done, and only its
/// report remains to be written. Call it once, last, in a probe child (the
/// parent treats a child that exits without it as
/// [`ProbeFailure::Exited`]: the plugin ended the process). Nothing
/// happens outside a probe child.
pub fn finish() {
    if let Some(mut file) = stage_file() {
        // One `write`; a failed write makes the parent report an early exit.
        let mut line = [0u8; FINISHED_MARK.len() + 1];
        line[..FINISHED_MARK.len()].copy_from_slice(FINISHED_MARK.as_bytes());
        line[FINISHED_MARK.len()] = b'\n';
        let _ = file.write_all(&line);
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
        let exited = ProbeFailure::Exited { code: 0, stage: Some(Stage::Unload) };
        assert_eq!(exited.to_string(), "ended the process with status 0 during unload");
        assert_eq!(exited.kind(), "exited");
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
        command.args([
            "-c",
            "echo '{\"ok\":true}'; echo note >&2; echo finished >> \"$XPLUG_PROBE_STAGE_FILE\"; exit 3",
        ]);
        let output = Probe::new(command).run().unwrap();
        assert_eq!(output.status, ProbeStatus::Exited(3));
        assert_eq!(output.stdout, b"{\"ok\":true}\n");
        assert_eq!(output.stderr, b"note\n");
        assert_eq!((output.stdout_dropped, output.stderr_dropped), (0, 0));
        assert_eq!(output.last_stage, None);
    }

    #[test]
    #[cfg(unix)]
    fn requests_to_end_are_told_from_faults() {
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGPIPE] {
            assert!(Signal(signal).is_request_to_end(), "{}", Signal(signal));
        }
        for signal in [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE, libc::SIGABRT, libc::SIGKILL]
        {
            assert!(!Signal(signal).is_request_to_end(), "{}", Signal(signal));
        }
    }

    #[test]
    #[cfg(unix)]
    fn output_past_the_limit_is_drained_and_counted_not_kept() {
        let mut command = Command::new("sh");
        let total = OUTPUT_LIMIT + 3_000_000;
        command.args(["-c", &format!("head -c {total} /dev/zero; echo small >&2; echo finished >> \"$XPLUG_PROBE_STAGE_FILE\"; exit 0")]);
        let output = Probe::new(command).timeout(Duration::from_secs(60)).run().unwrap();
        assert_eq!(output.status, ProbeStatus::Exited(0), "the child was not blocked on its pipe");
        assert_eq!((output.stdout.len(), output.stdout_dropped), (OUTPUT_LIMIT, 3_000_000));
        assert!(output.stdout.iter().all(|&byte| byte == 0));
        assert_eq!((output.stderr.as_slice(), output.stderr_dropped), (&b"small\n"[..], 0));
    }
}
