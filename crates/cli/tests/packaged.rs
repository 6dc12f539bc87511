//! The published crates as a user outside this workspace gets them: the
//! workspace's publishable crates are packaged (`cargo package`, the same
//! `.crate` files `cargo publish` uploads) into a directory source with the
//! crates.io crates they use, which replaces crates.io in the Cargo config
//! of a directory outside the checkout. There, offline and with
//! dependencies by version only:
//!
//! * a plugin crate made by `xplug new --standalone` (which writes
//!   `xplug-sdk = { version = ... }`) passes its own tests and builds as a
//!   `.sos` with `xplug build --sos`, which `xplug check` accepts;
//! * a runtime crate depending on `xplug-manager` loads that plugin (the
//!   shared library and the `.sos`) and resolves its import through it;
//! * `cargo install` of the packaged `xplug-cli` gives an `xplug` that,
//!   from that directory and with no checkout, makes the plugin (`new`),
//!   builds its `.sos` (`build --sos`), checks it and runs an IREE program
//!   through it (`run`);
//! * a crate depending on `xplug-iree`, with the new plugin linked into it
//!   (its `static` feature), runs that program through it.
//!
//! Outside the workspace there is no `.cargo/config.toml` of ours, and the
//! builds here get no CMake, libclang or clang from the environment
//! (`CMAKE`, `LIBCLANG_PATH` and `CLANG_PATH` are removed): `xplug-iree`'s
//! build script finds CMake >= 3.26 and Ninja or installs pinned ones from
//! PyPI itself, and its IREE bindings are committed, so no libclang is
//! needed (docs/src/design/publishing.md, "Building xplug-iree").
//!
//! The compiled artifacts are kept in `target/xplug-packaged-test`, so a
//! rerun compiles only what changed.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's packages that are published (`publish` unset), from
/// `cargo metadata`.
fn published_packages(root: &Path) -> Vec<String> {
    let metadata = cargo_metadata::MetadataCommand::new()
        .cargo_path(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .manifest_path(root.join("Cargo.toml"))
        .no_deps()
        .exec()
        .unwrap();
    metadata
        .workspace_packages()
        .into_iter()
        .filter(|package| package.publish.is_none())
        .map(|package| package.name.to_string())
        .collect()
}

fn cargo() -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    // The outer `cargo test` must not leak its build settings into these,
    // nor a developer's tools for IREE's build: a user has none of them.
    for variable in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CMAKE",
        "LIBCLANG_PATH",
        "CLANG_PATH",
        // Set by xplug-cli's build script for this checkout's build, and so
        // in this test's environment: a packaged build must not inherit it
        // (`option_env!` reads rustc's environment).
        "XPLUG_CLI_CHECKOUT",
    ] {
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
/// package` step verifies each) into `out/package` and makes `out/vendor` a
/// directory source holding them, unpacked, beside every crates.io crate
/// the workspace uses (`cargo vendor`). Returns the source's directory and
/// a digest of the packaged crates (the target directory is keyed by it:
/// Cargo never rebuilds a registry crate whose version did not change).
fn directory_source(root: &Path, out: &Path) -> (PathBuf, String) {
    let packages = published_packages(root);
    assert!(packages.iter().any(|name| name == "xplug-sdk"), "{packages:?}");
    let mut package = cargo();
    package.current_dir(root).args(["package", "--no-verify", "--allow-dirty", "--target-dir"]).arg(out);
    for name in &packages {
        package.args(["-p", name]);
    }
    run(&mut package);
    let vendor = out.join("vendor");
    let _ = std::fs::remove_dir_all(&vendor);
    run(cargo().current_dir(root).args(["vendor", "--quiet", "--versioned-dirs", "--locked"]).arg(&vendor));
    let version = env!("CARGO_PKG_VERSION");
    let mut digests = String::new();
    for name in packages {
        let file = out.join("package").join(format!("{name}-{version}.crate"));
        assert!(file.is_file(), "{} was not packaged", file.display());
        run(Command::new("tar").arg("-xzf").arg(&file).arg("-C").arg(&vendor));
        let dir = vendor.join(format!("{name}-{version}"));
        // Only what the package holds: no path dependency survived.
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        assert!(!manifest.contains("path = \"../"), "{name}: {manifest}");
        let digest = run(Command::new("sha256sum").arg(&file));
        let digest = digest.split_whitespace().next().expect("sha256sum prints the digest").to_owned();
        std::fs::write(
            dir.join(".cargo-checksum.json"),
            format!("{{\"files\":{{}},\"package\":\"{digest}\"}}"),
        )
        .unwrap();
        digests.push_str(&digest);
    }
    let digest = run(Command::new("sh").arg("-c").arg(format!("printf %s {digests} | sha256sum")));
    (vendor, digest[..16].to_owned())
}

/// A Cargo config in `work` that puts the directory source in crates.io's
/// place, offline.
fn write_config(work: &Path, vendor: &Path) {
    let config = format!(
        "[net]\noffline = true\n\n[source.crates-io]\nreplace-with = \"xplug-packaged\"\n\n\
         [source.xplug-packaged]\ndirectory = {:?}\n",
        vendor.display().to_string()
    );
    std::fs::create_dir_all(work.join(".cargo")).unwrap();
    std::fs::write(work.join(".cargo").join("config.toml"), config).unwrap();
}

const RUNTIME_MAIN: &str = r#"//! A runtime outside xplug's workspace: loads a plugin (a shared library or
//! a `.sos`) with xplug-manager and resolves an import through it.

use std::sync::Arc;

use xplug_manager::Manager;
use xplug_manager::providers::{EMBEDDED_ELF, LoadParamList, Loader, SYSTEM_LIBRARY};

fn main() {
    let mut args = std::env::args().skip(1);
    let (path, import) = (args.next().expect("PLUGIN"), args.next().expect("IMPORT"));
    let params = LoadParamList::new();
    // SAFETY: the plugin is the crate `xplug new` made, built with xplug-sdk.
    let plugin = unsafe {
        if path.ends_with(".sos") {
            EMBEDDED_ELF.open(&std::path::Path::new(&path).to_string_lossy()).and_then(|code| code.load(&params))
        } else {
            SYSTEM_LIBRARY.open(&std::path::Path::new(&path).to_string_lossy()).and_then(|code| code.load(&params))
        }
    }
    .expect("the plugin loads");
    let name = plugin.name().to_owned();
    let manager = Manager::new();
    manager.register_plugin(plugin).expect("the manager takes the plugin");
    let missing = format!("?{import}_missing");
    let imports = manager.resolve_imports([import.as_str(), missing.as_str()]).expect("the import resolves");
    let found = imports.is_resolved(imports.index_of(&import).expect("listed"));
    let optional = imports.is_resolved(imports.index_of(&format!("{import}_missing")).expect("listed"));
    println!("plugin={name} resolved={found} optional_missing_resolved={optional}");
}
"#;

const IREE_MAIN: &str = r#"//! A program outside xplug's workspace on xplug-iree: IREE's runtime runs a
//! compiled module whose kernel comes from a Rust plugin linked into this
//! binary (`packaged_relu` with its `static` feature).

use std::sync::Arc;

use packaged_relu as _; // keeps the plugin's link-time registration
use xplug_iree::{DeviceKind, Manager, Module, Runtime, Session, Tensor};

fn main() {
    let vmfb = std::env::args().nth(1).expect("VMFB");
    // SAFETY: `static:packaged_relu` is this binary's own plugin.
    let manager = unsafe { Manager::from_specs(["static:packaged_relu"]) }.expect("the plugin loads");
    let runtime = Runtime::new().expect("IREE's runtime starts");
    let device = runtime.device(DeviceKind::LocalSync, manager).expect("a local-sync device");
    let module = Module::from_file(&runtime, &vmfb).expect("the module loads");
    let session = Session::new(&device, &module).expect("the executables load and their imports resolve");
    let x: Vec<f32> = (0..257).map(|i| (i as f32 - 128.0) * 0.5).collect();
    let call = session.prepare("leaky_relu", &[Tensor::from_f32(&x)]).expect("the arguments are made");
    let results = call.invoke().expect("the call runs");
    let y = results.tensor(0).expect("a tensor").as_slice::<f32>().expect("of f32").to_vec();
    // The declared default slope: no load parameter given.
    let expected: Vec<f32> = x.iter().map(|&x| if x >= 0.0 { x } else { 0.25 * x }).collect();
    println!("elements={} equal={}", y.len(), y == expected);
}
"#;

#[test]
fn packaged_crates_build_a_new_plugin_and_a_runtime_offline_by_version() {
    let root = xplug_fixtures::workspace_root();
    let out = root.join("target").join("xplug-packaged-test");
    let (vendor, digest) = directory_source(&root, &out);

    let temp = tempfile::tempdir().unwrap();
    let work = temp.path();
    write_config(work, &vendor);
    let version = env!("CARGO_PKG_VERSION");
    // Compiled crates are kept between runs of the same packaged crates.
    let target = out.join(format!("target-{digest}"));
    if let Ok(entries) = std::fs::read_dir(&out) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("target-") && entry.path() != target {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let xplug = install(&out, work, &target);

    // The plugin crate, as `xplug new` writes it: by version.
    let plugin_dir = work.join("relu");
    json_in(&xplug, work, &target, &["new", "packaged_relu", "--standalone", "--path", "relu"]);
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
    let built = json_in(&xplug, &plugin_dir, &target, &["build", "--sos"]);
    let sos = PathBuf::from(built["sos"].as_str().expect("the .sos path"));
    assert!(sos.is_file(), "{built}");
    let checked = json_in(&xplug, &plugin_dir, &target, &["check", sos.to_str().unwrap()]);
    assert_eq!(checked["ok"], true, "{checked}");
    let vmfb = run_program(&root, &xplug, work, &plugin_dir, &sos, &target);

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
    let import = "packaged_relu_workgroup";
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
    // A crate on xplug-iree with the plugin linked in, by version too.
    let iree_dir = work.join("iree_runtime");
    std::fs::create_dir_all(iree_dir.join("src")).unwrap();
    std::fs::write(
        iree_dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"packaged_iree_runtime\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\
             publish = false\n\n[dependencies]\nxplug-iree = \"{version}\"\n\
             packaged_relu = {{ path = \"../relu\", features = [\"static\"] }}\n\n[workspace]\n"
        ),
    )
    .unwrap();
    std::fs::write(iree_dir.join("src").join("main.rs"), IREE_MAIN).unwrap();
    let printed = run(cargo()
        .current_dir(&iree_dir)
        .env("CARGO_TARGET_DIR", &target)
        .args(["run", "--quiet", "--offline", "--"])
        .arg(&vmfb));
    assert_eq!(printed.trim(), "elements=257 equal=true", "{printed}");

    // The lock files name the packaged crates as crates.io's, by version.
    let lock = std::fs::read_to_string(runtime_dir.join("Cargo.lock")).unwrap();
    assert!(lock.contains(&format!("name = \"xplug-manager\"\nversion = \"{version}\"")), "{lock}");
}

/// `cargo install xplug-cli` (debug, for time) from `work`, whose config
/// makes the packaged crates the registry, into `out/install`; the
/// installed `xplug`.
fn install(out: &Path, work: &Path, target: &Path) -> PathBuf {
    let install_root = out.join("install");
    run(cargo()
        .current_dir(work)
        .args([
            "install",
            "--quiet",
            "--debug",
            "--force",
            "--offline",
            "xplug-cli",
            "--version",
            env!("CARGO_PKG_VERSION"),
        ])
        // `cargo install` reads only CARGO_HOME's config, so the source is
        // named on the command line.
        .arg("--config")
        .arg(work.join(".cargo").join("config.toml"))
        .arg("--root")
        .arg(&install_root)
        .arg("--target-dir")
        .arg(target));
    let xplug = install_root.join("bin").join("xplug");
    assert!(xplug.is_file(), "{}", xplug.display());
    xplug
}

/// Compiles the new crate's `.mlir` program with IREE's pinned compiler and
/// runs it with the installed `xplug run` through the `.sos`, with its
/// declared parameter; checks every element.
fn run_program(
    root: &Path,
    xplug: &Path,
    work: &Path,
    plugin_dir: &Path,
    sos: &Path,
    target: &Path,
) -> PathBuf {
    let tools = xplug_fixtures::iree_e2e::toolchain(root).expect("IREE's pip tools are ready");
    let vmfb = work.join("leaky_relu.vmfb");
    run(Command::new(&tools.compile)
        .args([
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu",
            "--iree-llvmcpu-target-cpu=generic",
        ])
        .arg(plugin_dir.join("leaky_relu.mlir"))
        .arg("-o")
        .arg(&vmfb));
    let x: Vec<f32> = (0..257).map(|i| (i as f32 - 128.0) * 0.5).collect();
    std::fs::write(work.join("x.npy"), xplug_npy::encode_f32(&x)).unwrap();
    let plugin = format!("--plugin={}?slope=0.5", sos.display());
    let ran = json_in(
        xplug,
        work,
        target,
        &[
            "run",
            vmfb.to_str().unwrap(),
            "--function=leaky_relu",
            "--input=@x.npy",
            "--output=@y.npy",
            &plugin,
        ],
    );
    assert_eq!(ran["ok"], true, "{ran}");
    let y = xplug_npy::decode_f32(&std::fs::read(work.join("y.npy")).unwrap()).unwrap();
    let expected: Vec<f32> = x.iter().map(|&x| if x >= 0.0 { x } else { 0.5 * x }).collect();
    assert_eq!(y, expected);
    vmfb
}

/// The installed `xplug --json ARGS` in `dir`, offline, with `target` as
/// the target directory; the object, asserting exit code 0.
fn json_in(xplug: &Path, dir: &Path, target: &Path, args: &[&str]) -> serde_json::Value {
    let output = Command::new(xplug)
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
