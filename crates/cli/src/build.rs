//! `xplug build --sos`: builds a plugin crate as a standalone embedded ELF
//! file through `xplug-build` (the one implementation of that build) and
//! says what it made, where, and which records it skipped and why.

use std::path::Path;

use serde_json::json;

use crate::error::CliError;
use crate::output::{Style, Table, print_json};

/// What `xplug build` was asked for.
pub(crate) struct Options<'a> {
    /// The plugin crate's manifest.
    pub(crate) manifest_path: &'a Path,
    /// The package, for a workspace manifest.
    pub(crate) package: Option<&'a str>,
    /// Where the `.sos` goes.
    pub(crate) out_dir: Option<&'a Path>,
}

/// Runs `xplug build --sos`.
pub(crate) fn run(options: &Options<'_>, json_output: bool) -> Result<u8, CliError> {
    let mut sos = xplug_build::SosOptions::new(options.manifest_path);
    sos.package = options.package.map(str::to_owned);
    sos.out_dir = options.out_dir.map(Path::to_path_buf);
    let report = xplug_build::build_sos(&sos).map_err(|source| {
        // The tool's own output (cargo's diagnostics, the linker's
        // undefined symbols), as the tool printed it, before the error.
        if let xplug_build::BuildError::Failed { stderr, .. } = &source {
            eprint!("{stderr}");
        }
        CliError::Build { manifest: options.manifest_path.to_path_buf(), source }
    })?;
    if json_output {
        print_json(&json!({
            "ok": true,
            "package": report.package,
            "sos": report.path.display().to_string(),
            "size": report.size,
            "records": report.records.iter().map(|record| json!({
                "target": record.target,
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
    println!(
        "{} {} ({} bytes, {} record{})",
        style.good("built"),
        report.path.display(),
        report.size,
        report.records.len(),
        if report.records.len() == 1 { "" } else { "s" }
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
