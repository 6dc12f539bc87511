//! The flags every command takes.

use crate::isolate::Isolation;

/// The flags every command takes.
#[derive(Debug, clap::Args)]
pub(crate) struct GlobalArgs {
    /// Print exactly one JSON object on stdout instead of the human report.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// inspect, check, bench, call and run: work in this process instead
    /// of in a child process (a crash of a plugin or of a module's code
    /// then kills xplug, with a core dump where enabled; for debuggers,
    /// and `run` picks it by itself under one). Other commands always run
    /// in this process and ignore it.
    #[arg(long, global = true)]
    pub(crate) in_process: bool,
    /// Seconds a plugin may run without progress before its child process
    /// is killed (inspect, check, bench and call).
    #[arg(long, global = true, value_name = "SECONDS", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=86_400))]
    pub(crate) timeout: u32,
}

impl GlobalArgs {
    /// How commands that exercise a plugin run it: `--in-process`, or in a
    /// child killed after `--timeout` seconds without progress.
    pub(crate) fn isolation(&self) -> Isolation {
        if self.in_process {
            Isolation::InProcess
        } else {
            Isolation::Child(std::time::Duration::from_secs(u64::from(self.timeout)))
        }
    }
}
