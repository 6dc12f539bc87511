/*
 * c_sample: an xplug example plugin written in C against
 * include/xplug/executable_plugin.h, built by `cargo xtask build-plugins`
 * into target/plugins/{debug,release}/libc_sample.so.
 *
 * Stateless and standalone (no libc calls, no allocation, no globals that
 * change). Exports:
 *   simple_mul_workgroup  out[i] = lhs[i] * rhs[i] for the `size` elements of
 *                         this call's slice (IREE's custom-dispatch args;
 *                         pointer + offset starts the slice, `tid` is only
 *                         the workgroup id: docs/src/plugins/dispatch.md);
 *   c_sample_negate_f32   value = -value.
 */
#include "xplug/executable_plugin.h"

/* The args struct of IREE's custom-dispatch CPU sample. */
typedef struct {
  const float* lhs;
  size_t lhs_offset;
  const float* rhs;
  size_t rhs_offset;
  float* out;
  size_t out_offset;
  size_t size; /* elements in this call's slice */
  size_t tid;  /* workgroup id, informational */
  uint32_t processor_id;
  const uint64_t* processor_data;
} c_sample_workgroup_args_t;

typedef struct {
  float value;
} c_sample_negate_args_t;

static int c_sample_mul(void* args_ptr, void* context, void* reserved) {
  (void)context;
  (void)reserved;
  const c_sample_workgroup_args_t* p =
      (const c_sample_workgroup_args_t*)args_ptr;
  if (p == NULL) return 3;
  const float* lhs = p->lhs + p->lhs_offset;
  const float* rhs = p->rhs + p->rhs_offset;
  float* out = p->out + p->out_offset;
  for (size_t i = 0; i < p->size; ++i) out[i] = lhs[i] * rhs[i];
  return 0;
}

static int c_sample_negate(void* args_ptr, void* context, void* reserved) {
  (void)context;
  (void)reserved;
  c_sample_negate_args_t* p = (c_sample_negate_args_t*)args_ptr;
  if (p == NULL) return 3;
  p->value = -p->value;
  return 0;
}

static iree_hal_executable_plugin_status_t c_sample_load(
    const iree_hal_executable_plugin_environment_v0_t* environment,
    size_t param_count, const iree_hal_executable_plugin_string_pair_t* params,
    void** out_self) {
  (void)environment;
  (void)param_count;
  (void)params;
  *out_self = NULL; /* nothing to keep */
  return iree_hal_executable_plugin_ok_status();
}

static void c_sample_unload(void* self) { (void)self; }

static iree_hal_executable_plugin_status_t c_sample_resolve(
    void* self, const iree_hal_executable_plugin_resolve_params_v0_t* params,
    iree_hal_executable_plugin_resolution_t* out_resolution) {
  (void)self;
  *out_resolution = 0;
  bool missing_required = false;
  for (size_t i = 0; i < params->count; ++i) {
    if (params->out_fn_ptrs[i] != NULL) continue; /* someone was first */
    const char* name = params->symbol_names[i];
    bool optional = iree_hal_executable_plugin_import_is_optional(name);
    if (optional) ++name;
    void* function = NULL;
    if (iree_hal_executable_plugin_strcmp(name, "simple_mul_workgroup") == 0) {
      function = (void*)c_sample_mul;
    } else if (iree_hal_executable_plugin_strcmp(name, "c_sample_negate_f32") ==
               0) {
      function = (void*)c_sample_negate;
    }
    if (function != NULL) {
      params->out_fn_ptrs[i] = function;
      params->out_fn_contexts[i] = NULL;
    } else if (optional) {
      *out_resolution |= IREE_HAL_EXECUTABLE_PLUGIN_RESOLUTION_MISSING_OPTIONAL;
    } else {
      missing_required = true;
    }
  }
  return missing_required ? iree_hal_executable_plugin_status_from_code(
                                IREE_HAL_EXECUTABLE_PLUGIN_STATUS_NOT_FOUND)
                          : iree_hal_executable_plugin_ok_status();
}

IREE_HAL_EXECUTABLE_PLUGIN_EXPORT const iree_hal_executable_plugin_header_t**
iree_hal_executable_plugin_query(
    iree_hal_executable_plugin_version_t max_version, void* reserved) {
  (void)reserved;
  static const iree_hal_executable_plugin_header_t header = {
      .version = IREE_HAL_EXECUTABLE_PLUGIN_VERSION_LATEST,
      .name = "c_sample",
      .description = "C example plugin (xplug plugins/c_sample)",
      .features = IREE_HAL_EXECUTABLE_PLUGIN_FEATURE_STANDALONE,
      .sanitizer = IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_KIND,
  };
  static const iree_hal_executable_plugin_v0_t table = {
      .header = &header,
      .load = c_sample_load,
      .unload = c_sample_unload,
      .resolve = c_sample_resolve,
  };
  /* Lowest supported version is 0.1: older hosts get NULL. */
  if (max_version < IREE_HAL_EXECUTABLE_PLUGIN_VERSION_0_1) return NULL;
  return (const iree_hal_executable_plugin_header_t**)&table;
}
