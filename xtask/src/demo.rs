//! `cargo xtask demo`: build the example plugins, run `xplug demo`, then run
//! a compiled IREE program through xplug (`xplug run`: IREE's runtime with
//! xplug's manager as the import provider) and check its result against a
//! plain Rust loop.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::Instant;

use crate::iree_e2e::{self, E2eError, MUL_CALL};
use xplug_fixtures::PluginBuildError;
use xplug_fixtures::plugins::{self, PluginProfile};

/// Elements of the IREE program's inputs.
pub const IREE_DEMO_ELEMENTS: usize = 1 << 20;

/// What stops the demo.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DemoError {
    /// A build failed or cargo could not be started.
    #[error("cannot build the demo")]
    Build(#[from] PluginBuildError),
    /// IREE's compiler could not be set up or rejected the program.
    #[error("cannot prepare the IREE program")]
    Iree(#[from] E2eError),
    /// A file could not be written or read.
    #[error("{context}")]
    Io {
        /// What was being done.
        context: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// `xplug run` wrote an unreadable output.
    #[error("cannot read xplug run's output {path}")]
    Output {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: xplug_npy::Error,
    },
    /// The program's result differs from the plain loop.
    #[error(
        "IREE program result differs from the plain Rust loop at element {index}: {found} instead of {expected}"
    )]
    Mismatch {
        /// First differing element.
        index: usize,
        /// Plain loop's value.
        expected: f32,
        /// Program's value.
        found: f32,
    },
}

/// Builds the example plugins and `xplug-static` (both optimised unless
/// `debug`), runs `xplug-static demo` with `extra` arguments, then the IREE
/// program through the same binary; returns the exit status of the first
/// step that did not succeed.
///
/// # Errors
/// When a build fails, IREE cannot be set up, or the IREE program's result
/// is wrong.
pub fn run(root: &Path, debug: bool, extra: &[String]) -> Result<ExitStatus, DemoError> {
    let profile = PluginProfile::from_release_flag(!debug);
    eprintln!("building the example plugins into {} ...", plugins::output_dir(root, profile).display());
    plugins::build(root, profile)?;
    let binary = build_xplug(root, debug)?;
    eprintln!("running xplug demo ...");
    let mut demo = Command::new(&binary);
    demo.arg("demo").arg("--plugin-dir").arg(plugins::output_dir(root, profile)).args(extra);
    let io = |context: String| move |source| DemoError::Io { context, source };
    let status = demo.status().map_err(io(format!("cannot run {}", binary.display())))?;
    if !status.success() {
        return Ok(status);
    }
    run_iree_program(root, profile, &binary)
}

/// The package and binary the demo builds: `xplug` with the example static
/// plugin linked in (the shipped binary has none), so the demo shows a
/// dynamic plugin overriding a static one.
const XPLUG_PACKAGE: &str = "xplug-cli-static";
const XPLUG_BINARY: &str = "xplug-static";

/// Builds [`XPLUG_BINARY`] with cargo (its progress on stderr) and returns
/// the binary's path in cargo's target directory (`CARGO_TARGET_DIR` or
/// `target/`). Every step after this one runs that file, so a step can
/// never pick up a binary some other build left behind.
fn build_xplug(root: &Path, debug: bool) -> Result<PathBuf, DemoError> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command.current_dir(root).args(["build", "-p", XPLUG_PACKAGE, "--bin", XPLUG_BINARY]);
    if !debug {
        command.arg("--release");
    }
    let line = format!(
        "cargo build -p {XPLUG_PACKAGE} --bin {XPLUG_BINARY}{}",
        if debug { "" } else { " --release" }
    );
    eprintln!("building {XPLUG_BINARY} ({line}) ...");
    xplug_fixtures::command::status(&mut command).map_err(|source| PluginBuildError::Command { source })?;
    let binary =
        xplug_fixtures::target_dir(root).join(if debug { "debug" } else { "release" }).join(XPLUG_BINARY);
    if !binary.is_file() {
        return Err(PluginBuildError::NoOutput { command: line, path: binary }.into());
    }
    Ok(binary)
}

/// Compiles `tests/iree/mul_call.mlir` with the pinned `iree-compile`
/// (cached under `target/iree-demo/`), runs it with `xplug run` on
/// `local-task` with two example plugins (the newer one, a `.sos`, serves
/// `simple_mul_workgroup`), and compares every element with `a * b`.
fn run_iree_program(root: &Path, profile: PluginProfile, binary: &Path) -> Result<ExitStatus, DemoError> {
    println!();
    println!("IREE program: tests/iree/mul_call.mlir, {IREE_DEMO_ELEMENTS} floats, through xplug run");
    let tools = iree_e2e::toolchain(root)?;
    let work = root.join("target").join("iree-demo");
    let io = |context: String| move |source| DemoError::Io { context, source };
    std::fs::create_dir_all(&work).map_err(io(format!("cannot create {}", work.display())))?;
    let module = iree_e2e::compile(root, &tools, MUL_CALL, &work)?;
    let (a, b) = iree_e2e::inputs(IREE_DEMO_ELEMENTS);
    let (a_path, b_path, out_path) = (work.join("a.npy"), work.join("b.npy"), work.join("out.npy"));
    for (path, values) in [(&a_path, &a), (&b_path, &b)] {
        std::fs::write(path, xplug_npy::encode_f32(values))
            .map_err(io(format!("cannot write {}", path.display())))?;
    }
    let plugin_dir = plugins::output_dir(root, profile);
    // The binary `xplug demo` just ran, called directly so that the time
    // below is xplug's alone.
    let mut run = Command::new(binary);
    run.arg("run")
        .arg(&module)
        .arg("--function=mul")
        .arg("--device=local-task")
        .arg(format!("--plugin={}", plugin_dir.join(plugins::library_file_name("sample_system")).display()))
        .arg(format!("--plugin={}", plugin_dir.join("sample_standalone.sos").display()))
        .arg("--trace")
        .arg(format!("--input=@{}", a_path.display()))
        .arg(format!("--input=@{}", b_path.display()))
        .arg(format!("--output=@{}", out_path.display()));
    let started = Instant::now();
    let status = run.status().map_err(io(format!("cannot run {}", binary.display())))?;
    let elapsed = started.elapsed();
    if !status.success() {
        return Ok(status);
    }
    let bytes = std::fs::read(&out_path).map_err(io(format!("cannot read {}", out_path.display())))?;
    let out = xplug_npy::decode_f32(&bytes)
        .map_err(|source| DemoError::Output { path: out_path.display().to_string(), source })?;
    let plain: Vec<f32> = a.iter().zip(&b).map(|(a, b)| a * b).collect();
    if let Some(index) =
        (0..plain.len()).find(|&i| out.get(i).map(|v| v.to_bits()) != Some(plain[i].to_bits()))
    {
        return Err(DemoError::Mismatch {
            index,
            expected: plain[index],
            found: out.get(index).copied().unwrap_or(f32::NAN),
        });
    }
    println!(
        "  xplug run (start, load the module and plugins, read and write .npy, run): {:.1} ms; all {} elements equal the plain Rust loop bit for bit",
        elapsed.as_secs_f64() * 1e3,
        plain.len()
    );
    Ok(status)
}
