/* Tests of the operator-graph IR and the model zoo: parameter counts against the papers, FLOP
 * rules, Megatron tp dims, spec parsing and every error path, the JSON format and its example.
 *
 * Over 700 lines on purpose: one GTest binary per module (CONVENTIONS.md, "Tests"), whose cases
 * share this file's fixtures and helpers; splitting it would split one module's test binary.
 */
#include <glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/mdl_graph.h"

#ifndef STRATSIM_SOURCE_DIR
#define STRATSIM_SOURCE_DIR "."
#endif

static MdlGraph *parse_or_die(const char *spec) {
  GError *error = NULL;
  MdlGraph *g = mdl_graph_parse_spec(spec, &error);
  g_assert_no_error(error);
  g_assert_nonnull(g);
  return g;
}

static int find_op(const MdlGraph *g, const char *name) {
  for (int o = 0; o < mdl_graph_num_ops(g); o++)
    if (strcmp(mdl_graph_op(g, o)->name, name) == 0) return o;
  g_error("no op %s", name);
}

static const MdlOp *op_named(const MdlGraph *g, const char *name) {
  return mdl_graph_op(g, find_op(g, name));
}

static void assert_within(double value, double expected, double rel) {
  if (fabs(value - expected) > rel * fabs(expected))
    g_error("%.6g is not within %.1f%% of %.6g", value, 100 * rel, expected);
}

/* --- the zoo --- */

/* Megatron tp=8 (one DGX host) must divide every dim it splits, vocabulary included. */
static void assert_tp_divides(const MdlGraph *g, int tp) {
  for (int o = 0; o < mdl_graph_num_ops(g); o++) {
    const MdlOp *op = mdl_graph_op(g, o);
    if (op->tp_dim >= 0 && op->dims[op->tp_dim].size % tp != 0)
      g_error("%s: op %s: tp=%d does not divide dim %s", g->name, op->name, tp, op->dims[op->tp_dim].name);
  }
}

/* GPT-3 XL: 24 (12h^2 + 4h) + V h + 2048 h + 2h with h = 2048 and V = 50304 (the 50257-token
 * vocabulary padded as Megatron-LM does); "1.3B" in the paper. */
static void test_gpt_1_3b_params(void) {
  MdlGraph *g = parse_or_die("gpt3-1.3b");
  double h = 2048;
  g_assert_cmpfloat(mdl_graph_num_params(g), ==, 24 * (12 * h * h + 4 * h) + 50304 * h + 2048 * h + 2 * h);
  assert_within(mdl_graph_num_params(g), 1.3e9, 0.02);
  g_assert_cmpint(g->num_layers, ==, 24);
  g_assert_cmpint(g->heads, ==, 16);
  g_assert_cmpint(g->seq, ==, 2048);
  g_assert_cmpint(g->batch, ==, 512);
  g_assert_cmpint(g->default_dtype, ==, DEV_DTYPE_BF16);
  g_assert_cmpstr(g->family, ==, "gpt");
  assert_tp_divides(g, 8);
  mdl_graph_free(g);
}

static void test_gpt_175b_params(void) {
  MdlGraph *g = parse_or_die("gpt3-175b");
  assert_within(mdl_graph_num_params(g), 175e9, 0.02);
  g_assert_cmpint(g->num_layers, ==, 96);
  g_assert_cmpint(g->heads, ==, 96);
  g_assert_cmpint(g->batch, ==, 1536);
  /* Train FLOPs ~ 6 N tokens (Kaplan et al. 2020) plus attention: within 5% above. */
  double six_n_d = 6 * mdl_graph_num_params(g) * 1536 * 2048;
  g_assert_cmpfloat(mdl_graph_train_flops(g), >, six_n_d);
  g_assert_cmpfloat(mdl_graph_train_flops(g), <, 1.05 * six_n_d);
  assert_tp_divides(g, 8);
  mdl_graph_free(g);
}

/* Forward FLOPs of the layer ops, exact; backward by the contraction rule. */
static void test_gpt_layer_flops(void) {
  MdlGraph *g = parse_or_die("gpt:layers=2,hidden=256,heads=4,seq=64,vocab=1000,batch=8");
  double b = 8, s = 64, h = 256, v = 1000;
  const MdlOp *qkv = op_named(g, "layer1.qkv");
  g_assert_cmpfloat(qkv->flops, ==, 2 * b * s * h * 3 * h);
  g_assert_cmpfloat(mdl_op_forward_flops(qkv), ==, 2 * b * s * h * 3 * h);
  g_assert_cmpfloat(mdl_op_backward_flops(g, qkv), ==, 2 * qkv->flops); /* dX and dW */
  g_assert_cmpfloat(op_named(g, "layer0.fc1")->flops, ==, 2 * b * s * h * 4 * h);
  g_assert_cmpfloat(op_named(g, "layer0.fc2")->flops, ==, 2 * b * s * 4 * h * h);
  g_assert_cmpfloat(op_named(g, "layer0.attn_proj")->flops, ==, 2 * b * s * h * h);
  const MdlOp *scores = op_named(g, "layer0.attn_scores");
  g_assert_cmpfloat(scores->flops, ==, 2 * b * s * s * h);
  g_assert_cmpfloat(mdl_op_backward_flops(g, scores), ==, 2 * scores->flops); /* dQ and dK */
  g_assert_cmpfloat(op_named(g, "layer0.attn_context")->flops, ==, 2 * b * s * s * h);
  g_assert_cmpfloat(op_named(g, "layer0.attn_softmax")->flops, ==, 5 * b * 4 * s * s);
  g_assert_cmpfloat(op_named(g, "layer0.ln1")->flops, ==, 8 * b * s * h);
  g_assert_cmpfloat(op_named(g, "layer0.gelu")->flops, ==, 8 * b * s * 4 * h);
  g_assert_cmpfloat(op_named(g, "lm_head")->flops, ==, 2 * b * s * h * v);
  g_assert_cmpfloat(op_named(g, "loss")->flops, ==, 5 * b * s * v);
  const MdlOp *emb = op_named(g, "embedding");
  g_assert_cmpfloat(emb->flops, ==, 0);
  g_assert_cmpfloat(mdl_op_backward_flops(g, emb), ==, b * s * h); /* scatter-add */
  const MdlOp *res = op_named(g, "layer0.residual1");
  g_assert_cmpfloat(mdl_op_backward_flops(g, res), ==, 2 * res->flops);
  /* The embedding table is tied with lm_head: one weight tensor, two users. */
  g_assert_cmpint(emb->inputs[1].tensor, ==, op_named(g, "lm_head")->inputs[1].tensor);
  mdl_graph_free(g);
}

/* The op sequence of a layer and the Megatron tp dims. */
static void test_gpt_structure(void) {
  MdlGraph *g = parse_or_die("gpt:layers=2,hidden=256,heads=4,seq=64,vocab=1000,batch=8");
  static const struct {
    const char *name, *tp;
  } expected[] = {
      {"embedding", "vocab"}, {"pos_embed", NULL},
      {"layer0.ln1", NULL}, {"layer0.qkv", "n"}, {"layer0.attn_scores", "heads"},
      {"layer0.attn_softmax", "heads"}, {"layer0.attn_context", "heads"},
      {"layer0.attn_proj", "k"}, {"layer0.residual1", NULL}, {"layer0.ln2", NULL},
      {"layer0.fc1", "n"}, {"layer0.gelu", "f"}, {"layer0.fc2", "k"}, {"layer0.residual2", NULL},
  };
  for (guint i = 0; i < G_N_ELEMENTS(expected); i++) {
    const MdlOp *op = mdl_graph_op(g, (int)i);
    g_assert_cmpstr(op->name, ==, expected[i].name);
    g_assert_cmpint(op->layer, ==, i < 2 ? -1 : 0);
    if (expected[i].tp) g_assert_cmpstr(op->dims[op->tp_dim].name, ==, expected[i].tp);
    else g_assert_cmpint(op->tp_dim, ==, -1);
  }
  g_assert_cmpint(mdl_graph_num_ops(g), ==, 2 + 2 * 12 + 3);
  g_assert_cmpstr(mdl_graph_op(g, 14)->name, ==, "layer1.ln1");
  g_assert_cmpint(mdl_graph_op(g, 14)->layer, ==, 1);
  const char *tail[] = {"ln_f", "lm_head", "loss"};
  for (int i = 0; i < 3; i++) {
    const MdlOp *op = mdl_graph_op(g, mdl_graph_num_ops(g) - 3 + i);
    g_assert_cmpstr(op->name, ==, tail[i]);
    g_assert_cmpint(op->layer, ==, -1);
  }
  const MdlOp *loss = op_named(g, "loss");
  g_assert_cmpstr(loss->dims[loss->tp_dim].name, ==, "classes");
  g_assert_cmpstr(op_named(g, "lm_head")->dims[op_named(g, "lm_head")->tp_dim].name, ==, "n");
  /* Heads grouping: attention reads the fused [b,s,3h] tensor with dim 2 indexed by heads. */
  const MdlOp *scores = op_named(g, "layer0.attn_scores");
  const MdlTensor *qkv = mdl_graph_tensor(g, scores->inputs[0].tensor);
  g_assert_cmpint(qkv->shape[2], ==, 3 * 256);
  g_assert_cmpstr(scores->dims[scores->inputs[0].dim_map[2]].name, ==, "heads");
  g_assert_cmpstr(scores->dims[scores->inputs[1].dim_map[1]].name, ==, "sk");
  g_assert_cmpint(mdl_graph_tensor(g, 0)->is_input, ==, TRUE);
  /* The residual stream: each add reads the branch output and the skip connection. */
  const MdlOp *res1 = op_named(g, "layer1.residual1"), *res2 = op_named(g, "layer1.residual2");
  g_assert_cmpint(res1->ninputs, ==, 2);
  g_assert_cmpint(res1->inputs[0].tensor, ==, op_named(g, "layer1.attn_proj")->output.tensor);
  g_assert_cmpint(res1->inputs[1].tensor, ==, op_named(g, "layer0.residual2")->output.tensor);
  g_assert_cmpint(op_named(g, "layer0.residual1")->inputs[1].tensor, ==, op_named(g, "pos_embed")->output.tensor);
  g_assert_cmpint(res2->inputs[0].tensor, ==, op_named(g, "layer1.fc2")->output.tensor);
  g_assert_cmpint(res2->inputs[1].tensor, ==, res1->output.tensor);
  g_assert_cmpint(op_named(g, "layer1.ln1")->inputs[0].tensor, ==, res1->inputs[1].tensor);
  g_assert_cmpint(op_named(g, "ln_f")->inputs[0].tensor, ==, res2->output.tensor);
  mdl_graph_free(g);
}

/* Every built-in name builds, validates, and its description states its parameter count. */
static void test_zoo_all(void) {
  int count = 0;
  for (const char *const *n = mdl_zoo_names(); *n; n++, count++) {
    MdlGraph *g = parse_or_die(*n);
    GError *error = NULL;
    g_assert_true(mdl_graph_validate(g, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(g->name, ==, *n);
    const char *desc = mdl_zoo_describe(*n);
    g_assert_nonnull(desc);
    const char *params = strstr(desc, " params");
    g_assert_nonnull(params);
    const char *num = params;
    while (num > desc && num[-1] != ' ') num--;
    assert_within(mdl_graph_num_params(g), g_ascii_strtod(num, NULL), 0.001);
    g_assert_cmpfloat(mdl_graph_train_flops(g), >, 2 * mdl_graph_num_params(g));
    for (int o = 0; o < mdl_graph_num_ops(g); o++) {
      const MdlOp *op = mdl_graph_op(g, o);
      g_assert_cmpint(mdl_op_sample_dim(op), >=, 0);
      g_assert_cmpstr(op->dims[mdl_op_sample_dim(op)].name, ==, "b");
    }
    mdl_graph_free(g);
  }
  g_assert_cmpint(count, ==, 27); /* with the four MoE models (model/mdl_zoo_moe_model.c) */
  g_assert_null(mdl_zoo_describe("nosuch"));
}

static void test_cnn(void) {
  static const struct {
    const char *name;
    double params; /* torchvision, with biases; ours leave biases out (<0.02%) */
    int64_t batch;
  } nets[] = {{"alexnet", 61100840, 256}, {"vgg13", 133047848, 64}, {"vgg16", 138357544, 64}};
  for (guint i = 0; i < G_N_ELEMENTS(nets); i++) {
    MdlGraph *g = parse_or_die(nets[i].name);
    assert_within(mdl_graph_num_params(g), nets[i].params, 0.001);
    g_assert_cmpint(g->batch, ==, nets[i].batch);
    g_assert_cmpint(g->default_dtype, ==, DEV_DTYPE_FP32);
    const MdlOp *fc1 = op_named(g, "fc1");
    g_assert_cmpfloat(mdl_graph_tensor(g, fc1->inputs[1].tensor)->shape[3], ==, 4096);
    g_assert_cmpfloat(fc1->flops, ==, 2.0 * nets[i].batch * (i == 0 ? 9216 : 25088) * 4096);
    g_assert_cmpstr(fc1->dims[fc1->tp_dim].name, ==, "n");
    g_assert_cmpstr(op_named(g, "fc2")->dims[op_named(g, "fc2")->tp_dim].name, ==, "k");
    g_assert_cmpint(op_named(g, "conv1")->tp_dim, ==, -1);
    const MdlOp *loss = op_named(g, "loss"); /* after the column-parallel fc3 */
    g_assert_cmpstr(loss->dims[loss->tp_dim].name, ==, "classes");
    mdl_graph_free(g);
  }
  /* AlexNet conv1: 11x11 stride 4 on 224 -> 55; only dW in the backward (the image is data). */
  MdlGraph *g = parse_or_die("alexnet:batch=8");
  const MdlOp *conv1 = op_named(g, "conv1");
  g_assert_cmpint(conv1->kernel_elems, ==, 121);
  g_assert_cmpint(mdl_graph_tensor(g, conv1->output.tensor)->shape[2], ==, 55);
  g_assert_cmpfloat(conv1->flops, ==, 2.0 * 8 * 64 * 55 * 55 * 3 * 121);
  g_assert_cmpfloat(mdl_op_backward_flops(g, conv1), ==, conv1->flops);
  const MdlOp *conv2 = op_named(g, "conv2");
  g_assert_cmpfloat(mdl_op_backward_flops(g, conv2), ==, 2 * conv2->flops);
  const MdlOp *pool = op_named(g, "pool3");
  g_assert_cmpint(mdl_graph_tensor(g, pool->output.tensor)->shape[3], ==, 6);
  g_assert_cmpfloat(pool->flops, ==, 9.0 * 8 * 256 * 6 * 6);
  g_assert_cmpfloat(mdl_op_backward_flops(g, pool), ==, 2 * pool->flops);
  mdl_graph_free(g);
}

static void test_mlp(void) {
  MdlGraph *g = parse_or_die("mlp");
  g_assert_cmpfloat(mdl_graph_num_params(g), ==, 4.0 * 1024 * 1024);
  g_assert_cmpint(g->batch, ==, 64);
  g_assert_cmpint(g->num_layers, ==, 4);
  mdl_graph_free(g);
  g = parse_or_die("mlp:layers=3,hidden=256,batch=8");
  g_assert_cmpint(mdl_graph_num_ops(g), ==, 4);
  for (int l = 0; l < 3; l++) {
    const MdlOp *op = mdl_graph_op(g, l);
    g_assert_cmpstr(op->dims[op->tp_dim].name, ==, l % 2 ? "k" : "n");
    g_assert_cmpfloat(op->flops, ==, 2.0 * 8 * 256 * 256);
  }
  /* The first layer reads data: its backward is dW only. */
  g_assert_cmpfloat(mdl_op_backward_flops(g, mdl_graph_op(g, 0)), ==, 2.0 * 8 * 256 * 256);
  g_assert_cmpfloat(mdl_op_backward_flops(g, mdl_graph_op(g, 1)), ==, 4.0 * 8 * 256 * 256);
  const MdlOp *loss = op_named(g, "loss");
  g_assert_cmpstr(loss->dims[loss->tp_dim].name, ==, "classes"); /* after a column layer */
  mdl_graph_free(g);
  g = parse_or_die("mlp:layers=2");
  g_assert_cmpint(op_named(g, "loss")->tp_dim, ==, -1); /* after a row layer */
  mdl_graph_free(g);
}

/* --- specs --- */

static void test_spec_overrides(void) {
  MdlGraph *g = parse_or_die("gpt3-1.3b:batch=64,seq=1024,layers=2");
  g_assert_cmpstr(g->name, ==, "gpt3-1.3b:batch=64,seq=1024,layers=2");
  g_assert_cmpint(g->batch, ==, 64);
  g_assert_cmpint(g->seq, ==, 1024);
  g_assert_cmpint(g->num_layers, ==, 2);
  g_assert_cmpint(g->heads, ==, 16);
  const MdlOp *qkv = op_named(g, "layer1.qkv");
  g_assert_cmpfloat(qkv->flops, ==, 2.0 * 64 * 1024 * 2048 * 3 * 2048);
  mdl_graph_free(g);
  /* The family spec defaults to gpt3-125m. */
  MdlGraph *a = parse_or_die("gpt"), *b = parse_or_die("gpt3-125m");
  g_assert_cmpfloat(mdl_graph_num_params(a), ==, mdl_graph_num_params(b));
  g_assert_cmpfloat(mdl_graph_train_flops(a), ==, mdl_graph_train_flops(b));
  mdl_graph_free(a);
  mdl_graph_free(b);
  g = parse_or_die("vgg16:batch=8");
  g_assert_cmpint(g->batch, ==, 8);
  g_assert_cmpint(mdl_graph_op(g, 0)->dims[0].size, ==, 8);
  mdl_graph_free(g);
}

typedef struct {
  const char *spec;
  int code;
  const char *needle;
} BadSpec;

static const BadSpec bad_specs[] = {
    {"nosuch", MDL_ERROR_UNKNOWN_MODEL, "gpt3-175b"},
    {"gpt3-1.4b:batch=2", MDL_ERROR_UNKNOWN_MODEL, "gpt3-1.4b"},
    {"", MDL_ERROR_PARSE, "empty"},
    {"gpt:", MDL_ERROR_PARSE, "key=value"},
    {"gpt:layers", MDL_ERROR_PARSE, "layers"},
    {"gpt:=3", MDL_ERROR_PARSE, "=3"},
    {"gpt:layers=2,,heads=2", MDL_ERROR_PARSE, "key=value"},
    {"gpt:depth=3", MDL_ERROR_PARSE, "depth"},
    {"gpt:depth=3", MDL_ERROR_PARSE, "layers, hidden, heads, seq, vocab, batch"},
    {"gpt:layers=2,layers=3", MDL_ERROR_PARSE, "twice"},
    {"alexnet:layers=2", MDL_ERROR_PARSE, "valid keys: batch"},
    {"gpt:layers=0", MDL_ERROR_INVALID, "layers=0"},
    {"gpt:hidden=-5", MDL_ERROR_INVALID, "hidden=-5"},
    {"gpt:batch=abc", MDL_ERROR_INVALID, "batch=abc"},
    {"gpt:seq=12x", MDL_ERROR_INVALID, "seq=12x"},
    {"gpt:seq=1.5", MDL_ERROR_INVALID, "seq=1.5"},
    {"mlp:hidden=", MDL_ERROR_INVALID, "hidden="},
    {"gpt:vocab=99999999999999999999999", MDL_ERROR_INVALID, "vocab"},
    {"gpt:heads=7", MDL_ERROR_INVALID, "heads=7"},
    {"gpt3-1.3b:heads=3", MDL_ERROR_INVALID, "divisible"},
    {"gpt:layers=100001", MDL_ERROR_INVALID, "layers"},
    {"gpt:batch=1000000000,seq=1000000,vocab=1000000", MDL_ERROR_INVALID, "2^62"},
    {"mlp:hidden=4000000000", MDL_ERROR_INVALID, "2^62"},
    {"vgg16:batch=999999999999", MDL_ERROR_INVALID, "2^62"},
    {"no/such/model.json", MDL_ERROR_PARSE, "no/such/model.json"},
    {"missing.json", MDL_ERROR_PARSE, "missing.json"},
};

static void test_spec_error(gconstpointer data) {
  const BadSpec *c = data;
  GError *error = NULL;
  MdlGraph *g = mdl_graph_parse_spec(c->spec, &error);
  g_assert_null(g);
  g_assert_error(error, MDL_ERROR, c->code);
  if (!strstr(error->message, c->needle))
    g_error("spec \"%s\": message \"%s\" lacks \"%s\"", c->spec, error->message, c->needle);
  g_assert_null(strchr(error->message, '\n'));
  g_error_free(error);
}

/* --- hand-built graphs and validate --- */

/* x[b,k] -> matmul with w[k,n] -> y[b,n] -> relu -> z; batch 4, k 8, n 6. */
static MdlGraph *small_graph(void) {
  MdlGraph *g = mdl_graph_new("small", "test", 4);
  int64_t xs[2] = {4, 8}, ws[2] = {8, 6}, ys[2] = {4, 6};
  int x = mdl_graph_add_tensor(g, "x", 2, xs, FALSE, TRUE);
  int w = mdl_graph_add_tensor(g, "w", 2, ws, TRUE, FALSE);
  int y = mdl_graph_add_tensor(g, "y", 2, ys, FALSE, FALSE);
  int z = mdl_graph_add_tensor(g, "z", 2, ys, FALSE, FALSE);
  MdlOp op;
  memset(&op, 0, sizeof op); /* zero maps past the tensors' dims: add_op resets them to -1 */
  op.name = "mm";
  op.kind = MDL_OP_MATMUL;
  op.ndims = 3;
  op.dims[0] = (MdlDim){"b", 4, MDL_ROLE_SAMPLE, TRUE};
  op.dims[1] = (MdlDim){"n", 6, MDL_ROLE_PARAMETER, TRUE};
  op.dims[2] = (MdlDim){"k", 8, MDL_ROLE_REDUCTION, TRUE};
  op.ninputs = 2;
  op.inputs[0] = (MdlOperand){x, {0, 2}};
  op.inputs[1] = (MdlOperand){w, {2, 1}};
  op.output = (MdlOperand){y, {0, 1}};
  op.layer = -1;
  op.tp_dim = 1;
  mdl_graph_add_op(g, &op);
  memset(&op, 0, sizeof op);
  op.name = "relu";
  op.kind = MDL_OP_ELEMENTWISE;
  op.ndims = 2;
  op.dims[0] = (MdlDim){"b", 4, MDL_ROLE_SAMPLE, TRUE};
  op.dims[1] = (MdlDim){"h", 6, MDL_ROLE_ATTRIBUTE, TRUE};
  op.ninputs = 1;
  op.inputs[0] = (MdlOperand){y, {0, 1}};
  op.output = (MdlOperand){z, {0, 1}};
  op.layer = -1;
  op.tp_dim = -1;
  mdl_graph_add_op(g, &op);
  return g;
}

static void test_small_graph(void) {
  MdlGraph *g = small_graph();
  GError *error = NULL;
  g_assert_true(mdl_graph_validate(g, &error));
  g_assert_no_error(error);
  const MdlOp *mm = mdl_graph_op(g, 0), *relu = mdl_graph_op(g, 1);
  g_assert_cmpint(mm->output.dim_map[2], ==, -1);
  g_assert_cmpint(mm->inputs[2].tensor, ==, -1);
  g_assert_cmpint(mdl_graph_tensor(g, 2)->producer, ==, 0);
  g_assert_cmpint(mdl_graph_tensor(g, 1)->producer, ==, -1);
  g_assert_cmpfloat(mm->flops, ==, 2.0 * 4 * 6 * 8);
  g_assert_cmpfloat(mdl_op_backward_flops(g, mm), ==, mm->flops); /* x is data: dW only */
  g_assert_cmpfloat(relu->flops, ==, 24);                         /* 1 per element by default */
  g_assert_cmpfloat(mdl_op_backward_flops(g, relu), ==, 48);
  g_assert_true(mdl_tensor_needs_grad(g, 1));
  g_assert_true(mdl_tensor_needs_grad(g, 2));
  g_assert_false(mdl_tensor_needs_grad(g, 0));
  g_assert_cmpfloat(mdl_graph_num_params(g), ==, 48);
  g_assert_cmpfloat(mdl_graph_train_flops(g), ==, 2 * 384 + 24 + 48);
  g_assert_cmpint(mdl_op_find_dim(mm, "k"), ==, 2);
  g_assert_cmpint(mdl_op_find_dim(mm, "q"), ==, -1);
  g_assert_cmpint(mdl_op_sample_dim(relu), ==, 0);
  MdlOpKind kind;
  for (int k = 0; k < MDL_OP_KIND_COUNT; k++) {
    g_assert_true(mdl_op_kind_parse(mdl_op_kind_name((MdlOpKind)k), &kind));
    g_assert_cmpint(kind, ==, k);
  }
  g_assert_false(mdl_op_kind_parse("gemm", &kind));
  mdl_graph_free(g);
  /* An op that reads only data (preprocessing) has no backward work. */
  g = mdl_graph_new("data-only", NULL, 4);
  int64_t shape[1] = {4};
  int x = mdl_graph_add_tensor(g, "x", 1, shape, FALSE, TRUE);
  int y = mdl_graph_add_tensor(g, "y", 1, shape, FALSE, FALSE);
  MdlOp op;
  memset(&op, 0, sizeof op);
  op.name = "scale";
  op.kind = MDL_OP_ELEMENTWISE;
  op.ndims = 1;
  op.dims[0] = (MdlDim){"b", 4, MDL_ROLE_SAMPLE, TRUE};
  op.ninputs = 1;
  op.inputs[0] = (MdlOperand){x, {0}};
  op.output = (MdlOperand){y, {0}};
  op.flops_per_element = 3;
  op.tp_dim = -1;
  op.layer = -1;
  mdl_graph_add_op(g, &op);
  g_assert_true(mdl_graph_validate(g, NULL));
  g_assert_cmpstr(g->family, ==, "json");
  g_assert_cmpfloat(mdl_graph_op(g, 0)->flops, ==, 12);
  g_assert_cmpfloat(mdl_op_backward_flops(g, mdl_graph_op(g, 0)), ==, 0);
  mdl_graph_free(g);
}

typedef void (*Breaker)(MdlGraph *g);
typedef struct {
  const char *path;
  Breaker breaker;
  const char *needle;
} BadGraph;

static void break_negative(MdlGraph *g) { mdl_graph_tensor(g, 1)->shape[0] = -8; }
static void break_overflow(MdlGraph *g) { mdl_graph_tensor(g, 1)->shape[0] = INT64_C(1) << 40, mdl_graph_tensor(g, 1)->shape[1] = INT64_C(1) << 40; }
static void break_not_multiple(MdlGraph *g) { mdl_graph_tensor(g, 1)->shape[1] = 9; }
static void break_multiple_sample(MdlGraph *g) { mdl_graph_tensor(g, 0)->shape[0] = 8; }
static void break_map_range(MdlGraph *g) { mdl_graph_op(g, 0)->inputs[0].dim_map[1] = 5; }
static void break_map_past(MdlGraph *g) { mdl_graph_op(g, 0)->inputs[0].dim_map[3] = 0; }
static void break_map_twice(MdlGraph *g) { mdl_graph_op(g, 1)->inputs[0].dim_map[1] = 0; }
static void break_tensor_index(MdlGraph *g) { mdl_graph_op(g, 1)->inputs[0].tensor = 17; }
static void break_reduction_out(MdlGraph *g) { mdl_graph_op(g, 0)->dims[1].role = MDL_ROLE_REDUCTION; }
static void break_two_samples(MdlGraph *g) { mdl_graph_op(g, 1)->dims[1].role = MDL_ROLE_SAMPLE; }
static void break_no_sample(MdlGraph *g) { mdl_graph_op(g, 1)->dims[0].role = MDL_ROLE_ATTRIBUTE; }
static void break_batch(MdlGraph *g) { g->batch = 2; }
static void break_order(MdlGraph *g) { /* relu reads z, its own output */ mdl_graph_op(g, 1)->inputs[0].tensor = 3; }
static void break_forward_ref(MdlGraph *g) { mdl_graph_op(g, 0)->inputs[0].tensor = 3, mdl_graph_op(g, 0)->inputs[0].dim_map[1] = 1; }
static void break_twice(MdlGraph *g) { mdl_graph_op(g, 1)->output.tensor = 2; }
static void break_unproduced(MdlGraph *g) { int64_t s[2] = {4, 6}; mdl_graph_add_tensor(g, "orphan", 2, s, FALSE, FALSE); mdl_graph_op(g, 1)->inputs[0].tensor = 4; }
static void break_write_weight(MdlGraph *g) { mdl_graph_tensor(g, 3)->is_weight = TRUE; }
static void break_empty_name(MdlGraph *g) { mdl_graph_op(g, 1)->name[0] = '\0'; }
static void break_dup_name(MdlGraph *g) { strcpy(mdl_graph_tensor(g, 3)->name, "y"); }
static void break_dup_dim(MdlGraph *g) { strcpy(mdl_graph_op(g, 0)->dims[2].name, "n"); }
static void break_tp_dim(MdlGraph *g) { mdl_graph_op(g, 0)->dims[1].splittable = FALSE; }
static void break_layer(MdlGraph *g) { g->num_layers = 1, mdl_graph_op(g, 0)->layer = 1; }
static void break_weight_sample(MdlGraph *g) { mdl_graph_op(g, 0)->inputs[1].dim_map[0] = 0, mdl_graph_tensor(g, 1)->shape[0] = 4; }

static const BadGraph bad_graphs[] = {
    {"negative-size", break_negative, "size -8"},
    {"overflow", break_overflow, "2^62"},
    {"not-multiple", break_not_multiple, "nor a multiple"},
    {"sample-multiple", break_multiple_sample, "tensor x"},
    {"map-range", break_map_range, "op dim 5"},
    {"map-past-ndims", break_map_past, "past its 2 dims"},
    {"map-twice", break_map_twice, "two tensor dims"},
    {"tensor-index", break_tensor_index, "tensor 17"},
    {"reduction-in-output", break_reduction_out, "reduction dim n"},
    {"two-samples", break_two_samples, "2 sample dims"},
    {"no-sample", break_no_sample, "0 sample dims"},
    {"batch", break_batch, "batch is 2"},
    {"cycle", break_order, "cycle"},
    {"forward-reference", break_forward_ref, "topological"},
    {"produced-twice", break_twice, "produced twice"},
    {"unproduced", break_unproduced, "orphan"},
    {"writes-weight", break_write_weight, "weight"},
    {"empty-name", break_empty_name, "empty name"},
    {"duplicate-name", break_dup_name, "\"y\" is used twice"},
    {"duplicate-dim", break_dup_dim, "\"n\" is used twice"},
    {"tp-dim-unsplittable", break_tp_dim, "not splittable"},
    {"layer-range", break_layer, "layer 1"},
    {"weight-sample", break_weight_sample, "weight w"},
};

static void test_bad_graph(gconstpointer data) {
  const BadGraph *c = data;
  MdlGraph *g = small_graph();
  c->breaker(g);
  GError *error = NULL;
  g_assert_false(mdl_graph_validate(g, &error));
  g_assert_error(error, MDL_ERROR, MDL_ERROR_INVALID);
  if (!strstr(error->message, c->needle))
    g_error("%s: message \"%s\" lacks \"%s\"", c->path, error->message, c->needle);
  g_error_free(error);
  mdl_graph_free(g);
}

/* Heads grouping: a tensor dim may be a whole multiple of the op dim it maps to; conv and
 * pool inputs may differ on spatial dims. */
static void test_grouping(void) {
  MdlGraph *g = small_graph();
  GError *error = NULL;
  mdl_graph_tensor(g, 1)->shape[1] = 18; /* w [8, 18] read by n of size 6 */
  g_assert_true(mdl_graph_validate(g, &error));
  g_assert_no_error(error);
  mdl_graph_tensor(g, 1)->shape[1] = 2; /* a divisor is not a multiple */
  g_assert_false(mdl_graph_validate(g, &error));
  g_assert_error(error, MDL_ERROR, MDL_ERROR_INVALID);
  g_clear_error(&error);
  mdl_graph_free(g);
  g = parse_or_die("alexnet:batch=2");
  MdlOp *pool = mdl_graph_op(g, find_op(g, "pool1"));
  g_assert_cmpint(mdl_graph_tensor(g, pool->inputs[0].tensor)->shape[2], ==, 55);
  g_assert_cmpint(pool->dims[2].size, ==, 27);
  pool->kind = MDL_OP_ELEMENTWISE; /* the exception is for conv and pool inputs only */
  g_assert_false(mdl_graph_validate(g, &error));
  g_assert_error(error, MDL_ERROR, MDL_ERROR_INVALID);
  g_clear_error(&error);
  mdl_graph_free(g);
}

/* --- JSON --- */

/* Not inlined: GCC 12 at -O3 then takes the text's pointers for ones to the local `text`
 * (-Wdangling-pointer in test_json_error). */
static G_GNUC_NO_INLINE char *read_source(const char *relative) {
  g_autofree char *path = g_build_filename(STRATSIM_SOURCE_DIR, relative, NULL);
  char *text = NULL;
  GError *error = NULL;
  g_file_get_contents(path, &text, NULL, &error);
  g_assert_no_error(error);
  return text;
}

static void assert_same_graph(const MdlGraph *a, const MdlGraph *b) {
  g_assert_cmpstr(a->name, ==, b->name);
  g_assert_cmpstr(a->family, ==, b->family);
  g_assert_cmpint(a->batch, ==, b->batch);
  g_assert_cmpint(a->default_dtype, ==, b->default_dtype);
  g_assert_cmpint(a->num_layers, ==, b->num_layers);
  g_assert_cmpint(a->heads, ==, b->heads);
  g_assert_cmpint(a->seq, ==, b->seq);
  g_assert_cmpint(mdl_graph_num_tensors(a), ==, mdl_graph_num_tensors(b));
  g_assert_cmpint(mdl_graph_num_ops(a), ==, mdl_graph_num_ops(b));
  for (int t = 0; t < mdl_graph_num_tensors(a); t++) {
    const MdlTensor *x = mdl_graph_tensor(a, t), *y = mdl_graph_tensor(b, t);
    g_assert_cmpstr(x->name, ==, y->name);
    g_assert_cmpint(x->ndims, ==, y->ndims);
    g_assert_cmpmem(x->shape, sizeof x->shape, y->shape, sizeof y->shape);
    g_assert_cmpint(x->is_weight, ==, y->is_weight);
    g_assert_cmpint(x->is_input, ==, y->is_input);
    g_assert_cmpint(x->producer, ==, y->producer);
  }
  for (int o = 0; o < mdl_graph_num_ops(a); o++) {
    const MdlOp *x = mdl_graph_op(a, o), *y = mdl_graph_op(b, o);
    g_assert_cmpstr(x->name, ==, y->name);
    g_assert_cmpint(x->kind, ==, y->kind);
    g_assert_cmpint(x->ndims, ==, y->ndims);
    for (int d = 0; d < x->ndims; d++) {
      g_assert_cmpstr(x->dims[d].name, ==, y->dims[d].name);
      g_assert_cmpint(x->dims[d].size, ==, y->dims[d].size);
      g_assert_cmpint(x->dims[d].role, ==, y->dims[d].role);
      g_assert_cmpint(x->dims[d].splittable, ==, y->dims[d].splittable);
    }
    g_assert_cmpint(x->ninputs, ==, y->ninputs);
    for (int k = -1; k < MDL_MAX_INPUTS; k++) {
      const MdlOperand *p = k < 0 ? &x->output : &x->inputs[k], *q = k < 0 ? &y->output : &y->inputs[k];
      g_assert_cmpint(p->tensor, ==, q->tensor);
      g_assert_cmpmem(p->dim_map, sizeof p->dim_map, q->dim_map, sizeof q->dim_map);
    }
    g_assert_cmpfloat(x->flops, ==, y->flops);
    g_assert_cmpint(x->layer, ==, y->layer);
    g_assert_cmpint(x->tp_dim, ==, y->tp_dim);
    g_assert_cmpint(MAX(x->kernel_elems, 1), ==, MAX(y->kernel_elems, 1));
    g_assert_cmpfloat(x->flops_per_element, ==, y->flops_per_element);
  }
  g_assert_cmpfloat(mdl_graph_train_flops(a), ==, mdl_graph_train_flops(b));
}

static void test_json_example(void) {
  g_autofree char *text = read_source("model/examples/mlp2.json");
  GError *error = NULL;
  MdlGraph *g = mdl_graph_from_json(text, "mlp2.json", &error);
  g_assert_no_error(error);
  g_assert_cmpstr(g->name, ==, "mlp2");
  g_assert_cmpstr(g->family, ==, "json");
  g_assert_cmpint(mdl_graph_num_ops(g), ==, 4);
  g_assert_cmpfloat(mdl_graph_num_params(g), ==, 512 * 512 + 512 * 10);
  g_assert_cmpfloat(op_named(g, "fc0")->flops, ==, 2.0 * 32 * 512 * 512);
  g_assert_cmpfloat(op_named(g, "relu0")->flops, ==, 32.0 * 512);
  g_assert_cmpfloat(op_named(g, "loss")->flops, ==, 5.0 * 32 * 10);
  g_assert_cmpstr(op_named(g, "fc1")->dims[op_named(g, "fc1")->tp_dim].name, ==, "k");
  g_assert_false(op_named(g, "loss")->dims[1].splittable);
  g_assert_cmpint(op_named(g, "fc1")->layer, ==, 1);
  mdl_graph_free(g);
  /* The same file loads through the CLI spec, and README shows it verbatim. */
  g_autofree char *path = g_build_filename(STRATSIM_SOURCE_DIR, "model/examples/mlp2.json", NULL);
  g = parse_or_die(path);
  mdl_graph_free(g);
  g_autofree char *readme = read_source("model/README.md");
  g_assert_nonnull(strstr(readme, text));
}

static void test_json_round_trip(void) {
  const char *specs[] = {"model/examples/mlp2.json", "gpt:layers=2,hidden=128,heads=4,seq=32,vocab=500,batch=4",
                         "alexnet:batch=2", "mlp:layers=3"};
  for (guint i = 0; i < G_N_ELEMENTS(specs); i++) {
    g_autofree char *path = i == 0 ? g_build_filename(STRATSIM_SOURCE_DIR, specs[0], NULL) : g_strdup(specs[i]);
    MdlGraph *g = parse_or_die(path);
    if (i == 0) { /* a flops override survives */
      mdl_graph_op(g, 1)->flops = 12345;
    }
    g_autofree char *json = mdl_graph_to_json(g);
    GError *error = NULL;
    MdlGraph *back = mdl_graph_from_json(json, "round-trip", &error);
    g_assert_no_error(error);
    assert_same_graph(g, back);
    g_autofree char *again = mdl_graph_to_json(back);
    g_assert_cmpstr(json, ==, again);
    mdl_graph_free(back);
    mdl_graph_free(g);
  }
}

typedef struct {
  const char *name;
  const char *from, *to; /* a replacement applied to the example */
  int code;
  const char *needle;
} BadJson;

static const BadJson bad_json[] = {
    {"malformed", "\"batch\": 32,", "\"batch\": 32,,", MDL_ERROR_PARSE, "line 3"},
    {"no-batch", "\"batch\": 32,", "", MDL_ERROR_PARSE, "missing \"batch\""},
    {"string-batch", "\"batch\": 32,", "\"batch\": \"32\",", MDL_ERROR_PARSE, "batch"},
    {"zero-batch", "\"batch\": 32,", "\"batch\": 0,", MDL_ERROR_INVALID, "batch"},
    {"dtype", "\"fp32\"", "\"fp4\"", MDL_ERROR_INVALID, "dtype"},
    {"zero-shape", "\"shape\": [32, 512], \"input\"", "\"shape\": [0, 512], \"input\"", MDL_ERROR_INVALID, "tensor x: shape[0]"},
    {"fraction-shape", "[512, 10]", "[512, 10.5]", MDL_ERROR_INVALID, "tensor fc1.weight: shape[1]"},
    {"dup-tensor", "\"name\": \"relu0\",      \"shape\"", "\"name\": \"fc0\",      \"shape\"", MDL_ERROR_INVALID, "tensor fc0 is defined twice"},
    {"unknown-kind", "\"kind\": \"elementwise\"", "\"kind\": \"relu\"", MDL_ERROR_INVALID, "op relu0: unknown kind \"relu\""},
    {"unknown-role", "\"role\": \"attribute\"", "\"role\": \"spatial\"", MDL_ERROR_INVALID, "spatial"},
    {"control-unchanged", "\"batch\": 32,", "\"batch\": 32,", 0, ""},
    {"no-name", "{\"name\": \"x\",", "{\"nom\": \"x\",", MDL_ERROR_PARSE, "tensors[0]: missing"},
    {"unknown-dim-name", "{\"tensor\": \"relu0\",      \"dims\": [\"b\", \"k\"]}", "{\"tensor\": \"relu0\",      \"dims\": [\"b\", \"q\"]}", MDL_ERROR_INVALID, "op fc1: inputs[0]: dims[1] names \"q\""},
    {"unknown-tensor", "{\"tensor\": \"x\",", "{\"tensor\": \"xx\",", MDL_ERROR_INVALID, "op fc0: inputs[0]: unknown tensor \"xx\""},
    {"dims-length", "{\"tensor\": \"fc0\", \"dims\": [\"b\", \"h\"]}", "{\"tensor\": \"fc0\", \"dims\": [\"b\"]}", MDL_ERROR_INVALID, "op relu0: inputs[0]"},
    {"forward-reference", "{\"tensor\": \"x\",", "{\"tensor\": \"relu0\",", MDL_ERROR_INVALID, "later op (relu0)"},
    {"cycle", "{\"tensor\": \"fc0\", \"dims\": [\"b\", \"h\"]}", "{\"tensor\": \"relu0\", \"dims\": [\"b\", \"h\"]}", MDL_ERROR_INVALID, "op relu0 reads its own output relu0"},
    {"size-mismatch", "{\"name\": \"h\", \"size\": 512", "{\"name\": \"h\", \"size\": 500", MDL_ERROR_INVALID, "op relu0"},
    {"tp-dim", "\"tp_dim\": \"h\"", "\"tp_dim\": \"z\"", MDL_ERROR_INVALID, "op relu0: \"tp_dim\""},
    {"flops", "\"flops_per_element\": 1", "\"flops_per_element\": -1", MDL_ERROR_INVALID, "op relu0: \"flops_per_element\""},
    {"no-ops", "\"ops\": [", "\"opz\": [", MDL_ERROR_PARSE, "ops"},
    {"splittable", "\"splittable\": false", "\"splittable\": 0", MDL_ERROR_PARSE, "op loss: dims[1]: \"splittable\""},
    {"duplicate-op", "{\"name\": \"fc1\", \"kind\"", "{\"name\": \"fc0\", \"kind\"", MDL_ERROR_INVALID, "op name \"fc0\" is used twice"},
    {"saved", "{\"tensor\": \"fc0\", \"dims\": [\"b\", \"h\"]}", "{\"tensor\": \"fc0\", \"dims\": [\"b\", \"h\"], \"saved\": 0}", MDL_ERROR_PARSE, "op relu0: inputs[0]: \"saved\""},
    {"saved-output", "\"output\": {\"tensor\": \"relu0\", \"dims\": [\"b\", \"h\"]}", "\"output\": {\"tensor\": \"relu0\", \"dims\": [\"b\", \"h\"], \"saved\": false}", MDL_ERROR_INVALID, "inputs only"},
    {"dropout", "\"flops_per_element\": 1", "\"flops_per_element\": 1, \"dropout\": \"yes\"", MDL_ERROR_PARSE, "op relu0: \"dropout\""},
};

static void test_json_error(gconstpointer data) {
  const BadJson *c = data;
  g_autofree char *text = read_source("model/examples/mlp2.json");
  const char *at = strstr(text, c->from);
  if (!at) g_error("%s: \"%s\" not in the example", c->name, c->from);
  GString *s = g_string_new_len(text, at - text);
  g_string_append(s, c->to);
  g_string_append(s, at + strlen(c->from));
  GError *error = NULL;
  MdlGraph *g = mdl_graph_from_json(s->str, "bad.json", &error);
  g_string_free(s, TRUE);
  if (strcmp(c->from, c->to) == 0) { /* a control: the unchanged example loads */
    g_assert_no_error(error);
    mdl_graph_free(g);
    return;
  }
  g_assert_null(g);
  g_assert_error(error, MDL_ERROR, c->code);
  if (!g_str_has_prefix(error->message, "bad.json: ") || !strstr(error->message, c->needle))
    g_error("%s: message \"%s\" lacks \"%s\"", c->name, error->message, c->needle);
  g_assert_null(strchr(error->message, '\n'));
  g_error_free(error);
}

/* Inputs that are not the example with one change. */
static void test_json_misc_errors(void) {
  static const struct {
    const char *text;
    int code;
    const char *needle;
  } cases[] = {
      {"", MDL_ERROR_PARSE, "malformed"},
      {"[1]", MDL_ERROR_PARSE, "object"},
      {"{\"batch\": 4}", MDL_ERROR_PARSE, "tensors"},
      {"{\"batch\": 4, \"tensors\": [], \"ops\": []}", MDL_ERROR_PARSE, "ops"},
      {"{\"batch\": 4, \"tensors\": [{\"name\": \"x\", \"shape\": [4], \"input\": true}],"
       " \"ops\": [{\"name\": \"id\", \"kind\": \"elementwise\","
       " \"dims\": [{\"name\": \"b\", \"size\": 4, \"role\": \"sample\"}],"
       " \"inputs\": [{\"tensor\": \"x\", \"dims\": [\"b\"]}], \"output\": {\"tensor\": \"y\", \"dims\": [\"b\"]}}]}",
       MDL_ERROR_INVALID, "op id: output: unknown tensor \"y\""},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    GError *error = NULL;
    g_assert_null(mdl_graph_from_json(cases[i].text, "t.json", &error));
    g_assert_error(error, MDL_ERROR, cases[i].code);
    if (!strstr(error->message, cases[i].needle))
      g_error("case %u: message \"%s\" lacks \"%s\"", i, error->message, cases[i].needle);
    g_error_free(error);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/model/zoo/gpt3-1.3b/params", test_gpt_1_3b_params);
  g_test_add_func("/model/zoo/gpt3-175b/params", test_gpt_175b_params);
  g_test_add_func("/model/zoo/gpt/layer-flops", test_gpt_layer_flops);
  g_test_add_func("/model/zoo/gpt/structure-and-tp-dims", test_gpt_structure);
  g_test_add_func("/model/zoo/all-names", test_zoo_all);
  g_test_add_func("/model/zoo/cnn", test_cnn);
  g_test_add_func("/model/zoo/mlp", test_mlp);
  g_test_add_func("/model/spec/overrides", test_spec_overrides);
  for (guint i = 0; i < G_N_ELEMENTS(bad_specs); i++) {
    g_autofree char *path = g_strdup_printf("/model/spec/error/%u", i);
    g_test_add_data_func(path, &bad_specs[i], test_spec_error);
  }
  g_test_add_func("/model/graph/small", test_small_graph);
  g_test_add_func("/model/graph/heads-grouping", test_grouping);
  for (guint i = 0; i < G_N_ELEMENTS(bad_graphs); i++) {
    g_autofree char *path = g_strdup_printf("/model/graph/invalid/%s", bad_graphs[i].path);
    g_test_add_data_func(path, &bad_graphs[i], test_bad_graph);
  }
  g_test_add_func("/model/json/example", test_json_example);
  g_test_add_func("/model/json/round-trip", test_json_round_trip);
  g_test_add_func("/model/json/misc-errors", test_json_misc_errors);
  for (guint i = 0; i < G_N_ELEMENTS(bad_json); i++) {
    g_autofree char *path = g_strdup_printf("/model/json/error/%s", bad_json[i].name);
    g_test_add_data_func(path, &bad_json[i], test_json_error);
  }
  return g_test_run();
}
