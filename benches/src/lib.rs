//! Fixtures for xplug's benchmarks (`benches/xplug.rs`, run by
//! `cargo xtask bench`): a generated SDK plugin with [`EXPORTS`] imports, the
//! same exports as a C plugin that resolves IREE-sample style (one
//! `strcmp` per export per name), and two in-process reference resolvers.

use std::ffi::{CString, c_int, c_void};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use xplug_sdk::ImportParams;

/// Number of exports of both generated plugins.
pub const EXPORTS: usize = 4096;

/// Params of every generated import: it writes its own index.
#[derive(Debug, Default, ImportParams)]
#[repr(C)]
pub struct BenchParams {
    /// Output.
    pub value: i32,
}

include!(concat!(env!("OUT_DIR"), "/sdk_plugin.rs"));

/// The generated SDK plugin.
pub use sdk_plugin::PLUGIN as SDK_PLUGIN;

/// The name of export `i`.
#[must_use]
pub fn export_name(i: usize) -> String {
    format!("import_{i:04}")
}

/// `count` names spread evenly over the sorted exports, sorted.
#[must_use]
pub fn request_names(count: usize) -> Vec<CString> {
    let step = (EXPORTS / count.max(1)).max(1);
    (0..count).map(|k| CString::new(export_name((k * step) % EXPORTS)).expect("no NUL")).collect()
}

/// Writes a C plugin with the same exports as [`SDK_PLUGIN`] that resolves
/// the way IREE's samples do, and compiles it with `cc -O2` into `dir`.
#[must_use]
pub fn build_strcmp_c_plugin(dir: &Path) -> PathBuf {
    let mut code = String::from(
        "#include <string.h>\n#include \"xplug/executable_plugin.h\"\n\
         typedef struct { int value; } params_t;\n",
    );
    for i in 0..EXPORTS {
        let _ = writeln!(
            code,
            "static int f{i}(void* p, void* c, void* r) {{ (void)c; (void)r; ((params_t*)p)->value = {i}; return 0; }}"
        );
    }
    code.push_str("static const char* const names[] = {\n");
    for i in 0..EXPORTS {
        let _ = writeln!(code, "  \"{}\",", export_name(i));
    }
    code.push_str("};\nstatic void* const fns[] = {\n");
    for i in 0..EXPORTS {
        let _ = writeln!(code, "  (void*)f{i},");
    }
    let _ = write!(
        code,
        "}};\n\
static iree_hal_executable_plugin_status_t load(const iree_hal_executable_plugin_environment_v0_t* e, size_t n, const iree_hal_executable_plugin_string_pair_t* p, void** out) {{ (void)e; (void)n; (void)p; *out = NULL; return iree_hal_executable_plugin_ok_status(); }}\n\
static void unload(void* self) {{ (void)self; }}\n\
static iree_hal_executable_plugin_status_t resolve(void* self, const iree_hal_executable_plugin_resolve_params_v0_t* params, iree_hal_executable_plugin_resolution_t* out_resolution) {{\n\
  (void)self; *out_resolution = 0; int missing = 0;\n\
  for (size_t i = 0; i < params->count; ++i) {{\n\
    if (params->out_fn_ptrs[i]) continue;\n\
    const char* name = params->symbol_names[i];\n\
    int optional = name[0] == '?'; if (optional) ++name;\n\
    int found = 0;\n\
    for (size_t j = 0; j < {EXPORTS}; ++j) {{\n\
      if (strcmp(name, names[j]) == 0) {{ params->out_fn_ptrs[i] = fns[j]; params->out_fn_contexts[i] = NULL; found = 1; break; }}\n\
    }}\n\
    if (!found) {{ if (optional) *out_resolution |= IREE_HAL_EXECUTABLE_PLUGIN_RESOLUTION_MISSING_OPTIONAL; else missing = 1; }}\n\
  }}\n\
  return missing ? iree_hal_executable_plugin_status_from_code(IREE_HAL_EXECUTABLE_PLUGIN_STATUS_NOT_FOUND) : iree_hal_executable_plugin_ok_status();\n\
}}\n\
IREE_HAL_EXECUTABLE_PLUGIN_EXPORT const iree_hal_executable_plugin_header_t** iree_hal_executable_plugin_query(iree_hal_executable_plugin_version_t max_version, void* reserved) {{\n\
  (void)reserved;\n\
  static const iree_hal_executable_plugin_header_t header = {{ .version = IREE_HAL_EXECUTABLE_PLUGIN_VERSION_LATEST, .name = \"bench_c_strcmp\", .description = \"4096 exports, strcmp resolver\", .features = IREE_HAL_EXECUTABLE_PLUGIN_FEATURE_STANDALONE, .sanitizer = IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_KIND }};\n\
  static const iree_hal_executable_plugin_v0_t plugin = {{ .header = &header, .load = load, .unload = unload, .resolve = resolve }};\n\
  return max_version < IREE_HAL_EXECUTABLE_PLUGIN_VERSION_0_1 ? NULL : (const iree_hal_executable_plugin_header_t**)&plugin;\n\
}}\n"
    );
    xplug_tests::build_c_plugin_from_code(&code, dir, "bench_c_strcmp", &["-O2"])
}

/// An import function used by the reference resolvers' table.
unsafe extern "C" fn reference_import(_: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
    0
}

/// The sorted export table the in-process references walk.
#[must_use]
pub fn reference_table() -> Vec<(Vec<u8>, *mut c_void)> {
    (0..EXPORTS).map(|i| (export_name(i).into_bytes(), reference_import as *mut c_void)).collect()
}

/// Reference 1: one merge pass over sorted names and the sorted table.
pub fn merge_walk(table: &[(Vec<u8>, *mut c_void)], names: &[&[u8]], fns: &mut [*mut c_void]) {
    let mut j = 0;
    for (name, slot) in names.iter().zip(fns.iter_mut()) {
        while j < table.len() && table[j].0.as_slice() < *name {
            j += 1;
        }
        if j < table.len() && table[j].0.as_slice() == *name && slot.is_null() {
            *slot = table[j].1;
        }
    }
}

/// Reference 2: a binary search of the table per name.
pub fn binary_search(table: &[(Vec<u8>, *mut c_void)], names: &[&[u8]], fns: &mut [*mut c_void]) {
    for (name, slot) in names.iter().zip(fns.iter_mut()) {
        if let Ok(j) = table.binary_search_by(|entry| entry.0.as_slice().cmp(name)) {
            if slot.is_null() {
                *slot = table[j].1;
            }
        }
    }
}
