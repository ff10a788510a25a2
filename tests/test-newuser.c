/* End-to-end tests of what a new user hit (issue 17, items 1, 5, 9 and 10; items 4, 6, 7 and 8
 * are tested in test-sweep-claims, test-storage, test-limits and test-progress, the README tour
 * by tests/tour.sh):
 *   1  output paths checked before the work; a trace that cannot be written whole leaves no
 *      file while the run is still stored and printed (exit 1);
 *   5  a strategy JSON described by what it holds, not "dp=0 tp=0 pp=0";
 *   9  list runs|searches|calibrations|scenarios, the run id in --json, a header row in list
 *      clusters, --bytes units, search threads defaulting to the cores, hardware TFLOP/s;
 *  10  the default results directory found from a subdirectory of a checkout. */
#include <cjson/cJSON.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "test-cli-util.h"
#include "test-db-util.h"

static char *tmpdir;

static char *tmp_path(const char *name) { return g_build_filename(tmpdir, name, NULL); }

static void assert_one_line(const char *text) {
  g_assert_nonnull(text);
  g_assert_cmpuint(strlen(text), >, 1);
  g_assert_true(strchr(text, '\n') == text + strlen(text) - 1);
}


/* --- item 1 ---------------------------------------------------------------------------------- */

typedef struct {
  const char *args, *needle;
} BadOutput;

static const BadOutput bad_outputs[] = {
    {"search --model gpt3-1.3b --cluster dgx-a100:nodes=2 --budget 100000 --out "
     "/nonexistent/dir/w.json --db out.db", "--out /nonexistent/dir/w.json: directory /nonexistent/dir does not exist"},
    {"simulate --model gpt3-1.3b --cluster dgx-a100:nodes=2 --no-symmetry --trace "
     "/nonexistent/dir/t.json --db out.db", "--trace /nonexistent/dir/t.json: directory"},
    {"simulate --model mlp --cluster dgx-a100 --trace . --db out.db", "--trace . is a directory"},
    {"sweep claims.json --db out.db --out claims.json/charts", "is not a directory"},
};

static const char *scenario =
    "{\"name\": \"claims\", \"model\": \"mlp\", \"clusters\": [\"dgx-a100\"],"
    " \"strategies\": [\"dp\", \"megatron:tp=2\"]}";

/* Refused at once, one line, exit 2, and nothing done: no database was even created. */
static void test_outputs_checked_first(gconstpointer data) {
  const BadOutput *c = data;
  g_autofree char *file = tmp_path("claims.json");
  g_assert_true(g_file_set_contents(file, scenario, -1, NULL));
  g_autofree char *db = tmp_path("out.db");
  g_unlink(db);
  TestCliResult r = test_cli_run(tmpdir, c->args);
  g_assert_cmpint(r.status, ==, 2);
  assert_one_line(r.err);
  if (!strstr(r.err, c->needle)) g_error("'%s' lacks '%s'", r.err, c->needle);
  g_assert_cmpstr(r.out, ==, "");
  test_cli_result_clear(&r);
  g_assert_false(g_file_test(db, G_FILE_TEST_EXISTS));
}

/* In the child: files may grow to 1 MiB, and writing past it fails (EFBIG) instead of killing. */
static void limit_file_size(gpointer data) {
  (void)data;
  struct rlimit rl = {.rlim_cur = 1 << 20, .rlim_max = 1 << 20};
  setrlimit(RLIMIT_FSIZE, &rl);
  signal(SIGXFSZ, SIG_IGN);
}

/* A trace larger than the disk allows: the run is stored and printed, exit 1 with one line,
 * and no trace file (not even a partial one) is left. */
static void test_trace_full_disk(void) {
  g_autofree char *dir = tmp_path("full");
  g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
  g_autofree char *cmd = g_strdup_printf(
      "%s simulate --model gpt3-1.3b --cluster dgx-a100:nodes=1 --strategy megatron:tp=8 "
      "--trace t.json --db run.db", STRATSIM_BIN);
  g_auto(GStrv) argv = NULL;
  g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, NULL));
  g_autofree char *out = NULL, *err = NULL;
  int status = 0;
  g_assert_true(g_spawn_sync(dir, argv, NULL, G_SPAWN_DEFAULT, limit_file_size, NULL, &out, &err,
                             &status, NULL));
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 1);
  assert_one_line(err);
  g_assert_nonnull(strstr(err, "error writing trace t.json"));
  g_assert_nonnull(strstr(out, "iteration "));
  g_assert_nonnull(strstr(out, "stored       run 1"));
  g_assert_null(strstr(out, "trace        t.json"));
  g_autofree char *db = g_build_filename(dir, "run.db", NULL);
  g_assert_cmpint(test_db_query_int(db, "SELECT count(*) FROM predictions"), ==, 1);
  GDir *d = g_dir_open(dir, 0, NULL);
  for (const char *name; (name = g_dir_read_name(d));)
    if (g_str_has_prefix(name, "t.json")) g_error("trace file %s left behind", name);
  g_dir_close(d);
}

/* --- item 5 ---------------------------------------------------------------------------------- */

static void test_json_strategy_described(void) {
  TestCliResult r = test_cli_run(tmpdir, "search --model alexnet --cluster flexflow-k80:nodes=2 "
                                         "--algo mcmc --budget 100 --seed 1 --threads 1 "
                                         "--out winner.json --db s.db");
  g_assert_cmpint(r.status, ==, 0);
  test_cli_result_clear(&r);
  r = test_cli_run(tmpdir, "simulate --model alexnet --cluster flexflow-k80:nodes=2 "
                           "--strategy winner.json --db s.db");
  g_assert_cmpint(r.status, ==, 0);
  g_test_message("%s", r.out);
  g_assert_null(strstr(r.out, "dp=0"));
  g_assert_null(strstr(r.out, "of 0"));
  g_assert_true(g_regex_match_simple("strategy +[0-9]+ mesh(es)? \\([0-9x, ]+\\), [0-9]+ pipeline "
                                     "stages?, [0-9]+ microbatch(es)? of [0-9]+ samples",
                                     r.out, 0, 0));
  test_cli_result_clear(&r);
  r = test_cli_run(tmpdir, "simulate --model alexnet --cluster flexflow-k80:nodes=2 "
                           "--strategy winner.json --json --no-store");
  g_assert_cmpint(r.status, ==, 0);
  cJSON *j = cJSON_Parse(r.out);
  cJSON *st = cJSON_GetObjectItem(j, "strategy");
  g_assert_true(cJSON_IsArray(cJSON_GetObjectItem(st, "meshes")));
  g_assert_null(cJSON_GetObjectItem(st, "dp"));
  g_assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "run_id"))); /* --no-store */
  cJSON_Delete(j);
  test_cli_result_clear(&r);
}

/* --- item 9 ---------------------------------------------------------------------------------- */

static void test_list_and_run_id(void) {
  g_autofree char *db = tmp_path("list.db");
  g_autofree char *sim = g_strdup_printf("simulate --model mlp --cluster dgx-a100 --strategy dp "
                                         "--json --db '%s'", db);
  gint64 ids[2];
  for (int i = 0; i < 2; i++) {
    TestCliResult r = test_cli_run(tmpdir, sim);
    g_assert_cmpint(r.status, ==, 0);
    cJSON *j = cJSON_Parse(r.out);
    ids[i] = (gint64)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "run_id"));
    cJSON_Delete(j);
    test_cli_result_clear(&r);
  }
  g_assert_cmpint(ids[0], ==, 1);
  g_assert_cmpint(ids[1], ==, 2);
  g_autofree char *list = g_strdup_printf("list runs --db '%s'", db);
  TestCliResult r = test_cli_run(tmpdir, list);
  g_assert_cmpint(r.status, ==, 0);
  g_test_message("%s", r.out);
  g_assert_true(g_str_has_prefix(r.out, "run  created (UTC)"));
  g_assert_true(g_regex_match_simple("\n2 +[-0-9T:.Z]+ +simulate +mlp +dgx-a100 +dp ", r.out, 0, 0));
  test_cli_result_clear(&r);
  const char *kinds[] = {"searches", "calibrations", "scenarios"};
  for (gsize i = 0; i < G_N_ELEMENTS(kinds); i++) {
    g_autofree char *args = g_strdup_printf("list %s --db '%s'", kinds[i], db);
    r = test_cli_run(tmpdir, args);
    g_assert_cmpint(r.status, ==, 0);
    g_autofree char *none = g_strdup_printf("(no %s in", kinds[i]);
    g_assert_nonnull(strstr(r.out, none));
    test_cli_result_clear(&r);
  }
  r = test_cli_run(tmpdir, "list clusters");
  g_assert_true(g_str_has_prefix(r.out, "preset "));
  test_cli_result_clear(&r);
  /* an empty file (SQLite's empty database) holds nothing yet: said so, exit 0, left empty */
  g_autofree char *empty = tmp_path("empty.db");
  g_assert_true(g_file_set_contents(empty, "", 0, NULL));
  g_autofree char *args = g_strdup_printf("list runs --db '%s'", empty);
  r = test_cli_run(tmpdir, args);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "is empty: nothing stored yet"));
  test_cli_result_clear(&r);
  g_autofree char *contents = NULL;
  gsize length = 1;
  g_assert_true(g_file_get_contents(empty, &contents, &length, NULL));
  g_assert_cmpuint(length, ==, 0);
}

static void test_bytes_units(void) {
  static const struct { const char *text; const char *bytes; } cases[] = {
      {"1MB", "(1000000 bytes)"}, {"1MiB", "(1048576 bytes)"}, {"1M", "(1048576 bytes)"},
      {"2GB", "(2000000000 bytes)"}, {"1.5K", "(1536 bytes)"}, {"512", "(512 bytes)"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *args = g_strdup_printf("collective --kind all_reduce --bytes %s --ranks 8 "
                                            "--cluster dgx-a100", cases[i].text);
    TestCliResult r = test_cli_run(tmpdir, args);
    g_assert_cmpint(r.status, ==, 0);
    if (!strstr(r.out, cases[i].bytes)) g_error("--bytes %s: %s", cases[i].text, r.out);
    test_cli_result_clear(&r);
  }
  TestCliResult r = test_cli_run(tmpdir, "collective --kind all_reduce --bytes 1XB --ranks 8 "
                                         "--cluster dgx-a100");
  g_assert_cmpint(r.status, ==, 2);
  test_cli_result_clear(&r);
}

static void test_search_threads_default(void) {
  TestCliResult r = test_cli_run(tmpdir, "search --model mlp --cluster dgx-a100 --algo random "
                                         "--budget 20 --json --no-store");
  g_assert_cmpint(r.status, ==, 0);
  cJSON *j = cJSON_Parse(r.out);
  double threads = cJSON_GetNumberValue(cJSON_GetObjectItem(j, "threads"));
  g_assert_cmpfloat(threads, ==, (double)g_get_num_processors());
  cJSON_Delete(j);
  test_cli_result_clear(&r);
}

/* Full recomputation runs every forward twice: hardware FLOPs are 4/3 of the model FLOPs
 * (3 passes of model FLOPs, 4 executed). */
static void test_hardware_flops(void) {
  TestCliResult r = test_cli_run(tmpdir, "simulate --model gpt3-1.3b --cluster dgx-a100:nodes=2 "
                                         "--strategy megatron:tp=8,dp=2,recompute=full --no-store");
  g_assert_cmpint(r.status, ==, 0);
  double model = 0, hardware = 0;
  const char *m = strstr(r.out, "per GPU      "), *h = strstr(r.out, "hardware     ");
  g_assert_nonnull(m);
  g_assert_nonnull(h);
  model = g_ascii_strtod(m + strlen("per GPU      "), NULL);
  hardware = g_ascii_strtod(h + strlen("hardware     "), NULL);
  g_assert_cmpfloat(hardware / model, >, 1.3);
  g_assert_cmpfloat(hardware / model, <, 1.34);
  test_cli_result_clear(&r);
  /* --json carries both figures too. */
  r = test_cli_run(tmpdir, "simulate --model gpt3-1.3b --cluster dgx-a100:nodes=2 "
                           "--strategy megatron:tp=8,dp=2,recompute=full --no-store --json");
  g_assert_cmpint(r.status, ==, 0);
  cJSON *j = cJSON_Parse(r.out);
  g_assert_nonnull(j);
  model = cJSON_GetNumberValue(cJSON_GetObjectItem(j, "tflops_per_gpu"));
  hardware = cJSON_GetNumberValue(cJSON_GetObjectItem(j, "hardware_tflops_per_gpu"));
  g_assert_cmpfloat(hardware / model, >, 1.3);
  g_assert_cmpfloat(hardware / model, <, 1.34);
  cJSON_Delete(j);
  test_cli_result_clear(&r);
}

/* explain's text lists the ops with their layouts (the README promised them; only --json had
 * them), the layers' repeats folded into one row. */
static void test_explain_layouts(void) {
  TestCliResult r = test_cli_run(tmpdir, "explain --model gpt3-1.3b --cluster dgx-a100:nodes=2 "
                                         "--strategy megatron:tp=4,pp=2,dp=2 --no-store");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "\nops: layouts per mesh axis"));
  g_assert_true(g_regex_match_simple("\n  layer0\\.qkv \\+11 +matmul +0 +[0-9.]+ +[0-9.]+  mesh 0 "
                                     "\\(2x4\\) split \\[b, n\\]: \\[S\\(0\\),B\\] "
                                     "\\[B,S\\(1\\)\\] -> \\[S\\(0\\),S\\(2\\)\\]",
                                     r.out, 0, 0));
  test_cli_result_clear(&r);
}

/* --- item 10 --------------------------------------------------------------------------------- */

/* From a subdirectory of a checkout (it has results/res_db.c) the database goes to the
 * checkout's results/, not to a new results/ where the command runs; STRATSIM_RESULTS wins. */
static void test_results_dir(void) {
  g_autofree char *checkout = tmp_path("checkout");
  g_autofree char *sub = g_build_filename(checkout, "build", "deep", NULL);
  g_autofree char *results = g_build_filename(checkout, "results", NULL);
  g_assert_cmpint(g_mkdir_with_parents(sub, 0755), ==, 0);
  g_assert_cmpint(g_mkdir_with_parents(results, 0755), ==, 0);
  g_autofree char *marker = g_build_filename(results, "res_db.c", NULL);
  g_assert_true(g_file_set_contents(marker, "", 0, NULL));
  TestCliResult r = test_cli_run(sub, "simulate --model mlp --cluster dgx-a100");
  g_assert_cmpint(r.status, ==, 0);
  test_cli_result_clear(&r);
  g_autofree char *db = g_build_filename(results, "stratsim.db", NULL);
  g_autofree char *stray = g_build_filename(sub, "results", NULL);
  g_assert_true(g_file_test(db, G_FILE_TEST_IS_REGULAR));
  g_assert_false(g_file_test(stray, G_FILE_TEST_EXISTS));
  /* $STRATSIM_RESULTS */
  g_autofree char *elsewhere = tmp_path("elsewhere");
  g_autofree char *cmd = g_strdup_printf("%s simulate --model mlp --cluster dgx-a100", STRATSIM_BIN);
  g_auto(GStrv) argv = NULL;
  g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, NULL));
  g_auto(GStrv) env = g_environ_setenv(g_get_environ(), "STRATSIM_RESULTS", elsewhere, TRUE);
  int status = 0;
  g_assert_true(g_spawn_sync(sub, argv, env, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, NULL,
                             &status, NULL));
  g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  g_autofree char *moved = g_build_filename(elsewhere, "stratsim.db", NULL);
  g_assert_true(g_file_test(moved, G_FILE_TEST_IS_REGULAR));
}

/* `bench --suite collectives|megatron|host` run from a folder outside any checkout read the
 * published measurements of the source tree the binary was built from (they used to need the
 * checkout root as the current directory); host reads tests/data/gpu beside them. A --data
 * folder without the suite's file is a one-line error, exit 2. */
static void test_bench_data_found(void) {
  static const char *const suites[] = {"collectives", "host", "megatron"};
  gsize nsuites = G_N_ELEMENTS(suites);
#if defined(__SANITIZE_ADDRESS__)
  /* The suites find their data through one function (cli_outputs.c); megatron's simulations of
   * the Megatron tables take 20 s instrumented, most of this test's binary (the release run
   * covers it). */
  nsuites = 2;
#endif
  for (gsize i = 0; i < nsuites; i++) {
    g_autofree char *args = g_strdup_printf("bench --suite %s", suites[i]);
    TestCliResult r = test_cli_run(tmpdir, args);
    g_assert_cmpint(r.status, ==, 0);
    g_assert_nonnull(strstr(r.out, "tests/data/validation/"));
    g_assert_nonnull(strstr(r.out, "mean"));
    test_cli_result_clear(&r);
  }
  TestCliResult r = test_cli_run(tmpdir, "bench --suite host --data .");
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "torch_layers.csv"));
  g_assert_null(strchr(strchr(r.err, '\n') + 1, '\n')); /* one line */
  test_cli_result_clear(&r);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  /* one-line stderr is asserted: no progress lines on a slow machine (test-progress has them) */
  g_setenv("STRATSIM_PROGRESS_S", "off", TRUE);
  tmpdir = g_dir_make_tmp("stratsim-newuser-XXXXXX", NULL);
  g_assert_nonnull(tmpdir);
  for (gsize i = 0; i < G_N_ELEMENTS(bad_outputs); i++) {
    g_autofree char *path = g_strdup_printf("/newuser/outputs/checked-first/%zu", i);
    g_test_add_data_func(path, &bad_outputs[i], test_outputs_checked_first);
  }
  g_test_add_func("/newuser/outputs/trace-full-disk", test_trace_full_disk);
  g_test_add_func("/newuser/strategy/json-described", test_json_strategy_described);
  g_test_add_func("/newuser/list/runs-and-run-id", test_list_and_run_id);
  g_test_add_func("/newuser/collective/bytes-units", test_bytes_units);
  g_test_add_func("/newuser/search/threads-default", test_search_threads_default);
  g_test_add_func("/newuser/simulate/hardware-flops", test_hardware_flops);
  g_test_add_func("/newuser/explain/layouts", test_explain_layouts);
  g_test_add_func("/newuser/results-dir", test_results_dir);
  g_test_add_func("/newuser/bench/data-found", test_bench_data_found);
  int status = g_test_run();
  test_remove_tree(tmpdir);
  g_free(tmpdir);
  return status;
}
