//! Every example plugin loaded through `xplug-providers` and
//! `xplug-manager` with real data: `sample_static` statically (it is named
//! below, so its registration is linked in), the Rust plugins as shared
//! libraries as a plain `cargo build` makes them (the command `cargo xtask
//! build-plugins` runs), and the C sample compiled against `include/`.

use std::ffi::{c_int, c_void};
use std::path::{Path, PathBuf};
use std::process::Command;

use sample_static as _;
use static_runtime::Fma;
use xplug_manager::Manager;
use xplug_providers::abi::{Features, ImportFn, Resolution};
use xplug_providers::{
    ImportProvider, LoadParamList, Loader, ResolveRequest, STATIC, SYSTEM_LIBRARY, SymbolName,
};

/// IREE's custom-dispatch sample args, as a host declares them.
#[repr(C)]
struct Workgroup {
    lhs: *const f32,
    lhs_offset: usize,
    rhs: *const f32,
    rhs_offset: usize,
    out: *mut f32,
    out_offset: usize,
    size: usize,
    tid: usize,
    processor_id: u32,
    processor_data: *const u64,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf()
}

/// The debug example plugins, built once per test process.
fn libraries() -> &'static Path {
    xplug_fixtures::plugins::built_for_tests()
}

fn library(name: &str) -> PathBuf {
    libraries().join(xplug_fixtures::plugins::library_file_name(name))
}

/// Inputs and the expected product for two workgroups of 100 elements.
struct Data {
    lhs: Vec<f32>,
    rhs: Vec<f32>,
    out: Vec<f32>,
}

const SIZE: usize = 100;

impl Data {
    fn new() -> Self {
        Self {
            lhs: (0..SIZE + 2).map(|i| i as f32 * 0.25).collect(),
            rhs: (0..SIZE + 1).map(|i| 2.0 - i as f32).collect(),
            out: vec![f32::NAN; SIZE + 3],
        }
    }

    /// Runs an import over every workgroup: `call(args) -> code`.
    fn run(&mut self, mut call: impl FnMut(&mut Workgroup) -> c_int) {
        // IREE's convention: pointer + offset starts each call's slice,
        // `size` is its length and `tid` only the workgroup id.
        for (tid, first) in (0..SIZE).step_by(64).enumerate() {
            let mut args = Workgroup {
                lhs: self.lhs.as_ptr(),
                lhs_offset: 2 + first,
                rhs: self.rhs.as_ptr(),
                rhs_offset: 1 + first,
                out: self.out.as_mut_ptr(),
                out_offset: 3 + first,
                size: (SIZE - first).min(64),
                tid,
                processor_id: 0,
                processor_data: std::ptr::null(),
            };
            assert_eq!(call(&mut args), 0, "workgroup {tid}");
        }
    }

    fn check(&self, op: impl Fn(f32, f32) -> f32) {
        assert!(self.out[..3].iter().all(|v| v.is_nan()), "wrote before the output offset");
        for i in 0..SIZE {
            assert_eq!(self.out[3 + i], op(self.lhs[2 + i], self.rhs[1 + i]), "element {i}");
        }
    }
}

fn resolve_one(provider: &dyn ImportProvider, name: &std::ffi::CStr) -> (ImportFn, *mut c_void) {
    let names = [SymbolName::new(name)];
    let mut functions = [std::ptr::null_mut::<c_void>(); 1];
    let mut contexts = [std::ptr::null_mut::<c_void>(); 1];
    let mut request = ResolveRequest::new(&names, &mut functions, &mut contexts).unwrap();
    assert_eq!(provider.resolve(&mut request).unwrap(), Resolution::NONE);
    let (function, context) = (request.function(0), request.context(0));
    // SAFETY: a resolved slot holds the plugin's import entry point.
    (unsafe { xplug_providers::abi::import_fn_from_ptr(function) }.expect("a resolved slot"), context)
}

#[test]
fn static_plugin_through_providers() {
    let registration = xplug_providers::static_plugins()
        .into_iter()
        .find(|plugin| plugin.name() == "sample_static")
        .expect("sample_static is registered");
    let plugin = STATIC.registration_code(registration).load(&LoadParamList::new()).unwrap();
    assert_eq!(plugin.name(), "sample_static");
    let (function, context) = resolve_one(&plugin, c"static_fma_i64");
    let mut args = Fma { result: 0, a: 6, b: 7, c: 8 };
    // SAFETY: `static_fma_i64` takes `Fma`.
    assert_eq!(unsafe { function(std::ptr::from_mut(&mut args).cast(), context, std::ptr::null_mut()) }, 0);
    assert_eq!(args.result, 50);
    let mut overflow = Fma { result: 0, a: i64::MAX, b: 2, c: 0 };
    // SAFETY: as above.
    let code = unsafe { function(std::ptr::from_mut(&mut overflow).cast(), context, std::ptr::null_mut()) };
    assert_eq!(code, 11, "overflow is reported as OUT_OF_RANGE");
    assert_eq!(plugin.unload().live_allocations, 0);
}

#[test]
fn static_plugin_through_the_manager() {
    let manager = Manager::builder().static_plugins().build().unwrap();
    assert!(
        manager.providers().iter().any(|name| name.contains("sample_static")),
        "{:?}",
        manager.providers()
    );
    let imports = manager.resolve_imports(["static_fma_i64"]).unwrap();
    let mut args = Fma { result: 0, a: -3, b: 5, c: 1 };
    // SAFETY: `static_fma_i64` takes `Fma`.
    assert_eq!(unsafe { imports.import(0).unwrap().call(&mut args) }, 0);
    assert_eq!(args.result, -14);
}

#[test]
fn sample_system_library_counts_and_frees_its_allocations() {
    // SAFETY: the library is this workspace's v0 plugin.
    let plugin = unsafe {
        SYSTEM_LIBRARY
            .open(&std::path::Path::new(&library("sample_system")).to_string_lossy())
            .and_then(|code| code.load(&LoadParamList::new().with("multiplier", "3")))
    }
    .unwrap();
    assert_eq!(plugin.name(), "sample_system");
    assert_eq!(plugin.allocation_stats().live_allocations, 2, "state + call counter");
    let (function, context) = resolve_one(&plugin, c"simple_mul_workgroup");
    assert!(!context.is_null(), "the state is the import's context");
    let mut data = Data::new();
    // SAFETY: `simple_mul_workgroup` takes `Workgroup`.
    data.run(|args| unsafe { function(std::ptr::from_mut(args).cast(), context, std::ptr::null_mut()) });
    data.check(|a, b| a * b * 3.0);

    #[repr(C)]
    struct Calls {
        count: u64,
    }
    let (calls, context) = resolve_one(&plugin, c"sample_system_calls");
    let mut count = Calls { count: 0 };
    // SAFETY: `sample_system_calls` takes `Calls`.
    assert_eq!(unsafe { calls(std::ptr::from_mut(&mut count).cast(), context, std::ptr::null_mut()) }, 0);
    assert_eq!(count.count, 2, "two workgroups ran");

    let stats = plugin.unload();
    assert_eq!(stats.live_allocations, 0);
    assert_eq!(stats.total_allocations, 2);
}

#[test]
fn sample_system_rejects_a_bad_parameter() {
    // SAFETY: the library is this workspace's v0 plugin.
    let result = unsafe {
        SYSTEM_LIBRARY
            .open(&std::path::Path::new(&library("sample_system")).to_string_lossy())
            .and_then(|code| code.load(&LoadParamList::new().with("multiplier", "lots")))
    };
    let Err(error) = result else { panic!("a non-numeric multiplier must fail to load") };
    assert_eq!(error.code(), xplug_providers::abi::StatusCode::INVALID_ARGUMENT, "{error}");
}

#[test]
fn manager_scans_dynamic_plugins_newest_first() {
    let specs = [
        library("c_sample").display().to_string(),
        library("sample_standalone").display().to_string(),
        format!("{}?multiplier=2", library("sample_system").display()),
    ];
    // SAFETY: every library is one of this workspace's v0 plugins.
    let manager = unsafe { Manager::from_specs(&specs) }.unwrap();
    assert_eq!(manager.len(), 3);
    let imports = manager
        .resolve_imports([
            "c_sample_negate_f32",
            "simple_add_workgroup",
            "simple_mul_workgroup",
            "?xplug_absent",
        ])
        .unwrap();
    assert_eq!(imports.resolution(), Resolution::MISSING_OPTIONAL);

    // `simple_mul_workgroup` is exported by all three: the newest
    // registration (sample_system, multiplier 2) wins.
    let mut data = Data::new();
    // SAFETY: `simple_mul_workgroup` takes `Workgroup`.
    data.run(|args| unsafe { imports.import(2).unwrap().call(args) });
    data.check(|a, b| a * b * 2.0);

    let mut data = Data::new();
    // SAFETY: `simple_add_workgroup` takes `Workgroup`.
    data.run(|args| unsafe { imports.import(1).unwrap().call(args) });
    data.check(|a, b| a + b);

    #[repr(C)]
    struct Negate {
        value: f32,
    }
    let mut negate = Negate { value: 1.5 };
    // SAFETY: `c_sample_negate_f32` takes `Negate`.
    assert_eq!(unsafe { imports.import(0).unwrap().call(&mut negate) }, 0);
    assert_eq!(negate.value, -1.5);
}

#[test]
fn standalone_library_declares_standalone_and_saxpy_works() {
    // SAFETY: the library is this workspace's v0 plugin.
    let plugin = unsafe {
        SYSTEM_LIBRARY
            .open(&std::path::Path::new(&library("sample_standalone")).to_string_lossy())
            .and_then(|code| code.load(&LoadParamList::new()))
    }
    .unwrap();
    assert!(plugin.info().features.contains(Features::STANDALONE));
    #[repr(C)]
    struct Saxpy {
        alpha: f32,
        x: *const f32,
        y: *mut f32,
        n: usize,
    }
    #[repr(C)]
    struct Dot {
        result: f32,
        x: *const f32,
        y: *const f32,
        n: usize,
    }
    let x = [1.0_f32, 2.0, 3.0, 4.0];
    let mut y = [10.0_f32, 20.0, 30.0, 40.0];
    let (saxpy, context) = resolve_one(&plugin, c"saxpy");
    let mut args = Saxpy { alpha: 2.0, x: x.as_ptr(), y: y.as_mut_ptr(), n: 4 };
    // SAFETY: `saxpy` takes `Saxpy` with `n` valid elements in each vector.
    assert_eq!(unsafe { saxpy(std::ptr::from_mut(&mut args).cast(), context, std::ptr::null_mut()) }, 0);
    assert_eq!(y, [12.0, 24.0, 36.0, 48.0]);
    let (dot, context) = resolve_one(&plugin, c"dot");
    let mut args = Dot { result: 0.0, x: x.as_ptr(), y: y.as_ptr(), n: 4 };
    // SAFETY: `dot` takes `Dot` with `n` valid elements in each vector.
    assert_eq!(unsafe { dot(std::ptr::from_mut(&mut args).cast(), context, std::ptr::null_mut()) }, 0);
    assert_eq!(args.result, 12.0 + 48.0 + 108.0 + 192.0);
    assert_eq!(plugin.unload().live_allocations, 0);
}

#[test]
fn sdk_libraries_list_their_exports_and_the_manager_suggests_from_them() {
    // SAFETY: the libraries are this workspace's v0 plugins.
    let (system, c_sample) = unsafe {
        (
            SYSTEM_LIBRARY
                .open(&std::path::Path::new(&library("sample_system")).to_string_lossy())
                .and_then(|code| code.load(&LoadParamList::new()))
                .unwrap(),
            SYSTEM_LIBRARY
                .open(&std::path::Path::new(&library("c_sample")).to_string_lossy())
                .and_then(|code| code.load(&LoadParamList::new()))
                .unwrap(),
        )
    };
    // The SDK's `xplug_plugin_exports`, read after the load checks passed.
    assert_eq!(
        system.exports(),
        Some(&["sample_system_calls".to_owned(), "simple_mul_workgroup".to_owned()][..])
    );
    assert_eq!(system.exported_names().as_deref(), system.exports());
    // C plugins have no such export.
    assert_eq!(c_sample.exports(), None);

    let manager = Manager::new();
    manager.register_plugin(c_sample).unwrap();
    manager.register_plugin(system).unwrap();
    let error = manager.resolve_imports(["simple_mul_workgrop"]).unwrap_err();
    assert!(error.to_string().contains("did you mean `simple_mul_workgroup`?"), "{error}");
}

#[test]
fn a_plugin_built_with_its_static_feature_is_diagnosed_with_the_fix() {
    // A plugin crate's cdylib built *with* its `static` feature (as when a
    // runtime in the same build links it) exports nothing; the loader must
    // say how to fix that.
    let build_dir = root().join("target").join("plugin-build-no-export");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .current_dir(root())
        .args(["build", "--lib", "--target-dir"])
        .arg(&build_dir)
        .args(["-p", "sample_static", "--features", "sample_static/static"])
        .status()
        .unwrap();
    assert!(status.success(), "building sample_static failed");
    let path = build_dir.join("debug").join("libsample_static.so");
    // SAFETY: the library is this workspace's plugin crate (whose cdylib has
    // no v0 export in this configuration, which is what is being tested).
    let error = unsafe {
        SYSTEM_LIBRARY
            .open(&std::path::Path::new(&path).to_string_lossy())
            .and_then(|code| code.load(&LoadParamList::new()))
    }
    .unwrap_err();
    assert!(matches!(error, xplug_providers::Error::MissingExport { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("iree_hal_executable_plugin_query"), "{message}");
    assert!(message.contains("`static` feature off"), "{message}");
    assert!(message.contains("cargo build --release"), "{message}");
}

#[test]
fn a_runtime_calls_a_plugin_import_with_the_plugins_own_args_type() {
    // `sample_static::FmaArgs` derives `ImportArgs`, so it is
    // `AnyBitPattern` and a runtime can call with it directly.
    let manager = Manager::builder().static_plugins().build().unwrap();
    let imports = manager.resolve_imports(["static_fma_i64"]).unwrap();
    // SAFETY: `static_fma_i64` takes `FmaArgs`: it is the plugin's own type.
    let fma = unsafe { imports.typed::<sample_static::FmaArgs>("static_fma_i64") }.unwrap();
    let mut args = sample_static::FmaArgs { result: 0, a: 6, b: 7, c: 1 };
    assert_eq!(fma.call(&mut args), 0);
    assert_eq!(args.result, 43);
    args.a = i64::MAX;
    assert_ne!(fma.call(&mut args), 0, "overflow is reported as a failure");
}
