#![allow(unexpected_cfgs)]
use xplug_sdk::ImportArgs;

#[derive(ImportArgs)]
#[repr(C)]
pub struct Args {
    pub value: f32,
}

pub struct Settings;

#[xplug_sdk::plugin(name = "no_state")]
mod plugin {
    use super::*;

    #[import]
    fn scale(args: &mut Args, settings: &Settings) {
        let _ = settings;
        args.value *= 2.0;
    }
}

fn main() {}
