//! A manager's configuration, set once on one value before it is built
//! ([`ManagerBuilder`], from [`Manager::builder`]): its capacity, the
//! loaders specs are offered to, the allow-list, the plugins linked into
//! the binary, and the debugging aids of `xplug-debug` (the fatal-signal
//! reporter, GDB JIT announcement and the perf map, `docs/src/operating/debugging.md`),
//! which are process-wide by nature: the last manager built decides.

use std::sync::Arc;

use xplug_providers::{AllowList, LoadParamList, Loader, STATIC, static_plugins};

use crate::error::Error;
use crate::manager::{Manager, Shared};
use crate::registry::Registry;

/// Set to `1` to ask [`ManagerBuilder::crash_reporter_from_env`] (and
/// `xplug run`) for the fatal-signal reporter.
pub const CRASH_REPORT_ENV: &str = "XPLUG_CRASH_REPORT";

/// Set to `1` to make every embedded-ELF image append its functions to
/// `/tmp/perf-<pid>.map` (read by `xplug-debug` when the first image is
/// mapped; [`ManagerBuilder::perf_map`] does the same from code).
pub const PERF_MAP_ENV: &str = xplug_debug::perf::PERF_MAP_ENV;

/// Whether [`ManagerBuilder::build`] installs the crash reporter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum CrashReporter {
    #[default]
    Off,
    On,
    FromEnv,
}

/// Everything a [`Manager`] is configured with, set on one value and
/// applied by [`ManagerBuilder::build`]. [`Manager::new`] is the default:
/// unbounded, the linked-in loaders, no allow-list of its own, no static
/// plugins, the debugging aids as the environment sets them.
///
/// ```
/// use xplug_manager::Manager;
///
/// let manager = Manager::builder().capacity(4).static_plugins().build()?;
/// assert_eq!(manager.capacity(), Some(4));
/// # Ok::<(), xplug_manager::Error>(())
/// ```
#[derive(Default)]
#[must_use]
pub struct ManagerBuilder {
    capacity: Option<usize>,
    /// Loaders offered a spec before the linked-in ones, first first.
    loaders: Vec<&'static dyn Loader>,
    allow_list: Option<AllowList>,
    static_plugins: bool,
    crash_reporter: CrashReporter,
    announce_images: Option<bool>,
    perf_map: bool,
}

impl std::fmt::Debug for ManagerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagerBuilder")
            .field("capacity", &self.capacity)
            .field("loaders", &self.loaders.iter().map(|loader| loader.name()).collect::<Vec<_>>())
            .field("allow_list", &self.allow_list.is_some())
            .field("static_plugins", &self.static_plugins)
            .field("crash_reporter", &self.crash_reporter)
            .field("announce_images", &self.announce_images)
            .field("perf_map", &self.perf_map)
            .finish()
    }
}

impl Manager {
    /// The configuration of a new manager, to set and then
    /// [`build`](ManagerBuilder::build).
    pub fn builder() -> ManagerBuilder {
        ManagerBuilder::default()
    }
}

impl ManagerBuilder {
    /// At most `capacity` providers; registering more fails with
    /// [`Error::CapacityReached`] (`RESOURCE_EXHAUSTED`), like IREE's
    /// fixed-capacity manager.
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = Some(capacity);
        self
    }

    /// Offers specs to `loader` before every loader given earlier and every
    /// linked-in one (a loader registered with
    /// [`LoaderRegistration`](xplug_providers::LoaderRegistration) is in
    /// every manager's list already).
    pub fn loader(mut self, loader: &'static dyn Loader) -> Self {
        self.loaders.insert(0, loader);
        self
    }

    /// Refuses every plugin whose code is not on `list`
    /// (`docs/src/reference/loading.md#allow-lists`): each spec's bytes are read once,
    /// hashed and checked before anything is mapped, as for a pinned spec.
    /// Plugins linked into the program ([`Manager::load_static`],
    /// [`ManagerBuilder::static_plugins`], `static:` specs) are excepted.
    /// The list named by `XPLUG_ALLOWED_PLUGINS`, when set, applies as
    /// well: a plugin must be on both (set but empty, the variable refuses
    /// every load: [`AllowList::from_env`]).
    ///
    /// ```
    /// use xplug_manager::providers::{AllowList, Error as LoadError};
    /// use xplug_manager::{Error, Manager};
    ///
    /// let list = AllowList::parse("# nothing approved yet\n", "allowed.txt")?;
    /// let manager = Manager::builder().allow_only(list).build()?;
    /// let plugin = std::env::temp_dir().join(format!("xplug-doc-{}.so", std::process::id()));
    /// std::fs::write(&plugin, b"any bytes")?;
    /// // SAFETY: nothing is mapped: the bytes are refused first.
    /// let error = unsafe { manager.load_spec(&plugin.to_string_lossy()) }.unwrap_err();
    /// assert!(matches!(error, Error::PluginLoad { source: LoadError::NotAllowed { .. }, .. }), "{error}");
    /// assert!(manager.is_empty());
    /// # std::fs::remove_file(&plugin)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn allow_only(mut self, list: AllowList) -> Self {
        self.allow_list = Some(list);
        self
    }

    /// Registers every plugin linked into the binary ([`static_plugins`],
    /// in name order, with no parameters) first, so that everything
    /// registered later overrides them.
    pub fn static_plugins(mut self) -> Self {
        self.static_plugins = true;
        self
    }

    /// Installs the process-wide fatal-signal reporter: on `SIGSEGV`,
    /// `SIGBUS`, `SIGILL` or `SIGFPE` it writes one line naming the
    /// plugin, function and offset to stderr ("`xplug: SIGSEGV at
    /// crash_plugin_kernel+0xf in crash_plugin.sos (pc 0x..., fault
    /// address 0x10)`"), using only async-signal-safe calls, then lets the
    /// signal kill the process as it would have. Plugins loaded afterwards
    /// are named. Nothing is prepared at load time in a process that never
    /// asks for it.
    pub fn crash_reporter(mut self) -> Self {
        self.crash_reporter = CrashReporter::On;
        self
    }

    /// [`ManagerBuilder::crash_reporter`] when the environment variable
    /// [`CRASH_REPORT_ENV`] is `1` when the manager is built.
    pub fn crash_reporter_from_env(mut self) -> Self {
        self.crash_reporter = CrashReporter::FromEnv;
        self
    }

    /// Announces every embedded-ELF image mapped from now on to gdb and
    /// lldb through GDB's JIT interface (`on`), or stops doing so
    /// (process-wide). On by default (`XPLUG_GDB_JIT=0` or `1` decides
    /// too); it costs a symbol-table read and a small ELF per image load,
    /// about 7 µs (`docs/src/operating/debugging.md#cost`).
    pub fn announce_images_to_debuggers(mut self, on: bool) -> Self {
        self.announce_images = Some(on);
        self
    }

    /// Makes every embedded-ELF image mapped from now on append its
    /// functions to `/tmp/perf-<pid>.map` (`START SIZE name`, hex), the
    /// file `perf report` reads for code it finds no file for
    /// (process-wide; off unless asked for here or [`PERF_MAP_ENV`] is
    /// `1`).
    pub fn perf_map(mut self) -> Self {
        self.perf_map = true;
        self
    }

    /// The manager, with the debugging aids applied and the static plugins
    /// registered.
    ///
    /// # Errors
    /// [`Error::DebuggingAid`] when the crash reporter was asked for on a
    /// host it does not support (it reads the program counter on Linux
    /// x86_64 and aarch64); [`Error::StaticPluginLoad`] naming a static
    /// plugin that failed to load; [`Error::CapacityReached`] when the
    /// static plugins do not fit, checked before any is loaded.
    pub fn build(self) -> Result<Manager, Error> {
        let install = match self.crash_reporter {
            CrashReporter::Off => false,
            CrashReporter::On => true,
            CrashReporter::FromEnv => std::env::var_os(CRASH_REPORT_ENV).is_some_and(|value| value == "1"),
        };
        if install {
            xplug_debug::install_crash_reporter(None)
                .map_err(|source| Error::DebuggingAid { aid: "the crash reporter", source })?;
        }
        if let Some(on) = self.announce_images {
            xplug_debug::gdb::set_enabled(on);
        }
        if self.perf_map {
            xplug_debug::perf::enable();
        }
        let mut loaders = self.loaders;
        loaders.extend(xplug_providers::loaders());
        let manager = Manager::from_shared(Shared {
            registry: Registry::new(self.capacity),
            loaders,
            allow_list: self.allow_list.map(Arc::new),
        });
        if self.static_plugins {
            let registrations = static_plugins();
            if let Some(capacity) = self.capacity
                && registrations.len() > capacity
            {
                return Err(Error::CapacityReached {
                    capacity,
                    provider: registrations.first().map_or("?", |r| r.name()).to_owned(),
                });
            }
            for registration in registrations {
                let plugin =
                    STATIC.registration_code(registration).load(&LoadParamList::new()).map_err(|source| {
                        Error::StaticPluginLoad { name: registration.name().to_owned(), source }
                    })?;
                manager.register_plugin(plugin)?;
            }
        }
        Ok(manager)
    }
}
