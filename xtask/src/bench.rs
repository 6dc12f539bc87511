//! `cargo xtask bench`: run the criterion benchmarks of `xplug-benches` and
//! print one table of the ratios the project tracks.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use xplug_fixtures::command::{self, CommandError};
use xplug_table::format_ns;

/// What can go wrong.
#[derive(Debug)]
#[non_exhaustive]
pub enum BenchError {
    /// `cargo bench`, a build or a measuring program (`resolve_loop`)
    /// could not start or failed.
    Command {
        /// Which, and how.
        source: CommandError,
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
            Self::Command { .. } => write!(f, "a benchmark command failed"),
            Self::Estimate { path, detail } => write!(
                f,
                "cannot read benchmark result {}: {detail}; run `cargo xtask bench` without filters",
                path.display()
            ),
        }
    }
}

impl std::error::Error for BenchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Command { source } => Some(source),
            Self::Estimate { .. } => None,
        }
    }
}

/// Runs `cargo bench -p xplug-benches` (the `xplug`, `anchor`,
/// `iree_runtime` and `pinned` benches),
/// passing `extra` to criterion.
///
/// # Errors
/// When cargo cannot start or the benchmarks fail.
pub fn run_benches(root: &Path, extra: &[String]) -> Result<(), BenchError> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut bench = Command::new(&cargo);
    bench
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
            "--bench",
            "pinned",
            "--",
        ])
        .args(extra);
    command::status(&mut bench).map_err(|source| BenchError::Command { source })
}

/// Criterion's output directory.
#[must_use]
pub fn criterion_dir(root: &Path) -> PathBuf {
    xplug_fixtures::target_dir(root).join("criterion")
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

/// The bound a row's ratio must meet, parsed from the text the table shows
/// (`<= 1.5x`, `< 1.5x`), so the decision and the printed target cannot
/// disagree. Every ratio is xplug / baseline, so every bound is an upper
/// one: lower is better.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// Reported without a goal ([`REPORT_ONLY`]).
    Report,
    /// `<= limit`.
    AtMost(f64),
    /// `< limit`.
    Below(f64),
}

impl Target {
    /// Parses `<= 1.5x`, `< 1.5x` or [`REPORT_ONLY`].
    ///
    /// # Errors
    /// The text, when it is none of these.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text == REPORT_ONLY {
            return Ok(Self::Report);
        }
        let number = |rest: &str| {
            rest.trim()
                .strip_suffix('x')
                .and_then(|n| n.trim().parse::<f64>().ok())
                .ok_or_else(|| text.to_owned())
        };
        if let Some(rest) = text.strip_prefix("<=") {
            Ok(Self::AtMost(number(rest)?))
        } else if let Some(rest) = text.strip_prefix('<') {
            Ok(Self::Below(number(rest)?))
        } else {
            Err(text.to_owned())
        }
    }

    /// Whether `ratio` meets the target (always, for a reported row).
    #[must_use]
    pub fn met_by(self, ratio: f64) -> bool {
        match self {
            Self::Report => true,
            Self::AtMost(limit) => ratio <= limit,
            Self::Below(limit) => ratio < limit,
        }
    }
}

/// One line of the summary: xplug's median over the baseline's, lower is
/// better.
#[derive(Debug, Clone)]
pub struct Ratio {
    /// The numbered claim the row belongs to (`(1)` to `(13)`): rows print
    /// in this order.
    pub row: u8,
    /// What is compared, `xplug side / baseline`.
    pub comparison: String,
    /// xplug's median (ns).
    pub xplug_ns: f64,
    /// The baseline's median (ns).
    pub baseline_ns: f64,
    /// xplug / baseline (the paired median for paired rows).
    pub ratio: f64,
    /// The target, as printed (`<= 1.5x`, or [`REPORT_ONLY`]).
    pub target: &'static str,
    /// Whether the ratio meets it.
    pub met: bool,
}

impl Ratio {
    /// A row whose `met` is decided by parsing `target`.
    ///
    /// # Panics
    /// When `target` is not a target [`Target::parse`] reads (the targets
    /// are constants of this module).
    #[must_use]
    pub fn new(
        row: u8,
        comparison: String,
        xplug_ns: f64,
        baseline_ns: f64,
        ratio: f64,
        target: &'static str,
    ) -> Self {
        let met = Target::parse(target).unwrap_or_else(|text| panic!("not a target: {text}")).met_by(ratio);
        Self { row, comparison, xplug_ns, baseline_ns, ratio, target, met }
    }

    /// Whether the row has a target and misses it.
    #[must_use]
    pub fn missed(&self) -> bool {
        self.target != REPORT_ONLY && !self.met
    }
}

/// The rows that miss their target (`cargo xtask bench --enforce` fails when
/// there is any).
#[must_use]
pub fn missed(ratios: &[Ratio]) -> Vec<&Ratio> {
    ratios.iter().filter(|ratio| ratio.missed()).collect()
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
        out.push(Ratio::new(
            1,
            format!("(1) resolve {names} of 4096: SDK plugin / C strcmp plugin (both via provider)"),
            per(sdk),
            per(strcmp),
            sdk / strcmp,
            "<= 0.01x",
        ));
        let best = merge.min(search);
        let reference = if merge <= search { "merge walk" } else { "binary search" };
        for (what, ns) in [("SDK resolver (raw v0 call)", sdk_raw), ("SDK plugin via provider", sdk)] {
            out.push(Ratio::new(
                1,
                format!("(1) resolve {names} of 4096: {what} / best reference ({reference})"),
                per(ns),
                per(best),
                ns / best,
                "<= 1.5x",
            ));
        }
    }
    for providers in [1, 8] {
        get(&format!("manager/manager/{providers}"))?;
        get(&format!("manager/direct_sum/{providers}"))?;
        // The row itself is the paired estimate.
        let paired = paired_file(&criterion.join("manager").join(format!("paired-{providers}.json")))?;
        out.push(Ratio::new(
            2,
            format!("(2) manager over {providers} provider(s) / sum of direct resolves"),
            paired.b_ns,
            paired.a_ns,
            paired.ratio,
            "< 1.5x",
        ));
    }
    get("call/direct_fn_ptr")?;
    for (what, name, stem) in [
        ("ResolvedImports::import handle, checked once", "call/resolved_import_handle", "paired-handle"),
        ("TypedImport from ResolvedImports::typed, a safe call", "call/typed_import", "paired-typed"),
    ] {
        get(name)?;
        let paired = paired_file(&criterion.join("call").join(format!("{stem}.json")))?;
        out.push(Ratio::new(
            3,
            format!("(3) import call: {what} / plain function pointer"),
            paired.b_ns,
            paired.a_ns,
            paired.ratio,
            "<= 1.1x",
        ));
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
        out.push(Ratio::new(5, comparison, paired.b_ns, paired.a_ns, paired.ratio, "<= 1.0x"));
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
    out.push(Ratio::new(
        5,
        "(5) xplug's judging pass alone over 4 096 filled slots / IREE's manager resolving those 4 096 names"
            .to_owned(),
        pass,
        iree_4096,
        pass / iree_4096,
        REPORT_ONLY,
    ));
    get("anchor_iree_over_xplug/xplug_manager")?;
    get("anchor_iree_over_xplug/plugin")?;
    let over = paired(criterion, "anchor_iree_over_xplug", None)?;
    out.push(Ratio::new(
        6,
        "(6) IREE's manager with xplug's `Manager::as_c_provider()` behind it / with the C plugin registered \
         directly (1 name)"
            .to_owned(),
        over.b_ns,
        over.a_ns,
        over.ratio,
        REPORT_ONLY,
    ));
    let loader = get("load/system_library_plugin")?;
    let raw = get("load/raw_dlopen")?;
    out.push(Ratio::new(
        4,
        "(4) load + first resolve: SYSTEM_LIBRARY.open + Code::load / raw dlopen by hand".to_owned(),
        loader,
        raw,
        loader / raw,
        "<= 1.2x",
    ));
    let embedded = get("embedded_load/embedded_elf_plugin")?;
    let system = get("embedded_load/system_library_plugin")?;
    out.push(Ratio::new(
        7,
        "(7) load + first resolve + unload of one standalone file: EMBEDDED_ELF / \
         SYSTEM_LIBRARY"
            .to_owned(),
        embedded,
        system,
        embedded / system,
        "<= 0.5x",
    ));
    // Not a floor: the hand-made sequence reads into a zero-filled buffer
    // and populates its mapping up front, choices the loader need not make,
    // so the loader can come out faster. It is what those system calls cost
    // done plainly, which the loader is compared with.
    let syscalls = get("embedded_load/syscall_floor")?;
    out.push(Ratio::new(
        7,
        "(7) the same load: EMBEDDED_ELF / its system calls done by hand, nothing else (open, \
         read into a buffer, populated mmap, copy, 2 mprotect, munmap)"
            .to_owned(),
        embedded,
        syscalls,
        embedded / syscalls,
        REPORT_ONLY,
    ));
    let iree_embedded = get("embedded_load/iree_embedded_elf")?;
    out.push(Ratio::new(
        7,
        "(7) load + first resolve + unload of one standalone file: EMBEDDED_ELF / IREE's embedded \
         ELF loader"
            .to_owned(),
        embedded,
        iree_embedded,
        embedded / iree_embedded,
        "<= 1.0x",
    ));
    // (8) to (10): IREE's runtime (xplug-iree) with xplug's manager behind
    // its loaders / with IREE's own manager (the `iree_runtime` bench).
    let mut runtime_row = |row: u8, comparison: String, group: &str, target: &'static str| {
        get(&format!("{group}/xplug"))?;
        get(&format!("{group}/iree"))?;
        let paired = paired(criterion, group, None)?;
        out.push(Ratio::new(row, comparison, paired.b_ns, paired.a_ns, paired.ratio, target));
        Ok::<(), BenchError>(())
    };
    for (row, what) in [
        ("c_plugin", "1 C plugin, 1 name"),
        ("sdk_1", "SDK sample, 1 name"),
        ("sdk_4", "SDK sample, 4 names"),
    ] {
        runtime_row(
            8,
            format!("(8) IREE loader's resolve call, xplug-iree's provider / IREE's manager: {what}"),
            &format!("iree_loader_call_{row}"),
            "<= 1.0x",
        )?;
        runtime_row(
            8,
            format!(
                "(8) `Manager::resolve` on a fresh `ResolveRequest` / IREE's manager's loader call: {what}"
            ),
            &format!("iree_fresh_request_{row}"),
            "<= 1.0x",
        )?;
    }
    runtime_row(
        9,
        "(9) IREE runtime, module load to first result (mul_call, 64 elements, local-sync): xplug's manager / IREE's"
            .to_owned(),
        "iree_module_load",
        "<= 1.0x",
    )?;
    runtime_row(
        10,
        "(10) IREE runtime, steady-state call over 1M elements (local-sync): xplug's manager / IREE's"
            .to_owned(),
        "iree_call_1m",
        "<= 1.02x",
    )?;
    // (11) the cost of a pin (the `pinned` bench): the same file loaded by
    // its pinned spec / by its plain spec, measured interleaved.
    for (group, what) in [("pinned_load_so", "shared library"), ("pinned_load_embedded", "embedded ELF")] {
        get(&format!("{group}/unpinned"))?;
        get(&format!("{group}/pinned"))?;
        let pinned = paired(criterion, group, None)?;
        out.push(Ratio::new(
            11,
            format!(
                "(11) load + unload of one {what} (standalone C sample) through `Manager::load_spec`: pinned \
                 spec (`?sha256=`) / plain spec"
            ),
            pinned.b_ns,
            pinned.a_ns,
            pinned.ratio,
            REPORT_ONLY,
        ));
    }
    // (12) live swap: a call through the trampoline / the plugin's own
    // function (paired only).
    // The aim is in nanoseconds per call (at most 2 ns more on the
    // plugin-dominated row), so the rows say the difference and report.
    for (stem, what) in [
        ("paired-scale", "`swap_scale_i32` (one multiply: the call dominates)"),
        (
            "paired-workgroup",
            "`simple_mul_workgroup`, one 64-element slice (the plugin dominates; aim: at most 2 ns more)",
        ),
    ] {
        let paired = paired_file(&criterion.join("swap").join(format!("{stem}.json")))?;
        out.push(Ratio::new(
            12,
            format!(
                "(12) import call through a swappable plugin / the same build, not swappable: {what}, {:.1} ns more \
                 per call",
                paired.b_ns - paired.a_ns
            ),
            paired.b_ns,
            paired.a_ns,
            paired.ratio,
            REPORT_ONLY,
        ));
    }
    // (13) Per-import profiles: the counting wrapper per call (aim: at most
    // 30 ns more than the plain call), and on a program's steady state.
    get("call/profiled_import")?;
    let wrapper = paired_file(&criterion.join("call").join("paired-profiled.json"))?;
    out.push(Ratio::new(
        13,
        format!(
            "(13) import call through the per-import profile's counting wrapper / plain function pointer \
             ({:.1} ns more per call; aim: at most 30 ns)",
            wrapper.b_ns - wrapper.a_ns
        ),
        wrapper.b_ns,
        wrapper.a_ns,
        wrapper.ratio,
        REPORT_ONLY,
    ));
    get("iree_call_1m_profiled/plain")?;
    get("iree_call_1m_profiled/profiled")?;
    let program = paired(criterion, "iree_call_1m_profiled", None)?;
    out.push(Ratio::new(
        13,
        "(13) IREE runtime, steady-state call over 1M elements (16 384 import calls, local-sync): \
         profiled device / unprofiled"
            .to_owned(),
        program.b_ns,
        program.a_ns,
        program.ratio,
        REPORT_ONLY,
    ));
    // Printed in claim order, (1) to (13); the sort keeps each claim's rows
    // in the order they were added.
    out.sort_by_key(|ratio| ratio.row);
    Ok(out)
}

/// Two decimals, or three where two would show 1.00x: a level row then
/// still shows on which side of its target it fell.
fn format_ratio(ratio: f64) -> String {
    if (0.995..1.005).contains(&ratio) {
        format!("{ratio:.3}x")
    } else if ratio < 0.1 {
        // Rows (1) against the strcmp plugin: three significant digits.
        format!("{ratio:.4}x")
    } else {
        format!("{ratio:.2}x")
    }
}

/// The one-line legend printed above the table.
pub const LEGEND: &str = "ratio = xplug / baseline for every row: lower is better (0.50x: xplug takes half the \
     baseline's time). target: the bound the ratio must stay under; met: yes, **no** (a miss: `cargo xtask bench \
     --enforce` fails), or n/a for rows reported without a target.";

/// The summary as a Markdown table (what docs/src/design/benchmarks.md records).
#[must_use]
pub fn table(ratios: &[Ratio]) -> String {
    let mut out = format!(
        "{LEGEND}\n\n| comparison | xplug | baseline | ratio (lower is better) | target | met |\n|---|---|---|---|---|---|\n"
    );
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
        "\nMedians; rows (1) are per requested name, the others per operation. Rows (3), (5), (6) and (8) to (13) are \
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows as `ratios` builds them, from (target, ratio) pairs.
    fn rows(pairs: &[(&'static str, f64)]) -> Vec<Ratio> {
        pairs
            .iter()
            .enumerate()
            .map(|(i, &(target, ratio))| Ratio::new(1, format!("row {i}"), ratio, 1.0, ratio, target))
            .collect()
    }

    #[test]
    fn targets_parse_and_decide() {
        assert_eq!(Target::parse("<= 1.5x"), Ok(Target::AtMost(1.5)));
        assert_eq!(Target::parse("< 1.5x"), Ok(Target::Below(1.5)));
        assert_eq!(Target::parse("<= 0.01x"), Ok(Target::AtMost(0.01)));
        assert_eq!(Target::parse(REPORT_ONLY), Ok(Target::Report));
        assert!(Target::parse(">= 100x").is_err(), "every ratio is xplug / baseline: no lower bounds");
        assert!(Target::parse("fast").is_err());
        assert!(Target::AtMost(1.5).met_by(1.5));
        assert!(!Target::Below(1.5).met_by(1.5));
        assert!(!Target::AtMost(1.0).met_by(1.0001));
        assert!(Target::Report.met_by(1e9));
    }

    #[test]
    fn check_fails_exactly_on_missed_targets() {
        let all_met = rows(&[("<= 1.5x", 0.3), ("< 1.5x", 1.49), (REPORT_ONLY, 40.0), ("<= 0.01x", 0.0037)]);
        assert!(missed(&all_met).is_empty());
        let one_missed = rows(&[("<= 1.5x", 0.3), ("<= 0.5x", 0.65), (REPORT_ONLY, 40.0)]);
        let missed_rows = missed(&one_missed);
        assert_eq!(missed_rows.len(), 1);
        assert_eq!(missed_rows[0].comparison, "row 1");
        // The table says so in the `met` column.
        let text = table(&one_missed);
        assert!(text.contains("| 0.65x | <= 0.5x | **no** |"), "{text}");
        assert!(text.starts_with(LEGEND), "{text}");
    }
}
