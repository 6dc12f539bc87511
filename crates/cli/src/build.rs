//! `xplug build`: builds a plugin crate as a standalone embedded ELF file
//! (`--sos`) or its kernels as objects and bitcode linked into an IREE
//! executable (`--object`, `--bitcode`), through `xplug-build` (the one
//! implementation of those builds), and says what it made, where, which
//! targets it skipped and why, and for linked kernels the MLIR a program
//! needs.

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
    /// Build the `.sos`.
    pub(crate) sos: bool,
    /// Build linked kernels as objects.
    pub(crate) object: bool,
    /// Build linked kernels as bitcode.
    pub(crate) bitcode: bool,
    /// Where the MLIR of linked kernels goes (default: stdout).
    pub(crate) mlir: Option<&'a Path>,
}

/// Runs `xplug build`.
pub(crate) fn run(options: &Options<'_>, json_output: bool) -> Result<u8, CliError> {
    let manifest = match options.manifest_path {
        Some(path) => path.to_path_buf(),
        None => nearest_manifest()?,
    };
    if options.sos {
        run_sos(options, &manifest, json_output)?;
    }
    if options.object || options.bitcode {
        run_linked(options, &manifest, json_output)?;
    }
    Ok(0)
}

/// Shows the tool's own output (cargo's diagnostics, the linker's
/// undefined symbols) as the tool printed it, before the error.
fn build_error(what: &'static str, manifest: &Path, source: xplug_build::BuildError) -> CliError {
    if let xplug_build::BuildError::Failed { stderr, .. } = &source {
        eprint!("{stderr}");
    }
    CliError::Build { what, manifest: manifest.to_path_buf(), source }
}

/// `xplug build --object` / `--bitcode`.
fn run_linked(options: &Options<'_>, manifest: &Path, json_output: bool) -> Result<(), CliError> {
    let mut linked = xplug_build::LinkedOptions::new(manifest);
    linked.package = options.package.map(str::to_owned);
    linked.out_dir = options.out_dir.map(Path::to_path_buf);
    let report = xplug_build::build_linked(&linked)
        .map_err(|source| build_error("linked kernels", manifest, source))?;
    let formats: Vec<xplug_build::LinkedFormat> = [
        (options.object, xplug_build::LinkedFormat::Object),
        (options.bitcode, xplug_build::LinkedFormat::Bitcode),
    ]
    .into_iter()
    .filter_map(|(wanted, format)| wanted.then_some(format))
    .collect();
    let mlir: String = formats.iter().map(|format| report.mlir(*format)).collect::<Vec<_>>().join("\n");
    if let Some(path) = options.mlir {
        std::fs::write(path, &mlir).map_err(|source| CliError::File {
            context: format!("cannot write the MLIR to {}", path.display()),
            source,
        })?;
    }
    if json_output {
        print_json(&json!({
            "ok": true,
            "package": report.package,
            "kernels": report.kernels.iter().map(|kernel| json!({
                "symbol": kernel.symbol,
                "declaration": kernel.declaration(),
            })).collect::<Vec<_>>(),
            "files": report.files.iter().map(|files| json!({
                "target": files.target,
                "rustc": files.rustc.display().to_string(),
                "object": options.object.then(|| files.object.display().to_string()),
                "bitcode": options.bitcode.then(|| files.bitcode.display().to_string()),
            })).collect::<Vec<_>>(),
            "skipped": report.skipped.iter().map(|skipped| json!({
                "target": skipped.target,
                "reason": skipped.reason,
            })).collect::<Vec<_>>(),
            "mlir": mlir,
        }));
        return Ok(());
    }
    let style = Style::stdout();
    let symbols: Vec<&str> = report.kernels.iter().map(|kernel| kernel.symbol.as_str()).collect();
    println!(
        "{} {} kernel{} of {}: {}",
        style.good("built"),
        report.kernels.len(),
        if report.kernels.len() == 1 { "" } else { "s" },
        report.package,
        symbols.join(", ")
    );
    let mut table = Table::new(["target", "file", "status"]);
    for files in &report.files {
        for (wanted, path) in [(options.object, &files.object), (options.bitcode, &files.bitcode)] {
            if wanted {
                table.row([files.target.clone(), path.display().to_string(), "built, links".to_owned()]);
            }
        }
    }
    for skipped in &report.skipped {
        table.row([skipped.target.clone(), "-".to_owned(), format!("skipped: {}", skipped.reason)]);
    }
    print!("{}", table.render(style));
    let dir = report
        .files
        .first()
        .and_then(|files| files.object.parent())
        .map(Path::to_path_buf)
        .unwrap_or_default();
    match options.mlir {
        Some(path) => println!("MLIR for the program: {}", path.display()),
        None => print!("{mlir}"),
    }
    println!("compile with: iree-compile --iree-hal-executable-object-search-path={} ...", dir.display());
    Ok(())
}

/// `xplug build --sos`.
fn run_sos(options: &Options<'_>, manifest: &Path, json_output: bool) -> Result<(), CliError> {
    let mut sos = xplug_build::SosOptions::new(manifest);
    sos.package = options.package.map(str::to_owned);
    sos.out_dir = options.out_dir.map(Path::to_path_buf);
    sos.keep_symbols = options.keep_symbols;
    let report = xplug_build::build_sos(&sos).map_err(|source| build_error(".sos", manifest, source))?;
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
        return Ok(());
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
    Ok(())
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
