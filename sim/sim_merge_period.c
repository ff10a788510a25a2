/* sim/merge_period — the steady state of a merged run (sim_merge.c), proven from its reduced
 * schedule: a graph of k microbatches timed, the prediction for the strategy's N = k + i p.
 *
 * sim/sim_period.c gives the argument on the engine's plain semantics: two cuts a < b of the
 * run, one period (p microbatches) apart, where (1) every label advances by exactly one period,
 * (2) the engine's state is the same relative to the cut (under sigma, each task to its image p
 * microbatches on), (3) the schedules of k and N microbatches differ by whole periods inserted
 * between the cuts. Then the N-microbatch run is the k-microbatch one with the period [a, b)
 * repeated i more times. Here the same on the reduced graph, which merging times exactly (its
 * pops are the full run's: sim_merge.c), with what that graph adds:
 *  - tasks: a group pops as one (its label and image are its head position's, the image head
 *    being the same offset in the image unit); a folded collective pops at its fork's end (the
 *    log's SimPop.fork), a chain's successors see it end when its last collective pops, with its
 *    last step (sim_fold_steps);
 *  - state: besides each resource's free time and each task touched (dependencies left, latest
 *    end, or its pop time once ready), each chain in flight (popped, its last collective not):
 *    which collective pops next, when, and the ends its later steps join that are known;
 *  - the breakdown: every busy interval the pops before a cut leave running after it (tasks,
 *    folded collectives, chains' first and later stretches) is the same relative to both cuts,
 *    and no host wait runs after a: the timeline after b is then the one after a, P later, so
 *    each breakdown figure (a measure over time) of N is k's plus i times its measure over
 *    [a, b) (sim_breakdown_sums_window);
 *  - the host: a device the host pass proved early (sim_merge_host.c's bound) is proven early
 *    over the N-microbatch program, the period's positions repeated
 *    (sim_merge_launches_repeated); a device it walked has its walk's state before the cuts'
 *    positions compared (sim_merge_walk_state: last launch's and positions' ends, the queue
 *    and the ends it may still wait for, the later P later; no late launch and no wait between
 *    the cuts), so the walk over the inserted periods repeats the one between the cuts:
 *    merging releases no kernel there in either run;
 *  - releases: only before a.
 * What merging decides per task (groups, folds) is local to the graph, which the builder stamps
 * per microbatch from templates: tests/test-period.c checks the predictions against the full
 * N-microbatch merged runs, figure for figure.
 *
 * Cost (175B interleaved bench point, 48 of 192 microbatches, callgrind per prediction): the
 * proof ~16 M instructions of the route's 83.5 M (labels and images 7 M, the launches over the
 * longer program 4 M, the two cuts 1.4 M after skipping the tasks a cut cannot see, the longer
 * schedule per device 2 M); the first cut pair tried holds on the four bench points. The
 * images were first hashed per task (21 M, a sort) and then per run; a conversion replayed
 * microbatch after microbatch puts each run's image p runs on, which is checked first. */
#include "sim/sim-int.h"
#include "sim/sim_merge-int.h"
#include "sim/sim_period.h"
#include "sim/sim_schedule.h"

#include <stdlib.h>

typedef struct {
  uint32_t first, end;   /* the device's positions */
  int rank, nunits;
  SimUnit *units;
  uint32_t *ustart;      /* per unit its first position (nunits + 1) */
  int *unit_of;          /* per (phase, chunk, microbatch): its unit (-1: none) */
  uint32_t h0, h1;       /* its heads: Merge.hgid[h0 .. h1) (in program order) */
  uint32_t *hpos;        /* and their positions */
  uint32_t j0;           /* its first join in reduce's list of joins (Merge.jx) */
} DevUnits;

typedef struct {
  Merge *m;
  const SimTaskGraph *g, *rg;
  const SimSchedule *s;
  const SimTime *release;
  const SimFolds *folds;
  const SimTime *host_iv;
  const guint *host_off;
  const MdlStrategy *strategy;
  MdlStrategy sk;        /* the strategy with k microbatches (the schedule the graph was built with) */
  int k, N, p, nstages;
  uint32_t R, ng, nd;
  int32_t *mb;           /* per reduced task: its microbatch (-1: the iteration's) */
  uint32_t *sig;         /* per reduced task: its image (itself for the iteration's; NONE) */
  SimTime *key;          /* per reduced task: its pop time (a folded collective: its fork's end) */
  SimTime *rs, *se;      /* when its successors see it end, and at what time */
  SimTime *contrib;      /* what its pop adds to the makespan (0: nothing) */
  SimTime *end;          /* its own end (a chain: its first stretch's) */
  uint32_t *last;        /* per chain with folds: its last collective (NONE: not such a chain) */
  SimTime *reach;        /* per reduced task: the latest its pop can matter to a cut's state
                            (its end, its chain's, its successors' pop times) */
  DevUnits *dev;
  uint32_t *slot_of_block; /* per block: 3 * its chunk + its unit phase */
  SimPeriodCuts cuts;
} Steady;

static inline SimTime rel(SimTime t, SimTime tau) { return t > tau ? t - tau : 0; }

static inline SimTime task_end(const Steady *c, uint32_t x) { return c->end[x]; }

static SimTime fold_end(void *ctx, uint32_t j) { return task_end((const Steady *)ctx, j); }

/* A position's schedule phase and chunk from its block (kind * nops + op). */
static void block_unit(const Steady *c, uint32_t block, int *phase, int *chunk) {
  int nops = c->strategy->num_ops;
  int kind = (int)block / nops, op = (int)block % nops;
  *chunk = c->strategy->configs[op].stage;
  *phase = kind == 0 ? SIM_UNIT_FORWARD : kind == 2 && c->strategy->weight_delay ? SIM_UNIT_WEIGHT
                                                                               : SIM_UNIT_BACKWARD;
}

/* The device's units from its positions: the schedule's units (sim_pipeline_units for k
 * microbatches), each (phase, chunk) unit as long as the first of its kind; FALSE where the
 * program does not split so (a unit starting with another chunk or phase, or the units not
 * ending with the program). */
static gboolean device_units(Steady *c, uint32_t d, DevUnits *u) {
  const uint32_t *block = c->g->program_block;
  u->first = c->m->dbeg[d];
  u->end = c->m->dbeg[d + 1];
  if (u->first == u->end) return TRUE;
  int phase, chunk;
  block_unit(c, block[u->first], &phase, &chunk);
  u->rank = mdl_strategy_rank_of_stage(c->strategy, chunk);
  u->units = sim_pipeline_units(&c->sk, u->rank, &u->nunits);
  /* a unit's size, per (chunk, phase), from its first one: its positions up to the next that
   * is of another chunk or phase or repeats its first block (a chunk's ops come once a unit);
   * the walk below checks every unit's first position, and the total */
  g_autofree uint32_t *size = g_new0(uint32_t, 3 * (gsize)c->nstages);
  u->ustart = g_new(uint32_t, (gsize)u->nunits + 1);
  u->unit_of = g_new(int, 3 * (gsize)c->nstages * (gsize)c->k);
  for (int i = 0; i < 3 * c->nstages * c->k; i++) u->unit_of[i] = -1;
  uint32_t at = u->first;
  for (int i = 0; i < u->nunits; i++) {
    const SimUnit *x = &u->units[i];
    uint32_t slot = (uint32_t)(3 * x->chunk + x->phase);
    if (at >= u->end || c->slot_of_block[block[at]] != slot) return FALSE;
    if (!size[slot]) {
      uint32_t e = at + 1;
      while (e < u->end && c->slot_of_block[block[e]] == slot && block[e] != block[at]) e++;
      size[slot] = e - at;
    }
    u->ustart[i] = at;
    u->unit_of[slot * (uint32_t)c->k + (uint32_t)x->microbatch] = i;
    at += size[slot];
  }
  u->ustart[u->nunits] = at;
  return at == u->end;
}

/* The reduced group headed at position @k (a HEAD): its head's rank among the heads by id. */
static inline uint32_t group_of(const Merge *m, uint32_t k) {
  uint32_t h = m->prog[k];
  return m->head_rank[h >> 6] + (uint32_t)__builtin_popcountll(m->head[h >> 6] & ((1ull << (h & 63)) - 1));
}

/* Labels, images, pop times, successor and makespan times of the reduced tasks. */
static gboolean label(Steady *c) {
  const Merge *m = c->m;
  const SimTaskGraph *g = c->g;
  for (uint32_t x = 0; x < c->R; x++) c->sig[x] = NONE, c->mb[x] = -1;
  /* groups: their head's unit */
  for (uint32_t d = 0; d < c->nd; d++) {
    const DevUnits *u = &c->dev[d];
    for (int i = 0; i < u->nunits; i++)
      for (uint32_t k = next_flagged(m->pflags, u->ustart[i], u->ustart[i + 1], HEAD);
           k < u->ustart[i + 1]; k = next_flagged(m->pflags, k + 1, u->ustart[i + 1], HEAD)) {
        uint32_t x = group_of(m, k);
        const SimUnit *un = &u->units[i];
        c->mb[x] = un->microbatch;
        if (un->microbatch + c->p >= c->k) continue;
        int j = u->unit_of[(3 * un->chunk + un->phase) * c->k + un->microbatch + c->p];
        if (j < 0) continue;
        uint32_t y = u->ustart[j] + (k - u->ustart[i]);
        if (y < u->ustart[j + 1] && (m->pflags[y] & HEAD)) c->sig[x] = group_of(m, y);
      }
  }
  /* the other tasks: their own labels (images by sim_period_images) */
  const SimTask *tasks = (const SimTask *)g->tasks->data;
  g_autofree uint32_t *ids = g_new(uint32_t, (gsize)(c->R - c->ng) + 1);
  g_autofree uint32_t *of = g_new(uint32_t, (gsize)(c->R - c->ng) + 1); /* their reduced ids */
  uint32_t n = 0;
  for (uint32_t t = m->C; t < m->n; t++) {
    uint32_t x = m->gid[t];
    if (x == NONE) continue;
    if (tasks[t].microbatch < 0) {
      c->sig[x] = x;
      continue;
    }
    c->mb[x] = tasks[t].microbatch;
    ids[n] = t;
    of[n++] = x;
  }
  g_autofree uint32_t *image = g_new(uint32_t, (gsize)n + 1);
  sim_period_images(g, ids, n, c->p, c->k, image);
  for (uint32_t i = 0; i < n; i++)
    if (image[i] != NONE) c->sig[of[i]] = m->gid[image[i]];
  /* (a group's image may not be one group where the schedule around it differs: the
   * partition is checked per position, and the state needs images only near the cuts) */
  for (uint32_t x = c->ng; x < c->R; x++)
    if (c->mb[x] >= 0 && c->mb[x] < c->k - c->p && c->sig[x] == NONE) return FALSE;
  /* pop times (a folded collective's: its fork's end, SimSchedule.ready) */
  const SimFold *fold = c->folds->task;
  for (uint32_t x = 0; x < c->R; x++) {
    c->key[x] = MAX(c->s->ready[x], c->release ? c->release[x] : 0);
    c->last[x] = NONE;
  }
  /* successors and makespan: a chain with folds ends with its last collective's last step */
  SimTime makespan = 0;
  const SimTask *rtasks = (const SimTask *)c->rg->tasks->data;
  for (uint32_t x = 0; x < c->R; x++) {
    SimTime d = fold[x].owner != NONE ? fold[x].duration : rtasks[x].duration;
    c->end[x] = c->s->start[x] + d;
    c->rs[x] = c->key[x];
    c->se[x] = c->contrib[x] = fold[x].owner != NONE ? 0 : c->end[x];
  }
  for (uint32_t x = 0; x < c->R; x++) {
    if (fold[x].owner != NONE || fold[x].next == NONE) continue;
    uint32_t y = fold[x].next;
    while (fold[y].next != NONE) y = fold[y].next;
    c->last[x] = y;
    SimTime end = sim_fold_steps(c->folds, &fold[y], c->key[y], fold_end, NULL, c);
    c->rs[x] = c->key[y];
    c->se[x] = end;
    c->contrib[x] = 0;
    c->contrib[y] = end;
  }
  for (uint32_t x = 0; x < c->R; x++) {
    makespan = MAX(makespan, c->contrib[x]);
    SimTime r = MAX(task_end(c, x), c->se[x]);
    for (uint32_t k = c->rg->succ_offsets[x]; k < c->rg->succ_offsets[x + 1]; k++)
      r = MAX(r, c->key[c->rg->succ[k]]);
    c->reach[x] = r;
  }
  return makespan == c->s->makespan; /* the run's, or the reading above is not the engine's */
}

/* How many of device @u's positions pop before @tau: its groups pop in program order, so a
 * prefix, up to its first head whose group pops at or after @tau. */
static uint32_t popped_positions(const Steady *c, const DevUnits *u, SimTime tau) {
  uint32_t lo = 0, hi = u->h1 - u->h0; /* the first head popping at or after tau */
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (c->key[c->m->hgid[u->h0 + mid]] < tau) lo = mid + 1;
    else hi = mid;
  }
  return lo == u->h1 - u->h0 ? u->end : u->hpos[lo];
}

static inline uint32_t clamp_offset(uint32_t popped, uint32_t start, uint32_t end) {
  return popped <= start ? 0 : popped >= end ? end - start : popped - start;
}

/* Condition (1): per unit of each device, its positions popped before @a are as many as its
 * image's before @b; per other task, as sim_period.c; releases and host waits before @a. */
static gboolean partition(const Steady *c, SimTime a, SimTime b) {
  for (uint32_t d = 0; d < c->nd; d++) {
    const DevUnits *u = &c->dev[d];
    if (u->nunits == 0) continue;
    uint32_t pa = popped_positions(c, u, a), pb = popped_positions(c, u, b);
    for (int i = 0; i < u->nunits; i++) {
      const SimUnit *x = &u->units[i];
      uint32_t s0 = u->ustart[i], s1 = u->ustart[i + 1];
      if (x->microbatch < c->p && s1 > pb) return FALSE;
      if (x->microbatch >= c->k - c->p) {
        if (s0 < pa) return FALSE;
        continue;
      }
      int j = u->unit_of[(3 * x->chunk + x->phase) * c->k + x->microbatch + c->p];
      if (j < 0 || clamp_offset(pa, s0, s1) != clamp_offset(pb, u->ustart[j], u->ustart[j + 1]))
        return FALSE;
    }
  }
  for (uint32_t x = c->ng; x < c->R; x++) {
    int32_t m = c->mb[x];
    SimTime image = m >= 0 && m < c->k - c->p ? c->key[c->sig[x]] : 0;
    if (!sim_period_label_ok(m, c->key[x], image, a, b, c->p, c->k)) return FALSE;
  }
  for (uint32_t x = 0; c->release && x < c->R; x++)
    if (c->release[x] && c->key[x] >= a) return FALSE;
  const SimTime *iv = c->host_iv;
  for (guint i = 0; i < c->host_off[c->nd]; i++)
    if (iv[2 * i + 1] > a) return FALSE;
  return TRUE;
}

/* A busy interval a pop before the cut leaves running after it (relative, clipped). */
typedef struct {
  uint32_t resource;
  SimTime start, end;
} Busy;

static int compare_busy(const void *x, const void *y) {
  const Busy *a = x, *b = y;
  if (a->resource != b->resource) return a->resource < b->resource ? -1 : 1;
  if (a->start != b->start) return a->start < b->start ? -1 : 1;
  return (a->end > b->end) - (a->end < b->end);
}

typedef struct {
  GArray *busy;
  SimTime tau;
  uint32_t resource;
  const Steady *c;
} Running;

static void running_stretch(void *ctx, SimTime from, SimTime to) {
  Running *r = ctx;
  if (to > r->tau) {
    Busy b = {r->resource, rel(from, r->tau), to - r->tau};
    g_array_append_val(r->busy, b);
  }
}

static SimTime running_end(void *ctx, uint32_t j) { return task_end(((Running *)ctx)->c, j); }

/* The state after the pops before @tau (cut @w): free times, touched tasks, and the busy
 * intervals still running (into @busy, sorted). */
static void cut(Steady *c, int w, SimTime tau, GArray *busy) {
  const SimTaskGraph *rg = c->rg;
  const SimFold *fold = c->folds->task;
  const uint32_t *res = (const uint32_t *)rg->task_resources->data;
  uint32_t *ended = c->cuts.ended[w];
  SimTime *latest = c->cuts.latest[w], *free_at = c->cuts.free_at[w];
  memset(ended, 0, sizeof(uint32_t) * c->R);
  memset(latest, 0, sizeof(SimTime) * c->R);
  memset(free_at, 0, sizeof(SimTime) * (gsize)rg->num_resources);
  g_array_set_size(busy, 0);
  for (uint32_t x = 0; x < c->R; x++) {
    /* (a task popped before the cut that ends by it, with its chain, and whose successors pop
     * before it, leaves nothing the clamped state sees) */
    if (c->key[x] >= tau || c->reach[x] < tau) continue;
    SimTime end = task_end(c, x), start = c->s->start[x];
    if (fold[x].owner != NONE) {
      uint32_t r = fold[x].stream;
      free_at[r] = MAX(free_at[r], end);
      if (end > tau && end > start) g_array_append_val(busy, ((Busy){r, rel(start, tau), end - tau}));
      continue;
    }
    const SimTask *t = sim_task_graph_task(rg, x);
    for (uint16_t k = 0; k < t->nres; k++) {
      uint32_t r = res[t->res_begin + k];
      free_at[r] = MAX(free_at[r], end);
      gboolean held = !(t->kind == SIM_TASK_COMM || t->kind == SIM_TASK_GRAD_SYNC) ||
                      r >= sim_stream_resources(rg->num_devices) ||
                      sim_resource_stream_of(r) != SIM_STREAM_COMPUTE; /* (the breakdown's) */
      if (held && end > tau && end > start)
        g_array_append_val(busy, ((Busy){r, rel(start, tau), end - tau}));
    }
    if (c->rs[x] < tau)
      for (uint32_t k = rg->succ_offsets[x]; k < rg->succ_offsets[x + 1]; k++) {
        uint32_t v = rg->succ[k];
        if (c->key[v] < tau) continue;
        ended[v]++;
        latest[v] = MAX(latest[v], c->se[x]);
      }
    if (c->last[x] != NONE && c->se[x] > tau) { /* its later stretches still running */
      Running run = {busy, tau, sim_resource_compute(sim_resource_device(res[t->res_begin])), c};
      for (uint32_t y = fold[x].next; y != NONE && c->key[y] < tau; y = fold[y].next)
        sim_fold_steps(c->folds, &fold[y], c->key[y], running_end, running_stretch, &run);
    }
  }
  qsort(busy->data, busy->len, sizeof(Busy), compare_busy);
}

/* Condition (2): the states after the cuts (cut() for both) are images, @a's shifted to @b. */
static gboolean same_state(const Steady *c, SimTime a, SimTime b, const GArray *busy_a,
                           const GArray *busy_b) {
  const SimTaskGraph *rg = c->rg;
  const SimFold *fold = c->folds->task;
  uint32_t touched_a = 0, touched_b = 0, flying_a = 0, flying_b = 0;
  for (uint32_t x = 0; x < c->R; x++) {
    if (c->key[x] < b && c->rs[x] >= b) flying_b++;
    if (c->key[x] >= b && (c->cuts.ended[1][x] > 0 || rg->indegree[x] == 0) && fold[x].owner == NONE)
      touched_b++;
    uint32_t y = c->sig[x];
    if (c->key[x] < a && c->rs[x] >= a) { /* a chain in flight: its image at b, as far on */
      flying_a++;
      if (y == NONE || c->key[y] >= b || c->rs[y] < b) return FALSE;
      uint32_t u = fold[x].next, v = fold[y].next;
      for (; u != NONE && c->key[u] < a; u = fold[u].next, v = fold[v].next)
        if (v == NONE || c->sig[u] != v || c->key[v] >= b) return FALSE;
      if (u == NONE || v == NONE || c->sig[u] != v || c->key[u] - a != c->key[v] - b) return FALSE;
      /* the ends its later steps join that are known at the cut */
      for (uint32_t j = u; j != NONE; j = fold[j].next) {
        uint32_t jv = c->sig[j];
        if (jv == NONE) return FALSE;
        for (uint32_t st = fold[j].step; st < fold[j].step + fold[j].nsteps; st++) {
          uint32_t z = c->folds->steps[st].join;
          if (z == NONE || c->key[z] >= a) continue;
          uint32_t zv = c->sig[z];
          if (zv == NONE || c->key[zv] >= b || rel(task_end(c, z), a) != rel(task_end(c, zv), b))
            return FALSE;
        }
      }
      continue;
    }
    if (c->key[x] < a || fold[x].owner != NONE) continue;
    if (c->cuts.ended[0][x] == 0 && rg->indegree[x] > 0) continue;
    touched_a++;
    if (y == NONE || c->key[y] < b) return FALSE;
    SimPeriodTouched tx = {rg->indegree[x], c->cuts.ended[0][x], c->key[x], c->cuts.latest[0][x]};
    SimPeriodTouched ty = {rg->indegree[y], c->cuts.ended[1][y], c->key[y], c->cuts.latest[1][y]};
    if (!sim_period_same_touched(&tx, a, &ty, b, c->mb[x] >= 0)) return FALSE;
  }
  if (touched_a != touched_b || flying_a != flying_b ||
      !sim_period_same_free(c->cuts.free_at[0], a, c->cuts.free_at[1], b, rg->num_resources))
    return FALSE;
  if (busy_a->len != busy_b->len) return FALSE;
  for (guint i = 0; i < busy_a->len; i++) /* (field by field: Busy has padding) */
    if (compare_busy(&g_array_index(busy_a, Busy, i), &g_array_index(busy_b, Busy, i)) != 0)
      return FALSE;
  return TRUE;
}

static gboolean same_unit(SimUnit u, SimUnit v) {
  return u.phase == v.phase && u.chunk == v.chunk && u.microbatch == v.microbatch;
}

/* Where device @u's program is cut at @tau: the unit of its first position popping at or after
 * @tau, and the offset there. */
static gboolean program_cut(const Steady *c, const DevUnits *u, SimTime tau, int *unit,
                            uint32_t *offset) {
  uint32_t k = popped_positions(c, u, tau);
  if (k >= u->end) return FALSE;
  int lo = 0, hi = u->nunits - 1; /* the last unit starting at or before k */
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (u->ustart[mid] <= k) lo = mid;
    else hi = mid - 1;
  }
  *unit = lo;
  *offset = k - u->ustart[lo];
  return TRUE;
}

/* A device whose launches the host pass walked: its walk's state before the cuts' positions is
 * the same, the later one P later (its last launch's and positions' ends, the queue's depth and
 * the ends it may still wait for): then the walk over the inserted periods repeats the one
 * between the cuts (no late launch and no wait, the walk having met none there), and the rest
 * is k's P later. */
static gboolean same_walk(const Steady *c, const DevUnits *u, SimTime a, SimTime b) {
  uint32_t d = (uint32_t)(u - c->dev), pa = popped_positions(c, u, a), pb = popped_positions(c, u, b);
  SimHostWalkState st[2] = {{0}};
  gboolean ok = sim_merge_walk_state(c->m, c->s, d, u->h0, u->j0, pa, pb, st);
  SimTime P = b - a;
  ok = ok && st[1].host_end == st[0].host_end + P && st[1].member_end == st[0].member_end + P &&
       st[1].prev_end == st[0].prev_end + P && st[1].queue_back == st[0].queue_back &&
       st[1].queued == st[0].queued;
  for (uint32_t j = 0; ok && j < st[0].queue_back; j++) ok = st[1].ends[j] == st[0].ends[j] + P;
  g_free(st[0].ends);
  g_free(st[1].ends);
  return ok;
}

/* Condition (3) for device @u, and its launches early over the N-microbatch program. */
static gboolean program_inserts(const Steady *c, const DevUnits *u, SimTime a, SimTime b) {
  if (u->first == u->end) return TRUE;
  int ua, ub;
  uint32_t oa, ob;
  if (!program_cut(c, u, a, &ua, &oa) || !program_cut(c, u, b, &ub, &ob) || oa != ob || ub <= ua)
    return FALSE;
  SimUnit image = u->units[ua];
  image.microbatch += c->p;
  if (!same_unit(u->units[ub], image)) return FALSE;
  if (!sim_period_schedule_inserts(&c->sk, u->rank, u->units, u->nunits, ua, ub, c->p, c->N))
    return FALSE;
  int i = (c->N - c->k) / c->p;
  /* the launches of that program: its positions are these with (ua, ub]'s repeated */
  const SimTaskGraph *g = c->g;
  if (!c->m->host) return TRUE;
  if (!g->block_kernels || !g->block_host) return FALSE;
  uint32_t d = (uint32_t)(u - c->dev);
  if (c->m->walked_dev && c->m->walked_dev[d]) return same_walk(c, u, a, b);
  uint32_t head = group_of(c->m, u->first);
  return sim_merge_launches_repeated(g->program_block, g->block_host, g->block_kernels,
                                     g->host_queue_depth, c->m->cum, u->first,
                                     u->ustart[ua + 1], u->ustart[ub + 1], u->end, (guint)i,
                                     c->s->start[head], FALSE);
}

static gboolean check_cuts(Steady *c, SimTime a, SimTime b, GArray *busy_a, GArray *busy_b) {
  if (!partition(c, a, b)) return FALSE;
  cut(c, 0, a, busy_a);
  cut(c, 1, b, busy_b);
  if (!same_state(c, a, b, busy_a, busy_b)) return FALSE;
  for (uint32_t d = 0; d < c->nd; d++)
    if (!program_inserts(c, &c->dev[d], a, b)) return FALSE;
  return TRUE;
}

/* Cut pairs to try: the pop time of a group heading a unit of the first device and of its
 * image, from the run's first third on. */
static gboolean search_cuts(Steady *c, SimSteady *st) {
  uint32_t d0 = 0;
  while (d0 < c->nd && c->dev[d0].nunits == 0) d0++;
  if (d0 == c->nd) return FALSE;
  const DevUnits *u = &c->dev[d0];
  g_autoptr(GArray) busy_a = g_array_new(FALSE, FALSE, sizeof(Busy));
  g_autoptr(GArray) busy_b = g_array_new(FALSE, FALSE, sizeof(Busy));
  for (int i = u->nunits / 3; i < u->nunits && st->tried < 16; i++) {
    uint32_t k = u->ustart[i];
    if (!(c->m->pflags[k] & HEAD)) continue;
    uint32_t x = group_of(c->m, k), y = c->sig[x];
    if (y == NONE || c->key[y] <= c->key[x]) continue;
    st->tried++;
    SimTime a = c->key[x], b = c->key[y];
    if (!check_cuts(c, a, b, busy_a, busy_b)) continue;
    st->cut_a = a;
    st->cut_b = b;
    return TRUE;
  }
  return FALSE;
}

gboolean sim_merge_prove_steady(Merge *m, const SimTaskGraph *rg, const SimSchedule *s,
                                const SimTime *release, const SimFolds *folds,
                                const SimTime *host_iv, const guint *host_off, SimSteady *st) {
  const MdlStrategy *strategy = st->strategy;
  const SimTaskGraph *g = m->g;
  st->proven = FALSE;
  st->tried = 0;
  int p = strategy->schedule == MDL_SCHEDULE_INTERLEAVED && strategy->virtual_stages > 1
              ? mdl_strategy_num_ranks(strategy)
              : 1;
  int k = st->built, N = strategy->num_microbatches;
  if (strategy->weight_delay || strategy->schedule == MDL_SCHEDULE_GPIPE || !g->program_block ||
      !s->log || k < 2 * p || N <= k || (N - k) % p != 0 || (m->walked && !m->walked_dev))
    return FALSE;
  Steady c = {.m = m, .g = g, .rg = rg, .s = s, .release = release, .folds = folds,
              .host_iv = host_iv, .host_off = host_off, .strategy = strategy, .sk = *strategy,
              .k = k, .N = N, .p = p, .nstages = strategy->num_stages, .R = rg->tasks->len,
              .nd = (uint32_t)g->num_devices};
  c.sk.num_microbatches = k;
  c.ng = m->head_rank[(m->C + 63) / 64];
  gsize R1 = (gsize)c.R + 1;
  c.mb = g_new(int32_t, R1);
  c.sig = g_new(uint32_t, R1);
  c.key = g_new(SimTime, R1);
  c.rs = g_new(SimTime, R1);
  c.se = g_new(SimTime, R1);
  c.contrib = g_new(SimTime, R1);
  c.last = g_new(uint32_t, R1);
  c.reach = g_new(SimTime, R1);
  c.end = g_new(SimTime, R1);
  sim_period_cuts_init(&c.cuts, R1, (gsize)rg->num_resources);
  c.dev = g_new0(DevUnits, c.nd);
  c.slot_of_block = g_new(uint32_t, 4 * (gsize)strategy->num_ops + 1);
  for (uint32_t b = 0; b < 4 * (uint32_t)strategy->num_ops; b++) {
    int phase, chunk;
    block_unit(&c, b, &phase, &chunk);
    c.slot_of_block[b] = (uint32_t)(3 * chunk + phase);
  }
  gboolean ok = TRUE;
  for (uint32_t d = 0; ok && d < c.nd; d++) ok = device_units(&c, d, &c.dev[d]);
  for (uint32_t d = 0, h = 0, j = 0; ok && d < c.nd; d++) { /* each device's heads, in order */
    DevUnits *u = &c.dev[d];
    u->h0 = h;
    u->j0 = j;
    for (uint32_t q = next_flagged(m->pflags, u->first, u->end, JOIN); q < u->end;
         q = next_flagged(m->pflags, q + 1, u->end, JOIN))
      j++;
    for (uint32_t q = next_flagged(m->pflags, u->first, u->end, HEAD); q < u->end;
         q = next_flagged(m->pflags, q + 1, u->end, HEAD))
      h++;
    u->h1 = h;
    u->hpos = g_new(uint32_t, (gsize)(u->h1 - u->h0) + 1);
    uint32_t i = 0;
    for (uint32_t q = next_flagged(m->pflags, u->first, u->end, HEAD); q < u->end;
         q = next_flagged(m->pflags, q + 1, u->end, HEAD))
      u->hpos[i++] = q;
  }
  ok = ok && label(&c) && search_cuts(&c, st);
  if (ok) {
    SimTime a = st->cut_a, b = st->cut_b, before = 0, after = 0;
    uint32_t segment = 0;
    for (uint32_t x = 0; x < c.R; x++) {
      if (c.key[x] < a) before = MAX(before, c.contrib[x]);
      else after = MAX(after, c.contrib[x]);
      segment += c.key[x] >= a && c.key[x] < b;
    }
    st->period = p;
    st->periods = (N - k) / p;
    st->makespan = MAX(before, after + (SimTime)st->periods * (b - a));
    st->reduced_segment = segment;
    st->proven = TRUE;
  }
  for (uint32_t d = 0; d < c.nd; d++) {
    g_free(c.dev[d].units);
    g_free(c.dev[d].ustart);
    g_free(c.dev[d].unit_of);
    g_free(c.dev[d].hpos);
  }
  g_free(c.dev);
  g_free(c.slot_of_block);
  g_free(c.mb);
  g_free(c.sig);
  g_free(c.key);
  g_free(c.rs);
  g_free(c.se);
  g_free(c.contrib);
  g_free(c.last);
  g_free(c.reach);
  g_free(c.end);
  sim_period_cuts_clear(&c.cuts);
  return ok;
}
