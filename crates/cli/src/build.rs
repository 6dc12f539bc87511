//! `xplug build --sos`: builds a plugin crate as a standalone embedded ELF
//! file through `xplug-build` (the one implementation of that build) and
//! says what it made, where, and which records it skipped and why.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::error::CliError;
use crate::output::{Style, Table, print_json};

/// What `xplug build` was asked for.
pub(crate) struct Options<'a> {
    /// The plugin crate's manifest (default: the nearest `Cargo.toml`).
    pub(crate) manifest_path: Option<&'a Path>,
    /// The package, for a workspace manifest.
    pub(crate) package: Option<&'a str>,
    /// Where the `.sos` goes.
    pub(crate) out_dir: Option<&'a Path>,
    /// Link without `--discard-all` (`--keep-symbols`).
    pub(crate) keep_symbols: bool,
}

/// Runs `xplug build --sos`.
pub(crate) fn run(options: &Options<'_>, json_output: bool) -> Result<u8, CliError> {
    let manifest = match options.manifest_path {
        Some(path) => path.to_path_buf(),
        None => nearest_manifest()?,
    };
    let mut sos = xplug_build::SosOptions::new(&manifest);
    sos.package = options.package.map(str::to_owned);
    sos.out_dir = options.out_dir.map(Path::to_path_buf);
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
