//! Where the CLI vouches for the plugins the user named.
//!
//! Loading a plugin runs foreign code, so every loader in `xplug-providers`
//! and `xplug-manager` is an `unsafe fn`. For a command-line tool, trusting
//! the plugin is the point: the user typed its path (or linked it into this
//! binary), exactly as they would pass `--executable_plugin=` to IREE. Each
//! function below is one such load, with the same argument.

use xplug_manager::spec::PluginSpec;
use xplug_manager::{Manager, Registered};
use xplug_providers::{Code, Plugin};

use crate::error::CliError;

/// Opens the code a spec names, with the loader that claimed it, checked
/// against the spec's pin and the `XPLUG_ALLOWED_PLUGINS` allow-list
/// ([`PluginSpec::open`]).
pub(crate) fn open_code(spec: &PluginSpec) -> Result<Code, xplug_providers::Error> {
    // SAFETY: the user named this plugin on the command line as a v0 plugin
    // to load into this process (as they would pass it to IREE); the CLI
    // holds no state a misbehaving plugin could corrupt beyond what the user
    // chose to run. xplug's embedded loader validates a `.sos` completely
    // before mapping it.
    unsafe { spec.open() }
}

/// Loads the plugin `spec` names into `manager`; returns the manager's
/// handle for it, or the manager's error (which names the spec).
pub(crate) fn load_spec(manager: &Manager, spec: &str) -> Result<Registered, CliError> {
    // SAFETY: as in `open_code`: the spec came from the command line
    // (or names a plugin this project built) and the user chose to load it.
    unsafe { manager.load_spec(spec) }.map_err(|source| CliError::Plugin { source })
}

/// Loads the plugin a parsed `spec` names, unregistered, so its lists can
/// be read before it is handed to a manager.
pub(crate) fn load_parsed_spec(spec: &PluginSpec) -> Result<Plugin, CliError> {
    // SAFETY: as in `load_spec`.
    unsafe { spec.load() }.map_err(|source| CliError::Plugin { source })
}
