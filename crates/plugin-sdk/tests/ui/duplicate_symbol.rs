#![allow(unexpected_cfgs)]
use xplug_sdk::ImportParams;

#[derive(ImportParams)]
#[repr(C)]
pub struct Params {
    pub value: f32,
}

#[xplug_sdk::plugin(name = "dup")]
mod plugin {
    use super::*;

    #[import("scale")]
    fn scale_a(params: &mut Params) {
        params.value *= 2.0;
    }

    #[import("scale")]
    fn scale_b(params: &mut Params) {
        params.value *= 3.0;
    }
}

fn main() {}
