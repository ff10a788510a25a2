/* Tests for the validate harness: plans from the task graph (read back by val_plan_parse,
 * which checks PLAN.md's rules: matched collectives and transfers, no deadlock), their
 * predictions against simulate, ingest (idempotent by content hash), the report (Kendall's
 * tau on known rankings, text, csv and json), the errors of the CLI, and the CPU loop end to
 * end: host cluster, kernel profiles, two strategies run on 2 MPI ranks, ingested, reported
 * (skipped only where mpirun or stratsim-cpu-runner is missing). */
#include <cjson/cJSON.h>
#include <glib/gstdio.h>
#include <math.h>
#include <sqlite3.h>
#include <string.h>

#include "costmodel/costmodel.h"
#include "results/res_db.h"
#include "sim/sim.h"
#include "test-cli-util.h"
#include "validate/val_ingest.h"
#include "validate/val_plan.h"
#include "validate/val_plan_build.h"
#include "validate/val_report.h"

static char *tmpdir;

static char *tmp_path(const char *name) { return g_build_filename(tmpdir, name, NULL); }

/* --- plans ------------------------------------------------------------------------------- */

static char *make_plan(const char *model, const char *cluster, const char *strategy,
                       ValPlanSummary *sum) {
  ValPlanRequest req = {.model_spec = model, .cluster_spec = cluster, .strategy_spec = strategy};
  GError *error = NULL;
  char *text = val_plan_make(&req, sum, &error);
  g_assert_no_error(error);
  g_assert_nonnull(text);
  return text;
}

static ValPlan *parse_plan(const char *text) {
  GError *error = NULL;
  ValPlan *plan = val_plan_parse(text, "built.json", &error);
  g_assert_no_error(error);
  g_assert_nonnull(plan);
  return plan;
}

typedef struct {
  const char *model, *cluster, *strategy;
  int ranks;
  gboolean transfers, collectives;
} PlanCase;

static const PlanCase plan_cases[] = {
    {"mlp:layers=2,hidden=256,batch=32", "dgx-a100:gpus_per_node=2", "dp", 2, FALSE, TRUE},
    {"mlp:layers=2,hidden=256,batch=32", "dgx-a100:gpus_per_node=2", "megatron:pp=2,mb=8", 2, TRUE, FALSE},
    {"mlp:layers=4,hidden=256,batch=32", "dgx-a100:gpus_per_node=4", "megatron:tp=2,pp=2,mb=8", 4, TRUE, TRUE},
    {"gpt:layers=2,hidden=64,heads=4,seq=32,vocab=128,batch=8", "dgx-a100:gpus_per_node=4",
     "megatron:tp=2,dp=2,mb=2,zero=1", 4, FALSE, TRUE},
    {"gpt:layers=2,hidden=64,heads=4,seq=32,vocab=128,batch=8", "dgx-a100:gpus_per_node=4",
     "megatron:tp=2,pp=2,mb=2,schedule=1f1b", 4, TRUE, TRUE},
    {"gpt:layers=4,hidden=64,heads=4,seq=32,vocab=128,batch=8", "dgx-a100:gpus_per_node=4",
     "megatron:tp=1,pp=2,dp=2,mb=1,schedule=interleaved,vp=2,wdelay=1,recompute=full", 4, TRUE, TRUE},
};

/* Every plan the builder writes is read back by the other engineer's reader, which refuses a
 * plan whose groups issue collectives in different orders, whose sends and receives do not
 * pair up, or that could deadlock; and the builder's summary matches what was read. */
static void test_plan_rules(gconstpointer data) {
  const PlanCase *c = data;
  ValPlanSummary sum;
  g_autofree char *text = make_plan(c->model, c->cluster, c->strategy, &sum);
  ValPlan *plan = parse_plan(text);
  g_assert_cmpint(plan->ranks, ==, c->ranks);
  g_assert_cmpint(sum.ranks, ==, c->ranks);
  g_assert_cmpuint(plan->n_steps, ==, sum.steps);
  guint64 gemms = 0, transfers = 0, collectives = 0;
  for (int r = 0; r < plan->ranks; r++) {
    const ValProgram *p = &plan->programs[r];
    g_assert_cmpuint(p->n_steps, >, 0);
    for (guint i = 0; i < p->n_steps; i++) {
      const ValStep *s = &p->steps[i];
      g_assert_cmpint(s->id, ==, (gint64)i);      /* ids in list order */
      for (guint d = 0; d < s->n_deps; d++) g_assert_cmpuint(s->deps[d], <, i);
      g_assert_true(isfinite(s->predicted_s) && s->predicted_s >= 0);
      gemms += s->kind == VAL_STEP_GEMM;
      transfers += s->kind == VAL_STEP_SEND;
      collectives += s->kind == VAL_STEP_COLLECTIVE;
      if (s->kind == VAL_STEP_GEMM) g_assert_cmpint(s->m * s->n * s->k * s->batch, >, 0);
    }
  }
  g_assert_cmpuint(gemms, ==, sum.gemms);
  g_assert_cmpuint(transfers, ==, sum.transfers);
  g_assert_true((transfers > 0) == c->transfers);
  g_assert_true((collectives > 0) == c->collectives);
  /* micro-benchmarks: deduplicated */
  for (guint i = 0; i < plan->n_micro_ops; i++)
    for (guint j = i + 1; j < plan->n_micro_ops; j++) {
      const ValMicroOp *a = &plan->micro_ops[i], *b = &plan->micro_ops[j];
      g_assert_false(strcmp(a->op, b->op) == 0 && a->gemm == b->gemm && a->m == b->m &&
                     a->n == b->n && a->k == b->k && a->batch == b->batch &&
                     a->elements == b->elements && a->backward == b->backward);
    }
  g_assert_cmpuint(plan->n_micro_ops, >, 0);
  g_assert_true(isfinite(plan->predicted_iteration_time_s) && plan->predicted_iteration_time_s > 0);
  val_plan_free(plan);
}

/* One rank: every task runs on its one compute stream, so the steps' predicted times add up to
 * the iteration the plan predicts, which is what `simulate` predicts (without the host stream,
 * which the plan does not run: a host-bound iteration is longer than its GPU steps). */
static void test_plan_one_rank(void) {
  const char *model = "mlp:layers=3,hidden=512,batch=64", *cluster = "dgx-a100:gpus_per_node=1";
  const char *strategy = "megatron:dp=1,mb=64,framework=none";
  ValPlanSummary sum;
  g_autofree char *text = make_plan(model, cluster, strategy, &sum);
  ValPlan *plan = parse_plan(text);
  g_assert_cmpint(plan->ranks, ==, 1);
  double total = 0;
  for (guint i = 0; i < plan->programs[0].n_steps; i++) total += plan->programs[0].steps[i].predicted_s;
  g_assert_cmpfloat(fabs(total - plan->predicted_iteration_time_s), <=, 1e-9 * total);

  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec(cluster, &error);
  MdlGraph *g = mdl_graph_parse_spec(model, &error);
  MdlStrategy *s = mdl_strategy_parse_spec(strategy, g, c, &error);
  g_assert_no_error(error);
  CmParams params;
  cm_params_default(&params);
  SimRun *run = sim_run_new(g, s, c, &params, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(sim_run_prediction(run)->iteration_time_s, ==, plan->predicted_iteration_time_s);
  /* forward: 3 gemms; backward: dX and dW for layers 1-2, dW only for layer 0 (its input is
   * data); plus the loss forward and backward and the optimizer step */
  g_assert_cmpuint(sum.gemms, ==, 3 + 2 + 2 + 1);
  g_assert_cmpuint(sum.elementwise, ==, 3);
  sim_run_free(run);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
  val_plan_free(plan);
}

/* The simulator's streams carry over: TP collectives on comm, pipeline transfers on p2p, the
 * gradient sync on dp (sim/STREAMS.md), and a group is used on one stream only (a runner's
 * communicator must not be shared by two streams). Fails where every communication step is
 * on one stream, or where a group serves two. */
static void test_plan_streams(void) {
  ValPlanSummary sum;
  g_autofree char *text = make_plan("gpt:layers=4,hidden=64,heads=4,seq=32,vocab=128,batch=8",
                                    "dgx-a100:gpus_per_node=8", "megatron:tp=2,pp=2,dp=2,mb=1", &sum);
  ValPlan *plan = parse_plan(text);
  g_autofree int *group_stream = g_new(int, MAX(plan->n_groups, 1));
  for (int g = 0; g < plan->n_groups; g++) group_stream[g] = -1;
  guint64 count[VAL_STREAMS][VAL_STEP_RECV + 1] = {{0}};
  for (int r = 0; r < plan->ranks; r++)
    for (guint i = 0; i < plan->programs[r].n_steps; i++) {
      const ValStep *s = &plan->programs[r].steps[i];
      count[s->stream][s->kind]++;
      if (s->kind != VAL_STEP_COLLECTIVE) continue;
      if (group_stream[s->group] < 0) group_stream[s->group] = (int)s->stream;
      g_assert_cmpint(group_stream[s->group], ==, (int)s->stream);
      if (strstr(s->name, "grad ") == s->name) g_assert_cmpint(s->stream, ==, VAL_STREAM_DP);
    }
  g_assert_cmpuint(count[VAL_STREAM_COMPUTE][VAL_STEP_GEMM], ==, sum.gemms);
  g_assert_cmpuint(count[VAL_STREAM_COMM][VAL_STEP_COLLECTIVE], >, 0);
  g_assert_cmpuint(count[VAL_STREAM_DP][VAL_STEP_COLLECTIVE], >, 0);
  g_assert_cmpuint(count[VAL_STREAM_P2P][VAL_STEP_SEND], ==, sum.transfers);
  g_assert_cmpuint(count[VAL_STREAM_P2P][VAL_STEP_RECV], ==, sum.transfers);
  g_assert_cmpuint(count[VAL_STREAM_COMM][VAL_STEP_SEND] + count[VAL_STREAM_DP][VAL_STEP_SEND], ==, 0);
  g_assert_cmpstr(val_stream_name(VAL_STREAM_P2P), ==, "p2p");
  g_assert_cmpstr(val_stream_name(VAL_STREAM_DP), ==, "dp");
  val_plan_free(plan);
}

/* --dtype changes the dtype of every step and of the prediction. */
static void test_plan_dtype(void) {
  ValPlanRequest req = {.model_spec = "mlp:layers=2,hidden=256,batch=32",
                        .cluster_spec = "dgx-a100:gpus_per_node=2", .dtype = "bf16",
                        .warmup = 1, .iterations = 4};
  GError *error = NULL;
  g_autofree char *text = val_plan_make(&req, NULL, &error);
  g_assert_no_error(error);
  ValPlan *plan = parse_plan(text);
  g_assert_cmpint(plan->dtype, ==, VAL_DTYPE_BF16);
  g_assert_cmpint(plan->warmup, ==, 1);
  g_assert_cmpint(plan->iterations, ==, 4);
  for (guint i = 0; i < plan->programs[0].n_steps; i++)
    g_assert_cmpint(plan->programs[0].steps[i].dtype, ==, VAL_DTYPE_BF16);
  val_plan_free(plan);
  req.dtype = "fp4";
  g_assert_null(val_plan_make(&req, NULL, &error));
  g_assert_error(error, VAL_BUILD_ERROR, VAL_BUILD_ERROR_INPUT);
  g_clear_error(&error);
  req.dtype = NULL;
  req.iterations = 0;
  req.warmup = 5;
  g_assert_null(val_plan_make(&req, NULL, &error));
  g_assert_error(error, VAL_BUILD_ERROR, VAL_BUILD_ERROR_INPUT);
  g_clear_error(&error);
}

/* --- Kendall tau ------------------------------------------------------------------------- */

static void test_kendall(void) {
  const double a[] = {1, 2, 3, 4}, rev[] = {4, 3, 2, 1}, swap[] = {1, 3, 2, 4};
  guint c, d;
  g_assert_cmpfloat(val_kendall_tau(a, a, 4, &c, &d), ==, 1.0);
  g_assert_cmpuint(c, ==, 6);
  g_assert_cmpfloat(val_kendall_tau(a, rev, 4, &c, &d), ==, -1.0);
  g_assert_cmpuint(d, ==, 6);
  g_assert_cmpfloat_with_epsilon(val_kendall_tau(a, swap, 4, &c, &d), 4.0 / 6.0, 1e-12);
  g_assert_cmpuint(c, ==, 5);
  g_assert_cmpuint(d, ==, 1);
  /* tau-b with a tie in x: 2 concordant pairs of 3, one tied: 2 / sqrt(2 * 3) */
  const double tx[] = {1, 1, 2}, ty[] = {1, 2, 3};
  g_assert_cmpfloat_with_epsilon(val_kendall_tau(tx, ty, 3, NULL, NULL), 2 / sqrt(6.0), 1e-12);
  g_assert_true(isnan(val_kendall_tau(a, a, 1, NULL, NULL)));
  const double flat[] = {5, 5, 5};
  g_assert_true(isnan(val_kendall_tau(flat, ty, 3, NULL, NULL)));
}

/* --- ingest and report (fixtures: measurements written by the runners' writer) ---------- */

/* Writes plan @strategy's text and a measurements file whose iterations take @measured_s and
 * whose steps take @step_scale times their prediction: a fixture, not a measurement. */
static void write_fixture(const char *strategy, double measured_s, double step_scale,
                          char **plan_path, char **measurements_path) {
  g_autofree char *text = make_plan("mlp:layers=2,hidden=256,batch=32", "dgx-a100:gpus_per_node=2",
                                    strategy, NULL);
  g_autofree char *base = g_strdup(strategy);
  g_strcanon(base, "abcdefghijklmnopqrstuvwxyz0123456789", '_');
  g_autofree char *pname = g_strdup_printf("plan-%s.json", base);
  *plan_path = tmp_path(pname);
  g_assert_true(g_file_set_contents(*plan_path, text, -1, NULL));
  ValPlan *plan = parse_plan(text);
  ValMeasurements *m = val_measurements_new(plan, "cpu");
  val_measurements_set_env_string(m, "device", "test fixture");
  val_measurements_set_env_string(m, "host", "fixture");
  val_measurements_set_env_string(m, "date", "2026-01-01T00:00:00Z");
  for (int i = 0; i < 3; i++) val_measurements_add_iteration(m, measured_s * (1 + 0.01 * i));
  for (int r = 0; r < plan->ranks; r++)
    for (guint i = 0; i < plan->programs[r].n_steps; i++) {
      double t = plan->programs[r].steps[i].predicted_s * step_scale;
      val_measurements_add_step(m, r, plan->programs[r].steps[i].id, &t, 1);
    }
  g_autofree char *mname = g_strdup_printf("measured-%s-%g.json", base, measured_s);
  *measurements_path = tmp_path(mname);
  GError *error = NULL;
  g_assert_true(val_measurements_write(m, *measurements_path, &error));
  g_assert_no_error(error);
  val_measurements_free(m);
  val_plan_free(plan);
}

static gint64 query_int(const char *db, const char *sql) {
  sqlite3 *h = NULL;
  g_assert_cmpint(sqlite3_open(db, &h), ==, SQLITE_OK);
  sqlite3_stmt *st = NULL;
  g_assert_cmpint(sqlite3_prepare_v2(h, sql, -1, &st, NULL), ==, SQLITE_OK);
  g_assert_cmpint(sqlite3_step(st), ==, SQLITE_ROW);
  gint64 v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(h);
  return v;
}

static int db_check_status(const char *db) {
  g_autofree char *args = g_strdup_printf("db check --db '%s'", db);
  TestCliResult r = test_cli_run(tmpdir, args);
  int status = r.status;
  test_cli_result_clear(&r);
  return status;
}

static void test_ingest_idempotent(void) {
  g_autofree char *db = tmp_path("ingest.db");
  g_autofree char *plan = NULL, *meas = NULL;
  write_fixture("dp", 2e-3, 1.5, &plan, &meas);
  g_autofree char *args = g_strdup_printf("validate ingest --db '%s' --plan '%s' '%s'", db, plan, meas);
  TestCliResult r = test_cli_run(tmpdir, args);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "stored validate run 1"));
  test_cli_result_clear(&r);
  gint64 steps = query_int(db, "SELECT count(*) FROM validate_steps");
  g_assert_cmpint(steps, >, 0);
  g_assert_cmpint(query_int(db, "SELECT count(*) FROM validate_steps WHERE measured_s IS NULL"), ==, 0);
  /* the same files again: nothing new */
  r = test_cli_run(tmpdir, args);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "already stored as validate run 1"));
  test_cli_result_clear(&r);
  g_assert_cmpint(query_int(db, "SELECT count(*) FROM validate_runs"), ==, 1);
  g_assert_cmpint(query_int(db, "SELECT count(*) FROM validate_steps"), ==, steps);
  g_assert_cmpint(query_int(db, "SELECT count(*) FROM runs WHERE command = 'validate'"), ==, 1);
  /* the library says so too */
  ValIngestResult res;
  GError *error = NULL;
  g_assert_true(val_ingest_files(db, plan, meas, FALSE, &res, &error));
  g_assert_no_error(error);
  g_assert_true(res.existing);
  g_assert_cmpint(res.id, ==, 1);
  /* error: predicted (the plan's) against the fixture's 2e-3 s median */
  g_assert_cmpfloat_with_epsilon(res.measured_s, 2.02e-3, 1e-12); /* the median of 2, 2.02, 2.04 ms */
  g_assert_cmpfloat_with_epsilon(res.error_pct, 100 * (res.predicted_s - 2.02e-3) / 2.02e-3, 1e-9);
  /* another measurement of the same plan is another run */
  g_autofree char *plan2 = NULL, *meas2 = NULL;
  write_fixture("dp", 3e-3, 1.5, &plan2, &meas2);
  g_assert_true(val_ingest_files(db, plan2, meas2, FALSE, &res, &error));
  g_assert_false(res.existing);
  g_assert_cmpint(query_int(db, "SELECT count(*) FROM validate_runs"), ==, 2);
  g_assert_cmpint(db_check_status(db), ==, 0);
}

static void test_report(void) {
  g_autofree char *db = tmp_path("report.db");
  /* three strategies; measured times in the predicted order except for one swap */
  const char *strategies[] = {"dp", "megatron:pp=2,mb=8", "megatron:tp=2"};
  double predicted[3];
  for (int i = 0; i < 3; i++) {
    g_autofree char *plan = NULL, *meas = NULL;
    ValPlan *p = NULL;
    write_fixture(strategies[i], 1e-3 * (i + 1), 2.0, &plan, &meas);
    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(plan, &text, NULL, NULL));
    p = parse_plan(text);
    predicted[i] = p->predicted_iteration_time_s;
    val_plan_free(p);
    ValIngestResult res;
    GError *error = NULL;
    g_assert_true(val_ingest_files(db, plan, meas, FALSE, &res, &error));
    g_assert_no_error(error);
  }
  double measured[3] = {1e-3, 2e-3 * 1.0, 3e-3};
  for (int i = 0; i < 3; i++) measured[i] *= 1.01; /* the fixtures' medians */
  double tau = val_kendall_tau(predicted, measured, 3, NULL, NULL);

  g_autofree char *args = g_strdup_printf("validate report --db '%s'", db);
  TestCliResult r = test_cli_run(tmpdir, args);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "validate report: 3 runs"));
  g_assert_nonnull(strstr(r.out, "strategy megatron:pp=2,mb=8"));
  g_assert_nonnull(strstr(r.out, "collective:all_reduce"));
  g_assert_nonnull(strstr(r.out, "-50.0%")); /* every step was measured at twice its prediction */
  g_autofree char *tau_text = g_strdup_printf("3 strategies, tau = %.3f", tau);
  g_assert_nonnull(strstr(r.out, tau_text));
  g_test_message("%s", r.out);
  test_cli_result_clear(&r);

  g_autofree char *csv = g_strdup_printf("validate report --db '%s' --format csv", db);
  r = test_cli_run(tmpdir, csv);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_true(g_str_has_prefix(r.out, "section,run,model,cluster,strategy,runner,key,steps,"));
  g_assert_nonnull(strstr(r.out, "\nrun,1,\"mlp:layers=2,hidden=256,batch=32\","));
  g_assert_nonnull(strstr(r.out, "\ntau,,"));
  test_cli_result_clear(&r);

  g_autofree char *json = g_strdup_printf("validate report --db '%s' --format json --chart '%s/chart'", db, tmpdir);
  r = test_cli_run(tmpdir, json);
  g_assert_cmpint(r.status, ==, 0);
  cJSON *root = cJSON_Parse(r.out);
  g_assert_nonnull(root);
  g_assert_cmpint(cJSON_GetArraySize(cJSON_GetObjectItem(root, "runs")), ==, 3);
  const cJSON *corr = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "rank_correlation"), 0);
  g_assert_cmpfloat_with_epsilon(cJSON_GetObjectItem(corr, "kendall_tau")->valuedouble, tau, 1e-12);
  const cJSON *run0 = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "runs"), 0);
  g_assert_cmpfloat_with_epsilon(cJSON_GetObjectItem(run0, "measured_s")->valuedouble, 1.01e-3, 1e-12);
  cJSON_Delete(root);
  test_cli_result_clear(&r);
  g_autofree char *gp = g_strdup_printf("%s/chart/validate.gp", tmpdir);
  g_assert_true(g_file_test(gp, G_FILE_TEST_IS_REGULAR));
}

/* `validate report --chart` after one validate run (issue 17 item 3): its only point lies in one
 * half of the x range, and a `with labels` clause no point qualifies for crashed gnuplot 5.4
 * (signal 11). The script labels the point with one clause; gnuplot draws both images. */
static void test_report_chart_one_run(void) {
  g_autofree char *db = tmp_path("one-run.db");
  g_autofree char *plan = NULL, *meas = NULL;
  write_fixture("dp", 2e-3, 1.0, &plan, &meas);
  ValIngestResult res;
  GError *error = NULL;
  g_assert_true(val_ingest_files(db, plan, meas, FALSE, &res, &error));
  g_assert_no_error(error);
  g_autofree char *dir = tmp_path("one-run-chart");
  g_autofree char *args = g_strdup_printf("validate report --db '%s' --chart '%s'", db, dir);
  TestCliResult r = test_cli_run(tmpdir, args);
  g_test_message("exit %d: %s%s", r.status, r.out, r.err);
  g_assert_cmpint(r.status, ==, 0);
  test_cli_result_clear(&r);
  g_autofree char *gp = g_build_filename(dir, "validate.gp", NULL);
  g_autofree char *script = NULL;
  g_assert_true(g_file_get_contents(gp, &script, NULL, NULL));
  g_auto(GStrv) parts = g_strsplit(script, "with labels", -1);
  g_assert_cmpuint(g_strv_length(parts), ==, 2);
  /* a full disk (a gnuplot that leaves the images empty): exit 1 naming the image */
  g_autofree char *bin = tmp_path("bin-empty-images");
  g_autofree char *fake = g_build_filename(bin, "gnuplot", NULL);
  g_assert_cmpint(g_mkdir_with_parents(bin, 0755), ==, 0);
  g_assert_true(g_file_set_contents(fake, "#!/bin/sh\n: > validate.png\n: > validate.svg\n", -1, NULL));
  g_assert_cmpint(g_chmod(fake, 0755), ==, 0);
  r = test_cli_run_path(tmpdir, bin, args);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.err, "validate.png is empty"));
  test_cli_result_clear(&r);
  g_autofree char *gnuplot = g_find_program_in_path("gnuplot");
  if (!gnuplot) return;
  r = test_cli_run(tmpdir, args);
  g_assert_cmpint(r.status, ==, 0);
  test_cli_result_clear(&r);
  for (int f = 0; f < 2; f++) {
    g_autofree char *image = g_build_filename(dir, f ? "validate.svg" : "validate.png", NULL);
    GStatBuf st;
    g_assert_cmpint(g_stat(image, &st), ==, 0);
    g_assert_cmpint(st.st_size, >, 0);
  }
}

/* --- errors ------------------------------------------------------------------------------ */

static void expect_error(const char *args, int status, const char *needle) {
  TestCliResult r = test_cli_run(tmpdir, args);
  if (r.status != status || !strstr(r.err, needle))
    g_error("'%s': exit %d, stderr '%s' (wanted %d and '%s')", args, r.status, r.err, status, needle);
  /* one line */
  g_assert_true(strchr(r.err, '\n') == r.err + strlen(r.err) - 1);
  test_cli_result_clear(&r);
}

static void test_errors(void) {
  g_autofree char *missing = tmp_path("missing.db");
  g_autofree char *a = g_strdup_printf("validate report --db '%s'", missing);
  expect_error(a, 2, "no database");
  /* a database without validate runs */
  g_autofree char *empty = tmp_path("empty.db");
  g_autofree char *sim = g_strdup_printf("simulate --model mlp --cluster dgx-a100 --db '%s'", empty);
  TestCliResult r = test_cli_run(tmpdir, sim);
  g_assert_cmpint(r.status, ==, 0);
  test_cli_result_clear(&r);
  g_autofree char *b = g_strdup_printf("validate report --db '%s'", empty);
  expect_error(b, 2, "no validate runs");
  g_autofree char *f = g_strdup_printf("validate report --db '%s' --format xml", empty);
  expect_error(f, 2, "--format must be text, csv or json");

  g_autofree char *plan = NULL, *meas = NULL;
  write_fixture("dp", 2e-3, 1.0, &plan, &meas);
  g_autofree char *db = tmp_path("errors.db");
  g_autofree char *c = g_strdup_printf("validate ingest --db '%s' --plan '%s/nope.json' '%s'", db, tmpdir, meas);
  expect_error(c, 2, "nope.json");
  g_autofree char *d = g_strdup_printf("validate ingest --db '%s' '%s'", db, meas);
  expect_error(d, 2, "--plan");

  /* malformed measurements: each refused with exit 2, the field named, nothing stored */
  g_autofree char *good = NULL;
  g_assert_true(g_file_get_contents(meas, &good, NULL, NULL));
  struct { const char *from, *to, *needle; } cases[] = {
      {"\"format\":", "\"formats\":", "field 'format' is missing"},
      {"\"stratsim-measurements\"", "\"stratsim-plan\"", "not 'stratsim-measurements'"},
      {"\"runner\":\t\"cpu\"", "\"runner\":\t\"tpu\"", "field 'runner' is 'tpu'"},
      {"\"time_s\":\t", "\"time_s\":\t-", "time_s' must be a finite number"},
      {"\"ranks\":\t2", "\"ranks\":\t3", "another plan"},
      {"\"strategy\":\t\"dp\"", "\"strategy\":\t\"megatron:tp=2\"", "another plan"},
      {"\"id\":\t0,", "\"id\":\t999,", "has no step 999"},
      {"\"iterations_s\":\t[", "\"iterations_s\":\t[0, ", "iterations_s[0]' must be"},
      {"\"warmup\":", "\"warmup\": -1, \"x\":", "field 'warmup' must be"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    const char *at = strstr(good, cases[i].from);
    if (!at) g_error("fixture has no '%s'", cases[i].from);
    g_autofree char *bad = g_strdup_printf("%.*s%s%s", (int)(at - good), good, cases[i].to,
                                           at + strlen(cases[i].from));
    g_autofree char *name = g_strdup_printf("bad-%zu.json", i);
    g_autofree char *path = tmp_path(name);
    g_assert_true(g_file_set_contents(path, bad, -1, NULL));
    g_autofree char *e = g_strdup_printf("validate ingest --db '%s' --plan '%s' '%s'", db, plan, path);
    expect_error(e, 2, cases[i].needle);
  }
  g_autofree char *array = tmp_path("array.json");
  g_assert_true(g_file_set_contents(array, "[1, 2]", -1, NULL));
  g_autofree char *ar = g_strdup_printf("validate ingest --db '%s' --plan '%s' '%s'", db, plan, array);
  expect_error(ar, 2, "must be a JSON object");
  g_autofree char *junk = tmp_path("junk.json");
  g_assert_true(g_file_set_contents(junk, "{\"format\": \"stratsim-measurements\", \"version\"", -1, NULL));
  g_autofree char *j = g_strdup_printf("validate ingest --db '%s' --plan '%s' '%s'", db, plan, junk);
  expect_error(j, 2, "malformed JSON");
  if (g_file_test(db, G_FILE_TEST_EXISTS))
    g_assert_cmpint(query_int(db, "SELECT count(*) FROM validate_runs"), ==, 0);
  /* plan errors */
  expect_error("validate plan --model mlp", 2, "--model and --cluster are required");
  expect_error("validate plan --model mlp --cluster dgx-a100 --strategy megatron:tp=3", 2, "does not divide");
  expect_error("validate plan --model mlp --cluster dgx-a100 --iterations 0", 2, "timed iterations");
  expect_error("validate frobnicate", 2, "say plan, run, ingest, report or host-cluster");
  expect_error("validate run --model mlp --cluster dgx-a100 --runner tpu", 2, "--runner must be cpu or gpu");
}

/* --- the CPU loop end to end ------------------------------------------------------------- */

static char *cpu_runner_path(void) {
  g_autofree char *dir = g_path_get_dirname(STRATSIM_BIN);
  return g_build_filename(dir, "stratsim-cpu-runner", NULL);
}

static char *run_ok(const char *args) {
  TestCliResult r = test_cli_run(tmpdir, args);
  if (r.status != 0) g_error("stratsim %s: exit %d: %s%s", args, r.status, r.out, r.err);
  char *out = r.out;
  r.out = NULL;
  test_cli_result_clear(&r);
  return out;
}

/* Whether the CPU runner can run here (mpirun on PATH, the runner built): else the test is
 * skipped, saying why. */
static gboolean cpu_runner_ready(void) {
  g_autofree char *runner = cpu_runner_path();
  g_autofree char *mpirun = g_find_program_in_path("mpirun");
  if (!mpirun || !g_file_test(runner, G_FILE_TEST_IS_EXECUTABLE)) {
    g_test_skip(!mpirun ? "mpirun is not on PATH (install openmpi-bin)"
                        : "stratsim-cpu-runner was not built (CMake needs MPI and OpenBLAS)");
    return FALSE;
  }
#if defined(__SANITIZE_ADDRESS__)
  /* Open MPI does not free its own allocations at MPI_Finalize and unloads its plugins, so
   * LeakSanitizer cannot even name them (no suppression can match): in a sanitized build the
   * runner (only it) runs with leak checks off, through a wrapper; address and undefined-
   * behaviour checks stay on, and the stratsim processes keep their leak checks. */
  g_autofree char *wrapper = tmp_path("cpu-runner-no-leak-check.sh");
  g_autofree char *script = g_strdup_printf(
      "#!/bin/sh\nASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" exec '%s' \"$@\"\n",
      runner);
  g_assert_true(g_file_set_contents(wrapper, script, -1, NULL));
  g_assert_cmpint(g_chmod(wrapper, 0755), ==, 0);
  g_setenv("STRATSIM_CPU_RUNNER", wrapper, TRUE);
#endif
  return TRUE;
}

/* Open MPI's launcher race (validate/val_run.h val_mpirun_lost_pid): an mpirun that fails once
 * with it runs again and the command succeeds, saying so; one that always fails with it is
 * tried three times, then the command fails naming mpirun. MPIRUN points at a fake. */
static void test_launcher_lost_pid(void) {
  if (!cpu_runner_ready()) return;
  g_autofree char *mpirun = g_find_program_in_path("mpirun");
  g_autofree char *fake = tmp_path("fake-mpirun.sh"), *calls = tmp_path("fake-mpirun.calls");
  g_autofree char *host = tmp_path("host-retry.json");
  for (int always = 0; always < 2; always++) {
    g_remove(calls);
    g_autofree char *script = g_strdup_printf(
        "#!/bin/sh\necho call >> '%s'\n"
        "if [ %d = 1 ] || [ $(wc -l < '%s') -lt 2 ]; then\n"
        "  echo 'mpirun noticed that process rank 1 with PID 0 on node fake exiting improperly.' >&2\n"
        "  exit 1\nfi\nexec '%s' \"$@\"\n",
        calls, always, calls, mpirun);
    g_assert_true(g_file_set_contents(fake, script, -1, NULL));
    g_assert_cmpint(g_chmod(fake, 0755), ==, 0);
    g_setenv("MPIRUN", fake, TRUE);
    g_autofree char *args = g_strdup_printf("validate host-cluster -o '%s' --ranks 2", host);
    TestCliResult r = test_cli_run(tmpdir, args);
    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(calls, &text, NULL, NULL));
    int n = 0;
    for (const char *c = text; *c; c++) n += *c == '\n';
    g_test_message("always %d: exit %d, %d calls; %s", always, r.status, n, r.err);
    g_assert_nonnull(strstr(r.err, "running it again"));
    if (always) {
      g_assert_cmpint(r.status, !=, 0);
      g_assert_cmpint(n, ==, 3);
      g_assert_nonnull(strstr(r.err, "fake-mpirun.sh failed"));
    } else {
      g_assert_cmpint(r.status, ==, 0);
      g_assert_cmpint(n, ==, 2);
      g_assert_true(g_file_test(host, G_FILE_TEST_EXISTS));
    }
    test_cli_result_clear(&r);
    g_unsetenv("MPIRUN");
  }
}

/* The acceptance test: this machine measured as a cluster, its kernels profiled, a data-
 * parallel and a 2-stage pipeline run of a small MLP on 2 MPI ranks, ingested and reported
 * with the error; the runner's collectives feed `stratsim calibrate`. */
static void test_cpu_loop(void) {
  if (!cpu_runner_ready()) return;
  g_autofree char *db = tmp_path("loop.db"), *host = tmp_path("host.json");
  const char *model = "mlp:layers=2,hidden=256,batch=32";
  g_autofree char *a = g_strdup_printf("validate host-cluster -o '%s' --ranks 2", host);
  g_autofree char *out = run_ok(a);
  g_test_message("%s", out);
  g_assert_nonnull(strstr(out, "sgemm"));
  /* the file is a cluster stratsim reads, every figure with its source */
  g_autofree char *host_text = NULL;
  g_assert_true(g_file_get_contents(host, &host_text, NULL, NULL));
  GError *error = NULL;
  DevCluster *c = dev_cluster_from_json(host_text, host, &error);
  g_assert_no_error(error);
  g_assert_cmpint(dev_cluster_num_devices(c), ==, 2);
  g_assert_cmpfloat(c->device.peak_flops[DEV_DTYPE_FP32], >, 0);
  dev_cluster_free(c);
  g_assert_nonnull(strstr(host_text, "measured by stratsim-cpu-runner on"));
  /* beside it, the collectives at several sizes: a calibration of this machine's MPI */
  g_autofree char *cal_host = g_strdup_printf(
      "calibrate --cluster '%s' --name host-mpi --db '%s' '%s/host.collectives.json'", host, db, tmpdir);
  g_autofree char *cal_host_out = run_ok(cal_host);
  g_assert_nonnull(strstr(cal_host_out, "fit    all_reduce"));

  const char *strategies[] = {"dp", "megatron:pp=2,mb=8"};
  for (int i = 0; i < 2; i++) {
    g_autofree char *p = g_strdup_printf(
        "profile --model %s --cluster '%s' --strategy %s --db '%s' --dir '%s/profile-%d'", model,
        host, strategies[i], db, tmpdir, i);
    g_free(run_ok(p));
  }
  g_assert_cmpint(query_int(db, "SELECT count(*) FROM op_profiles"), >=, 4);
  /* --no-profiles plans with the roofline even with a calibration from the same database */
  g_autofree char *np = g_strdup_printf(
      "validate plan --model %s --cluster '%s' --db '%s' --no-profiles --calibration host-mpi "
      "-o '%s/roofline.json'", model, host, db, tmpdir);
  g_autofree char *np_out = run_ok(np);
  g_assert_nonnull(strstr(np_out, "(0 measured kernel times)"));
  for (int i = 0; i < 2; i++) {
    g_autofree char *v = g_strdup_printf(
        "validate run --model %s --cluster '%s' --strategy %s --db '%s' --dir '%s/run-%d' "
        "--iterations 10 --calibration host-mpi", model, host, strategies[i], db, tmpdir, i);
    g_autofree char *o = run_ok(v);
    g_test_message("%s", o);
    g_assert_nonnull(strstr(o, "measured kernel times)"));
    g_assert_nonnull(strstr(o, "validate run: predicted"));
    g_assert_null(strstr(o, "(0 measured kernel times)")); /* the profiles were used */
  }
  g_assert_cmpint(query_int(db, "SELECT count(*) FROM validate_runs WHERE runner = 'cpu' AND measured_s > 0"), ==, 2);
  g_assert_cmpint(query_int(db, "SELECT count(*) FROM validate_runs WHERE prediction LIKE '%\"calibration\":\"host-mpi\"%'"), ==, 2);
  g_assert_cmpint(query_int(db, "SELECT count(*) FROM validate_steps WHERE measured_s IS NULL"), ==, 0);
  g_autofree char *rep = g_strdup_printf("validate report --db '%s'", db);
  g_autofree char *report = run_ok(rep);
  /* the error lines, for the log */
  g_auto(GStrv) lines = g_strsplit(report, "\n", -1);
  for (char **l = lines; *l; l++)
    if (strstr(*l, "iteration    predicted") || strstr(*l, "strategies, tau") || g_str_has_prefix(*l, "run "))
      g_test_message("%s", *l);
  g_assert_nonnull(strstr(report, "2 strategies, tau = "));
  g_assert_nonnull(strstr(report, "runner cpu"));

  /* the runner's collective micro-benchmarks are a calibrate input: two sizes from two plans */
  g_autofree char *small = g_strdup_printf(
      "profile --model mlp:layers=2,hidden=128,batch=32 --cluster '%s' --db '%s' --dir '%s/profile-small'",
      host, db, tmpdir);
  g_free(run_ok(small));
  g_autofree char *cal = g_strdup_printf(
      "calibrate --cluster '%s' --name host --db '%s' '%s/profile-0/microbench.json' "
      "'%s/profile-small/microbench.json'", host, db, tmpdir, tmpdir);
  g_autofree char *cal_out = run_ok(cal);
  g_test_message("%s", cal_out);
  g_assert_cmpint(query_int(db, "SELECT count(*) FROM calibrations WHERE name = 'host'"), ==, 1);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp("stratsim-validate-XXXXXX", NULL);
  g_assert_nonnull(tmpdir);
  for (gsize i = 0; i < G_N_ELEMENTS(plan_cases); i++) {
    g_autofree char *path = g_strdup_printf("/validate/build/rules/%zu", i);
    g_test_add_data_func(path, &plan_cases[i], test_plan_rules);
  }
  g_test_add_func("/validate/build/one-rank", test_plan_one_rank);
  g_test_add_func("/validate/build/dtype", test_plan_dtype);
  g_test_add_func("/validate/build/streams", test_plan_streams);
  g_test_add_func("/validate/report/kendall", test_kendall);
  g_test_add_func("/validate/ingest/idempotent", test_ingest_idempotent);
  g_test_add_func("/validate/report/output", test_report);
  g_test_add_func("/validate/report/chart-one-run", test_report_chart_one_run);
  g_test_add_func("/validate/errors", test_errors);
  g_test_add_func("/validate/cpu-loop", test_cpu_loop);
  g_test_add_func("/validate/cpu-runner/launcher-lost-pid", test_launcher_lost_pid);
  int status = g_test_run();
  test_remove_tree(tmpdir);
  g_free(tmpdir);
  return status;
}
