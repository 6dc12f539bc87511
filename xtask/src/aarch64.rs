//! `cargo xtask test-aarch64`: the tests of the crates that load plugins
//! without the system loader (abi, elf, SDK and macros, providers and
//! manager through static and embedded-ELF plugins, the example plugins and
//! the embedded-ELF tests), built for aarch64 with Debian's Rust toolchain
//! and run under `qemu-aarch64` on an x86_64 machine.
//!
//! 1. The Debian packages ([`PACKAGES`]) are checked first; when some are
//!    missing they are installed when running as root, else named with the
//!    command that installs them, before anything is built.
//! 2. `/usr/bin/cargo test --no-run` with `RUSTC=/usr/bin/rustc` (Debian's
//!    1.96 and its `libstd-rust-web-dev:arm64`; rustup cannot add targets
//!    here) for `aarch64-unknown-linux-gnu` into `target/aarch64`, so the
//!    host's build is not invalidated. The test binaries are linked
//!    statically (`+crt-static`): qemu-user 7.2 hangs on the first thread a
//!    dynamically linked aarch64 program starts, and libtest starts one per
//!    test. `-z separate-code` keeps read-only data out of the code
//!    segment, as on x86_64.
//! 3. [`HOST_FIRST`] runs natively: the x86_64 bits of the example `.sos`
//!    kernels, which its aarch64 run compares with.
//! 4. Every test binary runs under `qemu-aarch64` in its package's
//!    directory; the tests that cannot run there are skipped by name
//!    ([`SKIPPED`]) and listed with the reason, and the counts are printed.
//!
//! The tests' own builds (the example plugins, the `.sos` files through
//! `xplug-build`, C plugins) run the host's tools from the emulated
//! process: the kernel runs those x86_64 programs natively. `xplug-fixtures`
//! knows it was built for aarch64 on an x86_64 host (`TARGET`, `HOST`), so
//! it builds the plugins for aarch64 (C with `aarch64-linux-gnu-gcc`, Rust
//! with Debian's rustc and `--target`) and keeps everything it builds in
//! `target/aarch64-unknown-linux-gnu/` (`plugins/debug`, `plugin-build`,
//! `sos`, `sos-build`): the host's `target/plugins/` is never replaced.
//! Doctests are not cross-run (rustdoc builds them for the host).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cargo_metadata::{Message, TargetKind};
use xplug_fixtures::command::{self, CommandError};
use xplug_fixtures::linked::LinkedFormat;

/// The target the tests are built for.
pub const TARGET: &str = "aarch64-unknown-linux-gnu";

/// The Debian packages the run needs (arm64 foreign architecture for
/// the standard library).
pub const PACKAGES: [&str; 7] = [
    "rustc-web",
    "cargo-web",
    "libstd-rust-web-dev:arm64",
    "gcc-aarch64-linux-gnu",
    "libc6-dev-arm64-cross",
    "qemu-user",
    // Debian's `rust-lld` (which `xplug build --sos` links with when the
    // aarch64 record comes from Debian's rustc) links to `lld-22`, a
    // package it does not depend on.
    "lld-22",
];

/// Debian's Rust compiler and cargo (from `rustc-web`/`cargo-web`).
pub const DEBIAN_RUSTC: &str = "/usr/bin/rustc";
/// Debian's cargo.
pub const DEBIAN_CARGO: &str = "/usr/bin/cargo";

/// The packages whose tests run (`-p`).
pub const PACKAGES_TESTED: [&str; 13] = [
    "xplug-abi",
    "xplug-elf",
    "xplug-debug",
    "xplug-sdk",
    "xplug-sdk-macros",
    "xplug-providers",
    "xplug-swap",
    "xplug-manager",
    "sample_static",
    "sample_standalone",
    "xplug-iree-sample-args",
    "static_runtime",
    "xplug-tests",
];

/// Why tests loading system libraries are skipped.
const DLOPEN: &str = "loads system-library (.so) plugins with dlopen, which a static aarch64 test binary cannot \
                      use dependably (and qemu-user 7.2 hangs on threads of dynamically linked programs); \
                      x86_64 runs them";

/// Tests that do not run under qemu: (package, test target, test name or
/// `*` for the whole target, reason).
pub const SKIPPED: [(&str, &str, &str, &str); 23] = [
    ("xplug-providers", "dynamic_plugins", "*", DLOPEN),
    ("xplug-providers", "fault_matrix", "*", DLOPEN),
    ("xplug-providers", "load_cycles", "*", DLOPEN),
    ("xplug-providers", "open_checks", "*", DLOPEN),
    ("xplug-providers", "raw_layer", "*", DLOPEN),
    ("xplug-providers", "unload_policy", "*", DLOPEN),
    ("xplug-manager", "imports", "a_c_host_resolves_and_calls_through_the_provider_struct", DLOPEN),
    (
        "xplug-manager",
        "pinned",
        "a_pinned_load_after_other_plugins_were_loaded_and_dropped_gets_its_own_code",
        DLOPEN,
    ),
    (
        "xplug-tests",
        "cross_plugins",
        "*",
        "builds the example plugins for aarch64 and checks the host's (x86_64) ones: a host test, which \
         x86_64 runs",
    ),
    ("xplug-tests", "manager_plugins", "*", DLOPEN),
    ("xplug-tests", "manager_env", "*", DLOPEN),
    ("static_runtime", "providers", "sample_system_library_counts_and_frees_its_allocations", DLOPEN),
    ("static_runtime", "providers", "sample_system_rejects_a_bad_parameter", DLOPEN),
    ("static_runtime", "providers", "manager_scans_dynamic_plugins_newest_first", DLOPEN),
    ("static_runtime", "providers", "standalone_library_declares_standalone_and_saxpy_works", DLOPEN),
    (
        "static_runtime",
        "providers",
        "sdk_libraries_list_their_exports_and_the_manager_suggests_from_them",
        DLOPEN,
    ),
    (
        "static_runtime",
        "providers",
        "a_plugin_built_with_its_static_feature_is_diagnosed_with_the_fix",
        DLOPEN,
    ),
    (
        "static_runtime",
        "linking",
        "referenced_plugin_is_registered_and_callable",
        "runs the crate's aarch64 binaries as child processes: qemu-user emulates only the test binary \
         and, without binfmt_misc, the kernel cannot start an aarch64 child",
    ),
    (
        "static_runtime",
        "linking",
        "unreferenced_plugin_is_dropped_by_the_linker",
        "runs the crate's aarch64 binaries as child processes (see above)",
    ),
    (
        "xplug-sdk",
        "compile_fail",
        "*",
        "trybuild compiles its cases with the host's cargo: compile errors do not depend on the target \
         (x86_64 runs them)",
    ),
    (
        "xplug-tests",
        "debugging",
        "gdb_backtrace_names_the_kernel_of_a_crashing_sos",
        "re-runs the aarch64 test binary as a crashing child under gdb: the kernel cannot start an \
         aarch64 child without binfmt_misc, and gdb cannot debug a qemu-user guest",
    ),
    (
        "xplug-tests",
        "debugging",
        "the_crash_reporter_names_the_kernel_and_the_process_still_dies_of_the_signal",
        "re-runs the aarch64 test binary as a crashing child (see above)",
    ),
    (
        "xplug-manager",
        "swap",
        "every_test_here_is_memcheck_clean",
        "re-runs the aarch64 test binary under valgrind as a child: the kernel cannot start an aarch64 \
         child without binfmt_misc (x86_64 runs it)",
    ),
];

/// The test run natively first (package, target, name): it writes the
/// x86_64 bits of the example kernels that its aarch64 run compares with.
pub const HOST_FIRST: (&str, &str, &str) =
    ("xplug-tests", "embedded_elf", "simple_mul_computes_the_same_bits_on_x86_64_and_aarch64");

/// A test binary's run must end within this (bounds a hang; the slowest
/// takes about a minute under emulation).
pub const RUN_TIMEOUT: Duration = Duration::from_secs(900);

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Aarch64Error {
    /// The Debian packages are missing and cannot be installed here.
    #[error("the aarch64 toolchain and qemu are not installed")]
    Packages {
        /// What is missing, with the command that installs it.
        #[source]
        source: xplug_fixtures::packages::PackagesError,
    },
    /// A tool could not be started, or ran and failed.
    #[error("an aarch64 step failed")]
    Command {
        /// Which, and how.
        #[source]
        source: CommandError,
    },
    /// cargo's JSON messages could not be read.
    #[error("cannot read cargo's message `{line}`")]
    Message {
        /// The line.
        line: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// `cargo metadata` gave no answer for the workspace.
    #[error("cannot list the workspace's packages (`cargo metadata`)")]
    Metadata {
        /// Why.
        #[source]
        source: cargo_metadata::Error,
    },
    /// A preparation step of `--xplug-run` failed (plugins, IREE's tools,
    /// compiling a program).
    #[error("cannot {step}: {detail}")]
    Prepare {
        /// What was being done.
        step: &'static str,
        /// Why (the fixture's error, with its causes).
        detail: String,
    },
    /// A test binary ran longer than [`RUN_TIMEOUT`].
    #[error("{} ran longer than {} s under qemu-aarch64 and was killed", binary.display(), RUN_TIMEOUT.as_secs())]
    Timeout {
        /// The test binary.
        binary: PathBuf,
    },
}

/// One test binary's outcome.
#[derive(Clone, Debug)]
pub struct BinaryRun {
    /// Its package.
    pub package: String,
    /// Its test target (`lib` for unit tests).
    pub target: String,
    /// Whether it ran under qemu (aarch64) or natively (a proc-macro
    /// crate's unit tests are built for the host).
    pub emulated: bool,
    /// Tests passed, failed, ignored (libtest's counts).
    pub passed: usize,
    /// Tests failed.
    pub failed: usize,
    /// Tests ignored.
    pub ignored: usize,
    /// Tests skipped by name ([`SKIPPED`]).
    pub skipped: usize,
    /// Wall time of the run.
    pub seconds: f64,
    /// What it printed, for a failed run.
    pub output: String,
}

/// The whole run.
#[derive(Clone, Debug)]
pub struct Aarch64Report {
    /// Seconds spent building.
    pub build_seconds: f64,
    /// Every binary run.
    pub runs: Vec<BinaryRun>,
    /// Whole test targets not run, with the reason.
    pub skipped_targets: Vec<(String, String, &'static str)>,
}

impl Aarch64Report {
    /// True when no test failed.
    #[must_use]
    pub fn passed(&self) -> bool {
        self.runs.iter().all(|run| run.failed == 0)
    }

    /// The summary printed at the end: a line per binary, the totals and
    /// every skip with its reason.
    #[must_use]
    pub fn table(&self) -> String {
        let mut out = String::new();
        for run in &self.runs {
            out.push_str(&format!(
                "{:<24} {:<28} {:>4} passed {:>2} failed {:>2} ignored {:>2} skipped {:>6.1} s{}\n",
                run.package,
                run.target,
                run.passed,
                run.failed,
                run.ignored,
                run.skipped,
                run.seconds,
                if run.emulated { "" } else { " (host: proc macro)" }
            ));
        }
        let sum = |field: fn(&BinaryRun) -> usize| self.runs.iter().map(field).sum::<usize>();
        let seconds: f64 = self.runs.iter().map(|run| run.seconds).sum();
        out.push_str(&format!(
            "\naarch64 under qemu: {} passed, {} failed, {} ignored in {} test binaries; {} tests and {} test \
             targets skipped by name; build {:.0} s, runs {:.0} s\n",
            sum(|run| run.passed),
            sum(|run| run.failed),
            sum(|run| run.ignored),
            self.runs.len(),
            sum(|run| run.skipped),
            self.skipped_targets.len(),
            self.build_seconds,
            seconds
        ));
        out.push_str("skipped:\n");
        for (package, target, reason) in &self.skipped_targets {
            out.push_str(&format!("  {package} --test {target} (all): {reason}\n"));
        }
        for (package, target, test, reason) in SKIPPED.iter().filter(|(_, _, test, _)| *test != "*") {
            out.push_str(&format!("  {package} --test {target} {test}: {reason}\n"));
        }
        out
    }
}

/// Installs the Debian `packages` (arm64 ones added as a foreign
/// architecture) when running as root; names them otherwise
/// ([`xplug_fixtures::packages::ensure`]).
///
/// # Errors
/// [`Aarch64Error::Packages`].
pub fn ensure_packages(packages: &[&str]) -> Result<(), Aarch64Error> {
    xplug_fixtures::packages::ensure(packages, Some("arm64"))
        .map_err(|source| Aarch64Error::Packages { source })
}

fn run(mut command: Command) -> Result<(), Aarch64Error> {
    command::status(&mut command).map_err(|source| Aarch64Error::Command { source })
}

/// An [`Aarch64Error::Command`] for `command`, which could not start.
fn start_error(command: &Command) -> impl FnOnce(std::io::Error) -> Aarch64Error {
    move |source| Aarch64Error::Command { source: CommandError::start(command, source) }
}

/// One test executable cargo built.
#[derive(Clone, Debug)]
struct TestBinary {
    package: String,
    target: String,
    executable: PathBuf,
    manifest_dir: PathBuf,
}

/// The rustflags of the aarch64 test build (see the module documentation).
pub const RUSTFLAGS: &str = "-C target-feature=+crt-static -C link-arg=-Wl,-z,separate-code";

/// `/usr/bin/cargo` with Debian's rustc, the aarch64 linker and
/// [`RUSTFLAGS`], without what rustup's proxies set.
fn debian_cargo(root: &Path) -> Command {
    let mut command = Command::new(DEBIAN_CARGO);
    command
        .current_dir(root)
        .env("RUSTC", DEBIAN_RUSTC)
        .env("CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER", "aarch64-linux-gnu-gcc")
        .env("CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUSTFLAGS", RUSTFLAGS)
        // rustup's proxies set these for the toolchain xtask runs under.
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("RUSTDOC");
    command
}

/// Builds the test binaries; returns them.
fn build(root: &Path) -> Result<Vec<TestBinary>, Aarch64Error> {
    let mut command = debian_cargo(root);
    command
        .args(["test", "--no-run", "--locked", "--message-format=json-render-diagnostics"])
        .args(["--target", TARGET, "--target-dir"])
        .arg(root.join("target").join("aarch64"))
        .args(["--lib", "--bins", "--tests"]);
    for package in PACKAGES_TESTED {
        command.args(["-p", package]);
    }
    command.stdout(Stdio::piped());
    let line = format!("{command:?}");
    eprintln!("$ {line}");
    let output = command.output().map_err(start_error(&command))?;
    let messages = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| {
            serde_json::from_str::<Message>(line)
                .map_err(|source| Aarch64Error::Message { line: line.to_owned(), source })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if !output.status.success() {
        // The compiler's diagnostics are in the JSON messages on stdout.
        for message in &messages {
            if let Message::CompilerMessage(message) = message
                && let Some(rendered) = &message.message.rendered
            {
                eprint!("{rendered}");
            }
        }
        let source = CommandError::Failed { command: line, status: output.status, stderr: String::new() };
        return Err(Aarch64Error::Command { source });
    }
    let packages = workspace_packages(root)?;
    let mut binaries = Vec::new();
    for message in messages {
        let Message::CompilerArtifact(artifact) = message else { continue };
        let Some(executable) = artifact.executable.filter(|_| artifact.profile.test) else { continue };
        let kinds = &artifact.target.kind;
        let target = if kinds.contains(&TargetKind::Test) {
            artifact.target.name.clone()
        } else if kinds.contains(&TargetKind::Bin) {
            format!("bin {}", artifact.target.name)
        } else {
            "lib".to_owned()
        };
        let package = packages
            .iter()
            .find(|package| package.id == artifact.package_id)
            .map_or_else(|| artifact.package_id.repr.clone(), |package| package.name.to_string());
        binaries.push(TestBinary {
            package,
            target,
            executable: executable.into_std_path_buf(),
            manifest_dir: artifact
                .manifest_path
                .parent()
                .map(|dir| dir.as_std_path().to_path_buf())
                .unwrap_or_default(),
        });
    }
    Ok(binaries)
}

/// The workspace's packages (`cargo metadata --no-deps`), which name the
/// packages of the test binaries.
fn workspace_packages(root: &Path) -> Result<Vec<cargo_metadata::Package>, Aarch64Error> {
    let metadata = cargo_metadata::MetadataCommand::new()
        .current_dir(root)
        .no_deps()
        .exec()
        .map_err(|source| Aarch64Error::Metadata { source })?;
    Ok(metadata.packages)
}

/// Whether the ELF file at `path` is an aarch64 one.
fn is_aarch64(path: &Path) -> bool {
    let mut header = [0u8; 20];
    std::fs::File::open(path)
        .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut header))
        .is_ok_and(|()| header[18..20] == 183u16.to_le_bytes())
}

/// Parses libtest's `test result:` line.
fn counts(output: &str) -> Option<(usize, usize, usize)> {
    let line = output.lines().find(|line| line.starts_with("test result:"))?;
    let number = |word: &str| {
        line.split(';')
            .find(|part| part.trim_end().ends_with(word))
            .and_then(|part| part.split_whitespace().rev().nth(1))
            .and_then(|n| n.parse().ok())
    };
    Some((number("passed")?, number("failed")?, number("ignored")?))
}

/// Runs one binary with its skips, bounded by [`RUN_TIMEOUT`].
fn run_binary(binary: &TestBinary, skips: &[&str]) -> Result<BinaryRun, Aarch64Error> {
    let emulated = is_aarch64(&binary.executable);
    let mut command = if emulated {
        let mut command = Command::new("qemu-aarch64");
        command.arg(&binary.executable);
        command
    } else {
        Command::new(&binary.executable)
    };
    if !skips.is_empty() {
        command.arg("--exact");
        for skip in skips {
            command.args(["--skip", skip]);
        }
    }
    command
        .current_dir(&binary.manifest_dir)
        .env("CARGO_MANIFEST_DIR", &binary.manifest_dir)
        .env_remove("RUSTC")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = command.spawn().map_err(start_error(&command))?;
    // Read both pipes on threads so a chatty test cannot block on a full
    // pipe while this side waits.
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).map(|_| text).unwrap_or_default()
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut text).map(|_| text).unwrap_or_default()
    });
    let status = loop {
        if let Some(status) = child.try_wait().map_err(start_error(&command))? {
            break status;
        }
        if started.elapsed() > RUN_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Aarch64Error::Timeout { binary: binary.executable.clone() });
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let seconds = started.elapsed().as_secs_f64();
    let output = format!("{}{}", out.join().unwrap_or_default(), err.join().unwrap_or_default());
    let (passed, failed, ignored) = counts(&output).unwrap_or((0, usize::from(!status.success()), 0));
    // A crash after the summary (or without one) is a failure too.
    let failed = if status.success() { failed } else { failed.max(1) };
    Ok(BinaryRun {
        package: binary.package.clone(),
        target: binary.target.clone(),
        emulated,
        passed,
        failed,
        ignored,
        skipped: skips.len(),
        seconds,
        output,
    })
}

/// `cargo xtask test-aarch64` (see the module documentation); `progress`
/// sees each binary's run as it ends.
///
/// # Errors
/// Missing packages (not root), a failing build, a binary that cannot be
/// started or runs past [`RUN_TIMEOUT`]. Failing tests are in the report.
pub fn run_all(root: &Path, mut progress: impl FnMut(&BinaryRun)) -> Result<Aarch64Report, Aarch64Error> {
    ensure_packages(&PACKAGES)?;
    // The x86_64 results the aarch64 run compares its kernels' bits with.
    let mut host = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    host.current_dir(root).args([
        "test",
        "--locked",
        "-p",
        HOST_FIRST.0,
        "--test",
        HOST_FIRST.1,
        "--",
        "--exact",
        HOST_FIRST.2,
    ]);
    eprintln!("$ {host:?}");
    run(host)?;
    let started = Instant::now();
    let binaries = build(root)?;
    let build_seconds = started.elapsed().as_secs_f64();
    let mut runs = Vec::new();
    let mut skipped_targets = Vec::new();
    for binary in &binaries {
        let skips: Vec<(&str, &'static str)> = SKIPPED
            .iter()
            .filter(|(package, target, _, _)| *package == binary.package && *target == binary.target)
            .map(|(_, _, test, reason)| (*test, *reason))
            .collect();
        if let Some((_, reason)) = skips.iter().find(|(test, _)| *test == "*") {
            skipped_targets.push((binary.package.clone(), binary.target.clone(), *reason));
            continue;
        }
        let names: Vec<&str> = skips.iter().map(|(test, _)| *test).collect();
        let run = run_binary(binary, &names)?;
        progress(&run);
        runs.push(run);
    }
    Ok(Aarch64Report { build_seconds, runs, skipped_targets })
}

/// The C++ cross compiler IREE's runtime build needs beside [`PACKAGES`]
/// (`--xplug-run`).
pub const IREE_PACKAGES: [&str; 1] = ["g++-aarch64-linux-gnu"];

/// The programs and plugins `--xplug-run` compares.
pub const RUN_CASES: [(&str, &str); 4] = [
    ("mul_call.mlir", "sample_standalone.sos"),
    ("mul_call.mlir", "c_sample.sos"),
    ("mul_ukernel.mlir", "sample_standalone.sos"),
    ("mul_ukernel.mlir", "c_sample.sos"),
];

/// The inputs of `--xplug-run`'s `mul`: signed zero and an underflow to
/// zero, no NaN (an invalid operation's NaN differs by architecture:
/// x86_64's negative quiet NaN, aarch64's default NaN).
const RUN_INPUTS: [&str; 2] =
    ["10xf32=1,2,3,4,5,6,7,8,-0.0,1e-20", "10xf32=0.5,-1,2.25,3,1e-3,7,-8,9,3e38,1e-20"];

/// One `xplug run` compared on both architectures.
#[derive(Clone, Debug)]
pub struct RunParity {
    /// The program (`tests/iree/...`).
    pub program: &'static str,
    /// What serves the kernel: the plugin file, or `linked object` /
    /// `linked bitcode` (the kernel linked into the executable, no plugin).
    pub deployment: &'static str,
    /// What the native x86_64 run printed (the module compiled for x86_64).
    pub x86_64: String,
    /// What the aarch64 `xplug` printed under qemu (the module compiled for
    /// aarch64, the `.sos`'s aarch64 record serving the import).
    pub aarch64: String,
}

/// `cargo xtask test-aarch64 --xplug-run`: cross-builds `xplug` (with
/// IREE's runtime) for aarch64, then runs [`RUN_CASES`] with the native
/// `xplug` on the x86_64-compiled module and with the aarch64 `xplug` under
/// qemu on the aarch64-compiled one, the same `.sos` serving the import,
/// and `mul_call.mlir` with `sample_standalone`'s kernel linked in as an
/// object and as bitcode (`xplug-build`'s linked programs); returns both
/// outputs per case.
///
/// # Errors
/// Missing packages (not root), a failing build, compile or run.
pub fn xplug_run_parity(root: &Path) -> Result<Vec<RunParity>, Aarch64Error> {
    ensure_packages(&PACKAGES)?;
    ensure_packages(&IREE_PACKAGES)?;
    let mut host = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    host.current_dir(root).args(["build", "--locked", "-p", "xplug-cli"]);
    eprintln!("$ {host:?}");
    run(host)?;
    let mut cross = debian_cargo(root);
    cross
        .args(["build", "--locked", "-p", "xplug-cli", "--target", TARGET, "--target-dir"])
        .arg(root.join("target").join("aarch64"));
    eprintln!("$ {cross:?}");
    run(cross)?;
    let native = root.join("target").join("debug").join("xplug");
    let emulated = root.join("target").join("aarch64").join(TARGET).join("debug").join("xplug");
    xplug_fixtures::plugins::build(root, xplug_fixtures::PluginProfile::Debug).map_err(|error| {
        Aarch64Error::Prepare { step: "build the example plugins", detail: error.to_string() }
    })?;
    let plugin_dir = xplug_fixtures::plugins::output_dir(root, xplug_fixtures::PluginProfile::Debug);
    let iree = xplug_fixtures::iree_e2e::toolchain(root).map_err(|error| Aarch64Error::Prepare {
        step: "set up IREE's pinned tools",
        detail: error.to_string(),
    })?;
    let module = |program: &str, triple: &str| -> Result<PathBuf, Aarch64Error> {
        let source = root.join("tests").join("iree").join(program);
        let dir =
            root.join("target").join("iree-executables").join(triple).join(program.trim_end_matches(".mlir"));
        xplug_fixtures::iree_e2e::compile_executables(&iree, &source, triple, &dir).map_err(|error| {
            Aarch64Error::Prepare { step: "compile with iree-compile", detail: error.to_string() }
        })?;
        Ok(dir.join("module.vmfb"))
    };
    let linked = root.join("target").join("iree-executables").join("linked");
    let report = xplug_fixtures::linked::build(root, &linked.join("objects")).map_err(|error| {
        Aarch64Error::Prepare { step: "build the linked kernels", detail: error.to_string() }
    })?;
    let linked_module = |format: LinkedFormat, triple: &str| -> Result<PathBuf, Aarch64Error> {
        let program = root.join("tests").join("iree").join("mul_call.mlir");
        let prepare = |step: &'static str| move |detail: String| Aarch64Error::Prepare { step, detail };
        let source = xplug_fixtures::linked::link_program(&report, &program, format)
            .map_err(|error| prepare("rewrite the program to link the kernel")(error.to_string()))?;
        let work = linked.join(triple);
        std::fs::create_dir_all(&work)
            .map_err(|error| prepare("create the work directory")(error.to_string()))?;
        xplug_fixtures::linked::compile(
            &iree,
            &work,
            &format!("mul_call.{}", format.name()),
            &source,
            &linked.join("objects"),
            Some(triple),
        )
        .map_err(|error| prepare("compile with iree-compile")(error.to_string()))
    };
    let cases = RUN_CASES.iter().map(|&(program, plugin)| (program, plugin, None)).chain(
        [LinkedFormat::Object, LinkedFormat::Bitcode].map(|format| {
            let deployment = match format {
                LinkedFormat::Object => "linked object",
                LinkedFormat::Bitcode => "linked bitcode",
            };
            ("mul_call.mlir", deployment, Some(format))
        }),
    );
    let mut rows = Vec::new();
    for (program, deployment, format) in cases {
        let outputs =
            [("x86_64-unknown-linux-gnu", None), (TARGET, Some("qemu-aarch64"))].map(|(triple, runner)| {
                let module = match format {
                    Some(format) => linked_module(format, triple)?,
                    None => module(program, triple)?,
                };
                let mut command = match runner {
                    Some(runner) => {
                        let mut command = Command::new(runner);
                        command.arg(&emulated);
                        command
                    }
                    None => Command::new(&native),
                };
                // In qemu's process: `xplug run` forks its supervised child
                // only from a process with one thread, and qemu-user runs a
                // thread of its own beside the guest's.
                command.arg("run").arg("--in-process").arg(&module).args(["--function", "mul"]);
                for input in RUN_INPUTS {
                    command.args(["--input", input]);
                }
                if format.is_none() {
                    command.arg("--plugin").arg(plugin_dir.join(deployment));
                }
                command.current_dir(root);
                let output =
                    command::output(&mut command).map_err(|source| Aarch64Error::Command { source })?;
                Ok(String::from_utf8_lossy(&output.stdout).into_owned())
            });
        let [x86_64, aarch64] = outputs;
        rows.push(RunParity { program, deployment, x86_64: x86_64?, aarch64: aarch64? });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libtest_counts_are_read() {
        let output = "running 3 tests\n...\ntest result: FAILED. 1 passed; 2 failed; 4 ignored; 0 measured; \
                      5 filtered out; finished in 0.35s\n";
        assert_eq!(counts(output), Some((1, 2, 4)));
        assert_eq!(counts("no summary"), None);
    }

    #[test]
    fn every_skip_names_a_tested_package_and_a_reason() {
        for (package, target, test, reason) in SKIPPED {
            assert!(PACKAGES_TESTED.contains(&package), "{package}");
            assert!(!target.is_empty() && !test.is_empty() && reason.len() > 20, "{package} {target}");
        }
    }
}
