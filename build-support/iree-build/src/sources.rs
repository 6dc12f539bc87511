//! Where IREE's runtime sources are, for the build scripts that compile
//! against them.
//!
//! xplug never copies IREE's code. The crates that need IREE's C sources or
//! headers (`xplug-iree`, which builds IREE's runtime, and
//! `xplug-iree-reference`, which compiles IREE's plugin manager and loaders
//! as a benchmark anchor) take them from the IREE tree bundled in the
//! `eerie-sys` package, which they depend on with its features off (so its
//! own build script builds nothing). A build script cannot see its
//! dependencies' directories directly. When the calling crate was itself
//! unpacked from a registry or a vendor directory (a dependent of the
//! published `xplug-iree`), eerie-sys lies beside it there
//! (`<registry>/src/<index>/eerie-sys-0.5.0`, `vendor/eerie-sys`); in this
//! workspace, this module asks `cargo metadata`. Setting
//! `XPLUG_IREE_RUNTIME_SRC` to an IREE checkout's `runtime/src` bypasses the
//! lookup.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The package whose bundled IREE tree is used.
pub const EERIE_SYS: &str = "eerie-sys";

/// The version of [`EERIE_SYS`] the crates using this one pin (`=0.5.0`).
pub const EERIE_SYS_VERSION: &str = "0.5.0";

/// The environment variable naming another IREE `runtime/src` directory.
pub const RUNTIME_SRC_VAR: &str = "XPLUG_IREE_RUNTIME_SRC";

/// IREE's `runtime/src` directory: from [`RUNTIME_SRC_VAR`] when set, else
/// the one bundled in the eerie-sys package of the calling crate's build.
/// Tells cargo to rerun the build script when the variable changes.
///
/// # Panics
/// When the directory does not look like IREE's `runtime/src`, or the
/// eerie-sys package cannot be found.
#[must_use]
pub fn runtime_src_dir() -> PathBuf {
    println!("cargo::rerun-if-env-changed={RUNTIME_SRC_VAR}");
    if let Some(dir) = std::env::var_os(RUNTIME_SRC_VAR) {
        let dir = PathBuf::from(dir);
        assert!(
            dir.join("iree/hal/local/executable_plugin_manager.c").is_file(),
            "{RUNTIME_SRC_VAR}={} is not IREE's `runtime/src` directory (no \
             iree/hal/local/executable_plugin_manager.c below it)",
            dir.display()
        );
        return dir;
    }
    let package_dir = unpacked_beside().or_else(in_cargo_home).unwrap_or_else(eerie_sys_dir);
    let dir = package_dir.join("iree").join("runtime").join("src");
    assert!(
        dir.is_dir(),
        "{} has no iree/runtime/src directory; expected eerie-sys 0.5.0's bundled IREE sources",
        package_dir.display()
    );
    dir
}

/// The root of the IREE tree next to [`runtime_src_dir`] (holding
/// `third_party/`).
#[must_use]
pub fn iree_root_dir(runtime_src: &Path) -> PathBuf {
    runtime_src
        .parent()
        .and_then(Path::parent)
        .expect("runtime/src lies two levels below IREE's root")
        .to_path_buf()
}

/// eerie-sys unpacked beside the calling crate, when that crate came from a
/// registry (`<registry>/src/<index>/<crate>-<version>`, eerie-sys in the
/// same or another index directory there) or a directory source
/// (`vendor/<crate>`, eerie-sys as `vendor/eerie-sys` or
/// `vendor/eerie-sys-0.5.0`). `cargo metadata` cannot answer there: the
/// unpacked crate is no workspace, and resolving it anew needs the registry.
fn unpacked_beside() -> Option<PathBuf> {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
    let parent = manifest_dir.parent()?;
    let versioned = format!("{EERIE_SYS}-{EERIE_SYS_VERSION}");
    let mut candidates = vec![parent.join(&versioned), parent.join(EERIE_SYS)];
    if let Some(Ok(indexes)) = parent.parent().map(std::fs::read_dir) {
        candidates.extend(indexes.flatten().map(|index| index.path().join(&versioned)));
    }
    candidates.into_iter().find(|dir| is_eerie_sys(dir))
}

/// eerie-sys 0.5.0 as Cargo unpacked it from crates.io into
/// `$CARGO_HOME/registry/src/<index>/` (`$HOME/.cargo` without
/// `CARGO_HOME`): where `cargo package` verifies a crate that uses this one
/// (unpacked under `target/package/`, away from its dependencies). Every
/// such copy is the checksummed crates.io package of that version.
fn in_cargo_home() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))?;
    let versioned = format!("{EERIE_SYS}-{EERIE_SYS_VERSION}");
    std::fs::read_dir(home.join("registry").join("src"))
        .ok()?
        .flatten()
        .map(|index| index.path().join(&versioned))
        .find(|dir| is_eerie_sys(dir))
}

/// Whether `dir` is the eerie-sys package of [`EERIE_SYS_VERSION`] with its
/// IREE tree.
fn is_eerie_sys(dir: &Path) -> bool {
    dir.join("iree/runtime/src/iree/hal/local/executable_plugin_manager.c").is_file()
        && std::fs::read_to_string(dir.join("Cargo.toml")).is_ok_and(|manifest| {
            manifest.contains(&format!("name = \"{EERIE_SYS}\""))
                && manifest.contains(&format!("version = \"{EERIE_SYS_VERSION}\""))
        })
}

/// The directory of the eerie-sys package, from `cargo metadata` (the
/// calling crate is in a workspace).
fn eerie_sys_dir() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest_dir =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let target = std::env::var("TARGET").expect("cargo sets TARGET");
    let output = Command::new(&cargo)
        .arg("metadata")
        .args(["--format-version", "1", "--filter-platform", &target])
        .arg("--manifest-path")
        .arg(manifest_dir.join("Cargo.toml"))
        // The build that runs us already resolved and downloaded everything.
        .arg("--locked")
        .output()
        .unwrap_or_else(|error| {
            panic!(
                "cannot run `{} metadata` to locate the {EERIE_SYS} sources: {error}",
                Path::new(&cargo).display()
            )
        });
    assert!(
        output.status.success(),
        "`cargo metadata` failed while locating the {EERIE_SYS} sources (set {RUNTIME_SRC_VAR} to IREE's \
         runtime/src to bypass it):\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Every package's `"manifest_path":"..."`; the one whose directory is
    // eerie-sys at the pinned version (checked as in the other lookups).
    // Read without a JSON parser: this crate has no dependencies, so its
    // build is the same whatever features the calling command unifies, and
    // so is the build-script unit of xplug-iree, whose OUT_DIR holds IREE's
    // CMake build (one build, not one per `cargo` command).
    let stdout = String::from_utf8_lossy(&output.stdout);
    let manifest = json_strings_after(&stdout, "\"manifest_path\":")
        .into_iter()
        .map(PathBuf::from)
        .find(|manifest| manifest.parent().is_some_and(is_eerie_sys))
        .unwrap_or_else(|| {
            panic!("`cargo metadata` does not list the {EERIE_SYS} package; is it still a dependency?")
        });
    manifest.parent().expect("a manifest path has a parent directory").to_path_buf()
}

/// The JSON string value after each occurrence of `key` in `json`, with
/// its escapes (`\"`, `\\`, `\/`) undone; a value with another escape is
/// skipped (no manifest path of ours has one).
fn json_strings_after(json: &str, key: &str) -> Vec<String> {
    let mut values = Vec::new();
    for (at, _) in json.match_indices(key) {
        let Some(rest) = json[at + key.len()..].strip_prefix('"') else { continue };
        let mut value = String::new();
        let mut chars = rest.chars();
        let complete = loop {
            match chars.next() {
                Some('"') => break true,
                Some('\\') => match chars.next() {
                    Some(escaped @ ('"' | '\\' | '/')) => value.push(escaped),
                    _ => break false,
                },
                Some(c) => value.push(c),
                None => break false,
            }
        };
        if complete {
            values.push(value);
        }
    }
    values
}

#[cfg(test)]
mod tests {
    use super::json_strings_after;

    #[test]
    fn reads_manifest_paths_from_cargo_metadata_json() {
        let json = r#"{"packages":[{"name":"a","manifest_path":"/x/a-1.0/Cargo.toml","dependencies":[]},
            {"name":"b","manifest_path":"/y/with \"quote\"/Cargo.toml"},{"manifest_path":"/z/\u00e9"}]}"#;
        assert_eq!(
            json_strings_after(json, "\"manifest_path\":"),
            ["/x/a-1.0/Cargo.toml", "/y/with \"quote\"/Cargo.toml"]
        );
    }
}
