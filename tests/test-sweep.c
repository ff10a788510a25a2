/* Tests of scenarios/ sweeps: sweeps that resume without loss or duplicates (after --max-points,
 * and after SIGKILL at random moments), points that fail stored once, threads giving the same
 * rows, search entries, the shipped scenarios, report formats, chart files. Expansion is in
 * test-scenario.c, reshard files in test-reshard.c. */
#include <cjson/cJSON.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/wait.h>

#include "results/res_db.h"
#include "results/res_scenarios.h"
#include "scenarios/scn_chart.h"
#include "scenarios/scn_report.h"
#include "scenarios/scn_scenario.h"
#include "scenarios/scn_reshard.h"
#include "scenarios/scn_search.h"
#include "scenarios/scn_sweep.h"
#include "test-cli-util.h"
#include "test-db-util.h"
#include "test-scn-util.h"

static char *tmpdir;

static char *tmp_path(const char *name) { return g_build_filename(tmpdir, name, NULL); }

/* --- sweeps --------------------------------------------------------------------------------- */

/* 12 points; the four with tp=8 fail (over the 2-GPU cluster, or not dividing 4 heads). */
static const char *small_scenario =
    "{\"name\": \"small\", \"description\": \"test sweep\","
    " \"model\": \"gpt:layers=4,hidden=256,heads=4,seq=128,vocab=512,batch={batch}\","
    " \"clusters\": [\"dgx-a100:nodes=1,gpus_per_node={gpus}\"],"
    " \"strategies\": [{\"spec\": \"dp\", \"label\": \"data parallel\"},"
    "                  {\"spec\": \"megatron:tp={tp},mb=2\", \"label\": \"megatron tp={tp}\"}],"
    " \"axes\": {\"gpus\": [2, 8], \"tp\": [2, 8], \"batch\": [16, 32]},"
    " \"outputs\": {\"charts\": [\"throughput\", \"breakdown\", \"memory\", \"timeline\"],"
    "              \"timeline\": {\"where\": {\"gpus\": 2}, \"max\": 2}}}";

/* Every point of @sc is stored exactly once under its key, and nothing else is. */
static void assert_complete(const char *db_path, const ScnScenario *sc) {
  GPtrArray *points = expand_ok(sc);
  g_assert_cmpint(test_db_query_int(db_path, "SELECT count(*) FROM points"), ==, points->len);
  g_assert_cmpint(test_db_query_int(db_path, "SELECT count(DISTINCT point_key) FROM points"), ==, points->len);
  for (guint i = 0; i < points->len; i++) {
    g_autofree char *q = g_strdup_printf("SELECT count(*) FROM points WHERE point_key = '%s'",
                                         point_at(points, i)->key);
    g_assert_cmpint(test_db_query_int(db_path, q), ==, 1);
  }
  g_ptr_array_free(points, TRUE);
}

static void test_sweep_resume(void) {
  g_autofree char *path = tmp_path("resume.db");
  ScnScenario *sc = parse_ok(small_scenario);
  GError *error = NULL;
  ResDb *db = res_db_open(path, &error);
  g_assert_no_error(error);
  ScnSweepSummary sum;
  ScnSweepOptions half = {.threads = 1, .max_points = 6};
  g_assert_true(scn_sweep_run(sc, db, &half, &sum, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(sum.points, ==, 12);
  g_assert_cmpuint(sum.ran, ==, 6);
  g_assert_cmpuint(sum.stored_before, ==, 0);
  g_assert_cmpuint(sum.left, ==, 6);
  g_assert_cmpint(test_db_query_int(path, "SELECT count(*) FROM points"), ==, 6);
  /* The rest, then nothing more. */
  g_assert_true(scn_sweep_run(sc, db, NULL, &sum, &error));
  g_assert_cmpuint(sum.ran, ==, 6);
  g_assert_cmpuint(sum.stored_before, ==, 6);
  g_assert_cmpuint(sum.left, ==, 0);
  g_assert_true(scn_sweep_run(sc, db, NULL, &sum, &error));
  g_assert_cmpuint(sum.ran, ==, 0);
  g_assert_cmpuint(sum.stored_before, ==, 12);
  assert_complete(path, sc);
  /* Failures are stored with their message, once: tp=8 (2 x 2 batches at 8 GPUs; at 2 GPUs
   * tp=8 is over the cluster), and not retried. */
  g_assert_cmpint(test_db_query_int(path, "SELECT count(*) FROM points WHERE status = 'error' AND "
                                   "error LIKE '%attention heads%'"), >=, 2);
  g_assert_cmpint(test_db_query_int(path, "SELECT count(*) FROM points WHERE status = 'ok' AND "
                                   "prediction IS NOT NULL AND num_gpus > 0"), >=, 6);
  g_assert_cmpint(test_db_query_int(path, "SELECT count(*) FROM scenarios"), ==, 1);
  /* Stored in point order: row ids follow the expansion. */
  g_assert_cmpint(test_db_query_int(path, "SELECT count(*) FROM points p JOIN points q ON q.id = p.id + 1 "
                                   "WHERE q.idx < p.idx"), ==, 0);
  res_db_close(db);
  scn_scenario_free(sc);
}

static void test_sweep_threads_same_rows(void) {
  g_autofree char *p1 = tmp_path("threads1.db");
  g_autofree char *p4 = tmp_path("threads4.db");
  ScnScenario *sc = parse_ok(small_scenario);
  char *reports[2];
  for (int k = 0; k < 2; k++) {
    GError *error = NULL;
    const char *path = k ? p4 : p1;
    ResDb *db = res_db_open(path, &error);
    g_assert_no_error(error);
    ScnSweepOptions opt = {.threads = k ? 4 : 1};
    ScnSweepSummary sum;
    g_assert_true(scn_sweep_run(sc, db, &opt, &sum, &error));
    g_assert_cmpuint(sum.ran, ==, 12);
    ScnResults *r = scn_results_load(db, "x.db", "small", &error);
    g_assert_no_error(error);
    reports[k] = scn_report(r, SCN_REPORT_CSV);
    scn_results_free(r);
    res_db_close(db);
  }
  g_assert_cmpstr(reports[0], ==, reports[1]);
  g_free(reports[0]);
  g_free(reports[1]);
  scn_scenario_free(sc);
}

/* The kill test: `stratsim sweep` SIGKILLed at seeded random moments, rerun each time; the
 * database stays intact, and the final run completes with every point exactly once. */
static const char *kill_scenario =
    "{\"name\": \"kill\","
    " \"models\": [\"gpt:layers={layers},hidden=512,heads=8,seq=512,vocab=1000,batch={batch}\"],"
    " \"clusters\": [\"dgx-a100:nodes=2\"],"
    " \"strategies\": [\"megatron:tp={tp},pp=2,mb=1,schedule={schedule}\"],"
    " \"axes\": {\"layers\": [8, 12], \"batch\": [16, 32, 48, 64, 80], \"tp\": [1, 2, 4, 8],"
    "          \"schedule\": [\"1f1b\", \"gpipe\"]},"
    " \"options\": {\"symmetry\": false}, \"outputs\": {\"charts\": [], \"tables\": []}}";

static void test_sweep_kill(gconstpointer data) {
  guint32 seed = GPOINTER_TO_UINT(data);
  g_autofree char *file = tmp_path("kill.json");
  g_autofree char *db = g_strdup_printf("%s/kill-%u.db", tmpdir, seed);
  g_assert_true(g_file_set_contents(file, kill_scenario, -1, NULL));
  ScnScenario *sc = parse_ok(kill_scenario);
  GRand *rand = g_rand_new_with_seed(seed);
  g_autofree char *threads = NULL;
  int interrupted = 0;
  for (int round = 0; round < 4; round++) {
    g_free(threads);
    threads = g_strdup_printf("%d", round % 2 ? 2 : 1);
    char *argv[] = {STRATSIM_BIN, "sweep", file, "--db", db, "--no-charts", "--threads", threads, NULL};
    GPid pid;
    GError *error = NULL;
    g_assert_true(g_spawn_async(tmpdir, argv, NULL,
                                G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL |
                                    G_SPAWN_STDERR_TO_DEV_NULL,
                                NULL, NULL, &pid, &error));
    g_assert_no_error(error);
    g_usleep((gulong)g_rand_int_range(rand, 5000, 200000));
    kill(pid, SIGKILL);
    int status = 0;
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    g_spawn_close_pid(pid);
    if (WIFSIGNALED(status)) interrupted++;
    if (g_file_test(db, G_FILE_TEST_EXISTS)) {
      test_db_assert_integrity(db);
      gint64 n = 0;
      /* The schema may not be there yet if the kill came before the first migration. */
      if (test_db_query_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'points'") == 1) {
        n = test_db_query_int(db, "SELECT count(*) FROM points");
        g_assert_cmpint(n, ==, test_db_query_int(db, "SELECT count(DISTINCT point_key) FROM points"));
      }
      g_test_message("seed %u round %d: killed after %s, %" G_GINT64_FORMAT " points stored", seed,
                     round, WIFSIGNALED(status) ? "a while" : "it finished", n);
    }
  }
  g_test_message("%d of 4 runs were killed mid-way", interrupted);
  g_autofree char *args = g_strdup_printf("sweep '%s' --db '%s' --no-charts", file, db);
  TestCliResult r = test_cli_run(tmpdir, args);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "sweep kill: 80 points"));
  test_db_assert_integrity(db);
  assert_complete(db, sc);
  test_cli_result_clear(&r);
  /* Once more: nothing to do. */
  r = test_cli_run(tmpdir, args);
  g_assert_nonnull(strstr(r.out, "0 simulated now"));
  g_assert_nonnull(strstr(r.out, "80 already stored"));
  test_cli_result_clear(&r);
  g_rand_free(rand);
  scn_scenario_free(sc);
}

/* A search entry: the point stores the best strategy the search found; searching again (as
 * `plot` does for a timeline) finds the same one. */
static void test_sweep_search_entry(void) {
  g_autofree char *path = tmp_path("search.db");
  ScnScenario *sc = parse_ok(
      "{\"name\": \"search\", \"model\": \"gpt:layers=2,hidden=256,heads=4,seq=128,vocab=512,batch=16\","
      " \"cluster\": \"dgx-a100:nodes=1,gpus_per_node=4\","
      " \"strategies\": [\"dp\", {\"search\": {\"algo\": \"grid\", \"budget\": 30, \"seed\": 7}, \"label\": \"grid\"}]}");
  GPtrArray *points = expand_ok(sc);
  g_assert_cmpuint(points->len, ==, 2);
  g_assert_cmpstr(point_at(points, 1)->strategy, ==, "search:algo=grid,budget=30,seed=7");
  GError *error = NULL;
  ResDb *db = res_db_open(path, &error);
  g_assert_no_error(error);
  ScnSweepSummary sum;
  g_assert_true(scn_sweep_run(sc, db, NULL, &sum, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(sum.ran, ==, 2);
  g_assert_cmpuint(sum.errors, ==, 0);
  g_assert_cmpint(test_db_query_int(path, "SELECT count(*) FROM points WHERE status = 'ok' AND "
                                   "json_extract(prediction, '$.strategy.name') LIKE "
                                   "'search:algo=grid,budget=30,seed=7: megatron %'"), ==, 1); /* grid or space */
  /* The search result is no worse than data parallel, which the grid contains. */
  g_assert_cmpint(test_db_query_int(path, "SELECT count(*) FROM points s JOIN points d ON d.strategy = 'dp' "
                                   "WHERE s.strategy LIKE 'search%' AND s.iteration_time_s <= d.iteration_time_s"), ==, 1);
  ScnSimulation *a = scn_simulate(sc, point_at(points, 1), NULL, &error);
  ScnSimulation *b = scn_simulate(sc, point_at(points, 1), NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(sim_run_prediction(a->run)->iteration_time_s, ==, sim_run_prediction(b->run)->iteration_time_s);
  g_assert_cmpstr(a->strategy->name, ==, b->strategy->name);
  scn_simulation_free(a);
  scn_simulation_free(b);
  res_db_close(db);
  g_ptr_array_free(points, TRUE);
  scn_scenario_free(sc);
}

/* Search entries take the keys that shape the space (as `stratsim search --vars, --dims,
 * --followers, --mesh-axes, --microbatches`), written into the spec in a fixed order; the
 * search then walks that space (1 mesh axis: the winner's mesh is one-dimensional). */
static void test_sweep_search_space_keys(void) {
  ScnScenario *sc = parse_ok(
      "{\"name\": \"space\", \"model\": \"mlp:layers=2,hidden=256,batch=16\","
      " \"cluster\": \"dgx-a100:nodes=1,gpus_per_node=4\","
      " \"strategies\": [{\"search\": {\"microbatches\": 2, \"followers\": true, \"algo\": \"exhaustive\","
      " \"mesh_axes\": 1, \"dims\": \"megatron\", \"vars\": \"op\", \"budget\": 100000}}]}");
  GPtrArray *points = expand_ok(sc);
  g_assert_cmpstr(point_at(points, 0)->strategy, ==,
                  "search:algo=exhaustive,budget=100000,vars=op,dims=megatron,followers=true,"
                  "mesh_axes=1,microbatches=2");
  SrchOptions o;
  GError *error = NULL;
  g_assert_true(scn_search_spec_parse(point_at(points, 0)->strategy, &o, &error));
  g_assert_no_error(error);
  g_assert_cmpint(o.space.vars, ==, SRCH_VARS_OP);
  g_assert_cmpint(o.space.dims, ==, SRCH_DIMS_MEGATRON);
  g_assert_true(o.space.followers);
  g_assert_cmpint(o.space.max_mesh_axes, ==, 1);
  g_assert_cmpint(o.space.max_microbatches, ==, 2);
  ScnSimulation *sim = scn_simulate(sc, point_at(points, 0), NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpint(mdl_strategy_mesh(sim->strategy, 0)->ndims, ==, 1);
  g_assert_nonnull(strstr(sim->strategy->name, "exhaustive"));
  scn_simulation_free(sim);
  g_ptr_array_free(points, TRUE);
  scn_scenario_free(sc);
}

/* A baseline entry simulates the baseline `stratsim search` reports: "one weird trick" splits
 * AlexNet's FC layers over the GPUs (so it holds less weight memory than data parallelism) and
 * is refused, with the search's reason, for a model without convolutions. */
static void test_sweep_baseline_entry(void) {
  g_autofree char *path = tmp_path("baseline.db");
  ScnScenario *sc = parse_ok(
      "{\"name\": \"baseline\", \"models\": [\"alexnet:batch=16\", \"mlp:layers=2,hidden=256,batch=16\"],"
      " \"cluster\": \"flexflow-p100:nodes=1\","
      " \"strategies\": [\"dp\", {\"spec\": \"baseline:one-weird-trick\", \"label\": \"expert\"}]}");
  GError *error = NULL;
  ResDb *db = res_db_open(path, &error);
  g_assert_no_error(error);
  ScnSweepSummary sum;
  g_assert_true(scn_sweep_run(sc, db, NULL, &sum, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(sum.ran, ==, 4);
  g_assert_cmpuint(sum.errors, ==, 1);
  g_assert_cmpint(test_db_query_int(path, "SELECT count(*) FROM points WHERE status = 'ok' AND model LIKE 'alexnet%' AND "
                                   "json_extract(prediction, '$.strategy.name') = 'baseline:one-weird-trick'"), ==, 1);
  g_assert_cmpint(test_db_query_int(path, "SELECT count(*) FROM points t JOIN points d ON d.strategy = 'dp' AND d.model = t.model "
                                   "WHERE t.strategy = 'baseline:one-weird-trick' AND t.model LIKE 'alexnet%' AND "
                                   "t.peak_memory_bytes < d.peak_memory_bytes"), ==, 1);
  g_assert_cmpint(test_db_query_int(path, "SELECT count(*) FROM points WHERE status = 'error' AND model LIKE 'mlp%' AND "
                                   "error LIKE '%applies to models with convolutions%'"), ==, 1);
  res_db_close(db);
  scn_scenario_free(sc);
}

/* --- the shipped scenarios: each runs (quickly), and what the papers report holds where
 * scenarios/NAME/README.md says stratsim agrees with them. ---------------------------------------- */

static ResPoint *shipped_point(ScnResults *r, const char *label, const char *var, const char *value) {
  for (guint i = 0; i < r->points->len; i++) {
    const ScnPoint *p = point_at(r->points, i);
    if (strcmp(p->strategy_label, label) == 0 && g_strcmp0(scn_point_value(p, var), value) == 0)
      return g_ptr_array_index(r->stored, i);
  }
  g_error("no point %s %s=%s", label, var, value);
  return NULL;
}

static ScnResults *sweep_shipped(const char *file, const char *db_name) {
  g_autofree char *path = g_build_filename(STRATSIM_SOURCE_DIR, "scenarios", file, NULL);
  g_autofree char *db_path = tmp_path(db_name);
  GError *error = NULL;
  ScnScenario *sc = scn_scenario_load(path, &error);
  g_assert_no_error(error);
  ResDb *db = res_db_open(db_path, &error);
  g_assert_no_error(error);
  ScnSweepOptions opt = {.threads = 2};
  ScnSweepSummary sum;
  g_assert_true(scn_sweep_run(sc, db, &opt, &sum, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(sum.ran, ==, sum.points);
  ScnResults *r = scn_results_load(db, db_path, sc->name, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(r->stored_count, ==, r->points->len);
  res_db_close(db);
  scn_scenario_free(sc);
  return r;
}

static void test_shipped_eager_1f1b(void) {
  ScnResults *r = sweep_shipped("eager-1f1b/eager-1f1b.json", "eager.db");
  /* Cross-mesh paper, Sec. 5.3.2: no gain without a steady phase, about 15% with more
   * microbatches. */
  const char *const counts[] = {"2", "8", "32"};
  for (gsize k = 0; k < G_N_ELEMENTS(counts); k++) {
    ResPoint *one = shipped_point(r, "1F1B", "microbatches", counts[k]);
    ResPoint *eager = shipped_point(r, "eager-1F1B", "microbatches", counts[k]);
    g_assert_true(one->ok && eager->ok);
    double gain = one->iteration_time_s / eager->iteration_time_s - 1;
    g_test_message("%s microbatches: eager-1F1B %.1f%% faster than 1F1B", counts[k], 100 * gain);
    if (k == 0) g_assert_cmpfloat(fabs(gain), <, 0.01);
    else g_assert_cmpfloat(gain, >, 0.10);
  }
  scn_results_free(r);
}

static void test_shipped_autoddl(void) {
  /* Fig. 9 (bottom): data parallel does not fit at any scale. */
  ScnResults *t = sweep_shipped("autoddl-fig9/transformer.json", "fig9t.db");
  const char *const nodes[] = {"64", "128", "256"};
  for (gsize k = 0; k < G_N_ELEMENTS(nodes); k++) {
    ResPoint *dp = shipped_point(t, "data parallel", "nodes", nodes[k]);
    g_assert_true(dp->has_prediction && !dp->fits_memory);
  }
  scn_results_free(t);
  ScnResults *v = sweep_shipped("autoddl-fig9/vgg13.json", "fig9v.db");
  g_assert_cmpuint(v->errors, ==, 0);
  scn_results_free(v);
}

/* Every scenario file shipped under scenarios/NAME/ loads and expands, and the first point of
 * each of its strategy entries (the smallest setup, in point order) simulates: a broken file,
 * a renamed model or preset, or a strategy the builder no longer takes fails here, in seconds,
 * not when a user sweeps it. The whole sweeps take minutes (their READMEs say how long). */
static void test_shipped_all_files(void) {
  g_autofree char *root = g_build_filename(STRATSIM_SOURCE_DIR, "scenarios", NULL);
  GDir *dir = g_dir_open(root, 0, NULL);
  g_assert_nonnull(dir);
  guint files = 0, reshard_files = 0;
  for (const char *name; (name = g_dir_read_name(dir));) {
    g_autofree char *folder = g_build_filename(root, name, NULL);
    if (!g_file_test(folder, G_FILE_TEST_IS_DIR)) continue;
    GDir *sub = g_dir_open(folder, 0, NULL);
    g_assert_nonnull(sub);
    for (const char *file; (file = g_dir_read_name(sub));) {
      if (!g_str_has_suffix(file, ".json")) continue;
      g_autofree char *path = g_build_filename(folder, file, NULL);
      GError *error = NULL;
      g_autofree char *text = NULL;
      g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
      if (scn_reshard_is(text)) { /* single cross-mesh moves (crossmesh-table2): run them all */
        ScnReshard *r = scn_reshard_load(path, &error);
        if (error) g_error("%s: %s", path, error->message);
        GPtrArray *rows = scn_reshard_run(r, &error);
        if (error) g_error("%s: %s", path, error->message);
        g_assert_cmpuint(rows->len, ==, r->cases->len);
        g_ptr_array_unref(rows);
        scn_reshard_free(r);
        reshard_files++;
        continue;
      }
      ScnScenario *sc = scn_scenario_load(path, &error);
      if (error) g_error("%s: %s", path, error->message);
      GPtrArray *points = scn_scenario_expand(sc, &error);
      if (error) g_error("%s: %s", path, error->message);
      g_assert_cmpuint(points->len, >, 0);
      for (guint e = 0; e < sc->strategies->len; e++) {
        const ScnPoint *first = NULL;
        for (guint i = 0; i < points->len && !first; i++)
          if (point_at(points, i)->strategy_entry == e) first = point_at(points, i);
        g_assert_nonnull(first);
#if defined(__SANITIZE_ADDRESS__)
        /* AutoDDL Fig. 7's exhaustive searches: ~18 s instrumented for the larger three models,
         * the same driver as mlp.json's (the release run covers them all). */
        if (g_str_has_prefix(first->strategy_label, "exhaustive") && strcmp(file, "mlp.json") != 0) continue;
#endif
        gint64 t0 = g_get_monotonic_time();
        ScnSimulation *sim = scn_simulate(sc, first, NULL, &error);
        if (!sim) g_error("%s: point %u (%s): %s", path, first->index, first->strategy, error->message);
        g_test_message("%s/%s: %s: %.4g s per iteration (%.2f s to simulate)", name, file,
                       first->strategy_label, sim_run_prediction(sim->run)->iteration_time_s,
                       (g_get_monotonic_time() - t0) / 1e6);
        scn_simulation_free(sim);
      }
      g_ptr_array_free(points, TRUE);
      scn_scenario_free(sc);
      files++;
    }
    g_dir_close(sub);
  }
  g_dir_close(dir);
  g_assert_cmpuint(files, >=, 13); /* autoddl-fig7 4, autoddl-fig9 2, eager-1f1b 1, flexflow-fig7 6 */
  g_assert_cmpuint(reshard_files, >=, 2); /* crossmesh-table2: table2.json, fig8.json */
}

/* --- report and charts ---------------------------------------------------------------------- */

static ScnResults *swept_small(const char *name, ResDb **db_out) {
  g_autofree char *path = tmp_path(name);
  GError *error = NULL;
  ScnScenario *sc = parse_ok(small_scenario);
  ResDb *db = res_db_open(path, &error);
  g_assert_no_error(error);
  g_assert_true(scn_sweep_run(sc, db, NULL, NULL, &error));
  ScnResults *r = scn_results_load(db, path, "small", &error);
  g_assert_no_error(error);
  scn_scenario_free(sc);
  *db_out = db;
  return r;
}

static void test_report_formats(void) {
  ResDb *db = NULL;
  ScnResults *r = swept_small("report.db", &db);
  g_assert_cmpuint(r->stored_count, ==, 12);
  /* Text: a header, one row per point, the failures listed. */
  g_autofree char *text = scn_report(r, SCN_REPORT_TEXT);
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  g_assert_nonnull(strstr(lines[0], "scenario small: 12 of 12 points stored"));
  g_assert_nonnull(strstr(text, "samples/s"));
  g_assert_nonnull(strstr(text, "failed points:"));
  g_assert_nonnull(strstr(text, "megatron tp=8"));
  /* CSV: header + 12 rows, the axis variables as columns, every row as many fields. */
  g_autofree char *csv = scn_report(r, SCN_REPORT_CSV);
  g_auto(GStrv) rows = g_strsplit(csv, "\r\n", -1);
  g_assert_cmpuint(g_strv_length(rows), ==, 14); /* and the empty string after the last */
  g_assert_true(g_str_has_prefix(rows[0], "index,key,model,cluster,strategy,label,gpus,tp,batch,status"));
  guint fields = 0;
  for (const char *c = rows[0]; *c; c++) fields += *c == ',';
  for (int i = 1; i <= 12; i++) {
    guint n = 0;
    gboolean quoted = FALSE;
    for (const char *c = rows[i]; *c; c++) {
      if (*c == '"') quoted = !quoted;
      if (*c == ',' && !quoted) n++;
    }
    g_assert_cmpuint(n, ==, fields);
  }
  g_assert_true(g_str_has_prefix(rows[1], "0,"));
  /* JSON: parses, 12 points with their predictions or errors. */
  g_autofree char *json = scn_report(r, SCN_REPORT_JSON);
  cJSON *root = cJSON_Parse(json);
  g_assert_nonnull(root);
  const cJSON *points = cJSON_GetObjectItemCaseSensitive(root, "points");
  g_assert_cmpint(cJSON_GetArraySize(points), ==, 12);
  int ok = 0, failed = 0;
  for (const cJSON *p = points->child; p; p = p->next) {
    const char *status = cJSON_GetObjectItemCaseSensitive(p, "status")->valuestring;
    if (strcmp(status, "ok") == 0) {
      ok++;
      g_assert_true(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(p, "prediction")));
    } else {
      failed++;
      g_assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(p, "error")));
    }
  }
  g_assert_cmpint(ok + failed, ==, 12);
  g_assert_cmpint(failed, ==, (int)r->errors);
  cJSON_Delete(root);
  scn_results_free(r);
  res_db_close(db);
}

static char *read_file(const char *dir, const char *name) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  char *text = NULL;
  if (!g_file_get_contents(path, &text, NULL, NULL)) g_error("%s was not written", path);
  return text;
}

static void test_chart_best_name(void) {
  static const char *const cases[][2] = {
      {"Megatron tp={tp} mb={mb}", "best Megatron"},
      {"seed {seed}", "best over seed"},
      {"tp={tp} pp=1 ep={ep}", "best over tp, ep (pp=1)"},
      {"tp={tp} pp={pp} cp={cp} {dtype}", "best over tp, pp, cp, dtype"},
      {"data parallel", "best data parallel"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *name = scn_chart_best_name(cases[i][0]);
    g_assert_cmpstr(name, ==, cases[i][1]);
    g_assert_null(strchr(name, '{'));
  }
}

static void test_chart_files(void) {
  ResDb *db = NULL;
  ScnResults *r = swept_small("charts.db", &db);
  g_autofree char *out = tmp_path("charts");
  GError *error = NULL;
  ScnCosts *costs = scn_costs_load(db, r->scenario, r->points, &error);
  g_assert_no_error(error);
  ScnChartOutcome o;
  scn_chart_outcome_init(&o);
  g_assert_true(scn_charts_write(r, costs, out, r->scenario->charts, SCN_FORMAT_PNG | SCN_FORMAT_SVG, &o, &error));
  g_assert_no_error(error);
  /* Throughput: one block per line (data parallel; megatron tp=2), x = GPU count. */
  g_autofree char *tp = read_file(out, "throughput.dat");
  g_assert_nonnull(strstr(tp, "# series 0: data parallel batch=16"));
  g_assert_nonnull(strstr(tp, "megatron tp=2 batch=32"));
  g_assert_null(strstr(tp, "tp=8"));
  g_autofree char *tpgp = read_file(out, "throughput.gp");
  g_assert_nonnull(strstr(tpgp, "set terminal pngcairo"));
  g_assert_nonnull(strstr(tpgp, "'throughput.dat' index 3"));
  g_assert_nonnull(strstr(tpgp, "set output 'throughput.svg'"));
  /* Breakdown and memory: one row per simulated point. */
  g_autofree char *bd = read_file(out, "breakdown.dat");
  g_autofree char *mem = read_file(out, "memory.dat");
  guint simulated = 0;
  for (guint i = 0; i < r->points->len; i++) {
    const ResPoint *p = g_ptr_array_index(r->stored, i);
    simulated += p && p->has_prediction;
  }
  guint rows_bd = 0, rows_mem = 0;
  for (const char *c = bd; *c; c++) rows_bd += *c == '\n' && c[1] && c[1] != '#';
  for (const char *c = mem; *c; c++) rows_mem += *c == '\n' && c[1] && c[1] != '#';
  g_assert_cmpuint(rows_bd, ==, simulated);
  g_assert_cmpuint(rows_mem, ==, simulated);
  g_assert_nonnull(strstr(bd, "\"data parallel gpus=2 batch=16\""));
  g_autofree char *memgp = read_file(out, "memory.gp");
  g_assert_nonnull(strstr(memgp, "title 'capacity'"));
  /* Timelines: the first point of each strategy with gpus=2: data parallel (0), megatron (4). */
  g_autofree char *tl = read_file(out, "timeline-0.dat");
  g_assert_nonnull(strstr(tl, "# forward"));
  g_autofree char *tlgp = read_file(out, "timeline-4.gp");
  g_assert_nonnull(strstr(tlgp, "'GPU 0 compute' 0"));
  g_assert_nonnull(strstr(tlgp, "with boxxyerror"));
  /* Drawn when gnuplot is here. */
  g_autofree char *gnuplot = g_find_program_in_path("gnuplot");
  if (gnuplot) {
    g_assert_false(o.gnuplot_missing);
    g_assert_cmpuint(o.images, ==, 2 * 5);
    for (guint k = 0; k < o.scripts->len; k++) {
      g_autofree char *png = g_strdup_printf("%s/%s.png", out, (char *)g_ptr_array_index(o.scripts, k));
      GStatBuf st;
      g_assert_cmpint(g_stat(png, &st), ==, 0);
      g_assert_cmpint(st.st_size, >, 1000);
    }
  } else {
    g_assert_true(o.gnuplot_missing);
    g_test_message("gnuplot not on PATH: images not checked");
  }
  scn_chart_outcome_clear(&o);
  ses_costs_free(costs);
  scn_results_free(r);
  res_db_close(db);
}

/* The CLI end to end: sweep writes the tables and charts; without gnuplot on PATH it writes the
 * data and scripts and says how to draw them; report and plot read the database. */
static void test_cli_sweep_report_plot(void) {
  g_autofree char *file = tmp_path("small.json");
  g_autofree char *db = tmp_path("cli.db");
  g_autofree char *out = tmp_path("cli-out");
  g_assert_true(g_file_set_contents(file, small_scenario, -1, NULL));
  /* No gnuplot: an empty PATH for the child. */
  g_autofree char *cmd = g_strdup_printf("%s sweep %s --db %s --out %s --threads 2", STRATSIM_BIN, file, db, out);
  g_auto(GStrv) argv = NULL;
  g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, NULL));
  g_autofree char *empty = tmp_path("no-programs");
  g_mkdir_with_parents(empty, 0755);
  g_autofree char *path_env = g_strdup_printf("PATH=%s", empty);
  char *envp[] = {path_env, NULL};
  g_autofree char *sout = NULL, *serr = NULL;
  int status = 0;
  g_assert_true(g_spawn_sync(tmpdir, argv, envp, G_SPAWN_DEFAULT, NULL, NULL, &sout, &serr, &status, NULL));
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 0);
  g_assert_nonnull(strstr(sout, "sweep small: 12 points; 12 simulated now"));
  g_assert_nonnull(strstr(sout, "gnuplot is not on PATH"));
  g_assert_nonnull(strstr(sout, "gnuplot throughput.gp breakdown.gp memory.gp timeline-0.gp"));
  g_autofree char *gp = g_build_filename(out, "throughput.gp", NULL);
  g_autofree char *png = g_build_filename(out, "throughput.png", NULL);
  g_assert_true(g_file_test(gp, G_FILE_TEST_IS_REGULAR));
  g_assert_false(g_file_test(png, G_FILE_TEST_EXISTS));
  /* report in three formats */
  g_autofree char *args = g_strdup_printf("report --scenario small --db %s --format csv", db);
  TestCliResult r = test_cli_run(tmpdir, args);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_true(g_str_has_prefix(r.out, "index,key,model"));
  test_cli_result_clear(&r);
  g_free(args);
  args = g_strdup_printf("report --scenario small --db %s", db);
  r = test_cli_run(tmpdir, args);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "12 of 12 points stored"));
  test_cli_result_clear(&r);
  g_free(args);
  args = g_strdup_printf("report --scenario nope --db %s", db);
  r = test_cli_run(tmpdir, args);
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "no scenario named 'nope'"));
  g_assert_nonnull(strstr(r.err, "stored: small"));
  test_cli_result_clear(&r);
  g_free(args);
  args = g_strdup_printf("report --scenario small --db %s --format xml", db);
  r = test_cli_run(tmpdir, args);
  g_assert_cmpint(r.status, ==, 2);
  test_cli_result_clear(&r);
  /* plot from the database, with gnuplot when it is here */
  g_free(args);
  args = g_strdup_printf("plot --scenario small --db %s --out %s", db, out);
  r = test_cli_run(tmpdir, args);
  g_assert_cmpint(r.status, ==, 0);
  g_autofree char *gnuplot = g_find_program_in_path("gnuplot");
  if (gnuplot) {
    g_assert_nonnull(strstr(r.out, "charts in"));
    g_assert_true(g_file_test(png, G_FILE_TEST_IS_REGULAR));
  }
  test_cli_result_clear(&r);
  /* bad input: exit status 2, one line */
  g_free(args);
  args = g_strdup_printf("sweep %s/missing.json --db %s", tmpdir, db);
  r = test_cli_run(tmpdir, args);
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "missing.json"));
  test_cli_result_clear(&r);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp("stratsim-sweep-XXXXXX", NULL);
  g_assert_nonnull(tmpdir);
  g_test_add_func("/scn/sweep/resume", test_sweep_resume);
  g_test_add_func("/scn/sweep/threads-same-rows", test_sweep_threads_same_rows);
  static const guint32 seeds[] = {1, 2, 3};
  for (gsize i = 0; i < G_N_ELEMENTS(seeds); i++) {
    g_autofree char *path = g_strdup_printf("/scn/sweep/kill/seed:%u", seeds[i]);
    g_test_add_data_func(path, GUINT_TO_POINTER(seeds[i]), test_sweep_kill);
  }
  g_test_add_func("/scn/sweep/search-entry", test_sweep_search_entry);
  g_test_add_func("/scn/sweep/search-space-keys", test_sweep_search_space_keys);
  g_test_add_func("/scn/sweep/baseline-entry", test_sweep_baseline_entry);
  g_test_add_func("/scn/shipped/all-files", test_shipped_all_files);
  g_test_add_func("/scn/shipped/eager-1f1b", test_shipped_eager_1f1b);
  g_test_add_func("/scn/shipped/autoddl-fig9", test_shipped_autoddl);
  g_test_add_func("/scn/report/formats", test_report_formats);
  g_test_add_func("/scn/chart/files", test_chart_files);
  g_test_add_func("/scn/chart/best-name", test_chart_best_name);
  g_test_add_func("/scn/cli/sweep-report-plot", test_cli_sweep_report_plot);
  int status = g_test_run();
  test_remove_tree(tmpdir);
  g_free(tmpdir);
  return status;
}
