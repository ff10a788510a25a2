/* The folder graph (issue 13: "no edges upward", and validate/ no longer depends on scenarios/):
 * every #include "FOLDER/..." in a library folder's sources names its own folder or one of a
 * lower layer. Layers, lowest first: util; devices; model; costmodel; sim; search and results
 * (siblings: neither includes the other); session; scenarios and validate (siblings); errors
 * (it classifies every domain); cli. A folder not in the table (a new one) is reported and
 * must be added here with its layer. */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

static const struct {
  const char *folder;
  int layer;
} layers[] = {
    {"util", 0},    {"devices", 1},   {"model", 2},    {"costmodel", 3}, {"sim", 4},
    {"search", 5},  {"results", 5},   {"session", 6},  {"scenarios", 7}, {"validate", 7},
    {"errors", 8},  {"cli", 9},
};

static int layer_of(const char *folder) {
  for (gsize i = 0; i < G_N_ELEMENTS(layers); i++)
    if (strcmp(layers[i].folder, folder) == 0) return layers[i].layer;
  return -1;
}

/* Adds "FILE: includes TARGET/..." to @bad for every include of @path that goes up or sideways. */
static void check_file(const char *folder, const char *path, GString *bad) {
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (int i = 0; lines[i]; i++) {
    const char *p = lines[i];
    while (*p == ' ' || *p == '\t') p++;
    if (!g_str_has_prefix(p, "#include \"")) continue;
    p += strlen("#include \"");
    const char *slash = strchr(p, '/'), *quote = strchr(p, '"');
    if (!slash || !quote || slash > quote) continue; /* a header of the same folder by name */
    g_autofree char *target = g_strndup(p, (gsize)(slash - p));
    if (strcmp(target, folder) == 0) continue;
    int from = layer_of(folder), to = layer_of(target);
    if (to < 0)
      g_string_append_printf(bad, "%s:%d: includes %s/, a folder without a layer in "
                             "tests/test-layers.c\n", path, i + 1, target);
    else if (to >= from)
      g_string_append_printf(bad, "%s:%d: %s/ (layer %d) includes %s/ (layer %d)\n", path, i + 1,
                             folder, from, target, to);
  }
}

static void test_no_upward_edges(void) {
  GString *bad = g_string_new(NULL);
  guint files = 0;
  for (gsize f = 0; f < G_N_ELEMENTS(layers); f++) {
    g_autofree char *dir_path = g_build_filename(STRATSIM_SOURCE_DIR, layers[f].folder, NULL);
    GDir *dir = g_dir_open(dir_path, 0, NULL);
    g_assert_nonnull(dir);
    const char *name;
    while ((name = g_dir_read_name(dir))) {
      if (!g_str_has_suffix(name, ".c") && !g_str_has_suffix(name, ".h")) continue;
      g_autofree char *path = g_build_filename(dir_path, name, NULL);
      check_file(layers[f].folder, path, bad);
      files++;
    }
    g_dir_close(dir);
  }
  g_test_message("%u files checked", files);
  g_assert_cmpuint(files, >, 100);
  if (bad->len) g_test_message("%s", bad->str);
  g_assert_cmpstr(bad->str, ==, "");
  g_string_free(bad, TRUE);
}

/* The checker itself sees an edge sideways and one upward. */
static void test_checker_sees_edges(void) {
  g_autofree char *dir = g_dir_make_tmp("stratsim-layers-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "x.c", NULL);
  g_assert_true(g_file_set_contents(path, "#include \"scenarios/scn_chart.h\"\n"
                                          "  #include \"cli/cli.h\"\n#include \"util/util_json.h\"\n"
                                          "#include \"sim/sim.h\"\n#include <glib.h>\n", -1, NULL));
  GString *bad = g_string_new(NULL);
  check_file("validate", path, bad);
  g_assert_nonnull(strstr(bad->str, ":1: validate/ (layer 7) includes scenarios/ (layer 7)"));
  g_assert_nonnull(strstr(bad->str, ":2: validate/ (layer 7) includes cli/ (layer 9)"));
  g_assert_null(strstr(bad->str, "util/"));
  g_assert_null(strstr(bad->str, "sim/"));
  g_string_free(bad, TRUE);
  g_remove(path);
  g_rmdir(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/layers/no-upward-edges", test_no_upward_edges);
  g_test_add_func("/layers/checker-sees-edges", test_checker_sees_edges);
  return g_test_run();
}
