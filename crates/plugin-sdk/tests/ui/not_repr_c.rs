use xplug_sdk::ImportArgs;

#[derive(ImportArgs)]
pub struct Args {
    pub value: f32,
    pub count: u32,
}

fn main() {}
