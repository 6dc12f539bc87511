//! `xplug new` end to end, as a plugin author outside this workspace: the
//! "next:" steps it prints work when pasted in order (`cd` into the crate,
//! plain `cargo build --release`, its own test, `xplug check` of the
//! library, `xplug call`, which computes with real values); a
//! `--standalone` crate builds as a `.sos` with `xplug build --sos` and
//! runs, with its declared parameter, in xplug and in IREE's
//! `iree-run-module`.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::json_output;

/// A target directory kept between runs (under this workspace's target/),
/// so the scaffolded crate's dependencies are compiled once.
fn shared_target_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/xplug-new-test")
}

/// Runs `xplug new ARGS` in `cwd` as a user would (no `--json`); its
/// stdout and stderr, after asserting it succeeded.
fn new_in(cwd: &Path, args: &[&str]) -> (String, String) {
    let output = Command::new(common::XPLUG)
        .current_dir(cwd)
        .arg("new")
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("xplug runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    );
    assert!(output.status.success(), "xplug new {args:?}:\n{stdout}\n{stderr}");
    (stdout, stderr)
}

/// The commands `xplug new` printed under "next:", in order.
fn next_steps(stdout: &str) -> Vec<String> {
    let after = stdout.split_once("\nnext:\n").unwrap_or_else(|| panic!("no \"next:\" in {stdout}")).1;
    let steps: Vec<String> =
        after.lines().map(|line| line.strip_prefix("  ").expect("indented").to_owned()).collect();
    assert!(steps.len() >= 4, "{stdout}");
    steps
}

/// Runs `steps` in order in one shell started in `cwd` (where `xplug new`
/// ran), exactly as printed, as if pasted: the first failing one fails the
/// test. Cargo finds the crate's default target directory (the paths the
/// steps name); the outer `cargo test`'s build settings are not passed on.
fn run_pasted(cwd: &Path, steps: &[String]) {
    let cargo = PathBuf::from(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    let mut path = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).collect::<Vec<_>>();
    if let Some(dir) = cargo.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        path.insert(0, dir.to_path_buf());
    }
    let script = format!("set -ex\n{}\n", steps.join("\n"));
    let output = Command::new("sh")
        .current_dir(cwd)
        .args(["-c", &script])
        .env("PATH", std::env::join_paths(path).unwrap())
        .env("NO_COLOR", "1")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .output()
        .expect("sh runs");
    assert!(
        output.status.success(),
        "the \"next:\" steps failed in {}:\n{script}\nstdout:\n{}\nstderr:\n{}",
        cwd.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A printed step as a user types it: `xplug` for the absolute path the
/// tests' binary is run by.
fn as_typed(step: &str) -> String {
    match step.split_once(' ') {
        Some((program, rest)) if program.ends_with("/xplug") || program.ends_with("/xplug-static") => {
            format!("xplug {rest}")
        }
        _ => step.to_owned(),
    }
}

/// The commands of the README's `sh` block that starts with `xplug new`,
/// without their comments.
fn readme_new_plugin_commands() -> Vec<String> {
    let readme = std::fs::read_to_string(xplug_fixtures::workspace_root().join("README.md")).unwrap();
    let block = readme
        .split("```sh\n")
        .skip(1)
        .map(|rest| &rest[..rest.find("```").expect("a closed block")])
        .find(|block| block.starts_with("xplug new "))
        .expect("README.md has a `sh` block starting with `xplug new`");
    let commands: Vec<String> = block
        .lines()
        .map(|line| line.split(" #").next().unwrap().trim().to_owned())
        .filter(|line| !line.is_empty())
        .collect();
    assert!(commands.len() >= 3, "{commands:?}");
    commands
}

#[test]
fn a_new_plugin_builds_with_plain_cargo_and_passes_check_and_call() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("new_adder");
    let dir_str = dir.to_str().expect("temporary paths are UTF-8");

    // As on a fresh machine: no --path, no --sdk. This xplug is built from
    // this checkout, whose crates are not on crates.io yet: it says so and
    // depends on them by path, so the first `cargo build` passes.
    let (stdout, stderr) = new_in(temp.path(), &["new_adder"]);
    assert!(stderr.contains("not on crates.io yet"), "{stderr}");
    let checkout = std::fs::canonicalize(xplug_fixtures::workspace_root()).unwrap();
    assert!(stderr.contains(&checkout.display().to_string()), "{stderr}");
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let sdk = checkout.join("crates").join("plugin-sdk");
    assert!(manifest.contains(&format!("xplug-sdk = {{ path = \"{}\" }}", sdk.display())), "{manifest}");
    for file in ["Cargo.toml", "src/lib.rs", "tests/load.rs"] {
        assert!(dir.join(file).is_file(), "{file} was not created");
    }
    // A second run refuses to overwrite the crate.
    let (code, refused) = json_output(&["new", "new_adder", "--path", dir_str]);
    assert_eq!(code, Some(2), "{refused}");
    assert_eq!(refused["error"]["kind"], "usage");

    // The "next:" steps, pasted in order where `xplug new` ran: `cd`, the
    // builds, `xplug check` and `xplug call` of the library. The crate's
    // target directory is a link to one kept between runs, so its
    // dependencies are compiled once; the steps use it as `target/`.
    std::fs::create_dir_all(shared_target_dir()).unwrap();
    std::os::unix::fs::symlink(shared_target_dir(), dir.join("target")).unwrap();
    let steps = next_steps(&stdout);
    assert_eq!(steps[..3], ["cd new_adder", "cargo build --release", "cargo test"], "{stdout}");
    // The README's commands for a new plugin are these steps (its name
    // for the crate is `my_plugin`), so running the steps runs them.
    let printed: Vec<String> = steps.iter().map(|step| as_typed(step)).collect();
    for command in readme_new_plugin_commands() {
        let command = command.replace("my_plugin", "new_adder");
        assert!(
            command == "xplug new new_adder" || printed.contains(&command),
            "README.md says to run `{command}`, which is not what `xplug new` prints: {printed:?}"
        );
    }
    run_pasted(temp.path(), &steps);
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

/// Where the dependencies come from, as `--json` reports them: this xplug
/// is built from this checkout, so by path on it (the crates are not on
/// crates.io yet); `--sdk` names another. A packaged xplug depends by
/// version: `new`'s unit tests (`Source::choose`) and, with the packaged
/// crates installed by `cargo install`, tests/packaged.rs.
#[test]
fn new_depends_on_the_checkout_it_was_built_from_unless_given_another() {
    let temp = tempfile::tempdir().unwrap();
    let checkout = std::fs::canonicalize(xplug_fixtures::workspace_root()).unwrap();
    let sdk = checkout.join("crates").join("plugin-sdk").display().to_string();
    let manager = checkout.join("crates").join("manager").display().to_string();
    for (template, sdk_line) in [
        ("add", format!("xplug-sdk = {{ path = \"{sdk}\" }}")),
        ("workgroup", format!("xplug-sdk = {{ path = \"{sdk}\", default-features = false }}")),
    ] {
        let dir = temp.path().join(template);
        let created = common::json(&["new", "p", "--template", template, "--path", dir.to_str().unwrap()], 0);
        assert_eq!(created["dependencies"]["from"], "built_from", "{created}");
        assert_eq!(created["dependencies"]["path"], checkout.display().to_string(), "{created}");
        assert!(
            created["dependencies"]["note"].as_str().unwrap().contains("not on crates.io yet"),
            "{created}"
        );
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        assert!(manifest.contains(&sdk_line), "{template}: {manifest}");
        assert!(manifest.contains(&format!("xplug-manager = {{ path = \"{manager}\" }}")), "{manifest}");
        assert!(!manifest.contains("{ version ="), "{template}: {manifest}");
        // The JSON lists the same steps the text prints.
        assert_eq!(created["next"][0], format!("cd {}", dir.display()), "{created}");
    }
    // --sdk: by path on that checkout (here a link to it, kept as given
    // only up to its canonical form), refused when it is none.
    let link = temp.path().join("checkout link");
    std::os::unix::fs::symlink(&checkout, &link).unwrap();
    let dir = temp.path().join("by_path");
    let created =
        common::json(&["new", "p", "--path", dir.to_str().unwrap(), "--sdk", link.to_str().unwrap()], 0);
    assert_eq!(created["dependencies"]["from"], "sdk", "{created}");
    assert_eq!(created["dependencies"]["note"], serde_json::Value::Null, "{created}");
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(manifest.contains(&format!("xplug-sdk = {{ path = \"{sdk}\" }}")), "{manifest}");
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

/// The issue's "done when": a fresh crate from `xplug new --standalone`
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
    // By its absolute path, with --sdk; as a user would, without --json.
    let (stdout, _) =
        new_in(temp.path(), &["new_relu", "--standalone", "--path", dir_str, "--sdk", checkout]);
    assert!(stdout.contains("leaky_relu.mlir"), "{stdout}");
    for file in ["Cargo.toml", "src/lib.rs", "tests/kernel.rs", "leaky_relu.mlir", "README.md"] {
        assert!(dir.join(file).is_file(), "{file} was not created");
    }
    // `--standalone` is not the scalar template.
    let refused = common::json(
        &["new", "x", "--standalone", "--template", "add", "--path", temp.path().join("x").to_str().unwrap()],
        2,
    );
    assert!(refused["error"]["message"].as_str().unwrap().contains("workgroup"), "{refused}");

    // The "next:" steps, pasted in order where `xplug new` ran: `cd` to
    // the crate, its builds and host test (the kernel over host slices,
    // `Buffer::from_slice`), `xplug check` of the library, `xplug build
    // --sos` and `xplug inspect` of the `.sos`. The crate's own target
    // directory: `xplug build` finds it through cargo metadata, as it would
    // for the author.
    let steps = next_steps(&stdout);
    assert_eq!(steps[0], format!("cd {dir_str}"), "{stdout}");
    run_pasted(temp.path(), &steps);
    let target = dir.join("target");

    // One command builds the .sos (again: its JSON report).
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
    // A value not of the declared type: refused by the host from the
    // declaration the .sos exports, before `load`.
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

/// Issue 42's workflow: a fresh `xplug new --template kernel` crate builds
/// every deployment with the commands `xplug new` prints (the shared
/// library, the `.sos`, and `xplug build --object --bitcode --program
/// mul.mlir`), and its program gives the same bytes in each of them, on
/// both local devices, under IREE's pinned `iree-run-module` and `xplug
/// run`, at a length that is not a multiple of the workgroup.
#[test]
fn a_kernel_crate_gives_the_same_bytes_in_every_deployment() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("kern");
    let dir_str = dir.to_str().expect("temporary paths are UTF-8");
    let checkout = xplug_fixtures::workspace_root();
    let checkout = checkout.to_str().expect("the checkout's path is UTF-8");
    let (stdout, _) =
        new_in(temp.path(), &["new_kernel", "--template", "kernel", "--path", dir_str, "--sdk", checkout]);
    for file in ["Cargo.toml", "src/lib.rs", "tests/kernel.rs", "mul.mlir", "README.md"] {
        assert!(dir.join(file).is_file(), "{file} was not created");
    }
    let steps = next_steps(&stdout);
    assert!(
        steps.iter().any(|step| step.ends_with("build --object --bitcode --program mul.mlir")),
        "{stdout}"
    );
    run_pasted(temp.path(), &steps);

    let target = dir.join("target");
    let library = target.join("release").join(format!(
        "{}new_kernel{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    let sos = target.join("sos").join("new_kernel.sos");
    let linked = target.join("linked");
    let root = xplug_fixtures::workspace_root();
    let tools = xplug_fixtures::iree_e2e::toolchain(&root).expect("IREE's pip tools are ready");
    let work = temp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let compile = |name: &str, program: &Path| {
        let source = std::fs::read_to_string(program).unwrap();
        xplug_fixtures::linked::compile(&tools, &work, name, &source, &linked, None).expect("iree-compile")
    };
    let import = compile("import", &dir.join("mul.mlir"));
    let object = compile("object", &linked.join("mul.object.mlir"));
    let bitcode = compile("bitcode", &linked.join("mul.bitcode.mlir"));

    // 1 001 elements: 16 workgroups, the last of 41.
    let lhs: Vec<f32> = (0..1001).map(|i| (i as f32 - 500.0) * 0.375).collect();
    let rhs: Vec<f32> = (0..1001).map(|i| 1.0 / (i as f32 + 1.5)).collect();
    let expected: Vec<u32> = lhs.iter().zip(&rhs).map(|(a, b)| (a * b).to_bits()).collect();
    let inputs = [work.join("lhs.npy"), work.join("rhs.npy")];
    write_npy(&inputs[0], &lhs);
    write_npy(&inputs[1], &rhs);
    let out = work.join("out.npy");

    let iree = tools.run_module.to_str().unwrap();
    let deployments: [(&str, &Path, Option<&Path>); 4] = [
        ("import from the .so", &import, Some(&library)),
        ("import from the .sos", &import, Some(&sos)),
        ("linked object", &object, None),
        ("linked bitcode", &bitcode, None),
    ];
    let mut runs = 0;
    for device in ["local-sync", "local-task"] {
        for tool in [vec![iree], vec![common::XPLUG, "run"]] {
            for (deployment, module, plugin) in deployments {
                let bytes =
                    xplug_fixtures::linked::run_program(&tool, device, module, "mul", plugin, &inputs, &out)
                        .unwrap_or_else(|error| panic!("{deployment} under {tool:?} on {device}: {error}"));
                let values = xplug_npy::decode_f32(&bytes).expect("the output is an .npy of f32");
                let bits: Vec<u32> = values.iter().map(|value| value.to_bits()).collect();
                assert!(
                    bits == expected,
                    "{deployment} under {tool:?} on {device} differs from Rust's product"
                );
                runs += 1;
            }
        }
    }
    assert_eq!(runs, 2 * 2 * 4);
}
