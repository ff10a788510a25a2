/* cli/validate — `stratsim validate plan|run|ingest|report|host-cluster` and `stratsim profile`:
 * thin wrappers over validate/ (val_plan_build.h, val_run.h, val_ingest.h, val_report.h). */
#include "cli/cli.h"
#include "cli/cli_outputs.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "model/mdl_graph.h"
#include "results/res_db.h"
#include "validate/val_ingest.h"
#include "validate/val_plan.h"
#include "validate/val_plan_build.h"
#include "validate/val_report.h"
#include "validate/val_run.h"

#define DEFAULT_DB "results/stratsim.db" /* as shown in --help; resolved by cli_results_path */

static int validate_plan(int argc, char **argv) {
  g_autofree char *model = NULL, *cluster = NULL, *strategy = NULL, *out = NULL, *dtype = NULL;
  g_autofree char *db_path = NULL, *calibration = NULL;
  int warmup = VAL_PLAN_DEFAULT_WARMUP, iterations = VAL_PLAN_DEFAULT_ITERATIONS;
  gboolean no_profiles = FALSE;
  GOptionEntry entries[] = {
      {"model", 'm', 0, G_OPTION_ARG_STRING, &model, "model spec", "M"},
      {"cluster", 'c', 0, G_OPTION_ARG_STRING, &cluster, "cluster spec or JSON file (validate host-cluster writes one of this machine)", "C"},
      {"strategy", 's', 0, G_OPTION_ARG_STRING, &strategy, "strategy spec (default dp)", "S"},
      {"dtype", 0, 0, G_OPTION_ARG_STRING, &dtype, "override the strategy's dtype: fp32, tf32, fp16, bf16", "T"},
      {"warmup", 0, 0, G_OPTION_ARG_INT, &warmup, "warm-up iterations the runner does (default 3)", "N"},
      {"iterations", 0, 0, G_OPTION_ARG_INT, &iterations, "timed iterations (default 10)", "N"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &out, "write the plan here (default: stdout)", "FILE"},
      {"db", 0, 0, G_OPTION_ARG_FILENAME, &db_path, "database with measured kernel times (default results/stratsim.db)", "FILE"},
      {"no-profiles", 0, 0, G_OPTION_ARG_NONE, &no_profiles, "ignore measured kernel times", NULL},
      {"calibration", 0, 0, G_OPTION_ARG_STRING, &calibration, "collective calibration NAME in the database", "NAME"},
      {NULL}};
  if (!cli_parse_options("validate plan", "Writes the per-rank plan of one iteration (validate/PLAN.md).",
                         entries, &argc, &argv))
    return CLI_EXIT_BAD_INPUT;
  if (!model || !cluster) {
    fprintf(stderr, "stratsim validate plan: --model and --cluster are required\n");
    return CLI_EXIT_BAD_INPUT;
  }
  g_autofree char *default_db = cli_results_path("stratsim.db"); /* cli_outputs.h */
  ValPlanRequest req = {.model_spec = model, .cluster_spec = cluster, .strategy_spec = strategy,
                        .dtype = dtype, .warmup = warmup, .iterations = iterations,
                        .db_path = db_path ? db_path : default_db,
                        .calibration = calibration, .no_profiles = no_profiles};
  GError *error = NULL;
  ValPlanSummary sum;
  g_autofree char *text = val_plan_make(&req, &sum, &error);
  if (!text) return cli_fail(error, cli_status_for(error));
  if (!out) {
    printf("%s\n", text);
    return CLI_EXIT_OK;
  }
  if (!g_file_set_contents(out, text, -1, &error)) return cli_fail(error, cli_status_for(error));
  printf("validate plan: %s: %d ranks, %" G_GUINT64_FORMAT " steps (%" G_GUINT64_FORMAT
         " gemm, %" G_GUINT64_FORMAT " elementwise, %" G_GUINT64_FORMAT " collectives in %d groups, %"
         G_GUINT64_FORMAT " transfers), predicted iteration %.6g s (%d measured kernel times); "
         "microbenchmarks: %u ops, %u collectives\n",
         out, sum.ranks, sum.steps, sum.gemms, sum.elementwise, sum.collectives, sum.groups,
         sum.transfers, sum.iteration_time_s, sum.profiled_kernels, sum.microbench_ops,
         sum.microbench_collectives);
  return CLI_EXIT_OK;
}

/* A directory for a run's files: @given, else results/validate/run-DATE-PID. */
static char *run_dir(const char *given, GError **error) {
  g_autoptr(GDateTime) now = g_date_time_new_now_utc();
  g_autofree char *stamp = g_date_time_format(now, "%Y%m%d-%H%M%S");
  char *dir = given ? g_strdup(given)
                    : g_strdup_printf("results/validate/run-%s-%d", stamp, (int)getpid());
  if (g_mkdir_with_parents(dir, 0755) != 0) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "cannot create directory %s", dir);
    g_free(dir);
    return NULL;
  }
  return dir;
}

static void print_ingest(const char *what, const ValIngestResult *r, const char *db_path) {
  if (r->existing)
    printf("%s: already stored as validate run %" G_GINT64_FORMAT " in %s (same plan and "
           "measurements): nothing added\n", what, r->id, db_path);
  else
    printf("%s: stored validate run %" G_GINT64_FORMAT " in %s: %u steps (%u measured)%s\n", what,
           r->id, db_path, r->steps, r->measured_steps,
           r->profiles_stored > 0 ? ", kernel profiles imported" : "");
  printf("%s: predicted %.6g s, measured %.6g s, error %+.1f%%\n", what, r->predicted_s,
         r->measured_s, r->error_pct);
}

static int validate_run(int argc, char **argv) {
  g_autofree char *model = NULL, *cluster = NULL, *strategy = NULL, *dtype = NULL;
  g_autofree char *plan_path = NULL, *dir = NULL, *db_path = NULL, *runner_name = NULL;
  g_autofree char *calibration = NULL;
  int warmup = VAL_PLAN_DEFAULT_WARMUP, iterations = VAL_PLAN_DEFAULT_ITERATIONS;
  gboolean no_profiles = FALSE, import_profiles = FALSE;
  GOptionEntry entries[] = {
      {"model", 'm', 0, G_OPTION_ARG_STRING, &model, "model spec", "M"},
      {"cluster", 'c', 0, G_OPTION_ARG_STRING, &cluster, "cluster spec or JSON file (for the CPU runner: validate host-cluster's file)", "C"},
      {"strategy", 's', 0, G_OPTION_ARG_STRING, &strategy, "strategy spec (default dp)", "S"},
      {"dtype", 0, 0, G_OPTION_ARG_STRING, &dtype, "override the strategy's dtype", "T"},
      {"warmup", 0, 0, G_OPTION_ARG_INT, &warmup, "warm-up iterations (default 3)", "N"},
      {"iterations", 0, 0, G_OPTION_ARG_INT, &iterations, "timed iterations (default 10)", "N"},
      {"plan", 0, 0, G_OPTION_ARG_FILENAME, &plan_path, "run this plan instead of making one", "FILE"},
      {"runner", 0, 0, G_OPTION_ARG_STRING, &runner_name, "cpu (mpirun stratsim-cpu-runner, default) or gpu (stratsim-runner)", "cpu|gpu"},
      {"dir", 0, 0, G_OPTION_ARG_FILENAME, &dir, "where plan.json and measurements.json go (default results/validate/run-DATE-PID)", "DIR"},
      {"db", 0, 0, G_OPTION_ARG_FILENAME, &db_path, "SQLite database (default results/stratsim.db)", "FILE"},
      {"no-profiles", 0, 0, G_OPTION_ARG_NONE, &no_profiles, "plan with the roofline only (ignore measured kernel times)", NULL},
      {"calibration", 0, 0, G_OPTION_ARG_STRING, &calibration, "collective calibration NAME for the plan's predictions", "NAME"},
      {"import-profiles", 0, 0, G_OPTION_ARG_NONE, &import_profiles, "also store the runner's kernel micro-benchmarks as profiles", NULL},
      {NULL}};
  if (!cli_parse_options("validate run", "Plans a strategy, runs it with a runner, stores and "
                         "compares the measurements.", entries, &argc, &argv))
    return CLI_EXIT_BAD_INPUT;
  GError *error = NULL;
  ValRunner runner;
  if (!val_runner_parse(runner_name, &runner, &error)) return cli_fail(error, cli_status_for(error));
  if (!plan_path && (!model || !cluster)) {
    fprintf(stderr, "stratsim validate run: --model and --cluster are required (or --plan FILE)\n");
    return CLI_EXIT_BAD_INPUT;
  }
  if (!db_path) db_path = cli_results_path("stratsim.db"); /* cli_outputs.h */
  g_autofree char *where = run_dir(dir, &error);
  if (!where) return cli_fail(error, cli_status_for(error));
  g_autofree char *plan_file = plan_path ? g_strdup(plan_path) : g_build_filename(where, "plan.json", NULL);
  g_autofree char *measurements = g_build_filename(where, "measurements.json", NULL);
  if (!plan_path) {
    g_autofree char *default_db = cli_results_path("stratsim.db"); /* cli_outputs.h */
  ValPlanRequest req = {.model_spec = model, .cluster_spec = cluster, .strategy_spec = strategy,
                          .dtype = dtype, .warmup = warmup, .iterations = iterations,
                          .db_path = db_path, .calibration = calibration,
                          .no_profiles = no_profiles};
    ValPlanSummary sum;
    g_autofree char *text = val_plan_make(&req, &sum, &error);
    if (!text) return cli_fail(error, cli_status_for(error));
    if (!g_file_set_contents(plan_file, text, -1, &error)) return cli_fail(error, cli_status_for(error));
    printf("validate run: plan %s: %d ranks, %" G_GUINT64_FORMAT " steps, predicted iteration "
           "%.6g s (%d measured kernel times)\n", plan_file, sum.ranks, sum.steps,
           sum.iteration_time_s, sum.profiled_kernels);
  }
  ValPlan *plan = val_plan_read(plan_file, &error);
  if (!plan) return cli_fail(error, cli_status_for(error));
  int ranks = plan->ranks;
  val_plan_free(plan);
  g_autofree char *output = NULL;
  if (!val_run_runner(runner, plan_file, ranks, measurements, FALSE, &output, &error))
    return cli_fail(error, cli_status_for(error));
  if (output) fputs(output, stdout);
  ValIngestResult result;
  if (!val_ingest_files(db_path, plan_file, measurements, import_profiles, &result, &error))
    return cli_fail(error, cli_status_for(error));
  print_ingest("validate run", &result, db_path);
  return CLI_EXIT_OK;
}

static int validate_ingest(int argc, char **argv) {
  g_autofree char *plan = NULL, *db_path = NULL;
  gboolean import_profiles = FALSE;
  GOptionEntry entries[] = {
      {"plan", 'p', 0, G_OPTION_ARG_FILENAME, &plan, "the plan the measurements ran (required)", "FILE"},
      {"db", 0, 0, G_OPTION_ARG_FILENAME, &db_path, "SQLite database (default results/stratsim.db)", "FILE"},
      {"import-profiles", 0, 0, G_OPTION_ARG_NONE, &import_profiles, "also store the runner's kernel micro-benchmarks as profiles", NULL},
      {NULL}};
  GOptionContext *ctx = g_option_context_new("MEASUREMENTS.json");
  g_option_context_add_main_entries(ctx, entries, NULL);
  GError *error = NULL;
  gboolean ok = g_option_context_parse(ctx, &argc, &argv, &error);
  g_option_context_free(ctx);
  if (!ok) {
    fprintf(stderr, "stratsim validate ingest: %s\n", error->message);
    g_error_free(error);
    return CLI_EXIT_BAD_INPUT;
  }
  if (!plan || argc != 2) {
    fprintf(stderr, "stratsim validate ingest: say --plan PLAN.json MEASUREMENTS.json\n");
    return CLI_EXIT_BAD_INPUT;
  }
  if (!db_path) db_path = cli_results_path("stratsim.db"); /* cli_outputs.h */
  ValIngestResult result;
  if (!val_ingest_files(db_path, plan, argv[1], import_profiles, &result, &error)) {
    /* A file that is not there is bad input; one that cannot be read, a failure. */
    return cli_fail(error, cli_status_for(error));
  }
  print_ingest("validate ingest", &result, db_path);
  return CLI_EXIT_OK;
}

static int validate_report(int argc, char **argv) {
  g_autofree char *db_path = NULL, *format_name = NULL, *chart = NULL;
  GOptionEntry entries[] = {
      {"db", 0, 0, G_OPTION_ARG_FILENAME, &db_path, "SQLite database (default results/stratsim.db)", "FILE"},
      {"format", 'f', 0, G_OPTION_ARG_STRING, &format_name, "text (default), csv or json", "F"},
      {"chart", 0, 0, G_OPTION_ARG_FILENAME, &chart, "write the predicted-vs-measured scatter chart (gnuplot) into DIR", "DIR"},
      {NULL}};
  if (!cli_parse_options("validate report", "Predicted against measured iteration times, per-op "
                         "errors and the rank correlation over strategies.", entries, &argc, &argv))
    return CLI_EXIT_BAD_INPUT;
  GError *error = NULL;
  ValReportFormat format = VAL_REPORT_TEXT;
  if (format_name && !val_report_format_parse(format_name, &format, &error))
    return cli_fail(error, cli_status_for(error));
  if (!db_path) db_path = cli_results_path("stratsim.db"); /* cli_outputs.h */
  if (!val_report_print(db_path, format, stdout, &error)) return cli_fail(error, cli_status_for(error));
  if (chart) {
    gboolean drawn = FALSE;
    if (!val_report_chart(db_path, chart, &drawn, &error)) return cli_fail(error, cli_status_for(error));
    /* Keep stdout machine-readable for csv and json. */
    fprintf(format == VAL_REPORT_TEXT ? stdout : stderr,
            "chart: %s/validate.gp and validate.dat%s\n", chart,
            drawn ? ", drawn as validate.png and validate.svg" : " (gnuplot not found: not drawn)");
  }
  return CLI_EXIT_OK;
}

static int validate_host_cluster(int argc, char **argv) {
  g_autofree char *out = NULL;
  int ranks = 2;
  GOptionEntry entries[] = {
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &out, "write the cluster JSON here (required)", "FILE"},
      {"ranks", 'n', 0, G_OPTION_ARG_INT, &ranks, "MPI ranks, one per device (default 2)", "N"},
      {NULL}};
  if (!cli_parse_options("validate host-cluster", "Measures this machine with stratsim-cpu-runner "
                         "and writes it as a cluster JSON file.", entries, &argc, &argv))
    return CLI_EXIT_BAD_INPUT;
  if (!out) {
    fprintf(stderr, "stratsim validate host-cluster: -o FILE is required\n");
    return CLI_EXIT_BAD_INPUT;
  }
  GError *error = NULL;
  g_autofree char *output = NULL;
  if (!val_host_cluster(out, ranks, &output, &error)) return cli_fail(error, cli_status_for(error));
  if (output) fputs(output, stdout);
  return CLI_EXIT_OK;
}

int cli_validate(int argc, char **argv) {
  const char *verb = argc > 1 ? argv[1] : "";
  if (strcmp(verb, "plan") == 0) return validate_plan(argc - 1, argv + 1);
  if (strcmp(verb, "run") == 0) return validate_run(argc - 1, argv + 1);
  if (strcmp(verb, "ingest") == 0) return validate_ingest(argc - 1, argv + 1);
  if (strcmp(verb, "report") == 0) return validate_report(argc - 1, argv + 1);
  if (strcmp(verb, "host-cluster") == 0) return validate_host_cluster(argc - 1, argv + 1);
  fprintf(stderr, "stratsim validate: say plan, run, ingest, report or host-cluster%s%s%s\n",
          *verb ? " (not '" : "", verb, *verb ? "')" : "");
  return CLI_EXIT_BAD_INPUT;
}

int cli_profile(int argc, char **argv) {
  g_autofree char *model = NULL, *cluster = NULL, *strategy = NULL, *dtype = NULL;
  g_autofree char *dir = NULL, *db_path = NULL, *runner_name = NULL;
  GOptionEntry entries[] = {
      {"model", 'm', 0, G_OPTION_ARG_STRING, &model, "model spec", "M"},
      {"cluster", 'c', 0, G_OPTION_ARG_STRING, &cluster, "cluster spec or JSON file (its device kind keys the profiles)", "C"},
      {"strategy", 's', 0, G_OPTION_ARG_STRING, &strategy, "strategy spec (default dp): which local op shapes", "S"},
      {"dtype", 0, 0, G_OPTION_ARG_STRING, &dtype, "override the strategy's dtype", "T"},
      {"runner", 0, 0, G_OPTION_ARG_STRING, &runner_name, "cpu (default) or gpu", "cpu|gpu"},
      {"dir", 0, 0, G_OPTION_ARG_FILENAME, &dir, "where plan.json and microbench.json go", "DIR"},
      {"db", 0, 0, G_OPTION_ARG_FILENAME, &db_path, "SQLite database (default results/stratsim.db)", "FILE"},
      {NULL}};
  if (!cli_parse_options("profile", "Measures the op kernels of a model under a strategy with a "
                         "runner and stores them as profiles.", entries, &argc, &argv))
    return CLI_EXIT_BAD_INPUT;
  GError *error = NULL;
  ValRunner runner;
  if (!val_runner_parse(runner_name, &runner, &error)) return cli_fail(error, cli_status_for(error));
  if (!model || !cluster) {
    fprintf(stderr, "stratsim profile: --model and --cluster are required\n");
    return CLI_EXIT_BAD_INPUT;
  }
  if (!db_path) db_path = cli_results_path("stratsim.db"); /* cli_outputs.h */
  g_autofree char *where = run_dir(dir, &error);
  if (!where) return cli_fail(error, cli_status_for(error));
  g_autofree char *plan_file = g_build_filename(where, "plan.json", NULL);
  g_autofree char *measurements = g_build_filename(where, "microbench.json", NULL);
  /* Shapes do not depend on measured times: plan with the roofline. */
  g_autofree char *default_db = cli_results_path("stratsim.db"); /* cli_outputs.h */
  ValPlanRequest req = {.model_spec = model, .cluster_spec = cluster, .strategy_spec = strategy,
                        .dtype = dtype, .warmup = 1, .iterations = 1};
  ValPlanSummary sum;
  g_autofree char *text = val_plan_make(&req, &sum, &error);
  if (!text) return cli_fail(error, cli_status_for(error));
  if (!g_file_set_contents(plan_file, text, -1, &error)) return cli_fail(error, cli_status_for(error));
  if (!val_run_runner(runner, plan_file, sum.ranks, measurements, TRUE, NULL, &error))
    return cli_fail(error, cli_status_for(error));
  g_autofree char *device = NULL;
  gint64 n = val_import_profiles(db_path, measurements, &device, &error);
  if (n < 0) return cli_fail(error, cli_status_for(error));
  printf("profile: stored %" G_GINT64_FORMAT " measured kernel times of %s in %s (from %s; %u "
         "collectives measured there too)\n", n, device ? device : "?", db_path, measurements,
         sum.microbench_collectives);
  return CLI_EXIT_OK;
}
