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
//! own. `run` runs the program in a supervised child (this process,
//! forked) that shares its stdio, so a fault of the module's code or of a
//! plugin is one error.

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
mod globals;
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

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde_json::json;

use crate::error::{CliError, report_error};
use crate::globals::GlobalArgs;
use crate::output::print_json;

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
    Run(run::RunArgs),
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

/// The commands, each declared once, by its own `clap::Args` struct in its
/// module, which also runs it.
#[derive(Debug, Subcommand)]
#[expect(
    clippy::large_enum_variant,
    reason = "parsed once per process; `Run` carries IREE's many flags, and boxing them would only add noise"
)]
enum Command {
    Inspect(inspect::InspectArgs),
    Pin(pin::PinArgs),
    Resolve(resolve::ResolveArgs),
    Check(check::CheckArgs),
    Bench(bench::BenchArgs),
    Call(call::CallArgs),
    Run(run::RunArgs),
    Fatelf(fatelf::FatelfArgs),
    Build(build::BuildArgs),
    New(new::NewArgs),
    Demo(demo::DemoArgs),
}

/// Runs the parsed command; returns its exit code.
fn run(cli: &Cli) -> Result<u8, CliError> {
    let globals = &cli.globals;
    match &cli.command {
        Command::Inspect(command) => command.run(globals),
        Command::Pin(command) => command.run(globals),
        Command::Resolve(command) => command.run(globals),
        Command::Check(command) => command.run(globals),
        Command::Bench(command) => command.run(globals),
        Command::Call(command) => command.run(globals),
        Command::Run(command) => command.run(globals),
        Command::Fatelf(command) => command.run(globals),
        Command::Build(command) => command.run(globals),
        Command::New(command) => command.run(globals),
        Command::Demo(command) => command.run(globals),
    }
}

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
    ExitCode::from(finish(if shown { 0 } else { 2 }))
}

/// `code`, unless a write to stdout failed on the way (a full disk, a
/// closed descriptor): then the output is incomplete, which is a failure.
fn finish(code: u8) -> u8 {
    // What C's stdout still buffers goes out now, so that its error is seen.
    let flushed = output::flush_stdout().err();
    match output::take_stdout_error().or(flushed) {
        None => code,
        Some(source) => {
            report_error(&CliError::File { context: "cannot write the output to stdout".to_owned(), source });
            1
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
            return ExitCode::from(finish(u8::from(written.is_err())));
        }
    };
    ExitCode::from(outcome(cli))
}

/// Runs the parsed command and reports its error, if any; the exit code.
fn outcome(cli: Cli) -> u8 {
    // In a probe child, the plugin work reports its stages to the parent;
    // `run`'s child installs the crash reporter only when asked (it costs
    // a read of each plugin's symbol table, milliseconds per run).
    if matches!(cli.command, Command::Run(_)) {
        xplug_probe::install_marks();
    } else {
        xplug_probe::install();
    }
    let outcome = run(&cli);
    // Every plugin is unloaded and closed by now: a probe child's parent
    // treats an exit before this mark as the plugin ending the process.
    xplug_probe::finish();
    exit_code_of(outcome, cli.globals.json)
}

/// The exit code a command's outcome ends the process with: its error
/// reported first (as JSON too with `--json`), and a failed write to
/// stdout on the way made a failure ([`finish`]). `run`'s supervised
/// child ends with it too.
fn exit_code_of(outcome: Result<u8, CliError>, json: bool) -> u8 {
    let code = match outcome {
        Ok(code) => code,
        Err(error) => {
            if json {
                print_json(&json!({ "ok": false, "error": error.to_json() }));
            }
            report_error(&error);
            error.exit_code()
        }
    };
    finish(code)
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
