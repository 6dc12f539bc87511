//! `xplug` with a static plugin linked into it (`xplug-static`, see
//! src/main.rs): `static:` specs, `resolve --static` and the demo's
//! override of a static plugin by a dynamic one.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

#[path = "../../tests/common/mod.rs"]
mod common;
use common::{XPLUG, json, library, xplug};

/// The debug example plugins, built once per test process.
fn plugins() -> &'static Path {
    xplug_fixtures::plugins::built_for_tests()
}

#[test]
fn inspect_a_static_plugin_linked_into_xplug() {
    let value = json(&["inspect", "static:sample_static"], 0);
    assert_eq!(value["name"], "sample_static");
    assert_eq!(value["loader"], "static");
}

#[test]
fn resolve_static_then_dynamic_shows_the_override() {
    let value = json(&["resolve", "--static", "static_fma_i64"], 0);
    assert_eq!(value["symbols"][0]["provider"], "sample_static");
    assert_eq!(value["scan_order"][0]["source"], "static");

    let dynamic = library("sample_static");
    let value = json(&["resolve", "--static", "--plugin", &dynamic, "static_fma_i64"], 0);
    assert_eq!(value["symbols"][0]["provider_index"], 1, "{value}");
    assert_eq!(value["scan_order"][0]["source"], dynamic.as_str());
}

#[test]
fn demo_runs_verifies_and_shows_the_override() {
    let dir = plugins().display().to_string();
    let value = json(&["demo", "--plugin-dir", &dir, "--elements", "100003", "--passes", "1"], 0);
    assert_eq!(value["ok"], true);
    assert_eq!(value["verified"], true);
    assert_eq!(value["elements"], 100_003);
    assert_eq!(value["missing_optional"], true);
    let imports = value["imports"].as_array().unwrap();
    let fma = imports.iter().find(|i| i["name"] == "static_fma_i64").unwrap();
    assert_eq!(fma["overrides_static"], "sample_static");
    let mul = imports.iter().find(|i| i["name"] == "simple_mul_workgroup").unwrap();
    assert_eq!(mul["provider"], "sample_standalone");
    let missing = imports.iter().find(|i| i["name"] == "?simple_mul_workgroup_avx1024").unwrap();
    assert_eq!(missing["resolved"], false);
}

#[test]
fn static_specs_and_xplug_plugins_are_accepted_like_paths() {
    // `static:NAME` wherever a spec is: resolve --plugin and call.
    let value = json(&["resolve", "--plugin", "static:sample_static", "static_fma_i64"], 0);
    assert_eq!(value["symbols"][0]["provider"], "sample_static", "{value}");
    let value = json(
        &["call", "static:sample_static", "static_fma_i64", "--field", "i64:0", "--field", "i64:6"]
            .into_iter()
            .chain(["--field", "i64:7", "--field", "i64:1"])
            .collect::<Vec<_>>(),
        0,
    );
    assert_eq!(value["fields"][0]["value"], 43, "{value}");
    // One kind and code for an unknown static plugin, whichever command.
    for command in
        [&["resolve", "--plugin", "static:no_such_plugin", "f"][..], &["inspect", "static:no_such_plugin"]]
    {
        let value = json(command, 1);
        assert_eq!(value["error"]["kind"], "static_plugin_not_found", "{value}");
        assert_eq!(value["error"]["code"], "NOT_FOUND", "{value}");
        assert!(value["error"]["causes"].to_string().contains("linked: [sample_static]"), "{value}");
    }

    // `resolve` without --plugin takes its plugins from XPLUG_PLUGINS.
    let output = Command::new(XPLUG)
        .args(["--json", "resolve", "static_fma_i64"])
        .env("XPLUG_PLUGINS", "static:sample_static")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["scan_order"][0]["source"], "static:sample_static", "{value}");
}

#[test]
fn a_plugin_without_layouts_is_called_as_asked_with_a_note() {
    // Plugins linked into xplug (like C plugins) describe no layouts.
    let args = ["call", "static:sample_static", "static_fma_i64", "--field", "i64:0", "--field", "i64:6"];
    let value = json(&args, 0);
    assert_eq!(value["layout"]["checked"], false, "{value}");
    assert!(
        value["layout"]["note"].as_str().unwrap().contains("no `xplug_import_layouts` export"),
        "{value}"
    );
    let output = xplug(&args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("note: plugin `static:sample_static` does not describe its args layouts"),
        "{stderr}"
    );
}

#[test]
fn allow_lists_except_static_plugins_and_check_says_so() {
    let list = std::env::temp_dir().join(format!("xplug-static-allowed-{}.txt", std::process::id()));
    std::fs::write(&list, "# nothing approved\n").unwrap();
    let output = Command::new(XPLUG)
        .args(["--json", "check", "static:sample_static"])
        .env("XPLUG_ALLOWED_PLUGINS", &list)
        .output()
        .unwrap();
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(0), "{value}");
    assert_eq!(value["sha256"], Value::Null);
    let status = value["sha256_status"].as_str().unwrap();
    assert!(status.contains("do not apply to plugins linked into xplug"), "{status}");
    // The same list refuses a dynamic plugin.
    let output = Command::new(XPLUG)
        .args(["--json", "inspect", &library("sample_static")])
        .env("XPLUG_ALLOWED_PLUGINS", &list)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    std::fs::remove_file(&list).unwrap();
    // A pin on a static plugin is refused: there is no file to hash.
    let value = json(&["pin", "static:sample_static"], 1);
    assert!(value["error"]["causes"].to_string().contains("cannot pin"), "{value}");
}
