//! Runs the example as a user would: compiles `scaled_add.mlir` with the
//! pinned `iree-compile` (PyPI, `xplug_fixtures::iree_e2e`), runs the
//! `embedding` binary on it, and checks what it prints against a plain
//! computation of `a + k * b`, and that each refusal it shows carries its
//! cause.

use std::path::Path;
use std::process::Command;

use xplug_fixtures::iree_e2e;

#[test]
fn the_example_computes_a_plus_k_b_on_both_devices_and_prints_every_cause() {
    let tools = iree_e2e::toolchain(&xplug_fixtures::workspace_root()).expect("the pinned IREE tools");
    let work = tempfile::tempdir().unwrap();
    let module = work.path().join("scaled_add.vmfb");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("scaled_add.mlir");
    iree_e2e::compile_file(&tools, &source, &module).expect("the example program compiles");

    let output = Command::new(env!("CARGO_BIN_EXE_embedding")).arg(&module).arg("0.75").output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");

    let (a, b) = xplug_example_embedding::inputs(1000);
    let expected: Vec<f32> = a.iter().zip(&b).map(|(a, b)| a + 0.75 * b).collect();
    for device in ["local-sync", "local-task"] {
        let line = format!(
            "{device}: 1000 elements, sum[..4] = {:?}, sum[999] = {:?}, every element equals a + k * b",
            &expected[..4],
            expected[999]
        );
        assert!(stdout.contains(&line), "expected `{line}` in:\n{stdout}");
    }
    // The values are real numbers of the formula, not a constant.
    assert_eq!(expected[..2], [-100.0 + 0.75 * -3.25, -99.5 + 0.75 * -2.25]);

    for cause in [
        "it declares no load parameter `kk` (did you mean `k`?); it declares k",
        "caused by: its load parameter `k` has the value `abc` but a finite number is expected (it declares `k` as \
         `f32`); fix the value",
        "call to `scaled_add` failed\n  caused by: ",
        "b shape dimension 0 mismatch; expected 1000 but have 999",
    ] {
        assert!(stdout.contains(cause), "expected `{cause}` in:\n{stdout}");
    }

    // Its own failure is a `Report` too: a missing module names the file
    // and the operating system's reason.
    let missing =
        Command::new(env!("CARGO_BIN_EXE_embedding")).arg(work.path().join("none.vmfb")).output().unwrap();
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(!missing.status.success());
    assert!(
        stderr.starts_with("Error: ") && stderr.contains("none.vmfb") && stderr.contains("caused by:"),
        "{stderr}"
    );
}
