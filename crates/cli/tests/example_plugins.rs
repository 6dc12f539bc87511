//! Runs `xplug` on the example plugins, built by the function behind
//! `cargo xtask build-plugins`.

mod common;
use common::{json, library};

#[test]
fn inspect_lists_the_exports_of_an_sdk_plugin() {
    let value = json(&["inspect", &library("sample_standalone")], 0);
    assert_eq!(value["name"], "sample_standalone");
    assert_eq!(value["features"], serde_json::json!(["standalone"]));
    assert_eq!(
        value["exports"],
        serde_json::json!([
            "dot",
            "matmul_relu_workgroup",
            "saxpy",
            "simple_add_workgroup",
            "simple_mul_workgroup"
        ])
    );
}

#[test]
fn check_passes_for_every_example_plugin() {
    for name in ["sample_standalone", "sample_system", "sample_static", "c_sample"] {
        let value = json(&["check", &library(name)], 0);
        assert_eq!(value["ok"], true, "{name}: {value}");
    }
}

#[test]
fn call_runs_an_import_on_real_values() {
    // IREE's slice convention: the slice starts at offset 1 of each binding
    // and holds 3 elements; element 0 of the output must stay untouched.
    let spec = format!("{}?multiplier=3", library("sample_system"));
    let fields = [
        "ptr:f32=1,2,3,4",
        "usize:1",
        "ptr:f32=10,20,30,40",
        "usize:1",
        "ptr:f32[4]=-1",
        "usize:1",
        "usize:3",
        "usize:0",
        "u32:0",
        "ptr:null",
    ];
    let mut args = vec!["call", spec.as_str(), "simple_mul_workgroup"];
    for field in &fields {
        args.extend(["--field", field]);
    }
    let value = json(&args, 0);
    assert_eq!(value["result"], 0, "{value}");
    let out =
        value["buffers"].as_array().unwrap().iter().find(|b| b["field"] == 4).expect("the output buffer");
    assert_eq!(out["values"], serde_json::json!([-1.0, 120.0, 270.0, 480.0]), "{value}");
    // The size field is read back as given.
    assert_eq!(value["fields"][6]["value"], 3);

    // An import that refuses its args (NULL bindings with a non-empty
    // slice) reports its code and the command exits 1.
    let value = json(
        &[
            "call",
            &library("sample_standalone"),
            "simple_mul_workgroup",
            "--field",
            "ptr:null",
            "--field",
            "usize:0",
            "--field",
            "ptr:null",
            "--field",
            "usize:0",
            "--field",
            "ptr:null",
            "--field",
            "usize:0",
            "--field",
            "usize:4",
            "--field",
            "usize:0",
            "--field",
            "u32:0",
            "--field",
            "ptr:null",
        ],
        1,
    );
    assert_eq!(value["ok"], false, "{value}");
    // The code by name, the one the import returned.
    assert_eq!(value["result"], 3, "NULL bindings with a non-empty slice are refused: {value}");
    assert_eq!(value["error"]["kind"], "import_failed", "{value}");
    assert_eq!(value["error"]["code"], "INVALID_ARGUMENT", "{value}");
    assert_eq!(
        value["error"]["message"], "import `simple_mul_workgroup` returned 3 (INVALID_ARGUMENT)",
        "{value}"
    );
}

#[test]
fn declared_params_are_shown_checked_and_refused_with_a_suggestion() {
    let system = library("sample_system");
    let value = json(&["inspect", &system], 0);
    assert_eq!(value["param_decls"][0]["name"], "multiplier", "{value}");
    assert_eq!(value["param_decls"][0]["type"], "f32");
    assert_eq!(value["param_decls"][0]["default"], "1.0");
    assert_eq!(value["param_decls"][1]["name"], "disable");
    assert!(value["param_decls"][1]["default"].is_null());
    // A plugin without `params(...)` declares nothing.
    assert!(json(&["inspect", &library("sample_standalone")], 0)["param_decls"].is_null());

    // Every check passes with a declared parameter, including the one that
    // expects an unknown key to be refused.
    let value = json(&["check", &format!("{system}?multiplier=3")], 0);
    assert_eq!(value["ok"], true, "{value}");
    let params_check =
        value["checks"].as_array().unwrap().iter().find(|c| c["name"] == "load-unload-params").unwrap();
    assert!(params_check["detail"].as_str().unwrap().contains("refused the unknown key"), "{params_check}");

    // A misspelled key is refused before any check runs, naming the fix.
    let value = json(&["check", &format!("{system}?multplier=3")], 1);
    assert_eq!(value["error"]["kind"], "unknown_param", "{value}");
    assert!(value["error"]["message"].as_str().unwrap().contains("did you mean `multiplier`?"), "{value}");
    // A value not of its declared type is the host's refusal, before
    // `load`, with the parser the plugin reads values with.
    let value =
        json(&["call", &format!("{system}?multiplier=lots"), "sample_system_calls", "--field", "u64:0"], 1);
    assert_eq!(value["ok"], false, "{value}");
    assert_eq!(
        (&value["error"]["kind"], &value["error"]["code"]),
        (&"incompatible".into(), &"INVALID_ARGUMENT".into())
    );
    let causes = value["error"]["causes"].to_string();
    assert!(
        causes
            .contains("its load parameter `multiplier` has the value `lots` but a finite number is expected"),
        "{value}"
    );
    // A value of the declared type the plugin refuses is the plugin's
    // refusal, its own message one of the causes, not only on stderr.
    let value =
        json(&["call", &format!("{system}?disable=nope"), "sample_system_calls", "--field", "u64:0"], 1);
    assert_eq!(value["error"]["code"], "INVALID_ARGUMENT", "{value}");
    let causes = value["error"]["causes"].to_string();
    assert!(causes.contains("the plugin says: load parameter `disable` has the value `nope`"), "{value}");
}
