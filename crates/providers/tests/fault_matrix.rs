//! One purpose-built bad plugin per load check
//! (`docs/src/reference/loading.md#load-checks`): each must be refused with the right typed
//! error, status code and message.

mod common;

use std::path::Path;

use common::build_configurable;
use xplug_providers::abi::{Features, Sanitizer, StatusCode, Version};
use xplug_providers::compatibility::Incompatibility;
use xplug_providers::{Error, ErrorChain, LoadParamList, Loader, Plugin, SYSTEM_LIBRARY};

fn load(path: &Path) -> Result<Plugin, Error> {
    // SAFETY: the test plugins are built from `configurable_plugin.c`, which
    // follows the v0 ABI apart from the deliberate header/table faults the
    // loader checks before calling anything but `query`.
    unsafe {
        SYSTEM_LIBRARY
            .open(&std::path::Path::new(&path).to_string_lossy())
            .and_then(|code| code.load(&LoadParamList::new()))
    }
}

/// The load check a refused plugin failed.
fn reason(error: &Error) -> &Incompatibility {
    match error {
        Error::Incompatible { reason, .. } => reason,
        other => panic!("expected Incompatible, got {other:?}"),
    }
}

/// Builds the plugin with `flags`, loads it and returns the error, checking
/// its code and that its message and causes contain every one of `parts`.
fn refused(name: &str, flags: &[&str], code: StatusCode, parts: &[&str]) -> (Error, std::path::PathBuf) {
    let (_dir, path) = build_configurable(name, flags);
    let error = load(&path).expect_err("the faulty plugin must be refused");
    let message = ErrorChain(&error).to_string();
    assert_eq!(error.code(), code, "wrong code for `{message}`");
    for part in parts {
        assert!(message.contains(part), "`{message}` lacks `{part}`");
    }
    (error, path)
}

#[test]
fn query_returning_null_needs_newer_runtime() {
    let (error, path) =
        refused("q_null", &["-DQUERY_RETURNS_NULL"], StatusCode::FAILED_PRECONDITION, &["0x00000001"]);
    assert!(matches!(error, Error::UnsupportedVersion { .. }));
    assert!(error.to_string().contains(&path.display().to_string()));
}

#[test]
fn null_header_is_refused() {
    let (error, path) =
        refused("null_header", &["-DNULL_HEADER"], StatusCode::INVALID_ARGUMENT, &["NULL header"]);
    assert_eq!(reason(&error), &Incompatibility::NullHeader);
    assert!(error.to_string().contains(&path.display().to_string()));
}

#[test]
fn header_version_zero_is_refused() {
    let (error, path) = refused(
        "version0",
        &["-DHEADER_VERSION=0", "-DPLUGIN_NAME=\"v0plugin\""],
        StatusCode::INVALID_ARGUMENT,
        &["`v0plugin`", "0x00000000", "expected 0x00000001"],
    );
    assert_eq!(
        reason(&error),
        &Incompatibility::InvalidVersion { found: Version(0), expected: Version::LATEST }
    );
    assert!(error.to_string().contains(&path.display().to_string()), "{error}");
}

#[test]
fn header_version_two_is_refused() {
    let (error, _) = refused(
        "version2",
        &["-DHEADER_VERSION=2"],
        StatusCode::FAILED_PRECONDITION,
        &["`configurable`", "0x00000002", "newer than this runtime's 0x00000001"],
    );
    assert_eq!(
        reason(&error),
        &Incompatibility::NewerVersion { found: Version(2), supported: Version::LATEST }
    );
}

#[test]
fn full_status_is_refused() {
    let (error, _) = refused(
        "full_status",
        &["-DFEATURES=3"],
        StatusCode::FAILED_PRECONDITION,
        &["FULL_STATUS", "full status"],
    );
    assert_eq!(reason(&error), &Incompatibility::FullStatus);
}

#[test]
fn address_sanitizer_is_unavailable() {
    let (error, _) = refused(
        "asan",
        &["-DSANITIZER=1"],
        StatusCode::UNAVAILABLE,
        &["address sanitizer", "-fsanitize=address"],
    );
    assert_eq!(
        reason(&error),
        &Incompatibility::Sanitizer { found: Sanitizer::ADDRESS, host: Sanitizer::NONE }
    );
}

#[test]
fn thread_sanitizer_is_unavailable() {
    refused("tsan", &["-DSANITIZER=3"], StatusCode::UNAVAILABLE, &["-fsanitize=thread"]);
}

#[test]
fn unknown_sanitizer_is_refused() {
    let (error, _) =
        refused("san99", &["-DSANITIZER=99"], StatusCode::UNAVAILABLE, &["sanitizer value 99 is unknown"]);
    assert_eq!(reason(&error), &Incompatibility::Sanitizer { found: Sanitizer(99), host: Sanitizer::NONE });
}

#[test]
fn unknown_feature_bit_is_refused() {
    let (error, _) = refused(
        "feature_bit",
        &["-DFEATURES=0x41"],
        StatusCode::FAILED_PRECONDITION,
        &["0x40", "does not understand"],
    );
    assert_eq!(
        reason(&error),
        &Incompatibility::UnknownFeatures { unknown: Features(0x40), known: Features::KNOWN }
    );
}

#[test]
fn null_load_is_refused() {
    let (error, _) = refused("null_load", &["-DNULL_LOAD"], StatusCode::INVALID_ARGUMENT, &["NULL `load`"]);
    assert_eq!(reason(&error), &Incompatibility::MissingFunction { function: "load" });
}

#[test]
fn null_resolve_is_refused() {
    let (error, _) =
        refused("null_resolve", &["-DNULL_RESOLVE"], StatusCode::INVALID_ARGUMENT, &["NULL `resolve`"]);
    assert_eq!(reason(&error), &Incompatibility::MissingFunction { function: "resolve" });
}

#[test]
fn failing_load_reports_its_code() {
    let (error, _) = refused(
        "load_fails",
        &["-DLOAD_FAILS=7", "-DPLUGIN_NAME=\"refuser\""],
        StatusCode::PERMISSION_DENIED,
        &["`refuser`", "failed to load", "PERMISSION_DENIED"],
    );
    assert!(matches!(error, Error::LoadFailed { .. }));
}

#[test]
fn failing_load_with_an_unknown_code_is_still_typed() {
    let (error, _) = refused("load_fails_29", &["-DLOAD_FAILS=29"], StatusCode(29), &["CODE_29"]);
    assert!(matches!(error, Error::LoadFailed { .. }));
}

/// The plugin's `unload` aborts the process when given NULL; its `load`
/// fails. Reaching the end of this test proves `unload` was not called.
#[test]
fn unload_is_never_called_after_a_failed_load() {
    let (error, _) = refused(
        "abort_on_null",
        &["-DLOAD_FAILS=13", "-DUNLOAD_ABORTS_ON_NULL"],
        StatusCode::INTERNAL,
        &["failed to load"],
    );
    assert!(matches!(error, Error::LoadFailed { .. }));
}

#[test]
fn missing_query_export_has_the_build_hint() {
    let (error, path) = refused(
        "no_export",
        &["-DNO_EXPORT"],
        StatusCode::NOT_FOUND,
        &["iree_hal_executable_plugin_query", "crate-type = [\"cdylib\"", "cargo build --release"],
    );
    assert!(matches!(error, Error::MissingExport { .. }));
    assert!(error.to_string().contains(&path.display().to_string()));
}

#[test]
fn missing_file_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("libnothing_here.so");
    let error = load(&path).expect_err("no file, no plugin");
    assert!(matches!(error, Error::FileNotFound { .. }), "{error:?}");
    assert_eq!(error.code(), StatusCode::NOT_FOUND);
    assert!(error.to_string().contains(&path.display().to_string()));
}

#[test]
fn text_file_is_not_a_shared_object() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("libtext.so");
    std::fs::write(&path, "this is not a library\n").unwrap();
    let error = load(&path).expect_err("a text file is no plugin");
    assert_eq!(error.code(), StatusCode::INVALID_ARGUMENT, "{error}");
    let message = error.to_string();
    assert!(
        message.contains(&path.display().to_string()) && message.contains("not a shared library"),
        "{message}"
    );
}

#[test]
fn directory_is_not_a_shared_object() {
    let dir = tempfile::tempdir().unwrap();
    let error = load(dir.path()).expect_err("a directory is no plugin");
    assert!(matches!(error, Error::NotSharedObject { .. }), "{error:?}");
}

#[test]
fn object_file_is_not_a_shared_object() {
    let dir = tempfile::tempdir().unwrap();
    let object = dir.path().join("plugin.o");
    let include = xplug_fixtures::include_dir();
    let source = common::configurable_source();
    xplug_fixtures::run_compiler(
        &xplug_fixtures::c_compiler(),
        &[
            "-c".as_ref(),
            "-fPIC".as_ref(),
            "-I".as_ref(),
            include.as_os_str(),
            source.as_os_str(),
            "-o".as_ref(),
            object.as_os_str(),
        ],
    );
    let error = load(&object).expect_err("a relocatable object is no plugin");
    assert_eq!(error.code(), StatusCode::INVALID_ARGUMENT, "{error}");
    assert!(error.to_string().contains("relocatable object"), "{error}");
}

/// A 64-byte ELF header claiming another machine is caught before `dlopen`.
#[test]
#[cfg(target_os = "linux")]
fn foreign_architecture_is_refused() {
    let foreign_machine: u16 = if cfg!(target_arch = "aarch64") { 62 } else { 183 };
    let mut image = vec![0u8; 64];
    image[..4].copy_from_slice(b"\x7fELF");
    image[4] = if cfg!(target_pointer_width = "64") { 2 } else { 1 };
    image[5] = 1; // little-endian
    image[6] = 1; // EV_CURRENT
    image[16..18].copy_from_slice(&3u16.to_le_bytes()); // ET_DYN
    image[18..20].copy_from_slice(&foreign_machine.to_le_bytes());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("libforeign.so");
    std::fs::write(&path, &image).unwrap();

    let error = load(&path).expect_err("a foreign ELF is no plugin here");
    assert!(matches!(error, Error::WrongArchitecture { .. }), "{error:?}");
    assert_eq!(error.code(), StatusCode::FAILED_PRECONDITION);
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains(if foreign_machine == 62 { "x86_64" } else { "aarch64" }), "{message}");

    // The same image from memory.
    // SAFETY: the image is refused before anything of it is run.
    let error = unsafe {
        SYSTEM_LIBRARY.open_image("foreign", &image).and_then(|code| code.load(&LoadParamList::new()))
    }
    .expect_err("a foreign ELF is no plugin here");
    assert!(matches!(error, Error::WrongArchitecture { .. }), "{error:?}");
    assert!(error.to_string().contains("memory image `foreign`"), "{error}");
}

#[test]
fn garbage_from_memory_is_not_a_shared_object() {
    // SAFETY: the bytes are refused before anything of them is run.
    let error = unsafe {
        SYSTEM_LIBRARY.open_image("junk", b"junk bytes").and_then(|code| code.load(&LoadParamList::new()))
    }
    .expect_err("junk is no plugin");
    assert_eq!(error.code(), StatusCode::INVALID_ARGUMENT, "{error}");
    assert!(error.to_string().contains("memory image `junk`"), "{error}");
}

/// A library whose own dependency is gone: the OS loader refuses it, and the
/// error carries the loader's explanation.
#[test]
#[cfg(target_os = "linux")]
fn missing_dependency_is_a_library_open_error() {
    let dir = tempfile::tempdir().unwrap();
    let dependency = xplug_fixtures::build_c_plugin_from_code(
        "int xplug_test_helper(void) { return 7; }\n",
        dir.path(),
        "xplug_gone_dependency",
        &[],
    );
    let library_dir = dir.path().to_str().unwrap().to_owned();
    let path = xplug_fixtures::build_c_plugin(
        &common::configurable_source(),
        dir.path(),
        "needs_dependency",
        &["-L", &library_dir, "-Wl,--no-as-needed", "-lxplug_gone_dependency"],
    );
    std::fs::remove_file(&dependency).unwrap();
    let error = load(&path).expect_err("the dependency is missing");
    assert!(matches!(error, Error::LibraryOpen { .. }), "{error:?}");
    assert_eq!(error.code(), StatusCode::UNAVAILABLE);
    assert!(error.to_string().contains(&path.display().to_string()), "{error}");
    // The loader's own words are the cause, not part of the message.
    let cause = std::error::Error::source(&error).expect("the loader's message is the source").to_string();
    assert!(cause.contains("libxplug_gone_dependency.so"), "{cause}");
    assert!(!error.to_string().contains("libxplug_gone_dependency.so"), "{error}");
}
