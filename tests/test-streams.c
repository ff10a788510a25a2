/* Tests of the per-device communication streams (sim.h's SimStream, sim/STREAMS.md): every
 * collective runs on its class's stream (TP/CP/EP collectives, pipeline p2p, data-parallel
 * sync); a pipeline transfer never waits behind a gradient bucket; overlap_grad_reduce=0 is
 * not faster than =1 on a pipelined GPT; the breakdown's communication is the union of the
 * streams and the figures still add up; the pruning bound stays below the simulation; and
 * the approximation of task mode (streams on one link do not share its bandwidth) against
 * step mode (they do, transfer by transfer), quantified. */
#include <cjson/cJSON.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "sim/sim-int.h"
#include "sim/sim_bound.h"
#include "sim/sim_network.h"
#include "test-util.h"

/* A pipelined GPT on two DGX A100 nodes whose gradient buckets (data parallel over the
 * nodes) and pipeline sends run over the same NICs at the same time. */
#define PIPE_GPT "gpt:layers=16,hidden=2048,heads=16,seq=1024,vocab=32000,batch=64"
#define PIPE_CLUSTER "dgx-a100:nodes=2"
#define PIPE_SPEC "megatron:tp=1,pp=4,dp=4,mb=1,schedule=interleaved,vp=2"
#define TP_SPEC "megatron:tp=2,pp=2,dp=2,mb=1,schedule=interleaved,vp=2"

/* Every collective on its class's stream, of every member it occupies: send/recv (moves
 * between pipeline stages) on p2p, gradient syncs and ZeRO-3's weight gathers on dp, the rest
 * (tensor-parallel resharding) on comm. */
static void check_classes(const char *spec, gboolean step) {
  SimOptions o = {.step_collectives = step};
  SimRun *run = test_simulate_options(PIPE_GPT, PIPE_CLUSTER, spec, &o);
  const MdlGraph *g = sim_run_graph(run);
  int seen[SIM_STREAMS] = {0};
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t;
    sim_run_task(run, i, &t);
    if (t.kind != SIM_TASK_COMM && t.kind != SIM_TASK_GRAD_SYNC) continue;
    if (t.role == SIM_ROLE_TRANSFER) continue; /* link resources only */
    SimStream want = SIM_STREAM_COMM;
    if (t.kind == SIM_TASK_GRAD_SYNC) want = SIM_STREAM_DP;
    else if (t.collective == CM_SEND_RECV) want = SIM_STREAM_P2P;
    else if (t.tensor >= 0 && mdl_graph_tensor(g, t.tensor)->is_weight) want = SIM_STREAM_DP;
    for (int r = 0; r < t.nres; r++) {
      uint32_t res = t.resources[r];
      g_assert_cmpuint(res, <, sim_stream_resources(sim_task_graph_num_devices(sim_run_task_graph(run))));
      SimStream s = sim_resource_stream_of(res);
      if (s == SIM_STREAM_COMPUTE) continue; /* without overlap: the compute stream too */
      g_assert_cmpint(s, ==, want);
      seen[s]++;
    }
  }
  g_assert_cmpint(seen[SIM_STREAM_P2P], >, 0);
  g_assert_cmpint(seen[SIM_STREAM_DP], >, 0);
  if (strstr(spec, "tp=2")) g_assert_cmpint(seen[SIM_STREAM_COMM], >, 0);
  test_run_free(run);
}

static void test_classes(void) {
  check_classes(PIPE_SPEC, FALSE);
  check_classes(TP_SPEC, FALSE);
  check_classes(TP_SPEC ",zero=1", FALSE);
  check_classes("megatron:tp=2,pp=2,dp=2,mb=1,zero=3", FALSE);
  check_classes(TP_SPEC, TRUE); /* step mode: gates and joins */
}

/* A pipeline transfer that becomes ready while a gradient bucket of one of its devices runs
 * starts at once (its stream is free): it waits only for earlier transfers of its own stream.
 * At least one such transfer exists in this run, so with one communication stream per device
 * it would have queued behind the bucket. */
static void test_p2p_not_behind_buckets(void) {
  SimRun *run = test_simulate_specs(PIPE_GPT, PIPE_CLUSTER, PIPE_SPEC, TRUE);
  const SimSchedule *s = sim_run_schedule(run);
  int ndev = sim_task_graph_num_devices(sim_run_task_graph(run));
  g_autofree SimTime *p2p_free = g_new0(SimTime, ndev); /* per device: its p2p stream frees */
  /* DP busy intervals per device, to find the transfers ready inside one. */
  GArray **dp = g_new(GArray *, ndev);
  for (int d = 0; d < ndev; d++) dp[d] = g_array_new(FALSE, FALSE, sizeof(SimTime) * 2);
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t;
    sim_run_task(run, i, &t);
    for (int r = 0; r < t.nres; r++) {
      if (t.resources[r] >= sim_stream_resources(ndev)) continue;
      int d = sim_resource_device(t.resources[r]);
      if (sim_resource_stream_of(t.resources[r]) == SIM_STREAM_DP && t.end > t.start) {
        SimTime iv[2] = {t.start, t.end};
        g_array_append_vals(dp[d], iv, 1);
      }
    }
  }
  int transfers = 0, inside_bucket = 0;
  SimTimeline it;
  SimTaskInfo t;
  sim_timeline_init(&it, run);
  while (sim_timeline_next(&it, &t)) { /* start order: per stream, the order it served */
    if (t.kind != SIM_TASK_COMM || t.collective != CM_SEND_RECV) continue;
    SimTime ready = sim_schedule_ready(s, t.id), free_at = 0;
    gboolean in_bucket = FALSE;
    for (int r = 0; r < t.nres; r++) {
      int d = sim_resource_device(t.resources[r]);
      g_assert_cmpint(sim_resource_stream_of(t.resources[r]), ==, SIM_STREAM_P2P);
      free_at = MAX(free_at, p2p_free[d]);
      for (guint k = 0; k < dp[d]->len; k++) {
        const SimTime *iv = &g_array_index(dp[d], SimTime, 2 * k);
        in_bucket |= iv[0] <= ready && ready < iv[1];
      }
    }
    g_assert_cmpuint(t.start, ==, MAX(ready, free_at));
    for (int r = 0; r < t.nres; r++) p2p_free[sim_resource_device(t.resources[r])] = t.end;
    transfers++;
    inside_bucket += in_bucket;
  }
  g_assert_cmpint(transfers, >, 0);
  g_assert_cmpint(inside_bucket, >, 0);
  for (int d = 0; d < ndev; d++) g_array_unref(dp[d]);
  g_free(dp);
  test_run_free(run);
}

static double iteration_of(const char *spec) {
  SimRun *run = test_simulate_specs(PIPE_GPT, PIPE_CLUSTER, spec, FALSE);
  double t = sim_run_prediction(run)->iteration_time_s;
  test_run_free(run);
  return t;
}

/* Issuing the gradient buckets during the backward (overlap_grad_reduce=1, Megatron-Core's
 * default) is never slower than after it: with the buckets on one stream shared with the
 * pipeline sends, this pipelined run predicted the overlapped iteration slower (0.1878 s
 * against 0.1874 s without overlap). */
static void test_overlap_grad_reduce(void) {
  const char *specs[] = {PIPE_SPEC, TP_SPEC, "megatron:tp=2,pp=2,dp=2,mb=1", PIPE_SPEC ",zero=1"};
  for (guint i = 0; i < G_N_ELEMENTS(specs); i++) {
    g_autofree char *off = g_strdup_printf("%s,overlap_grad_reduce=0", specs[i]);
    double t_on = iteration_of(specs[i]), t_off = iteration_of(off);
    if (g_test_verbose()) g_printerr("%s: on %.6g s, off %.6g s\n", specs[i], t_on, t_off);
    g_assert_cmpfloat(t_on, <=, t_off);
  }
  g_assert_cmpfloat(iteration_of(PIPE_SPEC), <, iteration_of(PIPE_SPEC ",overlap_grad_reduce=0"));
}

/* The breakdown over the union of the communication streams: compute + exposed + host +
 * bubble = iteration; per device the union lies between the busiest stream and the sum of the
 * streams, and here below the sum (the streams ran at once); exposed <= busy. */
static void check_breakdown(const char *spec, gboolean step) {
  SimOptions o = {.step_collectives = step};
  SimRun *run = test_simulate_options(PIPE_GPT, PIPE_CLUSTER, spec, &o);
  const SimPrediction *p = sim_run_prediction(run);
  g_assert_cmpfloat_with_epsilon(p->compute_s + p->comm_exposed_s + p->host_bound_s + p->bubble_s,
                                 p->iteration_time_s, 1e-9 * p->iteration_time_s);
  g_assert_cmpfloat(p->bubble_s, >=, 0);
  g_assert_cmpfloat(p->comm_exposed_s, <=, p->comm_busy_s * (1 + 1e-12));
  g_assert_cmpfloat(p->comm_busy_s, <=, p->iteration_time_s);
  if (!step) {
    int ndev = sim_task_graph_num_devices(sim_run_task_graph(run));
    g_autofree SimTime *busy = g_new0(SimTime, (gsize)ndev * SIM_STREAMS);
    for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
      SimTaskInfo t;
      sim_run_task(run, i, &t);
      if (t.kind != SIM_TASK_COMM && t.kind != SIM_TASK_GRAD_SYNC) continue;
      for (int r = 0; r < t.nres; r++)
        if (t.resources[r] < sim_stream_resources(ndev)) busy[t.resources[r]] += t.duration;
    }
    SimTime lo = 0, hi = 0;
    for (int d = 0; d < ndev; d++) {
      SimTime most = 0;
      for (int k = SIM_STREAM_COMM; k < SIM_STREAMS; k++) {
        most = MAX(most, busy[sim_resource_stream(d, (SimStream)k)]);
        hi += busy[sim_resource_stream(d, (SimStream)k)];
      }
      lo += most;
    }
    double used = p->simulated_gpus;
    g_assert_cmpfloat(p->comm_busy_s * used, >=, sim_time_seconds(lo) * (1 - 1e-12));
    g_assert_cmpfloat(p->comm_busy_s * used, <, sim_time_seconds(hi));
  }
  test_run_free(run);
}

static void test_breakdown(void) {
  check_breakdown(PIPE_SPEC, FALSE);
  check_breakdown(TP_SPEC, FALSE);
  check_breakdown(TP_SPEC, TRUE);
}

/* The pruning bound (sim/sim_bound.h: per stream, the largest) stays below the simulation. */
static void test_bound(void) {
  const char *specs[] = {PIPE_SPEC, PIPE_SPEC ",zero=1", TP_SPEC, TP_SPEC ",zero=1",
                         "megatron:tp=2,pp=2,dp=2,mb=1,zero=2",
                         "megatron:tp=2,pp=2,dp=2,mb=1,zero=3", "megatron:tp=2,dp=4,mb=1",
                         "megatron:pp=4,dp=4,mb=1,overlap_grad_reduce=0"};
  for (guint i = 0; i < G_N_ELEMENTS(specs); i++) {
    SimRun *run = test_simulate_specs(PIPE_GPT, PIPE_CLUSTER, specs[i], FALSE);
    CmParams params;
    cm_params_default(&params);
    SimTime bound = sim_iteration_bound(sim_run_graph(run), sim_run_strategy(run),
                                        sim_run_cluster(run), &params, NULL);
    SimTime simulated = sim_schedule_makespan(sim_run_schedule(run));
    if (g_test_verbose()) g_printerr("%s: bound %.6g s, simulated %.6g s\n", specs[i],
                                     sim_time_seconds(bound), sim_time_seconds(simulated));
    g_assert_cmpuint(bound, >, 0);
    g_assert_cmpuint(bound, <=, simulated);
    test_run_free(run);
  }
}

/* Adds to @g a collective over @p @devices on @stream, all members simulated, at time 0;
 * returns its join (step mode) or its one task. */
static uint32_t add_collective(SimTaskGraph *g, const DevCluster *c, gboolean step,
                               SimTaskKind kind, CmCollective coll, const int *devices, int p,
                               double bytes, SimStream stream) {
  SimTask t = {0};
  t.kind = (uint8_t)kind;
  t.collective = (uint8_t)coll;
  t.op = t.tensor = t.microbatch = -1;
  t.bytes = (float)bytes;
  t.group_size = (uint32_t)p;
  if (step) {
    gboolean simulated[2] = {TRUE, TRUE};
    return sim_network_expand(g, c, &t, coll, devices, p, simulated, bytes, FALSE, stream, NULL)
        .join;
  }
  CmParams params;
  cm_params_default(&params);
  t.duration = sim_time_from_seconds(cm_group_collective_time(&params, c, coll, devices, p, bytes));
  uint32_t res[2] = {sim_resource_stream(devices[0], stream), sim_resource_stream(devices[1], stream)};
  return sim_task_graph_add(g, &t, res, p);
}

/* When the p2p transfer of @p2p_bytes from GPU 0 to GPU 1 (on two hosts) ends, started with
 * a gradient all-reduce of @bucket_bytes over both (0: alone), in step or task mode. */
static SimTime p2p_end(const DevCluster *c, gboolean step, double bucket_bytes, double p2p_bytes) {
  SimTaskGraph *g = sim_task_graph_new(2);
  g->num_resources = sim_network_num_resources(c);
  int pair[2] = {0, 1};
  if (bucket_bytes > 0)
    add_collective(g, c, step, SIM_TASK_GRAD_SYNC, CM_ALL_REDUCE, pair, 2, bucket_bytes, SIM_STREAM_DP);
  uint32_t done = add_collective(g, c, step, SIM_TASK_COMM, CM_SEND_RECV, pair, 2, p2p_bytes, SIM_STREAM_P2P);
  sim_task_graph_finish(g);
  GError *error = NULL;
  SimSchedule *s = sim_engine_run(g, &error);
  g_assert_no_error(error);
  SimTime end = sim_schedule_start(s, done) + sim_task_graph_task(g, done)->duration;
  sim_schedule_free(s);
  sim_task_graph_free(g);
  return end;
}

/* Task mode times each collective alone: a pipeline send that runs while a gradient bucket
 * crosses the same NIC takes its uncontended time (the streams do not share the link's
 * bandwidth: optimistic). Step mode puts both on the NIC transfer by transfer, so the send
 * waits for the bucket's transfer in flight on the NIC (ring step of 32 MiB here). The figures
 * (sim/STREAMS.md quotes them): task mode equal to the send alone; step mode later, by at most
 * one bucket step. */
static void test_link_sharing(void) {
  DevCluster *c = test_cluster(2, 1, 300, 1, 200, 5); /* one GPU and one 200 Gb/s NIC a host */
  const double bucket = 64.0 * 1024 * 1024, send = 8.0 * 1024 * 1024;
  SimTime task_alone = p2p_end(c, FALSE, 0, send), task_shared = p2p_end(c, FALSE, bucket, send);
  SimTime step_alone = p2p_end(c, TRUE, 0, send), step_shared = p2p_end(c, TRUE, bucket, send);
  g_test_message("p2p of 8 MiB over one NIC: task mode %.1f us alone, %.1f us beside a 64 MiB "
                 "bucket; step mode %.1f us alone, %.1f us beside it",
                 sim_time_seconds(task_alone) * 1e6, sim_time_seconds(task_shared) * 1e6,
                 sim_time_seconds(step_alone) * 1e6, sim_time_seconds(step_shared) * 1e6);
  g_assert_cmpuint(task_shared, ==, task_alone); /* the approximation: no sharing */
  g_assert_cmpuint(step_shared, >, step_alone);  /* the link is shared */
  /* A ring all-reduce of 2 moves n/2 per step: the send waits for one step at most. */
  double step_s = 5e-6 + bucket / 2 / (200e9 / 8);
  g_assert_cmpfloat(sim_time_seconds(step_shared - step_alone), <=, step_s * (1 + 1e-9));
  dev_cluster_free(c);
}

/* Send/recv bytes of the moves between stages of @spec (sum), and the all-gathers of tensors
 * from another stage (count, and their bytes summed); every such all-gather on the comm
 * stream, of @tp members, gated by the sends of its microbatch and tensor. */
static void stage_moves(const char *spec, int tp, double *send_bytes, int *gathers,
                        double *gather_bytes) {
  SimRun *run = test_simulate_specs(PIPE_GPT, PIPE_CLUSTER, spec, FALSE);
  const MdlGraph *g = sim_run_graph(run);
  const MdlStrategy *s = sim_run_strategy(run);
  *send_bytes = *gather_bytes = 0;
  *gathers = 0;
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t;
    sim_run_task(run, i, &t);
    if (t.kind != SIM_TASK_COMM || t.tensor < 0 || t.op < 0) continue;
    int producer = mdl_graph_tensor(g, t.tensor)->producer;
    if (producer < 0 || s->configs[producer].stage == s->configs[t.op].stage) continue;
    if (t.collective == CM_SEND_RECV) *send_bytes += t.bytes;
    if (t.collective != CM_ALL_GATHER) continue;
    (*gathers)++;
    *gather_bytes += t.bytes;
    g_assert_cmpint((int)t.group_size, ==, tp);
    g_assert_cmpint(sim_resource_stream_of(t.resources[0]), ==, SIM_STREAM_COMM);
    /* Its predecessors: the sends of the same tensor and microbatch. */
    for (uint32_t j = 0; j < sim_run_num_tasks(run); j++) {
      uint32_t n;
      const uint32_t *succ = sim_task_graph_successors(sim_run_task_graph(run), j, &n);
      for (uint32_t k = 0; k < n; k++) {
        if (succ[k] != i) continue;
        SimTaskInfo pred;
        sim_run_task(run, j, &pred);
        g_assert_cmpint(pred.collective, ==, CM_SEND_RECV);
        g_assert_cmpint(pred.tensor, ==, t.tensor);
        g_assert_cmpint(pred.microbatch, ==, t.microbatch);
        g_assert_cmpfloat_with_epsilon((double)pred.bytes * tp, t.bytes, 1e-6 * t.bytes);
      }
    }
  }
  test_run_free(run);
}

/* Megatron-LM's scatter/gather of pipeline transfers (Narayanan et al. 2021 section 4.1): with
 * activations replicated over tp ranks, each pair sends 1/tp of the tensor and the receivers
 * all-gather it on their TP stream; not under sequence parallelism (the activation is already
 * split over the tp ranks) nor without Megatron-LM (framework none sends whole tensors). */
static void test_scatter_gather(void) {
  const char *spec = "megatron:tp=2,pp=2,dp=2,mb=1";
  double sent, whole, gathered, sp_sent, sp_gathered;
  int gathers, none_gathers, sp_gathers;
  stage_moves(spec, 2, &sent, &gathers, &gathered);
  g_autofree char *none = g_strdup_printf("%s,framework=none", spec);
  double none_gathered;
  stage_moves(none, 2, &whole, &none_gathers, &none_gathered);
  g_autofree char *sp = g_strdup_printf("%s,sp=1", spec);
  stage_moves(sp, 2, &sp_sent, &sp_gathers, &sp_gathered);
  g_assert_cmpint(gathers, >, 0);
  g_assert_cmpfloat_with_epsilon(sent * 2, whole, 1e-9 * whole); /* half of it a pair */
  g_assert_cmpfloat_with_epsilon(gathered, whole, 1e-9 * whole); /* the whole on each side */
  g_assert_cmpint(none_gathers, ==, 0);
  g_assert_cmpint(sp_gathers, ==, 0);
  g_assert_cmpfloat_with_epsilon(sp_sent * 2, whole, 1e-9 * whole); /* already split */
}

/* The trace has one thread per stream (tid = SimStream, named by sim_stream_name; the host
 * after them), and each collective's slice on its stream's thread: send/recv on p2p, gradient
 * syncs on dp, tensor-parallel collectives on comm. */
static void test_trace_threads(void) {
  SimRun *run = test_simulate_specs(PIPE_GPT, PIPE_CLUSTER, TP_SPEC, FALSE);
  g_autofree char *dir = g_dir_make_tmp("streams-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "trace.json", NULL);
  GError *error = NULL;
  g_assert_true(sim_trace_write(run, path, &error));
  g_assert_no_error(error);
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
  cJSON *root = cJSON_Parse(text);
  g_assert_nonnull(root);
  int names[SIM_STREAMS + 1] = {0}, on[SIM_STREAMS] = {0};
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(root, "traceEvents")) {
    const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
    int pid = cJSON_GetObjectItem(e, "pid")->valueint;
    const cJSON *tid = cJSON_GetObjectItem(e, "tid");
    if (pid != 0 || !tid) continue; /* GPU 0's threads */
    if (strcmp(ph, "M") == 0) {
      const char *name = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "name")->valuestring;
      g_assert_cmpint(tid->valueint, <=, SIM_STREAMS);
      g_assert_cmpstr(name, ==, tid->valueint < SIM_STREAMS ? sim_stream_name((SimStream)tid->valueint) : "host");
      names[tid->valueint]++;
      continue;
    }
    const char *cat = cJSON_GetObjectItem(e, "cat")->valuestring;
    const char *name = cJSON_GetObjectItem(e, "name")->valuestring;
    SimStream want = SIM_STREAM_COMPUTE;
    if (strcmp(cat, "grad_sync") == 0) want = SIM_STREAM_DP;
    else if (strcmp(cat, "comm") == 0) want = g_str_has_prefix(name, "send_recv") ? SIM_STREAM_P2P : SIM_STREAM_COMM;
    else if (strcmp(cat, "host") == 0) continue;
    g_assert_cmpint(tid->valueint, ==, want);
    on[want]++;
  }
  for (int k = 0; k <= SIM_STREAMS; k++) g_assert_cmpint(names[k], ==, 1);
  for (int k = 0; k < SIM_STREAMS; k++) g_assert_cmpint(on[k], >, 0);
  cJSON_Delete(root);
  g_unlink(path);
  g_rmdir(dir);
  test_run_free(run);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/sim/streams/classes", test_classes);
  g_test_add_func("/sim/streams/p2p-not-behind-buckets", test_p2p_not_behind_buckets);
  g_test_add_func("/sim/streams/overlap-grad-reduce", test_overlap_grad_reduce);
  g_test_add_func("/sim/streams/breakdown", test_breakdown);
  g_test_add_func("/sim/streams/bound", test_bound);
  g_test_add_func("/sim/streams/link-sharing", test_link_sharing);
  g_test_add_func("/sim/streams/scatter-gather", test_scatter_gather);
  g_test_add_func("/sim/streams/trace-threads", test_trace_threads);
  return g_test_run();
}
