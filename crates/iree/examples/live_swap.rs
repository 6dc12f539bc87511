//! Live swap (`docs/src/operating/swap.md`): `tests/iree/mul_call.mlir` runs in a loop on
//! `local-task` while its kernel plugin is rebuilt in place and swapped
//! under it. The session (module, executables, resolved imports) is made
//! once; each round's results come from the build swapped in last.
//!
//! `cargo run -p xplug-iree --example live_swap [ROUNDS]`. It builds the
//! kernel (`tests/c/swap_plugin.c`, `out = a * b * FACTOR`, FACTOR going up
//! by one per round) with the C compiler and compiles the program with
//! IREE's `iree-compile` from the test environment (`target/iree-venv`,
//! made on first use); it exits non-zero if a round's results are not the
//! new build's.

use xplug_fixtures::iree_e2e;
use xplug_iree::{DeviceKind, Module, Report, Runtime, Session, TensorView};
use xplug_manager::Manager;

fn main() -> Result<(), Report> {
    let rounds: i32 = std::env::args().nth(1).and_then(|arg| arg.parse().ok()).unwrap_or(4);
    let root = xplug_fixtures::workspace_root();
    let work = tempfile::tempdir()?;
    let tools = iree_e2e::toolchain(&root)?;
    let program = work.path().join("mul_call.vmfb");
    iree_e2e::compile_file(&tools, &root.join("tests/iree/mul_call.mlir"), &program)?;

    // The kernel, rebuilt at the same path every round: a standalone
    // plugin, loaded through xplug's own loader (`embedded:`), which maps
    // the file afresh on every load.
    let kernel = xplug_fixtures::build_swap_plugin(work.path(), "kernel", 1, &[]);
    let spec = format!("embedded:{}", kernel.display());
    let manager = Manager::new();
    // SAFETY: the kernel is built from this repository's test plugin.
    let handle = unsafe { manager.load_swappable(&spec) }?;

    let runtime = Runtime::new()?;
    let device = runtime.device(DeviceKind::LocalTask { workers: 4 }, manager.clone())?;
    let module = Module::from_file(&runtime, &program)?;
    let session = Session::new(&device, &module)?; // resolves the kernel import, once

    let (a, b) = ([1.0f32, 2.0, 3.0, 4.0], [10.0f32, 10.0, 10.0, 10.0]);
    for round in 1..=rounds {
        let results =
            session.prepare("mul", [TensorView::new(&[4], &a)?, TensorView::new(&[4], &b)?])?.invoke()?;
        let out = results.tensor(0)?.as_slice::<f32>()?.to_vec();
        println!("round {round}: kernel FACTOR={round}: mul(a, b) = {out:?}");
        let expected: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x * y * round as f32).collect();
        if out != expected {
            return Err(failure(format!("round {round}: expected {expected:?} from the build swapped in")));
        }
        if round < rounds {
            // Rebuild the kernel with the next factor and swap it in.
            let rebuilt = xplug_fixtures::build_swap_plugin(work.path(), "kernel", round + 1, &[]);
            assert_eq!(rebuilt, kernel, "rebuilt in place");
            // SAFETY: as above.
            let swapped = unsafe { handle.replace(&spec) }?;
            println!("  swapped in the rebuilt kernel (swap {}), old build unloaded", swapped.swaps);
        }
    }
    Ok(())
}

/// A failure of the example itself.
fn failure(message: String) -> Report {
    Report::from(std::io::Error::other(message))
}
