/* Tests of the llama family (model/mdl_zoo_llama.c) and the gpt family's ffn key: parameter
 * counts of the named sizes against their published figures, the graph's structure (GQA
 * projection widths, SwiGLU, RMSNorm weights, tied and untied output layers), FlashAttention
 * against unfused attention in FLOPs and activation memory, errors, and that the family runs
 * under every Megatron option (tp, pp, dp, sp, zero, recompute). */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "costmodel/costmodel.h"
#include "model/mdl_strategy.h"
#include "model/mdl_zoo.h"
#include "sim/sim.h"
#include "test-util.h"

static const MdlTensor *find_tensor(const MdlGraph *g, const char *name) {
  for (int t = 0; t < mdl_graph_num_tensors(g); t++)
    if (strcmp(mdl_graph_tensor(g, t)->name, name) == 0) return mdl_graph_tensor(g, t);
  return NULL;
}

/* Published parameter counts: the Hugging Face model cards' "Model size" (safetensors) for
 * Meta-Llama-3-8B (8.03B), Meta-Llama-3-70B (70.6B) and Mistral-7B-v0.1 (7.24B); the Llama 3
 * paper's 405B (Dubey et al. 2024, Table 3); the Qwen2.5-72B model card's "Number of
 * Parameters: 72.7B". */
typedef struct {
  const char *name;
  double published;
} NamedCount;
static const NamedCount named_counts[] = {
    {"llama3-8b", 8.03e9},   {"llama3-70b", 70.6e9}, {"llama3.1-405b", 405e9},
    {"qwen2.5-72b", 72.7e9}, {"mistral-7b", 7.24e9},
};

static void test_named_params(gconstpointer data) {
  const NamedCount *n = data;
  g_autofree char *spec = g_strdup_printf("%s:batch=1,seq=16", n->name); /* a small graph */
  MdlGraph *g = test_parse_model(spec);
  double params = mdl_graph_num_params(g);
  g_test_message("%s: %.4g parameters, published %.4g (%+.2f%%)", n->name, params, n->published,
                 100 * (params / n->published - 1));
  g_assert_cmpfloat(fabs(params / n->published - 1), <, 0.01);
  /* The closed form the zoo describes agrees with the graph exactly. */
  g_assert_cmpfloat(params, ==, mdl_zoo_llama_params(mdl_zoo_llama_named(n->name)));
  g_assert_cmpstr(g->family, ==, "llama");
  mdl_graph_free(g);
}

#define SMALL "llama:layers=2,hidden=256,heads=8,kv_heads=2,ffn=688,seq=64,vocab=1000,batch=4"

static void test_structure(void) {
  MdlGraph *g = test_parse_model(SMALL ",attn=unfused");
  int64_t h = 256, a = 8, kv = 2, dh = 32, f = 688, v = 1000;
  const MdlTensor *qkv = find_tensor(g, "layer0.qkv.weight");
  g_assert_nonnull(qkv);
  g_assert_cmpint(qkv->shape[0], ==, h); /* Megatron's per-group layout: [h, groups, (r+2) dh] */
  g_assert_cmpint(qkv->shape[1], ==, kv);
  g_assert_cmpint(qkv->shape[2], ==, (a / kv + 2) * dh); /* GQA: one K and V per group */
  const MdlTensor *fc1 = find_tensor(g, "layer1.fc1.weight");
  g_assert_cmpint(fc1->shape[1], ==, 2 * f); /* SwiGLU: gate and up */
  g_assert_cmpint(find_tensor(g, "layer1.fc2.weight")->shape[0], ==, f);
  g_assert_cmpint(find_tensor(g, "layer0.ln1.weight")->shape[0], ==, 1); /* RMSNorm: gamma */
  g_assert_nonnull(find_tensor(g, "lm_head.weight"));                    /* untied */
  g_assert_null(find_tensor(g, "pos_embed.weight"));                     /* RoPE */
  g_assert_nonnull(test_find_op(g, "layer0.rope"));
  g_assert_nonnull(test_find_op(g, "layer0.attn_scores"));
  g_assert_nonnull(test_find_op(g, "layer1.swiglu"));
  /* Tensor-parallel layouts: qkv and fc1 column parallel, attn_proj and fc2 row parallel. */
  const MdlOp *op = test_find_op(g, "layer0.qkv");
  g_assert_cmpstr(op->dims[op->tp_dim].name, ==, "groups");
  op = test_find_op(g, "layer0.fc1");
  g_assert_cmpstr(op->dims[op->tp_dim].name, ==, "n");
  op = test_find_op(g, "layer0.fc2");
  g_assert_cmpstr(op->dims[op->tp_dim].name, ==, "k");
  op = test_find_op(g, "layer0.attn_scores");
  g_assert_cmpstr(op->dims[op->tp_dim].name, ==, "groups");
  g_assert_cmpfloat(op->flops, ==, 2.0 * 4 * a * 64 * 64 * dh);
  /* No dropout anywhere in a Llama. */
  for (int o = 0; o < mdl_graph_num_ops(g); o++) g_assert_false(mdl_graph_op(g, o)->dropout);
  double per_layer = h * (a + 2 * kv) * dh + a * dh * h + 3 * h * f + 2 * h;
  g_assert_cmpfloat(mdl_graph_num_params(g), ==, 2 * per_layer + 2 * v * h + h);
  MdlGraph *tied = test_parse_model(SMALL ",tied=1");
  g_assert_null(find_tensor(tied, "lm_head.weight"));
  g_assert_cmpfloat(mdl_graph_num_params(g) - mdl_graph_num_params(tied), ==, v * h);
  mdl_graph_free(tied);
  mdl_graph_free(g);
}

/* Megatron tp=2 on 2 GPUs, one microbatch of 4 sequences. */
static CmMemory *memory_of(const MdlGraph *g, const DevCluster *c, MdlRecompute recompute) {
  MdlMegatronConfig cfg = {.tp = 2, .pp = 1, .dp = 1, .microbatch_size = 4,
                           .schedule = MDL_SCHEDULE_1F1B, .dtype = DEV_DTYPE_BF16,
                           .recompute = recompute};
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_megatron(g, c, &cfg, &error);
  g_assert_no_error(error);
  CmMemory *mem = cm_memory_per_device(g, s, c);
  mdl_strategy_free(s);
  return mem;
}

/* FlashAttention keeps no s x s tensor: the unfused graph's extra activation bytes are the
 * scores and probabilities, 2 b (a/t) s^2 elements of 2 bytes; its forward attention FLOPs
 * are half the unfused two GEMMs' (causal blocks skipped). */
static void test_flash(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-h100:gpus_per_node=2", &error);
  g_assert_no_error(error);
  MdlGraph *flash = test_parse_model(SMALL ",attn=flash"), *unfused = test_parse_model(SMALL ",attn=unfused");
  g_assert_null(test_find_op(flash, "layer0.attn_scores"));
  const MdlOp *fa = test_find_op(flash, "layer0.attn_flash");
  g_assert_nonnull(fa);
  double b = 4, a = 8, s = 64, dh = 32, t = 2;
  g_assert_cmpfloat(fa->flops, ==, 0.5 * 4 * b * a * s * s * dh);
  g_assert_cmpfloat(test_find_op(unfused, "layer0.attn_scores")->flops +
                        test_find_op(unfused, "layer0.attn_context")->flops, ==, 4 * b * a * s * s * dh);
  g_autofree CmMemory *mf = memory_of(flash, c, MDL_RECOMPUTE_NONE);
  g_autofree CmMemory *mu = memory_of(unfused, c, MDL_RECOMPUTE_NONE);
  double per_layer = 2 * b * (a / t) * s * s * 2;
  g_assert_cmpfloat(mu[0].activations - mf[0].activations, ==, 2 * per_layer);
  g_assert_cmpfloat(mu[0].weights, ==, mf[0].weights);
  /* Selective recomputation drops the unfused core but one layer's; flash has none to drop. */
  g_autofree CmMemory *mus = memory_of(unfused, c, MDL_RECOMPUTE_SELECTIVE);
  g_autofree CmMemory *mfs = memory_of(flash, c, MDL_RECOMPUTE_SELECTIVE);
  g_assert_cmpfloat(mus[0].activations, ==, mf[0].activations + per_layer);
  g_assert_cmpfloat(mfs[0].activations, ==, mf[0].activations);
  /* Time: the fused kernel skips the s x s HBM traffic and the masked half. */
  MdlStrategy *sf, *su;
  SimRun *rf = test_simulate(flash, c, "megatron:tp=2,mb=4", &sf);
  SimRun *ru = test_simulate(unfused, c, "megatron:tp=2,mb=4", &su);
  g_test_message("compute: flash %.6g s, unfused %.6g s", sim_run_prediction(rf)->compute_s,
                 sim_run_prediction(ru)->compute_s);
  g_assert_cmpfloat(sim_run_prediction(rf)->compute_s, <, sim_run_prediction(ru)->compute_s);
  sim_run_free(rf);
  sim_run_free(ru);
  mdl_strategy_free(sf);
  mdl_strategy_free(su);
  mdl_graph_free(flash);
  mdl_graph_free(unfused);
  dev_cluster_free(c);
}

static void test_errors(void) {
  static const struct {
    const char *spec;
    int code;
    const char *needle;
  } cases[] = {
      {"llama:heads=30,kv_heads=8", MDL_ERROR_INVALID, "kv_heads=8"},
      {"llama:hidden=1000,heads=24,kv_heads=8", MDL_ERROR_INVALID, "divisible"},
      {"llama:attn=fast", MDL_ERROR_INVALID, "unfused|flash"},
      {"llama:tied=2", MDL_ERROR_INVALID, "0|1"},
      {"llama:kv_heads=0", MDL_ERROR_INVALID, "kv_heads=0"},
      {"llama:experts=8", MDL_ERROR_PARSE, "kv_heads"},
      {"llama3-70b:layers=200000", MDL_ERROR_INVALID, "exceeds"},
      {"gpt:ffn=0", MDL_ERROR_INVALID, "ffn=0"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    test_assert_model_error(cases[i].spec, cases[i].code, cases[i].needle, NULL);
}

/* Tensor parallelism splits the query groups, as Megatron-Core does: a tp that does not divide
 * kv_heads is refused; head counts with no common layout otherwise (Qwen2.5-0.5B's 14 heads and
 * 2 KV heads of 64) build and run. */
static void test_groups(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-h100", &error);
  g_assert_no_error(error);
  MdlGraph *g = test_parse_model(SMALL); /* kv_heads=2 */
  MdlStrategy *s = mdl_strategy_parse_spec("megatron:tp=4", g, c, &error);
  g_assert_null(s);
  g_assert_error(error, MDL_ERROR, MDL_ERROR_STRATEGY);
  g_assert_nonnull(strstr(error->message, "groups"));
  g_clear_error(&error);
  mdl_graph_free(g);
  g = test_parse_model("llama:layers=2,hidden=896,heads=14,kv_heads=2,ffn=4864,seq=64,vocab=1024,"
                   "batch=4,tied=1");
  s = mdl_strategy_parse_spec("megatron:tp=2", g, c, &error);
  g_assert_no_error(error);
  g_autofree CmMemory *mem = cm_memory_per_device(g, s, c);
  g_assert_cmpfloat(mem[0].weights, >, 0);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* The acceptance case of issue 15: llama3-70b (batch 128, seq 8192) on 64 H100s, tp=8, pp=8,
 * microbatch 1, GPU 0 (pipeline rank 0: the embedding and layers 0-9). Per category:
 *  - weights: bf16, 2 bytes per local parameter: (the embedding's 128256 x 8192 + 10 layers'
 *    GEMMs) / 8 + the 10 layers' RMSNorm weights (replicated); gradients 4 bytes (Megatron's
 *    fp32 main_grad buffer for bf16); optimizer 12 bytes per parameter (fp32 master, m, v).
 *  - activations: 1F1B keeps min(M, P) = 8 microbatches on rank 0; per layer and microbatch
 *    (bytes, s = 8192, h = 8192, t = 8): four replicated [s, h] inputs (ln1, qkv, ln2, fc1)
 *    4 x 2sh, the rotated QKV s (g/t)(r + 2) dh x 2, the context s (a/t) dh x 2, the SwiGLU
 *    input s 2f/t x 2 and output s f/t x 2 = 716 MiB; plus the token ids the embedding keeps.
 *  - with sequence parallelism the four replicated inputs are kept as 1/t shards: 268 MiB.
 *  - the distributed optimizer (zero=1) shards over data-parallel replicas: dp = 1 here, so
 *    it changes nothing; selective recomputation re-runs FlashAttention (time) but frees
 *    nothing (no s x s tensor is kept to begin with). */
static void test_llama3_70b_memory(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-h100:nodes=8", &error);
  g_assert_no_error(error);
  MdlGraph *g = test_parse_model("llama3-70b");
  const char *specs[] = {"megatron:tp=8,pp=8,mb=1", "megatron:tp=8,pp=8,mb=1,zero=1",
                         "megatron:tp=8,pp=8,mb=1,recompute=selective",
                         "megatron:tp=8,pp=8,mb=1,sp=1"};
  double s = 8192, h = 8192, t = 8, dh = 128, f = 28672, v = 128256, a = 64, kv = 8;
  double split = h * (a + 2 * kv) * dh + a * dh * h + 3 * h * f; /* per layer, over tp */
  double local = (v * h + 10 * split) / t + 10 * 2 * h; /* RMSNorm weights replicated */
  double layer = 4 * 2 * s * h + s * (kv / t) * (a / kv + 2) * dh * 2 + s * (a / t) * dh * 2 +
                 s * 2 * f / t * 2 + s * f / t * 2;
  double layer_sp = layer - 4 * 2 * s * h * (1 - 1 / t);
  double tokens = 8 * s * 2;
  for (guint i = 0; i < G_N_ELEMENTS(specs); i++) {
    MdlStrategy *st = mdl_strategy_parse_spec(specs[i], g, c, &error);
    g_assert_no_error(error);
    g_autofree CmMemory *m = cm_memory_per_device(g, st, c);
    g_test_message("%s: weights %.3f gradients %.3f optimizer %.3f activations %.3f GiB", specs[i],
                   m[0].weights / (1 << 30), m[0].gradients / (1 << 30), m[0].optimizer / (1 << 30),
                   m[0].activations / (1 << 30));
    g_assert_cmpfloat(m[0].weights, ==, 2 * local);
    g_assert_cmpfloat(m[0].gradients, ==, 4 * local); /* Megatron's fp32 main_grad (bf16) */
    g_assert_cmpfloat(m[0].optimizer, ==, 12 * local);
    g_assert_cmpfloat(m[0].activations, ==, 8 * 10 * (i == 3 ? layer_sp : layer) + tokens);
    mdl_strategy_free(st);
  }
  g_assert_cmpfloat(layer, ==, 716.0 * (1 << 20));
  g_assert_cmpfloat(layer_sp, ==, 268.0 * (1 << 20));
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* gpt:...,ffn=N: the MLP width changes the parameters by 2 h (ffn - 4h) a layer. */
static void test_gpt_ffn(void) {
  MdlGraph *g4 = test_parse_model("gpt:layers=2,hidden=256,heads=4,seq=64,vocab=1000,batch=8");
  MdlGraph *g3 = test_parse_model("gpt:layers=2,hidden=256,heads=4,seq=64,vocab=1000,batch=8,ffn=768");
  g_assert_cmpfloat(mdl_graph_num_params(g4) - mdl_graph_num_params(g3), ==, 2 * 2 * 256.0 * 256);
  g_assert_cmpint(find_tensor(g3, "layer1.fc2.weight")->shape[0], ==, 768);
  mdl_graph_free(g4);
  mdl_graph_free(g3);
}

/* The family runs under every Megatron option on 8 GPUs. */
static void test_strategies(gconstpointer data) {
  const char *strategy = data;
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-h100", &error);
  g_assert_no_error(error);
  MdlGraph *g = test_parse_model("llama:layers=4,hidden=512,heads=16,kv_heads=8,ffn=1376,seq=256,"
                             "vocab=1024,batch=16");
  MdlStrategy *s;
  SimRun *run = test_simulate(g, c, strategy, &s);
  g_assert_cmpfloat(sim_run_prediction(run)->iteration_time_s, >, 0);
  g_assert_true(sim_run_prediction(run)->fits_memory);
  sim_run_free(run);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  for (guint i = 0; i < G_N_ELEMENTS(named_counts); i++) {
    g_autofree char *path = g_strdup_printf("/model/llama/params/%s", named_counts[i].name);
    g_test_add_data_func(path, &named_counts[i], test_named_params);
  }
  g_test_add_func("/model/llama/structure", test_structure);
  g_test_add_func("/model/llama/flash", test_flash);
  g_test_add_func("/model/llama/errors", test_errors);
  g_test_add_func("/model/llama/query-groups", test_groups);
  g_test_add_func("/model/llama/llama3-70b-memory", test_llama3_70b_memory);
  g_test_add_func("/model/gpt/ffn", test_gpt_ffn);
  static const char *const strategies[] = {
      "dp", "megatron:tp=8", "megatron:tp=2,pp=2,dp=2,mb=2",
      "megatron:tp=4,pp=2,mb=2,sp=1,recompute=selective",
      "megatron:tp=2,dp=4,zero=3,recompute=full", "megatron:pp=2,dp=4,mb=1,schedule=interleaved,vp=2",
      "summa:q=2", "2.5d:q=2,d=2", "3d:q=2"};
  for (guint i = 0; i < G_N_ELEMENTS(strategies); i++) {
    g_autofree char *path = g_strdup_printf("/model/llama/strategy/%s", strategies[i]);
    g_test_add_data_func(path, strategies[i], test_strategies);
  }
  return g_test_run();
}
