use xplug_sdk::ImportArgs;

#[derive(ImportArgs)]
#[repr(C)]
pub struct Args {
    pub value: f32,
    pub output: Box<f32>,
}

fn main() {}
