//! Where the CLI vouches for the plugins the user named.
//!
//! Loading a plugin runs foreign code, so every loader in `xplug-providers`
//! and `xplug-manager` is an `unsafe fn`. For a command-line tool, trusting
//! the plugin is the point: the user typed its path (or linked it into this
//! binary), exactly as they would pass `--executable_plugin=` to IREE. Each
//! function below is one such load, with the same argument.

use std::path::Path;

use xplug_manager::spec::PluginSpec;
use xplug_manager::{Manager, Registered};

use crate::error::CliError;
use xplug_providers::embedded_elf::ElfImage;
use xplug_providers::raw::{RawLibrary, RawQuery};
use xplug_providers::{LoadParamList, Plugin};

/// Loads the embedded-ELF plugin whose bytes were read from `name`.
pub(crate) fn load_embedded_image(
    name: &str,
    bytes: &[u8],
    params: &LoadParamList,
) -> Result<Plugin, xplug_providers::Error> {
    // SAFETY: the user named this file on the command line as a v0 plugin
    // to load into this process (as they would pass it to IREE); the CLI
    // holds no state a misbehaving plugin could corrupt beyond what the user
    // chose to run. xplug's loader validates it completely before mapping.
    unsafe { Plugin::load_embedded_elf_image(name, bytes, params) }
}

/// The query function of a mapped embedded-ELF plugin, as a raw step.
pub(crate) fn embedded_query(image: &ElfImage) -> RawQuery<'_> {
    // SAFETY: as in `load_embedded_image`: the user named this file as a
    // plugin to examine; xplug's loader validated and mapped it.
    unsafe { RawQuery::from_elf_image(image) }
}

/// Opens the shared-library plugin at `path` for raw inspection and checks.
pub(crate) fn open_raw_library(path: &Path) -> Result<RawLibrary, xplug_providers::Error> {
    // SAFETY: as in `load_embedded_image`: the user named this file as a v0
    // plugin to examine in this process.
    unsafe { RawLibrary::open(path) }
}

/// Loads the plugin `spec` names into `manager`; returns the manager's
/// handle for it, or the manager's error (which names the spec).
pub(crate) fn load_spec(manager: &Manager, spec: &str) -> Result<Registered, CliError> {
    // SAFETY: as in `load_embedded_image`: the spec came from the command line
    // (or names a plugin this project built) and the user chose to load it.
    unsafe { manager.load_spec(spec) }.map_err(|source| CliError::Plugin { source })
}

/// Loads the plugin a parsed `spec` names, unregistered, so its lists can
/// be read before it is handed to a manager.
pub(crate) fn load_parsed_spec(spec: &PluginSpec) -> Result<Plugin, CliError> {
    // SAFETY: as in `load_spec`.
    unsafe { spec.load() }.map_err(|source| CliError::Plugin { source })
}
