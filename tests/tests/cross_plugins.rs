//! A cross build of the example plugins keeps to its own directory: after
//! the aarch64 plugin build (what `cargo xtask test-aarch64`'s test
//! processes run), the host's plugins in `target/plugins/debug/` are the
//! same files, still the host's architecture, and load.
//!
//! Needs the aarch64 C cross compiler and a Rust standard library for
//! aarch64 (Debian: `gcc-aarch64-linux-gnu`, `libstd-rust-web-dev:arm64`;
//! `cargo xtask test-aarch64` installs them); without them it prints why
//! and passes without checking.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use xplug_fixtures::plugins::{self, PluginProfile};
use xplug_manager::Manager;

/// The cross target.
const CROSS: &str = "aarch64-unknown-linux-gnu";

/// ELF `e_machine` of a file (bytes 18..20, little-endian).
fn machine(path: &Path) -> u16 {
    let bytes = std::fs::read(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    assert_eq!(&bytes[..4], b"\x7fELF", "{} is not an ELF file", path.display());
    u16::from_le_bytes([bytes[18], bytes[19]])
}

/// `e_machine` of the architecture of `target`.
fn machine_of(target: &str) -> u16 {
    match target.split('-').next().unwrap_or_default() {
        "x86_64" => 62,
        "aarch64" => 183,
        arch if arch.starts_with("riscv64") => 243,
        arch => panic!("no ELF machine known for {arch}"),
    }
}

/// Every built file with its bytes.
fn contents(built: &[xplug_fixtures::BuiltPlugin]) -> BTreeMap<PathBuf, Vec<u8>> {
    built
        .iter()
        .map(|plugin| {
            let path =
                plugin.path.clone().unwrap_or_else(|| panic!("{} was skipped: {}", plugin.name, plugin.note));
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect()
}

#[test]
fn the_aarch64_plugin_build_leaves_the_hosts_plugins_loadable() {
    if xplug_fixtures::TARGET != xplug_fixtures::HOST || xplug_fixtures::HOST == CROSS {
        eprintln!("skipped: this test runs on a host other than {CROSS}, built for it");
        return;
    }
    if let Err(missing) = plugins::can_build_for(CROSS) {
        eprintln!("skipped: cannot build plugins for {CROSS} here: {missing}");
        return;
    }
    let root = xplug_fixtures::workspace_root();
    let host_dir = plugins::output_dir(&root, PluginProfile::Debug);
    let host = contents(&plugins::build(&root, PluginProfile::Debug).expect("the host's plugins build"));

    let cross = plugins::build_for(&root, PluginProfile::Debug, CROSS).expect("the aarch64 plugins build");
    let cross_dir = plugins::output_dir_for(&root, PluginProfile::Debug, CROSS);
    assert_eq!(cross_dir, root.join("target").join(CROSS).join("plugins").join("debug"));
    let cross = contents(&cross);
    for path in cross.keys() {
        assert_eq!(path.parent(), Some(cross_dir.as_path()), "{}", path.display());
        if path.extension().is_some_and(|extension| extension == "so") {
            assert_eq!(machine(path), machine_of(CROSS), "{} is not an aarch64 library", path.display());
        }
    }
    assert!(cross.keys().any(|path| path.ends_with("libc_sample.so")), "{:?}", cross.keys());
    assert!(cross.keys().any(|path| path.ends_with("libsample_system.so")), "{:?}", cross.keys());

    // The host's files are untouched, of the host's architecture, and load.
    assert!(host.len() >= 5, "{:?}", host.keys());
    for (path, bytes) in &host {
        assert_eq!(path.parent(), Some(host_dir.as_path()), "{}", path.display());
        assert!(
            std::fs::read(path).unwrap() == *bytes,
            "{} changed during the aarch64 build",
            path.display()
        );
        if path.extension().is_some_and(|extension| extension == "so") {
            assert_eq!(machine(path), machine_of(xplug_fixtures::HOST), "{}", path.display());
        }
        // SAFETY: the project's own example plugins, built just above.
        let manager =
            Arc::new(unsafe { Manager::from_specs([path.display().to_string()]) }.unwrap_or_else(|error| {
                panic!("the host's {} does not load after the aarch64 build: {error}", path.display())
            }));
        assert!(!manager.providers().is_empty(), "{} registered nothing", path.display());
    }
}
