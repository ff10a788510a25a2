/* Regression tests for what the fuzzers found (tests/fuzz): every input saved under
 * tests/fuzz/regressions/NAME/ goes to the parser of target fuzz-NAME (the same call,
 * tests/fuzz/fuzz-parsers.h) and must come back as a clean refusal: NULL/FALSE with a one-line
 * GError, no crash, nothing leaked (the build-asan suite checks the last two). A file whose name
 * ends in ".ok" is valid input that once crashed, and must be accepted. The seed corpus
 * (tests/fuzz/corpus/NAME/) runs through the same checks, with either outcome allowed, so the
 * sanitized suite covers it without clang. Test paths: /fuzz/regressions/NAME/FILE. */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/fuzz-parsers.h"

typedef struct {
  const FuzzParser *parser;
  char *path;
  gboolean corpus;     /* a seed: accepted or refused, only the contract is checked */
  gboolean accept;     /* a regression named *.ok */
} Case;

static GPtrArray *cases;

static void case_free(gpointer data) {
  Case *c = data;
  g_free(c->path);
  g_free(c);
}

static void test_input(gconstpointer data) {
  const Case *c = data;
  char *text = NULL;
  GError *error = NULL;
  g_assert_true(g_file_get_contents(c->path, &text, NULL, &error));
  g_assert_no_error(error);
  /* An embedded NUL ends the text, as in the fuzz target. */
  gboolean ok = fuzz_parser_run(c->parser, text, &error);
  if (error) {
    g_test_message("%s: %s", c->path, error->message);
    g_assert_null(strchr(error->message, '\n'));
  }
  if (!c->corpus) {
    if (c->accept && !ok) g_error("%s was refused: %s", c->path, error->message);
    if (!c->accept && ok) g_error("%s was accepted", c->path);
  }
  g_clear_error(&error);
  g_free(text);
}

/* Registers a test per file in tests/fuzz/KIND/NAME/. */
static void add_folder(const FuzzParser *parser, const char *kind) {
  g_autofree char *dir = g_build_filename(STRATSIM_SOURCE_DIR, "tests", "fuzz", kind, parser->name, NULL);
  GDir *d = g_dir_open(dir, 0, NULL);
  if (!d) return;
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  const char *name;
  while ((name = g_dir_read_name(d))) g_ptr_array_add(names, g_strdup(name));
  g_dir_close(d);
  g_ptr_array_sort(names, (GCompareFunc)g_ascii_strcasecmp);
  for (guint i = 0; i < names->len; i++) {
    name = g_ptr_array_index(names, i);
    if (name[0] == '.') continue;
    Case *c = g_new0(Case, 1);
    c->parser = parser;
    c->path = g_build_filename(dir, name, NULL);
    c->corpus = strcmp(kind, "corpus") == 0;
    c->accept = g_str_has_suffix(name, ".ok");
    g_ptr_array_add(cases, c);
    g_autofree char *test_path = g_strdup_printf("/fuzz/%s/%s/%s", kind, parser->name, name);
    g_test_add_data_func(test_path, c, test_input);
  }
  g_ptr_array_free(names, TRUE);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  cases = g_ptr_array_new_with_free_func(case_free);
  for (gsize i = 0; i < G_N_ELEMENTS(fuzz_parsers); i++) {
    add_folder(&fuzz_parsers[i], "regressions");
    add_folder(&fuzz_parsers[i], "corpus");
  }
  /* As in the fuzz targets: spec strings that look like paths find no file here. */
  char *tmpdir = g_dir_make_tmp("stratsim-fuzz-regressions-XXXXXX", NULL);
  g_assert_nonnull(tmpdir);
  g_assert_cmpint(chdir(tmpdir), ==, 0);
  fuzz_parsers_setup();
  int status = g_test_run();
  fuzz_parsers_teardown();
  g_rmdir(tmpdir);
  g_free(tmpdir);
  g_ptr_array_free(cases, TRUE);
  return status;
}
