#![allow(unexpected_cfgs)]
use xplug_sdk::ImportArgs;

#[derive(ImportArgs)]
#[repr(C)]
pub struct Args {
    pub value: f32,
}

#[xplug_sdk::plugin(name = "bad_return")]
mod plugin {
    use super::*;

    #[import]
    fn scale(args: &mut Args) -> bool {
        args.value *= 2.0;
        true
    }
}

fn main() {}
