//! The manager loading real C plugins from specs: parameters, override
//! order, lifetime, and the errors for bad paths, embedded specs and
//! malformed specs.

use std::sync::Arc;

use xplug_abi::{Resolution, StatusCode};
use xplug_fixtures::build_minimal_c_plugin;
use xplug_manager::{Error, Manager};

#[repr(C)]
struct Binop {
    a: i32,
    b: i32,
    out: i32,
}

fn mul(manager: &Arc<Manager>, a: i32, b: i32) -> i32 {
    let imports = manager.resolve_imports(["?c_missing", "c_add_i32", "c_mul_i32"]).unwrap();
    assert_eq!(imports.resolution(), Resolution::MISSING_OPTIONAL);
    assert!(!imports.is_resolved(0));
    let mut args = Binop { a, b, out: 0 };
    let mul = imports.import(imports.index_of("c_mul_i32").unwrap()).unwrap();
    // SAFETY: `c_mul_i32` takes `struct { int32_t a, b, out; }`.
    assert_eq!(unsafe { mul.call(&mut args) }, 0);
    args.out
}

#[test]
fn a_c_plugin_loads_from_a_spec_with_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let library = build_minimal_c_plugin(dir.path());
    let spec = format!("{}?scale=3", library.display());
    // SAFETY: the library is the test's own minimal v0 plugin.
    let manager = Arc::new(unsafe { Manager::from_specs([&spec]) }.unwrap());
    assert_eq!(manager.providers(), ["c_minimal"]);
    assert_eq!(mul(&manager, 6, 7), 6 * 7 * 3);

    // The table keeps the plugin (and its library) loaded.
    let imports = manager.resolve_imports(["c_mul_i32"]).unwrap();
    drop(manager);
    let mut args = Binop { a: 2, b: 5, out: 0 };
    // SAFETY: as above; the plugin is still loaded through `imports`.
    assert_eq!(unsafe { imports.import(0).unwrap().call(&mut args) }, 0);
    assert_eq!(args.out, 2 * 5 * 3);
}

#[test]
fn later_specs_override_earlier_ones() {
    let dir = tempfile::tempdir().unwrap();
    let library = build_minimal_c_plugin(dir.path());
    let specs = [format!("{}?scale=2", library.display()), format!("{}?scale=5", library.display())];
    // SAFETY: the library is the test's own minimal v0 plugin.
    let manager = Arc::new(unsafe { Manager::from_specs(&specs) }.unwrap());
    assert_eq!(manager.len(), 2);
    assert_eq!(mul(&manager, 3, 4), 3 * 4 * 5, "the last spec must win");

    // Loading one more at run time overrides both.
    let spec = format!("{}?scale=7", library.display());
    // SAFETY: as above.
    unsafe { manager.load_spec(&spec) }.unwrap();
    assert_eq!(mul(&manager, 3, 4), 3 * 4 * 7);
}

#[test]
fn a_bad_path_is_a_typed_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("libnot_there.so");
    let spec = missing.display().to_string();
    // SAFETY: the file does not exist; nothing is loaded.
    let error = unsafe { Manager::from_specs([&spec]) }.unwrap_err();
    assert!(matches!(&error, Error::PluginLoad { spec: s, .. } if *s == spec), "{error:?}");
    assert_ne!(error.code(), StatusCode::OK);
    assert!(error.to_string().contains(&spec), "{error}");
}

#[test]
fn embedded_specs_go_to_the_embedded_loader_and_nothing_stays_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let library = build_minimal_c_plugin(dir.path());
    for embedded in ["embedded:/k/kernels.bin", "/k/kernels.sos?x=1"] {
        let specs = [library.display().to_string(), embedded.to_owned()];
        // SAFETY: the first library is the trusted minimal plugin; the
        // embedded file does not exist.
        let error = unsafe { Manager::from_specs(&specs) }.unwrap_err();
        assert_eq!(error.code(), StatusCode::NOT_FOUND, "{error}");
        assert!(error.to_string().contains(embedded), "{error}");
    }
    // A shared library built the ordinary way imports from libc: the
    // embedded loader refuses it by name, before running anything.
    let manager = Manager::new();
    let spec = format!("embedded:{}", library.display());
    // SAFETY: refused by validation before any of its code runs.
    let error = unsafe { manager.load_spec(&spec) }.unwrap_err();
    let chain = error_chain(&error);
    assert!(chain.contains("not a standalone plugin"), "{chain}");
    assert!(manager.is_empty());
}

#[test]
fn malformed_specs_are_rejected_before_loading() {
    let dir = tempfile::tempdir().unwrap();
    let library = build_minimal_c_plugin(dir.path());
    let bad = format!("{}?scale=%3", library.display());
    // SAFETY: the spec is refused while parsing.
    let error = unsafe { Manager::from_specs([library.display().to_string(), bad.clone()]) }.unwrap_err();
    assert_eq!(error.code(), StatusCode::INVALID_ARGUMENT);
    assert!(error.to_string().contains(&format!("`{bad}`")), "{error}");
    // SAFETY: as above.
    assert_eq!(unsafe { Manager::from_specs([""]) }.unwrap_err().code(), StatusCode::INVALID_ARGUMENT);
}

#[test]
fn a_full_manager_refuses_a_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let library = build_minimal_c_plugin(dir.path());
    let manager = Manager::with_capacity(1);
    let spec = library.display().to_string();
    // SAFETY: the library is the test's own minimal v0 plugin.
    unsafe { manager.load_spec(&spec) }.unwrap();
    // SAFETY: as above.
    let error = unsafe { manager.load_spec(&spec) }.unwrap_err();
    assert_eq!(error.code(), StatusCode::RESOURCE_EXHAUSTED);
    assert!(error.to_string().contains("`c_minimal`"), "{error}");
    assert_eq!(manager.len(), 1);
    assert_eq!(mul(&Arc::new(manager), 2, 3), 6);
}

/// The error's message followed by its sources'.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[test]
fn a_key_the_plugin_does_not_declare_is_refused_before_its_load_runs() {
    // `sample_system` lists its parameters (`multiplier`): the host refuses
    // any other key itself, naming the closest declared one, so the plugin's
    // `load` never sees it.
    let library = xplug_fixtures::plugins::built_for_tests()
        .join(xplug_fixtures::plugins::library_file_name("sample_system"));
    let spec = format!("{}?multplier=3", library.display());
    let manager = Manager::new();
    // SAFETY: the repository's example plugin.
    let error = unsafe { manager.load_spec(&spec) }.unwrap_err();
    assert_eq!(error.code(), StatusCode::INVALID_ARGUMENT, "{error}");
    let chain = error_chain(&error);
    assert!(
        chain.contains(
            "declares no load parameter `multplier` (did you mean `multiplier`?); it declares multiplier"
        ),
        "{chain}"
    );
    assert!(manager.is_empty(), "nothing is registered");

    // A declared key loads, and the plugin keeps its declarations.
    let spec = format!("{}?multiplier=3", library.display());
    // SAFETY: as above.
    unsafe { manager.load_spec(&spec) }.unwrap();
    assert_eq!(manager.len(), 1);
}
