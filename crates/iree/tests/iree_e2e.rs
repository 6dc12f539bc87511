//! IREE is the judge: the end-to-end programs (`tests/iree/*.mlir`),
//! compiled by the pinned `iree-compile`, run through xplug-iree (IREE's
//! runtime with xplug's manager as the import provider) on both CPU devices,
//! and every output must equal `iree-run-module`'s bit for bit for the same
//! program, inputs and plugins: every kernel plugin (`.so` and `.sos`), at
//! every size of the matrix, including the override case with two plugins
//! exporting the same kernel (the one given last wins in both).
//!
//! The first run creates `target/iree-venv` with IREE's pinned pip packages
//! (Python 3 and PyPI access needed once).

use std::collections::HashMap;
use std::path::PathBuf;

use xplug_fixtures::iree_e2e::{self, Case};
use xplug_fixtures::plugins::PluginProfile;
use xplug_iree::{Call, DeviceKind, Module, Runtime, Session, Tensor, Value};
use xplug_manager::Manager;

fn manager_for(prepared: &iree_e2e::Prepared, case: &Case) -> Manager {
    let specs: Vec<PathBuf> = case.plugins.iter().map(|name| prepared.library(name).to_owned()).collect();
    let specs: Vec<String> = specs.iter().map(|path| path.display().to_string()).collect();
    // SAFETY: the plugins are this workspace's examples and test plugins.
    unsafe { Manager::from_specs(&specs) }.expect("the case's plugins load into xplug's manager")
}

fn tensor_outputs(values: Vec<Value>) -> Vec<Vec<f32>> {
    values
        .into_iter()
        .map(|value| match value {
            Value::Tensor(tensor) => tensor.to_f32().expect("f32 outputs"),
            other => panic!("expected a tensor result, got {other:?}"),
        })
        .collect()
}

#[test]
fn every_case_matches_iree_run_module_bit_for_bit_on_both_devices() {
    let root = xplug_fixtures::workspace_root();
    let prepared =
        iree_e2e::prepare(&root, PluginProfile::Debug).expect("IREE, plugins and programs are ready");
    let runtime = Runtime::new().expect("IREE's runtime starts");
    let mut modules: HashMap<&'static str, Module> = HashMap::new();
    let mut failures = Vec::new();
    let mut checked = 0usize;
    for case in iree_e2e::cases() {
        let reference = iree_e2e::run_iree_run_module(&prepared, &case)
            .expect("iree-run-module can be run")
            .unwrap_or_else(|detail| panic!("iree-run-module failed on {case:?}: {detail}"));
        assert_eq!(iree_e2e::judge(&case, &reference), None, "IREE's own result for {case:?}");
        let module = modules.entry(case.program.file).or_insert_with(|| {
            Module::from_file(&runtime, prepared.module(case.program)).expect("the compiled module loads")
        });
        let (a, b) = iree_e2e::inputs(case.size);
        for kind in [DeviceKind::LocalSync, DeviceKind::LocalTask { workers: 2 }] {
            let device = runtime.device(kind, manager_for(&prepared, &case)).expect("the device is created");
            let session = Session::new(&device, module).expect("every import resolves through xplug");
            let outputs = tensor_outputs(
                session
                    .prepare(case.program.function, &[Tensor::from_f32(&a), Tensor::from_f32(&b)])
                    .and_then(Call::invoke)
                    .and_then(|results| results.values())
                    .expect("the call runs"),
            );
            let same = outputs.len() == reference.len()
                && outputs.iter().zip(&reference).all(|(ours, theirs)| {
                    ours.len() == theirs.len()
                        && ours.iter().zip(theirs).all(|(x, y)| x.to_bits() == y.to_bits())
                });
            if !same {
                failures.push(format!(
                    "{} {} n={} on {}: differs from iree-run-module ({:?})",
                    case.program.file,
                    case.plugins.join("+"),
                    case.size,
                    kind.name(),
                    iree_e2e::judge(&case, &outputs)
                ));
            }
            checked += 1;
        }
    }
    assert!(failures.is_empty(), "{} of {checked} runs differ:\n{}", failures.len(), failures.join("\n"));
    assert!(checked >= 2 * 100, "the whole matrix ran ({checked} runs)");
}
