//! What the OS loader is given and what it is asked for: every reference
//! bound at open, only regular files, and only functions called.

mod common;

use std::path::{Path, PathBuf};

use common::configurable_source;
use xplug_providers::abi::StatusCode;
use xplug_providers::raw::RawLibrary;
use xplug_providers::{Error, LoadParamList, Plugin};

fn load(path: &Path) -> Result<Plugin, Error> {
    // SAFETY: the test libraries are v0 plugins (or refused before any of
    // their code is called, which is what is tested).
    unsafe { Plugin::load_system_library(path, &LoadParamList::new()) }
}

/// The configurable plugin plus `extra` C code, built into `dir`.
fn configurable_with(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let code = format!("#include \"{}\"\n{extra}\n", configurable_source().display());
    xplug_fixtures::build_c_plugin_from_code(&code, dir, name, &[])
}

#[test]
fn a_reference_nothing_defines_is_refused_at_load_naming_the_symbol() {
    let dir = tempfile::tempdir().unwrap();
    let path = configurable_with(
        dir.path(),
        "undefined_ref",
        "extern int xplug_test_defined_nowhere(int);\n\
         IREE_HAL_EXECUTABLE_PLUGIN_EXPORT int calls_nowhere(int x) { return xplug_test_defined_nowhere(x); }",
    );
    let error = load(&path).unwrap_err();
    assert!(
        matches!(&error, Error::UndefinedSymbol { symbol, path: shown, .. }
            if symbol == "xplug_test_defined_nowhere" && shown == &path),
        "{error:?}"
    );
    assert_eq!(error.code(), StatusCode::NOT_FOUND);
    assert!(error.to_string().contains("`xplug_test_defined_nowhere`"), "{error}");
    // The loader's own words are the source, not repeated in the message.
    let source = std::error::Error::source(&error).expect("the loader's message").to_string();
    assert!(source.contains("undefined symbol"), "{source}");

    // The same bytes from memory are refused the same way.
    let bytes = std::fs::read(&path).unwrap();
    // SAFETY: as in `load`.
    let error = unsafe { Plugin::load_system_library_image("undefined_ref", &bytes, &LoadParamList::new()) }
        .unwrap_err();
    assert!(
        matches!(&error, Error::UndefinedSymbol { symbol, .. } if symbol == "xplug_test_defined_nowhere"),
        "{error:?}"
    );
}

#[test]
#[cfg(unix)]
fn a_fifo_is_refused_before_the_loader_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("plugin.so");
    let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; `mkfifo` has no other
    // preconditions.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0, "mkfifo");
    // Before the fix the loader blocked here forever, waiting for a writer.
    // SAFETY: refused before anything is opened.
    let error = unsafe { RawLibrary::open(&fifo) }.unwrap_err();
    assert!(
        matches!(&error, Error::NotSharedObject { path, reason } if path == &fifo && reason.contains("FIFO")),
        "{error:?}"
    );
    assert_eq!(error.code(), StatusCode::INVALID_ARGUMENT);
}

#[test]
#[cfg(unix)]
fn a_device_and_a_directory_are_refused() {
    let error = load(Path::new("/dev/null")).unwrap_err();
    assert!(
        matches!(&error, Error::NotSharedObject { reason, .. } if reason.contains("character device")),
        "{error:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let error = load(dir.path()).unwrap_err();
    assert!(
        matches!(&error, Error::NotSharedObject { reason, .. } if reason.contains("directory")),
        "{error:?}"
    );
}

#[test]
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn an_exports_list_that_is_a_variable_is_never_called() {
    let dir = tempfile::tempdir().unwrap();
    // Before the check, the host jumped into these bytes and crashed.
    let path = configurable_with(
        dir.path(),
        "data_exports",
        "IREE_HAL_EXECUTABLE_PLUGIN_EXPORT const unsigned char xplug_plugin_exports[16] = {0xff};",
    );
    // SAFETY: as in `load`.
    let library = unsafe { RawLibrary::open(&path) }.unwrap();
    assert_eq!(library.exports(), None);
    assert!(!library.is_xplug_sdk());
    let plugin = load(&path).expect("the plugin itself is fine");
    assert_eq!(plugin.exports(), None);
    assert_eq!(plugin.unload().live_allocations, 0);
}

#[test]
#[cfg(target_os = "linux")]
fn an_exports_function_outside_executable_memory_is_never_called() {
    let dir = tempfile::tempdir().unwrap();
    // A function by its symbol type, placed in a writable, non-executable
    // section: only the mapping check catches it.
    let path = configurable_with(
        dir.path(),
        "data_section_exports",
        "IREE_HAL_EXECUTABLE_PLUGIN_EXPORT __attribute__((section(\".data\"))) \
         const char* const* xplug_plugin_exports(size_t* count) { *count = 0; return 0; }",
    );
    // SAFETY: as in `load`.
    let library = unsafe { RawLibrary::open(&path) }.unwrap();
    assert_eq!(library.exports(), None);
    assert!(!library.is_xplug_sdk());
}

#[test]
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn a_query_export_that_is_a_variable_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = xplug_fixtures::build_c_plugin_from_code(
        "#include \"xplug/executable_plugin.h\"\n\
         IREE_HAL_EXECUTABLE_PLUGIN_EXPORT const char iree_hal_executable_plugin_query[64] = {0};\n",
        dir.path(),
        "data_query",
        &[],
    );
    let error = load(&path).unwrap_err();
    assert!(
        matches!(&error, Error::NotAFunction { symbol, found, .. }
            if symbol == "iree_hal_executable_plugin_query" && found == "a variable"),
        "{error:?}"
    );
}

#[test]
fn a_well_formed_c_plugin_still_loads_bound_now() {
    let dir = tempfile::tempdir().unwrap();
    let path = configurable_with(dir.path(), "plain", "");
    let plugin = load(&path).unwrap();
    assert_eq!(plugin.name(), "configurable");
    assert_eq!(plugin.unload().live_allocations, 0);
}
