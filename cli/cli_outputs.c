/* cli/outputs — output paths checked before the work (cli_outputs.h). */
#include "cli/cli_outputs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static gboolean writable_dir(const char *option, const char *path, const char *dir,
                             GError **error) {
  if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT, "%s %s: directory %s does not exist",
                option, path, dir);
    return FALSE;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno),
                "%s %s: directory %s is not writable (%s)", option, path, dir, g_strerror(errno));
    return FALSE;
  }
  return TRUE;
}

gboolean cli_output_file_ok(const char *option, const char *path, GError **error) {
  if (!path) return TRUE;
  if (!*path) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT, "%s: empty file name", option);
    return FALSE;
  }
  if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_ISDIR, "%s %s is a directory, not a file",
                option, path);
    return FALSE;
  }
  if (g_file_test(path, G_FILE_TEST_EXISTS) && access(path, W_OK) != 0) {
    g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno), "%s %s is not writable (%s)",
                option, path, g_strerror(errno));
    return FALSE;
  }
  g_autofree char *dir = g_path_get_dirname(path);
  return writable_dir(option, path, dir, error);
}

gboolean cli_output_dir_ok(const char *option, const char *dir, GError **error) {
  if (!dir) return TRUE;
  if (g_file_test(dir, G_FILE_TEST_EXISTS) && !g_file_test(dir, G_FILE_TEST_IS_DIR)) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOTDIR, "%s %s exists and is not a directory",
                option, dir);
    return FALSE;
  }
  /* The nearest existing ancestor must take the directories the command will create. */
  g_autofree char *existing = g_strdup(dir);
  while (!g_file_test(existing, G_FILE_TEST_EXISTS)) {
    char *up = g_path_get_dirname(existing);
    gboolean top = g_strcmp0(up, existing) == 0;
    g_free(existing);
    existing = up;
    if (top) break;
  }
  if (!g_file_test(existing, G_FILE_TEST_IS_DIR)) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOTDIR, "%s %s: %s is not a directory", option,
                dir, existing);
    return FALSE;
  }
  return writable_dir(option, dir, existing, error);
}

/* The nearest directory from the current one up that holds one of @files (paths relative to
 * it, each a regular file); NULL when none does. */
static char *nearest_dir_with(const char *const *files) {
  g_autofree char *dir = g_get_current_dir();
  for (;;) {
    for (const char *const *f = files; *f; f++) {
      g_autofree char *path = g_build_filename(dir, *f, NULL);
      if (g_file_test(path, G_FILE_TEST_IS_REGULAR)) return g_steal_pointer(&dir);
    }
    char *up = g_path_get_dirname(dir);
    gboolean top = g_strcmp0(up, dir) == 0;
    g_free(dir);
    dir = up;
    if (top) return NULL;
  }
}

/* The nearest directory from the current one up whose results/ qualifies (cli_outputs.h). */
static char *find_results_dir(void) {
  static const char *const marks[] = {"results/res_db.c", "results/stratsim.db", NULL};
  g_autofree char *top = nearest_dir_with(marks);
  return top ? g_build_filename(top, "results", NULL) : g_strdup("results");
}

char *cli_results_path(const char *name) {
  const char *env = g_getenv("STRATSIM_RESULTS");
  g_autofree char *dir = env && *env ? g_strdup(env) : find_results_dir();
  return name ? g_build_filename(dir, name, NULL) : g_steal_pointer(&dir);
}

/* The nearest directory from the current one up holding tests/data/validation/README.md, else
 * the source tree this binary was built from, else the relative path (cli_outputs.h). */
static gint compare_paths(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

GPtrArray *cli_gpu_data_dirs(const char *file) {
  g_autofree char *validation = cli_validation_dir();
  g_autofree char *root = g_build_filename(validation, "..", "gpu", NULL);
  GDir *d = g_dir_open(root, 0, NULL);
  if (!d) {
    fprintf(stderr, "stratsim bench: no tests/data/gpu folder found (run from the checkout or give --data DIR)\n");
    return NULL;
  }
  GPtrArray *dirs = g_ptr_array_new_with_free_func(g_free);
  for (const char *n; (n = g_dir_read_name(d));) {
    char *dir = g_build_filename(root, n, NULL);
    g_autofree char *path = g_build_filename(dir, file, NULL);
    if (g_file_test(path, G_FILE_TEST_EXISTS)) g_ptr_array_add(dirs, dir);
    else g_free(dir);
  }
  g_dir_close(d);
  g_ptr_array_sort(dirs, compare_paths);
  return dirs;
}

char *cli_validation_dir(void) {
  static const char *const marks[] = {"tests/data/validation/README.md", NULL};
  g_autofree char *top = nearest_dir_with(marks);
  if (top) return g_build_filename(top, "tests", "data", "validation", NULL);
  g_autofree char *built = g_build_filename(STRATSIM_SOURCE_DIR, "tests", "data", "validation", NULL);
  g_autofree char *readme = g_build_filename(built, "README.md", NULL);
  if (g_file_test(readme, G_FILE_TEST_IS_REGULAR)) return g_steal_pointer(&built);
  return g_build_filename("tests", "data", "validation", NULL);
}
