use xplug_sdk::ImportArgs;

/// A nested struct that does not derive `ImportArgs`.
#[repr(C)]
pub struct Range {
    pub start: u32,
    pub end: u32,
}

#[derive(ImportArgs)]
#[repr(C)]
pub struct Args {
    pub value: f32,
    pub range: Range,
}

fn main() {}
