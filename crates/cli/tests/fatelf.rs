//! `xplug fatelf join` / `list` on the `.sos` files the example build writes.

use std::path::Path;

mod common;
use common::json_output;

/// The debug example plugins, built once per test process.
fn plugins() -> &'static Path {
    xplug_fixtures::plugins::built_for_tests()
}

#[test]
fn list_shows_the_records_and_the_one_this_host_picks() {
    let sos = plugins().join("sample_standalone.sos");
    let (code, value) = json_output(&["fatelf", "list", sos.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{value}");
    assert_eq!(value["fatelf"], true);
    let records = value["records"].as_array().unwrap();
    assert!(!records.is_empty());
    assert_eq!(records[0]["chosen"], true, "the host record is first: {value}");
    assert_eq!(value["host"]["loads"], true, "{value}");
}

#[test]
fn join_writes_a_container_the_loader_accepts() {
    let dir = tempfile::tempdir().unwrap();
    // Extract the host record of the C .sos as a plain ELF, then join it
    // after a copy marked as another machine.
    let bytes = std::fs::read(plugins().join("c_sample.sos")).unwrap();
    let records = xplug_providers::embedded_elf::fatelf::records(&bytes).unwrap();
    let host = &bytes[records[0].range()];
    let mut foreign = host.to_vec();
    foreign[18..20].copy_from_slice(&258u16.to_le_bytes()); // loongarch
    let (host_path, foreign_path, out) =
        (dir.path().join("host.so"), dir.path().join("foreign.so"), dir.path().join("joined.sos"));
    std::fs::write(&host_path, host).unwrap();
    std::fs::write(&foreign_path, &foreign).unwrap();
    let (code, value) = json_output(&[
        "fatelf",
        "join",
        out.to_str().unwrap(),
        foreign_path.to_str().unwrap(),
        host_path.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{value}");
    let records = value["records"].as_array().unwrap();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0]["machine"], 258);
    assert_eq!(records[1]["chosen"], true, "{value}");
    assert_eq!(value["host"]["loads"], true, "{value}");

    // A text file is refused with a typed error naming it.
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not an ELF").unwrap();
    let (code, value) = json_output(&["fatelf", "join", out.to_str().unwrap(), text.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{value}");
    assert_eq!(value["error"]["kind"], "fatelf");
    assert!(value["error"]["causes"][0].as_str().unwrap().contains("not an ELF file"), "{value}");
}

#[test]
fn inspect_shows_the_embedded_loader_record_and_segments() {
    let sos = plugins().join("sample_standalone.sos");
    let (code, value) = json_output(&["inspect", sos.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{value}");
    assert_eq!(value["name"], "sample_standalone");
    assert_eq!(value["loader"], "embedded ELF");
    assert!(value["record"].as_str().unwrap().starts_with("0 of "), "{value}");
    let segments = value["segments"].as_array().unwrap();
    assert!(segments.iter().any(|segment| segment.as_str().unwrap().ends_with("r-x")), "{value}");
    assert!(segments.iter().all(|segment| !segment.as_str().unwrap().ends_with("rwx")), "{value}");
}
