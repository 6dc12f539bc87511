//! What every plugin build shares (shared libraries in [`crate::plugins`],
//! `.sos` files in [`crate::sos`]): the record of a built plugin, the build
//! error, and running the C compiler.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

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
    /// A plugin a run needs could not be built (no C compiler).
    Skipped {
        /// The plugin.
        name: String,
        /// Why it was skipped.
        note: String,
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
            Self::Skipped { name, note } => write!(f, "plugin {name} was not built: {note}"),
            Self::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for BuildError {}

pub(crate) fn io(context: String) -> impl FnOnce(std::io::Error) -> BuildError {
    move |source| BuildError::Io { context, source }
}

/// The C compiler builds and tests use: `$CC`, else `cc`.
#[must_use]
pub fn c_compiler() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_owned())
}

/// Runs `command` (an invocation of [`c_compiler`] on `source`):
/// `Ok(Some(note))` when no C compiler exists, a [`BuildError::CCompiler`]
/// with its output when it fails.
pub(crate) fn run_c_compiler(mut command: Command, source: &Path) -> Result<Option<String>, BuildError> {
    let compiler = command.get_program().to_string_lossy().into_owned();
    let output = match command.output() {
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
    Ok(None)
}
