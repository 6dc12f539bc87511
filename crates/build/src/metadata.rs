//! The plugin crate, as `cargo metadata` describes it.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::BuildError;

/// The package a `.sos` is built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginCrate {
    /// The package's name.
    pub package: String,
    /// Its `Cargo.toml`.
    pub manifest_path: PathBuf,
    /// Its library target's name (`-` as `_`): the archive is
    /// `lib<lib_name>.a`, the `.sos` `<lib_name>.sos`.
    pub lib_name: String,
    /// The workspace's target directory.
    pub target_dir: PathBuf,
}

impl PluginCrate {
    /// Asks `cargo metadata --no-deps` about `manifest`, picking `package`,
    /// else the package whose manifest `manifest` is (a workspace member's),
    /// else the one package there is.
    ///
    /// # Errors
    /// [`BuildError::Tool`] / [`BuildError::Metadata`] when cargo cannot
    /// answer; [`BuildError::AmbiguousPackage`] for a workspace of several
    /// packages and no `package`; [`BuildError::NoLibrary`] when the
    /// package is not there or has no library.
    pub fn locate(manifest: &Path, package: Option<&str>) -> Result<Self, BuildError> {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let mut command = Command::new(cargo);
        command.args(["metadata", "--no-deps", "--format-version", "1", "--manifest-path"]).arg(manifest);
        let line = format!("{command:?}");
        let output = command.output().map_err(|source| BuildError::Tool { command: line, source })?;
        let metadata_error =
            |detail: String| BuildError::Metadata { manifest: manifest.to_path_buf(), detail };
        if !output.status.success() {
            return Err(metadata_error(String::from_utf8_lossy(&output.stderr).trim().to_owned()));
        }
        let value: Value = serde_json::from_slice(&output.stdout)
            .map_err(|error| metadata_error(format!("cargo metadata printed no JSON ({error})")))?;
        Self::from_metadata(manifest, package, &value)
    }

    /// [`PluginCrate::locate`] on `cargo metadata`'s answer.
    fn from_metadata(manifest: &Path, package: Option<&str>, value: &Value) -> Result<Self, BuildError> {
        let metadata_error = |detail: &str| BuildError::Metadata {
            manifest: manifest.to_path_buf(),
            detail: detail.to_owned(),
        };
        let packages = value["packages"].as_array().ok_or_else(|| metadata_error("no `packages` list"))?;
        let name_of = |entry: &Value| entry["name"].as_str().unwrap_or_default().to_owned();
        // A member's own manifest names that member (cargo metadata lists
        // the whole workspace for it).
        let canonical = |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let wanted_manifest = canonical(manifest);
        let own = packages.iter().find(|entry| {
            entry["manifest_path"].as_str().is_some_and(|path| canonical(Path::new(path)) == wanted_manifest)
        });
        let chosen = match (package, own) {
            (Some(wanted), _) => packages.iter().find(|entry| entry["name"] == wanted),
            (None, Some(own)) => Some(own),
            (None, None) if packages.len() == 1 => packages.first(),
            (None, None) => {
                return Err(BuildError::AmbiguousPackage {
                    manifest: manifest.to_path_buf(),
                    packages: packages.iter().map(name_of).collect(),
                });
            }
        };
        let no_library = |package: String, problem| BuildError::NoLibrary {
            manifest: manifest.to_path_buf(),
            package,
            problem,
        };
        let Some(chosen) = chosen else {
            return Err(no_library(package.unwrap_or_default().to_owned(), "does not exist"));
        };
        let lib =
            chosen["targets"].as_array().into_iter().flatten().find(|target| {
                target["kind"].as_array().into_iter().flatten().any(|kind| {
                    matches!(kind.as_str(), Some("lib" | "rlib" | "cdylib" | "staticlib" | "dylib"))
                })
            });
        let Some(lib) = lib else { return Err(no_library(name_of(chosen), "has no library target")) };
        Ok(Self {
            package: name_of(chosen),
            manifest_path: PathBuf::from(
                chosen["manifest_path"]
                    .as_str()
                    .ok_or_else(|| metadata_error("a package without manifest_path"))?,
            ),
            lib_name: lib["name"].as_str().unwrap_or_default().replace('-', "_"),
            target_dir: PathBuf::from(
                value["target_directory"].as_str().ok_or_else(|| metadata_error("no target_directory"))?,
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn metadata(packages: Value) -> Value {
        json!({ "packages": packages, "target_directory": "/t" })
    }

    fn package(name: &str, kinds: &[&str]) -> Value {
        json!({
            "name": name,
            "manifest_path": format!("/w/{name}/Cargo.toml"),
            "targets": [{ "name": name, "kind": kinds }],
        })
    }

    #[test]
    fn the_one_package_with_a_library_is_chosen() {
        let value = metadata(json!([package("my-plugin", &["cdylib", "rlib"])]));
        let krate = PluginCrate::from_metadata(Path::new("/w/Cargo.toml"), None, &value).unwrap();
        assert_eq!(krate.lib_name, "my_plugin");
        assert_eq!(krate.target_dir, Path::new("/t"));
        assert_eq!(krate.manifest_path, Path::new("/w/my-plugin/Cargo.toml"));
    }

    #[test]
    fn workspaces_and_binaries_are_refused_with_what_to_do() {
        let value = metadata(json!([package("a", &["lib"]), package("b", &["bin"])]));
        let manifest = Path::new("/w/Cargo.toml");
        let error = PluginCrate::from_metadata(manifest, None, &value).unwrap_err();
        assert!(error.to_string().contains("several packages (a, b); name the plugin crate with --package"));
        let error = PluginCrate::from_metadata(manifest, Some("b"), &value).unwrap_err();
        assert!(error.to_string().contains("`b` in /w/Cargo.toml has no library target"), "{error}");
        let error = PluginCrate::from_metadata(manifest, Some("c"), &value).unwrap_err();
        assert!(error.to_string().contains("does not exist"), "{error}");
        assert_eq!(PluginCrate::from_metadata(manifest, Some("a"), &value).unwrap().package, "a");
        // A member's own manifest picks that member.
        let member = Path::new("/w/b/Cargo.toml");
        let error = PluginCrate::from_metadata(member, None, &value).unwrap_err();
        assert!(error.to_string().contains("`b` in /w/b/Cargo.toml has no library target"), "{error}");
    }
}
