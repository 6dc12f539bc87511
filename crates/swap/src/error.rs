//! The error type of this crate.

/// Why a swap was refused. In every case nothing changed: the old version
/// keeps serving, and a new version that was loaded is unloaded again.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A swap was asked for from inside a call of a swappable import: it
    /// would wait for its own call to end.
    #[error(
        "cannot swap `{plugin}` from inside a swappable import's call (the swap waits for calls in \
         flight, this one included); swap from another thread"
    )]
    InsideImport {
        /// The plugin asked to be swapped.
        plugin: String,
    },
    /// The new version could not be loaded (a malformed spec, a loader
    /// error, a failed load check, the plugin's `load` refusing, or a
    /// shared library that cannot be pinned).
    #[error(
        "swap of `{plugin}` refused: the new version `{spec}` cannot be loaded; the old version keeps serving"
    )]
    LoadFailed {
        /// The plugin being swapped.
        plugin: String,
        /// The new version's spec.
        spec: String,
        /// Why it could not be loaded (for `xplug-manager`, its `Error`).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The new version is not a drop-in replacement (another plugin, a
    /// changed args layout).
    #[error(
        "swap of `{plugin}` refused: the new version `{spec}` is not a drop-in replacement: {reason}; the old version keeps serving"
    )]
    Incompatible {
        /// The plugin being swapped.
        plugin: String,
        /// The new version's spec.
        spec: String,
        /// What differs.
        reason: String,
    },
    /// The new version lacks imports that loaded executables use.
    #[error(
        "swap of `{plugin}` refused: the new version `{spec}` does not export {} import(s) in use: [{}]; \
         the old version keeps serving",
        missing.len(),
        missing.iter().map(|name| format!("`{name}`")).collect::<Vec<_>>().join(", ")
    )]
    MissingImports {
        /// The plugin being swapped.
        plugin: String,
        /// The new version's spec.
        spec: String,
        /// The bare names it lacks.
        missing: Vec<String>,
    },
}
