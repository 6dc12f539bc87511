//! `crash_plugin`: a plugin that crashes on purpose, for the debugging
//! tests (`docs/src/operating/debugging.md`).
//!
//! - Loaded without parameters (as `xplug check` loads it), its `load`
//!   calls [`crash_plugin_load`], which writes to address 0x10.
//! - Loaded with `crash=kernel`, it loads; its import `crashing_kernel`
//!   (args: [`KernelArgs`]) then calls [`crash_plugin_kernel`], which
//!   writes to address 0x10. So does its `simple_mul_workgroup` (args:
//!   [`WorkgroupArgs`], IREE's sample layout), the import the IREE
//!   end-to-end programs call, so a compiled program run by `xplug run`
//!   crashes in it.
//!
//! Both functions are `#[no_mangle]` and never inlined, so crash reports,
//! gdb and perf show them under these names. Built as a shared library
//! (`xplug_fixtures::build_rust_plugin`) and as a `.sos` that keeps its
//! symbol table (`xplug_fixtures::build_rust_sos`).
#![no_std]

use xplug_sdk::{Environment, Error, ImportArgs, ImportError, LoadParams, PluginState};

/// Args of `crashing_kernel`.
#[derive(Debug, ImportArgs)]
#[repr(C)]
pub struct KernelArgs {
    /// Ignored: the kernel crashes before reading it.
    pub value: i32,
}

/// Args of `simple_mul_workgroup`: IREE's sample `params_t`, as the IREE
/// end-to-end programs pass them (never read: the kernel crashes first).
pub use iree_sample_args::WorkgroupArgs;

/// The plugin's state: loading it is where the default crash happens.
#[derive(Debug)]
pub struct Armed;

impl PluginState for Armed {
    fn load(_env: &Environment<'_>, params: &LoadParams<'_>) -> Result<Self, Error> {
        if params.get("crash") != Some("kernel") {
            crash_plugin_load();
        }
        Ok(Self)
    }
}

/// Writes through an address no process maps (0x10, in the never-mapped
/// first page): a `SIGSEGV` at a known instruction. The address comes
/// through `black_box`, so the compiler cannot see it and turn the store
/// into a trap. Each caller stores its own `value`, so the linker's
/// identical-code folding (`--icf=all`) keeps both functions.
#[inline(always)]
fn write_to_the_first_page(value: i32) {
    let address = core::hint::black_box(0x10_usize) as *mut i32;
    // SAFETY: none; this is the fault the plugin exists to cause.
    unsafe { core::ptr::write_volatile(address, value) };
}

/// Crashes: called by `load` unless `crash=kernel`.
#[inline(never)]
#[unsafe(no_mangle)]
pub extern "C" fn crash_plugin_load() {
    write_to_the_first_page(1);
}

/// Crashes: called by the `crashing_kernel` import.
#[inline(never)]
#[unsafe(no_mangle)]
pub extern "C" fn crash_plugin_kernel() {
    write_to_the_first_page(2);
}

#[xplug_sdk::plugin(
    name = "crash_plugin",
    description = "crashes on purpose (debugging tests)",
    features(standalone),
    state = Armed
)]
mod plugin {
    use super::*;

    #[import]
    fn crashing_kernel(_params: &mut KernelArgs, _state: &Armed) -> Result<(), ImportError> {
        crash_plugin_kernel();
        Ok(())
    }

    #[import("simple_mul_workgroup")]
    fn crashing_mul(_args: &mut WorkgroupArgs, _state: &Armed) -> Result<(), ImportError> {
        crash_plugin_kernel();
        Ok(())
    }
}

pub use plugin::PLUGIN;
