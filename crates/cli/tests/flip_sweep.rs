//! The byte-flip sweep, strided for CI: every `STRIDE`-th byte of the
//! compiled `tests/iree/mul_call.mlir` set to `0xff`, each copy run by
//! `xplug run` and by IREE's `iree-run-module` with the same flags; no
//! offset may crash or hang xplug where IREE's tool exits normally. The
//! full sweep (every byte) is `cargo xtask flip-sweep`; both run
//! [`xplug_fixtures::flip_sweep::sweep`].

use std::time::Duration;

use xplug_fixtures::flip_sweep::{self, Config, End};
use xplug_fixtures::iree_e2e::{self, MUL_CALL};
use xplug_fixtures::plugins::PluginProfile;

/// Every 7th byte: about 1 300 offsets of the ~9 KB module, both tools on
/// each, which takes one to two minutes on two cores.
const STRIDE: usize = 7;

#[test]
#[ignore = "open findings (issue 33, item 2): a kernel writing into a zero-length buffer (IREE's, but not \
            proven by the sweep's checks) and three offsets of the embedded executable; docs/iree-runtime.md, \
            \"Damaged modules\". Run with --ignored."]
fn no_flipped_byte_crashes_or_hangs_xplug_run_where_iree_run_module_survives() {
    let prepared =
        iree_e2e::prepare(&xplug_fixtures::workspace_root(), PluginProfile::Debug).expect("IREE is ready");
    let config = Config {
        module: prepared.module(MUL_CALL).to_owned(),
        xplug: env!("CARGO_BIN_EXE_xplug").into(),
        iree_run_module: flip_sweep::native_iree_run_module(&prepared.tools),
        flags: Config::mul_flags(MUL_CALL.function, prepared.library("sample_system")),
        value: 0xff,
        stride: STRIDE,
        first: 0,
        jobs: std::thread::available_parallelism().map_or(2, std::num::NonZero::get),
        // Bounds a hang; a normal run takes well under a second.
        timeout: Duration::from_secs(30),
        iree_reruns: 5,
        layout_rerun: true,
        iree_memcheck: flip_sweep::memcheck_prefix(),
        work: prepared.work.join("flip-sweep-test"),
    };
    let report = flip_sweep::sweep(&config, |_| {}).expect("the sweep runs");
    let table = report.table();
    eprintln!("{table}");
    assert!(report.findings().is_empty(), "{table}");
    // The sweep reached the module's contents: most copies are refused by
    // both tools, and some still run (a byte that does not matter).
    let swept = report.results.len();
    assert!(swept + report.unchanged.len() >= report.module_len / STRIDE, "{table}");
    let refused = report.results.iter().filter(|result| result.iree.end == End::Exited(1)).count();
    let ran = report.results.iter().filter(|result| result.iree.end == End::Exited(0)).count();
    assert!(refused > 0 && ran > 0, "{table}");
}
