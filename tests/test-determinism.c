/* Determinism of what the CLI prints and writes, byte for byte, run twice (the integer-time
 * engine and the (time, id) tie-break make a simulation reproducible; search/SEARCH.md and
 * scenarios/README.md state what searches and sweeps promise):
 *   - `simulate --json` (less sim_wall_s, the wall-clock time of the run) and `explain --json`,
 *     on pipelines, step-expanded collectives, ZeRO and cross-mesh moves;
 *   - the `--trace` file;
 *   - `search --json --seed S --budget N`: the same seed, thread count and evaluation budget
 *     give the same bytes, with --threads 1 and with --threads 2. Different thread counts are
 *     not promised to agree (the chains differ: search/SEARCH.md), so that is not tested;
 *   - `report --format json` after sweeping a scenario with --threads 1 and with --threads 2
 *     into two databases: promised identical (scenarios/README.md, "Threads"). */
#include <cjson/cJSON.h>
#include <glib.h>
#include <string.h>

#include "test-cli-util.h"

static char *tmpdir;

static char *tmp_path(const char *name) { return g_build_filename(tmpdir, name, NULL); }

/* stdout of `stratsim ARGS` (exit 0 required); caller g_frees. */
static char *run_ok(const char *args) {
  TestCliResult r = test_cli_run(tmpdir, args);
  if (r.status != 0) g_error("stratsim %s: exit %d: %s", args, r.status, r.err);
  g_free(r.err);
  return r.out;
}

/* @json without the top-level field @drop, printed again (key order kept). */
static char *without_field(const char *json, const char *drop) {
  cJSON *root = cJSON_Parse(json);
  g_assert_nonnull(root);
  g_assert_nonnull(cJSON_GetObjectItemCaseSensitive(root, drop));
  cJSON_DeleteItemFromObjectCaseSensitive(root, drop);
  char *text = cJSON_PrintUnformatted(root);
  char *copy = g_strdup(text);
  cJSON_free(text);
  cJSON_Delete(root);
  return copy;
}

static const char *crossmesh_strategy =
    "{\"num_microbatches\": 2, \"meshes\": [{\"shape\": [2, 2], \"devices\": [0, 1, 2, 3]},"
    " {\"shape\": [4], \"devices\": [4, 5, 6, 7]}],"
    " \"ops\": [{\"op\": \"fc0\", \"mesh\": 0, \"stage\": 0, \"split\": [\"b\", \"n\"]},"
    " {\"op\": \"fc1\", \"mesh\": 1, \"stage\": 1, \"split\": [\"b\"]},"
    " {\"op\": \"loss\", \"mesh\": 1, \"stage\": 1, \"split\": [\"b\"]}]}";

/* model, cluster, strategy, extra options */
static const char *const configs[][4] = {
    {"gpt3-125m", "dgx-a100:nodes=2", "megatron:tp=4,pp=2,dp=2,mb=4,schedule=1f1b", ""},
    {"gpt3-125m", "dgx-a100:nodes=2", "megatron:tp=2,pp=2,dp=4,mb=2,zero=3,recompute=selective",
     "--collectives step"},
    {"gpt3-125m", "dgx-a100:nodes=2", "megatron:tp=2,pp=4,dp=2,mb=4,schedule=interleaved,vp=3", ""},
    {"mlp:layers=2,hidden=1024,batch=64", "dgx-a100", "@crossmesh", ""},
};

static char *config_args(gsize i) {
  g_autofree char *strategy = strcmp(configs[i][2], "@crossmesh") == 0
                                  ? tmp_path("crossmesh.json")
                                  : g_strdup(configs[i][2]);
  return g_strdup_printf("--model '%s' --cluster '%s' --strategy '%s' %s", configs[i][0],
                         configs[i][1], strategy, configs[i][3]);
}

static void test_simulate_json(gconstpointer data) {
  gsize i = GPOINTER_TO_SIZE(data);
  g_autofree char *config = config_args(i);
  g_autofree char *db = tmp_path("simulate.db");
  g_autofree char *args = g_strdup_printf("simulate %s --json --db '%s'", config, db);
  g_autofree char *a = run_ok(args), *b = run_ok(args);
  g_autofree char *ja = without_field(a, "sim_wall_s"), *jb = without_field(b, "sim_wall_s");
  /* the run ids differ: two runs stored */
  g_autofree char *ra = without_field(ja, "run_id"), *rb = without_field(jb, "run_id");
  g_assert_cmpstr(ra, ==, rb);
}

static void test_explain_json(gconstpointer data) {
  gsize i = GPOINTER_TO_SIZE(data);
  g_autofree char *config = config_args(i);
  g_autofree char *db = tmp_path("explain.db");
  g_autofree char *args = g_strdup_printf("explain %s --json --db '%s'", config, db);
  g_autofree char *a = run_ok(args), *b = run_ok(args);
  g_assert_cmpuint(strlen(a), >, 100);
  g_assert_cmpstr(a, ==, b);
}

static void test_trace(gconstpointer data) {
  gsize i = GPOINTER_TO_SIZE(data);
  g_autofree char *config = config_args(i);
  g_autofree char *db = tmp_path("trace.db");
  char *traces[2];
  for (int k = 0; k < 2; k++) {
    g_autofree char *name = g_strdup_printf("run%d.trace.json", k);
    g_autofree char *path = tmp_path(name);
    g_autofree char *args =
        g_strdup_printf("simulate %s --trace '%s' --db '%s'", config, path, db);
    g_free(run_ok(args));
    g_assert_true(g_file_get_contents(path, &traces[k], NULL, NULL));
  }
  g_assert_cmpuint(strlen(traces[0]), >, 1000);
  g_assert_true(strcmp(traces[0], traces[1]) == 0);
  g_free(traces[0]);
  g_free(traces[1]);
}

/* algo, threads */
static const char *const searches[][2] = {
    {"mcmc", "1"}, {"mcmc", "2"}, {"cd", "1"}, {"cd", "2"}, {"random", "2"},
};

static void test_search_json(gconstpointer data) {
  gsize i = GPOINTER_TO_SIZE(data);
  g_autofree char *db = tmp_path("search.db");
  g_autofree char *args = g_strdup_printf(
      "search --model alexnet --cluster flexflow-k80:nodes=2 --algo %s --threads %s --seed 11 "
      "--budget 120 --json --db '%s'", searches[i][0], searches[i][1], db);
  g_autofree char *a = run_ok(args), *b = run_ok(args);
  g_assert_nonnull(strstr(a, "\"iteration_time_s\""));
  g_assert_cmpstr(a, ==, b);
}

static void test_sweep_report(void) {
  g_autofree char *scenario = tmp_path("det.json");
  g_assert_true(g_file_set_contents(
      scenario,
      "{\"name\": \"det\","
      " \"models\": [\"gpt:layers=4,hidden=256,heads=4,seq=128,vocab=1000,batch={batch}\"],"
      " \"clusters\": [\"dgx-a100:nodes=2\"],"
      " \"strategies\": [\"megatron:tp={tp},pp=2,mb=1,schedule={schedule}\", \"dp\"],"
      " \"axes\": {\"batch\": [16, 32], \"tp\": [1, 2, 4], \"schedule\": [\"1f1b\", \"gpipe\"]},"
      " \"outputs\": {\"charts\": [], \"tables\": []}}",
      -1, NULL));
  char *reports[2];
  for (int t = 0; t < 2; t++) {
    g_autofree char *name = g_strdup_printf("sweep-%d.db", t + 1);
    g_autofree char *db = tmp_path(name);
    g_autofree char *sweep =
        g_strdup_printf("sweep '%s' --db '%s' --threads %d --no-charts", scenario, db, t + 1);
    g_free(run_ok(sweep));
    g_autofree char *report = g_strdup_printf("report --scenario det --format json --db '%s'", db);
    reports[t] = run_ok(report);
  }
  g_assert_nonnull(strstr(reports[0], "\"points_stored\":\t14"));
  g_assert_cmpstr(reports[0], ==, reports[1]);
  g_free(reports[0]);
  g_free(reports[1]);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp("stratsim-determinism-XXXXXX", NULL);
  g_assert_nonnull(tmpdir);
  g_autofree char *crossmesh = tmp_path("crossmesh.json");
  g_assert_true(g_file_set_contents(crossmesh, crossmesh_strategy, -1, NULL));
  for (gsize i = 0; i < G_N_ELEMENTS(configs); i++) {
    g_autofree char *p1 = g_strdup_printf("/determinism/simulate-json/%zu", i);
    g_test_add_data_func(p1, GSIZE_TO_POINTER(i), test_simulate_json);
    g_autofree char *p2 = g_strdup_printf("/determinism/explain-json/%zu", i);
    g_test_add_data_func(p2, GSIZE_TO_POINTER(i), test_explain_json);
    g_autofree char *p3 = g_strdup_printf("/determinism/trace/%zu", i);
    g_test_add_data_func(p3, GSIZE_TO_POINTER(i), test_trace);
  }
  for (gsize i = 0; i < G_N_ELEMENTS(searches); i++) {
    g_autofree char *path = g_strdup_printf("/determinism/search-json/%s/threads:%s",
                                            searches[i][0], searches[i][1]);
    g_test_add_data_func(path, GSIZE_TO_POINTER(i), test_search_json);
  }
  g_test_add_func("/determinism/sweep-report/threads-1-vs-2", test_sweep_report);
  int status = g_test_run();
  test_remove_tree(tmpdir);
  g_free(tmpdir);
  return status;
}
