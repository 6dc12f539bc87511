//! `xplug build`: builds a plugin crate as a standalone embedded ELF file
//! (`--sos`) or its kernels as objects and bitcode linked into an IREE
//! executable (`--object`, `--bitcode`), through `xplug-build` (the one
//! implementation of those builds), and says what it made, where, which
//! targets it skipped and why, and for linked kernels the MLIR a program
//! needs.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::error::CliError;
use crate::globals::GlobalArgs;
use crate::output::{Style, Table, print_json};

/// Build the plugin crate of the current directory (or --manifest-path)
/// as a standalone embedded ELF file (`.sos`), with a FatELF record for
/// every installed rustup target it supports, or its kernels as objects
/// and LLVM bitcode that IREE's compiler links into the executable.
#[derive(Debug, clap::Args)]
#[command(
    group(clap::ArgGroup::new("output").required(true).multiple(true).args(["sos", "object", "bitcode"])),
    group(clap::ArgGroup::new("linked").multiple(true).args(["object", "bitcode"])),
    after_help = "The crate needs a `sos` feature that makes it no_std and turns on \
                  `xplug-sdk/standalone` (`xplug new --standalone` scaffolds one).\n\
                  Examples:\n  xplug build --sos\n  xplug build --sos --manifest-path my_plugin/Cargo.toml --out-dir dist\n  \
                  xplug build --object --bitcode --mlir kernels.mlir\n  \
                  xplug build --object --bitcode --program my_program.mlir"
)]
pub(crate) struct BuildArgs {
    /// Build the `.sos` (an output is required, so that a plain `xplug
    /// build` is not mistaken for `cargo build`).
    #[arg(long)]
    sos: bool,
    /// Build the stateless imports as kernels linked into the
    /// executable at compile time: one relocatable object per
    /// architecture (NAME.TARGET.o), checked for what IREE's linker
    /// cannot take, and print the MLIR a program needs to use them.
    #[arg(long)]
    object: bool,
    /// As --object, as LLVM bitcode (NAME.TARGET.bc), which IREE
    /// optimises together with the generated code.
    #[arg(long)]
    bitcode: bool,
    /// With --object or --bitcode: write the MLIR (the
    /// `hal.executable.objects` attribute and the declarations) to FILE
    /// instead of printing it.
    #[arg(long, value_name = "FILE", requires = "linked")]
    mlir: Option<PathBuf>,
    /// With --object or --bitcode: the program FILE.mlir, which calls the
    /// kernels as imports (as it does with the plugin), rewritten to link
    /// them instead: FILE.object.mlir and FILE.bitcode.mlir beside the
    /// objects. Compile those and compare their outputs with the import's.
    /// Repeat for several programs.
    #[arg(long, value_name = "FILE.mlir", requires = "linked")]
    program: Vec<PathBuf>,
    /// The plugin crate's Cargo.toml (default: the nearest Cargo.toml
    /// in the current directory or above, as cargo finds it).
    #[arg(long, value_name = "PATH")]
    manifest_path: Option<PathBuf>,
    /// The package to build, when the manifest is a workspace.
    #[arg(long, short = 'p', value_name = "NAME")]
    package: Option<String>,
    /// Where to write NAME.sos, or the objects and bitcode (default:
    /// TARGET_DIR/sos, TARGET_DIR/linked).
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// Keep the symbol table (IREE links without it), so crash reports,
    /// gdb and perf name every function of the plugin.
    #[arg(long)]
    keep_symbols: bool,
}

impl BuildArgs {
    /// Runs `xplug build`; returns the exit code.
    pub(crate) fn run(&self, globals: &GlobalArgs) -> Result<u8, CliError> {
        run(self, globals.json)
    }
}

fn run(options: &BuildArgs, json_output: bool) -> Result<u8, CliError> {
    let manifest = match &options.manifest_path {
        Some(path) => path.clone(),
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
    if let xplug_build::BuildError::Step { stderr, .. } = &source {
        eprint!("{stderr}");
    }
    CliError::Build { what, manifest: manifest.to_path_buf(), source }
}

/// `xplug build --object` / `--bitcode`.
fn run_linked(options: &BuildArgs, manifest: &Path, json_output: bool) -> Result<(), CliError> {
    let mut linked = xplug_build::LinkedOptions::new(manifest);
    linked.package.clone_from(&options.package);
    linked.out_dir.clone_from(&options.out_dir);
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
    if let Some(path) = &options.mlir {
        std::fs::write(path, &mlir).map_err(|source| CliError::File {
            context: format!("cannot write the MLIR to {}", path.display()),
            source,
        })?;
    }
    let dir = report
        .files
        .first()
        .and_then(|files| files.object.parent())
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut programs: Vec<(xplug_build::LinkedFormat, PathBuf)> = Vec::new();
    for program in &options.program {
        for format in &formats {
            let linked = report
                .link_program(program, *format)
                .map_err(|source| build_error("linked program", manifest, source))?;
            let stem = program.file_stem().unwrap_or(program.as_os_str()).to_string_lossy();
            let path = dir.join(format!("{stem}.{}.mlir", format.name()));
            std::fs::write(&path, linked).map_err(|source| CliError::File {
                context: format!("cannot write the linked program {}", path.display()),
                source,
            })?;
            programs.push((*format, path));
        }
    }
    if json_output {
        print_json(&json!({
            "ok": true,
            "package": report.package,
            "programs": programs.iter().map(|(format, path)| json!({
                "format": format.name(),
                "path": path.display().to_string(),
            })).collect::<Vec<_>>(),
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
    match (&options.mlir, programs.is_empty()) {
        (Some(path), _) => println!("MLIR for the program: {}", path.display()),
        (None, true) => print!("{mlir}"),
        (None, false) => {}
    }
    for (format, path) in &programs {
        println!("linked program ({}): {}", format.name(), path.display());
    }
    println!("compile with: iree-compile --iree-hal-executable-object-search-path={} ...", dir.display());
    Ok(())
}

/// `xplug build --sos`.
fn run_sos(options: &BuildArgs, manifest: &Path, json_output: bool) -> Result<(), CliError> {
    let mut sos = xplug_build::SosOptions::new(manifest);
    sos.package.clone_from(&options.package);
    sos.out_dir.clone_from(&options.out_dir);
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
