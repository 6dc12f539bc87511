/*
 * One C plugin, bent by preprocessor flags into each of the faults the
 * loader and the tools must catch. Without flags it is a well-behaved
 * plugin exporting `f_add` (adds two int32 into a third) and `f_state`
 * (context = state).
 *
 *   -DQUERY_RETURNS_NULL      query returns NULL
 *   -DNULL_HEADER             the v0 table's header pointer is NULL
 *   -DHEADER_VERSION=n        header version
 *   -DFEATURES=n              header feature bits (default STANDALONE)
 *   -DSANITIZER=n             header sanitizer value (default NONE)
 *   -DNULL_LOAD / -DNULL_RESOLVE / -DNULL_UNLOAD   NULL table entries
 *   -DLOAD_FAILS=code         load returns this status code
 *   -DUNLOAD_ABORTS_ON_NULL   unload calls abort() when self is NULL
 *   -DLEAK_BYTES=n            load allocates n bytes it never frees
 *   -DLYING_RESOLVE           resolve returns OK without filling anything
 *   -DRESOLVE_FAILS=code      resolve returns this status code
 *   -DNO_EXPORT               the query function is exported under another name
 *   -DCRASH_IN=stage          segfault (write through NULL) in that stage
 *   -DABORT_IN=stage          abort() in that stage
 *   -DHANG_IN=stage           never return from that stage (sleeps in pause())
 *   -DEXIT_IN=stage           _exit(EXIT_STATUS) in that stage (default 0)
 *   -DFORK_IN=stage           fork a sleeper that stays in the caller's
 *                             process group and keeps stdout and stderr open
 *   -DDAEMON_IN=stage         fork, setsid, fork: a sleeper outside the
 *                             caller's group and session that keeps stdout
 *                             and stderr open
 *
 * A stage is one of: open (a library constructor), query, load, resolve,
 * call (the imports `f_add` and `f_state`), unload, close (a library
 * destructor). In one stage, the forks come first, then the crash, abort,
 * exit or hang: -DFORK_IN=load -DHANG_IN=load forks a sleeper and hangs.
 *
 * The pid of each forked sleeper is appended, one line each, to the file
 * the CONFIGURABLE_PLUGIN_PID_FILE environment variable names, when it is
 * set. Sleepers end by themselves after SLEEP_SECONDS (default 120), so a
 * failed test leaves nothing for long.
 *
 * -DSTDERR_MIB=N writes N MiB of text to stderr in load (an output flood
 * for the probe's output limit).
 */
#if defined(HANG_IN) || defined(EXIT_IN) || defined(FORK_IN) || defined(DAEMON_IN)
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>
#endif
#if defined(FORK_IN) || defined(DAEMON_IN)
#include <fcntl.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#endif
#ifdef STDERR_MIB
#include <stdio.h>
#include <string.h>
#endif
#include <stdlib.h>

#include "xplug/executable_plugin.h"

#ifndef PLUGIN_NAME
#define PLUGIN_NAME "configurable"
#endif
#ifndef HEADER_VERSION
#define HEADER_VERSION IREE_HAL_EXECUTABLE_PLUGIN_VERSION_LATEST
#endif
#ifndef FEATURES
#define FEATURES IREE_HAL_EXECUTABLE_PLUGIN_FEATURE_STANDALONE
#endif
#ifndef SANITIZER
#define SANITIZER IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_NONE
#endif
#ifndef EXIT_STATUS
#define EXIT_STATUS 0
#endif
#ifndef SLEEP_SECONDS
#define SLEEP_SECONDS 120
#endif

#define UNUSED __attribute__((unused))

/* Stage numbers for the fault flags: -DCRASH_IN=load pastes to
 * FAULT_STAGE_load, which is 3. */
#define FAULT_STAGE_open 1
#define FAULT_STAGE_query 2
#define FAULT_STAGE_load 3
#define FAULT_STAGE_resolve 4
#define FAULT_STAGE_unload 5
#define FAULT_STAGE_close 6
#define FAULT_STAGE_call 7
#define FAULT_PASTE(a, b) a##b
#define FAULT_STAGE(name) FAULT_PASTE(FAULT_STAGE_, name)
#ifdef CRASH_IN
#define CRASH_STAGE FAULT_STAGE(CRASH_IN)
#else
#define CRASH_STAGE 0
#endif
#ifdef ABORT_IN
#define ABORT_STAGE FAULT_STAGE(ABORT_IN)
#else
#define ABORT_STAGE 0
#endif
#ifdef HANG_IN
#define HANG_STAGE FAULT_STAGE(HANG_IN)
#else
#define HANG_STAGE 0
#endif
#ifdef EXIT_IN
#define EXIT_STAGE FAULT_STAGE(EXIT_IN)
#else
#define EXIT_STAGE 0
#endif
#ifdef FORK_IN
#define FORK_STAGE FAULT_STAGE(FORK_IN)
#else
#define FORK_STAGE 0
#endif
#ifdef DAEMON_IN
#define DAEMON_STAGE FAULT_STAGE(DAEMON_IN)
#else
#define DAEMON_STAGE 0
#endif

#if defined(FORK_IN) || defined(DAEMON_IN)
/* Appends `pid` to $CONFIGURABLE_PLUGIN_PID_FILE. */
static void record_pid(pid_t pid) {
  const char* path = getenv("CONFIGURABLE_PLUGIN_PID_FILE");
  if (path == NULL) return;
  char line[32];
  int length = snprintf(line, sizeof(line), "%ld\n", (long)pid);
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0600);
  if (fd < 0) return;
  if (write(fd, line, (size_t)length) < 0) {
    /* Nothing to do: the test then finds no pid and fails. */
  }
  close(fd);
}

/* The life of a forked sleeper: it holds every descriptor it inherited
 * (stdout and stderr among them) until it ends. */
static void sleeper(void) {
  sleep(SLEEP_SECONDS);
  _exit(0);
}
#endif

#ifdef FORK_IN
/* A sleeper in the caller's process group. */
static void fork_sleeper(void) {
  pid_t pid = fork();
  if (pid == 0) sleeper();
  if (pid > 0) record_pid(pid);
}
#endif

#ifdef DAEMON_IN
/* A sleeper in a session (and group) of its own; its pid comes back
 * through a pipe from the middle process, which is reaped here. */
static void fork_daemon(void) {
  int channel[2];
  if (pipe(channel) != 0) return;
  pid_t middle = fork();
  if (middle == 0) {
    setsid();
    pid_t daemon = fork();
    if (daemon == 0) {
      close(channel[0]);
      close(channel[1]);
      sleeper();
    }
    if (write(channel[1], &daemon, sizeof(daemon)) < 0) _exit(1);
    _exit(0);
  }
  close(channel[1]);
  pid_t daemon = -1;
  if (middle > 0 && read(channel[0], &daemon, sizeof(daemon)) == (ssize_t)sizeof(daemon) && daemon > 0) {
    record_pid(daemon);
  }
  close(channel[0]);
  if (middle > 0) waitpid(middle, NULL, 0);
}
#endif

/* Misbehaves as the flags say when entering stage `stage`. */
static void fault_point(int stage) {
#ifdef FORK_IN
  if (stage == FORK_STAGE) fork_sleeper();
#endif
#ifdef DAEMON_IN
  if (stage == DAEMON_STAGE) fork_daemon();
#endif
  if (stage == CRASH_STAGE) {
    /* Through a volatile pointer, so no compiler can see the NULL and
     * replace the store with a trap instruction. */
    int* volatile nowhere = NULL;
    *nowhere = 1;
  }
  if (stage == ABORT_STAGE) abort();
#ifdef EXIT_IN
  if (stage == EXIT_STAGE) _exit(EXIT_STATUS);
#endif
#ifdef HANG_IN
  if (stage == HANG_STAGE) {
    for (;;) pause();
  }
#endif
}

__attribute__((constructor)) static void fault_on_open(void) {
  fault_point(FAULT_STAGE_open);
}

__attribute__((destructor)) static void fault_on_close(void) {
  fault_point(FAULT_STAGE_close);
}

typedef struct {
  int32_t a;
  int32_t b;
  int32_t out;
} binop_args_t;

typedef struct {
  iree_hal_executable_plugin_allocator_t allocator;
  int32_t marker;
} plugin_state_t;

static UNUSED int f_add(void* args_ptr, void* context, void* reserved) {
  (void)context;
  (void)reserved;
  fault_point(FAULT_STAGE_call);
  binop_args_t* args = (binop_args_t*)args_ptr;
  args->out = args->a + args->b;
  return 0;
}

static UNUSED int f_state(void* args_ptr, void* context, void* reserved) {
  (void)reserved;
  fault_point(FAULT_STAGE_call);
  binop_args_t* args = (binop_args_t*)args_ptr;
  args->out = ((const plugin_state_t*)context)->marker;
  return 0;
}

static UNUSED iree_hal_executable_plugin_status_t plugin_load(
    const iree_hal_executable_plugin_environment_v0_t* environment,
    size_t param_count, const iree_hal_executable_plugin_string_pair_t* params,
    void** out_self) {
  (void)param_count;
  (void)params;
  fault_point(FAULT_STAGE_load);
#ifdef STDERR_MIB
  {
    char line[1024];
    memset(line, 'x', sizeof(line) - 1);
    line[sizeof(line) - 1] = '\n';
    for (long i = 0; i < (long)(STDERR_MIB) * 1024; ++i) {
      fwrite(line, 1, sizeof(line), stderr);
    }
  }
#endif
#ifdef LOAD_FAILS
  (void)environment;
  (void)out_self;
  return iree_hal_executable_plugin_status_from_code(LOAD_FAILS);
#else
  plugin_state_t* state = NULL;
  iree_hal_executable_plugin_status_t status =
      iree_hal_executable_plugin_allocator_malloc(
          environment->host_allocator, sizeof(*state), (void**)&state);
  if (!iree_hal_executable_plugin_status_is_ok(status)) return status;
  state->allocator = environment->host_allocator;
#ifdef COUNT_LOADS
  /* Each copy of the library counts its own loads: two images that share
   * one copy show 1 then 2. */
  static int32_t loads = 0;
  state->marker = ++loads;
#else
  state->marker = 4242;
#endif
#ifdef LEAK_BYTES
  void* leaked = NULL;
  status = iree_hal_executable_plugin_allocator_malloc(
      environment->host_allocator, LEAK_BYTES, &leaked);
  if (!iree_hal_executable_plugin_status_is_ok(status)) return status;
#endif
  *out_self = state;
  return iree_hal_executable_plugin_ok_status();
#endif
}

static UNUSED void plugin_unload(void* self) {
  fault_point(FAULT_STAGE_unload);
#ifdef UNLOAD_ABORTS_ON_NULL
  if (self == NULL) abort();
#endif
  plugin_state_t* state = (plugin_state_t*)self;
  iree_hal_executable_plugin_allocator_free(state->allocator, state);
}

static UNUSED iree_hal_executable_plugin_status_t plugin_resolve(
    void* self, const iree_hal_executable_plugin_resolve_params_v0_t* params,
    iree_hal_executable_plugin_resolution_t* out_resolution) {
  fault_point(FAULT_STAGE_resolve);
  *out_resolution = 0;
#ifdef RESOLVE_FAILS
  (void)self;
  (void)params;
  return iree_hal_executable_plugin_status_from_code(RESOLVE_FAILS);
#elif defined(LYING_RESOLVE)
  (void)self;
  (void)params;
  return iree_hal_executable_plugin_ok_status();
#else
  int missing_required = 0;
  for (size_t i = 0; i < params->count; ++i) {
    if (params->out_fn_ptrs[i]) continue;
    const char* name = params->symbol_names[i];
    int optional = iree_hal_executable_plugin_import_is_optional(name);
    if (optional) ++name;
    if (iree_hal_executable_plugin_strcmp(name, "f_add") == 0) {
      params->out_fn_ptrs[i] = (void*)f_add;
      params->out_fn_contexts[i] = NULL;
    } else if (iree_hal_executable_plugin_strcmp(name, "f_state") == 0) {
      params->out_fn_ptrs[i] = (void*)f_state;
      params->out_fn_contexts[i] = self;
    } else if (optional) {
      *out_resolution |= IREE_HAL_EXECUTABLE_PLUGIN_RESOLUTION_MISSING_OPTIONAL;
    } else {
      missing_required = 1;
    }
  }
  return iree_hal_executable_plugin_status_from_code(
      missing_required ? IREE_HAL_EXECUTABLE_PLUGIN_STATUS_NOT_FOUND
                       : IREE_HAL_EXECUTABLE_PLUGIN_STATUS_OK);
#endif
}

#ifdef NO_EXPORT
#define QUERY_NAME some_other_query_name
#else
#define QUERY_NAME iree_hal_executable_plugin_query
#endif

IREE_HAL_EXECUTABLE_PLUGIN_EXPORT const iree_hal_executable_plugin_header_t**
QUERY_NAME(iree_hal_executable_plugin_version_t max_version, void* reserved) {
  (void)reserved;
  fault_point(FAULT_STAGE_query);
  static const iree_hal_executable_plugin_header_t header = {
      .version = HEADER_VERSION,
      .name = PLUGIN_NAME,
      .description = "configurable fault plugin",
      .features = FEATURES,
      .sanitizer = (iree_hal_executable_plugin_sanitizer_kind_t)(SANITIZER),
  };
  static const iree_hal_executable_plugin_v0_t plugin = {
#ifdef NULL_HEADER
      .header = NULL,
#else
      .header = &header,
#endif
#ifdef NULL_LOAD
      .load = NULL,
#else
      .load = plugin_load,
#endif
#ifdef NULL_UNLOAD
      .unload = NULL,
#else
      .unload = plugin_unload,
#endif
#ifdef NULL_RESOLVE
      .resolve = NULL,
#else
      .resolve = plugin_resolve,
#endif
  };
  (void)header;
#ifdef QUERY_RETURNS_NULL
  (void)max_version;
  (void)plugin;
  return NULL;
#else
  return max_version < IREE_HAL_EXECUTABLE_PLUGIN_VERSION_0_1
             ? NULL
             : (const iree_hal_executable_plugin_header_t**)&plugin;
#endif
}
