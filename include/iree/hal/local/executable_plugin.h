/*
 * Compatibility shim: code written for IREE's
 * `#include "iree/hal/local/executable_plugin.h"` builds against xplug by
 * adding xplug's include/ directory to the include path.
 */
#ifndef XPLUG_IREE_COMPAT_EXECUTABLE_PLUGIN_H_
#define XPLUG_IREE_COMPAT_EXECUTABLE_PLUGIN_H_
#include "xplug/executable_plugin.h"
#endif /* XPLUG_IREE_COMPAT_EXECUTABLE_PLUGIN_H_ */
