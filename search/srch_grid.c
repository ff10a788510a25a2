/* search/grid — Megatron-LM's configuration space through mdl_strategy_megatron, and the
 * driver that searches it exhaustively with two safe prunings (search/SEARCH.md, "The full
 * Megatron space", has the proofs).
 *
 * The classic grid (Narayanan et al. 2021, section 3: the degrees and microbatch size a
 * practitioner tunes; srch_grid_points): every (tp, pp, dp) with tp * pp * dp = devices; every
 * microbatch size dividing the per-replica batch; 1F1B, and with pp > 1 also GPipe, eager-1F1B
 * and interleaved 1F1B with vp = 2..8 virtual stages (where pp * vp divides the layers and the
 * microbatch count is a multiple of pp). Context parallelism cp > 1 (dp = devices / (tp pp cp))
 * joins for sequences of at least GRID_MIN_CP_SEQ tokens, and expert parallelism ep > 1 (every
 * ep dividing dp * cp and the experts) for models with experts. The full space
 * (srch_grid_full_points) adds fp8 on devices with FP8 tensor cores (bf16 runs), vp up to layers / pp, recomputation none / selective / full
 * (Korthikanti et al. 2022, section 5), sequence parallelism (ibid., 4.2.2; where tp > 1 and the
 * model has such ops; on request, SrchOptions.tp_overlap, with the tensor-parallel communication
 * overlapped with the GEMMs, Megatron-Core's --tp-comm-overlap), ZeRO stages 0-3 (Rajbhandari et
 * al. 2020; stage 1 is Megatron's distributed optimizer) and, under ZeRO 1 and 2, the overlapped
 * parameter all-gather. Points
 * the builder refuses (tp not dividing the heads, pp not dividing the layers, ...) are left out.
 *
 * The driver: each worker takes its shapes round robin and screens their points (build, the lower
 * bound sim_iteration_bound through a SimBounder per built strategy), then, in increasing
 * order of the bound, checks the simulator's own memory rule (cm_memory_per_device) and
 * simulates the fitting ones, and stops where the bound exceeds its best: every later point
 * has a larger bound, hence a longer iteration. Screening is not an evaluation; a simulation
 * is. */
#include "search/srch-int.h"

#include <math.h>
#include <string.h>

#include "sim/sim_bound.h"

#define GRID_MAX_VIRTUAL_STAGES 8
/* Megatron Core's Parallelism Strategies Guide recommends context parallelism for "long
 * sequences (8K+ tokens)" (docs.nvidia.com/megatron-core/developer-guide/latest/user-guide/
 * parallelism-guide.html). */
#define GRID_MIN_CP_SEQ 8192

/* Whether the builder accepts @cfg; for a dp group (@one_stage) its one-stage configuration
 * (pp = 1: the stages' common mesh and splits, which the dp driver cuts), so pp need not
 * divide the layers. */
static gboolean builds(const MdlGraph *graph, const DevCluster *cluster, const MdlMegatronConfig *cfg,
                       gboolean one_stage) {
  MdlMegatronConfig one;
  memcpy(&one, cfg, sizeof one);
  if (one_stage) one.pp = 1;
  MdlStrategy *s = mdl_strategy_megatron(graph, cluster, &one, NULL);
  mdl_strategy_free(s);
  return s != NULL;
}

/* A configuration add_schedules proposes, with what the builder's checks on it found. */
typedef struct {
  MdlMegatronConfig cfg;
  gboolean full, tp_overlap, one_stage;
  gboolean ok;    /* the builder accepts it */
  int nsp, ntpo;  /* 2 where it accepts the sp (tp_overlap) variant too, else 1 */
} Proposed;

/* The builder's checks on @p (those on its memory variants: zero 0..3, which it only
 * range-checks; sp needs tp > 1 and ops with a sequence dim). */
static void check_proposed(const MdlGraph *graph, const DevCluster *cluster, Proposed *p) {
  p->nsp = p->ntpo = 1;
  p->ok = builds(graph, cluster, &p->cfg, p->one_stage);
  if (!p->ok || !p->full) return;
  MdlMegatronConfig cfg; /* copied with memcpy, padding included */
  memcpy(&cfg, &p->cfg, sizeof cfg);
  cfg.sequence_parallel = TRUE;
  p->nsp = p->cfg.tp > 1 && builds(graph, cluster, &cfg, p->one_stage) ? 2 : 1;
  /* With tp_overlap, under sp the tensor-parallel collectives next to a GEMM may also overlap
   * it (Megatron-Core's --tp-comm-overlap, tp_overlap=1: model/STRATEGY.md). */
  cfg.tp_overlap = TRUE;
  p->ntpo = p->tp_overlap && p->nsp == 2 && builds(graph, cluster, &cfg, p->one_stage) ? 2 : 1;
}

/* Appends @p's points where the builder accepted it: the configuration, or with full also its
 * memory and sp variants. */
static void add_point(GArray *points, const Proposed *p) {
  if (!p->ok) return;
  if (!p->full) {
    g_array_append_vals(points, &p->cfg, 1);
    return;
  }
  MdlMegatronConfig cfg; /* copied with memcpy, padding included */
  memcpy(&cfg, &p->cfg, sizeof cfg);
  /* sp and tp_overlap outermost: the screening rebuilds a strategy only when tp, pp, dp, mb,
   * schedule, vp, sp or tp_overlap change (recomputation and ZeRO are fields it sets in place,
   * srch_grid_worker). */
  for (int q = 0; q < p->nsp; q++)
    for (int t = 0; t < (q ? p->ntpo : 1); t++)
      for (int r = 0; r < 3; r++)
        for (int z = 0; z <= 3; z++)
          for (int g = 0; g < (z == 1 || z == 2 ? 2 : 1); g++) {
            cfg.recompute = (MdlRecompute)r;
            cfg.sequence_parallel = q;
            cfg.tp_overlap = t;
            cfg.zero_stage = z;
            cfg.overlap_param_gather = g;
            g_array_append_vals(points, &cfg, 1);
          }
}

/* Proposes @cfg (into @proposed, Proposed). */
static void propose(GArray *proposed, const MdlMegatronConfig *cfg, gboolean full, gboolean tp_overlap,
                    gboolean one_stage) {
  Proposed p;
  memset(&p, 0, sizeof p);
  memcpy(&p.cfg, cfg, sizeof p.cfg);
  p.full = full;
  p.tp_overlap = tp_overlap;
  p.one_stage = one_stage;
  g_array_append_val(proposed, p);
}

/* Every microbatch size and schedule of @base's degrees; for dp groups (@one_stage) 1F1B
 * alone (a group stands for its SRCH_DP_SCHEDULES schedules). */
static void add_schedules(GArray *proposed, const MdlGraph *graph, const MdlMegatronConfig *base,
                          gboolean full, gboolean tp_overlap, gboolean one_stage) {
  static const MdlSchedule pipelined[] = {MDL_SCHEDULE_1F1B, MDL_SCHEDULE_GPIPE, MDL_SCHEDULE_EAGER_1F1B};
  int dp = base->dp, pp = base->pp;
  if (graph->batch % dp) return;
  int64_t per_replica = graph->batch / dp;
  int max_vp = full && graph->num_layers > 0 ? graph->num_layers / pp : GRID_MAX_VIRTUAL_STAGES;
  for (int64_t mb = 1; mb <= per_replica; mb++) {
    if (per_replica % mb) continue;
    int64_t microbatches = per_replica / mb;
    MdlMegatronConfig cfg;
    memcpy(&cfg, base, sizeof cfg); /* padding too: the screening compares whole structs */
    cfg.microbatch_size = (int)mb;
    for (guint k = 0; k < (pp > 1 && !one_stage ? G_N_ELEMENTS(pipelined) : 1); k++) {
      cfg.schedule = pipelined[k];
      cfg.virtual_stages = 1;
      propose(proposed, &cfg, full, tp_overlap, one_stage);
    }
    if (one_stage || pp < 2 || microbatches % pp || graph->num_layers <= 0) continue;
    for (int vp = 2; vp <= max_vp; vp++) {
      if (graph->num_layers % (pp * vp)) continue;
      cfg.schedule = MDL_SCHEDULE_INTERLEAVED;
      cfg.virtual_stages = vp;
      propose(proposed, &cfg, full, tp_overlap, one_stage);
    }
  }
}

/* The builder's checks on proposals k, k + T, ... (a thread's share). */
typedef struct {
  const MdlGraph *graph;
  const DevCluster *cluster;
  GArray *proposed;
  guint first, step;
} CheckShare;

static gpointer check_share(gpointer data) {
  CheckShare *c = data;
  for (guint i = c->first; i < c->proposed->len; i += c->step)
    check_proposed(c->graph, c->cluster, &g_array_index(c->proposed, Proposed, i));
  return NULL;
}

/* The builder's checks on every proposal, on @threads threads (each check builds a strategy:
 * on a large space most of what the search did before its workers started, one thread:
 * Llama 3.1 405B / 512 H100s, 2026-12-02). The results do not depend on the thread count. */
static void check_all(const MdlGraph *graph, const DevCluster *cluster, GArray *proposed, int threads) {
  guint n = (guint)CLAMP(threads, 1, 64);
  CheckShare shares[64];
  GThread *workers[64] = {NULL};
  for (guint k = 0; k < n; k++) {
    shares[k] = (CheckShare){graph, cluster, proposed, k, n};
    if (k > 0) workers[k] = g_thread_try_new("stratsim-grid", check_share, &shares[k], NULL);
  }
  check_share(&shares[0]);
  for (guint k = 1; k < n; k++) {
    if (workers[k]) g_thread_join(workers[k]);
    else check_share(&shares[k]); /* no thread: its share here */
  }
}

/* The grid's points (@max_pp 0), or the dp driver's groups (@max_pp > 0: pp = 2 .. @max_pp, the
 * pipeline's units, with one-stage configurations the builder accepts). */
static GArray *points(const MdlGraph *graph, const DevCluster *cluster, DevDtype dtype, gboolean full,
                      gboolean tp_overlap, int max_pp, int threads) {
  int n = dev_cluster_num_devices(cluster);
  GArray *proposed = g_array_new(FALSE, FALSE, sizeof(Proposed));
  int64_t experts = 0;
  mdl_graph_num_experts(graph, &experts);
  int max_cp = graph->seq >= GRID_MIN_CP_SEQ ? n : 1;
  for (int tp = 1; tp <= n; tp++) {
    if (n % tp) continue;
    for (int pp = max_pp ? 2 : 1; pp <= n / tp && (!max_pp || pp <= max_pp); pp++) {
      if ((n / tp) % pp) continue;
      for (int cp = 1; cp <= MIN(max_cp, n / tp / pp); cp++) {
        if ((n / tp / pp) % cp) continue;
        int dp = n / tp / pp / cp;
        /* Expert tensor parallelism: etp = tp, or (MoE models with tp > 1) etp = 1, the experts
         * whole on each rank and the tp ranks inside the ep group (Megatron-Core's
         * --expert-tensor-parallel-size 1, what its MoE guides use with tp > 1). */
        for (int etp_one = 0; etp_one < (experts > 0 && tp > 1 ? 2 : 1); etp_one++) {
          int outer = etp_one ? tp : 1; /* tp / etp: the tp ranks inside the ep group */
          for (int ep = outer; ep <= (experts > 0 ? dp * cp * outer : 1); ep += outer) {
            if ((dp * cp * outer) % ep || (experts > 0 && experts % ep)) continue;
            if (etp_one && ep == 1) continue;
            MdlMegatronConfig cfg;
            memset(&cfg, 0, sizeof cfg); /* padding too: the screening compares whole structs */
            cfg.tp = tp;
            cfg.pp = pp;
            cfg.dp = dp;
            cfg.cp = cp;
            cfg.ep = ep;
            cfg.etp = etp_one ? 1 : 0;
            cfg.schedule = MDL_SCHEDULE_1F1B;
            cfg.dtype = dtype;
            add_schedules(proposed, graph, &cfg, full, tp_overlap, max_pp > 0);
          }
        }
      }
    }
  }
  check_all(graph, cluster, proposed, threads);
  GArray *out = g_array_new(FALSE, FALSE, sizeof(MdlMegatronConfig));
  for (guint i = 0; i < proposed->len; i++) add_point(out, &g_array_index(proposed, Proposed, i));
  g_array_free(proposed, TRUE);
  return out;
}

GArray *srch_grid_points(const MdlGraph *graph, const DevCluster *cluster, DevDtype dtype) {
  return points(graph, cluster, dtype, FALSE, FALSE, 0, 1);
}

void srch_grid_set_framework(GArray *points, MdlFramework framework) {
  for (guint i = 0; i < points->len; i++) g_array_index(points, MdlMegatronConfig, i).framework = framework;
}

GArray *srch_grid_full_points(const MdlGraph *graph, const DevCluster *cluster, DevDtype dtype) {
  return srch_grid_full_points_with(graph, cluster, dtype, FALSE, 1);
}

/* The full space's points (@max_pp 0) or dp groups, and in FP8 again where it applies. */
static GArray *full_points(const MdlGraph *graph, const DevCluster *cluster, DevDtype dtype,
                           gboolean tp_overlap, int max_pp, int threads) {
  GArray *out = points(graph, cluster, dtype, TRUE, tp_overlap, max_pp, threads);
  /* A bf16 run may also train in FP8 (Transformer Engine's recipe: the layers' GEMMs at the
   * FP8 peak, costmodel/cm_fp8.c) where the device has FP8 tensor cores (a peak in its preset). */
  if (dtype == DEV_DTYPE_BF16 && cluster->device.peak_flops[DEV_DTYPE_FP8] > 0) {
    GArray *fp8 = points(graph, cluster, DEV_DTYPE_FP8, TRUE, tp_overlap, max_pp, threads);
    g_array_append_vals(out, fp8->data, fp8->len);
    g_array_free(fp8, TRUE);
  }
  return out;
}

GArray *srch_grid_full_points_with(const MdlGraph *graph, const DevCluster *cluster, DevDtype dtype,
                                   gboolean tp_overlap, int threads) {
  return full_points(graph, cluster, dtype, tp_overlap, 0, threads);
}

GArray *srch_dp_groups(const MdlGraph *graph, const DevCluster *cluster, DevDtype dtype,
                       gboolean tp_overlap, int units, int threads) {
  if (units < 2) return g_array_new(FALSE, FALSE, sizeof(MdlMegatronConfig));
  return full_points(graph, cluster, dtype, tp_overlap, units, threads);
}

char *srch_grid_describe(const MdlMegatronConfig *c) {
  GString *out = g_string_new(NULL);
  g_string_printf(out, "dp=%d tp=%d pp=%d mb=%d %s", c->dp, c->tp, c->pp, c->microbatch_size,
                  mdl_schedule_name(c->schedule));
  if (c->virtual_stages > 1) g_string_append_printf(out, " vp=%d", c->virtual_stages);
  if (c->cp > 1) g_string_append_printf(out, " cp=%d", c->cp);
  if (c->ep > 1) g_string_append_printf(out, " ep=%d", c->ep);
  if (c->etp > 0 && c->etp != c->tp) g_string_append_printf(out, " etp=%d", c->etp);
  if (c->recompute != MDL_RECOMPUTE_NONE)
    g_string_append_printf(out, " recompute=%s", mdl_recompute_name(c->recompute));
  if (c->sequence_parallel) g_string_append(out, " sp");
  if (c->tp_overlap) g_string_append(out, " tp_overlap");
  if (c->zero_stage) g_string_append_printf(out, " zero=%d", c->zero_stage);
  if (c->overlap_param_gather) g_string_append(out, " overlap_param_gather");
  if (c->dtype == DEV_DTYPE_FP8) g_string_append(out, " fp8");
  return g_string_free(out, FALSE);
}

typedef struct {
  SimTime bound;
  guint index;
} Candidate;

static int compare_candidates(const void *a, const void *b) {
  const Candidate *x = a, *y = b;
  if (x->bound != y->bound) return x->bound < y->bound ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

static gint compare_indices(gconstpointer a, gconstpointer b) {
  guint x = *(const guint *)a, y = *(const guint *)b;
  return x < y ? -1 : x > y;
}

static gboolean before_deadline(const SrchWorker *w) {
  return !w->deadline_us || g_get_monotonic_time() < w->deadline_us;
}

/* A grid point's strategy, rebuilt only when a field other than the recomputation, the ZeRO
 * stage and overlap_param_gather changes (its shape): mdl_strategy_megatron copies those three
 * into the strategy and only validates their ranges, which points() respects, so setting them
 * in place gives the strategy a fresh build would (the same fields, the same prediction:
 * /search-grid/exhaustive-matches-brute-force simulates fresh builds). */
typedef struct {
  MdlStrategy *s;
  MdlMegatronConfig key;
  gboolean built;
} Shape;

static MdlMegatronConfig shape_key(const MdlMegatronConfig *cfg) {
  MdlMegatronConfig key;
  memcpy(&key, cfg, sizeof key);
  key.zero_stage = 0;
  key.recompute = MDL_RECOMPUTE_NONE;
  key.overlap_param_gather = FALSE;
  return key;
}

/* Whether @sh holds the shape of @key (whole-struct comparison: fields added later count too;
 * points() zeroes padding). */
static gboolean shape_holds(const Shape *sh, const MdlMegatronConfig *key) {
  return sh->built && memcmp(key, &sh->key, sizeof *key) == 0;
}

/* Builds @key's shape into @sh (NULL where the builder refuses it). */
static void shape_build(Shape *sh, const SrchWorker *w, const MdlMegatronConfig *key) {
  mdl_strategy_free(sh->s);
  sh->s = mdl_strategy_megatron(w->graph, w->cluster, key, NULL);
  sh->key = *key;
  sh->built = TRUE;
}

/* @sh's strategy with @cfg's recomputation, ZeRO stage and overlap_param_gather. */
static MdlStrategy *shape_set(Shape *sh, const MdlMegatronConfig *cfg) {
  if (sh->s) {
    sh->s->zero_stage = cfg->zero_stage;
    sh->s->recompute = cfg->recompute;
    sh->s->overlap_param_gather = cfg->overlap_param_gather;
  }
  return sh->s;
}

/* The screening's strategy (one shape at a time: points() lists a shape's variants together)
 * and its bound in parts (sim_bounder_new, which recomputes only what those three change; one
 * bounder for every shape, pointed at the next by sim_bounder_set_strategy). */
typedef struct {
  Shape shape;
  SimBounder *bounder;
  gboolean bound; /* the bounder reads shape.s */
} Screen;

static void screen_clear(Screen *sc) {
  sim_bounder_free(sc->bounder);
  mdl_strategy_free(sc->shape.s);
}

static MdlStrategy *screen_strategy(Screen *sc, const SrchWorker *w, const MdlMegatronConfig *cfg) {
  MdlMegatronConfig key = shape_key(cfg);
  if (!shape_holds(&sc->shape, &key)) {
    sc->bound = FALSE;
    shape_build(&sc->shape, w, &key);
  }
  return shape_set(&sc->shape, cfg);
}

static SimTime screen_bound(Screen *sc, const SrchWorker *w) {
  if (!sc->bounder) sc->bounder = sim_bounder_new(w->graph, sc->shape.s, w->cluster, w->params, &w->options->sim);
  else if (!sc->bound) sim_bounder_set_strategy(sc->bounder, sc->shape.s);
  sc->bound = TRUE;
  return sim_bounder_bound(sc->bounder);
}

/* The simulations' strategies: in bound order a shape's variants come close together (a ZeRO
 * 1 and 2 pair often has one bound), so the last few shapes are kept, each with the peak memory
 * of the (ZeRO stage, recomputation) variants checked so far. cm_memory_per_device does not read
 * overlap_param_gather (when the all-gathers run does not change what is held), so a ZeRO 1 or 2
 * point's peak serves its twin with the other overlap_param_gather:
 * /search-grid/memory-ignores-overlap-param-gather checks it on every such pair of a space. */
#define RECENT_SHAPES 8
typedef struct {
  Shape shape;
  double peak[4][MDL_RECOMPUTE_COUNT]; /* by ZeRO stage and recomputation; < 0: not yet */
} Checked;

typedef struct {
  Checked shapes[RECENT_SHAPES];
  guint next; /* the one replaced next */
} Recent;

static void recent_clear(Recent *rc) {
  for (int i = 0; i < RECENT_SHAPES; i++) mdl_strategy_free(rc->shapes[i].shape.s);
}

/* Grid point @index's strategy, when it fits in memory (the simulator's fits_memory rule;
 * owned by @rc, valid until the next call); NULL, counted as over memory (or failed, where the
 * builder refuses it), when not. */
static MdlStrategy *fitting(SrchWorker *w, Recent *rc, guint index) {
  const MdlMegatronConfig *cfg = &g_array_index(w->grid, MdlMegatronConfig, index);
  MdlMegatronConfig key = shape_key(cfg);
  Checked *ch = NULL;
  for (int i = 0; i < RECENT_SHAPES && !ch; i++)
    if (shape_holds(&rc->shapes[i].shape, &key)) ch = &rc->shapes[i];
  if (!ch) {
    ch = &rc->shapes[rc->next++ % RECENT_SHAPES];
    shape_build(&ch->shape, w, &key);
    for (int z = 0; z < 4; z++)
      for (int r = 0; r < MDL_RECOMPUTE_COUNT; r++) ch->peak[z][r] = -1;
  }
  MdlStrategy *s = shape_set(&ch->shape, cfg);
  if (!s) {
    w->failed++;
    return NULL;
  }
  double *peak = &ch->peak[cfg->zero_stage][cfg->recompute]; /* points() keeps both in range */
  if (*peak < 0) { /* every ZeRO stage of this recomputation at once (points() lists them all) */
    double by_zero[4];
    srch_peak_memory_zero_stages(w->graph, s, w->cluster, by_zero);
    for (int z = 0; z < 4; z++) ch->peak[z][cfg->recompute] = by_zero[z];
  }
  if (*peak > w->cluster->device.memory_bytes) {
    w->over_memory++;
    return NULL;
  }
  return s;
}

/* The runs of points with one shape: the first index of each, then @grid's length. Workers
 * take runs round robin (points() lists a shape's variants together): split by index instead,
 * every worker built every shape and pointed its bounder at it: on Llama 3.1 405B / 512 H100s
 * (`--algo grid`, 2026-12-02) two threads took 16.7 s of CPU against one thread's 11.2 s. */
static GArray *shape_runs(const GArray *grid) {
  GArray *runs = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < grid->len; i++) {
    if (i > 0) {
      MdlMegatronConfig a = shape_key(&g_array_index(grid, MdlMegatronConfig, i - 1));
      MdlMegatronConfig b = shape_key(&g_array_index(grid, MdlMegatronConfig, i));
      if (memcmp(&a, &b, sizeof a) == 0) continue;
    }
    g_array_append_val(runs, i);
  }
  g_array_append_val(runs, grid->len);
  return runs;
}

/* Grid order and bit-reversed indices (over the least power of two >= @nruns, those past the
 * end skipped) taken in turn, each skipping what the other took: any prefix of the order
 * spreads over the whole enumeration (tp outermost, then pp, cp, ep, microbatch, schedule and
 * vp; FP8 after bf16) and covers its start at half the pace of grid order. Measured
 * (2026-12-02, two threads, auto):
 *  - grid order alone: a budget too short to screen the space saw only its start. Llama 3.1
 *    405B / 512 H100s, `--budget 2s`: only tp = 1 and 2, every point over memory, and the
 *    per-op driver's 408.7 s plan won;
 *  - bit-reversed alone: 405B 7.437 s at 0.5 s, but GPT-3 175B / 1024 A100s, whose optimum
 *    (tp = 4, pp = 4) lies early in grid order, 17.33 s at 2 s against 16.99 s;
 *  - blocks of equal degrees (tp, pp, cp, ep) bit-reversed, runs in grid order within:
 *    405B 568.956 s at 0.5 s (the first blocks are large and over memory);
 *  - in turn (kept): 405B 7.437 s at 0.5, 1 and 2 s, 175B its optimum at 2 s. */
guint *srch_grid_screen_order(guint nruns) {
  guint *order = g_new(guint, nruns ? nruns : 1);
  g_autofree gboolean *taken = g_new0(gboolean, nruns ? nruns : 1);
  guint bits = 0;
  while ((1u << bits) < nruns) bits++;
  guint n = 0, k = 0, next = 0; /* taken so far; the next bit-reversed index; grid order's */
  while (n < nruns) {
    guint r = nruns;
    for (; n % 2 == 0 && k < (1u << bits) && r == nruns; k++) { /* a bit-reversed turn */
      guint v = 0;
      for (guint b = 0; b < bits; b++)
        if (k & (1u << b)) v |= 1u << (bits - 1 - b);
      if (v < nruns && !taken[v]) r = v;
    }
    if (r == nruns) { /* grid order's turn, or the bit-reversed indices all taken */
      while (taken[next]) next++;
      r = next;
    }
    taken[r] = TRUE;
    order[n++] = r;
  }
  return order;
}

void srch_grid_screen_worker(SrchWorker *w) {
  double cpu = srch_thread_cpu_s();
  Screen sc;
  memset(&sc, 0, sizeof sc);
  g_autoptr(GArray) runs = shape_runs(w->grid); /* run r on worker r mod T */
  for (guint r = (guint)w->index; r + 1 < runs->len && before_deadline(w); r += (guint)w->nworkers)
    for (guint i = g_array_index(runs, guint, r); i < g_array_index(runs, guint, r + 1); i++) {
      const MdlMegatronConfig *cfg = &g_array_index(w->grid, MdlMegatronConfig, i);
      w->bounds[i] = screen_strategy(&sc, w, cfg) ? screen_bound(&sc, w) : SRCH_REFUSED;
    }
  screen_clear(&sc);
  w->screen_cpu_s += srch_thread_cpu_s() - cpu;
  w->complete = TRUE;
}

/* Configurations as hash keys (whole structs: points() zeroes padding). */
static guint config_hash(gconstpointer key) {
  const unsigned char *k = key;
  guint h = 2166136261u; /* FNV-1a */
  for (gsize i = 0; i < sizeof(MdlMegatronConfig); i++) h = (h ^ k[i]) * 16777619u;
  return h;
}

static gboolean config_equal(gconstpointer a, gconstpointer b) {
  return memcmp(a, b, sizeof(MdlMegatronConfig)) == 0;
}

SimTime *srch_grid_bounds_from(const GArray *points, const GArray *full, const SimTime *full_bounds) {
  GHashTable *index = g_hash_table_new(config_hash, config_equal); /* config -> full index + 1 */
  for (guint i = 0; i < full->len; i++)
    g_hash_table_insert(index, &g_array_index(full, MdlMegatronConfig, i), GUINT_TO_POINTER(i + 1));
  SimTime *out = g_new(SimTime, points->len ? points->len : 1);
  for (guint j = 0; j < points->len; j++) {
    guint k = GPOINTER_TO_UINT(g_hash_table_lookup(index, &g_array_index(points, MdlMegatronConfig, j)));
    out[j] = k ? full_bounds[k - 1] : SRCH_UNSCREENED;
  }
  g_hash_table_unref(index);
  return out;
}

void srch_grid_worker(SrchWorker *w) {
  GArray *cands = g_array_new(FALSE, FALSE, sizeof(Candidate));
  Screen sc;
  memset(&sc, 0, sizeof sc);
  guint i;
  double cpu = srch_thread_cpu_s();
  /* Screening: the builder and the bound (the memory rule waits until a point's bound is
   * below the best: a point pruned by its bound needs no memory check). Under a time budget
   * it takes at most half of what is left, so that the points screened are evaluated in the
   * rest, best bound first: a budget too short to screen the whole space still returns the
   * best of the part screened (Llama 3.1 405B / 512 H100s, `--budget 10s`: the space's
   * quarter went to screening, none of it was evaluated). */
  gint64 screen_until = 0;
  if (w->deadline_us) {
    gint64 now_us = g_get_monotonic_time();
    screen_until = now_us + MAX(w->deadline_us - now_us, 0) / 2;
  }
  /* The runs of one shape, run r of the order on worker r mod T (shape_runs): in grid
   * order, or under a time budget in srch_grid_screen_order's, so that a screening the budget
   * cuts short has seen all of the space's regions. */
  g_autoptr(GArray) runs = shape_runs(w->grid);
  guint nruns = runs->len - 1, p;
  g_autofree guint *order = screen_until ? srch_grid_screen_order(nruns) : NULL;
  for (p = (guint)w->index; p < nruns && (!screen_until || g_get_monotonic_time() < screen_until);
       p += (guint)w->nworkers) {
    guint r = order ? order[p] : p;
    for (i = g_array_index(runs, guint, r); i < g_array_index(runs, guint, r + 1); i++) {
      SimTime bound = w->bounds ? w->bounds[i] : SRCH_UNSCREENED; /* screened before the phase */
      if (bound == SRCH_UNSCREENED) {
        const MdlMegatronConfig *cfg = &g_array_index(w->grid, MdlMegatronConfig, i);
        bound = screen_strategy(&sc, w, cfg) ? screen_bound(&sc, w) : SRCH_REFUSED;
      }
      if (bound == SRCH_REFUSED) { /* srch_grid_points kept only what the builder accepts */
        w->failed++;
        continue;
      }
      Candidate c = {bound, i};
      g_array_append_val(cands, c);
    }
  }
  screen_clear(&sc);
  Recent rc;
  memset(&rc, 0, sizeof rc);
  double now = srch_thread_cpu_s();
  w->screen_cpu_s += now - cpu;
  cpu = now;
  gboolean screened = p >= nruns;
  if (screened && w->bounds && w->nworkers > 1 && w->options->nranks <= 1) {
    /* Every bound known (screened before the phase, in this process): the workers share the
     * candidates in one order, best bound first, worker k taking every nworkers-th from its k,
     * so each finds a point near the best early and prunes by it. Split by index as above,
     * the worker whose share missed the best points pruned by its own, worse, best and ran
     * the memory rule on the points between: Llama 3.1 405B / 512 H100s, `--algo grid`
     * (2026-12-02): one thread 11.2 s wall, 10629 points over memory; two threads 15.2 s
     * wall, 27654. The order depends on the bounds and the thread count only. */
    GArray *all = g_array_new(FALSE, FALSE, sizeof(Candidate));
    gboolean complete = TRUE;
    for (guint j = 0; j < w->grid->len && complete; j++) {
      complete = w->bounds[j] != SRCH_UNSCREENED;
      Candidate c = {w->bounds[j], j};
      if (complete && c.bound != SRCH_REFUSED) g_array_append_val(all, c);
    }
    if (complete) {
      if (all->len) qsort(all->data, all->len, sizeof(Candidate), compare_candidates);
      g_array_set_size(cands, 0);
      for (guint j = (guint)w->index; j < all->len; j += (guint)w->nworkers)
        g_array_append_val(cands, g_array_index(all, Candidate, j));
    }
    g_array_free(all, TRUE);
  }
  if (cands->len) qsort(cands->data, cands->len, sizeof(Candidate), compare_candidates);
  guint k;
  for (k = 0; k < cands->len; k++) {
    const Candidate *c = &g_array_index(cands, Candidate, k);
    if (isfinite(w->best_time_s) && sim_time_seconds(c->bound) > w->best_time_s) {
      w->pruned += cands->len - k; /* this bound and every later one exceed the best */
      k = cands->len;
      break;
    }
    if (!srch_worker_has_budget(w)) break;
    MdlStrategy *s = fitting(w, &rc, c->index);
    now = srch_thread_cpu_s();
    w->memory_cpu_s += now - cpu;
    cpu = now;
    if (!s) continue;
    srch_worker_eval_fitting(w, s, (int)c->index);
    now = srch_thread_cpu_s();
    w->simulate_cpu_s += now - cpu;
    cpu = now;
  }
  /* Out of budget: the points left whose bound exceeds the best are pruned by it (the loop's
   * rule), and the others screened for memory still, so that the share covered counts those
   * that could not be a result anyway; in grid order, where a shape's variants follow one
   * another and each shape is built once. (All of them went through the memory rule before:
   * Llama 3.1 405B / 512 H100s, `--budget 200`, 2026-12-02: 62080 checks, some 12 s of the
   * 27 s, where 10689 decide the whole space.) */
  GArray *left = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint j = k; j < cands->len; j++) {
    const Candidate *c = &g_array_index(cands, Candidate, j);
    if (isfinite(w->best_time_s) && sim_time_seconds(c->bound) > w->best_time_s) {
      w->pruned += cands->len - j; /* this bound and every later one exceed the best */
      break;
    }
    g_array_append_val(left, c->index);
  }
  g_array_sort(left, compare_indices);
  for (guint j = 0; j < left->len && before_deadline(w); j++) fitting(w, &rc, g_array_index(left, guint, j));
  g_array_free(left, TRUE);
  recent_clear(&rc);
  w->memory_cpu_s += srch_thread_cpu_s() - cpu;
  w->complete = screened && k >= cands->len;
  g_array_free(cands, TRUE);
}
