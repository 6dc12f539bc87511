//! `xplug check PLUGIN`: a conformance report for a v0 plugin.
//!
//! The checks are data ([`CHECKS`]): each has a name and a function that
//! opens its own plugin instance, so any one of them can run alone
//! (`xplug check --single-check NAME`). By default each check runs in a
//! child process of its own (this binary with `--in-process --json
//! --single-check NAME`): a crash fails that check ("crashed with SIGSEGV
//! during load"), as does a plugin that ends the process ("ended the
//! process with status 0 during load"), and the others still run; a hang fails it after the
//! timeout, and the checks after it are reported as not run (each would
//! likely wait as long). `--in-process` runs them all here.
//!
//! The module is in three parts: [`catalogue`] (the list: names and
//! descriptions), [`bodies`] (what each check does) and [`children`] (one
//! child process per check); this file runs them and reports.

mod bodies;
mod catalogue;
mod children;

use serde_json::json;
use xplug_manager::spec::PluginSpec;
use xplug_providers::{LoadParamList, compatibility};

use self::bodies::{Outcome, Subject};
use self::catalogue::{CHECKS, CheckResult, select, skipped_after};
use crate::error::{CliError, fault_json, report_error};
use crate::globals::GlobalArgs;
use crate::isolate::Isolation;
use crate::output::{Style, Table, print_json, safe};
use crate::trust;

/// Run the v0 conformance checks against a plugin library.
#[derive(Debug, clap::Args)]
pub(crate) struct CheckArgs {
    /// The plugin library, as a spec (`path[?key=value&...]`: the load
    /// parameters every check loads it with).
    #[arg(required_unless_present = "list_checks", value_name = "PLUGIN")]
    plugin: Option<String>,
    /// Also resolve these names in the export checks (for plugins
    /// without `xplug_plugin_exports`).
    #[arg(long = "symbol", value_name = "NAME")]
    symbols: Vec<String>,
    /// List the checks and exit.
    #[arg(long)]
    list_checks: bool,
    /// Run only this check (used to run checks in child processes).
    #[arg(long, value_name = "NAME", hide = true)]
    single_check: Option<String>,
}

impl CheckArgs {
    /// Lists the checks (`--list-checks`) or runs them; returns the exit
    /// code.
    pub(crate) fn run(&self, globals: &GlobalArgs) -> Result<u8, CliError> {
        if self.list_checks {
            list_checks(globals.json);
            return Ok(0);
        }
        let Some(plugin) = &self.plugin else {
            return Err(CliError::Usage { message: "give the plugin library to check".to_owned() });
        };
        run(plugin, &self.symbols, self.single_check.as_deref(), globals.json, globals.isolation())
    }
}

/// `--list-checks`: each check's name and what it verifies.
fn list_checks(json: bool) {
    if json {
        print_json(&json!({
            "checks": CHECKS.iter().map(|c| json!({"name": c.name, "description": c.description})).collect::<Vec<_>>(),
        }));
    } else {
        let mut table = Table::new(["check", "verifies"]);
        for check in CHECKS {
            table.row([check.name, check.description]);
        }
        print!("{}", table.render(Style::stdout()));
    }
}

/// Runs the named checks (all when `only` is None) against the plugin
/// `spec` names, opened by the loader that claims it and loaded with the
/// spec's parameters.
pub(crate) fn run_checks(
    spec: &PluginSpec,
    symbols: &[String],
    only: Option<&str>,
) -> Result<Vec<CheckResult>, CliError> {
    let selected = select(only)?;
    let plugin = spec.as_str();
    let load_error = |source| CliError::load(plugin, source);
    let params = spec.load_params();
    // The code is opened once; the subject borrows it. Without a query
    // function nothing can be checked: the loader's one error, not the same
    // message from every check.
    let code = trust::open_code(spec).map_err(load_error)?;
    // xplug's optional exports, read alike from any loader's code: the
    // declared parameters and the import names.
    let optional = code.optional_exports();
    let declared = optional.and_then(|optional| optional.param_decls());
    if let Some(declared) = &declared {
        refuse_undeclared_params(plugin, declared, &params)?;
    }
    let mut exports = optional.and_then(|optional| optional.exports()).unwrap_or_default();
    exports.extend(symbols.iter().cloned());
    exports.sort();
    exports.dedup();
    let subject = Subject {
        query: Ok(code.query()),
        loader: code.loader().name(),
        required: code.required_features(),
        params,
        declared,
        exports,
    };
    let mut results = Vec::new();
    let mut fatal: Option<&'static str> = None;
    for check in selected {
        if let Some(fatal) = fatal {
            results.push(skipped_after(check, fatal));
            continue;
        }
        let (Ok(verdict) | Err(verdict)) = (check.run)(&subject);
        if check.stops_the_run(verdict.outcome) {
            fatal = Some(check.name);
        }
        results.push(CheckResult {
            name: check.name,
            outcome: verdict.outcome,
            detail: verdict.detail,
            fault: None,
        });
    }
    Ok(results)
}

/// Refuses, before any check runs, a load parameter the plugin does not
/// declare or whose value is not of its declared type
/// ([`xplug_providers::compatibility::judge_params`], the refusal the loaders
/// make): every check would fail on it.
fn refuse_undeclared_params(
    plugin: &str,
    declared: &[xplug_providers::raw::ParamDeclInfo],
    params: &LoadParamList,
) -> Result<(), CliError> {
    match compatibility::judge_params(declared, params) {
        Err(compatibility::Incompatibility::UndeclaredParam { key, suggestion, declared }) => {
            Err(CliError::UnknownParam {
                plugin: plugin.to_owned(),
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
fn run(
    spec: &str,
    symbols: &[String],
    only: Option<&str>,
    json: bool,
    isolation: Isolation,
) -> Result<u8, CliError> {
    let parsed = PluginSpec::parse(spec)
        .map_err(|source| CliError::Manager { context: format!("cannot use plugin `{spec}`"), source })?;
    // The file's hash as this process reads it; each check's load reads
    // and checks the bytes it maps itself.
    let hash = crate::pin::code_hash(&parsed, None)?;
    let results = match isolation {
        Isolation::InProcess => run_checks(&parsed, symbols, only)?,
        Isolation::Child(timeout) => match children::run_checks(spec, symbols, only, json, timeout)? {
            children::Isolated::Results(results) => results,
            children::Isolated::Forwarded(code) => return Ok(code),
        },
    };
    let count =
        |matches: fn(Outcome) -> bool| results.iter().filter(|result| matches(result.outcome)).count();
    let (passed, failed, skipped) = (
        count(|outcome| outcome == Outcome::Pass),
        count(Outcome::is_failure),
        count(|outcome| outcome == Outcome::Skipped),
    );
    let failure = (failed > 0).then(|| CliError::ChecksFailed {
        plugin: spec.to_owned(),
        failed,
        total: results.len(),
    });
    if json {
        print_json(&json!({
            "ok": failed == 0,
            "error": failure.as_ref().map(CliError::to_json),
            "passed": passed,
            "failed": failed,
            "skipped": skipped,
            "sha256": hash.sha256.map(|sha256| sha256.to_string()),
            "sha256_status": hash.status,
            "checks": results.iter().map(|r| json!({
                "name": r.name,
                "ok": !r.outcome.is_failure(),
                "outcome": r.outcome.as_str(),
                "detail": r.detail,
                "fault": r.fault.as_ref().map(fault_json),
            })).collect::<Vec<_>>(),
        }));
    } else {
        let style = Style::stdout();
        println!("{} {}", style.bold("sha256"), hash.shown());
        let mut table = Table::new(["check", "result", "detail"]);
        for result in &results {
            let verdict = match result.outcome {
                Outcome::Pass => style.good("pass"),
                Outcome::Fail => style.bad("FAIL"),
                Outcome::Skipped => style.warn("skip"),
                Outcome::NotLoaded => style.bad("NOT LOADED"),
            };
            table.row([result.name.to_owned(), verdict, safe(&result.detail)]);
        }
        print!("{}", table.render(style));
        let summary = format!(
            "{passed} passed, {failed} failed, {skipped} skipped of {} checks for {spec}",
            results.len()
        );
        println!("{}", if failed == 0 { style.good(&summary) } else { style.bad(&summary) });
    }
    if let Some(failure) = failure {
        report_error(&failure);
        return Ok(1);
    }
    Ok(0)
}
