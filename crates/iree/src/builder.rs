//! Setting up a [`Session`]: the modules of its context, its parameter
//! archives, and loading it (which resolves every import).

use std::path::PathBuf;

use crate::error::Error;
use crate::module::Module;
use crate::parameters::{self, ParameterArchiveMode};
use crate::runtime::Device;
use crate::session::Session;
use crate::sys;

/// Sets up a [`Session`] with parameter archives and several modules, as
/// `iree-run-module --parameters=... --module=A --module=B` does; made by
/// [`Session::builder`], loaded by [`SessionBuilder::build`].
///
/// The context holds, in this order: IREE's HAL module over the device,
/// IREE's `io_parameters` module when a module imports from it or
/// archives were given (one index provider per scope, each archive opened
/// in the [`ParameterArchiveMode`] of [`SessionBuilder::parameter_archive_mode`]: read
/// with IREE's file API by default), the
/// modules given to [`SessionBuilder::module`] in order, then the
/// session's module, whose functions [`Session::prepare`] calls.
pub struct SessionBuilder<'a> {
    device: &'a Device,
    module: &'a Module,
    modules: Vec<Module>,
    parameters: Vec<(String, PathBuf)>,
    mode: ParameterArchiveMode,
}

impl Session {
    /// Loads `module` on `device`: creates the context and runs the
    /// module's initialisers, which create its executables and resolve
    /// their imports through the device's manager.
    ///
    /// # Errors
    /// [`Error::UnresolvedImports`] when an executable needs an import no
    /// provider resolves (the error names the executable, and its source the
    /// missing names with suggestions); [`Error::ModuleInit`] when IREE
    /// fails for another reason.
    pub fn new(device: &Device, module: &Module) -> Result<Self, Error> {
        Self::builder(device, module).build()
    }

    /// A session of `module` on `device` with more to set before it loads:
    /// parameter archives ([`SessionBuilder::parameter_archive`]) and modules it
    /// imports from ([`SessionBuilder::module`]).
    #[must_use]
    pub fn builder<'a>(device: &'a Device, module: &'a Module) -> SessionBuilder<'a> {
        SessionBuilder {
            device,
            module,
            modules: Vec::new(),
            parameters: Vec::new(),
            mode: ParameterArchiveMode::default(),
        }
    }
}

impl SessionBuilder<'_> {
    /// Loads `module` before the session's own module (and after those
    /// given before it), so that modules later in the list can import its
    /// functions, as iree-run-module's `--module` flags in order.
    #[must_use]
    pub fn module(mut self, module: &Module) -> Self {
        self.modules.push(module.clone());
        self
    }

    /// Serves the parameters of the archive at `path` (`.irpa`, `.gguf` or
    /// `.safetensors`, by its extension, as IREE's parser registry reads
    /// them) under `scope` (`""` for parameters named without a scope),
    /// as `iree-run-module --parameters=SCOPE=PATH`. Several archives may
    /// share a scope; the first holding a key serves it.
    #[must_use]
    pub fn parameter_archive(mut self, scope: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        self.parameters.push((scope.into(), path.into()));
        self
    }

    /// Opens every archive in `mode` (default: [`ParameterArchiveMode::File`]), as
    /// `iree-run-module --parameter_mode=MODE`.
    #[must_use]
    pub fn parameter_archive_mode(mut self, mode: ParameterArchiveMode) -> Self {
        self.mode = mode;
        self
    }

    /// Opens the archives, creates the context with every module and runs
    /// the modules' initialisers (which create the executables, resolving
    /// their imports through the device's manager, and load the
    /// parameters they read at start-up). Nothing stays open on failure.
    ///
    /// # Errors
    /// [`Error::ParameterFile`] when an archive cannot be opened,
    /// [`Error::NotAFile`] when it is not a regular file,
    /// [`Error::ParameterArchive`] when IREE cannot index it;
    /// [`Error::ParameterScope`] when the program reads a scope no archive
    /// was given for, [`Error::ParameterMissing`] when it reads a key no
    /// archive holds; [`Error::UnresolvedImports`] when an executable needs
    /// an import no provider resolves (the error names the executable, and
    /// its source the missing names with suggestions); [`Error::ModuleInit`]
    /// when IREE fails for another reason.
    pub fn build(self) -> Result<Session, Error> {
        let Self { device, module, modules, parameters, mode } = self;
        let instance = &device.inner.runtime.inner.instance;
        let init_error = |status: sys::Status| Error::ModuleInit {
            module: module.inner.label.clone(),
            device: device.name(),
            source: status.into(),
        };
        let scopes = parameters::index_parameters(&parameters, mode)?;
        let hal_module = sys::VmModule::hal(instance, &device.inner.handles.group).map_err(init_error)?;
        let mut wants_parameters = !scopes.is_empty();
        for needing in modules.iter().chain([module]) {
            wants_parameters |= needing.inner.vm.depends_on(b"io_parameters").map_err(init_error)?;
        }
        let parameters_module = if wants_parameters {
            let pairs: Vec<(&str, &sys::ParameterIndex)> =
                scopes.iter().map(|scope| (scope.scope.as_str(), &scope.index)).collect();
            Some(sys::VmModule::parameters(instance, &pairs).map_err(init_error)?)
        } else {
            None
        };
        let before = device.inner.provider.log_len();
        let mut vm_modules: Vec<&sys::VmModule> = vec![&hal_module];
        vm_modules.extend(parameters_module.as_ref());
        vm_modules.extend(modules.iter().chain([module]).map(|module| &*module.inner.vm));
        let context = sys::context_create(instance, &vm_modules).map_err(|status| {
            match device.inner.provider.failure_since(before) {
                Some(record) => Error::UnresolvedImports {
                    module: module.inner.label.clone(),
                    device: device.name(),
                    executable: record.ordinal,
                    source: Box::new(record.failure.expect("failure_since returns failed records")),
                },
                None => parameters::parameter_error(&status, &module.inner.label, &scopes)
                    .unwrap_or_else(|| init_error(status)),
            }
        })?;
        Ok(Session {
            context,
            _hal_module: hal_module,
            _parameters_module: parameters_module,
            _modules: modules,
            module: module.clone(),
            device: device.clone(),
        })
    }
}
