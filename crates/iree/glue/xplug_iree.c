// The few IREE runtime calls whose declarations the eerie-sys bindings do not
// carry (device drivers, task executors, executable loaders), wrapped as plain functions over opaque pointers for
// `crates/iree/src/sys.rs`. Nothing here re-implements IREE: every function
// calls IREE's own constructors in the order its own tools use them.

#include <inttypes.h>
#include <string.h>

#include "iree/async/frontier_tracker.h"
#include "iree/async/util/proactor_pool.h"
#include "iree/base/api.h"
#include "iree/hal/api.h"
#include "iree/hal/drivers/local_sync/sync_device.h"
#include "iree/hal/drivers/local_task/task_device.h"
#include "iree/hal/local/executable_loader.h"
#include "iree/hal/local/loaders/embedded_elf_loader.h"
#include "iree/hal/local/loaders/system_library_loader.h"
#include "iree/modules/hal/module.h"
#include "iree/task/api.h"
#include "iree/vm/api.h"

// Device kinds, as `sys::DeviceKind` spells them.
#define XPLUG_IREE_DEVICE_LOCAL_SYNC 0
#define XPLUG_IREE_DEVICE_LOCAL_TASK 1

// The number of executable loaders every device gets: embedded ELF and
// system library.
#define XPLUG_IREE_LOADER_COUNT 2

// Checks the bytes of an embedded ELF executable before IREE's loader parses
// them: 0 when they are fit to load; otherwise non-zero, with a
// NUL-terminated reason written into `message` (`capacity` bytes).
typedef int (*xplug_iree_elf_check_fn)(const uint8_t* data,
                                       iree_host_size_t length, char* message,
                                       iree_host_size_t capacity);

// IREE's embedded-ELF loader behind a check of every executable's bytes.
// IREE's ELF parser follows the file's dynamic-table addresses unchecked (a
// flipped byte in a compiled module makes it read wherever the address
// points); xplug refuses such an executable with an error status instead,
// and hands every other call to IREE's loader unchanged.
typedef struct xplug_iree_checked_loader_t {
  iree_hal_executable_loader_t base;
  iree_allocator_t host_allocator;
  iree_hal_executable_loader_t* inner;
  xplug_iree_elf_check_fn check;
} xplug_iree_checked_loader_t;

static void xplug_iree_checked_loader_destroy(
    iree_hal_executable_loader_t* base_loader) {
  xplug_iree_checked_loader_t* loader =
      (xplug_iree_checked_loader_t*)base_loader;
  iree_allocator_t host_allocator = loader->host_allocator;
  iree_hal_executable_loader_release(loader->inner);
  iree_allocator_free(host_allocator, loader);
}

static iree_status_t xplug_iree_checked_loader_infer_format(
    iree_hal_executable_loader_t* base_loader,
    iree_hal_executable_caching_mode_t caching_mode,
    iree_const_byte_span_t executable_data,
    iree_host_size_t executable_format_capacity, char* executable_format,
    iree_host_size_t* out_inferred_size) {
  xplug_iree_checked_loader_t* loader =
      (xplug_iree_checked_loader_t*)base_loader;
  return iree_hal_executable_loader_infer_format(
      loader->inner, caching_mode, executable_data, executable_format_capacity,
      executable_format, out_inferred_size);
}

static bool xplug_iree_checked_loader_query_support(
    iree_hal_executable_loader_t* base_loader,
    iree_hal_executable_caching_mode_t caching_mode,
    iree_string_view_t executable_format) {
  xplug_iree_checked_loader_t* loader =
      (xplug_iree_checked_loader_t*)base_loader;
  return iree_hal_executable_loader_query_support(loader->inner, caching_mode,
                                                  executable_format);
}

static iree_status_t xplug_iree_checked_loader_try_load(
    iree_hal_executable_loader_t* base_loader,
    const iree_hal_executable_params_t* executable_params,
    iree_host_size_t worker_capacity, iree_hal_executable_t** out_executable) {
  xplug_iree_checked_loader_t* loader =
      (xplug_iree_checked_loader_t*)base_loader;
  char message[256] = {0};
  if (loader->check(executable_params->executable_data.data,
                    executable_params->executable_data.data_length, message,
                    sizeof(message)) != 0) {
    message[sizeof(message) - 1] = 0;
    return iree_make_status(
        IREE_STATUS_INVALID_ARGUMENT,
        "embedded ELF executable refused before loading (xplug's ELF "
        "checks): %s",
        message);
  }
  return iree_hal_executable_loader_try_load(loader->inner, executable_params,
                                             worker_capacity, out_executable);
}

static const iree_hal_executable_loader_vtable_t
    xplug_iree_checked_loader_vtable = {
        .destroy = xplug_iree_checked_loader_destroy,
        .infer_format = xplug_iree_checked_loader_infer_format,
        .query_support = xplug_iree_checked_loader_query_support,
        .try_load = xplug_iree_checked_loader_try_load,
};

// Creates the embedded-ELF (behind `elf_check`) and system-library loaders
// with no plugin manager and installs `provider` as their import provider,
// so every import of every executable they load goes through it: xplug's
// provider, or any other `{ self, resolve }` pair (IREE's own plugin
// manager's, the benchmarks' anchor, comes from tests/iree-reference).
static iree_status_t xplug_iree_loaders_create(
    iree_hal_executable_import_provider_t provider,
    xplug_iree_elf_check_fn elf_check, iree_allocator_t host_allocator,
    iree_hal_executable_loader_t* loaders[XPLUG_IREE_LOADER_COUNT]) {
  memset(loaders, 0, sizeof(loaders[0]) * XPLUG_IREE_LOADER_COUNT);
  iree_hal_executable_loader_t* embedded = NULL;
  iree_status_t status = iree_hal_embedded_elf_loader_create(
      /*plugin_manager=*/NULL, host_allocator, &embedded);
  if (iree_status_is_ok(status)) {
    // IREE's loaders keep their provider in the public base struct and read
    // it on every executable load.
    embedded->import_provider = provider;
    xplug_iree_checked_loader_t* checked = NULL;
    status = iree_allocator_malloc(host_allocator, sizeof(*checked),
                                   (void**)&checked);
    if (iree_status_is_ok(status)) {
      iree_hal_executable_loader_initialize(&xplug_iree_checked_loader_vtable,
                                            provider, &checked->base);
      checked->host_allocator = host_allocator;
      checked->inner = embedded;  // The checked loader owns the reference.
      checked->check = elf_check;
      embedded = NULL;
      loaders[0] = &checked->base;
    }
  }
  iree_hal_executable_loader_release(embedded);
  if (iree_status_is_ok(status)) {
    status = iree_hal_system_library_loader_create(
        /*plugin_manager=*/NULL, host_allocator, &loaders[1]);
  }
  if (iree_status_is_ok(status)) {
    loaders[1]->import_provider = provider;
  }
  if (!iree_status_is_ok(status)) {
    iree_hal_executable_loader_release(loaders[0]);
    iree_hal_executable_loader_release(loaders[1]);
    loaders[0] = NULL;
    loaders[1] = NULL;
  }
  return status;
}

iree_status_t xplug_iree_device_create(
    int kind, iree_host_size_t worker_count, int abort_on_failure,
    iree_async_proactor_pool_t* proactor_pool,
    iree_hal_executable_import_provider_t provider,
    xplug_iree_elf_check_fn elf_check,
    iree_allocator_t host_allocator, iree_hal_device_t** out_device) {
  *out_device = NULL;
  iree_hal_executable_loader_t* loaders[XPLUG_IREE_LOADER_COUNT];
  IREE_RETURN_IF_ERROR(
      xplug_iree_loaders_create(provider, elf_check, host_allocator, loaders));

  iree_hal_allocator_t* device_allocator = NULL;
  iree_status_t status = iree_hal_allocator_create_heap(
      kind == XPLUG_IREE_DEVICE_LOCAL_SYNC ? iree_make_cstring_view("local-sync")
                                           : iree_make_cstring_view("local-task"),
      host_allocator, host_allocator, &device_allocator);

  iree_hal_device_create_params_t create_params =
      iree_hal_device_create_params_default();
  create_params.proactor_pool = proactor_pool;

  if (iree_status_is_ok(status) && kind == XPLUG_IREE_DEVICE_LOCAL_SYNC) {
    iree_hal_sync_device_params_t params;
    iree_hal_sync_device_params_initialize(&params);
    status = iree_hal_sync_device_create(
        iree_make_cstring_view("local-sync"), &params, &create_params,
        XPLUG_IREE_LOADER_COUNT, loaders, device_allocator, host_allocator,
        out_device);
  } else if (iree_status_is_ok(status) && kind == XPLUG_IREE_DEVICE_LOCAL_TASK) {
    iree_hal_task_device_params_t params;
    iree_hal_task_device_params_initialize(&params);
    if (abort_on_failure) {
      params.queue_scope_flags |= IREE_TASK_SCOPE_FLAG_ABORT_ON_FAILURE;
    }
    // As IREE's local-task driver: up to 16 executors (one per NUMA node).
    iree_task_executor_t* executors[16] = {NULL};
    iree_host_size_t executor_count = 0;
    if (worker_count == 0) {
      status = iree_task_executors_create_from_flags(
          host_allocator, IREE_ARRAYSIZE(executors), executors,
          &executor_count);
    } else {
      iree_task_executor_options_t options;
      status = iree_task_executor_options_initialize_from_flags(&options);
      if (iree_status_is_ok(status)) {
        iree_task_topology_t topology;
        iree_task_topology_initialize(&topology);
        iree_task_topology_initialize_from_group_count(worker_count,
                                                       &topology);
        status = iree_task_executor_create(options, &topology, host_allocator,
                                           &executors[0]);
        iree_task_topology_deinitialize(&topology);
        if (iree_status_is_ok(status)) executor_count = 1;
      }
    }
    if (iree_status_is_ok(status) && executor_count == 0) {
      status = iree_make_status(IREE_STATUS_INVALID_ARGUMENT,
                                "the task flags select no CPU for local-task");
    }
    if (iree_status_is_ok(status)) {
      status = iree_hal_task_device_create(
          iree_make_cstring_view("local-task"), &params, executor_count,
          executors, XPLUG_IREE_LOADER_COUNT, loaders, device_allocator,
          &create_params, host_allocator, out_device);
    }
    // On failure IREE has released what it made, and may report more
    // executors than the array holds (OUT_OF_RANGE): release only ours.
    if (!iree_status_is_ok(status) && executor_count > IREE_ARRAYSIZE(executors)) {
      executor_count = 0;
    }
    for (iree_host_size_t i = 0; i < executor_count; ++i) {
      iree_task_executor_release(executors[i]);
    }
  } else if (iree_status_is_ok(status)) {
    status = iree_make_status(IREE_STATUS_INVALID_ARGUMENT,
                              "unknown device kind %d", kind);
  }

  // The device retains what it uses.
  iree_hal_allocator_release(device_allocator);
  iree_hal_executable_loader_release(loaders[0]);
  iree_hal_executable_loader_release(loaders[1]);
  return status;
}

// The device group of one device, made once with the device. IREE places a
// device in a group's topology once: the device keeps a pointer into the
// group's topology and retains the group's frontier tracker, and assigning
// it again (a second group over the same device) overwrites both without
// releasing the first tracker, which leaks, and leaves the device pointing
// into the first group after it is freed. So every HAL module made on a
// device is created over this one group, which outlives them.
iree_status_t xplug_iree_device_group_create(
    iree_hal_device_t* device, iree_allocator_t host_allocator,
    iree_hal_device_group_t** out_group) {
  *out_group = NULL;
  iree_async_frontier_tracker_t* frontier_tracker = NULL;
  IREE_RETURN_IF_ERROR(iree_async_frontier_tracker_create(
      iree_async_frontier_tracker_options_default(), host_allocator,
      &frontier_tracker));
  // The group retains the tracker.
  iree_status_t status = iree_hal_device_group_create_from_device(
      device, frontier_tracker, host_allocator, out_group);
  iree_async_frontier_tracker_release(frontier_tracker);
  return status;
}

// The HAL module over `group` (retained by the module).
iree_status_t xplug_iree_hal_module_create(iree_vm_instance_t* instance,
                                           iree_hal_device_group_t* group,
                                           iree_allocator_t host_allocator,
                                           iree_vm_module_t** out_module) {
  *out_module = NULL;
  return iree_hal_module_create(
      instance, iree_hal_module_device_policy_default(), group,
      IREE_HAL_MODULE_FLAG_NONE, iree_hal_module_debug_sink_null(),
      host_allocator, out_module);
}

iree_status_t xplug_iree_proactor_pool_create(
    iree_allocator_t host_allocator, iree_async_proactor_pool_t** out_pool) {
  return iree_async_proactor_pool_create(
      iree_numa_node_count(), /*node_ids=*/NULL,
      iree_async_proactor_pool_options_default(), host_allocator, out_pool);
}

iree_allocator_t xplug_iree_allocator_system(void) {
  return iree_allocator_system();
}

// A buffer view over a copy of `data`, in device-local memory that the host
// can map, as IREE's tools make their inputs.
iree_status_t xplug_iree_buffer_view_from_data(
    iree_hal_device_t* device, iree_host_size_t shape_rank,
    const iree_hal_dim_t* shape, iree_hal_element_type_t element_type,
    const void* data, iree_host_size_t data_length,
    iree_hal_buffer_view_t** out_buffer_view) {
  iree_hal_buffer_params_t params = {0};
  params.type = IREE_HAL_MEMORY_TYPE_DEVICE_LOCAL;
  params.usage = IREE_HAL_BUFFER_USAGE_DEFAULT;
  return iree_hal_buffer_view_allocate_buffer_copy(
      device, iree_hal_device_allocator(device), shape_rank, shape,
      element_type, IREE_HAL_ENCODING_TYPE_DENSE_ROW_MAJOR, params,
      iree_make_const_byte_span(data, data_length), out_buffer_view);
}

// Parses IREE's text form of a tensor (`4xf32=1,2,3,4`) into a buffer view.
iree_status_t xplug_iree_buffer_view_parse(iree_hal_device_t* device,
                                           const char* text,
                                           iree_host_size_t text_length,
                                           iree_hal_buffer_view_t** out_view) {
  return iree_hal_buffer_view_parse(iree_make_string_view(text, text_length),
                                    device, iree_hal_device_allocator(device),
                                    out_view);
}

// Copies a buffer view's contents (`byte_length` bytes) to host memory.
iree_status_t xplug_iree_buffer_view_read(iree_hal_device_t* device,
                                          iree_hal_buffer_view_t* view,
                                          void* target,
                                          iree_host_size_t byte_length) {
  return iree_hal_device_transfer_d2h(
      device, iree_hal_buffer_view_buffer(view), 0, target, byte_length,
      IREE_HAL_TRANSFER_BUFFER_FLAG_DEFAULT, iree_infinite_timeout());
}

iree_host_size_t xplug_iree_buffer_view_byte_length(
    iree_hal_buffer_view_t* view) {
  return (iree_host_size_t)iree_hal_buffer_view_byte_length(view);
}

void xplug_iree_buffer_view_release(iree_hal_buffer_view_t* view) {
  iree_hal_buffer_view_release(view);
}

// An empty list of variants for call arguments or results.
iree_status_t xplug_iree_list_create(iree_host_size_t capacity,
                                     iree_allocator_t host_allocator,
                                     iree_vm_list_t** out_list) {
  return iree_vm_list_create(iree_vm_make_undefined_type_def(), capacity,
                             host_allocator, out_list);
}

// Appends `view` to `list` (the list takes its own reference).
iree_status_t xplug_iree_list_push_buffer_view(iree_vm_list_t* list,
                                               iree_hal_buffer_view_t* view) {
  iree_vm_ref_t ref = iree_hal_buffer_view_retain_ref(view);
  return iree_vm_list_push_ref_move(list, &ref);
}

// What one element of a result list holds, as `sys::ValueKind` spells it.
#define XPLUG_IREE_VALUE_EMPTY 0
#define XPLUG_IREE_VALUE_BUFFER_VIEW 1
#define XPLUG_IREE_VALUE_INTEGER 2
#define XPLUG_IREE_VALUE_FLOAT 3
#define XPLUG_IREE_VALUE_OTHER_REF 4

// Reads element `i` of `list`: a buffer view (retained for the caller), an
// integer or float value (widened, with its bit width), or another kind.
iree_status_t xplug_iree_list_get(iree_vm_list_t* list, iree_host_size_t i,
                                  int* out_kind, int* out_bits,
                                  iree_hal_buffer_view_t** out_view,
                                  int64_t* out_integer, double* out_float) {
  *out_kind = XPLUG_IREE_VALUE_EMPTY;
  *out_bits = 0;
  *out_view = NULL;
  *out_integer = 0;
  *out_float = 0.0;
  iree_vm_variant_t variant = iree_vm_variant_empty();
  IREE_RETURN_IF_ERROR(iree_vm_list_get_variant_assign(list, i, &variant));
  if (iree_vm_variant_is_value(variant)) {
    switch (iree_vm_type_def_as_value(variant.type)) {
      case IREE_VM_VALUE_TYPE_I8: *out_kind = XPLUG_IREE_VALUE_INTEGER; *out_bits = 8; *out_integer = variant.i8; break;
      case IREE_VM_VALUE_TYPE_I16: *out_kind = XPLUG_IREE_VALUE_INTEGER; *out_bits = 16; *out_integer = variant.i16; break;
      case IREE_VM_VALUE_TYPE_I32: *out_kind = XPLUG_IREE_VALUE_INTEGER; *out_bits = 32; *out_integer = variant.i32; break;
      case IREE_VM_VALUE_TYPE_I64: *out_kind = XPLUG_IREE_VALUE_INTEGER; *out_bits = 64; *out_integer = variant.i64; break;
      case IREE_VM_VALUE_TYPE_F32: *out_kind = XPLUG_IREE_VALUE_FLOAT; *out_bits = 32; *out_float = variant.f32; break;
      case IREE_VM_VALUE_TYPE_F64: *out_kind = XPLUG_IREE_VALUE_FLOAT; *out_bits = 64; *out_float = variant.f64; break;
      default: *out_kind = XPLUG_IREE_VALUE_OTHER_REF; break;
    }
  } else if (iree_vm_variant_is_ref(variant)) {
    if (iree_hal_buffer_view_isa(variant.ref)) {
      *out_kind = XPLUG_IREE_VALUE_BUFFER_VIEW;
      *out_view = iree_hal_buffer_view_deref(variant.ref);
      iree_hal_buffer_view_retain(*out_view);
    } else {
      *out_kind = XPLUG_IREE_VALUE_OTHER_REF;
    }
  }
  return iree_ok_status();
}

// Formats element `i` of `list` the way IREE's tools print a result: the
// type name on one line and the contents (at most `max_element_count`
// elements) for buffer views, `i32=7`-style for values. The text is
// allocated from `host_allocator` and NUL-terminated.
iree_status_t xplug_iree_list_format(iree_vm_list_t* list, iree_host_size_t i,
                                     iree_host_size_t max_element_count,
                                     iree_allocator_t host_allocator,
                                     char** out_text,
                                     iree_host_size_t* out_length) {
  *out_text = NULL;
  *out_length = 0;
  iree_vm_variant_t variant = iree_vm_variant_empty();
  IREE_RETURN_IF_ERROR(iree_vm_list_get_variant_assign(list, i, &variant));
  iree_string_builder_t builder;
  iree_string_builder_initialize(host_allocator, &builder);
  iree_status_t status = iree_ok_status();
  if (iree_vm_variant_is_value(variant)) {
    switch (iree_vm_type_def_as_value(variant.type)) {
      case IREE_VM_VALUE_TYPE_I8: status = iree_string_builder_append_format(&builder, "i8=%" PRIi8, variant.i8); break;
      case IREE_VM_VALUE_TYPE_I16: status = iree_string_builder_append_format(&builder, "i16=%" PRIi16, variant.i16); break;
      case IREE_VM_VALUE_TYPE_I32: status = iree_string_builder_append_format(&builder, "i32=%" PRIi32, variant.i32); break;
      case IREE_VM_VALUE_TYPE_I64: status = iree_string_builder_append_format(&builder, "i64=%" PRIi64, variant.i64); break;
      case IREE_VM_VALUE_TYPE_F32: status = iree_string_builder_append_format(&builder, "f32=%g", variant.f32); break;
      case IREE_VM_VALUE_TYPE_F64: status = iree_string_builder_append_format(&builder, "f64=%g", variant.f64); break;
      default: status = iree_string_builder_append_string(&builder, IREE_SV("?")); break;
    }
  } else if (iree_vm_variant_is_ref(variant)) {
    status = iree_string_builder_append_string(
        &builder, iree_vm_ref_type_name(iree_vm_type_def_as_ref(variant.type)));
    if (iree_status_is_ok(status)) {
      status = iree_string_builder_append_string(&builder, IREE_SV("\n"));
    }
    if (iree_status_is_ok(status)) {
      if (iree_hal_buffer_view_isa(variant.ref)) {
        status = iree_hal_buffer_view_append_to_builder(
            iree_hal_buffer_view_deref(variant.ref), max_element_count,
            &builder);
      } else {
        status = iree_string_builder_append_string(&builder,
                                                   IREE_SV("(no printer)"));
      }
    }
  } else {
    status = iree_string_builder_append_string(&builder, IREE_SV("(null)"));
  }
  if (iree_status_is_ok(status)) {
    *out_length = iree_string_builder_size(&builder);
    *out_text = iree_string_builder_take_storage(&builder);
    if (!*out_text) {
      // An empty builder owns no storage; hand back an empty string.
      status = iree_allocator_malloc(host_allocator, 1, (void**)out_text);
      if (iree_status_is_ok(status)) (*out_text)[0] = 0;
    }
  }
  iree_string_builder_deinitialize(&builder);
  return status;
}

// Appends to `list` one argument that is not a tensor, the way
// iree-run-module's `--input` makes it for the calling-convention type
// `cconv_type` (IREE's iree/tooling/function_io.c,
// iree_tooling_parse_null_into and iree_tooling_parse_primitive_into): with
// `is_null` (`(null)` or `(ignored)`) a zero value or a null reference;
// otherwise `text` parsed by IREE's own iree_string_view_atoi/atof for that
// type. IREE only reads `text` during the call (the status message quotes at
// most its first 64 bytes, formatted into the status's own storage).
iree_status_t xplug_iree_list_push_primitive(iree_vm_list_t* list,
                                             char cconv_type, const char* text,
                                             iree_host_size_t text_length,
                                             int is_null) {
  iree_string_view_t string = iree_make_string_view(text, text_length);
  int quoted = (int)(text_length < 64 ? text_length : 64);
  iree_vm_value_t value;
  bool parsed = true;
  switch (cconv_type) {
    case IREE_VM_CCONV_TYPE_I32:
      value = iree_vm_value_make_i32(0);
      if (!is_null) parsed = iree_string_view_atoi_int32(string, &value.i32);
      break;
    case IREE_VM_CCONV_TYPE_I64:
      value = iree_vm_value_make_i64(0);
      if (!is_null) parsed = iree_string_view_atoi_int64(string, &value.i64);
      break;
    case IREE_VM_CCONV_TYPE_F32:
      value = iree_vm_value_make_f32(0.0f);
      if (!is_null) parsed = iree_string_view_atof(string, &value.f32);
      break;
    case IREE_VM_CCONV_TYPE_F64:
      value = iree_vm_value_make_f64(0.0);
      if (!is_null) parsed = iree_string_view_atod(string, &value.f64);
      break;
    case IREE_VM_CCONV_TYPE_REF:
      if (is_null) {
        iree_vm_ref_t null_ref = iree_vm_ref_null();
        return iree_vm_list_push_ref_retain(list, &null_ref);
      }
      return iree_make_status(IREE_STATUS_INVALID_ARGUMENT,
                              "a reference argument needs a tensor, not `%.*s`",
                              quoted, text);
    default:
      return iree_make_status(IREE_STATUS_UNIMPLEMENTED,
                              "unimplemented cconv type `%c`", cconv_type);
  }
  if (!parsed) {
    const char* type_name = cconv_type == IREE_VM_CCONV_TYPE_I32   ? "i32"
                            : cconv_type == IREE_VM_CCONV_TYPE_I64 ? "i64"
                            : cconv_type == IREE_VM_CCONV_TYPE_F32 ? "f32"
                                                                   : "f64";
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT,
                            "parsing value `%.*s` as %s", quoted, text,
                            type_name);
  }
  return iree_vm_list_push_value(list, &value);
}

// Appends the buffer under `view` to `list` (the list takes its own
// reference), as iree-run-module passes an `--input=&TYPE=...` (storage
// for an output, iree/tooling/function_io.c,
// iree_tooling_parse_storage_into).
iree_status_t xplug_iree_list_push_buffer_of_view(
    iree_vm_list_t* list, iree_hal_buffer_view_t* view) {
  iree_vm_ref_t ref = iree_hal_buffer_retain_ref(iree_hal_buffer_view_buffer(view));
  return iree_vm_list_push_ref_move(list, &ref);
}

//===----------------------------------------------------------------------===//
// Parameters (`--parameters=[SCOPE=]FILE`), as iree-run-module provides them
// (IREE's tooling/parameter_util.c): one index per scope, each file opened
// in the session's parameter mode and indexed by the parser its
// extension names, one index provider per scope, all given to IREE's
// `io_parameters` module.
//===----------------------------------------------------------------------===//

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "iree/io/file_handle.h"
#include "iree/io/formats/parser_registry.h"
#include "iree/io/parameter_index.h"
#include "iree/io/parameter_index_provider.h"
#include "iree/modules/io/parameters/module.h"

iree_status_t xplug_iree_parameter_index_create(
    iree_allocator_t host_allocator, iree_io_parameter_index_t** out_index) {
  return iree_io_parameter_index_create(host_allocator, out_index);
}

void xplug_iree_parameter_index_release(iree_io_parameter_index_t* index) {
  iree_io_parameter_index_release(index);
}


// Parameter modes, as `sys::PARAMETER_MODE_*` spells them.
#define XPLUG_IREE_PARAMETER_MODE_FILE 0
#define XPLUG_IREE_PARAMETER_MODE_PRELOAD 1
#define XPLUG_IREE_PARAMETER_MODE_MMAP 2

// Unmaps the archive when IREE releases the last reference to its handle.
static void xplug_iree_parameter_mapping_release(
    void* user_data, iree_io_file_handle_primitive_t handle_primitive) {
  (void)handle_primitive;
  iree_io_file_mapping_release((iree_io_file_mapping_t*)user_data);
}

// `--parameter_mode=mmap`: maps the whole file copy-on-write (MAP_PRIVATE,
// read and write, so a program writing a parameter changes its own pages,
// never the file) and wraps the mapping as a host allocation. IREE's index
// provider imports a host allocation into a device buffer without a copy
// where the device's allocator can (the heap allocator of local-sync and
// local-task can), so only the pages the program touches are read.
static iree_status_t xplug_iree_parameter_file_map(
    iree_string_view_t path, iree_allocator_t host_allocator,
    iree_io_file_handle_t** out_handle) {
  *out_handle = NULL;
  iree_io_file_handle_t* file_handle = NULL;
  IREE_RETURN_IF_ERROR(iree_io_file_handle_open(
      IREE_IO_FILE_MODE_READ | IREE_IO_FILE_MODE_SHARE_READ, path,
      host_allocator, &file_handle));
  iree_io_file_mapping_t* mapping = NULL;
  iree_status_t status = iree_io_file_map_view(
      file_handle, IREE_IO_FILE_ACCESS_READ | IREE_IO_FILE_ACCESS_WRITE, 0,
      IREE_HOST_SIZE_MAX,
      IREE_IO_FILE_MAPPING_FLAG_PRIVATE |
          IREE_IO_FILE_MAPPING_FLAG_EXCLUDE_FROM_DUMPS,
      host_allocator, &mapping);
  // The mapping keeps the file handle it was made from.
  iree_io_file_handle_release(file_handle);
  if (iree_status_is_ok(status)) {
    const iree_io_file_handle_release_callback_t release = {
        .fn = xplug_iree_parameter_mapping_release,
        .user_data = mapping,
    };
    status = iree_io_file_handle_wrap_host_allocation(
        IREE_IO_FILE_ACCESS_READ, iree_io_file_mapping_contents_rw(mapping),
        release, host_allocator, out_handle);
    if (!iree_status_is_ok(status)) iree_io_file_mapping_release(mapping);
  }
  return status;
}

// Opens the archive at `path` (`path_length` bytes) in `mode`: `file` and
// `preload` are iree-run-module's `--parameter_mode` values, opened as its
// tooling/parameter_util.c opens them; `mmap` is xplug's (see
// xplug_iree_parameter_file_map). `*out_length` is the archive's length as
// the handle holds it: the mapping's or the copy's length, or the open
// file's size, which every entry IREE's parser indexes must lie within.
iree_status_t xplug_iree_parameter_file_open(
    const char* path, iree_host_size_t path_length, int mode,
    iree_allocator_t host_allocator, iree_io_file_handle_t** out_handle,
    uint64_t* out_length) {
  *out_handle = NULL;
  *out_length = 0;
  iree_string_view_t path_view = iree_make_string_view(path, path_length);
  iree_io_file_handle_t* file_handle = NULL;
  switch (mode) {
    case XPLUG_IREE_PARAMETER_MODE_FILE:
      IREE_RETURN_IF_ERROR(iree_io_file_handle_open(
          IREE_IO_FILE_MODE_READ | IREE_IO_FILE_MODE_SHARE_READ |
              IREE_IO_FILE_MODE_ASYNC,
          path_view, host_allocator, &file_handle));
      break;
    case XPLUG_IREE_PARAMETER_MODE_PRELOAD:
      IREE_RETURN_IF_ERROR(iree_io_file_handle_preload(
          IREE_IO_FILE_MODE_READ | IREE_IO_FILE_MODE_SHARE_READ, path_view,
          host_allocator, &file_handle));
      break;
    case XPLUG_IREE_PARAMETER_MODE_MMAP:
      IREE_RETURN_IF_ERROR(
          xplug_iree_parameter_file_map(path_view, host_allocator, &file_handle));
      break;
    default:
      return iree_make_status(IREE_STATUS_INVALID_ARGUMENT,
                              "unknown parameter mode %d", mode);
  }
  iree_io_file_handle_primitive_t primitive =
      iree_io_file_handle_primitive(file_handle);
  iree_status_t status = iree_ok_status();
  switch (primitive.type) {
    case IREE_IO_FILE_HANDLE_TYPE_HOST_ALLOCATION:
      *out_length = primitive.value.host_allocation.data_length;
      break;
    case IREE_IO_FILE_HANDLE_TYPE_FD: {
      struct stat info;
      if (fstat(primitive.value.fd, &info) != 0) {
        status = iree_make_status(iree_status_code_from_errno(errno),
                                  "cannot stat the open archive");
      } else {
        *out_length = (uint64_t)info.st_size;
      }
      break;
    }
    default:
      status = iree_make_status(IREE_STATUS_UNIMPLEMENTED,
                                "unknown file handle type %d",
                                (int)primitive.type);
      break;
  }
  if (iree_status_is_ok(status)) {
    *out_handle = file_handle;
  } else {
    iree_io_file_handle_release(file_handle);
  }
  return status;
}

void xplug_iree_parameter_file_release(iree_io_file_handle_t* handle) {
  iree_io_file_handle_release(handle);
}

// Copies `length` bytes at `offset` of the archive `handle` holds (bytes
// `[offset, offset + length)` of at most `archive_length`, which
// xplug_iree_parameter_file_open reported) into `buffer`: xplug reads the
// archive's header through the very handle IREE's parser reads.
iree_status_t xplug_iree_parameter_file_read(iree_io_file_handle_t* handle,
                                             uint64_t archive_length,
                                             uint64_t offset, void* buffer,
                                             iree_host_size_t length) {
  if (offset > archive_length || length > archive_length - offset) {
    return iree_make_status(IREE_STATUS_OUT_OF_RANGE,
                            "read of %" PRIhsz " bytes at %" PRIu64
                            " is past the archive's %" PRIu64 " bytes",
                            length, offset, archive_length);
  }
  iree_io_file_handle_primitive_t primitive =
      iree_io_file_handle_primitive(handle);
  switch (primitive.type) {
    case IREE_IO_FILE_HANDLE_TYPE_HOST_ALLOCATION:
      if (archive_length > primitive.value.host_allocation.data_length) {
        return iree_make_status(IREE_STATUS_OUT_OF_RANGE,
                                "the archive's length changed");
      }
      memcpy(buffer, primitive.value.host_allocation.data + offset, length);
      return iree_ok_status();
    case IREE_IO_FILE_HANDLE_TYPE_FD: {
      uint8_t* bytes = (uint8_t*)buffer;
      while (length > 0) {
        ssize_t count = pread(primitive.value.fd, bytes, length, (off_t)offset);
        if (count < 0 && errno == EINTR) continue;
        if (count < 0) {
          return iree_make_status(iree_status_code_from_errno(errno),
                                  "cannot read the archive at %" PRIu64, offset);
        }
        if (count == 0) {
          return iree_make_status(IREE_STATUS_OUT_OF_RANGE,
                                  "the archive ends before byte %" PRIu64
                                  " (it shrank while it was read)",
                                  offset);
        }
        bytes += count;
        offset += (uint64_t)count;
        length -= (iree_host_size_t)count;
      }
      return iree_ok_status();
    }
    default:
      return iree_make_status(IREE_STATUS_UNIMPLEMENTED,
                              "unknown file handle type %d",
                              (int)primitive.type);
  }
}

// Adds the parameters of the archive `handle` holds (opened from `path`,
// whose extension picks IREE's parser) to `index`; the index keeps the
// handle while it holds any of them.
iree_status_t xplug_iree_parameter_index_parse(iree_io_parameter_index_t* index,
                                               const char* path,
                                               iree_host_size_t path_length,
                                               iree_io_file_handle_t* handle,
                                               iree_allocator_t host_allocator) {
  return iree_io_parse_file_index(iree_make_string_view(path, path_length),
                                  handle, index, host_allocator);
}

iree_host_size_t xplug_iree_parameter_index_count(
    iree_io_parameter_index_t* index) {
  return iree_io_parameter_index_count(index);
}

// Entry `i` of `index`, as xplug checks it: its key, whether it is stored
// in a file (else a splat), whether that file is `handle`, and its range.
iree_status_t xplug_iree_parameter_index_entry(
    iree_io_parameter_index_t* index, iree_host_size_t i,
    iree_io_file_handle_t* handle, const char** out_key,
    iree_host_size_t* out_key_length, int* out_in_file, int* out_in_handle,
    uint64_t* out_offset, uint64_t* out_length) {
  const iree_io_parameter_index_entry_t* entry = NULL;
  IREE_RETURN_IF_ERROR(iree_io_parameter_index_get(index, i, &entry));
  *out_key = entry->key.data;
  *out_key_length = entry->key.size;
  *out_length = entry->length;
  *out_in_file =
      entry->type == IREE_IO_PARAMETER_INDEX_ENTRY_STORAGE_TYPE_FILE;
  *out_in_handle = *out_in_file && entry->storage.file.handle == handle;
  *out_offset = *out_in_file ? entry->storage.file.offset : 0;
  return iree_ok_status();
}

// Looks up `key` in `index`: OK when present, IREE's NOT_FOUND otherwise.
iree_status_t xplug_iree_parameter_index_lookup(
    iree_io_parameter_index_t* index, const char* key,
    iree_host_size_t key_length) {
  const iree_io_parameter_index_entry_t* entry = NULL;
  return iree_io_parameter_index_lookup(
      index, iree_make_string_view(key, key_length), &entry);
}

// Creates IREE's `io_parameters` module over one index provider per scope
// (`scopes[i]` serves `indices[i]`); the module keeps the providers, which
// keep their indices.
iree_status_t xplug_iree_parameters_module_create(
    iree_vm_instance_t* instance, iree_host_size_t count,
    const iree_string_view_t* scopes, iree_io_parameter_index_t** indices,
    iree_allocator_t host_allocator, iree_vm_module_t** out_module) {
  *out_module = NULL;
  iree_io_parameter_provider_t** providers = NULL;
  if (count > 0) {
    IREE_RETURN_IF_ERROR(iree_allocator_malloc(
        host_allocator, count * sizeof(providers[0]), (void**)&providers));
    memset(providers, 0, count * sizeof(providers[0]));
  }
  iree_status_t status = iree_ok_status();
  for (iree_host_size_t i = 0; i < count && iree_status_is_ok(status); ++i) {
    status = iree_io_parameter_index_provider_create(
        scopes[i], indices[i],
        IREE_IO_PARAMETER_INDEX_PROVIDER_DEFAULT_MAX_CONCURRENT_OPERATIONS,
        host_allocator, &providers[i]);
  }
  if (iree_status_is_ok(status)) {
    status = iree_io_parameters_module_create(instance, count, providers,
                                              host_allocator, out_module);
  }
  for (iree_host_size_t i = 0; i < count; ++i) {
    iree_io_parameter_provider_release(providers[i]);
  }
  iree_allocator_free(host_allocator, providers);
  return status;
}

typedef struct xplug_iree_dependency_search_t {
  iree_string_view_t name;
  int found;
} xplug_iree_dependency_search_t;

static iree_status_t xplug_iree_dependency_match(
    void* user_data, const iree_vm_module_dependency_t* dependency) {
  xplug_iree_dependency_search_t* search =
      (xplug_iree_dependency_search_t*)user_data;
  if (iree_string_view_equal(dependency->name, search->name)) {
    search->found = 1;
  }
  return iree_ok_status();
}

// Whether `module` imports from the module named `name` (as IREE's tooling
// decides which system modules, `hal` or `io_parameters`, a context needs).
iree_status_t xplug_iree_module_depends_on(iree_vm_module_t* module,
                                           const char* name,
                                           iree_host_size_t name_length,
                                           int* out_found) {
  xplug_iree_dependency_search_t search = {
      iree_make_string_view(name, name_length), 0};
  *out_found = 0;
  IREE_RETURN_IF_ERROR(iree_vm_module_enumerate_dependencies(
      module, xplug_iree_dependency_match, &search));
  *out_found = search.found;
  return iree_ok_status();
}

//===----------------------------------------------------------------------===//
// Checking results (`--expected_output`), with IREE's own comparison
// (tooling/comparison.cc, tooling/buffer_view_matchers.c): the same
// matching, tolerances and report text as iree-run-module.
//===----------------------------------------------------------------------===//

#include "iree/base/tooling/flags.h"
#include "iree/tooling/comparison.h"

// Hands `flag_count` NUL-terminated `--name=value` strings to IREE's own
// flag parser, as IREE's tools hand it their command line: every flag of
// IREE linked into this library (the task system's `--task_*`, the
// comparison flags) takes its value, with IREE's syntax, checks and
// messages; an unknown flag is IREE's "flag 'X' not recognized" error, and
// a flag with an action (`--dump_task_topologies`) runs it, as in IREE's
// tools (that one prints to stdout and exits the process). The flags are
// process-wide, as in IREE's tools.
iree_status_t xplug_iree_flags_parse(int flag_count, const char** flags) {
  if (flag_count < 0 || flag_count > 255) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT,
                            "at most 255 IREE flags at once, not %d",
                            flag_count);
  }
  // iree_flags_parse skips argv[0] and rewrites the array it is given.
  char* argv_storage[256];
  argv_storage[0] = (char*)"xplug";
  for (int i = 0; i < flag_count; ++i) argv_storage[i + 1] = (char*)flags[i];
  int argc = flag_count + 1;
  char** argv = argv_storage;
  return iree_flags_parse(IREE_FLAGS_PARSE_MODE_DEFAULT, &argc, &argv);
}

// Sets IREE's comparison flags (`--expected_f32_threshold=...` and the
// others comparison.cc defines; `flag_count` NUL-terminated strings), then
// compares `expected` with `actual` as iree-run-module does. `*out_text`
// (allocated from `host_allocator`, `*out_length` bytes) is IREE's report;
// `*out_matched` is 1 when every result matched. The flags are
// process-wide, as in IREE's tools.
iree_status_t xplug_iree_compare_lists(iree_vm_list_t* expected,
                                       iree_vm_list_t* actual,
                                       int flag_count, const char** flags,
                                       iree_allocator_t host_allocator,
                                       char** out_text,
                                       iree_host_size_t* out_length,
                                       int* out_matched) {
  *out_text = NULL;
  *out_length = 0;
  *out_matched = 0;
  IREE_RETURN_IF_ERROR(xplug_iree_flags_parse(flag_count, flags));
  iree_string_builder_t builder;
  iree_string_builder_initialize(host_allocator, &builder);
  bool matched = iree_tooling_compare_variant_lists_and_append(
      expected, actual, host_allocator, &builder);
  iree_host_size_t length = iree_string_builder_size(&builder);
  char* text = NULL;
  iree_status_t status =
      iree_allocator_malloc(host_allocator, length + 1, (void**)&text);
  if (iree_status_is_ok(status)) {
    memcpy(text, iree_string_builder_buffer(&builder), length);
    text[length] = 0;
    *out_text = text;
    *out_length = length;
    *out_matched = matched ? 1 : 0;
  }
  iree_string_builder_deinitialize(&builder);
  return status;
}

// Maps a buffer view's contents for reading in place, when its memory is
// host-visible and its buffer allows scoped mapping (IREE's local devices
// allocate such memory; the program decides the usage). The mapping is
// allocated from `host_allocator` and released by
// xplug_iree_buffer_view_unmap; while it lives, `*out_data` points at
// `*out_length` readable bytes. FAILED_PRECONDITION when the memory cannot
// be mapped (the caller copies instead).
iree_status_t xplug_iree_buffer_view_map_read(iree_hal_buffer_view_t* view,
                                              iree_allocator_t host_allocator,
                                              void** out_mapping,
                                              const void** out_data,
                                              iree_host_size_t* out_length) {
  *out_mapping = NULL;
  *out_data = NULL;
  *out_length = 0;
  iree_hal_buffer_t* buffer = iree_hal_buffer_view_buffer(view);
  if (!iree_all_bits_set(iree_hal_buffer_memory_type(buffer),
                         IREE_HAL_MEMORY_TYPE_HOST_VISIBLE) ||
      !iree_all_bits_set(iree_hal_buffer_allowed_usage(buffer),
                         IREE_HAL_BUFFER_USAGE_MAPPING_SCOPED)) {
    return iree_make_status(IREE_STATUS_FAILED_PRECONDITION,
                            "the buffer is not host-visible and mappable");
  }
  iree_hal_buffer_mapping_t* mapping = NULL;
  IREE_RETURN_IF_ERROR(iree_allocator_malloc(host_allocator, sizeof(*mapping),
                                             (void**)&mapping));
  iree_status_t status = iree_hal_buffer_map_range(
      buffer, IREE_HAL_MAPPING_MODE_SCOPED, IREE_HAL_MEMORY_ACCESS_READ, 0,
      iree_hal_buffer_view_byte_length(view), mapping);
  if (!iree_status_is_ok(status)) {
    iree_allocator_free(host_allocator, mapping);
    return status;
  }
  *out_mapping = mapping;
  *out_data = mapping->contents.data;
  *out_length = mapping->contents.data_length;
  return iree_ok_status();
}

// Ends a mapping made by xplug_iree_buffer_view_map_read.
void xplug_iree_buffer_view_unmap(void* mapping,
                                  iree_allocator_t host_allocator) {
  iree_status_ignore(
      iree_hal_buffer_unmap_range((iree_hal_buffer_mapping_t*)mapping));
  iree_allocator_free(host_allocator, mapping);
}
