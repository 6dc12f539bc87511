//! `xplug demo`: the custom-dispatch story end to end.
//!
//! A runtime with the plugins linked into xplug (the static Rust plugin
//! `sample_static` when built with the `sample-static` feature, as `cargo
//! xtask demo` builds it; none in the shipped binary) and the example
//! plugins from `target/plugins/` registered after them resolves
//! an executable's import table, then dispatches `simple_mul_workgroup`
//! over a few million floats on every core and checks the result against a
//! plain Rust loop.

use std::path::{Path, PathBuf};
use std::time::Instant;

use iree_sample_args::WorkgroupArgs;
use serde_json::json;
use xplug_manager::ResolvedImports;

use crate::error::CliError;
use crate::globals::GlobalArgs;
use crate::output::{Progress, Style, Table, print_json};
use crate::resolve::{LoadedPlugins, resolve_names, sort_imports};

/// Dynamic plugins the demo registers, oldest first (the last is asked first).
pub(crate) const DYNAMIC_PLUGINS: [&str; 4] =
    ["c_sample", "sample_system", "sample_static", "sample_standalone"];

/// The executable's import table, as declared (sorted by bare name later).
const IMPORTS: [&str; 6] = [
    "simple_mul_workgroup",
    "static_fma_i64",
    "c_sample_negate_f32",
    "?dot",
    "?sample_system_calls",
    "?simple_mul_workgroup_avx1024",
];

/// Elements per workgroup (IREE's sample uses 64x1x1 workgroups).
const WORKGROUP: usize = 64;

/// The C struct `static_fma_i64` takes: `result = a * b + c`.
#[repr(C)]
struct FmaArgs {
    result: i64,
    a: i64,
    b: i64,
    c: i64,
}

/// The dispatch demo: static + dynamic plugins, an import table with an
/// override, simple_mul_workgroup over millions of floats on every core.
#[derive(Debug, clap::Args)]
pub(crate) struct DemoArgs {
    /// Directory of the built example plugins (default: the
    /// target/plugins/PROFILE directory matching the xplug binary's profile, or
    /// target/plugins/release under the current directory).
    #[arg(long, value_name = "DIR")]
    plugin_dir: Option<PathBuf>,
    /// Number of floats.
    #[arg(long, default_value_t = 4 << 20, value_parser = clap::value_parser!(u64).range(1..=1 << 28))]
    elements: u64,
    /// Timed passes of each path (the median is reported).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    passes: u32,
}

impl DemoArgs {
    /// Runs the demo; returns the exit code.
    pub(crate) fn run(&self, globals: &GlobalArgs) -> Result<u8, CliError> {
        run(self, globals.json)
    }
}

/// The file name of plugin `name` on this platform.
pub(crate) fn library_file(name: &str) -> String {
    format!("{}{name}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX)
}

/// `--plugin-dir`, else `$XPLUG_PLUGIN_DIR`, else the plugins built for the
/// binary's own profile (`target/release/xplug` → `target/plugins/release`,
/// `target/debug/xplug` → `target/plugins/debug`), else
/// `target/plugins/release` under the current directory.
fn plugin_dir(explicit: Option<&Path>) -> PathBuf {
    if let Some(dir) = explicit {
        return dir.to_path_buf();
    }
    if let Some(dir) = std::env::var_os("XPLUG_PLUGIN_DIR") {
        return PathBuf::from(dir);
    }
    let beside_binary = std::env::current_exe()
        .ok()
        .and_then(|exe| {
            let profile_dir = exe.parent()?;
            let profile = if profile_dir.file_name()? == "debug" { "debug" } else { "release" };
            Some(profile_dir.parent()?.join("plugins").join(profile))
        })
        .filter(|dir| dir.is_dir());
    beside_binary.unwrap_or_else(|| PathBuf::from("target").join("plugins").join("release"))
}

/// Computes one thread's share of a dispatch: `(lhs, rhs, out)`.
type Share<'a> = dyn Fn(&[f32], &[f32], &mut [f32]) -> Result<(), CliError> + Sync + 'a;

/// A dispatch: multiplies `lhs` by `rhs` into `out`, split into workgroups
/// across `threads` threads, each workgroup done by `workgroup`.
fn dispatch(
    threads: usize,
    lhs: &[f32],
    rhs: &[f32],
    out: &mut [f32],
    workgroup: &Share<'_>,
) -> Result<(), CliError> {
    // Each thread gets a contiguous run of whole workgroups.
    let workgroups = out.len().div_ceil(WORKGROUP);
    let per_thread = workgroups.div_ceil(threads.max(1)).max(1) * WORKGROUP;
    std::thread::scope(|scope| {
        let handles: Vec<_> = out
            .chunks_mut(per_thread)
            .zip(lhs.chunks(per_thread).zip(rhs.chunks(per_thread)))
            .map(|(out, (lhs, rhs))| scope.spawn(move || workgroup(lhs, rhs, out)))
            .collect();
        for handle in handles {
            match handle.join() {
                Ok(result) => result?,
                Err(payload) => {
                    let message = payload
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_owned())
                        .or_else(|| payload.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    return Err(CliError::WorkerPanicked { message });
                }
            }
        }
        Ok(())
    })
}

/// One thread's share through the plugin: one import call per workgroup,
/// each given its own slice as IREE's compiler does
/// (`docs/src/plugins/dispatch.md#slice-convention`): the binding pointers plus
/// offsets start the workgroup's elements, `size` is their count and `tid`
/// the workgroup's id.
fn plugin_share(
    imports: &ResolvedImports,
    index: usize,
    lhs: &[f32],
    rhs: &[f32],
    out: &mut [f32],
) -> Result<(), CliError> {
    // IREE's sample `params_t`, as the example kernels declare it (the
    // inputs checked to be as long as `out`); each call's offsets, size and
    // workgroup are set below.
    let mut args = WorkgroupArgs::whole(lhs, rhs, out);
    // Checked once, then a plain indirect call per workgroup, as a runtime's
    // dispatch loop does.
    let import = imports
        .import(index)
        .map_err(|source| CliError::Manager { context: "calling simple_mul_workgroup".to_owned(), source })?;
    let len = out.len();
    for (tid, first) in (0..len).step_by(WORKGROUP).enumerate() {
        args.binding0_offset = first;
        args.binding1_offset = first;
        args.binding2_offset = first;
        args.size = (len - first).min(WORKGROUP);
        args.tid = tid;
        // SAFETY: `simple_mul_workgroup` takes IREE's sample `params_t`,
        // which `WorkgroupArgs` mirrors; each binding is valid for
        // `offset + size <= len` elements (this thread's share), the inputs
        // are only read, and `out` is borrowed mutably by this thread alone.
        let result = unsafe { import.call(&mut args) };
        if result != 0 {
            return Err(CliError::ImportFailed { name: "simple_mul_workgroup".to_owned(), result });
        }
    }
    Ok(())
}

/// The same share as a plain Rust loop.
fn inline_share(lhs: &[f32], rhs: &[f32], out: &mut [f32]) -> Result<(), CliError> {
    for ((out, lhs), rhs) in out.iter_mut().zip(lhs).zip(rhs) {
        *out = lhs * rhs;
    }
    Ok(())
}

/// Median seconds of `passes` runs of `pass`.
fn timed(passes: usize, mut pass: impl FnMut() -> Result<(), CliError>) -> Result<f64, CliError> {
    let mut seconds = Vec::with_capacity(passes);
    for _ in 0..passes.max(1) {
        let start = Instant::now();
        pass()?;
        seconds.push(start.elapsed().as_secs_f64());
    }
    seconds.sort_by(f64::total_cmp);
    Ok(seconds[seconds.len() / 2])
}

fn run(options: &DemoArgs, json: bool) -> Result<u8, CliError> {
    let passes = options.passes as usize;
    let dir = plugin_dir(options.plugin_dir.as_deref());
    let files: Vec<PathBuf> = DYNAMIC_PLUGINS.iter().map(|name| dir.join(library_file(name))).collect();
    let missing: Vec<String> = files
        .iter()
        .filter(|file| !file.is_file())
        .filter_map(|file| file.file_name().map(|name| name.to_string_lossy().into_owned()))
        .collect();
    if !missing.is_empty() {
        return Err(CliError::PluginsNotBuilt { dir, missing });
    }
    let specs: Vec<String> = files.iter().map(|file| file.display().to_string()).collect();

    // The runtime: static plugins first, then the dynamic ones in order.
    let mut runtime = LoadedPlugins::build(true, &specs)?;
    // The directory is printed once; the tables name the files.
    for provider in &mut runtime.providers {
        if let Some(file) = Path::new(&provider.source).file_name() {
            provider.source = file.to_string_lossy().into_owned();
        }
    }
    let static_only = LoadedPlugins::build(true, &[])?;
    let mut names: Vec<String> = IMPORTS.iter().map(|&name| name.to_owned()).collect();
    sort_imports(&mut names);
    let traced = resolve_names(&runtime.manager, &names)?;
    let static_trace = resolve_names(&static_only.manager, &names)?;
    let imports = runtime.manager.resolve_imports(&names).map_err(|source| CliError::Manager {
        context: "resolving the demo's import table".to_owned(),
        source,
    })?;

    // Call the overridden import once, to show the dynamic copy answers.
    let fma = imports.index_of("static_fma_i64").unwrap_or(usize::MAX);
    let mut fma_args = FmaArgs { result: 0, a: 6, b: 7, c: 0 };
    let fma_import = imports
        .import(fma)
        .map_err(|source| CliError::Manager { context: "calling static_fma_i64".to_owned(), source })?;
    // SAFETY: `static_fma_i64` takes `{ i64 result, a, b, c }`, which
    // `FmaArgs` mirrors.
    let fma_result = unsafe { fma_import.call(&mut fma_args) };
    if fma_result != 0 || fma_args.result != 42 {
        return Err(CliError::ImportFailed { name: "static_fma_i64".to_owned(), result: fma_result });
    }

    // The dispatch.
    let mul = imports.index_of("simple_mul_workgroup").unwrap_or(usize::MAX);
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let n = usize::try_from(options.elements).unwrap_or(usize::MAX).max(1);
    let progress = Progress::start(&format!("dispatching simple_mul_workgroup over {n} floats"));
    let lhs: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
    let rhs: Vec<f32> = (0..n).map(|i| ((i * 7) % 113) as f32 + 0.25).collect();
    let mut by_plugin = vec![0.0f32; n];
    let mut by_loop = vec![0.0f32; n];
    let plugin_seconds = timed(passes, || {
        dispatch(threads, &lhs, &rhs, &mut by_plugin, &|l, r, o| plugin_share(&imports, mul, l, r, o))
    })?;
    let loop_seconds = timed(passes, || dispatch(threads, &lhs, &rhs, &mut by_loop, &inline_share))?;
    progress.finish();
    if let Some(index) = (0..n).find(|&i| by_plugin[i].to_bits() != by_loop[i].to_bits()) {
        return Err(CliError::Mismatch { index, expected: by_loop[index], found: by_plugin[index] });
    }
    let workgroups = n.div_ceil(WORKGROUP);
    let rate = |seconds: f64| n as f64 / seconds / 1e6;

    let rows: Vec<(String, Option<usize>, Option<usize>)> = names
        .iter()
        .enumerate()
        .map(|(i, name)| (name.clone(), traced.providers[i], static_trace.providers[i]))
        .collect();
    if json {
        print_json(&json!({
            "ok": true,
            "scan_order": runtime.scan_order().map(|provider| json!({
                "index": provider.registered.index(),
                "name": provider.registered.name(),
                "source": provider.source,
            })).collect::<Vec<_>>(),
            "imports": rows.iter().map(|(name, provider, statically)| json!({
                "name": name,
                "optional": name.starts_with('?'),
                "resolved": provider.is_some(),
                "provider": provider.map(|i| runtime.name(i)),
                "provider_index": provider,
                "overrides_static": statically.filter(|s| Some(*s) != *provider).map(|s| static_only.name(s)),
            })).collect::<Vec<_>>(),
            "missing_optional": imports.resolution().contains(xplug_abi::Resolution::MISSING_OPTIONAL),
            "elements": n,
            "workgroups": workgroups,
            "threads": threads,
            "passes": passes,
            "verified": true,
            "plugin_seconds": plugin_seconds,
            "inline_seconds": loop_seconds,
            "plugin_melem_per_s": rate(plugin_seconds),
            "inline_melem_per_s": rate(loop_seconds),
            "plugin_over_inline": plugin_seconds / loop_seconds,
        }));
        return Ok(0);
    }
    let style = Style::stdout();
    println!("{}", style.bold("xplug dispatch demo"));
    println!("plugins from {}\n", dir.display());
    println!("{}", style.bold("scan order (newest first; the first provider with a name wins):"));
    let mut order = Table::new(["#", "provider", "source"]);
    for provider in runtime.scan_order() {
        order.row([
            provider.registered.index().to_string(),
            provider.registered.name().to_owned(),
            provider.source.clone(),
        ]);
    }
    print!("{}", order.render(style));
    println!("\n{}", style.bold("import table (sorted by bare name, as IREE's compiler emits it):"));
    let mut table = Table::new(["import", "kind", "resolved by", "note"]);
    for (name, provider, statically) in &rows {
        let optional = name.starts_with('?');
        let by = match provider {
            Some(i) => style.good(&format!("#{i} {}", runtime.describe(*i))),
            None if optional => style.warn("nobody (optional: slot stays NULL)"),
            None => style.bad("nobody"),
        };
        let note = match statically {
            Some(s) if Some(*s) != *provider => {
                format!("overrides static #{s} {}", static_only.describe(*s))
            }
            _ => String::new(),
        };
        table.row([name.clone(), if optional { "optional" } else { "required" }.to_owned(), by, note]);
    }
    print!("{}", table.render(style));
    println!("\nstatic_fma_i64(6, 7, 0) = {} through the overriding provider", fma_args.result);
    println!(
        "\n{} {n} floats, {workgroups} workgroups of {WORKGROUP}, {threads} thread(s), median of {} pass(es); \
         {}",
        style.bold("simple_mul_workgroup:"),
        passes,
        style.good("result matches the plain Rust loop bit for bit")
    );
    let mut timing = Table::new(["path", "time", "throughput", "relative time"]);
    timing.row([
        "plugin import (one call per workgroup)".to_owned(),
        format!("{:.2} ms", plugin_seconds * 1e3),
        format!("{:.0} Melem/s", rate(plugin_seconds)),
        format!("{:.2}x", plugin_seconds / loop_seconds),
    ]);
    timing.row([
        "inline Rust loop".to_owned(),
        format!("{:.2} ms", loop_seconds * 1e3),
        format!("{:.0} Melem/s", rate(loop_seconds)),
        "1.00x".to_owned(),
    ]);
    print!("{}", timing.render(style));
    println!(
        "relative time = the path's median time / the inline loop's (lower is better): {:.2}x means the plugin \
         path took {:.2} times as long as the same multiply written inline, which the compiler can optimise as one loop",
        plugin_seconds / loop_seconds,
        plugin_seconds / loop_seconds
    );
    Ok(0)
}
