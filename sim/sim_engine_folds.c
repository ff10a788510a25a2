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
 * lists).
 *
 * Layout. What a pop reads of a task (its duration, resource, fold links, ready time or heap
 * entry, successors or steps, start) is gathered into one 48-byte Node per task, in one
 * sequential pass over the graph and the folds before the run. The graph's own arrays are
 * laid out for building (a chain's collectives lie a microbatch count apart: 192 ids in the
 * 175B bench point, a different page of each array), and the run's cost was the dependent
 * misses on 7-8 of them per pop; a successor's Node is touched when it is pushed (its ready
 * time and remaining count), so its pop finds it in the cache. What is left of the run's time
 * (175B bench point, 2026-11-25) is mostly the walk over a chain's collectives in reserve and
 * the successors' Nodes in succeed; tried there and not kept, each measured no better in
 * alternated runs: prefetching the next pop's successors' Nodes, or a pushed task's
 * successors' Nodes, a table of each collective's next-but-one for the walk, a 40-byte Node
 * (start left in SimSchedule.start), and the arrays without huge-page hints (the first run
 * then paid ~14 ms here instead of ~10, the median ~7.2 instead of ~6.4; the hints were
 * removed since: sim/sim_graph.c has the later measurements). Also tried
 * (engine7, 2026-11-25) and not kept: each chain's collectives laid out side by side in a
 * second Node array (slotted in the order of their steps, which is each chain's; the heap's
 * tie-break still the task id, the slot carried in the entry's padding; joins remapped in a
 * copy of the steps; starts written back after the run). Predictions stayed bit for bit
 * (test-merge, golden), but the engine's median went 5.1-5.7 -> 6.3-6.6 ms CPU (two A/B
 * pairs, 21 runs each, 175B point): the walk's loop still took ~9% of the engine's samples
 * with its Nodes consecutive (so its cost is the loop's dependent arithmetic, not misses),
 * while the slotting passes, the steps' copy and the new arrays' page faults (clear_page
 * rose from 2.6 to 4.7% of the process) added more than the walk lost. A layout change must
 * come from the producer (merging emitting the reduced ids in that order), not a pass here.
 * Also tried (engine9, 2026-12-01) and not kept: replaying chain shapes. On the 175B point
 * the 17,867 chains are 6 shapes up to their ids, each is walked once (56,052 reservations),
 * and every chain's streams were free by the time its first collective on each forks, the
 * condition under which its reservations are its shape's walk from time 0 shifted by its
 * first stretch's end. gather filed each collective, in id order, in a trie of what the walk
 * reads (ids and joins relative to the chain: 471 nodes, 106 distinct walks) and reserve
 * wrote the shape's starts, forks and stretches without reading the collectives: predictions
 * bit for bit, every chain replayed, but filing cost more than the walk it replaced
 * (cachegrind, 4 predictions: engine 92.2 M -> 120.8 M instructions; engine median +3.0 to
 * +5.4 ms CPU in 6 alternated pairs). Filing only the collectives' own fields (the steps,
 * contiguous per chain, checked in reserve instead) with recently matched trie nodes first:
 * 113.6 M, +0.9 to +5.2 ms in 5 pairs. Matching a chain exactly reads what walking it reads
 * and no chain is walked twice: a shape pays only if the producer (merging, which stamps
 * chains from templates) names it, and even then little: writing a shape's reservations
 * (log entries, stretches, starts) took 5.3 M instructions a prediction against the walk's
 * 7.9 M, so the bound is ~2.6 M of the engine's ~29 M unless what is written shrinks too. Half the chains' collectives descend in id (stride
 * -192), which the stride hint in reserve skips (next > x); following descending strides
 * too measured -0.3 ms engine median over 10 alternated pairs (spread -1.4 to +2.8 ms), then
 * +0.46 ms over 16 more (13 of them slower): not kept.
 *
 * Tried (tmpl-engine, 2026-12-02, commit 10ef142, reverted) and not kept: no log; the engine
 * lists each device stream's busy intervals itself, in the plain run's pop order, for the
 * breakdown to read as they are. Per prediction (callgrind, 175B interleaved point, 3
 * predictions / 3): the engine 37.8 M over 61k heap pops, 56k reservations, 74k folded
 * collectives; the breakdown 22.6 M: its pass over the log 9.3 M (117k entries, 68k
 * stretches: ~50 instructions an item), insertion sorts 1.3 M, the unions 6.6 M, exposed_time
 * 4.2 M, measures 0.7 M. Per used device: compute 2.3-2.7k intervals after joining touching
 * ones, the comm stream 5.2-5.4k, p2p 1.1-1.5k, dp 2, host waits 2. Listing at application
 * (settle) through a stage: engine 50.5 M, breakdown 11.7 M, total +0.7%. Listing when
 * reserved (a withdrawal, ~5 a prediction, truncates the compute list and empties the
 * collective's slot; anything else listed on that compute stream meanwhile would make the
 * lists again from the finished schedule, never on the 4 bench points), lists sized in
 * gather: engine 46.2 M, breakdown 11.6 M, total 256.8 -> 254.3 M (-1.0%); predictions bit
 * for bit. The scatter moved rather than went: an append costs about what a 48-byte log
 * record and reading it back did, and a reservation must keep what its withdrawal restores.
 * What is left of the breakdown is interval algebra on those lists (~11.5 M), which per-chain
 * summaries cannot replace: about half of the comm stream's busy time is not under compute
 * (per device 2.15e12 ps busy, 1.05e12 exposed) and it overlaps the p2p stream (the union
 * of 5.2k and 1.5k intervals has 5.4-5.9k), so each chain's collectives still meet the other
 * streams one interval at a time. Not tried: a chain's last collective reserved too (one
 * pop a chain instead of two): its pop is 17.9k of the 61k, ~4 M at most, and a withdrawal
 * would then have to undo its successors' ready times (maxima: their old values kept). */
#include "sim/sim-int.h"
#include "sim/sim_engine-int.h"

#define NONE UINT32_MAX
#define NEVER G_MAXUINT64 /* no entry of the collective in the heap */

/* A task as the run reads it (48 bytes). */
typedef struct {
  SimTime duration;
  SimTime key;       /* a folded collective: the time of its valid heap entry (NEVER: none; a
                        reservation's time is its log entry's fork); another task: its ready
                        time so far (its dependencies' latest end) */
  SimTime start;     /* once popped or reserved; before, another task's release (or 0) */
  uint32_t res;      /* one resource: that resource; more: the first in task_resources */
  uint16_t nres;
  uint8_t kind;
  uint8_t folded;
  uint32_t next;     /* SimFold.next */
  uint32_t link;     /* a folded collective: its chain (SimFold.owner); another task: its
                        dependencies not yet ended */
  uint32_t first;    /* a folded collective: its first step; another task: its first successor
                        in the graph's succ */
  uint32_t count;    /* and how many */
} Node;
G_STATIC_ASSERT(sizeof(Node) == 48);

typedef struct {
  uint32_t at, end; /* its pending reservations: SimSchedule.log[at, end) (at == end: none) */
} Flight;

typedef struct {
  const SimTaskGraph *g;
  const uint32_t *res;
  const SimFoldStep *steps;
  Node *node;
  SimSchedule *s;
  SimTime *free_at;
  uint32_t *pending; /* per resource: reservations not yet applied */
  Flight *flight;    /* per device */
  HeapEntry *heap;
  uint32_t heap_size, done, streams;
  uint32_t nstretch, stretch_cap; /* SimSchedule.stretch: pairs written, room */
  uint32_t withdrawn; /* the first withdrawn entry of the order (done: none) */
} Run;

static inline gboolean key_less(SimTime t, uint32_t a, SimTime u, uint32_t b) {
  return t < u || (t == u && a < b);
}

/* The Nodes from the graph, the folds and the releases; pushes the tasks ready at once. */
static void gather(Run *r, const SimFolds *folds, const SimTime *release) {
  const SimTaskGraph *g = r->g;
  const SimTask *tasks = (const SimTask *)g->tasks->data;
  const SimFold *fold = folds->task;
  uint32_t n = g->tasks->len;
  for (uint32_t i = 0; i < n; i++) {
    const SimFold *f = &fold[i];
    Node *v = &r->node[i];
    v->next = f->next;
    if (f->owner != NONE) { /* all from its fold: the graph's entries of the collectives, most
                               of a reduced graph's tasks, are not read (SimFold) */
      v->duration = f->duration;
      v->res = f->stream;
      v->nres = 1;
      v->kind = SIM_TASK_COMM; /* as a reservation logs it (the breakdown reads only whether
                                  a pop is communication) */
      r->s->ready[i] = 0; /* (its fork's end once it pops or is reserved: SimSchedule.ready) */
      v->folded = 1;
      v->key = NEVER;
      v->start = 0;
      v->link = f->owner;
      v->first = f->step;
      v->count = f->nsteps;
    } else {
      const SimTask *t = &tasks[i];
      v->duration = t->duration;
      v->res = t->nres == 1 ? r->res[t->res_begin] : t->res_begin;
      v->nres = t->nres;
      v->kind = t->kind;
      v->folded = 0;
      v->key = 0;
      v->start = release ? release[i] : 0;
      v->link = g->indegree[i];
      v->first = g->succ_offsets[i];
      v->count = g->succ_offsets[i + 1] - v->first;
      if (v->link == 0) { /* others get theirs when their last dependency ends (succeed) */
        r->s->ready[i] = 0;
        heap_push(r->heap, &r->heap_size, (HeapEntry){v->start, i});
      }
    }
  }
}

/* A task's resources: its one (in its Node) or its run in the graph's task_resources. */
static inline const uint32_t *resources_of(const Run *r, const Node *v) {
  return v->nres == 1 ? &v->res : r->res + v->res;
}

/* A step's compute stretch, kept for the breakdown (SimSchedule.stretch), which then reads
 * them in order instead of timing the steps again from scattered collectives. */
static inline void keep_stretch(Run *r, SimTime from, SimTime to) {
  if (r->nstretch == r->stretch_cap) {
    r->stretch_cap = 2 * r->stretch_cap + 64;
    r->s->stretch = g_renew(SimTime, r->s->stretch, 2 * (gsize)r->stretch_cap);
  }
  r->s->stretch[2 * r->nstretch] = from;
  r->s->stretch[2 * r->nstretch++ + 1] = to;
}

/* Where the chain is after folded collective @v's steps, from @t (its fork's end): each step
 * waits for the end of the collective it joins (timed already: forked before), then computes;
 * sim_fold_steps on the Nodes, keeping the stretches (one that starts where the last one
 * kept here ends, a join that did not wait, extends it: same union, fewer intervals). */
static inline SimTime fold_steps(Run *r, const Node *v, SimTime t) {
  SimTime open = NEVER; /* the end of the last stretch kept here */
  for (uint32_t k = v->first; k < v->first + v->count; k++) {
    const SimFoldStep *st = &r->steps[k];
    if (st->join != NONE) {
      const Node *y = &r->node[st->join];
      t = MAX(t, y->start + y->duration);
    }
    if (st->duration) {
      if (t == open) r->s->stretch[2 * r->nstretch - 1] = t + st->duration;
      else keep_stretch(r, t, t + st->duration);
      open = t + st->duration;
    }
    t += st->duration;
  }
  /* the device's next chain's steps follow these (steps are in program order): fetched for
   * its pop, some sixteen pops on (a device after another), which the hardware's stream
   * prefetchers do not follow across so many streams */
  __builtin_prefetch(&r->steps[v->first + v->count]);
  __builtin_prefetch(&r->steps[v->first + v->count + 4]);
  return t;
}

/* Appends @id's pop (its Node @v, started at @start; a folded collective forked at @fork, its
 * stretches from @stretch on) to the order and the log (SimSchedule.log). */
static inline void log_pop(Run *r, uint32_t id, const Node *v, SimTime start, SimTime fork,
                           uint32_t stretch) {
  const uint32_t *rr = resources_of(r, v);
  uint32_t nstretches = r->nstretch - stretch;
  r->s->order[r->done] = id;
  r->s->log[r->done++] = (SimPop){start, v->duration, fork, id, v->nres > 1 ? v->res : 0,
                                  v->nres ? rr[0] : NONE, v->nres, v->kind, v->folded, stretch,
                                  nstretches};
  for (uint16_t k = 0; k < v->nres; k++) r->s->count[rr[k] + 1]++; /* SimSchedule.count */
  if (nstretches) r->s->count[sim_resource_compute(sim_resource_device(rr[0])) + 1] += nstretches;
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
 * stretch absorbs a delay); an entry at another time is then stale (Node.key). */
static inline void push_fold(Run *r, uint32_t x, SimTime t) {
  Node *v = &r->node[x];
  if (v->key == t) return;
  v->key = t;
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
  r->node[x].key = log[i].fork;
  heap_push(r->heap, &r->heap_size, (HeapEntry){log[i].fork, x}); /* at its own pop time */
  for (uint32_t j = i; j < f->end; j++) {
    r->pending[log[j].res0]--;
    r->s->count[log[j].res0 + 1]--; /* out of SimSchedule.count: one resource, its stretches */
    r->s->count[sim_resource_compute((int)d) + 1] -= log[j].nstretches;
    r->s->order[j] = NONE;
    r->withdrawn = MIN(r->withdrawn, j);
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
  uint32_t x = r->node[c].next;
  SimTime t = end;
  if (f->at == f->end) { /* no chain of the device in flight (the next waits for it) */
    f->at = r->done;
    for (Node *v = &r->node[x]; v->next != NONE; x = v->next, v = &r->node[x]) {
      __builtin_prefetch(&r->node[v->next]);
      /* and the one after by the stride so far (a chain's collectives are mostly evenly
       * spaced: one per op, each op's microbatches side by side); only a hint */
      uint32_t ahead = 2 * v->next - x;
      if (v->next > x && ahead < r->g->tasks->len) __builtin_prefetch(&r->node[ahead]);
      uint32_t rr = v->res; /* a folded collective's one stream */
      int k = 0;
      while (k < nown && own[k].stream != rr) k++;
      SimTime start = MAX(t, r->free_at[rr]);
      if (k < nown) start = MAX(start, own[k].end);
      else own[nown++].stream = rr;
      own[k].end = start + v->duration;
      r->s->start[x] = v->start = start;
      /* its pop as log_pop would log it (one resource, a collective) */
      uint32_t at = r->nstretch;
      SimTime fork = t;
      r->s->ready[x] = fork;
      r->pending[rr]++;
      t = fold_steps(r, v, t); /* beside it, joins, on */
      r->s->order[r->done] = x;
      r->s->log[r->done++] = (SimPop){start, v->duration, fork, x, 0, rr, 1, SIM_TASK_COMM, TRUE,
                                      at, r->nstretch - at};
      r->s->count[rr + 1]++;
      r->s->count[sim_resource_compute((int)d) + 1] += r->nstretch - at;
    }
    f->end = r->done;
  }
  push_fold(r, x, t);
  /* the successors it releases when its last collective pops */
  const Node *v = &r->node[c];
  for (uint32_t k = v->first; k < v->first + v->count; k++) __builtin_prefetch(&r->node[r->g->succ[k]]);
}

/* Task @id (its Node @v) ended at @end: its successors' ready times and remaining
 * dependencies; those whose last dependency it was are pushed at the later of their ready
 * time and their release (sim_engine_succeed on the Nodes). */
static inline void succeed(Run *r, const Node *v, SimTime end) {
  const uint32_t *succ = r->g->succ;
  for (uint32_t k = v->first; k < v->first + v->count; k++) {
    uint32_t id = succ[k];
    Node *w = &r->node[id];
    if (end > w->key) w->key = end;
    if (--w->link == 0) {
      r->s->ready[id] = w->key;
      heap_push(r->heap, &r->heap_size, (HeapEntry){MAX(w->key, w->start), id});
      /* it pops later: what it reads then is fetched meanwhile */
      __builtin_prefetch(&succ[w->first]);
      if (w->next != NONE) __builtin_prefetch(&r->node[w->next]);
    }
  }
}

SimSchedule *sim_engine_run_folded(const SimTaskGraph *g, const SimTime *release,
                                   const SimFolds *folds, GError **error) {
  uint32_t n = g->tasks->len, nd = (uint32_t)g->num_devices;
  double cpu0 = sim_thread_cpu_s();
  SimSchedule *s = g_new0(SimSchedule, 1);
  s->num_tasks = n;
  /* not zeroed: every task's start is written when it pops or is reserved, and its ready
   * time by gather or when it is pushed (a cycle leaves some unwritten: the schedule is then
   * freed) */
  s->start = g_new(SimTime, n ? n : 1);
  s->ready = g_new(SimTime, n ? n : 1);
  s->order = g_new(uint32_t, 2 * (gsize)n + 1); /* withdrawn entries stay until the end */
  s->log = g_new(SimPop, 2 * (gsize)n + 1);
  s->count = g_new0(guint, (gsize)g->num_resources + 1);
  /* stretches: about one per fold step (two per folded collective), grown if need be */
  Run r = {.g = g, .res = (const uint32_t *)g->task_resources->data, .steps = folds->steps,
           .node = g_new(Node, n ? n : 1), .s = s,
           .free_at = g_new0(SimTime, g->num_resources ? g->num_resources : 1),
           .pending = g_new0(uint32_t, g->num_resources ? g->num_resources : 1),
           .flight = g_new0(Flight, nd ? nd : 1), .heap = g_new(HeapEntry, n ? n : 1),
           .streams = sim_stream_resources(g->num_devices), .stretch_cap = 2 * n + 64,
           .withdrawn = UINT32_MAX};
  s->stretch = g_new(SimTime, 2 * (gsize)r.stretch_cap);
  gather(&r, folds, release);
  Node *node = r.node;
  SimTime *free_at = r.free_at;
  while (r.heap_size > 0) {
    HeapEntry top = heap_pop(r.heap, &r.heap_size);
    uint32_t id = top.task;
    Node *v = &node[id];
    if (v->folded) { /* a folded collective: its entry, unless stale */
      if (top.time != v->key) continue;
      v->key = NEVER;
      s->ready[id] = top.time; /* its fork's end */
    }
    const uint32_t *rr = resources_of(&r, v);
    for (uint16_t k = 0; k < v->nres; k++) /* the reservations before it, first */
      if (rr[k] < r.streams) {
        uint32_t d = (uint32_t)sim_resource_device(rr[k]);
        if (r.flight[d].at != r.flight[d].end) settle(&r, d, top.time, id);
      }
    SimTime start = top.time;
    for (uint16_t k = 0; k < v->nres; k++)
      if (free_at[rr[k]] > start) start = free_at[rr[k]];
    SimTime end = start + v->duration;
    for (uint16_t k = 0; k < v->nres; k++) {
      free_at[rr[k]] = end;
      if (r.pending[rr[k]]) check_pending(&r, (uint32_t)sim_resource_device(rr[k]), rr[k], end);
    }
    s->start[id] = v->start = start;
    const Node *chain = v;
    uint32_t at = r.nstretch;
    if (v->folded) { /* the chain goes on beside it, joins it, goes on (SimFold) */
      chain = &node[v->link];
      end = fold_steps(&r, v, top.time);
    }
    log_pop(&r, id, v, start, top.time, at);
    if (v->next != NONE) { /* a chain with folded collectives goes on */
      if (!v->folded && v->nres == 1 && rr[0] < r.streams) {
        reserve(&r, id, (uint32_t)sim_resource_device(rr[0]), end);
      } else { /* the plain way */
        push_fold(&r, v->next, end);
      }
      continue;
    }
    if (end > s->makespan) s->makespan = end;
    succeed(&r, chain, end);
  }
  /* the withdrawn reservations' entries out of the order (those before the first stay; the
   * log keeps them, marked) */
  uint32_t kept = MIN(r.withdrawn, r.done);
  for (uint32_t k = kept; k < r.done; k++)
    if (s->order[k] != NONE) s->order[kept++] = s->order[k];
  s->nlog = r.done;
  s->events = kept;
  g_free(r.node);
  s->cpu_s = sim_thread_cpu_s() - cpu0; /* its working arrays freed below: not much */
  g_free(r.free_at);
  g_free(r.pending);
  g_free(r.flight);
  g_free(r.heap);
  return sim_engine_checked(s, kept, n, error);
}
