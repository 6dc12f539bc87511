//! `cargo xtask`: project automation for xplug.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "xplug project automation")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Regenerate include/xplug/executable_plugin.h from xplug-abi.
    Header {
        /// Do not write; fail if the committed header differs from a fresh one.
        #[arg(long)]
        verify: bool,
    },
    /// Build the example plugins as shared libraries into target/plugins/.
    BuildPlugins {
        /// Build with optimisations.
        #[arg(long)]
        release: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::BuildPlugins { release } => {
            let root = xtask::workspace_root();
            match xtask::plugins::build(&root, release) {
                Ok(built) => {
                    print!("{}", xtask::plugins::table(&root, &built));
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
