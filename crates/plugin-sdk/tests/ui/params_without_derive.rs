#![allow(unexpected_cfgs)]

#[repr(C)]
pub struct Params {
    pub value: f32,
}

#[xplug_sdk::plugin(name = "no_derive")]
mod plugin {
    use super::*;

    #[import]
    fn scale(params: &mut Params) {
        params.value *= 2.0;
    }
}

fn main() {}
