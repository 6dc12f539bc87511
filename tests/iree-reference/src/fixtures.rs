//! A configurable C test plugin for side-by-side runs of IREE's manager and
//! xplug's: one shared library, compiled once, whose behaviour each loaded
//! instance takes from its load parameters.
//!
//! Parameters (all optional):
//! - `id=N`: the instance's number (default 0);
//! - `exports=a,b,c`: the bare names it exports (at most
//!   [`PROBE_MAX_EXPORTS`], each shorter than [`PROBE_MAX_NAME`] bytes);
//! - `fail=CODE`: every resolve fills what it can, then returns status `CODE`;
//! - `lie`: every resolve fills what it can, then claims OK with no
//!   resolution bits, even when required names are still missing.
//!
//! Without `fail` or `lie` an instance is honest (`docs/src/reference/resolution.md#provider-rules`): it fills the empty
//! slots whose bare names it exports, returns `NOT_FOUND` when a required slot
//! is still empty, and sets `MISSING_OPTIONAL` when an optional one is.
//!
//! Every export resolves to the same function, [`PROBE_FN_DOC`], with a
//! context unique to (instance, export): calling the slot's function with its
//! context writes a [`ProbeArgs`] telling who filled the slot.

use std::ffi::c_void;
use std::path::{Path, PathBuf};

/// Most names one probe instance exports.
pub const PROBE_MAX_EXPORTS: usize = 16;
/// Longest export name plus its NUL.
pub const PROBE_MAX_NAME: usize = 32;
/// What the probe import does, for the docs.
pub const PROBE_FN_DOC: &str =
    "probe(args, context, reserved): writes the context's (id, export index) into args";

/// The parameters of the probe import: filled in by the call.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ProbeArgs {
    /// The `id` of the instance that resolved the slot.
    pub id: i32,
    /// The position of the name in that instance's `exports`.
    pub export_index: i32,
}

const PROBE_SOURCE: &str = r#"
#include <stdlib.h>
#include <string.h>
#include "iree/hal/local/executable_plugin.h"

#define MAX_EXPORTS __MAX_EXPORTS__
#define MAX_NAME __MAX_NAME__

typedef struct { int32_t id; int32_t export_index; } probe_context_t;

typedef struct {
  iree_hal_executable_plugin_allocator_t allocator;
  int32_t id;
  uint32_t fail;
  int lie;
  size_t export_count;
  char names[MAX_EXPORTS][MAX_NAME];
  probe_context_t contexts[MAX_EXPORTS];
} probe_state_t;

static int probe(void* args, void* context, void* reserved) {
  (void)reserved;
  *(probe_context_t*)args = *(const probe_context_t*)context;
  return 0;
}

static int key_is(iree_hal_executable_plugin_string_view_t key, const char* literal) {
  size_t n = strlen(literal);
  return key.size == n && memcmp(key.data, literal, n) == 0;
}

static int parse_number(iree_hal_executable_plugin_string_view_t value, int32_t* out) {
  int32_t result = 0;
  if (value.size == 0 || value.size > 9) return 0;
  for (size_t i = 0; i < value.size; ++i) {
    if (value.data[i] < '0' || value.data[i] > '9') return 0;
    result = result * 10 + (value.data[i] - '0');
  }
  *out = result;
  return 1;
}

static int parse_exports(iree_hal_executable_plugin_string_view_t value, probe_state_t* state) {
  size_t start = 0;
  if (value.size == 0) return 1;
  for (size_t i = 0; i <= value.size; ++i) {
    if (i < value.size && value.data[i] != ',') continue;
    size_t length = i - start;
    if (length == 0 || length >= MAX_NAME || state->export_count >= MAX_EXPORTS) return 0;
    memcpy(state->names[state->export_count], value.data + start, length);
    state->names[state->export_count][length] = 0;
    state->contexts[state->export_count].id = state->id;
    state->contexts[state->export_count].export_index = (int32_t)state->export_count;
    ++state->export_count;
    start = i + 1;
  }
  return 1;
}

static iree_hal_executable_plugin_status_t probe_load(
    const iree_hal_executable_plugin_environment_v0_t* environment,
    size_t param_count, const iree_hal_executable_plugin_string_pair_t* params,
    void** out_self) {
  probe_state_t* state = NULL;
  iree_hal_executable_plugin_status_t status = iree_hal_executable_plugin_allocator_malloc(
      environment->host_allocator, sizeof(*state), (void**)&state);
  if (!iree_hal_executable_plugin_status_is_ok(status)) return status;
  memset(state, 0, sizeof(*state));
  state->allocator = environment->host_allocator;
  int ok = 1;
  /* `id` first, so the export contexts carry it whatever the order. */
  for (size_t i = 0; i < param_count; ++i) {
    if (key_is(params[i].key, "id")) ok &= parse_number(params[i].value, &state->id);
  }
  for (size_t i = 0; i < param_count && ok; ++i) {
    if (key_is(params[i].key, "exports")) {
      ok &= parse_exports(params[i].value, state);
    } else if (key_is(params[i].key, "fail")) {
      int32_t code = 0;
      ok &= parse_number(params[i].value, &code);
      state->fail = (uint32_t)code;
    } else if (key_is(params[i].key, "lie")) {
      state->lie = 1;
    } else if (!key_is(params[i].key, "id")) {
      ok = 0;
    }
  }
  if (!ok) {
    iree_hal_executable_plugin_allocator_free(environment->host_allocator, state);
    return iree_hal_executable_plugin_status_from_code(
        IREE_HAL_EXECUTABLE_PLUGIN_STATUS_INVALID_ARGUMENT);
  }
  *out_self = state;
  return iree_hal_executable_plugin_ok_status();
}

static void probe_unload(void* self) {
  probe_state_t* state = (probe_state_t*)self;
  iree_hal_executable_plugin_allocator_free(state->allocator, state);
}

static iree_hal_executable_plugin_status_t probe_resolve(
    void* self, const iree_hal_executable_plugin_resolve_params_v0_t* params,
    iree_hal_executable_plugin_resolution_t* out_resolution) {
  probe_state_t* state = (probe_state_t*)self;
  iree_hal_executable_plugin_resolution_t resolution = 0;
  int missing_required = 0;
  for (size_t i = 0; i < params->count; ++i) {
    const char* name = params->symbol_names[i];
    int optional = name[0] == '?';
    const char* bare = optional ? name + 1 : name;
    if (!params->out_fn_ptrs[i]) {
      for (size_t k = 0; k < state->export_count; ++k) {
        if (strcmp(bare, state->names[k]) == 0) {
          params->out_fn_ptrs[i] = (void*)probe;
          params->out_fn_contexts[i] = &state->contexts[k];
          break;
        }
      }
    }
    if (!params->out_fn_ptrs[i]) {
      if (optional) resolution |= IREE_HAL_EXECUTABLE_PLUGIN_RESOLUTION_MISSING_OPTIONAL;
      else missing_required = 1;
    }
  }
  if (state->fail) {
    *out_resolution = 0;
    return iree_hal_executable_plugin_status_from_code(state->fail);
  }
  if (state->lie) {
    *out_resolution = 0;
    return iree_hal_executable_plugin_ok_status();
  }
  *out_resolution = resolution;
  return missing_required ? iree_hal_executable_plugin_status_from_code(
                                IREE_HAL_EXECUTABLE_PLUGIN_STATUS_NOT_FOUND)
                          : iree_hal_executable_plugin_ok_status();
}

IREE_HAL_EXECUTABLE_PLUGIN_EXPORT const iree_hal_executable_plugin_header_t**
iree_hal_executable_plugin_query(iree_hal_executable_plugin_version_t max_version,
                                 void* reserved) {
  (void)reserved;
  static const iree_hal_executable_plugin_header_t header = {
      .version = IREE_HAL_EXECUTABLE_PLUGIN_VERSION_LATEST,
      .name = "probe",
      .description = "configurable test plugin (xplug-iree-reference)",
      .features = IREE_HAL_EXECUTABLE_PLUGIN_FEATURE_STANDALONE,
      .sanitizer = IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_KIND,
  };
  static const iree_hal_executable_plugin_v0_t plugin = {
      .header = &header,
      .load = probe_load,
      .unload = probe_unload,
      .resolve = probe_resolve,
  };
  return max_version < IREE_HAL_EXECUTABLE_PLUGIN_VERSION_0_1
             ? NULL
             : (const iree_hal_executable_plugin_header_t**)&plugin;
}
"#;

/// Compiles the probe plugin into `dir/libprobe.so` (with `cc -O2` against
/// the repository's `include/`) and returns its path.
///
/// # Panics
/// When the C compiler fails; the message carries its output.
#[must_use]
pub fn build_probe_plugin(dir: &Path) -> PathBuf {
    let code = PROBE_SOURCE
        .replace("__MAX_EXPORTS__", &PROBE_MAX_EXPORTS.to_string())
        .replace("__MAX_NAME__", &PROBE_MAX_NAME.to_string());
    xplug_fixtures::build_c_plugin_from_code(&code, dir, "probe", &["-O2"])
}

/// Calls a slot filled by a probe instance and returns who filled it.
///
/// # Safety
/// `function` and `context` are a slot pair a probe instance wrote, and the
/// instance is still loaded.
#[must_use]
pub unsafe fn read_probe(function: *mut c_void, context: *mut c_void) -> ProbeArgs {
    let mut args = ProbeArgs::default();
    // SAFETY: probe slots hold the probe import (v0 import signature) and a
    // context pointing at a live `probe_context_t` (caller's promise).
    unsafe {
        let function: xplug_abi::ImportFn = std::mem::transmute::<*mut c_void, xplug_abi::ImportFn>(function);
        function(std::ptr::from_mut(&mut args).cast(), context, std::ptr::null_mut());
    }
    args
}
