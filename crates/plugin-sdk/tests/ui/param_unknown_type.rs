#[xplug_sdk::plugin(name = "bad_param", params(level: string = "high" "how loud"))]
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
