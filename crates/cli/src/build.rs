//! `xplug build --sos`: builds a plugin crate as a standalone embedded ELF
//! file through `xplug-build` (the one implementation of that build) and
//! says what it made, where, and which records it skipped and why.

use std::path::PathBuf;

use serde_json::json;

use crate::error::CliError;
use crate::globals::GlobalArgs;
use crate::output::{Style, Table, print_json};

/// Build the plugin crate of the current directory (or --manifest-path)
/// as a standalone embedded ELF file (`.sos`), with a FatELF record for
/// every installed rustup target it supports.
#[derive(Debug, clap::Args)]
#[command(after_help = "The crate needs a `sos` feature that makes it no_std and turns on \
                  `xplug-sdk/standalone` (`xplug new --standalone` scaffolds one).\n\
                  Example:\n  xplug build --sos\n  xplug build --sos --manifest-path my_plugin/Cargo.toml --out-dir dist")]
pub(crate) struct BuildArgs {
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
}

impl BuildArgs {
    /// Runs `xplug build --sos`; returns the exit code.
    pub(crate) fn run(&self, globals: &GlobalArgs) -> Result<u8, CliError> {
        run(self, globals.json)
    }
}

fn run(options: &BuildArgs, json_output: bool) -> Result<u8, CliError> {
    let manifest = match &options.manifest_path {
        Some(path) => path.clone(),
        None => nearest_manifest()?,
    };
    let mut sos = xplug_build::SosOptions::new(&manifest);
    sos.package.clone_from(&options.package);
    sos.out_dir.clone_from(&options.out_dir);
    sos.keep_symbols = options.keep_symbols;
    let report = xplug_build::build_sos(&sos).map_err(|source| {
        // The tool's own output (cargo's diagnostics, the linker's
        // undefined symbols), as the tool printed it, before the error.
        if let xplug_build::BuildError::Failed { stderr, .. } = &source {
            eprint!("{stderr}");
        }
        CliError::Build { manifest: manifest.clone(), source }
    })?;
    if json_output {
        print_json(&json!({
            "ok": true,
            "package": report.package,
            "sos": report.path.display().to_string(),
            "size": report.size,
            "records": report.records.iter().map(|record| json!({
                "target": record.target,
                "rustc": record.rustc.display().to_string(),
                "size": record.size,
                "elf": record.elf.display().to_string(),
            })).collect::<Vec<_>>(),
            "skipped": report.skipped.iter().map(|skipped| json!({
                "target": skipped.target,
                "reason": skipped.reason,
            })).collect::<Vec<_>>(),
        }));
        return Ok(0);
    }
    let style = Style::stdout();
    let targets: Vec<&str> = report.records.iter().map(|record| record.target.as_str()).collect();
    println!(
        "{} {} ({} bytes, {} record{}: {})",
        style.good("built"),
        report.path.display(),
        report.size,
        report.records.len(),
        if report.records.len() == 1 { "" } else { "s" },
        targets.join(", ")
    );
    let mut table = Table::new(["record", "bytes", "status"]);
    for record in &report.records {
        table.row([record.target.clone(), record.size.to_string(), "built".to_owned()]);
    }
    for skipped in &report.skipped {
        table.row([skipped.target.clone(), "-".to_owned(), format!("skipped: {}", skipped.reason)]);
    }
    print!("{}", table.render(style));
    println!("load it: xplug inspect {}", report.path.display());
    println!("         iree-run-module --executable_plugin={} ...", report.path.display());
    Ok(0)
}

/// The `Cargo.toml` in the current directory or the nearest one above it
/// (where `cargo build` would look).
fn nearest_manifest() -> Result<PathBuf, CliError> {
    let here = std::env::current_dir().map_err(|source| CliError::File {
        context: "cannot read the current directory".to_owned(),
        source,
    })?;
    here.ancestors().map(|dir| dir.join("Cargo.toml")).find(|manifest| manifest.is_file()).ok_or_else(|| {
        CliError::Usage {
            message: format!(
                "no Cargo.toml in {} or any directory above it; run `xplug build --sos` inside the plugin \
                 crate or pass --manifest-path",
                here.display()
            ),
        }
    })
}
