//! Project automation for xplug, run as `cargo xtask <command>`.
//!
//! The library half holds what the tests reuse: header generation
//! ([`header`]), the example plugin build ([`plugins`]), the demo
//! ([`demo`]), the standalone `.sos` build ([`sos`]), IREE's end-to-end
//! judgement of the plugins ([`iree_e2e`], with its [`xplug_npy`] files)
//! and the benchmark summary
//! ([`bench`](mod@bench)), and the hardening runs ([`hardening`]: loom,
//! valgrind, fuzzing). The binary (`src/main.rs`) is the command-line
//! front end.

pub mod bench;
mod compile;
pub mod demo;
pub mod hardening;
pub mod header;
pub mod iree_e2e;
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

/// Left-aligned columns separated by two spaces, the last column
/// right-aligned when every cell of it ends in a digit or `B` (sizes), and
/// no trailing spaces: the tables `build-plugins` and `iree-e2e` print.
#[must_use]
pub fn text_table<const N: usize>(header: &[String; N], rows: &[[String; N]]) -> String {
    let mut widths = [0usize; N];
    for row in rows.iter().chain(std::iter::once(header)) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let numeric_last = rows.iter().all(|row| row[N - 1].ends_with(|c: char| c.is_ascii_digit() || c == 'B'))
        && !rows.is_empty();
    let mut text = String::new();
    for row in std::iter::once(header).chain(rows) {
        let mut line = String::new();
        for (column, (cell, width)) in row.iter().zip(widths).enumerate() {
            if column > 0 {
                line.push_str("  ");
            }
            let pad = " ".repeat(width - cell.chars().count());
            if column == N - 1 && numeric_last {
                line.push_str(&pad);
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&pad);
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}
