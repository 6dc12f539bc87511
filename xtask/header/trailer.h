/* ------------------------------------------------------------------------ */
/* Inline helpers                                                           */
/* ------------------------------------------------------------------------ */

#ifdef __cplusplus
extern "C" {
#endif

/* Allocates byte_length bytes from the host allocator into *inout_ptr. */
static inline iree_hal_executable_plugin_status_t
iree_hal_executable_plugin_allocator_malloc(
    iree_hal_executable_plugin_allocator_t allocator, size_t byte_length,
    void** inout_ptr) {
  iree_hal_executable_plugin_allocator_alloc_params_t params = {byte_length};
  return allocator.ctl(allocator.self,
                       IREE_HAL_EXECUTABLE_PLUGIN_ALLOCATOR_COMMAND_MALLOC,
                       &params, inout_ptr);
}

/* Returns ptr to the host allocator. */
static inline iree_hal_executable_plugin_status_t
iree_hal_executable_plugin_allocator_free(
    iree_hal_executable_plugin_allocator_t allocator, void* ptr) {
  return allocator.ctl(allocator.self,
                       IREE_HAL_EXECUTABLE_PLUGIN_ALLOCATOR_COMMAND_FREE, NULL,
                       &ptr);
}

/* True when an import name is optional (starts with `?`). */
static inline bool iree_hal_executable_plugin_import_is_optional(
    const char* symbol_name) {
  return symbol_name != NULL && symbol_name[0] == '?';
}

/* strcmp without libc, for standalone plugins. */
static inline int iree_hal_executable_plugin_strcmp(const char* lhs,
                                                    const char* rhs) {
  const unsigned char* a = (const unsigned char*)lhs;
  const unsigned char* b = (const unsigned char*)rhs;
  while (*a != '\0' && *a == *b) {
    ++a;
    ++b;
  }
  return (int)*a - (int)*b;
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* XPLUG_EXECUTABLE_PLUGIN_H_ */
