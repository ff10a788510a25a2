/* Tests of `mpirun -np 2 stratsim search` (cli/cli_search.c, search/srch_ranks.c,
 * search/SEARCH.md "Over MPI ranks"): the same bytes on every run, the ranks' count in the
 * output, the evaluation budget as the total over the ranks, a winner that `simulate
 * --strategy` reproduces, one printed report (rank 0's), and the split itself: 2 ranks of 1
 * thread search exactly what one process of 2 threads does (the same global workers), for
 * mcmc, exhaustive (complete) and the Megatron grid. Skipped where mpirun is not on PATH or
 * stratsim was built without MPI. */
#include <cjson/cJSON.h>
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "test-cli-util.h"
#include "test-mpi-util.h"

static char *tmpdir;

#define MLP_SEARCH "search --model mlp --cluster aws-p3.8xlarge --seed 3 "

/* FALSE (the test skipped) where mpirun is missing or stratsim ignores it. */
static gboolean have_mpi(void) {
  g_autofree char *probe = g_strdup_printf("search --model mlp --cluster aws-p3.8xlarge --algo "
                                           "random --budget 1 --no-profiles --db %s/probe.db "
                                           "--json", tmpdir);
  return test_have_mpi(tmpdir, probe);
}

static cJSON *parse(const char *text) {
  cJSON *j = cJSON_Parse(text);
  if (!j) g_error("not JSON: %s", text);
  return j;
}

static double get_number(const cJSON *obj, const char *key) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
  g_assert_true(cJSON_IsNumber(item));
  return item->valuedouble;
}

/* The printed text of @obj's member @key (to compare objects byte for byte). */
static char *member_text(const cJSON *obj, const char *key) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
  g_assert_nonnull(item);
  char *text = cJSON_Print(item);
  char *out = g_strdup(text);
  cJSON_free(text);
  return out;
}

static void test_mcmc_two_ranks(void) {
  if (!have_mpi()) return;
  const char *args = MLP_SEARCH "--algo mcmc --budget 200 --json";
  g_autofree char *a_args = g_strdup_printf("%s --db a.db --out winner.json", args);
  g_autofree char *b_args = g_strdup_printf("%s --db b.db", args);
  g_autofree char *a = test_mpirun_ok(tmpdir, a_args), *b = test_mpirun_ok(tmpdir, b_args);
  /* reproducible: the same bytes, and one JSON object (rank 1 prints nothing) */
  g_assert_cmpstr(a, ==, b);
  cJSON *j = parse(a);
  g_assert_cmpfloat(get_number(j, "ranks"), ==, 2);
  g_assert_cmpfloat(get_number(j, "threads"), ==, 1);
  /* --budget is the total over the ranks, and all of it is spent */
  cJSON *search = cJSON_GetObjectItem(j, "search");
  g_assert_cmpfloat(get_number(search, "evaluations"), ==, 200);
  cJSON *best = cJSON_GetObjectItem(j, "best");
  double t = get_number(best, "iteration_time_s");
  g_assert_true(isfinite(t) && t > 0);
  g_assert_true(cJSON_IsObject(cJSON_GetObjectItem(best, "strategy")));
  g_assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(j, "convergence")) > 0);

  /* the winner is a valid strategy that simulate reproduces */
  g_autofree char *sim = test_cli_run_ok(tmpdir, "simulate --model mlp --cluster aws-p3.8xlarge --strategy winner.json --json --db a.db");
  cJSON *s = parse(sim);
  g_assert_cmpfloat(get_number(s, "iteration_time_s"), ==, t);
  g_assert_true(cJSON_IsTrue(cJSON_GetObjectItem(s, "fits_memory")));
  cJSON_Delete(s);

  /* 2 ranks x 1 thread run the global workers of 1 process x 2 threads: the same search */
  g_autofree char *one_args = g_strdup_printf("%s --threads 2 --db c.db", args);
  g_autofree char *one = test_cli_run_ok(tmpdir, one_args);
  cJSON *k = parse(one);
  g_assert_null(cJSON_GetObjectItem(k, "ranks")); /* one process: today's output */
  const char *keys[] = {"search", "best", "baselines", "convergence"};
  for (guint i = 0; i < G_N_ELEMENTS(keys); i++) {
    g_autofree char *x = member_text(j, keys[i]), *y = member_text(k, keys[i]);
    g_assert_cmpstr(x, ==, y);
  }
  cJSON_Delete(k);
  cJSON_Delete(j);
}

/* How many times @needle occurs in @text. Not inlined: GCC 12 misreads pointers into a
 * g_autofree string (under ASan, and -Wdangling-pointer at -O3). */
static G_GNUC_NO_INLINE guint occurrences(const char *text, const char *needle) {
  guint n = 0;
  for (const char *at = strstr(text, needle); at; at = strstr(at + 1, needle)) n++;
  return n;
}

/* The text report: printed once, naming the ranks. */
static void test_text(void) {
  if (!have_mpi()) return;
  g_autofree char *out = test_mpirun_ok(tmpdir, MLP_SEARCH "--algo mcmc --budget 100 --db t.db");
  g_test_message("%s", out);
  g_assert_cmpuint(occurrences(out, "stratsim search:"), ==, 1);
  g_assert_nonnull(strstr(out, "1 thread on each of 2 MPI ranks"));
  g_assert_nonnull(strstr(out, "  searched     100 evaluations"));
}

/* Exhaustive subtrees, grid points and dp blocks split over the ranks (auto: all three): the
 * whole space is covered and the result is the 2-thread process's, counts included (dp's
 * pruning starts from the earlier phases' best reduced over the ranks, SrchOptions.comm). */
static void test_split(gconstpointer data) {
  if (!have_mpi()) return;
  const char *algo = data;
  g_autofree char *args = g_strdup_printf(MLP_SEARCH "--algo %s --microbatches 1 --dims megatron "
                                          "--budget 100000 --json", algo);
  g_autofree char *two_args = g_strdup_printf("%s --db split-%s-2.db", args, algo);
  g_autofree char *one_args = g_strdup_printf("%s --threads 2 --db split-%s-1.db", args, algo);
  g_autofree char *two = test_mpirun_ok(tmpdir, two_args), *one = test_cli_run_ok(tmpdir, one_args);
  cJSON *j = parse(two), *k = parse(one);
  g_assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "search"), "complete")));
  const char *keys[] = {"search", "best", "baselines", "convergence"};
  for (guint i = 0; i < G_N_ELEMENTS(keys); i++) {
    g_autofree char *x = member_text(j, keys[i]), *y = member_text(k, keys[i]);
    g_assert_cmpstr(x, ==, y);
  }
  cJSON_Delete(j);
  cJSON_Delete(k);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  GError *error = NULL;
  tmpdir = g_dir_make_tmp("stratsim-search-mpi-XXXXXX", &error);
  g_assert_no_error(error);
  g_test_add_func("/search/mpi/mcmc-two-ranks/seed:3", test_mcmc_two_ranks);
  g_test_add_func("/search/mpi/text", test_text);
#if !defined(__SANITIZE_ADDRESS__)
  /* auto's split runs the exhaustive one too (~8 s instrumented; the release run keeps it) */
  g_test_add_data_func("/search/mpi/split/exhaustive", "exhaustive", test_split);
#endif
  g_test_add_data_func("/search/mpi/split/grid", "grid", test_split);
  g_test_add_data_func("/search/mpi/split/dp", "dp", test_split);
  g_test_add_data_func("/search/mpi/split/auto", "auto", test_split);
  int status = g_test_run();
  test_remove_tree(tmpdir);
  g_free(tmpdir);
  return status;
}
