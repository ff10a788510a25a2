/* Tests of chain merging (sim/sim_merge.c): a prediction-only run, timed on the graph with its
 * compute chains merged and its host stream outside the engine, gives the full engine's
 * prediction bit for bit over schedules, frameworks (with and without a host stream), memory
 * options and symmetry on and off; where the reduction does not apply (collectives holding the
 * compute streams, late launches) the full engine runs and the answer is the same. */
#include <glib.h>
#include <string.h>

#include "sim/sim.h"
#include "sim/sim_crossmesh.h"
#include "sim/sim-int.h" /* white-box: sim_merge_predict on a full graph */
#include "test-space.h"

static const char *model = "gpt3-1.3b:batch=64";
static const char *cluster = "dgx-a100:nodes=2";

static gboolean step_mode;      /* --collectives step for the runs below */
static gboolean crossmesh_mode; /* --crossmesh broadcast for the runs below */

static SimRun *simulate(const char *m, const char *spec, gboolean expanded, gboolean merged) {
  SimOptions options = {.no_symmetry = expanded, .prediction_only = merged,
                        .step_collectives = step_mode, .crossmesh = crossmesh_mode,
                        .crossmesh_method = SIM_CROSSMESH_BROADCAST};
  return test_simulate_options(m, cluster, spec, &options);
}

static void assert_same_prediction(const SimPrediction *a, const SimPrediction *b) {
  test_assert_same_prediction("merging", "full", "merged", a, b);
}

/* Full and merged runs of @spec (@expanded: symmetry off); @merges: whether the reduction must
 * apply (a reduced graph with fewer tasks) or must fall back to the full engine. */
static void check(const char *m, const char *spec, gboolean expanded, gboolean merges) {
  SimRun *full = simulate(m, spec, expanded, FALSE);
  SimRun *merged = simulate(m, spec, expanded, TRUE);
  const SimPrediction *a = sim_run_prediction(full), *b = sim_run_prediction(merged);
  if (g_test_verbose())
    g_printerr("%s%s: %" G_GUINT64_FORMAT " tasks, %" G_GUINT64_FORMAT " merged\n", spec,
               expanded ? " (expanded)" : "", b->tasks, b->merged_tasks);
  assert_same_prediction(a, b);
  g_assert_cmpuint(a->merged_tasks, ==, 0);
  if (merges) {
    g_assert_cmpuint(b->merged_tasks, >, 0);
    g_assert_cmpuint(b->merged_tasks, <, b->tasks);
    g_assert_null(sim_run_schedule(merged));
  } else {
    g_assert_cmpuint(b->merged_tasks, ==, 0);
    g_assert_nonnull(sim_run_schedule(merged));
  }
  test_run_free(full);
  test_run_free(merged);
}

static const char *const merging[] = {
    "megatron:tp=2,pp=4,dp=2,mb=2,schedule=1f1b",
    "megatron:tp=2,pp=4,dp=2,mb=2,schedule=interleaved,vp=2",
    "megatron:tp=2,pp=4,dp=2,mb=2,schedule=gpipe",
    "megatron:tp=2,pp=4,dp=2,mb=2,schedule=eager1f1b",
    "megatron:tp=2,pp=4,dp=2,mb=2,wdelay=1",
    "megatron:tp=2,pp=4,dp=2,mb=2,framework=none",
    "megatron:tp=2,pp=4,dp=2,mb=2,schedule=interleaved,vp=2,framework=none",
    "megatron:tp=2,pp=4,dp=2,mb=2,framework=pytorch-eager",
    "megatron:tp=2,pp=4,dp=2,mb=2,framework=megatron-deepspeed",
    "megatron:tp=2,pp=4,dp=2,mb=2,framework=cuda-graphs",
    "megatron:tp=2,pp=4,dp=2,mb=2,sp=1",
    "megatron:tp=2,pp=4,dp=2,mb=2,sp=1,tp_overlap=1",
    "megatron:tp=2,pp=4,dp=2,mb=2,recompute=selective",
    "megatron:tp=2,pp=4,dp=2,mb=2,schedule=interleaved,vp=2,recompute=full",
    "megatron:tp=2,pp=4,dp=2,mb=2,zero=1",
    "megatron:tp=2,pp=4,dp=2,mb=2,zero=1,overlap_param_gather=1",
    "megatron:tp=2,pp=4,dp=2,mb=2,zero=2",
    "megatron:tp=2,pp=4,dp=2,mb=2,zero=3",
    "megatron:tp=4,pp=1,dp=4,mb=4",
    "megatron:tp=1,pp=2,dp=8,mb=1,schedule=1f1b,sp=0,recompute=selective,zero=1",
    "megatron:tp=2,pp=4,dp=2,mb=2,overlap_grad_reduce=0",
    "megatron:tp=2,pp=4,dp=2,mb=2,wdelay=1,zero=1,overlap_grad_reduce=0",
    /* Megatron's backward overlap (on by default): the input gradient's collective runs
     * beside dW (a folded span); off, it sits between two chain members; with sequence
     * parallelism the re-gather's and the reduce-scatter's spans overlap */
    "megatron:tp=2,pp=4,dp=2,mb=2,async_tensor_model_parallel_allreduce=0",
    "megatron:tp=2,pp=4,dp=2,mb=2,schedule=interleaved,vp=2,sp=1,recompute=selective",
    "megatron:tp=2,pp=4,dp=2,mb=2,sp=1,async_tensor_model_parallel_allreduce=0",
};

static void test_identical_symmetric(void) {
  for (gsize i = 0; i < G_N_ELEMENTS(merging); i++) check(model, merging[i], FALSE, TRUE);
}

static void test_identical_expanded(void) {
  for (gsize i = 0; i < G_N_ELEMENTS(merging); i += 3) check(model, merging[i], TRUE, TRUE);
}

/* Across the edge between host-bound and GPU-bound runs: a small GPT whose layers grow in width
 * and depth under the slowest and the default launch paths, full against merged. Whether a
 * run reduces is the host's to decide; the figures must agree either way. */
static void test_host_transition(void) {
  static const char *const frameworks[] = {"pytorch-eager", "megatron-lm"};
  guint reduced = 0, runs = 0;
  for (gsize f = 0; f < G_N_ELEMENTS(frameworks); f++)
    for (int hidden = 256; hidden <= 4096; hidden *= 2)
      for (int layers = 8; layers <= 32; layers *= 2) {
        g_autofree char *m = g_strdup_printf(
            "gpt:layers=%d,hidden=%d,heads=8,seq=1024,vocab=32000,batch=64", layers, hidden);
        g_autofree char *spec =
            g_strdup_printf("megatron:tp=2,pp=4,dp=2,mb=1,framework=%s", frameworks[f]);
        SimRun *full = simulate(m, spec, FALSE, FALSE);
        SimRun *merged = simulate(m, spec, FALSE, TRUE);
        assert_same_prediction(sim_run_prediction(full), sim_run_prediction(merged));
        reduced += sim_run_prediction(merged)->merged_tasks > 0;
        runs++;
        test_run_free(full);
        test_run_free(merged);
      }
  g_test_message("%u of %u runs reduced", reduced, runs);
  g_assert_cmpuint(reduced, >, 0);
  g_assert_cmpuint(reduced, <, runs);
}

/* The host pass's bound on early launches by chunks (sim_merge_launches_early) implies the
 * position-by-position bound it stands for (whose proof is in sim_merge_host.c, and which the
 * full-against-merged comparisons check), on random programs: a few blocks with durations
 * from 0 (about as long as the launches, to much longer), launch times, 1-3 kernels, queue
 * depths from 1, any first start and position. Both hold on some and fail on others, and the
 * chunks are taken (a shorter chunk RHS, a queue bound one chunk early, or no chunk test
 * at all fail here; so does the queue's count after a proven chunk one kernel too high, first
 * at trial 19,483: hence 40,000 trials, ~0.4 s). */
static void test_launch_bound_chunks(void) {
  GRand *r = g_rand_new_with_seed(7);
  guint both = 0, exact_only = 0, neither = 0;
  enum { MAXN = 2000 };
  uint32_t *block = g_new(uint32_t, MAXN);
  SimTime *cum = g_new(SimTime, MAXN + 1);
  for (int trial = 0; trial < 40000; trial++) {
    SimTime dur[6], host[6];
    int kernels[6];
    guint nblocks = (guint)g_rand_int_range(r, 1, 7);
    gint32 scale = g_rand_int_range(r, 1, 60);
    for (guint b = 0; b < nblocks; b++) {
      dur[b] = g_rand_int_range(r, 0, 5) == 0 ? 0 : (SimTime)g_rand_int_range(r, 0, scale);
      host[b] = (SimTime)g_rand_int_range(r, 0, 12);
      kernels[b] = g_rand_int_range(r, 1, 4);
    }
    uint32_t first = (uint32_t)g_rand_int_range(r, 0, 4);
    uint32_t end = first + (uint32_t)g_rand_int_range(r, 1, MAXN - 4);
    cum[0] = 0;
    /* positions drawn one by one, or in runs of one block (long runs of short kernels fill
     * the queue's reach, where its bound binds) */
    gboolean runs = g_rand_boolean(r);
    for (uint32_t k = 0; k < end;) {
      uint32_t b = (uint32_t)g_rand_int_range(r, 0, (gint32)nblocks);
      uint32_t len = runs ? (uint32_t)g_rand_int_range(r, 1, 300) : 1;
      for (; len > 0 && k < end; len--, k++) {
        block[k] = b;
        cum[k + 1] = cum[k] + dur[b];
      }
    }
    guint64 depth = (guint64)g_rand_int_range(r, 1, 400);
    /* a late first start gives the host a lead, and the queue's reach is then what binds */
    SimTime start = (SimTime)g_rand_int_range(r, 0, g_rand_boolean(r) ? 200 : 100000);
    gboolean chunked = sim_merge_launches_early(block, host, kernels, depth, cum, first, end, start, FALSE);
    gboolean exact = sim_merge_launches_early(block, host, kernels, depth, cum, first, end, start, TRUE);
    if (chunked && !exact)
      g_error("trial %d: the chunks prove what the positions do not (%u positions, depth %" G_GUINT64_FORMAT ")",
              trial, end - first, depth);
    both += chunked && exact;
    exact_only += exact && !chunked;
    neither += !exact;
  }
  g_test_message("both %u, by position only %u, neither %u", both, exact_only, neither);
  g_assert_cmpuint(both, >, 100);
  g_assert_cmpuint(neither, >, 100);
  g_free(block);
  g_free(cum);
  g_rand_free(r);
}

/* Other models: grouped-query attention with context parallelism (ring attention), MoE with
 * expert parallelism (all-to-all dispatch), a U-Net under data parallelism, these options
 * combined with the memory options and fp8; every move between
 * meshes planned as cross-mesh resharding (SimOptions.crossmesh); step-expanded collectives. */
static void test_models(void) {
  check("llama3-8b:batch=16", "megatron:tp=2,pp=2,dp=2,cp=2,mb=1", FALSE, TRUE);
  check("llama3-8b:batch=16", "megatron:tp=2,pp=2,dp=4,mb=1,sp=1,recompute=full,zero=1", FALSE,
        TRUE);
  check("qwen1.5-moe-a2.7b:batch=32", "megatron:tp=1,pp=2,dp=8,ep=4,mb=1", FALSE, TRUE);
  check("u-transformer:batch=2048", "dp", FALSE, TRUE);
  /* options combined: MoE under interleaving with recomputation, sequence parallelism and the
   * distributed optimizer; context parallelism with ZeRO-3 and full recomputation; fp8 */
  check("qwen1.5-moe-a2.7b:batch=32",
        "megatron:tp=2,pp=2,dp=4,ep=4,mb=1,schedule=interleaved,vp=2,recompute=selective,sp=1,zero=1",
        FALSE, TRUE);
  check("qwen1.5-moe-a2.7b:batch=32", "megatron:tp=1,pp=2,dp=8,ep=4,mb=1,recompute=full", TRUE,
        TRUE);
  check("llama3-8b:batch=16", "megatron:tp=2,pp=2,dp=2,cp=2,mb=1,sp=1,recompute=full,zero=3",
        FALSE, TRUE);
  cluster = "dgx-h100:nodes=2"; /* fp8 GEMMs need a device with them */
  check("llama3-8b:batch=16", "megatron:tp=2,pp=2,dp=4,mb=1,dtype=fp8,schedule=interleaved,vp=2",
        FALSE, TRUE);
  cluster = "dgx-a100:nodes=2";
  crossmesh_mode = TRUE;
  check(model, "megatron:tp=2,pp=4,dp=2,mb=2", FALSE, TRUE);
  crossmesh_mode = FALSE;
  /* step-expanded collectives (transfers on link resources, spans in the breakdown), folded
   * by symmetry and expanded */
  step_mode = TRUE;
  check(model, "megatron:tp=2,pp=4,dp=2,mb=2", FALSE, TRUE);
  check(model, "megatron:tp=4,pp=2,dp=2,mb=4,schedule=interleaved,vp=2", FALSE, TRUE);
  check(model, "megatron:tp=2,pp=4,dp=2,mb=2,zero=1,sp=1", TRUE, TRUE);
  step_mode = FALSE;
}

/* Every 7th point of the full Megatron space (schedules, vp, recomputation, sp, ZeRO) of a
 * 16-layer GPT on two DGX A100, a fifth of them under weight delay: merged == full, and the
 * reduction applies to most. */
static gboolean was_merged(const SimPrediction *p) { return p->merged_tasks > 0; }

static void test_space(void) {
  guint stride = 7;
#if defined(__SANITIZE_ADDRESS__)
  stride = 21; /* a third of the points (~23 s instrumented at 7; the release run checks every 7th) */
#endif
  /* (every microbatch timed: test-period.c checks the steady-state route against this) */
  SimOptions full_options = {0}, merged_options = {.prediction_only = TRUE, .no_steady_state = TRUE};
  int checked = 0;
  int merged = test_space_compare("gpt:layers=16,hidden=2048,heads=16,seq=1024,vocab=32000,batch=64",
                                  cluster, stride, 5, &full_options, &merged_options, "full",
                                  "merged", was_merged, &checked);
  g_test_message("%d points checked, %d merged", checked, merged);
  g_assert_cmpint(checked, >, 350 / (int)stride);
  g_assert_cmpint(merged, >, checked / 2);
}

/* The merged symmetric run gives the full expanded run's iteration, as symmetry promises. */
static void test_symmetric_vs_expanded(void) {
  /* folded collectives (symmetric runs only: an expanded one's hold every member's stream)
   * under interleaving, sequence parallelism, recomputation, another host profile and ZeRO */
  static const char *const specs[] = {
      "megatron:tp=2,pp=4,dp=2,mb=2,schedule=interleaved,vp=2",
      "megatron:tp=2,pp=4,dp=2,mb=2,schedule=interleaved,vp=2,sp=1,recompute=selective",
      "megatron:tp=4,pp=2,dp=2,mb=2,framework=megatron-deepspeed",
      "megatron:tp=4,pp=2,dp=2,mb=4,schedule=interleaved,vp=2,zero=1",
  };
  for (gsize i = 0; i < G_N_ELEMENTS(specs); i++) {
    SimRun *full = simulate(model, specs[i], TRUE, FALSE);
    SimRun *merged = simulate(model, specs[i], FALSE, TRUE);
    g_assert_cmpuint(sim_run_prediction(merged)->merged_tasks, >, 0);
    g_assert_true(sim_run_prediction(full)->iteration_time_s ==
                  sim_run_prediction(merged)->iteration_time_s);
    g_assert_true(sim_run_prediction(full)->bubble_s == sim_run_prediction(merged)->bubble_s);
    test_run_free(full);
    test_run_free(merged);
  }
}

/* The points `bench --suite predict` times (issue 16: GPT-3 175B on 1024 A100s), merged against
 * the full engine on the same symmetric graph, every figure bit for bit. Whether the reduction
 * applies depends on the host profile (a host-bound run falls back to the full engine), so only
 * the answer is asserted. */
static void test_bench_points(void) {
  static const char *const points[] = {
      "megatron:tp=8,pp=16,dp=8,mb=1,schedule=interleaved,vp=2",
      "megatron:tp=8,pp=16,dp=8,mb=1,schedule=1f1b",
      "megatron:tp=8,pp=16,dp=8,mb=1,schedule=interleaved,vp=2,recompute=selective,sp=1",
      "megatron:tp=8,pp=8,dp=16,mb=1,schedule=interleaved,vp=4,zero=1",
  };
  const char *saved = cluster;
  cluster = "dgx-a100:nodes=128";
  guint bounded_before = sim_merge_host_bounded_devices();
  for (gsize i = 0; i < G_N_ELEMENTS(points); i++) {
    SimRun *full = simulate("gpt3-175b:batch=1536", points[i], FALSE, FALSE);
    SimRun *merged = simulate("gpt3-175b:batch=1536", points[i], FALSE, TRUE);
    if (g_test_verbose())
      g_printerr("%s: %" G_GUINT64_FORMAT " tasks, %" G_GUINT64_FORMAT " merged\n", points[i],
                 sim_run_prediction(merged)->tasks, sim_run_prediction(merged)->merged_tasks);
    assert_same_prediction(sim_run_prediction(full), sim_run_prediction(merged));
    /* Narayanan's point merges (its launches keep ahead of its kernels): a fallback there
     * would be a reduction that broke, not a host-bound run */
    if (i == 0) g_assert_cmpuint(sim_run_prediction(merged)->merged_tasks, >, 0);
    /* and its devices' launches are proven early without walking them (early_device) */
    guint bounded = sim_merge_host_bounded_devices();
    if (i == 0) g_assert_cmpuint(bounded, >=, bounded_before + 16);
    bounded_before = bounded;
    /* the engine and the breakdown report their own CPU time (bench --suite predict's split):
     * milliseconds on these graphs, whichever engine ran */
    g_assert_cmpfloat(sim_run_prediction(merged)->engine_cpu_s, >, 0);
    g_assert_cmpfloat(sim_run_prediction(merged)->breakdown_cpu_s, >, 0);
    g_assert_cmpfloat(sim_run_prediction(full)->engine_cpu_s, >, 0);
    test_run_free(full);
    test_run_free(merged);
  }
  cluster = saved;
}

/* Where the reduction does not hold the full engine runs: collectives holding the compute
 * streams (overlap=0, as tasks or step-expanded); a host-bound model whose launches are mostly
 * late. Where a few launches are late the reduced graph is timed again with them as releases
 * and still gives the full answer. */
static void test_fallback(void) {
  check(model, "megatron:tp=2,pp=4,dp=2,mb=2,overlap=0", FALSE, FALSE);
  check(model, "megatron:tp=2,pp=4,dp=2,mb=2,overlap=0,framework=none", FALSE, FALSE);
  check(model, "megatron:tp=2,pp=4,dp=2,mb=2,overlap=0", TRUE, FALSE);
  const char *tiny = "gpt:layers=4,hidden=256,heads=4,seq=128,vocab=1000,batch=32";
  check(tiny, "megatron:tp=2,pp=2,dp=4,mb=1,framework=pytorch-eager", FALSE, FALSE);
  /* step-expanded collectives holding the compute streams */
  step_mode = TRUE;
  check(model, "megatron:tp=2,pp=4,dp=2,mb=2,overlap=0", FALSE, FALSE);
  step_mode = FALSE;
  check("u-transformer:batch=64", "dp", FALSE, FALSE); /* host-bound too */
  /* a few late launches: they become releases and the reduced graph is timed again (the
   * first reduced run finds 217 and 232 late launches here, then none; at the GPU host's
   * launch costs, cm_framework.c, smaller micro-batches have too many and fall back) */
  check("resnet-101:batch=1536", "megatron:tp=1,pp=2,dp=8,mb=12", FALSE, TRUE);
  check("resnet-101:batch=2048", "megatron:tp=2,pp=2,dp=4,mb=8,framework=pytorch-eager", FALSE,
        TRUE);
  /* the same model without a host stream merges */
  check(tiny, "megatron:tp=2,pp=2,dp=4,mb=1,framework=none", FALSE, TRUE);
}

/* Calls @fn on every @step-th strategy of merging (the test model and cluster). */
typedef void (*StrategyCheck)(const MdlGraph *g, const MdlStrategy *s, const DevCluster *c,
                              const CmParams *params);
static void for_strategies(gsize step, StrategyCheck fn) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec(cluster, &error);
  MdlGraph *g = mdl_graph_parse_spec(model, &error);
  g_assert_no_error(error);
  CmParams params;
  cm_params_default(&params);
  for (gsize i = 0; i < G_N_ELEMENTS(merging); i += step) {
    MdlStrategy *s = mdl_strategy_parse_spec(merging[i], g, c, &error);
    g_assert_no_error(error);
    fn(g, s, c, &params);
    mdl_strategy_free(s);
  }
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* Merging @g gives @full's makespan (its engine's schedule) and breakdown sums @sums, on a
 * reduced graph smaller than @g. */
static void assert_merges_to(const SimTaskGraph *g, const SimSchedule *full,
                             const SimBreakdownSums *sums) {
  SimBreakdownSums merged;
  SimTime makespan = 0;
  uint32_t reduced = 0;
  g_assert_true(sim_merge_predict(g, &makespan, &merged, &reduced));
  g_assert_cmpuint(reduced, <, sim_task_graph_size(g));
  g_assert_cmpuint(makespan, ==, sim_schedule_makespan(full));
  g_assert_cmpuint(merged.compute, ==, sums->compute);
  g_assert_cmpuint(merged.exposed, ==, sums->exposed);
  g_assert_cmpuint(merged.host, ==, sums->host);
  g_assert_cmpint(merged.used, ==, sums->used);
}

/* On a full graph (host tasks materialized, CSR built) the reduction reads the host stream from
 * its tasks and gives the full engine's makespan and breakdown sums exactly. */
static void check_full_graph(const MdlGraph *g, const MdlStrategy *s, const DevCluster *c,
                             const CmParams *params) {
  GError *error = NULL;
  SimOptions options = {0};
  SimTaskGraph *tg = sim_build_with_options(g, s, c, params, &options, &error);
  g_assert_no_error(error);
  SimSchedule *sched = sim_engine_run(tg, &error);
  g_assert_no_error(error);
  g_autofree guint *host_off = NULL;
  g_autofree SimTime *host_iv = sim_host_wait_intervals(tg, sched, &host_off);
  SimBreakdownSums full;
  sim_breakdown_sums(tg, sched, host_iv, host_off, NULL, &full);
  assert_merges_to(tg, sched, &full);
  sim_schedule_free(sched);
  sim_task_graph_free(tg);
}

static void test_full_graph(void) {
  for_strategies(2, check_full_graph);
}

/* A graph for merging hands merging what its builder knows (SimTaskGraph.program_pos,
 * the launch queue's depth, kernels and reach): each compute task's position is where program
 * lists it, and no launch waits further back than the reach (the host pass keeps no more
 * positions' ends than that), the queue run as sim_build_host.c runs it for a full graph;
 * its prediction is the full graph's. */
static void check_for_merge_fields(const MdlGraph *g, const MdlStrategy *s, const DevCluster *c,
                                   const CmParams *params) {
  GError *error = NULL;
  SimOptions options = {0};
  SimTaskGraph *tg = sim_build_unfinished(g, s, c, params, &options, TRUE, &error);
  g_assert_no_error(error);
  if (!tg->program_block) { /* a host-bound strategy's full graph: nothing to check */
    sim_task_graph_free(tg);
    return;
  }
  g_assert_nonnull(tg->program_pos);
  for (uint32_t k = 0; k < tg->num_compute; k++)
    g_assert_cmpuint(tg->program_pos[tg->program[k]], ==, k);
  g_assert_true((tg->block_kernels != NULL) == (tg->block_host != NULL));
  guint waits = 0;
  for (int d = 0; tg->block_kernels && d < tg->num_devices; d++) {
    guint64 launched = 0, done = 0;
    for (uint32_t p = tg->program_begin[d], q = p; p < tg->program_begin[d + 1]; p++) {
      guint64 k = (guint64)tg->block_kernels[tg->program_block[p]];
      uint32_t q0 = q;
      while (q < p && launched - done + k > tg->host_queue_depth)
        done += (guint64)tg->block_kernels[tg->program_block[q++]];
      if (q != q0) {
        g_assert_cmpuint(p - (q - 1), <=, tg->host_queue_reach);
        waits++;
      }
      launched += k;
    }
  }
  g_assert_true(!tg->block_kernels || waits > 0); /* the queue filled */
  SimTime makespan = 0;
  SimBreakdownSums merged;
  uint32_t reduced = 0;
  gboolean ok = sim_merge_predict(tg, &makespan, &merged, &reduced);
  sim_task_graph_free(tg);
  if (!ok) return;
  tg = sim_build_with_options(g, s, c, params, &options, &error); /* the full engine's */
  g_assert_no_error(error);
  SimSchedule *sched = sim_engine_run(tg, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(makespan, ==, sim_schedule_makespan(sched));
  sim_schedule_free(sched);
  sim_task_graph_free(tg);
}

static void test_for_merge_fields(void) {
  for_strategies(4, check_for_merge_fields);
}

/* The launch queue where it binds, on hand-made graphs of one device: QN kernels in a chain
 * (100 ps each, two of 1 ps and one lasting zero), each launched in 5 ps with one kernel, the
 * host allowed QDEPTH kernels ahead. A launch waits for the task QDEPTH before it, so the
 * launches after the short tasks end late and gate their kernels (late launches, a host wait
 * before each). The
 * full graph has the host tasks and the queue's edges (as sim_build_host.c adds them); the
 * graph for merging has blocks, their kernels and the queue's depth, and the host pass
 * (sim_merge_time_host) runs the queue itself: the same makespan and breakdown sums. */
enum { QN = 40, QDEPTH = 2 };
static SimTime queue_duration(uint32_t i) {
  return i == 10 || i == 25 ? 1 : i == 33 ? 0 : 100; /* (33: a group of its own) */
}

static SimTaskGraph *queue_full_graph(void) {
  SimTaskGraph *g = sim_task_graph_new(1);
  uint32_t compute = sim_resource_compute(0), host = (uint32_t)g->num_resources;
  g->num_resources++;
  SimTask t = {.kind = SIM_TASK_FORWARD, .op = -1, .tensor = -1, .microbatch = 0};
  for (uint32_t i = 0; i < QN; i++) {
    t.duration = queue_duration(i);
    sim_task_graph_add(g, &t, &compute, 1);
  }
  t.kind = SIM_TASK_HOST;
  t.duration = 5;
  for (uint32_t i = 0; i < QN; i++) sim_task_graph_add(g, &t, &host, 1);
  g->num_compute = QN;
  g->host_base = QN;
  g->host_resource_base = host;
  g->chain_prev = g_new(uint32_t, QN + 1);
  g->program = g_new(uint32_t, QN + 1);
  g->program_begin = g_new(uint32_t, 2);
  g->program_begin[0] = 0;
  g->program_begin[1] = QN;
  for (uint32_t i = 0; i < QN; i++) {
    g->program[i] = i;
    g->chain_prev[i] = i ? i - 1 : UINT32_MAX;
    sim_task_graph_edge(g, QN + i, i); /* launch, kernel */
    if (i) sim_task_graph_edge(g, i - 1, i), sim_task_graph_edge(g, QN + i - 1, QN + i);
    if (i >= QDEPTH) sim_task_graph_edge(g, i - QDEPTH, QN + i); /* the queue, one kernel each */
  }
  sim_task_graph_finish(g);
  return g;
}

static SimTaskGraph *queue_graph_for_merging(void) {
  SimTaskGraph *g = sim_task_graph_new(1);
  SimTask t = {.kind = SIM_TASK_FORWARD, .op = -1, .tensor = -1, .microbatch = 0, .nres = 1};
  g_array_set_size(g->tasks, QN); /* (entries a graph for merging need not write) */
  for (uint32_t i = 0; i < QN; i++) g_array_index(g->tasks, SimTask, i) = t;
  g->num_compute = QN;
  g->chain_prev = g_new(uint32_t, QN + 1);
  g->program = g_new(uint32_t, QN + 1);
  g->program_pos = g_new(uint32_t, QN + 1);
  g->program_block = g_new(uint32_t, QN + 1);
  g->program_begin = g_new(uint32_t, 2);
  g->program_begin[0] = 0;
  g->program_begin[1] = QN;
  g->block_duration = g_new(SimTime, QN);
  g->block_host = g_new(SimTime, QN);
  g->block_kernels = g_new(int, QN);
  for (uint32_t i = 0; i < QN; i++) {
    g->program[i] = g->program_pos[i] = g->program_block[i] = i;
    g->chain_prev[i] = i ? i - 1 : UINT32_MAX;
    g->block_duration[i] = queue_duration(i);
    g->block_host[i] = 5;
    g->block_kernels[i] = 1;
  }
  g->host_queue_depth = g->host_queue_reach = QDEPTH;
  return g;
}

static void test_launch_queue(void) {
  SimTaskGraph *full = queue_full_graph();
  GError *error = NULL;
  SimSchedule *s = sim_engine_run(full, &error);
  g_assert_no_error(error);
  int late = 0; /* kernels that waited for their launch past their chain predecessor */
  for (uint32_t i = 1; i < QN; i++) late += s->start[i] > s->start[i - 1] + queue_duration(i - 1);
  g_assert_cmpint(late, ==, 3); /* after each short task and the instant one */
  g_autofree guint *host_off = NULL;
  g_autofree SimTime *host_iv = sim_host_wait_intervals(full, s, &host_off);
  SimBreakdownSums want;
  sim_breakdown_sums(full, s, host_iv, host_off, NULL, &want);
  g_assert_cmpuint(want.host, >, 5); /* the first launch and the late ones */
  SimTaskGraph *g = queue_graph_for_merging();
  assert_merges_to(g, s, &want);
  sim_schedule_free(s);
  sim_task_graph_free(full);
  sim_task_graph_free(g);
}

/* What the folded engine logs for the breakdown (SimSchedule.stretch, .count) against the
 * schedule it made: each folded collective's compute stretches are its steps timed again from
 * its fork with the final ends of the collectives they join (those lasting more than zero,
 * touching ones as one), and the counts are the log's pops per resource plus the stretches on
 * compute streams. */
typedef struct {
  const SimSchedule *s;
  const SimFolds *folds;
  GArray *out; /* SimTime pairs */
} Retimed;

static SimTime retimed_end(void *ctx, uint32_t x) {
  const Retimed *r = ctx;
  return r->s->start[x] + r->folds->task[x].duration;
}

static void retimed_stretch(void *ctx, SimTime from, SimTime to) {
  Retimed *r = ctx;
  SimTime *last = r->out->len ? &g_array_index(r->out, SimTime, r->out->len - 1) : NULL;
  if (last && *last == from) { /* the engine keeps touching stretches as one */
    *last = to;
    return;
  }
  SimTime pair[2] = {from, to};
  g_array_append_vals(r->out, pair, 2);
}

static void assert_logged_stretches(const SimTaskGraph *g, const SimSchedule *s,
                                    const SimFolds *folds) {
  int nres = sim_task_graph_num_resources(g);
  g_autofree guint *count = g_new0(guint, (gsize)nres + 1);
  uint32_t kept = 0;
  for (uint32_t k = 0; k < s->nlog; k++) {
    const SimPop *e = &s->log[k];
    if (e->id == UINT32_MAX) continue; /* withdrawn */
    g_assert_cmpuint(e->id, ==, s->order[kept++]); /* the order is the log's kept pops */
    SimTaskInfo info;
    sim_task_graph_get(g, e->id, &info);
    for (int r = 0; r < info.nres; r++) count[info.resources[r] + 1]++;
    g_assert_cmpint(e->folded, ==, folds->task[e->id].owner != UINT32_MAX);
    if (!e->folded) {
      g_assert_cmpuint(e->nstretches, ==, 0);
      continue;
    }
    Retimed r = {s, folds, g_array_new(FALSE, FALSE, sizeof(SimTime))};
    sim_fold_steps(folds, &folds->task[e->id], e->fork, retimed_end, retimed_stretch, &r);
    g_assert_cmpuint(e->nstretches, ==, r.out->len / 2);
    g_assert_cmpmem(s->stretch + 2 * (gsize)e->stretch, sizeof(SimTime) * 2 * e->nstretches,
                    r.out->data, sizeof(SimTime) * r.out->len);
    count[sim_resource_compute(sim_resource_device(e->res0)) + 1] += e->nstretches;
    g_array_unref(r.out);
  }
  g_assert_cmpuint(kept, ==, s->events);
  g_assert_cmpmem(s->count, sizeof(guint) * ((gsize)nres + 1), count, sizeof(guint) * ((gsize)nres + 1));
}

/* The folded engine (sim/sim_engine_folds.c) on a hand-made reduced graph: a chain c (10 ps)
 * with folded collectives x1 (4 ps, 6 after its join), x2 (2 ps, 5 after) and x3 (1 ps, 2
 * after) on device 0's comm stream, a collective y (8 ps) released at 15 on the same stream,
 * and z after c on the p2p stream. c reserves x1 at 10 and x2 at 20 when it pops; y pops at
 * 15 after x1 (applied: the stream is free at 14) and ends at 23, after x2's reserved start:
 * x2 is withdrawn and pops at 20, starting when y ends (23); the chain goes on at 30 (x3's
 * early entry at 27 is ignored), ends at 33, and z runs at 33. The plain run's times, worked
 * by hand; reserving x2 without the withdrawal would start it at 20. */
static void test_withdrawn(void) {
  SimTaskGraph *g = sim_task_graph_new(1);
  uint32_t compute = sim_resource_compute(0), comm = sim_resource_comm(0);
  uint32_t p2p = sim_resource_stream(0, SIM_STREAM_P2P);
  SimTask t = {.kind = SIM_TASK_FORWARD, .op = -1, .tensor = -1, .microbatch = 0};
  t.duration = 10;
  uint32_t c = sim_task_graph_add(g, &t, &compute, 1);
  t.kind = SIM_TASK_COMM;
  t.duration = 8;
  uint32_t y = sim_task_graph_add(g, &t, &comm, 1);
  const SimTime durations[3] = {4, 2, 1}, after[3] = {6, 5, 2};
  uint32_t x[3];
  for (int i = 0; i < 3; i++) {
    t.duration = durations[i];
    x[i] = sim_task_graph_add(g, &t, &comm, 1);
  }
  t.duration = 1;
  uint32_t z = sim_task_graph_add(g, &t, &p2p, 1);
  sim_task_graph_edge(g, c, z);
  sim_task_graph_finish(g);
  SimFold fold[6];
  SimFoldStep steps[3];
  for (int i = 0; i < 6; i++) fold[i] = (SimFold){UINT32_MAX, UINT32_MAX, 0, 0, UINT32_MAX, 0};
  fold[c].next = x[0];
  for (uint32_t i = 0; i < 3; i++) {
    steps[i] = (SimFoldStep){after[i], x[i]}; /* its join right after its fork, then on */
    fold[x[i]] = (SimFold){i < 2 ? x[i + 1] : UINT32_MAX, c, i, 1, comm, durations[i]};
  }
  SimFolds folds = {fold, steps};
  SimTime release[6] = {0};
  release[y] = 15;
  GError *error = NULL;
  SimSchedule *s = sim_engine_run_released(g, release, &folds, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(s->start[c], ==, 0);
  g_assert_cmpuint(s->start[x[0]], ==, 10);
  g_assert_cmpuint(s->start[y], ==, 15);
  g_assert_cmpuint(s->start[x[1]], ==, 23); /* withdrawn: after y, not at its reserved 20 */
  g_assert_cmpuint(s->start[x[2]], ==, 30);
  g_assert_cmpuint(s->start[z], ==, 33);
  g_assert_cmpuint(s->ready[z], ==, 33);
  g_assert_cmpuint(s->makespan, ==, 34);
  g_assert_cmpuint(s->events, ==, 6); /* each task once in the order and the log */
  g_assert_cmpuint(s->nlog, ==, 7);   /* and x2's withdrawn reservation, marked */
  /* the chain's stretches after each join: x1 ends at 14, x2 (withdrawn) at 25, x3 at 31 */
  const SimTime stretches[3][2] = {{14, 20}, {25, 30}, {31, 33}};
  for (uint32_t k = 0; k < s->nlog; k++)
    for (int i = 0; i < 3; i++)
      if (s->log[k].id == x[i]) {
        g_assert_cmpuint(s->log[k].nstretches, ==, 1);
        g_assert_cmpmem(s->stretch + 2 * (gsize)s->log[k].stretch, sizeof stretches[i],
                        stretches[i], sizeof stretches[i]);
      }
  assert_logged_stretches(g, s, &folds);
  sim_schedule_free(s);
  sim_task_graph_free(g);
}

/* A withdrawal whose delay a beside stretch absorbs: c (10 ps) with x1 (4 ps, 10 beside it,
 * 3 after its join) and x2 (1 ps, 2 after) on the comm stream, y (3 ps) released at 9 on it.
 * c reserves x1 at 10 and pushes x2 at 23; y ends at 12, after x1's reserved start, so x1
 * pops at 10 and starts at 12, but the chain still reaches x2 at max(10 + 10, 16) + 3 = 23:
 * x2's entry stands and pops once (a second entry at the same time would pop it twice). */
static void test_absorbed(void) {
  SimTaskGraph *g = sim_task_graph_new(1);
  uint32_t compute = sim_resource_compute(0), comm = sim_resource_comm(0);
  SimTask t = {.kind = SIM_TASK_FORWARD, .op = -1, .tensor = -1, .microbatch = 0};
  t.duration = 10;
  uint32_t c = sim_task_graph_add(g, &t, &compute, 1);
  t.kind = SIM_TASK_COMM;
  t.duration = 3;
  uint32_t y = sim_task_graph_add(g, &t, &comm, 1);
  t.duration = 4;
  uint32_t x1 = sim_task_graph_add(g, &t, &comm, 1);
  t.duration = 1;
  uint32_t x2 = sim_task_graph_add(g, &t, &comm, 1);
  sim_task_graph_finish(g);
  SimFold fold[4];
  for (int i = 0; i < 4; i++) fold[i] = (SimFold){UINT32_MAX, UINT32_MAX, 0, 0, UINT32_MAX, 0};
  SimFoldStep steps[3] = {{10, UINT32_MAX}, {3, x1}, {2, x2}};
  fold[c].next = x1;
  fold[x1] = (SimFold){x2, c, 0, 2, comm, 4};
  fold[x2] = (SimFold){UINT32_MAX, c, 2, 1, comm, 1};
  SimFolds folds = {fold, steps};
  SimTime release[4] = {0};
  release[y] = 9;
  GError *error = NULL;
  SimSchedule *s = sim_engine_run_released(g, release, &folds, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(s->start[y], ==, 9);
  g_assert_cmpuint(s->start[x1], ==, 12);
  g_assert_cmpuint(s->start[x2], ==, 23);
  g_assert_cmpuint(s->makespan, ==, 26);
  g_assert_cmpuint(s->events, ==, 4);
  assert_logged_stretches(g, s, &folds);
  sim_schedule_free(s);
  sim_task_graph_free(g);
}

/* A prediction-only run has no schedule: the per-task accessors yield nothing. */
static void test_no_schedule(void) {
  SimRun *run = simulate(model, merging[0], FALSE, TRUE);
  g_assert_null(sim_run_schedule(run));
  SimTimeline it;
  SimTaskInfo info;
  sim_timeline_init(&it, run);
  g_assert_false(sim_timeline_next(&it, &info));
  test_run_free(run);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/merge/identical-symmetric", test_identical_symmetric);
  g_test_add_func("/merge/identical-expanded", test_identical_expanded);
  g_test_add_func("/merge/symmetric-vs-expanded", test_symmetric_vs_expanded);
  g_test_add_func("/merge/models", test_models);
  g_test_add_func("/merge/host-transition", test_host_transition);
  g_test_add_func("/merge/launch-bound/chunks", test_launch_bound_chunks);
  g_test_add_func("/merge/space", test_space);
  g_test_add_func("/merge/fallback", test_fallback);
  g_test_add_func("/merge/bench-points", test_bench_points);
  g_test_add_func("/merge/full-graph", test_full_graph);
  g_test_add_func("/merge/for-merge-fields", test_for_merge_fields);
  g_test_add_func("/merge/launch-queue", test_launch_queue);
  g_test_add_func("/merge/no-schedule", test_no_schedule);
  g_test_add_func("/merge/withdrawn", test_withdrawn);
  g_test_add_func("/merge/absorbed", test_absorbed);
  return g_test_run();
}
