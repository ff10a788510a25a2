/* Tests of scenarios/reshard: the shipped Table 2 file (the cross-mesh resharding paper's
 * ordering of methods), bad reshard files refused with one line, and the CLI. */
#include <glib.h>
#include <string.h>

#include "scenarios/scn_chart.h"
#include "scenarios/scn_reshard.h"
#include "test-cli-util.h"

static char *tmpdir;

static char *tmp_path(const char *name) { return g_build_filename(tmpdir, name, NULL); }

/* The shipped Table 2 file: nine cases, their unit counts, Fig. 6's ordering AlpaComm <= Alpa
 * <= Send/Recv in every case, and the grouped bar chart's files. */
static void test_reshard_table2(void) {
  g_autofree char *path = g_build_filename(STRATSIM_SOURCE_DIR, "scenarios", "crossmesh-table2",
                                           "table2.json", NULL);
  GError *error = NULL;
  ScnReshard *r = scn_reshard_load(path, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(r->cases->len, ==, 9);
  g_assert_cmpuint(r->methods->len, ==, 4);
  GPtrArray *rows = scn_reshard_run(r, &error);
  g_assert_no_error(error);
  static const int units[] = {2, 2, 4, 64, 4, 4, 4, 1, 4};
  for (guint i = 0; i < rows->len; i++) {
    const ScnReshardRow *row = g_ptr_array_index(rows, i);
    g_assert_cmpint(row->units, ==, units[i]);
    /* methods: Send/Recv, Alpa, local all-gather, AlpaComm */
    g_assert_cmpfloat(row->seconds[3], <=, row->seconds[1]);
    g_assert_cmpfloat(row->seconds[1], <=, row->seconds[0]);
    for (guint k = 0; k < r->methods->len; k++)
      g_assert_cmpfloat(row->seconds[k], <=, row->cost[k] * (1 + 1e-9));
  }
  g_autofree char *out = tmp_path("reshard-out");
  ScnChartOutcome o;
  scn_chart_outcome_init(&o);
  g_assert_true(scn_reshard_chart(r, rows, out, "table2", SCN_FORMAT_PNG, &o, &error));
  g_assert_no_error(error);
  g_autofree char *dat = g_build_filename(out, "table2.dat", NULL);
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(dat, &text, NULL, NULL));
  g_assert_true(g_str_has_prefix(text, "# stratsim reshard crossmesh-table2: seconds per move\n"
                                       "# case Send/Recv Alpa local_all-gather AlpaComm units\n\"1\" "));
  guint lines = 0;
  for (const char *c = text; *c; c++) lines += *c == '\n';
  g_assert_cmpuint(lines, ==, 2 + 9);
  g_autofree char *gnuplot = g_find_program_in_path("gnuplot");
  g_autofree char *png = g_build_filename(out, "table2.png", NULL);
  if (gnuplot) g_assert_true(g_file_test(png, G_FILE_TEST_IS_REGULAR));
  else g_assert_true(o.gnuplot_missing);
  scn_chart_outcome_clear(&o);
  g_ptr_array_unref(rows);
  scn_reshard_free(r);
}

typedef struct {
  const char *json;
  const char *needle;
} BadReshard;

#define RESHARD_HEAD "{\"name\": \"r\", \"kind\": \"reshard\", \"cluster\": \"aws-p3.8xlarge\", \"tensor\": [8, 8], "
#define RESHARD_CASE "\"cases\": [{\"label\": \"1\", \"src_mesh\": [1, 2], \"dst_mesh\": [1, 2], \"src\": \"S0R\", \"dst\": \"RS0\"}]"
#define RESHARD_METHOD "\"methods\": [{\"label\": \"m\", \"method\": \"broadcast\", \"order\": \"greedy\"}]"

static const BadReshard bad_reshards[] = {
    {RESHARD_HEAD RESHARD_CASE ", " RESHARD_METHOD ", \"dtype\": 2}", "unknown field \"dtype\""},
    {RESHARD_HEAD RESHARD_METHOD "}", "\"cases\" must be a non-empty array"},
    {RESHARD_HEAD RESHARD_CASE "}", "\"methods\" must be a non-empty array"},
    {RESHARD_HEAD "\"cases\": [{\"label\": \"1\", \"src_mesh\": [1, 2], \"dst_mesh\": [1, 2], \"src\": \"S0RR\", \"dst\": \"RS0\"}], "
     RESHARD_METHOD "}", "'S0RR' has 3 tensor dims, the tensor 2"},
    {RESHARD_HEAD "\"cases\": [{\"label\": \"1\", \"src_mesh\": [1, 2], \"dst_mesh\": [1, 2], \"src\": \"S2R\", \"dst\": \"RS0\"}], "
     RESHARD_METHOD "}", "outside the mesh"},
    {RESHARD_HEAD "\"cases\": [{\"label\": \"1\", \"src_mesh\": [0, 2], \"dst_mesh\": [1, 2], \"src\": \"S0R\", \"dst\": \"RS0\"}], "
     RESHARD_METHOD "}", "\"src_mesh\" must be [hosts, GPUs per host]"},
    {RESHARD_HEAD RESHARD_CASE ", \"methods\": [{\"label\": \"m\", \"method\": \"carrier-pigeon\", \"order\": \"greedy\"}]}",
     "method 'carrier-pigeon'"},
    {RESHARD_HEAD RESHARD_CASE ", \"methods\": [{\"label\": \"m\", \"method\": \"broadcast\", \"order\": \"best\"}]}",
     "order 'best'"},
};

static void test_reshard_kind(void) {
  GError *error = NULL;
  const char *json = "{\"name\": \"r\", \"kind\": \"sweep\", \"cluster\": \"aws-p3.8xlarge\", \"tensor\": [8], "
                     "\"cases\": [], \"methods\": []}";
  g_assert_false(scn_reshard_is(json));
  g_assert_null(scn_reshard_from_json(json, &error));
  g_assert_error(error, SCN_ERROR, SCN_ERROR_PARSE);
  g_assert_nonnull(strstr(error->message, "\"kind\" must be \"reshard\""));
  g_clear_error(&error);
}

static void test_reshard_bad(gconstpointer data) {
  const BadReshard *b = data;
  GError *error = NULL;
  g_assert_true(scn_reshard_is(b->json));
  g_assert_null(scn_reshard_from_json(b->json, &error));
  g_assert_error(error, SCN_ERROR, SCN_ERROR_PARSE);
  if (!strstr(error->message, b->needle)) g_error("'%s' lacks '%s'", error->message, b->needle);
  g_error_free(error);
}

/* `stratsim reshard` on one move, and `stratsim sweep` on a reshard file (no database). */
static void test_cli_reshard(void) {
  TestCliResult r = test_cli_run(tmpdir, "reshard --src-mesh 2x4 --src RS0R --dst-mesh 2x4 --dst S0RR --order greedy");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "RS0R -> S0RR"));
  g_assert_nonnull(strstr(r.out, "broadcast = broadcast + greedy"));
  test_cli_result_clear(&r);
  r = test_cli_run(tmpdir, "reshard --src-mesh 2x4 --src RS0R --dst-mesh 2x4 --dst S0R");
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "has 2 tensor dims"));
  test_cli_result_clear(&r);
  g_autofree char *file = g_build_filename(STRATSIM_SOURCE_DIR, "scenarios", "crossmesh-table2", "fig8.json", NULL);
  g_autofree char *out = tmp_path("fig8-out");
  g_autofree char *args = g_strdup_printf("sweep %s --out %s --no-charts", file, out);
  r = test_cli_run(tmpdir, args);
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "crossmesh-fig8"));
  g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
  test_cli_result_clear(&r);
  r = test_cli_run(tmpdir, "simulate --model mlp --cluster aws-p3.8xlarge --crossmesh pigeon");
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "--crossmesh must be"));
  test_cli_result_clear(&r);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp("stratsim-reshard-XXXXXX", NULL);
  g_assert_nonnull(tmpdir);
  g_test_add_func("/scn/reshard/table2", test_reshard_table2);
  for (guint i = 0; i < G_N_ELEMENTS(bad_reshards); i++) {
    g_autofree char *path = g_strdup_printf("/scn/reshard/bad/%u", i);
    g_test_add_data_func(path, &bad_reshards[i], test_reshard_bad);
  }
  g_test_add_func("/scn/reshard/kind", test_reshard_kind);
  g_test_add_func("/scn/cli/reshard", test_cli_reshard);
  int status = g_test_run();
  test_remove_tree(tmpdir);
  g_free(tmpdir);
  return status;
}
