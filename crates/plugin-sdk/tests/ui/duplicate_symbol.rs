#![allow(unexpected_cfgs)]
use xplug_sdk::ImportArgs;

#[derive(ImportArgs)]
#[repr(C)]
pub struct Args {
    pub value: f32,
}

#[xplug_sdk::plugin(name = "dup")]
mod plugin {
    use super::*;

    #[import("scale")]
    fn scale_a(args: &mut Args) {
        args.value *= 2.0;
    }

    #[import("scale")]
    fn scale_b(args: &mut Args) {
        args.value *= 3.0;
    }
}

fn main() {}
