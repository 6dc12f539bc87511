//! Where `xplug-iree`'s CMake build of IREE's runtime lives, named in one
//! place: one tree per configuration under
//! `target/<profile>/xplug-iree-runtime/`, and a record of the tree the
//! profile's last build linked, so a tool that builds IREE's own targets in
//! that tree (the byte-flip sweep's reference `iree-run-module`,
//! `xplug-fixtures`) finds it without scanning.

use std::path::{Path, PathBuf};

/// The directory of a profile (`target/<profile>`) that holds the trees.
pub const RUNTIME_TREES_DIR: &str = "xplug-iree-runtime";

/// The file, beside the trees, naming the tree last linked.
const LINKED_RECORD: &str = "linked.txt";

/// The build tree of one configuration of IREE's runtime (CMake and its
/// arguments, as one string): `<profile_dir>/xplug-iree-runtime/<hash>`,
/// with a hash that stays the same across Rust releases, so an unchanged
/// configuration reuses its tree.
///
/// ```
/// use std::path::Path;
///
/// let tree = xplug_iree_build::runtime_tree(Path::new("target/debug"), "cmake\n-S glue");
/// assert!(tree.starts_with("target/debug/xplug-iree-runtime"));
/// assert_eq!(tree, xplug_iree_build::runtime_tree(Path::new("target/debug"), "cmake\n-S glue"));
/// ```
#[must_use]
pub fn runtime_tree(profile_dir: &Path, configuration: &str) -> PathBuf {
    profile_dir.join(RUNTIME_TREES_DIR).join(format!("{:016x}", fnv1a(configuration.as_bytes())))
}

/// The build tree of IREE's host tools for a cross build (the generator
/// tools the runtime's build runs, built for the host with one
/// configuration, CMake and its arguments as one string):
/// `<profile_dir>/xplug-iree-runtime/host-tools/<hash>`, hashed as
/// [`runtime_tree`] hashes.
///
/// ```
/// use std::path::Path;
///
/// let tree = xplug_iree_build::host_tools_tree(Path::new("target/debug"), "cmake\n-S iree");
/// assert_eq!(tree.parent(), Some(Path::new("target/debug/xplug-iree-runtime/host-tools")));
/// ```
#[must_use]
pub fn host_tools_tree(profile_dir: &Path, configuration: &str) -> PathBuf {
    profile_dir
        .join(RUNTIME_TREES_DIR)
        .join("host-tools")
        .join(format!("{:016x}", fnv1a(configuration.as_bytes())))
}

/// Records `tree` (from [`runtime_tree`]) as the one the profile's build
/// links; `xplug-iree`'s build script calls it once the tree is built.
///
/// # Panics
/// When the record cannot be written (a build script stops there).
pub fn record_linked_tree(tree: &Path) {
    let record = tree.with_file_name(LINKED_RECORD);
    std::fs::write(&record, tree.as_os_str().as_encoded_bytes())
        .unwrap_or_else(|error| panic!("cannot write {}: {error}", record.display()));
}

/// The tree the last build of `xplug-iree` in `profile_dir` linked, when
/// one was recorded and still holds a CMake cache.
#[must_use]
pub fn linked_runtime_tree(profile_dir: &Path) -> Option<PathBuf> {
    let record = profile_dir.join(RUNTIME_TREES_DIR).join(LINKED_RECORD);
    let tree = PathBuf::from(std::fs::read_to_string(record).ok()?);
    tree.join("CMakeCache.txt").is_file().then_some(tree)
}

/// FNV-1a, 64 bits.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |hash, &byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_tree_is_found_once_it_has_a_cache() {
        let profile = tempfile::tempdir().unwrap();
        assert_eq!(linked_runtime_tree(profile.path()), None);
        let tree = runtime_tree(profile.path(), "configuration");
        std::fs::create_dir_all(&tree).unwrap();
        record_linked_tree(&tree);
        assert_eq!(linked_runtime_tree(profile.path()), None, "no CMake cache yet");
        std::fs::write(tree.join("CMakeCache.txt"), "").unwrap();
        assert_eq!(linked_runtime_tree(profile.path()), Some(tree));
        assert_ne!(runtime_tree(profile.path(), "other"), runtime_tree(profile.path(), "configuration"));
    }
}
