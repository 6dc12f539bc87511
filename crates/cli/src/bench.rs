//! `xplug bench PLUGIN SYMBOL...`: load, resolve and call timings for one
//! plugin, measured the way a runtime pays them: through a `Manager`.
//!
//! - load: a fresh `Manager`, `load_spec`, then dropping it (unload and
//!   library close included);
//! - resolve: `Manager::resolve` on one reused request whose slots are
//!   cleared before each call: no allocation inside the timed loop;
//! - call: each resolved import through a `ResolvedImport` handle (checked
//!   once), with the args block `--field`s describe (checked against the
//!   plugin's declared layout, as `xplug call` checks it), or a zeroed
//!   block, which the report says.
//!
//! A debug build of xplug warns that its figures are not release figures.

use std::ffi::CString;
use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::json;
use xplug_manager::Manager;
use xplug_manager::spec::PluginSpec;
use xplug_providers::RequestSlots;

use crate::error::CliError;
use crate::globals::GlobalArgs;
use crate::isolate::{self, Isolation};
use crate::output::{Progress, Style, Table, format_ns, print_json, safe};
use crate::{call, resolve, trust};

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

/// Time loading, resolving and (with --call) calling imports of one plugin.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchArgs {
    /// The plugin library (`?key=value` load parameters allowed).
    plugin: String,
    /// Import names to resolve (and call).
    #[arg(required = true, value_name = "SYMBOL")]
    symbols: Vec<String>,
    /// Timed batches per measurement (the median is reported).
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    runs: u32,
    /// Also call each resolved import: with the block --field describes,
    /// or else a zeroed block of this many bytes (which times how the
    /// import handles all-zero args, often an early return).
    #[arg(long, value_name = "BYTES", num_args = 0..=1, default_missing_value = "256")]
    call: Option<usize>,
    /// A field of the args block the calls get, as `xplug call`
    /// takes it (implies --call).
    #[arg(long = "field", value_name = "FIELD")]
    fields: Vec<String>,
}

impl BenchArgs {
    /// Runs the command (in a probe child unless `--in-process`); returns
    /// the exit code.
    pub(crate) fn run(&self, globals: &GlobalArgs) -> Result<u8, CliError> {
        match globals.isolation() {
            Isolation::InProcess => {
                let fields = self
                    .fields
                    .iter()
                    .map(|field| call::parse_field(field))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|message| CliError::Usage { message })?;
                let block = match (fields.is_empty(), self.call) {
                    (false, _) => Some(CallBlock::Fields(fields)),
                    (true, Some(bytes)) => Some(CallBlock::Zeroed(bytes)),
                    (true, None) => None,
                };
                run(&self.plugin, &self.symbols, self.runs as usize, block.as_ref(), globals.json)
            }
            Isolation::Child(timeout) => isolate::rerun_whole_command(&self.plugin, timeout),
        }
    }
}

/// The args block `bench --call` calls imports with.
enum CallBlock {
    /// The block `--field`s describe (as `xplug call` builds it).
    Fields(Vec<call::Field>),
    /// This many zero bytes (no `--field`).
    Zeroed(usize),
}

/// The warning a debug build of xplug prints before its timings.
const DEBUG_BUILD_WARNING: &str = "this xplug is a debug build: its own code (manager, resolve loop, call \
     handles) runs several times slower than in a release build; build with `cargo build --release` and run \
     target/release/xplug for figures to compare";

/// Runs the command in this process: `runs` timed batches per
/// measurement, and the calls with `call_block` when given; returns the
/// exit code.
fn run(
    plugin: &str,
    symbols: &[String],
    runs: usize,
    call_block: Option<&CallBlock>,
    json: bool,
) -> Result<u8, CliError> {
    PluginSpec::parse(plugin)
        .map_err(|source| CliError::Manager { context: format!("cannot use plugin `{}`", plugin), source })?;
    let debug_build = cfg!(debug_assertions);
    if debug_build {
        eprintln!("{} {DEBUG_BUILD_WARNING}", Style::stderr().warn("warning:"));
    }
    let progress = Progress::start("benchmarking");
    let load_ns = median_ns(runs.min(5), || {
        let manager = Manager::new();
        let loaded = trust::load_spec(&manager, plugin);
        drop(black_box((manager, loaded)));
    });
    let (manager, layouts) = call::load_with_layouts(plugin)?;
    let plugin_name = manager.providers().first().cloned().unwrap_or_else(|| plugin.to_owned());

    let mut names = symbols.to_vec();
    resolve::sort_imports(&mut names);
    let c_names = names
        .iter()
        .map(|name| {
            CString::new(name.as_str())
                .map_err(|_| CliError::Usage { message: format!("import name {name:?} contains a NUL byte") })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut slots = RequestSlots::for_names(&c_names);
    // One untimed resolve for the verdict and the count.
    let verdict = manager.resolve(&mut slots.request());
    let resolved = slots.fns().iter().filter(|f| !f.is_null()).count();
    let resolve_ns = median_ns(runs, || {
        slots.fill_all(std::ptr::null_mut(), std::ptr::null_mut());
        let _ = black_box(manager.resolve(&mut slots.request()));
    });
    let mut calls = Vec::new();
    let mut call_notes = Vec::new();
    if let Some(args) = call_block
        && let Ok(imports) = manager.resolve_imports(names.iter().map(String::as_str))
    {
        for (index, name) in names.iter().enumerate() {
            let Ok(import) = imports.import(index) else { continue };
            let mut block = match args {
                CallBlock::Fields(fields) => {
                    let block = call::Block::build(&call::Args::Fields(fields.clone()));
                    let report = call::check_block(plugin, name, layouts.as_deref(), &block)?;
                    call_notes.extend(report.note.into_iter().chain(report.warnings));
                    block
                }
                CallBlock::Zeroed(bytes) => {
                    call_notes.push(format!(
                        "`{name}` was called with {bytes} zero bytes as its args (no --field): the time is that \
                         of its all-zero case (a zero size is often an early return); give its fields with --field \
                         to time real work"
                    ));
                    call::Block::zeroed(*bytes)
                }
            };
            let mut result = 0;
            xplug_probe::mark(xplug_probe::Stage::Call);
            let ns = median_ns(runs, || {
                // SAFETY: the import was resolved by the manager, which
                // `imports` keeps alive; the user asserts it accepts this
                // block (its size checked against the plugin's layout when
                // the plugin gives one), whose buffers live as long as it.
                result = unsafe { import.call(block.head()) };
                black_box(result);
            });
            calls.push((name.clone(), ns, result));
        }
    }
    progress.finish();

    let per_name = if names.is_empty() { 0.0 } else { resolve_ns / names.len() as f64 };
    let failure = verdict.as_ref().err().map(|source| CliError::Manager {
        context: format!("resolving through `{}`", plugin),
        source: source.clone(),
    });
    if json {
        print_json(&json!({
            "ok": failure.is_none(),
            "error": failure.as_ref().map(CliError::to_json),
            "plugin": plugin_name,
            "runs": runs,
            "load_and_unload_ns": load_ns,
            "resolve": {
                "names": names,
                "resolved": resolved,
                "ok": verdict.is_ok(),
                "median_ns": resolve_ns,
                "median_ns_per_name": per_name,
            },
            "calls": calls.iter().map(|(name, ns, result)| json!({"name": name, "median_ns": ns, "result": result})).collect::<Vec<_>>(),
            "call_args": match call_block {
                Some(CallBlock::Fields(fields)) => json!({"fields": fields.len()}),
                Some(CallBlock::Zeroed(bytes)) => json!({"zeroed_bytes": bytes}),
                None => serde_json::Value::Null,
            },
            "notes": call_notes,
            "debug_build": debug_build,
        }));
    } else {
        let style = Style::stdout();
        println!("{} ({} run(s), median)", style.bold(&safe(&plugin_name)), runs);
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
        let zeroed = matches!(call_block, Some(CallBlock::Zeroed(_)));
        for (name, ns, result) in &calls {
            let mut note = format!("returned {result}");
            if *result != 0 {
                note.push_str(&format!(" ({})", crate::error::import_code_name(*result)));
            }
            if zeroed {
                note.push_str("; zeroed args");
            }
            table.row([format!("call {}", safe(name)), format_ns(*ns), note]);
        }
        print!("{}", table.render(style));
        let stderr = Style::stderr();
        for note in &call_notes {
            eprintln!("{} {}", stderr.warn("note:"), safe(note));
        }
    }
    if let Some(failure) = failure {
        crate::error::report_error(&failure);
        return Ok(1);
    }
    Ok(0)
}
