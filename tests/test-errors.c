/* errors — the one classification of error codes into bad input (exit 2) and failure (exit 1)
 * (errors/err_status.h), and the CLI using it. */
#include <glib.h>

#include "costmodel/cm_calibrate.h"
#include "devices/dev_cluster.h"
#include "errors/err_status.h"
#include "model/mdl_graph.h"
#include "results/res_db.h"
#include "scenarios/scn_scenario.h"
#include "search/srch_space.h"
#include "session/ses_session.h"
#include "sim/sim.h"
#include "test-cli-util.h"
#include "util/util_gnuplot.h"
#include "validate/val_ingest.h"
#include "validate/val_plan.h"
#include "validate/val_plan_build.h"
#include "validate/val_report.h"
#include "validate/val_run.h"

typedef struct {
  const char *name;
  GQuark (*domain)(void);
  int code;
  ErrClass expect;
} Case;

#define B ERR_CLASS_BAD_INPUT
#define F ERR_CLASS_FAILURE

static const Case cases[] = {
    {"dev/unknown-preset", dev_error_quark, DEV_ERROR_UNKNOWN_PRESET, B},
    {"dev/unknown-device", dev_error_quark, DEV_ERROR_UNKNOWN_DEVICE, B},
    {"dev/parse", dev_error_quark, DEV_ERROR_PARSE, B},
    {"dev/invalid", dev_error_quark, DEV_ERROR_INVALID, B},
    {"mdl/unknown-model", mdl_error_quark, MDL_ERROR_UNKNOWN_MODEL, B},
    {"mdl/parse", mdl_error_quark, MDL_ERROR_PARSE, B},
    {"mdl/invalid", mdl_error_quark, MDL_ERROR_INVALID, B},
    {"mdl/strategy", mdl_error_quark, MDL_ERROR_STRATEGY, B},
    {"cm/parse", cm_error_quark, CM_ERROR_PARSE, B},
    {"cm/invalid", cm_error_quark, CM_ERROR_INVALID, B},
    {"cm/unknown-kind", cm_error_quark, CM_ERROR_UNKNOWN_KIND, B},
    {"sim/cycle", sim_error_quark, SIM_ERROR_CYCLE, F},
    {"srch/space", srch_error_quark, SRCH_ERROR_SPACE, B},
    {"srch/option", srch_error_quark, SRCH_ERROR_OPTION, B},
    {"srch/failed", srch_error_quark, SRCH_ERROR_FAILED, F},
    {"res/open", res_error_quark, RES_ERROR_OPEN, B},
    {"res/schema", res_error_quark, RES_ERROR_SCHEMA, B},
    {"res/write", res_error_quark, RES_ERROR_WRITE, F},
    {"res/not-found", res_error_quark, RES_ERROR_NOT_FOUND, B},
    {"ses/input", ses_error_quark, SES_ERROR_INPUT, B},
    {"ses/read-only", ses_error_quark, SES_ERROR_READ_ONLY, B},
    {"scn/parse", scn_error_quark, SCN_ERROR_PARSE, B},
    {"scn/invalid", scn_error_quark, SCN_ERROR_INVALID, B},
    {"scn/not-found", scn_error_quark, SCN_ERROR_NOT_FOUND, B},
    {"util/gnuplot", util_error_quark, UTIL_ERROR_GNUPLOT, F},
    {"val-build/input", val_build_error_quark, VAL_BUILD_ERROR_INPUT, B},
    {"val-build/failed", val_build_error_quark, VAL_BUILD_ERROR_FAILED, F},
    {"val-plan/input", val_plan_error_quark, VAL_PLAN_ERROR_INPUT, B},
    {"val-plan/io", val_plan_error_quark, VAL_PLAN_ERROR_IO, F},
    {"val-ingest/input", val_ingest_error_quark, VAL_INGEST_ERROR_INPUT, B},
    {"val-ingest/io", val_ingest_error_quark, VAL_INGEST_ERROR_IO, F},
    {"val-report/empty", val_report_error_quark, VAL_REPORT_ERROR_EMPTY, B},
    {"val-report/format", val_report_error_quark, VAL_REPORT_ERROR_FORMAT, B},
    {"val-run/missing", val_run_error_quark, VAL_RUN_ERROR_MISSING, F},
    {"val-run/input", val_run_error_quark, VAL_RUN_ERROR_INPUT, B},
    {"val-run/failed", val_run_error_quark, VAL_RUN_ERROR_FAILED, F},
    {"file/noent", g_file_error_quark, G_FILE_ERROR_NOENT, B},
    {"file/access", g_file_error_quark, G_FILE_ERROR_ACCES, B},
    {"file/isdir", g_file_error_quark, G_FILE_ERROR_ISDIR, B},
    {"file/notdir", g_file_error_quark, G_FILE_ERROR_NOTDIR, B},
    {"file/io", g_file_error_quark, G_FILE_ERROR_IO, F},
    {"file/nospc", g_file_error_quark, G_FILE_ERROR_NOSPC, F},
    {"option/bad-value", g_option_error_quark, G_OPTION_ERROR_BAD_VALUE, B},
};

static void test_case(gconstpointer data) {
  const Case *c = data;
  GError *error = g_error_new_literal(c->domain(), c->code, "test");
  g_assert_cmpint(err_classify(error), ==, c->expect);
  g_assert_cmpint(err_exit_status(error), ==, c->expect == B ? ERR_EXIT_BAD_INPUT : ERR_EXIT_FAILURE);
  g_error_free(error);
}

/* NULL, a domain nobody classified and a code past a domain's last one: failures. */
static void test_unknown(void) {
  g_assert_cmpint(err_exit_status(NULL), ==, ERR_EXIT_FAILURE);
  GError *error = g_error_new_literal(g_quark_from_static_string("test-unknown-domain"), 0, "x");
  g_assert_cmpint(err_exit_status(error), ==, ERR_EXIT_FAILURE);
  g_error_free(error);
  error = g_error_new_literal(DEV_ERROR, 99, "x");
  g_assert_cmpint(err_exit_status(error), ==, ERR_EXIT_FAILURE);
  g_error_free(error);
  error = g_error_new_literal(DEV_ERROR, -1, "x");
  g_assert_cmpint(err_exit_status(error), ==, ERR_EXIT_FAILURE);
  g_error_free(error);
}

/* The CLI's exit statuses come from the classification: a bad spec 2, a bad calibration name 2,
 * a trace path that is a directory 2. */
static void test_cli_statuses(void) {
  g_autofree char *dir = g_dir_make_tmp("stratsim-errors-XXXXXX", NULL);
  struct {
    const char *args;
    int status;
  } runs[] = {
      {"simulate -m nosuchmodel -c dgx-a100 --no-store", 2},
      {"simulate -m mlp -c nosuchcluster --no-store", 2},
      {"simulate -m mlp -c dgx-a100 -s megatron:tp=3 --no-store", 2},
      {"simulate -m mlp -c dgx-a100 --calibration nope --db none.db", 2},
      {"explain -m mlp -c dgx-a100 -s nosuch", 2},
      {"search -m mlp -c dgx-a100 --budget 5 --no-store --algo nosuch", 2},
      /* An explicit 0 is refused, not read as the default (the library's meaning of 0). */
      {"search -m mlp -c dgx-a100 --budget 5 --no-store --mesh-axes 0", 2},
      {"search -m mlp -c dgx-a100 --budget 5 --no-store --microbatches 0", 2},
      {"search -m mlp -c dgx-a100 --budget 5 --no-store --restarts 0", 2},
      {"search -m mlp -c dgx-a100 --budget 5 --no-store --beta 0", 2},
      {"bench --suite search --seconds 0", 2},
      {"collective -k all_reduce -b 1M -r 2 -c nosuch", 2},
      /* The trace's path is a directory: refused before the work as bad input (issue 17,
       * item 1: output paths are checked first). */
      {"simulate -m mlp -c dgx-a100 --no-store --trace .", 2},
      /* A search that finds nothing fitting: printed (and stored), then one line why, exit 1. */
      {"search -m llama3.1-405b -c dgx-a100 --algo grid --no-store", 1},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(runs); i++) {
    TestCliResult r = test_cli_run(dir, runs[i].args);
    g_test_message("%s: %d %s", runs[i].args, r.status, r.err);
    g_assert_cmpint(r.status, ==, runs[i].status);
    g_assert_true(g_str_has_prefix(r.err, "stratsim"));
    if (runs[i].status == 1) /* the search's reason, its last line */
      g_assert_nonnull(strstr(r.err, "stratsim search: no strategy of the space fits in memory"));
    test_cli_result_clear(&r);
  }
  /* Nothing of the above created a database. */
  g_autofree char *db = g_build_filename(dir, "none.db", NULL);
  g_assert_false(g_file_test(db, G_FILE_TEST_EXISTS));
  test_remove_tree(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *path = g_strdup_printf("/errors/class/%s", cases[i].name);
    g_test_add_data_func(path, &cases[i], test_case);
  }
  g_test_add_func("/errors/unknown", test_unknown);
  g_test_add_func("/errors/cli-statuses", test_cli_statuses);
  return g_test_run();
}
