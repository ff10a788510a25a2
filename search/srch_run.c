/* search/run — one search: the space, the baselines, the driver's phase on a thread pool, and
 * the deterministic merge of the workers' results.
 *
 * A phase splits its budget among `threads` workers (evaluations: N / T each, the first
 * N mod T one more; time: one shared deadline), runs them on a GThreadPool and waits, calling
 * the progress function about four times a second. The merged best is the workers' lowest
 * cost, ties broken by the lower chain index; the merged convergence curve numbers worker w's
 * k-th evaluation (k = 1, 2, ...) as (k - 1) * T + w + 1, the order in which evaluations would
 * happen if the workers advanced in lockstep, so that it is reproducible too. Spread over
 * mpirun ranks (options.nranks > 1), T is every rank's workers together and w a global index
 * (rank * threads + thread): each process runs its own slice, and srch_ranks.c merges. */
#include "search/srch-int.h"
#include "search/srch_pipeline.h"

#include <math.h>
#include <string.h>

typedef struct {
  SrchWorker *workers;
  int n;                    /* this process's workers */
  int first, total;         /* their global indices first .. first + n - 1 of total (ranks) */
  SrchShared shared;
  const char *phase;
  SrchBudget budget;
  gint64 start_us;
  const SrchOptions *options;
  GMutex lock;
  GCond done_cond;
  int done;
  gboolean active;          /* the locks are initialized */
} Phase;

static void run_worker(gpointer data, gpointer user_data) {
  SrchWorker *w = data;
  Phase *p = user_data;
  w->driver(w);
  g_mutex_lock(&p->lock);
  p->done++;
  g_cond_signal(&p->done_cond);
  g_mutex_unlock(&p->lock);
}

static void report(Phase *p) {
  const SrchOptions *o = p->options;
  if (!o->progress) return;
  SrchProgress info = {.phase = p->phase};
  info.evaluations = (guint64)g_atomic_int_get(&p->shared.evaluations);
  g_mutex_lock(&p->shared.lock);
  info.best_time_s = p->shared.best_time_s;
  g_mutex_unlock(&p->shared.lock);
  info.elapsed_s = (g_get_monotonic_time() - p->start_us) / 1e6;
  info.evals_per_s = info.elapsed_s > 0 ? info.evaluations / info.elapsed_s : 0;
  if (p->budget.seconds > 0) info.left_s = MAX(0, p->budget.seconds - info.elapsed_s);
  else if (info.evals_per_s > 0 && p->budget.evaluations >= info.evaluations)
    info.left_s = (double)(p->budget.evaluations - info.evaluations) / info.evals_per_s;
  else info.left_s = -1;
  o->progress(&info, o->progress_data);
}

/* Runs @driver on o->threads workers; the caller merges and frees with phase_clear. */
static gboolean phase_run(Phase *p, const char *name, SrchDriverFunc driver, const SrchSpace *space,
                          const GArray *grid, SimTime *bounds, const MdlGraph *graph,
                          const DevCluster *cluster, const CmParams *params, const SrchOptions *o,
                          SrchBudget budget, double prune_s, GError **error) {
  memset(p, 0, sizeof *p);
  p->phase = name;
  p->options = o;
  p->budget = budget;
  p->n = o->threads;
  p->first = o->nranks > 1 ? o->rank * o->threads : 0;
  p->total = o->nranks > 1 ? o->nranks * o->threads : o->threads;
  p->start_us = g_get_monotonic_time();
  g_mutex_init(&p->lock);
  g_cond_init(&p->done_cond);
  g_mutex_init(&p->shared.lock);
  p->active = TRUE;
  p->shared.best_time_s = INFINITY;
  p->workers = g_new0(SrchWorker, p->n);
  gint64 deadline = budget.seconds > 0 ? p->start_us + (gint64)(budget.seconds * 1e6) : 0;
  for (int i = 0; i < p->n; i++) {
    SrchWorker *w = &p->workers[i];
    w->space = space;
    w->graph = graph;
    w->cluster = cluster;
    w->params = params;
    w->options = o;
    w->grid = grid;
    w->bounds = bounds;
    w->shared = &p->shared;
    w->index = p->first + i;
    w->nworkers = p->total;
    w->driver = driver;
    w->start_us = p->start_us;
    w->deadline_us = deadline;
    if (budget.evaluations) {
      guint64 total = (guint64)p->total, index = (guint64)w->index;
      w->budget_evaluations = budget.evaluations / total + (index < budget.evaluations % total);
      if (w->budget_evaluations == 0) w->deadline_us = p->start_us; /* nothing to do */
    }
    w->best_time_s = INFINITY;
    w->prune_s = prune_s;
    w->best_grid = -1;
    w->best_chain = -1;
    w->curve = g_array_new(FALSE, FALSE, sizeof(SrchCurvePoint));
    if (space) {
      w->best_point = g_new0(int, space->point_len);
      if (!(w->strategy = srch_space_new_strategy(space, error))) return FALSE;
      /* Random points differ from the last one in every variable: delta simulation rebuilds
       * everything (measured one thread, VGG13 on 32 P100s: 3519 evaluations/s with delta,
       * 3593 without), so random simulates in full and keeps no previous graph in memory. */
      if (!o->no_delta && driver != srch_random_worker)
        w->delta = sim_delta_new(graph, cluster, params, &o->sim);
      if (driver != srch_exhaustive_worker) w->cache = srch_cache_new();
    }
  }
  GThreadPool *pool = g_thread_pool_new(run_worker, p, p->n, FALSE, error);
  if (!pool) return FALSE;
  for (int i = 0; i < p->n; i++) g_thread_pool_push(pool, &p->workers[i], NULL);
  g_mutex_lock(&p->lock);
  while (p->done < p->n) {
    gint64 until = g_get_monotonic_time() + G_TIME_SPAN_SECOND / 4;
    if (!g_cond_wait_until(&p->done_cond, &p->lock, until)) {
      g_mutex_unlock(&p->lock);
      report(p);
      g_mutex_lock(&p->lock);
    }
  }
  g_mutex_unlock(&p->lock);
  g_thread_pool_free(pool, FALSE, TRUE);
  report(p);
  return TRUE;
}

static void phase_clear(Phase *p) {
  if (!p->active) return;
  for (int i = 0; p->workers && i < p->n; i++) {
    SrchWorker *w = &p->workers[i];
    mdl_strategy_free(w->strategy);
    sim_delta_free(w->delta);
    if (w->cache) g_hash_table_unref(w->cache);
    g_free(w->best_point);
    mdl_strategy_free(w->best_strategy);
    g_free(w->best_detail);
    if (w->curve) g_array_free(w->curve, TRUE);
  }
  g_free(p->workers);
  g_mutex_clear(&p->lock);
  g_cond_clear(&p->done_cond);
  g_mutex_clear(&p->shared.lock);
  memset(p, 0, sizeof *p);
}

typedef struct {
  guint64 key;   /* lockstep index */
  double elapsed_s, best_time_s;
} CurveItem;

static int compare_curve(const void *a, const void *b) {
  const CurveItem *x = a, *y = b;
  return x->key < y->key ? -1 : x->key > y->key;
}

/* The phase's best worker (lowest cost, then lowest chain), or NULL; totals and the curve go
 * into @r (which receives the curve when @curve is set). A second counted phase (the dp
 * driver's, after its grid) continues the first's evaluation numbers and curve. */
static const SrchWorker *phase_merge(const Phase *p, SrchResult *r, gboolean curve) {
  const SrchWorker *best = NULL;
  GArray *items = g_array_new(FALSE, FALSE, sizeof(CurveItem));
  gboolean complete = TRUE;
  gboolean continued = r->evaluations > 0 || r->curve->len > 0;
  guint64 offset = r->evaluations;
  for (int i = 0; i < p->n; i++) {
    const SrchWorker *w = &p->workers[i];
    if (curve) {
      r->evaluations += w->evaluations;
      r->simulated += w->simulated;
      r->over_memory += w->over_memory;
      r->failed += w->failed;
      r->pruned += w->pruned;
    } else {
      r->baseline_evaluations += w->evaluations;
    }
    complete &= w->complete;
    if (isfinite(w->best_time_s) &&
        (!best || w->best_time_s < best->best_time_s ||
         (w->best_time_s == best->best_time_s && w->best_chain < best->best_chain)))
      best = w;
    for (guint k = 0; k < w->curve->len; k++) {
      const SrchCurvePoint *c = &g_array_index(w->curve, SrchCurvePoint, k);
      CurveItem it = {offset + (c->evaluation - 1) * (guint64)p->total + (guint64)w->index + 1, c->elapsed_s,
                      c->best_time_s};
      g_array_append_val(items, it);
    }
  }
  if (curve) {
    r->complete = complete && (!continued || r->complete);
    if (items->len) qsort(items->data, items->len, sizeof(CurveItem), compare_curve); /* data is NULL when empty */
    double running = r->curve->len ? g_array_index(r->curve, SrchCurvePoint, r->curve->len - 1).best_time_s
                                   : INFINITY;
    for (guint k = 0; k < items->len; k++) {
      const CurveItem *it = &g_array_index(items, CurveItem, k);
      if (it->best_time_s >= running) continue;
      running = it->best_time_s;
      SrchCurvePoint c = {it->key, it->elapsed_s, it->best_time_s};
      g_array_append_val(r->curve, c);
    }
  }
  g_array_free(items, TRUE);
  return best;
}

typedef struct {
  double elapsed_s, best_time_s;
} TimeItem;

static int compare_time(const void *a, const void *b) {
  const TimeItem *x = a, *y = b;
  return x->elapsed_s < y->elapsed_s ? -1 : x->elapsed_s > y->elapsed_s;
}

/* Appends the phase's improvements, in wall-clock order since @search_start_us, to
 * r->timeline (continuing its running best). */
static void phase_timeline(const Phase *p, SrchResult *r, gint64 search_start_us) {
  double offset = (p->start_us - search_start_us) / 1e6;
  GArray *items = g_array_new(FALSE, FALSE, sizeof(TimeItem));
  for (int i = 0; i < p->n; i++)
    for (guint k = 0; k < p->workers[i].curve->len; k++) {
      const SrchCurvePoint *c = &g_array_index(p->workers[i].curve, SrchCurvePoint, k);
      TimeItem it = {offset + c->elapsed_s, c->best_time_s};
      g_array_append_val(items, it);
    }
  if (items->len) qsort(items->data, items->len, sizeof(TimeItem), compare_time);
  double running = r->timeline->len
                       ? g_array_index(r->timeline, SrchCurvePoint, r->timeline->len - 1).best_time_s
                       : INFINITY;
  for (guint k = 0; k < items->len; k++) {
    const TimeItem *it = &g_array_index(items, TimeItem, k);
    if (it->best_time_s >= running) continue;
    running = it->best_time_s;
    SrchCurvePoint c = {0, it->elapsed_s, it->best_time_s};
    g_array_append_val(r->timeline, c);
  }
  g_array_free(items, TRUE);
}

static gboolean check_options(const SrchOptions *o, GError **error) {
  if (o->algo >= SRCH_ALGO_COUNT) {
    g_set_error(error, SRCH_ERROR, SRCH_ERROR_OPTION, "search: unknown algorithm %d", o->algo);
    return FALSE;
  }
  if (o->threads < 1 || o->threads > 1024) {
    g_set_error(error, SRCH_ERROR, SRCH_ERROR_OPTION, "search: threads must be 1..1024 (got %d)",
                o->threads);
    return FALSE;
  }
  if ((o->budget.evaluations == 0) == !(o->budget.seconds > 0)) {
    g_set_error(error, SRCH_ERROR, SRCH_ERROR_OPTION,
                "search: a budget is evaluations or seconds, exactly one of them");
    return FALSE;
  }
  if (o->nranks < 0 || o->rank < 0 || o->rank >= MAX(o->nranks, 1) ||
      (gint64)MAX(o->nranks, 1) * o->threads > G_MAXINT / 2) {
    g_set_error(error, SRCH_ERROR, SRCH_ERROR_OPTION, "search: rank %d of %d ranks is not a rank",
                o->rank, o->nranks);
    return FALSE;
  }
  if (o->beta < 0 || !isfinite(o->beta) || o->restarts < 0) {
    g_set_error(error, SRCH_ERROR, SRCH_ERROR_OPTION,
                "search: beta must be >= 0 and restarts >= 0 (got %g, %d)", o->beta, o->restarts);
    return FALSE;
  }
  return TRUE;
}

static DevDtype grid_dtype(const MdlGraph *graph, const DevCluster *cluster, const SrchOptions *o) {
  if (o->space.dtype_set) return o->space.dtype;
  DevDtype d = graph->default_dtype;
  if (cluster->device.peak_flops[d] > 0) return d;
  if (d == DEV_DTYPE_BF16 && cluster->device.peak_flops[DEV_DTYPE_FP16] > 0) return DEV_DTYPE_FP16;
  return DEV_DTYPE_FP32;
}

static SrchDriverFunc driver_of(SrchAlgo algo) {
  switch (algo) {
  case SRCH_ALGO_MCMC: return srch_mcmc_worker;
  case SRCH_ALGO_CD: return srch_cd_worker;
  case SRCH_ALGO_EXHAUSTIVE: return srch_exhaustive_worker;
  case SRCH_ALGO_RANDOM: return srch_random_worker;
  default: return srch_grid_worker;
  }
}

/* Auto: the whole space when the budget can cover it, else coordinate descent (AutoDDL's
 * choice, Fig. 7). Under a time budget "can cover" means at most 10^4 points. */
static SrchAlgo resolve_auto(const SrchSpace *space, const SrchBudget *budget) {
  guint64 size = srch_space_size(space);
  guint64 affordable = budget->evaluations ? budget->evaluations : 10000;
  return size <= affordable ? SRCH_ALGO_EXHAUSTIVE : SRCH_ALGO_CD;
}

double srch_result_covered_share(const SrchResult *r) {
  if (!r->space_points) return 0;
  return MIN(1.0, (double)r->space_covered / (double)r->space_points);
}

SrchResult *srch_run(const MdlGraph *graph, const DevCluster *cluster, const CmParams *params,
                     const SrchOptions *o, GError **error) {
  g_return_val_if_fail(graph && cluster && params && o, NULL);
  if (!check_options(o, error)) return NULL;
  /* Every candidate spreads the ops over the whole cluster, and its memory check alone walks
   * ops x devices: past the simulator's device-slot limit (sim.h) every evaluation would be
   * refused after that walk. */
  guint64 slots = (guint64)mdl_graph_num_ops(graph) * (guint64)dev_cluster_num_devices(cluster);
  if (slots > SIM_MAX_DEVICE_SLOTS) {
    g_set_error(error, SRCH_ERROR, SRCH_ERROR_OPTION,
                "search: %s has %d ops and cluster %s has %d GPUs: ops x GPUs = %" G_GUINT64_FORMAT
                " exceeds the simulator's limit of %" G_GUINT64_FORMAT
                " (about 8.5 GB per candidate): search a smaller model or cluster",
                graph->name, mdl_graph_num_ops(graph), cluster->name,
                dev_cluster_num_devices(cluster), slots, (guint64)SIM_MAX_DEVICE_SLOTS);
    return NULL;
  }
  srch_keep_freed_memory();
  gint64 start = g_get_monotonic_time();
  SrchSpace *space = NULL;
  GArray *grid = NULL, *full = NULL; /* the classic grid, the full Megatron space */
  SimTime *full_bounds = NULL;        /* the full space's screening (srch_grid_screen_worker) */
  Phase phase = {0};
  SrchResult *r = g_new0(SrchResult, 1);
  r->algo = o->algo;
  r->ran = o->algo;
  r->best_time_s = INFINITY;
  r->curve = g_array_new(FALSE, FALSE, sizeof(SrchCurvePoint));
  r->timeline = g_array_new(FALSE, FALSE, sizeof(SrchCurvePoint));
  DevDtype dtype = grid_dtype(graph, cluster, o);
  /* The dp phase's one collective call (dp and auto: SrchOptions.comm), made on every path. */
  gboolean reduce_pending = (o->algo == SRCH_ALGO_DP || o->algo == SRCH_ALGO_AUTO) && o->nranks > 1 && o->comm;
  gboolean need_grid = o->algo == SRCH_ALGO_GRID || o->algo == SRCH_ALGO_AUTO ||
                       o->algo == SRCH_ALGO_DP || !o->no_baselines;

  GError *space_error = NULL;
  if (o->algo != SRCH_ALGO_GRID && o->algo != SRCH_ALGO_DP && !(space = srch_space_new(graph, cluster, &o->space, &space_error))) {
    /* Auto falls back to the grid (whose pipelines may fit where one stage cannot). */
    if (o->algo != SRCH_ALGO_AUTO || !g_error_matches(space_error, SRCH_ERROR, SRCH_ERROR_SPACE)) {
      g_propagate_error(error, space_error);
      goto fail;
    }
    r->ran = SRCH_ALGO_GRID;
    r->space_description = g_strdup_printf("the Megatron grid only: %s", space_error->message);
    g_clear_error(&space_error);
  }
  if (space) {
    r->nvars = space->nvars;
    r->ncontexts = space->ncontexts;
    r->log10_size = srch_space_log10_size(space);
    r->values_over_memory = space->values_over_memory;
    GString *desc = g_string_new(NULL);
    g_string_printf(desc, "%d variables (%s%s, %s dims) on %d meshes:", space->nvars,
                    space->options.vars == SRCH_VARS_GROUP ? "per group of identical layers" : "per op",
                    space->options.followers ? ", ops without weights follow their input" : "",
                    space->options.dims == SRCH_DIMS_ALL ? "all splittable" : "sample and tp",
                    space->nmeshes);
    for (int m = 0; m < space->nmeshes; m++) {
      g_autofree char *text = srch_mesh_describe(&space->meshes[m]);
      g_string_append_printf(desc, " %s", text);
    }
    g_string_append(desc, "; microbatches");
    int last = -1;
    for (int c = 0; c < space->ncontexts; c++) {
      int mb = space->contexts[c].microbatches;
      if (mb <= last) continue;
      g_string_append_printf(desc, " %d", mb);
      last = mb;
    }
    r->space_description = g_string_free(desc, FALSE);
    if (o->algo == SRCH_ALGO_AUTO) r->ran = resolve_auto(space, &o->budget);
  } else if (!r->space_description) {
    r->space_description = g_strdup(o->algo == SRCH_ALGO_DP
                                        ? "the full Megatron space (dp, tp, pp, microbatch size, schedule, "
                                          "vp up to layers/pp, recompute none/selective/full, sp, zero 0-3), "
                                          "then its 1F1B pipelines again with stage cuts by dynamic programming "
                                          "(also GPipe and eager-1F1B, and pp not dividing the layers)"
                                        : o->tp_overlap
                                        ? "the full Megatron space (dp, tp, pp, microbatch size, schedule, "
                                          "vp up to layers/pp, recompute none/selective/full, sp, tp_overlap, zero 0-3)"
                                        : "the full Megatron space (dp, tp, pp, microbatch size, schedule, "
                                          "vp up to layers/pp, recompute none/selective/full, sp, zero 0-3)");
  }

  /* Baselines: data parallelism, Megatron's best grid point, one weird trick. */
  if (!o->no_baselines) {
    r->nbaselines = 3;
    r->baselines = g_new0(SrchBaseline, 3);
    char *detail = NULL;
    MdlStrategy *dp = srch_baseline_data_parallel(graph, cluster, dtype, o->space.framework, &detail);
    srch_set_baseline(&r->baselines[0], "data parallel", detail, dp, graph, cluster, params, o);
    detail = NULL;
    MdlStrategy *trick = srch_baseline_weird_trick(graph, cluster, dtype, o->space.framework, &detail);
    srch_set_baseline(&r->baselines[2], "one weird trick", detail, trick, graph, cluster, params, o);
  }
  /* The full Megatron space (below) is screened first, so that the classic grid, whose points
   * are full-space points, reads their bounds instead of building them again (not under a time
   * budget: there each phase screens within its own share of the time, as it did). */
  gboolean split = o->algo == SRCH_ALGO_AUTO && r->ran == SRCH_ALGO_CD;
  if (o->algo == SRCH_ALGO_GRID || o->algo == SRCH_ALGO_DP ||
      (o->algo == SRCH_ALGO_AUTO && r->ran == SRCH_ALGO_GRID) || split)
    full = srch_grid_full_points_with(graph, cluster, dtype, o->tp_overlap, o->threads);
  if (full) srch_grid_set_framework(full, o->space.framework);
  if (full && o->budget.seconds <= 0) {
    full_bounds = g_new(SimTime, full->len ? full->len : 1);
    for (guint i = 0; i < full->len; i++) full_bounds[i] = SRCH_UNSCREENED;
    SrchBudget unlimited = {0};
    if (!phase_run(&phase, "megatron space screening", srch_grid_screen_worker, NULL, full, full_bounds,
                   graph, cluster, params, o, unlimited, INFINITY, error))
      goto fail;
    for (int i = 0; i < phase.n; i++) r->screen_cpu_s += phase.workers[i].screen_cpu_s;
    phase_clear(&phase);
  }
  if (need_grid) {
    /* The classic grid first, whatever the budget (a baseline no search may miss: its memory
     * screening and bound pruning keep it to a few simulations, srch_grid.c). */
    grid = srch_grid_points(graph, cluster, dtype);
    srch_grid_set_framework(grid, o->space.framework);
    SrchBudget unlimited = {0};
    g_autofree SimTime *grid_bounds = full_bounds ? srch_grid_bounds_from(grid, full, full_bounds) : NULL;
    if (!phase_run(&phase, "megatron grid", srch_grid_worker, NULL, grid, grid_bounds, graph, cluster,
                   params, o, unlimited, INFINITY, error))
      goto fail;
    const SrchWorker *best = phase_merge(&phase, r, r->ran == SRCH_ALGO_GRID && o->algo != SRCH_ALGO_GRID);
    if (r->ran == SRCH_ALGO_GRID || o->algo == SRCH_ALGO_AUTO || o->algo == SRCH_ALGO_DP)
      phase_timeline(&phase, r, start);
    MdlStrategy *s = NULL;
    char *detail;
    if (best) {
      const MdlMegatronConfig *cfg = &g_array_index(grid, MdlMegatronConfig, best->best_grid);
      s = mdl_strategy_megatron(graph, cluster, cfg, error);
      if (!s) goto fail;
      detail = srch_grid_describe(cfg);
    } else {
      guint64 evaluated = 0;
      for (int i = 0; i < phase.n; i++) evaluated += phase.workers[i].evaluations;
      if (grid->len == 0)
        detail = g_strdup_printf("no (dp, tp, pp, microbatch) the builder accepts for this model on %d GPUs",
                                 dev_cluster_num_devices(cluster));
      else
        detail = g_strdup_printf("no grid point fits in memory (%" G_GUINT64_FORMAT " of %u evaluated)",
                                 evaluated, grid->len);
    }
    if (!o->no_baselines)
      srch_set_baseline(&r->baselines[1], "megatron", g_strdup(detail),
                   best ? mdl_strategy_megatron(graph, cluster, &g_array_index(grid, MdlMegatronConfig, best->best_grid), NULL)
                        : NULL,
                   graph, cluster, params, o);
    if (!o->no_baselines && best) r->baselines[1].grid_index = best->best_grid;
    if (best && (r->ran == SRCH_ALGO_GRID || o->algo == SRCH_ALGO_AUTO || o->algo == SRCH_ALGO_DP)) {
      r->best = s;
      s = NULL;
      r->best_time_s = best->best_time_s;
      r->best_phase = 0;
      r->best_chain = best->best_chain;
      r->best_origin = g_strdup_printf("megatron grid %s", detail);
    }
    mdl_strategy_free(s);
    g_free(detail);
    phase_clear(&phase);
  }

  /* The full Megatron space: grid; dp (half the evaluations and the time: its cuts the rest);
   * auto where no single-stage strategy fits (all of the budget) or where the per-op space is
   * too large for the budget to cover (coordinate descent: each family gets half the
   * evaluations; of the time, the space half, dp up to three quarters less what has passed,
   * coordinate descent the rest and at least a quarter). The winner is the better of it and
   * the classic grid. Measured (2026-12-02, two threads) with the space and dp a quarter
   * each: Llama 3.1 405B / 512 H100s, `--budget 20s`, 16.112 s (the space did not finish
   * screening; coordinate descent's half found 162.958 s); now 7.4304 s. */
  gboolean halve = split || o->algo == SRCH_ALGO_DP;
  guint64 full_evaluations = halve ? (o->budget.evaluations + 1) / 2 : o->budget.evaluations;
  if (full) {
    r->space_points = full->len;
    SrchBudget budget = o->budget;
    budget.evaluations = full_evaluations;
    if (budget.seconds > 0)
      budget.seconds = split ? o->budget.seconds / 2
                       : o->algo == SRCH_ALGO_DP ? o->budget.seconds / 2
                       : MAX(o->budget.seconds - (g_get_monotonic_time() - start) / 1e6, o->budget.seconds / 4);
    gboolean ok = phase_run(&phase, "megatron space", srch_grid_worker, NULL, full, full_bounds, graph,
                            cluster, params, o, budget, INFINITY, error);
    if (ok) {
      for (int i = 0; i < phase.n; i++) {
        const SrchWorker *w = &phase.workers[i];
        r->space_covered += w->evaluations + w->over_memory + w->pruned;
        r->screen_cpu_s += w->screen_cpu_s;
        r->memory_cpu_s += w->memory_cpu_s;
        r->simulate_cpu_s += w->simulate_cpu_s;
      }
      const SrchWorker *best = phase_merge(&phase, r, TRUE);
      phase_timeline(&phase, r, start);
      if (best && best->best_time_s < r->best_time_s) {
        mdl_strategy_free(r->best);
        g_free(r->best_origin);
        const MdlMegatronConfig *cfg = &g_array_index(full, MdlMegatronConfig, best->best_grid);
        g_autofree char *detail = srch_grid_describe(cfg);
        r->best = mdl_strategy_megatron(graph, cluster, cfg, error);
        r->best_time_s = best->best_time_s;
        r->best_origin = g_strdup_printf("megatron space %s", detail);
        ok = r->best != NULL;
      }
    }
    phase_clear(&phase);
    if (!ok) goto fail;
  }

  /* Stage cuts by dynamic programming of the full space's pipelines: dp and auto (any model
   * with two or more units: transformer layers, conv blocks; without, srch_dp_groups is
   * empty). Auto on GPT-3 175B / 1024 A100s, two threads, 2026-12-02: 23 s wall before (the
   * classic grid's pipelines, each measured with a task graph), 9-10 s now, the same winner. */
  if (o->algo == SRCH_ALGO_DP || o->algo == SRCH_ALGO_AUTO) {
    SrchPipeline *units = srch_pipeline_new(graph);
    GArray *groups = srch_dp_groups(graph, cluster, dtype, o->tp_overlap, units->nunits, o->threads);
    srch_pipeline_free(units);
    srch_grid_set_framework(groups, o->space.framework);
    /* The dp phase prunes from the earlier phases' best (the full space's, over every rank):
     * on GPT-3 175B / 1024 A100s, one thread, 67 s -> 22 s (2026-12-02), the same winner. */
    double prune_s = o->nranks > 1 ? INFINITY : r->best_time_s;
    if (reduce_pending) {
      prune_s = -o->comm->allreduce_max(o->comm->data, -r->best_time_s);
      reduce_pending = FALSE;
    }
    SrchBudget dp_budget = o->budget;
    if (o->algo == SRCH_ALGO_DP && full && o->budget.evaluations)
      dp_budget.evaluations = MAX(o->budget.evaluations - full_evaluations, 1);
    if (o->budget.seconds > 0) {
      double left = o->budget.seconds - (g_get_monotonic_time() - start) / 1e6;
      dp_budget.seconds = o->algo == SRCH_ALGO_DP || !space ? MAX(left, o->budget.seconds / 4)
                                                            : MAX(left - o->budget.seconds / 4, o->budget.seconds / 16);
    }
    gboolean ok = groups->len == 0 ||
                  phase_run(&phase, "dp", srch_dp_worker, NULL, groups, NULL, graph, cluster, params, o,
                            dp_budget, prune_s, error);
    if (ok && groups->len > 0) {
      const SrchWorker *best = phase_merge(&phase, r, o->algo == SRCH_ALGO_DP);
      phase_timeline(&phase, r, start);
      if (best && best->best_time_s < r->best_time_s) {
        mdl_strategy_free(r->best);
        g_free(r->best_origin);
        r->best = mdl_strategy_copy(best->best_strategy);
        r->best_time_s = best->best_time_s;
        r->best_phase = 1;
        r->best_chain = best->best_chain;
        r->best_origin = g_strdup_printf("dp stage cuts %s", best->best_detail);
      }
    }
    phase_clear(&phase);
    g_array_free(groups, TRUE);
    if (!ok) goto fail;
  }

  if (space) {
    if (r->ran == SRCH_ALGO_EXHAUSTIVE && !srch_space_measure_compute(space, params, &o->sim, error))
      goto fail;
    /* Under a time budget the search gets what the baselines left (at least a quarter); auto's
     * coordinate descent the evaluations the full Megatron space left. */
    SrchBudget budget = o->budget;
    if (split && o->budget.evaluations) budget.evaluations = MAX(o->budget.evaluations - full_evaluations, 1);
    if (budget.seconds > 0)
      budget.seconds = MAX(o->budget.seconds - (g_get_monotonic_time() - start) / 1e6, o->budget.seconds / 4);
    if (!phase_run(&phase, srch_algo_name(r->ran), driver_of(r->ran), space, NULL, NULL, graph, cluster,
                   params, o, budget, INFINITY, error))
      goto fail;
    const SrchWorker *best = phase_merge(&phase, r, TRUE);
    phase_timeline(&phase, r, start);
    /* Auto keeps the grid's point unless the per-op search is strictly better. */
    if (best && best->best_time_s < r->best_time_s) {
      mdl_strategy_free(r->best);
      g_free(r->best_origin);
      g_autofree char *name = g_strdup_printf("search-%s", srch_algo_name(r->ran));
      r->best = srch_space_strategy(space, best->best_point, name);
      r->best_time_s = best->best_time_s;
      r->best_phase = 2;
      r->best_chain = best->best_chain;
      r->best_origin = g_strdup_printf("%s %s %d", srch_algo_name(r->ran),
                                       r->ran == SRCH_ALGO_EXHAUSTIVE ? "subtree" : r->ran == SRCH_ALGO_RANDOM ? "worker" : "chain",
                                       best->best_chain);
    }
    phase_clear(&phase);
  }
  if (r->best) {
    double time;
    gboolean fits;
    srch_predict(graph, r->best, cluster, params, o, &time, &r->best_memory_bytes, &fits);
    if (time != r->best_time_s || !fits) { /* the simulator is deterministic: a bug */
      g_warning("search: the winner simulates at %.9g s (fits: %d), not the %.9g s found",
                time, fits, r->best_time_s);
      r->best_time_s = fits ? time : INFINITY;
    }
  }
  r->elapsed_s = (g_get_monotonic_time() - start) / 1e6;
  if (grid) g_array_free(grid, TRUE);
  if (full) g_array_free(full, TRUE);
  g_free(full_bounds);
  srch_space_free(space);
  return r;
fail:
  if (reduce_pending) (void)o->comm->allreduce_max(o->comm->data, -INFINITY);
  phase_clear(&phase);
  if (grid) g_array_free(grid, TRUE);
  if (full) g_array_free(full, TRUE);
  g_free(full_bounds);
  srch_space_free(space);
  srch_result_free(r);
  return NULL;
}
