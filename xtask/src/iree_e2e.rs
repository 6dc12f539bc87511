//! `cargo xtask iree-e2e`: IREE itself judges the example plugins.
//!
//! The project's own MLIR programs (`tests/iree/*.mlir`) are compiled with
//! IREE's real compiler and run by IREE's real runtime with the example
//! plugins given as `--executable_plugin`, and every output element is
//! compared with what the kernel must compute:
//!
//! 1. [`toolchain`] makes, once, a Python virtual environment under
//!    `target/iree-venv` holding `iree-base-compiler` and `iree-base-runtime`
//!    pinned to [`IREE_VERSION`] (from PyPI), and reuses it afterwards;
//! 2. [`run`] builds the example plugins ([`crate::plugins::build`]) and the
//!    tests' own C plugin (`tests/iree/e2e_plugin.c`, built twice), compiles
//!    each program with `iree-compile`, writes the inputs as `.npy` files,
//!    runs `iree-run-module` for every [`Case`] and reads the `.npy` outputs
//!    back;
//! 3. [`Report::table`] summarises the cases; a case passes only when every
//!    element equals the expected value bit for bit (each expected element
//!    is a single IEEE-754 operation on the inputs, so there is no rounding
//!    freedom to allow for).
//!
//! The cases cover an executable that `func.call`s an import with
//! `hal.import.fields` (`mul_call.mlir`), an `iree_codegen.ukernel.generic`
//! dispatch over five workgroups with uneven and empty slices
//! (`mul_ukernel.mlir`), one executable importing two kernels from two
//! plugins (`two_imports.mlir`), and two plugins exporting the same kernel,
//! where the one given last must win (IREE scans plugins newest first).
//! Sizes run from 1 to several thousand elements, around the 64-element
//! workgroup edge.

use std::fmt;
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::plugins::{self, BuildError, PluginProfile};
use xplug_npy as npy;

/// The IREE release the end-to-end tests pin (`iree-base-compiler` and
/// `iree-base-runtime` from PyPI).
pub const IREE_VERSION: &str = "3.13.0";

/// Element counts every program runs with: the smallest sizes, both sides
/// of the 64-element workgroup, and several thousand.
pub const SIZES: [usize; 7] = [1, 2, 63, 64, 65, 1000, 4099];

/// The example plugins that export `simple_mul_workgroup` (the `.sos`
/// ones go to IREE's own embedded-ELF loader).
pub const KERNEL_PLUGINS: [&str; 5] =
    ["sample_standalone", "sample_system", "c_sample", "sample_standalone.sos", "c_sample.sos"];

/// What can stop the end-to-end run (a wrong result is not an error: it is
/// a failed [`Case`] in the [`Report`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum E2eError {
    /// The Python interpreter is missing or `venv`/`pip` failed.
    #[error(
        "cannot set up IREE {IREE_VERSION} in {venv}: `{command}` failed{}; the end-to-end tests need \
         Python 3 with venv and pip and access to PyPI (set PYTHON to another interpreter)",
        detail.as_deref().map(|detail| format!(":\n{detail}")).unwrap_or_default()
    )]
    Venv {
        /// The environment being created.
        venv: PathBuf,
        /// The command that failed.
        command: String,
        /// Its output, when it ran.
        detail: Option<String>,
        /// Why it could not run, when it did not.
        #[source]
        source: Option<std::io::Error>,
    },
    /// A plugin failed to build.
    #[error("cannot build the plugins for the end-to-end tests")]
    Build {
        /// The build failure.
        #[source]
        source: BuildError,
    },
    /// `iree-compile` rejected a program.
    #[error("iree-compile failed on {program}:\n{stderr}")]
    Compile {
        /// The MLIR file.
        program: PathBuf,
        /// The compiler's diagnostics.
        stderr: String,
    },
    /// A file could not be read or written, or a tool could not be started.
    #[error("{context}")]
    Io {
        /// What was being done, naming the file.
        context: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// An `.npy` file written by IREE could not be read.
    #[error("cannot read IREE's output {path}")]
    Npy {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: npy::Error,
    },
}

fn io(context: String) -> impl FnOnce(std::io::Error) -> E2eError {
    move |source| E2eError::Io { context, source }
}

/// IREE's command-line tools from the pinned packages.
#[derive(Clone, Debug)]
pub struct Toolchain {
    /// `iree-compile`.
    pub compile: PathBuf,
    /// `iree-run-module`.
    pub run_module: PathBuf,
}

/// The virtual environment directory: `target/iree-venv`.
#[must_use]
pub fn venv_dir(root: &Path) -> PathBuf {
    root.join("target").join("iree-venv")
}

/// The packages installed into the environment, pinned.
fn requirements() -> [String; 2] {
    [format!("iree-base-compiler=={IREE_VERSION}"), format!("iree-base-runtime=={IREE_VERSION}")]
}

/// Returns IREE's tools, creating the pinned environment under `target/`
/// the first time (progress goes to stderr). Concurrent callers wait for
/// each other on a lock file.
///
/// # Errors
/// [`E2eError::Venv`] when Python, `venv` or `pip` fails (for example
/// without network access): the message says what to install.
pub fn toolchain(root: &Path) -> Result<Toolchain, E2eError> {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    toolchain_with(root, &python)
}

fn toolchain_with(root: &Path, python: &str) -> Result<Toolchain, E2eError> {
    let venv = venv_dir(root);
    let bin = venv.join("bin");
    let tools = Toolchain { compile: bin.join("iree-compile"), run_module: bin.join("iree-run-module") };
    let target = root.join("target");
    std::fs::create_dir_all(&target).map_err(io(format!("cannot create {}", target.display())))?;
    let lock_path = target.join("iree-venv.lock");
    let lock = File::create(&lock_path).map_err(io(format!("cannot create {}", lock_path.display())))?;
    lock.lock().map_err(io(format!("cannot lock {}", lock_path.display())))?;

    let stamp = venv.join("xplug-requirements.txt");
    let wanted = requirements().join("\n");
    let ready = std::fs::read_to_string(&stamp).is_ok_and(|found| found == wanted)
        && tools.compile.is_file()
        && tools.run_module.is_file();
    if ready {
        return Ok(tools);
    }
    if venv.exists() {
        std::fs::remove_dir_all(&venv).map_err(io(format!("cannot remove the stale {}", venv.display())))?;
    }
    eprintln!("iree-e2e: creating {} with IREE {IREE_VERSION} from PyPI (once) ...", venv.display());
    venv_step(&venv, Command::new(python).arg("-m").arg("venv").arg(&venv))?;
    venv_step(
        &venv,
        Command::new(bin.join("python"))
            .args([
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-input",
                "--progress-bar",
                "off",
            ])
            .args(requirements()),
    )?;
    std::fs::write(&stamp, wanted).map_err(io(format!("cannot write {}", stamp.display())))?;
    eprintln!("iree-e2e: IREE {IREE_VERSION} is ready in {}", venv.display());
    Ok(tools)
}

fn venv_step(venv: &Path, command: &mut Command) -> Result<(), E2eError> {
    let line = format!("{command:?}");
    let output = command.output().map_err(|source| E2eError::Venv {
        venv: venv.to_owned(),
        command: line.clone(),
        detail: None,
        source: Some(source),
    })?;
    if output.status.success() {
        return Ok(());
    }
    let mut detail = String::from_utf8_lossy(&output.stderr).into_owned();
    detail.push_str(&String::from_utf8_lossy(&output.stdout));
    Err(E2eError::Venv { venv: venv.to_owned(), command: line, detail: Some(detail), source: None })
}

/// One MLIR program of `tests/iree/`.
#[derive(Clone, Copy, Debug)]
pub struct Program {
    /// File name under `tests/iree/`.
    pub file: &'static str,
    /// The exported function the cases call.
    pub function: &'static str,
    /// What the function returns, in order.
    pub outputs: &'static [Expected],
}

/// What one output of a program must hold, element by element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expected {
    /// `a * b` (every example's `simple_mul_workgroup`).
    Product,
    /// `-(a * b)`: the marker plugin's `simple_mul_workgroup`.
    NegatedProduct,
    /// `a * b - b`: an example's `simple_mul_workgroup`, then the test
    /// plugin's `e2e_sub_workgroup` on its result.
    ProductMinusB,
}

impl Expected {
    fn value(self, a: f32, b: f32) -> f32 {
        match self {
            Self::Product => a * b,
            Self::NegatedProduct => -(a * b),
            Self::ProductMinusB => a * b - b,
        }
    }
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Product => "a*b",
            Self::NegatedProduct => "-(a*b)",
            Self::ProductMinusB => "a*b-b",
        })
    }
}

/// `func.call` of an import with `hal.import.fields`, one slice per workgroup.
pub const MUL_CALL: Program =
    Program { file: "mul_call.mlir", function: "mul", outputs: &[Expected::Product] };
/// `iree_codegen.ukernel.generic` over five workgroups, uneven slices.
pub const MUL_UKERNEL: Program =
    Program { file: "mul_ukernel.mlir", function: "mul", outputs: &[Expected::Product] };
/// Two imports in one executable, from two plugins.
pub const TWO_IMPORTS: Program =
    Program { file: "two_imports.mlir", function: "mul_then_sub", outputs: &[Expected::ProductMinusB] };

/// One run of `iree-run-module`.
#[derive(Clone, Debug)]
pub struct Case {
    /// The program.
    pub program: Program,
    /// What each output must hold (the program's, or the marker's product
    /// when the marker plugin must win).
    pub expected: Vec<Expected>,
    /// Plugin names, in `--executable_plugin` order.
    pub plugins: Vec<String>,
    /// Element count of each input.
    pub size: usize,
}

/// What a case gave.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// Every element as expected.
    Pass,
    /// IREE ran, some elements differ.
    Wrong {
        /// A description of the first difference and the count.
        detail: String,
    },
    /// `iree-run-module` failed.
    Failed {
        /// Its exit status and stderr.
        detail: String,
    },
}

/// All cases and their outcomes.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Each case with its outcome, in run order.
    pub results: Vec<(Case, Outcome)>,
}

impl Report {
    /// Whether every case passed.
    #[must_use]
    pub fn all_passed(&self) -> bool {
        self.results.iter().all(|(_, outcome)| matches!(outcome, Outcome::Pass))
    }

    /// One line per program and plugin list: the sizes that passed, and
    /// below the table every failure in full.
    #[must_use]
    pub fn table(&self) -> String {
        let mut rows: Vec<[String; 4]> = Vec::new();
        let mut keys: Vec<(String, String)> = Vec::new();
        for (case, _) in &self.results {
            let key = (case.program.file.to_owned(), case.plugins.join(" + "));
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        for (file, plugins) in &keys {
            let group: Vec<&(Case, Outcome)> = self
                .results
                .iter()
                .filter(|(case, _)| case.program.file == *file && case.plugins.join(" + ") == *plugins)
                .collect();
            let passed = group.iter().filter(|(_, outcome)| matches!(outcome, Outcome::Pass)).count();
            let sizes: Vec<String> = group.iter().map(|(case, _)| case.size.to_string()).collect();
            let expected: Vec<String> = group[0].0.expected.iter().map(ToString::to_string).collect();
            let verdict = if passed == group.len() {
                "ok".to_owned()
            } else {
                format!("FAILED {}", group.len() - passed)
            };
            rows.push([
                file.clone(),
                plugins.clone(),
                format!("{} [n = {}]", expected.join(", "), sizes.join(", ")),
                format!("{passed}/{} {verdict}", group.len()),
            ]);
        }
        let header = ["program", "--executable_plugin (in order)", "expected", "result"].map(str::to_owned);
        let mut text = crate::text_table(&header, &rows);
        for (case, outcome) in &self.results {
            let detail = match outcome {
                Outcome::Pass => continue,
                Outcome::Wrong { detail } | Outcome::Failed { detail } => detail,
            };
            text.push_str(&format!(
                "\n{} with {} at n = {}: {detail}\n",
                case.program.file,
                case.plugins.join(" + "),
                case.size
            ));
        }
        text
    }
}

/// The cases: every program with every kernel plugin at every size, the
/// two-plugin program with the sub plugin, and the override in both orders.
#[must_use]
pub fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for plugin in KERNEL_PLUGINS {
        for program in [MUL_CALL, MUL_UKERNEL, TWO_IMPORTS] {
            let mut plugins = vec![plugin.to_owned()];
            if program.file == TWO_IMPORTS.file {
                plugins.push(SUB_PLUGIN.to_owned());
            }
            for size in SIZES {
                cases.push(Case {
                    program,
                    expected: program.outputs.to_vec(),
                    plugins: plugins.clone(),
                    size,
                });
            }
        }
    }
    // IREE scans plugins newest first: the one given last wins.
    for (plugins, expected) in [
        ([KERNEL_PLUGINS[0], MARKER_PLUGIN], Expected::NegatedProduct),
        ([MARKER_PLUGIN, KERNEL_PLUGINS[0]], Expected::Product),
    ] {
        for size in [1, 65, 4099] {
            cases.push(Case {
                program: MUL_CALL,
                expected: vec![expected],
                plugins: plugins.map(str::to_owned).to_vec(),
                size,
            });
        }
    }
    cases
}

/// The test plugin exporting `e2e_sub_workgroup`.
pub const SUB_PLUGIN: &str = "xplug_e2e_sub";
/// The test plugin exporting its own `simple_mul_workgroup` (`-(a*b)`).
pub const MARKER_PLUGIN: &str = "xplug_e2e_marker";

/// Everything the cases need, built once: IREE's tools, every plugin by
/// name (the examples and the two test plugins) and every program compiled.
#[derive(Debug)]
pub struct Prepared {
    /// IREE's tools.
    pub tools: Toolchain,
    /// Plugin name and file, for every name a [`Case`] can list.
    pub libraries: Vec<(String, PathBuf)>,
    /// Program file name (`mul_call.mlir`) and its compiled `.vmfb`.
    pub modules: Vec<(&'static str, PathBuf)>,
    /// The directory runs write their inputs and outputs to.
    pub work: PathBuf,
    _lock: File,
}

impl Prepared {
    /// The file of plugin `name`.
    ///
    /// # Panics
    /// When `name` is not one of the plugins cases list.
    #[must_use]
    pub fn library(&self, name: &str) -> &Path {
        &self.libraries.iter().find(|(known, _)| known == name).expect("every case's plugins are built").1
    }

    /// The compiled module of `program`.
    #[must_use]
    pub fn module(&self, program: Program) -> &Path {
        &self.modules.iter().find(|(file, _)| *file == program.file).expect("every program is compiled").1
    }
}

/// Sets up IREE, builds the plugins and compiles the programs, holding the
/// work directory's lock (one run per work directory at a time) until the
/// returned value drops.
///
/// # Errors
/// When IREE cannot be set up, or a plugin or a program does not build.
pub fn prepare(root: &Path, profile: PluginProfile) -> Result<Prepared, E2eError> {
    let tools = toolchain(root)?;
    let work = root.join("target").join("iree-e2e").join(profile.dir_name());
    std::fs::create_dir_all(&work).map_err(io(format!("cannot create {}", work.display())))?;
    // Two runs at once (a test and `cargo xtask iree-e2e`) would overwrite
    // each other's inputs and outputs: one run per work directory at a time.
    let lock_path = work.join("run.lock");
    let lock = File::create(&lock_path).map_err(io(format!("cannot create {}", lock_path.display())))?;
    lock.lock().map_err(io(format!("cannot lock {}", lock_path.display())))?;

    let built = plugins::build(root, profile).map_err(|source| E2eError::Build { source })?;
    let mut libraries: Vec<(String, PathBuf)> = Vec::new();
    for plugin in &built {
        match &plugin.path {
            Some(path) => libraries.push((plugin.name.clone(), path.clone())),
            None => {
                return Err(E2eError::Build {
                    source: BuildError::Skipped { name: plugin.name.clone(), note: plugin.note.clone() },
                });
            }
        }
    }
    let source = root.join("tests").join("iree").join("e2e_plugin.c");
    for (name, define) in [(SUB_PLUGIN, "XPLUG_E2E_SUB"), (MARKER_PLUGIN, "XPLUG_E2E_MARKER")] {
        let path = work.join(plugins::library_file_name(name));
        if let Some(note) = plugins::compile_c(root, &source, &[define], &path, profile)
            .map_err(|source| E2eError::Build { source })?
        {
            return Err(E2eError::Build { source: BuildError::Skipped { name: name.to_owned(), note } });
        }
        libraries.push((name.to_owned(), path));
    }

    let mut modules: Vec<(&'static str, PathBuf)> = Vec::new();
    for program in [MUL_CALL, MUL_UKERNEL, TWO_IMPORTS] {
        modules.push((program.file, compile(root, &tools, program, &work)?));
    }
    Ok(Prepared { tools, libraries, modules, work, _lock: lock })
}

/// Builds everything, runs every case of [`cases`] and returns the report.
/// `progress` is told about each case as it finishes.
///
/// # Errors
/// When IREE cannot be set up, a plugin or a program does not build, or a
/// file operation fails. Wrong results are failed cases, not errors.
pub fn run(
    root: &Path,
    profile: PluginProfile,
    mut progress: impl FnMut(&Case, &Outcome),
) -> Result<Report, E2eError> {
    let prepared = prepare(root, profile)?;
    let mut report = Report::default();
    for case in cases() {
        let outcome = run_case(&prepared, &case)?;
        progress(&case, &outcome);
        report.results.push((case, outcome));
    }
    Ok(report)
}

/// Compiles `program` with the pinned `iree-compile` for the local CPU into
/// `work` (`NAME.vmfb`), unless that file is newer than the source.
///
/// # Errors
/// [`E2eError::Compile`] with the compiler's diagnostics.
pub fn compile(root: &Path, tools: &Toolchain, program: Program, work: &Path) -> Result<PathBuf, E2eError> {
    let source = root.join("tests").join("iree").join(program.file);
    let module = work.join(program.file.replace(".mlir", ".vmfb"));
    let modified = |path: &Path| std::fs::metadata(path).and_then(|meta| meta.modified()).ok();
    if let (Some(built), Some(written)) = (modified(&module), modified(&source))
        && built > written
    {
        return Ok(module);
    }
    let output = Command::new(&tools.compile)
        .args([
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu",
            "--iree-llvmcpu-target-cpu=generic",
        ])
        .arg(&source)
        .arg("-o")
        .arg(&module)
        .output()
        .map_err(io(format!("cannot run {}", tools.compile.display())))?;
    if !output.status.success() {
        return Err(E2eError::Compile {
            program: source,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(module)
}

/// Deterministic inputs with varied magnitudes and signs.
#[must_use]
pub fn inputs(size: usize) -> (Vec<f32>, Vec<f32>) {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        // 24 random bits into [-64, 64): exactly representable.
        ((state >> 40) as f32 / (1 << 24) as f32) * 128.0 - 64.0
    };
    let a = (0..size).map(|_| next()).collect();
    let b = (0..size).map(|_| next()).collect();
    (a, b)
}

/// Runs `iree-run-module` (local-sync) on `case` and returns each output's
/// elements, or IREE's failure text when it exits with an error.
///
/// # Errors
/// When an input or output file cannot be written or read, or the tool
/// cannot be started.
pub fn run_iree_run_module(
    prepared: &Prepared,
    case: &Case,
) -> Result<Result<Vec<Vec<f32>>, String>, E2eError> {
    let work = &prepared.work;
    let (a, b) = inputs(case.size);
    let a_path = work.join("a.npy");
    let b_path = work.join("b.npy");
    for (path, values) in [(&a_path, &a), (&b_path, &b)] {
        let mut file = File::create(path).map_err(io(format!("cannot create {}", path.display())))?;
        file.write_all(&npy::encode_f32(values)).map_err(io(format!("cannot write {}", path.display())))?;
    }
    let outputs: Vec<PathBuf> = (0..case.expected.len()).map(|i| work.join(format!("out{i}.npy"))).collect();
    for path in &outputs {
        if path.exists() {
            std::fs::remove_file(path).map_err(io(format!("cannot remove {}", path.display())))?;
        }
    }
    let tools = &prepared.tools;
    let mut command = Command::new(&tools.run_module);
    command.arg("--device=local-sync");
    for name in &case.plugins {
        command.arg(format!("--executable_plugin={}", prepared.library(name).display()));
    }
    command
        .arg(format!("--module={}", prepared.module(case.program).display()))
        .arg(format!("--function={}", case.program.function))
        .arg(format!("--input=@{}", a_path.display()))
        .arg(format!("--input=@{}", b_path.display()));
    for path in &outputs {
        command.arg(format!("--output=@{}", path.display()));
    }
    let output = command.output().map_err(io(format!("cannot run {}", tools.run_module.display())))?;
    if !output.status.success() {
        return Ok(Err(format!(
            "iree-run-module exited with {}:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim_end()
        )));
    }
    let mut values = Vec::with_capacity(outputs.len());
    for path in &outputs {
        let bytes = std::fs::read(path).map_err(io(format!("cannot read {}", path.display())))?;
        values.push(npy::decode_f32(&bytes).map_err(|source| E2eError::Npy { path: path.clone(), source })?);
    }
    Ok(Ok(values))
}

/// Judges a case's outputs against what its kernels must compute, bit for
/// bit: `None` when every element is right, else what is wrong.
#[must_use]
pub fn judge(case: &Case, outputs: &[Vec<f32>]) -> Option<String> {
    let (a, b) = inputs(case.size);
    if outputs.len() != case.expected.len() {
        return Some(format!("{} outputs, expected {}", outputs.len(), case.expected.len()));
    }
    for (index, (got, expected)) in outputs.iter().zip(&case.expected).enumerate() {
        if got.len() != case.size {
            return Some(format!("output {index} has {} elements, expected {}", got.len(), case.size));
        }
        let wrong: Vec<usize> =
            (0..case.size).filter(|&i| got[i].to_bits() != expected.value(a[i], b[i]).to_bits()).collect();
        if let Some(&first) = wrong.first() {
            return Some(format!(
                "output {index} ({expected}): {} of {} elements wrong; first at {first}: got {}, expected {} \
                 (a = {}, b = {})",
                wrong.len(),
                case.size,
                got[first],
                expected.value(a[first], b[first]),
                a[first],
                b[first]
            ));
        }
    }
    None
}

fn run_case(prepared: &Prepared, case: &Case) -> Result<Outcome, E2eError> {
    Ok(match run_iree_run_module(prepared, case)? {
        Err(detail) => Outcome::Failed { detail },
        Ok(outputs) => match judge(case, &outputs) {
            None => Outcome::Pass,
            Some(detail) => Outcome::Wrong { detail },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_python_is_an_error_that_says_what_to_do() {
        let root = std::env::temp_dir().join(format!("xplug-e2e-no-python-{}", std::process::id()));
        let error = toolchain_with(&root, "/nonexistent/python3").unwrap_err();
        let message = error.to_string();
        assert!(matches!(error, E2eError::Venv { source: Some(_), .. }), "{error:?}");
        assert!(message.contains("PyPI") && message.contains("PYTHON"), "{message}");
        assert!(!venv_dir(&root).exists(), "nothing half-made is left behind");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn inputs_are_deterministic_and_varied() {
        let (a, b) = inputs(4099);
        assert_eq!(inputs(4099), (a.clone(), b.clone()));
        assert!(a.iter().chain(&b).all(|v| (-64.0..64.0).contains(v)));
        assert!(a.iter().any(|v| *v < 0.0) && a.iter().any(|v| *v > 0.0));
        assert_ne!(a, b);
    }

    #[test]
    fn every_program_file_exists() {
        let root = crate::workspace_root();
        for program in [MUL_CALL, MUL_UKERNEL, TWO_IMPORTS] {
            assert!(root.join("tests/iree").join(program.file).is_file(), "{}", program.file);
        }
    }
}
