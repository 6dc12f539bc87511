//! `cargo xtask`: project automation for xplug.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use xtask::iree_e2e;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "xplug project automation")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Record the public API of the crates users build on (abi, sdk,
    /// providers, manager, iree, debug) in api/<crate>.txt, from rustdoc's JSON.
    Api {
        /// Do not write; fail and show the difference when a crate's API
        /// differs from its committed baseline (as `header --verify`).
        #[arg(long)]
        verify: bool,
    },
    /// Build the book (docs/, with the pinned mdBook) into target/book and
    /// check every link in it, anchors included.
    Book,
    /// Regenerate include/xplug/executable_plugin.h from xplug-abi.
    Header {
        /// Do not write; fail if the committed header differs from a fresh one.
        #[arg(long)]
        verify: bool,
    },
    /// Build the example plugins and run the dispatch demo (`xplug demo`).
    Demo {
        /// Build plugins and xplug without optimisations (faster to build,
        /// slower to run).
        #[arg(long)]
        debug: bool,
        /// Extra arguments for `xplug demo` (after `--`).
        #[arg(last = true)]
        extra: Vec<String>,
    },
    /// Run the criterion benchmarks and print the summary table of ratios.
    Bench {
        /// Shorter warm-up and measurement (noisier numbers).
        #[arg(long)]
        quick: bool,
        /// Only print the table from the last run's results.
        #[arg(long)]
        no_run: bool,
        /// Exit with a failure when any row misses its target.
        #[arg(long)]
        enforce: bool,
    },
    /// Measure row (8) of `bench` (the loader's resolve call, xplug against
    /// IREE's manager) under several code layouts of one build: the
    /// `resolve_loop` example is built with each padding (bytes linked ahead
    /// of all code, x86_64 only) and its paired measurement run per case.
    BenchLayouts {
        /// Paddings in bytes, comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = xtask::layouts::DEFAULT_PADS,
              value_parser = xtask::layouts::parse_pad)]
        pads: Vec<usize>,
        /// Cases, comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = xtask::layouts::CASES.map(str::to_owned),
              value_parser = xtask::layouts::CASES)]
        cases: Vec<String>,
        /// Seconds of paired measurement per case and comparison.
        #[arg(long, default_value_t = 1.5, value_parser = xtask::layouts::parse_seconds)]
        seconds: f64,
    },
    /// `xplug run` against `iree-run-module`, whole processes side by side
    /// in alternating pairs: wall time, CPU time and peak memory on the
    /// ONNX CNN (weights inline and in an .irpa), on loading a large
    /// parameter archive made on the fly, and on a dispatch-bound and a
    /// compute-bound program (tests/iree/many_dispatches.mlir,
    /// large_matmul.mlir), on each device given.
    ModelBench {
        /// Size of the large archive, MiB.
        #[arg(long, default_value_t = 256)]
        archive_mib: usize,
        /// Measured pairs (one run of each tool) per scenario and device,
        /// at least (medians reported).
        #[arg(long, default_value_t = 7)]
        runs: usize,
        /// Seconds per scenario and device: short scenarios run more pairs
        /// until they have passed (at most 1001 pairs).
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
        /// The devices both tools run every scenario on, comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = ["local-sync".to_owned(), "local-task".to_owned()],
              value_parser = ["local-sync", "local-task"])]
        device: Vec<String>,
        /// Worker threads on local-task, the same for both tools (IREE's
        /// --task_topology_group_count, which both take); default: one per
        /// CPU.
        #[arg(long)]
        task_workers: Option<usize>,
        /// Only the scenarios whose name contains one of these words
        /// (comma-separated; e.g. `dispatch-bound,compute-bound`).
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
        /// Instead of timing, count instructions per dispatch under
        /// callgrind (many_dispatches.mlir with 1 000 and 3 000 dispatches;
        /// needs valgrind); the profiles stay in target/model-bench/.
        #[arg(long)]
        instructions: bool,
    },
    /// One Rust kernel in each deployment (import from the .so, linked
    /// object, linked bitcode) beside IREE's own code for the operation:
    /// mul at 1 Mi floats and matmul + ReLU at 256³, timed by IREE's
    /// iree-benchmark-module on local-sync in alternating rounds.
    LinkedBench {
        /// Rounds (medians reported).
        #[arg(long, default_value_t = 7)]
        rounds: usize,
        /// Seconds per deployment per round.
        #[arg(long, default_value_t = 0.5)]
        seconds: f64,
    },
    /// Run the project's MLIR programs (tests/iree/) in IREE's own runtime
    /// with every example plugin and check every output element.
    ///
    /// The first run creates target/iree-venv with IREE's pinned pip
    /// packages (network access to PyPI needed once).
    IreeE2e {
        /// Use debug plugins (target/plugins/debug) instead of release ones.
        #[arg(long)]
        debug: bool,
    },
    /// Set each byte of a compiled module (tests/iree/mul_call.mlir) to one
    /// value in turn and run every copy through `xplug run` and IREE's
    /// `iree-run-module` with the same flags; fails when `xplug run` dies
    /// by a signal at any offset, or its supervised program faults or
    /// hangs at an offset where IREE's tool exits normally (0 or 1).
    FlipSweep {
        /// A compiled module to sweep instead of mul_call's (its function
        /// must take two 4xf32 inputs).
        #[arg(long)]
        module: Option<std::path::PathBuf>,
        /// The function both tools call.
        #[arg(long, default_value = "mul")]
        function: String,
        /// The value each byte is set to (decimal or 0x..).
        #[arg(long, default_value = "0xff", value_parser = xtask::flip_sweep::parse_byte)]
        value: u8,
        /// Sweep every Nth offset.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
        stride: u64,
        /// The first offset swept.
        #[arg(long, default_value_t = 0)]
        first: usize,
        /// Offsets run at once (default: the number of CPUs).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        jobs: Option<u64>,
        /// Seconds one tool may run on one copy before it counts as a hang.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
        timeout: u64,
        /// Use optimised builds of xplug and the plugin.
        #[arg(long)]
        release: bool,
    },
    /// Build the tests of the crates that load plugins without the system
    /// loader for aarch64 (Debian's Rust toolchain, target/aarch64) and run
    /// them under qemu-aarch64; installs the Debian packages when root and
    /// missing, and prints the counts and every test skipped with why.
    TestAarch64 {
        /// Also cross-build `xplug` with IREE's runtime for aarch64 (needs
        /// `g++-aarch64-linux-gnu`; IREE's generator tools are built for the
        /// host first) and compare `xplug run` under qemu on
        /// aarch64-compiled programs with the native run on x86_64-compiled
        /// ones (not in CI: 36 minutes from a fresh clone).
        #[arg(long)]
        xplug_run: bool,
    },
    /// Model-check the manager's registry with loom (`--cfg loom` build in
    /// target/loom).
    Loom,
    /// Load/resolve/call/unload the Rust and C example plugins under
    /// valgrind (must be installed; not run in CI).
    Valgrind {
        /// Cycles per plugin.
        #[arg(long, default_value_t = 20)]
        cycles: usize,
    },
    /// Run the manager's live swap and registry tests under
    /// AddressSanitizer (needs nightly Rust; build in target/asan; not run
    /// in CI).
    Asan,
    /// Run each cargo-fuzz target under fuzz/ for a while (needs nightly
    /// Rust and cargo-fuzz; not run in CI).
    Fuzz {
        /// Seconds per target.
        #[arg(long, default_value_t = 60)]
        seconds: u32,
    },
    /// Build the example plugins as shared libraries into
    /// target/plugins/debug/ (or target/plugins/release/ with --release).
    BuildPlugins {
        /// Build with optimisations.
        #[arg(long)]
        release: bool,
    },
}

/// Prints `error` and its causes; the failure exit code.
fn failure(error: &dyn std::error::Error) -> ExitCode {
    eprintln!("error: {error}");
    let mut source = error.source();
    while let Some(cause) = source {
        eprintln!("  caused by: {cause}");
        source = cause.source();
    }
    ExitCode::FAILURE
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let hardening = |result: Result<(), xtask::hardening::HardeningError>| {
        result.map_or_else(|error| failure(&error), |()| ExitCode::SUCCESS)
    };
    match cli.command {
        Command::TestAarch64 { xplug_run } => {
            let root = xtask::workspace_root();
            if xplug_run {
                return match xtask::aarch64::xplug_run_parity(&root) {
                    Ok(rows) => {
                        let mut same = true;
                        for row in &rows {
                            let verdict = if row.x86_64 == row.aarch64 { "identical" } else { "DIFFERENT" };
                            same &= row.x86_64 == row.aarch64;
                            println!("{} + {}: {verdict}", row.program, row.deployment);
                            println!("  x86_64:  {}", row.x86_64.trim().replace('\n', "\n           "));
                            println!("  aarch64: {}", row.aarch64.trim().replace('\n', "\n           "));
                        }
                        if same { ExitCode::SUCCESS } else { ExitCode::FAILURE }
                    }
                    Err(error) => failure(&error),
                };
            }
            let result = xtask::aarch64::run_all(&root, |run| {
                eprintln!(
                    "{} {}: {} passed, {} failed, {} ignored, {} skipped ({:.1} s)",
                    run.package, run.target, run.passed, run.failed, run.ignored, run.skipped, run.seconds
                );
                if run.failed > 0 {
                    eprintln!("{}", run.output);
                }
            });
            match result {
                Ok(report) => {
                    print!("\n{}", report.table());
                    if report.passed() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
                }
                Err(error) => failure(&error),
            }
        }
        Command::Book => match xtask::book::build(&xtask::workspace_root()) {
            Ok((pages, links)) => {
                println!(
                    "the book is in {}: {pages} files, {links} links checked",
                    xtask::book::output_dir(&xtask::workspace_root()).display()
                );
                ExitCode::SUCCESS
            }
            Err(error) => failure(&error),
        },
        Command::Loom => hardening(xtask::hardening::loom(&xtask::workspace_root())),
        Command::Valgrind { cycles } => {
            hardening(xtask::hardening::valgrind(&xtask::workspace_root(), cycles))
        }
        Command::Asan => hardening(xtask::hardening::asan(&xtask::workspace_root())),
        Command::Fuzz { seconds } => hardening(xtask::hardening::fuzz(&xtask::workspace_root(), seconds)),
        Command::FlipSweep { module, function, value, stride, first, jobs, timeout, release } => {
            let jobs = jobs.map_or_else(
                || std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
                |jobs| usize::try_from(jobs).unwrap_or(usize::MAX),
            );
            let options = xtask::flip_sweep::Options {
                module,
                function,
                value,
                stride: usize::try_from(stride).unwrap_or(usize::MAX),
                first,
                jobs,
                timeout: std::time::Duration::from_secs(timeout),
                release,
            };
            match xtask::flip_sweep::run(&xtask::workspace_root(), &options) {
                Ok(report) => {
                    print!("\n{}", report.table());
                    if report.passed() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
                }
                Err(error) => failure(&error),
            }
        }
        Command::Demo { debug, extra } => {
            let root = xtask::workspace_root();
            match xtask::demo::run(&root, debug, &extra) {
                Ok(status) if status.success() => ExitCode::SUCCESS,
                Ok(status) => ExitCode::from(u8::try_from(status.code().unwrap_or(1)).unwrap_or(1)),
                Err(error) => failure(&error),
            }
        }
        Command::Bench { quick, no_run, enforce } => {
            let root = xtask::workspace_root();
            let extra: Vec<String> = if quick {
                ["--warm-up-time", "1", "--measurement-time", "2"].map(str::to_owned).to_vec()
            } else {
                Vec::new()
            };
            if !no_run && let Err(error) = xtask::bench::run_benches(&root, &extra) {
                eprintln!("error: {error}");
                return ExitCode::FAILURE;
            }
            match xtask::bench::ratios(&xtask::bench::criterion_dir(&root)) {
                Ok(ratios) => {
                    println!("\nmachine: {}", xtask::bench::machine());
                    if no_run {
                        println!(
                            "results of the last run in {}\n",
                            xtask::bench::criterion_dir(&root).display()
                        );
                    } else {
                        println!("command: cargo xtask bench{}\n", if quick { " --quick" } else { "" });
                    }
                    print!("{}", xtask::bench::table(&ratios));
                    let missed = xtask::bench::missed(&ratios);
                    if missed.is_empty() {
                        return ExitCode::SUCCESS;
                    }
                    let verdict = if enforce { "error" } else { "note" };
                    eprintln!("\n{verdict}: {} row(s) miss their target:", missed.len());
                    for ratio in &missed {
                        eprintln!("  {} ({:.4}x, target {})", ratio.comparison, ratio.ratio, ratio.target);
                    }
                    if enforce { ExitCode::FAILURE } else { ExitCode::SUCCESS }
                }
                Err(error) => {
                    eprintln!("error: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::BenchLayouts { pads, cases, seconds } => {
            let root = xtask::workspace_root();
            match xtask::layouts::run(&root, &pads, &cases, seconds) {
                Ok(ratios) => {
                    println!("\nmachine: {}", xtask::bench::machine());
                    println!(
                        "command: cargo xtask bench-layouts (ratio xplug / IREE, median of the paired ratios)\n"
                    );
                    print!("{}", xtask::layouts::table(&ratios, xplug_table::Style::stdout()));
                    ExitCode::SUCCESS
                }
                Err(error) => failure(&error),
            }
        }
        Command::BuildPlugins { release } => {
            let root = xtask::workspace_root();
            match xplug_fixtures::plugins::build(
                &root,
                xplug_fixtures::plugins::PluginProfile::from_release_flag(release),
            ) {
                Ok(built) => {
                    print!("{}", xtask::plugins_table(&root, &built));
                    for plugin in built.iter().filter(|plugin| plugin.path.is_none()) {
                        eprintln!("warning: {}: {}", plugin.name, plugin.note);
                    }
                    ExitCode::SUCCESS
                }
                Err(error) => {
                    eprintln!("error: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::ModelBench { archive_mib, runs, seconds, device, task_workers, only, instructions } => {
            let root = xtask::workspace_root();
            let options = xtask::model_bench::Options {
                devices: device,
                task_workers: task_workers
                    .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
                    .max(1),
                archive_mib,
                runs: runs.max(1),
                budget: std::time::Duration::from_secs_f64(seconds.max(0.0)),
                only,
            };
            if instructions {
                let result = xtask::model_bench::build_xplug(&root)
                    .and_then(|xplug| xtask::model_bench::instructions(&root, &xplug, &options));
                return match result {
                    Ok(costs) => {
                        println!(
                            "\nInstructions per dispatch (callgrind; many_dispatches.mlir, {:?} dispatches), xplug run \
                             (release) vs iree-run-module (IREE {})\n",
                            xtask::model_bench::COUNTED_DISPATCHES,
                            xplug_fixtures::iree_e2e::IREE_VERSION,
                        );
                        print!("{}", xtask::model_bench::instructions_table(&costs));
                        ExitCode::SUCCESS
                    }
                    Err(error) => failure(&error),
                };
            }
            let result = xtask::model_bench::build_xplug(&root)
                .and_then(|xplug| xtask::model_bench::run(&root, &xplug, &options));
            match result {
                Ok(rows) => {
                    println!(
                        "\nxplug run (release) vs iree-run-module (IREE {}), medians of at least {runs} alternating \
                         pairs per scenario and device, more within {seconds} s; peak RSS: median of {} runs \
                         under GNU time; {}\n",
                        xplug_fixtures::iree_e2e::IREE_VERSION,
                        xtask::model_bench::RSS_RUNS,
                        xtask::bench::machine(),
                    );
                    print!("{}", xtask::model_bench::table(&rows));
                    ExitCode::SUCCESS
                }
                Err(error) => failure(&error),
            }
        }
        Command::LinkedBench { rounds, seconds } => {
            let root = xtask::workspace_root();
            let options = xtask::linked_bench::Options { rounds: rounds.max(1), seconds: seconds.max(0.01) };
            match xtask::linked_bench::run(&root, &options) {
                Ok(rows) => {
                    println!(
                        "\nOne kernel, four deployments: CPU per function call, medians of {rounds} alternating \
                         rounds (iree-benchmark-module {}, local-sync); {}\n",
                        xplug_fixtures::iree_e2e::IREE_VERSION,
                        xtask::bench::machine(),
                    );
                    print!("{}", xtask::linked_bench::table(&rows));
                    ExitCode::SUCCESS
                }
                Err(error) => failure(&error),
            }
        }
        Command::IreeE2e { debug } => {
            let root = xtask::workspace_root();
            let profile = xplug_fixtures::plugins::PluginProfile::from_release_flag(!debug);
            let cases = iree_e2e::cases().len();
            let mut done = 0;
            let result = iree_e2e::run(&root, profile, |case, outcome| {
                done += 1;
                let verdict = match outcome {
                    iree_e2e::E2eOutcome::Pass => "ok",
                    _ => "FAILED",
                };
                eprintln!(
                    "[{done}/{cases}] {} {} n={} {verdict}",
                    case.program.file,
                    case.plugins.join("+"),
                    case.size
                );
            });
            match result {
                Ok(report) => {
                    println!(
                        "\nIREE {} (iree-compile, iree-run-module --device=local-sync), {} plugins from {}\n",
                        iree_e2e::IREE_VERSION,
                        profile.dir_name(),
                        xplug_fixtures::plugins::output_dir(&root, profile).display()
                    );
                    print!("{}", iree_e2e::report_table(&report));
                    if report.all_passed() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
                }
                Err(error) => {
                    eprintln!("error: {error}");
                    let mut source = std::error::Error::source(&error);
                    while let Some(cause) = source {
                        eprintln!("  caused by: {cause}");
                        source = cause.source();
                    }
                    ExitCode::FAILURE
                }
            }
        }
        Command::Api { verify: false } => match xtask::api::bless(&xtask::workspace_root()) {
            Ok(written) => {
                for path in written {
                    println!("wrote {}", path.display());
                }
                ExitCode::SUCCESS
            }
            Err(error) => failure(&error),
        },
        Command::Api { verify: true } => match xtask::api::verify(&xtask::workspace_root()) {
            Ok(changed) if changed.is_empty() => {
                println!(
                    "the public API of {} matches api/",
                    xtask::api::CRATES.map(|(name, _)| name).join(", ")
                );
                ExitCode::SUCCESS
            }
            Ok(changed) => {
                for (package, lines) in changed {
                    eprintln!("error: the public API of {package} differs from api/{package}.txt:");
                    for line in lines {
                        eprintln!("  {line}");
                    }
                }
                eprintln!(
                    "an intended change: run `cargo xtask api`, note it in CHANGELOG.md and commit both \
                     (docs/src/design/publishing.md)"
                );
                ExitCode::FAILURE
            }
            Err(error) => failure(&error),
        },
        Command::Header { verify: false } => match xtask::header::write() {
            Ok(path) => {
                println!("wrote {}", path.display());
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("error: {error}");
                ExitCode::FAILURE
            }
        },
        Command::Header { verify: true } => match xtask::header::verify() {
            Ok(None) => {
                println!("{} is up to date", xtask::header::HEADER_PATH);
                ExitCode::SUCCESS
            }
            Ok(Some(line)) => {
                eprintln!(
                    "error: {} differs from a fresh generation (first difference at line {line}); \
                     run `cargo xtask header` and commit the result",
                    xtask::header::HEADER_PATH
                );
                ExitCode::FAILURE
            }
            Err(error) => {
                eprintln!("error: {error}");
                ExitCode::FAILURE
            }
        },
    }
}
