//! Row (8)'s loop alone, outside criterion.
//!
//! - `resolve_loop SIDE CASE N` runs N resolves of CASE through SIDE, for
//!   instruction counts under callgrind (counting N and 0 iterations and
//!   subtracting gives the cost per resolve); the wall time per resolve of
//!   the loop is printed too.
//! - `resolve_loop paired CASE SECONDS` measures `xplug` and `fresh` each
//!   against `iree` as row (8) does (interleaved batches, the median of the
//!   per-pair ratios), for SECONDS per pair: a quick check of a change.
//!
//! SIDE: `iree` (IREE's manager's C pair), `xplug` (the pair xplug-iree
//! installs) or `fresh` (`Manager::resolve` on a fresh `ResolveRequest`);
//! CASE: `c_plugin`, `sdk_1` or `sdk_4`, as in `benches/iree_runtime.rs`.

use std::time::Duration;

use xplug_benches::{LOADER_CASES, LoaderFixture, fresh_resolve, measure_pair};
use xplug_fixtures::plugins::PluginProfile;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, side, case, n] = &args[..] else { panic!("usage: resolve_loop SIDE CASE N") };
    let Some(case) = LOADER_CASES.iter().find(|known| known.row == case) else {
        panic!("unknown case {case}")
    };
    let root = xplug_fixtures::workspace_root();
    // The plugins the benchmark loads, built (or found up to date) first.
    xplug_fixtures::plugins::build(&root, PluginProfile::Release).expect("the example plugins build");
    let fixture =
        LoaderFixture::new(case, &xplug_fixtures::plugins::output_dir(&root, PluginProfile::Release));
    let (slots, symbols) = (fixture.slots(), fixture.symbols());
    let (iree_pair, xplug_pair) = (fixture.iree.as_raw(), fixture.provider.as_raw());
    let mut iree_call = || slots.loader_call(iree_pair);
    let mut xplug_call = || slots.loader_call(xplug_pair);
    let mut fresh = || fresh_resolve(&slots, &symbols, &fixture.manager);
    if side == "paired" {
        let seconds: f64 = n.parse().expect("SECONDS");
        let duration = Duration::from_secs_f64(seconds);
        let loader = measure_pair(&mut iree_call, &mut xplug_call, 1, duration);
        let request = measure_pair(&mut iree_call, &mut fresh, 1, duration);
        for (row, estimate) in [("loader call", loader), ("fresh request", request)] {
            println!(
                "{} {row}: iree {:.1} ns, xplug {:.1} ns, ratio {:.3} ({} pairs)",
                case.row, estimate.a_ns, estimate.b_ns, estimate.ratio, estimate.pairs
            );
        }
        return;
    }
    let n: usize = n.parse().expect("N");
    let side: &mut dyn FnMut() = match side.as_str() {
        "iree" => &mut iree_call,
        "xplug" => &mut xplug_call,
        "fresh" => &mut fresh,
        other => panic!("unknown side {other}"),
    };
    let start = std::time::Instant::now();
    for _ in 0..n {
        side();
    }
    if n > 0 {
        #[expect(clippy::cast_precision_loss, reason = "a loop count far below 2^52")]
        let per_resolve = start.elapsed().as_secs_f64() * 1e9 / n as f64;
        eprintln!("{}: {per_resolve:.1} ns per resolve", case.row);
    }
}
