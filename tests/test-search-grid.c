/* Tests of the full Megatron space (search/srch_grid.c) and its two prunings: the
 * compute-stream bound (sim/sim_bound.h) is never above the simulated iteration, the
 * exhaustive grid search with memory screening and bound pruning finds the same best as
 * simulating every point of the space, the classic grid is evaluated in full whatever the
 * budget, and the result says how much of the space it covered. */
#include <glib.h>
#include <math.h>

#include "search/srch-int.h"
#include "sim/sim_bound.h"
#include "sim/sim_build-int.h"
#include "test-search-util.h"

static SrchResult *search_with(const Case *c, SrchAlgo algo, guint64 budget, gboolean baselines,
                               gboolean tp_overlap) {
  SrchOptions o;
  srch_options_default(&o);
  o.algo = algo;
  o.budget.evaluations = budget;
  o.threads = 2;
  o.no_baselines = !baselines;
  o.tp_overlap = tp_overlap;
  GError *error = NULL;
  SrchResult *r = srch_run(c->graph, c->cluster, &c->params, &o, &error);
  g_assert_no_error(error);
  g_assert_nonnull(r);
  return r;
}

static SrchResult *search(const Case *c, SrchAlgo algo, guint64 budget, gboolean baselines) {
  return search_with(c, algo, budget, baselines, FALSE);
}

/* Both bounds hold on every @stride-th point of the full space on @cluster, of every
 * schedule, recomputation, sp and ZeRO stage, and under weight delay: the compute bound is
 * positive, the iteration bound (with the communication gaps) is at least the compute bound
 * and never above the simulated iteration. Returns how many points the gaps raised. */
static int check_bounds(const char *model, const char *cluster, guint stride) {
  Case c;
  case_init(&c, model, cluster);
  GArray *points = srch_grid_full_points(c.graph, c.cluster, DEV_DTYPE_BF16);
  g_assert_cmpuint(points->len, >, 100);
  int checked = 0, tight = 0, raised = 0;
  for (guint i = 0; i < points->len; i += stride) { /* every variant appears */
    MdlMegatronConfig cfg = g_array_index(points, MdlMegatronConfig, i);
    cfg.weight_delay = (i / stride) % 5 == 0 && cfg.schedule != MDL_SCHEDULE_INTERLEAVED;
    GError *error = NULL;
    MdlStrategy *s = mdl_strategy_megatron(c.graph, c.cluster, &cfg, &error);
    if (!s) { /* weight delay is refused with some schedules */
      g_clear_error(&error);
      continue;
    }
    SimTime bound = sim_compute_bound(c.graph, s, c.cluster, &c.params);
    SimTime gaps = sim_iteration_bound(c.graph, s, c.cluster, &c.params, NULL);
    SimRun *run = sim_run_new(c.graph, s, c.cluster, &c.params, &error);
    g_assert_no_error(error);
    double time = sim_run_prediction(run)->iteration_time_s;
    g_assert_cmpuint(bound, >, 0);
    g_assert_cmpuint(gaps, >=, bound);
    g_assert_cmpfloat(sim_time_seconds(gaps), <=, time);
    tight += sim_time_seconds(bound) > 0.5 * time;
    raised += gaps > bound;
    checked++;
    sim_run_free(run);
    mdl_strategy_free(s);
  }
  g_test_message("%s on %s: %d strategies checked, compute bound above half the iteration on %d, "
                 "raised by the gaps on %d", model, cluster, checked, tight, raised);
  g_assert_cmpint(checked, >, 50);
  g_assert_cmpint(tight, >, 0);
  g_array_free(points, TRUE);
  case_clear(&c);
  return raised;
}

/* On one host (tensor parallelism over NVSwitch) and on two hosts of four GPUs (tensor
 * parallelism of 8 across InfiniBand); the gaps raise the bound somewhere on each. */
static void test_bound_below_simulation(void) {
  g_assert_cmpint(check_bounds(GPT4, GPT4_CLUSTER, 3), >, 0);
  g_assert_cmpint(check_bounds(GPT4, "dgx-a100:nodes=2,gpus_per_node=4", 5), >, 0);
}

/* The collective memo a reused bounder keeps (sim_build_memo.c) gives what the cost model
 * gives without it, time and channels, for groups that share their size, first device and
 * bytes but not their members (in one host or across two), every collective, asked twice in
 * turn (the second from the memo). */
static void test_collective_memo(void) {
  Case c;
  case_init(&c, GPT4, "dgx-a100:nodes=4,gpus_per_node=2");
  static const int groups[][4] = {{0, 1, 2, 3}, {0, 2, 4, 6}, {0, 1, 4, 5}, {1, 0, 3, 2}, {0, 4, 1, 5}};
  static const double bytes[] = {4096, 1 << 20, 3.5e8};
  Builder direct = {.c = c.cluster, .p = &c.params}, memo = direct;
  memo.collectives = sb_collective_memo_new();
  int checked = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int k = 0; k < CM_COLLECTIVE_COUNT; k++)
      for (guint g = 0; g < G_N_ELEMENTS(groups); g++)
        for (int p = 2; p <= 4; p += 2)
          for (guint i = 0; i < G_N_ELEMENTS(bytes); i++) {
            g_assert_cmpfloat(sb_collective_time(&memo, (CmCollective)k, groups[g], p, bytes[i]), ==,
                              sb_collective_time(&direct, (CmCollective)k, groups[g], p, bytes[i]));
            g_assert_cmpint(sb_collective_channels(&memo, (CmCollective)k, groups[g], p, bytes[i]), ==,
                            sb_collective_channels(&direct, (CmCollective)k, groups[g], p, bytes[i]));
            checked++;
          }
  g_assert_cmpint(checked, ==, 2 * CM_COLLECTIVE_COUNT * 5 * 2 * 3);
  sb_collective_memo_free(memo.collectives);
  case_clear(&c);
}

/* One bounder pointed at every shape of a space in turn (sim_bounder_set_strategy, as the
 * grid's screen moves from shape to shape) gives every point the bound sim_iteration_bound
 * gives a fresh build, with its memos and without any (build_each_microbatch: kernel times,
 * sb_overlap_split, collective times computed at each use); on a model whose gradient syncs cross InfiniBand, so that the
 * data-parallel stream and the ZeRO 1/2 tail decide some of the bounds, and a small one. */
static void check_set_strategy(const char *model, const char *cluster) {
  Case c;
  case_init(&c, model, cluster);
  GArray *points = srch_grid_full_points(c.graph, c.cluster, DEV_DTYPE_BF16);
  SimBounder *bounder = NULL;
  MdlStrategy *s = NULL;
  MdlMegatronConfig shape;
  SimOptions no_memos = {0};
  no_memos.build_each_microbatch = TRUE;
  for (guint i = 0; i < points->len; i++) {
    MdlMegatronConfig cfg = g_array_index(points, MdlMegatronConfig, i), key = cfg;
    key.zero_stage = key.recompute = key.overlap_param_gather = 0;
    if (!s || memcmp(&key, &shape, sizeof key) != 0) {
      mdl_strategy_free(s);
      s = mdl_strategy_megatron(c.graph, c.cluster, &key, NULL);
      g_assert_nonnull(s);
      shape = key;
      if (!bounder) bounder = sim_bounder_new(c.graph, s, c.cluster, &c.params, NULL);
      else sim_bounder_set_strategy(bounder, s);
    }
    s->zero_stage = cfg.zero_stage;
    s->recompute = cfg.recompute;
    s->overlap_param_gather = cfg.overlap_param_gather;
    MdlStrategy *fresh = mdl_strategy_megatron(c.graph, c.cluster, &cfg, NULL);
    SimTime bound = sim_bounder_bound(bounder);
    g_assert_cmpuint(bound, ==, sim_iteration_bound(c.graph, fresh, c.cluster, &c.params, NULL));
    g_assert_cmpuint(bound, ==, sim_iteration_bound(c.graph, fresh, c.cluster, &c.params, &no_memos));
    mdl_strategy_free(fresh);
  }
  sim_bounder_free(bounder);
  mdl_strategy_free(s);
  g_array_free(points, TRUE);
  case_clear(&c);
}

static void test_bounder_set_strategy(void) {
  check_set_strategy("gpt:layers=2,hidden=4096,heads=32,seq=128,vocab=1024,batch=8",
                     "dgx-a100:nodes=4,gpus_per_node=2");
  check_set_strategy(GPT4, "dgx-a100:nodes=2,gpus_per_node=4");
}

/* A bounder reused across the recomputation, ZeRO stage and overlap_param_gather of one
 * strategy, and pointed at each next strategy by sim_bounder_set_strategy (as the grid's screen
 * reuses it), gives every point the bound a fresh one gives; and
 * the strategy with those three fields set in place (as the grid's simulations reuse it) is
 * the fresh build: the same strategy JSON, and on every 37th point the same simulated
 * iteration, bit for bit. */
static void test_bounder_reuse(void) {
  Case c;
  case_init(&c, GPT4, "dgx-a100:nodes=2,gpus_per_node=4");
  GArray *points = srch_grid_full_points(c.graph, c.cluster, DEV_DTYPE_BF16);
  MdlStrategy *s = NULL;
  SimBounder *bounder = NULL;
  int checked = 0;
  for (guint i = 0; i < points->len; i++) {
    const MdlMegatronConfig *cfg = &g_array_index(points, MdlMegatronConfig, i);
    if (!s || cfg->zero_stage + cfg->recompute + cfg->overlap_param_gather == 0) { /* a new base point */
      mdl_strategy_free(s);
      s = mdl_strategy_megatron(c.graph, c.cluster, cfg, NULL);
      g_assert_nonnull(s);
      if (!bounder) bounder = sim_bounder_new(c.graph, s, c.cluster, &c.params, NULL);
      else sim_bounder_set_strategy(bounder, s); /* as the grid's screen moves to the next shape */
    }
    s->zero_stage = cfg->zero_stage;
    s->recompute = cfg->recompute;
    s->overlap_param_gather = cfg->overlap_param_gather;
    MdlStrategy *fresh = mdl_strategy_megatron(c.graph, c.cluster, cfg, NULL);
    g_assert_cmpuint(sim_bounder_bound(bounder), ==, sim_iteration_bound(c.graph, fresh, c.cluster, &c.params, NULL));
    g_assert_cmpuint(sim_bounder_chain(bounder), <=, sim_bounder_bound(bounder));
    g_autofree char *reused_json = mdl_strategy_to_json(s, c.graph);
    g_autofree char *fresh_json = mdl_strategy_to_json(fresh, c.graph);
    g_assert_cmpstr(reused_json, ==, fresh_json);
    if (i % 37 == 0) {
      GError *error = NULL;
      SimRun *reused_run = sim_run_new(c.graph, s, c.cluster, &c.params, &error);
      g_assert_no_error(error);
      SimRun *fresh_run = sim_run_new(c.graph, fresh, c.cluster, &c.params, &error);
      g_assert_no_error(error);
      g_assert_cmpfloat(sim_run_prediction(reused_run)->iteration_time_s, ==,
                        sim_run_prediction(fresh_run)->iteration_time_s);
      sim_run_free(reused_run);
      sim_run_free(fresh_run);
    }
    mdl_strategy_free(fresh);
    checked++;
  }
  g_assert_cmpint(checked, >, 1000);
  sim_bounder_free(bounder);
  mdl_strategy_free(s);
  g_array_free(points, TRUE);
  case_clear(&c);
}

/* The grid's memory screening checks a ZeRO 1 or 2 point once for both values of
 * overlap_param_gather (srch_grid.c): the simulator's memory rule gives both the same peak on
 * every device, on every such pair of a space with pipelines, sp and every recomputation. */
static void test_memory_ignores_overlap_param_gather(void) {
  Case c;
  case_init(&c, GPT4, "dgx-a100:nodes=2,gpus_per_node=4");
  GArray *points = srch_grid_full_points(c.graph, c.cluster, DEV_DTYPE_BF16);
  int pairs = 0, ndev = dev_cluster_num_devices(c.cluster);
  for (guint i = 0; i < points->len; i++) {
    MdlMegatronConfig cfg = g_array_index(points, MdlMegatronConfig, i);
    if (!cfg.overlap_param_gather) continue;
    MdlStrategy *with = mdl_strategy_megatron(c.graph, c.cluster, &cfg, NULL);
    cfg.overlap_param_gather = FALSE;
    MdlStrategy *without = mdl_strategy_megatron(c.graph, c.cluster, &cfg, NULL);
    g_assert_nonnull(with);
    g_assert_nonnull(without);
    CmMemory *a = cm_memory_per_device(c.graph, with, c.cluster), *b = cm_memory_per_device(c.graph, without, c.cluster);
    for (int d = 0; d < ndev; d++) g_assert_cmpfloat(a[d].total, ==, b[d].total);
    g_free(a);
    g_free(b);
    mdl_strategy_free(with);
    mdl_strategy_free(without);
    pairs++;
  }
  g_assert_cmpint(pairs, >, 500);
  g_array_free(points, TRUE);
  case_clear(&c);
}

/* Every classic grid point is a full-space point, byte for byte (padding included): the grid
 * search reads the classic points' bounds from the full space's screening by configuration. */
static void test_classic_bounds_from_full(void) {
  Case c;
  case_init(&c, GPT4, GPT4_CLUSTER); /* one host: tp up to 8 */
  GArray *full = srch_grid_full_points(c.graph, c.cluster, DEV_DTYPE_BF16);
  GArray *classic = srch_grid_points(c.graph, c.cluster, DEV_DTYPE_BF16);
  SimTime *index = g_new(SimTime, full->len);
  for (guint i = 0; i < full->len; i++) index[i] = (SimTime)i; /* each point's own index */
  SimTime *found = srch_grid_bounds_from(classic, full, index);
  g_assert_cmpuint(classic->len, >, 50);
  for (guint j = 0; j < classic->len; j++) {
    g_assert_true(found[j] != SRCH_UNSCREENED);
    g_assert_cmpmem(&g_array_index(classic, MdlMegatronConfig, j), sizeof(MdlMegatronConfig),
                    &g_array_index(full, MdlMegatronConfig, (guint)found[j]), sizeof(MdlMegatronConfig));
  }
  g_free(found);
  g_free(index);
  g_array_free(classic, TRUE);
  g_array_free(full, TRUE);
  case_clear(&c);
}

/* The full space holds the classic grid and its variants: recomputation, sp (tp > 1 only),
 * ZeRO 0..3, vp beyond 8 where the layers allow. */
static void test_full_space_contents(void) {
  Case c;
  case_init(&c, "gpt:layers=32,hidden=512,heads=8,seq=128,vocab=1000,batch=16", GPT4_CLUSTER);
  GArray *classic = srch_grid_points(c.graph, c.cluster, DEV_DTYPE_BF16);
  GArray *full = srch_grid_full_points(c.graph, c.cluster, DEV_DTYPE_BF16);
  g_assert_cmpuint(full->len, >, 12 * classic->len);
  gboolean vp16 = FALSE, sp_tp1 = FALSE, seen[3][2][4] = {{{FALSE}}};
  for (guint i = 0; i < full->len; i++) {
    const MdlMegatronConfig *p = &g_array_index(full, MdlMegatronConfig, i);
    vp16 |= p->virtual_stages == 16;
    sp_tp1 |= p->sequence_parallel && p->tp == 1;
    seen[p->recompute][p->sequence_parallel][p->zero_stage] = TRUE;
  }
  g_assert_true(vp16); /* pp = 2, vp = 16: 32 layers */
  g_assert_false(sp_tp1);
  for (int r = 0; r < 3; r++)
    for (int q = 0; q < 2; q++)
      for (int z = 0; z < 4; z++) g_assert_true(seen[r][q][z]);
  for (guint i = 0; i < full->len; i++) /* A100s have no FP8 tensor cores */
    g_assert_cmpint(g_array_index(full, MdlMegatronConfig, i).dtype, ==, DEV_DTYPE_BF16);
  g_array_free(classic, TRUE);
  g_array_free(full, TRUE);
  case_clear(&c);
}

/* On H100s the full space holds every bf16 point once more in FP8. */
static void test_full_space_fp8(void) {
  Case c;
  case_init(&c, "gpt:layers=8,hidden=512,heads=8,seq=128,vocab=1000,batch=16", "dgx-h100:nodes=1,gpus_per_node=4");
  GArray *full = srch_grid_full_points(c.graph, c.cluster, DEV_DTYPE_BF16);
  guint fp8 = 0;
  for (guint i = 0; i < full->len; i++) fp8 += g_array_index(full, MdlMegatronConfig, i).dtype == DEV_DTYPE_FP8;
  g_assert_cmpuint(fp8, >, 0);
  g_assert_cmpuint(2 * fp8, ==, full->len);
  g_array_free(full, TRUE);
  case_clear(&c);
}

/* Exhaustive with both prunings = brute force: simulating every point of the space finds no
 * better iteration than the search's best, and the search covered the whole space. */
static void check_brute_force(const char *model, const char *cluster, gboolean tp_overlap) {
  Case c;
  case_init(&c, model, cluster);
  SrchResult *r = search_with(&c, SRCH_ALGO_GRID, 1000000, FALSE, tp_overlap);
  g_assert_true(r->complete);
  g_assert_nonnull(r->best);
  g_assert_cmpfloat(srch_result_covered_share(r), ==, 1.0);
  GArray *points = srch_grid_full_points_with(c.graph, c.cluster, DEV_DTYPE_BF16, tp_overlap, 2);
  g_assert_cmpuint(r->space_points, ==, points->len);
  /* the builder's checks on three threads or one: the same points in the same order, bytes
   * (padding included) */
  GArray *one = srch_grid_full_points_with(c.graph, c.cluster, DEV_DTYPE_BF16, tp_overlap, 1);
  GArray *three = srch_grid_full_points_with(c.graph, c.cluster, DEV_DTYPE_BF16, tp_overlap, 3);
  g_assert_cmpuint(one->len, ==, points->len);
  g_assert_cmpuint(three->len, ==, points->len);
  g_assert_cmpint(memcmp(one->data, points->data, points->len * sizeof(MdlMegatronConfig)), ==, 0);
  g_assert_cmpint(memcmp(three->data, points->data, points->len * sizeof(MdlMegatronConfig)), ==, 0);
  g_array_free(one, TRUE);
  g_array_free(three, TRUE);
  double best = INFINITY;
  for (guint i = 0; i < points->len; i++) {
    GError *error = NULL;
    MdlStrategy *s = mdl_strategy_megatron(c.graph, c.cluster, &g_array_index(points, MdlMegatronConfig, i), &error);
    g_assert_no_error(error);
    SimRun *run = sim_run_new(c.graph, s, c.cluster, &c.params, &error);
    g_assert_no_error(error);
    if (sim_run_prediction(run)->fits_memory) best = MIN(best, sim_run_prediction(run)->iteration_time_s);
    sim_run_free(run);
    mdl_strategy_free(s);
  }
  g_test_message("%s on %s: space %u points: %" G_GUINT64_FORMAT " simulated, %" G_GUINT64_FORMAT
                 " over memory, %" G_GUINT64_FORMAT " pruned; best %.9g s (brute force %.9g s)",
                 model, cluster, points->len, r->simulated, r->over_memory, r->pruned, r->best_time_s, best);
  g_assert_cmpfloat(r->best_time_s, ==, best);
  g_assert_cmpuint(r->pruned, >, 0); /* the bound did cut */
  g_array_free(points, TRUE);
  srch_result_free(r);
  case_clear(&c);
}

/* On one host; on two hosts of four GPUs (tensor and pipeline parallelism across
 * InfiniBand); and a model whose weights put part of the space over memory (the memory rule
 * runs in bound order, after the bound). */
static void test_exhaustive_matches_brute_force(void) {
  check_brute_force(GPT4, GPT4_CLUSTER, FALSE);
  check_brute_force(GPT4, "dgx-a100:nodes=2,gpus_per_node=4", FALSE);
#if !defined(__SANITIZE_ADDRESS__)
  /* A model whose memory bounds prune more (~8 s instrumented, the same code; the release run keeps it). */
  check_brute_force("gpt:layers=8,hidden=8192,heads=64,seq=1024,vocab=32000,batch=16",
                    "dgx-a100:nodes=2,gpus_per_node=4", FALSE);
#endif
}

/* On request (SrchOptions.tp_overlap) the full space holds every sp point once more with
 * tp_overlap, and otherwise none; the exhaustive search over it still equals brute force. */
static void test_full_space_tp_overlap(void) {
  Case c;
  case_init(&c, GPT4, GPT4_CLUSTER);
  GArray *plain = srch_grid_full_points(c.graph, c.cluster, DEV_DTYPE_BF16);
  GArray *with = srch_grid_full_points_with(c.graph, c.cluster, DEV_DTYPE_BF16, TRUE, 2);
  guint sp = 0, overlapped = 0;
  for (guint i = 0; i < plain->len; i++) {
    sp += g_array_index(plain, MdlMegatronConfig, i).sequence_parallel;
    g_assert_false(g_array_index(plain, MdlMegatronConfig, i).tp_overlap);
  }
  for (guint i = 0; i < with->len; i++) {
    const MdlMegatronConfig *p = &g_array_index(with, MdlMegatronConfig, i);
    overlapped += p->tp_overlap;
    g_assert_true(!p->tp_overlap || p->sequence_parallel);
  }
  g_assert_cmpuint(sp, >, 0);
  g_assert_cmpuint(overlapped, ==, sp);
  g_assert_cmpuint(with->len, ==, plain->len + sp);
  g_array_free(plain, TRUE);
  g_array_free(with, TRUE);
  case_clear(&c);
  check_brute_force(GPT4, GPT4_CLUSTER, TRUE);
}

/* Whatever the budget, the classic grid runs first and in full: its best is the Megatron
 * baseline, and the grid search's winner is no worse. */
static void test_budget_keeps_grid_baseline(void) {
  Case c;
  case_init(&c, GPT4, GPT4_CLUSTER);
  SrchResult *whole = search(&c, SRCH_ALGO_GRID, 1000000, TRUE);
  static const SrchAlgo algos[] = {SRCH_ALGO_GRID, SRCH_ALGO_MCMC};
  for (guint i = 0; i < G_N_ELEMENTS(algos); i++) {
    SrchResult *r = search(&c, algos[i], 2, TRUE);
    g_assert_cmpfloat(r->baselines[1].iteration_time_s, ==, whole->baselines[1].iteration_time_s);
    if (algos[i] == SRCH_ALGO_GRID) {
      g_assert_cmpfloat(r->best_time_s, <=, whole->baselines[1].iteration_time_s);
      g_assert_cmpuint(r->evaluations, <=, 2);
      g_assert_false(r->complete);
      g_assert_cmpfloat(srch_result_covered_share(r), <, 1.0);
    }
    srch_result_free(r);
  }
  /* The full space beats the classic grid here (sp, or fewer bubbles with deeper vp). */
  g_assert_cmpfloat(whole->best_time_s, <=, whole->baselines[1].iteration_time_s);
  srch_result_free(whole);
  case_clear(&c);
}

/* A time budget too short to screen the whole full space: screening stops at half of it and
 * the points screened are evaluated, best bound first, in the rest (before, screening took
 * the whole budget and the space returned nothing beyond the classic grid). */
/* The budgeted screening's order: a permutation whose first 2^k entries leave no gap of
 * 2 P / 2^k runs (P the least power of two >= nruns: half of them bit-reversed indices) and
 * hold the first 2^k / 2 runs (the other half grid order's) (the space's start, middle and end all screened early; in grid
 * order a short budget saw only tp = 1 and 2, over memory for Llama 3.1 405B on 512 H100s). */
static void test_screen_order(void) {
  for (guint n = 1; n <= 300; n += (n < 20 ? 1 : 37)) {
    g_autofree guint *order = srch_grid_screen_order(n);
    g_autofree gboolean *seen = g_new0(gboolean, n);
    guint pow2 = 1; /* the least power of two >= n */
    while (pow2 < n) pow2 *= 2;
    for (guint k = 0; k < n; k++) {
      g_assert_cmpuint(order[k], <, n);
      g_assert_false(seen[order[k]]);
      seen[order[k]] = TRUE;
    }
    for (guint len = 1; len <= n; len *= 2) {
      memset(seen, 0, n * sizeof *seen);
      for (guint k = 0; k < len; k++) seen[order[k]] = TRUE;
      guint gap = 0, longest = 0; /* runs not screened in a row, the end counting as one */
      for (guint r = 0; r < n; r++) {
        gap = seen[r] ? 0 : gap + 1;
        longest = MAX(longest, gap);
      }
      g_assert_cmpuint(longest, <, 2 * pow2 / len);
      for (guint r = 0; r < len / 2; r++) g_assert_true(seen[r]); /* grid order's turns */
    }
  }
}

static void test_short_time_budget(void) {
  Case c;
  case_init(&c, "gpt3-175b:batch=1536", "dgx-a100:nodes=128");
  SrchOptions o;
  srch_options_default(&o);
  o.algo = SRCH_ALGO_GRID;
  o.budget.evaluations = 0;
  o.budget.seconds = 0.4; /* the space's 62100 points take ~8 s of screening */
  o.threads = 2;
  o.no_baselines = TRUE;
  GError *error = NULL;
  SrchResult *r = srch_run(c.graph, c.cluster, &c.params, &o, &error);
  g_assert_no_error(error);
  g_assert_false(r->complete);
  g_assert_cmpuint(r->space_covered, >, 0);
  g_assert_cmpfloat(srch_result_covered_share(r), <, 0.5);
  g_test_message("covered %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT ", best %.6g s (%s)", r->space_covered,
                 r->space_points, r->best_time_s, r->best_origin);
  srch_result_free(r);
  case_clear(&c);
}

/* Auto on a per-op space too large for its budget: coordinate descent and the full Megatron
 * space share the evaluations; the winner is no worse than either family's best. */
static void test_auto_shares_budget(void) {
  Case c;
  case_init(&c, GPT4, GPT4_CLUSTER);
  SrchResult *r = search(&c, SRCH_ALGO_AUTO, 60, TRUE);
  g_assert_cmpint(r->ran, ==, SRCH_ALGO_CD);
  g_assert_cmpuint(r->space_points, >, 1000);
  g_assert_cmpuint(r->evaluations, <=, 60);
  g_assert_cmpuint(r->space_covered, >=, 30); /* its half, plus what screening covered */
  g_assert_cmpfloat(r->best_time_s, <=, r->baselines[1].iteration_time_s);
  srch_result_free(r);
  case_clear(&c);
}

/* With every bound screened before the phase, the workers share the candidates in one order
 * (srch_grid_worker): two threads decide GPT-3 175B's space with about as many memory checks
 * and simulations as one (1209 against 1154 on 2026-12-02; split by index, 1436, which the
 * margin here fails), each pruning by a best found near the front of the order instead of the
 * best of its own share. */
static void test_threads_share_order(void) {
#if defined(__SANITIZE_ADDRESS__)
  /* Two searches of the 62100-point space: 36 s under the sanitizers, which the other search
   * tests already cover for memory errors on the same code. */
  g_test_skip("two full-space searches of GPT-3 175B: run in the plain build");
  return;
#endif
  Case c;
  case_init(&c, "gpt3-175b:batch=1536", "dgx-a100:nodes=128");
  guint64 work[2];
  double best[2];
  for (int t = 1; t <= 2; t++) {
    SrchOptions o;
    srch_options_default(&o);
    o.algo = SRCH_ALGO_GRID;
    o.budget.evaluations = 1000000;
    o.threads = t;
    o.no_baselines = TRUE;
    GError *error = NULL;
    SrchResult *r = srch_run(c.graph, c.cluster, &c.params, &o, &error);
    g_assert_no_error(error);
    g_assert_true(r->complete);
    work[t - 1] = r->evaluations + r->over_memory;
    best[t - 1] = r->best_time_s;
    g_test_message("%d thread(s): %" G_GUINT64_FORMAT " evaluations, %" G_GUINT64_FORMAT " over memory, best %.9g s",
                   t, r->evaluations, r->over_memory, r->best_time_s);
    srch_result_free(r);
  }
  g_assert_cmpfloat(best[1], ==, best[0]);
  g_assert_cmpuint(work[1], <=, work[0] + 2 * 64);
  case_clear(&c);
}

/* Same threads and budget: the same JSON. */
static void test_reproducible(void) {
  Case c;
  case_init(&c, GPT4, GPT4_CLUSTER);
  SrchOptions o;
  srch_options_default(&o);
  o.algo = SRCH_ALGO_GRID;
  o.budget.evaluations = 40;
  o.threads = 3;
  char *json[2];
  for (int k = 0; k < 2; k++) {
    GError *error = NULL;
    SrchResult *r = srch_run(c.graph, c.cluster, &c.params, &o, &error);
    g_assert_no_error(error);
    json[k] = srch_result_to_json(r, &o, c.graph, c.cluster);
    srch_result_free(r);
  }
  g_assert_cmpstr(json[0], ==, json[1]);
  g_free(json[0]);
  g_free(json[1]);
  case_clear(&c);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/search-grid/bound-below-simulation", test_bound_below_simulation);
  g_test_add_func("/search-grid/bounder-reuse", test_bounder_reuse);
  g_test_add_func("/search-grid/bounder-set-strategy", test_bounder_set_strategy);
  g_test_add_func("/search-grid/collective-memo", test_collective_memo);
  g_test_add_func("/search-grid/memory-ignores-overlap-param-gather", test_memory_ignores_overlap_param_gather);
  g_test_add_func("/search-grid/full-space-contents", test_full_space_contents);
  g_test_add_func("/search-grid/classic-bounds-from-full", test_classic_bounds_from_full);
  g_test_add_func("/search-grid/full-space-fp8", test_full_space_fp8);
  g_test_add_func("/search-grid/full-space-tp-overlap", test_full_space_tp_overlap);
  g_test_add_func("/search-grid/exhaustive-matches-brute-force", test_exhaustive_matches_brute_force);
  g_test_add_func("/search-grid/budget-keeps-grid-baseline", test_budget_keeps_grid_baseline);
  g_test_add_func("/search-grid/auto-shares-budget", test_auto_shares_budget);
  g_test_add_func("/search-grid/screen-order", test_screen_order);
  g_test_add_func("/search-grid/short-time-budget", test_short_time_budget);
  g_test_add_func("/search-grid/threads-share-order", test_threads_share_order);
  g_test_add_func("/search-grid/reproducible", test_reproducible);
  return g_test_run();
}
