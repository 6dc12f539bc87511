//! The Rust toolchain a `.sos` is built with: rustc's host and sysroot,
//! the `rust-lld` it ships, and which record targets are installed, for
//! it or for the distribution's rustc ([`SYSTEM_RUSTC`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{BuildError, RECORD_TARGETS, SkippedRecord};

/// The distribution's rustc. Debian ships other architectures' standard
/// libraries as packages (`libstd-rust-web-dev:arm64` puts aarch64's
/// `core` in `/usr/lib/rustlib/aarch64-unknown-linux-gnu`), while rustup
/// cannot always add targets (offline, or a toolchain without them); a
/// record target missing from `$RUSTC`'s sysroot is built with this rustc
/// when its sysroot has the target. The records are separate ELF files,
/// so they may come from different compilers.
pub const SYSTEM_RUSTC: &str = "/usr/bin/rustc";

/// The toolchain `rustc` (or `$RUSTC`) belongs to.
#[derive(Clone, Debug)]
pub struct Toolchain {
    /// The rustc asked (`$RUSTC`, else `rustc`).
    pub rustc: PathBuf,
    /// rustc's host triple.
    pub host: String,
    /// rustc's sysroot.
    pub sysroot: PathBuf,
    /// The `rust-lld` of the sysroot: rustup's
    /// `lib/rustlib/<host>/bin/rust-lld`, else the distribution's
    /// `<sysroot>/bin/rust-lld` (Debian's is a link to `lld-<version>`,
    /// a package of its own).
    pub linker: PathBuf,
}

/// A record target to build and the rustc whose standard library has it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordTarget {
    /// The Rust target triple.
    pub target: &'static str,
    /// The rustc to build it with (`$RUSTC`'s, or [`SYSTEM_RUSTC`]).
    pub rustc: PathBuf,
}

impl Toolchain {
    /// Asks rustc (`$RUSTC`, else `rustc`) for its host and sysroot.
    ///
    /// # Errors
    /// [`BuildError::Step`] when rustc cannot answer,
    /// [`BuildError::ToolchainAnswer`] when its answer lacks the host.
    pub fn detect() -> Result<Self, BuildError> {
        let rustc = std::env::var_os("RUSTC").map_or_else(|| PathBuf::from("rustc"), PathBuf::from);
        Self::detect_with(&rustc)
    }

    /// Asks `rustc` for its host and sysroot.
    ///
    /// # Errors
    /// As [`Toolchain::detect`].
    pub fn detect_with(rustc: &Path) -> Result<Self, BuildError> {
        let ask = |args: &[&str]| -> Result<String, BuildError> {
            let mut command = Command::new(rustc);
            command.args(args);
            let output = crate::run("rustc", command)?;
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        };
        let version = ask(&["-vV"])?;
        let host = version
            .lines()
            .find_map(|line| line.strip_prefix("host: "))
            .ok_or_else(|| BuildError::ToolchainAnswer {
                command: format!("{} -vV", rustc.display()),
                expected: "host:",
                output: version.clone(),
            })?
            .trim()
            .to_owned();
        let sysroot = PathBuf::from(ask(&["--print", "sysroot"])?.trim());
        let rustup_lld = sysroot.join("lib").join("rustlib").join(&host).join("bin").join("rust-lld");
        let distribution_lld = sysroot.join("bin").join("rust-lld");
        // `exists` follows links: a Debian `rust-lld` whose `lld-*` package
        // is missing is passed over (and named by the failing command when
        // there is no other).
        let linker = [&rustup_lld, &distribution_lld]
            .into_iter()
            .find(|path| path.exists())
            .unwrap_or(if distribution_lld.is_symlink() { &distribution_lld } else { &rustup_lld })
            .clone();
        Ok(Self { rustc: rustc.to_path_buf(), host, sysroot, linker })
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
    /// match), each with the rustc that has its standard library (this
    /// toolchain's, else [`SYSTEM_RUSTC`]'s), and those skipped with why.
    ///
    /// # Errors
    /// [`BuildError::UnsupportedHost`] when the host has no record target,
    /// [`BuildError::HostTargetMissing`] when its target is not installed.
    pub fn record_targets(&self) -> Result<(Vec<RecordTarget>, Vec<SkippedRecord>), BuildError> {
        let host_target = self
            .host_record_target()
            .ok_or_else(|| BuildError::UnsupportedHost { host: self.host.clone() })?;
        if !self.has_target(host_target) {
            return Err(BuildError::HostTargetMissing {
                target: host_target.to_owned(),
                sysroot: self.sysroot.clone(),
            });
        }
        let mut targets = vec![RecordTarget { target: host_target, rustc: self.rustc.clone() }];
        let mut skipped = Vec::new();
        let system = std::cell::OnceCell::new();
        let system = || {
            system
                .get_or_init(|| {
                    Path::new(SYSTEM_RUSTC)
                        .is_file()
                        .then(|| Self::detect_with(Path::new(SYSTEM_RUSTC)).ok())
                        .flatten()
                        .filter(|system| system.sysroot != self.sysroot)
                })
                .clone()
        };
        for target in RECORD_TARGETS.into_iter().filter(|target| *target != host_target) {
            if self.has_target(target) {
                targets.push(RecordTarget { target, rustc: self.rustc.clone() });
            } else if let Some(system) = system().filter(|system| system.has_target(target)) {
                targets.push(RecordTarget { target, rustc: system.rustc });
            } else {
                skipped.push(SkippedRecord {
                    target: target.to_owned(),
                    reason: format!(
                        "no standard library for it in {} (`rustup target add {target}`) nor in {SYSTEM_RUSTC}'s",
                        self.sysroot.display()
                    ),
                });
            }
        }
        Ok((targets, skipped))
    }
}
