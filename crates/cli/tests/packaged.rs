//! The published crates as a user outside this workspace gets them: the
//! workspace's publishable crates are packaged (`cargo package`, the same
//! `.crate` files `cargo publish` uploads), unpacked, and stand in for
//! crates.io through a `[patch.crates-io]` in a Cargo config of a directory
//! outside the checkout. There, offline and with dependencies by version
//! only:
//!
//! * a plugin crate made by `xplug new --standalone` (which writes
//!   `xplug-sdk = { version = ... }`) passes its own tests and builds as a
//!   `.sos` with `xplug build --sos`, which `xplug check` accepts;
//! * a runtime crate depending on `xplug-manager` loads that plugin (the
//!   shared library and the `.sos`) and resolves its import through it.
//!
//! The dependencies' compiled artifacts are kept in
//! `target/xplug-packaged-test`, so a rerun compiles only the two crates.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{XPLUG, json};

/// The workspace's packages that are published (`publish` unset), from
/// `cargo metadata`.
fn published_packages(root: &Path) -> Vec<String> {
    let output =
        cargo().current_dir(root).args(["metadata", "--no-deps", "--format-version", "1"]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|package| package["publish"].is_null())
        .map(|package| package["name"].as_str().unwrap().to_owned())
        .collect()
}

fn cargo() -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    // The outer `cargo test` must not leak its build settings into these.
    for variable in ["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_TARGET", "CARGO_TARGET_DIR"] {
        command.env_remove(variable);
    }
    command
}

fn run(command: &mut Command) -> String {
    let output = command.output().unwrap_or_else(|error| panic!("{command:?}: {error}"));
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Packages the published crates without verifying them (CI's `cargo
/// package` step verifies each) into `out/package`, unpacks every `.crate`
/// into `out/crates`, and returns (name, unpacked directory) pairs.
fn package_and_unpack(root: &Path, out: &Path) -> Vec<(String, PathBuf)> {
    let packages = published_packages(root);
    assert!(packages.iter().any(|name| name == "xplug-sdk"), "{packages:?}");
    let mut package = cargo();
    package
        .current_dir(root)
        .args(["package", "--no-verify", "--allow-dirty", "--offline", "--target-dir"])
        .arg(out);
    for name in &packages {
        package.args(["-p", name]);
    }
    run(&mut package);
    let unpacked = out.join("crates");
    let _ = std::fs::remove_dir_all(&unpacked);
    std::fs::create_dir_all(&unpacked).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    packages
        .into_iter()
        .map(|name| {
            let file = out.join("package").join(format!("{name}-{version}.crate"));
            assert!(file.is_file(), "{} was not packaged", file.display());
            run(Command::new("tar").arg("-xzf").arg(&file).arg("-C").arg(&unpacked));
            let dir = unpacked.join(format!("{name}-{version}"));
            // Only what the package holds: no path dependency survived.
            let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
            assert!(!manifest.contains("path = \"../"), "{name}: {manifest}");
            (name, dir)
        })
        .collect()
}

/// A Cargo config that puts the unpacked crates in crates.io's place, and
/// works offline.
fn write_config(work: &Path, crates: &[(String, PathBuf)]) {
    let mut config = String::from("[net]\noffline = true\n\n[patch.crates-io]\n");
    for (name, dir) in crates {
        config.push_str(&format!("{name} = {{ path = {:?} }}\n", dir.display().to_string()));
    }
    std::fs::create_dir_all(work.join(".cargo")).unwrap();
    std::fs::write(work.join(".cargo").join("config.toml"), config).unwrap();
}

const RUNTIME_MAIN: &str = r#"//! A runtime outside xplug's workspace: loads a plugin (a shared library or
//! a `.sos`) with xplug-manager and resolves an import through it.

use std::sync::Arc;

use xplug_manager::Manager;
use xplug_manager::providers::{LoadParamList, Plugin};

fn main() {
    let mut args = std::env::args().skip(1);
    let (path, import) = (args.next().expect("PLUGIN"), args.next().expect("IMPORT"));
    let params = LoadParamList::new();
    // SAFETY: the plugin is the crate `xplug new` made, built with xplug-sdk.
    let plugin = unsafe {
        if path.ends_with(".sos") {
            Plugin::load_embedded_elf(&path, &params)
        } else {
            Plugin::load_system_library(&path, &params)
        }
    }
    .expect("the plugin loads");
    let name = plugin.name().to_owned();
    let manager = Arc::new(Manager::new());
    manager.register_plugin(plugin).expect("the manager takes the plugin");
    let missing = format!("?{import}_missing");
    let imports = manager.resolve_imports([import.as_str(), missing.as_str()]).expect("the import resolves");
    let found = imports.is_resolved(imports.index_of(&import).expect("listed"));
    let optional = imports.is_resolved(imports.index_of(&format!("{import}_missing")).expect("listed"));
    println!("plugin={name} resolved={found} optional_missing_resolved={optional}");
}
"#;

#[test]
fn packaged_crates_build_a_new_plugin_and_a_runtime_offline_by_version() {
    let root = xplug_fixtures::workspace_root();
    let out = root.join("target").join("xplug-packaged-test");
    let crates = package_and_unpack(&root, &out);

    let temp = tempfile::tempdir().unwrap();
    let work = temp.path();
    write_config(work, &crates);
    let version = env!("CARGO_PKG_VERSION");
    // Compiled dependencies are kept between runs.
    let target = out.join("target");

    // The plugin crate, as `xplug new` writes it: by version.
    let plugin_dir = work.join("relu");
    json(&["new", "packaged_relu", "--standalone", "--path", plugin_dir.to_str().unwrap()], 0);
    let manifest = std::fs::read_to_string(plugin_dir.join("Cargo.toml")).unwrap();
    assert!(manifest.contains(&format!("xplug-sdk = {{ version = \"{version}\"")), "{manifest}");
    run(cargo().current_dir(&plugin_dir).env("CARGO_TARGET_DIR", &target).args(["test", "--quiet"]));
    run(cargo().current_dir(&plugin_dir).env("CARGO_TARGET_DIR", &target).args(["build", "--quiet"]));
    let library = target.join("debug").join(format!(
        "{}packaged_relu{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    assert!(library.is_file(), "{}", library.display());

    // `xplug build --sos`, run where the author would run it.
    let built = json_in(
        &plugin_dir,
        &target,
        &["build", "--sos", "--manifest-path", plugin_dir.join("Cargo.toml").to_str().unwrap()],
    );
    let sos = PathBuf::from(built["sos"].as_str().expect("the .sos path"));
    assert!(sos.is_file(), "{built}");
    let checked = json_in(&plugin_dir, &target, &["check", sos.to_str().unwrap()]);
    assert_eq!(checked["ok"], true, "{checked}");

    // The runtime crate: xplug-manager by version.
    let runtime_dir = work.join("runtime");
    std::fs::create_dir_all(runtime_dir.join("src")).unwrap();
    std::fs::write(
        runtime_dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"packaged_runtime\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\n\
             [dependencies]\nxplug-manager = \"{version}\"\n\n[workspace]\n"
        ),
    )
    .unwrap();
    std::fs::write(runtime_dir.join("src").join("main.rs"), RUNTIME_MAIN).unwrap();
    let import = "packaged_relu_leaky_relu_workgroup";
    for plugin in [&library, &sos] {
        let printed = run(cargo()
            .current_dir(&runtime_dir)
            .env("CARGO_TARGET_DIR", &target)
            .args(["run", "--quiet", "--"])
            .arg(plugin)
            .arg(import));
        assert_eq!(
            printed.trim(),
            "plugin=packaged_relu resolved=true optional_missing_resolved=false",
            "{}",
            plugin.display()
        );
    }
    // The lock files name the packaged crates as crates.io's, by version.
    let lock = std::fs::read_to_string(runtime_dir.join("Cargo.lock")).unwrap();
    assert!(lock.contains(&format!("name = \"xplug-manager\"\nversion = \"{version}\"")), "{lock}");
}

/// `xplug --json ARGS` in `dir`, offline, with `target` as the target
/// directory; the object, asserting exit code 0.
fn json_in(dir: &Path, target: &Path, args: &[&str]) -> serde_json::Value {
    let output = Command::new(XPLUG)
        .current_dir(dir)
        .arg("--json")
        .args(args)
        .env("CARGO_TARGET_DIR", target)
        .env("CARGO_NET_OFFLINE", "true")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let value: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("{args:?}: {error}: {}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{args:?}: {value}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    value
}
