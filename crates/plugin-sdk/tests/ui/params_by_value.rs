#![allow(unexpected_cfgs)]
use xplug_sdk::ImportParams;

#[derive(ImportParams)]
#[repr(C)]
pub struct Params {
    pub value: f32,
}

#[xplug_sdk::plugin(name = "by_value")]
mod plugin {
    use super::*;

    #[import]
    fn scale(params: Params) {
        let _ = params.value;
    }
}

fn main() {}
