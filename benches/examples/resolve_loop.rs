//! Row (8)'s loop alone, for instruction counts under callgrind:
//! `resolve_loop SIDE CASE N` runs N resolves of CASE through SIDE.
//!
//! SIDE: `iree` (IREE's manager's C pair), `xplug` (the pair xplug-iree
//! installs) or `fresh` (`Manager::resolve` on a fresh `ResolveRequest`);
//! CASE: `c_plugin`, `sdk_1` or `sdk_4`, as in `benches/iree_runtime.rs`.
//! Counting N and 0 iterations and subtracting gives the cost per resolve.

use std::ffi::{CString, c_char};
use std::hint::black_box;

use xplug_benches::{LoaderCall, iree_manager, xplug_manager};
use xplug_fixtures::plugins::PluginProfile;
use xplug_iree::IreeImportProvider;
use xplug_providers::{ResolveRequest, SymbolName};

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
            let manager = iree_manager(&path);
            let mut call = LoaderCall::new(manager.as_raw(), &pointers, &mut fns, &mut contexts);
            for _ in 0..n {
                call.resolve();
            }
        }
        "xplug" => {
            let provider = Box::new(IreeImportProvider::new(xplug_manager(&path)));
            let mut call = LoaderCall::new(provider.as_raw(), &pointers, &mut fns, &mut contexts);
            for _ in 0..n {
                call.resolve();
            }
        }
        "fresh" => {
            let manager = xplug_manager(&path);
            let symbols: Vec<SymbolName<'_>> = names.iter().map(|name| SymbolName::new(name)).collect();
            for _ in 0..n {
                fns.fill(std::ptr::null_mut());
                contexts.fill(std::ptr::null_mut());
                let mut request = ResolveRequest::new(&symbols, &mut fns, &mut contexts).expect("lengths");
                black_box(manager.resolve(&mut request).expect("the benchmark's names all resolve"));
            }
        }
        other => panic!("unknown side {other}"),
    }
}
