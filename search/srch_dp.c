/* search/dp — the dp driver: Megatron's pipelined configurations with stage cuts picked by
 * the dynamic program of srch_pipeline.h instead of Megatron's equal layer counts.
 *
 * The groups (srch_dp_groups) are the full Megatron space's 1F1B pipelines (every cp, ep,
 * recomputation, sp, ZeRO stage, overlap_param_gather and FP8 variant the space has), pp from
 * 2 up to the pipeline's units, kept where the one-stage configuration (the same degrees and
 * options with pp = 1: every op's mesh shape and splits, which every stage keeps) builds. Each
 * group's cut is simulated in full under 1F1B, GPipe and eager-1F1B (the interleaved schedule
 * keeps Megatron's even chunks: the full space has it). A block is a run of groups that differ
 * only in the ZeRO stage and overlap_param_gather: they share the one-stage compute and the
 * boundary transfers (ZeRO adds communication and moves memory, not a kernel:
 * /search/dp/zero-shares-measure), so the block's one measurement (the builder's durations,
 * srch_pipeline_measure) and one DP cut serve them all. Workers take whole blocks round robin (block b on worker b mod T), so
 * results are reproducible for a thread count. Tried (2026-12-02) and not kept: every block
 * screened first in a phase of its own, then the workers sharing one best-bound-first order
 * (worker k every T-th, as srch_grid_worker's): two threads, DeepSeek-V3 / 1024 H100s
 * `--algo dp` 444 -> 578 pipelines simulated, 19.4 -> 22.0 s wall; Llama 3.1 405B / 512
 * H100s 141 -> 145, 10.1 -> 10.7 s (one thread: 406 and 139). Each worker's DP is capped by
 * its own best, so the order a worker meets its blocks in moves its cuts; no order shared
 * without a shared best (which timing would decide: not reproducible) closes the gap.
 *
 * Pruning, all of it safe (nothing pruned can beat the best so far, the worker's own or the
 * earlier phases' (SrchWorker.prune_s), or it is simulated elsewhere):
 *  - a block whose bound exceeds the best: each worker screens its blocks first (the bound
 *    below), then takes them in increasing order of it and stops at the first above the best
 *    (the best improves meanwhile, so a block taken is checked again after its measurement);
 *  - a variant whose weights cannot fit however it is cut (no_cut_fits), and a block with no
 *    such variant, before the DP;
 *  - a pipeline whose sim_iteration_bound exceeds the best (not simulated);
 *  - a cut equal to the even one, which the full space (run before this phase) holds;
 * and the DP picks only among the cuts whose every stage's fill, drain and work stay under the
 * best (srch_pipeline_dp_capped): the others cannot beat it.
 * The block's bound is the larger of two, each below every cut's iteration:
 *  - srch_pipeline_least_span of the measurement without transfers: every cut has a stage
 *    whose fill, drain, and compute and gaps over the microbatches reach it (srch_pipeline.h);
 *  - H_1 / pp: every device of the one-stage strategy launches all ops' forward, backward and
 *    recomputed tasks for all M microbatches one at a time (H_1, sim_bounder_launches); a cut
 *    into pp stages gives stage r's devices the same per-device tasks of its ops (the same
 *    mesh shape and splits, the same M), so sum_r H_r = H_1 and the busiest stage's host
 *    needs at least H_1 / pp; floored.
 * ZeRO and overlap_param_gather change no compute task (sim/sim_bound.h), so neither changes
 * the measurement (/search/dp/zero-shares-measure) nor the launches: the block's first
 * group's bound holds for all. Before (to 2026-12-02) the bound was sim_compute_bound of the
 * one-stage strategy over pp, max(W_1, H_1) / pp, and a second bounder per block measured the
 * blocks it let through; on DeepSeek-V3 / 1024 H100s (one thread) 12479 of 22536 blocks got
 * past it and 725 past the span, and the screening and measurements took 27 of the phase's
 * 52 s: one bounder a block now, and the blocks in the span's order (--algo dp 41 s, 406
 * pipelines simulated instead of 512, the same winner). */
#include "search/srch-int.h"
#include "search/srch_pipeline.h"
#include "sim/sim_bound.h"

#include <math.h>
#include <string.h>

static const MdlSchedule schedules[SRCH_DP_SCHEDULES] = {MDL_SCHEDULE_1F1B, MDL_SCHEDULE_GPIPE,
                                                         MDL_SCHEDULE_EAGER_1F1B};

/* Whether groups @a and @b share a block (all fields but the ZeRO stage and
 * overlap_param_gather equal; srch_dp_groups zeroes padding). */
static gboolean same_block(const MdlMegatronConfig *a, const MdlMegatronConfig *b) {
  MdlMegatronConfig x, y;
  memcpy(&x, a, sizeof x);
  memcpy(&y, b, sizeof y);
  x.zero_stage = y.zero_stage = 0;
  x.overlap_param_gather = y.overlap_param_gather = FALSE;
  return memcmp(&x, &y, sizeof x) == 0;
}

/* Whether no cut of @one (the one-stage strategy, its memory per device @mem: cm_memory_per_device)
 * into @stages stages can fit: every stage
 * keeps its ops' weights, gradients and optimizer states, which across the stages add up to
 * what the one-stage strategy charges a device for them (the same splits), so the fullest
 * stage holds at least 1/@stages of that, before any activation (cm_memory_per_device). */
static gboolean no_cut_fits(const SrchWorker *w, const MdlStrategy *one, const CmMemory *mem, int stages) {
  double least = 0;
  const MdlMesh *mesh = mdl_strategy_mesh(one, 0);
  for (int i = 0; i < mesh->ndevices; i++) {
    const CmMemory *m = &mem[mesh->devices[i]];
    least = MAX(least, (m->weights + m->gradients + m->optimizer) / stages);
  }
  return least > w->cluster->device.memory_bytes;
}

/* @cfg's one-stage configuration (pp = 1) built, or NULL. */
static MdlStrategy *one_stage(const SrchWorker *w, const MdlMegatronConfig *cfg) {
  MdlMegatronConfig one_cfg;
  memcpy(&one_cfg, cfg, sizeof one_cfg);
  one_cfg.pp = 1;
  return mdl_strategy_megatron(w->graph, w->cluster, &one_cfg, NULL);
}

/* Whether the even cut Megatron's builder makes for @cfg (1F1B) is @cuts. */
static gboolean is_even_cut(SrchWorker *w, const SrchPipeline *pl, const MdlMegatronConfig *cfg,
                            const int *cuts) {
  MdlStrategy *even = mdl_strategy_megatron(w->graph, w->cluster, cfg, NULL);
  if (!even) return FALSE;
  g_autofree int *even_cuts = g_new(int, cfg->pp + 1);
  gboolean same = srch_pipeline_cuts_of(pl, even, even_cuts) &&
                  memcmp(even_cuts, cuts, sizeof(int) * (gsize)(cfg->pp + 1)) == 0;
  mdl_strategy_free(even);
  return same;
}

typedef struct {
  SimTime bound;     /* the block's compute bound (header) */
  guint first, end;  /* its groups [first, end) */
} Block;

static int compare_blocks(const void *a, const void *b) {
  const Block *x = a, *y = b;
  if (x->bound != y->bound) return x->bound < y->bound ? -1 : 1;
  return x->first < y->first ? -1 : x->first > y->first;
}

/* A block's cut pipelines, one a schedule, built once and pointed at each variant in turn
 * (its ZeRO stage and overlap_param_gather set in place: srch_pipeline_strategy copies them
 * from the one-stage strategy and only validates their ranges, so the strategy equals the
 * variant's own build), each bounded by its own bounder, which recomputes only what those
 * two fields change (sim_bound.h). Built per variant and schedule, every pipeline paid a full
 * bounder_init: on DeepSeek-V3 / 1024 H100s that was most of the phase's bound time. */
typedef struct {
  MdlStrategy *s[SRCH_DP_SCHEDULES];       /* NULL: not built yet, or refused (failed) */
  gboolean tried[SRCH_DP_SCHEDULES];
  SimBounder *bounder[SRCH_DP_SCHEDULES];  /* the worker's, kept across blocks (memos) */
  gboolean pointed[SRCH_DP_SCHEDULES];     /* bounder[k] reads s[k] */
} Pipes;

static void pipes_reset(Pipes *p) {
  for (int k = 0; k < SRCH_DP_SCHEDULES; k++) {
    mdl_strategy_free(p->s[k]);
    p->s[k] = NULL;
    p->tried[k] = p->pointed[k] = FALSE;
  }
}

/* Evaluates group @g cut at @cuts under each schedule (@one: its one-stage strategy, ZeRO
 * fields set; @pipes: the block's pipelines); FALSE when the budget ran out. */
static gboolean evaluate_group(SrchWorker *w, const SrchPipeline *pl, Pipes *pipes, guint g,
                               const MdlStrategy *one, const int *cuts) {
  const MdlMegatronConfig *cfg = &g_array_index(w->grid, MdlMegatronConfig, g);
  for (int k = 0; k < SRCH_DP_SCHEDULES; k++) {
    if (!srch_worker_has_budget(w)) return FALSE;
    if (!pipes->tried[k]) {
      GError *error = NULL;
      pipes->tried[k] = TRUE;
      pipes->s[k] = srch_pipeline_strategy(pl, w->graph, one, cuts, schedules[k], w->cluster, &error);
      if (!pipes->s[k]) {
        g_debug("search dp: %s", error->message);
        g_clear_error(&error);
      }
    }
    MdlStrategy *s = pipes->s[k];
    if (!s) {
      w->failed++;
      continue;
    }
    s->zero_stage = one->zero_stage;
    s->overlap_param_gather = one->overlap_param_gather;
    gboolean above = FALSE;
    double best = MIN(w->best_time_s, w->prune_s);
    if (isfinite(best)) {
      if (!pipes->bounder[k]) pipes->bounder[k] = sim_bounder_new(w->graph, s, w->cluster, w->params, &w->options->sim);
      else if (!pipes->pointed[k]) sim_bounder_set_strategy(pipes->bounder[k], s);
      pipes->pointed[k] = TRUE;
      above = sim_time_seconds(sim_bounder_bound(pipes->bounder[k])) > best;
    }
    if (above) {
      w->pruned++;
      continue;
    }
    /* The memory rule (after the bound, as the grid driver: a pruned pipeline needs none),
     * counted as the grid driver counts it: not an evaluation. */
    if (srch_peak_memory(w->graph, s, w->cluster) > w->cluster->device.memory_bytes) {
      w->over_memory++;
      continue;
    }
    MdlStrategy *own = mdl_strategy_copy(s); /* the evaluation's: kept if it is the best */
    int before = w->best_grid;
    srch_worker_eval_fitting(w, own, (int)g * SRCH_DP_SCHEDULES + k);
    if (w->best_grid != before) {
      mdl_strategy_free(w->best_strategy);
      w->best_strategy = own;
      MdlMegatronConfig described = *cfg;
      described.schedule = schedules[k];
      g_autofree char *degrees = srch_grid_describe(&described);
      g_autofree char *cut = srch_pipeline_describe(pl, w->graph, cuts);
      g_free(w->best_detail);
      w->best_detail = g_strdup_printf("%s stages %s", degrees, cut);
    } else {
      mdl_strategy_free(own);
    }
  }
  return TRUE;
}

/* Block @b: its measurement and cut, then each of its variants. FALSE when the budget ran
 * out. */
static gboolean run_block(SrchWorker *w, SrchPipeline *pl, SimBounder **bounder, Pipes *pipes,
                          const Block *b) {
  const MdlMegatronConfig *cfg = &g_array_index(w->grid, MdlMegatronConfig, b->first);
  guint64 points = (guint64)(b->end - b->first) * SRCH_DP_SCHEDULES;
  MdlStrategy *one = one_stage(w, cfg);
  GError *error = NULL;
  g_autofree int *cuts = g_new(int, cfg->pp + 1);
  if (!one || !srch_pipeline_measure_with(pl, bounder, w->graph, one, cfg->pp, w->cluster, w->params,
                                          &w->options->sim, &error)) {
    if (error) g_debug("search dp: %s", error->message);
    g_clear_error(&error);
    mdl_strategy_free(one);
    w->failed += points;
    return TRUE;
  }
  /* No cut can beat the best: for each cut some stage's lead (fill and drain) plus its
   * compute and gaps over every microbatch exceed it (srch_pipeline_least_span; the measured
   * durations are the builder's, or below them under sp). Before the memory check: on Llama
   * 3.1 405B / 512 H100s (--algo dp, one thread, 2026-12-02) 2281 of the 2803 blocks measured
   * stop here, and checking every block's variants first took 4.2 s, more than measuring
   * them all (2.9 s). */
  double best = MIN(w->best_time_s, w->prune_s);
  if (isfinite(best) && sim_time_seconds(srch_pipeline_least_span(pl)) > best) {
    w->pruned += points;
    mdl_strategy_free(one);
    return TRUE;
  }
  /* The variants whose weights can fit some cut, before the DP: a block with none is skipped
   * whole. */
  g_autofree gboolean *fits = g_new0(gboolean, b->end - b->first);
  gboolean any = FALSE;
  CmMemory *mem[4]; /* the variants differ in the ZeRO stage and overlap_param_gather, which
                       cm_memory_per_device does not read: every stage's at once */
  cm_memory_per_device_zero_stages(w->graph, one, w->cluster, mem);
  for (guint g = b->first; g < b->end; g++) {
    const MdlMegatronConfig *v = &g_array_index(w->grid, MdlMegatronConfig, g);
    any |= fits[g - b->first] = !no_cut_fits(w, one, mem[CLAMP(v->zero_stage, 0, 3)], v->pp);
  }
  for (int z = 0; z < 4; z++) g_free(mem[z]);
  if (!any) {
    w->pruned += points;
    mdl_strategy_free(one);
    return TRUE;
  }
  /* The DP picks among the cuts that could beat the best (each stage's lead and work under
   * it, srch_pipeline_dp_capped; 1 ps above it, so that rounding never drops one): on Llama
   * 3.1 405B / 512 H100s 161 of 522 unconstrained picks, and on GPT-3 175B / 1024 A100s all
   * 5, were above the best by that bound, so their blocks' other cuts were never tried. */
  SimTime cap = isfinite(best) ? sim_time_from_seconds(best) + 1 : G_MAXUINT64;
  if (srch_pipeline_dp_capped(pl, cap, cuts) == G_MAXUINT64 || is_even_cut(w, pl, cfg, cuts)) {
    w->pruned += points;
    mdl_strategy_free(one);
    return TRUE;
  }
  gboolean more = TRUE;
  for (guint g = b->first; g < b->end && more; g++) {
    const MdlMegatronConfig *v = &g_array_index(w->grid, MdlMegatronConfig, g);
    one->zero_stage = v->zero_stage;
    one->overlap_param_gather = v->overlap_param_gather;
    if (!fits[g - b->first]) w->pruned += SRCH_DP_SCHEDULES;
    else more = evaluate_group(w, pl, pipes, g, one, cuts);
  }
  pipes_reset(pipes);
  mdl_strategy_free(one);
  return more;
}

void srch_dp_worker(SrchWorker *w) {
  SrchPipeline *pl = srch_pipeline_new(w->graph);
  SimBounder *bounder = NULL;
  Pipes pipes;
  memset(&pipes, 0, sizeof pipes);
  GArray *blocks = g_array_new(FALSE, FALSE, sizeof(Block));
  double cpu = srch_thread_cpu_s();
  /* Screening: the bound (header) of each of the worker's blocks, from its first group's
   * one-stage strategy (a block whose first group does not build or measure is skipped whole:
   * its variants share that build but for their ZeRO fields, which the builder only
   * range-checks). */
  /* The worker's blocks (block b on worker b mod T), screened in grid order, or under a time
   * budget in srch_grid_screen_order's and within three quarters of the time left, so that the
   * blocks screened span the space and are measured in the rest (before, a budget shorter than
   * the screening left the phase with nothing measured; with half, DeepSeek-V3 / 1024 H100s
   * auto `--budget 20s` lost its 2.69695 s cut for 2.7897 s, 2026-12-02). */
  GArray *mine = g_array_new(FALSE, FALSE, sizeof(Block));
  guint nblock = 0;
  for (guint g = 0; g < w->grid->len; nblock++) {
    const MdlMegatronConfig *cfg = &g_array_index(w->grid, MdlMegatronConfig, g);
    guint end = g + 1;
    while (end < w->grid->len && same_block(cfg, &g_array_index(w->grid, MdlMegatronConfig, end))) end++;
    Block b = {0, g, end};
    if (nblock % (guint)w->nworkers == (guint)w->index) g_array_append_val(mine, b);
    g = end;
  }
  gint64 screen_until = 0;
  if (w->deadline_us) {
    gint64 now_us = g_get_monotonic_time();
    screen_until = now_us + MAX(w->deadline_us - now_us, 0) * 3 / 4;
  }
  g_autofree guint *order = screen_until ? srch_grid_screen_order(mine->len) : NULL;
  gboolean screened = TRUE;
  for (guint p = 0; p < mine->len; p++) {
    if (!srch_worker_has_budget(w) || (screen_until && g_get_monotonic_time() >= screen_until)) {
      screened = FALSE;
      break;
    }
    Block b = g_array_index(mine, Block, order ? order[p] : p);
    const MdlMegatronConfig *cfg = &g_array_index(w->grid, MdlMegatronConfig, b.first);
    MdlStrategy *one = one_stage(w, cfg);
    GError *error = NULL;
    /* The bound (header): the measurement without transfers, through the worker's bounder
     * (kept across the blocks for its memo of collective times; the same costs, sim_bound.h) */
    if (!one || !srch_pipeline_measure_units(pl, &bounder, w->graph, one, cfg->pp, w->cluster,
                                             w->params, &w->options->sim, &error)) {
      if (error) g_debug("search dp: %s", error->message);
      g_clear_error(&error);
      w->failed += (guint64)(b.end - b.first) * SRCH_DP_SCHEDULES;
    } else {
      b.bound = MAX(srch_pipeline_least_span(pl), sim_bounder_launches(bounder) / (SimTime)cfg->pp);
      g_array_append_val(blocks, b);
    }
    mdl_strategy_free(one);
  }
  g_array_free(mine, TRUE);
  w->screen_cpu_s += srch_thread_cpu_s() - cpu;
  if (blocks->len) qsort(blocks->data, blocks->len, sizeof(Block), compare_blocks);
  guint k;
  for (k = 0; k < blocks->len; k++) {
    const Block *b = &g_array_index(blocks, Block, k);
    double best = MIN(w->best_time_s, w->prune_s);
    if (isfinite(best) && sim_time_seconds(b->bound) > best) {
      for (; k < blocks->len; k++) { /* this bound and every later one exceed the best */
        const Block *rest = &g_array_index(blocks, Block, k);
        w->pruned += (guint64)(rest->end - rest->first) * SRCH_DP_SCHEDULES;
      }
      break;
    }
    if (!srch_worker_has_budget(w) || !run_block(w, pl, &bounder, &pipes, b)) break;
  }
  w->complete = screened && k >= blocks->len;
  g_array_free(blocks, TRUE);
  sim_bounder_free(bounder);
  pipes_reset(&pipes);
  for (int q = 0; q < SRCH_DP_SCHEDULES; q++) sim_bounder_free(pipes.bounder[q]);
  srch_pipeline_free(pl);
}
