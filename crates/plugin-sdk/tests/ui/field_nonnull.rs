use xplug_sdk::ImportArgs;
use core::ptr::NonNull;

#[derive(ImportArgs)]
#[repr(C)]
pub struct Args {
    pub value: f32,
    pub output: NonNull<f32>,
}

fn main() {}
