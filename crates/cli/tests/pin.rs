//! `xplug pin`, the hash `inspect` and `check` show, and the
//! `XPLUG_ALLOWED_PLUGINS` allow-list as the CLI's commands obey it.

use std::process::{Command, Output};

use xplug_providers::{AllowList, Sha256Digest};

mod common;
use common::{XPLUG, json, library};

fn sha256(path: &str) -> Sha256Digest {
    Sha256Digest::of(&std::fs::read(path).unwrap())
}

/// `xplug --json ARGS` with `XPLUG_ALLOWED_PLUGINS=list`.
fn with_allow_list(list: &std::path::Path, args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let output: Output = Command::new(XPLUG)
        .arg("--json")
        .args(args)
        .env("NO_COLOR", "1")
        .env("XPLUG_ALLOWED_PLUGINS", list)
        .output()
        .unwrap();
    let value = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!("{error}: {}", String::from_utf8_lossy(&output.stdout));
    });
    (output.status.code(), value)
}

#[test]
fn pin_prints_specs_with_the_hash_of_their_file_and_inspect_checks_it() {
    let plugin = library("c_sample");
    let digest = sha256(&plugin);
    let spec = format!("{plugin}?k=v");
    let value = json(&["pin", &spec], 0);
    let pinned = value["plugins"][0]["spec"].as_str().unwrap().to_owned();
    assert_eq!(pinned, format!("{plugin}?k=v&sha256={digest}"));
    assert_eq!(value["plugins"][0]["sha256"], digest.to_string());

    // Human output: one spec a line, ready for --plugin; or sha256sum lines.
    let output = common::xplug(&["pin", &plugin]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), format!("{plugin}?sha256={digest}\n"));
    let output = common::xplug(&["pin", "--allow-list", &plugin]);
    let list = AllowList::parse(&String::from_utf8_lossy(&output.stdout), "stdout").unwrap();
    assert!(list.allows(&digest));

    let pinned = format!("{plugin}?sha256={digest}");
    let value = json(&["inspect", &pinned], 0);
    assert_eq!(value["sha256"], digest.to_string());
    assert!(value["sha256_status"].as_str().unwrap().starts_with("pinned: checked"), "{value}");
    assert_eq!(value["memory file"], "sealed against write, grow, shrink and unseal", "{value}");
    let value = json(&["check", &pinned], 0);
    assert_eq!(value["sha256"], digest.to_string());
    assert!(value["sha256_status"].as_str().unwrap().starts_with("pinned: the file matches"), "{value}");
    // Unpinned, the hash is shown as the file's, and nothing is sealed.
    let value = json(&["inspect", &plugin], 0);
    assert_eq!(value["sha256"], digest.to_string());
    assert!(value["sha256_status"].as_str().unwrap().starts_with("not pinned"), "{value}");
    assert!(value.get("memory file").is_none(), "{value}");

    // A wrong pin: refused with both hashes.
    let wrong = Sha256Digest::of(b"another build");
    let value = json(&["inspect", &format!("{plugin}?sha256={wrong}")], 1);
    let causes = value["error"]["causes"].to_string();
    assert!(causes.contains(&wrong.to_string()) && causes.contains(&digest.to_string()), "{value}");
    assert_eq!(value["error"]["code"], "PERMISSION_DENIED", "{value}");
    assert_eq!(value["error"]["kind"], "hash_mismatch", "{value}");
}

#[test]
fn the_allow_list_in_the_environment_refuses_unlisted_plugins() {
    let dir = tempfile::tempdir().unwrap();
    let listed = library("c_sample");
    let unlisted = library("sample_system");
    let list = dir.path().join("allowed.txt");
    std::fs::write(&list, format!("{}  {listed}\n", sha256(&listed))).unwrap();

    let (code, value) = with_allow_list(&list, &["inspect", &listed]);
    assert_eq!(code, Some(0), "{value}");
    assert!(value["sha256_status"].as_str().unwrap().starts_with("on the allow-list"), "{value}");
    for command in [&["inspect", unlisted.as_str()][..], &["resolve", "--plugin", &unlisted, "x"]] {
        let (code, value) = with_allow_list(&list, command);
        assert_eq!(code, Some(1), "{value}");
        let causes = value["error"]["causes"].to_string();
        assert!(causes.contains("is not on the allow-list"), "{command:?}: {value}");
        assert_eq!(value["error"]["kind"], "not_allowed", "{value}");
        assert!(causes.contains(&list.display().to_string()), "{value}");
    }

    // `check` says where the file stands against the list.
    let (_, value) = with_allow_list(&list, &["check", &listed]);
    assert!(value["sha256_status"].as_str().unwrap().starts_with("on the allow-list"), "{value}");
    // An unlisted plugin: nothing to check, the load's refusal is the report.
    let (code, value) = with_allow_list(&list, &["check", &unlisted]);
    assert_eq!(code, Some(1), "{value}");
    assert_eq!(value["error"]["kind"], "not_allowed", "{value}");

    std::fs::write(&list, format!("{}  {listed}\n{}\n", sha256(&listed), sha256(&unlisted))).unwrap();
    let (code, value) = with_allow_list(&list, &["inspect", &listed]);
    assert_eq!(code, Some(1), "a malformed list refuses everything: {value}");
    let causes = value["error"]["causes"].to_string();
    assert!(causes.contains(&format!("{} line 2 is malformed", list.display())), "{value}");
    assert_eq!(value["error"]["kind"], "allow_list_invalid", "{value}");
}

#[test]
fn an_allow_list_variable_set_but_empty_refuses_every_load() {
    let listed = library("c_sample");
    for empty in ["", " "] {
        let output: Output = Command::new(XPLUG)
            .args(["--json", "inspect", &listed])
            .env("NO_COLOR", "1")
            .env("XPLUG_ALLOWED_PLUGINS", empty)
            .output()
            .unwrap();
        let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(output.status.code(), Some(1), "{empty:?}: {value}");
        assert_eq!(value["error"]["kind"], "allow_list_unnamed", "{value}");
        assert!(value["error"]["causes"].to_string().contains("is set but empty"), "{value}");
    }
}

#[test]
fn a_reserved_key_in_another_spelling_is_refused_never_passed_to_the_plugin() {
    let plugin = library("c_sample");
    let other = Sha256Digest::of(b"another build");
    // `c_sample` declares no parameters and ignores unknown ones: a pin
    // passed on as a parameter would load it unchecked.
    for key in ["SHA256", "sha256%20", "Sha-256"] {
        let value = json(&["inspect", &format!("{plugin}?{key}={other}")], 1);
        assert!(
            value["error"]["causes"].to_string().contains("reads as the reserved key `sha256`"),
            "{value}"
        );
        assert_eq!(value["error"]["code"], "INVALID_ARGUMENT", "{value}");
    }
    // Percent-encoded exactly, it is the key: the pin is checked.
    let value = json(&["inspect", &format!("{plugin}?sha%32%35%36={other}")], 1);
    assert_eq!(value["error"]["kind"], "hash_mismatch", "{value}");
}

#[test]
fn pinning_a_file_over_the_size_limit_is_refused_before_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    let huge = dir.path().join("libhuge.so");
    std::fs::File::create(&huge).unwrap().set_len(3 << 30).unwrap();
    let huge = huge.display().to_string();
    for args in [&["pin", huge.as_str()][..], &["inspect", &format!("{huge}?sha256={}", "ab".repeat(32))]] {
        let value = json(args, 1);
        assert_eq!(value["error"]["kind"], "plugin_file_too_large", "{args:?}: {value}");
    }
}
