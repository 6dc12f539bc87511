//! Project automation for xplug, run as `cargo xtask <command>`.
//!
//! The library half holds the commands' work: header generation
//! ([`header`]), the demo ([`demo`]), IREE's end-to-end judgement of the
//! plugins ([`iree_e2e`], with its [`npy`] files), the benchmark summary
//! ([`bench`](mod@bench)) and the hardening runs ([`hardening`]: loom,
//! valgrind, fuzzing). The example plugins are built by `xplug-fixtures`
//! (`build-plugins` calls [`xplug_fixtures::plugins::build`]), the crate the
//! test suites use too, so no test build depends on xtask. The binary
//! (`src/main.rs`) is the command-line front end.

pub mod bench;
pub mod demo;
pub mod hardening;
pub mod header;
pub mod iree_e2e;
pub mod npy;

use std::path::Path;

use xplug_fixtures::BuiltPlugin;
pub use xplug_fixtures::workspace_root;

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

/// The table `build-plugins` prints: name, kind, path, size.
#[must_use]
pub fn plugins_table(root: &Path, plugins: &[BuiltPlugin]) -> String {
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
    text_table(&header, &rows)
}
