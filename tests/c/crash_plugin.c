/*
 * A C plugin that crashes in `resolve`, for the crash-report tests
 * (docs/src/operating/debugging.md): `xplug check` must name the function.
 *
 * By default `crashy_resolve` writes through address 0x10 (a SIGSEGV
 * inside the plugin). With -DCRASH_IN_LIBC it passes that address to
 * libc's `memset` instead: the fault is then inside libc, called from
 * `crashy_resolve`. Built as a shared library with symbols (the way
 * xplug-fixtures builds every C plugin), so `.symtab` names its static
 * functions.
 */
#include <string.h>

#include "iree/hal/local/executable_plugin.h"

/* The address written to, through a volatile so the compiler cannot see
 * it and replace the store with a trap. */
static char* volatile crash_address = (char*)0x10;

#ifdef CRASH_IN_LIBC
/* Through a volatile function pointer, so the call is a real call into
 * libc rather than an inlined store. */
static void* (*volatile fill)(void*, int, size_t) = memset;
#endif

__attribute__((noinline)) static iree_hal_executable_plugin_status_t
crashy_resolve(void* self,
               const iree_hal_executable_plugin_resolve_params_v0_t* params,
               iree_hal_executable_plugin_resolution_t* out_resolution) {
  (void)self;
  (void)params;
#ifdef CRASH_IN_LIBC
  fill(crash_address, 1, 64);
#else
  *crash_address = 1;
#endif
  *out_resolution = 0;
  return iree_hal_executable_plugin_ok_status();
}

static iree_hal_executable_plugin_status_t plugin_load(
    const iree_hal_executable_plugin_environment_v0_t* environment,
    size_t param_count, const iree_hal_executable_plugin_string_pair_t* params,
    void** out_self) {
  (void)environment;
  (void)param_count;
  (void)params;
  *out_self = NULL;
  return iree_hal_executable_plugin_ok_status();
}

static void plugin_unload(void* self) { (void)self; }

IREE_HAL_EXECUTABLE_PLUGIN_EXPORT const iree_hal_executable_plugin_header_t**
iree_hal_executable_plugin_query(
    iree_hal_executable_plugin_version_t max_version, void* reserved) {
  (void)reserved;
  static const iree_hal_executable_plugin_header_t header = {
      .version = IREE_HAL_EXECUTABLE_PLUGIN_VERSION_LATEST,
      .name = "crash_plugin_c",
      .description = "crashes in resolve (debugging tests)",
      .features = IREE_HAL_EXECUTABLE_PLUGIN_FEATURE_NONE,
      .sanitizer = IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_KIND,
  };
  static const iree_hal_executable_plugin_v0_t plugin = {
      .header = &header,
      .load = plugin_load,
      .unload = plugin_unload,
      .resolve = crashy_resolve,
  };
  return max_version <= IREE_HAL_EXECUTABLE_PLUGIN_VERSION_LATEST
             ? (const iree_hal_executable_plugin_header_t**)&plugin
             : NULL;
}
