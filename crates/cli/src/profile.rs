//! `xplug run --profile`: the device's per-import profile
//! (`xplug_iree::Device::import_profile`, `docs/src/operating/profiles.md`) as a table on
//! stderr, as JSON (in `--json`'s object, or `--profile-json FILE`) and as a
//! Chrome trace-event file (`--profile-trace FILE`) that Perfetto and
//! `chrome://tracing` open.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use xplug_iree::{ImportCallStats, ImportProfile};

use crate::error::CliError;
use crate::output::{Style, Table, format_ns, safe};
use crate::resolve::LoadedPlugins;

/// What `--profile` and its file flags asked for.
pub(crate) struct Request<'a> {
    /// Print the table on stderr (`--profile`).
    pub(crate) print: bool,
    /// `--profile-json FILE`.
    pub(crate) json: Option<&'a Path>,
    /// `--profile-trace FILE`.
    pub(crate) trace: Option<&'a Path>,
    /// Calls of each import kept as slices (`--profile-slices`).
    pub(crate) slices: usize,
}

/// Writes what `request` asked for: the files, then the table on stderr
/// unless the run prints JSON (which carries [`to_json`] instead). `run` is
/// the wall time of the function's call, what shares are taken of.
pub(crate) fn report(
    request: &Request<'_>,
    profile: &ImportProfile,
    run: Duration,
    built: &LoadedPlugins,
    as_json: bool,
    label: &str,
) -> Result<(), CliError> {
    if let Some(path) = request.json {
        write_file(path, &to_json(profile, run, built), "profile")?;
    }
    if let Some(path) = request.trace {
        write_file(path, &to_trace(profile, label), "trace")?;
    }
    if request.print && !as_json {
        // Diagnostics only, as --trace: a stderr that cannot be written
        // does not fail the run.
        let text = table(profile, run, built, Style::stderr());
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), text.as_bytes());
    }
    Ok(())
}

fn write_file(path: &Path, value: &Value, what: &str) -> Result<(), CliError> {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".to_owned());
    text.push('\n');
    std::fs::write(path, text).map_err(|source| CliError::File {
        context: format!("cannot write the {what} file {}", path.display()),
        source,
    })
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

fn provider(built: &LoadedPlugins, import: &ImportCallStats) -> String {
    import.provider.as_deref().map_or_else(|| "(unknown)".to_owned(), |name| built.label(name))
}

/// The table: per executable and import, the provider, calls, total, mean,
/// p50, p99 and max, and the share of the run; a last line with the run's
/// time and the imports' sum.
pub(crate) fn table(profile: &ImportProfile, run: Duration, built: &LoadedPlugins, style: Style) -> String {
    let mut table = Table::new([
        "executable",
        "import",
        "provider",
        "calls",
        "total",
        "mean",
        "p50",
        "p99",
        "max",
        "share",
    ]);
    let time = |duration: Option<Duration>| {
        duration.map_or_else(|| "-".to_owned(), |d| format_ns(d.as_nanos() as f64))
    };
    for import in &profile.imports {
        let failures =
            if import.failures > 0 { format!(" ({} failed)", import.failures) } else { String::new() };
        table.row([
            format!("#{}", import.executable),
            safe(&import.name),
            provider(built, import),
            format!("{}{failures}", import.calls),
            time(Some(import.total)),
            time((import.calls > 0).then(|| import.mean())),
            time(import.percentile(0.5)),
            time(import.percentile(0.99)),
            time((import.calls > 0).then_some(import.max)),
            format!("{:.1}%", 100.0 * import.share_of(run)),
        ]);
    }
    let mut text = style.bold("import profile").to_string();
    text.push('\n');
    if profile.imports.is_empty() {
        text.push_str("(no executable of the module imports anything)\n");
    } else {
        text.push_str(&table.render(style));
    }
    let calls: u64 = profile.imports.iter().map(|import| import.calls).sum();
    let total = profile.total();
    text.push_str(&format!(
        "run: {}; {calls} import call(s) took {} ({:.1}% of the run; calls on several workers add up)\n",
        format_ns(run.as_nanos() as f64),
        format_ns(total.as_nanos() as f64),
        if run.is_zero() { 0.0 } else { 100.0 * total.as_secs_f64() / run.as_secs_f64() },
    ));
    text
}

/// The profile as JSON: every figure in nanoseconds, the non-empty
/// histogram buckets, and the run's time.
pub(crate) fn to_json(profile: &ImportProfile, run: Duration, built: &LoadedPlugins) -> Value {
    let optional = |duration: Option<Duration>| duration.map(nanos);
    json!({
        "run_ns": nanos(run),
        "elapsed_ns": nanos(profile.elapsed),
        "imports_total_ns": nanos(profile.total()),
        "imports": profile.imports.iter().map(|import| json!({
            "executable": import.executable,
            "index": import.index,
            "name": import.name,
            "provider": provider(built, import),
            "calls": import.calls,
            "failures": import.failures,
            "total_ns": nanos(import.total),
            "mean_ns": nanos(import.mean()),
            "p50_ns": optional(import.percentile(0.5)),
            "p99_ns": optional(import.percentile(0.99)),
            "max_ns": nanos(import.max),
            "share": import.share_of(run),
            "histogram": import.histogram.buckets.iter().map(|bucket| json!({
                "low_ns": nanos(bucket.low),
                "high_ns": nanos(bucket.high),
                "count": bucket.count,
            })).collect::<Vec<_>>(),
            "slices": import.slices.len(),
        })).collect::<Vec<_>>(),
    })
}

/// Microseconds with nanosecond digits, the trace format's unit.
fn micros(duration: Duration) -> f64 {
    duration.as_nanos() as f64 / 1_000.0
}

/// The Chrome trace-event format's JSON object form: a complete event
/// (`"ph": "X"`, `ts` and `dur` in microseconds from the profile's start)
/// per kept call, on the thread that made it, and metadata events naming
/// the process and each thread.
pub(crate) fn to_trace(profile: &ImportProfile, label: &str) -> Value {
    let pid = std::process::id();
    let mut events = vec![json!({
        "name": "process_name", "ph": "M", "pid": pid, "tid": 0,
        "args": { "name": label },
    })];
    for thread in &profile.threads {
        events.push(json!({
            "name": "thread_name", "ph": "M", "pid": pid, "tid": thread.id,
            "args": { "name": thread.name },
        }));
    }
    for import in &profile.imports {
        for slice in &import.slices {
            events.push(json!({
                "name": import.name,
                "cat": "import",
                "ph": "X",
                "ts": micros(slice.start),
                "dur": micros(slice.duration),
                "pid": pid,
                "tid": slice.thread,
                "args": {
                    "executable": import.executable,
                    "provider": import.provider,
                },
            }));
        }
    }
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "producer": format!("xplug {}", env!("CARGO_PKG_VERSION")),
            "slices": "the first calls of each import, every call counted in the profile",
        },
    })
}
