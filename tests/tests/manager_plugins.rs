//! The manager loading real C plugins from specs: parameters, override
//! order, lifetime, and the errors for bad paths, embedded specs and
//! malformed specs.

use std::sync::Arc;

use xplug_abi::{Resolution, StatusCode};
use xplug_fixtures::build_minimal_c_plugin;
use xplug_manager::{Error, ErrorChain, Manager};

#[repr(C)]
struct Binop {
    a: i32,
    b: i32,
    out: i32,
}

fn mul(manager: &Manager, a: i32, b: i32) -> i32 {
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
    let manager = unsafe { Manager::from_specs([&spec]) }.unwrap();
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
    let manager = unsafe { Manager::from_specs(&specs) }.unwrap();
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
    let chain = ErrorChain(&error).to_string();
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
    let manager = Manager::builder().capacity(1).build().unwrap();
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
    let chain = ErrorChain(&error).to_string();
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

/// `sample_system` linked into this test binary (its `static` feature) and
/// the same crate as a shared library give the same diagnostics, inside
/// the `Err`: an undeclared key refused by the host with the closest
/// declared name, a value not of its declared type refused by the host, a
/// value the plugin's own `load` refuses with its own message, and a
/// misspelt import name answered with "did you mean".
/// The messages differ only in where the plugin came from.
#[test]
fn a_linked_in_plugin_gives_the_diagnostics_of_its_shared_library() {
    use sample_system as _;

    let library = xplug_fixtures::plugins::built_for_tests()
        .join(xplug_fixtures::plugins::library_file_name("sample_system"));
    let shared = |query: &str| {
        let manager = Manager::new();
        // SAFETY: the repository's example plugin.
        let loaded = unsafe { manager.load_spec(&format!("{}{query}", library.display())) };
        (manager, loaded.map(drop))
    };
    let linked = |key: &str, value: &str| {
        let manager = Manager::new();
        let loaded = manager.load_static("sample_system", [(key, value)]);
        (manager, loaded.map(drop))
    };
    // What names the plugin's origin, the only part allowed to differ (the
    // spec of the shared library has its parameters, `load_static` takes
    // them apart).
    let normalise = |text: String| {
        let spec = quoted_spec(&text, &library.display().to_string());
        text.replace(&spec, "SPEC")
            .replace("static:sample_system", "SPEC")
            .replace(&format!("({})", library.display()), "(ORIGIN)")
            .replace("(linked in)", "(ORIGIN)")
    };

    let cases = [
        ("multiplierr", "3", "declares no load parameter `multiplierr` (did you mean `multiplier`?)"),
        (
            "multiplier",
            "abc",
            "its load parameter `multiplier` has the value `abc` but a finite number is expected (it declares \
             `multiplier` as `f32`)",
        ),
        (
            "disable",
            "nope",
            "the plugin says: load parameter `disable` has the value `nope`, which is no import of sample_system",
        ),
    ];
    for (key, value, expected) in cases {
        let (shared_manager, shared_result) = shared(&format!("?{key}={value}"));
        let (linked_manager, linked_result) = linked(key, value);
        let shared_error = shared_result.unwrap_err();
        let linked_error = linked_result.unwrap_err();
        assert_eq!(linked_error.code(), StatusCode::INVALID_ARGUMENT, "{linked_error}");
        let (shared_chain, linked_chain) =
            (ErrorChain(&shared_error).to_string(), ErrorChain(&linked_error).to_string());
        assert!(linked_chain.contains(expected), "{linked_chain}");
        assert_eq!(normalise(linked_chain), normalise(shared_chain));
        assert!(shared_manager.is_empty() && linked_manager.is_empty(), "nothing is registered");
    }

    let (shared_manager, shared_result) = shared("?multiplier=2");
    let (linked_manager, linked_result) = linked("multiplier", "2");
    shared_result.unwrap();
    linked_result.unwrap();
    let typo = |manager: &Manager| {
        let error = manager.resolve_imports(["simple_mul_workgrop"]).unwrap_err();
        assert_eq!(error.code(), StatusCode::NOT_FOUND, "{error}");
        ErrorChain(&error).to_string()
    };
    let linked_typo = typo(&linked_manager);
    assert!(
        linked_typo.contains("`simple_mul_workgrop` (did you mean `simple_mul_workgroup`?)"),
        "{linked_typo}"
    );
    assert_eq!(normalise(linked_typo), normalise(typo(&shared_manager)));

    // The linked-in plugin lists what its library exports.
    let plugin = xplug_manager::providers::STATIC
        .linked_code("sample_system")
        .and_then(|code| code.load(&xplug_manager::providers::LoadParamList::new()))
        .unwrap();
    assert_eq!(plugin.exports().unwrap(), ["sample_system_calls", "simple_mul_workgroup"]);
    let params: Vec<_> = plugin.param_decls().unwrap().iter().map(|decl| decl.name.as_str()).collect();
    assert_eq!(params, ["multiplier", "disable"]);
    let layouts = plugin.import_layouts().unwrap();
    let calls = layouts.iter().find(|layout| layout.symbol == "sample_system_calls").unwrap();
    assert_eq!((calls.size, calls.fields.as_ref().unwrap()[0].name.as_str()), (8, "count"));
}

/// The spec quoted in `text` that starts with `path` (up to the closing
/// backquote), or `path` itself when none is quoted.
fn quoted_spec(text: &str, path: &str) -> String {
    text.find(&format!("`{path}"))
        .and_then(|start| {
            let rest = &text[start + 1..];
            rest.find('`').map(|end| rest[..end].to_owned())
        })
        .unwrap_or_else(|| path.to_owned())
}
