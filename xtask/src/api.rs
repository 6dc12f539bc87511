//! `cargo xtask api`: the public API of the crates users build on, as one
//! line per item, against the committed baseline in `api/<crate>.txt`.
//!
//! rustdoc writes the crate's JSON (`--output-format json`, unstable, so
//! rustdoc runs with `RUSTC_BOOTSTRAP=1` on the stable toolchain: no
//! nightly, no tool to install), and the `public-api` crate (pinned, with
//! the `rustdoc-types` it reads) lists every public item reachable from the
//! crate root with its path and signature, the trait implementations of
//! public types included (auto traits and blanket implementations left out,
//! as they follow from the rest). `--verify` fails on any difference
//! (docs/src/design/publishing.md: an intended change is a reviewed baseline update,
//! `cargo xtask api`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The crates whose API is recorded: (package, library name).
pub const CRATES: [(&str, &str); 8] = [
    ("xplug-abi", "xplug_abi"),
    ("xplug-debug", "xplug_debug"),
    ("xplug-sdk", "xplug_sdk"),
    ("xplug-providers", "xplug_providers"),
    ("xplug-profile", "xplug_profile"),
    ("xplug-swap", "xplug_swap"),
    ("xplug-manager", "xplug_manager"),
    ("xplug-iree", "xplug_iree"),
];

/// The rustdoc JSON formats the pinned `public-api` reads: its
/// `rustdoc-types`' own ([`rustdoc_types::FORMAT_VERSION`], 56), and 57,
/// the stable toolchain's (Rust 1.95), whose one change is a new
/// `ExternalCrate::path` field that the 56 types skip. A toolchain with
/// another format is refused by name rather than misread.
pub const FORMAT_VERSIONS: [u32; 2] = [rustdoc_types::FORMAT_VERSION, 57];

/// Why a listing could not be made or compared.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// `cargo rustdoc` could not run or failed.
    #[error("`cargo rustdoc -p {package}` (JSON output) failed: {detail}")]
    Rustdoc {
        /// The package.
        package: String,
        /// Its exit status or why it could not start.
        detail: String,
    },
    /// A file could not be read or written.
    #[error("cannot access {}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// rustdoc's output is in a format the pinned `public-api` does not read.
    #[error(
        "{}: rustdoc JSON format {found}, but the pinned public-api reads formats {FORMAT_VERSIONS:?}; \
         move xtask's public-api and rustdoc-types pins to ones for this toolchain (and regenerate \
         the baselines, `cargo xtask api`)",
        path.display()
    )]
    Format {
        /// The JSON file.
        path: PathBuf,
        /// The format version found (0: none or not JSON).
        found: u64,
    },
    /// `public-api` could not list the crate.
    #[error("{}: public-api cannot list it", path.display())]
    PublicApi {
        /// The JSON file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: public_api::Error,
    },
}

/// The listing of `package` (library `library`) under `root`: one line per
/// public item, sorted, with a header naming the crate.
///
/// # Errors
/// When rustdoc fails or writes a format the pinned `public-api` does not
/// read.
pub fn listing(root: &Path, package: &str, library: &str) -> Result<String, ApiError> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(&cargo)
        .current_dir(root)
        .args([
            "rustdoc",
            "--quiet",
            "--lib",
            "-p",
            package,
            "--",
            "-Z",
            "unstable-options",
            "--output-format",
            "json",
        ])
        .env("RUSTC_BOOTSTRAP", "1")
        .status()
        .map_err(|error| ApiError::Rustdoc { package: package.to_owned(), detail: error.to_string() })?;
    if !status.success() {
        return Err(ApiError::Rustdoc {
            package: package.to_owned(),
            detail: format!("exited with {status}"),
        });
    }
    let path = root.join("target").join("doc").join(format!("{library}.json"));
    let text =
        std::fs::read_to_string(&path).map_err(|source| ApiError::File { path: path.clone(), source })?;
    let found = format_version(&text);
    if !FORMAT_VERSIONS.iter().any(|&supported| u64::from(supported) == found) {
        return Err(ApiError::Format { path, found });
    }
    let api = public_api::Builder::from_rustdoc_json(&path)
        .omit_blanket_impls(true)
        .omit_auto_trait_impls(true)
        .build()
        .map_err(|source| ApiError::PublicApi { path: path.clone(), source })?;
    let lines: BTreeSet<String> = api.items().map(ToString::to_string).collect();
    let mut out = format!("# The public API of {package} (cargo xtask api; docs/src/design/publishing.md)\n");
    for line in lines {
        out.push_str(&line);
        out.push('\n');
    }
    Ok(out)
}

/// The `format_version` of a rustdoc JSON text (0: none, or not JSON).
fn format_version(text: &str) -> u64 {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|json| json["format_version"].as_u64())
        .unwrap_or(0)
}

/// The committed baseline of `package`.
#[must_use]
pub fn baseline_path(root: &Path, package: &str) -> PathBuf {
    root.join("api").join(format!("{package}.txt"))
}

/// Lines only in `old` (`- `) and only in `new` (`+ `).
#[must_use]
pub fn diff(old: &str, new: &str) -> Vec<String> {
    let old_lines: BTreeSet<&str> = old.lines().collect();
    let new_lines: BTreeSet<&str> = new.lines().collect();
    let mut out: Vec<String> = old_lines.difference(&new_lines).map(|line| format!("- {line}")).collect();
    out.extend(new_lines.difference(&old_lines).map(|line| format!("+ {line}")));
    out
}

/// Writes every crate's listing to its baseline; the files written.
///
/// # Errors
/// When a listing cannot be made or written.
pub fn bless(root: &Path) -> Result<Vec<PathBuf>, ApiError> {
    let mut written = Vec::new();
    for (package, library) in CRATES {
        let text = listing(root, package, library)?;
        let path = baseline_path(root, package);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|source| ApiError::File { path: parent.to_owned(), source })?;
        }
        std::fs::write(&path, text).map_err(|source| ApiError::File { path: path.clone(), source })?;
        written.push(path);
    }
    Ok(written)
}

/// Compares every crate's listing with its baseline: (package, differing
/// lines) for each crate that differs.
///
/// # Errors
/// When a listing cannot be made or a baseline read.
pub fn verify(root: &Path) -> Result<Vec<(String, Vec<String>)>, ApiError> {
    let mut changed = Vec::new();
    for (package, library) in CRATES {
        let text = listing(root, package, library)?;
        let path = baseline_path(root, package);
        let old = std::fs::read_to_string(&path).map_err(|source| ApiError::File { path, source })?;
        let lines = diff(&old, &text);
        if !lines.is_empty() {
            changed.push((package.to_owned(), lines));
        }
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_version_is_read_and_a_non_json_file_has_none() {
        assert_eq!(format_version(r#"{"root": 0, "format_version": 57}"#), 57);
        assert_eq!(format_version("not json"), 0);
    }

    #[test]
    fn the_diff_names_removed_and_added_lines() {
        assert_eq!(diff("a\nb\n", "b\nc\n"), ["- a", "+ c"]);
        assert!(diff("a\n", "a\n").is_empty());
    }
}
