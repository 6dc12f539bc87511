//! The linker trap: `sample_static` is a dependency of this package but this
//! binary never names it, so its registration is not linked in.

fn main() {
    println!("static plugins: {:?}", static_runtime::static_plugin_names());
}
