//! `xplug fatelf`: join ELF plugins into a FatELF container (`.sos`) and
//! list a container's records, with the record this host's embedded loader
//! would pick.

use std::path::{Path, PathBuf};

use clap::Subcommand;
use serde_json::json;
use xplug_providers::embedded_elf::{self, FatElfRecord, fatelf};

use crate::error::CliError;
use crate::globals::GlobalArgs;
use crate::output::{Style, Table, print_json};

/// What `xplug fatelf` does.
#[derive(Debug, Subcommand)]
pub(crate) enum Action {
    /// Join ELF files into one FatELF container; the loader picks the first
    /// record matching its host, so list the preferred ELF first.
    Join {
        /// The container to write.
        output: PathBuf,
        /// The ELF files, one record each.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
    },
    /// List a container's records and the one this host would load.
    List {
        /// The container (or a plain ELF).
        file: PathBuf,
    },
}

/// Reads a plugin file; a missing file is the loaders' `FileNotFound`.
pub(crate) fn read(path: &Path) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            CliError::load(
                &path.display().to_string(),
                xplug_providers::Error::FileNotFound { path: path.to_path_buf() },
            )
        } else {
            CliError::File { context: format!("cannot read {}", path.display()), source }
        }
    })
}

/// Join ELF plugins into a FatELF container (`.sos`) or list one's records.
#[derive(Debug, clap::Args)]
pub(crate) struct FatelfArgs {
    #[command(subcommand)]
    action: Action,
}

impl FatelfArgs {
    /// Runs the action; returns the exit code.
    pub(crate) fn run(&self, globals: &GlobalArgs) -> Result<u8, CliError> {
        run(&self.action, globals.json)
    }
}

/// Runs one `fatelf` action; returns the exit code.
fn run(action: &Action, json: bool) -> Result<u8, CliError> {
    match action {
        Action::Join { output, inputs } => {
            let elves = inputs.iter().map(|path| read(path)).collect::<Result<Vec<_>, _>>()?;
            let slices: Vec<&[u8]> = elves.iter().map(Vec::as_slice).collect();
            let container = fatelf::join(&slices).map_err(|source| CliError::FatElf {
                context: format!("cannot join {} file(s) into {}", inputs.len(), output.display()),
                source,
            })?;
            std::fs::write(output, &container).map_err(|source| CliError::File {
                context: format!("cannot write {}", output.display()),
                source,
            })?;
            list(output, &container, json)
        }
        Action::List { file } => list(file, &read(file)?, json),
    }
}

fn list(path: &Path, bytes: &[u8], json: bool) -> Result<u8, CliError> {
    let describe = |source| CliError::FatElf {
        context: format!("{} is not a usable FatELF container", path.display()),
        source,
    };
    let records: Vec<FatElfRecord> =
        if fatelf::is_fatelf(bytes) { fatelf::records(bytes).map_err(describe)? } else { Vec::new() };
    // What this host's loader would do with the file.
    let verdict = embedded_elf::validate(bytes);
    let chosen = verdict.as_ref().ok().and_then(|plan| plan.record().map(|record| record.index));
    if json {
        print_json(&json!({
            "ok": true,
            "file": path.display().to_string(),
            "fatelf": fatelf::is_fatelf(bytes),
            "records": records.iter().map(|record| json!({
                "index": record.index,
                "machine": record.machine,
                "architecture": record.to_string(),
                "offset": record.offset,
                "size": record.size,
                "chosen": chosen == Some(record.index),
            })).collect::<Vec<_>>(),
            "host": match &verdict {
                Ok(_) => json!({"loads": true}),
                Err(error) => json!({"loads": false, "reason": error.to_string()}),
            },
        }));
        return Ok(0);
    }
    let style = Style::stdout();
    if records.is_empty() {
        println!("{}: a plain ELF (no FatELF container), {} bytes", path.display(), bytes.len());
    } else {
        let mut table = Table::new(["record", "architecture", "offset", "size", "host"]);
        for record in &records {
            table.row([
                record.index.to_string(),
                record.to_string(),
                record.offset.to_string(),
                record.size.to_string(),
                if chosen == Some(record.index) { "chosen".to_owned() } else { String::new() },
            ]);
        }
        print!("{}", table.render(style));
    }
    match verdict {
        Ok(_) => println!("{}", style.good("this host's embedded loader accepts it")),
        Err(error) => println!("{} {error}", style.warn("this host's embedded loader refuses it:")),
    }
    Ok(0)
}
