//! Sessions: a module loaded on a device, ready to call. Made by
//! [`crate::SessionBuilder`] (`builder.rs`), called through
//! [`Session::prepare`] (`call.rs`).

use crate::module::Module;
use crate::runtime::Device;
use crate::sys;

/// A module loaded on a device, ready to call: IREE's VM context holding
/// the HAL module over the device and the program module. Loading creates
/// the module's executables, so this is where every import is resolved.
///
/// A function is called in one way: [`Session::prepare`] finds it and
/// makes its arguments, [`Call::invoke`](crate::Call::invoke) runs it,
/// and the [`CallResults`](crate::CallResults) stay on the device until
/// read (copied with [`CallResults::values`](crate::CallResults::values),
/// in place with [`CallResults::tensor`](crate::CallResults::tensor)).
/// Calls may be made from several threads at once, as IREE allows for a
/// context.
///
/// The crate documentation has a whole example.
pub struct Session {
    // Drop order: the context (which holds the modules' state and the
    // executables) before the modules and the device.
    pub(crate) context: sys::Context,
    pub(crate) _hal_module: sys::VmModule,
    // IREE's `io_parameters` module, which holds the parameter archives.
    pub(crate) _parameters_module: Option<sys::VmModule>,
    pub(crate) _modules: Vec<Module>,
    pub(crate) module: Module,
    pub(crate) device: Device,
}

impl Session {
    /// The device the session runs on.
    #[must_use]
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The module the session runs.
    #[must_use]
    pub fn module(&self) -> &Module {
        &self.module
    }
}
