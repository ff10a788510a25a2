/* Tests of the zoo models FlexFlow's experiments use (model/mdl_zoo_resnet.c,
 * mdl_zoo_inception.c, mdl_zoo_rnn.c, mdl_zoo_unet.c): structure and op counts, parameter counts against the
 * published figures, forward FLOPs against the published multiply-add counts, and that every
 * model simulates under data parallelism on a small cluster. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "costmodel/costmodel.h"
#include "model/mdl_strategy.h"
#include "sim/sim.h"

static MdlGraph *parse_or_die(const char *spec) {
  GError *error = NULL;
  MdlGraph *g = mdl_graph_parse_spec(spec, &error);
  g_assert_no_error(error);
  g_assert_nonnull(g);
  return g;
}

static const MdlOp *op_named(const MdlGraph *g, const char *name) {
  for (int o = 0; o < mdl_graph_num_ops(g); o++)
    if (strcmp(mdl_graph_op(g, o)->name, name) == 0) return mdl_graph_op(g, o);
  g_error("no op %s", name);
}

static int count_kind(const MdlGraph *g, MdlOpKind kind) {
  int n = 0;
  for (int o = 0; o < mdl_graph_num_ops(g); o++) n += mdl_graph_op(g, o)->kind == kind;
  return n;
}

/* Forward FLOPs of the contractions (convolutions and matmuls) per sample. */
static double contraction_flops_per_sample(const MdlGraph *g) {
  double f = 0;
  for (int o = 0; o < mdl_graph_num_ops(g); o++) {
    const MdlOp *op = mdl_graph_op(g, o);
    if (op->kind == MDL_OP_CONV2D || op->kind == MDL_OP_MATMUL || op->kind == MDL_OP_BATCH_MATMUL)
      f += op->flops;
  }
  return f / (double)g->batch;
}

static void assert_within(double value, double expected, double rel) {
  if (fabs(value - expected) > rel * fabs(expected))
    g_error("%.6g is not within %.3g%% of %.6g", value, rel * 100, expected);
}

static void assert_shape4(const MdlGraph *g, const char *op, int64_t c, int64_t h, int64_t w) {
  const MdlTensor *t = mdl_graph_tensor(g, op_named(g, op)->output.tensor);
  g_assert_cmpint(t->ndims, ==, 4);
  g_assert_cmpint(t->shape[1], ==, c);
  g_assert_cmpint(t->shape[2], ==, h);
  g_assert_cmpint(t->shape[3], ==, w);
}

/* He et al. 2016 Table 1; torchvision's resnet101 has 44,549,160 parameters with the FC bias
 * (1000), which stratsim leaves out, and 7.8 G multiply-adds per 224x224 image (the paper's
 * Table 1 says 7.6 G for the original stride placement). */
static void test_resnet101(void) {
  MdlGraph *g = parse_or_die("resnet-101");
  g_assert_cmpint(g->batch, ==, 64);
  g_assert_cmpfloat(mdl_graph_num_params(g), ==, 44549160.0 - 1000.0);
  /* 1 stem conv, 33 blocks of 3, 4 projection shortcuts. */
  g_assert_cmpint(count_kind(g, MDL_OP_CONV2D), ==, 1 + 33 * 3 + 4);
  g_assert_cmpint(count_kind(g, MDL_OP_POOL2D), ==, 2);
  g_assert_cmpint(count_kind(g, MDL_OP_ELEMENTWISE), ==, 104 + 33); /* BNs, residual adds */
  g_assert_cmpint(mdl_graph_num_ops(g), ==, 104 * 2 + 33 + 2 + 2);
  assert_shape4(g, "conv1.bn", 64, 112, 112);
  assert_shape4(g, "l1.b2.add", 256, 56, 56);
  assert_shape4(g, "l3.b22.add", 1024, 14, 14);
  assert_shape4(g, "l4.b2.add", 2048, 7, 7);
  g_assert_cmpint(op_named(g, "l3.b22.add")->layer, ==, 3 + 4 + 22);
  assert_within(contraction_flops_per_sample(g), 2 * 7.8e9, 0.02);
  mdl_graph_free(g);
  g = parse_or_die("resnet-101:batch=8");
  g_assert_cmpint(g->batch, ==, 8);
  mdl_graph_free(g);
}

/* Szegedy et al. 2016; torchvision's inception_v3 without the auxiliary classifier has
 * 23,834,568 parameters (27,161,264 with it), of which the FC bias (1000) is not modeled;
 * 5.7 G multiply-adds per 299x299 image (the paper: "5 billion multiply-adds"). */
static void test_inception_v3(void) {
  MdlGraph *g = parse_or_die("inception-v3");
  g_assert_cmpfloat(mdl_graph_num_params(g), ==, 23834568.0 - 1000.0);
  g_assert_cmpint(count_kind(g, MDL_OP_CONV2D), ==, 94);
  assert_shape4(g, "maxpool2", 192, 35, 35);
  assert_shape4(g, "mixed_5b", 256, 35, 35);
  assert_shape4(g, "mixed_5d", 288, 35, 35);
  assert_shape4(g, "mixed_6a", 768, 17, 17);
  assert_shape4(g, "mixed_6e", 768, 17, 17);
  assert_shape4(g, "mixed_7a", 1280, 8, 8);
  assert_shape4(g, "mixed_7c", 2048, 8, 8);
  /* Branches are parallel: the four first ops of mixed_5c all read mixed_5b's output. */
  int in = op_named(g, "mixed_5b")->output.tensor;
  const char *firsts[] = {"mixed_5c.branch1x1", "mixed_5c.branch5x5_1", "mixed_5c.branch3x3dbl_1",
                          "mixed_5c.branch_pool_avg"};
  for (guint i = 0; i < G_N_ELEMENTS(firsts); i++)
    g_assert_cmpint(op_named(g, firsts[i])->inputs[0].tensor, ==, in);
  g_assert_cmpint(op_named(g, "mixed_5c")->ninputs, ==, 4);
  g_assert_cmpint(op_named(g, "mixed_7b")->ninputs, ==, 4);
  g_assert_cmpint(op_named(g, "mixed_7b.branch3x3")->ninputs, ==, 2);
  g_assert_cmpint(op_named(g, "mixed_6b.branch7x7_2")->kernel_elems, ==, 7);
  assert_within(contraction_flops_per_sample(g), 2 * 5.7e9, 0.02);
  mdl_graph_free(g);
}

typedef struct {
  const char *spec;
  int layers, lstm_layers, ops;
  double params;
} RnnCase;

/* Parameters from the closed form (LSTM 8h^2 per layer, embeddings, softmax, NMT's attention
 * 2h^2) at h = 2048; ops per mdl_zoo_rnn.c's list. */
static const RnnCase rnn_cases[] = {
    /* embeddings 40, cells 4 x 40, x-matmuls 4 x 40, h-matmuls 4 x 39, softmax + loss */
    {"rnntc", 4, 4, 40 + 160 + 160 + 156 + 2, 4 * 8.0 * 2048 * 2048 + 18765.0 * 2048 + 2048 * 2},
    {"rnnlm", 2, 2, 40 + 80 + 80 + 78 + 80, 2 * 8.0 * 2048 * 2048 + 2 * 10000.0 * 2048},
    /* embeddings 80; encoder 2 x (40 + 40 + 39); memory stacking 10 + 3 + 1; decoder 2 x 120
     * (its first step continues the encoder's state); attention 6 x 40; softmax + loss 80 */
    {"nmt", 4, 4, 80 + 238 + 14 + 240 + 240 + 80,
     4 * 8.0 * 2048 * 2048 + 3 * 20480.0 * 2048 + 2 * 2048.0 * 2048},
};

static void test_rnn(gconstpointer data) {
  const RnnCase *c = data;
  MdlGraph *g = parse_or_die(c->spec);
  g_assert_cmpint(g->batch, ==, 64);
  g_assert_cmpint(g->seq, ==, 40);
  g_assert_cmpint(g->num_layers, ==, c->layers);
  g_assert_cmpint(mdl_graph_num_ops(g), ==, c->ops);
  g_assert_cmpfloat(mdl_graph_num_params(g), ==, c->params);
  /* The forward is dominated by the gate GEMMs: 2 x 64 x 40 tokens x 8h^2 per layer. */
  double gates = 2.0 * 64 * 40 * 8 * 2048.0 * 2048 * c->lstm_layers;
  double f = contraction_flops_per_sample(g) * 64;
  g_assert_cmpfloat(f, >, 0.95 * gates);
  g_assert_cmpfloat(f, <, 2.0 * gates);
  /* Shared weights: every step of layer 0 reads the same Wx. */
  const char *w0 = strcmp(c->spec, "nmt") == 0 ? "enc.l0.t0.x" : "l0.t0.x";
  const char *w9 = strcmp(c->spec, "nmt") == 0 ? "enc.l0.t9.x" : "l0.t9.x";
  g_assert_cmpint(op_named(g, w0)->inputs[1].tensor, ==, op_named(g, w9)->inputs[1].tensor);
  mdl_graph_free(g);
  /* Overrides. */
  g_autofree char *spec = g_strdup_printf("%s:seq=5,hidden=64,vocab=100,batch=8,layers=2", c->spec);
  g = parse_or_die(spec);
  g_assert_cmpint(g->seq, ==, 5);
  g_assert_cmpint(g->batch, ==, 8);
  mdl_graph_free(g);
}

/* Alpa's "1B" UNet configuration (mdl_zoo_unet.c): 1.279e9 parameters in our graph; every up
 * level's two ResNet blocks read a skip connection saved on the way down (8 in all), so a
 * pipeline cut in the middle sends them all from stage 0 to stage 1. */
static void test_unet(void) {
  MdlGraph *g = parse_or_die("u-transformer");
  g_assert_cmpint(g->batch, ==, 2048);
  g_assert_cmpint(g->default_dtype, ==, DEV_DTYPE_FP16);
  g_assert_cmpfloat(fabs(mdl_graph_num_params(g) - 1.2791e9), <, 1e6);
  g_assert_cmpint(mdl_graph_num_ops(g), ==, 311);
  int concats = 0;
  for (int o = 0; o < mdl_graph_num_ops(g); o++) {
    const MdlOp *op = mdl_graph_op(g, o);
    if (!g_str_has_prefix(op->name, "up") || !strstr(op->name, ".cat")) continue;
    concats++;
    /* The skip is produced in the down path (or by conv_in), before the middle block. */
    int skip = mdl_graph_tensor(g, op->inputs[1].tensor)->producer;
    const char *producer = mdl_graph_op(g, skip)->name;
    g_assert_true(g_str_has_prefix(producer, "down") || strcmp(producer, "conv_in") == 0);
  }
  g_assert_cmpint(concats, ==, 8);
  const MdlTensor *qkv = mdl_graph_tensor(g, op_named(g, "down0.attn.attn1.qkv")->output.tensor);
  g_assert_cmpint(qkv->shape[1], ==, 3 * 480);
  g_assert_cmpint(qkv->shape[2], ==, 32 * 32);
  g_assert_cmpint(mdl_graph_tensor(g, op_named(g, "mid.attn.attn1.qkv")->output.tensor)->shape[2], ==, 4 * 4);
  mdl_graph_free(g);
  GError *error = NULL;
  g_assert_null(mdl_graph_parse_spec("u-transformer:channels=100", &error));
  g_assert_error(error, MDL_ERROR, MDL_ERROR_INVALID);
  g_clear_error(&error);
}

static void test_rnn_errors(void) {
  GError *error = NULL;
  g_assert_null(mdl_graph_parse_spec("nmt:classes=3", &error));
  g_assert_error(error, MDL_ERROR, MDL_ERROR_PARSE);
  g_clear_error(&error);
  g_assert_null(mdl_graph_parse_spec("rnnlm:seq=100000,layers=100000", &error));
  g_assert_error(error, MDL_ERROR, MDL_ERROR_INVALID);
  g_clear_error(&error);
}

/* Every model simulates under data parallelism on 4 P100s (FlexFlow's cluster, one node) at a
 * small batch, fits, and computes something plausible. */
static void test_simulates(gconstpointer data) {
  const char *spec = data;
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("flexflow-p100:nodes=1", &error);
  g_assert_no_error(error);
  MdlGraph *g = parse_or_die(spec);
  MdlStrategy *s = mdl_strategy_parse_spec("dp", g, c, &error);
  g_assert_no_error(error);
  CmParams params;
  cm_params_default(&params);
  SimRun *run = sim_run_new(g, s, c, &params, &error);
  g_assert_no_error(error);
  const SimPrediction *p = sim_run_prediction(run);
  g_assert_cmpint(p->num_gpus, ==, 4);
  g_assert_true(p->fits_memory);
  g_assert_cmpfloat(p->iteration_time_s, >, 0);
  g_assert_cmpfloat(p->compute_s, <=, p->iteration_time_s);
  g_assert_cmpfloat(p->mfu, >, 0.01);
  g_assert_cmpfloat(p->mfu, <, 0.8);
  sim_run_free(run);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/model/zoo/resnet-101", test_resnet101);
  g_test_add_func("/model/zoo/inception-v3", test_inception_v3);
  for (guint i = 0; i < G_N_ELEMENTS(rnn_cases); i++) {
    g_autofree char *path = g_strdup_printf("/model/zoo/%s", rnn_cases[i].spec);
    g_test_add_data_func(path, &rnn_cases[i], test_rnn);
  }
  g_test_add_func("/model/zoo/rnn-errors", test_rnn_errors);
  g_test_add_func("/model/zoo/u-transformer", test_unet);
  static const char *const sims[] = {"inception-v3:batch=16", "resnet-101:batch=16",
                                     "rnntc:batch=16", "rnnlm:batch=16", "nmt:batch=16",
                                     "u-transformer:channels=160,batch=16"};
  for (guint i = 0; i < G_N_ELEMENTS(sims); i++) {
    g_autofree char *path = g_strdup_printf("/model/zoo/simulates-dp/%s", sims[i]);
    g_test_add_data_func(path, sims[i], test_simulates);
  }
  return g_test_run();
}
