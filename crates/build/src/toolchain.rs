//! The Rust toolchain a `.sos` is built with: rustc's host and sysroot,
//! the `rust-lld` it ships, and which record targets are installed.

use std::path::PathBuf;
use std::process::Command;

use crate::{BuildError, RECORD_TARGETS, SkippedRecord};

/// The toolchain `rustc` (or `$RUSTC`) belongs to.
#[derive(Clone, Debug)]
pub struct Toolchain {
    /// rustc's host triple.
    pub host: String,
    /// rustc's sysroot.
    pub sysroot: PathBuf,
    /// The `rust-lld` of the sysroot.
    pub linker: PathBuf,
}

impl Toolchain {
    /// Asks rustc (`$RUSTC`, else `rustc`) for its host and sysroot.
    ///
    /// # Errors
    /// [`BuildError::Tool`] or [`BuildError::Failed`] when rustc cannot
    /// answer.
    pub fn detect() -> Result<Self, BuildError> {
        let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
        let ask = |args: &[&str]| -> Result<String, BuildError> {
            let mut command = Command::new(&rustc);
            command.args(args);
            let line = format!("{command:?}");
            let output =
                command.output().map_err(|source| BuildError::Tool { command: line.clone(), source })?;
            if !output.status.success() {
                return Err(BuildError::Failed {
                    step: "rustc",
                    command: line,
                    stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
                    hint: None,
                });
            }
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        };
        let version = ask(&["-vV"])?;
        let host = version
            .lines()
            .find_map(|line| line.strip_prefix("host: "))
            .ok_or_else(|| BuildError::Failed {
                step: "rustc",
                command: format!("{rustc} -vV"),
                stderr: format!("no `host:` line in:\n{version}"),
                hint: None,
            })?
            .trim()
            .to_owned();
        let sysroot = PathBuf::from(ask(&["--print", "sysroot"])?.trim());
        let linker = sysroot.join("lib").join("rustlib").join(&host).join("bin").join("rust-lld");
        Ok(Self { host, sysroot, linker })
    }

    /// The record target of the host's architecture, if it has one.
    #[must_use]
    pub fn host_record_target(&self) -> Option<&'static str> {
        let arch = self.host.split('-').next().unwrap_or_default();
        RECORD_TARGETS.into_iter().find(|target| target.split('-').next() == Some(arch))
    }

    /// True when the target's standard library is installed.
    #[must_use]
    pub fn has_target(&self, target: &str) -> bool {
        self.sysroot.join("lib").join("rustlib").join(target).join("lib").is_dir()
    }

    /// The record targets to build, host first (loaders take the first
    /// match), and those skipped with why.
    ///
    /// # Errors
    /// [`BuildError::UnsupportedHost`] when the host has no record target,
    /// [`BuildError::HostTargetMissing`] when its target is not installed.
    pub fn record_targets(&self) -> Result<(Vec<&'static str>, Vec<SkippedRecord>), BuildError> {
        let host_target = self
            .host_record_target()
            .ok_or_else(|| BuildError::UnsupportedHost { host: self.host.clone() })?;
        if !self.has_target(host_target) {
            return Err(BuildError::HostTargetMissing {
                target: host_target.to_owned(),
                sysroot: self.sysroot.clone(),
            });
        }
        let mut targets = vec![host_target];
        let mut skipped = Vec::new();
        for target in RECORD_TARGETS.into_iter().filter(|target| *target != host_target) {
            if self.has_target(target) {
                targets.push(target);
            } else {
                skipped.push(SkippedRecord {
                    target: target.to_owned(),
                    reason: format!("rustup target not installed (`rustup target add {target}`)"),
                });
            }
        }
        Ok((targets, skipped))
    }
}
