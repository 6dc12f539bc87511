//! `cargo xtask bench`: run the criterion benchmarks of `xplug-benches` and
//! print one table of the ratios the project tracks.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use xplug_cli::output::format_ns;

/// What can go wrong.
#[derive(Debug)]
#[non_exhaustive]
pub enum BenchError {
    /// `cargo bench` could not run or failed.
    Cargo {
        /// What happened.
        detail: String,
    },
    /// A criterion result file is missing or unreadable.
    Estimate {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
}

impl std::fmt::Display for BenchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Cargo { detail } => write!(f, "`cargo bench -p xplug-benches` failed: {detail}"),
            Self::Estimate { path, detail } => write!(
                f,
                "cannot read benchmark result {}: {detail}; run `cargo xtask bench` without filters",
                path.display()
            ),
        }
    }
}

impl std::error::Error for BenchError {}

/// Runs `cargo bench -p xplug-benches` (the `xplug`, `anchor` and
/// `iree_runtime` benches),
/// passing `extra` to criterion.
///
/// # Errors
/// When cargo cannot start or the benchmarks fail.
pub fn run_benches(root: &Path, extra: &[String]) -> Result<(), BenchError> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(&cargo)
        .current_dir(root)
        .args([
            "bench",
            "-p",
            "xplug-benches",
            "--bench",
            "xplug",
            "--bench",
            "anchor",
            "--bench",
            "iree_runtime",
            "--",
        ])
        .args(extra)
        .status()
        .map_err(|error| BenchError::Cargo { detail: error.to_string() })?;
    if status.success() { Ok(()) } else { Err(BenchError::Cargo { detail: format!("exited with {status}") }) }
}

/// Criterion's output directory.
#[must_use]
pub fn criterion_dir(root: &Path) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    target.join("criterion")
}

/// The median (ns) of benchmark `id` (`group/function[/parameter]`).
///
/// # Errors
/// When the result file is missing or malformed.
pub fn median_ns(criterion: &Path, id: &str) -> Result<f64, BenchError> {
    let path = criterion.join(id).join("new").join("estimates.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|error| BenchError::Estimate { path: path.clone(), detail: error.to_string() })?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|error| BenchError::Estimate { path: path.clone(), detail: error.to_string() })?;
    value["median"]["point_estimate"]
        .as_f64()
        .ok_or_else(|| BenchError::Estimate { path, detail: "no median.point_estimate".to_owned() })
}

/// A paired estimate the `anchor` bench writes next to criterion's results:
/// medians over adjacent batches of the baseline (`a`) and xplug (`b`).
#[derive(Debug, Clone, Copy)]
pub struct Paired {
    /// The baseline's median time per iteration (ns).
    pub a_ns: f64,
    /// xplug's median time per iteration (ns).
    pub b_ns: f64,
    /// The median of the per-pair ratios `b / a`.
    pub ratio: f64,
}

/// Reads `<criterion>/<group>/paired[-<parameter>].json`.
///
/// # Errors
/// When the file is missing or malformed.
pub fn paired(criterion: &Path, group: &str, parameter: Option<usize>) -> Result<Paired, BenchError> {
    let file = match parameter {
        Some(parameter) => format!("paired-{parameter}.json"),
        None => "paired.json".to_owned(),
    };
    paired_file(&criterion.join(group).join(file))
}

/// Reads one paired-estimate file.
///
/// # Errors
/// When the file is missing or malformed.
pub fn paired_file(path: &Path) -> Result<Paired, BenchError> {
    let path = path.to_path_buf();
    let text = std::fs::read_to_string(&path)
        .map_err(|error| BenchError::Estimate { path: path.clone(), detail: error.to_string() })?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|error| BenchError::Estimate { path: path.clone(), detail: error.to_string() })?;
    let field = |name: &str| {
        value[name]
            .as_f64()
            .ok_or_else(|| BenchError::Estimate { path: path.clone(), detail: format!("no {name}") })
    };
    Ok(Paired { a_ns: field("a_ns")?, b_ns: field("b_ns")?, ratio: field("ratio_b_over_a")? })
}

/// The target of a row that is reported without a target (it measures what
/// a layer costs, not a goal).
pub const REPORT_ONLY: &str = "(reported)";

/// One line of the summary.
#[derive(Debug, Clone)]
pub struct Ratio {
    /// What is compared.
    pub comparison: String,
    /// xplug's median (ns).
    pub xplug_ns: f64,
    /// The baseline's median (ns).
    pub baseline_ns: f64,
    /// The ratio as the target states it.
    pub ratio: f64,
    /// The target, in words.
    pub target: &'static str,
    /// Whether the ratio meets it.
    pub met: bool,
}

/// Reads every benchmark result and computes the tracked ratios.
///
/// # Errors
/// When a result file is missing.
pub fn ratios(criterion: &Path) -> Result<Vec<Ratio>, BenchError> {
    let get = |id: &str| median_ns(criterion, id);
    let mut out = Vec::new();
    for names in [16, 256, 4096] {
        let sdk = get(&format!("resolve_per_name/sdk/{names}"))?;
        let sdk_raw = get(&format!("resolve_per_name/sdk_raw/{names}"))?;
        let strcmp = get(&format!("resolve_per_name/c_strcmp/{names}"))?;
        let merge = get(&format!("resolve_per_name/merge_walk/{names}"))?;
        let search = get(&format!("resolve_per_name/binary_search/{names}"))?;
        let per = |ns: f64| ns / f64::from(names);
        out.push(Ratio {
            comparison: format!(
                "(1) resolve {names} of 4096: C strcmp plugin / SDK plugin (both via provider)"
            ),
            xplug_ns: per(sdk),
            baseline_ns: per(strcmp),
            ratio: strcmp / sdk,
            target: ">= 100x",
            met: strcmp / sdk >= 100.0,
        });
        let best = merge.min(search);
        let reference = if merge <= search { "merge walk" } else { "binary search" };
        for (what, ns) in [("SDK resolver (raw v0 call)", sdk_raw), ("SDK plugin via provider", sdk)] {
            out.push(Ratio {
                comparison: format!("(1) resolve {names} of 4096: {what} / best reference ({reference})"),
                xplug_ns: per(ns),
                baseline_ns: per(best),
                ratio: ns / best,
                target: "<= 1.5x",
                met: ns / best <= 1.5,
            });
        }
    }
    for providers in [1, 8] {
        get(&format!("manager/manager/{providers}"))?;
        get(&format!("manager/direct_sum/{providers}"))?;
        // The row itself is the paired estimate.
        let paired = paired_file(&criterion.join("manager").join(format!("paired-{providers}.json")))?;
        out.push(Ratio {
            comparison: format!("(2) manager over {providers} provider(s) / sum of direct resolves"),
            xplug_ns: paired.b_ns,
            baseline_ns: paired.a_ns,
            ratio: paired.ratio,
            target: "< 1.5x",
            met: paired.ratio < 1.5,
        });
    }
    get("call/direct_fn_ptr")?;
    for (what, name, stem) in [
        ("ResolvedImports::import handle, checked once", "call/resolved_import_handle", "paired-handle"),
        ("TypedImport from ResolvedImports::typed, a safe call", "call/typed_import", "paired-typed"),
    ] {
        get(name)?;
        let paired = paired_file(&criterion.join("call").join(format!("{stem}.json")))?;
        out.push(Ratio {
            comparison: format!("(3) import call: {what} / plain function pointer"),
            xplug_ns: paired.b_ns,
            baseline_ns: paired.a_ns,
            ratio: paired.ratio,
            target: "<= 1.1x",
            met: paired.ratio <= 1.1,
        });
    }
    // (5) xplug's Manager against IREE's own manager over the same plugins.
    let mut anchor = |comparison: String, group: &str, parameter: Option<usize>| -> Result<(), BenchError> {
        let id = |side: &str| match parameter {
            Some(parameter) => format!("{group}/{side}/{parameter}"),
            None => format!("{group}/{side}"),
        };
        // Both sides must have run; the row itself is the paired estimate.
        get(&id("xplug"))?;
        get(&id("iree"))?;
        let paired = paired(criterion, group, parameter)?;
        out.push(Ratio {
            comparison,
            xplug_ns: paired.b_ns,
            baseline_ns: paired.a_ns,
            ratio: paired.ratio,
            target: "<= 1.0x",
            met: paired.ratio <= 1.0,
        });
        Ok(())
    };
    let resolve = "(5) resolve through the manager, xplug `Manager` / IREE's manager:";
    anchor(format!("{resolve} 1 C plugin, 1 name"), "anchor_c_plugin", None)?;
    anchor(format!("{resolve} 3 C plugins, the name in the oldest"), "anchor_3_plugins", None)?;
    for names in [1, 4] {
        anchor(
            format!("{resolve} SDK sample_standalone (.so), {names} name(s)"),
            "anchor_sdk_standalone",
            Some(names),
        )?;
    }
    for names in [16, 256, 4096] {
        anchor(
            format!("{resolve} SDK 4096-export plugin (static), {names} names"),
            "anchor_sdk_4096",
            Some(names),
        )?;
    }
    for names in [16, 256, 4096] {
        anchor(
            format!("{resolve} C strcmp 4096-export plugin (.so), {names} names"),
            "anchor_c_strcmp_4096",
            Some(names),
        )?;
    }
    let pass = get("anchor_judging_pass/4096")?;
    let iree_4096 = paired(criterion, "anchor_sdk_4096", Some(4096))?.a_ns;
    out.push(Ratio {
        comparison:
            "(5) xplug's judging pass alone over 4 096 filled slots / IREE's manager resolving those 4 096 \
                     names"
                .to_owned(),
        xplug_ns: pass,
        baseline_ns: iree_4096,
        ratio: pass / iree_4096,
        target: REPORT_ONLY,
        met: true,
    });
    get("anchor_iree_over_xplug/xplug_manager")?;
    get("anchor_iree_over_xplug/plugin")?;
    let over = paired(criterion, "anchor_iree_over_xplug", None)?;
    out.push(Ratio {
        comparison:
            "(6) IREE's manager with xplug's `Manager::as_c_provider()` behind it / with the C plugin \
                     registered directly (1 name)"
                .to_owned(),
        xplug_ns: over.b_ns,
        baseline_ns: over.a_ns,
        ratio: over.ratio,
        target: REPORT_ONLY,
        met: true,
    });
    let loader = get("load/system_library_plugin")?;
    let raw = get("load/raw_dlopen")?;
    out.push(Ratio {
        comparison: "(4) load + first resolve: Plugin::load_system_library / raw dlopen by hand".to_owned(),
        xplug_ns: loader,
        baseline_ns: raw,
        ratio: loader / raw,
        target: "<= 1.2x",
        met: loader / raw <= 1.2,
    });
    let embedded = get("embedded_load/embedded_elf_plugin")?;
    let system = get("embedded_load/system_library_plugin")?;
    out.push(Ratio {
        comparison: "(7) load + first resolve + unload of one standalone file: Plugin::load_embedded_elf / Plugin::load_system_library"
            .to_owned(),
        xplug_ns: embedded,
        baseline_ns: system,
        ratio: embedded / system,
        target: "<= 0.5x",
        met: embedded / system <= 0.5,
    });
    let floor = get("embedded_load/syscall_floor")?;
    out.push(Ratio {
        comparison:
            "(7) floor: the system calls alone of that load (open, read, mmap, 2 mprotect, munmap) / \
                     Plugin::load_system_library"
                .to_owned(),
        xplug_ns: floor,
        baseline_ns: system,
        ratio: floor / system,
        target: REPORT_ONLY,
        met: true,
    });
    let iree_embedded = get("embedded_load/iree_embedded_elf")?;
    out.push(Ratio {
        comparison: "(7) load + first resolve + unload of one standalone file: Plugin::load_embedded_elf / IREE's embedded ELF loader"
            .to_owned(),
        xplug_ns: embedded,
        baseline_ns: iree_embedded,
        ratio: embedded / iree_embedded,
        target: "<= 1.0x",
        met: embedded / iree_embedded <= 1.0,
    });
    // (8) to (10): IREE's runtime (xplug-iree) with xplug's manager behind
    // its loaders / with IREE's own manager (the `iree_runtime` bench).
    let mut runtime_row = |comparison: String, group: &str, target: &'static str, limit: f64| {
        get(&format!("{group}/xplug"))?;
        get(&format!("{group}/iree"))?;
        let paired = paired(criterion, group, None)?;
        out.push(Ratio {
            comparison,
            xplug_ns: paired.b_ns,
            baseline_ns: paired.a_ns,
            ratio: paired.ratio,
            target,
            met: paired.ratio <= limit,
        });
        Ok::<(), BenchError>(())
    };
    for (row, what) in [
        ("c_plugin", "1 C plugin, 1 name"),
        ("sdk_1", "SDK sample, 1 name"),
        ("sdk_4", "SDK sample, 4 names"),
    ] {
        runtime_row(
            format!("(8) IREE loader's resolve call, xplug-iree's provider / IREE's manager: {what}"),
            &format!("iree_loader_call_{row}"),
            "<= 1.0x",
            1.0,
        )?;
        runtime_row(
            format!(
                "(8) `Manager::resolve` on a fresh `ResolveRequest` / IREE's manager's loader call: {what}"
            ),
            &format!("iree_fresh_request_{row}"),
            "<= 1.0x",
            1.0,
        )?;
    }
    runtime_row(
        "(9) IREE runtime, module load to first result (mul_call, 64 elements, local-sync): xplug's manager / IREE's"
            .to_owned(),
        "iree_module_load",
        "<= 1.0x",
        1.0,
    )?;
    runtime_row(
        "(10) IREE runtime, steady-state call over 1M elements (local-sync): xplug's manager / IREE's"
            .to_owned(),
        "iree_call_1m",
        "<= 1.02x",
        1.02,
    )?;
    Ok(out)
}

/// Two decimals, or three where two would show 1.00x: a level row then
/// still shows on which side of its target it fell.
fn format_ratio(ratio: f64) -> String {
    if (0.995..1.005).contains(&ratio) { format!("{ratio:.3}x") } else { format!("{ratio:.2}x") }
}

/// The summary as a Markdown table (what the README records).
#[must_use]
pub fn table(ratios: &[Ratio]) -> String {
    let mut out =
        String::from("| comparison | xplug | baseline | ratio | target | met |\n|---|---|---|---|---|---|\n");
    for r in ratios {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            r.comparison,
            format_ns(r.xplug_ns),
            format_ns(r.baseline_ns),
            format_ratio(r.ratio),
            r.target,
            if r.target == REPORT_ONLY {
                "n/a"
            } else if r.met {
                "yes"
            } else {
                "**no**"
            }
        );
    }
    out.push_str(
        "\nMedians; rows (1) are per requested name, the others per operation. Rows (3), (5), (6) and (8) to (10) are \
         paired: batches of both sides run back to back, and the ratio is the median of the per-pair ratios.\n",
    );
    out
}

/// The machine the numbers come from: `nproc` and the CPU model.
#[must_use]
pub fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, model)| model.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    format!("{cpus} CPU(s) (nproc), {model}, {} {}", std::env::consts::OS, std::env::consts::ARCH)
}
