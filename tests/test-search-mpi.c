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

static char *tmpdir;

#define MLP_SEARCH "search --model mlp --cluster aws-p3.8xlarge --seed 3 "

/* stdout of `stratsim ARGS` (exit 0 required); caller g_frees. */
static char *run_ok(const char *args) {
  TestCliResult r = test_cli_run(tmpdir, args);
  if (r.status != 0) g_error("stratsim %s: exit %d: %s%s", args, r.status, r.out, r.err);
  g_free(r.err);
  return r.out;
}

/* `mpirun -np 2 stratsim ARGS` in tmpdir, oversubscribed and yielding when idle (2 ranks on a
 * 1- or 2-core machine); exit 0 required. Returns stdout; stderr goes to the test log. */
static char *mpirun_ok(const char *args) {
  g_autofree char *cmd = g_strdup_printf(
      "mpirun --allow-run-as-root --oversubscribe -np 2 %s %s", STRATSIM_BIN, args);
  g_auto(GStrv) argv = NULL;
  GError *error = NULL;
  g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, &error));
  g_auto(GStrv) env = g_get_environ();
  env = g_environ_setenv(env, "OMPI_MCA_mpi_yield_when_idle", "1", TRUE);
  env = g_environ_setenv(env, "OMPI_MCA_rmaps_base_oversubscribe", "1", TRUE);
#if defined(__SANITIZE_ADDRESS__)
  /* Open MPI does not free its allocations at MPI_Finalize (tests/test-validate.c says more):
   * leak checks off for the ranks; address and undefined-behaviour checks stay on. */
  const char *asan = g_environ_getenv(env, "ASAN_OPTIONS");
  g_autofree char *asan_opts = g_strdup_printf("%s%sdetect_leaks=0", asan ? asan : "", asan ? ":" : "");
  env = g_environ_setenv(env, "ASAN_OPTIONS", asan_opts, TRUE);
#endif
  char *out = NULL, *err = NULL;
  int wait_status = 0;
  g_assert_true(g_spawn_sync(tmpdir, argv, env, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err,
                             &wait_status, &error));
  g_assert_no_error(error);
  g_test_message("%s\n%s", cmd, err);
  if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0)
    g_error("%s: status %d\n%s%s", cmd, wait_status, out, err);
  g_free(err);
  return out;
}

/* FALSE (the test skipped) where mpirun is missing or stratsim ignores it. */
static gboolean have_mpi(void) {
  g_autofree char *mpirun = g_find_program_in_path("mpirun");
  if (!mpirun) {
    g_test_skip("mpirun is not on PATH (install openmpi-bin)");
    return FALSE;
  }
  /* A stratsim built without MPI says so on stderr under mpirun (cli/cli_mpi.h). */
  g_autofree char *cmd = g_strdup_printf(
      "mpirun --allow-run-as-root --oversubscribe -np 1 %s search --model mlp --cluster "
      "aws-p3.8xlarge --algo random --budget 1 --no-profiles --db %s/probe.db --json",
      STRATSIM_BIN, tmpdir);
  g_auto(GStrv) argv = NULL;
  g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, NULL));
  g_autofree char *out = NULL, *err = NULL;
  int wait_status = 0;
  if (!g_spawn_sync(tmpdir, argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err, &wait_status,
                    NULL) ||
      strstr(err, "built without MPI")) {
    g_test_skip("stratsim was built without MPI (install libopenmpi-dev and rebuild)");
    return FALSE;
  }
  return TRUE;
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
  g_autofree char *a = mpirun_ok(a_args), *b = mpirun_ok(b_args);
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
  g_autofree char *sim = run_ok("simulate --model mlp --cluster aws-p3.8xlarge --strategy winner.json --json --db a.db");
  cJSON *s = parse(sim);
  g_assert_cmpfloat(get_number(s, "iteration_time_s"), ==, t);
  g_assert_true(cJSON_IsTrue(cJSON_GetObjectItem(s, "fits_memory")));
  cJSON_Delete(s);

  /* 2 ranks x 1 thread run the global workers of 1 process x 2 threads: the same search */
  g_autofree char *one_args = g_strdup_printf("%s --threads 2 --db c.db", args);
  g_autofree char *one = run_ok(one_args);
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

/* The text report: printed once, naming the ranks. */
static void test_text(void) {
  if (!have_mpi()) return;
  g_autofree char *out = mpirun_ok(MLP_SEARCH "--algo mcmc --budget 100 --db t.db");
  g_test_message("%s", out);
  const char *first = strstr(out, "stratsim search:");
  g_assert_nonnull(first);
  g_assert_null(strstr(first + 1, "stratsim search:"));
  g_assert_nonnull(strstr(out, "1 thread on each of 2 MPI ranks"));
  g_assert_nonnull(strstr(out, "  searched     100 evaluations"));
}

/* Exhaustive subtrees and grid points split over the ranks: the whole space is covered and the
 * result is the 2-thread process's. */
static void test_split(gconstpointer data) {
  if (!have_mpi()) return;
  const char *algo = data;
  g_autofree char *args = g_strdup_printf(MLP_SEARCH "--algo %s --microbatches 1 --dims megatron "
                                          "--budget 100000 --json", algo);
  g_autofree char *two_args = g_strdup_printf("%s --db split-%s-2.db", args, algo);
  g_autofree char *one_args = g_strdup_printf("%s --threads 2 --db split-%s-1.db", args, algo);
  g_autofree char *two = mpirun_ok(two_args), *one = run_ok(one_args);
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
  g_test_add_data_func("/search/mpi/split/exhaustive", "exhaustive", test_split);
  g_test_add_data_func("/search/mpi/split/grid", "grid", test_split);
  int status = g_test_run();
  test_remove_tree(tmpdir);
  g_free(tmpdir);
  return status;
}
