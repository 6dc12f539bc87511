use xplug_sdk::ImportParams;
use core::ptr::NonNull;

#[derive(ImportParams)]
#[repr(C)]
pub struct Params {
    pub value: f32,
    pub output: NonNull<f32>,
}

fn main() {}
