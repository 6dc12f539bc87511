//! The `xplug` binary's allocator (crates/cli/src/allocator.rs): mimalloc 2
//! is linked and started, with its arenas committed lazily unless the
//! environment says otherwise. That mimalloc's `malloc` is the one IREE's
//! runtime calls shows in the instructions per dispatch (`cargo xtask
//! model-bench --instructions`); that memcheck still sees it, in
//! `run_valgrind.rs`.

use std::process::Command;

/// mimalloc's start-up report (`MIMALLOC_VERBOSE=1`) of `xplug --version`,
/// with `env` added to the environment.
fn report(env: &[(&str, &str)]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_xplug"))
        .arg("--version")
        .env("MIMALLOC_VERBOSE", "1")
        .env_remove("MIMALLOC_ARENA_EAGER_COMMIT")
        .envs(env.iter().copied())
        .output()
        .expect("xplug starts");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn xplug_runs_on_mimalloc_2_with_arenas_committed_lazily() {
    let report = report(&[]);
    assert!(report.lines().any(|line| line.starts_with("mimalloc: v2.")), "{report}");
    assert!(report.contains("option 'arena_eager_commit': 0"), "{report}");
}

#[test]
fn the_environment_still_sets_the_arena_commit() {
    let report = report(&[("MIMALLOC_ARENA_EAGER_COMMIT", "1")]);
    assert!(report.contains("option 'arena_eager_commit': 1"), "{report}");
}
