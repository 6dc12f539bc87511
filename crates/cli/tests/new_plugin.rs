//! `xplug new` end to end, as a plugin author outside this workspace: the
//! scaffolded crate builds with plain `cargo build --release`, its own test
//! passes, `xplug check` passes on the library and `xplug call` computes
//! with real values.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::json_output;

/// A target directory kept between runs (under this workspace's target/),
/// so the scaffolded crate's dependencies are compiled once.
fn shared_target_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/xplug-new-test")
}

fn cargo(dir: &Path, args: &[&str]) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .current_dir(dir)
        .args(args)
        .env("CARGO_TARGET_DIR", shared_target_dir())
        // The outer `cargo test` must not leak its own build settings into
        // the scaffolded crate's build.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo {args:?} in {} failed:\n{}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn a_new_plugin_builds_with_plain_cargo_and_passes_check_and_call() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("adder");
    let dir_str = dir.to_str().expect("temporary paths are UTF-8");

    let (code, created) = json_output(&["new", "new_adder", "--path", dir_str]);
    assert_eq!(code, Some(0), "{created}");
    assert_eq!(created["plugin"], "new_adder");
    for file in ["Cargo.toml", "src/lib.rs", "tests/load.rs"] {
        assert!(dir.join(file).is_file(), "{file} was not created");
    }
    // A second run refuses to overwrite the crate.
    let (code, refused) = json_output(&["new", "new_adder", "--path", dir_str]);
    assert_eq!(code, Some(2), "{refused}");
    assert_eq!(refused["error"]["kind"], "usage");

    cargo(&dir, &["build", "--release", "--quiet"]);
    cargo(&dir, &["test", "--quiet"]);
    // Its test wrote the C header of its params struct.
    let header = std::fs::read_to_string(dir.join("include/new_adder_params.h")).unwrap();
    assert!(
        header.contains("typedef struct AddParams {\n  float a;\n  float b;\n  float result;\n} AddParams;"),
        "{header}"
    );

    let library = shared_target_dir().join("release").join(format!(
        "{}new_adder{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    let library = library.to_str().expect("UTF-8 path");

    let (code, check) = json_output(&["check", library]);
    assert_eq!(code, Some(0), "{check}");
    assert_eq!(check["ok"], true, "{check}");
    let checks = check["checks"].as_array().expect("a list of checks");
    assert!(checks.len() > 5, "{check}");
    assert!(checks.iter().all(|c| c["ok"] == true), "{check}");

    let (code, call) = json_output(&[
        "call",
        library,
        "new_adder_add_f32",
        "--field",
        "f32:2.5",
        "--field",
        "f32:4",
        "--field",
        "f32:0",
    ]);
    assert_eq!(code, Some(0), "{call}");
    assert_eq!(call["result"], 0, "{call}");
    assert_eq!(call["fields"][2]["value"], 6.5, "{call}");

    // The import's own refusal reaches the caller.
    let (code, call) = json_output(&[
        "call",
        library,
        "new_adder_add_f32",
        "--field",
        "f32:3e38",
        "--field",
        "f32:3e38",
        "--field",
        "f32:0",
    ]);
    assert_ne!(code, Some(0), "{call}");
}

#[test]
fn new_refuses_names_that_are_not_crate_names() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("x");
    let (code, value) = json_output(&["new", "9lives", "--path", dir.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{value}");
    assert!(value["error"]["message"].as_str().unwrap().contains("starting with a letter"), "{value}");
    assert!(!dir.exists());
}
