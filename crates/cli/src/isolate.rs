//! Running a command's plugin work in a child process: this binary re-run
//! with `--in-process`, watched by `xplug_probe`.
//!
//! The protocol (stage marks, timeout, signal decoding, killing the child's
//! process group, the parent's signals) lives in the library; this module
//! only builds the child's command line and turns its end into this
//! command's output. The child's side: `main` calls `xplug_probe::install`
//! at start and `xplug_probe::finish` once the command has returned (every
//! plugin unloaded), so a plugin that ends the child earlier is reported
//! (`ProbeFailure::Exited`), not taken for the command's result.
//!
//! `xplug run` is supervised with the same protocol ([`supervise_run`]),
//! but its child is this process forked, not re-run: nothing is executed,
//! loaded or parsed again; the child shares our stdio and has no timeout.

use std::ffi::OsString;
use std::io::Write;
use std::process::Command;
use std::time::Duration;

use xplug_probe::{Probe, ProbeFailure, ProbeOutput, ProbeStatus};

use crate::error::CliError;

/// How commands that exercise a plugin run it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Isolation {
    /// In this process (`--in-process`): a crash takes the tool down.
    InProcess,
    /// In a child process, killed after this long without progress.
    Child(Duration),
}

/// Runs this binary with `args` (after `--in-process`) as a probe child.
pub(crate) fn probe(plugin: &str, args: &[OsString], timeout: Duration) -> Result<ProbeOutput, CliError> {
    let program = std::env::current_exe().map_err(|error| CliError::ProbeUnavailable {
        plugin: plugin.to_owned(),
        source: xplug_providers::Error::Io {
            context: "cannot find the path of the running xplug binary".to_owned(),
            source: std::sync::Arc::new(error),
        },
    })?;
    let mut command = Command::new(program);
    command.arg("--in-process").args(args);
    Probe::new(command)
        .timeout(timeout)
        .run()
        .map_err(|source| CliError::ProbeUnavailable { plugin: plugin.to_owned(), source })
}

/// Re-runs the whole command line in a child: its output is passed on
/// unchanged when it finishes, and a crash, hang or early exit becomes
/// [`CliError::PluginFault`].
pub(crate) fn rerun_whole_command(plugin: &str, timeout: Duration) -> Result<u8, CliError> {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let output = probe(plugin, &args, timeout)?;
    match &output.status {
        ProbeStatus::Exited(code) => {
            forward(&output, Pass::Both);
            Ok(u8::try_from(*code).unwrap_or(1))
        }
        ProbeStatus::Failed(failure) => {
            // Whatever it printed before it died is partial: stdout is
            // dropped (the report is the error), stderr kept for context.
            forward(&output, Pass::StderrOnly);
            Err(CliError::PluginFault { plugin: plugin.to_owned(), failure: failure.clone() })
        }
        _ => Err(CliError::ProbeUnavailable {
            plugin: plugin.to_owned(),
            source: xplug_providers::Error::InvalidRequest {
                reason: "the probe child ended in an unknown way".to_owned(),
            },
        }),
    }
}

/// Runs `work` (the rest of this `xplug run`, in process) in a supervised
/// child forked from this process ([`xplug_probe::supervise`]): the child
/// shares our stdin, stdout and stderr, so the program's output streams
/// out as it comes, and runs without a timeout. `work` reports its own
/// error, as the command would, and returns the exit code, which comes
/// back unchanged.
///
/// When the child dies of a fault (`SIGSEGV`, `SIGBUS`, `SIGILL`, ...: the
/// module's executable code or a plugin), the run is
/// [`CliError::ProgramFault`] (exit 1, not a signal). When it ends by a
/// request to end (`SIGINT`, `SIGTERM`, `SIGHUP`, `SIGQUIT`, `SIGPIPE`),
/// this process ends the same way, as a shell expects. `SIGINT`, `SIGTERM`
/// and `SIGHUP` sent to this process kill the child first, then end this
/// process.
pub(crate) fn supervise_run(function: Option<String>, work: impl FnOnce() -> u8) -> Result<u8, CliError> {
    let output = xplug_probe::supervise(work).map_err(|source| CliError::Unsupervised { source })?;
    match output.status {
        ProbeStatus::Exited(code) => Ok(u8::try_from(code).unwrap_or(1)),
        // Something in the program called `exit`: its status, as in
        // this process.
        ProbeStatus::Failed(ProbeFailure::Exited { code, .. }) => Ok(u8::try_from(code).unwrap_or(1)),
        ProbeStatus::Failed(failure) => {
            if let ProbeFailure::Crashed { signal, .. } = failure
                && signal.is_request_to_end()
            {
                signal.end_this_process();
            }
            Err(CliError::ProgramFault { function, failure })
        }
        _ => Err(CliError::Unsupervised {
            source: xplug_providers::Error::InvalidRequest {
                reason: "the supervised child ended in an unknown way".to_owned(),
            },
        }),
    }
}

/// Whether a debugger (any `ptrace` tracer) is attached to this process:
/// `TracerPid` in `/proc/self/status` (Linux; elsewhere never). `xplug
/// run` then runs in this process, where the debugger sees the fault.
pub(crate) fn debugger_attached() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find_map(|line| line.strip_prefix("TracerPid:"))
            .is_some_and(|tracer| tracer.trim() != "0")
    })
}

/// Which of a child's streams [`forward`] passes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Its stdout and its stderr.
    Both,
    /// Its stderr only (its stdout is partial or not ours to print).
    StderrOnly,
}

/// Writes a child's output to ours, and says on stderr when the probe
/// kept only the first [`xplug_probe::OUTPUT_LIMIT`] bytes of a stream
/// passed on (a cut-off `--json` object would otherwise look like
/// malformed output).
pub(crate) fn forward(output: &ProbeOutput, pass: Pass) {
    // A closed stdout or stderr is not worth a panic.
    if pass == Pass::Both {
        let _ = std::io::stdout().lock().write_all(&output.stdout);
    }
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(&output.stderr);
    for (name, dropped, passed) in
        [("stdout", output.stdout_dropped, pass == Pass::Both), ("stderr", output.stderr_dropped, true)]
    {
        if passed && dropped > 0 {
            let _ = writeln!(
                stderr,
                "xplug: the plugin's child process wrote {dropped} bytes to {name} beyond the {} MiB xplug \
                 keeps; they were dropped, so its {name} above is cut off",
                xplug_probe::OUTPUT_LIMIT >> 20
            );
        }
    }
}
