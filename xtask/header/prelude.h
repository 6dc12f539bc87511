
/* ------------------------------------------------------------------------ */
/* Features                                                                 */
/* ------------------------------------------------------------------------ */

/* Bits of iree_hal_executable_plugin_features_t. */
enum iree_hal_executable_plugin_feature_bits_t {
  IREE_HAL_EXECUTABLE_PLUGIN_FEATURE_NONE = 0u,
  /* Uses nothing but the environment handed to load(): no system calls, no
   * allocation outside the host allocator, no TLS, no writable globals. */
  IREE_HAL_EXECUTABLE_PLUGIN_FEATURE_STANDALONE = 1u << 0,
  /* Returns full iree_status_t objects; needs a host built with them. */
  IREE_HAL_EXECUTABLE_PLUGIN_FEATURE_FULL_STATUS = 1u << 1,
};

/* ------------------------------------------------------------------------ */
/* Sanitizers                                                               */
/* ------------------------------------------------------------------------ */

/* The sanitizer a plugin was compiled with; a host refuses a plugin whose
 * sanitizer it was not itself built with. */
typedef enum iree_hal_executable_plugin_sanitizer_kind_e {
  IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_NONE = 0,
  IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_ADDRESS = 1,   /* -fsanitize=address */
  IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_MEMORY = 2,    /* -fsanitize=memory */
  IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_THREAD = 3,    /* -fsanitize=thread */
  IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_UNDEFINED = 4, /* -fsanitize=undefined */
  IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_MAX_ENUM = INT32_MAX,
} iree_hal_executable_plugin_sanitizer_kind_t;

/* The sanitizer of the current translation unit, for a plugin's header. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_KIND IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_ADDRESS
#elif __has_feature(memory_sanitizer)
#define IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_KIND IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_MEMORY
#elif __has_feature(thread_sanitizer)
#define IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_KIND IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_THREAD
#endif
#endif /* __has_feature */
#if !defined(IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_KIND) && defined(__SANITIZE_ADDRESS__)
#define IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_KIND IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_ADDRESS
#endif
#if !defined(IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_KIND) && defined(__SANITIZE_THREAD__)
#define IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_KIND IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_THREAD
#endif
#if !defined(IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_KIND)
#define IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_KIND IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_NONE
#endif

/* ------------------------------------------------------------------------ */
/* Versions and the exported query function                                */
/* ------------------------------------------------------------------------ */

#define IREE_HAL_EXECUTABLE_PLUGIN_VERSION_0_1 0x00000001u
#define IREE_HAL_EXECUTABLE_PLUGIN_VERSION_LATEST IREE_HAL_EXECUTABLE_PLUGIN_VERSION_0_1

/* The symbol a shared-library plugin exports (look it up with dlsym). */
#define IREE_HAL_EXECUTABLE_PLUGIN_EXPORT_NAME "iree_hal_executable_plugin_query"

/* xplug's optional extra export listing a plugin's import names for tools
 * (see xplug_plugin_exports_fn_t); other hosts ignore it. */
#define XPLUG_PLUGIN_EXPORTS_NAME "xplug_plugin_exports"

/* xplug's optional extra export declaring a plugin's load parameters
 * (see xplug_param_decls_fn_t); a plugin with it refuses unlisted keys. */
#define XPLUG_PARAM_DECLS_NAME "xplug_plugin_params"

/* xplug's optional extra export giving the message of the last refused load
 * on the calling thread (see xplug_plugin_load_error_fn_t). */
#define XPLUG_PLUGIN_LOAD_ERROR_NAME "xplug_plugin_load_error"

/* xplug's optional extra export describing each import's args struct
 * (see xplug_import_layouts_fn_t), for tools that call imports by hand. */
#define XPLUG_IMPORT_LAYOUTS_NAME "xplug_import_layouts"

/* Marks the query function as exported from a shared library. */
#if defined(_WIN32) || defined(__CYGWIN__)
#define IREE_HAL_EXECUTABLE_PLUGIN_EXPORT __declspec(dllexport)
#else
#define IREE_HAL_EXECUTABLE_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ------------------------------------------------------------------------ */
/* Status                                                                   */
/* ------------------------------------------------------------------------ */

/* Status codes; the code of a status value is its bits under
 * IREE_HAL_EXECUTABLE_PLUGIN_STATUS_CODE_MASK. Codes without a name here are
 * still valid codes. */
typedef enum iree_hal_executable_plugin_status_code_e {
  IREE_HAL_EXECUTABLE_PLUGIN_STATUS_OK = 0,
  IREE_HAL_EXECUTABLE_PLUGIN_STATUS_CANCELLED = 1,
  IREE_HAL_EXECUTABLE_PLUGIN_STATUS_UNKNOWN = 2,
  IREE_HAL_EXECUTABLE_PLUGIN_STATUS_INVALID_ARGUMENT = 3,
  IREE_HAL_EXECUTABLE_PLUGIN_STATUS_DEADLINE_EXCEEDED = 4,
  IREE_HAL_EXECUTABLE_PLUGIN_STATUS_NOT_FOUND = 5,
  IREE_HAL_EXECUTABLE_PLUGIN_STATUS_ALREADY_EXISTS = 6,
  IREE_HAL_EXECUTABLE_PLUGIN_STATUS_PERMISSION_DENIED = 7,
  IREE_HAL_EXECUTABLE_PLUGIN_STATUS_RESOURCE_EXHAUSTED = 8,
  IREE_HAL_EXECUTABLE_PLUGIN_STATUS_FAILED_PRECONDITION = 9,
  IREE_HAL_EXECUTABLE_PLUGIN_STATUS_ABORTED = 10,
  IREE_HAL_EXECUTABLE_PLUGIN_STATUS_OUT_OF_RANGE = 11,
  IREE_HAL_EXECUTABLE_PLUGIN_STATUS_UNIMPLEMENTED = 12,
  IREE_HAL_EXECUTABLE_PLUGIN_STATUS_INTERNAL = 13,
  IREE_HAL_EXECUTABLE_PLUGIN_STATUS_UNAVAILABLE = 14,
  IREE_HAL_EXECUTABLE_PLUGIN_STATUS_DATA_LOSS = 15,
  IREE_HAL_EXECUTABLE_PLUGIN_STATUS_UNAUTHENTICATED = 16,
  IREE_HAL_EXECUTABLE_PLUGIN_STATUS_DEFERRED = 17,
  IREE_HAL_EXECUTABLE_PLUGIN_STATUS_CODE_MASK = 0x1Fu,
} iree_hal_executable_plugin_status_code_t;

/* A pointer-sized status; plain codes unless the plugin has FULL_STATUS. */
typedef struct iree_status_handle_t* iree_hal_executable_plugin_status_t;

#define iree_hal_executable_plugin_status_from_code(code)                  \
  ((iree_hal_executable_plugin_status_t)(                                  \
      (uintptr_t)((iree_hal_executable_plugin_status_code_t)(code)) &      \
      IREE_HAL_EXECUTABLE_PLUGIN_STATUS_CODE_MASK))

#define iree_hal_executable_plugin_status_code(value)                      \
  ((iree_hal_executable_plugin_status_t)(((uintptr_t)(value)) &            \
                                         IREE_HAL_EXECUTABLE_PLUGIN_STATUS_CODE_MASK))

#define iree_hal_executable_plugin_ok_status() \
  iree_hal_executable_plugin_status_from_code(IREE_HAL_EXECUTABLE_PLUGIN_STATUS_OK)

#define iree_hal_executable_plugin_status_is_ok(value) \
  ((uintptr_t)(value) == IREE_HAL_EXECUTABLE_PLUGIN_STATUS_OK)

/* ------------------------------------------------------------------------ */
/* Allocator commands                                                       */
/* ------------------------------------------------------------------------ */

typedef enum iree_hal_executable_plugin_allocator_command_e {
  IREE_HAL_EXECUTABLE_PLUGIN_ALLOCATOR_COMMAND_MALLOC = 0,
  IREE_HAL_EXECUTABLE_PLUGIN_ALLOCATOR_COMMAND_CALLOC = 1,
  IREE_HAL_EXECUTABLE_PLUGIN_ALLOCATOR_COMMAND_REALLOC = 2,
  IREE_HAL_EXECUTABLE_PLUGIN_ALLOCATOR_COMMAND_FREE = 3,
} iree_hal_executable_plugin_allocator_command_t;

/* ------------------------------------------------------------------------ */
/* Strings                                                                  */
/* ------------------------------------------------------------------------ */

/* A byte string that is not NUL-terminated: always use `size`. */
typedef struct iree_hal_executable_plugin_string_view_t {
  const char* data;
  size_t size;
} iree_hal_executable_plugin_string_view_t;

/* A key/value load parameter; the fields answer to both key/value and
 * first/second. */
typedef struct iree_hal_executable_plugin_string_pair_t {
  union {
    iree_hal_executable_plugin_string_view_t first;
    iree_hal_executable_plugin_string_view_t key;
  };
  union {
    iree_hal_executable_plugin_string_view_t second;
    iree_hal_executable_plugin_string_view_t value;
  };
} iree_hal_executable_plugin_string_pair_t;

/* ------------------------------------------------------------------------ */
/* Resolution                                                               */
/* ------------------------------------------------------------------------ */

enum iree_hal_executable_plugin_resolution_bits_e {
  /* At least one optional (`?`) import stayed unresolved. */
  IREE_HAL_EXECUTABLE_PLUGIN_RESOLUTION_MISSING_OPTIONAL = 1u << 0,
};

/* ------------------------------------------------------------------------ */
/* Generated from xplug-abi                                                 */
/* ------------------------------------------------------------------------ */
