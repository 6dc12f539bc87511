//! The plugin crate, as `cargo metadata` describes it.

use std::path::{Path, PathBuf};

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

/// What the choice of a package needs from one package of `cargo
/// metadata`'s answer.
#[derive(Clone, Debug)]
struct Candidate {
    name: String,
    manifest_path: PathBuf,
    /// The name of its library target (`lib`, `rlib`, `cdylib`, ...).
    lib: Option<String>,
}

impl PluginCrate {
    /// Asks `cargo metadata --no-deps` (through the `cargo_metadata`
    /// crate) about `manifest`, picking `package`, else the package whose
    /// manifest `manifest` is (a workspace member's), else the one package
    /// there is.
    ///
    /// # Errors
    /// [`BuildError::Metadata`] when cargo cannot answer;
    /// [`BuildError::AmbiguousPackage`] for a workspace of several packages
    /// and no `package`; [`BuildError::NoLibrary`] when the package is not
    /// there or has no library.
    pub fn locate(manifest: &Path, package: Option<&str>) -> Result<Self, BuildError> {
        let mut command = cargo_metadata::MetadataCommand::new();
        if let Some(cargo) = std::env::var_os("CARGO") {
            command.cargo_path(cargo);
        }
        let metadata = command.manifest_path(manifest).no_deps().exec().map_err(|error| {
            BuildError::Metadata { manifest: manifest.to_path_buf(), detail: error.to_string() }
        })?;
        let candidates: Vec<Candidate> = metadata
            .packages
            .iter()
            .map(|entry| Candidate {
                name: entry.name.to_string(),
                manifest_path: entry.manifest_path.clone().into_std_path_buf(),
                lib: entry
                    .targets
                    .iter()
                    .find(|target| {
                        target.kind.iter().any(|kind| {
                            use cargo_metadata::TargetKind::{CDyLib, DyLib, Lib, RLib, StaticLib};
                            matches!(kind, Lib | RLib | CDyLib | StaticLib | DyLib)
                        })
                    })
                    .map(|target| target.name.clone()),
            })
            .collect();
        Self::choose(manifest, package, &candidates, metadata.target_directory.into_std_path_buf())
    }

    /// [`PluginCrate::locate`]'s choice among `cargo metadata`'s packages.
    fn choose(
        manifest: &Path,
        package: Option<&str>,
        candidates: &[Candidate],
        target_dir: PathBuf,
    ) -> Result<Self, BuildError> {
        // A member's own manifest names that member (cargo metadata lists
        // the whole workspace for it).
        let canonical = |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let wanted_manifest = canonical(manifest);
        let own = candidates.iter().find(|entry| canonical(&entry.manifest_path) == wanted_manifest);
        let chosen = match (package, own) {
            (Some(wanted), _) => candidates.iter().find(|entry| entry.name == wanted),
            (None, Some(own)) => Some(own),
            (None, None) if candidates.len() == 1 => candidates.first(),
            (None, None) => {
                return Err(BuildError::AmbiguousPackage {
                    manifest: manifest.to_path_buf(),
                    packages: candidates.iter().map(|entry| entry.name.clone()).collect(),
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
        let Some(lib) = &chosen.lib else {
            return Err(no_library(chosen.name.clone(), "has no library target"));
        };
        Ok(Self {
            package: chosen.name.clone(),
            manifest_path: chosen.manifest_path.clone(),
            lib_name: lib.replace('-', "_"),
            target_dir,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package(name: &str, library: bool) -> Candidate {
        Candidate {
            name: name.to_owned(),
            manifest_path: PathBuf::from(format!("/w/{name}/Cargo.toml")),
            lib: library.then(|| name.to_owned()),
        }
    }

    #[test]
    fn the_one_package_with_a_library_is_chosen() {
        let krate =
            PluginCrate::choose(Path::new("/w/Cargo.toml"), None, &[package("my-plugin", true)], "/t".into())
                .unwrap();
        assert_eq!(krate.lib_name, "my_plugin");
        assert_eq!(krate.target_dir, Path::new("/t"));
        assert_eq!(krate.manifest_path, Path::new("/w/my-plugin/Cargo.toml"));
    }

    #[test]
    fn workspaces_and_binaries_are_refused_with_what_to_do() {
        let packages = [package("a", true), package("b", false)];
        let choose = |manifest: &str, wanted: Option<&str>| {
            PluginCrate::choose(Path::new(manifest), wanted, &packages, "/t".into())
        };
        let error = choose("/w/Cargo.toml", None).unwrap_err();
        assert!(error.to_string().contains("several packages (a, b); name the plugin crate with --package"));
        let error = choose("/w/Cargo.toml", Some("b")).unwrap_err();
        assert!(error.to_string().contains("`b` in /w/Cargo.toml has no library target"), "{error}");
        let error = choose("/w/Cargo.toml", Some("c")).unwrap_err();
        assert!(error.to_string().contains("does not exist"), "{error}");
        assert_eq!(choose("/w/Cargo.toml", Some("a")).unwrap().package, "a");
        // A member's own manifest picks that member.
        let error = choose("/w/b/Cargo.toml", None).unwrap_err();
        assert!(error.to_string().contains("`b` in /w/b/Cargo.toml has no library target"), "{error}");
    }

    #[test]
    fn this_workspace_s_plugin_crate_is_located() {
        let manifest =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins/sample_standalone/Cargo.toml");
        let krate = PluginCrate::locate(&manifest, None).unwrap();
        assert_eq!(krate.package, "sample_standalone");
        assert_eq!(krate.lib_name, "sample_standalone");
        assert!(krate.target_dir.ends_with("target"), "{}", krate.target_dir.display());
    }
}
