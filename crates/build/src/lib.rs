//! Builds a plugin crate as a standalone embedded ELF file (`.sos`): the
//! one implementation behind `xplug build --sos` and the example plugins'
//! `.sos` files (`xplug-fixtures`).
//!
//! For each record target ([`RECORD_TARGETS`]) whose standard library is
//! installed, for `$RUSTC` or for the distribution's rustc
//! ([`SYSTEM_RUSTC`], e.g. Debian's aarch64 `core`), host first:
//!
//! 1. `cargo rustc` builds the crate's library as a `no_std` static library
//!    with its [`SOS_FEATURE`] feature and no default features, `panic =
//!    "abort"`, fat LTO, one codegen unit, position-independent code and no
//!    unwind tables, for an explicit `--target`, into `<target-dir>/sos`
//!    (aarch64 without outline atomics: [`target_rustflags`]);
//! 2. `rust-lld` (shipped with every rustup toolchain) links it with the
//!    flags IREE links its own embedded plugins with ([`LINK_FLAGS`]), a
//!    version script exporting only the query function and xplug's optional
//!    `xplug_plugin_*` / `xplug_import_*` exports, and
//!    `--undefined=iree_hal_executable_plugin_query` (without it
//!    `--gc-sections` keeps nothing of a static library);
//!
//! then [`xplug_elf::fatelf::join`] puts the records into one FatELF
//! container. Targets that are not installed are skipped and reported
//! ([`SosReport::skipped`]).
//!
//! Not run as a doctest: it builds a plugin crate, for every installed
//! target (`xplug build --sos` runs it, and `crates/cli/tests` build the
//! example plugins' `.sos` files through it):
//!
//! ```no_run
//! use xplug_build::{SosOptions, build_sos};
//!
//! let report = build_sos(&SosOptions::new("my_plugin/Cargo.toml"))?;
//! println!("{} ({} bytes)", report.path.display(), report.size);
//! for record in &report.records {
//!     println!("  record {} ({} bytes)", record.target, record.size);
//! }
//! # Ok::<(), xplug_build::BuildError>(())
//! ```

pub mod command;
mod error;
mod linked;
mod linked_program;
mod metadata;
mod toolchain;

use std::path::{Path, PathBuf};
use std::process::Command;

pub use error::BuildError;
pub use linked::{
    LinkedFiles, LinkedFormat, LinkedKernel, LinkedOptions, LinkedReport, build_linked, linked_kernels,
    verify_linked,
};
pub use metadata::PluginCrate;
pub use toolchain::{RecordTarget, SYSTEM_RUSTC, Toolchain};
use xplug_elf::QUERY_SYMBOL;

/// The plugin crate feature a `.sos` build turns on (with
/// `--no-default-features`): it must make the crate `no_std` and turn on
/// `xplug-sdk/standalone`. `xplug new --standalone` declares it.
pub const SOS_FEATURE: &str = "sos";

/// Architectures a `.sos` may carry a record for (Rust target triples).
pub const RECORD_TARGETS: [&str; 3] =
    ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu", "riscv64gc-unknown-linux-gnu"];

/// `rust-lld -flavor gnu` flags: IREE's embedded-ELF link line.
pub const LINK_FLAGS: [&str; 19] = [
    "-flavor",
    "gnu",
    "--build-id=none",
    "-nostdlib",
    "-static",
    "-shared",
    "--no-undefined",
    "--no-allow-shlib-undefined",
    "--gc-sections",
    "-z",
    "now",
    "-z",
    "relro",
    "--discard-all",
    "--icf=all",
    "--ignore-data-address-equality",
    "--ignore-function-address-equality",
    "--hash-style=sysv",
    "--strip-debug",
];

/// The version script of every `.sos`: the query function and xplug's
/// optional exports (`xplug_plugin_exports`, `xplug_plugin_params`,
/// `xplug_plugin_load_error`, and any later `xplug_plugin_*` or
/// `xplug_import_*` one) stay global, everything else is local. Patterns,
/// so a plugin without some of them still links.
#[must_use]
pub fn version_script() -> String {
    format!("{{\n  global: {QUERY_SYMBOL}; xplug_plugin_*; xplug_import_*;\n  local: *;\n}};\n")
}

/// What to build.
#[derive(Clone, Debug)]
pub struct SosOptions {
    /// The plugin crate's `Cargo.toml` (or its workspace's, with
    /// [`SosOptions::package`]).
    pub manifest_path: PathBuf,
    /// The package to build when the manifest is a workspace with several.
    pub package: Option<String>,
    /// Where the `.sos` goes (default `<target-dir>/sos`).
    pub out_dir: Option<PathBuf>,
    /// Keep the symbol table (link without `--discard-all`), so crash
    /// reports, gdb and perf can name every function of the plugin
    /// (`docs/src/operating/debugging.md`). `.symtab` lies in no loadable segment, so
    /// IREE's loader runs the file as well; it only grows.
    pub keep_symbols: bool,
}

impl SosOptions {
    /// Builds the crate of `manifest_path` into `<target-dir>/sos`.
    #[must_use]
    pub fn new(manifest_path: impl Into<PathBuf>) -> Self {
        Self { manifest_path: manifest_path.into(), package: None, out_dir: None, keep_symbols: false }
    }
}

/// One ELF record of a `.sos`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SosRecord {
    /// The Rust target triple it was built for.
    pub target: String,
    /// The rustc that compiled it.
    pub rustc: PathBuf,
    /// The linked ELF file (kept next to the build, for inspection).
    pub elf: PathBuf,
    /// Its size in bytes.
    pub size: u64,
}

/// A record that was not built, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedRecord {
    /// The Rust target triple.
    pub target: String,
    /// Why, and what to do about it.
    pub reason: String,
}

/// What [`build_sos`] made.
#[derive(Clone, Debug)]
pub struct SosReport {
    /// The package built.
    pub package: String,
    /// The `.sos` file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// The records it holds, host first (the order loaders try them in).
    pub records: Vec<SosRecord>,
    /// The record targets not built.
    pub skipped: Vec<SkippedRecord>,
}

/// Builds the crate `options` names as `<lib name>.sos`.
///
/// # Errors
/// [`BuildError`]: the crate cannot be read by `cargo metadata` or has no
/// library; the host has no record target; cargo or the linker fail (with
/// their output and, for the usual mistakes, what to change); a file
/// cannot be written.
pub fn build_sos(options: &SosOptions) -> Result<SosReport, BuildError> {
    let krate = PluginCrate::locate(&options.manifest_path, options.package.as_deref())?;
    let toolchain = Toolchain::detect()?;
    let work = krate.target_dir.join("sos");
    let out_dir = options.out_dir.clone().unwrap_or_else(|| work.clone());
    create_dir(&work)?;
    create_dir(&out_dir)?;
    let script = write_version_script(&work)?;

    let (targets, skipped) = toolchain.record_targets()?;
    let mut records = Vec::new();
    let mut elves = Vec::new();
    for RecordTarget { target, rustc } in targets {
        let archive = build_staticlib(&krate, &work, target, &rustc)?;
        let elf = work.join(format!("{}.{target}.so", krate.lib_name));
        link(&toolchain.linker, &[archive], &script, &elf, options.keep_symbols)?;
        let bytes = read(&elf)?;
        records.push(SosRecord { target: target.to_owned(), rustc, elf, size: bytes.len() as u64 });
        elves.push(bytes);
    }
    let path = out_dir.join(format!("{}.sos", krate.lib_name));
    let size = write_fatelf(&path, &elves)?;
    Ok(SosReport { package: krate.package, path, size, records, skipped })
}

/// Links `inputs` (objects or static libraries) into a standalone shared
/// object with IREE's flags ([`LINK_FLAGS`]), the version script at
/// `version_script` ([`version_script`]) and the query symbol kept;
/// with `keep_symbols`, without `--discard-all` ([`SosOptions::keep_symbols`]).
///
/// # Errors
/// [`BuildError::Step`] when the linker cannot be started, or
/// fails, with its output (and a hint for unwinding
/// symbols or missing memory functions) when it fails.
pub fn link(
    linker: &Path,
    inputs: &[PathBuf],
    version_script: &Path,
    output: &Path,
    keep_symbols: bool,
) -> Result<(), BuildError> {
    let mut command = Command::new(linker);
    command
        .args(LINK_FLAGS.iter().filter(|flag| !(keep_symbols && **flag == "--discard-all")))
        .arg(format!("--version-script={}", version_script.display()))
        .arg(format!("--undefined={QUERY_SYMBOL}"))
        .arg("-o")
        .arg(output)
        .args(inputs);
    run("link", command).map(drop)
}

/// Writes [`version_script`] as `dir/exports.map`; returns its path.
///
/// # Errors
/// [`BuildError::Io`] when the file cannot be written.
pub fn write_version_script(dir: &Path) -> Result<PathBuf, BuildError> {
    let path = dir.join("exports.map");
    std::fs::write(&path, version_script()).map_err(|source| BuildError::Io {
        action: "write",
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

/// Joins `elves` into a FatELF container at `path` (through a temporary
/// file and a rename, so a process with the old file open keeps a
/// consistent one); returns its size.
///
/// # Errors
/// [`BuildError::Join`] when the records cannot be joined,
/// [`BuildError::Io`] when the file cannot be written.
pub fn write_fatelf(path: &Path, elves: &[Vec<u8>]) -> Result<u64, BuildError> {
    let slices: Vec<&[u8]> = elves.iter().map(Vec::as_slice).collect();
    let container = xplug_elf::fatelf::join(&slices)
        .map_err(|source| BuildError::Join { path: path.to_path_buf(), source: Box::new(source) })?;
    let temporary = path.with_extension("sos.tmp");
    std::fs::write(&temporary, &container).map_err(|source| BuildError::Io {
        action: "write",
        path: temporary.clone(),
        source,
    })?;
    std::fs::rename(&temporary, path).map_err(|source| BuildError::Io {
        action: "move into place",
        path: path.to_path_buf(),
        source,
    })?;
    Ok(container.len() as u64)
}

/// The code generation flags of a `.sos` record for `target`, as one
/// `CARGO_ENCODED_RUSTFLAGS` value (flags separated by `0x1f`):
/// position-independent code without unwind tables and, on aarch64,
/// without outline atomics. Those helpers (`__aarch64_cas8_acq_rel`, ...)
/// live in `compiler_builtins` next to `__init_cpu_features`, a
/// constructor that calls libc's `getauxval` and uses the stack
/// protector's `__stack_chk_*`: nothing a standalone image can import.
/// Inline load/store-exclusive sequences work on every aarch64 CPU.
#[must_use]
pub fn target_rustflags(target: &str) -> String {
    let mut flags = vec!["-Crelocation-model=pic", "-Cforce-unwind-tables=no"];
    if target.starts_with("aarch64-") {
        flags.push("-Ctarget-feature=-outline-atomics");
    }
    flags.join("\u{1f}")
}

/// `cargo rustc` (with `rustc`) of the crate's library as a `no_std`
/// static library for `target`; returns the archive.
fn build_staticlib(
    krate: &PluginCrate,
    work: &Path,
    target: &str,
    rustc: &Path,
) -> Result<PathBuf, BuildError> {
    run("cargo", staticlib_command(krate, work, target, rustc, "\"s\"", &[]))?;
    Ok(work.join(target).join("release").join(format!("lib{}.a", krate.lib_name)))
}

/// The `cargo rustc` command of the crate's library as a `no_std` static
/// library for `target` into `work`: the `sos` feature, `panic = "abort"`,
/// fat LTO, one codegen unit, `opt_level` (a TOML value), and
/// [`target_rustflags`] plus `rustflags` for every crate of the target.
/// The one recipe of the `.sos` records and the linked kernels.
pub(crate) fn staticlib_command(
    krate: &PluginCrate,
    work: &Path,
    target: &str,
    rustc: &Path,
    opt_level: &str,
    rustflags: &[&str],
) -> Command {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut flags = target_rustflags(target);
    for flag in rustflags {
        flags.push('\u{1f}');
        flags.push_str(flag);
    }
    let mut command = Command::new(&cargo);
    command
        .arg("rustc")
        .arg("--manifest-path")
        .arg(&krate.manifest_path)
        .args(["-p", &krate.package])
        .args(["--lib", "--crate-type", "staticlib", "--release", "--no-default-features"])
        .args(["--features", SOS_FEATURE, "--target", target])
        .arg("--target-dir")
        .arg(work)
        .args(["--config", "profile.release.panic=\"abort\""])
        .args(["--config", "profile.release.lto=true"])
        .args(["--config", "profile.release.codegen-units=1"])
        .args(["--config", "profile.release.debug=false"])
        .arg("--config")
        .arg(format!("profile.release.opt-level={opt_level}"))
        // For every crate of the target (not build scripts or proc macros,
        // thanks to the explicit --target); replaces RUSTFLAGS.
        .env("CARGO_ENCODED_RUSTFLAGS", flags)
        .env("RUSTC", rustc)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET");
    command
}

/// Runs `command` as the `step` step (`cargo`, `link`, `rustc`), turning
/// a failure into [`BuildError::Step`] with a hint for the usual mistakes.
pub(crate) fn run(step: &'static str, mut command: Command) -> Result<std::process::Output, BuildError> {
    command::output(&mut command).map_err(|source| BuildError::step(step, source))
}

fn create_dir(dir: &Path) -> Result<(), BuildError> {
    std::fs::create_dir_all(dir).map_err(|source| BuildError::Io {
        action: "create",
        path: dir.to_path_buf(),
        source,
    })
}

fn read(path: &Path) -> Result<Vec<u8>, BuildError> {
    std::fs::read(path).map_err(|source| BuildError::Io { action: "read", path: path.to_path_buf(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_script_keeps_the_query_and_xplug_exports_only() {
        let script = version_script();
        assert!(script.contains("global: iree_hal_executable_plugin_query; xplug_plugin_*; xplug_import_*;"));
        assert!(script.contains("local: *;"));
    }

    #[test]
    fn aarch64_records_are_built_without_outline_atomics() {
        let flags = |target| target_rustflags(target).split('\u{1f}').map(str::to_owned).collect::<Vec<_>>();
        let aarch64 = flags("aarch64-unknown-linux-gnu");
        assert!(aarch64.contains(&"-Ctarget-feature=-outline-atomics".to_owned()), "{aarch64:?}");
        assert!(aarch64.contains(&"-Crelocation-model=pic".to_owned()), "{aarch64:?}");
        let x86_64 = flags("x86_64-unknown-linux-gnu");
        assert_eq!(x86_64, ["-Crelocation-model=pic", "-Cforce-unwind-tables=no"]);
    }
}
