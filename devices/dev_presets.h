/* devices/presets — private: the built-in preset files, embedded into the binary by
 * cmake/embed.cmake (every devices/presets/NAME.json, in a generated dev_presets_data.c), so the
 * library never reads presets from the filesystem and works from any directory.
 * DEV_KINDS_FILE is the device kinds table; every other file is one cluster preset, named by
 * its file name without ".json". */
#ifndef STRATSIM_DEV_PRESETS_H
#define STRATSIM_DEV_PRESETS_H

#include <glib.h>

/* Layout fixed by cmake/embed.cmake. */
typedef struct {
  const char *name; /* file name, e.g. "dgx-a100.json" */
  const char *text; /* its contents, NUL-terminated */
} StratsimEmbedded;

/* Terminated by {NULL, NULL}. */
extern const StratsimEmbedded dev_presets_data[];

#define DEV_KINDS_FILE "devices.json"

/* The text of the embedded file @file_name, or NULL; static storage. */
const char *dev_presets_find(const char *file_name);

/* The text of cluster preset @name (without ".json"), or NULL if there is none. */
const char *dev_presets_cluster_text(const char *name);

/* @names joined by ", " for error messages; caller frees with g_free. */
char *dev_names_joined(const char *const *names);

#endif
