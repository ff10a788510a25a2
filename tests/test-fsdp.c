/* Tests of FSDP (ZeRO-3) as PyTorch FSDP and Megatron-Core's FSDP run it: the FSDP units
 * (mdl_strategy_fsdp_units), one all-gather per unit before its forward and again before its
 * backward, one reduce-scatter per unit after its backward, the gathered-unit buffers in memory,
 * the strategy key fsdp_prefetch (parse errors, JSON round trip, describe), and the timeline:
 * without prefetch every forward gather is exposed, each its formula's time; with prefetch the
 * next unit's gather runs under the current unit's compute. */
#include <glib.h>
#include <string.h>

#include "test-util.h"

#define SMALL_GPT "gpt:layers=4,hidden=1024,heads=16,seq=512,vocab=8192,batch=32"

static MdlStrategy *parse_or_die(const char *spec, const MdlGraph *g, const DevCluster *c) {
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_parse_spec(spec, g, c, &error);
  g_assert_no_error(error);
  return test_no_host(s);
}

static SimRun *run_or_die(const MdlGraph *g, const MdlStrategy *s, const DevCluster *c) {
  CmParams params;
  cm_params_default(&params);
  SimOptions options = {.no_symmetry = TRUE};
  GError *error = NULL;
  SimRun *run = sim_run_new_with_options(g, s, c, &params, &options, &error);
  g_assert_no_error(error);
  return run;
}

/* Per unit, the bytes of its distinct weights (all replicated over dp here: the gathered size),
 * from the graph alone; returns the number of units. Caller g_free()s *@bytes. */
static int unit_bytes(const MdlGraph *g, const MdlStrategy *s, double **bytes) {
  g_autofree int *unit = mdl_strategy_fsdp_units(s, g);
  int n = mdl_graph_num_ops(g), units = unit[n - 1] + 1;
  *bytes = g_new0(double, units);
  for (int o = 0; o < n; o++) {
    const MdlOp *op = mdl_graph_op(g, o);
    for (int k = 0; k < op->ninputs; k++) {
      int w = op->inputs[k].tensor;
      const MdlTensor *t = mdl_graph_tensor(g, w);
      if (!t->is_weight) continue;
      gboolean seen = FALSE; /* read before within the unit */
      for (int p = o; p >= 0 && unit[p] == unit[o] && !seen; p--) {
        const MdlOp *q = mdl_graph_op(g, p);
        for (int j = 0; j < (p == o ? k : q->ninputs); j++) seen |= q->inputs[j].tensor == w;
      }
      if (seen) continue;
      double elems = 1;
      for (int d = 0; d < t->ndims; d++) elems *= (double)t->shape[d];
      (*bytes)[unit[o]] += elems * dev_dtype_bytes(s->dtype);
    }
  }
  return units;
}

/* Units: every layer's ops form one unit, the ops before the first layer one, and those after
 * the last one; units are numbered in graph order. */
static void test_units(void) {
  GError *error = NULL;
  DevCluster *c = test_cluster(1, 4, 150.0, 3.4, 100, 9.6);
  MdlGraph *g = test_parse_model(SMALL_GPT);
  MdlStrategy *s = parse_or_die("megatron:dp=4,mb=8,zero=3", g, c);
  g_autofree int *unit = mdl_strategy_fsdp_units(s, g);
  int n = mdl_graph_num_ops(g);
  g_assert_cmpint(unit[0], ==, 0);
  g_assert_cmpint(unit[n - 1], ==, g->num_layers + 1);
  for (int o = 0; o < n; o++) {
    int layer = mdl_graph_op(g, o)->layer;
    if (layer >= 0) g_assert_cmpint(unit[o], ==, layer + 1);
  }
  /* Pipeline stages cut units: with pp=2 the units never cross a stage. */
  MdlStrategy *pp = parse_or_die("megatron:dp=2,pp=2,mb=4,zero=3", g, c);
  g_autofree int *unit_pp = mdl_strategy_fsdp_units(pp, g);
  for (int o = 1; o < n; o++)
    if (unit_pp[o] == unit_pp[o - 1]) g_assert_cmpint(pp->configs[o].stage, ==, pp->configs[o - 1].stage);
  g_assert_null(error);
  mdl_strategy_free(pp);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* The key: parsed, refused with one-line errors, kept through JSON, named by describe. */
static void test_strategy_key(void) {
  DevCluster *c = test_cluster(1, 4, 150.0, 3.4, 100, 9.6);
  MdlGraph *g = test_parse_model(SMALL_GPT);
  struct { const char *spec, *needle; } bad[] = {
    {"megatron:dp=4,mb=8,zero=3,fsdp_prefetch=2", "fsdp_prefetch=2 must be 0 or 1"},
    {"megatron:dp=4,mb=8,zero=2,fsdp_prefetch=0", "fsdp_prefetch=0 needs FSDP (zero=3, got zero=2)"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    GError *error = NULL;
    g_assert_null(mdl_strategy_parse_spec(bad[i].spec, g, c, &error));
    g_assert_nonnull(error);
    g_assert_nonnull(strstr(error->message, bad[i].needle));
    g_assert_null(strchr(error->message, '\n'));
    g_error_free(error);
  }
  MdlStrategy *on = parse_or_die("megatron:dp=4,mb=8,zero=3", g, c);
  MdlStrategy *off = parse_or_die("megatron:dp=4,mb=8,zero=3,fsdp_prefetch=0", g, c);
  g_assert_true(on->fsdp_prefetch);
  g_assert_false(off->fsdp_prefetch);
  g_assert_false(mdl_strategy_same_except_splits(on, off));
  g_autofree char *d_on = mdl_strategy_describe(on, g), *d_off = mdl_strategy_describe(off, g);
  g_assert_null(strstr(d_on, "FSDP"));
  g_assert_nonnull(strstr(d_off, "FSDP without prefetch"));
  g_autofree char *json_on = mdl_strategy_to_json(on, g), *json_off = mdl_strategy_to_json(off, g);
  g_assert_null(strstr(json_on, "fsdp_prefetch"));
  g_assert_nonnull(strstr(json_off, "\"fsdp_prefetch\":\tfalse"));
  GError *error = NULL;
  MdlStrategy *back = mdl_strategy_from_json(json_off, "test", g, c, &error);
  g_assert_no_error(error);
  g_assert_false(back->fsdp_prefetch);
  mdl_strategy_free(back);
  /* JSON refuses it without zero=3, as the spec does. */
  g_autofree char *zero2 = g_strdup(json_off);
  char *z = strstr(zero2, "\"zero\":\t3");
  g_assert_nonnull(z);
  z[8] = '2';
  g_assert_null(mdl_strategy_from_json(zero2, "test", g, c, &error));
  g_assert_nonnull(error);
  g_assert_nonnull(strstr(error->message, "fsdp_prefetch=0 needs FSDP"));
  g_error_free(error);
  mdl_strategy_free(on);
  mdl_strategy_free(off);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* Memory: the gathered-unit buffers hold the two largest units with prefetch, the largest
 * without; the model states are sharded over the 4 replicas either way. */
static void test_memory(void) {
  DevCluster *c = test_cluster(1, 4, 150.0, 3.4, 100, 9.6);
  MdlGraph *g = test_parse_model(SMALL_GPT);
  MdlStrategy *on = parse_or_die("megatron:dp=4,mb=8,zero=3", g, c);
  MdlStrategy *off = parse_or_die("megatron:dp=4,mb=8,zero=3,fsdp_prefetch=0", g, c);
  g_autofree double *bytes = NULL;
  int units = unit_bytes(g, on, &bytes);
  double first = 0, second = 0;
  for (int u = 0; u < units; u++) {
    if (bytes[u] > first) second = first, first = bytes[u];
    else if (bytes[u] > second) second = bytes[u];
  }
  g_assert_cmpfloat(second, >, 0);
  CmMemory *m_on = cm_memory_per_device(g, on, c), *m_off = cm_memory_per_device(g, off, c);
  g_assert_cmpfloat_with_epsilon(m_on[0].buffers, first + second, 1e-9 * first);
  g_assert_cmpfloat_with_epsilon(m_off[0].buffers, first, 1e-9 * first);
  g_assert_cmpfloat(m_on[0].weights, ==, m_off[0].weights);
  g_assert_cmpfloat(m_on[0].optimizer, ==, m_off[0].optimizer);
  g_test_message("gathered buffers: %.1f MB with prefetch, %.1f MB without",
                 m_on[0].buffers / 1e6, m_off[0].buffers / 1e6);
  g_free(m_on);
  g_free(m_off);
  mdl_strategy_free(on);
  mdl_strategy_free(off);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* Device 0's task of @kind for (@op, @mb, @phase) on the stream @resource. */
static uint32_t find_task(const SimRun *run, SimTaskKind kind, int op, int mb, int phase,
                          uint32_t resource) {
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t;
    sim_run_task(run, i, &t);
    if (t.kind == kind && t.op == op && t.microbatch == mb && (phase < 0 || (int)t.phase == phase))
      for (int r = 0; r < t.nres; r++)
        if (t.resources[r] == resource) return i;
  }
  return UINT32_MAX;
}

static SimTime task_end(const SimRun *run, uint32_t i) {
  SimTaskInfo t;
  sim_run_task(run, i, &t);
  return sim_schedule_start(sim_run_schedule(run), i) + t.duration;
}

/* One microbatch's forward on device 0, unit by unit: each unit's gather is the cost model's
 * formula for the unit's bytes over the 4 replicas; the engine's end of the forward equals the
 * recursion a one-stream-per-kind timeline gives: the gather of unit u is issued when block
 * u - 1 ends (no prefetch) or u - 2 (prefetch), waits for the communication stream, and block u
 * starts when block u - 1 and its gather are done. Returns the forward's end; *@gathers gets the
 * sum of the gathers' times. */
static SimTime check_forward(const MdlGraph *g, const DevCluster *c, const char *spec,
                             SimTime *gathers) {
  MdlStrategy *s = parse_or_die(spec, g, c);
  g_assert_cmpint(s->num_microbatches, ==, 1);
  SimRun *run = run_or_die(g, s, c);
  g_autofree int *unit = mdl_strategy_fsdp_units(s, g);
  g_autofree double *bytes = NULL;
  int n = mdl_graph_num_ops(g), units = unit_bytes(g, s, &bytes);
  CmParams params;
  cm_params_default(&params);
  int devices[4] = {0, 1, 2, 3};
  SimTime end_prev = 0, end_prev2 = 0, comm_free = 0, last_end = 0;
  *gathers = 0;
  for (int u = 0, o = 0; u < units; u++) {
    int first = o;
    SimTime compute = 0;
    for (; o < n && unit[o] == u; o++) {
      SimTaskInfo t;
      sim_run_task(run, find_task(run, SIM_TASK_FORWARD, o, 0, -1, sim_resource_compute(0)), &t);
      compute += t.duration;
    }
    SimTime start = end_prev;
    /* ZeRO-3's gathers run on the data-parallel stream (sim.h's SimStream). */
    uint32_t gi = find_task(run, SIM_TASK_COMM, first, 0, SIM_PHASE_FORWARD,
                            sim_resource_stream(0, SIM_STREAM_DP));
    g_assert_cmpuint(gi, !=, UINT32_MAX);
    SimTaskInfo gt;
    sim_run_task(run, gi, &gt);
    g_assert_cmpint(gt.collective, ==, CM_ALL_GATHER);
    g_assert_cmpfloat(gt.bytes, ==, (float)bytes[u]);
    double formula = cm_group_collective_time(&params, c, CM_ALL_GATHER, devices, 4, bytes[u]);
    g_assert_cmpfloat_with_epsilon(sim_time_seconds(gt.duration), formula, 1e-11);
    SimTime issue = s->fsdp_prefetch ? end_prev2 : end_prev;
    comm_free = MAX(issue, comm_free) + gt.duration;
    start = MAX(start, comm_free);
    *gathers += gt.duration;
    /* The engine: the unit's first forward starts exactly then. */
    uint32_t f = find_task(run, SIM_TASK_FORWARD, first, 0, -1, sim_resource_compute(0));
    g_assert_cmpuint(sim_schedule_start(sim_run_schedule(run), f), ==, start);
    end_prev2 = end_prev;
    end_prev = start + compute;
    last_end = task_end(run, find_task(run, SIM_TASK_FORWARD, o - 1, 0, -1, sim_resource_compute(0)));
    g_assert_cmpuint(last_end, ==, end_prev);
  }
  /* One reduce-scatter per unit after its backward, whatever the 25 MiB bucket cap. */
  int rs = 0;
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t;
    sim_run_task(run, i, &t);
    rs += t.kind == SIM_TASK_GRAD_SYNC && t.collective == CM_REDUCE_SCATTER;
    g_assert_false(t.kind == SIM_TASK_GRAD_SYNC && t.collective == CM_ALL_GATHER);
  }
  g_assert_cmpint(rs, ==, units);
  sim_run_free(run);
  mdl_strategy_free(s);
  return last_end;
}

/* Without prefetch the forward takes its compute plus every gather (the formula's times, all
 * exposed); with prefetch the same gathers hide under the units' compute, all but the first
 * and what a unit's compute cannot cover. */
static void test_prefetch_timeline(void) {
  DevCluster *c = test_cluster(1, 4, 150.0, 3.4, 100, 9.6);
  MdlGraph *g = test_parse_model(SMALL_GPT);
  SimTime gathers_off, gathers_on;
  SimTime off = check_forward(g, c, "megatron:dp=4,mb=8,zero=3,fsdp_prefetch=0", &gathers_off);
  SimTime on = check_forward(g, c, "megatron:dp=4,mb=8,zero=3", &gathers_on);
  g_assert_cmpuint(gathers_on, ==, gathers_off);
  MdlStrategy *plain = parse_or_die("megatron:dp=4,mb=8", g, c);
  SimRun *base = run_or_die(g, plain, c);
  /* Compute alone: the forward of plain data parallelism (no communication in it). */
  SimTime compute = 0;
  for (int o = 0; o < mdl_graph_num_ops(g); o++)
    compute = MAX(compute, task_end(base, find_task(base, SIM_TASK_FORWARD, o, 0, -1, sim_resource_compute(0))));
  g_assert_cmpuint(off, ==, compute + gathers_off);
  g_assert_cmpuint(on, <, off);
  g_assert_cmpuint(on, >=, compute);
  g_test_message("forward: compute %.3f ms, gathers %.3f ms; no prefetch %.3f ms, prefetch "
                 "%.3f ms (%.0f%% of the gathers hidden)", sim_time_seconds(compute) * 1e3,
                 sim_time_seconds(gathers_off) * 1e3, sim_time_seconds(off) * 1e3,
                 sim_time_seconds(on) * 1e3, 100.0 * (double)(off - on) / (double)gathers_off);
  /* Most of it: all but the first unit's gather, here (compute outweighs every later one). */
  g_assert_cmpuint(off - on, >, gathers_off / 2);
  sim_run_free(base);
  mdl_strategy_free(plain);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/fsdp/units", test_units);
  g_test_add_func("/fsdp/strategy-key", test_strategy_key);
  g_test_add_func("/fsdp/memory", test_memory);
  g_test_add_func("/fsdp/prefetch-timeline", test_prefetch_timeline);
  return g_test_run();
}
