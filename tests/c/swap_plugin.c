/*
 * The plugin live swap is tested with (crates/manager/tests/swap.rs, the
 * xplug-iree swap stress test and example): one source, built once per
 * version with a different FACTOR, so that every result says which version
 * computed it. Freestanding (no libc), so each build is both a shared
 * library and a standalone plugin xplug's embedded-ELF loader maps.
 *
 * Imports:
 *   swap_scale_i32        struct { int32_t value, out; }: out = value * FACTOR;
 *   simple_mul_workgroup  IREE's custom-dispatch CPU sample args:
 *                         out[i] = lhs[i] * rhs[i] * FACTOR;
 *   swap_hold_i32         struct { const int32_t* gate; int32_t* entered;
 *                         int32_t out; }: sets *entered, waits until *gate
 *                         is non-zero, then out = FACTOR (a call held in
 *                         flight by the test);
 *   swap_call_back        struct { int32_t (*callback)(void*); void* data;
 *                         int32_t out; }: out = callback(data) (host code
 *                         running inside an import's call).
 *
 * Load parameter `unloaded=HEX`: the address of an int32 in the host that
 * `unload` increments (so a test sees when the old version's unload ran).
 *
 * Load parameter `hold=HEX`: the address of a host `int32_t[3]`
 * { armed, held, last_factor } that `simple_mul_workgroup` reports to:
 * every call stores FACTOR in last_factor when done; the one call that
 * finds `armed` set (and clears it) sets `held`, then waits until another
 * version stored its factor, so a test holds a dispatch inside this
 * version until a swap has reached the other version's calls.
 *
 * Build switches (the refusals a swap must make):
 *   -DFACTOR=N            the version's factor (default 2);
 *   -DOMIT_SCALE          no swap_scale_i32 (an import in use is missing);
 *   -DPLUGIN_NAME="x"     another plugin name (default "swap_test");
 *   -DNEWER_VERSION       a header version newer than any host supports
 *                         (fails the load checks).
 */
#include "xplug/executable_plugin.h"

#ifndef FACTOR
#define FACTOR 2
#endif
#ifndef PLUGIN_NAME
#define PLUGIN_NAME "swap_test"
#endif

typedef struct {
  int32_t value;
  int32_t out;
} scale_args_t;

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
} workgroup_args_t;

typedef struct {
  const int32_t* gate;
  int32_t* entered;
  int32_t out;
} hold_args_t;

typedef struct {
  int32_t (*callback)(void*);
  void* data;
  int32_t out;
} call_back_args_t;

typedef struct {
  int32_t armed;
  int32_t held;
  int32_t last_factor;
} hold_point_t;

typedef struct {
  iree_hal_executable_plugin_allocator_t host_allocator;
  int32_t* unloaded;
  hold_point_t* hold;
} state_t;

#ifndef OMIT_SCALE
static int swap_scale(void* args_ptr, void* context, void* reserved) {
  (void)context;
  (void)reserved;
  scale_args_t* args = (scale_args_t*)args_ptr;
  args->out = args->value * FACTOR;
  return 0;
}
#endif

static int swap_mul(void* args_ptr, void* context, void* reserved) {
  (void)reserved;
  hold_point_t* hold = context ? ((state_t*)context)->hold : NULL;
  if (hold != NULL && __atomic_exchange_n(&hold->armed, 0, __ATOMIC_SEQ_CST)) {
    __atomic_store_n(&hold->held, 1, __ATOMIC_SEQ_CST);
    for (;;) {
      int32_t last = __atomic_load_n(&hold->last_factor, __ATOMIC_SEQ_CST);
      if (last != 0 && last != FACTOR) break;
    }
  }
  const workgroup_args_t* p = (const workgroup_args_t*)args_ptr;
  for (size_t i = 0; i < p->size; ++i) {
    p->out[p->out_offset + i] = p->lhs[p->lhs_offset + i] *
                                p->rhs[p->rhs_offset + i] * (float)FACTOR;
  }
  if (hold != NULL) {
    __atomic_store_n(&hold->last_factor, FACTOR, __ATOMIC_SEQ_CST);
  }
  return 0;
}

static int swap_hold(void* args_ptr, void* context, void* reserved) {
  (void)context;
  (void)reserved;
  hold_args_t* args = (hold_args_t*)args_ptr;
  __atomic_store_n(args->entered, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(args->gate, __ATOMIC_SEQ_CST) == 0) {
  }
  args->out = FACTOR;
  return 0;
}

static int swap_call_back(void* args_ptr, void* context, void* reserved) {
  (void)context;
  (void)reserved;
  call_back_args_t* args = (call_back_args_t*)args_ptr;
  args->out = args->callback(args->data);
  return 0;
}

static bool key_is(iree_hal_executable_plugin_string_view_t view,
                   const char* literal) {
  size_t i = 0;
  for (; i < view.size; ++i) {
    if (literal[i] == '\0' || literal[i] != view.data[i]) return false;
  }
  return literal[i] == '\0';
}

/* Parses a hexadecimal address; 0 when malformed. */
static uintptr_t parse_hex(iree_hal_executable_plugin_string_view_t value) {
  uintptr_t result = 0;
  for (size_t i = 0; i < value.size; ++i) {
    char c = value.data[i];
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return 0;
    }
    result = result * 16 + (uintptr_t)digit;
  }
  return result;
}

static iree_hal_executable_plugin_status_t plugin_load(
    const iree_hal_executable_plugin_environment_v0_t* environment,
    size_t param_count, const iree_hal_executable_plugin_string_pair_t* params,
    void** out_self) {
  state_t* state = NULL;
  iree_hal_executable_plugin_status_t status =
      iree_hal_executable_plugin_allocator_malloc(
          environment->host_allocator, sizeof(*state), (void**)&state);
  if (!iree_hal_executable_plugin_status_is_ok(status)) return status;
  state->host_allocator = environment->host_allocator;
  state->unloaded = NULL;
  state->hold = NULL;
  for (size_t i = 0; i < param_count; ++i) {
    if (key_is(params[i].key, "unloaded")) {
      state->unloaded = (int32_t*)parse_hex(params[i].value);
    } else if (key_is(params[i].key, "hold")) {
      state->hold = (hold_point_t*)parse_hex(params[i].value);
    }
  }
  *out_self = state;
  return iree_hal_executable_plugin_ok_status();
}

static void plugin_unload(void* self) {
  state_t* state = (state_t*)self;
  if (state->unloaded != NULL) {
    __atomic_fetch_add(state->unloaded, 1, __ATOMIC_SEQ_CST);
  }
  iree_hal_executable_plugin_allocator_free(state->host_allocator, state);
}

static iree_hal_executable_plugin_status_t plugin_resolve(
    void* self, const iree_hal_executable_plugin_resolve_params_v0_t* params,
    iree_hal_executable_plugin_resolution_t* out_resolution) {
  *out_resolution = 0;
  bool missing_required = false;
  for (size_t i = 0; i < params->count; ++i) {
    if (params->out_fn_ptrs[i]) continue;
    const char* name = params->symbol_names[i];
    bool optional = iree_hal_executable_plugin_import_is_optional(name);
    if (optional) ++name;
    void* function = NULL;
#ifndef OMIT_SCALE
    if (iree_hal_executable_plugin_strcmp(name, "swap_scale_i32") == 0) {
      function = (void*)swap_scale;
    }
#endif
    void* context = NULL;
    if (iree_hal_executable_plugin_strcmp(name, "simple_mul_workgroup") == 0) {
      function = (void*)swap_mul;
      context = self;
    } else if (iree_hal_executable_plugin_strcmp(name, "swap_hold_i32") == 0) {
      function = (void*)swap_hold;
    } else if (iree_hal_executable_plugin_strcmp(name, "swap_call_back") ==
               0) {
      function = (void*)swap_call_back;
    }
    if (function != NULL) {
      params->out_fn_ptrs[i] = function;
      params->out_fn_contexts[i] = context;
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
#ifdef NEWER_VERSION
      .version = IREE_HAL_EXECUTABLE_PLUGIN_VERSION_LATEST + 1,
#else
      .version = IREE_HAL_EXECUTABLE_PLUGIN_VERSION_LATEST,
#endif
      .name = PLUGIN_NAME,
      .description = "live swap test plugin (tests/c/swap_plugin.c)",
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
