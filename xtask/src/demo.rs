//! `cargo xtask demo`: build the example plugins, then run `xplug demo`.

use std::path::Path;
use std::process::Command;

use xplug_fixtures::plugins::{self, BuildError};

/// Builds the example plugins and `xplug` (both optimised unless `debug`),
/// then runs `xplug demo` with `extra` arguments; returns its exit status.
///
/// # Errors
/// When a build fails or cargo cannot be started.
pub fn run(root: &Path, debug: bool, extra: &[String]) -> Result<std::process::ExitStatus, BuildError> {
    let profile = plugins::PluginProfile::from_release_flag(!debug);
    eprintln!("building the example plugins into {} ...", plugins::output_dir(root, profile).display());
    plugins::build(root, profile)?;
    // cargo shows its own progress while it builds xplug.
    eprintln!("building and running xplug demo ...");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(&cargo);
    command.current_dir(root).args([
        "run",
        "-p",
        "xplug-cli",
        "--bin",
        "xplug",
        "--features",
        "sample-static",
    ]);
    if !debug {
        command.arg("--release");
    }
    command.arg("--").arg("demo").arg("--plugin-dir").arg(plugins::output_dir(root, profile)).args(extra);
    command.status().map_err(|error| BuildError::Cargo {
        command: format!("{cargo} run -p xplug-cli -- demo"),
        detail: error.to_string(),
    })
}
