//! `xplug check PLUGIN`: a conformance report for a v0 plugin.
//!
//! The checks are data ([`CHECKS`]): each has a name and a function that
//! opens its own plugin instance, so any one of them can run alone
//! (`xplug check --single-check NAME`). By default each check runs in a
//! child process of its own (this binary with `--in-process --json
//! --single-check NAME`): a crash fails that check ("crashed with SIGSEGV
//! during load") and the others still run; a hang fails it after the
//! timeout, and the checks after it are reported as not run (each would
//! likely wait as long). `--in-process` runs them all here.

use std::ffi::{CString, c_void};
use std::path::Path;

use serde_json::json;
use xplug_abi::{Features, Resolution, StatusCode, Version};
use xplug_manager::spec::{LoaderKind, PluginSpec};
use xplug_providers::raw::open_elf_image;
use xplug_providers::raw::{RawInstance, RawLoadError, RawQuery, RawTable};
use xplug_providers::{CountingAllocator, LoadParamList, ResolveRequest, SymbolName, checks};

use crate::error::CliError;
use crate::isolate::{self, Isolation};
use crate::output::{Style, Table, print_json, safe};
use crate::trust;
use xplug_probe::{ProbeFailure, ProbeStatus};

/// A name no plugin exports.
const UNKNOWN: &str = "xplug_check_no_such_symbol_4f1d";
/// A load parameter no plugin knows.
const CHECK_PARAM: (&str, &str) = ("xplug_check_param", "1");
/// Marks a slot the check filled before calling `resolve`.
const SENTINEL_FN: usize = 0x5e17_1e00;
/// Marks a context the check filled before calling `resolve`.
const SENTINEL_CONTEXT: usize = 0xc0_47e0;

/// What a check runs against: the plugin's query function (from a library
/// the OS loader opened, or an embedded ELF image xplug mapped), the loader
/// whose rules apply, the load parameters the spec gave, and the import
/// names known to be exported (from `xplug_plugin_exports` and `--symbol`).
pub(crate) struct Subject<'a> {
    query: Result<RawQuery<'a>, String>,
    loader: &'static str,
    required: Features,
    params: LoadParamList,
    /// The load parameters the plugin declares (`xplug_plugin_params`), if
    /// it declares any.
    declared: Option<Vec<xplug_providers::raw::ParamInfo>>,
    exports: Vec<String>,
}

/// The verdict of one check: `Ok(detail)` or `Err(detail)`.
type Verdict = Result<String, String>;

/// One conformance check.
pub(crate) struct Check {
    /// Stable name (used by `--single-check` and in the JSON).
    pub(crate) name: &'static str,
    /// What it verifies, for humans.
    pub(crate) description: &'static str,
    run: fn(&Subject<'_>) -> Verdict,
}

/// Every check, in the order they run.
pub(crate) const CHECKS: &[Check] = &[
    Check {
        name: "query-max-version-0",
        description: "query(0) returns NULL (the plugin needs version 1)",
        run: query_max_version_0,
    },
    Check {
        name: "query-latest",
        description: "query(LATEST) returns a table with a header",
        run: query_latest,
    },
    Check {
        name: "header",
        description: "header version, name, features and sanitizer are sane",
        run: header,
    },
    Check {
        name: "load-unload",
        description: "load with the spec's params succeeds; unload frees everything",
        run: load_plain,
    },
    Check {
        name: "load-unload-params",
        description: "an unknown load param is refused (INVALID_ARGUMENT, nothing held) by a plugin that declares \
                      its params, else accepted and unload frees everything",
        run: load_with_params,
    },
    Check { name: "resolve-nothing", description: "resolving zero names is OK", run: resolve_nothing },
    Check {
        name: "resolve-unknown-required",
        description: "an unknown required name gives NOT_FOUND and an empty slot",
        run: resolve_unknown_required,
    },
    Check {
        name: "resolve-unknown-optional",
        description: "an unknown ?optional name gives OK with MISSING_OPTIONAL",
        run: resolve_unknown_optional,
    },
    Check {
        name: "resolve-exports",
        description: "every listed export resolves to a function",
        run: resolve_exports,
    },
    Check {
        name: "filled-slots-untouched",
        description: "slots filled before resolve are skipped and left alone",
        run: filled_slots_untouched,
    },
    Check {
        name: "repeated-resolve-stable",
        description: "resolving the same names twice gives the same pointers",
        run: repeated_resolve_stable,
    },
    Check {
        name: "allocations-balanced",
        description: "after load, resolves and unload the plugin holds no host memory",
        run: allocations_balanced,
    },
];

fn table_for<'a>(subject: &Subject<'a>) -> Result<RawTable<'a>, String> {
    let query = subject.query.clone()?;
    query.query(Version::LATEST).ok_or_else(|| "query(LATEST) returned NULL".to_owned())
}

/// Loads an instance with the spec's params plus `extra`, after the load
/// checks a host applies: a plugin a host would refuse is not run.
fn instance<'a>(subject: &Subject<'a>, extra: &[(&str, &str)]) -> Result<RawInstance<'a>, String> {
    let table = table_for(subject)?;
    checks::check_plugin(table.header().as_ref(), table.entry_points(), subject.loader, subject.required)
        .map_err(|refusal| format!("not run: a host refuses the plugin ({refusal})"))?;
    let mut params = subject.params.clone();
    for (key, value) in extra {
        params.push(*key, *value);
    }
    table.load(&CountingAllocator::new(), &params).map_err(|error| match error {
        RawLoadError::Refused { code } => format!("load returned {code} with {} parameter(s)", params.len()),
        other => other.to_string(),
    })
}

fn query_max_version_0(subject: &Subject<'_>) -> Verdict {
    let query = subject.query.clone()?;
    match query.query(Version(0)) {
        None => Ok("NULL".to_owned()),
        Some(_) => {
            Err("query(0) returned a table; a v0.1 plugin must return NULL when max_version is below 1 \
                        (IREE's samples invert this test)"
                .to_owned())
        }
    }
}

fn query_latest(subject: &Subject<'_>) -> Verdict {
    let table = table_for(subject)?;
    if table.header().is_none() {
        return Err("the table's header pointer is NULL".to_owned());
    }
    let entry_points = table.entry_points();
    let missing: Vec<&str> =
        [("load", !entry_points.load), ("unload", !entry_points.unload), ("resolve", !entry_points.resolve)]
            .into_iter()
            .filter(|(_, missing)| *missing)
            .map(|(name, _)| name)
            .collect();
    if missing.is_empty() {
        Ok(format!("table with header, load, unload and resolve (version {})", Version::LATEST))
    } else {
        Err(format!("the table has NULL {}", missing.join(", ")))
    }
}

fn header(subject: &Subject<'_>) -> Verdict {
    let table = table_for(subject)?;
    let header = table.header().ok_or("NULL header")?;
    // What a host refuses (the same checks `Plugin` applies)...
    let mut problems: Vec<String> = [
        checks::check_version(&header),
        checks::check_name(&header),
        checks::check_status_mode(&header),
        checks::check_sanitizer(&header),
        checks::check_known_features(&header),
    ]
    .into_iter()
    .filter_map(Result::err)
    .map(|refusal| refusal.to_string())
    .collect();
    // ...and what is legal but unhelpful.
    if header.name.as_deref() == Some("") {
        problems.push("name is empty".to_owned());
    }
    if header.description.is_none() {
        problems.push("description is NULL".to_owned());
    }
    if problems.is_empty() {
        Ok(format!(
            "`{}` version {}, features [{}], sanitizer none",
            header.name.unwrap_or_default(),
            header.version,
            header.features.names().collect::<Vec<_>>().join(", ")
        ))
    } else {
        Err(problems.join("; "))
    }
}

fn load_cycle(subject: &Subject<'_>, extra: &[(&str, &str)]) -> Verdict {
    let instance = instance(subject, extra)?;
    let held = instance.allocation_stats();
    let after = instance.unload();
    if after.live_allocations != 0 || after.live_bytes != 0 {
        return Err(format!(
            "after unload the plugin still holds {} block(s), {} byte(s)",
            after.live_allocations, after.live_bytes
        ));
    }
    Ok(format!(
        "loaded holding {} block(s), {} byte(s); all freed by unload",
        held.live_allocations, held.live_bytes
    ))
}

fn load_plain(subject: &Subject<'_>) -> Verdict {
    load_cycle(subject, &[])
}

fn load_with_params(subject: &Subject<'_>) -> Verdict {
    let Some(declared) = &subject.declared else {
        return load_cycle(subject, &[CHECK_PARAM]);
    };
    // A plugin that declares its parameters must refuse any other key.
    let table = table_for(subject)?;
    checks::check_plugin(table.header().as_ref(), table.entry_points(), subject.loader, subject.required)
        .map_err(|refusal| format!("not run: a host refuses the plugin ({refusal})"))?;
    let mut params = subject.params.clone();
    params.push(CHECK_PARAM.0, CHECK_PARAM.1);
    let allocator = CountingAllocator::new();
    let declared_names = declared.iter().map(|param| param.name.as_str()).collect::<Vec<_>>().join(", ");
    match table.load(&allocator, &params) {
        Ok(instance) => {
            let _ = instance.unload();
            Err(format!(
                "the plugin declares its params ({declared_names}) but accepted the unknown key `{}`",
                CHECK_PARAM.0
            ))
        }
        Err(RawLoadError::Refused { code }) if code == StatusCode::INVALID_ARGUMENT => {
            let stats = allocator.stats();
            if stats.live_allocations != 0 {
                return Err(format!(
                    "refused the unknown key but still holds {} block(s), {} byte(s)",
                    stats.live_allocations, stats.live_bytes
                ));
            }
            Ok(format!(
                "refused the unknown key `{}` with INVALID_ARGUMENT (declared: {})",
                CHECK_PARAM.0,
                if declared_names.is_empty() { "none" } else { &declared_names }
            ))
        }
        Err(RawLoadError::Refused { code }) => {
            Err(format!("refused the unknown key with {code}; a bad parameter is INVALID_ARGUMENT"))
        }
        Err(other) => Err(other.to_string()),
    }
}

/// Resolves `names` with the given pre-filled slots; returns the code,
/// resolution, and the slots after the call.
fn resolve(
    instance: &RawInstance<'_>,
    names: &[CString],
    mut fns: Vec<*mut c_void>,
    mut contexts: Vec<*mut c_void>,
) -> (StatusCode, Resolution, Vec<*mut c_void>, Vec<*mut c_void>) {
    let symbols: Vec<SymbolName<'_>> = names.iter().map(|name| SymbolName::new(name)).collect();
    let (code, resolution) = match ResolveRequest::new(&symbols, &mut fns, &mut contexts) {
        Ok(mut request) => instance.resolve(&mut request),
        // The three arrays always have the same length here.
        Err(_) => (StatusCode::INTERNAL, Resolution::NONE),
    };
    (code, resolution, fns, contexts)
}

fn c_names(names: &[String]) -> Vec<CString> {
    names.iter().filter_map(|name| CString::new(name.as_str()).ok()).collect()
}

fn empty(count: usize) -> Vec<*mut c_void> {
    vec![std::ptr::null_mut(); count]
}

fn resolve_nothing(subject: &Subject<'_>) -> Verdict {
    let instance = instance(subject, &[])?;
    let (code, resolution, _, _) = resolve(&instance, &[], Vec::new(), Vec::new());
    if code == StatusCode::OK && resolution == Resolution::NONE {
        Ok("OK".to_owned())
    } else {
        Err(format!("returned {code} with resolution bits {:#x}", resolution.0))
    }
}

fn resolve_unknown_required(subject: &Subject<'_>) -> Verdict {
    let instance = instance(subject, &[])?;
    let names = c_names(&[UNKNOWN.to_owned()]);
    let (code, _, fns, _) = resolve(&instance, &names, empty(1), empty(1));
    match (code, fns[0].is_null()) {
        (StatusCode::NOT_FOUND, true) => Ok("NOT_FOUND".to_owned()),
        (_, false) => Err(format!("filled the slot of `{UNKNOWN}` (returned {code})")),
        (code, true) => Err(format!("returned {code}; a missing required import must give NOT_FOUND")),
    }
}

fn resolve_unknown_optional(subject: &Subject<'_>) -> Verdict {
    let instance = instance(subject, &[])?;
    let names = c_names(&[format!("?{UNKNOWN}")]);
    let (code, resolution, fns, _) = resolve(&instance, &names, empty(1), empty(1));
    if !fns[0].is_null() {
        return Err(format!("filled the slot of `?{UNKNOWN}`"));
    }
    if code != StatusCode::OK {
        return Err(format!("returned {code}; a missing optional import must still give OK"));
    }
    if !resolution.contains(Resolution::MISSING_OPTIONAL) {
        return Err("returned OK without the MISSING_OPTIONAL bit".to_owned());
    }
    Ok("OK with MISSING_OPTIONAL".to_owned())
}

fn no_exports() -> Verdict {
    Ok("skipped: no export names known (the plugin has no xplug_plugin_exports; pass --symbol NAME)"
        .to_owned())
}

fn resolve_exports(subject: &Subject<'_>) -> Verdict {
    if subject.exports.is_empty() {
        return no_exports();
    }
    let instance = instance(subject, &[])?;
    let names = c_names(&subject.exports);
    let (code, _, fns, _) = resolve(&instance, &names, empty(names.len()), empty(names.len()));
    let missing: Vec<&str> =
        subject.exports.iter().zip(&fns).filter(|(_, f)| f.is_null()).map(|(n, _)| n.as_str()).collect();
    if code == StatusCode::OK && missing.is_empty() {
        Ok(format!("{} export(s) resolved", names.len()))
    } else {
        Err(format!("returned {code}; unresolved: [{}]", missing.join(", ")))
    }
}

fn filled_slots_untouched(subject: &Subject<'_>) -> Verdict {
    let instance = instance(subject, &[])?;
    // A required unknown name whose slot is already filled, then every
    // known export, all pre-filled: the plugin must skip them all and OK.
    let mut names = vec![UNKNOWN.to_owned()];
    names.extend(subject.exports.iter().cloned());
    let names = c_names(&names);
    let fns = vec![SENTINEL_FN as *mut c_void; names.len()];
    let contexts = vec![SENTINEL_CONTEXT as *mut c_void; names.len()];
    let (code, _, fns, contexts) = resolve(&instance, &names, fns, contexts);
    let touched = fns
        .iter()
        .zip(&contexts)
        .filter(|&(&f, &c)| f as usize != SENTINEL_FN || c as usize != SENTINEL_CONTEXT)
        .count();
    if touched > 0 {
        return Err(format!("overwrote {touched} pre-filled slot(s)"));
    }
    if code != StatusCode::OK {
        return Err(format!("returned {code} although every slot was already filled"));
    }
    Ok(format!("{} pre-filled slot(s) left alone, OK", names.len()))
}

fn repeated_resolve_stable(subject: &Subject<'_>) -> Verdict {
    if subject.exports.is_empty() {
        return no_exports();
    }
    let instance = instance(subject, &[])?;
    let names = c_names(&subject.exports);
    let first = resolve(&instance, &names, empty(names.len()), empty(names.len()));
    let second = resolve(&instance, &names, empty(names.len()), empty(names.len()));
    if (first.0, first.1, &first.2, &first.3) == (second.0, second.1, &second.2, &second.3) {
        Ok(format!("{} name(s), same status, functions and contexts", names.len()))
    } else {
        Err("the second resolve returned different status, functions or contexts".to_owned())
    }
}

fn allocations_balanced(subject: &Subject<'_>) -> Verdict {
    // An unknown key too, unless the plugin declares its params (it then
    // refuses the key; `load-unload-params` checks that).
    let extra: &[(&str, &str)] = if subject.declared.is_some() { &[] } else { &[CHECK_PARAM] };
    let instance = instance(subject, extra)?;
    let mut names = subject.exports.clone();
    names.push(format!("?{UNKNOWN}"));
    let names = c_names(&names);
    for _ in 0..3 {
        resolve(&instance, &names, empty(names.len()), empty(names.len()));
    }
    let after = instance.unload();
    if after.live_allocations == 0 && after.live_bytes == 0 {
        Ok("balanced".to_owned())
    } else {
        Err(format!(
            "{} block(s), {} byte(s) still held after unload",
            after.live_allocations, after.live_bytes
        ))
    }
}

/// The result of one check.
#[derive(Debug)]
pub(crate) struct CheckResult {
    /// The check's name.
    pub(crate) name: &'static str,
    /// Whether it passed.
    pub(crate) ok: bool,
    /// What was seen.
    pub(crate) detail: String,
    /// The crash or hang that failed it, when one did.
    pub(crate) fault: Option<ProbeFailure>,
}

/// Runs the named checks (all when `only` is None) against the library at
/// `path` (an embedded ELF when `embedded`), loaded with `params`.
pub(crate) fn run_checks(
    path: &Path,
    embedded: bool,
    params: &LoadParamList,
    symbols: &[String],
    only: Option<&str>,
) -> Result<Vec<CheckResult>, CliError> {
    let selected = select(only)?;
    let load_error = |source| CliError::Load { what: path.display().to_string(), source };
    // One of the two is opened; the subject borrows it.
    let (library, image);
    let (query, loader, required, declared, mut exports) = if embedded {
        image = open_elf_image(path).map_err(load_error)?;
        (Ok(trust::embedded_query(&image)), "embedded ELF", Features::STANDALONE, None, Vec::new())
    } else {
        library = trust::open_raw_library(path).map_err(load_error)?;
        let declared = library.params();
        if let Some(declared) = &declared {
            refuse_undeclared(path, declared, params)?;
        }
        let exports = library.exports().unwrap_or_default();
        (
            library.query().map_err(|error| error.to_string()),
            "system library",
            Features::NONE,
            declared,
            exports,
        )
    };
    exports.extend(symbols.iter().cloned());
    exports.sort();
    exports.dedup();
    let subject = Subject { query, loader, required, params: params.clone(), declared, exports };
    Ok(selected
        .into_iter()
        .map(|check| {
            let verdict = (check.run)(&subject);
            let ok = verdict.is_ok();
            CheckResult { name: check.name, ok, detail: verdict.unwrap_or_else(|detail| detail), fault: None }
        })
        .collect())
}

/// The checks `only` selects (all when `None`).
fn select(only: Option<&str>) -> Result<Vec<&'static Check>, CliError> {
    Ok(match only {
        None => CHECKS.iter().collect(),
        Some(name) => {
            vec![CHECKS.iter().find(|check| check.name == name).ok_or_else(|| CliError::Usage {
                message: format!(
                    "unknown check `{name}`; checks: {}",
                    CHECKS.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
                ),
            })?]
        }
    })
}

/// What running the checks in child processes gave.
enum Isolated {
    /// A result per check.
    Results(Vec<CheckResult>),
    /// A child failed as a whole (the library does not open, say) and its
    /// report was passed on; the command ends with this code.
    Forwarded(u8),
}

/// Runs each selected check in a child process of its own.
fn run_checks_isolated(
    spec: &str,
    symbols: &[String],
    only: Option<&str>,
    json: bool,
    timeout: std::time::Duration,
) -> Result<Isolated, CliError> {
    let mut results = Vec::new();
    let mut hang: Option<(&'static str, ProbeFailure)> = None;
    for check in select(only)? {
        if let Some((hung_check, failure)) = &hang {
            results.push(CheckResult {
                name: check.name,
                ok: false,
                detail: format!("not run: the plugin {failure} in check {hung_check}"),
                fault: None,
            });
            continue;
        }
        let mut args: Vec<std::ffi::OsString> =
            ["--json", "check", "--single-check", check.name].into_iter().map(Into::into).collect();
        for symbol in symbols {
            args.push("--symbol".into());
            args.push(symbol.into());
        }
        args.push("--".into());
        args.push(spec.into());
        let output = isolate::probe(spec, &args, timeout)?;
        match output.status {
            ProbeStatus::Exited(code) => {
                let parsed: Option<serde_json::Value> = serde_json::from_slice(&output.stdout).ok();
                let entry = parsed.as_ref().and_then(|value| value["checks"].as_array()?.first().cloned());
                let Some(entry) = entry else {
                    // The child failed before running the check: pass its
                    // report on, as this process would have printed it.
                    isolate::forward(if json { &output.stdout } else { &[] }, &output.stderr);
                    return Ok(Isolated::Forwarded(u8::try_from(code).unwrap_or(1)));
                };
                results.push(CheckResult {
                    name: check.name,
                    ok: entry["ok"].as_bool().unwrap_or(false),
                    detail: entry["detail"].as_str().unwrap_or("the child gave no detail").to_owned(),
                    fault: None,
                });
            }
            ProbeStatus::Failed(failure) => {
                if matches!(failure, ProbeFailure::TimedOut { .. }) {
                    hang = Some((check.name, failure.clone()));
                }
                results.push(CheckResult {
                    name: check.name,
                    ok: false,
                    detail: failure.to_string(),
                    fault: Some(failure),
                });
            }
            _ => {
                results.push(CheckResult {
                    name: check.name,
                    ok: false,
                    detail: "the child process ended in an unknown way".to_owned(),
                    fault: None,
                });
            }
        }
    }
    Ok(Isolated::Results(results))
}

/// Refuses, before any check runs, a load parameter the plugin does not
/// declare ([`xplug_providers::checks::check_params`], the refusal the
/// loaders make): every check would fail on it.
fn refuse_undeclared(
    path: &Path,
    declared: &[xplug_providers::raw::ParamInfo],
    params: &LoadParamList,
) -> Result<(), CliError> {
    match checks::check_params(declared, params) {
        Err(checks::Incompatibility::UndeclaredParam { key, suggestion, declared }) => {
            Err(CliError::UnknownParam {
                plugin: path.display().to_string(),
                key: key.into(),
                suggestion: suggestion.map(String::from),
                declared: declared.into(),
            })
        }
        Err(other) => Err(CliError::Usage { message: other.to_string() }),
        Ok(()) => Ok(()),
    }
}

/// Runs the command on the plugin `spec` (`path[?key=value&...]`); returns
/// the exit code.
pub(crate) fn run(
    spec: &str,
    symbols: &[String],
    only: Option<&str>,
    json: bool,
    isolation: Isolation,
) -> Result<u8, CliError> {
    let parsed = PluginSpec::parse(spec)
        .map_err(|source| CliError::Manager { context: format!("cannot use plugin `{spec}`"), source })?;
    if parsed.loader() == LoaderKind::Static {
        return Err(CliError::Usage {
            message: format!(
                "`{spec}` is linked into xplug; `check` examines shared libraries: build the plugin crate \
                 (`cargo build --release`) and check its library, or `xplug inspect {spec}`"
            ),
        });
    }
    let embedded = parsed.loader() == LoaderKind::Embedded;
    let results = match isolation {
        Isolation::InProcess => {
            run_checks(Path::new(parsed.path()), embedded, &parsed.load_params(), symbols, only)?
        }
        Isolation::Child(timeout) => match run_checks_isolated(spec, symbols, only, json, timeout)? {
            Isolated::Results(results) => results,
            Isolated::Forwarded(code) => return Ok(code),
        },
    };
    let failed = results.iter().filter(|result| !result.ok).count();
    let failure = (failed > 0).then(|| CliError::ChecksFailed {
        plugin: spec.to_owned(),
        failed,
        total: results.len(),
    });
    if json {
        print_json(&json!({
            "ok": failed == 0,
            "error": failure.as_ref().map(CliError::to_json),
            "checks": results.iter().map(|r| json!({
                "name": r.name,
                "ok": r.ok,
                "detail": r.detail,
                "fault": r.fault.as_ref().map(isolate::fault_json),
            })).collect::<Vec<_>>(),
        }));
    } else {
        let style = Style::stdout();
        let mut table = Table::new(["check", "result", "detail"]);
        for result in &results {
            let verdict = if result.ok { style.good("pass") } else { style.bad("FAIL") };
            table.row([result.name.to_owned(), verdict, safe(&result.detail)]);
        }
        print!("{}", table.render(style));
        let summary = format!("{} of {} checks passed for {spec}", results.len() - failed, results.len());
        println!("{}", if failed == 0 { style.good(&summary) } else { style.bad(&summary) });
    }
    if let Some(failure) = failure {
        crate::report_error(&failure);
        return Ok(1);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_names_are_unique_and_described() {
        let mut names: Vec<&str> = CHECKS.iter().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CHECKS.len());
        assert!(CHECKS.iter().all(|c| !c.description.is_empty()));
    }
}
