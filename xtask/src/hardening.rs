//! The hardening runs: `cargo xtask loom`, `cargo xtask valgrind`,
//! `cargo xtask asan` and `cargo xtask fuzz`. None of them is part of
//! `cargo test`: `loom` needs its own `--cfg loom` build, valgrind and
//! nightly Rust (for AddressSanitizer and `cargo fuzz`) need not be
//! installed where CI runs. Run them by hand before a release
//! or after touching the registry, the loader or the parsers.

use std::path::Path;
use std::process::Command;

use xplug_fixtures::command::{self, CommandError};
use xplug_fixtures::plugins::{self, PluginProfile};

/// What can go wrong in a hardening run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HardeningError {
    /// A tool could not be started, or ran and failed.
    #[error("a hardening step failed")]
    Command {
        /// Which, and how.
        #[source]
        source: CommandError,
    },
    /// `rustc -vV` printed no `host:` line.
    #[error("`rustc -vV` printed no `host:` line; is the `rustc` on PATH a Rust compiler?")]
    NoHost,
    /// A work directory could not be made.
    #[error("cannot create {}; check that the directory above it is writable", path.display())]
    Directory {
        /// The directory.
        path: std::path::PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The example plugins could not be built.
    #[error("cannot build the example plugins")]
    Build {
        /// Why.
        #[source]
        source: xplug_fixtures::PluginBuildError,
    },
}

/// Runs `command`, failing on a non-zero exit.
fn run(mut command: Command, hint: &'static str) -> Result<(), HardeningError> {
    eprintln!("$ {command:?}");
    command::status(&mut command).map_err(|error| HardeningError::Command { source: error.with_hint(hint) })
}

fn cargo(root: &Path) -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    command.current_dir(root);
    command
}

/// `cargo xtask loom`: the `loom` models of the manager and the profiles
/// (`RUSTFLAGS="--cfg loom" cargo test -p xplug-manager -p xplug-swap -p
/// xplug-profile --release --lib loom_`: the registry, live swap and profile
/// models), in `target/loom` so the normal build is not rebuilt.
///
/// # Errors
/// When cargo cannot run or a model fails.
pub fn loom(root: &Path) -> Result<(), HardeningError> {
    let mut command = cargo(root);
    command.env("RUSTFLAGS", "--cfg loom").env("CARGO_TARGET_DIR", root.join("target").join("loom")).args([
        "test",
        "-p",
        "xplug-manager",
        "-p",
        "xplug-swap",
        "-p",
        "xplug-profile",
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

/// The test files of `xplug-manager` that `cargo xtask asan` runs: live
/// swap's (a replaced `.sos` is unmapped while other threads call through
/// the trampoline, where a use after free would be), the registry's
/// (lock-free appends under concurrent resolves) and pinned loading's
/// (bytes read, hashed and mapped from memory).
pub const ASAN_TESTS: [&str; 3] = ["swap", "registry", "pinned"];

/// `cargo xtask asan`: [`ASAN_TESTS`] of `xplug-manager` built with
/// AddressSanitizer (`cargo +nightly test -Zsanitizer=address`, for the
/// host's target so build scripts and proc macros stay uninstrumented), in
/// `target/asan`, ignored tests included, the valgrind runs left out.
/// The Rust code is instrumented; the C test plugins are not, but every
/// access the host makes to their memory is.
///
/// # Errors
/// When nightly cargo is missing (the hint says how to get it), or
/// AddressSanitizer reports an error (the test fails with its report).
pub fn asan(root: &Path) -> Result<(), HardeningError> {
    let mut command = Command::new("cargo");
    command
        .current_dir(root)
        .env("RUSTFLAGS", "-Zsanitizer=address")
        .env("RUSTDOCFLAGS", "-Zsanitizer=address")
        .env("CARGO_TARGET_DIR", root.join("target").join("asan"))
        // Leaks are valgrind's run; a `.so` loaded swappable is never
        // closed on purpose (docs/src/operating/swap.md), which LeakSanitizer would count.
        .env("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=1")
        .args(["+nightly", "test", "-p", "xplug-manager", "--target", &host_target()?]);
    for test in ASAN_TESTS {
        command.args(["--test", test]);
    }
    // The valgrind runs (`memcheck` in their names) re-run the test binary
    // under valgrind, which cannot run an AddressSanitizer build.
    command.args(["--", "--include-ignored", "--skip", "memcheck"]);
    run(command, "install nightly Rust (`rustup toolchain install nightly`); stable has no -Zsanitizer")
}

/// The host's target triple (`rustc -vV`'s `host:` line), which `cargo
/// xtask asan` builds the instrumented tests for.
fn host_target() -> Result<String, HardeningError> {
    let mut rustc = Command::new("rustc");
    rustc.arg("-vV");
    let output = command::output(&mut rustc)
        .map_err(|error| HardeningError::Command { source: error.with_hint("is rustc on PATH?") })?;
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .map(str::to_owned)
        .ok_or(HardeningError::NoHost)
}

/// The `cargo fuzz` targets under `fuzz/`.
pub const FUZZ_TARGETS: [&str; 4] = ["spec", "env_list", "resolve", "archive"];

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
        std::fs::create_dir_all(&work)
            .map_err(|source| HardeningError::Directory { path: work.clone(), source })?;
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
