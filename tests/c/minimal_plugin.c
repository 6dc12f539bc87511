/*
 * A minimal C plugin written the way IREE's samples write them, against
 * IREE's header names. It includes the IREE path, so it also proves the
 * compatibility shim in include/iree/.
 *
 * Exports two imports: `c_add_i32` and `c_mul_i32`, both taking
 * `struct { int32_t a, b, out; }`. Its state is allocated from the host
 * allocator and records the `scale` load parameter (default 1), which
 * `c_mul_i32` applies.
 */
#include "iree/hal/local/executable_plugin.h"

typedef struct {
  int32_t a;
  int32_t b;
  int32_t out;
} binop_args_t;

typedef struct {
  iree_hal_executable_plugin_allocator_t host_allocator;
  int32_t scale;
} plugin_state_t;

static int c_add_i32(void* args_ptr, void* context, void* reserved) {
  (void)context;
  (void)reserved;
  binop_args_t* args = (binop_args_t*)args_ptr;
  args->out = args->a + args->b;
  return 0;
}

static int c_mul_i32(void* args_ptr, void* context, void* reserved) {
  (void)reserved;
  const plugin_state_t* state = (const plugin_state_t*)context;
  binop_args_t* args = (binop_args_t*)args_ptr;
  args->out = args->a * args->b * state->scale;
  return 0;
}

static bool sv_equals(iree_hal_executable_plugin_string_view_t view,
                      const char* literal) {
  size_t i = 0;
  for (; i < view.size; ++i) {
    if (literal[i] == '\0' || literal[i] != view.data[i]) return false;
  }
  return literal[i] == '\0';
}

static int32_t parse_i32(iree_hal_executable_plugin_string_view_t value) {
  int32_t result = 0;
  for (size_t i = 0; i < value.size; ++i) {
    char c = value.data[i];
    if (c < '0' || c > '9') return 1; /* not a number: keep the default */
    result = result * 10 + (c - '0');
  }
  return result;
}

static iree_hal_executable_plugin_status_t plugin_load(
    const iree_hal_executable_plugin_environment_v0_t* environment,
    size_t param_count, const iree_hal_executable_plugin_string_pair_t* params,
    void** out_self) {
  plugin_state_t* state = NULL;
  iree_hal_executable_plugin_status_t status =
      iree_hal_executable_plugin_allocator_malloc(
          environment->host_allocator, sizeof(*state), (void**)&state);
  if (!iree_hal_executable_plugin_status_is_ok(status)) return status;
  state->host_allocator = environment->host_allocator;
  state->scale = 1;
  for (size_t i = 0; i < param_count; ++i) {
    /* IREE names the pair's fields both key/value and first/second. */
    if (sv_equals(params[i].key, "scale")) {
      state->scale = parse_i32(params[i].second);
    }
  }
  *out_self = state;
  return iree_hal_executable_plugin_ok_status();
}

static void plugin_unload(void* self) {
  plugin_state_t* state = (plugin_state_t*)self;
  iree_hal_executable_plugin_allocator_free(state->host_allocator, state);
}

static iree_hal_executable_plugin_status_t plugin_resolve(
    void* self, const iree_hal_executable_plugin_resolve_params_v0_t* params,
    iree_hal_executable_plugin_resolution_t* out_resolution) {
  *out_resolution = 0;
  bool any_required_not_found = false;
  for (size_t i = 0; i < params->count; ++i) {
    if (params->out_fn_ptrs[i]) continue;
    const char* name = params->symbol_names[i];
    bool optional = iree_hal_executable_plugin_import_is_optional(name);
    if (optional) ++name;
    if (iree_hal_executable_plugin_strcmp(name, "c_add_i32") == 0) {
      params->out_fn_ptrs[i] = (void*)c_add_i32;
      params->out_fn_contexts[i] = NULL;
    } else if (iree_hal_executable_plugin_strcmp(name, "c_mul_i32") == 0) {
      params->out_fn_ptrs[i] = (void*)c_mul_i32;
      params->out_fn_contexts[i] = self;
    } else if (optional) {
      *out_resolution |= IREE_HAL_EXECUTABLE_PLUGIN_RESOLUTION_MISSING_OPTIONAL;
    } else {
      any_required_not_found = true;
    }
  }
  return any_required_not_found
             ? iree_hal_executable_plugin_status_from_code(
                   IREE_HAL_EXECUTABLE_PLUGIN_STATUS_NOT_FOUND)
             : iree_hal_executable_plugin_ok_status();
}

IREE_HAL_EXECUTABLE_PLUGIN_EXPORT const iree_hal_executable_plugin_header_t**
iree_hal_executable_plugin_query(
    iree_hal_executable_plugin_version_t max_version, void* reserved) {
  (void)reserved;
  static const iree_hal_executable_plugin_header_t header = {
      .version = IREE_HAL_EXECUTABLE_PLUGIN_VERSION_LATEST,
      .name = "c_minimal",
      .description = "minimal C plugin from tests/c",
      .features = IREE_HAL_EXECUTABLE_PLUGIN_FEATURE_STANDALONE,
      .sanitizer = IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_KIND,
  };
  static const iree_hal_executable_plugin_v0_t plugin = {
      .header = &header,
      .load = plugin_load,
      .unload = plugin_unload,
      .resolve = plugin_resolve,
  };
  return max_version < IREE_HAL_EXECUTABLE_PLUGIN_VERSION_0_1
             ? NULL
             : (const iree_hal_executable_plugin_header_t**)&plugin;
}
