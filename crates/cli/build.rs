//! Records, for `xplug new`, whether this `xplug` is built from an xplug
//! checkout: then `XPLUG_CLI_CHECKOUT` is set to the checkout's directory,
//! whose crates the scaffolded crate depends on by path (they are not on
//! crates.io yet). A packaged `xplug-cli` (installed from a registry or a
//! vendored directory: its manifest directory holds `Cargo.toml.orig` and
//! no xplug workspace surrounds it) leaves it unset, and `xplug new` then
//! depends on the crates of its own version from that registry.

use std::path::Path;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let manifest_dir = Path::new(&manifest_dir);
    let root = manifest_dir.join("..").join("..");
    let packaged = manifest_dir.join("Cargo.toml.orig").exists();
    if packaged || !root.join("crates").join("plugin-sdk").join("Cargo.toml").is_file() {
        return;
    }
    let root = root.canonicalize().expect("the checkout's directory exists");
    println!("cargo::rustc-env=XPLUG_CLI_CHECKOUT={}", root.display());
}
