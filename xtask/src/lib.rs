//! Project automation for xplug, run as `cargo xtask <command>`.
//!
//! The library half holds the commands' work: header generation
//! ([`header`]), the demo ([`demo`]), IREE's end-to-end judgement of the
//! plugins ([`iree_e2e`]), the benchmark summary
//! ([`bench`](mod@bench)) and its layout sweep of row (8) ([`layouts`]),
//! `xplug run` against `iree-run-module` on models ([`model_bench`]),
//! and the hardening runs ([`hardening`]: loom,
//! valgrind, fuzzing), and the byte-flip sweep of a compiled module
//! through `xplug run` and IREE's `iree-run-module` ([`flip_sweep`]),
//! and the aarch64 test run under qemu ([`aarch64`]), and the book's
//! build and link check ([`book`]). The example plugins are built by `xplug-fixtures`
//! (`build-plugins` calls [`xplug_fixtures::plugins::build`]), the crate the
//! test suites use too, so no test build depends on xtask. The binary
//! (`src/main.rs`) is the command-line front end.

pub mod aarch64;
pub mod api;
pub mod bench;
pub mod book;
pub mod demo;
pub mod flip_sweep;
pub mod hardening;
pub mod header;
pub mod iree_e2e;
pub mod layouts;
pub mod linked_bench;
pub mod model_bench;

use std::path::Path;

use xplug_fixtures::BuiltPlugin;
pub use xplug_fixtures::workspace_root;
use xplug_table::{Style, Table};

/// The table `build-plugins` prints: name, kind, path, size.
#[must_use]
pub fn plugins_table(root: &Path, plugins: &[BuiltPlugin]) -> String {
    let mut table = Table::new(["name", "kind", "path", "size"]);
    for plugin in plugins {
        let path = match &plugin.path {
            Some(path) => path.strip_prefix(root).unwrap_or(path).display().to_string(),
            None => plugin.note.clone(),
        };
        let size = if plugin.path.is_some() { format!("{} B", plugin.size) } else { "-".to_owned() };
        table.row([plugin.name.clone(), plugin.kind.to_owned(), path, size]);
    }
    table.render(Style::stdout())
}
