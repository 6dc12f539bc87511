/*
 * c_host: a plain C host for xplug/IREE plugins, used by the plugin tests.
 *
 *   c_host PLUGIN.so MULTIPLIER [key=value...]
 *
 * dlopens the plugin, checks its header, loads it with a counting host
 * allocator and the given parameters, lists `xplug_plugin_exports` when the
 * plugin has it, resolves `simple_mul_workgroup`, runs it over two
 * workgroups of real data with offsets, checks every element against
 * lhs * rhs * MULTIPLIER, unloads, and checks that every host allocation
 * was freed. Prints what it sees; exits 0 only when every check passes.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xplug/executable_plugin.h"

#define CHECK(cond, ...)                       \
  do {                                         \
    if (!(cond)) {                             \
      fprintf(stderr, "c_host: check failed: " __VA_ARGS__); \
      fprintf(stderr, "\n");                   \
      exit(1);                                 \
    }                                          \
  } while (0)

/* The status code: the low five bits of the pointer-sized status value. */
static int code_of(iree_hal_executable_plugin_status_t status) {
  return (int)((uintptr_t)status & 0x1F);
}

typedef struct {
  size_t live;
  size_t total;
} counts_t;

static iree_hal_executable_plugin_status_t counting_ctl(
    void* self, iree_hal_executable_plugin_allocator_command_t command,
    const void* params, void** inout_ptr) {
  counts_t* counts = (counts_t*)self;
  if (command == IREE_HAL_EXECUTABLE_PLUGIN_ALLOCATOR_COMMAND_MALLOC) {
    size_t size =
        ((const iree_hal_executable_plugin_allocator_alloc_params_t*)params)
            ->byte_length;
    void* block = aligned_alloc(16, (size + 15) / 16 * 16);
    if (block == NULL) {
      return iree_hal_executable_plugin_status_from_code(
          IREE_HAL_EXECUTABLE_PLUGIN_STATUS_RESOURCE_EXHAUSTED);
    }
    ++counts->live;
    ++counts->total;
    *inout_ptr = block;
    return iree_hal_executable_plugin_ok_status();
  }
  if (command == IREE_HAL_EXECUTABLE_PLUGIN_ALLOCATOR_COMMAND_FREE) {
    free(*inout_ptr);
    --counts->live;
    return iree_hal_executable_plugin_ok_status();
  }
  return iree_hal_executable_plugin_status_from_code(
      IREE_HAL_EXECUTABLE_PLUGIN_STATUS_UNIMPLEMENTED);
}

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

typedef const char* const* (*exports_fn_t)(size_t* out_count);

int main(int argc, char** argv) {
  CHECK(argc >= 3, "usage: c_host PLUGIN.so MULTIPLIER [key=value...]");
  float multiplier = strtof(argv[2], NULL);

  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  CHECK(library != NULL, "dlopen %s: %s", argv[1], dlerror());
  iree_hal_executable_plugin_query_fn_t query =
      (iree_hal_executable_plugin_query_fn_t)dlsym(
          library, IREE_HAL_EXECUTABLE_PLUGIN_EXPORT_NAME);
  CHECK(query != NULL, "%s does not export %s", argv[1],
        IREE_HAL_EXECUTABLE_PLUGIN_EXPORT_NAME);

  CHECK(query(0, NULL) == NULL, "a v0.0 host must get NULL");
  const iree_hal_executable_plugin_v0_t* plugin =
      (const iree_hal_executable_plugin_v0_t*)query(
          IREE_HAL_EXECUTABLE_PLUGIN_VERSION_LATEST, NULL);
  CHECK(plugin != NULL, "query returned NULL");
  const iree_hal_executable_plugin_header_t* header = plugin->header;
  CHECK(header->version == IREE_HAL_EXECUTABLE_PLUGIN_VERSION_LATEST,
        "header version %u", header->version);
  printf("name: %s\n", header->name);
  printf("description: %s\n", header->description);
  printf("features: %u\n", header->features);
  printf("sanitizer: %d\n", (int)header->sanitizer);

  exports_fn_t exports = (exports_fn_t)dlsym(library, "xplug_plugin_exports");
  if (exports != NULL) {
    size_t count = 0;
    const char* const* names = exports(&count);
    printf("exports:");
    for (size_t i = 0; i < count; ++i) {
      printf(" %s", names[i]);
      if (i > 0) CHECK(strcmp(names[i - 1], names[i]) < 0, "exports not sorted");
    }
    printf("\n");
  }

  /* Parameters from argv; the strings are only valid during load, so copy
   * them into a buffer that is scribbled over right after. */
  int param_count = argc - 3;
  iree_hal_executable_plugin_string_pair_t* params =
      calloc(param_count > 0 ? param_count : 1, sizeof(*params));
  char** copies = calloc(param_count > 0 ? param_count : 1, sizeof(char*));
  for (int i = 0; i < param_count; ++i) {
    copies[i] = strdup(argv[3 + i]);
    char* eq = strchr(copies[i], '=');
    CHECK(eq != NULL, "parameter `%s` is not key=value", argv[3 + i]);
    params[i].key.data = copies[i];
    params[i].key.size = (size_t)(eq - copies[i]);
    params[i].value.data = eq + 1;
    params[i].value.size = strlen(eq + 1);
  }
  counts_t counts = {0, 0};
  iree_hal_executable_plugin_environment_v0_t environment = {
      .host_allocator = {.self = &counts, .ctl = counting_ctl}};
  void* self = NULL;
  iree_hal_executable_plugin_status_t status =
      plugin->load(&environment, (size_t)param_count, params, &self);
  CHECK(iree_hal_executable_plugin_status_is_ok(status), "load failed: %d",
        code_of(status));
  for (int i = 0; i < param_count; ++i) {
    memset(copies[i], 'X', strlen(copies[i]));
    free(copies[i]);
  }
  free(copies);
  free(params);
  memset(&environment, 0, sizeof(environment));
  printf("allocations after load: %zu\n", counts.live);

  /* Sorted by bare name, with an optional name nobody exports. */
  const char* names[2] = {"simple_mul_workgroup", "?xplug_no_such_import"};
  void* functions[2] = {NULL, NULL};
  void* contexts[2] = {NULL, NULL};
  iree_hal_executable_plugin_resolve_params_v0_t request = {
      .count = 2,
      .symbol_names = names,
      .out_fn_ptrs = functions,
      .out_fn_contexts = contexts};
  iree_hal_executable_plugin_resolution_t resolution = 0;
  status = plugin->resolve(self, &request, &resolution);
  CHECK(iree_hal_executable_plugin_status_is_ok(status), "resolve failed: %d",
        code_of(status));
  CHECK(resolution == IREE_HAL_EXECUTABLE_PLUGIN_RESOLUTION_MISSING_OPTIONAL,
        "resolution %u", resolution);
  CHECK(functions[0] != NULL && functions[1] == NULL, "slots");

  const char* missing[1] = {"xplug_required_but_absent"};
  void* missing_fn[1] = {NULL};
  void* missing_ctx[1] = {NULL};
  iree_hal_executable_plugin_resolve_params_v0_t missing_request = {
      .count = 1,
      .symbol_names = missing,
      .out_fn_ptrs = missing_fn,
      .out_fn_contexts = missing_ctx};
  status = plugin->resolve(self, &missing_request, &resolution);
  CHECK(code_of(status) == IREE_HAL_EXECUTABLE_PLUGIN_STATUS_NOT_FOUND,
        "a required unknown import must be NOT_FOUND, got %d",
        code_of(status));

  enum { SIZE = 100, LHS_OFF = 3, RHS_OFF = 1, OUT_OFF = 5 };
  float lhs[SIZE + LHS_OFF], rhs[SIZE + RHS_OFF], out[SIZE + OUT_OFF];
  for (int i = 0; i < SIZE + LHS_OFF; ++i) lhs[i] = (float)i * 0.5f;
  for (int i = 0; i < SIZE + RHS_OFF; ++i) rhs[i] = 3.0f - (float)i;
  for (int i = 0; i < SIZE + OUT_OFF; ++i) out[i] = -1234.0f;
  uint64_t processor_data[8] = {0};
  xplug_import_fn_t mul = (xplug_import_fn_t)functions[0];
  /* IREE's convention: each call gets its own slice (pointer + offset is
   * its first element, `size` its length); `tid` is the workgroup id. */
  for (size_t tid = 0; tid * 64 < SIZE; ++tid) {
    size_t first = tid * 64;
    size_t count = SIZE - first < 64 ? SIZE - first : 64;
    workgroup_args_t p = {lhs, LHS_OFF + first, rhs, RHS_OFF + first, out,
                            OUT_OFF + first, count, tid, 0, processor_data};
    int code = mul(&p, contexts[0], NULL);
    CHECK(code == 0, "simple_mul_workgroup returned %d", code);
  }
  for (int i = 0; i < OUT_OFF; ++i) CHECK(out[i] == -1234.0f, "wrote before the offset");
  for (int i = 0; i < SIZE; ++i) {
    float expected = lhs[LHS_OFF + i] * rhs[RHS_OFF + i] * multiplier;
    CHECK(out[OUT_OFF + i] == expected, "out[%d] = %g, expected %g", i,
          out[OUT_OFF + i], expected);
  }
  printf("simple_mul_workgroup: %d elements ok\n", SIZE);

  plugin->unload(self);
  printf("allocations: %zu total, %zu live after unload\n", counts.total,
         counts.live);
  CHECK(counts.live == 0, "%zu host allocations leaked", counts.live);
  dlclose(library);
  printf("ok\n");
  return 0;
}
