/* Tests of the strategy IR: SBP layouts, builders, the CLI spec, JSON round trips, errors. */
#include <glib.h>
#include <string.h>

#include "model/mdl_strategy.h"
#include "test-util.h"

typedef struct {
  DevCluster *cluster;
  MdlGraph *graph;
} Fixture;

static void fixture_setup(Fixture *f, gconstpointer data) {
  GError *error = NULL;
  f->cluster = dev_cluster_parse_spec("dgx-a100:nodes=2", &error);
  g_assert_no_error(error);
  f->graph = mdl_graph_parse_spec("gpt:layers=4,hidden=1024,heads=16,seq=256,vocab=3000,batch=64", &error);
  g_assert_no_error(error);
}

static void fixture_teardown(Fixture *f, gconstpointer data) {
  mdl_graph_free(f->graph);
  dev_cluster_free(f->cluster);
}

static int find_op(const MdlGraph *g, const char *suffix) {
  for (int o = 0; o < mdl_graph_num_ops(g); o++)
    if (g_str_has_suffix(mdl_graph_op(g, o)->name, suffix)) return o;
  g_assert_not_reached();
}

/* Column-parallel output is Split on the features, row-parallel output Partial. */
static void test_megatron_layouts(Fixture *f, gconstpointer data) {
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_parse_spec("megatron:tp=8,dp=2", f->graph, f->cluster, &error);
  g_assert_no_error(error);
  g_assert_cmpint(s->dp, ==, 2);
  g_assert_cmpint(s->tp, ==, 8);
  g_assert_cmpint(s->num_microbatches, ==, 32);
  const MdlMesh *mesh = mdl_strategy_mesh(s, 0);
  g_assert_cmpint(mesh->shape[0], ==, 2);
  g_assert_cmpint(mesh->shape[1], ==, 8);
  g_assert_cmpint(mesh->devices[9], ==, 9); /* tp innermost: 8 peers of one host */
  for (int which = 0; which < 2; which++) {
    const char *name = which ? "fc2" : "fc1";
    int o = find_op(f->graph, name);
    const MdlOp *op = mdl_graph_op(f->graph, o);
    MdlLayout out = mdl_layout_of_operand(op, &op->output, TRUE, &s->configs[o], mesh);
    g_assert_cmpint(out.axis[0], ==, 0); /* batch split on dp */
    if (which == 0) g_assert_cmpint(out.axis[1], ==, 2);  /* [b,s,4h] split on 4h */
    else g_assert_cmpint(out.axis[1], ==, MDL_LAYOUT_PARTIAL);
    char text[64];
    mdl_layout_format(&out, 2, text, sizeof text);
    g_assert_cmpstr(text, ==, which ? "S(0),P" : "S(0),S(2)");
  }
  mdl_strategy_free(s);
}

static void test_json_round_trip(Fixture *f, gconstpointer data) {
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_parse_spec("megatron:tp=4,pp=2,dp=2,mb=4,schedule=gpipe", f->graph,
                                           f->cluster, &error);
  g_assert_no_error(error);
  g_autofree char *json = mdl_strategy_to_json(s, f->graph);
  MdlStrategy *back = mdl_strategy_from_json(json, "round-trip", f->graph, f->cluster, &error);
  g_assert_no_error(error);
  g_assert_cmpint(back->num_stages, ==, 2);
  g_assert_cmpint(back->num_microbatches, ==, s->num_microbatches);
  g_assert_cmpint(back->schedule, ==, MDL_SCHEDULE_GPIPE);
  g_assert_cmpint(back->dtype, ==, s->dtype);
  g_assert_cmpmem(back->configs, sizeof(MdlOpConfig) * (gsize)s->num_ops, s->configs,
                  sizeof(MdlOpConfig) * (gsize)s->num_ops);
  g_autofree char *again = mdl_strategy_to_json(back, f->graph);
  g_assert_nonnull(strstr(again, "\"stratsim-strategy-1\""));
  mdl_strategy_free(back);
  mdl_strategy_free(s);
}

/* A hand-written JSON with a default config: data parallel on 4 devices. */
static void test_json_default(Fixture *f, gconstpointer data) {
  const char *json = "{\"num_microbatches\": 2, \"meshes\": [{\"shape\": [4], \"devices\": [0,1,2,3]}],"
                     " \"default\": {\"mesh\": 0, \"split\": [\"@sample\"]}}";
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_from_json(json, "inline", f->graph, f->cluster, &error);
  g_assert_no_error(error);
  for (int o = 0; o < s->num_ops; o++)
    g_assert_cmpint(s->configs[o].split[0], ==, mdl_op_sample_dim(mdl_graph_op(f->graph, o)));
  mdl_strategy_free(s);
}

typedef struct {
  const char *spec;
  int code;
  const char *needle;
} BadCase;

static const BadCase bad_specs[] = {
    {"megatron:tp=3", MDL_ERROR_STRATEGY, "heads"},
    {"megatron:tp=8,pp=2,dp=2", MDL_ERROR_STRATEGY, "cluster"},
    {"megatron:tp=8,pp=777777777", MDL_ERROR_STRATEGY, "6222222216 devices"}, /* tp*pp overflows an int */
    {"megatron:tp=0", MDL_ERROR_PARSE, "tp=0"},
    {"megatron:tp=-2", MDL_ERROR_PARSE, "tp=-2"},
    {"megatron:tp=abc", MDL_ERROR_PARSE, "tp=abc"},
    {"megatron:pp=3,dp=4", MDL_ERROR_STRATEGY, "layers"},
    {"megatron:dp=16,mb=3", MDL_ERROR_STRATEGY, "batch"},
    {"megatron:zero=4", MDL_ERROR_PARSE, "zero=4"},
    {"megatron:zero=x", MDL_ERROR_PARSE, "zero=x"},
    {"megatron:recompute=some", MDL_ERROR_PARSE, "recompute=some"},
    {"megatron:sp=2", MDL_ERROR_PARSE, "sp=2"},
    {"megatron:sp=1", MDL_ERROR_STRATEGY, "sp=1"},          /* tp=1: nothing to sequence-split */
    {"megatron:foo=1", MDL_ERROR_PARSE, "foo"},
    {"megatron:schedule=zigzag", MDL_ERROR_PARSE, "zigzag"},
    {"megatron:dtype=fp4", MDL_ERROR_PARSE, "fp4"},
    {"zigzag", MDL_ERROR_PARSE, "zigzag"},
    {"/nonexistent/strategy.json", MDL_ERROR_PARSE, "/nonexistent/strategy.json"},
};

static void test_bad_spec(Fixture *f, gconstpointer data) {
  const BadCase *bc = data;
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_parse_spec(bc->spec, f->graph, f->cluster, &error);
  g_assert_null(s);
  g_assert_error(error, MDL_ERROR, bc->code);
  g_assert_nonnull(strstr(error->message, bc->needle));
  g_assert_null(strchr(error->message, '\n'));
  g_error_free(error);
}

static const char *const bad_json[] = {
    "{not json",
    "[]",
    "{\"meshes\": []}",
    "{\"meshes\": [{\"shape\": [2], \"devices\": [0]}], \"default\": {}}",
    "{\"meshes\": [{\"shape\": [2], \"devices\": [0, 99]}], \"default\": {}}",
    "{\"meshes\": [{\"shape\": [2], \"devices\": [0, 0]}], \"default\": {}}",
    "{\"meshes\": [{\"shape\": [64], \"devices\": [0]}], \"default\": {}}",
    "{\"meshes\": [{\"shape\": [2], \"devices\": [0, 1]}], \"default\": {\"split\": [\"nope\"]}}",
    "{\"meshes\": [{\"shape\": [2], \"devices\": [0, 1]}]}",
    "{\"meshes\": [{\"shape\": [2], \"devices\": [0, 1]}], \"ops\": [{\"op\": \"ghost\"}], \"default\": {}}",
    "{\"num_microbatches\": 0, \"meshes\": [{\"shape\": [2], \"devices\": [0, 1]}], \"default\": {}}",
    "{\"num_microbatches\": 7, \"meshes\": [{\"shape\": [2], \"devices\": [0, 1]}], \"default\": {}}",
    "{\"meshes\": [{\"shape\": [-2], \"devices\": [0, 1]}], \"default\": {}}",
};

static void test_bad_json(Fixture *f, gconstpointer data) {
  for (gsize i = 0; i < G_N_ELEMENTS(bad_json); i++) {
    GError *error = NULL;
    MdlStrategy *s = mdl_strategy_from_json(bad_json[i], "bad.json", f->graph, f->cluster, &error);
    if (s) g_error("accepted: %s", bad_json[i]);
    g_assert_nonnull(error);
    g_assert_true(error->domain == MDL_ERROR);
    g_error_free(error);
  }
}

/* A V100 has no bf16: asking for it is an error, the default falls back to fp16. */
static void test_dtype_support(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("aws-p3.8xlarge", &error);
  MdlGraph *g = mdl_graph_parse_spec("gpt:layers=2,hidden=256,heads=4,seq=64,vocab=100,batch=8", &error);
  g_assert_no_error(error);
  MdlStrategy *s = mdl_strategy_parse_spec("dp", g, c, &error);
  g_assert_no_error(error);
  g_assert_cmpint(s->dtype, ==, DEV_DTYPE_FP16);
  mdl_strategy_free(s);
  s = mdl_strategy_parse_spec("dp:dtype=bf16", g, c, &error);
  g_assert_null(s);
  g_assert_error(error, MDL_ERROR, MDL_ERROR_STRATEGY);
  g_assert_nonnull(strstr(error->message, "bf16"));
  g_error_free(error);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add("/model/strategy/megatron-layouts", Fixture, NULL, fixture_setup, test_megatron_layouts, fixture_teardown);
  g_test_add("/model/strategy/json-round-trip", Fixture, NULL, fixture_setup, test_json_round_trip, fixture_teardown);
  g_test_add("/model/strategy/json-default", Fixture, NULL, fixture_setup, test_json_default, fixture_teardown);
  g_test_add("/model/strategy/bad-json", Fixture, NULL, fixture_setup, test_bad_json, fixture_teardown);
  for (gsize i = 0; i < G_N_ELEMENTS(bad_specs); i++) {
    g_autofree char *path = g_strdup_printf("/model/strategy/bad-spec/%zu", i);
    g_test_add(path, Fixture, &bad_specs[i], fixture_setup, test_bad_spec, fixture_teardown);
  }
  g_test_add_func("/model/strategy/dtype-support", test_dtype_support);
  return g_test_run();
}
