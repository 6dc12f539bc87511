//! Row (8)'s loop alone, for instruction counts under callgrind:
//! `resolve_loop SIDE CASE N` runs N resolves of CASE through SIDE.
//!
//! SIDE: `iree` (IREE's manager's C pair), `xplug` (the pair xplug-iree
//! installs) or `fresh` (`Manager::resolve` on a fresh `ResolveRequest`);
//! CASE: `c_plugin`, `sdk_1` or `sdk_4`, as in `benches/iree_runtime.rs`.
//! Counting N and 0 iterations and subtracting gives the cost per resolve.

use std::ffi::{CString, c_char, c_void};
use std::hint::black_box;
use std::sync::Arc;

use xplug_fixtures::plugins::PluginProfile;
use xplug_iree::{IreeImportProvider, IreePluginManager, RawImportProvider};
use xplug_manager::Manager;
use xplug_providers::{ResolveRequest, SymbolName};

fn c_call(
    provider: RawImportProvider<'_>,
    names: &[*const c_char],
    fns: &mut [*mut c_void],
    contexts: &mut [*mut c_void],
) {
    fns.fill(std::ptr::null_mut());
    contexts.fill(std::ptr::null_mut());
    let mut resolution = 0;
    // SAFETY: a live provider; `names` NUL-terminated, slots of its length.
    let status = unsafe {
        (provider.resolve)(
            provider.self_,
            names.len(),
            names.as_ptr(),
            fns.as_mut_ptr(),
            contexts.as_mut_ptr(),
            &mut resolution,
        )
    };
    assert!(black_box(status).is_null());
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, side, case, n] = &args[..] else { panic!("usage: resolve_loop SIDE CASE N") };
    let n: usize = n.parse().expect("N");
    let (plugin, names): (&str, &[&str]) = match case.as_str() {
        "c_plugin" => ("c_sample", &["simple_mul_workgroup"]),
        "sdk_1" => ("sample_standalone", &["simple_mul_workgroup"]),
        "sdk_4" => ("sample_standalone", &["dot", "saxpy", "simple_add_workgroup", "simple_mul_workgroup"]),
        other => panic!("unknown case {other}"),
    };
    let root = xplug_fixtures::workspace_root();
    // The plugins the benchmark loads, built (or found up to date) first.
    xplug_fixtures::plugins::build(&root, PluginProfile::Release).expect("the example plugins build");
    let dir = xplug_fixtures::plugins::output_dir(&root, PluginProfile::Release);
    let path = dir.join(xplug_fixtures::plugins::library_file_name(plugin));
    let names: Vec<CString> = names.iter().map(|name| CString::new(*name).expect("no NUL")).collect();
    let pointers: Vec<*const c_char> = names.iter().map(|name| name.as_ptr()).collect();
    let (mut fns, mut contexts) =
        (vec![std::ptr::null_mut(); names.len()], vec![std::ptr::null_mut(); names.len()]);
    match side.as_str() {
        "iree" => {
            let manager = IreePluginManager::new(1).expect("IREE's manager");
            // SAFETY: an example plugin of this workspace.
            unsafe { manager.load(&path) }.expect("IREE loads the plugin");
            for _ in 0..n {
                c_call(manager.as_raw(), &pointers, &mut fns, &mut contexts);
            }
        }
        "xplug" | "fresh" => {
            // SAFETY: as above.
            let manager =
                Arc::new(unsafe { Manager::from_specs([path.display().to_string()]) }.expect("loads"));
            let provider = Box::new(IreeImportProvider::new(Arc::clone(&manager)));
            let symbols: Vec<SymbolName<'_>> = names.iter().map(|name| SymbolName::new(name)).collect();
            for _ in 0..n {
                if side == "xplug" {
                    c_call(provider.as_raw(), &pointers, &mut fns, &mut contexts);
                } else {
                    fns.fill(std::ptr::null_mut());
                    contexts.fill(std::ptr::null_mut());
                    let mut request =
                        ResolveRequest::new(&symbols, &mut fns, &mut contexts).expect("lengths");
                    assert!(black_box(manager.resolve(&mut request).is_ok()));
                }
            }
        }
        other => panic!("unknown side {other}"),
    }
}
