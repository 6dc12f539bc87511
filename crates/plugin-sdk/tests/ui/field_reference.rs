use xplug_sdk::ImportParams;

#[derive(ImportParams)]
#[repr(C)]
pub struct Params {
    pub value: f32,
    pub input: &'static [f32; 4],
}

fn main() {}
