/* Tests of issue 3's memory options, in the memory model and in the simulated iteration:
 * ZeRO stages 1-3 (Rajbhandari et al. 2020), full and selective activation recomputation and
 * sequence parallelism (Korthikanti et al. 2022), and fits_memory across a capacity boundary.
 * Memory figures are compared with the papers' closed forms; communication and recomputation
 * with the task graph the simulator builds. */
#include <cjson/cJSON.h>
#include <glib.h>
#include <math.h>
#include <string.h>

#include "costmodel/costmodel.h"
#include "sim/sim.h"
#include "test-util.h"
#include "costmodel/cm_tuner.h"

static MdlStrategy *strategy_or_die(const char *spec, const MdlGraph *g, const DevCluster *c) {
  GError *error = NULL;
  MdlStrategy *s = test_no_host(mdl_strategy_parse_spec(spec, g, c, &error));
  if (!s) g_error("%s: %s", spec, error->message);
  return s;
}

static MdlGraph *graph_or_die(const char *spec) {
  GError *error = NULL;
  MdlGraph *g = mdl_graph_parse_spec(spec, &error);
  g_assert_no_error(error);
  return g;
}

static SimRun *run_or_die(const MdlGraph *g, const MdlStrategy *s, const DevCluster *c,
                          gboolean expanded) {
  CmParams params;
  cm_params_default(&params);
  SimOptions options = {.no_symmetry = expanded};
  GError *error = NULL;
  SimRun *run = sim_run_new_with_options(g, s, c, &params, &options, &error);
  g_assert_no_error(error);
  return run;
}

/* Tasks of @kind (and, for communication, collective @coll; -1: any) in @phase (-1: any). */
static int count_tasks(const SimRun *run, SimTaskKind kind, int coll, int phase) {
  int n = 0;
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t_info;
    sim_run_task(run, i, &t_info);
    const SimTaskInfo *t = &t_info;
    if (t->kind != kind) continue;
    if (coll >= 0 && (int)t->collective != coll) continue;
    if (phase >= 0 && (int)t->phase != phase) continue;
    n++;
  }
  return n;
}

/* The task of @kind for (@op, @mb) on the compute stream of @device. */
static uint32_t find_compute(const SimRun *run, SimTaskKind kind, int op, int mb, int device) {
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t_info;
    sim_run_task(run, i, &t_info);
    const SimTaskInfo *t = &t_info;
    if (t->kind == kind && t->op == op && t->microbatch == mb &&
        t->resources[0] == sim_resource_compute(device))
      return i;
  }
  g_error("no %s task of op %d microbatch %d on GPU %d", sim_task_kind_name(kind), op, mb, device);
}

/* --- ZeRO memory: the paper's (2 + 2 + K) Psi model states (Rajbhandari et al. 2020, section
 * 5, Figure 1), partitioned over the Nd data-parallel replicas stage by stage. --- */

typedef struct {
  int stage, tp, dp;
  DevDtype dtype;
} ZeroCase;

static const ZeroCase zero_cases[] = {
    {0, 1, 8, DEV_DTYPE_FP16}, {1, 1, 8, DEV_DTYPE_FP16}, {2, 1, 8, DEV_DTYPE_FP16},
    {3, 1, 8, DEV_DTYPE_FP16}, {3, 2, 4, DEV_DTYPE_FP16}, {2, 2, 4, DEV_DTYPE_FP32},
    {1, 4, 2, DEV_DTYPE_BF16},
};

/* A chain of 4 dense 1024 x 1024 layers: every weight is replicated on the dp axis (split on
 * the tp axis by its output features), so Psi = 4 * 1024^2 / tp parameters per device and
 * Nd = dp. Exact: every term is a power of two. */
static void test_zero_memory(gconstpointer data) {
  const ZeroCase *z = data;
  DevCluster *c = test_cluster(1, 8, 150, 3.4, 100, 9.6);
  MdlGraph *g = test_chain_graph(4, 1024, 64);
  MdlMegatronConfig cfg = {.tp = z->tp, .pp = 1, .dp = z->dp, .microbatch_size = 8,
                           .schedule = MDL_SCHEDULE_1F1B, .dtype = z->dtype, .zero_stage = z->stage};
  GError *error = NULL;
  MdlStrategy *s = test_no_host(mdl_strategy_megatron(g, c, &cfg, &error));
  g_assert_no_error(error);
  g_autofree CmMemory *mem = cm_memory_per_device(g, s, c);
  double psi = 4.0 * 1024 * 1024 / z->tp, nd = z->dp;
  double w = z->dtype == DEV_DTYPE_FP32 ? 4 : 2;  /* weight and gradient bytes */
  double k = z->dtype == DEV_DTYPE_FP32 ? 8 : 12; /* Adam m, v (+ fp32 master under 16 bits) */
  for (int d = 0; d < z->tp * z->dp; d++) {
    g_assert_cmpfloat(mem[d].weights, ==, w * psi / (z->stage >= 3 ? nd : 1));
    g_assert_cmpfloat(mem[d].gradients, ==, w * psi / (z->stage >= 2 ? nd : 1));
    g_assert_cmpfloat(mem[d].optimizer, ==, k * psi / (z->stage >= 1 ? nd : 1));
    /* Stage 3 gathers one layer's weights at a time: the running and the prefetched op's. */
    g_assert_cmpfloat(mem[d].buffers, ==, z->stage >= 3 ? 2 * w * psi / 4 : 0);
  }
  g_test_message("ZeRO-%d tp=%d Nd=%d: model states %.0f bytes = (%g + %g + %g) Psi", z->stage,
                 z->tp, z->dp, mem[0].weights + mem[0].gradients + mem[0].optimizer,
                 mem[0].weights / psi, mem[0].gradients / psi, mem[0].optimizer / psi);
  /* Activations do not depend on the stage. */
  MdlMegatronConfig plain = cfg;
  plain.zero_stage = 0;
  MdlStrategy *s0 = test_no_host(mdl_strategy_megatron(g, c, &plain, &error));
  g_autofree CmMemory *mem0 = cm_memory_per_device(g, s0, c);
  g_assert_cmpfloat(mem[0].activations, ==, mem0[0].activations);
  g_assert_cmpfloat(mem[0].activations, >, 0);
  mdl_strategy_free(s0);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* --- ZeRO communication. --- */

/* Data parallel over 4 GPUs, one microbatch, one bucket per weight. Stage 0: one all-reduce per
 * weight. Stages 1 and 2: each all-reduce becomes a reduce-scatter and, after the optimizer, an
 * all-gather of the same bytes (ZeRO section 7.2.1; the survey's Table IV: ZeRO-1/2 move
 * 2(N-1)/N P, as data parallelism). The optimizer steps a quarter of the parameters from stage 1 on. */
static void test_zero_gradient_sync(void) {
  DevCluster *c = test_cluster(1, 4, 150.0, 3.4, 100, 9.6);
  MdlGraph *g = test_chain_graph(4, 1024, 64);
  const double grad_bytes = 1024.0 * 1024 * 2;
  SimTime ar_duration = 0;
  for (int stage = 0; stage <= 2; stage++) {
    g_autofree char *spec = g_strdup_printf("megatron:dp=4,mb=16,bucket_mb=0,zero=%d", stage);
    MdlStrategy *s = strategy_or_die(spec, g, c);
    g_assert_cmpint(s->num_microbatches, ==, 1);
    SimRun *run = run_or_die(g, s, c, TRUE);
    int ar = 0, rs = 0, ag = 0;
    SimTime rs_duration = 0, ag_duration = 0, opt_end = 0;
    for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
      SimTaskInfo t_info;
    sim_run_task(run, i, &t_info);
    const SimTaskInfo *t = &t_info;
      if (t->kind == SIM_TASK_OPTIMIZER) {
        opt_end = MAX(opt_end, sim_schedule_start(sim_run_schedule(run), i) + t->duration);
        CmParams p;
        cm_params_default(&p);
        double params = 4.0 * 1024 * 1024 / (stage >= 1 ? 4 : 1);
        g_assert_cmpuint(t->duration, ==, sim_time_from_seconds(cm_optimizer_time(&p, &c->device, s->dtype, params)));
      }
      if (t->kind != SIM_TASK_GRAD_SYNC) continue;
      g_assert_cmpfloat(t->bytes, ==, grad_bytes);
      g_assert_cmpuint(t->group_size, ==, 4);
      if (t->collective == CM_ALL_REDUCE) ar++, ar_duration = t->duration;
      if (t->collective == CM_REDUCE_SCATTER) rs++, rs_duration = t->duration;
      if (t->collective == CM_ALL_GATHER) {
        ag++, ag_duration = t->duration;
        g_assert_cmpuint(sim_schedule_start(sim_run_schedule(run), i), >=, opt_end); /* after the step */
      }
    }
    g_assert_cmpint(ar, ==, stage == 0 ? 4 : 0);
    g_assert_cmpint(rs, ==, stage == 1 || stage == 2 ? 4 : 0);
    g_assert_cmpint(ag, ==, stage >= 1 ? 4 : 0);
    if (stage == 1 || stage == 2) {
      /* Each costs what `stratsim collective` says for the group (NCCL's tuner model): a ring
       * reduce-scatter and all-gather of n bytes move (p-1)/p n each, the all-reduce 2(p-1)/p n
       * in one kernel, so the pair pays NCCL's base latency once more. */
      g_assert_cmpuint(rs_duration, ==, ag_duration);
      int group[4] = {0, 1, 2, 3};
      CmCollectiveEstimate e_ar = cm_collective_estimate(c, CM_ALL_REDUCE, group, 4, grad_bytes, NULL);
      CmCollectiveEstimate e_rs = cm_collective_estimate(c, CM_REDUCE_SCATTER, group, 4, grad_bytes, NULL);
      g_assert_cmpuint(ar_duration, ==, sim_time_from_seconds(e_ar.time_s));
      g_assert_cmpuint(rs_duration, ==, sim_time_from_seconds(e_rs.time_s));
      g_assert_cmpuint(2 * rs_duration, >, ar_duration);
    }
    sim_run_free(run);
    mdl_strategy_free(s);
  }
  /* With gradient accumulation, stages 2 and 3 reduce-scatter every microbatch's gradients
   * (DeepSpeed's gradient hooks run each micro-step: the full gradient is never kept);
   * stage 1 reduce-scatters once, at the accumulation boundary (ZeRO section 7.2.1). */
  for (int stage = 1; stage <= 3; stage++) {
    g_autofree char *spec = g_strdup_printf("megatron:dp=4,mb=4,bucket_mb=0,zero=%d", stage);
    MdlStrategy *s = strategy_or_die(spec, g, c);
    g_assert_cmpint(s->num_microbatches, ==, 4);
    SimRun *run = run_or_die(g, s, c, TRUE);
    g_assert_cmpint(count_tasks(run, SIM_TASK_GRAD_SYNC, CM_REDUCE_SCATTER, -1), ==, stage >= 2 ? 16 : 4);
    g_assert_cmpint(count_tasks(run, SIM_TASK_GRAD_SYNC, CM_ALL_REDUCE, -1), ==, 0);
    g_assert_cmpint(count_tasks(run, SIM_TASK_GRAD_SYNC, CM_ALL_GATHER, -1), ==, stage <= 2 ? 4 : 0);
    sim_run_free(run);
    mdl_strategy_free(s);
  }
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* ZeRO-3: every FSDP unit (here a layer of one matmul) is all-gathered over the data-parallel
 * group before its forward and again before its backward, per microbatch (no caching across
 * microbatches); under recomputation the backward's gather also feeds the recomputed forward,
 * which runs inside the unit's backward (FSDP with activation checkpointing). */
static void test_zero3_parameter_gathers(void) {
  DevCluster *c = test_cluster(1, 4, 150.0, 3.4, 100, 9.6);
  MdlGraph *g = test_chain_graph(4, 1024, 64);
  const int L = 4, M = 2;
  for (int recompute = 0; recompute < 2; recompute++) {
    MdlStrategy *s = strategy_or_die(recompute ? "megatron:dp=4,mb=8,zero=3,recompute=full"
                                               : "megatron:dp=4,mb=8,zero=3", g, c);
    g_assert_cmpint(s->num_microbatches, ==, M);
    SimRun *run = run_or_die(g, s, c, TRUE);
    g_assert_cmpint(count_tasks(run, SIM_TASK_COMM, CM_ALL_GATHER, SIM_PHASE_FORWARD), ==, L * M);
    g_assert_cmpint(count_tasks(run, SIM_TASK_COMM, CM_ALL_GATHER, SIM_PHASE_BACKWARD), ==, L * M);
    /* Each gather moves the layer's whole fp16 weight and ends before the use starts. */
    for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
      SimTaskInfo t_info;
    sim_run_task(run, i, &t_info);
    const SimTaskInfo *t = &t_info;
      if (t->kind != SIM_TASK_COMM) continue;
      g_assert_cmpint(t->collective, ==, CM_ALL_GATHER);
      g_assert_cmpfloat(t->bytes, ==, 1024.0 * 1024 * 2);
      g_assert_true(mdl_graph_tensor(g, t->tensor)->is_weight);
      SimTime end = sim_schedule_start(sim_run_schedule(run), i) + t->duration;
      for (int dev = 0; dev < 4; dev++) {
        SimTaskKind use = t->phase == SIM_PHASE_FORWARD ? SIM_TASK_FORWARD : SIM_TASK_BACKWARD;
        uint32_t u = find_compute(run, use, t->op, t->microbatch, dev);
        g_assert_cmpuint(sim_schedule_start(sim_run_schedule(run), u), >=, end);
        if (recompute && use == SIM_TASK_BACKWARD) {
          u = find_compute(run, SIM_TASK_RECOMPUTE, t->op, t->microbatch, dev);
          g_assert_cmpuint(sim_schedule_start(sim_run_schedule(run), u), >=, end);
        }
      }
    }
    sim_run_free(run);
    mdl_strategy_free(s);
  }
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* --- Recomputation in the simulator. --- */

/* Full recomputation on one GPU: exactly one recomputed forward per layer and microbatch, each
 * as long as the layer's forward and run between the forward and the backward of its layer,
 * and the iteration takes exactly their sum longer (nothing overlaps on one device). */
static void test_full_recompute_time(void) {
  DevCluster *c = test_cluster(1, 1, 150.0, 3.4, 100, 9.6);
  MdlGraph *g = test_chain_graph(4, 1024, 64);
  MdlStrategy *base = strategy_or_die("megatron:dp=1,mb=16", g, c);
  MdlStrategy *full = strategy_or_die("megatron:dp=1,mb=16,recompute=full", g, c);
  SimRun *a = run_or_die(g, base, c, TRUE), *b = run_or_die(g, full, c, TRUE);
  int L = 4, M = full->num_microbatches;
  g_assert_cmpint(M, ==, 4);
  g_assert_cmpint(count_tasks(a, SIM_TASK_RECOMPUTE, -1, -1), ==, 0);
  g_assert_cmpint(count_tasks(b, SIM_TASK_RECOMPUTE, -1, -1), ==, L * M);
  SimTime extra = 0;
  for (uint32_t i = 0; i < sim_run_num_tasks(b); i++) {
    SimTaskInfo t_info;
    sim_run_task(b, i, &t_info);
    const SimTaskInfo *t = &t_info;
    if (t->kind != SIM_TASK_RECOMPUTE) continue;
    uint32_t f = find_compute(b, SIM_TASK_FORWARD, t->op, t->microbatch, 0);
    uint32_t bw = find_compute(b, SIM_TASK_BACKWARD, t->op, t->microbatch, 0);
    SimTaskInfo forward;
    sim_run_task(b, f, &forward);
    g_assert_cmpuint(t->duration, ==, forward.duration);
    g_assert_cmpuint(sim_schedule_start(sim_run_schedule(b), i), >=, sim_schedule_start(sim_run_schedule(b), f) + t->duration);
    g_assert_cmpuint(sim_schedule_start(sim_run_schedule(b), i) + t->duration, <=, sim_schedule_start(sim_run_schedule(b), bw));
    extra += t->duration;
  }
  g_assert_cmpuint(extra, >, 0);
  g_assert_cmpuint(sim_schedule_makespan(sim_run_schedule(b)), ==, sim_schedule_makespan(sim_run_schedule(a)) + extra);
  g_test_message("full recomputation: %d recomputed forwards, +%.6g s on %.6g s", L * M,
                 sim_time_seconds(extra), sim_run_prediction(a)->iteration_time_s);
  sim_run_free(a);
  sim_run_free(b);
  mdl_strategy_free(base);
  mdl_strategy_free(full);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* GPT under tensor parallelism: full recomputation re-runs every op of a layer (12 per layer)
 * before the layer's first backward, and with it the layer's two forward all-reduces;
 * selective recomputation re-runs only the attention core (scores, softmax, context: 3 per
 * layer, Korthikanti et al. 2022, section 4.1) and no collective. */
static void test_recompute_gpt(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-a100", &error);
  g_assert_no_error(error);
  MdlGraph *g = graph_or_die("gpt:layers=3,hidden=512,heads=8,seq=128,vocab=1024,batch=8");
  const int L = 3;
  const char *modes[] = {"none", "selective", "full"};
  int all_reduces[3] = {0};
  double times[3];
  for (int m = 0; m < 3; m++) {
    g_autofree char *spec = g_strdup_printf("megatron:tp=4,dp=2,mb=2,recompute=%s", modes[m]);
    MdlStrategy *s = strategy_or_die(spec, g, c);
    int M = s->num_microbatches;
    SimRun *run = run_or_die(g, s, c, TRUE);
    int per_layer = m == 0 ? 0 : m == 1 ? 3 : 12;
    g_assert_cmpint(count_tasks(run, SIM_TASK_RECOMPUTE, -1, -1), ==, per_layer * L * M * 8);
    for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
      SimTaskInfo t_info;
    sim_run_task(run, i, &t_info);
    const SimTaskInfo *t = &t_info;
      if (t->kind == SIM_TASK_COMM && t->collective == CM_ALL_REDUCE && t->microbatch == 0)
        all_reduces[m]++;
      if (t->kind != SIM_TASK_RECOMPUTE) continue;
      const MdlOp *op = mdl_graph_op(g, t->op);
      g_assert_cmpint(op->layer, >=, 0);
      if (m == 1) g_assert_true(op->attention_core);
      /* Before the layer's first backward (residual2's) on the same GPU and microbatch. */
      g_autofree char *name = g_strdup_printf("layer%d.residual2", op->layer);
      int first_bwd = -1;
      for (int o = 0; o < mdl_graph_num_ops(g); o++)
        if (strcmp(mdl_graph_op(g, o)->name, name) == 0) first_bwd = o;
      int dev = sim_resource_device(t->resources[0]);
      uint32_t bw = find_compute(run, SIM_TASK_BACKWARD, first_bwd, t->microbatch, dev);
      if (m == 2) g_assert_cmpuint(sim_schedule_start(sim_run_schedule(run), i) + t->duration, <=, sim_schedule_start(sim_run_schedule(run), bw));
    }
    times[m] = sim_run_prediction(run)->iteration_time_s;
    sim_run_free(run);
    mdl_strategy_free(s);
  }
  /* Full recomputation: per microbatch 2 all-reduces per layer again, on 2 replicas. */
  g_assert_cmpint(all_reduces[2], ==, all_reduces[0] + 2 * 2 * L);
  g_assert_cmpint(all_reduces[1], ==, all_reduces[0]);
  g_assert_cmpfloat(times[0], <, times[1]);
  g_assert_cmpfloat(times[1], <, times[2]);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* --- Activation memory per transformer layer: Korthikanti et al. 2022, equations 1-4 and
 * section 5 (16-bit activations, s sequence, b microbatch, h hidden, a heads, t tensor
 * parallel). The GPT zoo keeps what section 4.1 lists (see model/mdl_zoo_gpt.c), so the model
 * reproduces the closed forms exactly: 34 sbh = 2 (ln1 input) + 2 (QKV input) + 6 (Q, K, V)
 * + 2 (projection input) + 1 (its dropout mask) + 2 (ln2 input) + 2 (fc1 input) + 8 (GeLU
 * input) + 8 (fc2 input) + 1 (its dropout mask); 5as/h = 2 (softmax input: Megatron keeps its
 * output, of the same size) + 1 (attention dropout mask) + 2 (context's probabilities). --- */

typedef struct {
  const char *name;
  const char *options;  /* appended to "megatron:dp=1,mb=4,dtype=fp16" */
  int t;
  double terms;         /* the closed form, in units of sbh */
} KorthikantiCase;

/* s = 512, b = 4, h = 1024, a = 16: as/h = 8. */
#define K_AS_H 8.0
static const KorthikantiCase korthikanti_cases[] = {
    {"none", "", 1, 34 + 5 * K_AS_H},                                /* eq. 1 */
    {"tp", ",tp=8", 8, 10 + 24 / 8.0 + 5 * K_AS_H / 8},              /* eq. 2 */
    {"tp-sp", ",tp=8,sp=1", 8, (34 + 5 * K_AS_H) / 8},               /* eq. 4 */
    {"selective", ",recompute=selective", 1, 34},                     /* section 5 */
    {"tp-sp-selective", ",tp=8,sp=1,recompute=selective", 8, 34 / 8.0}, /* eq. 6 */
    {"full", ",recompute=full", 1, 2},                                /* section 4.1: 2sbh */
    {"tp-sp-full", ",tp=8,sp=1,recompute=full", 8, 2 / 8.0},
};

static double layer_activation_bytes(const char *options, int layers) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-a100", &error);
  g_autofree char *model =
      g_strdup_printf("gpt:layers=%d,hidden=1024,heads=16,seq=512,vocab=1024,batch=4", layers);
  MdlGraph *g = graph_or_die(model);
  g_autofree char *spec = g_strdup_printf("megatron:dp=1,mb=4,dtype=fp16%s", options);
  MdlStrategy *s = strategy_or_die(spec, g, c);
  g_autofree CmMemory *mem = cm_memory_per_device(g, s, c);
  double bytes = mem[0].activations;
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
  return bytes;
}

/* One layer's activations: the difference between 3 and 2 layers (embedding, final layernorm,
 * logits and a recomputed group's working set are the same in both). */
static void test_korthikanti(gconstpointer data) {
  const KorthikantiCase *k = data;
  double per_layer = layer_activation_bytes(k->options, 3) - layer_activation_bytes(k->options, 2);
  double sbh = 512.0 * 4 * 1024;
  double expected = sbh * k->terms;
  g_test_message("%s: per layer %.0f bytes, Korthikanti %.0f (%.4g sbh, t=%d)", k->name,
                 per_layer, expected, per_layer / sbh, k->t);
  g_assert_cmpfloat(fabs(per_layer - expected), <=, 1e-9 * expected);
}

/* The working set of recomputation counts once per device: one layer's (full) or one layer's
 * attention core (selective) activations, for one microbatch. */
static void test_recompute_working_set(void) {
  double none = layer_activation_bytes("", 2), sel = layer_activation_bytes(",recompute=selective", 2),
         full = layer_activation_bytes(",recompute=full", 2);
  double sbh = 512.0 * 4 * 1024;
  /* Selective drops 5as/h sbh from each of the 2 layers and holds it once. */
  g_assert_cmpfloat(fabs((none - sel) - 5 * K_AS_H * sbh), <=, 1e-9 * none);
  /* Full keeps 2 sbh of each layer's 34 + 5as/h and holds one layer's rest once. */
  g_assert_cmpfloat(fabs((none - full) - (34 + 5 * K_AS_H - 2) * sbh), <=, 1e-9 * none);
}

/* --- fits_memory. --- */

/* GPT-3 6.7B on 8 A100-80GB with data parallelism: 16 bytes per parameter (107 GB) cannot fit;
 * ZeRO-1 partitions the 12 optimizer bytes 8 ways and fits (Rajbhandari et al. 2020's 7.5B
 * example: 120 GB at Nd = 1, 31.4 GB under Pos at Nd = 64). */
static void test_fits_zero(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-a100", &error);
  MdlGraph *g = graph_or_die("gpt3-6.7b:batch=8");
  gboolean fits[2];
  for (int stage = 0; stage < 2; stage++) {
    g_autofree char *spec = g_strdup_printf("megatron:dp=8,mb=1,zero=%d,recompute=full", stage);
    MdlStrategy *s = strategy_or_die(spec, g, c);
    SimRun *run = run_or_die(g, s, c, FALSE);
    fits[stage] = sim_run_prediction(run)->fits_memory;
    g_test_message("zero=%d: peak %.3g GB of %.3g", stage, sim_run_prediction(run)->peak_memory_bytes / 1e9,
                   sim_run_prediction(run)->memory_capacity_bytes / 1e9);
    sim_run_free(run);
    mdl_strategy_free(s);
  }
  g_assert_false(fits[0]);
  g_assert_true(fits[1]);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* A capacity exactly at the peak fits, one byte less does not; with two pipeline ranks whose
 * peaks differ (rank 0 holds more microbatches under 1F1B), a capacity between the two fails:
 * any device over capacity makes the strategy not fit. */
static void test_fits_boundary(void) {
  DevCluster *c = test_cluster(1, 2, 150.0, 3.4, 100, 9.6);
  MdlGraph *g = test_chain_graph(2, 1024, 64);
  MdlStrategy *s = strategy_or_die("megatron:pp=2,dp=1,mb=8", g, c);
  g_autofree CmMemory *mem = cm_memory_per_device(g, s, c);
  g_assert_cmpfloat(mem[0].total, >, mem[1].total);
  double caps[4] = {mem[0].total, mem[0].total - 1, (mem[0].total + mem[1].total) / 2, mem[1].total};
  gboolean expect[4] = {TRUE, FALSE, FALSE, FALSE};
  for (int k = 0; k < 4; k++) {
    c->device.memory_bytes = caps[k];
    SimRun *run = run_or_die(g, s, c, TRUE);
    g_assert_cmpint(sim_run_prediction(run)->fits_memory, ==, expect[k]);
    g_assert_cmpint(sim_run_prediction(run)->peak_memory_device, ==, 0);
    sim_run_free(run);
  }
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* --- Formats. --- */

/* The options survive the strategy JSON and appear in the prediction JSON; a GPT graph written
 * to JSON and read back keeps what its ops save (same memory, byte for byte). */
static void test_formats(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-a100", &error);
  MdlGraph *g = graph_or_die("gpt:layers=2,hidden=512,heads=8,seq=128,vocab=1024,batch=8");
  MdlStrategy *s = strategy_or_die("megatron:tp=4,dp=2,mb=2,zero=2,recompute=selective,sp=1", g, c);
  g_autofree char *json = mdl_strategy_to_json(s, g);
  MdlStrategy *back = test_no_host(mdl_strategy_from_json(json, "round-trip", g, c, &error));
  g_assert_no_error(error);
  g_assert_cmpint(back->zero_stage, ==, 2);
  g_assert_cmpint(back->recompute, ==, MDL_RECOMPUTE_SELECTIVE);
  g_assert_true(back->sequence_parallel);
  g_assert_cmpmem(back->configs, sizeof(MdlOpConfig) * (gsize)s->num_ops, s->configs,
                  sizeof(MdlOpConfig) * (gsize)s->num_ops);
  g_autofree char *graph_json = mdl_graph_to_json(g);
  MdlGraph *g2 = mdl_graph_from_json(graph_json, "round-trip", &error);
  g_assert_no_error(error);
  g_autofree CmMemory *m1 = cm_memory_per_device(g, s, c);
  g_autofree CmMemory *m2 = cm_memory_per_device(g2, back, c);
  g_assert_cmpmem(m1, sizeof(CmMemory) * 8, m2, sizeof(CmMemory) * 8);
  SimRun *run = run_or_die(g, s, c, FALSE);
  g_autofree char *pred = sim_prediction_to_json(run, FALSE);
  cJSON *j = cJSON_Parse(pred);
  cJSON *st = cJSON_GetObjectItem(j, "strategy");
  g_assert_cmpfloat(cJSON_GetObjectItem(st, "zero")->valuedouble, ==, 2);
  g_assert_cmpstr(cJSON_GetStringValue(cJSON_GetObjectItem(st, "recompute")), ==, "selective");
  g_assert_true(cJSON_IsTrue(cJSON_GetObjectItem(st, "sequence_parallel")));
  g_assert_true(cJSON_IsNumber(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "memory"), "buffers_bytes")));
  cJSON_Delete(j);
  /* Bad values name the field. */
  const char *bad[] = {"{\"zero\": 4, \"meshes\": [{\"shape\": [1], \"devices\": [0]}], \"default\": {}}",
                       "{\"recompute\": \"most\", \"meshes\": [{\"shape\": [1], \"devices\": [0]}], \"default\": {}}",
                       "{\"sequence_parallel\": 1, \"meshes\": [{\"shape\": [1], \"devices\": [0]}], \"default\": {}}"};
  const char *needle[] = {"zero", "recompute", "sequence_parallel"};
  for (int k = 0; k < 3; k++) {
    MdlStrategy *x = test_no_host(mdl_strategy_from_json(bad[k], "bad.json", g, c, &error));
    g_assert_null(x);
    g_assert_nonnull(strstr(error->message, needle[k]));
    g_clear_error(&error);
  }
  sim_run_free(run);
  mdl_strategy_free(back);
  mdl_strategy_free(s);
  mdl_graph_free(g2);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* Megatron-LM accumulates a bf16 model's gradients in an fp32 main_grad buffer
 * (accumulate_allreduce_grads_in_fp32, forced by --bf16: cm_framework_grad_bytes): 4 bytes per
 * parameter under megatron-lm, 2 with fp16 or without Megatron's buffer (framework none). */
static void test_megatron_fp32_grads(void) {
  DevCluster *c = test_cluster(1, 8, 150, 3.4, 100, 9.6);
  MdlGraph *g = test_chain_graph(4, 1024, 64);
  static const struct {
    DevDtype dtype;
    MdlFramework framework;
    double grad_bytes;
  } cases[] = {{DEV_DTYPE_BF16, MDL_FRAMEWORK_MEGATRON_LM, 4},
               {DEV_DTYPE_BF16, MDL_FRAMEWORK_NONE, 2},
               {DEV_DTYPE_FP16, MDL_FRAMEWORK_MEGATRON_LM, 2}};
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    MdlMegatronConfig cfg = {.tp = 2, .pp = 1, .dp = 4, .microbatch_size = 8,
                             .schedule = MDL_SCHEDULE_1F1B, .dtype = cases[i].dtype};
    GError *error = NULL;
    MdlStrategy *s = mdl_strategy_megatron(g, c, &cfg, &error);
    g_assert_no_error(error);
    s->framework = cases[i].framework;
    g_autofree CmMemory *mem = cm_memory_per_device(g, s, c);
    double psi = 4.0 * 1024 * 1024 / 2;
    g_assert_cmpfloat(mem[0].gradients, ==, cases[i].grad_bytes * psi);
    g_assert_cmpfloat(mem[0].weights, ==, 2 * psi);
    mdl_strategy_free(s);
  }
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* cm_memory_per_device_zero_stages (one pass, every ZeRO stage: the search's memory rule) gives
 * exactly what cm_memory_per_device gives with zero_stage set to each stage, every field of
 * every device bit for bit: FP8's cached weight copies (gone at stage 3), experts, pipelines,
 * recomputation, sequence parallelism, weight delay, FSDP prefetch off. */
static void test_zero_stages_at_once(void) {
  static const struct {
    const char *model, *cluster, *spec;
  } cases[] = {
      {"gpt3-1.3b", "dgx-a100:nodes=2", "megatron:tp=2,pp=2,dp=4,mb=2,schedule=interleaved,vp=2,recompute=selective,sp=1"},
      {"gpt3-1.3b", "dgx-a100:nodes=2", "megatron:tp=1,pp=4,dp=4,mb=1,schedule=1f1b,recompute=full,wdelay=1"},
      {"gpt3-1.3b", "dgx-a100:nodes=2", "megatron:tp=4,pp=1,dp=4,mb=4,zero=3,fsdp_prefetch=0"},
      {"llama3-8b", "dgx-h100:nodes=2", "megatron:tp=2,pp=2,dp=4,mb=1,dtype=fp8,sp=1"},
      {"llama3-8b", "dgx-h100:nodes=2", "megatron:tp=8,pp=1,dp=2,cp=1,mb=1,dtype=fp8,recompute=full"},
      {"mixtral-8x7b", "dgx-h100:nodes=2", "megatron:tp=2,pp=2,dp=4,ep=4,mb=1,dtype=fp8"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    GError *error = NULL;
    DevCluster *c = dev_cluster_parse_spec(cases[i].cluster, &error);
    g_assert_no_error(error);
    MdlGraph *g = graph_or_die(cases[i].model);
    MdlStrategy *s = strategy_or_die(cases[i].spec, g, c);
    int ndev = dev_cluster_num_devices(c);
    CmMemory *all[4];
    cm_memory_per_device_zero_stages(g, s, c, all);
    gboolean gathers = FALSE; /* stage 3 holds gathered buffers */
    for (int z = 0; z < 4; z++) {
      s->zero_stage = z;
      CmMemory *one = cm_memory_per_device(g, s, c);
      g_assert_cmpint(memcmp(one, all[z], sizeof(CmMemory) * (gsize)ndev), ==, 0);
      if (z > 0) g_assert_cmpfloat(all[z][0].optimizer, <, all[0][0].optimizer);
      gathers |= z == 3 && all[3][0].buffers > 0;
      g_free(one);
    }
    g_test_message("%s %s: totals %.4g %.4g %.4g %.4g GiB", cases[i].model, cases[i].spec,
                   all[0][0].total / 1073741824.0, all[1][0].total / 1073741824.0,
                   all[2][0].total / 1073741824.0, all[3][0].total / 1073741824.0);
    g_assert_true(gathers); /* stage 3 gathers (every case has dp > 1) */
    for (int z = 0; z < 4; z++) g_free(all[z]);
    mdl_strategy_free(s);
    mdl_graph_free(g);
    dev_cluster_free(c);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  for (gsize i = 0; i < G_N_ELEMENTS(zero_cases); i++) {
    const ZeroCase *z = &zero_cases[i];
    g_autofree char *path = g_strdup_printf("/memory/zero/model-states/stage%d-tp%d-dp%d-%s",
                                            z->stage, z->tp, z->dp, dev_dtype_name(z->dtype));
    g_test_add_data_func(path, z, test_zero_memory);
  }
  g_test_add_func("/memory/zero/gradient-sync", test_zero_gradient_sync);
  g_test_add_func("/memory/zero/stage3-parameter-gathers", test_zero3_parameter_gathers);
  g_test_add_func("/memory/recompute/full-time", test_full_recompute_time);
  g_test_add_func("/memory/recompute/gpt", test_recompute_gpt);
  for (gsize i = 0; i < G_N_ELEMENTS(korthikanti_cases); i++) {
    g_autofree char *path = g_strdup_printf("/memory/korthikanti/%s", korthikanti_cases[i].name);
    g_test_add_data_func(path, &korthikanti_cases[i], test_korthikanti);
  }
  g_test_add_func("/memory/recompute/working-set", test_recompute_working_set);
  g_test_add_func("/memory/fits/zero", test_fits_zero);
  g_test_add_func("/memory/fits/boundary", test_fits_boundary);
  g_test_add_func("/memory/formats", test_formats);
  g_test_add_func("/memory/megatron-fp32-grads", test_megatron_fp32_grads);
  g_test_add_func("/memory/zero/stages-at-once", test_zero_stages_at_once);
  return g_test_run();
}
