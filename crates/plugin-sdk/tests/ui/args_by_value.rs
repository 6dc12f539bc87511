#![allow(unexpected_cfgs)]
use xplug_sdk::ImportArgs;

#[derive(ImportArgs)]
#[repr(C)]
pub struct Args {
    pub value: f32,
}

#[xplug_sdk::plugin(name = "by_value")]
mod plugin {
    use super::*;

    #[import]
    fn scale(args: Args) {
        let _ = args.value;
    }
}

fn main() {}
