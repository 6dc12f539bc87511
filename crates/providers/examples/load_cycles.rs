//! Load, resolve, call and unload plugins in a loop: what `cargo xtask
//! valgrind` runs under valgrind to show the host side leaks nothing and
//! touches no memory it should not.
//!
//! ```text
//! cargo run -p xplug-providers --example load_cycles -- CYCLES LIBRARY...
//! ```
//!
//! Each library must export `simple_mul_workgroup` with the parameters of
//! IREE's custom-dispatch sample (the example plugins `sample_system` and
//! `c_sample` do). Every cycle loads each library, resolves the import,
//! multiplies four floats through it, checks the result, and unloads the
//! plugin, which must hold no host memory afterwards.

use std::ffi::c_void;
use std::process::ExitCode;

use iree_sample_args::WorkgroupArgs;
use xplug_providers::{ImportProvider, LoadParamList, Loader, ResolveRequest, SYSTEM_LIBRARY, SymbolName};

/// One load/resolve/call/unload cycle of the plugin at `path`.
fn cycle(path: &str) -> Result<(), String> {
    // SAFETY: the operator names v0 plugins on the command line.
    let plugin = unsafe {
        SYSTEM_LIBRARY
            .open(&std::path::Path::new(&path).to_string_lossy())
            .and_then(|code| code.load(&LoadParamList::new()))
    }
    .map_err(|error| format!("{path}: {error}"))?;
    let names = [SymbolName::new(c"simple_mul_workgroup")];
    let (mut fns, mut contexts) = ([std::ptr::null_mut::<c_void>(); 1], [std::ptr::null_mut::<c_void>(); 1]);
    let mut request =
        ResolveRequest::new(&names, &mut fns, &mut contexts).map_err(|error| error.to_string())?;
    plugin.resolve(&mut request).map_err(|error| format!("{path}: {error}"))?;
    let (lhs, rhs, mut out) = ([1.0f32, 2.0, 3.0, 4.0], [2.0f32, 3.0, 4.0, 5.0], [0.0f32; 4]);
    let mut args = WorkgroupArgs::whole(&lhs, &rhs, &mut out);
    // SAFETY: the slot holds the plugin's `simple_mul_workgroup`, a v0
    // import function taking `WorkgroupArgs`; the buffers outlive the call.
    let function = unsafe { xplug_providers::abi::import_fn_from_ptr(request.function(0)) }
        .ok_or("the slot is empty")?;
    // SAFETY: as above; the context is the one the plugin resolved.
    let code =
        unsafe { function(std::ptr::from_mut(&mut args).cast(), request.context(0), std::ptr::null_mut()) };
    if code != 0 || out != [2.0, 6.0, 12.0, 20.0] {
        return Err(format!("{path}: simple_mul_workgroup returned {code} with {out:?}"));
    }
    let after = plugin.unload();
    if after.live_allocations != 0 {
        return Err(format!("{path}: {} allocation(s) held after unload", after.live_allocations));
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((cycles, libraries)) = args.split_first() else {
        eprintln!("usage: load_cycles CYCLES LIBRARY...");
        return ExitCode::from(2);
    };
    let Ok(cycles) = cycles.parse::<usize>() else {
        eprintln!("error: CYCLES must be a number, not {cycles:?}");
        return ExitCode::from(2);
    };
    for _ in 0..cycles {
        for library in libraries {
            if let Err(error) = cycle(library) {
                eprintln!("error: {error}");
                return ExitCode::FAILURE;
            }
        }
    }
    println!("{cycles} cycle(s) of {} librar(ies): load, resolve, call, unload OK", libraries.len());
    ExitCode::SUCCESS
}
