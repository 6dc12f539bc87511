/*
 * A plugin that misbehaves as a process, bent by preprocessor flags. Without
 * flags it exports `f_add` (adds two int32 into a third) and behaves.
 *
 *   -DEXIT_IN=stage     _exit(EXIT_STATUS) on entering the stage (default 0)
 *   -DHANG_IN=stage     never return from the stage (sleeps in pause())
 *   -DFORK_IN=stage     fork a process that stays in the caller's process
 *                       group, keeps stdout and stderr open and sleeps
 *   -DDAEMON_IN=stage   fork, setsid, fork: a daemon outside the caller's
 *                       group and session that keeps stdout and stderr
 *                       open and sleeps
 *
 * A stage is one of: load, resolve, call (the import `f_add`), unload.
 * The pid of a forked sleeper is appended, one line each, to the file the
 * HOSTILE_PID_FILE environment variable names, when it is set. Sleepers
 * end by themselves after SLEEP_SECONDS (default 120), so a failed test
 * leaves nothing for long.
 */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xplug/executable_plugin.h"

#ifndef EXIT_STATUS
#define EXIT_STATUS 0
#endif
#ifndef SLEEP_SECONDS
#define SLEEP_SECONDS 120
#endif

#define STAGE_load 1
#define STAGE_resolve 2
#define STAGE_call 3
#define STAGE_unload 4
#define PASTE(a, b) a##b
#define STAGE(name) PASTE(STAGE_, name)
#ifdef EXIT_IN
#define EXIT_STAGE STAGE(EXIT_IN)
#else
#define EXIT_STAGE 0
#endif
#ifdef HANG_IN
#define HANG_STAGE STAGE(HANG_IN)
#else
#define HANG_STAGE 0
#endif
#ifdef FORK_IN
#define FORK_STAGE STAGE(FORK_IN)
#else
#define FORK_STAGE 0
#endif
#ifdef DAEMON_IN
#define DAEMON_STAGE STAGE(DAEMON_IN)
#else
#define DAEMON_STAGE 0
#endif

/* Appends `pid` to $HOSTILE_PID_FILE. */
static void record_pid(pid_t pid) {
  const char* path = getenv("HOSTILE_PID_FILE");
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

static void fork_sleeper(void) {
  pid_t pid = fork();
  if (pid == 0) sleeper();
  if (pid > 0) record_pid(pid);
}

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

/* Misbehaves as the flags say when entering stage `stage`. */
static void fault_point(int stage) {
  if (stage == FORK_STAGE) fork_sleeper();
  if (stage == DAEMON_STAGE) fork_daemon();
  if (stage == EXIT_STAGE) _exit(EXIT_STATUS);
  if (stage == HANG_STAGE) {
    for (;;) pause();
  }
}

typedef struct {
  int32_t a;
  int32_t b;
  int32_t out;
} binop_args_t;

static int f_add(void* args_ptr, void* context, void* reserved) {
  (void)context;
  (void)reserved;
  fault_point(STAGE_call);
  binop_args_t* args = (binop_args_t*)args_ptr;
  args->out = args->a + args->b;
  return 0;
}

static int marker = 42;

static iree_hal_executable_plugin_status_t plugin_load(
    const iree_hal_executable_plugin_environment_v0_t* environment,
    size_t param_count, const iree_hal_executable_plugin_string_pair_t* params,
    void** out_self) {
  (void)environment;
  (void)param_count;
  (void)params;
  fault_point(STAGE_load);
  *out_self = &marker;
  return iree_hal_executable_plugin_ok_status();
}

static void plugin_unload(void* self) {
  (void)self;
  fault_point(STAGE_unload);
}

static iree_hal_executable_plugin_status_t plugin_resolve(
    void* self, const iree_hal_executable_plugin_resolve_params_v0_t* params,
    iree_hal_executable_plugin_resolution_t* out_resolution) {
  (void)self;
  fault_point(STAGE_resolve);
  *out_resolution = 0;
  int missing_required = 0;
  for (size_t i = 0; i < params->count; ++i) {
    if (params->out_fn_ptrs[i]) continue;
    const char* name = params->symbol_names[i];
    int optional = iree_hal_executable_plugin_import_is_optional(name);
    if (optional) ++name;
    if (strcmp(name, "f_add") == 0) {
      params->out_fn_ptrs[i] = (void*)f_add;
      params->out_fn_contexts[i] = NULL;
    } else if (optional) {
      *out_resolution |= IREE_HAL_EXECUTABLE_PLUGIN_RESOLUTION_MISSING_OPTIONAL;
    } else {
      missing_required = 1;
    }
  }
  return iree_hal_executable_plugin_status_from_code(
      missing_required ? IREE_HAL_EXECUTABLE_PLUGIN_STATUS_NOT_FOUND
                       : IREE_HAL_EXECUTABLE_PLUGIN_STATUS_OK);
}

IREE_HAL_EXECUTABLE_PLUGIN_EXPORT const iree_hal_executable_plugin_header_t**
iree_hal_executable_plugin_query(iree_hal_executable_plugin_version_t max_version,
                                 void* reserved) {
  (void)reserved;
  static const iree_hal_executable_plugin_header_t header = {
      .version = IREE_HAL_EXECUTABLE_PLUGIN_VERSION_LATEST,
      .name = "hostile",
      .description = "a plugin that exits, hangs, forks or daemonizes",
      .features = IREE_HAL_EXECUTABLE_PLUGIN_FEATURE_NONE,
      .sanitizer = IREE_HAL_EXECUTABLE_PLUGIN_SANITIZER_NONE,
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
