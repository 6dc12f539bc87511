//! The debugging aids a host using the manager can switch on
//! (`docs/debugging.md`): the fatal-signal reporter, GDB JIT registration
//! and the perf map.
//! All are process-wide and live in `xplug-debug`, which the loaders of
//! `xplug-providers` tell about every plugin's code through its one
//! code-mapped hook; this module is the host's door to them, with the
//! environment variables that turn them on.

use crate::{Error, Manager};

/// Set to `1` to ask [`Manager::install_crash_reporter_from_env`] (and
/// `xplug run`) for the fatal-signal reporter.
pub const CRASH_REPORT_ENV: &str = "XPLUG_CRASH_REPORT";

/// Set to `1` to make every embedded-ELF image append its functions to
/// `/tmp/perf-<pid>.map` (read by `xplug-debug` when the first image is
/// mapped; [`Manager::enable_perf_map`] does the same from code).
pub const PERF_MAP_ENV: &str = xplug_debug::perf::PERF_MAP_ENV;

impl Manager {
    /// Installs the process-wide fatal-signal reporter: on `SIGSEGV`,
    /// `SIGBUS`, `SIGILL` or `SIGFPE` it writes one line naming the
    /// plugin, function and offset to stderr ("`xplug: SIGSEGV at
    /// crash_plugin_kernel+0xf in crash_plugin.sos (pc 0x..., fault address
    /// 0x10)`"), using only async-signal-safe calls, then lets the signal
    /// kill the process as it would have. Plugins loaded afterwards are
    /// named: call it before loading any. Nothing is prepared at load time
    /// in a process that never calls it.
    ///
    /// ```no_run
    /// use xplug_manager::Manager;
    ///
    /// Manager::install_crash_reporter()?;
    /// let manager = Manager::new();
    /// // ... manager.load_spec("crash_plugin.sos?crash=kernel") ...
    /// # Ok::<(), xplug_manager::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::DebuggingAid`] on a host the reporter does not support
    /// (it reads the program counter on Linux x86_64 and aarch64).
    pub fn install_crash_reporter() -> Result<(), Error> {
        xplug_debug::install_crash_reporter(None)
            .map_err(|source| Error::DebuggingAid { aid: "the crash reporter", source })
    }

    /// [`Manager::install_crash_reporter`] when the environment variable
    /// [`CRASH_REPORT_ENV`] is `1`; returns whether it was installed.
    ///
    /// # Errors
    /// As [`Manager::install_crash_reporter`].
    pub fn install_crash_reporter_from_env() -> Result<bool, Error> {
        if std::env::var_os(CRASH_REPORT_ENV).is_some_and(|value| value == "1") {
            Self::install_crash_reporter()?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Announces every embedded-ELF image mapped from now on to gdb and
    /// lldb through GDB's JIT interface (`on`), or stops doing so. On by
    /// default (`XPLUG_GDB_JIT=0` or `1` decides too); it costs a
    /// symbol-table read and a small ELF per image load, about 7 µs
    /// (`docs/debugging.md#cost`).
    pub fn announce_images_to_debuggers(on: bool) {
        xplug_debug::gdb::set_enabled(on);
    }

    /// Makes every embedded-ELF image mapped from now on append its
    /// functions to `/tmp/perf-<pid>.map` (`START SIZE name`, hex), the
    /// file `perf report` reads for code it finds no file for. Off unless
    /// this is called or [`PERF_MAP_ENV`] is `1`.
    pub fn enable_perf_map() {
        xplug_debug::perf::enable();
    }
}
