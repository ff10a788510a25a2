/* Tests of replaying microbatches' resharding (sim/sim_build_replay.c): the task graph built
 * with each microbatch's conversions copied from the first one's is the graph built with every
 * microbatch in full (SimOptions.build_each_microbatch), task for task, edge for edge in the
 * same order, over schedules, memory options, overlap, symmetry on and off, step-expanded
 * collectives, cross-mesh resharding, MoE and context parallelism. */
#include <glib.h>
#include <string.h>

#include "sim/sim.h"
#include "sim/sim_crossmesh.h"
#include "sim/sim-int.h" /* white-box: the graph's arrays */
#include "test-util.h"

/* Every field of every task, the resources, the successor lists (in order), the spans and the
 * program order of @a and @b are equal. */
static void assert_same_graph(const SimTaskGraph *a, const SimTaskGraph *b) {
  g_assert_cmpuint(a->tasks->len, ==, b->tasks->len);
  for (guint i = 0; i < a->tasks->len; i++) {
    const SimTask *x = sim_task_graph_task(a, i), *y = sim_task_graph_task(b, i);
    if (x->duration != y->duration || x->res_begin != y->res_begin || x->nres != y->nres ||
        x->kind != y->kind || x->collective != y->collective || x->op != y->op ||
        x->tensor != y->tensor || x->microbatch != y->microbatch || x->bytes != y->bytes ||
        x->group_size != y->group_size || x->link != y->link || x->phase != y->phase ||
        x->role != y->role)
      g_error("task %u differs", i);
  }
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

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *path = g_strdup_printf("/build/replay/same-graph/%" G_GSIZE_FORMAT, i);
    g_test_add_data_func(path, &cases[i], test_same_graph);
  }
  return g_test_run();
}
