/* tests/fuzz/fuzz-main — libFuzzer entry points; a target is FUZZ_TARGET("NAME") in fuzz-NAME.c.
 *
 * The input is copied and NUL-terminated (an embedded NUL ends the text, as in a file read
 * with g_file_get_contents), fed to the parser of fuzz-parsers.h, and everything is freed:
 * libFuzzer's leak check then catches what a parser forgets. GLib criticals and warnings are
 * fatal, so a g_return_val_if_fail that bad input reaches counts as a crash too. The target
 * runs in an empty temporary directory (spec strings name no file there).
 */
#ifndef STRATSIM_FUZZ_MAIN_H
#define STRATSIM_FUZZ_MAIN_H

#include "fuzz-parsers.h"

#include <glib/gstdio.h>
#include <stdint.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const FuzzParser *fuzz_parser;
static char *fuzz_tmpdir;

static void fuzz_exit(void) {
  if (fuzz_tmpdir) g_rmdir(fuzz_tmpdir);
  fuzz_parsers_teardown();
}

static int fuzz_initialize(const char *name) {
  g_log_set_always_fatal(G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
  fuzz_parser = fuzz_parser_lookup(name);
  fuzz_tmpdir = g_dir_make_tmp("stratsim-fuzz-XXXXXX", NULL);
  if (!fuzz_parser || !fuzz_tmpdir || chdir(fuzz_tmpdir) != 0) {
    fprintf(stderr, "fuzz-%s: no such parser, or no empty working directory\n", name);
    abort();
  }
  fuzz_parsers_setup();
  atexit(fuzz_exit);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = g_strndup((const char *)data, size);
  GError *error = NULL;
  fuzz_parser_run(fuzz_parser, text, &error);
  g_clear_error(&error);
  g_free(text);
  return 0;
}

#define FUZZ_TARGET(name)                                  \
  int LLVMFuzzerInitialize(int *argc, char ***argv) {      \
    (void)argc;                                            \
    (void)argv;                                            \
    return fuzz_initialize(name);                          \
  }

#endif
