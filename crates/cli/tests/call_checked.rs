//! `xplug call` and `xplug bench --call` on real plugins: the call runs in
//! a child process (a crash is a report, not a dead tool), and the args
//! block is checked against the layout the plugin declares through
//! `xplug_import_layouts`.

mod common;
use common::{json, library, xplug};

/// `xplug --json call LIBRARY IMPORT --field F...`.
fn call_args<'a>(library: &'a str, import: &'a str, fields: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["call", library, import];
    for field in fields {
        args.extend(["--field", field]);
    }
    args
}

/// `dot`'s args (`result: f32, x: Buffer<f32>, y: Buffer<f32>, n: usize`)
/// with `x` and `y` pointing at address 8: reading them faults.
const DOT_WILD_POINTERS: [&str; 4] = ["f32:0", "usize:8", "usize:8", "usize:4"];

#[test]
fn a_segfaulting_call_is_a_fault_report_in_text_and_json() {
    let standalone = library("sample_standalone");
    let args = call_args(&standalone, "dot", &DOT_WILD_POINTERS);

    let value = json(&args, 1);
    assert_eq!(value["ok"], false, "{value}");
    assert_eq!(value["error"]["kind"], "plugin_crashed", "{value}");
    assert_eq!(value["error"]["fault"]["signal"], "SIGSEGV", "{value}");
    assert_eq!(value["error"]["fault"]["stage"], "call", "{value}");

    let output = xplug(&args);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("crashed with SIGSEGV during call"), "{stderr}");
    assert_eq!(stderr.matches("crashed with SIGSEGV").count(), 1, "{stderr}");
}

#[test]
fn a_block_of_the_wrong_size_is_refused_naming_the_fields() {
    let standalone = library("sample_standalone");
    for fields in [&[][..], &["f32:0"][..], &["f32:0", "ptr:f32=1,2", "ptr:f32=3,4"][..]] {
        let value = json(&call_args(&standalone, "dot", fields), 1);
        let error = &value["error"];
        assert_eq!(error["kind"], "args_size", "{fields:?}: {value}");
        assert_eq!(error["code"], "INVALID_ARGUMENT", "{fields:?}: {value}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains("`dot`"), "{message}");
        assert!(message.contains("`DotArgs` as 32 bytes"), "{message}");
        assert!(message.contains(&format!("({} field(s) given)", fields.len())), "{message}");
        for field in
            ["result: f32 @0", "x: Buffer<f32> @8 (--field ptr:f32[N])", "n: usize @24 (--field usize:VALUE)"]
        {
            assert!(message.contains(field), "{field} in {message}");
        }
    }

    // The right fields pass the check and compute: 1*3 + 2*4.
    let value = json(&call_args(&standalone, "dot", &["f32:0", "ptr:f32=1,2", "ptr:f32=3,4", "usize:2"]), 0);
    assert_eq!(value["fields"][0]["value"], 11.0, "{value}");
    assert_eq!(value["fields"][0]["name"], "result", "{value}");
    assert_eq!(value["layout"]["checked"], true, "{value}");
    assert_eq!(value["layout"]["type"], "DotArgs", "{value}");
    assert_eq!(value["layout"]["size"], 32, "{value}");
    assert_eq!(value["warnings"], serde_json::json!([]), "{value}");
}

#[test]
fn a_size_beyond_the_buffers_is_warned_about() {
    let standalone = library("sample_standalone");
    // Buffers of 2 floats (xplug rounds each allocation up to 16 bytes, so
    // reading 3 stays inside it); `n` says 3.
    let args = call_args(&standalone, "dot", &["f32:0", "ptr:f32=1,2", "ptr:f32=3,4", "usize:3"]);
    let value = json(&args, 0);
    let warnings = value["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{value}");
    let warning = warnings[0].as_str().unwrap();
    assert!(warning.contains("field 3 `n` is 3"), "{warning}");
    assert!(warning.contains("has 2 element(s)"), "{warning}");
    let output = xplug(&args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("warning: field 3 `n` is 3"), "{stderr}");
}

#[test]
fn bench_calls_with_fields_or_says_it_used_zeroed_args() {
    let standalone = library("sample_standalone");
    let value = json(&["bench", &standalone, "dot", "--runs", "1", "--call"], 0);
    assert_eq!(value["call_args"]["zeroed_bytes"], 256, "{value}");
    let notes = value["notes"].to_string();
    assert!(notes.contains("256 zero bytes as its args (no --field)"), "{notes}");
    assert_eq!(value["debug_build"], cfg!(debug_assertions), "{value}");

    let value = json(
        &[
            "bench",
            &standalone,
            "dot",
            "--runs",
            "1",
            "--field",
            "f32:0",
            "--field",
            "ptr:f32=1,2",
            "--field",
            "ptr:f32=3,4",
            "--field",
            "usize:2",
        ],
        0,
    );
    assert_eq!(value["call_args"]["fields"], 4, "{value}");
    assert_eq!(value["calls"][0]["result"], 0, "{value}");
    assert_eq!(value["notes"], serde_json::json!([]), "{value}");
    // The same check as `call`: a short block is refused.
    let value = json(&["bench", &standalone, "dot", "--runs", "1", "--field", "f32:0"], 1);
    assert_eq!(value["error"]["kind"], "args_size", "{value}");

    if cfg!(debug_assertions) {
        let output = xplug(&["bench", &standalone, "dot", "--runs", "1"]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("warning: this xplug is a debug build"), "{stderr}");
    }
}
