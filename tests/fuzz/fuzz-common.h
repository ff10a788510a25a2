/* tests/fuzz/fuzz-common — what every libFuzzer target shares.
 *
 * A target defines fuzz_one(text, len): the input NUL-terminated (a copy; an embedded NUL ends
 * the text as it would in a file read with g_file_get_contents), handed to one parser, everything
 * freed. The library's contract for user input is a GError, never a crash: FUZZ_CHECK_ERROR
 * aborts (a crash libFuzzer saves) when a parser's NULL/FALSE and its GError disagree, and GLib
 * criticals and warnings are made fatal, so a g_return_val_if_fail hit by bad input counts too.
 *
 * Spec-string parsers read a file when the spec looks like a path; the targets run in an empty
 * temporary directory and skip absolute paths and "..", so the fuzzer cannot open /dev/zero.
 */
#ifndef STRATSIM_FUZZ_COMMON_H
#define STRATSIM_FUZZ_COMMON_H

#include <glib.h>
#include <glib/gstdio.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_one(const char *text, size_t len);

/* Aborts unless exactly one of "returned a result" and "set @error" holds. */
#define FUZZ_CHECK_ERROR(ok, error)                                                        \
  do {                                                                                     \
    gboolean fuzz_ok_ = (ok);                                                              \
    if (fuzz_ok_ == ((error) != NULL)) {                                                   \
      fprintf(stderr, "error contract violated: %s but the GError is %s\n",                \
              fuzz_ok_ ? "success" : "failure", (error) ? (error)->message : "not set");   \
      abort();                                                                             \
    }                                                                                      \
    if ((error) && (!(error)->message || !(error)->message[0])) {                          \
      fprintf(stderr, "error contract violated: an empty GError message\n");               \
      abort();                                                                             \
    }                                                                                      \
  } while (0)

static char *fuzz_tmpdir;

static void fuzz_remove_tmpdir(void) {
  if (fuzz_tmpdir) g_rmdir(fuzz_tmpdir);
}

/* Spec strings: true when @text may name a file outside the empty working directory. */
static inline gboolean fuzz_spec_escapes(const char *text) {
  return text[0] == '/' || strstr(text, "..") != NULL || text[0] == '~';
}

/* Set up once per target: anything fuzz_setup() needs (a graph, a cluster) lives for the run. */
static void fuzz_setup(void);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  g_log_set_always_fatal(G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
  fuzz_tmpdir = g_dir_make_tmp("stratsim-fuzz-XXXXXX", NULL);
  if (!fuzz_tmpdir || chdir(fuzz_tmpdir) != 0) {
    fprintf(stderr, "fuzz: cannot make an empty working directory\n");
    abort();
  }
  atexit(fuzz_remove_tmpdir);
  fuzz_setup();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = g_strndup((const char *)data, size);
  fuzz_one(text, strlen(text));
  g_free(text);
  return 0;
}

#endif
