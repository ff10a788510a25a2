/* Tests of scenarios/scenario and scenarios/template: expansion of axes (count, order, keys,
 * errors), placeholder expressions, and run options reaching the points. */
#include <glib.h>
#include <string.h>

#include "scenarios/scn_scenario.h"
#include "scenarios/scn_sweep.h"
#include "sim/sim_crossmesh.h"
#include "test-cli-util.h"
#include "test-scn-util.h"

static char *tmpdir;

/* --- expansion ----------------------------------------------------------------------------- */

static void test_expand_count_order(void) {
  /* Two models x one cluster x two strategies x nodes(3) x tp(2); "dp" does not use tp, so it
   * is one point per node count: 2 * (3 + 3 * 2) = 18. */
  ScnScenario *sc = parse_ok(
      "{\"name\": \"t\", \"models\": [\"gpt3-125m:batch={8*nodes}\", {\"spec\": \"mlp\", \"label\": \"MLP\"}],"
      " \"cluster\": \"dgx-a100:nodes={nodes}\","
      " \"strategies\": [\"dp\", {\"spec\": \"megatron:tp={tp}\", \"label\": \"tp={tp}\"}],"
      " \"axes\": {\"nodes\": [1, 2, 4], \"tp\": [2, 4]}}");
  GPtrArray *points = expand_ok(sc);
  g_assert_cmpuint(points->len, ==, 18);
  /* Models outermost, then clusters, strategies, the first axis slowest. */
  g_assert_cmpstr(point_at(points, 0)->model, ==, "gpt3-125m:batch=8");
  g_assert_cmpstr(point_at(points, 0)->cluster, ==, "dgx-a100:nodes=1");
  g_assert_cmpstr(point_at(points, 0)->strategy, ==, "dp");
  g_assert_cmpstr(point_at(points, 1)->model, ==, "gpt3-125m:batch=16");
  g_assert_cmpstr(point_at(points, 2)->cluster, ==, "dgx-a100:nodes=4");
  g_assert_cmpstr(point_at(points, 3)->strategy, ==, "megatron:tp=2");
  g_assert_cmpstr(point_at(points, 3)->cluster, ==, "dgx-a100:nodes=1");
  g_assert_cmpstr(point_at(points, 4)->strategy, ==, "megatron:tp=4");
  g_assert_cmpstr(point_at(points, 4)->strategy_label, ==, "tp=4");
  g_assert_cmpstr(point_at(points, 5)->cluster, ==, "dgx-a100:nodes=2");
  g_assert_cmpstr(point_at(points, 9)->model, ==, "mlp");
  g_assert_cmpstr(point_at(points, 9)->model_label, ==, "MLP");
  /* Axis values: only the variables the point's templates use. */
  g_assert_cmpstr(point_at(points, 0)->axes_json, ==, "{\"nodes\":1}");
  g_assert_cmpstr(point_at(points, 4)->axes_json, ==, "{\"nodes\":1,\"tp\":4}");
  g_assert_null(scn_point_value(point_at(points, 0), "tp"));
  /* Keys: distinct, the SHA-256 of the canonical text, stable across parses. */
  GHashTable *keys = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < points->len; i++) {
    const ScnPoint *p = point_at(points, i);
    g_assert_cmpuint(p->index, ==, i);
    g_assert_false(g_hash_table_contains(keys, p->key));
    g_hash_table_add(keys, p->key);
    g_autofree char *canonical = scn_point_canonical(sc, p->model, p->cluster, p->strategy);
    g_autofree char *sha = g_compute_checksum_for_string(G_CHECKSUM_SHA256, canonical, -1);
    g_assert_cmpstr(p->key, ==, sha);
  }
  g_hash_table_destroy(keys);
  /* Same specs in another file layout: same keys. */
  ScnScenario *again = parse_ok(
      "{\"name\":\"t\",\"axes\":{\"nodes\":[1,2,4],\"tp\":[2,4]},\"strategies\":[\"dp\","
      "{\"label\":\"other label\",\"spec\":\"megatron:tp={tp}\"}],\"cluster\":\"dgx-a100:nodes={nodes}\","
      "\"models\":[\"gpt3-125m:batch={8*nodes}\",\"mlp\"]}");
  GPtrArray *points2 = expand_ok(again);
  for (guint i = 0; i < points->len; i++) g_assert_cmpstr(point_at(points, i)->key, ==, point_at(points2, i)->key);
  g_ptr_array_free(points2, TRUE);
  scn_scenario_free(again);
  g_ptr_array_free(points, TRUE);
  scn_scenario_free(sc);
}

static void test_expand_zipped_and_expressions(void) {
  ScnScenario *sc = parse_ok(
      "{\"name\": \"z\", \"model\": \"gpt:layers={layers},hidden=256,heads=4,seq=64,vocab=100,batch={(nodes+2)*4/2}\","
      " \"cluster\": \"piz-daint:nodes={nodes},inter_bw_Gbps={bw}\", \"strategy\": \"dp\","
      " \"axes\": {\"scale\": [{\"nodes\": 2, \"layers\": 4}, {\"nodes\": 4, \"layers\": 8}], \"bw\": [10, 12.5]},"
      " \"options\": {\"collectives\": \"step\"}}");
  GPtrArray *points = expand_ok(sc);
  g_assert_cmpuint(points->len, ==, 4);
  g_assert_cmpstr(point_at(points, 0)->model, ==, "gpt:layers=4,hidden=256,heads=4,seq=64,vocab=100,batch=8");
  g_assert_cmpstr(point_at(points, 1)->cluster, ==, "piz-daint:nodes=2,inter_bw_Gbps=12.5");
  g_assert_cmpstr(point_at(points, 2)->model, ==, "gpt:layers=8,hidden=256,heads=4,seq=64,vocab=100,batch=12");
  g_assert_cmpstr(scn_point_value(point_at(points, 3), "layers"), ==, "8");
  /* Options are part of the key. */
  g_autofree char *canonical = scn_point_canonical(sc, "a", "b", "c");
  g_assert_nonnull(strstr(canonical, "collectives=step"));
  g_ptr_array_free(points, TRUE);
  scn_scenario_free(sc);
  /* Braces escaped, string values substituted verbatim. */
  GError *error = NULL;
  ScnSetting set = {1, (char *[]){"s"}, (char *[]){"1f1b"}, (gboolean[]){FALSE}};
  g_autofree char *text = scn_substitute("x{{y}}{s}", &set, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(text, ==, "x{y}1f1b");
  g_assert_null(scn_substitute("{2*s}", &set, NULL, &error));
  g_assert_error(error, SCN_ERROR, SCN_ERROR_INVALID);
  g_clear_error(&error);
}

typedef struct {
  const char *json;
  int code;
  const char *needle;
} BadScenario;

static const BadScenario bad_scenarios[] = {
    {"[1]", SCN_ERROR_PARSE, "not a JSON object"},
    {"{\"models\": [\"mlp\"], \"clusters\": [\"dgx-a100\"], \"strategies\": [\"dp\"]}", SCN_ERROR_PARSE, "name"},
    {"{\"name\": \"x\", \"clusters\": [\"dgx-a100\"], \"strategies\": [\"dp\"]}", SCN_ERROR_PARSE, "models"},
    {"{\"name\": \"x\", \"model\": \"mlp\", \"cluster\": \"dgx-a100:nodes={n}\", \"strategy\": \"dp\"}",
     SCN_ERROR_INVALID, "no axis sets {n}"},
    {"{\"name\": \"x\", \"model\": \"mlp\", \"cluster\": \"dgx-a100\", \"strategy\": \"dp\", \"axes\": {\"n\": [1]}}",
     SCN_ERROR_INVALID, "no model, cluster or strategy uses"},
    {"{\"name\": \"x\", \"model\": \"mlp\", \"cluster\": \"dgx-a100:nodes={n/0}\", \"strategy\": \"dp\", \"axes\": {\"n\": [1]}}",
     SCN_ERROR_INVALID, "division by zero"},
    {"{\"name\": \"x\", \"model\": \"mlp\", \"cluster\": \"dgx-a100\", \"strategy\": \"dp\", \"axes\": {\"n\": []}}",
     SCN_ERROR_PARSE, "non-empty"},
    {"{\"name\": \"x\", \"model\": \"mlp\", \"cluster\": \"dgx-a100\", \"strategy\": \"dp\", \"axis\": {}}",
     SCN_ERROR_PARSE, "unknown field \"axis\""},
    {"{\"name\": \"x\", \"model\": \"mlp\", \"cluster\": \"dgx-a100\", \"strategy\": \"dp\", \"outputs\": {\"charts\": [\"pie\"]}}",
     SCN_ERROR_PARSE, "unknown entry 'pie'"},
    {"{\"name\": \"x\", \"model\": \"mlp\", \"cluster\": \"dgx-a100:nodes={a}\", \"strategy\": \"dp\","
     " \"axes\": {\"a\": [1], \"z\": [{\"a\": 2}]}}", SCN_ERROR_PARSE, "set by both"},
    {"{\"name\": \"x\", \"model\": \"mlp\", \"cluster\": \"dgx-a100\", \"strategies\": [{\"search\": {\"budget\": \"60s\"}}]}",
     SCN_ERROR_INVALID, "is a time"},
    {"{\"name\": \"x\", \"model\": \"mlp\", \"cluster\": \"dgx-a100\", \"strategies\": [\"search:algo=magic\"]}",
     SCN_ERROR_INVALID, "unknown algo 'magic'"},
    {"{\"name\": \"x\", \"model\": \"mlp\", \"cluster\": \"dgx-a100\", \"strategies\": [{\"search\": {\"beta\": 3}}]}",
     SCN_ERROR_PARSE, "unknown field \"beta\""},
    {"{\"name\": \"x\", \"model\": \"mlp\", \"cluster\": \"dgx-a100\", \"strategies\": [{\"search\": {\"dims\": \"some\"}}]}",
     SCN_ERROR_INVALID, "dims=some (known: all, megatron)"},
    {"{\"name\": \"x\", \"model\": \"mlp\", \"cluster\": \"dgx-a100\", \"strategies\": [{\"search\": {\"mesh_axes\": 9}}]}",
     SCN_ERROR_INVALID, "mesh_axes=9 is not a whole number from 1 to"},
    {"{\"name\": \"x\", \"model\": \"mlp\", \"cluster\": \"dgx-a100\", \"strategies\": [\"search:followers=yes\"]}",
     SCN_ERROR_INVALID, "followers=yes (true or false)"},
    {"{\"name\": \"x\", \"model\": \"mlp\", \"cluster\": \"dgx-a100\", \"strategies\": [\"baseline:two-weird-tricks\"]}",
     SCN_ERROR_INVALID, "unknown baseline 'two-weird-tricks'"},
    {"{\"name\": \"x\", \"model\": \"mlp\", \"cluster\": \"dgx-a100\", \"strategy\": \"dp\","
     " \"outputs\": {\"throughput\": {\"zero\": 0}}}", SCN_ERROR_PARSE, "\"zero\": true or false"},
    {"{\"name\": \"x\", \"model\": \"mlp\", \"cluster\": \"dgx-a100\", \"strategy\": \"dp\","
     " \"options\": {\"crossmesh\": \"smoke\"}}", SCN_ERROR_PARSE, "options.crossmesh must be"},
    {"{\"name\": \"x\", \"model\": \"mlp\", \"cluster\": \"dgx-a100\", \"strategy\": \"dp\","
     " \"options\": {\"crossmesh_order\": 3}}", SCN_ERROR_PARSE, "options.crossmesh_order must be"},
    {"{\"name\": \"x\", \"model\": \"mlp\", \"cluster\": \"dgx-a100\", \"strategy\": \"dp\","
     " \"options\": {\"framework\": \"jax\"}}", SCN_ERROR_PARSE, "options.framework must be"},
};

static void test_expand_bad(gconstpointer data) {
  const BadScenario *b = data;
  GError *error = NULL;
  g_assert_null(scn_scenario_from_json(b->json, NULL, &error));
  g_assert_error(error, SCN_ERROR, b->code);
  if (!strstr(error->message, b->needle)) g_error("'%s' lacks '%s'", error->message, b->needle);
  g_error_free(error);
}

/* --- cross-mesh options and reshard files ---------------------------------------------------- */

/* options.crossmesh / crossmesh_order reach SimOptions and the point key; a scenario without
 * them keeps its key (no crossmesh line in the canonical text). GPT on two 4-GPU hosts with
 * Megatron pp=2: the stage-to-stage move is device-aligned, so by default it is tile by tile,
 * and with the option it is planned with the method asked for. */
static void test_options_crossmesh(void) {
  static const char *fmt =
      "{\"name\": \"cm\", \"model\": \"gpt:layers=2,hidden=256,heads=4,seq=64,vocab=100,batch=8\","
      " \"cluster\": \"aws-p3.8xlarge:nodes=2\", \"strategy\": \"megatron:tp=4,pp=2,mb=2\"%s}";
  g_autofree char *plain_json = g_strdup_printf(fmt, "");
  g_autofree char *cm_json = g_strdup_printf(
      fmt, ", \"options\": {\"crossmesh\": \"send_recv\", \"crossmesh_order\": \"greedy\"}");
  g_autofree char *order_json = g_strdup_printf(fmt, ", \"options\": {\"crossmesh_order\": \"naive\"}");
  ScnScenario *plain = parse_ok(plain_json), *cm = parse_ok(cm_json), *order = parse_ok(order_json);
  g_assert_false(plain->crossmesh);
  g_assert_true(cm->crossmesh);
  g_assert_cmpint(cm->crossmesh_method, ==, SIM_CROSSMESH_SEND_RECV);
  g_assert_cmpint(cm->crossmesh_order, ==, SIM_CROSSMESH_GREEDY);
  g_assert_true(order->crossmesh);
  g_assert_cmpint(order->crossmesh_method, ==, SIM_CROSSMESH_BROADCAST); /* the default method */
  g_autofree char *k0 = scn_point_canonical(plain, "a", "b", "c");
  g_autofree char *k1 = scn_point_canonical(cm, "a", "b", "c");
  g_autofree char *k2 = scn_point_canonical(order, "a", "b", "c");
  g_assert_null(strstr(k0, "crossmesh"));
  g_assert_cmpstr(k0, ==, "model=a\ncluster=b\nstrategy=c\ncollectives=task\nsymmetry=on\nprofiles=on\ncalibration=\n");
  g_assert_nonnull(strstr(k1, "crossmesh=send_recv,greedy\n"));
  g_assert_nonnull(strstr(k2, "crossmesh=broadcast,naive\n"));
  GPtrArray *p0 = expand_ok(plain), *p1 = expand_ok(cm);
  GError *error = NULL;
  ScnSimulation *s0 = scn_simulate(plain, point_at(p0, 0), NULL, &error);
  g_assert_no_error(error);
  ScnSimulation *s1 = scn_simulate(cm, point_at(p1, 0), NULL, &error);
  g_assert_no_error(error);
  g_assert_false(sim_run_prediction(s0->run)->crossmesh);
  g_assert_true(sim_run_prediction(s1->run)->crossmesh);
  g_assert_cmpint(sim_run_prediction(s1->run)->crossmesh_method, ==, SIM_CROSSMESH_SEND_RECV);
  g_autofree char *j1 = sim_prediction_to_json(s1->run, FALSE);
  g_assert_nonnull(strstr(j1, "\"crossmesh\":{\"method\":\"send_recv\",\"order\":\"greedy\"}"));
  /* Planning the aligned move expands the graph (no symmetry across the planned move). */
  g_assert_true(sim_run_prediction(s0->run)->symmetric);
  g_assert_false(sim_run_prediction(s1->run)->symmetric);
  g_test_message("gpt pp=2 tp=4: tile by tile %.6g s, send_recv+greedy planned %.6g s",
                 sim_run_prediction(s0->run)->iteration_time_s, sim_run_prediction(s1->run)->iteration_time_s);
  scn_simulation_free(s0);
  scn_simulation_free(s1);
  g_ptr_array_free(p0, TRUE);
  g_ptr_array_free(p1, TRUE);
  scn_scenario_free(plain);
  scn_scenario_free(cm);
  scn_scenario_free(order);
}

/* options.framework overrides every point's strategy and enters the point key: a small MLP is
 * host-bound under pytorch-eager and not without a host. */
static void test_options_framework(void) {
  static const char *fmt = "{\"name\": \"fw\", \"model\": \"mlp:layers=4,hidden=256,batch=64\","
                           " \"cluster\": \"dgx-a100\", \"strategy\": \"dp\", \"options\": "
                           "{\"framework\": \"%s\"}}";
  g_autofree char *eager_json = g_strdup_printf(fmt, "pytorch-eager");
  g_autofree char *none_json = g_strdup_printf(fmt, "none");
  ScnScenario *eager = parse_ok(eager_json), *none = parse_ok(none_json);
  g_autofree char *key = scn_point_canonical(eager, "a", "b", "c");
  g_assert_nonnull(strstr(key, "framework=pytorch-eager\n"));
  GPtrArray *pe = expand_ok(eager), *pn = expand_ok(none);
  GError *error = NULL;
  ScnSimulation *se = scn_simulate(eager, point_at(pe, 0), NULL, &error);
  g_assert_no_error(error);
  ScnSimulation *sn = scn_simulate(none, point_at(pn, 0), NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpint(se->strategy->framework, ==, MDL_FRAMEWORK_PYTORCH_EAGER);
  g_assert_cmpfloat(sim_run_prediction(sn->run)->host_bound_s, ==, 0);
  g_assert_cmpfloat(sim_run_prediction(se->run)->host_bound_s, >, 0);
  g_assert_cmpfloat(sim_run_prediction(se->run)->iteration_time_s, >,
                    sim_run_prediction(sn->run)->iteration_time_s);
  scn_simulation_free(se);
  scn_simulation_free(sn);
  g_ptr_array_free(pe, TRUE);
  g_ptr_array_free(pn, TRUE);
  scn_scenario_free(eager);
  scn_scenario_free(none);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp("stratsim-scenario-XXXXXX", NULL);
  g_assert_nonnull(tmpdir);
  g_test_add_func("/scn/expand/count-order", test_expand_count_order);
  g_test_add_func("/scn/expand/zipped-expressions", test_expand_zipped_and_expressions);
  for (gsize i = 0; i < G_N_ELEMENTS(bad_scenarios); i++) {
    g_autofree char *path = g_strdup_printf("/scn/expand/bad/%zu", i);
    g_test_add_data_func(path, &bad_scenarios[i], test_expand_bad);
  }
  g_test_add_func("/scn/options/crossmesh", test_options_crossmesh);
  g_test_add_func("/scn/options/framework", test_options_framework);
  int status = g_test_run();
  test_remove_tree(tmpdir);
  g_free(tmpdir);
  return status;
}
