#![allow(unexpected_cfgs)]

#[repr(C)]
pub struct Args {
    pub value: f32,
}

#[xplug_sdk::plugin(name = "no_derive")]
mod plugin {
    use super::*;

    #[import]
    fn scale(args: &mut Args) {
        args.value *= 2.0;
    }
}

fn main() {}
