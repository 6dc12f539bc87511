//! What xplug-iree does that IREE's own runtime cannot, each checked by
//! running a compiled IREE program (`tests/iree/*.mlir`, pinned
//! `iree-compile`) through IREE's runtime with xplug's manager behind it.

use std::sync::OnceLock;

use xplug_fixtures::iree_e2e::{self, MUL_CALL, MUL_UKERNEL, Prepared, TWO_IMPORTS};
use xplug_fixtures::plugins::PluginProfile;
use xplug_iree::{
    Argument, Call, DeviceKind, Error, Module, Report, Runtime, Session, Tensor, TensorView, Value,
};
use xplug_manager::Manager;

// Linked into this binary with its `static` feature: it registers through
// `inventory` and serves IREE executables as a Rust plugin, no C involved.
use sample_system as _;

fn prepared() -> &'static Prepared {
    static PREPARED: OnceLock<Prepared> = OnceLock::new();
    PREPARED.get_or_init(|| {
        iree_e2e::prepare(&xplug_fixtures::workspace_root(), PluginProfile::Debug)
            .expect("IREE, plugins and programs are ready")
    })
}

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| Runtime::new().expect("IREE's runtime starts"))
}

fn spec(name: &str, query: &str) -> String {
    format!("{}{query}", prepared().library(name).display())
}

fn module(program: iree_e2e::Program) -> Module {
    Module::from_file(runtime(), prepared().module(program)).expect("the compiled module loads")
}

/// Runs `@mul` on 65 elements and returns the product.
fn run_mul(session: &Session) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let (a, b) = iree_e2e::inputs(65);
    let results = session
        .prepare("mul", &[Tensor::from_f32(&a), Tensor::from_f32(&b)])
        .and_then(Call::invoke)
        .and_then(|results| results.values())
        .expect("the call runs");
    let [Value::Tensor(product)] = results.as_slice() else { panic!("one tensor result: {results:?}") };
    (a, b, product.to_f32().expect("f32"))
}

fn assert_products(session: &Session, scale: f32) {
    let (a, b, product) = run_mul(session);
    for i in 0..a.len() {
        assert_eq!(product[i].to_bits(), (a[i] * b[i] * scale).to_bits(), "element {i}");
    }
}

#[test]
fn one_manager_serves_several_devices_with_each_plugin_loaded_once() {
    // SAFETY: a plugin of this workspace.
    let manager = unsafe { Manager::from_specs([spec("sample_system", "")]) }.unwrap();
    let sync = runtime().device(DeviceKind::LocalSync, manager.clone()).unwrap();
    let task = runtime().device(DeviceKind::LocalTask { workers: 2 }, manager.clone()).unwrap();
    let module = module(MUL_CALL);
    for device in [&sync, &task] {
        assert_products(&Session::new(device, &module).unwrap(), 1.0);
        assert!(device.manager().ptr_eq(&manager));
    }
    assert_eq!(manager.len(), 1, "the plugin was loaded once, for both devices");
}

#[test]
fn rust_plugins_linked_into_the_binary_serve_iree_executables() {
    let manager = Manager::builder().static_plugins().build().unwrap();
    assert!(
        manager.providers().iter().any(|name| name.contains("sample_system")),
        "{:?}",
        manager.providers()
    );
    let device = runtime().device(DeviceKind::LocalSync, manager).unwrap();
    assert_products(&Session::new(&device, &module(MUL_CALL)).unwrap(), 1.0);
}

#[test]
fn load_parameters_reach_the_plugin() {
    // SAFETY: a plugin of this workspace.
    let manager = unsafe { Manager::from_specs([spec("sample_system", "?multiplier=3")]) }.unwrap();
    let device = runtime().device(DeviceKind::LocalTask { workers: 2 }, manager).unwrap();
    assert_products(&Session::new(&device, &module(MUL_CALL)).unwrap(), 3.0);
}

/// A Rust plugin linked into the binary takes load parameters through a
/// safe call, and a bad one is refused as a typed error with nothing
/// registered, carrying the diagnostics its `.so` would give: the host's
/// own check of the declared keys and value types, and the plugin's own
/// message.
#[test]
fn a_linked_in_plugin_takes_parameters_without_unsafe() {
    let manager = Manager::new();
    manager.load_static("sample_system", [("multiplier", "3")]).unwrap();
    let device = runtime().device(DeviceKind::LocalSync, manager.clone()).unwrap();
    assert_products(&Session::new(&device, &module(MUL_CALL)).unwrap(), 3.0);

    for (key, value, expected) in [
        (
            "multiplier",
            "abc",
            "its load parameter `multiplier` has the value `abc` but a finite number is expected (it declares \
             `multiplier` as `f32`)",
        ),
        (
            "disable",
            "nope",
            "its load returned INVALID_ARGUMENT with 1 parameter(s); check the parameters the plugin expects\n  \
             caused by: the plugin says: load parameter `disable` has the value `nope`, which is no import of \
             sample_system",
        ),
        ("multiplierr", "3", "it declares no load parameter `multiplierr` (did you mean `multiplier`?)"),
    ] {
        let error = manager.load_static("sample_system", [(key, value)]).unwrap_err();
        let report = format!("{:?}", Report::from(error));
        assert!(report.starts_with("cannot load plugin from spec `static:sample_system`"), "{report}");
        assert!(report.contains(expected), "{report}");
    }
    let missing = manager.load_static("sample_sytem", [("multiplier", "3")]).unwrap_err();
    assert!(format!("{:?}", Report::from(missing)).contains("sample_system"), "the linked names are listed");
    assert_eq!(manager.len(), 1, "the refusals registered nothing");
}

#[test]
fn a_plugin_registered_after_the_device_serves_executables_loaded_later() {
    let manager = Manager::new();
    let device = runtime().device(DeviceKind::LocalSync, manager.clone()).unwrap();
    let module = module(MUL_CALL);
    assert!(matches!(Session::new(&device, &module), Err(Error::UnresolvedImports { .. })));
    // SAFETY: a plugin of this workspace.
    unsafe { manager.load_spec(&spec("c_sample", "")) }.unwrap();
    assert_products(&Session::new(&device, &module).unwrap(), 1.0);
}

#[test]
fn a_missing_import_names_the_executable_the_import_and_the_providers_asked() {
    // SAFETY: a plugin of this workspace.
    let manager = unsafe { Manager::from_specs([spec("c_sample", "")]) }.unwrap();
    let device = runtime().device(DeviceKind::LocalSync, manager.clone()).unwrap();
    let module = module(TWO_IMPORTS);
    let error = match Session::new(&device, &module) {
        Err(error) => error,
        Ok(_) => panic!("e2e_sub_workgroup is exported by no registered plugin"),
    };
    let Error::UnresolvedImports { executable, source, device: device_name, .. } = &error else {
        panic!("expected UnresolvedImports, got {error:?}")
    };
    assert_eq!(*device_name, "local-sync");
    assert_eq!(*executable, 0);
    let missing: Vec<&str> = source.missing_imports().iter().map(|import| import.name.as_str()).collect();
    assert_eq!(missing, ["e2e_sub_workgroup"], "only the unresolved import is listed");
    let message = format!("{error}: {source}");
    assert!(message.contains("executable #0") && message.contains("e2e_sub_workgroup"), "{message}");

    // Nothing registered is lost: adding the missing plugin makes it load.
    // SAFETY: a test plugin of this workspace.
    unsafe { manager.load_spec(&spec(iree_e2e::SUB_PLUGIN, "")) }.unwrap();
    let session = Session::new(&device, &module).unwrap();
    let (a, b) = iree_e2e::inputs(70);
    let call = session.prepare("mul_then_sub", &[Tensor::from_f32(&a), Tensor::from_f32(&b)]).unwrap();
    let results = call.invoke().unwrap().values().unwrap();
    let [Value::Tensor(out)] = results.as_slice() else { panic!("one tensor result") };
    let out = out.to_f32().unwrap();
    assert!((0..70).all(|i| out[i].to_bits() == (a[i] * b[i] - b[i]).to_bits()));
}

#[test]
fn failed_plugin_loads_are_typed_errors_and_the_runtime_keeps_working() {
    // SAFETY: a plugin of this workspace.
    let manager = unsafe { Manager::from_specs([spec("c_sample", "")]) }.unwrap();
    let device = runtime().device(DeviceKind::LocalSync, manager.clone()).unwrap();
    // A mistyped parameter value: the plugin's own load refuses it.
    // SAFETY: a plugin of this workspace.
    let refused = unsafe { manager.load_spec(&spec("sample_system", "?multiplier=three")) }.unwrap_err();
    assert!(format!("{refused}").contains("sample_system"), "{refused}");
    // A file that does not exist.
    // SAFETY: nothing is loaded from a missing file.
    let missing = unsafe { manager.load_spec("/nonexistent/libplugin.so") }.unwrap_err();
    assert!(format!("{missing}").contains("/nonexistent/libplugin.so"), "{missing}");
    assert_eq!(manager.len(), 1, "the refusals registered nothing and removed nothing");
    assert_products(&Session::new(&device, &module(MUL_CALL)).unwrap(), 1.0);
}

#[test]
fn an_unknown_function_is_refused_with_a_suggestion() {
    // SAFETY: a plugin of this workspace.
    let manager = unsafe { Manager::from_specs([spec("c_sample", "")]) }.unwrap();
    let device = runtime().device(DeviceKind::LocalSync, manager).unwrap();
    let session = Session::new(&device, &module(MUL_CALL)).unwrap();
    let Err(Error::NoSuchFunction { suggestion, .. }) = session.prepare("mull", [] as [Argument<'_>; 0])
    else {
        panic!("`mull` is not exported")
    };
    assert_eq!(suggestion.as_deref(), Some("mul"));
}

/// A program that ties its inputs' shapes (`tests/iree/mul_ukernel.mlir`
/// imports `b` with `a`'s length) gets a short or long `b` refused by IREE
/// before any kernel runs, and the error's report shows IREE's reason.
#[test]
fn inputs_of_mismatched_lengths_are_refused_by_the_program() {
    // SAFETY: a plugin of this workspace.
    let manager = unsafe { Manager::from_specs([spec("sample_system", "")]) }.unwrap();
    let device = runtime().device(DeviceKind::LocalSync, manager).unwrap();
    // Both example programs tie `b`'s length to `a`'s.
    for program in [MUL_UKERNEL, MUL_CALL] {
        refuses_mismatched_lengths(&Session::new(&device, &module(program)).unwrap());
    }
}

fn refuses_mismatched_lengths(session: &Session) {
    let a = [1.0f32, 2.0, 3.0, 4.0];
    for b in [&[1.0f32, 2.0, 3.0][..], &[1.0, 2.0, 3.0, 4.0, 5.0]] {
        let (a_shape, b_shape) = ([a.len()], [b.len()]);
        let inputs = [TensorView::new(&a_shape, &a).unwrap(), TensorView::new(&b_shape, b).unwrap()];
        let error =
            session.prepare("mul", inputs).and_then(Call::invoke).err().expect("IREE refuses the call");
        assert!(matches!(error, Error::Call { .. }), "{error:?}");
        let report = format!("{:?}", Report::from(error));
        assert!(report.starts_with("call to `mul` failed\n  caused by: "), "{report}");
        assert!(
            report.contains(&format!("b shape dimension 0 mismatch; expected 4 but have {}", b.len())),
            "{report}"
        );
    }
    let b = [0.5f32; 4];
    let call =
        session.prepare("mul", [TensorView::new(&[4], &a).unwrap(), TensorView::new(&[4], &b).unwrap()]);
    let results = call.unwrap().invoke().unwrap().values().unwrap();
    let [Value::Tensor(product)] = results.as_slice() else { panic!("one tensor: {results:?}") };
    assert_eq!(product.to_vec::<f32>().unwrap(), [0.5, 1.0, 1.5, 2.0]);
}

/// Every other test of this file again, under valgrind (memcheck; IREE's
/// proactor kept off `io_uring`, see `xplug_fixtures::valgrind`): an
/// invalid access, a use of uninitialised memory or a definite leak in
/// IREE's runtime, xplug's glue or its provider fails this test.
#[test]
fn every_test_here_is_memcheck_clean() {
    // Prepared here first, so that the rerun (which does not take the work
    // directory's lock this process holds) finds everything built.
    if std::env::var_os(xplug_fixtures::valgrind::RERUN_ENV).is_none() {
        prepared();
    }
    let Some(output) = xplug_fixtures::valgrind::rerun_this_test_binary("every_test_here_is_memcheck_clean")
    else {
        return;
    };
    xplug_fixtures::valgrind::assert_clean(&output, 0, "xplug-iree's beyond_iree tests");
}
