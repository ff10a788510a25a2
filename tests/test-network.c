/* Tests of step-expanded collectives and link contention (sim/sim_network.h): closed forms on
 * uncontended links, queueing on a shared NIC, oversubscription, and folded (symmetric) ==
 * expanded bit for bit where step mode folds replicas. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "costmodel/costmodel.h"
#include "sim/sim.h"
#include "sim/sim_network.h"
#include "test-util.h"

static SimRun *run_mode(const MdlGraph *g, const MdlStrategy *s, const DevCluster *c,
                        gboolean step, gboolean expanded) {
  CmParams p;
  cm_params_default(&p);
  SimOptions o = {.no_symmetry = expanded, .step_collectives = step};
  GError *error = NULL;
  SimRun *run = sim_run_new_with_options(g, s, c, &p, &o, &error);
  g_assert_no_error(error);
  return run;
}

/* The gate of step-expanded collective @k of @run into @gate; returns its join's id. */
static uint32_t span_gate(const SimRun *run, uint32_t k, SimTaskInfo *gate) {
  uint32_t gate_id, join_id;
  sim_task_graph_span(sim_run_task_graph(run), k, &gate_id, &join_id);
  sim_run_task(run, gate_id, gate);
  return join_id;
}

/* Longest gate-to-join span of a gradient all-reduce in the run. */
static SimTime grad_sync_span(const SimRun *run) {
  SimTime longest = 0;
  for (uint32_t k = 0; k < sim_task_graph_num_spans(sim_run_task_graph(run)); k++) {
    SimTaskInfo gate;
    uint32_t join_id = span_gate(run, k, &gate);
    if (gate.kind != SIM_TASK_GRAD_SYNC) continue;
    SimTime span = sim_schedule_start(sim_run_schedule(run), join_id) - gate.start;
    longest = MAX(longest, span);
  }
  return longest;
}

/* NCCL's ring figures for an all-reduce of @n bytes over devices 0..p-1. */
static CmNcclRingSteps ring_steps(const DevCluster *c, const int *devices, int p, double n) {
  CmGroupShape shape;
  CmNcclRingSteps ring;
  cm_group_shape(c, devices, p, &shape);
  g_assert_true(cm_nccl_ring_steps(CM_ALL_REDUCE, &shape, c, n, &ring));
  return ring;
}

/* Data parallel over 4 GPUs of one host: the gradient ring all-reduce takes NCCL's base
 * latency and 2(p-1) steps of its per-step latency + (n/p) at the ring's bus bandwidth,
 * exactly, and that is cm_nccl_time of the ring up to each step's rounding to picoseconds. */
static void test_ring_closed_form(void) {
  const int p = 4;
  DevCluster *c = test_cluster(1, p, 150.0, 3.4, 100, 9.6);
  MdlGraph *g = test_chain_graph(1, 4096, 64);
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_data_parallel(g, c, p, DEV_DTYPE_FP16, &error);
  g_assert_no_error(error);
  for (int expanded = 0; expanded < 2; expanded++) {
    SimRun *run = run_mode(g, s, c, TRUE, expanded);
    double n = 4096.0 * 4096.0 * 2;
    int devices[4] = {0, 1, 2, 3};
    CmNcclRingSteps ring = ring_steps(c, devices, p, n);
    double bw = 150e9 * ring.efficiency[DEV_LINK_INTRA];
    SimTime step = sim_time_from_seconds(ring.step_latency_s[DEV_LINK_INTRA] + n / p / bw);
    SimTime span = grad_sync_span(run);
    g_assert_cmpuint(span, ==, sim_time_from_seconds(ring.base_latency_s) + 2 * (p - 1) * step);
    CmGroupShape shape;
    CmNcclHardware hw;
    cm_group_shape(c, devices, p, &shape);
    cm_nccl_hardware(c, &hw);
    double model = cm_nccl_time(CM_ALL_REDUCE, CM_ALGO_RING, ring.protocol, &shape, &hw, n, NULL);
    g_assert_cmpfloat(fabs(sim_time_seconds(span) - model), <=, 2 * p * 1e-12);
    g_assert_cmpint(sim_run_prediction(run)->step_collectives, ==, TRUE);
    sim_run_free(run);
  }
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* Two data-parallel groups, {0,2} and {1,3}, on two hosts of two GPUs: with one NIC per host
 * their transfers queue on it and the gradient sync takes twice as long as with two NICs; the
 * one-task mode cannot see the difference between placements that share a NIC and those that
 * do not beyond its static NIC share. */
static void test_shared_nic(void) {
  DevCluster *c = test_cluster(2, 2, 150.0, 3.4, 100, 9.6);
  MdlGraph *g = test_chain_graph(1, 4096, 8);
  const char *json = "{\"num_microbatches\": 1, \"meshes\": [{\"shape\": [2, 2], \"devices\": [0, 1, 2, 3]}],"
                     " \"default\": {\"mesh\": 0, \"split\": [\"b\", \"n\"]}}";
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_from_json(json, "inline", g, c, &error);
  g_assert_no_error(error);
  SimRun *shared = run_mode(g, s, c, TRUE, TRUE);
  c->nics_per_node = 2;
  SimRun *own = run_mode(g, s, c, TRUE, TRUE);
  SimTime a = grad_sync_span(shared), b = grad_sync_span(own);
  g_assert_cmpuint(b, >, 0);
  /* Each of the 2 ring steps of the 2 groups queues behind the other group's on the NIC. */
  g_assert_cmpuint(a, >=, 2 * b - 2 * sim_time_from_seconds(9.6e-6));
  g_assert_cmpfloat(sim_run_prediction(shared)->iteration_time_s, >, sim_run_prediction(own)->iteration_time_s);
  sim_run_free(shared);
  sim_run_free(own);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* Oversubscription divides the inter-host bandwidth seen by transfers. */
static void test_oversubscription(void) {
  DevCluster *c = test_cluster(2, 1, 150.0, 3.4, 100, 0);
  MdlGraph *g = test_chain_graph(1, 4096, 8);
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_data_parallel(g, c, 2, DEV_DTYPE_FP16, &error);
  g_assert_no_error(error);
  SimRun *a = run_mode(g, s, c, TRUE, TRUE);
  c->oversubscription = 4;
  SimRun *b = run_mode(g, s, c, TRUE, TRUE);
  double n = 4096.0 * 4096.0 * 2, bw = 100e9 / 8;
  int pair[2] = {0, 1};
  c->oversubscription = 1;
  CmNcclRingSteps ra = ring_steps(c, pair, 2, n);
  c->oversubscription = 4;
  CmNcclRingSteps rb = ring_steps(c, pair, 2, n);
  /* Simple across hosts: the whole NIC share, so the bandwidth is the NIC's divided by the
   * oversubscription, plus NCCL's latencies. */
  g_assert_cmpfloat(ra.efficiency[DEV_LINK_INTER], ==, 1.0);
  g_assert_cmpfloat(rb.efficiency[DEV_LINK_INTER], ==, 1.0);
  double lat = ra.step_latency_s[DEV_LINK_INTER];
  g_assert_cmpuint(grad_sync_span(a), ==, sim_time_from_seconds(ra.base_latency_s) +
                                              2 * sim_time_from_seconds(lat + n / 2 / bw));
  g_assert_cmpuint(grad_sync_span(b), ==, sim_time_from_seconds(rb.base_latency_s) +
                                              2 * sim_time_from_seconds(lat + n / 2 / (bw / 4)));
  sim_run_free(a);
  sim_run_free(b);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

typedef struct {
  const char *model, *cluster, *strategy;
  gboolean folds;     /* sim_network.h's conditions hold: replicas are simulated once */
  unsigned needs;     /* step-expanded collectives the case must hold (1 << CmCollective) */
} Case;

#define GPT4 "gpt:layers=4,hidden=1024,heads=16,seq=256,vocab=4096,batch=16"
#define GPT8 "gpt:layers=8,hidden=1024,heads=16,seq=256,vocab=4096,batch=16"
#define MOE "mixtral-8x7b:layers=2,hidden=512,heads=8,kv_heads=8,seq=256,batch=16,experts=8,moe_ffn=512,ffn=1024,vocab=4096"
#define AR (1u << CM_ALL_REDUCE)
#define SR (1u << CM_SEND_RECV)
#define A2A (1u << CM_ALL_TO_ALL)

static const Case cases[] = {
    {GPT4, "dgx-a100:nodes=2", "megatron:tp=8,dp=2,mb=2", TRUE, AR},
    {GPT4, "dgx-a100:nodes=2", "megatron:tp=4,pp=2,dp=2,mb=2", TRUE, AR | SR},
    {"gpt:layers=4,hidden=1024,heads=16,seq=256,vocab=4096,batch=32", "dgx-h100:nodes=4", "megatron:tp=8,pp=2,dp=2,mb=2,schedule=gpipe", TRUE, AR | SR},
    /* one NIC for 4 GPUs: replicas' transfers share it */
    {"mlp:layers=4,hidden=1024,batch=64", "flexflow-p100", "megatron:tp=4,dp=4,mb=4", FALSE, AR},
    {"vgg13:batch=32", "aws-p3.8xlarge", "dp", FALSE, AR},
    {"mlp:layers=4,hidden=512,batch=64", "dgx-a100:nodes=1,gpus_per_node=64", "megatron:tp=8,dp=8,mb=8", FALSE, AR},
    {GPT4, "dgx-a100:nodes=2", "megatron:tp=8,dp=2,mb=2,sp=1,zero=3,recompute=full", FALSE, 0},
    {GPT4, "dgx-a100:nodes=2", "megatron:tp=4,pp=2,dp=2,mb=2,zero=2,recompute=selective", TRUE, AR | SR},
    {"mlp:layers=4,hidden=1024,batch=64", "flexflow-p100", "megatron:tp=4,dp=4,mb=4,zero=1", FALSE, 0},
    /* the README example's shape, oversubscribed: tp rings on NVLink, dp and pp on NICs */
    {GPT4, "dgx-a100:nodes=4,oversubscription=2", "megatron:tp=8,pp=2,dp=2,mb=1", TRUE, AR | SR},
    {GPT4, "dgx-a100:nodes=4,oversubscription=3", "megatron:tp=4,pp=4,dp=2,mb=1", TRUE, AR | SR},
    /* a pipeline inside one host: stage-to-stage sends reach a representative's ingress port
     * while its tensor-parallel ring receives there (booking the ring's receiving side on the
     * representative's successor instead moved the breakdown) */
    {GPT4, "dgx-a100", "megatron:tp=2,pp=4,mb=1", TRUE, AR | SR},
    {GPT8, "dgx-a100", "megatron:tp=2,pp=4,mb=1,vp=2,schedule=interleaved", TRUE, AR | SR},
    {GPT4, "dgx-a100", "megatron:tp=2,pp=2,dp=2,mb=1,sp=1", TRUE,
     SR | (1u << CM_ALL_GATHER) | (1u << CM_REDUCE_SCATTER)},
    /* rings with one member per host: every step crosses a NIC */
    {GPT4, "dgx-a100:nodes=4,gpus_per_node=1,nics_per_node=1", "megatron:tp=4,mb=2", TRUE, AR},
    {GPT4, "dgx-a100:nodes=4,gpus_per_node=2,nics_per_node=2,oversubscription=2", "megatron:tp=2,pp=2,dp=2,mb=1", TRUE, AR | SR},
    {GPT8, "dgx-a100:nodes=4,oversubscription=4", "megatron:tp=8,dp=4,mb=1,zero=3", TRUE, 0},
    /* partly folded: tensor-parallel groups on one host fold, data-parallel rings over 2 hosts
     * x 4 or 2 x 2 GPUs (or a 16-GPU tensor-parallel ring over 2 hosts) stay expanded */
    {GPT4, "dgx-a100:nodes=2", "megatron:tp=4,dp=4,mb=2", TRUE, AR},
    {GPT4, "dgx-a100:nodes=2", "megatron:tp=2,dp=8,mb=2", TRUE, AR},
    {GPT4, "dgx-a100:nodes=4", "megatron:tp=16,dp=2,mb=2", TRUE, AR},
    {GPT8, "dgx-a100:nodes=4,oversubscription=2", "megatron:tp=4,pp=2,dp=4,mb=1,schedule=interleaved,vp=2", TRUE, AR | SR},
    {MOE, "dgx-a100:nodes=2", "megatron:ep=4,dp=4,tp=4,mb=2", TRUE, A2A},
    /* a ring over 2 hosts x 8 GPUs alternates NVLink and NIC steps: expanded */
    {GPT8, "dgx-a100:nodes=2", "dp", FALSE, AR},
    {GPT8, "dgx-h100:nodes=2", "megatron:tp=8,dp=2,mb=2,overlap=0", FALSE, AR},
    /* expert parallelism: the token dispatch's all-to-all */
    {MOE, "dgx-a100:nodes=4,gpus_per_node=2,nics_per_node=2", "megatron:ep=4,dp=4,tp=2,mb=2", TRUE, A2A},
    {MOE, "dgx-a100:nodes=4,gpus_per_node=1,nics_per_node=1", "megatron:ep=4,dp=4,mb=2", TRUE, A2A},
    {MOE, "dgx-a100:nodes=2,oversubscription=2", "megatron:ep=2,dp=4,pp=2,tp=2,mb=1", TRUE, A2A | SR},
};

/* Step-expanded collectives of each kind in @run (1 << CmCollective of their gates). */
static unsigned expanded_kinds(const SimRun *run) {
  unsigned kinds = 0;
  for (uint32_t k = 0; k < sim_task_graph_num_spans(sim_run_task_graph(run)); k++) {
    SimTaskInfo gate;
    span_gate(run, k, &gate);
    kinds |= 1u << gate.collective;
  }
  return kinds;
}

/* A case's cluster, model and strategy. */
typedef struct {
  DevCluster *c;
  MdlGraph *g;
  MdlStrategy *s;
} Parsed;

static Parsed parse_case(const Case *k) {
  GError *error = NULL;
  Parsed p = {dev_cluster_parse_spec(k->cluster, &error), NULL, NULL};
  g_assert_no_error(error);
  p.g = mdl_graph_parse_spec(k->model, &error);
  g_assert_no_error(error);
  p.s = mdl_strategy_parse_spec(k->strategy, p.g, p.c, &error);
  g_assert_no_error(error);
  return p;
}

static void parsed_clear(Parsed *p) {
  mdl_strategy_free(p->s);
  mdl_graph_free(p->g);
  dev_cluster_free(p->c);
}

/* Runs @p folded (by default) and expanded, asserts their predictions are equal bit for bit;
 * returns the folded run (the expanded one in @full_out when non-NULL, else freed). */
static SimRun *run_both(const Parsed *p, SimRun **full_out) {
  SimRun *sym = run_mode(p->g, p->s, p->c, TRUE, FALSE), *full = run_mode(p->g, p->s, p->c, TRUE, TRUE);
  const SimPrediction *a = sim_run_prediction(sym), *b = sim_run_prediction(full);
  const double x[5] = {a->iteration_time_s, a->compute_s, a->comm_exposed_s, a->host_bound_s, a->bubble_s};
  const double y[5] = {b->iteration_time_s, b->compute_s, b->comm_exposed_s, b->host_bound_s, b->bubble_s};
  g_assert_cmpmem(x, sizeof x, y, sizeof y);
  if (full_out) *full_out = full;
  else sim_run_free(full);
  return sym;
}

/* Step mode folds replicas only where that is exact (sim_network.h): the default run's
 * prediction equals the expanded one's bit for bit, folded or not. */
static void test_fold_exact(gconstpointer data) {
  const Case *k = data;
  Parsed p = parse_case(k);
  SimRun *full, *sym = run_both(&p, &full);
  g_assert_cmpint(sim_run_prediction(sym)->symmetric, ==, k->folds);
  g_assert_cmpuint(expanded_kinds(full) & k->needs, ==, k->needs);
  g_assert_cmpuint(expanded_kinds(sym), ==, expanded_kinds(full));
  if (k->folds) g_assert_cmpuint(sim_run_num_tasks(sym), <, sim_run_num_tasks(full));
  sim_run_free(sym);
  sim_run_free(full);
  parsed_clear(&p);
}

/* Random layouts (resharding all-to-alls, all-gathers and reduce-scatters on any axis): each
 * round re-splits one op on every axis of its mesh at random, keeps it if it validates, and
 * compares the folded run with the expanded one. */
static void test_fold_random(gconstpointer data) {
  Parsed p = parse_case(data);
  MdlStrategy *s = p.s;
  GRand *rand = g_rand_new_with_seed(16);
  int folded = 0, rounds = 0;
  for (int attempt = 0; attempt < 400 && rounds < 24; attempt++) {
    int o = g_rand_int_range(rand, 0, s->num_ops);
    MdlOpConfig before = s->configs[o];
    const MdlMesh *mesh = mdl_strategy_mesh(s, before.mesh);
    for (int a = 0; a < mesh->ndims; a++)
      s->configs[o].split[a] = (int8_t)g_rand_int_range(rand, -1, mdl_graph_op(p.g, o)->ndims);
    GError *error = NULL;
    if (!mdl_strategy_validate(s, p.g, p.c, &error)) {
      g_clear_error(&error);
      s->configs[o] = before;
      continue;
    }
    rounds++;
    SimRun *sym = run_both(&p, NULL);
    folded += sim_run_prediction(sym)->symmetric;
    sim_run_free(sym);
  }
  g_test_message("%d of %d random layouts folded", folded, rounds);
  g_assert_cmpint(folded, >, 0);
  g_rand_free(rand);
  parsed_clear(&p);
}

static const Case random_cases[] = {
    {GPT4, "dgx-a100:nodes=2", "megatron:tp=4,dp=4,mb=2", TRUE, 0},
    {GPT4, "dgx-a100:nodes=2,gpus_per_node=4,nics_per_node=4", "megatron:tp=2,pp=2,dp=2,mb=2", TRUE, 0},
    {GPT4, "dgx-a100", "megatron:tp=4,dp=2,mb=2", TRUE, 0},
    {MOE, "dgx-a100:nodes=4,gpus_per_node=2,nics_per_node=2,oversubscription=2", "megatron:ep=4,dp=4,tp=2,mb=2", TRUE, 0},
};

/* A placement whose data-parallel rings differ: 4 hosts of 2 GPUs, mesh [dp 4, tp 2], tensor-
 * parallel pairs on 2 hosts each (they would fold), data-parallel column 0 on hosts
 * {0, 0, 1, 1} (NVLink and NIC steps) and column 1 on {2, 3, 2, 3} (NIC steps only). Folding
 * the tensor-parallel axis would simulate column 0 only; the step mode keeps it expanded. */
static void test_fold_unlike(void) {
  DevCluster *c = test_cluster(4, 2, 150.0, 3.4, 100, 9.6);
  c->nics_per_node = 2;
  MdlGraph *g = test_chain_graph(2, 4096, 8);
  const char *json = "{\"num_microbatches\": 2, \"meshes\": [{\"shape\": [4, 2], "
                     "\"devices\": [0, 4, 1, 6, 2, 5, 3, 7]}],"
                     " \"default\": {\"mesh\": 0, \"split\": [\"b\", \"n\"]}}";
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_from_json(json, "inline", g, c, &error);
  g_assert_no_error(error);
  Parsed p = {c, g, s};
  SimRun *sym = run_both(&p, NULL);
  g_assert_false(sim_run_prediction(sym)->symmetric);
  sim_run_free(sym);
  parsed_clear(&p);
}

/* The conditions themselves: hosts of a group, NIC sharing, overlap. */
static void test_foldable(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-a100:nodes=4", &error);
  g_assert_no_error(error);
  const int one_host[4] = {0, 1, 2, 3}, four_hosts[4] = {0, 8, 16, 24}, mixed[4] = {0, 1, 8, 9};
  g_assert_true(sim_network_group_foldable(c, one_host, 4));
  g_assert_true(sim_network_group_foldable(c, four_hosts, 4));
  g_assert_false(sim_network_group_foldable(c, mixed, 4));
  const int mixed2[4] = {16, 17, 24, 25}, alternating[4] = {0, 8, 1, 9};
  g_assert_true(sim_network_groups_alike(c, mixed, mixed2, 4));
  g_assert_false(sim_network_groups_alike(c, mixed, alternating, 4));
  g_assert_true(sim_network_foldable(c, TRUE));
  g_assert_false(sim_network_foldable(c, FALSE));
  c->nics_per_node = 4;
  g_assert_false(sim_network_foldable(c, TRUE));
  dev_cluster_free(c);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/sim/network/ring-closed-form", test_ring_closed_form);
  g_test_add_func("/sim/network/shared-nic", test_shared_nic);
  g_test_add_func("/sim/network/oversubscription", test_oversubscription);
  g_test_add_func("/sim/network/foldable", test_foldable);
  g_test_add_func("/sim/network/fold-unlike", test_fold_unlike);
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *path = g_strdup_printf("/sim/network/fold-exact/%zu", i);
    g_test_add_data_func(path, &cases[i], test_fold_exact);
  }
  for (gsize i = 0; i < G_N_ELEMENTS(random_cases); i++) {
    g_autofree char *path = g_strdup_printf("/sim/network/fold-random/%zu", i);
    g_test_add_data_func(path, &random_cases[i], test_fold_random);
  }
  return g_test_run();
}
