//! `sample_system`: a stateful plugin, the Rust take on IREE's
//! `system_plugin.c`.
//!
//! `load` reads its parameters, allocates a call counter through the host
//! allocator and keeps the result as plugin state (itself a host
//! allocation); every import receives the state as its context.
//!
//! Load parameters (`key=value`, declared in `#[plugin(params(...))]`, so
//! `xplug inspect` lists them and `load` refuses any other key, suggesting
//! the closest declared one):
//! * `multiplier` (`f32`, default 1): `simple_mul_workgroup` computes
//!   `out = lhs * rhs * multiplier`;
//! * `disable` (`str`, optional): the plugin declines to resolve that
//!   import, leaving it to the next provider; a name that is none of its
//!   imports refuses the load with the plugin's own message.
//!
//! Imports:
//! * `simple_mul_workgroup`, with the args of IREE's custom-dispatch
//!   sample ([`WorkgroupArgs`], from `iree_sample_args`, as
//!   `sample_standalone`'s);
//! * `sample_system_calls`: writes how many `simple_mul_workgroup` calls
//!   this instance served into [`CallsArgs::count`].

use std::sync::atomic::{AtomicU64, Ordering};

use xplug_sdk::abi::StatusCode;
use xplug_sdk::{Environment, Error, HostBox, ImportArgs, ImportError, LoadParams, PluginState};

/// Args of `simple_mul_workgroup` (IREE's sample `params_t`).
pub use iree_sample_args::WorkgroupArgs;

/// Args of `sample_system_calls`.
#[derive(Debug, ImportArgs)]
#[repr(C)]
pub struct CallsArgs {
    /// Output: calls served so far by this plugin instance.
    pub count: u64,
}

/// Per-instance state, created by `load` and shared by every import call.
#[derive(Debug)]
pub struct SystemState {
    multiplier: f32,
    disabled: Option<String>,
    calls: HostBox<AtomicU64>,
}

impl PluginState for SystemState {
    fn load(env: &Environment<'_>, params: &LoadParams<'_>) -> Result<Self, Error> {
        // Declared `f32` with a default: `load` has checked the value is a
        // finite number, and an absent key reads as the default.
        let multiplier: f32 = params.require("multiplier")?;
        // Any text is a `str`, so this check is the plugin's own: a name
        // that is no import would disable nothing.
        let disabled = params.get("disable");
        if let Some(name) = disabled
            && !PLUGIN.symbols().contains(&name)
        {
            return Err(Error::custom(
                StatusCode::INVALID_ARGUMENT,
                format!(
                    "load parameter `disable` has the value `{name}`, which is no import of sample_system; give \
                     one of {}",
                    PLUGIN.symbols().join(", ")
                ),
            ));
        }
        Ok(Self {
            multiplier,
            disabled: disabled.map(str::to_owned),
            calls: env.host_allocator().boxed(AtomicU64::new(0))?,
        })
    }

    fn provides(&self, symbol: &str) -> bool {
        self.disabled.as_deref() != Some(symbol)
    }
}

#[xplug_sdk::plugin(
    name = "sample_system",
    description = "stateful system plugin (xplug sample, Rust)",
    state = SystemState,
    params(
        multiplier: f32 = 1.0 "scales every product of simple_mul_workgroup",
        disable: str "an import name this instance declines to resolve",
    )
)]
mod plugin {
    use super::*;

    #[import("simple_mul_workgroup")]
    fn simple_mul(args: &mut WorkgroupArgs, state: &SystemState) -> Result<(), ImportError> {
        state.calls.fetch_add(1, Ordering::Relaxed);
        // SAFETY: IREE's dispatch convention: `binding + offset` starts this
        // call's slice of `size` elements, the inputs are only read, and the
        // output slice belongs to this call alone.
        let slices = unsafe { args.slices() }?;
        for ((out, lhs), rhs) in slices.out.iter_mut().zip(slices.lhs).zip(slices.rhs) {
            *out = lhs * rhs * state.multiplier;
        }
        Ok(())
    }

    #[import("sample_system_calls")]
    fn calls(args: &mut CallsArgs, state: &SystemState) {
        args.count = state.calls.load(Ordering::Relaxed);
    }
}

pub use plugin::PLUGIN;
