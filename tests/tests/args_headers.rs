//! The C headers `PluginDescriptor::c_header` writes for the example
//! plugins' args structs: committed next to each plugin, regenerated
//! without drift, and laid out by a C compiler exactly as Rust lays out the
//! structs (every size and field offset asserted).
//!
//! Run with `XPLUG_BLESS=1` to rewrite the committed headers.

use std::path::PathBuf;

use xplug_fixtures::{c_compiler, compile_object, object_command, workspace_root};

/// (plugin descriptor, committed header path relative to the workspace).
fn plugins() -> [(xplug_sdk::PluginDescriptor, &'static str); 2] {
    [
        (sample_system::PLUGIN, "plugins/sample_system/include/sample_system_args.h"),
        (sample_standalone::PLUGIN, "plugins/sample_standalone/include/sample_standalone_args.h"),
    ]
}

fn header_path(relative: &str) -> PathBuf {
    workspace_root().join(relative)
}

#[test]
fn committed_args_headers_match_the_rust_definitions() {
    for (plugin, relative) in plugins() {
        let generated = plugin.c_header();
        let path = header_path(relative);
        if std::env::var_os("XPLUG_BLESS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_else(|error| {
            panic!("{}: {error}; run with XPLUG_BLESS=1 to write it", path.display())
        });
        assert_eq!(committed, generated, "{} drifted; run with XPLUG_BLESS=1", path.display());
    }
}

#[test]
fn args_headers_compile_as_c99_with_the_rust_layout() {
    let dir = tempfile::tempdir().unwrap();
    for (plugin, relative) in plugins() {
        let path = header_path(relative);
        let checks = plugin.c_layout_asserts();
        // The checks are real: every struct has a size check and at least
        // one offset check.
        assert!(checks.matches("_size[").count() >= 1, "{checks}");
        assert!(checks.contains("offsetof("), "{checks}");
        let source = dir.path().join(format!("{}_layout.c", plugin.name()));
        std::fs::write(&source, format!("#include \"{}\"\n{checks}", path.display())).unwrap();
        compile_object(&c_compiler(), "-std=c99", &source, &source.with_extension("o"));
    }
}

#[test]
fn a_wrong_layout_fails_the_c_checks() {
    // The same checks against a header whose struct lost a field must not
    // compile: the check can fail.
    let dir = tempfile::tempdir().unwrap();
    let plugin = sample_system::PLUGIN;
    let header = plugin.c_header().replace("  size_t binding0_offset;\n", "");
    let source = dir.path().join("broken.c");
    std::fs::write(&source, format!("{header}\n{}", plugin.c_layout_asserts())).unwrap();
    // The command the intact header passes with (the test above).
    let status = object_command(&c_compiler(), "-std=c99", &source, &source.with_extension("o"))
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "a struct missing a field passed the layout checks");
}
