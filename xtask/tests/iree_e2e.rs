//! IREE as the judge: the project's MLIR programs (`tests/iree/`) run in
//! IREE's own runtime (`iree-run-module` from the pinned pip packages) with
//! every example plugin that exports the kernels, and every output element
//! must be what the kernel computes.
//!
//! The first run creates `target/iree-venv` from PyPI; without network
//! access that fails with a message saying so (the test does not skip).

use xplug_fixtures::plugins::PluginProfile;
use xtask::iree_e2e::{self, E2eOutcome, Expected};

#[test]
fn example_plugins_compute_the_right_results_inside_iree() {
    let root = xplug_fixtures::workspace_root();
    let report = iree_e2e::run(&root, PluginProfile::Debug, |case, outcome| {
        if !matches!(outcome, E2eOutcome::Pass) {
            eprintln!("FAILED: {} with {:?} at n = {}", case.program.file, case.plugins, case.size);
        }
    })
    .unwrap_or_else(|error| {
        let mut message = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            message.push_str(&format!("\n  caused by: {cause}"));
            source = cause.source();
        }
        panic!("the IREE end-to-end run could not start: {message}")
    });
    println!("{}", iree_e2e::report_table(&report));
    assert!(report.all_passed(), "IREE computed wrong results:\n{}", iree_e2e::report_table(&report));

    // The matrix really covers what it claims.
    let cases = &report.results;
    for plugin in iree_e2e::KERNEL_PLUGINS {
        for program in [iree_e2e::MUL_CALL, iree_e2e::MUL_UKERNEL, iree_e2e::TWO_IMPORTS] {
            let sizes: Vec<usize> = cases
                .iter()
                .filter(|(case, _)| {
                    case.program.file == program.file
                        && case.plugins[0] == plugin
                        && !case.plugins.iter().any(|name| name == iree_e2e::MARKER_PLUGIN)
                })
                .map(|(case, _)| case.size)
                .collect();
            assert_eq!(sizes, iree_e2e::SIZES, "{} with {plugin}", program.file);
        }
    }
    let overrides: Vec<(&[String], &[Expected])> = cases
        .iter()
        .filter(|(case, _)| case.plugins.iter().any(|name| name == iree_e2e::MARKER_PLUGIN))
        .map(|(case, _)| (case.plugins.as_slice(), case.expected.as_slice()))
        .collect();
    assert!(
        overrides.iter().any(|(plugins, expected)| plugins.last().unwrap() == iree_e2e::MARKER_PLUGIN
            && expected == &[Expected::NegatedProduct]),
        "the marker given last must be the kernel IREE calls"
    );
    assert!(
        overrides
            .iter()
            .any(|(plugins, expected)| plugins[0] == iree_e2e::MARKER_PLUGIN
                && expected == &[Expected::Product]),
        "the example given last must override the marker"
    );
}
