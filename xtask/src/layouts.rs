//! `cargo xtask bench-layouts`: row (8) of `cargo xtask bench` measured
//! under several code layouts of one build.
//!
//! On some machines the ratios of row (8) (a call of a few tens of
//! nanoseconds on each side) follow where the linker placed the code as
//! much as the code itself. This command builds `xplug-benches`'
//! `resolve_loop` example once per padding size (`XPLUG_LAYOUT_PAD`: that
//! many bytes linked ahead of every crate's code and of IREE's runtime, so
//! the same code runs at other addresses), runs its paired measurement
//! (row (8)'s pairing, outside criterion) for each case, and prints one
//! table: per case, the ratio in every layout and their range.

use std::path::{Path, PathBuf};
use std::process::Command;

use xplug_table::{Style, Table};

use crate::bench::{BenchError, Paired, paired_file};

/// The paddings measured by default, in bytes.
pub const DEFAULT_PADS: [usize; 5] = [0, 16, 48, 400, 2000];

/// The largest padding `resolve_loop` accepts (1 MiB).
pub const MAX_PAD: usize = 1 << 20;

/// Parses a padding for the command line: a byte count up to [`MAX_PAD`].
///
/// # Errors
/// A message naming the accepted range.
pub fn parse_pad(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(pad) if pad <= MAX_PAD => Ok(pad),
        _ => Err(format!("`{text}` is not a padding: give a byte count from 0 to {MAX_PAD}")),
    }
}

/// Parses a measuring time for the command line: positive seconds.
///
/// # Errors
/// A message asking for a positive number.
pub fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds > 0.0 && seconds <= 3600.0 => Ok(seconds),
        _ => {
            Err(format!("`{text}` is not a measuring time: give seconds above 0, at most 3600, such as 1.5"))
        }
    }
}

/// Row (8)'s cases, as `resolve_loop` and the `iree_runtime` bench name
/// them (`xplug_benches::LOADER_CASES`).
pub const CASES: [&str; 3] = ["c_plugin", "sdk_1", "sdk_4"];

/// The two comparisons `resolve_loop paired` makes for a case: the file
/// stem it writes and how the table names it.
pub const COMPARISONS: [(&str, &str); 2] = [
    ("loader_call", "xplug-iree's provider / IREE's manager (the loader's call)"),
    ("fresh_request", "`Manager::resolve`, fresh request / IREE's manager"),
];

/// One measurement: a case and comparison under one padding.
#[derive(Debug, Clone)]
pub struct LayoutRatio {
    /// Bytes of padding the binary was built with.
    pub pad: usize,
    /// The case (one of [`CASES`]).
    pub case: String,
    /// The comparison's file stem (one of [`COMPARISONS`]).
    pub comparison: &'static str,
    /// What `resolve_loop` measured.
    pub paired: Paired,
}

/// Where `resolve_loop paired` writes the estimate of `case` and
/// `comparison` when built with `pad` bytes of padding.
#[must_use]
pub fn estimate_path(criterion: &Path, pad: usize, case: &str, comparison: &str) -> PathBuf {
    criterion.join("layouts").join(format!("pad-{pad}")).join(format!("{case}-{comparison}.json"))
}

/// Builds `resolve_loop` with each padding of `pads` and measures `cases`
/// for `seconds` per comparison, reporting progress on stderr.
///
/// # Errors
/// [`BenchError::Command`] when the build or `resolve_loop` fails, [`BenchError::Estimate`] when it wrote no result.
pub fn run(
    root: &Path,
    pads: &[usize],
    cases: &[String],
    seconds: f64,
) -> Result<Vec<LayoutRatio>, BenchError> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let binary = xplug_fixtures::target_dir(root).join("release").join("examples").join("resolve_loop");
    let criterion = crate::bench::criterion_dir(root);
    let mut out = Vec::new();
    for (step, &pad) in pads.iter().enumerate() {
        eprintln!("[{}/{}] {pad} bytes of padding: building resolve_loop", step + 1, pads.len());
        xplug_fixtures::command::status(
            Command::new(&cargo).current_dir(root).env("XPLUG_LAYOUT_PAD", pad.to_string()).args([
                "build",
                "--release",
                "-p",
                "xplug-benches",
                "--example",
                "resolve_loop",
            ]),
        )
        .map_err(|source| BenchError::Command { source })?;
        for case in cases {
            for (comparison, _) in COMPARISONS {
                // A result left by an earlier run must not stand in for this one.
                let _ = std::fs::remove_file(estimate_path(&criterion, pad, case, comparison));
            }
            eprintln!(
                "[{}/{}] {pad} bytes of padding: measuring {case} ({seconds} s per comparison)",
                step + 1,
                pads.len()
            );
            xplug_fixtures::command::status(Command::new(&binary).current_dir(root).args([
                "paired",
                case,
                &seconds.to_string(),
            ]))
            .map_err(|source| BenchError::Command { source })?;
            for (comparison, _) in COMPARISONS {
                let paired = paired_file(&estimate_path(&criterion, pad, case, comparison))?;
                out.push(LayoutRatio { pad, case: case.clone(), comparison, paired });
            }
        }
    }
    Ok(out)
}

/// The table of `ratios`: one line per case and comparison, one column per
/// padding (xplug / IREE, lower is better), then the range and how many
/// layouts meet row (8)'s 1.0x target.
#[must_use]
pub fn table(ratios: &[LayoutRatio], style: Style) -> String {
    let mut pads: Vec<usize> = ratios.iter().map(|ratio| ratio.pad).collect();
    pads.sort_unstable();
    pads.dedup();
    let mut header = vec!["case".to_owned(), "comparison".to_owned()];
    header.extend(pads.iter().map(|pad| format!("pad {pad}")));
    header.extend(["range".to_owned(), "<= 1.0x".to_owned()]);
    let mut table = Table::new(header);
    let mut cases: Vec<&str> = Vec::new();
    for ratio in ratios {
        if !cases.contains(&ratio.case.as_str()) {
            cases.push(&ratio.case);
        }
    }
    for case in cases {
        for (comparison, label) in COMPARISONS {
            let found: Vec<&LayoutRatio> =
                ratios.iter().filter(|ratio| ratio.case == case && ratio.comparison == comparison).collect();
            if found.is_empty() {
                continue;
            }
            let mut line = vec![case.to_owned(), label.to_owned()];
            line.extend(pads.iter().map(|pad| {
                found
                    .iter()
                    .find(|ratio| ratio.pad == *pad)
                    .map_or_else(|| "-".to_owned(), |ratio| format!("{:.3}x", ratio.paired.ratio))
            }));
            let (low, high) = found.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(low, high), ratio| {
                (low.min(ratio.paired.ratio), high.max(ratio.paired.ratio))
            });
            let met = found.iter().filter(|ratio| ratio.paired.ratio <= 1.0).count();
            line.push(format!("{low:.3}x to {high:.3}x"));
            line.push(format!("{met} of {}", found.len()));
            table.row(line);
        }
    }
    table.render(style)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ratio(pad: usize, case: &str, comparison: &'static str, value: f64) -> LayoutRatio {
        LayoutRatio {
            pad,
            case: case.to_owned(),
            comparison,
            paired: Paired { a_ns: 10.0, b_ns: 10.0 * value, ratio: value },
        }
    }

    #[test]
    fn the_table_gives_each_layout_a_column_and_each_case_its_range() {
        let ratios = [
            ratio(400, "sdk_1", "loader_call", 0.972),
            ratio(0, "sdk_1", "loader_call", 1.056),
            ratio(0, "sdk_1", "fresh_request", 0.9),
            ratio(400, "sdk_1", "fresh_request", 0.95),
        ];
        let text = table(&ratios, Style::plain());
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("pad 0") && lines[0].contains("pad 400"), "{text}");
        assert!(lines[0].find("pad 0") < lines[0].find("pad 400"), "paddings in increasing order: {text}");
        let loader = lines.iter().find(|line| line.contains("loader's call")).expect(&text);
        assert!(loader.contains("1.056x") && loader.contains("0.972x"), "{loader}");
        assert!(loader.contains("0.972x to 1.056x") && loader.contains("1 of 2"), "{loader}");
        let fresh = lines.iter().find(|line| line.contains("fresh request")).expect(&text);
        assert!(fresh.contains("0.900x to 0.950x") && fresh.contains("2 of 2"), "{fresh}");
    }

    #[test]
    fn paddings_and_times_out_of_range_are_refused_with_the_range() {
        assert_eq!(parse_pad("400"), Ok(400));
        assert_eq!(parse_pad("1048576"), Ok(MAX_PAD));
        assert!(parse_pad("1048577").unwrap_err().contains("0 to 1048576"));
        assert!(parse_pad("-1").is_err() && parse_pad("4k").is_err());
        assert_eq!(parse_seconds("1.5"), Ok(1.5));
        for bad in ["0", "-2", "NaN", "inf", "soon"] {
            assert!(parse_seconds(bad).unwrap_err().contains("above 0"), "{bad}");
        }
    }

    #[test]
    fn a_layout_missing_a_case_shows_a_dash() {
        let ratios = [ratio(0, "c_plugin", "loader_call", 1.0), ratio(16, "sdk_4", "loader_call", 1.05)];
        let text = table(&ratios, Style::plain());
        let c_plugin = text.lines().find(|line| line.contains("c_plugin")).expect(&text);
        assert!(
            c_plugin.contains("1.000x") && c_plugin.contains('-') && c_plugin.contains("1 of 1"),
            "{c_plugin}"
        );
    }
}
