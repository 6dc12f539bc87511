//! The runtime (one VM instance) and devices whose executables import
//! through xplug's manager.

use std::sync::Arc;

use xplug_manager::{CImportProvider, Manager};
use xplug_profile::{ImportProfile, ProfileOptions};

use crate::Error;
use crate::provider::{ExecutableImports, ImportRecording, IreeImportProvider};
use crate::sys;

/// IREE's runtime: a VM instance with the HAL types registered, and the
/// proactor pool its devices share. Cheap to clone (shared).
///
/// ```no_run
/// use xplug_iree::{DeviceKind, Runtime};
/// use xplug_manager::Manager;
///
/// let runtime = Runtime::new()?;
/// // SAFETY: the plugin is trusted code built from this workspace.
/// let manager = unsafe { Manager::from_specs(["target/plugins/release/libsample_system.so"]) }?;
/// let device = runtime.device(DeviceKind::LocalSync, manager)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<RuntimeInner>,
}

pub(crate) struct RuntimeInner {
    // Field order is drop order: the pool outlives nothing that uses it
    // because devices hold the runtime.
    pub(crate) proactor_pool: sys::ProactorPool,
    pub(crate) instance: sys::Instance,
}

impl Runtime {
    /// Creates IREE's VM instance and registers the HAL's types.
    ///
    /// # Errors
    /// [`Error::Runtime`] when IREE cannot allocate the instance or threads.
    pub fn new() -> Result<Self, Error> {
        let allocator = sys::system_allocator();
        let instance = sys::Instance::with_hal_types(allocator)
            .map_err(|(what, status)| Error::Runtime { what, source: status.into() })?;
        let proactor_pool = sys::ProactorPool::new(allocator)
            .map_err(|status| Error::Runtime { what: "proactor pool", source: status.into() })?;
        Ok(Self { inner: Arc::new(RuntimeInner { proactor_pool, instance }) })
    }

    /// A device whose executables get every import from `manager`.
    ///
    /// # Errors
    /// [`Error::Device`] when IREE cannot create the device.
    pub fn device(&self, kind: DeviceKind, manager: Manager) -> Result<Device, Error> {
        DeviceBuilder::new(self, kind, manager).build()
    }

    /// A device whose executables import through another C import
    /// provider instead of an xplug [`Manager`]: any `{ self, resolve }`
    /// pair, such as IREE's own plugin manager's (the comparison anchor of
    /// the benchmarks, from `tests/iree-reference`). The device keeps
    /// `owner` alive; its [`Device::manager`] is an empty xplug manager.
    ///
    /// # Errors
    /// [`Error::Device`] when IREE cannot create the device.
    ///
    /// # Safety
    /// `provider` must stay valid, callable from any thread with IREE's
    /// resolve contract (`docs/src/reference/abi.md`), for as long as `owner` lives: the
    /// device's loaders call it on every executable load until the device
    /// is destroyed.
    pub unsafe fn device_with_c_provider(
        &self,
        kind: DeviceKind,
        provider: CImportProvider<'_>,
        owner: Arc<dyn std::any::Any + Send + Sync>,
    ) -> Result<Device, Error> {
        let xplug =
            Arc::new(IreeImportProvider::for_device(Manager::new(), kind.name(), ImportRecording::Off, None));
        // SAFETY: forwarded to the caller.
        let imports = unsafe { sys::DeviceImports::foreign(provider, owner) };
        let handles = create_device(self, kind, false, imports)?;
        Ok(Device { inner: Arc::new(DeviceInner { handles, provider: xplug, runtime: self.clone() }) })
    }
}

/// Which of IREE's CPU devices to create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeviceKind {
    /// IREE's `local-sync`: work runs inline on the calling thread.
    LocalSync,
    /// IREE's `local-task`: work runs on a pool of worker threads.
    LocalTask {
        /// Worker threads, unpinned. 0: the executors IREE's own local-task
        /// driver makes from its task flags ([`crate::set_iree_flags`]),
        /// by default one worker per physical core of the calling thread's
        /// NUMA node, as `iree-run-module` runs.
        workers: usize,
    },
}

impl DeviceKind {
    /// IREE's name for the device (`local-sync`, `local-task`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::LocalSync => "local-sync",
            Self::LocalTask { .. } => "local-task",
        }
    }

    /// Parses IREE's device name or URI (`local-task`, `local-task://`), as
    /// `iree-run-module --device=` takes it: `local-task` gets the executors
    /// of IREE's task flags (`workers: 0`).
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        match name.strip_suffix("://").unwrap_or(name) {
            "local-sync" => Some(Self::LocalSync),
            "local-task" => Some(Self::LocalTask { workers: 0 }),
            _ => None,
        }
    }
}

/// Options for a device beyond its kind and manager.
pub struct DeviceBuilder<'runtime> {
    runtime: &'runtime Runtime,
    kind: DeviceKind,
    manager: Manager,
    recording: ImportRecording,
    profile: Option<ProfileOptions>,
    abort_on_failure: bool,
}

impl<'runtime> DeviceBuilder<'runtime> {
    /// A device of `kind` on `runtime` resolving through `manager`.
    #[must_use]
    pub fn new(runtime: &'runtime Runtime, kind: DeviceKind, manager: Manager) -> Self {
        Self {
            runtime,
            kind,
            manager,
            recording: ImportRecording::Off,
            profile: None,
            abort_on_failure: false,
        }
    }

    /// `local-task` only: aborts the process on the first failure within a
    /// task queue, IREE's `--task_abort_on_failure`; off by default.
    #[must_use]
    pub fn abort_on_failure(mut self, abort: bool) -> Self {
        self.abort_on_failure = abort;
        self
    }

    /// Whether the device's provider records each executable's imports
    /// ([`Device::executable_imports`]); off by default.
    #[must_use]
    pub fn recording(mut self, recording: ImportRecording) -> Self {
        self.recording = recording;
        self
    }

    /// Profiles every import call of the executables the device loads
    /// ([`Device::import_profile`], `docs/src/operating/profiles.md`); off by default,
    /// and then no wrapper is installed: executables call the plugins'
    /// functions directly.
    #[must_use]
    pub fn profile(mut self, options: ProfileOptions) -> Self {
        self.profile = Some(options);
        self
    }

    /// Creates the device.
    ///
    /// # Errors
    /// [`Error::Device`] when IREE cannot create it.
    pub fn build(self) -> Result<Device, Error> {
        let provider = Arc::new(IreeImportProvider::for_device(
            self.manager,
            self.kind.name(),
            self.recording,
            self.profile,
        ));
        let imports = sys::DeviceImports::resolver(Arc::clone(&provider));
        let handles = create_device(self.runtime, self.kind, self.abort_on_failure, imports)?;
        Ok(Device { inner: Arc::new(DeviceInner { handles, provider, runtime: self.runtime.clone() }) })
    }
}

/// The IREE device and its one device group, its loaders importing
/// through `imports`.
fn create_device(
    runtime: &Runtime,
    kind: DeviceKind,
    abort_on_failure: bool,
    imports: sys::DeviceImports,
) -> Result<sys::DeviceHandles, Error> {
    let (code, workers) = match kind {
        DeviceKind::LocalSync => (sys::DEVICE_LOCAL_SYNC, 0),
        DeviceKind::LocalTask { workers } => (sys::DEVICE_LOCAL_TASK, workers),
    };
    sys::DeviceHandles::create(code, workers, abort_on_failure, &runtime.inner.proactor_pool, imports)
        .map_err(|status| Error::Device { device: kind.name(), source: status.into() })
}

/// One of IREE's CPU devices. Its embedded-ELF and system-library loaders
/// resolve every import of every executable through the device's manager.
/// Cheap to clone (shared); sessions keep it alive.
#[derive(Clone)]
pub struct Device {
    pub(crate) inner: Arc<DeviceInner>,
}

pub(crate) struct DeviceInner {
    // Drop order: the IREE device, its group and the imports' owner
    // (`sys::DeviceHandles`), then our reference to xplug's provider.
    pub(crate) handles: sys::DeviceHandles,
    pub(crate) provider: Arc<IreeImportProvider>,
    pub(crate) runtime: Runtime,
}

impl Device {
    /// IREE's name for the device.
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.inner.provider.device_name()
    }

    /// The manager resolving this device's imports.
    #[must_use]
    pub fn manager(&self) -> &Manager {
        self.inner.provider.manager()
    }

    /// Whether the device resolves through a foreign C provider
    /// ([`Runtime::device_with_c_provider`]) instead of xplug's manager.
    #[must_use]
    pub fn uses_c_provider(&self) -> bool {
        self.inner.handles.imports.is_foreign()
    }

    /// What each executable loaded so far asked for and who resolved it
    /// (empty unless the device was built with recording on).
    #[must_use]
    pub fn executable_imports(&self) -> Vec<ExecutableImports> {
        self.inner.provider.log()
    }

    /// Every import call of the executables loaded so far, per executable
    /// and import: the provider, calls, total, mean, percentiles and
    /// maximum time, and the first calls as timed slices; `None` unless the
    /// device was built with [`DeviceBuilder::profile`]. Counting is per
    /// thread, so `local-task` workers do not contend; a read after a call
    /// returned is exact (`docs/src/operating/profiles.md`).
    ///
    /// ```no_run
    /// use xplug_iree::{DeviceBuilder, DeviceKind, Module, ProfileOptions, Runtime, Session, TensorView};
    /// use xplug_manager::Manager;
    ///
    /// // SAFETY: the plugin is trusted code built from this workspace.
    /// let manager = unsafe { Manager::from_specs(["target/plugins/release/libsample_system.so"]) }?;
    /// let runtime = Runtime::new()?;
    /// let device = DeviceBuilder::new(&runtime, DeviceKind::LocalTask { workers: 2 }, manager)
    ///     .profile(ProfileOptions::default())
    ///     .build()?;
    /// let module = Module::from_file(&runtime, "mul_call.vmfb")?;
    /// let session = Session::new(&device, &module)?;
    /// let a = [1.0f32; 640];
    /// session.prepare("mul", [TensorView::new(&[640], &a)?, TensorView::new(&[640], &a)?])?.invoke()?;
    /// let profile = device.import_profile().expect("built with a profile");
    /// for import in &profile.imports {
    ///     // mul_call.mlir calls its import once per 64 elements: 10 calls.
    ///     println!(
    ///         "#{} {} ({:?}): {} calls, p50 {:?}, p99 {:?}, max {:?}",
    ///         import.executable,
    ///         import.name,
    ///         import.provider,
    ///         import.calls,
    ///         import.percentile(0.5),
    ///         import.percentile(0.99),
    ///         import.max
    ///     );
    /// }
    /// # Ok::<(), xplug_iree::Report>(())
    /// ```
    #[must_use]
    pub fn import_profile(&self) -> Option<ImportProfile> {
        self.inner.provider.profile()
    }
}
