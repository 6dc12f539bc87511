//! `xplug inspect PLUGIN`: what a plugin says about itself.

use std::path::Path;

use serde_json::json;
use xplug_abi::{Features, Sanitizer, Version};
use xplug_manager::spec::{PluginSpec, SpecTarget};
use xplug_providers::raw::{ParamDeclInfo, RawHeader};
use xplug_providers::{LoadParamList, Plugin, PluginInfo, static_plugins};

use crate::error::CliError;
use crate::output::{Style, Table, print_json, safe};
use crate::trust;

/// The prefix naming a plugin linked into this binary (`static:sample_static`).
pub(crate) const STATIC_PREFIX: &str = "static:";

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
    /// read directly from the library).
    load_error: Option<CliError>,
    /// For an embedded ELF: the FatELF record chosen and the segments.
    embedded: Option<Embedded>,
}

/// What the embedded loader decided for a `.sos`.
struct Embedded {
    record: String,
    segments: Vec<String>,
}

fn inspect_embedded(plugin: &str, spec: &PluginSpec, file: &str) -> Result<Report, CliError> {
    let path = Path::new(file);
    let bytes = crate::fatelf::read(path)?;
    let params = spec.load_params();
    // Validated and mapped once: the plan shown is the one the plugin runs from.
    // The same error (and so the same kind) as every other command's.
    let loaded = trust::load_embedded_image(file, &bytes, &params)
        .map_err(|source| CliError::Load { what: plugin.to_owned(), source })?;
    let embedded = loaded.elf_image().map(|image| {
        let plan = image.plan();
        let record = plan.record().map_or_else(
            || "plain ELF (no FatELF container)".to_owned(),
            |record| {
                format!(
                    "{} of {}: {record}",
                    record.index,
                    xplug_providers::embedded_elf::fatelf::records(&bytes).map_or(0, |all| all.len())
                )
            },
        );
        let segments = plan
            .segments()
            .iter()
            .map(|segment| {
                format!(
                    "{:#08x}..{:#08x} {}",
                    segment.image_offset,
                    segment.image_offset + segment.mem_size,
                    segment.flags
                )
            })
            .collect();
        Embedded { record, segments }
    });
    Ok(Report {
        info: loaded.info().clone(),
        loader: "embedded ELF",
        // xplug's optional exports, read from the `.sos` by xplug's loader.
        exports: loaded.exports().map(<[String]>::to_vec),
        param_decls: loaded.param_decls().map(<[ParamDeclInfo]>::to_vec),
        load_error: None,
        embedded,
    })
}

fn inspect(plugin: &str) -> Result<Report, CliError> {
    if let Some(name) = plugin.strip_prefix(STATIC_PREFIX) {
        let registrations = static_plugins();
        // The manager's error, so the kind is the one `resolve` and `call`
        // give for the same spec.
        let registration =
            registrations.iter().find(|r| r.name() == name).ok_or_else(|| CliError::Plugin {
                source: xplug_manager::Error::StaticPluginNotFound {
                    name: name.to_owned(),
                    linked: registrations.iter().map(|r| r.name().to_owned()).collect(),
                },
            })?;
        let loaded = Plugin::from_registration(registration, &LoadParamList::new())
            .map_err(|source| CliError::Load { what: plugin.to_owned(), source })?;
        return Ok(Report {
            info: loaded.info().clone(),
            loader: "static",
            exports: None,
            param_decls: None,
            load_error: None,
            embedded: None,
        });
    }
    let spec = PluginSpec::parse(plugin)
        .map_err(|source| CliError::Manager { context: format!("cannot use plugin `{plugin}`"), source })?;
    let path = match spec.target() {
        SpecTarget::EmbeddedElf { path } => return inspect_embedded(plugin, &spec, path),
        SpecTarget::SystemLibrary { path } => Path::new(path),
        // `static:` specs are answered above, from the registrations.
        _ => return Err(CliError::Usage { message: format!("`{plugin}` names no plugin file to inspect") }),
    };
    let params = spec.load_params();
    // The file is opened once: its lists and header are read from the
    // library the plugin is then loaded from.
    let raw =
        trust::open_raw_library(path).map_err(|source| CliError::Load { what: plugin.to_owned(), source })?;
    let exports = raw.exports();
    let declared = raw.param_decls();
    let header = raw
        .query()
        .ok()
        .and_then(|query| query.query(Version::LATEST))
        .and_then(|t| t.header().ok().flatten());
    match Plugin::from_raw_library(raw, &params) {
        Ok(loaded) => Ok(Report {
            info: loaded.info().clone(),
            loader: "system library",
            exports,
            param_decls: declared,
            load_error: None,
            embedded: None,
        }),
        // Refused by the loader (version, features, sanitizer, load): show
        // what the header says anyway, and why it cannot be loaded.
        Err(source) => {
            let Some(header) = header else {
                return Err(CliError::Load { what: plugin.to_owned(), source });
            };
            Ok(Report {
                info: info_from(header),
                loader: "system library",
                exports,
                param_decls: declared,
                load_error: Some(CliError::Load { what: plugin.to_owned(), source }),
                embedded: None,
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

/// Runs the command; returns the exit code.
pub(crate) fn run(plugin: &str, json: bool) -> Result<u8, CliError> {
    let report = inspect(plugin)?;
    if json {
        let features = feature_names(report.info.features);
        let sanitizer = sanitizer_name(report.info.sanitizer);
        print_json(&json!({
            "ok": report.load_error.is_none(),
            "error": report.load_error.as_ref().map(CliError::to_json),
            "name": report.info.name,
            "description": report.info.description,
            "version": report.info.version.0,
            "features": features,
            "sanitizer": sanitizer,
            "loader": report.loader,
            "exports": report.exports,
            "param_decls": report.param_decls.as_ref().map(|decls| decls.iter().map(|param| json!({
                "name": param.name,
                "type": param.kind,
                "default": param.default,
                "description": param.description,
            })).collect::<Vec<_>>()),
            "record": report.embedded.as_ref().map(|embedded| embedded.record.clone()),
            "segments": report.embedded.as_ref().map(|embedded| embedded.segments.clone()),
        }));
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
    if let Some(embedded) = &report.embedded {
        table.row([style.bold("record"), embedded.record.clone()]);
        table.row([style.bold("segments"), embedded.segments.join(", ")]);
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
