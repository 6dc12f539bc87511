use xplug_sdk::ImportParams;

#[derive(ImportParams)]
#[repr(C)]
pub struct Params {
    pub value: f32,
    pub limit: Option<u32>,
}

fn main() {}
