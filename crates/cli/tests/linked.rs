//! One Rust kernel, every deployment (`docs/src/plugins/dispatch.md#linked-kernels`):
//! `sample_standalone`'s `simple_mul_workgroup`, unchanged, runs in one
//! program as an import resolved from the `.so`, as an import resolved from
//! the `.sos`, as an object and as LLVM bitcode that `xplug build --object
//! --bitcode` made and the pinned `iree-compile` linked into the
//! executable, and beside IREE's own code for the same operation; so does
//! its `matmul_relu_workgroup`, a reduction. Every output is the same bytes
//! as the plain Rust computation, on both local devices and at sizes that
//! leave a short last workgroup, whether IREE's `iree-run-module` or `xplug
//! run` runs it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::XPLUG;
use xplug_elf::{ElfTarget, LIBRARY_QUERY_SYMBOL};
use xplug_fixtures::iree_e2e;
use xplug_fixtures::linked::compile;
use xplug_fixtures::linked::{KERNEL_CRATE, MATMUL_RELU_CODEGEN, MUL_CODEGEN};
use xplug_fixtures::{build_rust_plugin, sos, target_dir, workspace_root};
use xplug_npy::NpyArray;

/// A `<f4` array of `shape`.
fn array(shape: &[usize], values: &[f32]) -> NpyArray {
    assert_eq!(shape.iter().product::<usize>(), values.len());
    NpyArray {
        descr: "<f4".to_owned(),
        shape: shape.to_vec(),
        data: values.iter().flat_map(|value| value.to_le_bytes()).collect(),
    }
}

/// One program run in every deployment: its import version (a file
/// under `tests/iree/`), IREE's codegen of the same operation, and its
/// cases (inputs, and the output computed in plain Rust).
struct Program {
    name: &'static str,
    import_file: &'static str,
    function: &'static str,
    codegen: &'static str,
    cases: Vec<(Vec<NpyArray>, NpyArray)>,
}

/// `a * b` at sizes that leave a short last workgroup of 64.
fn mul_program() -> Program {
    let cases = [1000, 4099]
        .into_iter()
        .map(|size| {
            let (a, b) = iree_e2e::inputs(size);
            let product: Vec<f32> = a.iter().zip(&b).map(|(a, b)| a * b).collect();
            (vec![array(&[size], &a), array(&[size], &b)], array(&[size], &product))
        })
        .collect();
    Program { name: "mul", import_file: "mul_call.mlir", function: "mul", codegen: MUL_CODEGEN, cases }
}

/// `max(a × b, 0)` with small integers, so that every sum is exact in
/// `f32` whatever order a vectorised reduction takes, at shapes that leave
/// a short last block of 16 rows.
fn matmul_relu_program() -> Program {
    let cases = [(50, 37, 33), (16, 8, 5)]
        .into_iter()
        .map(|(m, k, n)| {
            let small = |index: usize, salt: usize| ((index * 7 + salt * 13) % 9) as f32 - 4.0;
            let a: Vec<f32> = (0..m * k).map(|i| small(i, 1)).collect();
            let b: Vec<f32> = (0..k * n).map(|i| small(i, 2)).collect();
            let mut out = vec![0.0_f32; m * n];
            for row in 0..m {
                for column in 0..n {
                    let sum: f32 = (0..k).map(|i| a[row * k + i] * b[i * n + column]).sum();
                    out[row * n + column] = sum.max(0.0);
                }
            }
            (vec![array(&[m, k], &a), array(&[k, n], &b)], array(&[m, n], &out))
        })
        .collect();
    Program {
        name: "matmul_relu",
        import_file: "matmul_relu_call.mlir",
        function: "matmul_relu",
        codegen: MATMUL_RELU_CODEGEN,
        cases,
    }
}

/// Runs `tool` (IREE's `iree-run-module`, or `xplug run`) on `function` of
/// `module` with `inputs` and returns the output array.
fn run(
    tool: &[&str],
    module: &Path,
    function: &str,
    device: &str,
    plugin: Option<&Path>,
    inputs: &[PathBuf],
    out: &Path,
) -> NpyArray {
    let bytes = xplug_fixtures::linked::run_program(tool, device, module, function, plugin, inputs, out)
        .unwrap_or_else(|error| panic!("{error}"));
    xplug_npy::decode(&bytes).expect("the output is an .npy array")
}

/// The kernel crate built four ways, once for all tests of this file.
struct Built {
    /// The `.so`.
    library: PathBuf,
    /// The `.sos`.
    standalone: PathBuf,
    /// Where `xplug build --object --bitcode` wrote the objects and the
    /// linked programs (`NAME.object.mlir`, `NAME.bitcode.mlir` for each
    /// import program `NAME.mlir` it was given).
    linked_dir: PathBuf,
    /// The MLIR it wrote: the object block, then the bitcode block.
    object_mlir: String,
}

fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let root = workspace_root();
        let work = target_dir(&root).join("linked-test");
        std::fs::create_dir_all(&work).unwrap();
        let library = build_rust_plugin(KERNEL_CRATE);
        let standalone = sos::build_rust_sos(&root, KERNEL_CRATE, &work).expect("the .sos builds");
        let linked_dir = work.join("objects");
        let mlir_path = work.join("kernels.mlir");
        let built = Command::new(XPLUG)
            .args(["build", "--object", "--bitcode", "-p", KERNEL_CRATE])
            .arg("--manifest-path")
            .arg(root.join("Cargo.toml"))
            .arg("--out-dir")
            .arg(&linked_dir)
            .arg("--mlir")
            .arg(&mlir_path)
            .arg("--program")
            .arg(root.join("tests/iree/mul_call.mlir"))
            .arg("--program")
            .arg(root.join("tests/iree/matmul_relu_call.mlir"))
            .env("NO_COLOR", "1")
            .output()
            .expect("xplug build runs");
        assert!(
            built.status.success(),
            "xplug build --object --bitcode:\n{}",
            String::from_utf8_lossy(&built.stderr)
        );
        let mlir = std::fs::read_to_string(&mlir_path).unwrap();
        for declaration in [
            "func.func private @simple_mul_workgroup(%binding0: memref<f32>, %binding0_offset: index, \
             %binding1: memref<f32>, %binding1_offset: index, %binding2: memref<f32>, %binding2_offset: \
             index, %size: index, %tid: index) attributes {hal.import.static, llvm.bareptr = true}",
            "func.func private @matmul_relu_workgroup(%lhs: memref<f32>, %lhs_offset: index, %rhs: memref<f32>, \
             %rhs_offset: index, %out: memref<f32>, %out_offset: index, %m: index, %n: index, %k: index) \
             attributes {hal.import.static, llvm.bareptr = true}",
        ] {
            assert!(mlir.contains(declaration), "xplug build printed the kernel's declaration {declaration}:\n{mlir}");
        }
        let (object_mlir, bitcode_mlir) = mlir.split_once("\n\n").expect("one MLIR block per format");
        assert!(object_mlir.contains(".o\"}>") && bitcode_mlir.contains(".bc\"}>"), "{mlir}");
        let stdout = String::from_utf8_lossy(&built.stdout);
        for program in ["mul_call", "matmul_relu_call"] {
            for format in ["object", "bitcode"] {
                let path = linked_dir.join(format!("{program}.{format}.mlir"));
                assert!(stdout.contains(&path.display().to_string()), "it names {}:\n{stdout}", path.display());
                let linked = std::fs::read_to_string(&path).unwrap();
                // The one change: the declaration and the executable's objects.
                let block = if format == "object" { object_mlir } else { bitcode_mlir };
                let objects = &block[block.find("hal.executable.objects").unwrap()..block.find("\n//").unwrap()];
                assert!(linked.contains(objects.lines().next().unwrap()), "{linked}");
                assert!(linked.contains("hal.import.static, llvm.bareptr = true}"), "{linked}");
                assert!(!linked.contains("hal.import.fields = ["), "{linked}");
            }
        }
        Built { library, standalone, linked_dir, object_mlir: object_mlir.to_owned() }
    })
}

#[test]
fn one_kernel_gives_the_same_bytes_in_every_deployment() {
    let root = workspace_root();
    let tools = iree_e2e::toolchain(&root).expect("IREE's pinned tools");
    let work = target_dir(&root).join("linked-test").join("host");
    std::fs::create_dir_all(&work).unwrap();
    let Built { library, standalone, linked_dir, .. } = built();

    let iree = tools.run_module.to_str().unwrap();
    let runtimes: [(&str, Vec<&str>); 2] =
        [("iree-run-module", vec![iree]), ("xplug run", vec![XPLUG, "run"])];
    let mut runs = 0;
    for program in [mul_program(), matmul_relu_program()] {
        let name = program.name;
        let import_source =
            std::fs::read_to_string(root.join("tests/iree").join(program.import_file)).unwrap();
        let import_module =
            compile(&tools, &work, &format!("{name}_import"), &import_source, linked_dir, None)
                .expect("iree-compile");
        // The programs `xplug build --program` wrote from the import program.
        let linked = |format: &str| {
            let stem = program.import_file.trim_end_matches(".mlir");
            let source = std::fs::read_to_string(linked_dir.join(format!("{stem}.{format}.mlir"))).unwrap();
            compile(&tools, &work, &format!("{name}_{format}"), &source, linked_dir, None)
                .expect("iree-compile")
        };
        let object_module = linked("object");
        let bitcode_module = linked("bitcode");
        let codegen_module =
            compile(&tools, &work, &format!("{name}_codegen"), program.codegen, linked_dir, None)
                .expect("iree-compile");
        let deployments: [(&str, &Path, Option<&Path>); 5] = [
            ("import from the .so", &import_module, Some(library)),
            ("import from the .sos", &import_module, Some(standalone)),
            ("linked object", &object_module, None),
            ("linked bitcode", &bitcode_module, None),
            ("IREE's codegen", &codegen_module, None),
        ];
        for (inputs, expected) in &program.cases {
            let paths: Vec<PathBuf> = inputs
                .iter()
                .enumerate()
                .map(|(index, input)| {
                    let path = work.join(format!("{name}_input{index}.npy"));
                    std::fs::write(&path, xplug_npy::encode(input)).unwrap();
                    path
                })
                .collect();
            for device in ["local-sync", "local-task"] {
                for (runtime, tool) in &runtimes {
                    for (deployment, module, plugin) in deployments {
                        let out = run(
                            tool,
                            module,
                            program.function,
                            device,
                            plugin,
                            &paths,
                            &work.join("out.npy"),
                        );
                        assert!(
                            out == *expected,
                            "{name}: {deployment} under {runtime} on {device} at shape {:?} differs from the \
                             plain Rust computation",
                            expected.shape
                        );
                        runs += 1;
                    }
                }
            }
        }
    }
    // Two programs, two cases each, two devices, two runtimes, five
    // deployments.
    assert_eq!(runs, 2 * 2 * 2 * 2 * 5);
}

#[test]
fn aarch64_objects_and_bitcode_link_into_an_executable_that_validates() {
    let Built { linked_dir, object_mlir, .. } = built();
    if !object_mlir.contains("embedded-elf-arm_64") {
        eprintln!(
            "note: no aarch64 core library is installed (Debian's libstd-rust-web-dev:arm64, as `cargo xtask \
             test-aarch64` installs it), so xplug build made no aarch64 object: not checked"
        );
        return;
    }
    let root = workspace_root();
    let tools = iree_e2e::toolchain(&root).expect("IREE's pinned tools");
    let target = ElfTarget::aarch64(4096).with_query_symbol(LIBRARY_QUERY_SYMBOL);
    for format in ["object", "bitcode"] {
        let work = target_dir(&root).join("linked-test").join(format!("aarch64-{format}"));
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).unwrap();
        let source = std::fs::read_to_string(linked_dir.join(format!("mul_call.{format}.mlir"))).unwrap();
        compile(&tools, &work, "mul_linked", &source, linked_dir, Some("aarch64-unknown-linux-gnu"))
            .unwrap_or_else(|error| panic!("aarch64 {format}: {error}"));
        let executable =
            work.join("mul_linked.executables").join("xplug_mul_call_kernels_embedded_elf_arm_64.so");
        let bytes =
            std::fs::read(&executable).unwrap_or_else(|error| panic!("{}: {error}", executable.display()));
        let plan = xplug_elf::validate_for(&bytes, target)
            .unwrap_or_else(|error| panic!("the aarch64 executable linking the {format}: {error}"));
        assert_eq!(plan.machine(), target.machine());
    }
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

#[test]
fn a_kernel_that_takes_plugin_state_is_refused_by_the_linked_build_only() {
    // A linked kernel has no `load`, so no state: the linked build stops
    // with the SDK's message; the crate itself is a fine plugin.
    let (code, stderr) = build_kernel_crate(
        "stateful_kernel",
        r#"#![no_std]
use xplug_sdk::{Environment, Error, ImportArgs, ImportError, LoadParams, PluginState};

#[derive(ImportArgs)]
#[repr(C)]
pub struct ScaleArgs {
    pub value: f32,
}

pub struct Scale;

impl PluginState for Scale {
    fn load(_env: &Environment<'_>, _params: &LoadParams<'_>) -> Result<Self, Error> {
        Ok(Scale)
    }
}

#[xplug_sdk::plugin(name = "stateful_kernel", features(standalone), state = Scale)]
mod plugin {
    use super::*;

    #[import("scale")]
    fn scale(args: &mut ScaleArgs, _state: &Scale) -> Result<(), ImportError> {
        args.value *= 2.0;
        Ok(())
    }
}
"#,
    );
    assert_eq!(code, Some(1), "refused:\n{stderr}");
    assert!(
        stderr.contains("import `scale` (fn `scale`) takes the plugin state, which a kernel linked into the executable does not have"),
        "the SDK's message:\n{stderr}"
    );
}
