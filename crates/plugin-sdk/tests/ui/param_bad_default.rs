#[xplug_sdk::plugin(name = "bad_default", params(count: u32 = -1 "how many"))]
mod plugin {
    #[derive(xplug_sdk::ImportArgs)]
    #[repr(C)]
    pub struct P {
        pub x: u32,
    }

    #[import("noop")]
    fn noop(_args: &mut P) {}
}

fn main() {}
