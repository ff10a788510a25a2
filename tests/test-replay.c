/* Tests of replaying microbatches' resharding (sim/sim_build_replay.c): the task graph built
 * with each microbatch's conversions copied from the first one's is the graph built with every
 * microbatch in full (SimOptions.build_each_microbatch), task for task, edge for edge in the
 * same order, over schedules, memory options, overlap, symmetry on and off, step-expanded
 * collectives, cross-mesh resharding, MoE and context parallelism; and so is the graph for
 * chain merging, whose data edges are also left out per compute block (sb_chain_repeats_block)
 * rather than one by one. */
#include <glib.h>
#include <string.h>

#include "model/mdl_zoo.h"
#include "sim/sim.h"
#include "sim/sim_crossmesh.h"
#include "sim/sim-int.h" /* white-box: the graph's arrays */
#include "test-util.h"

/* Every field of every task, the resources, the successor lists (in order), the spans and the
 * program order of @a and @b are equal. */
static void assert_same_tasks(const SimTaskGraph *a, const SimTaskGraph *b, guint from) {
  g_assert_cmpuint(a->tasks->len, ==, b->tasks->len);
  for (guint i = from; i < a->tasks->len; i++) { /* field by field: a SimTask has padding */
    const SimTask *x = sim_task_graph_task(a, i), *y = sim_task_graph_task(b, i);
    if (x->duration != y->duration || x->res_begin != y->res_begin || x->nres != y->nres ||
        x->kind != y->kind || x->collective != y->collective || x->op != y->op ||
        x->tensor != y->tensor || x->microbatch != y->microbatch || x->bytes != y->bytes ||
        x->group_size != y->group_size || x->link != y->link || x->phase != y->phase ||
        x->role != y->role)
      g_error("task %u differs", i);
  }
}

static void assert_same_graph(const SimTaskGraph *a, const SimTaskGraph *b) {
  assert_same_tasks(a, b, 0);
  g_assert_cmpuint(a->task_resources->len, ==, b->task_resources->len);
  g_assert_cmpmem(a->task_resources->data, a->task_resources->len * sizeof(uint32_t),
                  b->task_resources->data, b->task_resources->len * sizeof(uint32_t));
  uint32_t n = a->tasks->len;
  g_assert_cmpmem(a->succ_offsets, (n + 1) * sizeof(uint32_t), b->succ_offsets,
                  (n + 1) * sizeof(uint32_t));
  g_assert_cmpmem(a->succ, a->succ_offsets[n] * sizeof(uint32_t), b->succ,
                  b->succ_offsets[n] * sizeof(uint32_t));
  g_assert_cmpmem(a->spans->data, a->spans->len * sizeof(uint32_t), b->spans->data,
                  b->spans->len * sizeof(uint32_t));
  g_assert_cmpuint(a->num_compute, ==, b->num_compute);
  g_assert_cmpmem(a->chain_prev, a->num_compute * sizeof(uint32_t), b->chain_prev,
                  b->num_compute * sizeof(uint32_t));
}

enum { EXPANDED = 1, STEP = 2, CROSSMESH = 4 }; /* Case.flags */
typedef struct {
  const char *model, *strategy;
  int flags;
} Case;

static const char *const cluster = "dgx-a100:nodes=2";

static const Case cases[] = {
    {"gpt3-1.3b:batch=64", "megatron:tp=2,pp=4,dp=2,mb=2,schedule=1f1b", 0},
    {"gpt3-1.3b:batch=64", "megatron:tp=2,pp=4,dp=2,mb=2,schedule=1f1b", EXPANDED},
    {"gpt3-1.3b:batch=64", "megatron:tp=2,pp=4,dp=2,mb=2,schedule=interleaved,vp=2", 0},
    {"gpt3-1.3b:batch=64", "megatron:tp=2,pp=4,dp=2,mb=2,schedule=gpipe", 0},
    {"gpt3-1.3b:batch=64", "megatron:tp=2,pp=4,dp=2,mb=2,wdelay=1", 0},
    {"gpt3-1.3b:batch=64", "megatron:tp=2,pp=4,dp=2,mb=2,sp=1,tp_overlap=1", 0},
    {"gpt3-1.3b:batch=64", "megatron:tp=2,pp=4,dp=2,mb=2,sp=1,tp_overlap=1", EXPANDED},
    {"gpt3-1.3b:batch=64", "megatron:tp=2,pp=4,dp=2,mb=2,schedule=interleaved,vp=2,recompute=full", 0},
    {"gpt3-1.3b:batch=64", "megatron:tp=2,pp=4,dp=2,mb=2,recompute=selective,sp=1", 0},
    {"gpt3-1.3b:batch=64", "megatron:tp=2,pp=4,dp=2,mb=2,zero=3", 0},
    {"gpt3-1.3b:batch=64", "megatron:tp=2,pp=4,dp=2,mb=2,zero=1,overlap=0", 0},
    {"gpt3-1.3b:batch=64", "megatron:tp=2,pp=4,dp=2,mb=2", STEP},
    {"gpt3-1.3b:batch=64", "megatron:tp=2,pp=4,dp=2,mb=2,zero=1,sp=1", EXPANDED | STEP},
    {"gpt3-1.3b:batch=64", "megatron:tp=2,pp=4,dp=2,mb=2", CROSSMESH},
    /* sequence parallelism's re-gathers (copied per microbatch, sim_build_sync.c), alone
     * and with ZeRO-3's gathers over representatives of several devices */
    {"gpt3-1.3b:batch=64", "megatron:tp=2,pp=4,dp=2,mb=2,sp=1", 0},
    {"gpt3-1.3b:batch=64", "megatron:tp=2,pp=4,dp=2,mb=2,zero=3,sp=1,recompute=selective", EXPANDED},
    {"gpt3-1.3b:batch=64", "megatron:tp=2,pp=4,dp=2,mb=2,zero=2", 0},
    {"llama3-8b:batch=16", "megatron:tp=2,pp=2,dp=2,cp=2,mb=1", 0},
    {"qwen1.5-moe-a2.7b:batch=32", "megatron:tp=1,pp=2,dp=8,ep=4,mb=1", 0},
    {"qwen1.5-moe-a2.7b:batch=32", "megatron:tp=1,pp=2,dp=8,ep=4,mb=1", EXPANDED},
    {"u-transformer:batch=256", "dp", 0},
};

/* A run of @k (the full engine, so its graph is the finished one); @each: every microbatch
 * built in full. */
static SimRun *run(const Case *k, gboolean each) {
  SimOptions options = {.no_symmetry = (k->flags & EXPANDED) != 0,
                        .step_collectives = (k->flags & STEP) != 0,
                        .crossmesh = (k->flags & CROSSMESH) != 0,
                        .crossmesh_method = SIM_CROSSMESH_BROADCAST, .build_each_microbatch = each};
  return test_simulate_options(k->model, cluster, k->strategy, &options);
}

static void test_same_graph(gconstpointer data) {
  const Case *k = data;
  SimRun *replayed = run(k, FALSE), *each = run(k, TRUE);
  assert_same_graph(sim_run_task_graph(replayed), sim_run_task_graph(each));
  g_assert_true(sim_run_prediction(replayed)->iteration_time_s ==
                sim_run_prediction(each)->iteration_time_s);
  test_run_free(replayed);
  test_run_free(each);
}

/* @n entries of @size bytes at @a and @b equal (both NULL: equal). */
static void assert_same_array(const void *a, const void *b, gsize n, gsize size) {
  g_assert_true((a == NULL) == (b == NULL));
  if (a) g_assert_cmpmem(a, n * size, b, n * size);
}

/* Graphs for chain merging (sim_build_unfinished with for_merge) are equal: the communication
 * tasks' entries (compute tasks' are ids only), resources, the edge list in order, the
 * programs and the per-block arrays; or, where the builder fell back to a full graph, as
 * assert_same_graph. */
static void assert_same_merge_graph(const SimTaskGraph *a, const SimTaskGraph *b, int nops) {
  g_assert_true((a->program_block == NULL) == (b->program_block == NULL));
  if (!a->program_block) {
    assert_same_graph(a, b);
    return;
  }
  g_assert_cmpuint(a->num_compute, ==, b->num_compute);
  uint32_t nc = a->num_compute, np = a->program_begin[a->num_devices];
  assert_same_tasks(a, b, nc);
  g_assert_cmpuint(a->task_resources->len, ==, b->task_resources->len);
  assert_same_array(a->task_resources->data, b->task_resources->data, a->task_resources->len,
                    sizeof(uint32_t));
  g_assert_cmpuint(a->edges->len, ==, b->edges->len);
  assert_same_array(a->edges->data, b->edges->data, a->edges->len, sizeof(uint32_t));
  g_assert_cmpuint(a->spans->len, ==, b->spans->len);
  assert_same_array(a->spans->data, b->spans->data, a->spans->len, sizeof(uint32_t));
  assert_same_array(a->chain_prev, b->chain_prev, nc, sizeof(uint32_t));
  assert_same_array(a->program_begin, b->program_begin, (gsize)a->num_devices + 1, sizeof(uint32_t));
  assert_same_array(a->program, b->program, np, sizeof(uint32_t));
  assert_same_array(a->program_block, b->program_block, np, sizeof(uint32_t));
  assert_same_array(a->program_pos, b->program_pos, nc, sizeof(uint32_t));
  assert_same_array(a->block_duration, b->block_duration, 4 * (gsize)nops, sizeof(SimTime));
  assert_same_array(a->block_host, b->block_host, 4 * (gsize)nops, sizeof(SimTime));
  assert_same_array(a->block_kernels, b->block_kernels, 4 * (gsize)nops, sizeof(int));
  g_assert_cmpuint(a->host_queue_depth, ==, b->host_queue_depth);
  g_assert_cmpuint(a->host_queue_reach, ==, b->host_queue_reach);
}

/* The graph for merging built with replays and per-block data edges (sb_chain_repeats_block)
 * is the one built microbatch by microbatch, edge by edge. */
static void test_same_merge_graph(gconstpointer data) {
  const Case *k = data;
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec(cluster, &error);
  g_assert_no_error(error);
  MdlGraph *g = mdl_graph_parse_spec(k->model, &error);
  g_assert_no_error(error);
  MdlStrategy *s = mdl_strategy_parse_spec(k->strategy, g, c, &error);
  g_assert_no_error(error);
  CmParams params;
  cm_params_default(&params);
  SimTaskGraph *graphs[2];
  for (int each = 0; each < 2; each++) {
    SimOptions options = {.no_symmetry = (k->flags & EXPANDED) != 0,
                          .step_collectives = (k->flags & STEP) != 0,
                          .crossmesh = (k->flags & CROSSMESH) != 0,
                          .crossmesh_method = SIM_CROSSMESH_BROADCAST,
                          .build_each_microbatch = each, .prediction_only = TRUE};
    graphs[each] = sim_build_unfinished(g, s, c, &params, &options, TRUE, &error);
    g_assert_no_error(error);
  }
  assert_same_merge_graph(graphs[0], graphs[1], mdl_graph_num_ops(g));
  sim_task_graph_free(graphs[0]);
  sim_task_graph_free(graphs[1]);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* sb_op_durations' kernel times kept per key (sim_build.c kernel_time) are the ones computed
 * for each op (build_each_microbatch computes every one): every compute task's duration agrees,
 * over the model zoo, under data parallelism in bf16 and fp8 and, where the model takes it,
 * Megatron's tensor, pipeline and sequence parallelism with overlap. */
static void test_kernel_memo(gconstpointer data) {
  const char *spec = data;
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-h100:nodes=1", &error);
  g_assert_no_error(error);
  MdlGraph *g = mdl_graph_parse_spec(spec, &error);
  g_assert_no_error(error);
  static const char *const strategies[] = {"dp", "dp",
                                           "megatron:tp=2,pp=2,dp=2,mb=2,sp=1,tp_overlap=1"};
  for (int v = 0; v < 3; v++) {
    MdlStrategy *s = mdl_strategy_parse_spec(strategies[v], g, c, &error);
    if (!s) { /* Megatron's strategy on a model it does not take */
      g_test_message("%s: %s", spec, error->message);
      g_assert_cmpint(v, ==, 2);
      g_clear_error(&error);
      continue;
    }
    if (v == 1) s->dtype = DEV_DTYPE_FP8;
    CmParams params;
    cm_params_default(&params);
    SimTaskGraph *graphs[2];
    for (int each = 0; each < 2; each++) {
      SimOptions options = {.build_each_microbatch = each, .prediction_only = TRUE};
      graphs[each] = sim_build_unfinished(g, s, c, &params, &options, FALSE, &error);
      g_assert_no_error(error);
    }
    g_assert_cmpuint(graphs[0]->num_compute, ==, graphs[1]->num_compute);
    for (uint32_t t = 0; t < graphs[0]->num_compute; t++)
      g_assert_cmpuint(sim_task_graph_task(graphs[0], t)->duration, ==,
                       sim_task_graph_task(graphs[1], t)->duration);
    sim_task_graph_free(graphs[0]);
    sim_task_graph_free(graphs[1]);
    mdl_strategy_free(s);
  }
  mdl_graph_free(g);
  dev_cluster_free(c);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *path = g_strdup_printf("/build/replay/same-graph/%" G_GSIZE_FORMAT, i);
    g_test_add_data_func(path, &cases[i], test_same_graph);
    g_autofree char *merge = g_strdup_printf("/build/replay/same-merge-graph/%" G_GSIZE_FORMAT, i);
    g_test_add_data_func(merge, &cases[i], test_same_merge_graph);
  }
  for (const char *const *name = mdl_zoo_names(); *name; name++) {
    g_autofree char *path = g_strdup_printf("/build/replay/kernel-memo/%s", *name);
    g_test_add_data_func(path, *name, test_kernel_memo);
  }
  return g_test_run();
}
