//! `xplug resolve [--plugin PLUGIN]... [--static] SYMBOL...`: which provider
//! supplies each import.

use std::ffi::CString;

use serde_json::json;
use xplug_abi::{Resolution, bare_name};
use xplug_manager::spec::{STATIC_PREFIX, env_specs};
use xplug_manager::{Manager, Registered, SlotSource};
use xplug_providers::{RequestSlots, static_plugins};

use crate::error::{CliError, report_error};
use crate::globals::GlobalArgs;
use crate::output::{Style, Table, print_json, safe};
use crate::trust;

/// A provider this runtime registered: the manager's handle for it and
/// where it came from.
#[derive(Clone, Debug)]
pub(crate) struct Provider {
    /// Its registration index and name, as the manager returned them.
    pub(crate) registered: Registered,
    /// Where it came from: `static` or the spec it was loaded from.
    pub(crate) source: String,
}

/// A manager built as `resolve` builds it, with what it registered.
pub(crate) struct LoadedPlugins {
    /// The manager.
    pub(crate) manager: Manager,
    /// What was registered, in registration order (index = registration
    /// index, as the manager numbers its providers).
    pub(crate) providers: Vec<Provider>,
}

impl LoadedPlugins {
    /// A provider's name with where it came from (`NAME (SOURCE)`).
    pub(crate) fn label(&self, name: &str) -> String {
        self.scan_order()
            .find(|provider| provider.registered.name() == name)
            .map_or_else(|| name.to_owned(), |provider| format!("{name} ({})", provider.source))
    }

    /// Static plugins first (when `with_static`), then the specs of the
    /// `XPLUG_PLUGINS` environment variable, then each spec in order (so
    /// `--plugin` overrides the environment, as later specs override earlier
    /// ones).
    pub(crate) fn build(with_static: bool, specs: &[String]) -> Result<Self, CliError> {
        let env_specs = env_specs().map_err(|source| CliError::Manager {
            context: format!("cannot use the plugins listed in {}", xplug_manager::spec::ENV_VAR),
            source,
        })?;
        let manager = Manager::new();
        let mut providers = Vec::new();
        if with_static {
            // In name order, as `ManagerBuilder::static_plugins` registers them.
            for registration in static_plugins() {
                let spec = format!("{STATIC_PREFIX}{}", registration.name());
                providers.push(Provider {
                    registered: trust::load_spec(&manager, &spec)?,
                    source: "static".into(),
                });
            }
        }
        for spec in env_specs.iter().chain(specs) {
            providers.push(Provider { registered: trust::load_spec(&manager, spec)?, source: spec.clone() });
        }
        Ok(Self { manager, providers })
    }

    /// The provider at registration index `index`.
    pub(crate) fn provider(&self, index: usize) -> Option<&Provider> {
        self.providers.iter().find(|provider| provider.registered.index() == index)
    }

    /// The name of the provider at registration index `index`.
    pub(crate) fn name(&self, index: usize) -> &str {
        self.provider(index).map_or("?", |provider| provider.registered.name())
    }

    /// `name (source)` of the provider at registration index `index`.
    pub(crate) fn describe(&self, index: usize) -> String {
        self.provider(index).map_or_else(
            || format!("#{index}"),
            |provider| format!("{} ({})", provider.registered.name(), provider.source),
        )
    }

    /// The providers, newest first (the scan order).
    pub(crate) fn scan_order(&self) -> impl Iterator<Item = &Provider> {
        self.providers.iter().rev()
    }
}

/// The outcome of resolving one import table, slot by slot.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// Names in request order (sorted by bare name).
    pub(crate) names: Vec<String>,
    /// Per name, the registration index of the provider that filled it.
    pub(crate) providers: Vec<Option<usize>>,
    /// The manager's result.
    pub(crate) result: Result<Resolution, xplug_manager::Error>,
    /// Filled slots a provider rewrote (each change undone by the manager).
    pub(crate) rewrites: Vec<xplug_manager::SlotRewrite>,
}

/// Sorts import names the way IREE's compiler emits them: by bare name.
pub(crate) fn sort_imports(names: &mut [String]) {
    names.sort_by(|a, b| bare_name(a.as_bytes()).cmp(bare_name(b.as_bytes())));
}

/// One traced resolve of `names` (already validated); returns the per-slot
/// providers and the manager's result.
type Traced = (Vec<Option<usize>>, Result<Resolution, xplug_manager::Error>, Vec<xplug_manager::SlotRewrite>);

fn traced(manager: &Manager, names: &[CString]) -> Traced {
    let mut slots = RequestSlots::for_names(names);
    let (trace, result) = manager.resolve_traced(&mut slots.request());
    let providers = trace
        .slots
        .iter()
        .map(|slot| match slot {
            SlotSource::Provider { index, .. } => Some(*index),
            _ => None,
        })
        .collect();
    (providers, result, trace.rewrites)
}

/// Resolves `names` (in the given order) through `manager`, attributing each
/// filled slot to its provider (the manager's trace is complete even when
/// required names are missing).
pub(crate) fn resolve_names(manager: &Manager, names: &[String]) -> Result<Outcome, CliError> {
    let c_names = names
        .iter()
        .map(|name| {
            if bare_name(name.as_bytes()).is_empty() {
                return Err(CliError::Usage { message: format!("import name {name:?} is empty") });
            }
            CString::new(name.as_str())
                .map_err(|_| CliError::Usage { message: format!("import name {name:?} contains a NUL byte") })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (providers, result, rewrites) = traced(manager, &c_names);
    Ok(Outcome { names: names.to_vec(), providers, result, rewrites })
}

/// Resolve import names through a manager and show which provider
/// supplies each. The plugins listed in the XPLUG_PLUGINS environment
/// variable (specs separated by `:`) are registered before --plugin ones.
#[derive(Debug, clap::Args)]
pub(crate) struct ResolveArgs {
    /// A plugin spec as IREE's `--executable_plugin` takes it
    /// (`path[?key=value&...]`, or `static:NAME`); repeatable, later
    /// ones are asked first.
    #[arg(long = "plugin", value_name = "PLUGIN")]
    plugins: Vec<String>,
    /// Register the plugins linked into xplug first (none in the shipped
    /// binary; `sample_static` with the `sample-static` feature).
    #[arg(long = "static")]
    with_static: bool,
    /// Import names; a leading `?` marks an optional import.
    #[arg(required = true, value_name = "SYMBOL")]
    symbols: Vec<String>,
}

impl ResolveArgs {
    /// Runs the command; returns the exit code.
    pub(crate) fn run(&self, globals: &GlobalArgs) -> Result<u8, CliError> {
        run(&self.plugins, self.with_static, &self.symbols, globals.json)
    }
}

fn run(specs: &[String], with_static: bool, symbols: &[String], json: bool) -> Result<u8, CliError> {
    let mut names = symbols.to_vec();
    sort_imports(&mut names);
    // A plugin that cannot be loaded is an error like any other command's
    // (one JSON shape, printed by `main`).
    let runtime = LoadedPlugins::build(with_static, specs)?;
    let outcome = resolve_names(&runtime.manager, &names)?;
    let missing_optional =
        outcome.result.as_ref().is_ok_and(|resolution| resolution.contains(Resolution::MISSING_OPTIONAL));
    let failure = outcome
        .result
        .as_ref()
        .err()
        .map(|error| CliError::Manager { context: "resolution failed".to_owned(), source: error.clone() });
    if json {
        print_json(&json!({
            "ok": failure.is_none(),
            "error": failure.as_ref().map(CliError::to_json),
            "missing_optional": missing_optional,
            "scan_order": runtime.scan_order().map(|provider| json!({
                "index": provider.registered.index(),
                "name": provider.registered.name(),
                "source": provider.source,
            })).collect::<Vec<_>>(),
            "symbols": outcome.names.iter().zip(&outcome.providers).map(|(name, provider)| json!({
                "name": name,
                "optional": name.starts_with('?'),
                "resolved": provider.is_some(),
                "provider": provider.map(|i| runtime.name(i)),
                "provider_index": provider,
            })).collect::<Vec<_>>(),
            "rewrites": outcome.rewrites.iter().map(|rewrite| json!({
                "symbol": outcome.names[rewrite.slot],
                "provider": &*rewrite.provider,
                "provider_index": rewrite.provider_index,
            })).collect::<Vec<_>>(),
        }));
    } else {
        let style = Style::stdout();
        println!("{}", style.bold("scan order (newest first):"));
        let mut order = Table::new(["#", "provider", "source"]);
        for provider in runtime.scan_order() {
            order.row([
                provider.registered.index().to_string(),
                safe(provider.registered.name()),
                safe(&provider.source),
            ]);
        }
        if runtime.providers.is_empty() {
            println!("  (no providers; pass --plugin PLUGIN or --static, or list specs in XPLUG_PLUGINS)");
        } else {
            print!("{}", order.render(style));
        }
        println!();
        let mut table = Table::new(["symbol", "kind", "status", "provider"]);
        for (name, provider) in outcome.names.iter().zip(&outcome.providers) {
            let optional = name.starts_with('?');
            let status = match (provider, optional) {
                (Some(_), _) => style.good("resolved"),
                (None, true) => style.warn("missing (optional)"),
                (None, false) => style.bad("MISSING"),
            };
            table.row([
                safe(name),
                if optional { "optional".to_owned() } else { "required".to_owned() },
                status,
                provider.map_or_else(|| "-".to_owned(), |i| format!("#{i} {}", safe(&runtime.describe(i)))),
            ]);
        }
        print!("{}", table.render(style));
        println!();
        for rewrite in &outcome.rewrites {
            println!(
                "{} provider #{} {} rewrote `{}` after a newer provider filled it; the change was undone",
                style.warn("warning:"),
                rewrite.provider_index,
                rewrite.provider,
                outcome.names[rewrite.slot]
            );
        }
        match &outcome.result {
            Ok(_) if missing_optional => println!("{}", style.warn("OK (some optional imports are missing)")),
            Ok(_) => println!("{}", style.good("OK")),
            Err(_) => {}
        }
    }
    if let Some(failure) = failure {
        report_error(&failure);
        return Ok(1);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_sort_by_bare_name_like_iree_compiler_output() {
        let mut names: Vec<String> = ["b", "?a", "c", "?ab", "a"].map(str::to_owned).to_vec();
        sort_imports(&mut names);
        // Stable: `?a` stays before `a`, as given.
        assert_eq!(names, ["?a", "a", "?ab", "b", "c"]);
    }
}
