//! Generation of `include/xplug/executable_plugin.h` from `xplug-abi`.
//!
//! The struct and function-pointer declarations come from cbindgen; the C
//! enums, macros and the string pair (whose IREE field aliases need anonymous
//! unions) come from `xtask/header/prelude.h`, and the inline helpers from
//! `xtask/header/trailer.h`. Both halves are checked against the Rust layout
//! by `tests/tests/c_header.rs`.

use std::fmt;
use std::path::PathBuf;

use crate::workspace_root;

/// Path of the committed header, relative to the workspace root.
pub const HEADER_PATH: &str = "include/xplug/executable_plugin.h";

/// Why the header could not be generated or verified.
#[derive(Debug)]
#[non_exhaustive]
pub enum HeaderError {
    /// A configuration or raw-text input could not be read.
    Input {
        /// The file that failed.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// cbindgen rejected the configuration or the crate.
    Cbindgen(String),
    /// The header could not be written.
    Write {
        /// The destination.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Input { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            Self::Cbindgen(message) => write!(f, "cbindgen failed: {message}"),
            Self::Write { path, source } => write!(f, "cannot write {}: {source}", path.display()),
        }
    }
}

impl std::error::Error for HeaderError {}

fn read(path: PathBuf) -> Result<String, HeaderError> {
    std::fs::read_to_string(&path).map_err(|source| HeaderError::Input { path, source })
}

/// Generates the header text from the current `xplug-abi` sources.
///
/// # Errors
/// Fails when an input file is missing or cbindgen cannot parse the crate.
pub fn generate() -> Result<String, HeaderError> {
    let root = workspace_root();
    let dir = root.join("xtask/header");
    let config_path = dir.join("cbindgen.toml");
    let mut config = cbindgen::Config::from_file(&config_path).map_err(HeaderError::Cbindgen)?;
    config.after_includes = Some(read(dir.join("prelude.h"))?);
    config.trailer = Some(read(dir.join("trailer.h"))?);
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_crate(root.join("crates/plugin-abi"))
        .generate()
        .map_err(|error| HeaderError::Cbindgen(error.to_string()))?;
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).map_err(|error| HeaderError::Cbindgen(error.to_string()))
}

/// The committed header's path.
#[must_use]
pub fn header_path() -> PathBuf {
    workspace_root().join(HEADER_PATH)
}

/// Writes a fresh header over the committed one.
///
/// # Errors
/// As [`generate`], or when the file cannot be written.
pub fn write() -> Result<PathBuf, HeaderError> {
    let text = generate()?;
    let path = header_path();
    std::fs::write(&path, text).map_err(|source| HeaderError::Write { path: path.clone(), source })?;
    Ok(path)
}

/// Compares the committed header with a fresh generation; `Ok(None)` when they
/// match, `Ok(Some(line))` with the first differing line number otherwise.
///
/// # Errors
/// As [`generate`], or when the committed header cannot be read.
pub fn verify() -> Result<Option<usize>, HeaderError> {
    let fresh = generate()?;
    let committed = read(header_path())?;
    if fresh == committed {
        return Ok(None);
    }
    let line = fresh
        .lines()
        .zip(committed.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| fresh.lines().count().min(committed.lines().count()));
    Ok(Some(line + 1))
}
