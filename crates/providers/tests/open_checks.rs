//! What the OS loader is given and what it is asked for: every reference
//! bound at open, only regular files, and only functions called.

mod common;

use std::path::{Path, PathBuf};

use common::configurable_source;
use xplug_providers::abi::StatusCode;
use xplug_providers::raw::RawLibrary;
use xplug_providers::{Error, LoadParamList, Loader, Plugin, SYSTEM_LIBRARY};

fn load(path: &Path) -> Result<Plugin, Error> {
    // SAFETY: the test libraries are v0 plugins (or refused before any of
    // their code is called, which is what is tested).
    unsafe {
        SYSTEM_LIBRARY
            .open(&std::path::Path::new(&path).to_string_lossy())
            .and_then(|code| code.load(&LoadParamList::new()))
    }
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
    let error = unsafe {
        SYSTEM_LIBRARY.open_image("undefined_ref", &bytes).and_then(|code| code.load(&LoadParamList::new()))
    }
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

/// A C plugin declaring import layouts through `xplug_import_layouts`:
/// `add`'s struct of three `int32_t`s, then entries the reader must bound.
const LAYOUTS: &str = r#"
static const xplug_field_layout_t add_fields[3] = {
  {"a", "i32", 0, 4}, {"b", "i32", 4, 4}, {"out", "i32", 8, 4},
};
/* A field past the end of its 8-byte struct: the field list is dropped. */
static const xplug_field_layout_t bad_fields[1] = {{"x", "u64", 4, 8}};
static const xplug_import_layout_t layouts[4] = {
  {"add", "binop_args_t", 12, 4, 3, add_fields},
  {"bad", "bad_t", 8, 8, 1, bad_fields},
  {"huge", "huge_t", 16, 8, 100000, add_fields},
  {NULL, NULL, 4, 4, 0, NULL},
};
IREE_HAL_EXECUTABLE_PLUGIN_EXPORT const xplug_import_layout_t* xplug_import_layouts(size_t* count) {
#ifdef LAYOUT_COUNT
  *count = LAYOUT_COUNT;
  return LAYOUT_COUNT > 4 ? NULL : layouts;
#else
  *count = 4;
  return layouts;
#endif
}
"#;

#[test]
fn import_layouts_are_copied_out_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let path = configurable_with(dir.path(), "layouts", LAYOUTS);
    // SAFETY: as in `load`.
    let library = unsafe { RawLibrary::open(&path) }.unwrap();
    let layouts = library.import_layouts().expect("the export is read");
    // The entry without a symbol is skipped.
    assert_eq!(layouts.len(), 3, "{layouts:?}");
    let add = &layouts[0];
    assert_eq!(
        (add.symbol.as_str(), add.type_name.as_deref(), add.size, add.align),
        ("add", Some("binop_args_t"), 12, 4)
    );
    let fields = add.fields.as_ref().expect("three fields");
    let shown: Vec<(&str, &str, usize, usize)> =
        fields.iter().map(|f| (f.name.as_str(), f.type_name.as_str(), f.offset, f.size)).collect();
    assert_eq!(shown, [("a", "i32", 0, 4), ("b", "i32", 4, 4), ("out", "i32", 8, 4)]);
    // A field outside its struct, or more fields than any struct has:
    // the size is kept, the fields are not.
    assert_eq!((layouts[1].size, layouts[1].fields.is_none()), (8, true), "{layouts:?}");
    assert_eq!((layouts[2].size, layouts[2].fields.is_none()), (16, true), "{layouts:?}");
    // The loaded plugin keeps the same copy.
    let plugin = load(&path).unwrap();
    assert_eq!(plugin.import_layouts(), Some(&layouts[..]));
    assert_eq!(plugin.unload().live_allocations, 0);
    // Without the export there is no list.
    let plain = configurable_with(dir.path(), "plain", "");
    // SAFETY: as in `load`.
    assert_eq!(unsafe { RawLibrary::open(&plain) }.unwrap().import_layouts(), None);
}

#[test]
fn an_absurd_import_layout_count_is_no_list() {
    let dir = tempfile::tempdir().unwrap();
    let code = format!("#define LAYOUT_COUNT ((size_t)1 << 40)\n{LAYOUTS}");
    let path = configurable_with(dir.path(), "absurd_layouts", &code);
    // SAFETY: as in `load`.
    let library = unsafe { RawLibrary::open(&path) }.unwrap();
    assert_eq!(library.import_layouts(), None);
}
