/* Tests of results/: schema creation and migration, refusal of newer schemas and of files that
 * are not databases (left untouched), one transaction per stored run. */
#include <glib.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "costmodel/cm_profile.h"
#include "costmodel/costmodel.h"
#include "results/res_db.h"
#include "session/ses_session.h"
#include "test-util.h"

static char *tmpdir;

static char *tmp_path(const char *name) { return g_build_filename(tmpdir, name, NULL); }

static void test_create_and_store(void) {
  g_autofree char *path = tmp_path("nested/dir/a.db");
  GError *error = NULL;
  ResDb *db = res_db_open(path, &error);
  g_assert_no_error(error);
  g_assert_cmpint(res_db_schema_version(db), ==, RES_SCHEMA_VERSION);
  g_assert_cmpint(res_db_count(db, "runs", &error), ==, 0);
  DevCluster *c = test_cluster(1, 2, 100, 3, 100, 9);
  MdlGraph *g = test_chain_graph(2, 256, 8);
  MdlStrategy *s = mdl_strategy_data_parallel(g, c, 2, DEV_DTYPE_FP16, &error);
  g_assert_no_error(error);
  CmParams p;
  cm_params_default(&p);
  SimRun *run = sim_run_new(g, s, c, &p, &error);
  g_assert_no_error(error);
  gint64 id1 = res_db_store_simulation(db, "chain", "test", "dp", run, &error);
  gint64 id2 = res_db_store_simulation(db, "chain", "test", "dp", run, &error);
  g_assert_no_error(error);
  g_assert_cmpint(id2, ==, id1 + 1);
  g_assert_cmpint(res_db_count(db, "runs", &error), ==, 2);
  g_assert_cmpint(res_db_count(db, "predictions", &error), ==, 2);
  res_db_close(db);
  /* Reopening keeps what is stored. */
  db = res_db_open(path, &error);
  g_assert_no_error(error);
  g_assert_cmpint(res_db_count(db, "predictions", &error), ==, 2);
  res_db_close(db);
  sim_run_free(run);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

static void test_newer_schema_refused(void) {
  g_autofree char *path = tmp_path("newer.db");
  sqlite3 *sql = NULL;
  g_assert_cmpint(sqlite3_open(path, &sql), ==, SQLITE_OK);
  g_assert_cmpint(sqlite3_exec(sql, "CREATE TABLE keep(x); INSERT INTO keep VALUES (42); PRAGMA user_version = 99;",
                               NULL, NULL, NULL), ==, SQLITE_OK);
  sqlite3_close(sql);
  GError *error = NULL;
  g_assert_null(res_db_open(path, &error));
  g_assert_error(error, RES_ERROR, RES_ERROR_SCHEMA);
  g_assert_nonnull(strstr(error->message, "99"));
  g_error_free(error);
  /* Nothing was changed. */
  g_assert_cmpint(sqlite3_open(path, &sql), ==, SQLITE_OK);
  sqlite3_stmt *st = NULL;
  g_assert_cmpint(sqlite3_prepare_v2(sql, "SELECT x FROM keep", -1, &st, NULL), ==, SQLITE_OK);
  g_assert_cmpint(sqlite3_step(st), ==, SQLITE_ROW);
  g_assert_cmpint(sqlite3_column_int(st, 0), ==, 42);
  sqlite3_finalize(st);
  sqlite3_close(sql);
}

static void test_not_a_database(void) {
  g_autofree char *path = tmp_path("text.db");
  const char *text = "plain text, not SQLite, long enough to have a header of sorts.......\n";
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  GError *error = NULL;
  g_assert_null(res_db_open(path, &error));
  g_assert_error(error, RES_ERROR, RES_ERROR_OPEN);
  g_assert_nonnull(strstr(error->message, path));
  g_error_free(error);
  g_autofree char *after = NULL;
  g_assert_true(g_file_get_contents(path, &after, NULL, NULL));
  g_assert_cmpstr(after, ==, text);
}

/* Benchmark (only with -m perf; measures, asserts no time): what storing a run costs a 16-GPU
 * `simulate` beyond the simulation (issue 13 item 5): open the database, load the device's
 * profiles, store the prediction in one transaction, close; 50 times into one file. */
static void test_perf_store_16gpu(void) {
  if (!g_test_perf()) {
    g_test_skip("a benchmark: run with -m perf");
    return;
  }
  GError *error = NULL;
  SesSpecs specs = {.model = "gpt3-1.3b", .cluster = "dgx-a100:nodes=2",
                    .strategy = "megatron:tp=8,pp=1,dp=2"};
  SesSession *session = ses_session_new_from_specs(&specs, &error);
  g_assert_no_error(error);
  gint64 t0 = g_get_monotonic_time();
  SimRun *run = ses_session_simulate(session, &error);
  g_assert_no_error(error);
  double simulate_ms = (double)(g_get_monotonic_time() - t0) / 1e3;
  const char *device = ses_session_cluster(session)->device.name;
  g_autofree char *path = tmp_path("perf.db");
  enum { N = 50 };
  double total = 0, worst = 0;
  for (int i = 0; i <= N; i++) {
    gint64 start = g_get_monotonic_time();
    ResDb *db = res_db_open(path, &error);
    g_assert_no_error(error);
    CmProfiles *profiles = res_db_load_profiles(db, device, &error);
    g_assert_no_error(error);
    g_assert_cmpint(res_db_store_simulation(db, "gpt3-1.3b", "dgx-a100:nodes=2",
                                            "megatron:tp=8,pp=1,dp=2", run, &error), >, 0);
    res_db_close(db);
    cm_profiles_free(profiles);
    double ms = (double)(g_get_monotonic_time() - start) / 1e3;
    if (i == 0) continue; /* the first creates the file and its schema */
    total += ms;
    worst = MAX(worst, ms);
  }
  g_test_message("store a 16-GPU run (open, profiles, one transaction, close): mean %.3f ms, "
                 "max %.3f ms over %d runs; the simulation itself %.1f ms", total / N, worst, N,
                 simulate_ms);
  g_test_minimized_result(total / N / 1e3, "store a 16-GPU run: %.3f ms", total / N);
  sim_run_free(run);
  ses_session_free(session);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  GError *error = NULL;
  tmpdir = g_dir_make_tmp("stratsim-results-XXXXXX", &error);
  g_assert_no_error(error);
  g_test_add_func("/results/db/create-and-store", test_create_and_store);
  g_test_add_func("/results/db/newer-schema-refused", test_newer_schema_refused);
  g_test_add_func("/results/db/not-a-database", test_not_a_database);
  g_test_add_func("/results/perf/store-16gpu", test_perf_store_16gpu);
  int status = g_test_run();
  g_autofree char *rm = g_strdup_printf("rm -rf '%s'", tmpdir);
  if (system(rm) != 0) g_warning("could not remove %s", tmpdir);
  return status;
}
