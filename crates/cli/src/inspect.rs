//! `xplug inspect PLUGIN`: what a plugin says about itself.

use serde_json::json;
use xplug_abi::{Features, Sanitizer, Version};
use xplug_manager::spec::PluginSpec;
use xplug_providers::raw::{ParamDeclInfo, RawHeader};
use xplug_providers::{CodeDetail, PluginInfo};

use crate::error::CliError;
use crate::globals::GlobalArgs;
use crate::isolate::{self, Isolation};
use crate::output::{Style, Table, print_json, safe};
use crate::trust;

/// Show a plugin's header, the loader used for it and its exported symbols.
#[derive(Debug, clap::Args)]
pub(crate) struct InspectArgs {
    /// A plugin library path (`?key=value` load parameters allowed), or
    /// `static:NAME` for a plugin linked into xplug.
    plugin: String,
}

impl InspectArgs {
    /// Runs the command (in a probe child unless `--in-process`); returns
    /// the exit code.
    pub(crate) fn run(&self, globals: &GlobalArgs) -> Result<u8, CliError> {
        match globals.isolation() {
            Isolation::InProcess => run(&self.plugin, globals.json),
            Isolation::Child(timeout) => isolate::rerun_whole_command(&self.plugin, timeout),
        }
    }
}

/// Feature names, with unknown bits as hex.
pub(crate) fn feature_names(features: Features) -> Vec<String> {
    let mut names: Vec<String> = features.names().map(str::to_owned).collect();
    if !features.unknown().is_empty() {
        names.push(format!("{:#x}", features.unknown().0));
    }
    names
}

/// The sanitizer's name, or its number when unknown.
pub(crate) fn sanitizer_name(sanitizer: Sanitizer) -> String {
    sanitizer.name().map_or_else(|| format!("unknown ({})", sanitizer.0), str::to_owned)
}

/// What `inspect` found.
struct Report {
    info: PluginInfo,
    loader: &'static str,
    exports: Option<Vec<String>>,
    /// The load parameters the plugin declares (`xplug_plugin_params`).
    param_decls: Option<Vec<ParamDeclInfo>>,
    /// Why the loader refused the plugin, when it did (the header was then
    /// read directly from the code).
    load_error: Option<CliError>,
    /// What the loader decided while opening the code (for an embedded
    /// ELF: the FatELF record chosen and the segments).
    details: Vec<CodeDetail>,
    /// The hash of the code (checked when pinned).
    hash: crate::pin::CodeHash,
}

fn inspect(plugin: &str) -> Result<Report, CliError> {
    let spec = PluginSpec::parse(plugin)
        .map_err(|source| CliError::Manager { context: format!("cannot use plugin `{plugin}`"), source })?;
    let params = spec.load_params();
    let load_error = |source| CliError::load(plugin, source);
    // The code is opened once, by the loader that claims the spec: its
    // lists and header are read from the code the plugin is then loaded
    // from, and the details shown are those it runs from.
    let code = trust::open_code(&spec).map_err(load_error)?;
    let loader = code.loader().name();
    let details = code.details();
    let hash = crate::pin::code_hash(&spec, Some(&code))?;
    let exports = code.optional_exports().and_then(|optional| optional.exports());
    let param_decls = code.optional_exports().and_then(|optional| optional.param_decls());
    let header = code.query().query(Version::LATEST).and_then(|table| table.header().ok().flatten());
    match code.load(&params) {
        Ok(loaded) => Ok(Report {
            info: loaded.info().clone(),
            loader,
            exports,
            param_decls,
            load_error: None,
            details,
            hash,
        }),
        // Refused by the loader (version, features, sanitizer, load): show
        // what the header says anyway, and why it cannot be loaded.
        Err(source) => {
            let Some(header) = header else {
                return Err(load_error(source));
            };
            Ok(Report {
                info: info_from(header),
                loader,
                exports,
                param_decls,
                load_error: Some(load_error(source)),
                details,
                hash,
            })
        }
    }
}

/// The header as `inspect` shows it (a NULL name or description as empty).
fn info_from(header: RawHeader) -> PluginInfo {
    PluginInfo {
        name: header.name.unwrap_or_default(),
        description: header.description.unwrap_or_default(),
        version: header.version,
        features: header.features,
        sanitizer: header.sanitizer,
    }
}

/// Runs the command in this process; returns the exit code.
fn run(plugin: &str, json: bool) -> Result<u8, CliError> {
    let report = inspect(plugin)?;
    if json {
        let features = feature_names(report.info.features);
        let sanitizer = sanitizer_name(report.info.sanitizer);
        let mut value = json!({
            "ok": report.load_error.is_none(),
            "error": report.load_error.as_ref().map(CliError::to_json),
            "name": report.info.name,
            "description": report.info.description,
            "version": report.info.version.0,
            "features": features,
            "sanitizer": sanitizer,
            "loader": report.loader,
            "sha256": report.hash.sha256.map(|sha256| sha256.to_string()),
            "sha256_status": report.hash.status,
            "exports": report.exports,
            "param_decls": report.param_decls.as_ref().map(|decls| decls.iter().map(|param| json!({
                "name": param.name,
                "type": param.kind,
                "default": param.default,
                "description": param.description,
            })).collect::<Vec<_>>()),
        });
        for detail in &report.details {
            value[detail.key()] = match detail.values() {
                [one] if !detail.is_list() => json!(one),
                values => json!(values),
            };
        }
        print_json(&value);
    } else {
        print_human(&report);
    }
    match report.load_error {
        Some(error) => {
            crate::error::report_error(&error);
            Ok(1)
        }
        None => Ok(0),
    }
}

fn print_human(report: &Report) {
    let features = feature_names(report.info.features);
    let sanitizer = sanitizer_name(report.info.sanitizer);
    let style = Style::stdout();
    let mut table = Table::new(Vec::<String>::new());
    // Plugin strings are escaped: they may hold terminal control codes.
    table.row([style.bold("name"), safe(&report.info.name)]);
    table.row([style.bold("description"), safe(&report.info.description)]);
    table.row([style.bold("version"), report.info.version.to_string()]);
    table.row([
        style.bold("features"),
        if features.is_empty() { "none".to_owned() } else { features.join(", ") },
    ]);
    table.row([style.bold("sanitizer"), sanitizer]);
    let loader = match &report.load_error {
        None => report.loader.to_owned(),
        Some(_) => format!("{} ({})", report.loader, style.bad("refuses it, see below")),
    };
    table.row([style.bold("loader"), loader]);
    table.row([style.bold("sha256"), report.hash.shown()]);
    let exports = match &report.exports {
        Some(names) => format!("{} symbol(s)", names.len()),
        None => "not listed (the plugin has no xplug_plugin_exports)".to_owned(),
    };
    table.row([style.bold("exports"), exports]);
    let decls = match &report.param_decls {
        Some(decls) if decls.is_empty() => "none (the plugin refuses every key)".to_owned(),
        Some(decls) => format!("{} declared (other keys are refused)", decls.len()),
        None => "not declared (the plugin has no xplug_plugin_params)".to_owned(),
    };
    table.row([style.bold("param decls"), decls]);
    for detail in &report.details {
        table.row([style.bold(detail.key()), detail.values().join(", ")]);
    }
    print!("{}", table.render(style));
    for name in report.exports.iter().flatten() {
        println!("  {}", safe(name));
    }
    if let Some(decls) = report.param_decls.as_ref().filter(|decls| !decls.is_empty()) {
        let mut table = Table::new(["param decl", "type", "default", "description"]);
        for param in decls {
            table.row([
                param.name.clone(),
                param.kind.clone(),
                param.default.clone().unwrap_or_else(|| "-".to_owned()),
                param.description.clone(),
            ]);
        }
        print!("{}", table.render(style));
    }
}
