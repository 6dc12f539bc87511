//! `xplug new` end to end, as a plugin author outside this workspace: the
//! scaffolded crate builds with plain `cargo build --release`, its own test
//! passes, `xplug check` passes on the library and `xplug call` computes
//! with real values; a `--standalone` crate builds as a `.sos` with `xplug
//! build --sos` and runs, with its declared parameter, in xplug and in
//! IREE's `iree-run-module`.

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
    cargo_in(dir, args, &shared_target_dir());
}

fn cargo_in(dir: &Path, args: &[&str], target_dir: &Path) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .current_dir(dir)
        .args(args)
        .env("CARGO_TARGET_DIR", target_dir)
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

    // By path on this checkout: the published crates are the packaged-crates
    // test's (tests/packaged.rs).
    let checkout = xplug_fixtures::workspace_root();
    let checkout = checkout.to_str().expect("the checkout's path is UTF-8");
    let (code, created) = json_output(&["new", "new_adder", "--path", dir_str, "--sdk", checkout]);
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
    // Its test wrote the C header of its args struct.
    let header = std::fs::read_to_string(dir.join("include/new_adder_args.h")).unwrap();
    assert!(
        header.contains("typedef struct AddArgs {\n  float a;\n  float b;\n  float result;\n} AddArgs;"),
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

#[test]
fn new_depends_on_the_published_crates_by_version_unless_given_a_checkout() {
    let temp = tempfile::tempdir().unwrap();
    let version = env!("CARGO_PKG_VERSION");
    for (template, sdk_line) in [
        ("add", format!("xplug-sdk = {{ version = \"{version}\" }}")),
        ("workgroup", format!("xplug-sdk = {{ version = \"{version}\", default-features = false }}")),
    ] {
        let dir = temp.path().join(template);
        common::json(&["new", "p", "--template", template, "--path", dir.to_str().unwrap()], 0);
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        assert!(manifest.contains(&sdk_line), "{template}: {manifest}");
        assert!(manifest.contains(&format!("xplug-manager = {{ version = \"{version}\" }}")), "{manifest}");
        assert!(!manifest.contains("path ="), "{template}: {manifest}");
    }
    // --sdk: by path on that checkout, refused when it is none.
    let checkout = std::fs::canonicalize(xplug_fixtures::workspace_root()).unwrap();
    let dir = temp.path().join("by_path");
    common::json(&["new", "p", "--path", dir.to_str().unwrap(), "--sdk", checkout.to_str().unwrap()], 0);
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let sdk_path = checkout.join("crates").join("plugin-sdk");
    assert!(manifest.contains(&format!("xplug-sdk = {{ path = \"{}\" }}", sdk_path.display())), "{manifest}");
    let (code, value) =
        json_output(&["new", "p", "--path", temp.path().join("no").to_str().unwrap(), "--sdk", "/"]);
    assert_eq!(code, Some(2), "{value}");
    assert!(
        value["error"]["message"].as_str().unwrap().contains("no crates/plugin-sdk/Cargo.toml"),
        "{value}"
    );
}

/// The leaky ReLU the standalone template computes.
fn leaky_relu(x: &[f32], slope: f32) -> Vec<f32> {
    x.iter().map(|&x| if x >= 0.0 { x } else { slope * x }).collect()
}

fn write_npy(path: &Path, values: &[f32]) {
    std::fs::write(path, xplug_npy::encode_f32(values)).unwrap();
}

fn read_npy(path: &Path) -> Vec<f32> {
    xplug_npy::decode_f32(&std::fs::read(path).unwrap()).unwrap()
}

/// The "done when": a fresh crate from `xplug new --standalone`
/// (stateful, with the declared parameter `slope`) builds as a `.sos` with
/// one command, lists its parameter, runs correctly in xplug (its manager,
/// `xplug run`, with `?slope=0.5`) and in IREE's own runtime (the pinned
/// pip `iree-run-module`, which passes no parameters: the default slope),
/// and a misspelled or malformed parameter is a refused load with its
/// message.
#[test]
fn a_standalone_crate_builds_as_sos_with_one_command_and_runs_in_xplug_and_iree() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("relu");
    let dir_str = dir.to_str().expect("temporary paths are UTF-8");
    let checkout = xplug_fixtures::workspace_root();
    let checkout = checkout.to_str().expect("the checkout's path is UTF-8");
    let created = common::json(&["new", "new_relu", "--standalone", "--path", dir_str, "--sdk", checkout], 0);
    assert_eq!(created["template"], "workgroup", "{created}");
    for file in ["Cargo.toml", "src/lib.rs", "tests/kernel.rs", "leaky_relu.mlir", "README.md"] {
        assert!(dir.join(file).is_file(), "{file} was not created");
    }
    // `--standalone` is not the scalar template.
    let refused = common::json(
        &["new", "x", "--standalone", "--template", "add", "--path", temp.path().join("x").to_str().unwrap()],
        2,
    );
    assert!(refused["error"]["message"].as_str().unwrap().contains("workgroup"), "{refused}");

    // The crate's own target directory: `xplug build` finds it through
    // cargo metadata, as it would for the author.
    let target = dir.join("target");
    cargo_in(&dir, &["build", "--release", "--quiet"], &target);
    // Its host test calls the kernel over host slices (Buffer::from_slice).
    cargo_in(&dir, &["test", "--quiet"], &target);

    // One command builds the .sos.
    let manifest = dir.join("Cargo.toml");
    let built = common::json(&["build", "--sos", "--manifest-path", manifest.to_str().unwrap()], 0);
    let sos = PathBuf::from(built["sos"].as_str().expect("the .sos path"));
    assert_eq!(sos, target.join("sos").join("new_relu.sos"), "{built}");
    assert!(sos.is_file());
    assert_eq!(std::fs::metadata(&sos).unwrap().len(), built["size"].as_u64().unwrap());
    let records = built["records"].as_array().unwrap();
    assert_eq!(records[0]["target"].as_str().unwrap().split('-').next(), Some(std::env::consts::ARCH));
    // Every record target is either built or reported as skipped.
    assert_eq!(records.len() + built["skipped"].as_array().unwrap().len(), 3, "{built}");
    let sos_str = sos.to_str().unwrap();

    // xplug's loader reads the declared parameter from the .sos.
    let inspected = common::json(&["inspect", sos_str], 0);
    assert_eq!(inspected["param_decls"][0]["name"], "slope", "{inspected}");
    assert_eq!(inspected["param_decls"][0]["default"], "0.25", "{inspected}");
    assert_eq!(inspected["exports"][0], "new_relu_workgroup", "{inspected}");
    // `check` reads the same optional exports from the mapped image: every
    // check passes (the declared parameter, the listed export included),
    // and an undeclared key is refused before any check runs.
    let checked = common::json(&["check", sos_str], 0);
    assert_eq!(checked["failed"], 0, "{checked}");
    let misspelled_check = format!("{sos_str}?slop=0.5");
    let refused = common::json(&["check", &misspelled_check], 1);
    assert!(refused.to_string().contains("slope"), "{refused}");

    // The program, compiled by IREE's pinned compiler.
    let root = xplug_fixtures::workspace_root();
    let tools = xplug_fixtures::iree_e2e::toolchain(&root).expect("IREE's pip tools are ready");
    let vmfb = temp.path().join("leaky_relu.vmfb");
    let compiled = Command::new(&tools.compile)
        .args([
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu",
            "--iree-llvmcpu-target-cpu=generic",
        ])
        .arg(dir.join("leaky_relu.mlir"))
        .arg("-o")
        .arg(&vmfb)
        .output()
        .unwrap();
    assert!(compiled.status.success(), "{}", String::from_utf8_lossy(&compiled.stderr));
    let vmfb_str = vmfb.to_str().unwrap();

    // 1 001 elements: four uneven workgroup slices, negatives and positives.
    let x: Vec<f32> = (0..1001).map(|i| (i as f32 - 500.0) * 0.125).collect();
    let input = temp.path().join("x.npy");
    write_npy(&input, &x);
    let input_arg = format!("--input=@{}", input.display());

    // IREE's own runtime and embedded-ELF loader: no parameters, the
    // declared default slope.
    let iree_out = temp.path().join("iree.npy");
    let ran = Command::new(&tools.run_module)
        .arg("--device=local-sync")
        .arg(format!("--executable_plugin={sos_str}"))
        .arg(format!("--module={vmfb_str}"))
        .arg("--function=leaky_relu")
        .arg(&input_arg)
        .arg(format!("--output=@{}", iree_out.display()))
        .output()
        .unwrap();
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
    assert_eq!(read_npy(&iree_out), leaky_relu(&x, 0.25));

    // xplug: IREE's runtime with xplug's manager loading the .sos with the
    // parameter.
    let xplug_out = temp.path().join("xplug.npy");
    let output_arg = format!("--output=@{}", xplug_out.display());
    let with_slope = format!("--plugin={sos_str}?slope=0.5");
    let run =
        common::json(&["run", vmfb_str, "--function=leaky_relu", &input_arg, &output_arg, &with_slope], 0);
    assert_eq!(run["ok"], true, "{run}");
    assert_eq!(read_npy(&xplug_out), leaky_relu(&x, 0.5));

    // `xplug run` with the plugin given `query`: exit 1 and the JSON error.
    let refused = |query: &str| {
        let plugin = format!("--plugin={sos_str}?{query}");
        let (code, refused) = common::json_output(&[
            "run",
            vmfb_str,
            "--function=leaky_relu",
            &input_arg,
            &output_arg,
            &plugin,
        ]);
        assert_eq!(code, Some(1), "{refused}");
        refused.to_string()
    };
    // A misspelled key: refused by the host from the declaration the .sos
    // exports, with a suggestion.
    let text = refused("slop=0.5");
    assert!(text.contains("`slop`") && text.contains("slope"), "{text}");
    // A malformed value: refused by the plugin's own `load` (no trap), its
    // message read from the .sos.
    let text = refused("slope=abc");
    assert!(
        text.contains("load parameter `slope` has the value `abc` but a finite number is expected"),
        "{text}"
    );
    // Out of range: the plugin's own `Error::custom`, whose `String` it
    // allocates through the host allocator (the standalone global
    // allocator) and frees before `load` returns.
    let text = refused("slope=2");
    assert!(text.contains("`slope` must be between 0 and 1"), "{text}");
}
