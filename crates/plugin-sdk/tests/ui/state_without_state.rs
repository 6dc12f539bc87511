#![allow(unexpected_cfgs)]
use xplug_sdk::ImportParams;

#[derive(ImportParams)]
#[repr(C)]
pub struct Params {
    pub value: f32,
}

pub struct Settings;

#[xplug_sdk::plugin(name = "no_state")]
mod plugin {
    use super::*;

    #[import]
    fn scale(params: &mut Params, settings: &Settings) {
        let _ = settings;
        params.value *= 2.0;
    }
}

fn main() {}
