/* Tests of the 2D (SUMMA), 2.5D and 3D matmul strategy builders (model/mdl_strategy_matmul.c):
 * every op of the zoo's transformer, MLP and CNNs gets a valid config, the stated per-op SBP
 * (matmul splits, the 3D j/l swap, the non-matmul rules), the CLI spec and its errors, JSON
 * round trips, and 2.5D's equivalence with SUMMA plus data parallelism. */
#include <glib.h>
#include <string.h>

#include "costmodel/costmodel.h"
#include "model/mdl_strategy.h"
#include "sim/sim.h"

#define GPT "gpt:layers=2,hidden=1024,heads=16,seq=256,vocab=4096,batch=32"

static MdlGraph *graph(const char *spec) {
  GError *error = NULL;
  MdlGraph *g = mdl_graph_parse_spec(spec, &error);
  g_assert_no_error(error);
  return g;
}

static DevCluster *cluster(const char *spec) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec(spec, &error);
  g_assert_no_error(error);
  return c;
}

static int find_op(const MdlGraph *g, const char *name) {
  for (int o = 0; o < mdl_graph_num_ops(g); o++)
    if (strcmp(mdl_graph_op(g, o)->name, name) == 0) return o;
  g_assert_not_reached();
  return -1;
}

/* The op dim names split along each mesh axis ("b,b,n"; "-" replicated). */
static char *splits(const MdlStrategy *s, const MdlGraph *g, const char *op_name) {
  int o = find_op(g, op_name);
  const MdlOp *op = mdl_graph_op(g, o);
  const MdlMesh *mesh = mdl_strategy_mesh(s, s->configs[o].mesh);
  GString *out = g_string_new(NULL);
  for (int a = 0; a < mesh->ndims; a++) {
    int d = s->configs[o].split[a];
    g_string_append_printf(out, "%s%s", a ? "," : "", d >= 0 ? op->dims[d].name : "-");
  }
  return g_string_free(out, FALSE);
}

static void assert_splits(const MdlStrategy *s, const MdlGraph *g, const char *op, const char *expect) {
  g_autofree char *got = splits(s, g, op);
  g_assert_cmpstr(got, ==, expect);
}

/* Every zoo model gets a config for every op under every family, and simulates (the same with
 * and without symmetry). */
static void test_zoo_valid(void) {
  const char *models[] = {GPT, "mlp:layers=3,hidden=1024,batch=64", "alexnet:batch=64",
                          "vgg13:batch=64"};
  const char *specs[] = {"summa:q=2", "summa:q=2,dp=4", "summa:q=4", "2.5d:q=2,d=2",
                         "2.5d:q=2,d=2,dp=2", "3d:q=2", "3d:q=2,dp=2"};
  DevCluster *c = cluster("dgx-a100:nodes=2");
  CmParams p;
  cm_params_default(&p);
  for (guint m = 0; m < G_N_ELEMENTS(models); m++) {
    MdlGraph *g = graph(models[m]);
    for (guint i = 0; i < G_N_ELEMENTS(specs); i++) {
      GError *error = NULL;
      MdlStrategy *s = mdl_strategy_parse_spec(specs[i], g, c, &error);
      if (error) g_test_message("%s on %s: %s", specs[i], models[m], error->message);
      g_assert_no_error(error);
      g_assert_cmpstr(s->name, ==, specs[i]);
      g_assert_true(mdl_strategy_validate(s, g, c, &error));
      SimRun *run = sim_run_new(g, s, c, &p, &error);
      g_assert_no_error(error);
      g_assert_cmpfloat(sim_run_prediction(run)->iteration_time_s, >, 0);
      /* Symmetry folds replicas only where that is exact: the expanded graph agrees. */
      SimOptions expanded = {.no_symmetry = TRUE};
      SimRun *full = sim_run_new_with_options(g, s, c, &p, &expanded, &error);
      g_assert_no_error(error);
      g_assert_cmpfloat(sim_run_prediction(full)->iteration_time_s, ==, sim_run_prediction(run)->iteration_time_s);
      sim_run_free(full);
      sim_run_free(run);
      mdl_strategy_free(s);
    }
    mdl_graph_free(g);
  }
  dev_cluster_free(c);
}

/* SUMMA on the transformer: mesh (dp, row, col); matmuls split b on dp and row and n on col;
 * attention follows qkv (heads on col), GELU fc1; layernorms take the sequence on col. */
static void test_summa_gpt(void) {
  DevCluster *c = cluster("dgx-a100:nodes=2");
  MdlGraph *g = graph(GPT);
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_parse_spec("summa:q=2,dp=2,mb=16", g, c, &error);
  g_assert_no_error(error);
  const MdlMesh *mesh = mdl_strategy_mesh(s, 0);
  g_assert_cmpint(mesh->ndims, ==, 3);
  g_assert_cmpint(mesh->shape[0], ==, 2);
  g_assert_cmpint(mesh->shape[1], ==, 2);
  g_assert_cmpint(mesh->shape[2], ==, 2);
  g_assert_cmpint(s->num_microbatches, ==, 1);
  g_assert_cmpint(s->dp, ==, 2);
  g_assert_cmpint(s->tp, ==, 4);
  for (const char *const *mm = (const char *const[]){"layer0.qkv", "layer0.attn_proj", "layer1.fc1",
                                                     "layer1.fc2", "lm_head", NULL}; *mm; mm++)
    assert_splits(s, g, *mm, "b,b,n");
  assert_splits(s, g, "layer0.attn_scores", "b,b,heads");
  assert_splits(s, g, "layer0.attn_context", "b,b,heads");
  assert_splits(s, g, "layer0.gelu", "b,b,f");
  assert_splits(s, g, "layer0.residual1", "b,b,h");
  assert_splits(s, g, "layer0.ln2", "b,b,s");
  assert_splits(s, g, "embedding", "b,b,vocab"); /* the tied table as lm_head reads it */
  assert_splits(s, g, "loss", "b,b,classes");
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* 3D: column matmuls n on j and k on l, row matmuls swapped; partial outputs reduce-scattered
 * onto the batch; the embedding follows lm_head's table layout. */
static void test_3d_gpt(void) {
  DevCluster *c = cluster("dgx-a100:nodes=2");
  MdlGraph *g = graph(GPT);
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_parse_spec("3d:q=2,dp=2", g, c, &error);
  g_assert_no_error(error);
  g_assert_cmpint(mdl_strategy_mesh(s, 0)->ndims, ==, 4);
  assert_splits(s, g, "layer0.qkv", "b,b,n,k");
  assert_splits(s, g, "layer0.fc1", "b,b,n,k");
  assert_splits(s, g, "lm_head", "b,b,n,k");
  assert_splits(s, g, "layer0.attn_proj", "b,b,k,n");
  assert_splits(s, g, "layer0.fc2", "b,b,k,n");
  assert_splits(s, g, "layer0.attn_scores", "b,b,heads,b");
  assert_splits(s, g, "layer0.gelu", "b,b,f,b");
  assert_splits(s, g, "layer0.residual1", "b,b,b,h");
  assert_splits(s, g, "layer0.ln1", "b,b,b,s");
  assert_splits(s, g, "embedding", "b,b,vocab,h");
  /* The layouts of Table I's 3D row on the first column matmul. */
  int o = find_op(g, "layer0.qkv");
  const MdlOp *op = mdl_graph_op(g, o);
  const MdlMesh *mesh = mdl_strategy_mesh(s, 0);
  char text[64];
  MdlLayout l = mdl_layout_of_operand(op, &op->inputs[0], FALSE, &s->configs[o], mesh);
  mdl_layout_format(&l, mesh->ndims, text, sizeof text);
  g_assert_cmpstr(text, ==, "S(0),S(0),B,S(2)");
  l = mdl_layout_of_operand(op, &op->inputs[1], FALSE, &s->configs[o], mesh);
  mdl_layout_format(&l, mesh->ndims, text, sizeof text);
  g_assert_cmpstr(text, ==, "B,B,S(1),S(0)");
  l = mdl_layout_of_operand(op, &op->output, TRUE, &s->configs[o], mesh);
  mdl_layout_format(&l, mesh->ndims, text, sizeof text);
  g_assert_cmpstr(text, ==, "S(0),S(0),S(2),P");
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* 2.5D (Tesseract) is SUMMA on d depth layers that split the batch: the same per-op splits
 * and collectives as SUMMA with d times the data parallelism, so the same prediction. */
static void test_2_5d_is_summa_with_depth(void) {
  DevCluster *c = cluster("dgx-a100:nodes=2");
  MdlGraph *g = graph(GPT);
  CmParams p;
  cm_params_default(&p);
  GError *error = NULL;
  MdlStrategy *a = mdl_strategy_parse_spec("2.5d:q=2,d=2,dp=2", g, c, &error);
  MdlStrategy *b = mdl_strategy_parse_spec("summa:q=2,dp=4", g, c, &error);
  g_assert_no_error(error);
  assert_splits(a, g, "layer0.fc1", "b,b,b,n");
  SimRun *ra = sim_run_new(g, a, c, &p, &error), *rb = sim_run_new(g, b, c, &p, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(sim_run_prediction(ra)->iteration_time_s, ==, sim_run_prediction(rb)->iteration_time_s);
  g_assert_cmpfloat(sim_run_prediction(ra)->peak_memory_bytes, ==, sim_run_prediction(rb)->peak_memory_bytes);
  sim_run_free(ra);
  sim_run_free(rb);
  mdl_strategy_free(a);
  mdl_strategy_free(b);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

static void test_json_round_trip(void) {
  DevCluster *c = cluster("dgx-a100:nodes=2");
  MdlGraph *g = graph(GPT);
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_parse_spec("3d:q=2,dp=2,mb=8", g, c, &error);
  g_assert_no_error(error);
  g_autofree char *text = mdl_strategy_to_json(s, g);
  MdlStrategy *t = mdl_strategy_from_json(text, "round-trip", g, c, &error);
  g_assert_no_error(error);
  g_assert_cmpint(t->num_microbatches, ==, s->num_microbatches);
  g_assert_cmpint(t->num_microbatches, ==, 2);
  for (int o = 0; o < s->num_ops; o++)
    g_assert_cmpmem(t->configs[o].split, sizeof t->configs[o].split, s->configs[o].split,
                    sizeof s->configs[o].split);
  mdl_strategy_free(t);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

typedef struct {
  const char *spec;
  const char *model;
  int code;
  const char *message; /* a substring of the error */
} BadSpec;

static const BadSpec bad_specs[] = {
    {"summa", GPT, MDL_ERROR_PARSE, "needs q=Q"},
    {"2.5d:q=2", GPT, MDL_ERROR_PARSE, "needs q=Q and d=D"},
    {"summa:q=2,d=2", GPT, MDL_ERROR_PARSE, "unknown key 'd'"},
    {"3d:q=0", GPT, MDL_ERROR_PARSE, "not a positive integer"},
    {"3d:q=2,tp=4", GPT, MDL_ERROR_PARSE, "unknown key 'tp'"},
    {"summa:q", GPT, MDL_ERROR_PARSE, "not key=value"},
    {"summa:q=2,dtype=fp4", GPT, MDL_ERROR_PARSE, "unknown dtype"},
    {"summa:q=8", GPT, MDL_ERROR_STRATEGY, "needs 64 devices"},
    {"3d:q=2,dp=1,mb=3", GPT, MDL_ERROR_STRATEGY, "mb=3"},
    {"summa:q=3,dp=1", "mlp:layers=2,hidden=1024,batch=36", MDL_ERROR_STRATEGY, "does not divide dim n"},
};

static void test_bad_spec(gconstpointer data) {
  const BadSpec *bs = data;
  DevCluster *c = cluster("dgx-a100:nodes=2");
  MdlGraph *g = graph(bs->model);
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_parse_spec(bs->spec, g, c, &error);
  g_assert_null(s);
  g_assert_error(error, MDL_ERROR, bs->code);
  if (!strstr(error->message, bs->message)) g_test_message("message: %s", error->message);
  g_assert_nonnull(strstr(error->message, bs->message));
  g_error_free(error);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/model/strategy-matmul/zoo-valid", test_zoo_valid);
  g_test_add_func("/model/strategy-matmul/summa-gpt", test_summa_gpt);
  g_test_add_func("/model/strategy-matmul/3d-gpt", test_3d_gpt);
  g_test_add_func("/model/strategy-matmul/2.5d-is-summa-with-depth", test_2_5d_is_summa_with_depth);
  g_test_add_func("/model/strategy-matmul/json-round-trip", test_json_round_trip);
  for (guint i = 0; i < G_N_ELEMENTS(bad_specs); i++) {
    g_autofree char *path = g_strdup_printf("/model/strategy-matmul/bad-spec/%u", i);
    g_test_add_data_func(path, &bad_specs[i], test_bad_spec);
  }
  return g_test_run();
}
