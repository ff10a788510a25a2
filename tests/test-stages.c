/* Tests of uneven pipeline stages (Megatron-Core's --decoder-first-pipeline-num-layers and
 * --decoder-last-pipeline-num-layers, `first_layers=` / `last_layers=`): which chunk every layer
 * lands in, with and without virtual stages, DeepSeek-V3's 61 layers on pp=16, the one-line
 * errors, describe and the JSON; and sim_run_stages, the per-rank compute, communication, idle
 * time and memory that `explain` prints. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "sim/sim_stages.h"
#include "test-util.h"

#define GPT10 "gpt:layers=10,hidden=512,heads=8,seq=256,vocab=4096,batch=16"
#define GPT10B "gpt:layers=10,hidden=512,heads=8,seq=256,vocab=4096,batch=24"

static MdlStrategy *parse_or_die(const char *spec, const MdlGraph *g, const DevCluster *c) {
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_parse_spec(spec, g, c, &error);
  g_assert_no_error(error);
  return s;
}

static DevCluster *cluster_or_die(const char *spec) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec(spec, &error);
  g_assert_no_error(error);
  return c;
}

/* Every op of layer l is in chunk @chunk_of_layer[l]; ops before the layers in chunk 0, after
 * them in the last chunk. */
static void check_chunks(const MdlGraph *g, const MdlStrategy *s, const int *chunk_of_layer) {
  gboolean seen = FALSE;
  for (int o = 0; o < mdl_graph_num_ops(g); o++) {
    int layer = mdl_graph_op(g, o)->layer;
    seen |= layer >= 0;
    int expect = layer >= 0 ? chunk_of_layer[layer] : seen ? s->num_stages - 1 : 0;
    g_assert_cmpint(s->configs[o].stage, ==, expect);
  }
}

static void test_assign(void) {
  DevCluster *c = cluster_or_die("dgx-a100");
  MdlGraph *g = test_parse_model(GPT10);
  /* 1 + 3 + 3 + 3 layers on 4 ranks. */
  MdlStrategy *s = parse_or_die("megatron:pp=4,dp=2,mb=1,first_layers=1,last_layers=3", g, c);
  check_chunks(g, s, (const int[]){0, 1, 1, 1, 2, 2, 2, 3, 3, 3});
  g_autofree char *d = mdl_strategy_describe(s, g);
  g_assert_nonnull(strstr(d, "pp=4 first_layers=1 last_layers=3,"));
  /* The JSON keeps every op's stage. */
  g_autofree char *json = mdl_strategy_to_json(s, g);
  GError *error = NULL;
  MdlStrategy *back = mdl_strategy_from_json(json, "test", g, c, &error);
  g_assert_no_error(error);
  for (int o = 0; o < s->num_ops; o++) g_assert_cmpint(back->configs[o].stage, ==, s->configs[o].stage);
  mdl_strategy_free(back);
  mdl_strategy_free(s);
  /* Only the first set apart: 4 + 2 x 3. */
  s = parse_or_die("megatron:pp=3,dp=2,mb=1,first_layers=4", g, c);
  check_chunks(g, s, (const int[]){0, 0, 0, 0, 1, 1, 1, 2, 2, 2});
  mdl_strategy_free(s);
  /* Interleaved (Megatron-Core's order): rank 0 holds 4 layers, 2 in each of its chunks 0 and
   * 2; rank 1 holds 6, 3 in each of chunks 1 and 3. */
  s = parse_or_die("megatron:pp=2,dp=4,mb=1,schedule=interleaved,vp=2,first_layers=4,last_layers=6", g, c);
  check_chunks(g, s, (const int[]){0, 0, 1, 1, 1, 2, 2, 3, 3, 3});
  g_assert_cmpint(mdl_strategy_rank_of_stage(s, 2), ==, 0);
  g_assert_cmpint(mdl_strategy_rank_of_stage(s, 3), ==, 1);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* Stages share devices only on one pipeline rank (mdl_strategy_validate): under vp=2 on 2
 * ranks, chunk 2's ops moved onto chunk 0's mesh (both rank 0) validate, chunk 1's (rank 1)
 * are refused naming both stages and ranks; without interleaving any sharing is refused. */
static void test_shared_devices(void) {
  DevCluster *c = cluster_or_die("dgx-a100");
  MdlGraph *g = test_parse_model(GPT10);
  for (int interleaved = 0; interleaved < 2; interleaved++) {
    for (int moved = 1; moved <= (interleaved ? 2 : 1); moved++) {
      MdlStrategy *s = parse_or_die(interleaved ? "megatron:pp=2,dp=4,mb=1,schedule=interleaved,vp=2,first_layers=4,last_layers=6"
                                                : "megatron:pp=2,dp=4,mb=1", g, c);
      int mesh0 = -1;
      for (int o = 0; o < s->num_ops && mesh0 < 0; o++)
        if (s->configs[o].stage == 0) mesh0 = s->configs[o].mesh;
      for (int o = 0; o < s->num_ops; o++)
        if (s->configs[o].stage == moved) s->configs[o].mesh = mesh0;
      GError *error = NULL;
      gboolean ok = mdl_strategy_validate(s, g, c, &error);
      g_test_message("vp=%d, stage %d on stage 0's mesh: %s", interleaved ? 2 : 1, moved,
                     ok ? "valid" : error->message);
      if (moved == 2) {
        g_assert_no_error(error);
        g_assert_true(ok);
      } else {
        g_assert_false(ok);
        g_assert_nonnull(strstr(error->message, interleaved ? "stages 0 (rank 0) and 1 (rank 1)" : "stages 0 and 1"));
        g_clear_error(&error);
      }
      mdl_strategy_free(s);
    }
  }
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* Megatron-Core's account_for_embedding/loss_in_pipeline_split: the embedding and the loss
 * count as one layer each of the first and last chunks. GPT10 + 2 = 12 over pp=3 x vp=2 = 6
 * chunks of 2: chunk 0 one transformer layer, chunk 5 one, the others two; Llama 3.1 405B's
 * 126 + 2 over pp=8 x vp=8 (Megatron-Bridge's recipe): 1, then 2 in every chunk, then 1. */
static void test_accounted(void) {
  DevCluster *c = cluster_or_die("dgx-a100");
  MdlGraph *g = test_parse_model(GPT10B); /* 12 microbatches: a multiple of pp=3 */
  MdlStrategy *s = parse_or_die("megatron:pp=3,dp=2,mb=1,schedule=interleaved,vp=2,account_embedding=1,account_loss=1", g, c);
  check_chunks(g, s, (const int[]){0, 1, 1, 2, 2, 3, 3, 4, 4, 5});
  g_autofree char *d = mdl_strategy_describe(s, g);
  g_assert_nonnull(strstr(d, "pp=3 account_embedding account_loss,"));
  mdl_strategy_free(s);
  /* 10 + 1 does not split over 4 chunks; the two ways to split unevenly do not mix. */
  test_assert_strategy_error(g, c, "megatron:pp=4,dp=2,mb=1,account_embedding=1", -1,
                             "account_embedding/account_loss: model " GPT10B "'s 10 layers + the "
                             "embedding do not split evenly over pp*vp = 4*1 = 4 pipeline chunks");
  test_assert_strategy_error(g, c, "megatron:pp=2,dp=4,mb=1,account_loss=1,first_layers=4", -1,
                             "two ways to split the pipeline unevenly");
  test_assert_strategy_error(g, c, "megatron:pp=2,dp=4,mb=1,account_loss=2", -1, "account_loss=2 must be 0 or 1");
  mdl_graph_free(g);
  dev_cluster_free(c);
  c = cluster_or_die("dgx-h100:nodes=16");
  g = test_parse_model("llama3.1-405b:batch=64");
  s = parse_or_die("megatron:tp=8,pp=8,dp=2,mb=1,schedule=interleaved,vp=8,account_embedding=1,account_loss=1", g, c);
  int layers_of[64] = {0};
  for (int o = 0; o < mdl_graph_num_ops(g); o++) {
    int layer = mdl_graph_op(g, o)->layer;
    if (layer < 0 || (o > 0 && mdl_graph_op(g, o - 1)->layer == layer)) continue;
    layers_of[s->configs[o].stage]++;
  }
  for (int k = 0; k < 64; k++) g_assert_cmpint(layers_of[k], ==, k == 0 || k == 63 ? 1 : 2);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

static void expect_error(const char *model, const char *spec, const char *needle) {
  DevCluster *c = cluster_or_die("dgx-a100");
  MdlGraph *g = test_parse_model(model);
  test_assert_strategy_error(g, c, spec, -1, needle);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

static void test_errors(void) {
  expect_error(GPT10, "megatron:pp=4,dp=2,first_layers=2",
               "the 8 layers left of model " GPT10 "'s 10 after first_layers=2 and last_layers=0 "
               "do not split evenly over the other 3 pipeline chunks");
  expect_error(GPT10, "megatron:pp=3,dp=2,mb=1,first_layers=4,last_layers=6", "the 0 layers left");
  expect_error(GPT10, "megatron:pp=1,dp=8,first_layers=2", "need pipeline parallelism (pp > 1)");
  expect_error(GPT10, "megatron:pp=2,dp=4,mb=1,schedule=interleaved,vp=2,first_layers=3",
               "first_layers=3 and last_layers=0 must be multiples of vp=2");
  expect_error(GPT10, "megatron:pp=4,dp=2,first_layers=0", "first_layers=0");
  expect_error(GPT10, "megatron:pp=4,dp=2,last_layers=x", "last_layers=x");
  expect_error("alexnet", "megatron:pp=2,dp=4,first_layers=1", "need a model with layers; model alexnet");
}

/* DeepSeek-V3's 61 layers do not split over 16 ranks evenly; 3 + 14 x 4 + 2 do (its first 3
 * layers dense, the rest MoE): the first rank holds the embedding and the dense layers, the
 * middle ranks 4 MoE layers each, the last 2 and the output layer. */
static void test_deepseek_v3(void) {
  DevCluster *c = cluster_or_die("dgx-h100:nodes=32");
  MdlGraph *g = test_parse_model("deepseek-v3");
  g_assert_cmpint(g->num_layers, ==, 61);
  GError *error = NULL;
  g_assert_null(mdl_strategy_parse_spec("megatron:pp=16,dp=16,ep=16,mb=1", g, c, &error));
  g_assert_nonnull(strstr(error->message, "pp=16 does not divide the model's 61 layers"));
  g_clear_error(&error);
  MdlStrategy *s = parse_or_die("megatron:pp=16,dp=16,ep=16,mb=1,first_layers=3,last_layers=2", g, c);
  int layers_of[16] = {0};
  for (int o = 0; o < mdl_graph_num_ops(g); o++) {
    int layer = mdl_graph_op(g, o)->layer;
    if (layer < 0 || (o > 0 && mdl_graph_op(g, o - 1)->layer == layer)) continue;
    layers_of[s->configs[o].stage]++;
  }
  g_assert_cmpint(layers_of[0], ==, 3);
  for (int r = 1; r < 15; r++) g_assert_cmpint(layers_of[r], ==, 4);
  g_assert_cmpint(layers_of[15], ==, 2);
  /* Memory per rank follows: a middle rank's weights are 4 MoE layers'. */
  CmMemory *m = cm_memory_per_device(g, s, c);
  int per_rank = 16;
  g_assert_cmpfloat(m[1 * per_rank].weights, ==, m[2 * per_rank].weights);
  g_assert_cmpfloat(m[0].weights, <, m[1 * per_rank].weights);
  g_test_message("weights per GPU: rank 0 %.2f GiB, middle %.2f GiB, last %.2f GiB",
                 m[0].weights / (1 << 30), m[per_rank].weights / (1 << 30),
                 m[15 * per_rank].weights / (1 << 30));
  g_free(m);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* Per rank: compute + communication + idle is the iteration; the layers and memory are the
 * rank's; the uneven pipeline shifts the idle time (bubble) to the lighter ranks. */
static void test_run_stages(void) {
  DevCluster *c = cluster_or_die("dgx-a100");
  MdlGraph *g = test_parse_model(GPT10);
  MdlStrategy *s = test_no_host(parse_or_die("megatron:pp=4,dp=2,mb=1,first_layers=1,last_layers=3", g, c));
  CmParams params;
  cm_params_default(&params);
  GError *error = NULL;
  SimRun *run = sim_run_new(g, s, c, &params, &error);
  g_assert_no_error(error);
  int n;
  g_autofree SimStage *st = sim_run_stages(run, &n);
  g_assert_cmpint(n, ==, 4);
  g_autofree CmMemory *mem = cm_memory_per_device(g, s, c);
  double iteration = sim_run_prediction(run)->iteration_time_s;
  const int layers[4] = {1, 3, 3, 3};
  for (int r = 0; r < n; r++) {
    g_assert_cmpint(st[r].rank, ==, r);
    g_assert_cmpint(st[r].device, ==, 2 * r);
    g_assert_cmpint(st[r].layers, ==, layers[r]);
    g_assert_cmpfloat(st[r].memory_bytes, ==, mem[2 * r].total);
    g_assert_cmpfloat_with_epsilon(st[r].compute_s + st[r].comm_s + st[r].idle_s, iteration, 1e-9 * iteration);
    g_assert_cmpfloat(st[r].compute_s, >, 0);
  }
  /* Ranks 1 and 2 run the same 3 layers; rank 0 one layer and the embedding: less compute,
   * more idle. */
  g_assert_cmpfloat(fabs(st[1].compute_s - st[2].compute_s), <, 1e-9);
  g_assert_cmpfloat(st[0].compute_s, <, st[1].compute_s);
  g_assert_cmpfloat(st[0].idle_s, >, st[1].idle_s);
  sim_run_free(run);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/stages/uneven/assign", test_assign);
  g_test_add_func("/stages/uneven/errors", test_errors);
  g_test_add_func("/stages/shared-devices", test_shared_devices);
  g_test_add_func("/stages/uneven/accounted", test_accounted);
  g_test_add_func("/stages/uneven/deepseek-v3-pp16", test_deepseek_v3);
  g_test_add_func("/stages/run-stages", test_run_stages);
  return g_test_run();
}
