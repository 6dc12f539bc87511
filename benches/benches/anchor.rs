//! xplug's `Manager` side by side with IREE's own plugin manager (the C code
//! of `xplug-iree-reference`), each resolving through the same loaded
//! plugins; `cargo xtask bench` runs it and prints the ratios.
//!
//! Both sides reuse their name and slot arrays and clear the slots before
//! every resolve, so each iteration does the same work and allocates
//! nothing: IREE's side is the bare C call its executable loader makes,
//! xplug's side `Manager::resolve` on a reused `ResolveRequest`.
//!
//! Group and function names are read back by `xtask/src/bench.rs`; keep
//! them in sync.

#![expect(missing_docs, reason = "`criterion_group!` generates an undocumented public function")]

use std::ffi::{CString, c_char, c_void};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use xplug_abi::{Resolution, StatusCode};
use xplug_benches::{SDK_PLUGIN, build_strcmp_c_plugin, pair, request_names};
use xplug_iree_reference::fixtures::build_probe_plugin;
use xplug_iree_reference::{IreeManager, IreePlugin, RawProvider};
use xplug_manager::Manager;
use xplug_providers::{LoadParamList, ResolveRequest, STATIC, SymbolName};

/// Names and reusable slots for one request.
struct Request {
    names: Vec<CString>,
}

impl Request {
    fn new<S: AsRef<str>>(names: &[S]) -> Self {
        Self { names: names.iter().map(|n| CString::new(n.as_ref()).expect("no NUL")).collect() }
    }

    fn symbols(&self) -> Vec<SymbolName<'_>> {
        self.names.iter().map(|n| SymbolName::new(n)).collect()
    }
}

/// A resolve through IREE's manager as IREE's executable loader makes it:
/// slots cleared, then the provider's bare C call.
fn iree_resolver<'a>(
    provider: RawProvider,
    symbols: &'a [SymbolName<'a>],
    fns: &'a mut [*mut c_void],
    contexts: &'a mut [*mut c_void],
) -> impl FnMut() -> StatusCode + 'a {
    let count = symbols.len();
    move || {
        fns.fill(std::ptr::null_mut());
        contexts.fill(std::ptr::null_mut());
        let mut resolution = Resolution::NONE;
        // SAFETY: a live IREE provider (the caller keeps its manager alive);
        // `count` names (SymbolName is a transparent C string pointer) and
        // two `count`-long slot arrays.
        let status = unsafe {
            (provider.resolve)(
                provider.self_,
                count,
                symbols.as_ptr().cast::<*const c_char>(),
                fns.as_mut_ptr(),
                contexts.as_mut_ptr(),
                &mut resolution,
            )
        };
        black_box(status).code()
    }
}

/// Times IREE's manager (`iree`) and xplug's (`xplug`) on `request`, under
/// `group/{iree,xplug}[/parameter]`, after checking that both resolve every
/// name.
fn side_by_side(
    c: &mut Criterion,
    name: &str,
    parameter: Option<usize>,
    iree: &IreeManager,
    xplug: &Manager,
    request: &Request,
) {
    let symbols = request.symbols();
    let count = symbols.len();
    let (mut iree_fns, mut iree_contexts) =
        (vec![std::ptr::null_mut(); count], vec![std::ptr::null_mut(); count]);
    let mut iree_resolve = iree_resolver(iree.raw_provider(), &symbols, &mut iree_fns, &mut iree_contexts);
    // IREE's failures carry heap statuses this loop would leak: check once.
    assert_eq!(iree_resolve(), StatusCode::OK, "{name}: IREE's manager resolves the request");

    // xplug: `Manager::resolve` on one reused request.
    let (mut fns, mut contexts) = (vec![std::ptr::null_mut(); count], vec![std::ptr::null_mut(); count]);
    let mut request = ResolveRequest::new(&symbols, &mut fns, &mut contexts).expect("equal lengths");
    assert_eq!(xplug.resolve(&mut request).map_err(|e| e.to_string()), Ok(Resolution::NONE), "{name}: xplug");
    let mut xplug_resolve = || {
        request.clear();
        black_box(xplug.resolve(&mut request).is_ok());
    };
    let mut iree_unit = || {
        let _ = iree_resolve();
    };
    pair(c, name, parameter, ("iree", &mut iree_unit), ("xplug", &mut xplug_resolve));
    drop(iree_resolve);
    assert!(iree_fns.iter().all(|f| !f.is_null()), "{name}: IREE's manager resolves every name");
    assert!(fns.iter().all(|f| !f.is_null()), "{name}: xplug's manager resolves every name");
}

/// An IREE manager holding the system-library plugins at `paths` with their
/// parameters, registered in order.
fn iree_with(plugins: &[(&Path, &[(&str, &str)])]) -> IreeManager {
    let manager = IreeManager::new(plugins.len() + 1).expect("IREE manager");
    for (path, params) in plugins {
        let pairs: Vec<(&[u8], &[u8])> = params.iter().map(|(k, v)| (k.as_bytes(), v.as_bytes())).collect();
        // SAFETY: the plugins of this benchmark are v0 plugins built here.
        let plugin = unsafe { IreePlugin::system_library(path, &pairs) }.expect("IREE loads the plugin");
        manager.register_plugin(plugin).expect("capacity");
    }
    manager
}

/// An xplug manager holding the same plugins, loaded with `load_spec`.
fn xplug_with(plugins: &[(&Path, &[(&str, &str)])]) -> Manager {
    let manager = Manager::new();
    for (path, params) in plugins {
        let query: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let spec = if query.is_empty() {
            path.display().to_string()
        } else {
            format!("{}?{}", path.display(), query.join("&"))
        };
        // SAFETY: as above.
        unsafe { manager.load_spec(&spec) }.expect("xplug loads the plugin");
    }
    manager
}

/// The repository's minimal C plugin, built with `-O2`.
fn minimal_c_plugin(dir: &Path) -> PathBuf {
    let source = xplug_fixtures::workspace_root().join("tests/c/minimal_plugin.c");
    xplug_fixtures::build_c_plugin(&source, dir, "c_minimal_o2", &["-O2"])
}

/// The example plugins, built in release exactly as `build-plugins` does.
fn example_plugin(name: &str) -> PathBuf {
    let root = xplug_fixtures::workspace_root();
    let built = xplug_fixtures::plugins::build(&root, xplug_fixtures::plugins::PluginProfile::Release)
        .expect("the example plugins build");
    assert!(built.iter().all(|p| p.path.is_some()), "an example plugin was skipped: {built:?}");
    xplug_fixtures::plugins::output_dir(&root, xplug_fixtures::plugins::PluginProfile::Release)
        .join(xplug_fixtures::plugins::library_file_name(name))
}

/// (5) One C plugin, one name; and IREE's manager with xplug's `Manager`
/// behind it as its provider, against IREE's manager with the plugin itself.
fn c_plugin(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = minimal_c_plugin(dir.path());
    let plugins: [(&Path, &[(&str, &str)]); 1] = [(&path, &[])];
    let iree = iree_with(&plugins);
    let xplug = Arc::new(xplug_with(&plugins));
    let request = Request::new(&["c_add_i32"]);
    side_by_side(c, "anchor_c_plugin", None, &iree, &xplug, &request);

    let mut iree_over_xplug = IreeManager::new(1).expect("IREE manager");
    iree_over_xplug.register_xplug_manager(xplug.clone()).expect("capacity");
    let symbols = request.symbols();
    let (mut direct_fns, mut direct_contexts) = ([std::ptr::null_mut(); 1], [std::ptr::null_mut(); 1]);
    let mut direct = iree_resolver(iree.raw_provider(), &symbols, &mut direct_fns, &mut direct_contexts);
    let (mut fns, mut contexts) = ([std::ptr::null_mut(); 1], [std::ptr::null_mut(); 1]);
    let mut over_xplug = iree_resolver(iree_over_xplug.raw_provider(), &symbols, &mut fns, &mut contexts);
    assert_eq!(over_xplug(), StatusCode::OK, "IREE over xplug resolves c_add_i32");
    assert_eq!(direct(), StatusCode::OK, "IREE resolves c_add_i32");
    let mut over_unit = move || {
        let _ = over_xplug();
    };
    let mut direct_unit = move || {
        let _ = direct();
    };
    pair(c, "anchor_iree_over_xplug", None, ("plugin", &mut direct_unit), ("xplug_manager", &mut over_unit));
    drop((over_unit, direct_unit));
    assert!(!fns[0].is_null() && !direct_fns[0].is_null());
}

/// (5) Three C plugins, the name in the oldest: the two newer ones are asked
/// first and answer NOT_FOUND.
fn three_plugins(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let minimal = minimal_c_plugin(dir.path());
    let probe = build_probe_plugin(dir.path());
    let plugins: [(&Path, &[(&str, &str)]); 3] = [
        (&minimal, &[]),
        (&probe, &[("id", "1"), ("exports", "pad_one,pad_two")]),
        (&probe, &[("id", "2"), ("exports", "pad_three")]),
    ];
    let iree = iree_with(&plugins);
    let xplug = xplug_with(&plugins);
    side_by_side(c, "anchor_3_plugins", None, &iree, &xplug, &Request::new(&["c_add_i32"]));
}

/// (5) The SDK example `sample_standalone` (a release `.so`), 1 and 4 names.
fn sdk_standalone(c: &mut Criterion) {
    let path = example_plugin("sample_standalone");
    let plugins: [(&Path, &[(&str, &str)]); 1] = [(&path, &[])];
    let iree = iree_with(&plugins);
    let xplug = xplug_with(&plugins);
    side_by_side(
        c,
        "anchor_sdk_standalone",
        Some(1),
        &iree,
        &xplug,
        &Request::new(&["simple_mul_workgroup"]),
    );
    let four = Request::new(&["dot", "saxpy", "simple_add_workgroup", "simple_mul_workgroup"]);
    side_by_side(c, "anchor_sdk_standalone", Some(4), &iree, &xplug, &four);
}

/// (5) 4 096-export plugins, 16/256/4 096 names: the generated SDK plugin
/// (registered statically on both sides) and the strcmp C plugin (a `.so`).
fn exports_4096(c: &mut Criterion) {
    let iree = IreeManager::new(1).expect("IREE manager");
    // SAFETY: the SDK generated this query function (v0 contract).
    let plugin =
        unsafe { IreePlugin::from_query(SDK_PLUGIN.query(), &[]) }.expect("IREE loads the SDK plugin");
    iree.register_plugin(plugin).expect("capacity");
    let xplug = Manager::new();
    // SAFETY: as above.
    let plugin =
        unsafe { STATIC.query_code("static plugin", SDK_PLUGIN.query()).load(&LoadParamList::new()) }
            .expect("xplug loads it");
    xplug.register_plugin(plugin).expect("unbounded");
    for count in [16usize, 256, 4096] {
        let names: Vec<String> =
            request_names(count).into_iter().map(|n| n.into_string().expect("ASCII")).collect();
        side_by_side(c, "anchor_sdk_4096", Some(count), &iree, &xplug, &Request::new(&names));
    }

    // What xplug does that IREE's manager does not: judge the resolve from
    // the slots, one pass over them, here 4 096 filled ones.
    let names = request_names(4096);
    let symbols: Vec<SymbolName<'_>> = names.iter().map(|n| SymbolName::new(n)).collect();
    let (mut fns, mut contexts) =
        (vec![std::ptr::dangling_mut::<c_void>(); 4096], vec![std::ptr::null_mut(); 4096]);
    let request = ResolveRequest::new(&symbols, &mut fns, &mut contexts).expect("equal lengths");
    c.benchmark_group("anchor_judging_pass").bench_function(BenchmarkId::from_parameter(4096), |b| {
        b.iter(|| black_box(black_box(&request).all_filled()));
    });

    let dir = tempfile::tempdir().expect("temporary directory");
    let path = build_strcmp_c_plugin(dir.path());
    let plugins: [(&Path, &[(&str, &str)]); 1] = [(&path, &[])];
    let iree = iree_with(&plugins);
    let xplug = xplug_with(&plugins);
    for count in [16usize, 256, 4096] {
        let names: Vec<String> =
            request_names(count).into_iter().map(|n| n.into_string().expect("ASCII")).collect();
        side_by_side(c, "anchor_c_strcmp_4096", Some(count), &iree, &xplug, &Request::new(&names));
    }
}

criterion_group!(benches, c_plugin, three_plugins, sdk_standalone, exports_4096);
criterion_main!(benches);
