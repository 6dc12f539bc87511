use xplug_sdk::ImportParams;

#[derive(ImportParams)]
pub struct Params {
    pub value: f32,
    pub count: u32,
}

fn main() {}
