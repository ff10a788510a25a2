/* sim/engine_folds — the engine over a reduced graph whose chains run folded collectives
 * (SimFolds, sim_merge.c), with each chain's collectives but its last timed when the chain pops.
 *
 * The plain way: a chain c with folded collectives x1 .. xn pops, runs its first stretch,
 * pushes x1 at the stretch's end T1; x1 pops at T1, starts when its stream is free, the chain
 * goes on beside it through x1's steps (each waits for the collective joining there, timed
 * already: forked before) and pushes x2 at T2 > T1 (x2's fork's end), and so on; xn's pop
 * releases the chain's successors. That is n + 1 pops per chain, and on a transformer most
 * of a reduced graph's tasks are such collectives (GPT-3 175B, tp=8, pp=16, vp=2: 73919 of
 * 117010).
 *
 * Here, when c pops, x1 .. x(n-1) are timed at once ("reserved"): xi pops at Ti (the plain
 * run's time, known once x(i-1)'s start is), starts at max(Ti, the free time of its stream as
 * far as the run knows it then, the chain's earlier reservations on that stream included);
 * xn is pushed at Tn as the plain run pushes it, and its pop ends the chain. The reservations
 * are the plain run's as long as no other task takes their stream in between: a task y popped
 * on stream r at key (t, y) (time, id: the heap's order) comes, in the plain run, after every
 * reserved collective with a smaller key and before the others (the "pending" ones: each xi is
 * in the plain run's heap from T(i-1) < Ti on, collectives lasting more than zero, so the order
 * of equal times is by id as here). So before y starts, the reservations before it are applied
 * to their streams' free times (y starts as in the plain run), and after, y must end no later
 * than the first pending reservation on r starts: otherwise that collective would wait for y,
 * and the chain is given back to the plain way from it ("withdrawn": it is pushed at its Ti,
 * the later reservations dropped; xn's early entry stands if the chain comes back to its time,
 * a beside stretch absorbing the delay, and is ignored otherwise; nothing else was decided
 * from them, as the chain's successors wait for xn). Streams are per device and a device
 * runs one chain at a time (the next waits for this one's end), so the pending reservations
 * are one range of the log per device (Flight). Pops, starts and ends are the plain run's; so
 * are the successors' ready times, which is what sim_merge.c reads.
 *
 * SimSchedule.order and .log list the reserved collectives right after their chain (withdrawn
 * ones where they popped instead): per resource it is start order except that a task fitting
 * before a pending reservation on its stream comes after it (sim_breakdown_sums sorts such
 * lists). */
#include "sim/sim-int.h"
#include "sim/sim_engine-int.h"

#define NONE UINT32_MAX
#define NEVER G_MAXUINT64 /* no entry of the collective in the heap */

typedef struct {
  uint32_t at, end; /* its pending reservations: SimSchedule.log[at, end) (at == end: none) */
} Flight;

typedef struct {
  const SimTaskGraph *g;
  const SimTask *tasks;
  const uint32_t *res;
  const SimFold *fold;
  const SimFolds *folds;
  SimSchedule *s;
  SimTime *free_at;
  SimTime *expect;   /* per folded collective: the time its valid heap entry has (NEVER:
                        none; a reservation's time is its log entry's fork) */
  uint32_t *pending; /* per resource: reservations not yet applied */
  Flight *flight;    /* per device */
  HeapEntry *heap;
  uint32_t heap_size, done, streams;
  uint32_t nstretch, stretch_cap; /* SimSchedule.stretch: pairs written, room */
} Run;

static inline gboolean key_less(SimTime t, uint32_t a, SimTime u, uint32_t b) {
  return t < u || (t == u && a < b);
}


/* Appends @id's pop (started at @start; a folded collective forked at @fork, its stretches
 * from @stretch on) to the order and the log (SimSchedule.log). */
static inline void log_pop(Run *r, uint32_t id, SimTime start, SimTime fork, uint32_t stretch) {
  const SimTask *t = &r->tasks[id];
  r->s->order[r->done] = id;
  r->s->log[r->done++] = (SimPop){start, t->duration, fork, id, t->res_begin,
                                  t->nres ? r->res[t->res_begin] : NONE, t->nres, t->kind,
                                  r->fold[id].owner != NONE, stretch, r->nstretch - stretch};
}

/* A folded collective's end, once it is timed (popped or reserved): sim_fold_steps's reader. */
static SimTime end_of(void *ctx, uint32_t y) {
  const Run *r = ctx;
  return r->s->start[y] + r->fold[y].duration;
}

/* Its writer: a step's compute stretch, kept for the breakdown (SimSchedule.stretch), which
 * then reads them in order instead of timing the steps again from scattered collectives. */
static void keep_stretch(void *ctx, SimTime from, SimTime to) {
  Run *r = ctx;
  if (r->nstretch == r->stretch_cap) {
    r->stretch_cap = 2 * r->stretch_cap + 64;
    r->s->stretch = g_renew(SimTime, r->s->stretch, 2 * (gsize)r->stretch_cap);
  }
  r->s->stretch[2 * r->nstretch] = from;
  r->s->stretch[2 * r->nstretch++ + 1] = to;
}

/* Applies device @d's reservations that pop before (@t, @id) in the plain run. */
static void settle(Run *r, uint32_t d, SimTime t, uint32_t id) {
  Flight *f = &r->flight[d];
  for (; f->at < f->end && key_less(r->s->log[f->at].fork, r->s->log[f->at].id, t, id); f->at++) {
    const SimPop *e = &r->s->log[f->at];
    SimTime end = e->start + e->duration;
    if (end > r->free_at[e->res0]) r->free_at[e->res0] = end;
    r->pending[e->res0]--;
  }
}

/* Pushes folded collective @x at @t unless an entry at @t is in the heap already (a
 * withdrawn chain may come back to the time its last collective was pushed at: a beside
 * stretch absorbs a delay); an entry at another time is then stale (expect). */
static inline void push_fold(Run *r, uint32_t x, SimTime t) {
  if (r->expect[x] == t) return;
  r->expect[x] = t;
  heap_push(r->heap, &r->heap_size, (HeapEntry){t, x});
}

/* A task on stream @rr of device @d ended at @end: withdraws the reservations from the first
 * pending one on @rr if it would have waited for that task. */
static void check_pending(Run *r, uint32_t d, uint32_t rr, SimTime end) {
  Flight *f = &r->flight[d];
  SimPop *log = r->s->log;
  uint32_t i = f->at;
  while (i < f->end && log[i].res0 != rr) i++;
  if (i == f->end || end <= log[i].start) return;
  uint32_t x = log[i].id;
  r->expect[x] = log[i].fork;
  heap_push(r->heap, &r->heap_size, (HeapEntry){log[i].fork, x}); /* at its own pop time */
  for (uint32_t j = i; j < f->end; j++) {
    r->pending[log[j].res0]--;
    r->s->order[j] = NONE;
    log[j].id = NONE;
  }
  f->end = i;
}

/* Chain @c popped on device @d, its first stretch ending at @end: reserves its collectives
 * but the last, pushes the last. */
static void reserve(Run *r, uint32_t c, uint32_t d, SimTime end) {
  struct {
    uint32_t stream;
    SimTime end;
  } own[SIM_STREAMS]; /* the chain's latest reservation per stream */
  int nown = 0;
  Flight *f = &r->flight[d];
  uint32_t x = r->fold[c].next;
  SimTime t = end;
  if (f->at == f->end) { /* no chain of the device in flight (the next waits for it) */
    f->at = r->done;
    for (; r->fold[x].next != NONE; x = r->fold[x].next) {
      const SimFold *fx = &r->fold[x];
      uint32_t rr = fx->stream;
      int k = 0;
      while (k < nown && own[k].stream != rr) k++;
      SimTime start = MAX(t, r->free_at[rr]);
      if (k < nown) start = MAX(start, own[k].end);
      else own[nown++].stream = rr;
      own[k].end = start + fx->duration;
      r->s->start[x] = start;
      /* its pop as log_pop would log it, from the fold alone (one resource, a collective) */
      uint32_t at = r->nstretch;
      SimTime fork = t;
      r->pending[rr]++;
      t = sim_fold_steps(r->folds, fx, t, end_of, keep_stretch, r); /* beside it, joins, on */
      r->s->order[r->done] = x;
      r->s->log[r->done++] = (SimPop){start, fx->duration, fork, x, 0, rr, 1, SIM_TASK_COMM, TRUE,
                                      at, r->nstretch - at};
    }
    f->end = r->done;
  }
  push_fold(r, x, t);
}

SimSchedule *sim_engine_run_folded(const SimTaskGraph *g, const SimTime *release,
                                   const SimFolds *folds, GError **error) {
  uint32_t n = g->tasks->len, nd = (uint32_t)g->num_devices;
  double cpu0 = sim_thread_cpu_s();
  SimSchedule *s = g_new0(SimSchedule, 1);
  s->num_tasks = n;
  s->start = g_new0(SimTime, n ? n : 1);
  s->ready = g_new0(SimTime, n ? n : 1);
  s->order = g_new(uint32_t, 2 * (gsize)n + 1); /* withdrawn entries stay until the end */
  s->log = g_new(SimPop, 2 * (gsize)n + 1);
  s->count = g_new0(guint, (gsize)g->num_resources + 1);
  /* stretches: about one per fold step (two per folded collective), grown if need be */
  Run r = {.g = g, .tasks = (const SimTask *)g->tasks->data,
           .res = (const uint32_t *)g->task_resources->data, .fold = folds->task,
           .folds = folds, .s = s,
           .free_at = g_new0(SimTime, g->num_resources ? g->num_resources : 1),
           .expect = memset(g_new(SimTime, n ? n : 1), 0xFF, sizeof(SimTime) * (n ? n : 1)),
           .pending = g_new0(uint32_t, g->num_resources ? g->num_resources : 1),
           .flight = g_new(Flight, nd ? nd : 1), .heap = g_new(HeapEntry, n ? n : 1),
           .streams = sim_stream_resources(g->num_devices), .stretch_cap = 2 * n + 64};
  s->stretch = g_new(SimTime, 2 * (gsize)r.stretch_cap);
  sim_huge_pages(s->start, sizeof(SimTime) * n);
  sim_huge_pages(s->ready, sizeof(SimTime) * n);
  sim_huge_pages(s->order, sizeof(uint32_t) * 2 * (gsize)n);
  sim_huge_pages(s->log, sizeof(SimPop) * 2 * (gsize)n);
  for (uint32_t d = 0; d < nd; d++) r.flight[d] = (Flight){0, 0};
  uint32_t *remaining = g_memdup2(g->indegree, sizeof(uint32_t) * (n ? n : 1));
  const SimTask *tasks = r.tasks;
  const uint32_t *res = r.res;
  const SimFold *fold = r.fold;
  SimTime *ready = s->ready, *free_at = r.free_at;
  for (uint32_t i = 0; i < n; i++)
    if (remaining[i] == 0 && fold[i].owner == NONE)
      heap_push(r.heap, &r.heap_size, (HeapEntry){release ? release[i] : 0, i});
  while (r.heap_size > 0) {
    HeapEntry top = heap_pop(r.heap, &r.heap_size);
    uint32_t id = top.task;
    const SimFold *f = &fold[id];
    if (f->owner != NONE) { /* a folded collective: its entry, unless stale */
      if (top.time != r.expect[id]) continue;
      r.expect[id] = NEVER;
    }
    const SimTask *t = &tasks[id];
    const uint32_t *rr = res + t->res_begin;
    for (uint16_t k = 0; k < t->nres; k++) /* the reservations before it, first */
      if (rr[k] < r.streams) {
        uint32_t d = (uint32_t)sim_resource_device(rr[k]);
        if (r.flight[d].at != r.flight[d].end) settle(&r, d, top.time, id);
      }
    SimTime start = top.time;
    for (uint16_t k = 0; k < t->nres; k++)
      if (free_at[rr[k]] > start) start = free_at[rr[k]];
    SimTime end = start + t->duration;
    for (uint16_t k = 0; k < t->nres; k++) {
      free_at[rr[k]] = end;
      if (r.pending[rr[k]]) check_pending(&r, (uint32_t)sim_resource_device(rr[k]), rr[k], end);
    }
    s->start[id] = start;
    uint32_t chain = id, at = r.nstretch;
    if (f->owner != NONE) { /* the chain goes on beside it, joins it, goes on (SimFold) */
      chain = f->owner;
      end = sim_fold_steps(folds, f, top.time, end_of, keep_stretch, &r);
    }
    log_pop(&r, id, start, top.time, at);
    if (f->next != NONE) { /* a chain with folded collectives goes on */
      if (f->owner == NONE && t->nres == 1 && rr[0] < r.streams) {
        reserve(&r, id, (uint32_t)sim_resource_device(rr[0]), end);
      } else { /* the plain way */
        push_fold(&r, f->next, end);
      }
      continue;
    }
    if (end > s->makespan) s->makespan = end;
    sim_engine_succeed(g, chain, end, ready, remaining, release, r.heap, &r.heap_size);
  }
  /* the withdrawn reservations' entries out of the order; the breakdown's sizes */
  uint32_t kept = 0;
  guint *count = s->count;
  for (uint32_t k = 0; k < r.done; k++)
    if (s->order[k] != NONE) {
      const SimPop *e = &s->log[k];
      for (uint16_t j = 0; j < e->nres; j++) count[(j ? res[e->res_begin + j] : e->res0) + 1]++;
      if (e->nstretches) count[sim_resource_compute(sim_resource_device(e->res0)) + 1] += e->nstretches;
      s->log[kept] = *e;
      s->order[kept++] = s->order[k];
    }
  s->events = kept;
  g_free(remaining);
  s->cpu_s = sim_thread_cpu_s() - cpu0; /* its working arrays freed below: not much */
  g_free(r.free_at);
  g_free(r.expect);
  g_free(r.pending);
  g_free(r.flight);
  g_free(r.heap);
  return sim_engine_checked(s, kept, n, error);
}
