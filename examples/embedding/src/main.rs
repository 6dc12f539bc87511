//! An application embedding xplug from Rust, through the public API only:
//! the kernel of this crate (`src/lib.rs`, written with `xplug-sdk`) is
//! linked into the binary and loaded by name with a load parameter, a
//! compiled IREE program calls it on both of IREE's local devices, and
//! every error is printed through `xplug_iree::Report` (IREE's reason
//! included).
//!
//! ```text
//! iree-compile --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu \
//!   --iree-llvmcpu-target-cpu=host examples/embedding/scaled_add.mlir -o scaled_add.vmfb
//! cargo run -p xplug-example-embedding -- scaled_add.vmfb 2.5
//! ```
//!
//! `tests/run.rs` compiles the program with the pinned `iree-compile` and
//! checks this binary's output against a plain computation.

use xplug_iree::{DeviceKind, Manager, Module, Report, Runtime, Session, TensorView};
// Keeps the kernel's link-time registration in the binary.
use xplug_example_embedding as _;

/// Elements per call: 4 uneven workgroup slices of 250.
const N: usize = 1000;

fn main() -> Result<(), Report> {
    let mut args = std::env::args().skip(1);
    let usage = || std::io::Error::other("usage: embedding MODULE.vmfb [K]  (K: the scale, default 2.5)");
    let module_path = args.next().ok_or_else(usage)?;
    let k = args.next().unwrap_or_else(|| "2.5".to_owned());

    // Linking the kernel was the trust decision: loading it takes no
    // `unsafe`, and its parameter is checked against its declaration.
    let manager = Manager::new();
    manager.load_static("scaled_add", [("k", k.as_str())])?;
    let scale: f32 = k.parse().map_err(|_| std::io::Error::other(format!("K `{k}` is not a number")))?;
    println!("plugin scaled_add linked in, k = {k}");

    let runtime = Runtime::new()?;
    let module = Module::from_file(&runtime, &module_path)?;
    let (a, b) = xplug_example_embedding::inputs(N);
    for kind in [DeviceKind::LocalSync, DeviceKind::LocalTask { workers: 2 }] {
        let device = runtime.device(kind, manager.clone())?;
        // The program's executables load here, their imports resolved by
        // the manager.
        let session = Session::new(&device, &module)?;
        // Views borrow `a` and `b`: no copy on the Rust side.
        let call = session.prepare("scaled_add", [TensorView::new(&[N], &a)?, TensorView::new(&[N], &b)?])?;
        let results = call.invoke()?;
        // Read in place: IREE's local devices keep results in host memory.
        let sum = results.tensor(0)?;
        let sum = sum.as_slice::<f32>()?;
        let wrong = (0..N).filter(|&i| sum[i].to_bits() != (a[i] + scale * b[i]).to_bits()).count();
        if wrong != 0 {
            return Err(std::io::Error::other(format!(
                "{}: {wrong} of {N} elements differ from a + k * b",
                kind.name()
            ))
            .into());
        }
        println!(
            "{}: {N} elements, sum[..4] = {:?}, sum[{}] = {:?}, every element equals a + k * b",
            kind.name(),
            &sum[..4],
            N - 1,
            sum[N - 1]
        );
    }

    // What a user sees when something is wrong: each `Err` printed through
    // `Report`, with every cause. Nothing refused is registered.
    let refusals = Manager::new();
    for (what, key, value) in [("a misspelt key", "kk", "2"), ("a value that is not a number", "k", "abc")] {
        if let Err(error) = refusals.load_static("scaled_add", [(key, value)]) {
            println!("refused as expected, {what}:\n{}", Report::from(error));
        }
    }
    let device = runtime.device(DeviceKind::LocalSync, manager.clone())?;
    let session = Session::new(&device, &module)?;
    let short = TensorView::new(&[N - 1], &b[..N - 1])?;
    let call = session.prepare("scaled_add", [TensorView::new(&[N], &a)?, short])?;
    if let Err(error) = call.invoke() {
        println!("refused as expected, b shorter than a:\n{}", Report::from(error));
    }
    Ok(())
}
