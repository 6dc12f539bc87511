#![allow(unexpected_cfgs)]
use xplug_sdk::ImportParams;

#[derive(ImportParams)]
#[repr(C)]
pub struct Params {
    pub value: f32,
}

#[xplug_sdk::plugin(name = "bad_return")]
mod plugin {
    use super::*;

    #[import]
    fn scale(params: &mut Params) -> bool {
        params.value *= 2.0;
        true
    }
}

fn main() {}
