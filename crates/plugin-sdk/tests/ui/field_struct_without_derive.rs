use xplug_sdk::ImportParams;

/// A nested struct that does not derive `ImportParams`.
#[repr(C)]
pub struct Range {
    pub start: u32,
    pub end: u32,
}

#[derive(ImportParams)]
#[repr(C)]
pub struct Params {
    pub value: f32,
    pub range: Range,
}

fn main() {}
