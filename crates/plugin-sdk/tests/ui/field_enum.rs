use xplug_sdk::ImportArgs;

/// A C enum declared as a Rust enum: valid only for its discriminants.
#[derive(Clone, Copy)]
#[repr(u32)]
pub enum Mode {
    Fast = 0,
    Exact = 1,
}

#[derive(ImportArgs)]
#[repr(C)]
pub struct Args {
    pub value: f32,
    pub mode: Mode,
}

fn main() {}
