//! The parent side of a probe on Unix: the nameless stage file, the child's
//! set-up between `fork` and `exec`, watching its pipes without threads,
//! and the SIGINT/SIGTERM/SIGHUP handler that kills the probed process
//! groups when the parent is told to end.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How much of the end of the stage file the parent reads at most.
const STAGE_FILE_TAIL: u64 = 1 << 20;

/// The stage file: an unlinked temporary file, so it cannot outlive the
/// processes that hold it open, however they end (`SIGKILL` included).
///
/// The child reaches it through the descriptor it inherits, named by the
/// path `/proc/self/fd/N` (Linux) or `/dev/fd/N` (elsewhere), which any
/// process can open, a shell's `>>` included.
pub(crate) struct StageFile {
    file: File,
}

impl StageFile {
    /// Creates the file (in the temporary directory, without a name where
    /// the file system supports it, else named and unlinked at once) on a
    /// descriptor above 2, so the child's stdio set-up cannot replace it.
    pub(crate) fn create() -> std::io::Result<Self> {
        let unnamed = tempfile::tempfile()?;
        // SAFETY: `unnamed` is an open descriptor this function owns for
        // the call; F_DUPFD_CLOEXEC only reads it and returns a new one.
        let fd = unsafe { libc::fcntl(unnamed.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by F_DUPFD_CLOEXEC: open, and owned
        // by nothing else.
        let file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        Ok(Self { file })
    }

    /// The descriptor the child inherits.
    pub(crate) fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// The path, valid in the child, that opens the file.
    pub(crate) fn child_path(&self) -> String {
        if cfg!(any(target_os = "linux", target_os = "android")) {
            format!("/proc/self/fd/{}", self.fd())
        } else {
            format!("/dev/fd/{}", self.fd())
        }
    }

    /// How many bytes the child has written.
    pub(crate) fn len(&self) -> Option<u64> {
        self.file.metadata().ok().map(|metadata| metadata.len())
    }

    /// What was written, read without moving the file offset that the
    /// child's writes may share: the whole file, or its last
    /// [`STAGE_FILE_TAIL`] bytes from a line start (the last marks and the
    /// crash report are at the end; a process writing without end cannot
    /// make the parent read it all).
    pub(crate) fn contents(&self) -> String {
        use std::os::unix::fs::FileExt;
        let start = self.len().unwrap_or(0).saturating_sub(STAGE_FILE_TAIL);
        let mut bytes = Vec::new();
        let mut chunk = [0u8; 4096];
        while (bytes.len() as u64) < STAGE_FILE_TAIL {
            match self.file.read_at(&mut chunk, start + bytes.len() as u64) {
                Ok(0) => break,
                Ok(read) => bytes.extend_from_slice(&chunk[..read]),
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if start > 0 {
            // The first line may be cut: it starts after the first newline.
            let cut = bytes.iter().position(|&byte| byte == b'\n').map_or(bytes.len(), |at| at + 1);
            bytes.drain(..cut);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// Sets `command` up as a probe child: its own process group, killed
/// (`SIGKILL`) when the thread that starts it ends (Linux), and the stage
/// file's descriptor `stage_fd` kept open across `exec`.
pub(crate) fn prepare(command: &mut Command, stage_fd: RawFd) {
    // Its own process group: a timeout or a signal to the parent kills
    // whatever it started, and the terminal's Ctrl-C reaches the parent only.
    command.process_group(0);
    // SAFETY: `getpid` has no preconditions.
    let parent = unsafe { libc::getpid() };
    let setup = move || -> std::io::Result<()> {
        // Between `fork` and `exec`: only async-signal-safe calls (`prctl`,
        // `getppid`, `fcntl`), no allocation (an `io::Error` from errno
        // allocates nothing).
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            // SAFETY: PR_SET_PDEATHSIG takes a signal number and changes
            // only this (child) process's state.
            if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before the line above: then no
            // death signal will come, and the child must not run.
            // SAFETY: `getppid` has no preconditions.
            if unsafe { libc::getppid() } != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        let _ = parent;
        // The stage file's descriptor survives `exec` (the parent's copy
        // stays close-on-exec: other children do not get it).
        // SAFETY: `stage_fd` is open in the parent, so in this forked copy
        // of it; F_SETFD only changes its close-on-exec flag here.
        if unsafe { libc::fcntl(stage_fd, libc::F_SETFD, 0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    };
    // SAFETY: `setup` makes only async-signal-safe calls and allocates
    // nothing (see above), as `pre_exec` requires after a `fork`.
    unsafe { command.pre_exec(setup) };
}

/// How many threads this process has (Linux: `Threads:` of
/// `/proc/self/status`; `None` when it cannot be read, and elsewhere).
pub(crate) fn thread_count() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|line| line.strip_prefix("Threads:")).and_then(|count| count.trim().parse().ok())
}

/// Forks a copy of this process that runs `child` and ends (`child` is
/// meant to end it; if it returns, the copy exits with 127), and returns
/// the copy's pid here. Between the `fork` and `child`, the
/// copy sets itself up as [`prepare`] sets up an executed child: it dies
/// with the thread that forked it (Linux: `PR_SET_PDEATHSIG`), and the
/// signals the probe's [`Watch`] handles get back the dispositions they had
/// before it (as `exec` would reset them). The caller makes sure this
/// process has one thread ([`thread_count`]): only the forking thread is
/// copied, and a lock another thread held would stay held in the copy.
pub(crate) fn fork_child(child: impl FnOnce()) -> std::io::Result<libc::pid_t> {
    // SAFETY: `getpid` has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: `fork` has no memory preconditions; the copy runs only the
    // code below, in a process whose only thread is this one (the caller
    // checked that this process has one thread), so no lock is held by a
    // thread that does not exist there.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid > 0 {
        return Ok(pid);
    }
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: PR_SET_PDEATHSIG takes a signal number and changes only
        // this (child) process's state.
        let armed = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) } == 0;
        // The parent may have died before the death signal was armed: then
        // none will come, and the copy must not run.
        // SAFETY: `getppid` has no preconditions.
        if !armed || unsafe { libc::getppid() } != parent {
            // SAFETY: `_exit` has no memory preconditions; it ends the copy.
            unsafe { libc::_exit(127) };
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = parent;
    restore_dispositions();
    child();
    // SAFETY: `_exit` has no memory preconditions; it ends the copy.
    unsafe { libc::_exit(127) }
}

/// Reaps the ended child `pid`; its wait status.
pub(crate) fn reap(pid: libc::pid_t) -> std::io::Result<std::process::ExitStatus> {
    use std::os::unix::process::ExitStatusExt;
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: `status` is a valid, writable int for the call.
        let reaped = unsafe { libc::waitpid(pid, &mut status, 0) };
        if reaped == pid {
            return Ok(std::process::ExitStatus::from_raw(status));
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// In a forked copy: puts back the dispositions the [`HANDLED`] signals had
/// before this crate's handler (the copy is not the probe's parent; a
/// signal to it takes its usual effect).
fn restore_dispositions() {
    for (index, &signal) in HANDLED.iter().enumerate() {
        if INSTALLED[index].swap(false, Ordering::AcqRel) {
            // SAFETY: INSTALLED was true, so the entry was written (see
            // `Previous`); no old action is asked for.
            unsafe { libc::sigaction(signal, (*PREVIOUS.0.get())[index].as_ptr(), std::ptr::null_mut()) };
        }
    }
}

/// Whether the child `pid` has ended, without reaping it: its process
/// group stays reserved (the zombie leads it) until [`kill_group`] has run.
pub(crate) fn has_ended(pid: libc::pid_t) -> bool {
    let Ok(id) = libc::id_t::try_from(pid) else { return true };
    // SAFETY: an all-zero `siginfo_t` is a valid value of this plain C
    // struct (waitid leaves si_pid 0 when no child is ready).
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid, writable siginfo_t for the call; WNOWAIT
    // leaves the child to be reaped by `Child::wait`.
    let result =
        unsafe { libc::waitid(libc::P_PID, id, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT) };
    if result != 0 {
        // EINTR: look again on the next turn. Anything else (ECHILD: the
        // child was reaped by someone else) ends the watch; `Child::wait`
        // then reports the error.
        return std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted;
    }
    // SAFETY: waitid filled `info` for a child event (or left it zeroed);
    // si_pid is valid for SIGCHLD-style records.
    unsafe { info.si_pid() != 0 }
}

/// Waits until the child `pid` has ended, without reaping it (as
/// [`has_ended`], blocking).
pub(crate) fn wait_until_ended(pid: libc::pid_t) {
    let Ok(id) = libc::id_t::try_from(pid) else { return };
    loop {
        // SAFETY: an all-zero `siginfo_t` is a valid value of this plain C
        // struct.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid, writable siginfo_t for the call; as in
        // `has_ended`, but without WNOHANG: it blocks until the child ends
        // (or a signal interrupts it).
        let result = unsafe { libc::waitid(libc::P_PID, id, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if result == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            // Ended, or an error the reaping `waitpid` reports.
            return;
        }
    }
}

/// Ends this process as `signal` would by default: its default action
/// put back, unblocked, and raised. Returns only when that action does not
/// end the process (a stop or ignore signal).
pub(crate) fn die_of(signal: libc::c_int) {
    // SAFETY: `signal`, `sigprocmask` and `raise` have no memory
    // preconditions beyond the valid sigset built here; they change only
    // this process's disposition and mask for `signal`.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(signal);
    }
}

/// Kills the process group `pgid` (the child and everything it started
/// that stayed in its group).
pub(crate) fn kill_group(pgid: libc::pid_t) {
    if pgid > 0 {
        // SAFETY: `kill` has no memory preconditions; `-pgid` names the
        // group the child leads, which its unreaped zombie keeps reserved.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
}

/// A child's output pipe, read without blocking.
pub(crate) struct Pipe {
    file: Option<File>,
    /// What was read so far, up to [`crate::OUTPUT_LIMIT`] bytes.
    pub(crate) bytes: Vec<u8>,
    /// How many bytes were read past the limit and dropped.
    pub(crate) dropped: u64,
}

impl Pipe {
    /// Takes `pipe` (none: nothing to read) and makes it non-blocking.
    pub(crate) fn new(pipe: Option<impl Into<OwnedFd>>) -> Self {
        let file = pipe.map(|pipe| File::from(pipe.into())).filter(|file| {
            let fd = file.as_raw_fd();
            // SAFETY: `fd` is open (owned by `file`); F_GETFL/F_SETFL only
            // read and set its status flags.
            unsafe {
                let flags = libc::fcntl(fd, libc::F_GETFL);
                flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) == 0
            }
        });
        Self { file, bytes: Vec::new(), dropped: 0 }
    }

    fn fd(&self) -> RawFd {
        self.file.as_ref().map_or(-1, AsRawFd::as_raw_fd)
    }

    /// Reads what is there; closes the pipe at its end or on an error.
    fn read_available(&mut self) {
        let Some(file) = &mut self.file else { return };
        let mut chunk = [0u8; 64 * 1024];
        loop {
            match file.read(&mut chunk) {
                Ok(0) => break,
                Ok(read) => {
                    // Past the limit the pipe is still drained (a writer
                    // must not block on it), but the bytes are dropped.
                    let kept = read.min(crate::OUTPUT_LIMIT.saturating_sub(self.bytes.len()));
                    self.bytes.extend_from_slice(&chunk[..kept]);
                    self.dropped += (read - kept) as u64;
                }
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(_) => break,
            }
        }
        self.file = None;
    }
}

/// Waits up to `wait` for output on `pipes` and reads what came. With both
/// pipes closed it just sleeps.
pub(crate) fn pump(pipes: &mut [Pipe; 2], wait: Duration) {
    let mut fds =
        [pipes[0].fd(), pipes[1].fd()].map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
    let millis = libc::c_int::try_from(wait.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: `fds` is a valid array of 2 pollfd for the call (poll skips
    // the negative descriptors of closed pipes).
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, millis) };
    if ready <= 0 {
        // Nothing yet, or a signal (EINTR): the caller looks again.
        return;
    }
    for (pipe, polled) in pipes.iter_mut().zip(fds) {
        if polled.revents != 0 {
            pipe.read_available();
        }
    }
}

/// After the child ended: reads the pipes to their end, for at most
/// `grace` (a process that left the child's group may hold them open).
pub(crate) fn drain(pipes: &mut [Pipe; 2], grace: Duration) {
    let deadline = Instant::now() + grace;
    while pipes.iter().any(|pipe| pipe.file.is_some()) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        pump(pipes, left.min(Duration::from_millis(50)));
    }
    // Closing our ends: a writer left behind gets EPIPE, not a reader.
    for pipe in pipes {
        pipe.file = None;
    }
}

/// The signals that, while a probe runs, kill the probed process groups
/// before they take their usual effect.
const HANDLED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// How many probes of one process the handler covers at once (more run
/// unregistered: their children still die with the parent's thread through
/// the death signal, but not what those children started).
const GROUP_SLOTS: usize = 64;

/// What the signal handler kills for each running probe, as `kill`'s
/// first argument: `-pgid` for a child leading its own process group, the
/// child's pid for one in ours (0: a free slot). Atomics only, no lock.
static GROUPS: [AtomicI32; GROUP_SLOTS] = [const { AtomicI32::new(0) }; GROUP_SLOTS];

/// Whether this crate's handler is the installed one, per [`HANDLED`] signal.
static INSTALLED: [AtomicBool; HANDLED.len()] = [const { AtomicBool::new(false) }; HANDLED.len()];

/// The disposition each [`HANDLED`] signal had before the handler.
struct Previous(std::cell::UnsafeCell<[std::mem::MaybeUninit<libc::sigaction>; HANDLED.len()]>);

// SAFETY: entry `i` is written only by `Watch::start` while `USERS` is
// locked and `INSTALLED[i]` is false (the handler is not installed for
// that signal, so it cannot read it), and read by the handler and by
// `Watch::drop` only after `INSTALLED[i]` was set with release ordering.
unsafe impl Sync for Previous {}

static PREVIOUS: Previous =
    Previous(std::cell::UnsafeCell::new([const { std::mem::MaybeUninit::uninit() }; HANDLED.len()]));

/// How many probes are running (the handler is installed while > 0).
static USERS: Mutex<usize> = Mutex::new(0);

/// The signal handler: kills every registered process group, puts back
/// the signal's previous disposition and raises the signal again, so the
/// process ends (or the previous handler runs) as if this one had never
/// been there. Async-signal-safe: atomics, `kill`, `sigaction`, `raise`.
extern "C" fn on_signal(signal: libc::c_int) {
    let saved_errno = errno::get();
    for group in &GROUPS {
        let target = group.load(Ordering::Acquire);
        if target != 0 {
            // SAFETY: `kill` has no memory preconditions.
            unsafe { libc::kill(target, libc::SIGKILL) };
        }
    }
    if let Some(index) = HANDLED.iter().position(|&handled| handled == signal)
        && INSTALLED[index].swap(false, Ordering::AcqRel)
    {
        // SAFETY: INSTALLED[index] was true, so PREVIOUS's entry was
        // written before the handler was installed (see `Previous`).
        let previous = unsafe { (*PREVIOUS.0.get())[index].as_ptr() };
        // SAFETY: `previous` points at a valid sigaction; no old action is
        // asked for.
        unsafe { libc::sigaction(signal, previous, std::ptr::null_mut()) };
    }
    // Pending until this handler returns (the signal is blocked while it
    // runs), then delivered with the previous disposition.
    // SAFETY: `raise` has no memory preconditions.
    unsafe { libc::raise(signal) };
    errno::set(saved_errno);
}

/// Reading and restoring `errno` in the handler, where it may be clobbered.
mod errno {
    /// This thread's `errno`, where libc exposes it (elsewhere the handler
    /// leaves `errno` as its calls set it).
    fn location() -> Option<*mut libc::c_int> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        // SAFETY: returns this thread's errno, always valid.
        return Some(unsafe { libc::__errno_location() });
        #[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
        // SAFETY: returns this thread's errno, always valid.
        return Some(unsafe { libc::__error() });
        #[allow(unreachable_code, reason = "the platforms above returned already")]
        None
    }

    pub(super) fn get() -> libc::c_int {
        // SAFETY: `location` is this thread's errno, valid for the thread's life.
        location().map_or(0, |errno| unsafe { *errno })
    }

    pub(super) fn set(value: libc::c_int) {
        if let Some(errno) = location() {
            // SAFETY: as in `get`.
            unsafe { *errno = value };
        }
    }
}

/// One running probe's hold on the signal handler: installed by the first
/// running probe, restored to the previous dispositions when the last one
/// ends.
pub(crate) struct Watch {
    slot: Option<usize>,
}

impl Watch {
    /// Installs the handler if no other probe has.
    pub(crate) fn start() -> Self {
        let mut users = USERS.lock().unwrap_or_else(PoisonError::into_inner);
        if *users == 0 {
            for (index, &signal) in HANDLED.iter().enumerate() {
                install(index, signal);
            }
        }
        *users += 1;
        Self { slot: None }
    }

    /// Registers what the handler kills: `-pgid` (the child's process
    /// group) or the child's pid (a child in our group). A 0 or `-0` (no
    /// child) registers nothing: `kill(0)` would be our own group.
    pub(crate) fn register(&mut self, target: libc::pid_t) {
        if target == 0 {
            return;
        }
        self.slot = GROUPS
            .iter()
            .position(|group| group.compare_exchange(0, target, Ordering::AcqRel, Ordering::Relaxed).is_ok());
    }

    /// Unregisters the child's group (before it is reaped, so the handler
    /// never kills a group whose number was reused).
    pub(crate) fn unregister(&mut self) {
        if let Some(slot) = self.slot.take() {
            GROUPS[slot].store(0, Ordering::Release);
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.unregister();
        let mut users = USERS.lock().unwrap_or_else(PoisonError::into_inner);
        *users -= 1;
        if *users == 0 {
            for (index, &signal) in HANDLED.iter().enumerate() {
                if INSTALLED[index].swap(false, Ordering::AcqRel) {
                    // SAFETY: INSTALLED was true, so the entry was written
                    // (see `Previous`); no old action is asked for.
                    unsafe {
                        libc::sigaction(signal, (*PREVIOUS.0.get())[index].as_ptr(), std::ptr::null_mut())
                    };
                }
            }
        }
    }
}

/// Installs [`on_signal`] for `signal` (entry `index` of [`HANDLED`]),
/// saving its disposition first; an ignored signal stays ignored. Called
/// with `USERS` locked.
fn install(index: usize, signal: libc::c_int) {
    // SAFETY: USERS is locked and INSTALLED[index] is false (the previous
    // probe's drop or the handler cleared it), so nothing reads the entry
    // (see `Previous`); sigaction writes a whole struct into it.
    let saved = unsafe {
        let entry = (*PREVIOUS.0.get())[index].as_mut_ptr();
        libc::sigaction(signal, std::ptr::null(), entry) == 0 && (*entry).sa_sigaction != libc::SIG_IGN
    };
    if !saved {
        // Ignored (as in a background job): the parent would not die of
        // it, so the children need not either.
        return;
    }
    // SAFETY: an all-zero sigaction is a valid value of this plain C
    // struct; the fields that matter are set below.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    action.sa_flags = libc::SA_RESTART;
    // SAFETY: `action.sa_mask` is a valid sigset_t to fill; the handled
    // signals are blocked while the handler runs.
    unsafe {
        libc::sigemptyset(&mut action.sa_mask);
        for other in HANDLED {
            libc::sigaddset(&mut action.sa_mask, other);
        }
    }
    INSTALLED[index].store(true, Ordering::Release);
    // SAFETY: `action` is a valid sigaction; no old action is asked for.
    if unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) } != 0 {
        INSTALLED[index].store(false, Ordering::Release);
    }
}
