#![allow(unexpected_cfgs)]
use xplug_sdk::{Environment, Error, ImportArgs, LoadParams, PluginState};

#[derive(ImportArgs)]
#[repr(C)]
pub struct Args {
    pub value: f32,
}

/// Tries to keep a borrow of the host's parameter memory, which is only
/// valid during `load`.
pub struct Keeper {
    mode: &'static str,
}

impl PluginState for Keeper {
    fn load(_env: &Environment<'_>, params: &LoadParams<'_>) -> Result<Self, Error> {
        Ok(Self { mode: params.get("mode").unwrap_or("fast") })
    }
}

#[xplug_sdk::plugin(name = "keeper", state = Keeper)]
mod plugin {
    use super::*;

    #[import]
    fn mode_len(args: &mut Args, state: &Keeper) {
        args.value = state.mode.len() as f32;
    }
}

fn main() {}
