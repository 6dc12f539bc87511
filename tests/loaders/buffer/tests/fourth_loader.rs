//! The `buffer:` loader, added outside xplug's crates with one
//! registration line, used unchanged by the manager, `xplug inspect`,
//! `check`, `resolve` and `run` (the `xplug-buffer` binary is `xplug` with
//! this crate linked in).

use std::ffi::c_void;
use std::process::{Command, Output};

use serde_json::Value;
use xplug_fixtures::iree_e2e::{self, MUL_CALL};
use xplug_fixtures::plugins::{PluginProfile, built_for_tests, library_file_name};
use xplug_manager::Manager;
use xplug_manager::providers::{ResolveRequest, SymbolName, loaders};
use xplug_manager::spec::PluginSpec;

use xplug_buffer_loader as _;

const XPLUG: &str = env!("CARGO_BIN_EXE_xplug-buffer");

/// The debug build of example plugin `name`.
fn library(name: &str) -> String {
    built_for_tests().join(library_file_name(name)).display().to_string()
}

fn xplug(args: &[&str]) -> Output {
    Command::new(XPLUG).args(args).env("NO_COLOR", "1").output().expect("xplug-buffer runs")
}

/// `xplug-buffer --json ARGS`, its exit code asserted, stdout parsed.
fn json(args: &[&str], code: i32) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let output = xplug(&all);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(code),
        "{all:?}: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("{all:?}: {error}: {stdout}"))
}

#[test]
fn the_manager_gives_buffer_specs_to_the_fourth_loader() {
    let names: Vec<&str> = loaders().iter().map(|loader| loader.name()).collect();
    assert_eq!(names, ["static", "embedded ELF", "byte buffer", "system library"]);
    let spec = format!("buffer:{}?multiplier=3", library("sample_system"));
    let parsed = PluginSpec::parse(&spec).unwrap();
    assert_eq!(parsed.target().loader().name(), "byte buffer");
    assert_eq!(parsed.target().as_str(), library("sample_system"));

    let manager = Manager::new();
    // SAFETY: the example plugin is a trusted v0 plugin.
    let registered = unsafe { manager.load_spec(&spec) }.unwrap();
    assert_eq!(registered.name(), "sample_system");
    let names = [SymbolName::new(c"simple_mul_workgroup")];
    let mut fns = [std::ptr::null_mut::<c_void>(); 1];
    let mut contexts = [std::ptr::null_mut::<c_void>(); 1];
    manager.resolve(&mut ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap()).unwrap();
    assert!(!fns[0].is_null());

    // The loader's own errors reach the manager's caller, naming the spec.
    // SAFETY: nothing is loaded: the file does not exist.
    let missing = unsafe { manager.load_spec("buffer:/no/such/lib.so") }.unwrap_err();
    assert!(missing.to_string().contains("buffer:/no/such/lib.so"), "{missing}");
}

#[test]
fn inspect_check_and_resolve_use_the_fourth_loader() {
    let spec = format!("buffer:{}", library("sample_system"));
    let value = json(&["inspect", &spec], 0);
    assert_eq!(value["loader"], "byte buffer", "{value}");
    assert_eq!(value["name"], "sample_system");
    assert!(value["buffer"].as_str().unwrap().ends_with("bytes served from memory"), "{value}");
    assert!(value["exports"].as_array().is_some_and(|names| !names.is_empty()), "{value}");

    let value = json(&["check", "--in-process", &spec], 0);
    assert_eq!(value["failed"], 0, "{value}");
    assert!(value["passed"].as_u64().unwrap() > 5, "{value}");
    // In child processes too: each child is this binary, with the loader.
    let value = json(&["check", &spec], 0);
    assert_eq!(value["failed"], 0, "{value}");

    let value = json(&["resolve", "--plugin", &spec, "simple_mul_workgroup"], 0);
    assert_eq!(value["symbols"][0]["provider"], "sample_system", "{value}");
    assert_eq!(value["scan_order"][0]["source"], spec.as_str(), "{value}");
}

#[test]
fn xplug_run_loads_a_plugin_through_the_fourth_loader() {
    let prepared =
        iree_e2e::prepare(&xplug_fixtures::workspace_root(), PluginProfile::Debug).expect("IREE is ready");
    let module = prepared.module(MUL_CALL).display().to_string();
    let file = prepared.library("c_sample").display().to_string();
    let run = |plugin: &str| {
        let args = [
            "run".to_owned(),
            module.clone(),
            format!("--function={}", MUL_CALL.function),
            "--input=4xf32=1,2,3,4".to_owned(),
            "--input=4xf32=5,6,7,8".to_owned(),
            format!("--executable_plugin={plugin}"),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = xplug(&args);
        assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap()
    };
    let through_buffer = run(&format!("buffer:{file}"));
    assert!(through_buffer.contains("4xf32=5 12 21 32"), "{through_buffer}");
    assert_eq!(through_buffer, run(&file));
}
