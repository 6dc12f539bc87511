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
//!   The two estimates are also written to
//!   `target/criterion/layouts/pad-PAD/CASE-loader_call.json` and
//!   `CASE-fresh_request.json`, where `cargo xtask bench-layouts` reads
//!   them.
//!
//! SIDE: `iree` (IREE's manager's C pair), `xplug` (the pair xplug-iree
//! installs) or `fresh` (`Manager::resolve` on a fresh `ResolveRequest`);
//! CASE: `c_plugin`, `sdk_1` or `sdk_4`, as in `benches/iree_runtime.rs`.
//!
//! # Code layouts
//!
//! On some machines row (8)'s ratios depend on where the linker happened
//! to place the code of both sides as much as on the code. Built with
//! `XPLUG_LAYOUT_PAD=BYTES` in the environment (x86_64 only), the binary
//! links a block of BYTES bytes of padding ahead of every crate's code, so
//! the same code runs at other addresses: `cargo xtask bench-layouts`
//! builds it with several paddings and measures each, and the binary
//! prints where both sides' resolve functions landed.

use std::time::Duration;

use xplug_benches::{LOADER_CASES, LoaderFixture, fresh_resolve, measure_pair, write_paired_estimate};
use xplug_fixtures::plugins::PluginProfile;

/// Bytes of padding linked ahead of the code (`XPLUG_LAYOUT_PAD` at build
/// time; 0 when unset).
const LAYOUT_PAD: usize = match option_env!("XPLUG_LAYOUT_PAD") {
    Some(text) => parse_pad(text),
    None => 0,
};

/// `text` as a decimal byte count of at most 1 MiB, at compile time.
const fn parse_pad(text: &str) -> usize {
    let bytes = text.as_bytes();
    assert!(!bytes.is_empty(), "XPLUG_LAYOUT_PAD is set but empty: give a decimal byte count such as 400");
    let mut value = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        assert!(bytes[i].is_ascii_digit(), "XPLUG_LAYOUT_PAD must be a decimal byte count such as 400");
        value = value * 10 + (bytes[i] - b'0') as usize;
        assert!(value <= 1 << 20, "XPLUG_LAYOUT_PAD must be at most 1048576 bytes");
        i += 1;
    }
    value
}

// The padding: a function of LAYOUT_PAD `nop`s and a `ret`, in its own
// section of this binary's first object, so the linker places it ahead of
// the code of every crate and of IREE's runtime, which all move by
// LAYOUT_PAD bytes. It is never called, only referenced (below) so that
// the linker keeps it.
#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(
    ".pushsection .text.xplug_layout_pad,\"ax\",@progbits",
    ".globl xplug_layout_pad",
    ".type xplug_layout_pad,@function",
    "xplug_layout_pad:",
    ".skip {pad}, 0x90",
    "ret",
    ".size xplug_layout_pad, . - xplug_layout_pad",
    ".popsection",
    pad = const LAYOUT_PAD,
);

#[cfg(target_arch = "x86_64")]
unsafe extern "C" {
    /// The padding block above (never called).
    fn xplug_layout_pad();
}

#[cfg(not(target_arch = "x86_64"))]
const _: () = assert!(LAYOUT_PAD == 0, "XPLUG_LAYOUT_PAD is only supported on x86_64");

fn main() {
    // Keeps the padding linked: its address is taken and passed where the
    // optimiser cannot see it unused.
    #[cfg(target_arch = "x86_64")]
    std::hint::black_box(xplug_layout_pad as unsafe extern "C" fn());
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
    let (iree_pair, xplug_pair) = (fixture.iree.as_c_provider(), fixture.provider.as_c_provider());
    let mut iree_call = || slots.loader_call(iree_pair);
    let mut xplug_call = || slots.loader_call(xplug_pair);
    let mut fresh = || fresh_resolve(&slots, &symbols, &fixture.manager);
    if side == "paired" {
        let seconds: f64 = n.parse().expect("SECONDS");
        let duration = Duration::from_secs_f64(seconds);
        // Offsets within the page: where the code landed, whatever the
        // address the binary was loaded at.
        let page_offset = |function: *const ()| function as usize & 0xfff;
        eprintln!(
            "layout: {LAYOUT_PAD} bytes of padding; resolve functions at page offsets {:#05x} (IREE's manager), \
             {:#05x} (xplug-iree's provider)",
            page_offset(iree_pair.resolve as *const ()),
            page_offset(xplug_pair.resolve as *const ()),
        );
        let loader = measure_pair(&mut iree_call, &mut xplug_call, 1, duration);
        let request = measure_pair(&mut iree_call, &mut fresh, 1, duration);
        let group = format!("layouts/pad-{LAYOUT_PAD}");
        for (row, stem, estimate) in
            [("loader call", "loader_call", loader), ("fresh request", "fresh_request", request)]
        {
            println!(
                "{} {row}: iree {:.1} ns, xplug {:.1} ns, ratio {:.3} ({} pairs)",
                case.row, estimate.a_ns, estimate.b_ns, estimate.ratio, estimate.pairs
            );
            write_paired_estimate(&group, &format!("{}-{stem}", case.row), &estimate);
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
