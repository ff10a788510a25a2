/* Tests of util/gnuplot: the strings chart scripts are made of, and drawing that checks what
 * gnuplot wrote (issue 17 item 2: on a full disk gnuplot exits 0 and leaves empty images, and
 * `sweep`/`plot` said "12 images"). Fake gnuplots (shell scripts put first on PATH) play the
 * full disk (empty images), a gnuplot that draws nothing, and one that crashes. */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>

#include "test-cli-util.h"
#include "util/util_gnuplot.h"

static char *tmpdir;

static char *tmp_path(const char *name) { return g_build_filename(tmpdir, name, NULL); }

/* Fake gnuplots: each is called as `gnuplot NAME.gp` in the chart directory. */
static const char *const fake_empty = /* a full disk: the images are made, nothing lands in them */
    "#!/bin/sh\nb=${1%.gp}\n: > \"$b.png\"\n: > \"$b.svg\"\nexit 0\n";
static const char *const fake_nothing = "#!/bin/sh\nexit 0\n";
static const char *const fake_crash = "#!/bin/sh\nkill -SEGV $$\n";
static const char *const fake_png_only = /* draws the png, not the svg */
    "#!/bin/sh\nb=${1%.gp}\necho png > \"$b.png\"\nexit 0\n";

/* A directory holding only a program named gnuplot with @script as its text. */
static char *fake_gnuplot_dir(const char *name, const char *script) {
  g_autofree char *leaf = g_strdup_printf("bin-%s", name);
  char *dir = tmp_path(leaf);
  g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
  g_autofree char *path = g_build_filename(dir, "gnuplot", NULL);
  g_assert_true(g_file_set_contents(path, script, -1, NULL));
  g_assert_cmpint(g_chmod(path, 0755), ==, 0);
  return dir;
}

/* A chart directory with a trivial script NAME.gp. */
static char *chart_dir(const char *name) {
  char *dir = tmp_path(name);
  g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
  g_autofree char *epilogue = NULL;
  g_autofree char *terminal =
      util_gnuplot_terminal("c", UTIL_GNUPLOT_PNG | UTIL_GNUPLOT_SVG, 200, 150, &epilogue);
  g_autofree char *script = g_strdup_printf("%splot x title 'x'\n%s", terminal, epilogue);
  g_assert_true(util_write_file(dir, "c.gp", script, NULL, NULL));
  return dir;
}

static void test_strings(void) {
  g_autofree char *q = util_gnuplot_quote("it's\na");
  g_assert_cmpstr(q, ==, "'it''s a'");
  g_autofree char *t = util_gnuplot_title("a \"b\"\\", "note");
  g_assert_cmpstr(t, ==, "\"a \\\"b\\\"\\\\\\nnote\"");
  g_autofree char *epilogue = NULL;
  g_autofree char *term = util_gnuplot_terminal("x", UTIL_GNUPLOT_SVG, 10, 20, &epilogue);
  g_assert_true(g_str_has_prefix(term, "set terminal svg size 10,20 "));
  g_assert_nonnull(strstr(term, "set output 'x.svg'\n"));
  g_assert_cmpstr(epilogue, ==, "unset output\n");
  g_free(epilogue);
  g_free(term);
  term = util_gnuplot_terminal("x", UTIL_GNUPLOT_PNG | UTIL_GNUPLOT_SVG, 10, 20, &epilogue);
  g_assert_true(g_str_has_prefix(term, "set terminal pngcairo size 10,20 "));
  g_assert_true(g_str_has_suffix(epilogue, "set output 'x.svg'\nreplot\nunset output\n"));
}

typedef struct {
  const char *name;
  const char *script;
  const char *needle; /* in the error */
} FakeCase;

static const FakeCase fake_cases[] = {
    {"empty", fake_empty, "c.png is empty"},
    {"nothing", fake_nothing, "c.png is missing"},
    {"crash", fake_crash, "gnuplot"},
    {"png-only", fake_png_only, "c.svg is missing"},
};

/* A gnuplot that does not draw every image fails the draw, naming the image. */
static void test_draw_fake(gconstpointer data) {
  const FakeCase *fc = data;
  g_autofree char *bin = fake_gnuplot_dir(fc->name, fc->script);
  g_autofree char *gnuplot = g_build_filename(bin, "gnuplot", NULL);
  g_autofree char *leaf = g_strdup_printf("chart-%s", fc->name);
  g_autofree char *dir = chart_dir(leaf);
  GPtrArray *images = g_ptr_array_new_with_free_func(g_free);
  GError *error = NULL;
  g_assert_false(util_gnuplot_draw(gnuplot, dir, "c", UTIL_GNUPLOT_PNG | UTIL_GNUPLOT_SVG, images,
                                   &error));
  g_assert_error(error, UTIL_ERROR, UTIL_ERROR_GNUPLOT);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, fc->needle));
  g_assert_nonnull(strstr(error->message, "c.gp"));
  g_assert_cmpuint(images->len, ==, 0);
  g_error_free(error);
  g_ptr_array_unref(images);
}

/* An image of an earlier run does not pass for one this run drew. */
static void test_draw_stale(void) {
  g_autofree char *bin = fake_gnuplot_dir("stale", fake_nothing);
  g_autofree char *gnuplot = g_build_filename(bin, "gnuplot", NULL);
  g_autofree char *dir = chart_dir("chart-stale");
  g_autofree char *png = g_build_filename(dir, "c.png", NULL);
  g_assert_true(g_file_set_contents(png, "an old image", -1, NULL));
  GError *error = NULL;
  g_assert_false(util_gnuplot_draw(gnuplot, dir, "c", UTIL_GNUPLOT_PNG, NULL, &error));
  g_assert_error(error, UTIL_ERROR, UTIL_ERROR_GNUPLOT);
  g_assert_nonnull(strstr(error->message, "c.png is missing"));
  g_error_free(error);
}

/* The real gnuplot draws both images, non-empty, and says so. */
static void test_draw_real(void) {
  g_autofree char *gnuplot = g_find_program_in_path("gnuplot");
  if (!gnuplot) {
    g_test_skip("gnuplot is not on PATH");
    return;
  }
  g_autofree char *dir = chart_dir("chart-real");
  GPtrArray *images = g_ptr_array_new_with_free_func(g_free);
  GError *error = NULL;
  g_assert_true(util_gnuplot_draw(gnuplot, dir, "c", UTIL_GNUPLOT_PNG | UTIL_GNUPLOT_SVG, images,
                                  &error));
  g_assert_no_error(error);
  g_assert_cmpuint(images->len, ==, 2);
  g_assert_true(g_str_has_suffix(g_ptr_array_index(images, 0), "/c.png"));
  g_assert_true(g_str_has_suffix(g_ptr_array_index(images, 1), "/c.svg"));
  for (guint i = 0; i < images->len; i++) {
    GStatBuf st;
    g_assert_cmpint(g_stat(g_ptr_array_index(images, i), &st), ==, 0);
    g_assert_cmpint(st.st_size, >, 0);
  }
  g_ptr_array_unref(images);
}

static const char *const tiny_scenario =
    "{\"name\": \"tiny\", \"model\": \"mlp:layers=2,hidden=64,batch=16\","
    " \"clusters\": [\"dgx-a100:nodes=1,gpus_per_node={gpus}\"], \"strategies\": [\"dp\"],"
    " \"axes\": {\"gpus\": [1, 2]}, \"outputs\": {\"charts\": [\"throughput\", \"breakdown\"]}}";

/* `sweep` and `plot` on a full disk: exit 1 naming the empty image, never "N images". */
static void test_cli_sweep_plot_full_disk(void) {
  g_autofree char *file = tmp_path("tiny.json");
  g_autofree char *db = tmp_path("tiny.db");
  g_autofree char *out = tmp_path("tiny-out");
  g_assert_true(g_file_set_contents(file, tiny_scenario, -1, NULL));
  g_autofree char *bin = fake_gnuplot_dir("cli-empty", fake_empty);
  g_autofree char *sweep = g_strdup_printf("sweep '%s' --db '%s' --out '%s'", file, db, out);
  TestCliResult r = test_cli_run_path(tmpdir, bin, sweep);
  g_test_message("sweep: exit %d, stdout %s, stderr %s", r.status, r.out, r.err);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "throughput.png is empty"));
  g_assert_null(strstr(r.out, "images"));
  test_cli_result_clear(&r);
  g_autofree char *plot = g_strdup_printf("plot --scenario tiny --db '%s' --out '%s'", db, out);
  r = test_cli_run_path(tmpdir, bin, plot);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "throughput.png is empty"));
  test_cli_result_clear(&r);
  /* the real gnuplot draws them (where there is one) */
  g_autofree char *gnuplot = g_find_program_in_path("gnuplot");
  if (gnuplot) {
    g_autofree char *real_bin = g_path_get_dirname(gnuplot);
    r = test_cli_run_path(tmpdir, real_bin, plot);
    g_assert_cmpint(r.status, ==, 0);
    test_cli_result_clear(&r);
    g_autofree char *png = g_build_filename(out, "throughput.png", NULL);
    GStatBuf st;
    g_assert_cmpint(g_stat(png, &st), ==, 0);
    g_assert_cmpint(st.st_size, >, 0);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp("stratsim-gnuplot-XXXXXX", NULL);
  g_assert_nonnull(tmpdir);
  g_test_add_func("/util/gnuplot/strings", test_strings);
  for (gsize i = 0; i < G_N_ELEMENTS(fake_cases); i++) {
    g_autofree char *path = g_strdup_printf("/util/gnuplot/draw/fake/%s", fake_cases[i].name);
    g_test_add_data_func(path, &fake_cases[i], test_draw_fake);
  }
  g_test_add_func("/util/gnuplot/draw/stale", test_draw_stale);
  g_test_add_func("/util/gnuplot/draw/real", test_draw_real);
  g_test_add_func("/util/gnuplot/cli/sweep-plot-full-disk", test_cli_sweep_plot_full_disk);
  int status = g_test_run();
  test_remove_tree(tmpdir);
  g_free(tmpdir);
  return status;
}
