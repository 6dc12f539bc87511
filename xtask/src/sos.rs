//! Builds the example plugins as standalone embedded ELF files (`.sos`,
//! FatELF containers), for `cargo xtask build-plugins`.
//!
//! Rust (`sample_standalone`): the crate is compiled `no_std` as a static
//! library with its `sos` feature (exports plus `plugins/standalone_builtins`),
//! `panic = "abort"`, fat LTO, one codegen unit, position-independent code
//! and no unwind tables, for an explicit `--target`, into its own target
//! directory (`target/sos-build`); then `rust-lld` (shipped with every
//! rustup toolchain) links it with the flags IREE links its own embedded
//! plugins with, a version script exporting only the query function, and
//! `--hash-style=sysv` so IREE's loader finds the symbols too.
//!
//! C (`c_sample`): compiled freestanding with `$CC` (default `cc`) and the
//! same link step.
//!
//! Records: the host architecture always; aarch64 and riscv64 records of
//! the Rust plugin when their rustup targets are installed. C records other
//! than the host's need a cross compiler and are not built. Every record
//! skipped is reported on stderr and in the plugin's note.

use std::path::{Path, PathBuf};
use std::process::Command;

use xplug_elf::QUERY_SYMBOL;

use crate::compile::{BuildError, BuiltPlugin, c_compiler, io, run_c_compiler};

/// The Rust plugin built as a `.sos`.
pub const RUST_SOS_PLUGIN: &str = "sample_standalone";
/// The C plugin built as a `.sos`: (name, source relative to the root).
pub const C_SOS_PLUGIN: (&str, &str) = ("c_sample", "plugins/c_sample/c_sample.c");

/// Architectures a `.sos` may carry a record for (Rust target triples).
const RECORD_TARGETS: [&str; 3] =
    ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu", "riscv64gc-unknown-linux-gnu"];

/// `rust-lld -flavor gnu` flags: IREE's embedded-ELF link line.
const LINK_FLAGS: [&str; 19] = [
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

/// C compile flags for a freestanding, position-independent object.
const C_FLAGS: [&str; 13] = [
    "-std=c99",
    "-O2",
    "-fPIC",
    "-ffreestanding",
    "-fvisibility=hidden",
    "-fno-plt",
    "-fno-exceptions",
    "-fdata-sections",
    "-ffunction-sections",
    "-fno-asynchronous-unwind-tables",
    "-fno-stack-protector",
    "-Wall",
    "-Werror",
];

/// The rustc host triple and sysroot.
fn rustc_host() -> Result<(String, PathBuf), BuildError> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let run = |args: &[&str]| -> Result<String, BuildError> {
        let output = Command::new(&rustc).args(args).output().map_err(io(format!("cannot run `{rustc}`")))?;
        if !output.status.success() {
            return Err(BuildError::Cargo {
                command: format!("{rustc} {}", args.join(" ")),
                detail: String::from_utf8_lossy(&output.stderr).into_owned(),
            });
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    };
    let version = run(&["-vV"])?;
    let host = version
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .ok_or_else(|| BuildError::Cargo {
            command: format!("{rustc} -vV"),
            detail: "no `host:` line".to_owned(),
        })?
        .trim()
        .to_owned();
    let sysroot = PathBuf::from(run(&["--print", "sysroot"])?.trim());
    Ok((host, sysroot))
}

/// The record target for the host's architecture.
fn host_record_target(host: &str) -> Option<&'static str> {
    let arch = host.split('-').next().unwrap_or_default();
    RECORD_TARGETS.into_iter().find(|target| target.split('-').next() == Some(arch))
}

/// Builds `sample_standalone.sos` and `c_sample.sos` into `out_dir`.
///
/// # Errors
/// When cargo, the C compiler or the linker fails, or a file operation
/// does. A missing C compiler skips the C `.sos` (reported in its note).
pub fn build(root: &Path, out_dir: &Path) -> Result<Vec<BuiltPlugin>, BuildError> {
    let (host, sysroot) = rustc_host()?;
    let linker = sysroot.join("lib").join("rustlib").join(&host).join("bin").join(if cfg!(windows) {
        "rust-lld.exe"
    } else {
        "rust-lld"
    });
    let Some(host_target) = host_record_target(&host) else {
        let note =
            format!("skipped: no embedded-ELF target for host `{host}` (x86_64, aarch64, riscv64 only)");
        eprintln!("warning: .sos plugins {note}");
        return Ok(vec![skipped(RUST_SOS_PLUGIN, &note), skipped(C_SOS_PLUGIN.0, &note)]);
    };
    let work = root.join("target").join("sos-build");
    std::fs::create_dir_all(&work).map_err(io(format!("cannot create {}", work.display())))?;
    let version_script = work.join("exports.map");
    std::fs::write(&version_script, format!("{{\n  global: {QUERY_SYMBOL};\n  local: *;\n}};\n"))
        .map_err(io(format!("cannot write {}", version_script.display())))?;

    // Host record first: the loader picks the first match.
    let mut targets = vec![host_target];
    targets.extend(RECORD_TARGETS.into_iter().filter(|target| *target != host_target));
    let mut elves = Vec::new();
    let mut skipped_records = Vec::new();
    for target in targets {
        if !sysroot.join("lib").join("rustlib").join(target).join("lib").is_dir() {
            skipped_records
                .push(format!("{target} (rustup target not installed: `rustup target add {target}`)"));
            continue;
        }
        let archive = build_staticlib(root, &work, target)?;
        let elf = work.join(format!("{RUST_SOS_PLUGIN}.{target}.so"));
        link(&linker, &[archive], &version_script, &elf)?;
        elves.push((target, std::fs::read(&elf).map_err(io(format!("cannot read {}", elf.display())))?));
    }
    let mut built = vec![write_sos(RUST_SOS_PLUGIN, "rust", out_dir, &elves, &skipped_records)?];

    let (c_name, c_source) = C_SOS_PLUGIN;
    let object = work.join(format!("{c_name}.{host_target}.o"));
    match compile_c(root, &root.join(c_source), &object)? {
        Some(note) => {
            eprintln!("warning: {c_name}.sos {note}");
            built.push(skipped(c_name, &note));
        }
        None => {
            let elf = work.join(format!("{c_name}.{host_target}.so"));
            link(&linker, &[object], &version_script, &elf)?;
            let bytes = std::fs::read(&elf).map_err(io(format!("cannot read {}", elf.display())))?;
            let others: Vec<String> = RECORD_TARGETS
                .into_iter()
                .filter(|target| *target != host_target)
                .map(|target| format!("{target} (C records for other architectures need a cross compiler)"))
                .collect();
            built.push(write_sos(c_name, "c", out_dir, &[(host_target, bytes)], &others)?);
        }
    }
    Ok(built)
}

fn skipped(name: &str, note: &str) -> BuiltPlugin {
    BuiltPlugin { name: format!("{name}.sos"), kind: "sos", path: None, size: 0, note: note.to_owned() }
}

/// Joins `elves` into `out_dir/name.sos` and describes it.
fn write_sos(
    name: &str,
    kind: &'static str,
    out_dir: &Path,
    elves: &[(&str, Vec<u8>)],
    skipped_records: &[String],
) -> Result<BuiltPlugin, BuildError> {
    let slices: Vec<&[u8]> = elves.iter().map(|(_, bytes)| bytes.as_slice()).collect();
    let container = xplug_elf::fatelf::join(&slices).map_err(|error| BuildError::Io {
        context: format!("cannot join the records of {name}.sos"),
        source: std::io::Error::other(error),
    })?;
    let path = out_dir.join(format!("{name}.sos"));
    let temporary = path.with_extension("sos.tmp");
    std::fs::write(&temporary, &container).map_err(io(format!("cannot write {}", temporary.display())))?;
    std::fs::rename(&temporary, &path).map_err(io(format!("cannot move {} into place", path.display())))?;
    let records: Vec<&str> =
        elves.iter().map(|(target, _)| target.split('-').next().unwrap_or_default()).collect();
    let mut note = format!("records: {}", records.join(", "));
    if !skipped_records.is_empty() {
        note.push_str(&format!("; not built: {}", skipped_records.join(", ")));
        eprintln!("note: {name}.sos {note}");
    }
    Ok(BuiltPlugin {
        name: format!("{name}.sos"),
        kind,
        path: Some(path),
        size: container.len() as u64,
        note,
    })
}

/// `cargo rustc` of the Rust plugin as a no_std static library for
/// `target`; returns the archive.
fn build_staticlib(root: &Path, work: &Path, target: &str) -> Result<PathBuf, BuildError> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(&cargo);
    command
        .current_dir(root)
        .args(["rustc", "--lib", "--crate-type", "staticlib", "--release", "--no-default-features"])
        .args(["-p", RUST_SOS_PLUGIN, "--features", "sos", "--target", target])
        .arg("--target-dir")
        .arg(work)
        .args(["--config", "profile.release.panic=\"abort\""])
        .args(["--config", "profile.release.lto=true"])
        .args(["--config", "profile.release.codegen-units=1"])
        .args(["--config", "profile.release.debug=false"])
        .args(["--config", "profile.release.opt-level=\"s\""])
        // For every crate of the target (not build scripts or proc macros,
        // thanks to the explicit --target); replaces RUSTFLAGS.
        .env("CARGO_ENCODED_RUSTFLAGS", "-Crelocation-model=pic\u{1f}-Cforce-unwind-tables=no")
        .env_remove("RUSTFLAGS");
    let command_line = format!("{command:?}");
    let output = command
        .output()
        .map_err(|error| BuildError::Cargo { command: command_line.clone(), detail: error.to_string() })?;
    if !output.status.success() {
        return Err(BuildError::Cargo {
            command: command_line,
            detail: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(work.join(target).join("release").join(format!("lib{RUST_SOS_PLUGIN}.a")))
}

/// Links `inputs` into a standalone shared object with IREE's flags.
fn link(linker: &Path, inputs: &[PathBuf], version_script: &Path, output: &Path) -> Result<(), BuildError> {
    let mut command = Command::new(linker);
    command
        .args(LINK_FLAGS)
        .arg(format!("--version-script={}", version_script.display()))
        .arg(format!("--undefined={QUERY_SYMBOL}"))
        .arg("-o")
        .arg(output)
        .args(inputs);
    let command_line = format!("{command:?}");
    let result = command
        .output()
        .map_err(|error| BuildError::Cargo { command: command_line.clone(), detail: error.to_string() })?;
    if !result.status.success() {
        return Err(BuildError::Cargo {
            command: command_line,
            detail: String::from_utf8_lossy(&result.stderr).into_owned(),
        });
    }
    Ok(())
}

/// Compiles a C plugin to a freestanding object; `Ok(Some(note))` when no
/// C compiler exists.
fn compile_c(root: &Path, source: &Path, object: &Path) -> Result<Option<String>, BuildError> {
    let mut command = Command::new(c_compiler());
    command.args(C_FLAGS).arg("-I").arg(root.join("include")).arg("-c").arg(source).arg("-o").arg(object);
    run_c_compiler(command, source)
}
