//! One Rust kernel, every deployment (`docs/dispatch.md#linked-kernels`):
//! `sample_standalone`'s `simple_mul_workgroup`, unchanged, runs in one
//! program as an import resolved from the `.so`, as an import resolved from
//! the `.sos`, as an object and as LLVM bitcode that `xplug build --object
//! --bitcode` made and the pinned `iree-compile` linked into the
//! executable, and beside IREE's own code for the same operation. Every
//! output is the same bytes as a plain Rust `a * b`, on both local devices
//! and at sizes that are not multiples of the program's 64-element
//! workgroups, whether IREE's `iree-run-module` or `xplug run` runs it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::XPLUG;
use xplug_fixtures::iree_e2e::{self, IreeTools};
use xplug_fixtures::{build_rust_plugin, sos, target_dir, workspace_root};

/// The kernel crate and its one workgroup kernel.
const KERNEL_CRATE: &str = "sample_standalone";

/// Sizes of 15 full workgroups and a short one, and of 64 and a short one.
const SIZES: [usize; 2] = [1000, 4099];

/// The import program (`tests/iree/mul_call.mlir`) with the declaration's
/// `hal.import.fields` turned into a static import and the executable given
/// `objects`: the one change a program makes to link the kernel instead.
fn linked_program(import_program: &str, objects: &str) -> String {
    let fields = "hal.import.fields = [\"processor_id\", \"processor_data\"],";
    assert!(import_program.contains(fields), "mul_call.mlir declares the import with {fields}");
    let executable = "stream.executable private @kernels {";
    assert!(import_program.contains(executable), "mul_call.mlir has {executable}");
    import_program
        .replace(fields, "hal.import.static,")
        .replace(executable, &format!("stream.executable private @kernels attributes {{\n{objects}\n  }} {{"))
}

/// The `hal.executable.objects = ...` attribute of the MLIR `xplug build`
/// printed for one format, as printed.
fn objects_attribute(mlir: &str) -> String {
    let start = mlir.find("hal.executable.objects").expect("the MLIR has the objects attribute");
    let end = mlir[start..].find("\n}>").expect("the attribute ends with `}>`") + start + 3;
    mlir[start..end].to_owned()
}

/// IREE's own code for `a * b`, the reference.
const CODEGEN_PROGRAM: &str = "func.func @mul(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %product = arith.mulf %a, %b : tensor<?xf32>
  return %product : tensor<?xf32>
}
";

/// Compiles `source` (written to `work/NAME.mlir`) into `work/NAME.vmfb`
/// with the pinned compiler, objects searched in `objects`.
fn compile(tools: &IreeTools, work: &Path, name: &str, source: &str, objects: &Path) -> PathBuf {
    let mlir = work.join(format!("{name}.mlir"));
    std::fs::write(&mlir, source).unwrap();
    let module = work.join(format!("{name}.vmfb"));
    let output = Command::new(&tools.compile)
        .arg(&mlir)
        .args([
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu",
            "--iree-llvmcpu-target-cpu=generic",
        ])
        .arg(format!("--iree-hal-executable-object-search-path={}", objects.display()))
        .arg("-o")
        .arg(&module)
        .output()
        .expect("iree-compile runs");
    assert!(output.status.success(), "iree-compile {name}:\n{}", String::from_utf8_lossy(&output.stderr));
    module
}

/// Runs `tool` (IREE's `iree-run-module`, or `xplug run`) on `module` and
/// returns the output `.npy` bytes.
#[allow(clippy::too_many_arguments)]
fn run(
    tool: &[&str],
    module: &Path,
    device: &str,
    plugin: Option<&Path>,
    a: &Path,
    b: &Path,
    out: &Path,
) -> Vec<u8> {
    let _ = std::fs::remove_file(out);
    let mut command = Command::new(tool[0]);
    command.args(&tool[1..]);
    command
        .arg(format!("--device={device}"))
        .arg(format!("--module={}", module.display()))
        .arg("--function=mul")
        .arg(format!("--input=@{}", a.display()))
        .arg(format!("--input=@{}", b.display()))
        .arg(format!("--output=@{}", out.display()));
    if let Some(plugin) = plugin {
        command.arg(format!("--executable_plugin={}", plugin.display()));
    }
    let output = command.output().expect("the runtime runs");
    assert!(
        output.status.success(),
        "{tool:?} {} on {device}:\n{}",
        module.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::read(out).unwrap()
}

#[test]
fn one_kernel_gives_the_same_bytes_in_every_deployment() {
    let root = workspace_root();
    let tools = iree_e2e::toolchain(&root).expect("IREE's pinned tools");
    let work = target_dir(&root).join("linked-test");
    std::fs::create_dir_all(&work).unwrap();

    // The kernel crate as a plugin, a standalone plugin, an object and
    // bitcode: one source, four builds.
    let library = build_rust_plugin(KERNEL_CRATE);
    let standalone = sos::build_rust_sos(&root, KERNEL_CRATE, &work).expect("the .sos builds");
    let linked_dir = work.join("objects");
    let mlir_path = work.join("kernels.mlir");
    let manifest = root.join("Cargo.toml");
    let built = Command::new(XPLUG)
        .args(["build", "--object", "--bitcode", "-p", KERNEL_CRATE])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--out-dir")
        .arg(&linked_dir)
        .arg("--mlir")
        .arg(&mlir_path)
        .env("NO_COLOR", "1")
        .output()
        .expect("xplug build runs");
    assert!(
        built.status.success(),
        "xplug build --object --bitcode:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let mlir = std::fs::read_to_string(&mlir_path).unwrap();
    let declaration = "func.func private @simple_mul_workgroup(%binding0: memref<f32>, %binding0_offset: index, \
                       %binding1: memref<f32>, %binding1_offset: index, %binding2: memref<f32>, %binding2_offset: \
                       index, %size: index, %tid: index) attributes {hal.import.static, llvm.bareptr = true}";
    assert!(mlir.contains(declaration), "xplug build printed the kernel's declaration:\n{mlir}");
    let (object_mlir, bitcode_mlir) = mlir.split_once("\n\n").expect("one MLIR block per format");
    assert!(object_mlir.contains(".o\"}>") && bitcode_mlir.contains(".bc\"}>"), "{mlir}");

    let import_source = std::fs::read_to_string(root.join("tests/iree/mul_call.mlir")).unwrap();
    let import_module = compile(&tools, &work, "import", &import_source, &linked_dir);
    let object_module = compile(
        &tools,
        &work,
        "object",
        &linked_program(&import_source, &objects_attribute(object_mlir)),
        &linked_dir,
    );
    let bitcode_module = compile(
        &tools,
        &work,
        "bitcode",
        &linked_program(&import_source, &objects_attribute(bitcode_mlir)),
        &linked_dir,
    );
    let codegen_module = compile(&tools, &work, "codegen", CODEGEN_PROGRAM, &linked_dir);

    let iree = tools.run_module.to_str().unwrap();
    let runtimes: [(&str, Vec<&str>); 2] =
        [("iree-run-module", vec![iree]), ("xplug run", vec![XPLUG, "run"])];
    let deployments: [(&str, &Path, Option<&Path>); 5] = [
        ("import from the .so", &import_module, Some(&library)),
        ("import from the .sos", &import_module, Some(&standalone)),
        ("linked object", &object_module, None),
        ("linked bitcode", &bitcode_module, None),
        ("IREE's codegen", &codegen_module, None),
    ];
    let mut runs = 0;
    for size in SIZES {
        let (a, b) = iree_e2e::inputs(size);
        let expected: Vec<f32> = a.iter().zip(&b).map(|(a, b)| a * b).collect();
        let expected = xplug_npy::encode_f32(&expected);
        let (a_path, b_path) = (work.join("a.npy"), work.join("b.npy"));
        std::fs::write(&a_path, xplug_npy::encode_f32(&a)).unwrap();
        std::fs::write(&b_path, xplug_npy::encode_f32(&b)).unwrap();
        for device in ["local-sync", "local-task"] {
            for (runtime, tool) in &runtimes {
                for (deployment, module, plugin) in deployments {
                    let out = run(tool, module, device, plugin, &a_path, &b_path, &work.join("out.npy"));
                    assert!(
                        out == expected,
                        "{deployment} under {runtime} on {device} at {size} elements differs from a * b \
                         computed in Rust"
                    );
                    runs += 1;
                }
            }
        }
    }
    assert_eq!(runs, SIZES.len() * 2 * 2 * 5);
}

/// Builds the one-kernel crate `name` with source `lib_rs` (depending on
/// the workspace's SDK) with `xplug build --object`; returns its exit code
/// and stderr.
fn build_kernel_crate(name: &str, lib_rs: &str) -> (Option<i32>, String) {
    let root = workspace_root();
    let work = target_dir(&root).join("linked-refusals").join(name);
    let source = work.join("src");
    std::fs::create_dir_all(&source).unwrap();
    let sdk = root.join("crates/plugin-sdk");
    std::fs::write(
        work.join("Cargo.toml"),
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[lib]\ncrate-type = [\"rlib\"]\n\n\
             [features]\nsos = [\"xplug-sdk/standalone\"]\n\n[dependencies]\nxplug-sdk = {{ path = \"{}\", default-features = false }}\n\n\
             [workspace]\n",
            sdk.display()
        ),
    )
    .unwrap();
    std::fs::write(source.join("lib.rs"), lib_rs).unwrap();
    let output = Command::new(XPLUG)
        .args(["build", "--object"])
        .arg("--manifest-path")
        .arg(work.join("Cargo.toml"))
        .env("NO_COLOR", "1")
        .env("CARGO_TARGET_DIR", work.join("target"))
        .output()
        .expect("xplug build runs");
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn a_kernel_that_keeps_a_global_is_refused_naming_it() {
    // A stateless kernel that counts its calls in a static: IREE's linker
    // would take the object, but every dispatch would share the counter.
    let (code, stderr) = build_kernel_crate(
        "counting_kernel",
        r#"#![no_std]
use core::sync::atomic::{AtomicU32, Ordering};
use xplug_sdk::{ImportArgs, ImportError};

static CALLS: AtomicU32 = AtomicU32::new(0);

#[derive(ImportArgs)]
#[repr(C)]
pub struct CountArgs {
    pub n: usize,
}

#[xplug_sdk::plugin(name = "counting_kernel", features(standalone))]
mod plugin {
    use super::*;

    #[import("count_calls")]
    fn count(args: &mut CountArgs) -> Result<(), ImportError> {
        CALLS.fetch_add(args.n as u32, Ordering::Relaxed);
        Ok(())
    }
}
"#,
    );
    assert_eq!(code, Some(1), "refused:\n{stderr}");
    assert!(stderr.contains("cannot be linked into an IREE executable"), "{stderr}");
    assert!(
        stderr.contains("a writable global") && stderr.contains("counting_kernel::CALLS"),
        "names the global:\n{stderr}"
    );
}

#[test]
fn a_kernel_that_can_panic_is_refused_naming_the_kernel() {
    // An unchecked index: the bounds check's panic path pulls in
    // `core::panicking`, which a linked kernel cannot report to anyone.
    let (code, stderr) = build_kernel_crate(
        "panicking_kernel",
        r#"#![no_std]
use xplug_sdk::{Buffer, BufferMut, ImportArgs, ImportError};

#[derive(ImportArgs)]
#[repr(C)]
pub struct PickArgs {
    pub table: Buffer<f32>,
    pub out: BufferMut<f32>,
    pub index: usize,
}

#[xplug_sdk::plugin(name = "panicking_kernel", features(standalone))]
mod plugin {
    use super::*;

    #[import("pick")]
    fn pick(args: &mut PickArgs) -> Result<(), ImportError> {
        // SAFETY: test kernel: the caller passes 4 elements and one output.
        let (table, out) = unsafe { (args.table.as_slice(4), args.out.as_mut_slice(1)) };
        out[0] = table[args.index];
        Ok(())
    }
}
"#,
    );
    assert_eq!(code, Some(1), "refused:\n{stderr}");
    assert!(
        stderr.contains("`core::panicking::panic_bounds_check`, reached from kernel `pick`"),
        "names the panic and the kernel:\n{stderr}"
    );
}
