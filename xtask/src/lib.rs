//! Project automation for xplug, run as `cargo xtask <command>`.
//!
//! The library half holds what the tests reuse: header generation
//! ([`header`]), the example plugin build ([`plugins`]), the demo
//! ([`demo`]), the standalone `.sos` build ([`sos`]) and the benchmark summary ([`bench`](mod@bench)). The binary
//! (`src/main.rs`) is the command-line front end.

pub mod bench;
pub mod demo;
pub mod header;
pub mod plugins;
pub mod sos;

use std::path::{Path, PathBuf};

/// The workspace root (the parent of this crate's directory).
#[must_use]
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}
