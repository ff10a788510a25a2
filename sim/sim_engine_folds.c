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
 * The breakdown's busy intervals (SimSchedule.busy) are listed as the plain run pops: a
 * reservation's (its collective's and its steps' compute stretches, kept aside meanwhile) when
 * it is applied, in the order of the keys (a device's pending ones are applied before any of
 * its streams' later pops, and those left at the end after the last), a withdrawn one never,
 * the collective's own pop instead. So each stream's list is in the plain run's pop order, its
 * start order (checked as they are listed; a list found out of order is sorted at the end).
 * SimSchedule.order is that order too.
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
 * then pays ~14 ms here instead of ~10, the median ~7.2 instead of ~6.4). Also tried
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
 * +0.46 ms over 16 more (13 of them slower): not kept. */
#include "sim/sim-int.h"
#include "sim/sim_engine-int.h"
#include <string.h>

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


/* A reservation, until it is applied (settle) or withdrawn (check_pending), and what its
 * withdrawal restores: its device's compute list and latest end before its stretches. */
typedef struct {
  SimTime start, duration;
  SimTime fork;        /* its fork's end: its pop time in the plain run */
  uint32_t id;         /* NONE: withdrawn */
  uint32_t res;        /* its stream */
  uint32_t slot;       /* its interval in its stream's list (NONE: it lasts zero) */
  uint32_t compute_n;  /* the compute list's length before its stretches, */
  SimTime compute_end; /* its last interval's end then (a first stretch may extend it) */
  SimTime prev_end;    /* and Run.prev_end then */
} Reserved;

typedef struct {
  uint32_t at, end; /* its pending reservations: Run.reserved[at, end) (at == end: none) */
} Flight;

typedef struct {
  const SimTaskGraph *g;
  const uint32_t *res;
  const SimFolds *folds;
  const SimFoldStep *steps;
  Node *node;
  SimSchedule *s;
  SimTime *free_at;
  uint32_t *pending; /* per resource: reservations not yet applied */
  Flight *flight;    /* per device */
  HeapEntry *heap;
  uint32_t heap_size, done, streams;
  SimBusy *busy;       /* SimSchedule.busy */
  guint8 *unsorted;    /* per device stream: an interval listed before one it follows */
  SimTime *prev_end;   /* per device: the latest end listed on its compute stream */
  Reserved *reserved;  /* every reservation made, in the order made */
  uint32_t nreserved;
  GArray *step_pops;   /* SimStepPop */
  gboolean relist;     /* the lists are to be made again from the schedule (busy_relist) */
} Run;

static inline gboolean key_less(SimTime t, uint32_t a, SimTime u, uint32_t b) {
  return t < u || (t == u && a < b);
}

/* The Nodes from the graph, the folds and the releases; pushes the tasks ready at once; sizes
 * the busy lists (SimBusy.cap: a task's interval on each of its device streams, a folded
 * collective's steps on its device's compute stream; a withdrawn one's pop takes one more). */
static void gather(Run *r, const SimFolds *folds, const SimTime *release) {
  const SimTaskGraph *g = r->g;
  const SimTask *tasks = (const SimTask *)g->tasks->data;
  const SimFold *fold = folds->task;
  uint32_t n = g->tasks->len;
  SimBusy *busy = r->busy;
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
      r->s->ready[i] = 0; /* no dependencies (a folded collective has no edges) */
      v->folded = 1;
      v->key = NEVER;
      v->start = 0;
      v->link = f->owner;
      v->first = f->step;
      v->count = f->nsteps;
      if (f->stream < r->streams) {
        busy[f->stream].cap++;
        busy[sim_resource_compute(sim_resource_device(f->stream))].cap += f->nsteps;
      }
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
      const uint32_t *rr = r->res + t->res_begin;
      for (uint16_t k = 0; k < t->nres; k++)
        if (rr[k] < r->streams) busy[rr[k]].cap++;
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

static void busy_grow(SimBusy *b) {
  b->cap = 2 * b->cap + 64; /* (sized by gather: only after a withdrawal) */
  b->iv = g_renew(SimTime, b->iv, 2 * (gsize)b->cap);
}

/* Lists [@from, @to) on device stream @res (SimSchedule.busy) as a new interval, its index;
 * one that starts before the last marks the list for sorting. */
static inline uint32_t busy_push(Run *r, uint32_t res, SimTime from, SimTime to) {
  SimBusy *b = &r->busy[res];
  if (b->n && from < b->iv[2 * b->n - 2]) r->unsorted[res] |= 1;
  if (b->n == b->cap) busy_grow(b);
  b->iv[2 * b->n] = from;
  b->iv[2 * b->n + 1] = to;
  return b->n++;
}

/* The same, one that starts where the last ends extending it (same union, same measure). */
static inline void busy_append(Run *r, uint32_t res, SimTime from, SimTime to) {
  SimBusy *b = &r->busy[res];
  if (b->n && from == b->iv[2 * b->n - 1]) b->iv[2 * b->n - 1] = to;
  else busy_push(r, res, from, to);
}

/* Where the chain is after folded collective @v's steps, from @t (its fork's end): each step
 * waits for the end of the collective it joins (timed already: forked before), then computes;
 * sim_fold_steps on the Nodes, listing the stretches on compute stream @compute and keeping
 * its device's latest end there. */
static inline SimTime fold_steps(Run *r, const Node *v, SimTime t, uint32_t compute) {
  SimBusy *b = &r->busy[compute];
  if (b->cap - b->n < v->count) { /* (sized by gather: only after a withdrawal) */
    b->cap = 2 * b->cap + v->count;
    b->iv = g_renew(SimTime, b->iv, 2 * (gsize)b->cap);
  }
  SimTime *iv = b->iv;
  guint m = b->n;
  SimTime last = m ? iv[2 * m - 1] : NEVER; /* the list's last end */
  SimTime first = last;                     /* (its start before: the order check) */
  if (m && iv[2 * m - 2] > t) r->unsorted[compute] |= 1; /* (stretches from t on) */
  for (uint32_t k = v->first; k < v->first + v->count; k++) {
    const SimFoldStep *st = &r->steps[k];
    if (st->join != NONE) {
      const Node *y = &r->node[st->join];
      t = MAX(t, y->start + y->duration);
    }
    if (st->duration) {
      if (t != last) { /* a new interval (else the last one extends) */
        iv[2 * m] = t;
        m++;
      }
      last = t + st->duration;
      iv[2 * m - 1] = last;
    }
    t += st->duration;
  }
  b->n = m;
  SimTime *prev = &r->prev_end[sim_resource_device(compute)];
  if (last != first && last > *prev) *prev = last;
  /* the device's next chain's steps follow these (steps are in program order): fetched for
   * its pop, some sixteen pops on (a device after another), which the hardware's stream
   * prefetchers do not follow across so many streams */
  __builtin_prefetch(&r->steps[v->first + v->count]);
  __builtin_prefetch(&r->steps[v->first + v->count + 4]);
  return t;
}

/* Task @id (its Node @v, not a reservation) started at @start: its intervals listed on its
 * device streams (on a compute stream not a collective's, which holds it but is not compute),
 * its devices marked used, an optimizer step's previous end noted. A compute stream whose
 * device has reservations pending has the chain's stretches listed ahead: the lists are made
 * again at the end (Run.relist; merged graphs give a chain's compute stream to it alone). */
static inline void list_pop(Run *r, uint32_t id, const Node *v, SimTime start) {
  const uint32_t *rr = resources_of(r, v);
  SimTime end = start + v->duration;
  gboolean comm = v->kind == SIM_TASK_COMM || v->kind == SIM_TASK_GRAD_SYNC;
  for (uint16_t k = 0; k < v->nres; k++) {
    uint32_t res = rr[k];
    if (res >= r->streams) continue; /* a link (the breakdown reads device streams only) */
    uint32_t d = (uint32_t)sim_resource_device(res);
    r->s->used[d] = 1;
    if (sim_resource_stream_of(res) == SIM_STREAM_COMPUTE) {
      if (r->flight[d].at != r->flight[d].end) r->relist = TRUE;
      if (v->kind == SIM_TASK_OPTIMIZER) {
        SimStepPop p = {id, d, r->prev_end[d]};
        g_array_append_val(r->step_pops, p);
      }
      if (end > r->prev_end[d]) r->prev_end[d] = end;
      if (comm) continue;
    }
    if (v->duration) busy_append(r, res, start, end);
  }
}

/* Applies device @d's reservations that pop before (@t, @id) in the plain run: their streams'
 * free times, their places in the order (their intervals are listed already). */
static void settle(Run *r, uint32_t d, SimTime t, uint32_t id) {
  Flight *f = &r->flight[d];
  for (; f->at < f->end && key_less(r->reserved[f->at].fork, r->reserved[f->at].id, t, id); f->at++) {
    const Reserved *e = &r->reserved[f->at];
    SimTime end = e->start + e->duration;
    if (end > r->free_at[e->res]) r->free_at[e->res] = end;
    r->pending[e->res]--;
    r->s->order[r->done++] = e->id;
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
 * pending one on @rr if it would have waited for that task. Their intervals leave the lists:
 * the compute list goes back to its length before the first one's stretches (nothing else is
 * listed there meanwhile, or Run.relist), a collective's own interval becomes empty (others
 * may follow it on its stream: a task that fits before it). */
static void check_pending(Run *r, uint32_t d, uint32_t rr, SimTime end) {
  Flight *f = &r->flight[d];
  Reserved *e = r->reserved;
  uint32_t i = f->at;
  while (i < f->end && e[i].res != rr) i++;
  if (i == f->end || end <= e[i].start) return;
  uint32_t x = e[i].id;
  r->node[x].key = e[i].fork;
  heap_push(r->heap, &r->heap_size, (HeapEntry){e[i].fork, x}); /* at its own pop time */
  SimBusy *cb = &r->busy[sim_resource_compute((int)d)];
  cb->n = e[i].compute_n;
  if (cb->n) cb->iv[2 * cb->n - 1] = e[i].compute_end;
  r->prev_end[d] = e[i].prev_end;
  for (uint32_t j = i; j < f->end; j++) {
    r->pending[e[j].res]--;
    e[j].id = NONE;
    if (e[j].slot != NONE) { /* emptied, and taken out at the end (sort_busy) */
      SimTime *iv = &r->busy[e[j].res].iv[2 * (gsize)e[j].slot];
      iv[1] = iv[0];
      r->unsorted[e[j].res] |= 2;
    }
  }
  f->end = i;
}

/* Chain @c popped on device @d, its first stretch ending at @end: reserves its collectives
 * but the last (their intervals and stretches listed), pushes the last. */
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
    f->at = r->nreserved;
    uint32_t compute = sim_resource_compute((int)d);
    const SimBusy *cb = &r->busy[compute];
    for (Node *v = &r->node[x]; v->next != NONE; x = v->next, v = &r->node[x]) {
      __builtin_prefetch(&r->node[v->next]);
      /* and the one after by the stride so far (a chain's collectives are mostly evenly
       * spaced: one per op, each op's microbatches side by side); only a hint */
      uint32_t ahead = 2 * v->next - x;
      if (v->next > x && ahead < r->g->tasks->len) __builtin_prefetch(&r->node[ahead]);
      uint32_t rr = v->res; /* a folded collective's one stream */
      if ((uint32_t)sim_resource_device(rr) != d) r->relist = TRUE; /* (merged graphs: never) */
      int k = 0;
      while (k < nown && own[k].stream != rr) k++;
      SimTime start = MAX(t, r->free_at[rr]);
      if (k < nown) start = MAX(start, own[k].end);
      else own[nown++].stream = rr;
      own[k].end = start + v->duration;
      r->s->start[x] = v->start = start;
      r->pending[rr]++;
      uint32_t slot = v->duration && rr < r->streams ? busy_push(r, rr, start, start + v->duration) : NONE;
      r->reserved[r->nreserved++] = (Reserved){start, v->duration, t, x, rr, slot, cb->n,
                                               cb->n ? cb->iv[2 * cb->n - 1] : 0, r->prev_end[d]};
      t = fold_steps(r, v, t, compute); /* beside it, joins, on */
    }
    f->end = r->nreserved;
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

static SimTime fork_end(void *ctx, uint32_t x) {
  const Run *r = ctx;
  return r->node[x].start + r->node[x].duration;
}

/* The lists made again from the finished schedule (Run.relist), in the order of the pops: each
 * folded collective's stretches timed again from its fork (its chain's first stretch's end,
 * then each collective's steps' end) with the final ends of the collectives they join. */
static void busy_relist(Run *r) {
  uint32_t n = r->g->tasks->len;
  for (uint32_t res = 0; res < r->streams; res++) r->busy[res].n = 0;
  memset(r->unsorted, 0, r->streams);
  memset(r->s->used, 0, (gsize)r->g->num_devices);
  memset(r->prev_end, 0, sizeof(SimTime) * (gsize)r->g->num_devices);
  g_array_set_size(r->step_pops, 0);
  g_autofree SimTime *fork = g_new(SimTime, n ? n : 1);
  for (uint32_t c = 0; c < n; c++) {
    const Node *v = &r->node[c];
    if (v->folded || v->next == NONE) continue;
    SimTime t = v->start + v->duration;
    for (uint32_t x = v->next; x != NONE; x = r->node[x].next) {
      fork[x] = t;
      t = sim_fold_steps(r->folds, &r->folds->task[x], t, fork_end, NULL, r);
    }
  }
  for (uint32_t k = 0; k < r->done; k++) {
    uint32_t id = r->s->order[k];
    const Node *v = &r->node[id];
    if (v->folded) fold_steps(r, v, fork[id], sim_resource_compute(sim_resource_device(v->res)));
    list_pop(r, id, v, v->start);
  }
}

/* The busy lists with withdrawn intervals without them (empty: the only empty ones), those
 * found out of order put in start order (insertion). */
static void sort_busy(Run *r) {
  for (uint32_t res = 0; res < r->streams; res++) {
    if (!r->unsorted[res]) continue;
    SimTime *iv = r->busy[res].iv;
    if (r->unsorted[res] & 2) {
      guint m = 0;
      for (guint i = 0; i < r->busy[res].n; i++)
        if (iv[2 * i] != iv[2 * i + 1]) {
          iv[2 * m] = iv[2 * i];
          iv[2 * m++ + 1] = iv[2 * i + 1];
        }
      r->busy[res].n = m;
    }
    for (guint i = 1; i < r->busy[res].n; i++) {
      SimTime x0 = iv[2 * i], x1 = iv[2 * i + 1];
      guint j = i;
      for (; j > 0 && iv[2 * j - 2] > x0; j--) {
        iv[2 * j] = iv[2 * j - 2];
        iv[2 * j + 1] = iv[2 * j - 1];
      }
      iv[2 * j] = x0;
      iv[2 * j + 1] = x1;
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
  s->order = g_new(uint32_t, n ? n : 1);
  uint32_t streams = sim_stream_resources(g->num_devices);
  s->nbusy = streams;
  s->busy = g_new0(SimBusy, streams ? streams : 1);
  s->used = g_new0(guint8, nd ? nd : 1);
  Run r = {.g = g, .res = (const uint32_t *)g->task_resources->data, .folds = folds,
           .steps = folds->steps, .node = g_new(Node, n ? n : 1), .s = s,
           .free_at = g_new0(SimTime, g->num_resources ? g->num_resources : 1),
           .pending = g_new0(uint32_t, g->num_resources ? g->num_resources : 1),
           .flight = g_new0(Flight, nd ? nd : 1), .heap = g_new(HeapEntry, n ? n : 1),
           .streams = streams, .busy = s->busy, .unsorted = g_new0(guint8, streams ? streams : 1),
           .prev_end = g_new0(SimTime, nd ? nd : 1),
           .reserved = g_new(Reserved, n ? n : 1), /* a collective is reserved once at most */
           .step_pops = g_array_new(FALSE, FALSE, sizeof(SimStepPop))};
  sim_huge_pages(r.node, sizeof(Node) * (gsize)n);
  sim_huge_pages(s->start, sizeof(SimTime) * n);
  sim_huge_pages(s->ready, sizeof(SimTime) * n);
  sim_huge_pages(s->order, sizeof(uint32_t) * (gsize)n);
  sim_huge_pages(r.reserved, sizeof(Reserved) * (gsize)n);
  gather(&r, folds, release);
  for (uint32_t res = 0; res < streams; res++)
    if (s->busy[res].cap) s->busy[res].iv = g_new(SimTime, 2 * (gsize)s->busy[res].cap);
  Node *node = r.node;
  SimTime *free_at = r.free_at;
  while (r.heap_size > 0) {
    HeapEntry top = heap_pop(r.heap, &r.heap_size);
    uint32_t id = top.task;
    Node *v = &node[id];
    if (v->folded) { /* a folded collective: its entry, unless stale */
      if (top.time != v->key) continue;
      v->key = NEVER;
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
    s->order[r.done++] = id;
    const Node *chain = v;
    if (v->folded) { /* the chain goes on beside it, joins it, goes on (SimFold) */
      chain = &node[v->link];
      uint32_t d = (uint32_t)sim_resource_device(v->res);
      if (r.flight[d].at != r.flight[d].end) r.relist = TRUE;
      end = fold_steps(&r, v, top.time, sim_resource_compute((int)d));
    }
    list_pop(&r, id, v, start);
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
  for (uint32_t d = 0; d < nd; d++) /* the reservations no later pop applied, after the rest */
    for (Flight *f = &r.flight[d]; f->at < f->end; f->at++) s->order[r.done++] = r.reserved[f->at].id;
  if (r.relist && r.done == n) busy_relist(&r);
  sort_busy(&r);
  s->nstep_pops = r.step_pops->len;
  s->step_pops = (SimStepPop *)g_array_free(r.step_pops, FALSE);
  s->events = r.done;
  g_free(r.node);
  s->cpu_s = sim_thread_cpu_s() - cpu0; /* its working arrays freed below: not much */
  g_free(r.free_at);
  g_free(r.pending);
  g_free(r.flight);
  g_free(r.heap);
  g_free(r.unsorted);
  g_free(r.prev_end);
  g_free(r.reserved);
  return sim_engine_checked(s, r.done, n, error);
}
