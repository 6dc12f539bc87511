//! The xplug side of benchmark rows (2), (3), (5), (12) and (13) alone,
//! outside criterion, for instruction counts under callgrind (row (8) has
//! its own loop: `resolve_loop`).
//!
//! `instr_loop CASE N` sets CASE up, then runs its operation N times.
//! Counting N and 0 iterations under callgrind and dividing the difference
//! by N gives the instructions per operation, whatever the machine's load:
//!
//! ```text
//! cargo build --release -p xplug-benches --example instr_loop
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/instr_loop CASE 10000   # and 0
//! ```
//!
//! CASE (the operation; as the row's criterion benchmark makes it):
//! - `manager_1`, `manager_8` (2): one resolve through the `Manager` over
//!   1 or 8 function-table providers, 8 names from each;
//! - `call_handle`, `call_typed` (3): one import call through a
//!   `ResolvedImport` handle, through a `TypedImport`;
//! - `anchor_c_plugin`, `anchor_3_plugins`, `anchor_sdk_1`, `anchor_sdk_4`
//!   (5): one resolve through the `Manager` on a reused request (the C
//!   minimal plugin; it and two probe plugins, the name in the oldest; the
//!   SDK sample with 1 and 4 names);
//! - `swap_scale`, `plain_scale` (12): one call of `swap_scale_i32`
//!   through a swappable plugin's trampoline, and through the same build
//!   loaded as a plain plugin;
//! - `profiled_call` (13): one call through the per-import profile's
//!   counting wrapper.

use std::ffi::{CString, c_int, c_void};
use std::hint::black_box;
use std::path::{Path, PathBuf};

use xplug_benches::{profiled_add, swap_managers, xplug_manager_of};
use xplug_fixtures::plugins::PluginProfile;
use xplug_providers::{FnTableEntry, FnTableProvider, ImportProvider, ResolveRequest, SymbolName};

#[repr(C)]
struct AddArgs {
    a: i32,
    b: i32,
    out: i32,
}

// SAFETY: three `i32`s and no padding: any bytes are a value.
unsafe impl xplug_manager::AnyBitPattern for AddArgs {}

unsafe extern "C" fn add(args: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
    // SAFETY: callers pass `AddArgs`.
    let args = unsafe { &mut *args.cast::<AddArgs>() };
    args.out = args.a.wrapping_add(args.b);
    0
}

unsafe extern "C" fn noop(_: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
    0
}

/// `swap_scale_i32`'s args (`tests/c/swap_plugin.c`).
#[repr(C)]
struct ScaleArgs {
    value: i32,
    out: i32,
}

/// Runs `operation` `n` times.
fn repeat(n: usize, mut operation: impl FnMut()) {
    for _ in 0..n {
        operation();
    }
}

/// Row (2): the manager over `providers` function tables.
fn manager(providers: usize, n: usize) {
    let manager = xplug_manager::Manager::new();
    for k in 0..providers {
        let entries: Vec<FnTableEntry> =
            (0..32).map(|i| FnTableEntry::new(format!("p{k}_{i:02}"), noop)).collect();
        let table = FnTableProvider::new(format!("table{k}"), entries).expect("valid table");
        manager.register_provider(std::sync::Arc::new(table)).expect("unbounded manager");
    }
    let mut names: Vec<CString> = (0..providers)
        .flat_map(|k| (0..8).map(move |i| CString::new(format!("p{k}_{:02}", i * 4)).expect("no NUL")))
        .collect();
    names.sort();
    let symbols: Vec<SymbolName<'_>> = names.iter().map(|n| SymbolName::new(n)).collect();
    let mut fns = vec![std::ptr::null_mut(); names.len()];
    let mut contexts = vec![std::ptr::null_mut(); names.len()];
    repeat(n, || {
        fns.fill(std::ptr::null_mut());
        let mut request = ResolveRequest::new(&symbols, &mut fns, &mut contexts).expect("equal lengths");
        let _ = black_box(ImportProvider::resolve(&manager, &mut request));
    });
    assert!(n == 0 || fns.iter().all(|f| !f.is_null()), "the manager resolves every name");
}

/// Row (3): one call through a handle or a typed import.
fn call(typed: bool, n: usize) {
    let manager = xplug_manager::Manager::new();
    let table = FnTableProvider::new("math", [FnTableEntry::new("add", add)]).expect("valid table");
    manager.register_provider(std::sync::Arc::new(table)).expect("unbounded manager");
    let imports = xplug_benches::resolve_imports(&manager, &["add"]);
    let mut args = AddArgs { a: 1, b: 2, out: 0 };
    if typed {
        // SAFETY: `add` takes `AddArgs`.
        let typed = unsafe { imports.typed::<AddArgs>("add") }.expect("resolved");
        repeat(n, || {
            black_box(black_box(&typed).call(&mut args));
        });
    } else {
        let handle = imports.import(0).expect("resolved");
        repeat(n, || {
            // SAFETY: `add` takes `AddArgs`.
            black_box(unsafe { black_box(&handle).call(&mut args) });
        });
    }
    assert_eq!(args.out, if n == 0 { 0 } else { 3 });
}

/// The example plugin `name`, built (or found up to date).
fn example_plugin(name: &str) -> PathBuf {
    let root = xplug_fixtures::workspace_root();
    xplug_fixtures::plugins::build(&root, PluginProfile::Release).expect("the example plugins build");
    xplug_fixtures::plugins::output_dir(&root, PluginProfile::Release)
        .join(xplug_fixtures::plugins::library_file_name(name))
}

/// Row (5): one resolve of `names` on a reused request, through a manager
/// that loaded `specs`.
fn anchor(specs: &[String], names: &[&str], n: usize) {
    let manager = xplug_manager_of(specs);
    let names: Vec<CString> = names.iter().map(|name| CString::new(*name).expect("no NUL")).collect();
    let symbols: Vec<SymbolName<'_>> = names.iter().map(|n| SymbolName::new(n)).collect();
    let (mut fns, mut contexts) =
        (vec![std::ptr::null_mut(); names.len()], vec![std::ptr::null_mut(); names.len()]);
    let mut request = ResolveRequest::new(&symbols, &mut fns, &mut contexts).expect("equal lengths");
    manager.resolve(&mut request).expect("resolves");
    repeat(n, || {
        request.clear();
        black_box(manager.resolve(&mut request).is_ok());
    });
    assert!(fns.iter().all(|f| !f.is_null()), "xplug's manager resolves every name");
}

/// `path` as a spec with `params` as its query.
fn spec(path: &Path, params: &str) -> String {
    if params.is_empty() { path.display().to_string() } else { format!("{}?{params}", path.display()) }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, case, n] = &args[..] else { panic!("usage: instr_loop CASE N") };
    let n: usize = n.parse().expect("N: a loop count");
    let dir = tempfile::tempdir().expect("temporary directory");
    let root = xplug_fixtures::workspace_root();
    let minimal = || {
        xplug_fixtures::build_c_plugin(
            &root.join("tests/c/minimal_plugin.c"),
            dir.path(),
            "c_minimal_o2",
            &["-O2"],
        )
    };
    match case.as_str() {
        "manager_1" => manager(1, n),
        "manager_8" => manager(8, n),
        "call_handle" => call(false, n),
        "call_typed" => call(true, n),
        "anchor_c_plugin" => anchor(&[spec(&minimal(), "")], &["c_add_i32"], n),
        "anchor_3_plugins" => {
            let probe = xplug_iree_reference::fixtures::build_probe_plugin(dir.path());
            let specs = [
                spec(&minimal(), ""),
                spec(&probe, "id=1&exports=pad_one,pad_two"),
                spec(&probe, "id=2&exports=pad_three"),
            ];
            anchor(&specs, &["c_add_i32"], n);
        }
        "anchor_sdk_1" => {
            anchor(&[spec(&example_plugin("sample_standalone"), "")], &["simple_mul_workgroup"], n);
        }
        "anchor_sdk_4" => anchor(
            &[spec(&example_plugin("sample_standalone"), "")],
            &["dot", "saxpy", "simple_add_workgroup", "simple_mul_workgroup"],
            n,
        ),
        "swap_scale" | "plain_scale" => {
            let path = xplug_fixtures::build_swap_plugin(dir.path(), "swap_bench", 2, &[]);
            let (plain, swappable) = swap_managers(&path);
            let manager = if case == "swap_scale" { &swappable } else { &plain };
            let imports = xplug_benches::resolve_imports(manager, &["swap_scale_i32"]);
            let scale = imports.import(0).expect("resolved");
            let mut args = ScaleArgs { value: 3, out: 0 };
            repeat(n, || {
                // SAFETY: `swap_scale_i32` takes a `ScaleArgs`.
                black_box(unsafe { black_box(&scale).call(&mut args) });
            });
            assert_eq!(args.out, if n == 0 { 0 } else { 6 });
        }
        "profiled_call" => {
            let mut args = AddArgs { a: 1, b: 2, out: 0 };
            profiled_add(add, |function, context| {
                repeat(n, || {
                    let &(function, context) = black_box(&(function, context));
                    // SAFETY: the wrapper passes `AddArgs` on to `add`.
                    black_box(unsafe {
                        function(std::ptr::from_mut(&mut args).cast(), context, std::ptr::null_mut())
                    });
                });
            });
            assert_eq!(args.out, if n == 0 { 0 } else { 3 });
        }
        other => panic!("unknown case {other}"),
    }
}
