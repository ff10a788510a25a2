/* session — one path from specs to a prediction (session/ses_session.h): the same answer as
 * the chain written by hand, specs that cannot go together, read-only sessions and
 * `--no-store`, costs shared by a sweep's sessions. */
#include <glib.h>
#include <glib/gstdio.h>

#include "costmodel/costmodel.h"
#include "results/res_db.h"
#include "session/ses_session.h"
#include "sim/sim.h"
#include "test-cli-util.h"

#define MODEL "gpt:layers=2,hidden=512,heads=8,seq=256,batch=16"
#define CLUSTER "dgx-a100:nodes=2"
#define STRATEGY "megatron:tp=2,pp=2,dp=4,mb=2"

/* The session's run is bit for bit the run of the hand-written chain. */
static void test_same_as_chain(void) {
  GError *error = NULL;
  SesSpecs specs = {.model = MODEL, .cluster = CLUSTER, .strategy = STRATEGY,
                    .options = {.step_collectives = TRUE}};
  SesSession *s = ses_session_new_from_specs(&specs, &error);
  g_assert_no_error(error);
  SimRun *run = ses_session_simulate(s, &error);
  g_assert_no_error(error);
  DevCluster *c = dev_cluster_parse_spec(CLUSTER, &error);
  MdlGraph *g = mdl_graph_parse_spec(MODEL, &error);
  MdlStrategy *st = mdl_strategy_parse_spec(STRATEGY, g, c, &error);
  g_assert_no_error(error);
  CmParams params;
  cm_params_default(&params);
  SimOptions options = {.step_collectives = TRUE};
  SimRun *chain = sim_run_new_with_options(g, st, c, &params, &options, &error);
  g_assert_no_error(error);
  g_autofree char *a = sim_prediction_to_json(run, FALSE);
  g_autofree char *b = sim_prediction_to_json(chain, FALSE);
  g_assert_cmpstr(a, ==, b);
  g_assert_true(sim_run_graph(run) == ses_session_graph(s));
  /* The timeline: every task once, in the engine's start (pop) order, so by ready time; each on
   * its device's streams. */
  SimTimeline it;
  SimTaskInfo t;
  sim_timeline_init(&it, run);
  uint32_t n = 0;
  SimTime last = 0;
  while (sim_timeline_next(&it, &t)) {
    SimTime ready = sim_schedule_ready(sim_run_schedule(run), t.id);
    g_assert_cmpuint(ready, >=, last);
    g_assert_cmpuint(t.start, >=, ready);
    g_assert_cmpuint(t.end, ==, t.start + t.duration);
    g_assert_cmpuint(t.end, <=, sim_schedule_makespan(sim_run_schedule(run)));
    int host_device = -1; /* a host launch runs on its device's host stream (sim/sim.h) */
    if (sim_task_graph_host_device(sim_run_task_graph(run), t.resources[0], &host_device))
      g_assert_cmpint(t.device, ==, host_device);
    else if (t.role == SIM_ROLE_WHOLE && t.nres > 0) /* (none: a wait of the host's) */
      g_assert_cmpint(t.device, ==, sim_resource_device(t.resources[0]));
    if (t.role == SIM_ROLE_TRANSFER) g_assert_cmpint(t.device, ==, -1);
    last = ready;
    n++;
  }
  g_assert_cmpuint(n, ==, sim_run_num_tasks(run));
  g_assert_cmpuint(n, ==, sim_run_prediction(run)->tasks);
  g_assert_true(sim_run_strategy(run) == ses_session_strategy(s));
  g_assert_cmpstr(ses_session_strategy_spec(s), ==, STRATEGY);
  g_assert_null(ses_session_db(s)); /* no path: no database */
  /* No database: storing is refused. */
  g_assert_cmpint(ses_session_store_simulation(s, run, &error), ==, -1);
  g_assert_error(error, SES_ERROR, SES_ERROR_READ_ONLY);
  g_clear_error(&error);
  sim_run_free(chain);
  mdl_strategy_free(st);
  mdl_graph_free(g);
  dev_cluster_free(c);
  sim_run_free(run);
  ses_session_free(s);
}

static void test_bad_specs(void) {
  GError *error = NULL;
  SesSpecs no_cluster = {.model = MODEL};
  g_assert_null(ses_session_new_from_specs(&no_cluster, &error));
  g_assert_error(error, SES_ERROR, SES_ERROR_INPUT);
  g_clear_error(&error);
  SesSpecs no_model = {.cluster = CLUSTER, .strategy = "dp"};
  g_assert_null(ses_session_new_from_specs(&no_model, &error));
  g_assert_error(error, SES_ERROR, SES_ERROR_INPUT);
  g_clear_error(&error);
  SesSpecs bad_strategy = {.model = MODEL, .cluster = CLUSTER, .strategy = "megatron:tp=3"};
  g_assert_null(ses_session_new_from_specs(&bad_strategy, &error));
  g_assert_error(error, MDL_ERROR, MDL_ERROR_STRATEGY);
  g_clear_error(&error);
  /* A cluster alone (collective): a session, nothing to simulate. */
  SesSpecs cluster_only = {.cluster = CLUSTER};
  SesSession *s = ses_session_new_from_specs(&cluster_only, &error);
  g_assert_no_error(error);
  g_assert_null(ses_session_graph(s));
  g_assert_null(ses_session_simulate(s, &error));
  g_assert_error(error, SES_ERROR, SES_ERROR_INPUT);
  g_clear_error(&error);
  ses_session_free(s);
}

/* A calibration is looked up in a database that must exist: nothing is created. */
static void test_calibration_needs_database(void) {
  g_autofree char *dir = g_dir_make_tmp("stratsim-session-XXXXXX", NULL);
  g_autofree char *db = g_build_filename(dir, "sub", "x.db", NULL);
  GError *error = NULL;
  SesSpecs specs = {.model = MODEL, .cluster = CLUSTER, .strategy = "dp", .db_path = db,
                    .calibration = "nope"};
  g_assert_null(ses_session_new_from_specs(&specs, &error));
  g_assert_error(error, RES_ERROR, RES_ERROR_NOT_FOUND);
  g_clear_error(&error);
  g_assert_false(g_file_test(db, G_FILE_TEST_EXISTS));
  test_remove_tree(dir);
}

static gint64 count_predictions(const char *path) {
  GError *error = NULL;
  ResDb *db = res_db_open_read_only(path, &error);
  g_assert_no_error(error);
  gint64 n = res_db_count(db, "predictions", &error);
  g_assert_no_error(error);
  res_db_close(db);
  return n;
}

/* Read-write sessions create the database and store; read-only ones (--no-store) never
 * create it, read an existing one and refuse to store. */
static void test_read_only(void) {
  g_autofree char *dir = g_dir_make_tmp("stratsim-session-XXXXXX", NULL);
  g_autofree char *db = g_build_filename(dir, "runs.db", NULL);
  GError *error = NULL;
  SesSpecs specs = {.model = MODEL, .cluster = CLUSTER, .strategy = STRATEGY, .db_path = db,
                    .read_only = TRUE};
  SesSession *s = ses_session_new_from_specs(&specs, &error);
  g_assert_no_error(error);
  g_assert_null(ses_session_db(s));
  g_assert_false(g_file_test(db, G_FILE_TEST_EXISTS));
  SimRun *run = ses_session_simulate(s, &error);
  g_assert_no_error(error);
  g_assert_cmpint(ses_session_store_simulation(s, run, &error), ==, -1);
  g_assert_error(error, SES_ERROR, SES_ERROR_READ_ONLY);
  g_clear_error(&error);
  sim_run_free(run);
  ses_session_free(s);
  g_assert_false(g_file_test(db, G_FILE_TEST_EXISTS));

  specs.read_only = FALSE;
  s = ses_session_new_from_specs(&specs, &error);
  g_assert_no_error(error);
  g_assert_nonnull(ses_session_db(s));
  run = ses_session_simulate(s, &error);
  g_assert_no_error(error);
  g_assert_cmpint(ses_session_store_simulation(s, run, &error), >, 0);
  g_assert_no_error(error);
  sim_run_free(run);
  ses_session_free(s);
  g_assert_cmpint(count_predictions(db), ==, 1);

  specs.read_only = TRUE;
  s = ses_session_new_from_specs(&specs, &error);
  g_assert_no_error(error);
  g_assert_nonnull(ses_session_db(s)); /* read for kernel times */
  ses_session_free(s);
  g_assert_cmpint(count_predictions(db), ==, 1);
  test_remove_tree(dir);
}

/* `simulate --no-store` and `search --no-store` create no database and add no row to one. */
static void test_cli_no_store(void) {
  g_autofree char *dir = g_dir_make_tmp("stratsim-session-XXXXXX", NULL);
  g_autofree char *db = g_build_filename(dir, "cli.db", NULL);
  const char *commands[] = {
      "simulate -m mlp -c dgx-a100 --db cli.db --no-store --json",
      "search -m mlp -c dgx-a100 --budget 10 --db cli.db --no-store --json",
      "explain -m mlp -c dgx-a100 --db cli.db --no-store --json",
  };
  for (gsize i = 0; i < G_N_ELEMENTS(commands); i++) {
    TestCliResult r = test_cli_run(dir, commands[i]);
    g_assert_cmpint(r.status, ==, 0);
    test_cli_result_clear(&r);
    g_assert_false(g_file_test(db, G_FILE_TEST_EXISTS));
  }
  TestCliResult r = test_cli_run(dir, "simulate -m mlp -c dgx-a100 --db cli.db");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "stored       run 1"));
  test_cli_result_clear(&r);
  r = test_cli_run(dir, "simulate -m mlp -c dgx-a100 --db cli.db --no-store");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "not stored (--no-store)"));
  test_cli_result_clear(&r);
  g_assert_cmpint(count_predictions(db), ==, 1);
  test_remove_tree(dir);
}

/* Sessions sharing one SesCosts (a sweep's threads) get the same answer as their own, and a
 * replaced strategy is the one simulated. */
static void test_costs_and_set_strategy(void) {
  GError *error = NULL;
  SesCosts *costs = ses_costs_new(NULL, NULL, NULL, &error);
  g_assert_no_error(error);
  SesSpecs specs = {.model = MODEL, .cluster = CLUSTER, .strategy = STRATEGY,
                    .strategy_name = "named"};
  SesSession *a = ses_session_new_with_costs(&specs, costs, &error);
  SesSession *b = ses_session_new_from_specs(&specs, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(ses_session_strategy(a)->name, ==, "named");
  SimRun *ra = ses_session_simulate(a, &error), *rb = ses_session_simulate(b, &error);
  g_assert_no_error(error);
  g_autofree char *ja = sim_prediction_to_json(ra, FALSE);
  g_autofree char *jb = sim_prediction_to_json(rb, FALSE);
  g_assert_cmpstr(ja, ==, jb);
  sim_run_free(ra);
  MdlStrategy *dp = mdl_strategy_parse_spec("dp", ses_session_graph(a), ses_session_cluster(a),
                                            &error);
  g_assert_no_error(error);
  ses_session_set_strategy(a, dp);
  ra = ses_session_simulate(a, &error);
  g_assert_no_error(error);
  g_assert_true(sim_run_strategy(ra) == dp);
  g_assert_cmpint(sim_run_prediction(ra)->num_gpus, ==, 16);
  sim_run_free(ra);
  sim_run_free(rb);
  ses_session_free(a);
  ses_session_free(b);
  ses_costs_free(costs);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/session/same-as-chain", test_same_as_chain);
  g_test_add_func("/session/bad-specs", test_bad_specs);
  g_test_add_func("/session/calibration-needs-database", test_calibration_needs_database);
  g_test_add_func("/session/read-only", test_read_only);
  g_test_add_func("/session/cli-no-store", test_cli_no_store);
  g_test_add_func("/session/costs-and-set-strategy", test_costs_and_set_strategy);
  return g_test_run();
}
