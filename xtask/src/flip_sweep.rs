//! `cargo xtask flip-sweep`: every byte of a compiled module set to one
//! value in turn, each copy run by `xplug run` and IREE's `iree-run-module`
//! with the same flags; any offset where `xplug run` dies by a signal, or
//! where its supervised program faults or hangs and IREE's tool exits
//! normally, fails the command. The table counts signal deaths (must be
//! 0) and faults reported as errors apart. The sweep itself is
//! [`xplug_fixtures::flip_sweep`], shared with the strided CI test
//! (`crates/cli/tests/flip_sweep.rs`); this module builds what it needs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use xplug_fixtures::PluginBuildError;
use xplug_fixtures::flip_sweep::{self, Config, SweepError, SweepReport};
use xplug_fixtures::iree_e2e::{self, E2eError, MUL_CALL};
use xplug_fixtures::plugins::PluginProfile;

/// What `flip-sweep` is asked to do.
#[derive(Clone, Debug)]
pub struct Options {
    /// A compiled module to sweep instead of `tests/iree/mul_call.mlir`
    /// (its function must take the two 4-element `f32` inputs).
    pub module: Option<PathBuf>,
    /// The function called.
    pub function: String,
    /// The value each byte is set to.
    pub value: u8,
    /// Every `stride`-th offset.
    pub stride: usize,
    /// The first offset.
    pub first: usize,
    /// Offsets run at once.
    pub jobs: usize,
    /// Seconds one tool may run on one copy.
    pub timeout: Duration,
    /// Optimised `xplug` and plugin instead of debug builds.
    pub release: bool,
}

/// What stops the sweep before it has a report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FlipSweepError {
    /// IREE's tools, the plugin or the program could not be prepared.
    #[error("cannot prepare IREE's tools, the plugin or the module")]
    Prepare {
        /// The cause.
        #[source]
        source: E2eError,
    },
    /// `xplug` did not build.
    #[error("cannot build xplug")]
    Build {
        /// The cause.
        #[source]
        source: PluginBuildError,
    },
    /// The sweep could not run.
    #[error("the sweep failed")]
    Sweep {
        /// The cause.
        #[source]
        source: SweepError,
    },
}

/// Parses a byte value: decimal or `0x`-prefixed hexadecimal.
///
/// # Errors
/// A message naming the text when it is not a byte.
pub fn parse_byte(text: &str) -> Result<u8, String> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u8::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|_| format!("`{text}` is not a byte value (0-255, or 0x00-0xff)"))
}

/// Builds `xplug` and the plugin, compiles the module, and sweeps it,
/// printing progress on stderr.
///
/// # Errors
/// When something cannot be built or run; findings are in the report.
pub fn run(root: &Path, options: &Options) -> Result<SweepReport, FlipSweepError> {
    let profile = PluginProfile::from_release_flag(options.release);
    let prepared = iree_e2e::prepare(root, profile).map_err(|source| FlipSweepError::Prepare { source })?;
    let xplug = build_xplug(root, options.release).map_err(|source| FlipSweepError::Build { source })?;
    let module = match &options.module {
        Some(module) => module.clone(),
        None => flip_sweep::compile_module(root, &prepared, MUL_CALL)
            .map_err(|source| FlipSweepError::Prepare { source })?,
    };
    let config = Config {
        flags: Config::mul_flags(&options.function, prepared.library("sample_system")),
        module,
        xplug,
        iree_run_module: flip_sweep::native_iree_run_module(&prepared.tools),
        value: options.value,
        stride: options.stride,
        first: options.first,
        jobs: options.jobs,
        timeout: options.timeout,
        iree_reruns: 5,
        layout_rerun: true,
        iree_memcheck: xplug_fixtures::valgrind::available(),
        reference_build: Some(
            flip_sweep::runtime_build_dir(root, profile)
                .map_err(|source| FlipSweepError::Sweep { source })?,
        ),
        work: prepared.work.join("flip-sweep"),
    };
    eprintln!(
        "flip-sweep: {} with every {} byte(s) from offset {} set to {:#04x}, {} jobs; flags: {}",
        config.module.display(),
        config.stride,
        config.first,
        config.value,
        config.jobs,
        config.flags.join(" ")
    );
    let step = 250;
    flip_sweep::sweep(&config, |progress| {
        if progress.last.is_candidate() {
            eprintln!(
                "flip-sweep: {}: offset {}: iree-run-module {} (reruns {:?}), xplug run {}",
                progress.last.verdict(),
                progress.last.offset,
                progress.last.iree.end,
                progress.last.iree_reruns,
                progress.last.xplug.end
            );
        }
        if progress.done % step == 0 || progress.done == progress.total {
            eprintln!("flip-sweep: [{}/{}] {} finding(s)", progress.done, progress.total, progress.findings);
        }
    })
    .map_err(|source| FlipSweepError::Sweep { source })
}

/// Builds the `xplug` binary and returns its path.
fn build_xplug(root: &Path, release: bool) -> Result<PathBuf, PluginBuildError> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command.current_dir(root).args(["build", "--quiet", "-p", "xplug-cli", "--bin", "xplug"]);
    if release {
        command.arg("--release");
    }
    xplug_fixtures::command::status(&mut command).map_err(|source| PluginBuildError::Command { source })?;
    Ok(xplug_fixtures::target_dir(root).join(if release { "release" } else { "debug" }).join("xplug"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_values_parse_in_decimal_and_hex() {
        assert_eq!(parse_byte("0xff"), Ok(0xff));
        assert_eq!(parse_byte("0X0a"), Ok(10));
        assert_eq!(parse_byte("7"), Ok(7));
        assert!(parse_byte("256").unwrap_err().contains("`256`"));
        assert!(parse_byte("0xfff").is_err());
    }
}
