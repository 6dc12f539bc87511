/*
 * The end-to-end tests' own plugin, written against IREE's header names
 * and built twice by `cargo xtask iree-e2e` (xtask/src/iree_e2e.rs):
 *
 *   -DXPLUG_E2E_SUB     libxplug_e2e_sub.so exports `e2e_sub_workgroup`
 *                       (out = lhs - rhs; `out` may be `lhs`), so an
 *                       executable can import one kernel from an example
 *                       plugin and one from here;
 *   -DXPLUG_E2E_MARKER  libxplug_e2e_marker.so exports its own
 *                       `simple_mul_workgroup` computing -(lhs * rhs),
 *                       a result no example gives, so the override test can
 *                       tell whose kernel IREE called;
 *   -DXPLUG_E2E_PRINT   libxplug_e2e_print.so exports `simple_mul_workgroup`
 *                       (out = lhs * rhs) and, as IREE's own system plugin
 *                       sample does, prints every element it computes to C's
 *                       stdout (and flushes it at unload), so the tests can
 *                       check that a tool's output and a plugin's printed
 *                       lines come out in iree-run-module's order.
 *
 * Both take the args of IREE's custom-dispatch sample with IREE's slice
 * convention (docs/src/plugins/dispatch.md): pointer + offset starts this call's slice,
 * `size` is its length, `tid` is only the workgroup id.
 */
#include "iree/hal/local/executable_plugin.h"

#if defined(XPLUG_E2E_SUB) + defined(XPLUG_E2E_MARKER) + \
        defined(XPLUG_E2E_PRINT) != 1
#error "define exactly one of XPLUG_E2E_SUB, XPLUG_E2E_MARKER, XPLUG_E2E_PRINT"
#endif

#if defined(XPLUG_E2E_PRINT)
#include <stdio.h>
#define E2E_FEATURES 0
#else
#define E2E_FEATURES IREE_HAL_EXECUTABLE_PLUGIN_FEATURE_STANDALONE
#endif

typedef struct {
  const float* lhs;
  size_t lhs_offset;
  const float* rhs;
  size_t rhs_offset;
  float* out;
  size_t out_offset;
  size_t size;
  size_t tid;
  uint32_t processor_id;
  const uint64_t* processor_data;
} e2e_slice_args_t;

#if defined(XPLUG_E2E_SUB)
#define E2E_PLUGIN_NAME "xplug_e2e_sub"
#define E2E_SYMBOL "e2e_sub_workgroup"
static float e2e_op(float lhs, float rhs) { return lhs - rhs; }
#elif defined(XPLUG_E2E_PRINT)
#define E2E_PLUGIN_NAME "xplug_e2e_print"
#define E2E_SYMBOL "simple_mul_workgroup"
static float e2e_op(float lhs, float rhs) { return lhs * rhs; }
#else
#define E2E_PLUGIN_NAME "xplug_e2e_marker"
#define E2E_SYMBOL "simple_mul_workgroup"
static float e2e_op(float lhs, float rhs) { return -(lhs * rhs); }
#endif

static int e2e_kernel(void* args_ptr, void* context, void* reserved) {
  (void)context;
  (void)reserved;
  const e2e_slice_args_t* p = (const e2e_slice_args_t*)args_ptr;
  const float* lhs = p->lhs + p->lhs_offset;
  const float* rhs = p->rhs + p->rhs_offset;
  float* out = p->out + p->out_offset;
  for (size_t i = 0; i < p->size; ++i) {
    out[i] = e2e_op(lhs[i], rhs[i]);
#if defined(XPLUG_E2E_PRINT)
    printf("workgroup %zu: %g * %g = %g\n", p->tid, lhs[i], rhs[i], out[i]);
#endif
  }
  return 0;
}

static iree_hal_executable_plugin_status_t e2e_load(
    const iree_hal_executable_plugin_environment_v0_t* environment,
    size_t param_count, const iree_hal_executable_plugin_string_pair_t* params,
    void** out_self) {
  (void)environment;
  (void)param_count;
  (void)params;
  *out_self = NULL;
  return iree_hal_executable_plugin_ok_status();
}

static void e2e_unload(void* self) {
  (void)self;
#if defined(XPLUG_E2E_PRINT)
  fflush(stdout);
#endif
}

static iree_hal_executable_plugin_status_t e2e_resolve(
    void* self, const iree_hal_executable_plugin_resolve_params_v0_t* params,
    iree_hal_executable_plugin_resolution_t* out_resolution) {
  (void)self;
  *out_resolution = 0;
  bool missing_required = false;
  for (size_t i = 0; i < params->count; ++i) {
    if (params->out_fn_ptrs[i] != NULL) continue;
    const char* name = params->symbol_names[i];
    bool optional = iree_hal_executable_plugin_import_is_optional(name);
    if (optional) ++name;
    if (iree_hal_executable_plugin_strcmp(name, E2E_SYMBOL) == 0) {
      params->out_fn_ptrs[i] = (void*)e2e_kernel;
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
      .name = E2E_PLUGIN_NAME,
      .description = "xplug end-to-end test plugin (tests/iree/e2e_plugin.c)",
      .features = E2E_FEATURES,
      .sanitizer = IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_KIND,
  };
  static const iree_hal_executable_plugin_v0_t table = {
      .header = &header,
      .load = e2e_load,
      .unload = e2e_unload,
      .resolve = e2e_resolve,
  };
  if (max_version < IREE_HAL_EXECUTABLE_PLUGIN_VERSION_0_1) return NULL;
  return (const iree_hal_executable_plugin_header_t**)&table;
}
