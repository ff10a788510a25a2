/* Tests of sim/: the engine on hand-made task graphs, and whole iterations against closed
 * forms (alpha-beta all-reduce, the GPipe bubble), Megatron's collective counts, determinism. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "costmodel/costmodel.h"
#include "sim/sim.h"
/* White-box: the engine tests run hand-made task graphs (the builder's private API). */
#include "sim/sim-int.h"
#include "test-util.h"
#include "costmodel/cm_tuner.h"

static uint32_t add_task(SimTaskGraph *g, SimTime dur, const uint32_t *res, int nres) {
  SimTask t = {0};
  t.duration = dur;
  t.kind = SIM_TASK_FORWARD;
  t.op = -1;
  return sim_task_graph_add(g, &t, res, nres);
}

/* Two tasks ready at once on one resource run in id order; a third on another resource runs
 * in parallel; a two-resource task waits for both resources. */
static void test_engine_fifo_ties(void) {
  SimTaskGraph *g = sim_task_graph_new(2);
  uint32_t r0 = 0, r1 = 2, both[2] = {0, 2};
  uint32_t a = add_task(g, 10, &r0, 1);
  uint32_t b = add_task(g, 5, &r0, 1);
  uint32_t c = add_task(g, 7, &r1, 1);
  uint32_t d = add_task(g, 3, both, 2);
  sim_task_graph_finish(g);
  GError *error = NULL;
  SimSchedule *s = sim_engine_run(g, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(s->start[a], ==, 0);
  g_assert_cmpuint(s->start[b], ==, 10);
  g_assert_cmpuint(s->start[c], ==, 0);
  g_assert_cmpuint(s->start[d], ==, 15);
  g_assert_cmpuint(s->makespan, ==, 18);
  g_assert_cmpuint(s->events, ==, 4);
  sim_schedule_free(s);
  sim_task_graph_free(g);
}

/* A successor becomes ready when its last predecessor ends; FIFO by ready time, not id. */
static void test_engine_ready_order(void) {
  SimTaskGraph *g = sim_task_graph_new(2);
  uint32_t r0 = 0, r1 = 2;
  uint32_t slow = add_task(g, 100, &r1, 1);
  uint32_t late = add_task(g, 1, &r0, 1);   /* depends on slow: ready at 100 */
  uint32_t fast = add_task(g, 20, &r1, 1);  /* runs after slow on r1: 100..120 */
  uint32_t early = add_task(g, 50, &r0, 1); /* ready at 0 */
  sim_task_graph_edge(g, slow, late);
  sim_task_graph_finish(g);
  SimSchedule *s = sim_engine_run(g, NULL);
  g_assert_cmpuint(s->start[early], ==, 0);
  g_assert_cmpuint(s->start[late], ==, 100);
  g_assert_cmpuint(s->start[fast], ==, 100);
  g_assert_cmpuint(s->makespan, ==, 120);
  sim_schedule_free(s);
  sim_task_graph_free(g);
}

static void test_engine_cycle(void) {
  SimTaskGraph *g = sim_task_graph_new(1);
  uint32_t r0 = 0;
  uint32_t a = add_task(g, 1, &r0, 1), b = add_task(g, 1, &r0, 1);
  sim_task_graph_edge(g, a, b);
  sim_task_graph_edge(g, b, a);
  sim_task_graph_finish(g);
  GError *error = NULL;
  g_assert_null(sim_engine_run(g, &error));
  g_assert_error(error, SIM_ERROR, SIM_ERROR_CYCLE);
  g_assert_nonnull(strstr(error->message, "cycle"));
  g_error_free(error);
  sim_task_graph_free(g);
}

static SimRun *run_opts(const MdlGraph *g, const MdlStrategy *s, const DevCluster *c,
                        const CmParams *p, gboolean expanded) {
  GError *error = NULL;
  SimOptions options = {.no_symmetry = expanded};
  SimRun *run = sim_run_new_with_options(g, s, c, p, &options, &error);
  g_assert_no_error(error);
  g_assert_nonnull(run);
  return run;
}

static SimRun *run_or_die(const MdlGraph *g, const MdlStrategy *s, const DevCluster *c,
                          const CmParams *p) {
  GError *error = NULL;
  SimRun *run = sim_run_new(g, s, c, p, &error);
  g_assert_no_error(error);
  g_assert_nonnull(run);
  return run;
}

/* Pure data parallelism of one dense layer on 4 GPUs: the only communication is the weight's
 * gradient all-reduce, which has nothing to overlap with; it must take exactly the time
 * `stratsim collective` gives (cm_collective_estimate: NCCL's tuner model), start when the
 * backward ends, and the optimizer must start when it ends. */
static void test_dp_allreduce_exact(void) {
  const int p = 4;
  const double intra_GBps = 150.0, intra_us = 3.4;
  DevCluster *c = test_cluster(1, p, intra_GBps, intra_us, 100, 9.6);
  MdlGraph *g = test_chain_graph(1, 4096, 64);
  GError *error = NULL;
  MdlStrategy *s = test_no_host(mdl_strategy_data_parallel(g, c, p, DEV_DTYPE_FP16, &error));
  g_assert_no_error(error);
  CmParams params;
  cm_params_default(&params);
  SimRun *run = run_opts(g, s, c, &params, TRUE);
  double n = 4096.0 * 4096.0 * 2; /* fp16 gradient bytes */
  int group[4] = {0, 1, 2, 3};
  CmCollectiveEstimate e = cm_collective_estimate(c, CM_ALL_REDUCE, group, p, n, NULL);
  SimTime expected = sim_time_from_seconds(e.time_s);
  int syncs = 0;
  SimTime bwd_end = 0, sync_start = 0, sync_end = 0, opt_start = 0;
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t_info;
    sim_run_task(run, i, &t_info);
    const SimTaskInfo *t = &t_info;
    SimTime start = sim_schedule_start(sim_run_schedule(run), i);
    if (t->kind == SIM_TASK_GRAD_SYNC) {
      syncs++;
      g_assert_cmpuint(t->duration, ==, expected);
      g_assert_cmpuint(t->nres, ==, p);
      sync_start = start;
      sync_end = start + t->duration;
    } else if (t->kind == SIM_TASK_BACKWARD) {
      bwd_end = MAX(bwd_end, start + t->duration);
    } else if (t->kind == SIM_TASK_OPTIMIZER) {
      opt_start = start;
    } else {
      g_assert_cmpint(t->kind, ==, SIM_TASK_FORWARD); /* no resharding in pure DP */
    }
  }
  g_assert_cmpint(syncs, ==, 1);
  g_assert_cmpuint(sync_start, ==, bwd_end);
  g_assert_cmpuint(opt_start, ==, sync_end);
  g_assert_cmpfloat_with_epsilon(sim_run_prediction(run)->comm_exposed_s, sim_time_seconds(expected), 1e-15);
  sim_run_free(run);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* Equal stages, free communication, free optimizer: the bubble fraction of GPipe (and 1F1B,
 * which has the same bubble) is (p-1)/(m+p-1) (Huang et al. 2019; Narayanan et al. 2021).
 * Free communication: zero latency and infinite bandwidth (set in the struct: a cluster file
 * refuses it), so every transfer takes exactly 0 ps. */
static void check_bubble(MdlSchedule schedule, int stages, int micro) {
  DevCluster *c = test_cluster(1, stages, 1e6, 0, 8e6, 0);
  c->link[DEV_LINK_INTRA].bandwidth = INFINITY;
  c->link[DEV_LINK_INTER].bandwidth = INFINITY;
  MdlGraph *g = test_chain_graph(stages, 8192, 8 * micro);
  /* The data input needs a gradient too, so every layer runs the same dX and dW kernels. */
  mdl_graph_tensor(g, 0)->is_input = FALSE;
  MdlMegatronConfig cfg = {.tp = 1, .pp = stages, .dp = 1, .microbatch_size = 8,
                           .schedule = schedule, .dtype = DEV_DTYPE_FP16};
  GError *error = NULL;
  MdlStrategy *s = test_no_host(mdl_strategy_megatron(g, c, &cfg, &error));
  g_assert_no_error(error);
  g_assert_cmpint(s->num_microbatches, ==, micro);
  CmParams params;
  cm_params_default(&params);
  params.optimizer_bytes_per_param = 0;
  SimRun *run = run_or_die(g, s, c, &params);
  const SimPrediction *pr = sim_run_prediction(run);
  double expected = (stages - 1.0) / (micro + stages - 1.0);
  g_assert_cmpfloat_with_epsilon(pr->bubble_s / pr->iteration_time_s, expected, 1e-12);
  g_assert_cmpfloat(pr->comm_exposed_s, ==, 0.0);
  sim_run_free(run);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

static void test_gpipe_bubble(void) {
  check_bubble(MDL_SCHEDULE_GPIPE, 4, 8);
  check_bubble(MDL_SCHEDULE_GPIPE, 2, 1);
  check_bubble(MDL_SCHEDULE_GPIPE, 8, 3);
}

static void test_1f1b_bubble(void) {
  check_bubble(MDL_SCHEDULE_1F1B, 4, 8);
  check_bubble(MDL_SCHEDULE_1F1B, 3, 5);
}

/* Megatron tensor parallelism: per layer and microbatch two forward all-reduces (after the
 * row-parallel attention projection and MLP) and two backward ones (the gradients of the
 * column-parallel inputs), plus one each for the vocab-parallel embedding (forward) and the
 * lm_head input (backward); no other resharding collective. */
static void test_megatron_collectives(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-a100", &error);
  g_assert_no_error(error);
  MdlGraph *g = mdl_graph_parse_spec("gpt:layers=3,hidden=512,heads=8,seq=128,vocab=1000,batch=8", &error);
  g_assert_no_error(error);
  MdlStrategy *s = test_no_host(mdl_strategy_parse_spec("megatron:tp=4,dp=2,mb=2", g, c, &error));
  g_assert_no_error(error);
  CmParams params;
  cm_params_default(&params);
  SimRun *run = run_opts(g, s, c, &params, TRUE);
  int counts[CM_COLLECTIVE_COUNT] = {0};
  int grad_syncs = 0;
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t_info;
    sim_run_task(run, i, &t_info);
    const SimTaskInfo *t = &t_info;
    if (t->kind == SIM_TASK_COMM && t->microbatch == 0) {
      counts[t->collective]++;
      g_assert_cmpuint(t->nres, ==, 4); /* tp groups, inside one host */
    }
    if (t->kind == SIM_TASK_GRAD_SYNC) grad_syncs++;
  }
  /* Per microbatch: 2 data-parallel replicas x (forward 2L+1 + backward 2L+1). */
  g_assert_cmpint(counts[CM_ALL_REDUCE], ==, 2 * (2 * (2 * 3 + 1)));
  g_assert_cmpint(counts[CM_ALL_GATHER] + counts[CM_REDUCE_SCATTER] + counts[CM_ALL_TO_ALL] +
                      counts[CM_SEND_RECV], ==, 0);
  g_assert_cmpint(grad_syncs, >, 0);
  sim_run_free(run);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* Sequence parallelism (Korthikanti et al. 2022, section 4.2.2, Fig. 5): the layernorms and
 * dropout/residual adds that tensor parallelism replicates are split along the sequence on the
 * tp axis instead. Each forward all-reduce of a row-parallel output (Partial -> Broadcast)
 * therefore becomes, by SBP resharding, a reduce-scatter into the sequence-split residual
 * (Partial -> Split(s)) and, after the next layernorm, an all-gather into the column-parallel
 * GEMM (Split(s) -> Broadcast): Fig. 5's g = all-gather and g-bar = reduce-scatter, the same
 * bytes on the wire as the all-reduce. Per layer and microbatch the forward has 2 all-gathers
 * and 2 reduce-scatters and no all-reduce. The backward has the conjugates (2 reduce-scatters of
 * the column-parallel input gradients, 2 all-gathers of the row-parallel output gradients) and
 * 2 more all-gathers: the column-parallel GEMMs kept their input as its sequence shard and
 * gather it again for dW (section 4.2.2, "we store only the Y_i^s part ... and perform an
 * extra all-gather in the backward pass"). Outside the layers: the vocab-parallel embedding
 * reduce-scatters into the sequence-split position add, and ln_f's output is all-gathered
 * into lm_head (and again in its backward). */
static void test_megatron_sequence_parallel(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-a100", &error);
  g_assert_no_error(error);
  const int L = 3;
  MdlGraph *g = mdl_graph_parse_spec("gpt:layers=3,hidden=512,heads=8,seq=128,vocab=1000,batch=8", &error);
  g_assert_no_error(error);
  MdlStrategy *s = test_no_host(mdl_strategy_parse_spec("megatron:tp=4,dp=2,mb=2,sp=1", g, c, &error));
  g_assert_no_error(error);
  CmParams params;
  cm_params_default(&params);
  SimRun *run = run_opts(g, s, c, &params, TRUE);
  /* [phase][in a layer][collective], microbatch 0, both data-parallel replicas. */
  int counts[2][2][CM_COLLECTIVE_COUNT] = {{{0}}};
  const double activation_bytes = 2 * 128 * 512 * 2.0; /* a microbatch's [2, 128, 512] bf16 */
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t_info;
    sim_run_task(run, i, &t_info);
    const SimTaskInfo *t = &t_info;
    if (t->kind != SIM_TASK_COMM || t->microbatch != 0) continue;
    g_assert_cmpuint(t->nres, ==, 4); /* tp groups, inside one host */
    gboolean in_layer = mdl_graph_op(g, t->op)->layer >= 0;
    counts[t->phase == SIM_PHASE_BACKWARD][in_layer][t->collective]++;
    if (in_layer) g_assert_cmpfloat(t->bytes, ==, activation_bytes);
  }
  for (int phase = 0; phase < 2; phase++) {
    g_assert_cmpint(counts[phase][1][CM_ALL_GATHER], ==, 2 * L * (phase ? 4 : 2));
    g_assert_cmpint(counts[phase][1][CM_REDUCE_SCATTER], ==, 2 * L * 2);
    g_assert_cmpint(counts[phase][0][CM_ALL_GATHER], ==, 2 * (phase ? 2 : 1));
    g_assert_cmpint(counts[phase][0][CM_REDUCE_SCATTER], ==, 2 * 1);
    for (int in = 0; in < 2; in++)
      g_assert_cmpint(counts[phase][in][CM_ALL_REDUCE] + counts[phase][in][CM_ALL_TO_ALL] +
                          counts[phase][in][CM_SEND_RECV], ==, 0);
  }
  /* The sequence-split layernorms' weights are now replicated over the tp axis too: their
   * gradients are all-reduced over the whole (dp, tp) mesh. */
  gboolean ln_over_tp = FALSE;
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t_info;
    sim_run_task(run, i, &t_info);
    const SimTaskInfo *t = &t_info;
    if (t->kind == SIM_TASK_GRAD_SYNC && t->group_size == 8) ln_over_tp = TRUE;
  }
  g_assert_true(ln_over_tp);
  sim_run_free(run);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* The same inputs give the same JSON, byte for byte (sim_wall_s left out). */
static void test_deterministic(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-a100:nodes=2", &error);
  MdlGraph *g = mdl_graph_parse_spec("gpt:layers=4,hidden=1024,heads=16,seq=512,vocab=5000,batch=32", &error);
  MdlStrategy *s = test_no_host(mdl_strategy_parse_spec("megatron:tp=4,pp=2,dp=2,mb=2", g, c, &error));
  g_assert_no_error(error);
  CmParams params;
  cm_params_default(&params);
  SimRun *a = run_or_die(g, s, c, &params), *b = run_or_die(g, s, c, &params);
  g_autofree char *ja = sim_prediction_to_json(a, FALSE);
  g_autofree char *jb = sim_prediction_to_json(b, FALSE);
  g_assert_cmpstr(ja, ==, jb);
  const SimSchedule *sa = sim_run_schedule(a), *sb = sim_run_schedule(b);
  g_assert_cmpuint(sim_schedule_size(sa), ==, sim_schedule_size(sb));
  for (uint32_t t = 0; t < sim_schedule_size(sa); t++)
    g_assert_cmpuint(sim_schedule_start(sa, t), ==, sim_schedule_start(sb, t));
  sim_run_free(a);
  sim_run_free(b);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* compute + exposed communication + bubble = iteration time; figures are physical. */
static void test_breakdown_sums(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-a100:nodes=2", &error);
  MdlGraph *g = mdl_graph_parse_spec("gpt:layers=4,hidden=1024,heads=16,seq=512,vocab=5000,batch=32", &error);
  MdlStrategy *s = test_no_host(mdl_strategy_parse_spec("megatron:tp=2,pp=2,dp=4,mb=1,schedule=gpipe", g, c, &error));
  g_assert_no_error(error);
  CmParams params;
  cm_params_default(&params);
  SimRun *run = run_or_die(g, s, c, &params);
  const SimPrediction *p = sim_run_prediction(run);
  g_assert_cmpfloat_with_epsilon(p->compute_s + p->comm_exposed_s + p->bubble_s,
                                 p->iteration_time_s, 1e-9);
  g_assert_cmpfloat(p->bubble_s, >, 0);
  g_assert_cmpfloat(p->mfu, >, 0);
  g_assert_cmpfloat(p->mfu, <, 1);
  g_assert_cmpint(p->num_gpus, ==, 16);
  sim_run_free(run);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* Symmetry: simulating one representative of identical replicas gives the expanded graph's
 * answer bit for bit (issue 4), over many strategies, clusters and models. */
typedef struct {
  const char *model, *cluster, *strategy;
  gboolean expect_folded;
} SymmetryCase;

static const SymmetryCase symmetry_cases[] = {
    {"gpt:layers=4,hidden=512,heads=8,seq=256,vocab=4096,batch=32", "dgx-a100:nodes=2", "megatron:tp=8,pp=1,dp=2", TRUE},
    {"gpt:layers=4,hidden=512,heads=8,seq=256,vocab=4096,batch=32", "dgx-a100:nodes=2", "megatron:tp=4,pp=2,dp=2,mb=2", TRUE},
    {"gpt:layers=4,hidden=512,heads=8,seq=256,vocab=4096,batch=32", "dgx-a100:nodes=4", "megatron:tp=2,pp=4,dp=4,mb=1,schedule=gpipe", TRUE},
    {"gpt:layers=4,hidden=512,heads=8,seq=256,vocab=4096,batch=32", "dgx-h100:nodes=2", "megatron:tp=8,pp=2,dp=1,mb=4", TRUE},
    {"gpt:layers=4,hidden=1024,heads=16,seq=256,vocab=4096,batch=32", "dgx-a100:nodes=2", "megatron:tp=16,pp=1,dp=1", TRUE},
    {"gpt:layers=2,hidden=256,heads=4,seq=128,vocab=1024,batch=24", "dgx-a100:nodes=3", "megatron:tp=2,pp=2,dp=6,mb=2", FALSE},
    {"mlp:layers=4,hidden=1024,batch=64", "flexflow-p100", "dp", TRUE},
    {"mlp:layers=4,hidden=1024,batch=64", "flexflow-p100", "megatron:tp=4,pp=2,dp=2,mb=4", TRUE},
    {"mlp:layers=6,hidden=512,batch=48", "flexflow-k80:nodes=3", "megatron:tp=2,pp=3,dp=2,mb=4", TRUE},
    {"alexnet:batch=64", "flexflow-p100", "dp", TRUE},
    {"vgg13:batch=32", "aws-p3.8xlarge", "megatron:tp=2,dp=2,mb=4", TRUE},
    {"mlp:layers=4,hidden=512,batch=32", "piz-daint", "megatron:tp=2,pp=2,dp=4,mb=2", TRUE},
    {"mlp:layers=4,hidden=384,batch=60", "a2-megagpu-16g:nodes=2", "megatron:tp=3,pp=2,dp=5,mb=3", FALSE},
    /* ZeRO, recomputation and sequence parallelism (issue 3). */
    {"gpt:layers=4,hidden=512,heads=8,seq=256,vocab=4096,batch=32", "dgx-a100:nodes=2", "megatron:tp=4,pp=2,dp=2,mb=2,zero=3,recompute=full", TRUE},
    {"gpt:layers=4,hidden=512,heads=8,seq=256,vocab=4096,batch=32", "dgx-a100:nodes=2", "megatron:tp=8,dp=2,mb=4,sp=1,zero=2,recompute=selective", TRUE},
    {"gpt:layers=4,hidden=512,heads=8,seq=256,vocab=4096,batch=32", "dgx-a100:nodes=4", "megatron:tp=2,pp=2,dp=8,mb=1,sp=1,zero=1,wdelay=1", TRUE},
    {"gpt:layers=2,hidden=256,heads=4,seq=128,vocab=1024,batch=24", "dgx-a100:nodes=3", "megatron:tp=2,pp=2,dp=6,mb=2,zero=3,sp=1", FALSE},
    {"mlp:layers=4,hidden=1024,batch=64", "flexflow-p100", "megatron:tp=2,dp=4,mb=4,zero=2,recompute=full", TRUE},
    {"vgg13:batch=32", "aws-p3.8xlarge", "megatron:dp=4,mb=4,zero=3", TRUE},
};

static void test_symmetry_equals_expanded(gconstpointer data) {
  const SymmetryCase *sc = data;
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec(sc->cluster, &error);
  g_assert_no_error(error);
  MdlGraph *g = mdl_graph_parse_spec(sc->model, &error);
  g_assert_no_error(error);
  MdlStrategy *s = test_no_host(mdl_strategy_parse_spec(sc->strategy, g, c, &error));
  g_assert_no_error(error);
  CmParams params;
  cm_params_default(&params);
  SimRun *sym = run_opts(g, s, c, &params, FALSE), *full = run_opts(g, s, c, &params, TRUE);
  const SimPrediction *a = sim_run_prediction(sym), *b = sim_run_prediction(full);
  g_assert_false(b->symmetric);
  g_assert_cmpint(a->symmetric, ==, sc->expect_folded ? TRUE : a->symmetric);
  if (sc->expect_folded) g_assert_cmpint(a->simulated_gpus, <, b->simulated_gpus);
  /* Bit for bit. */
  g_assert_cmpmem(&a->iteration_time_s, sizeof(double), &b->iteration_time_s, sizeof(double));
  g_assert_cmpmem(&a->compute_s, sizeof(double), &b->compute_s, sizeof(double));
  g_assert_cmpmem(&a->comm_exposed_s, sizeof(double), &b->comm_exposed_s, sizeof(double));
  g_assert_cmpmem(&a->bubble_s, sizeof(double), &b->bubble_s, sizeof(double));
  g_assert_cmpint(a->num_gpus, ==, b->num_gpus);
  g_assert_cmpmem(&a->peak_memory_bytes, sizeof(double), &b->peak_memory_bytes, sizeof(double));
  sim_run_free(sym);
  sim_run_free(full);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* DDP-style buckets (issue 4): gradients all-reduced in buckets filled in the order they
 * become ready (the last layer's first), each starting before the backward pass ends. */
static void test_gradient_buckets(void) {
  DevCluster *c = test_cluster(1, 4, 150.0, 3.4, 100, 9.6);
  MdlGraph *g = test_chain_graph(4, 1024, 64); /* fp16 weights of 2 MiB each */
  const char *specs[] = {"dp:bucket_mb=0", "dp:bucket_mb=4", "dp:bucket_mb=25"};
  const int expect[] = {4, 2, 1};
  for (int k = 0; k < 3; k++) {
    GError *error = NULL;
    MdlStrategy *s = test_no_host(mdl_strategy_parse_spec(specs[k], g, c, &error));
    g_assert_no_error(error);
    CmParams params;
    cm_params_default(&params);
    SimRun *run = run_opts(g, s, c, &params, TRUE);
    int syncs = 0;
    SimTime first_sync = UINT64_MAX, bwd_end = 0;
    double bytes = 0;
    for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
      SimTaskInfo t_info;
    sim_run_task(run, i, &t_info);
    const SimTaskInfo *t = &t_info;
      SimTime start = sim_schedule_start(sim_run_schedule(run), i);
      if (t->kind == SIM_TASK_BACKWARD) bwd_end = MAX(bwd_end, start + t->duration);
      if (t->kind != SIM_TASK_GRAD_SYNC) continue;
      syncs++;
      bytes += t->bytes;
      if (start < first_sync) {
        first_sync = start;
        /* The first bucket holds the last layer's weight: ready first. */
        g_assert_cmpstr(mdl_graph_tensor(g, t->tensor)->name, ==, "w3");
      }
    }
    g_assert_cmpint(syncs, ==, expect[k]);
    g_assert_cmpfloat(bytes, ==, 4 * 1024.0 * 1024 * 2);
    if (expect[k] > 1) g_assert_cmpuint(first_sync, <, bwd_end); /* overlaps the backward */
    sim_run_free(run);
    mdl_strategy_free(s);
  }
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* Stages on meshes of different shapes (2x2 with a 2-D split, then 4 with the batch split):
 * the activation and its gradient move by cross-mesh resharding (unit tasks on link
 * resources), the graph stays expanded, and the run is reproducible. */
static void test_crossmesh_stages(void) {
  DevCluster *c = test_cluster(2, 4, 150.0, 3.4, 100, 9.6);
  MdlGraph *g = test_chain_graph(2, 1024, 64);
  const char *json =
      "{\"num_microbatches\": 2, \"meshes\": [{\"shape\": [2, 2], \"devices\": [0, 1, 2, 3]},"
      " {\"shape\": [4], \"devices\": [4, 5, 6, 7]}],"
      " \"ops\": [{\"op\": \"fc0\", \"mesh\": 0, \"stage\": 0, \"split\": [\"b\", \"n\"]},"
      " {\"op\": \"fc1\", \"mesh\": 1, \"stage\": 1, \"split\": [\"b\"]}]}";
  GError *error = NULL;
  MdlStrategy *s = test_no_host(mdl_strategy_from_json(json, "inline", g, c, &error));
  g_assert_no_error(error);
  CmParams params;
  cm_params_default(&params);
  SimRun *a = run_opts(g, s, c, &params, FALSE), *b = run_opts(g, s, c, &params, FALSE);
  g_assert_false(sim_run_prediction(a)->symmetric);
  const SimTaskGraph *ag = sim_run_task_graph(a);
  g_assert_cmpint(sim_task_graph_num_resources(ag), >, 2 * sim_task_graph_num_devices(ag));
  int moves = 0;
  for (uint32_t i = 0; i < sim_run_num_tasks(a); i++) {
    SimTaskInfo t_info;
    sim_run_task(a, i, &t_info);
    const SimTaskInfo *t = &t_info;
    if (t->kind == SIM_TASK_COMM && t->role == SIM_ROLE_WHOLE && t->duration > 0 &&
        (t->collective == CM_SEND_RECV || t->collective == CM_BROADCAST || t->collective == CM_ALL_GATHER))
      moves++;
  }
  g_assert_cmpint(moves, >, 0);
  g_assert_cmpmem(&sim_run_prediction(a)->iteration_time_s, sizeof(double), &sim_run_prediction(b)->iteration_time_s, sizeof(double));
  g_assert_cmpfloat(sim_run_prediction(a)->comm_exposed_s + sim_run_prediction(a)->bubble_s, >, 0);
  sim_run_free(a);
  sim_run_free(b);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/sim/engine/fifo-ties", test_engine_fifo_ties);
  g_test_add_func("/sim/engine/ready-order", test_engine_ready_order);
  g_test_add_func("/sim/engine/cycle", test_engine_cycle);
  g_test_add_func("/sim/dp/allreduce-exact", test_dp_allreduce_exact);
  g_test_add_func("/sim/pipeline/gpipe-bubble", test_gpipe_bubble);
  g_test_add_func("/sim/pipeline/1f1b-bubble", test_1f1b_bubble);
  g_test_add_func("/sim/megatron/collectives", test_megatron_collectives);
  g_test_add_func("/sim/megatron/sequence-parallel", test_megatron_sequence_parallel);
  g_test_add_func("/sim/run/deterministic", test_deterministic);
  g_test_add_func("/sim/run/breakdown-sums", test_breakdown_sums);
  g_test_add_func("/sim/overlap/gradient-buckets", test_gradient_buckets);
  g_test_add_func("/sim/crossmesh/stages", test_crossmesh_stages);
  for (gsize i = 0; i < G_N_ELEMENTS(symmetry_cases); i++) {
    g_autofree char *path = g_strdup_printf("/sim/symmetry/equals-expanded/%zu", i);
    g_test_add_data_func(path, &symmetry_cases[i], test_symmetry_equals_expanded);
  }
  return g_test_run();
}
