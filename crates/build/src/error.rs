//! The one error type of `xplug-build`.

use std::path::PathBuf;

use crate::command::CommandError;

/// Why a `.sos` could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A step (`cargo`, `link`, `rustc`) could not be started, or ran and
    /// failed. The message names the step and the fix for the usual
    /// mistakes, the source the command and how it ended; what the tool
    /// printed is in `stderr`, for the caller to show as it is (a tool's
    /// multi-line output, e.g. the linker's undefined symbols).
    #[error("the {step} step failed{}", .hint.map(|hint| format!("; hint: {hint}")).unwrap_or_default())]
    Step {
        /// `cargo`, `link` or `rustc`.
        step: &'static str,
        /// What to change, for the usual mistakes.
        hint: Option<&'static str>,
        /// What the tool printed on stderr (empty when it did not start).
        stderr: String,
        /// The command, and why it did not start or how it ended.
        #[source]
        source: CommandError,
    },
    /// rustc's answer about the toolchain lacks what xplug reads from it.
    #[error("`{command}` printed no `{expected}` line: {output}")]
    ToolchainAnswer {
        /// The command line.
        command: String,
        /// The line looked for.
        expected: &'static str,
        /// What it printed.
        output: String,
    },
    /// `cargo metadata` gave no usable answer for the manifest.
    #[error("cannot read the crate at {}: {detail}", manifest.display())]
    Metadata {
        /// The manifest asked about.
        manifest: PathBuf,
        /// What was wrong.
        detail: String,
    },
    /// The manifest is a workspace with several packages and none was named.
    #[error(
        "{} holds several packages ({}); name the plugin crate with --package",
        manifest.display(), packages.join(", ")
    )]
    AmbiguousPackage {
        /// The manifest.
        manifest: PathBuf,
        /// The workspace's packages.
        packages: Vec<String>,
    },
    /// The package asked for is not in the manifest's workspace, or has no
    /// library target.
    #[error(
        "package `{package}` in {} {problem}; a plugin crate has a `[lib]` (`xplug new --standalone` makes one)",
        manifest.display()
    )]
    NoLibrary {
        /// The manifest.
        manifest: PathBuf,
        /// The package.
        package: String,
        /// "does not exist" or "has no library target".
        problem: &'static str,
    },
    /// The host's architecture has no embedded-ELF record target.
    #[error(
        "no embedded-ELF target for host `{host}`: .sos files are built on x86_64, aarch64 and riscv64 hosts"
    )]
    UnsupportedHost {
        /// The rustc host triple.
        host: String,
    },
    /// The host's own record target is not installed (the `.sos` would not
    /// load here).
    #[error("the host's target `{target}` has no standard library in {}; run `rustup target add {target}`", sysroot.display())]
    HostTargetMissing {
        /// The target triple.
        target: String,
        /// The toolchain's sysroot.
        sysroot: PathBuf,
    },
    /// The records could not be joined into a FatELF container.
    #[error("cannot join the records of {}", path.display())]
    Join {
        /// The `.sos` being written.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<xplug_elf::EmbeddedElfError>,
    },
    /// IREE's embedded linker cannot take the object a linked build made
    /// (`xplug build --object`): each problem names the symbol or section
    /// and, where the object says, the function that reaches it.
    #[error(
        "{} cannot be linked into an IREE executable: {}; keep the kernels free of panics, globals and \
         thread-locals (docs/src/plugins/dispatch.md#linked-kernels)",
        object.display(),
        problems.join("; ")
    )]
    NotLinkable {
        /// The object.
        object: PathBuf,
        /// What is wrong, one line each.
        problems: Vec<String>,
    },
    /// A linked build made an object without kernels: the crate has no
    /// stateless `#[xplug_sdk::plugin]` import.
    #[error(
        "{} holds no linked kernel: the crate needs a `#[xplug_sdk::plugin]` module with stateless `#[import]` functions",
        object.display()
    )]
    NoLinkedKernels {
        /// The object.
        object: PathBuf,
    },
    /// A program could not be rewritten to link the kernels
    /// (`xplug build --program`).
    #[error("cannot link the kernels into {}: {reason}", program.display())]
    ProgramNotLinkable {
        /// The program (MLIR).
        program: PathBuf,
        /// What is wrong and what to do.
        reason: String,
    },
    /// An object file could not be read as one.
    #[error("cannot read {} as an object file", path.display())]
    Object {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: object::Error,
    },
    /// A file operation failed.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// What was being done (`read`, `write`, `create`, ...).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl BuildError {
    /// The failure of step `step` (`cargo`, `link`, `rustc`): a command
    /// that did not start gets the toolchain hint, one that failed the hint
    /// its stderr calls for, and its stderr moves to the step (printed
    /// once, as it is).
    pub(crate) fn step(step: &'static str, source: CommandError) -> Self {
        match source {
            CommandError::Failed { command, status, stderr } => Self::Step {
                step,
                hint: hint(step, &stderr),
                stderr,
                source: CommandError::Failed { command, status, stderr: String::new() },
            },
            source => Self::Step {
                step,
                hint: None,
                stderr: String::new(),
                source: source.with_hint("is the Rust toolchain (rustup) installed and on PATH?"),
            },
        }
    }
}

/// What to change for the usual failures of `step`, from its output.
pub(crate) fn hint(step: &str, stderr: &str) -> Option<&'static str> {
    if step == "link" && (stderr.contains("_Unwind_Resume") || stderr.contains("rust_eh_personality")) {
        return Some(
            "the plugin links unwinding code of the precompiled standard library (a non-generic `alloc` \
             function with cleanup, such as `String::from_utf8_lossy`, `format!` or `to_string`); a `.sos` \
             has no unwinder: keep such calls off the plugin's code paths (xplug-sdk's own load path uses \
             none), e.g. format into a fixed buffer with `core::fmt::Write`",
        );
    }
    if step == "link"
        && ["memcpy", "memset", "memmove", "memcmp", "bcmp", "strlen"]
            .iter()
            .any(|name| stderr.contains(&format!("undefined symbol: {name}")))
    {
        return Some(
            "the C memory functions are missing: the crate's `sos` feature must turn on `xplug-sdk/standalone`",
        );
    }
    if step == "cargo"
        && (stderr.contains("does not have the feature `sos`")
            || stderr.contains("does not contain this feature: sos"))
    {
        return Some(
            "declare `[features] sos = [\"xplug-sdk/standalone\"]` (and make the crate `no_std` without its \
             default `std` feature), as `xplug new --standalone` does",
        );
    }
    if step == "cargo" && (stderr.contains("duplicate lang item") || stderr.contains("`#[panic_handler]`")) {
        return Some(
            "the `.sos` build must not link `std`: with `--no-default-features --features sos` the crate and \
             every dependency must be `no_std` (`#![no_std]`, xplug-sdk with `default-features = false`)",
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_step_keeps_its_output_once_and_a_missing_tool_says_what_to_install() {
        let mut failing = std::process::Command::new("sh");
        failing.args(["-c", "echo 'rust-lld: error: undefined symbol: _Unwind_Resume' >&2; exit 1"]);
        let error = crate::run("link", failing).unwrap_err();
        let BuildError::Step { step, hint, stderr, source } = &error else { panic!("{error:?}") };
        assert_eq!((*step, stderr.trim_end()), ("link", "rust-lld: error: undefined symbol: _Unwind_Resume"));
        assert!(hint.is_some_and(|hint| hint.contains("unwinding")), "{hint:?}");
        let CommandError::Failed { status, stderr: in_source, .. } = source else { panic!("{source:?}") };
        assert_eq!(
            (status.code(), in_source.as_str()),
            (Some(1), ""),
            "the output is the step's, not repeated"
        );
        assert!(error.to_string().starts_with("the link step failed; hint: "), "{error}");

        let error = crate::run("cargo", std::process::Command::new("/nonexistent/cargo")).unwrap_err();
        let BuildError::Step { hint: None, stderr, source: source @ CommandError::Start { .. }, .. } = &error
        else {
            panic!("{error:?}")
        };
        assert!(stderr.is_empty());
        assert!(
            source.to_string().ends_with("is the Rust toolchain (rustup) installed and on PATH?"),
            "{source}"
        );
    }

    #[test]
    fn hints_name_the_fix() {
        let unwind = hint("link", "rust-lld: error: undefined symbol: _Unwind_Resume");
        assert!(unwind.unwrap().contains("String::from_utf8_lossy"));
        let memcpy = hint("link", "rust-lld: error: undefined symbol: memcpy\n>>> referenced by");
        assert!(memcpy.unwrap().contains("xplug-sdk/standalone"));
        assert!(hint("link", "anything else").is_none());
        let feature = hint("cargo", "error: Package `p v0.1.0` does not have the feature `sos`");
        assert!(feature.unwrap().contains("sos = [\"xplug-sdk/standalone\"]"));
        let feature = hint("cargo", "error: the package 'adder' does not contain this feature: sos");
        assert!(feature.unwrap().contains("sos = [\"xplug-sdk/standalone\"]"));
        assert!(hint("link", "error: the package 'adder' does not contain this feature: sos").is_none());
    }
}
