//! The hardening runs: `cargo xtask loom`, `cargo xtask valgrind` and
//! `cargo xtask fuzz`. None of them is part of `cargo test`: `loom` needs
//! its own `--cfg loom` build, valgrind and nightly Rust (for `cargo fuzz`)
//! need not be installed where CI runs. Run them by hand before a release
//! or after touching the registry, the loader or the parsers.

use std::path::Path;
use std::process::Command;

use xplug_fixtures::plugins::{self, PluginProfile};

/// What can go wrong in a hardening run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HardeningError {
    /// A tool could not be started.
    #[error("cannot run `{command}`; {hint}")]
    Spawn {
        /// The command line.
        command: String,
        /// What to install or set.
        hint: &'static str,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// A tool ran and failed.
    #[error("`{command}` failed ({status})")]
    Failed {
        /// The command line.
        command: String,
        /// How it ended.
        status: std::process::ExitStatus,
    },
    /// The example plugins could not be built.
    #[error("cannot build the example plugins")]
    Build {
        /// Why.
        #[source]
        source: plugins::PluginBuildError,
    },
}

/// Runs `command`, failing on a non-zero exit.
fn run(mut command: Command, hint: &'static str) -> Result<(), HardeningError> {
    let line = format!("{command:?}");
    eprintln!("$ {line}");
    let status =
        command.status().map_err(|source| HardeningError::Spawn { command: line.clone(), hint, source })?;
    if status.success() { Ok(()) } else { Err(HardeningError::Failed { command: line, status }) }
}

fn cargo(root: &Path) -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    command.current_dir(root);
    command
}

/// `cargo xtask loom`: the `loom` models of the manager
/// (`RUSTFLAGS="--cfg loom" cargo test -p xplug-manager --release --lib
/// loom_`: the registry and live swap models), in `target/loom` so the normal build is not rebuilt.
///
/// # Errors
/// When cargo cannot run or a model fails.
pub fn loom(root: &Path) -> Result<(), HardeningError> {
    let mut command = cargo(root);
    command.env("RUSTFLAGS", "--cfg loom").env("CARGO_TARGET_DIR", root.join("target").join("loom")).args([
        "test",
        "-p",
        "xplug-manager",
        "--release",
        "--lib",
        "loom_",
    ]);
    run(command, "is cargo on PATH?")
}

/// `cargo xtask valgrind`: `cycles` load/resolve/call/unload cycles of the
/// Rust (`sample_system`) and C (`c_sample`) example plugins under
/// `valgrind --error-exitcode=1 --leak-check=full` (definite and possible
/// leaks are errors), through the `load_cycles` example of
/// `xplug-providers`.
///
/// # Errors
/// When the plugins or the example cannot be built, valgrind is missing,
/// or valgrind reports an error or a leak.
pub fn valgrind(root: &Path, cycles: usize) -> Result<(), HardeningError> {
    plugins::build(root, PluginProfile::Debug).map_err(|source| HardeningError::Build { source })?;
    let mut build = cargo(root);
    build.args(["build", "-p", "xplug-providers", "--example", "load_cycles"]);
    run(build, "is cargo on PATH?")?;
    let plugin_dir = plugins::output_dir(root, PluginProfile::Debug);
    let mut command = Command::new("valgrind");
    command
        .current_dir(root)
        .args(["--error-exitcode=1", "--leak-check=full", "--errors-for-leak-kinds=definite,possible"])
        .arg(root.join("target").join("debug").join("examples").join("load_cycles"))
        .arg(cycles.to_string())
        .arg(plugin_dir.join(plugins::library_file_name("sample_system")))
        .arg(plugin_dir.join(plugins::library_file_name("c_sample")));
    run(command, "install valgrind (e.g. `apt-get install valgrind`)")
}

/// The `cargo fuzz` targets under `fuzz/`.
pub const FUZZ_TARGETS: [&str; 3] = ["spec", "env_list", "resolve"];

/// `cargo xtask fuzz --seconds N`: each target of [`FUZZ_TARGETS`] for
/// `seconds` under `cargo +nightly fuzz run`, starting from its seed corpus
/// `fuzz/corpus/<target>` (read-only: new inputs go to
/// `fuzz/corpus-work/<target>`, which is not committed).
///
/// # Errors
/// When nightly cargo or cargo-fuzz is missing, or a target finds a crash
/// (its input is saved under `fuzz/artifacts/<target>/`).
pub fn fuzz(root: &Path, seconds: u32) -> Result<(), HardeningError> {
    let fuzz_dir = root.join("fuzz");
    for target in FUZZ_TARGETS {
        let work = fuzz_dir.join("corpus-work").join(target);
        std::fs::create_dir_all(&work).map_err(|source| HardeningError::Spawn {
            command: format!("mkdir {}", work.display()),
            hint: "check that the fuzz/ directory is writable",
            source,
        })?;
        let mut command = Command::new("cargo");
        command
            .current_dir(root)
            .args(["+nightly", "fuzz", "run", target])
            .arg(&work)
            .arg(fuzz_dir.join("corpus").join(target))
            .arg("--")
            .arg(format!("-max_total_time={seconds}"));
        run(
            command,
            "install nightly Rust and cargo-fuzz (`rustup toolchain install nightly`, `cargo install cargo-fuzz`)",
        )?;
    }
    Ok(())
}
