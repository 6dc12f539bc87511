//! `cargo xtask build-plugins`: builds the example plugins as shared
//! libraries into `target/plugins/<profile>/`.
//!
//! Each [`PluginProfile`] has its own output directory, so the debug plugins
//! the test suite builds never replace the optimised ones `cargo xtask
//! build-plugins --release` (or `cargo xtask demo`) made, and a user handing
//! `target/plugins/release/` to IREE gets release plugins.
//!
//! Rust plugins are built as plain `cargo build` makes them (an SDK plugin
//! exports its C entry points unless its `static` feature is on) into a
//! separate target directory, `target/plugin-build`, so the workspace's
//! feature unification (`static_runtime` turns on `sample_static/static`)
//! does not apply and the main build is not invalidated; release builds
//! use the workspace's `plugin` cargo profile (stripped, LTO, one codegen
//! unit). The C plugin is compiled against `include/` with `$CC` (default
//! `cc`). Re-running is cheap and leaves the same files.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The Rust plugin packages built as shared libraries.
pub const RUST_PLUGINS: [&str; 3] = ["sample_standalone", "sample_system", "sample_static"];

/// The C plugins: (name, source relative to the workspace root).
pub const C_PLUGINS: [(&str, &str); 1] = [("c_sample", "plugins/c_sample/c_sample.c")];

pub use crate::compile::{BuildError, BuiltPlugin, c_compiler};
use crate::compile::{io, run_c_compiler};

/// How the example plugins are compiled; each has its own output directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PluginProfile {
    /// Unoptimised, with debug info (what the test suite uses: quick to build).
    Debug,
    /// Optimised for size and speed: the workspace's `plugin` cargo profile
    /// for Rust, `-O2` for C. What `cargo xtask demo` and IREE runs use.
    Release,
}

impl PluginProfile {
    /// `release` when `release` is true, else `debug`.
    #[must_use]
    pub fn from_release_flag(release: bool) -> Self {
        if release { Self::Release } else { Self::Debug }
    }

    /// The directory name: `debug` or `release`.
    #[must_use]
    pub fn dir_name(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Release => "release",
        }
    }

    /// The cargo profile the Rust plugins are built with.
    fn cargo_profile(self) -> &'static str {
        match self {
            Self::Debug => "dev",
            Self::Release => "plugin",
        }
    }

    /// Cargo's output directory name for [`Self::cargo_profile`].
    fn cargo_output_dir(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Release => "plugin",
        }
    }
}

/// `target/plugins/<profile>` under `root`: where [`build`] puts the plugins.
#[must_use]
pub fn output_dir(root: &Path, profile: PluginProfile) -> PathBuf {
    root.join("target").join("plugins").join(profile.dir_name())
}

/// The file name of shared library `name` on this platform (`libname.so`).
#[must_use]
pub fn library_file_name(name: &str) -> String {
    format!("{}{name}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX)
}

/// Builds every example plugin into [`output_dir`]`(root, profile)`.
///
/// # Errors
/// When cargo or the C compiler fails, or a file cannot be copied. A
/// missing C compiler is not an error: the C plugin is reported as skipped.
pub fn build(root: &Path, profile: PluginProfile) -> Result<Vec<BuiltPlugin>, BuildError> {
    let out_dir = output_dir(root, profile);
    std::fs::create_dir_all(&out_dir).map_err(io(format!("cannot create {}", out_dir.display())))?;
    let build_dir = root.join("target").join("plugin-build");

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(&cargo);
    command.current_dir(root).arg("build").arg("--lib").arg("--target-dir").arg(&build_dir);
    for package in RUST_PLUGINS {
        command.arg("-p").arg(package);
    }
    command.arg("--profile").arg(profile.cargo_profile());
    let command_line = format!("{command:?}");
    let status = command
        .status()
        .map_err(|error| BuildError::Cargo { command: command_line.clone(), detail: error.to_string() })?;
    if !status.success() {
        return Err(BuildError::Cargo { command: command_line, detail: format!("exited with {status}") });
    }

    let profile_dir = build_dir.join(profile.cargo_output_dir());
    let mut built = Vec::new();
    for package in RUST_PLUGINS {
        let file = library_file_name(package);
        let target = out_dir.join(&file);
        copy_atomically(&profile_dir.join(&file), &target)?;
        built.push(described(package, "rust", target)?);
    }
    for (name, source) in C_PLUGINS {
        let target = out_dir.join(library_file_name(name));
        match compile_c(root, &root.join(source), &[], &target, profile)? {
            None => built.push(described(name, "c", target)?),
            Some(note) => {
                built.push(BuiltPlugin { name: name.to_owned(), kind: "c", path: None, size: 0, note })
            }
        }
    }
    built.extend(crate::sos::build(root, &out_dir)?);
    Ok(built)
}

fn described(name: &str, kind: &'static str, path: PathBuf) -> Result<BuiltPlugin, BuildError> {
    let size = std::fs::metadata(&path).map_err(io(format!("cannot stat {}", path.display())))?.len();
    Ok(BuiltPlugin { name: name.to_owned(), kind, path: Some(path), size, note: String::new() })
}

/// Copies through a temporary file and a rename, so a process that has the
/// old library mapped keeps a consistent file.
fn copy_atomically(from: &Path, to: &Path) -> Result<(), BuildError> {
    let temporary = to.with_extension("tmp");
    std::fs::copy(from, &temporary).map_err(io(format!(
        "cannot copy {} to {}",
        from.display(),
        temporary.display()
    )))?;
    std::fs::rename(&temporary, to).map_err(io(format!("cannot move {} into place", to.display())))
}

/// Compiles one C plugin source (with `defines`, each `NAME` or
/// `NAME=VALUE`) against `include/` into the shared library `target`;
/// `Ok(Some(note))` when no C compiler exists.
///
/// # Errors
/// When the compiler fails or the result cannot be moved into place.
pub fn compile_c(
    root: &Path,
    source: &Path,
    defines: &[&str],
    target: &Path,
    profile: PluginProfile,
) -> Result<Option<String>, BuildError> {
    let temporary = target.with_extension("tmp");
    let mut command = Command::new(c_compiler());
    command
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-fvisibility=hidden"])
        .args(defines.iter().map(|define| format!("-D{define}")))
        .arg(if profile == PluginProfile::Release { "-O2" } else { "-O0" })
        .arg("-I")
        .arg(root.join("include"))
        .arg(source)
        .arg("-o")
        .arg(&temporary);
    if let Some(note) = run_c_compiler(command, source)? {
        return Ok(Some(note));
    }
    std::fs::rename(&temporary, target)
        .map_err(io(format!("cannot move {} into place", target.display())))?;
    Ok(None)
}

/// The table `build-plugins` prints: name, kind, path, size.
#[must_use]
pub fn table(root: &Path, plugins: &[BuiltPlugin]) -> String {
    let rows: Vec<[String; 4]> = plugins
        .iter()
        .map(|plugin| {
            let path = match &plugin.path {
                Some(path) => path.strip_prefix(root).unwrap_or(path).display().to_string(),
                None => plugin.note.clone(),
            };
            let size = if plugin.path.is_some() { format!("{} B", plugin.size) } else { "-".to_owned() };
            [plugin.name.clone(), plugin.kind.to_owned(), path, size]
        })
        .collect();
    let header = ["name", "kind", "path", "size"].map(str::to_owned);
    crate::text_table(&header, &rows)
}

/// The debug example plugins, built once per process (the first caller
/// builds them, later callers wait for and reuse the result): what the test
/// suites load. Panics when a plugin cannot be built or was skipped (no C
/// compiler), since a test without it would prove nothing.
#[must_use]
pub fn built_for_tests() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let root = crate::workspace_root();
        let built = build(&root, PluginProfile::Debug)
            .unwrap_or_else(|error| panic!("the example plugins build: {error}"));
        assert!(built.iter().all(|plugin| plugin.path.is_some()), "a plugin was skipped: {built:?}");
        output_dir(&root, PluginProfile::Debug)
    })
}
