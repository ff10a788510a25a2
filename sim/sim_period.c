/* sim/period — a pipelined iteration's steady state, proven per run from its timeline.
 *
 * The engine (sim_engine.c) pops tasks by (pop time, id), a task's pop time being the latest
 * end of its dependencies (and its release); pop times never decrease. So "every pop before time
 * tau" is a prefix of the run, and the state the engine is in after it is a function of the
 * tasks popped (P(tau)) and their ends: each resource's free time, and per task not popped its
 * dependencies not yet ended and the latest end of those that have. Everything the rest of the
 * run does follows from that state and the rules of the tasks not popped (durations,
 * resources, successors, ids' order). Times at or before tau are as good as tau there (every
 * later pop is at tau or after), so the state is compared relative to its cut, clamped at it.
 *
 * Labels. A task of microbatch m (SimTask.microbatch; a launch: its kernel's) has an image one
 * period on, sigma(x): the task of microbatch m + p that is the same in everything else (kind,
 * op, tensor, collective, bytes, duration, resources; the j-th such of microbatch m maps to the
 * j-th of m + p). Tasks of the whole iteration (microbatch -1: gradient syncs, the optimizer)
 * are their own images.
 *
 * The claim. Let G_k be the graph of k microbatches and cuts a < b of its run with
 *  (1) partition: per label, the tasks of G_{k+p} are those G_k popped before b (same labels)
 *      and the images of those it had not popped at a: for each task x of microbatch m,
 *      m < p pops before b, m >= k - p pops at a or after, and x pops before a exactly when
 *      sigma(x) pops before b; no task of the whole iteration pops between a and b;
 *  (2) state: every task touched at a (not popped, with a dependency ended or none at all) has
 *      its image touched at b with the same dependencies left and the same clamped time
 *      relative to the cut, as many touched at b as at a, and every resource's clamped free
 *      time relative to the cut the same at both;
 *  (3) programs: per device, its program of G_k cut at a and b (the compute stream serves its
 *      program in order, so each cut is a position) lies at the same offset of a schedule unit
 *      and of its image, and the schedule of N = k + i p microbatches (sim_pipeline_units) is
 *      the k-microbatch one with the i images of the units between the cuts inserted.
 * Then G_{k+p} runs as G_k up to b (its tasks popped by then are G_k's, with the same rules:
 * the schedules agree there), reaching the image of G_k's state at a shifted by P = b - a,
 * over the image of G_k's unpopped tasks, whose rules are the images of theirs (the builder
 * stamps every microbatch from the same templates and chains each device by its schedule:
 * tests/test-period.c checks the result against full runs); ids keep their order under sigma
 * (compute ids are op-major, microbatch after microbatch). So its pops after b are G_k's after a,
 * P later, and at its own cuts a and b conditions (1)-(3) hold again: by induction G_N's
 * makespan is max(latest end of the tasks popped before a, latest end of the rest + i P).
 *
 * This file proves it on a full graph's plain run (what tests/test-period.c checks against
 * full runs of N microbatches); sim_merge_period.c proves it on the reduced run predictions
 * use (folded chains, the host pass, the breakdown) and shares the comparisons below. A run
 * that does not satisfy the checks (GPipe's two phases, weight delay's delayed W's keeping
 * their labels, a k too small to reach the steady state) is not extrapolated. */
#include "sim/sim_period.h"
#include "sim/sim_schedule.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

typedef struct {
  const SimTaskGraph *g;
  const SimSchedule *s;
  const MdlStrategy *strategy;
  const SimTask *tasks;
  const uint32_t *res;
  uint32_t n;
  int M, p;
  int32_t *mb;     /* per task: its microbatch (-1: the whole iteration's) */
  uint32_t *sigma; /* per task: its image one period on (NONE: none in the graph) */
  SimTime *key;    /* per task: its pop time */
  SimTime *end;
  SimPeriodCuts cuts;
} Period;

static gboolean is_host_task(const Period *c, uint32_t x) {
  const SimTaskGraph *g = c->g;
  return g->host_base != NONE && x >= g->host_base && x < g->host_base + g->num_compute;
}

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

static uint64_t task_hash(const Period *c, const SimTask *t) {
  uint32_t bytes;
  memcpy(&bytes, &t->bytes, sizeof bytes);
  uint64_t h = mix(0, t->kind);
  h = mix(h, t->collective);
  h = mix(h, ((uint64_t)t->phase << 8) | t->role);
  h = mix(h, t->link);
  h = mix(h, (uint32_t)t->op);
  h = mix(h, (uint32_t)t->tensor);
  h = mix(h, t->group_size);
  h = mix(h, bytes);
  h = mix(h, t->duration);
  h = mix(h, t->nres);
  for (uint16_t k = 0; k < t->nres; k++) h = mix(h, c->res[t->res_begin + k]);
  return h;
}

static gboolean same_rules(const Period *c, const SimTask *t, const SimTask *u) {
  if (t->kind != u->kind || t->collective != u->collective || t->phase != u->phase ||
      t->role != u->role || t->link != u->link || t->op != u->op || t->tensor != u->tensor ||
      t->group_size != u->group_size || t->duration != u->duration || t->nres != u->nres ||
      memcmp(&t->bytes, &u->bytes, sizeof t->bytes) != 0)
    return FALSE;
  return memcmp(c->res + t->res_begin, c->res + u->res_begin, sizeof(uint32_t) * t->nres) == 0;
}


/* A run of the listed tasks (consecutive in the list) of one microbatch: the builder makes each
 * microbatch's tasks of a conversion in one run, replaying the first one's (sim_build_replay.c),
 * so a run's image is the run of m + p that starts with the same rules and is as long. */
typedef struct {
  uint64_t hash;    /* of its first task's rules, its length and microbatch */
  uint32_t first, length;
  int32_t mb;
  uint32_t ordinal; /* among the runs of the same first rules, length and microbatch */
  uint32_t next;    /* the next run in its hash chain (UINT32_MAX: none) */
} Run;

static uint64_t run_hash(uint64_t rules, uint32_t length, int32_t mb) {
  return mix(mix(rules, length), (uint32_t)mb);
}

void sim_period_images(const SimTaskGraph *g, const uint32_t *ids, uint32_t n, int p,
                       int microbatches, uint32_t *image) {
  Period c = {.g = g, .tasks = (const SimTask *)g->tasks->data,
              .res = (const uint32_t *)g->task_resources->data, .p = p};
  for (uint32_t i = 0; i < n; i++) image[i] = NONE;
  g_autofree Run *run = g_new(Run, n ? n : 1);
  uint32_t nr = 0;
  for (uint32_t i = 0; i < n;) {
    int32_t mb = c.tasks[ids[i]].microbatch;
    uint32_t e = i + 1;
    while (e < n && c.tasks[ids[e]].microbatch == mb) e++;
    run[nr++] = (Run){0, i, e - i, mb, 0, NONE};
    i = e;
  }
  /* First where the runs of successive microbatches follow each other, as a conversion
   * replayed microbatch after microbatch lays them out: the image p runs as long further on. */
  g_autofree guint8 *matched = g_new0(guint8, nr + 1);
  uint32_t missing = 0;
  for (uint32_t i = 0; i < nr; i++) {
    const Run *r = &run[i];
    if (r->mb + p >= microbatches) { /* none */
      matched[i] = 1;
      continue;
    }
    uint32_t t = r->first + (uint32_t)p * r->length;
    gboolean all = t + r->length <= n;
    for (uint32_t k = 0; all && k < r->length; k++) {
      const SimTask *x = &c.tasks[ids[r->first + k]], *y = &c.tasks[ids[t + k]];
      all = y->microbatch == r->mb + p && same_rules(&c, x, y);
    }
    for (uint32_t k = 0; all && k < r->length; k++) image[r->first + k] = ids[t + k];
    matched[i] = (guint8)all;
    missing += !all;
  }
  if (missing == 0) return;
  /* The rest by key: their first task's rules (hashed), length and microbatch; the j-th run of
   * a key maps to the j-th of the key with m + p. */
  for (uint32_t i = 0; i < nr; i++) run[i].hash = task_hash(&c, &c.tasks[ids[run[i].first]]);
  uint32_t size = 16;
  while (size < 2 * nr) size *= 2;
  g_autofree uint32_t *bucket = g_new(uint32_t, size);
  memset(bucket, 0xff, sizeof(uint32_t) * size);
  for (uint32_t i = 0; i < nr; i++) { /* ordinals: the runs before it with the same key */
    Run *r = &run[i];
    uint32_t *at = &bucket[run_hash(r->hash, r->length, r->mb) & (size - 1)];
    for (uint32_t j = *at; j != NONE; j = run[j].next)
      if (run[j].hash == r->hash && run[j].length == r->length && run[j].mb == r->mb) {
        r->ordinal = run[j].ordinal + 1; /* (the chain holds the latest first) */
        break;
      }
    r->next = *at;
    *at = i;
  }
  for (uint32_t i = 0; i < nr; i++) {
    const Run *r = &run[i];
    if (matched[i]) continue;
    uint32_t found = NONE;
    for (uint32_t j = bucket[run_hash(r->hash, r->length, r->mb + p) & (size - 1)]; j != NONE;
         j = run[j].next)
      if (run[j].hash == r->hash && run[j].length == r->length && run[j].mb == r->mb + p &&
          run[j].ordinal == r->ordinal)
        found = j;
    if (found == NONE) continue;
    for (uint32_t k = 0; k < r->length; k++) {
      uint32_t x = ids[r->first + k], y = ids[run[found].first + k];
      if (same_rules(&c, &c.tasks[x], &c.tasks[y])) image[r->first + k] = y;
    }
  }
}

/* mb, key, end and sigma; FALSE where a task of microbatch m < k - p has no image. */
static gboolean label(Period *c) {
  const SimTaskGraph *g = c->g;
  uint32_t n = c->n;
  for (uint32_t x = 0; x < n; x++) {
    const SimTask *t = &c->tasks[x];
    c->key[x] = c->s->ready[x];
    c->end[x] = c->s->start[x] + t->duration;
    c->mb[x] = t->microbatch < 0 ? -1 : t->microbatch;
    c->sigma[x] = t->microbatch < 0 ? x : NONE;
  }
  if (g->host_base != NONE) /* a launch is its kernel's */
    for (uint32_t i = 0; i < g->num_compute; i++) c->mb[g->host_base + i] = c->mb[i];
  g_autofree uint32_t *ids = g_new(uint32_t, n ? n : 1);
  uint32_t nl = 0;
  for (uint32_t x = 0; x < n; x++)
    if (c->mb[x] >= 0 && !is_host_task(c, x)) ids[nl++] = x;
  g_autofree uint32_t *image = g_new(uint32_t, nl ? nl : 1);
  sim_period_images(g, ids, nl, c->p, c->M, image);
  for (uint32_t i = 0; i < nl; i++) c->sigma[ids[i]] = image[i];
  if (g->host_base != NONE)
    for (uint32_t i = 0; i < g->num_compute; i++)
      c->sigma[g->host_base + i] = c->sigma[i] == NONE ? NONE : g->host_base + c->sigma[i];
  for (uint32_t x = 0; x < n; x++)
    if (c->mb[x] >= 0 && c->mb[x] < c->M - c->p && c->sigma[x] == NONE) return FALSE;
  return TRUE;
}

/* The engine's state after the pops before @tau (cut @w). */
static void cut(Period *c, int w, SimTime tau) {
  const SimTaskGraph *g = c->g;
  uint32_t *ended = c->cuts.ended[w];
  SimTime *latest = c->cuts.latest[w], *free_at = c->cuts.free_at[w];
  memset(ended, 0, sizeof(uint32_t) * c->n);
  memset(latest, 0, sizeof(SimTime) * c->n);
  memset(free_at, 0, sizeof(SimTime) * (gsize)g->num_resources);
  for (uint32_t x = 0; x < c->n; x++) {
    if (c->key[x] >= tau) continue;
    const SimTask *t = &c->tasks[x];
    for (uint16_t k = 0; k < t->nres; k++) {
      uint32_t r = c->res[t->res_begin + k];
      if (c->end[x] > free_at[r]) free_at[r] = c->end[x];
    }
    for (uint32_t k = g->succ_offsets[x]; k < g->succ_offsets[x + 1]; k++) {
      uint32_t v = g->succ[k];
      if (c->key[v] < tau) continue;
      ended[v]++;
      if (c->end[x] > latest[v]) latest[v] = c->end[x];
    }
  }
}

static inline SimTime rel(SimTime t, SimTime tau) { return t > tau ? t - tau : 0; }

/* Condition (1). */
static gboolean partition(const Period *c, SimTime a, SimTime b) {
  for (uint32_t x = 0; x < c->n; x++) {
    int32_t m = c->mb[x];
    SimTime image = m >= 0 && m < c->M - c->p ? c->key[c->sigma[x]] : 0;
    if (!sim_period_label_ok(m, c->key[x], image, a, b, c->p, c->M)) return FALSE;
  }
  return TRUE;
}

/* Condition (2), from the cuts' states. */
static gboolean same_state(const Period *c, SimTime a, SimTime b) {
  const SimTaskGraph *g = c->g;
  uint32_t touched_a = 0, touched_b = 0;
  for (uint32_t x = 0; x < c->n; x++) {
    if (c->key[x] >= b && (c->cuts.ended[1][x] > 0 || g->indegree[x] == 0)) touched_b++;
    if (c->key[x] < a || (c->cuts.ended[0][x] == 0 && g->indegree[x] > 0)) continue;
    touched_a++;
    uint32_t y = c->sigma[x];
    if (y == NONE || c->key[y] < b) return FALSE;
    SimPeriodTouched tx = {g->indegree[x], c->cuts.ended[0][x], c->key[x], c->cuts.latest[0][x]};
    SimPeriodTouched ty = {g->indegree[y], c->cuts.ended[1][y], c->key[y], c->cuts.latest[1][y]};
    if (!sim_period_same_touched(&tx, a, &ty, b, c->mb[x] >= 0)) return FALSE;
  }
  return touched_a == touched_b &&
         sim_period_same_free(c->cuts.free_at[0], a, c->cuts.free_at[1], b, g->num_resources);
}

gboolean sim_period_same_touched(const SimPeriodTouched *x, SimTime a, const SimPeriodTouched *y,
                                 SimTime b, gboolean labelled) {
  uint32_t left = x->indegree - x->ended;
  if (labelled) { /* the image's dependencies are the images of x's */
    if (y->indegree - y->ended != left) return FALSE;
    if (y->ended == 0 && y->indegree > 0) return FALSE;
  }
  if (left == 0) return x->key - a == y->key - b; /* in the heap: its pop time */
  return rel(x->latest, a) == rel(y->latest, b);
}

gboolean sim_period_same_free(const SimTime *free_a, SimTime a, const SimTime *free_b, SimTime b,
                              int resources) {
  for (int r = 0; r < resources; r++)
    if (rel(free_a[r], a) != rel(free_b[r], b)) return FALSE;
  return TRUE;
}

static uint8_t unit_phase(const Period *c, const SimTask *t) {
  if (t->kind == SIM_TASK_FORWARD) return SIM_UNIT_FORWARD;
  if (t->kind == SIM_TASK_BACKWARD_WEIGHT && c->strategy->weight_delay) return SIM_UNIT_WEIGHT;
  return SIM_UNIT_BACKWARD;
}

static gboolean same_unit(SimUnit u, SimUnit v) {
  return u.phase == v.phase && u.chunk == v.chunk && u.microbatch == v.microbatch;
}

/* Condition (3) for device @d, its program cut at the cuts' positions. */
static gboolean program_inserts(const Period *c, int d, SimTime a, SimTime b, int target) {
  const SimTaskGraph *g = c->g;
  uint32_t begin = g->program_begin[d], len = g->program_begin[d + 1] - begin;
  if (len == 0) return TRUE;
  const uint32_t *prog = g->program + begin;
  /* the device's units as its program runs them, and where the cuts fall */
  g_autofree SimUnit *units = g_new(SimUnit, len);
  int nunits = 0, ua = -1, ub = -1;
  uint32_t oa = 0, ob = 0, unit_start = 0;
  for (uint32_t q = 0; q < len; q++) {
    const SimTask *t = &c->tasks[prog[q]];
    SimUnit u = {unit_phase(c, t), c->strategy->configs[t->op].stage, t->microbatch};
    if (nunits == 0 || !same_unit(units[nunits - 1], u)) {
      units[nunits++] = u;
      unit_start = q;
    }
    if (ua < 0 && c->key[prog[q]] >= a) ua = nunits - 1, oa = q - unit_start;
    if (ub < 0 && c->key[prog[q]] >= b) ub = nunits - 1, ob = q - unit_start;
  }
  if (ua < 0 || ub < 0 || oa != ob) return FALSE;
  SimUnit image = units[ua];
  image.microbatch += c->p;
  if (!same_unit(units[ub], image)) return FALSE;
  int rank = mdl_strategy_rank_of_stage(c->strategy, units[0].chunk);
  int nk = 0;
  g_autofree SimUnit *sk = sim_pipeline_units(c->strategy, rank, &nk);
  if (nk != nunits) return FALSE; /* the program is the schedule's units, stamped */
  for (int q = 0; q < nk; q++)
    if (!same_unit(sk[q], units[q])) return FALSE;
  return sim_period_schedule_inserts(c->strategy, rank, units, nunits, ua, ub, c->p, target);
}

gboolean sim_period_schedule_inserts(const MdlStrategy *strategy, int rank, const SimUnit *units,
                                     int nunits, int ua, int ub, int p, int target) {
  MdlStrategy longer = *strategy;
  longer.num_microbatches = target;
  int nn = 0;
  g_autofree SimUnit *sn = sim_pipeline_units(&longer, rank, &nn);
  /* sn == units[0 .. ua] ++ S ++ sigma S ++ .. ++ sigma^i S ++ sigma^i units[ub + 1 ..], S the
   * units (ua, ub] */
  int i = (target - strategy->num_microbatches) / p, seg = ub - ua;
  if (nn != nunits + i * seg) return FALSE;
  int at = 0;
  for (int q = 0; q <= ua; q++)
    if (!same_unit(sn[at++], units[q])) return FALSE;
  for (int j = 0; j <= i; j++)
    for (int q = ua + 1; q <= ub; q++) {
      SimUnit u = units[q];
      u.microbatch += j * p;
      if (!same_unit(sn[at++], u)) return FALSE;
    }
  for (int q = ub + 1; q < nunits; q++) {
    SimUnit u = units[q];
    u.microbatch += i * p;
    if (!same_unit(sn[at++], u)) return FALSE;
  }
  return TRUE;
}

static gboolean check_cuts(Period *c, SimTime a, SimTime b, int target) {
  if (!partition(c, a, b)) return FALSE;
  cut(c, 0, a);
  cut(c, 1, b);
  if (!same_state(c, a, b)) return FALSE;
  for (int d = 0; d < c->g->num_devices; d++)
    if (!program_inserts(c, d, a, b, target)) return FALSE;
  return TRUE;
}

static void finish(const Period *c, SimTime a, SimTime b, int target, SimPeriodProof *out) {
  SimTime before = 0, after = 0;
  uint32_t segment = 0;
  for (uint32_t x = 0; x < c->n; x++) {
    if (c->key[x] < a) before = MAX(before, c->end[x]);
    else after = MAX(after, c->end[x]);
    segment += c->key[x] >= a && c->key[x] < b;
  }
  out->period = c->p;
  out->periods = (target - c->M) / c->p;
  out->cut_a = a;
  out->cut_b = b;
  out->length = b - a;
  out->segment = segment;
  out->makespan = MAX(before, after + (SimTime)out->periods * (b - a));
}

/* Cut pairs to try: the key of the first task of each unit of the first device's program and
 * of its image, from the middle of the run on. */
static gboolean search_cuts(Period *c, int target, SimPeriodProof *out) {
  const SimTaskGraph *g = c->g;
  int d0 = 0;
  while (d0 < g->num_devices && g->program_begin[d0 + 1] == g->program_begin[d0]) d0++;
  if (d0 == g->num_devices) return FALSE;
  const uint32_t *prog = g->program + g->program_begin[d0];
  uint32_t len = g->program_begin[d0 + 1] - g->program_begin[d0];
  for (uint32_t q = 0; q < len; q++) {
    uint32_t x = prog[q];
    if (q > 0 && c->mb[prog[q - 1]] == c->mb[x] && c->tasks[prog[q - 1]].kind == c->tasks[x].kind)
      continue; /* not a unit's first */
    uint32_t y = c->sigma[x];
    if (y == NONE || c->key[y] <= c->key[x]) continue;
    out->tried++;
    if (check_cuts(c, c->key[x], c->key[y], target)) {
      finish(c, c->key[x], c->key[y], target, out);
      return TRUE;
    }
  }
  return FALSE;
}

gboolean sim_period_extrapolate(const SimTaskGraph *g, const SimSchedule *s,
                                const MdlStrategy *strategy, int target, SimPeriodProof *out) {
  g_return_val_if_fail(g && s && strategy && out, FALSE);
  out->tried = 0;
  int M = strategy->num_microbatches;
  if (!g->program || !g->succ_offsets || target < M || s->num_tasks != g->tasks->len)
    return FALSE;
  /* the period: a group of P microbatches under the interleaved schedule, one otherwise */
  int p = strategy->schedule == MDL_SCHEDULE_INTERLEAVED && strategy->virtual_stages > 1
              ? mdl_strategy_num_ranks(strategy)
              : 1;
  if ((target - M) % p != 0 || M < 2 * p) return FALSE;
  uint32_t n = g->tasks->len;
  Period c = {.g = g, .s = s, .strategy = strategy, .tasks = (const SimTask *)g->tasks->data,
              .res = (const uint32_t *)g->task_resources->data, .n = n, .M = M, .p = p};
  c.mb = g_new(int32_t, n);
  c.sigma = g_new(uint32_t, n);
  c.key = g_new(SimTime, n);
  c.end = g_new(SimTime, n);
  sim_period_cuts_init(&c.cuts, n, (gsize)g->num_resources);
  gboolean ok = label(&c) && search_cuts(&c, target, out);
  g_free(c.mb);
  g_free(c.sigma);
  g_free(c.key);
  g_free(c.end);
  sim_period_cuts_clear(&c.cuts);
  return ok;
}

void sim_period_cuts_init(SimPeriodCuts *cuts, gsize tasks, gsize resources) {
  for (int w = 0; w < 2; w++) {
    cuts->ended[w] = g_new(uint32_t, tasks + 1);
    cuts->latest[w] = g_new(SimTime, tasks + 1);
    cuts->free_at[w] = g_new(SimTime, resources + 1);
  }
}

void sim_period_cuts_clear(SimPeriodCuts *cuts) {
  for (int w = 0; w < 2; w++) {
    g_free(cuts->ended[w]);
    g_free(cuts->latest[w]);
    g_free(cuts->free_at[w]);
  }
}
