//! Cross-crate integration tests for xplug (see `tests/`), plus helpers they
//! share: finding a C compiler and compiling C sources against `include/`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root.
#[must_use]
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate lives one level below the workspace root")
        .to_path_buf()
}

/// The directory holding the C headers (`include/`).
#[must_use]
pub fn include_dir() -> PathBuf {
    workspace_root().join("include")
}

/// The C compiler to use: `$CC` if set, else `cc`.
#[must_use]
pub fn c_compiler() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_owned())
}

/// The C++ compiler to use: `$CXX` if set, else `c++`.
#[must_use]
pub fn cxx_compiler() -> String {
    std::env::var("CXX").unwrap_or_else(|_| "c++".to_owned())
}

/// Runs `compiler args...`, panicking with the compiler's output on failure.
///
/// # Panics
/// When the compiler cannot be started or exits with an error; the message
/// includes the full command line and the compiler's stderr.
pub fn run_compiler(compiler: &str, args: &[&std::ffi::OsStr]) {
    let output = Command::new(compiler)
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("cannot run C compiler `{compiler}` (set CC/CXX): {error}"));
    assert!(
        output.status.success(),
        "`{compiler} {}` failed:\n{}",
        args.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
}
