//! `cargo xtask build-plugins`: builds the example plugins as shared
//! libraries into `target/plugins/`.
//!
//! Rust plugins are built with their `export` feature (which emits the C
//! entry points) into a separate target directory, `target/plugin-build`,
//! so the feature change does not invalidate the main build; the C plugin
//! is compiled against `include/` with `$CC` (default `cc`). Re-running is
//! cheap and leaves the same files.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The Rust plugin packages built as shared libraries.
pub const RUST_PLUGINS: [&str; 3] = ["sample_standalone", "sample_system", "sample_static"];

/// The C plugins: (name, source relative to the workspace root).
pub const C_PLUGINS: [(&str, &str); 1] = [("c_sample", "plugins/c_sample/c_sample.c")];

/// One built (or skipped) plugin.
#[derive(Debug, Clone)]
pub struct BuiltPlugin {
    /// Package / plugin name.
    pub name: String,
    /// `rust` or `c`.
    pub kind: &'static str,
    /// The shared library, or `None` when it was skipped.
    pub path: Option<PathBuf>,
    /// Its size in bytes (0 when skipped).
    pub size: u64,
    /// Why it was skipped.
    pub note: String,
}

/// What can go wrong while building plugins.
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// `cargo build` could not run or failed.
    Cargo {
        /// The command line.
        command: String,
        /// What happened.
        detail: String,
    },
    /// The C compiler failed on a source file.
    CCompiler {
        /// The source file.
        source_file: PathBuf,
        /// The compiler's stderr.
        stderr: String,
    },
    /// A file operation failed.
    Io {
        /// What was being done, naming the file.
        context: String,
        /// The cause.
        source: std::io::Error,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cargo { command, detail } => write!(f, "`{command}` failed: {detail}"),
            Self::CCompiler { source_file, stderr } => {
                write!(
                    f,
                    "compiling {} failed (fix the C source or set CC):\n{stderr}",
                    source_file.display()
                )
            }
            Self::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for BuildError {}

fn io(context: String) -> impl FnOnce(std::io::Error) -> BuildError {
    move |source| BuildError::Io { context, source }
}

/// `target/plugins` under `root`.
#[must_use]
pub fn output_dir(root: &Path) -> PathBuf {
    root.join("target").join("plugins")
}

/// The file name of shared library `name` on this platform (`libname.so`).
#[must_use]
pub fn library_file_name(name: &str) -> String {
    format!("{}{name}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX)
}

/// Builds every example plugin into `root/target/plugins/`.
///
/// # Errors
/// When cargo or the C compiler fails, or a file cannot be copied. A
/// missing C compiler is not an error: the C plugin is reported as skipped.
pub fn build(root: &Path, release: bool) -> Result<Vec<BuiltPlugin>, BuildError> {
    let out_dir = output_dir(root);
    std::fs::create_dir_all(&out_dir).map_err(io(format!("cannot create {}", out_dir.display())))?;
    let build_dir = root.join("target").join("plugin-build");

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(&cargo);
    command.current_dir(root).arg("build").arg("--lib").arg("--target-dir").arg(&build_dir);
    for package in RUST_PLUGINS {
        command.arg("-p").arg(package);
    }
    let features: Vec<String> = RUST_PLUGINS.iter().map(|package| format!("{package}/export")).collect();
    command.arg("--features").arg(features.join(","));
    if release {
        command.arg("--release");
    }
    let command_line = format!("{command:?}");
    let status = command
        .status()
        .map_err(|error| BuildError::Cargo { command: command_line.clone(), detail: error.to_string() })?;
    if !status.success() {
        return Err(BuildError::Cargo { command: command_line, detail: format!("exited with {status}") });
    }

    let profile_dir = build_dir.join(if release { "release" } else { "debug" });
    let mut built = Vec::new();
    for package in RUST_PLUGINS {
        let file = library_file_name(package);
        let target = out_dir.join(&file);
        copy_atomically(&profile_dir.join(&file), &target)?;
        built.push(described(package, "rust", target)?);
    }
    for (name, source) in C_PLUGINS {
        let target = out_dir.join(library_file_name(name));
        match compile_c(root, &root.join(source), &target, release)? {
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

/// Compiles one C plugin; `Ok(Some(note))` when no C compiler exists.
fn compile_c(root: &Path, source: &Path, target: &Path, release: bool) -> Result<Option<String>, BuildError> {
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let temporary = target.with_extension("tmp");
    let output = Command::new(&compiler)
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-fvisibility=hidden"])
        .arg(if release { "-O2" } else { "-O0" })
        .arg("-I")
        .arg(root.join("include"))
        .arg(source)
        .arg("-o")
        .arg(&temporary)
        .output();
    let output = match output {
        Ok(output) => output,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Some(format!(
                "skipped: no C compiler `{compiler}` found; install gcc or clang, or set CC to one"
            )));
        }
        Err(error) => return Err(io(format!("cannot run C compiler `{compiler}`"))(error)),
    };
    if !output.status.success() {
        return Err(BuildError::CCompiler {
            source_file: source.to_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
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
    let header = ["name".to_owned(), "kind".to_owned(), "path".to_owned(), "size".to_owned()];
    let mut widths = [0usize; 4];
    for row in rows.iter().chain(std::iter::once(&header)) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.len());
        }
    }
    let mut text = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let line = format!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {:>w3$}",
            row[0],
            row[1],
            row[2],
            row[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3]
        );
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}
