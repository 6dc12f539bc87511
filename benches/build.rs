//! Generates an SDK plugin with `EXPORTS` imports for the resolve benchmark.

use std::fmt::Write as _;

/// Number of imports of the generated plugin (matches `src/lib.rs`).
const EXPORTS: usize = 4096;

fn main() {
    let mut code = String::new();
    code.push_str(
        "#[xplug_sdk::plugin(name = \"bench_sdk_4096\", description = \"4096 generated imports\", features(standalone))]\n\
         mod sdk_plugin {\n    use super::*;\n",
    );
    for i in 0..EXPORTS {
        writeln!(
            code,
            "    #[import(\"import_{i:04}\")]\n    fn f{i}(args: &mut BenchArgs) {{ args.value = {i}; }}"
        )
        .expect("writing to a String cannot fail");
    }
    code.push_str("}\n");
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("sdk_plugin.rs"), code).expect("OUT_DIR is writable");
    println!("cargo::rerun-if-changed=build.rs");
}
