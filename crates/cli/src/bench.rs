//! `xplug bench PLUGIN SYMBOL...`: load, resolve and call timings for one
//! plugin, measured the way a runtime pays them: through a `Manager`.
//!
//! - load: a fresh `Manager`, `load_spec`, then dropping it (unload and
//!   library close included);
//! - resolve: `Manager::resolve` on one reused request whose slots are
//!   cleared before each call: no allocation inside the timed loop;
//! - call: each resolved import through a `ResolvedImport` handle (checked
//!   once), with a zeroed parameter block.

use std::ffi::{CString, c_void};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use xplug_manager::Manager;
use xplug_manager::spec::PluginSpec;
use xplug_providers::{ResolveRequest, SymbolName};

use crate::error::CliError;
use crate::output::{Progress, Style, Table, print_json, safe};
use crate::{resolve, trust};

/// How long one timed batch should take at least.
const BATCH: Duration = Duration::from_millis(2);

/// Median nanoseconds per call of `op` over `runs` batches, each batch
/// repeating `op` enough times to take at least [`BATCH`].
pub(crate) fn median_ns(runs: usize, mut op: impl FnMut()) -> f64 {
    let mut iterations = 1u64;
    loop {
        let start = Instant::now();
        for _ in 0..iterations {
            op();
        }
        if start.elapsed() >= BATCH || iterations >= 1 << 30 {
            break;
        }
        iterations *= 2;
    }
    let mut samples: Vec<f64> = (0..runs.max(1))
        .map(|_| {
            // Tells a watching parent this probe child is still making
            // progress (nothing outside a probe child).
            xplug_probe::heartbeat();
            let start = Instant::now();
            for _ in 0..iterations {
                op();
            }
            start.elapsed().as_nanos() as f64 / iterations as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Options of the command.
pub(crate) struct Options<'a> {
    /// The plugin spec (path, optional `?key=value` params).
    pub(crate) plugin: &'a str,
    /// Import names.
    pub(crate) symbols: &'a [String],
    /// Timed batches per measurement.
    pub(crate) runs: usize,
    /// Also call each import with zeroed params of this many bytes.
    pub(crate) call_bytes: Option<usize>,
}

/// Runs the command; returns the exit code.
pub(crate) fn run(options: &Options<'_>, json: bool) -> Result<u8, CliError> {
    PluginSpec::parse(options.plugin).map_err(|source| CliError::Manager {
        context: format!("cannot use plugin `{}`", options.plugin),
        source,
    })?;
    let progress = Progress::start("benchmarking");
    let load_ns = median_ns(options.runs.min(5), || {
        let manager = Manager::new();
        let loaded = trust::load_spec(&manager, options.plugin);
        drop(black_box((manager, loaded)));
    });
    let manager = Manager::new();
    trust::load_spec(&manager, options.plugin)?;
    let manager = Arc::new(manager);
    let plugin_name = manager.providers().pop().unwrap_or_default();

    let mut names = options.symbols.to_vec();
    resolve::sort_imports(&mut names);
    let c_names = names
        .iter()
        .map(|name| {
            CString::new(name.as_str())
                .map_err(|_| CliError::Usage { message: format!("import name {name:?} contains a NUL byte") })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let symbols: Vec<SymbolName<'_>> = c_names.iter().map(|name| SymbolName::new(name)).collect();
    let mut fns = vec![std::ptr::null_mut::<c_void>(); names.len()];
    let mut contexts = vec![std::ptr::null_mut::<c_void>(); names.len()];
    // One untimed resolve for the verdict and the count.
    let verdict = {
        let mut request = ResolveRequest::new(&symbols, &mut fns, &mut contexts)
            .map_err(|source| CliError::Load { what: options.plugin.to_owned(), source })?;
        manager.resolve(&mut request)
    };
    let resolved = fns.iter().filter(|f| !f.is_null()).count();
    let resolve_ns = median_ns(options.runs, || {
        fns.fill(std::ptr::null_mut());
        contexts.fill(std::ptr::null_mut());
        if let Ok(mut request) = ResolveRequest::new(&symbols, &mut fns, &mut contexts) {
            let _ = black_box(manager.resolve(&mut request));
        }
    });
    let mut calls = Vec::new();
    if let Some(bytes) = options.call_bytes
        && let Ok(imports) = manager.resolve_imports(names.iter().map(String::as_str))
    {
        for (index, name) in names.iter().enumerate() {
            let Ok(import) = imports.import(index) else { continue };
            // 16-byte aligned, zeroed parameter block.
            let mut block = vec![0u128; bytes.div_ceil(16).max(1)];
            let mut result = 0;
            xplug_probe::mark(xplug_probe::Stage::Call);
            let ns = median_ns(options.runs, || {
                // SAFETY: the import was resolved by the manager, which
                // `imports` keeps alive; with `--call` the user asserts it
                // accepts a zeroed parameter block of this size.
                result = unsafe { import.call(&mut block[0]) };
                black_box(result);
            });
            calls.push((name.clone(), ns, result));
        }
    }
    progress.finish();

    let per_name = if names.is_empty() { 0.0 } else { resolve_ns / names.len() as f64 };
    let failure = verdict.as_ref().err().map(|source| CliError::Manager {
        context: format!("resolving through `{}`", options.plugin),
        source: source.clone(),
    });
    if json {
        print_json(&json!({
            "ok": failure.is_none(),
            "error": failure.as_ref().map(CliError::to_json),
            "plugin": plugin_name,
            "runs": options.runs,
            "load_and_unload_ns": load_ns,
            "resolve": {
                "names": names,
                "resolved": resolved,
                "ok": verdict.is_ok(),
                "median_ns": resolve_ns,
                "median_ns_per_name": per_name,
            },
            "calls": calls.iter().map(|(name, ns, result)| json!({"name": name, "median_ns": ns, "result": result})).collect::<Vec<_>>(),
        }));
    } else {
        let style = Style::stdout();
        println!("{} ({} run(s), median)", style.bold(&safe(&plugin_name)), options.runs);
        let mut table = Table::new(["operation", "median", "note"]);
        table.row([
            "load + unload".to_owned(),
            format_ns(load_ns),
            "a Manager with this plugin, dropped".to_owned(),
        ]);
        table.row([
            format!("resolve {} name(s)", names.len()),
            format_ns(resolve_ns),
            format!("{} per name; {resolved} resolved", format_ns(per_name)),
        ]);
        for (name, ns, result) in &calls {
            table.row([format!("call {}", safe(name)), format_ns(*ns), format!("returned {result}")]);
        }
        print!("{}", table.render(style));
    }
    if let Some(failure) = failure {
        crate::report_error(&failure);
        return Ok(1);
    }
    Ok(0)
}

/// `12.3 ns`, `4.56 µs`, `7.89 ms`.
pub(crate) fn format_ns(ns: f64) -> String {
    if ns < 1_000.0 {
        format!("{ns:.1} ns")
    } else if ns < 1_000_000.0 {
        format!("{:.2} µs", ns / 1_000.0)
    } else {
        format!("{:.2} ms", ns / 1_000_000.0)
    }
}
