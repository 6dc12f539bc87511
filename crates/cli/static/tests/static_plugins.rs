//! `xplug` with a static plugin linked into it (`xplug-static`, see
//! src/main.rs): `static:` specs, `resolve --static` and the demo's
//! override of a static plugin by a dynamic one.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

#[path = "../../tests/common/mod.rs"]
mod common;
use common::{XPLUG, json, library};

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
fn a_linked_in_plugin_describes_its_layouts_as_its_shared_library_does() {
    // `#[plugin]` gives the static registration the import layouts its
    // `.so` exports: a short args block is refused before the call, with
    // the same message for both.
    let short = ["call", "static_fma_i64", "--field", "i64:0", "--field", "i64:6"];
    let dynamic = library("sample_static");
    let mut messages = Vec::new();
    for spec in ["static:sample_static", dynamic.as_str()] {
        let args: Vec<&str> = [short[0], spec].into_iter().chain(short[1..].iter().copied()).collect();
        let value = json(&args, 1);
        assert_eq!(value["error"]["kind"], "args_size", "{value}");
        let message = value["error"]["message"].as_str().unwrap().to_owned();
        assert!(message.contains("declares `FmaArgs` as 32 bytes"), "{message}");
        messages.push(message.replace(spec, "PLUGIN"));
    }
    assert_eq!(messages[0], messages[1], "the linked-in plugin and its .so say the same");
    // Given in full, the call is checked against the layout and runs.
    let value = json(
        &["call", "static:sample_static", "static_fma_i64", "--field", "i64:0", "--field", "i64:6"]
            .into_iter()
            .chain(["--field", "i64:7", "--field", "i64:1"])
            .collect::<Vec<_>>(),
        0,
    );
    assert_eq!(value["layout"]["checked"], true, "{value}");
    assert_eq!(value["fields"][0]["value"], 43, "{value}");
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
