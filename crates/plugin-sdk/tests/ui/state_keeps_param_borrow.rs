#![allow(unexpected_cfgs)]
use xplug_sdk::{Environment, Error, ImportParams, LoadParams, PluginState};

#[derive(ImportParams)]
#[repr(C)]
pub struct Params {
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
    fn mode_len(params: &mut Params, state: &Keeper) {
        params.value = state.mode.len() as f32;
    }
}

fn main() {}
