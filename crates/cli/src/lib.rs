//! `xplug`: inspect, resolve, check, benchmark and call IREE executable
//! import plugins, and run the dispatch demo.
//!
//! ```text
//! cargo install xplug-cli
//! xplug new my_kernel --standalone      # a plugin crate, on the published xplug-sdk
//! cd my_kernel && cargo test
//! xplug build --sos                     # target/sos/my_kernel.sos
//! xplug check target/sos/my_kernel.sos  # the load, resolve and call checks
//! xplug run program.vmfb --function=main --input=@x.npy --plugin=target/sos/my_kernel.sos
//! ```
//!
//! The binary is [`main`]; this library is also what `xtask` prints its
//! tables with ([`output`]).
//!
//! Every command prints a human report (aligned tables, colour only on a
//! terminal) or, with `--json`, exactly one JSON object on stdout. Errors go
//! to stderr with their cause chain. Exit codes: 0 success, 1 a resolution,
//! load or check failure, 2 a usage error.
//!
//! `inspect`, `check`, `bench` and `call` exercise the plugin in a child
//! process (this binary re-run with `--in-process`), so a plugin that
//! crashes or hangs is reported ("crashed with SIGSEGV during call")
//! instead of killing the tool; `check` runs each check in a child of its
//! own.

#![expect(
    clippy::result_large_err,
    reason = "a `CliError` is built at most a few times per process, on the way out; boxing every source would only add noise"
)]

mod bench;
mod build;
mod call;
mod check;
mod demo;
mod error;
mod fatelf;
mod inspect;
mod iree_flags;
mod isolate;
mod new;
pub mod output;
mod pin;
mod profile;
mod resolve;
mod run;
mod stdio;
mod trust;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde_json::json;

use crate::error::{CliError, report_error};
use crate::output::{Style, Table, print_json};

#[derive(Debug, Parser)]
#[command(
    name = "xplug",
    version,
    about = "Inspect, resolve, check and benchmark IREE executable import plugins"
)]
struct Cli {
    #[command(flatten)]
    globals: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

/// `xplug run`'s parser alone: the same global flags and `run` arguments
/// as [`Cli`], without the other commands' definitions, which clap would
/// otherwise build (and drop) on every start of `xplug run`, a process
/// that is often started once per inference. [`parse_arguments`] tries it
/// first on command lines that start with `run` and falls back to [`Cli`]
/// for anything it does not accept, so help and error messages are
/// always the full parser's.
#[derive(Debug, Parser)]
#[command(name = "xplug", version)]
struct RunOnlyCli {
    #[command(flatten)]
    globals: GlobalArgs,
    #[command(subcommand)]
    command: RunOnlyCommand,
}

#[derive(Debug, Subcommand)]
enum RunOnlyCommand {
    Run(RunArgs),
}

impl From<RunOnlyCli> for Cli {
    fn from(parsed: RunOnlyCli) -> Self {
        let RunOnlyCommand::Run(arguments) = parsed.command;
        Self { globals: parsed.globals, command: Command::Run(arguments) }
    }
}

/// Parses `arguments` (the program name first): `run` lines through
/// [`RunOnlyCli`] when it accepts them, everything else, and every help
/// request or error, through [`Cli`].
///
/// An `xplug run` line first goes through [`iree_flags::prepare_run_arguments`]
/// (flagfiles, IREE's task flags, refused flags); its errors come back as
/// [`ParseFailure::Cli`].
fn parse_arguments(arguments: Vec<std::ffi::OsString>) -> Result<Cli, ParseFailure> {
    if arguments.get(1).is_some_and(|command| command == "run") {
        let prepared = iree_flags::prepare_run_arguments(arguments).map_err(ParseFailure::Cli)?;
        // As in iree-run-module, these answer without a module.
        if let Some(listing) = prepared.listing {
            return Err(ParseFailure::Listing(listing));
        }
        // IREE's task flags are process-wide: set once, here, as
        // iree-run-module parses them at start-up (`--dump_task_topologies`
        // then prints the topology and exits, without a module).
        xplug_iree::set_iree_flags(&prepared.iree).map_err(|source| {
            ParseFailure::Cli(CliError::Iree { context: "cannot take IREE's task flags".to_owned(), source })
        })?;
        let mut cli = match RunOnlyCli::try_parse_from(&prepared.clap) {
            Ok(parsed) => Cli::from(parsed),
            Err(_) => Cli::try_parse_from(&prepared.clap).map_err(ParseFailure::Clap)?,
        };
        if let Command::Run(run) = &mut cli.command {
            run.abort_on_failure = prepared.abort_on_failure;
        }
        return Ok(cli);
    }
    Cli::try_parse_from(arguments).map_err(ParseFailure::Clap)
}

/// Why a command line was not parsed.
#[derive(Debug)]
enum ParseFailure {
    /// clap's own (help and version requests included).
    Clap(clap::Error),
    /// Refused before clap: a refused IREE flag, a bad flagfile.
    Cli(CliError),
    /// `--list_drivers`, `--list_devices` or `--dump_devices`: printed
    /// instead of running, as iree-run-module does.
    Listing(String),
}

/// `xplug run --help`'s text after the options: an example, then what
/// happens to each of `iree-run-module`'s other flags. Made once, when
/// clap first builds the `run` command.
static RUN_AFTER_HELP: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "{}\n\nExample:\n  xplug run mul.vmfb --function=mul --input=4xf32=1,2,3,4 \\\n    --input=@b.npy \
         --plugin=target/plugins/release/libsample_system.so?multiplier=2\n  iree-compile prog.mlir ... | xplug run \
         --module=- --function=main --input=...",
        iree_flags::help().trim_end()
    )
});

/// The flags every command takes.
#[derive(Debug, clap::Args)]
struct GlobalArgs {
    /// Print exactly one JSON object on stdout instead of the human report.
    #[arg(long, global = true)]
    json: bool,
    /// inspect, check, bench and call: probe the plugin in this process
    /// instead of in a child process (a plugin crash then kills xplug;
    /// useful under a debugger). Other commands, `run` included, always
    /// run in this process and ignore it.
    #[arg(long, global = true)]
    in_process: bool,
    /// Seconds a plugin may run without progress before its child process
    /// is killed (inspect, check, bench and call).
    #[arg(long, global = true, value_name = "SECONDS", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=86_400))]
    timeout: u32,
}

#[derive(Debug, Subcommand)]
#[expect(
    clippy::large_enum_variant,
    reason = "parsed once per process; `Run` carries IREE's many flags, and boxing them would only add noise"
)]
enum Command {
    /// Show a plugin's header, the loader used for it and its exported symbols.
    Inspect {
        /// A plugin library path (`?key=value` load parameters allowed), or
        /// `static:NAME` for a plugin linked into xplug.
        plugin: String,
    },
    /// Print each plugin's spec pinned to the SHA-256 of its code
    /// (`path?sha256=HEX`): a pinned spec loads only those bytes. Nothing
    /// of the plugin runs.
    #[command(
        after_help = "Example:\n  xplug run m.vmfb --plugin=\"$(xplug pin ./libfast.so?threads=4)\"\n                        xplug pin --allow-list ./libfast.so k.sos > allowed.txt   # for XPLUG_ALLOWED_PLUGINS"
    )]
    Pin {
        /// Plugin specs (`path[?key=value&...]`, `.sos` files included);
        /// a spec already pinned gets the file's hash now.
        #[arg(required = true, value_name = "PLUGIN")]
        plugins: Vec<String>,
        /// Print `sha256sum` lines (`HEX  FILE`), the allow-list format of
        /// XPLUG_ALLOWED_PLUGINS, instead of specs.
        #[arg(long)]
        allow_list: bool,
    },
    /// Resolve import names through a manager and show which provider
    /// supplies each. The plugins listed in the XPLUG_PLUGINS environment
    /// variable (specs separated by `:`) are registered before --plugin ones.
    Resolve {
        /// A plugin spec as IREE's `--executable_plugin` takes it
        /// (`path[?key=value&...]`, or `static:NAME`); repeatable, later
        /// ones are asked first.
        #[arg(long = "plugin", value_name = "PLUGIN")]
        plugins: Vec<String>,
        /// Register the plugins linked into xplug first (none in the shipped
        /// binary; `sample_static` with the `sample-static` feature).
        #[arg(long = "static")]
        with_static: bool,
        /// Import names; a leading `?` marks an optional import.
        #[arg(required = true, value_name = "SYMBOL")]
        symbols: Vec<String>,
    },
    /// Run the v0 conformance checks against a plugin library.
    Check {
        /// The plugin library, as a spec (`path[?key=value&...]`: the load
        /// parameters every check loads it with).
        #[arg(required_unless_present = "list_checks", value_name = "PLUGIN")]
        plugin: Option<String>,
        /// Also resolve these names in the export checks (for plugins
        /// without `xplug_plugin_exports`).
        #[arg(long = "symbol", value_name = "NAME")]
        symbols: Vec<String>,
        /// List the checks and exit.
        #[arg(long)]
        list_checks: bool,
        /// Run only this check (used to run checks in child processes).
        #[arg(long, value_name = "NAME", hide = true)]
        single_check: Option<String>,
    },
    /// Time loading, resolving and (with --call) calling imports of one plugin.
    Bench {
        /// The plugin library (`?key=value` load parameters allowed).
        plugin: String,
        /// Import names to resolve (and call).
        #[arg(required = true, value_name = "SYMBOL")]
        symbols: Vec<String>,
        /// Timed batches per measurement (the median is reported).
        #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        runs: u32,
        /// Also call each resolved import: with the block --field describes,
        /// or else a zeroed block of this many bytes (which times how the
        /// import handles all-zero args, often an early return).
        #[arg(long, value_name = "BYTES", num_args = 0..=1, default_missing_value = "256")]
        call: Option<usize>,
        /// A field of the args block the calls get, as `xplug call`
        /// takes it (implies --call).
        #[arg(long = "field", value_name = "FIELD")]
        fields: Vec<String>,
    },
    /// Call one import with an args block built from typed fields (or
    /// given as hex or a file) and show the result and the block after it.
    Call {
        /// The plugin, as a spec (`path[?key=value&...]`).
        plugin: String,
        /// The import to call.
        import: String,
        /// A field of the args struct, in order: TYPE:VALUE (i8..u64,
        /// f32, f64, usize, isize), `ptr:TYPE[N][=v,v,...]` (a buffer xplug
        /// allocates and shows after the call) or ptr:null.
        #[arg(long = "field", value_name = "FIELD", conflicts_with_all = ["hex", "file"])]
        fields: Vec<String>,
        /// The whole args block as hex bytes.
        #[arg(long, value_name = "HEX", conflicts_with = "file")]
        hex: Option<String>,
        /// The whole args block from a file.
        #[arg(long, value_name = "PATH")]
        file: Option<PathBuf>,
    },
    Run(RunArgs),
    /// Join ELF plugins into a FatELF container (`.sos`) or list one's records.
    Fatelf {
        #[command(subcommand)]
        action: fatelf::Action,
    },
    /// Build the plugin crate of the current directory (or --manifest-path)
    /// as a standalone embedded ELF file (`.sos`), with a FatELF record for
    /// every installed rustup target it supports.
    #[command(after_help = "The crate needs a `sos` feature that makes it no_std and turns on \
                      `xplug-sdk/standalone` (`xplug new --standalone` scaffolds one).\n\
                      Example:\n  xplug build --sos\n  xplug build --sos --manifest-path my_plugin/Cargo.toml --out-dir dist")]
    Build {
        /// Build the `.sos` (the only output this command makes; required
        /// so that a plain `xplug build` is not mistaken for `cargo build`).
        #[arg(long, required = true)]
        sos: bool,
        /// The plugin crate's Cargo.toml (default: the nearest Cargo.toml
        /// in the current directory or above, as cargo finds it).
        #[arg(long, value_name = "PATH")]
        manifest_path: Option<PathBuf>,
        /// The package to build, when the manifest is a workspace.
        #[arg(long, short = 'p', value_name = "NAME")]
        package: Option<String>,
        /// Where to write NAME.sos (default: TARGET_DIR/sos).
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
        /// Keep the symbol table (IREE links without it), so crash reports,
        /// gdb and perf name every function of the plugin.
        #[arg(long)]
        keep_symbols: bool,
    },
    /// Create a plugin crate that `cargo build --release` turns into a
    /// loadable shared library (one import and a test that loads it).
    ///
    /// Its xplug dependencies resolve on the first `cargo build`: an xplug
    /// installed from a registry (`cargo install xplug-cli`) writes its own
    /// version, which that registry has; an xplug built from a checkout
    /// writes path dependencies on that checkout and says so (the crates
    /// are not on crates.io yet); `--sdk DIR` names the checkout. It prints
    /// the commands to run next, in order, from this directory.
    New {
        /// The crate and plugin name (`my_plugin`).
        name: String,
        /// The directory to create (default: ./NAME).
        #[arg(long, value_name = "DIR")]
        path: Option<PathBuf>,
        /// An xplug checkout for the crate to depend on by path (default:
        /// the checkout this xplug was built from, or, for an xplug
        /// installed from a registry, its crates there by version).
        #[arg(long, value_name = "DIR")]
        sdk: Option<PathBuf>,
        /// What the crate holds: `add` (one scalar import, the default) or
        /// `workgroup` (a stateful dispatch kernel with a load parameter, a
        /// host test, an .mlir program; also builds as a .sos).
        #[arg(long, value_enum, value_name = "TEMPLATE")]
        template: Option<new::Template>,
        /// A crate that builds as a shared library and, with `xplug build
        /// --sos`, as a standalone embedded ELF (selects `workgroup`).
        #[arg(long)]
        standalone: bool,
    },
    /// The dispatch demo: static + dynamic plugins, an import table with an
    /// override, simple_mul_workgroup over millions of floats on every core.
    Demo {
        /// Directory of the built example plugins (default: the
        /// target/plugins/PROFILE directory matching the xplug binary's profile, or
        /// target/plugins/release under the current directory).
        #[arg(long, value_name = "DIR")]
        plugin_dir: Option<PathBuf>,
        /// Number of floats.
        #[arg(long, default_value_t = 4 << 20, value_parser = clap::value_parser!(u64).range(1..=1 << 28))]
        elements: u64,
        /// Timed passes of each path (the median is reported).
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
        passes: u32,
    },
}

/// Run a compiled IREE program (.vmfb) on IREE's runtime with xplug's
/// manager resolving every import of its executables. Prints what
/// iree-run-module prints for the same program, inputs and plugins.
#[derive(Debug, clap::Args)]
#[command(after_help = RUN_AFTER_HELP.as_str())]
struct RunArgs {
    /// The compiled module whose function runs (loaded after every
    /// --module).
    #[arg(value_name = "MODULE.vmfb", required_unless_present = "module_flag")]
    module: Option<PathBuf>,
    /// A compiled module, as iree-run-module takes it: repeatable, loaded
    /// in order; the function runs from the last one (or from
    /// MODULE.vmfb when that is given too).
    #[arg(long = "module", value_name = "MODULE.vmfb")]
    module_flag: Vec<PathBuf>,
    /// The function to call, as the module exports it (default: its
    /// only export not starting with `__` nor holding `$`, as
    /// iree-run-module picks it).
    #[arg(long)]
    function: Option<std::ffi::OsString>,
    /// A parameter archive (`.irpa`, `.gguf`, `.safetensors`) serving
    /// the parameters of SCOPE (none: parameters named without a
    /// scope), as iree-run-module takes it; repeatable.
    #[arg(long = "parameters", value_name = "[SCOPE=]FILE")]
    parameters: Vec<String>,
    /// How the archives are opened: `file` (the default, as
    /// iree-run-module's: each parameter read into a buffer of its own at
    /// start-up), `preload` (each archive read whole at start-up) or
    /// `mmap` (mapped, nothing copied; the archive must not change while
    /// the program runs: it computes with bytes rewritten in place, and a
    /// truncation kills it with SIGBUS). The results are the same.
    #[arg(long = "parameter_mode", default_value = "file", value_name = "MODE",
          value_parser = parameter_mode)]
    parameter_mode: xplug_iree::ParameterMode,
    /// List the functions of the module (names and signatures) instead
    /// of running one.
    #[arg(long)]
    list_functions: bool,
    /// An argument, as iree-run-module takes it: a number for a scalar
    /// parameter (`21`, `1.5`), a tensor (`4xf32=1,2,3,4`,
    /// `2x2xi32=[1 2][3 4]`, `f32=7`), `@FILE.npy` (`+FILE.npy` the
    /// next array of the file, `*FILE.npy` all that are left),
    /// `4xf32=@FILE` (raw bytes) or `(null)`; repeat in argument order.
    #[arg(long = "input", value_name = "VALUE")]
    inputs: Vec<String>,
    /// Where result N goes, one flag per result in order (none: print
    /// all as `result[N]: ...`): `-` prints it, `@FILE` writes it
    /// (`.npy` as NumPy, other names as raw bytes), `+FILE` appends,
    /// an empty value drops it.
    #[arg(long = "output", value_name = "-|@FILE|+FILE|")]
    outputs: Vec<String>,
    /// An expected result, one per result in order, in --input's forms
    /// (`4xf32=1,2,3,4`, `@FILE.npy`, a number) or `(ignored)`: the
    /// results are compared with IREE's comparison instead of printed,
    /// and xplug exits 1 when one differs, as iree-run-module does.
    #[arg(long = "expected_output", value_name = "VALUE")]
    expected_outputs: Vec<String>,
    /// Absolute tolerance of f16 results.
    #[arg(long = "expected_f16_threshold", default_value_t = 0.001, value_name = "X")]
    expected_f16_threshold: f32,
    /// Absolute tolerance of bf16 results.
    #[arg(long = "expected_bf16_threshold", default_value_t = 0.01, value_name = "X")]
    expected_bf16_threshold: f32,
    /// Absolute tolerance of f32 results.
    #[arg(long = "expected_f32_threshold", default_value_t = 0.0001, value_name = "X")]
    expected_f32_threshold: f32,
    /// Absolute tolerance of f64 results.
    #[arg(long = "expected_f64_threshold", default_value_t = 0.0001, value_name = "X")]
    expected_f64_threshold: f64,
    /// Relative tolerance of float results.
    #[arg(long = "expected_rtol", default_value_t = 1e-5, value_name = "X")]
    expected_rtol: f64,
    /// `approximate` (the tolerances) or `exact`.
    #[arg(long = "equality_mode", default_value = "approximate", value_parser = ["approximate", "exact"])]
    equality_mode: String,
    /// `local-sync` (inline on this thread) or `local-task` (a worker pool).
    #[arg(long, default_value = "local-sync")]
    device: String,
    /// How modules are read, as iree-run-module takes it: `preload` (read
    /// whole into memory at start-up, IREE's default and xplug's only
    /// way); `mmap` is refused.
    #[arg(long = "module_mode", value_name = "MODE", default_value = "preload", value_parser = ["preload"])]
    module_mode: String,
    /// `--task_abort_on_failure` (set by [`parse_arguments`]).
    #[arg(skip)]
    abort_on_failure: bool,
    /// A plugin spec (`path[?key=value&...]`, `.sos` files included, or
    /// `static:NAME`); repeatable, later ones are asked first. The
    /// XPLUG_PLUGINS environment variable's plugins come before these.
    #[arg(long = "plugin", visible_alias = "executable_plugin", value_name = "PLUGIN")]
    plugins: Vec<String>,
    /// Register the plugins linked into xplug first.
    #[arg(long = "static")]
    with_static: bool,
    /// Print each executable's imports and the provider that resolved
    /// each, on stderr.
    #[arg(long)]
    trace: bool,
    /// Load the module (creating its executables) without calling
    /// anything, and list every import of every executable with the
    /// provider that resolves it or why none does. Exits 1 if a required
    /// import is missing.
    #[arg(long)]
    list_imports: bool,
    /// Profile every import call: print on stderr, after the results,
    /// per executable and import, the provider, calls, total, mean,
    /// p50, p99 and max time, and the share of the run (in the JSON
    /// object with --json). Without it (and the two flags below) no
    /// wrapper is installed and imports cost nothing more.
    #[arg(long)]
    profile: bool,
    /// Write the import profile as JSON to FILE (counts as --profile's
    /// counting; the table is printed only with --profile).
    #[arg(long = "profile-json", value_name = "FILE")]
    profile_json: Option<PathBuf>,
    /// Write a Chrome trace-event file (Perfetto, chrome://tracing)
    /// with the first --profile-slices calls of each import as slices.
    #[arg(long = "profile-trace", value_name = "FILE")]
    profile_trace: Option<PathBuf>,
    /// Calls of each import kept as trace slices, at most 1000000 (each
    /// thread calling an import sets 24 bytes aside per slice); every
    /// call is counted whatever this is.
    #[arg(long = "profile-slices", value_name = "N", default_value_t = xplug_iree::ProfileOptions::DEFAULT_SLICES as u32,
          value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    profile_slices: u32,
    /// Elements printed per tensor; a negative count prints them all, as
    /// iree-run-module takes it.
    #[arg(long = "output_max_element_count", default_value = "1024", value_name = "N",
          value_parser = element_count, allow_hyphen_values = true)]
    max_elements: usize,
    /// On SIGSEGV, SIGBUS, SIGILL or SIGFPE print one line naming the
    /// plugin, function and offset to stderr before dying of the
    /// signal (also XPLUG_CRASH_REPORT=1).
    #[arg(long)]
    crash_report: bool,
}

fn run(cli: &Cli) -> Result<u8, CliError> {
    let isolation = if cli.globals.in_process {
        isolate::Isolation::InProcess
    } else {
        isolate::Isolation::Child(std::time::Duration::from_secs(u64::from(cli.globals.timeout)))
    };
    match &cli.command {
        Command::Inspect { plugin } => match isolation {
            isolate::Isolation::InProcess => inspect::run(plugin, cli.globals.json),
            isolate::Isolation::Child(timeout) => isolate::rerun_whole_command(plugin, timeout),
        },
        Command::Resolve { plugins, with_static, symbols } => {
            resolve::run(plugins, *with_static, symbols, cli.globals.json)
        }
        Command::Check { list_checks: true, .. } => {
            if cli.globals.json {
                print_json(&json!({
                    "checks": check::CHECKS.iter().map(|c| json!({"name": c.name, "description": c.description})).collect::<Vec<_>>(),
                }));
            } else {
                let mut table = Table::new(["check", "verifies"]);
                for check in check::CHECKS {
                    table.row([check.name, check.description]);
                }
                print!("{}", table.render(Style::stdout()));
            }
            Ok(0)
        }
        Command::Check { plugin, symbols, single_check, .. } => {
            let Some(plugin) = plugin else {
                return Err(CliError::Usage { message: "give the plugin library to check".to_owned() });
            };
            check::run(plugin, symbols, single_check.as_deref(), cli.globals.json, isolation)
        }
        Command::Call { plugin, import, fields, hex, file } => {
            let args = if let Some(hex) = hex {
                call::Args::Bytes(call::parse_hex(hex).map_err(|message| CliError::Usage { message })?)
            } else if let Some(file) = file {
                call::Args::Bytes(
                    xplug_iree::files::read_bounded(file, "the args file", ARGS_FILE_LIMIT).map_err(
                        |source| CliError::Input { context: "cannot read the args block".to_owned(), source },
                    )?,
                )
            } else {
                call::Args::Fields(
                    fields
                        .iter()
                        .map(|field| call::parse_field(field))
                        .collect::<Result<_, _>>()
                        .map_err(|message| CliError::Usage { message })?,
                )
            };
            match isolation {
                isolate::Isolation::InProcess => {
                    call::run(&call::Options { plugin, import, args }, cli.globals.json)
                }
                isolate::Isolation::Child(timeout) => isolate::rerun_whole_command(plugin, timeout),
            }
        }
        Command::Fatelf { action } => fatelf::run(action, cli.globals.json),
        Command::Pin { plugins, allow_list } => pin::run(plugins, *allow_list, cli.globals.json),
        Command::Run(RunArgs {
            module,
            module_flag,
            function,
            parameters,
            parameter_mode,
            list_functions,
            expected_outputs,
            expected_f16_threshold,
            expected_bf16_threshold,
            expected_f32_threshold,
            expected_f64_threshold,
            expected_rtol,
            equality_mode,
            inputs,
            outputs,
            device,
            module_mode: _,
            abort_on_failure,
            plugins,
            with_static,
            trace,
            list_imports,
            profile,
            profile_json,
            profile_trace,
            profile_slices,
            max_elements,
            crash_report,
        }) => {
            let modules: Vec<&std::path::Path> =
                module_flag.iter().chain(module.as_ref()).map(PathBuf::as_path).collect();
            if modules.is_empty() {
                return Err(CliError::Usage { message: "give the module to run (MODULE.vmfb)".to_owned() });
            }
            // Before any plugin is loaded, so every one is named.
            let reporter = |source| CliError::Manager {
                context: "cannot install the crash reporter".to_owned(),
                source,
            };
            let builder = xplug_manager::Manager::builder();
            let builder =
                if *crash_report { builder.crash_reporter() } else { builder.crash_reporter_from_env() };
            // The reporter is process-wide: the manager built here only installs it.
            builder.build().map_err(reporter)?;
            run::run(
                &run::Options {
                    modules: &modules,
                    function: function.as_deref(),
                    parameters,
                    parameter_mode: *parameter_mode,
                    list_functions: *list_functions,
                    expected_outputs,
                    tolerance: xplug_iree::Tolerance {
                        f16: *expected_f16_threshold,
                        bf16: *expected_bf16_threshold,
                        f32: *expected_f32_threshold,
                        f64: *expected_f64_threshold,
                        rtol: *expected_rtol,
                        exact: equality_mode == "exact",
                    },
                    inputs,
                    outputs,
                    device,
                    abort_on_failure: *abort_on_failure,
                    plugins,
                    with_static: *with_static,
                    trace: *trace,
                    list_imports: *list_imports,
                    profile: (*profile || profile_json.is_some() || profile_trace.is_some()).then_some(
                        profile::Request {
                            print: *profile,
                            json: profile_json.as_deref(),
                            trace: profile_trace.as_deref(),
                            slices: *profile_slices as usize,
                        },
                    ),
                    max_elements: *max_elements,
                },
                cli.globals.json,
            )
        }
        Command::Bench { plugin, symbols, runs, call, fields } => match isolation {
            isolate::Isolation::InProcess => {
                let fields = fields
                    .iter()
                    .map(|field| call::parse_field(field))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|message| CliError::Usage { message })?;
                let call = match (fields.is_empty(), call) {
                    (false, _) => Some(bench::CallArgs::Fields(fields)),
                    (true, Some(bytes)) => Some(bench::CallArgs::Zeroed(*bytes)),
                    (true, None) => None,
                };
                bench::run(&bench::Options { plugin, symbols, runs: *runs as usize, call }, cli.globals.json)
            }
            isolate::Isolation::Child(timeout) => isolate::rerun_whole_command(plugin, timeout),
        },
        Command::Build { sos: _, manifest_path, package, out_dir, keep_symbols } => build::run(
            &build::Options {
                manifest_path: manifest_path.as_deref(),
                package: package.as_deref(),
                out_dir: out_dir.as_deref(),
                keep_symbols: *keep_symbols,
            },
            cli.globals.json,
        ),
        Command::New { name, path, sdk, template, standalone } => new::run(
            &new::Options {
                name,
                path: path.as_deref(),
                checkout: sdk.as_deref(),
                template: *template,
                standalone: *standalone,
            },
            cli.globals.json,
        ),
        Command::Demo { plugin_dir, elements, passes } => demo::run(
            &demo::Options {
                plugin_dir: plugin_dir.clone(),
                elements: usize::try_from(*elements).unwrap_or(usize::MAX),
                passes: *passes as usize,
            },
            cli.globals.json,
        ),
    }
}

/// `--output_max_element_count`'s value: a count, or a negative number
/// for all (iree-run-module reads the flag as an `int32` and converts it
/// to a size, so `-1` prints every element).
fn element_count(text: &str) -> Result<usize, String> {
    let count: i64 =
        text.parse().map_err(|_| format!("`{text}` is not a whole number of elements (-1: all)"))?;
    Ok(usize::try_from(count).unwrap_or(usize::MAX))
}

/// `--parameter_mode`'s value.
fn parameter_mode(name: &str) -> Result<xplug_iree::ParameterMode, String> {
    xplug_iree::ParameterMode::parse(name).ok_or_else(|| {
        let names: Vec<&str> = xplug_iree::ParameterMode::ALL.iter().map(|mode| mode.name()).collect();
        format!("`{name}` is not a parameter mode; give one of {}", names.join(", "))
    })
}

/// The largest args block `xplug call --file` reads: 4 MiB, far above any
/// import's args struct.
const ARGS_FILE_LIMIT: u64 = 4 << 20;

/// Whether `--json` is among the raw arguments (before a `--`), for the
/// errors clap reports before there is a `Cli` to ask.
fn json_requested() -> bool {
    std::env::args_os().skip(1).take_while(|arg| arg != "--").any(|arg| arg == "--json")
}

/// Reports what clap stopped on: with `--json`, one object on stdout
/// (`{"ok": true, "text": ...}` for --help and --version; a usage error
/// with exit 2 otherwise) besides clap's own text on stderr for errors.
fn clap_outcome(error: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let json = json_requested();
    let shown = matches!(error.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion);
    if json && shown {
        print_json(&json!({ "ok": true, "text": error.render().to_string() }));
    } else if json {
        let rendered = error.render().to_string();
        let message = rendered.lines().next().unwrap_or_default().trim_start_matches("error: ").to_owned();
        print_json(&json!({ "ok": false, "error": CliError::Usage { message }.to_json() }));
        let _ = error.print();
    } else if let Err(source) = error.print()
        && shown
    {
        // The help or version went to stdout, and did not arrive.
        report_error(&CliError::File { context: "cannot write the output to stdout".to_owned(), source });
        return ExitCode::from(1);
    }
    finish(ExitCode::from(if shown { 0 } else { 2 }))
}

/// `code`, unless a write to stdout failed on the way (a full disk, a
/// closed descriptor): then the output is incomplete, which is a failure.
fn finish(code: ExitCode) -> ExitCode {
    // What C's stdout still buffers goes out now, so that its error is seen.
    let flushed = output::flush_stdout().err();
    match output::take_stdout_error().or(flushed) {
        None => code,
        Some(source) => {
            report_error(&CliError::File { context: "cannot write the output to stdout".to_owned(), source });
            ExitCode::from(1)
        }
    }
}

/// The whole `xplug` command line: parses this process's arguments, runs
/// the command and returns its exit code. `src/main.rs` is only this call,
/// so a binary with plugins linked into it (the tests' `xplug-static`, see
/// `crates/cli/static/`) is the same tool.
#[must_use]
pub fn main() -> ExitCode {
    // A closed stdout ends xplug as it ends iree-run-module: SIGPIPE,
    // without a message or a panic.
    output::die_on_closed_pipe();
    let cli = match parse_arguments(std::env::args_os().collect()) {
        Ok(cli) => cli,
        Err(ParseFailure::Clap(error)) => return clap_outcome(&error),
        Err(ParseFailure::Cli(error)) => {
            report_error(&error);
            return ExitCode::from(error.exit_code());
        }
        Err(ParseFailure::Listing(name)) => {
            let written = output::write_stdout(iree_flags::listing(&name).as_bytes());
            return finish(ExitCode::from(u8::from(written.is_err())));
        }
    };
    finish(outcome(cli))
}

/// Runs the parsed command and reports its error, if any.
fn outcome(cli: Cli) -> ExitCode {
    // In a probe child, the plugin work reports its stages to the parent.
    xplug_probe::install();
    let outcome = run(&cli);
    // Every plugin is unloaded and closed by now: a probe child's parent
    // treats an exit before this mark as the plugin ending the process.
    xplug_probe::finish();
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            if cli.globals.json {
                print_json(&json!({ "ok": false, "error": error.to_json() }));
            }
            report_error(&error);
            ExitCode::from(error.exit_code())
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::{Cli, RunOnlyCli, parse_arguments};

    fn line(words: &[&str]) -> Vec<std::ffi::OsString> {
        std::iter::once("xplug").chain(words.iter().copied()).map(Into::into).collect()
    }

    /// Every `run` line the fast parser accepts parses to what the full
    /// parser gives; lines it refuses are left to the full parser.
    #[test]
    fn the_run_parser_agrees_with_the_full_one() {
        let lines: &[&[&str]] = &[
            &["run", "m.vmfb"],
            &["run", "m.vmfb", "--function=f", "--input=4xf32=1,2,3,4", "--input", "@b.npy"],
            &["run", "--module=a.vmfb", "--module", "b.vmfb", "--parameters=model=w.irpa", "--json"],
            &[
                "run",
                "m.vmfb",
                "--json",
                "--timeout=3",
                "--in-process",
                "--device=local-task",
                "--module_mode=preload",
            ],
            &[
                "run",
                "m.vmfb",
                "--expected_output=4xf32=1,2,3,4",
                "--expected_f32_threshold=0.5",
                "--equality_mode=exact",
            ],
            &[
                "run",
                "m.vmfb",
                "--parameter_mode=preload",
                "--plugin=p.so?k=2",
                "--executable_plugin=q.sos",
                "--static",
            ],
            &[
                "run",
                "m.vmfb",
                "--output=@r.npy",
                "--output=",
                "--trace",
                "--crash-report",
                "--output_max_element_count=7",
            ],
            &["run", "--list-functions", "m.vmfb"],
            &["run", "--list-imports", "m.vmfb", "--device=local-sync://"],
            &["run", "m.vmfb", "--output_max_element_count=-1"],
            &["run", "m.vmfb", "--output_max_element_count", "-1"],
        ];
        for words in lines {
            let full = Cli::try_parse_from(line(words)).expect("the full parser accepts the line");
            let fast = RunOnlyCli::try_parse_from(line(words)).expect("the run parser accepts the line");
            assert_eq!(format!("{:?}", Cli::from(fast)), format!("{full:?}"), "{words:?}");
            assert_eq!(format!("{:?}", parse_arguments(line(words)).expect("parses")), format!("{full:?}"));
        }
    }

    /// Help, version and usage errors are the full parser's, word for word.
    #[test]
    fn help_and_errors_come_from_the_full_parser() {
        let lines: &[&[&str]] = &[
            &["run"],
            &["run", "--help"],
            &["run", "-h"],
            &["run", "m.vmfb", "--bogus"],
            &["run", "m.vmfb", "--timeout=0"],
            &["run", "m.vmfb", "--parameter_mode=copy"],
            &["run", "m.vmfb", "--output_max_element_count=x"],
            &["run", "--version"],
            &["--json", "run", "--nope"],
        ];
        for words in lines {
            let full = Cli::try_parse_from(line(words)).expect_err("the full parser refuses the line");
            let Err(super::ParseFailure::Clap(ours)) = parse_arguments(line(words)) else {
                panic!("{words:?}: refused by clap")
            };
            assert_eq!(ours.kind(), full.kind(), "{words:?}");
            assert_eq!(ours.to_string(), full.to_string(), "{words:?}");
        }
    }

    /// A negative element count prints every element, as iree-run-module
    /// takes it; the default is its 1024.
    #[test]
    fn element_counts_are_taken_as_iree_run_module_takes_them() {
        let count = |words: &[&str]| match Cli::try_parse_from(line(words)).expect("parses").command {
            super::Command::Run(run) => run.max_elements,
            other => panic!("{other:?}"),
        };
        assert_eq!(count(&["run", "m.vmfb"]), 1024);
        assert_eq!(count(&["run", "m.vmfb", "--output_max_element_count=7"]), 7);
        assert_eq!(count(&["run", "m.vmfb", "--output_max_element_count=-1"]), usize::MAX);
        assert_eq!(count(&["run", "m.vmfb", "--output_max_element_count", "-2"]), usize::MAX);
        let error =
            Cli::try_parse_from(line(&["run", "m.vmfb", "--output_max_element_count=x"])).unwrap_err();
        assert!(error.to_string().contains("`x` is not a whole number of elements (-1: all)"), "{error}");
    }

    #[test]
    fn the_parsers_are_well_formed() {
        Cli::command().debug_assert();
        RunOnlyCli::command().debug_assert();
    }
}
