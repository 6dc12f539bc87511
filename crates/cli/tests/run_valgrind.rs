//! `xplug run` under valgrind (memcheck): IREE's runtime, xplug's glue,
//! its import provider and the statuses it hands IREE, on the paths a run
//! takes (a compiled program on both devices, a `.sos` plugin through
//! xplug's ELF loader, a profiled run on `local-task`, and a failed
//! resolve whose status IREE frees).
//! Any invalid access, use of uninitialised memory or definite leak fails
//! the test (`xplug_fixtures::valgrind`, which also keeps IREE's proactor
//! off `io_uring`, which valgrind cannot follow).
//!
//! valgrind is required: `.ci/run` installs it. Without it the test fails,
//! naming the package.

mod common;

use std::process::Output;

use common::text;
use xplug_fixtures::iree_e2e::{self, MUL_CALL};
use xplug_fixtures::plugins::PluginProfile;
use xplug_fixtures::valgrind;

/// `xplug ARGS` under valgrind.
fn xplug_under_valgrind(args: &[String]) -> Output {
    assert!(valgrind::available(), "valgrind is missing: install it (`apt-get install valgrind`)");
    let mut command = valgrind::command(env!("CARGO_BIN_EXE_xplug")).expect("a seccomp filter for this host");
    command.args(args).env("NO_COLOR", "1");
    command.output().expect("valgrind runs")
}

/// One run: the expected exit code, and valgrind's report when it found an
/// error.
fn assert_clean(args: &[String], expected_code: i32) -> Output {
    let output = xplug_under_valgrind(args);
    assert_ne!(
        output.status.code(),
        Some(valgrind::ERROR_EXIT_CODE),
        "valgrind found errors in xplug {args:?}:\n{}",
        text(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(expected_code), "xplug {args:?}:\n{}", text(&output.stderr));
    output
}

#[test]
fn runs_are_memcheck_clean() {
    let prepared =
        iree_e2e::prepare(&xplug_fixtures::workspace_root(), PluginProfile::Debug).expect("IREE is ready");
    let module = prepared.module(MUL_CALL).display().to_string();
    let base = |device: &str| {
        vec![
            "run".to_owned(),
            // The program in valgrind's process: a supervised child would
            // run outside it (valgrind follows no `exec` by default).
            "--in-process".to_owned(),
            module.clone(),
            format!("--function={}", MUL_CALL.function),
            format!("--device={device}"),
            "--input=4xf32=1,2,3,4".to_owned(),
            "--input=4xf32=5,6,7,8".to_owned(),
        ]
    };
    let system = format!("--plugin={}", prepared.library("sample_system").display());
    let standalone = format!("--plugin={}", prepared.library("sample_standalone.sos").display());

    for (device, plugin) in [("local-sync", &system), ("local-task", &system), ("local-sync", &standalone)] {
        let mut args = base(device);
        args.push(plugin.clone());
        let output = assert_clean(&args, 0);
        assert!(text(&output.stdout).contains("4xf32=5 12 21 32"), "{args:?}: {}", text(&output.stdout));
    }

    // Profiled on local-task's workers (the counting wrapper, its
    // per-thread blocks made on IREE's small worker stacks, the ordinals
    // given back at thread exit) and the trace file written.
    let trace = tempfile::NamedTempFile::new().unwrap();
    let mut args = base("local-task");
    args.extend([
        system.clone(),
        "--profile".to_owned(),
        format!("--profile-trace={}", trace.path().display()),
    ]);
    let output = assert_clean(&args, 0);
    assert!(text(&output.stdout).contains("4xf32=5 12 21 32"), "{args:?}: {}", text(&output.stdout));
    let stderr = text(&output.stderr);
    assert!(
        stderr.lines().any(|line| line.contains("simple_mul_workgroup") && line.contains(" 1 ")),
        "{stderr}"
    );

    // No plugin: the resolve fails; xplug's provider hands IREE a status,
    // which IREE carries up through the executable load and frees.
    let args = base("local-sync");
    let output = assert_clean(&args, 1);
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(
            "missing 1 required executable import(s) after asking 0 provider(s): [`simple_mul_workgroup`]"
        ),
        "{stderr}"
    );
}

/// memcheck sees the binary's own heap. `xplug`'s `malloc` is mimalloc's,
/// defined in the executable (src/main.rs), and the runs above judge
/// IREE's allocations only if valgrind replaces that `malloc` as it does
/// glibc's. Each dispatch allocates, so 100 more dispatches must show as
/// at least 1 000 more tracked blocks (15 per dispatch when written).
#[test]
fn memcheck_tracks_the_binarys_own_malloc() {
    let root = xplug_fixtures::workspace_root();
    let tools = iree_e2e::toolchain(&root).expect("IREE's tools");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let module = dir.path().join("many_dispatches.vmfb");
    iree_e2e::compile_file(&tools, &root.join("tests/iree/many_dispatches.mlir"), &module)
        .expect("it compiles");
    let blocks = |dispatches: usize| {
        let mut command = valgrind::heap_summary_command(env!("CARGO_BIN_EXE_xplug"))
            .expect("a seccomp filter for this host");
        command.args([
            "run".to_owned(),
            "--in-process".to_owned(),
            format!("--module={}", module.display()),
            "--device=local-sync".to_owned(),
            "--input=16x16xf32=1".to_owned(),
            "--input=16x16xf32=0.0625".to_owned(),
            format!("--input={dispatches}"),
        ]);
        let output = command.output().expect("valgrind runs");
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        valgrind::heap_allocations(&stderr).unwrap_or_else(|| panic!("no heap summary in:\n{stderr}"))
    };
    let (few, many) = (blocks(10), blocks(110));
    assert!(many >= few + 1_000, "{few} blocks with 10 dispatches, {many} with 110");
}
