/* sim/engine — private to sim/sim_engine*.c (the plain engine and the folded one): their binary
 * min-heap over (ready time, task id) entries (equal times pop by id, which makes runs
 * reproducible bit for bit), the successors' release and the final cycle check. */
#ifndef STRATSIM_SIM_ENGINE_INT_H
#define STRATSIM_SIM_ENGINE_INT_H

#include "sim/sim-int.h"

typedef struct {
  SimTime time;
  uint32_t task;
} HeapEntry;

/* (A 4-ary heap, engine8 2026-11-25, popped the same sequence, entries being ordered totally,
 * and measured no better: engine median 5.39-5.63 ms CPU binary, 5.48-5.67 4-ary on the 175B
 * bench point, four alternated pairs of 40 runs. Not kept. Nor, engine9 2026-12-01, a pop's
 * first push taking the popped top's place (one sift down instead of a sift down and one
 * up; the heap holds ~16 entries, one a device): 3.4% fewer engine instructions (cachegrind,
 * 118.3 M -> 114.3 M over 4 predictions) but the engine median +0.64 ms over 16 alternated
 * pairs run second and -0.01 ms over 16 run first, where an A/A control gave +0.27.) */
static inline gboolean entry_less(const HeapEntry *a, const HeapEntry *b) {
  return a->time < b->time || (a->time == b->time && a->task < b->task);
}

static inline void heap_push(HeapEntry *heap, uint32_t *size, HeapEntry e) {
  uint32_t i = (*size)++;
  while (i > 0) {
    uint32_t parent = (i - 1) / 2;
    if (!entry_less(&e, &heap[parent])) break;
    heap[i] = heap[parent];
    i = parent;
  }
  heap[i] = e;
}

static inline HeapEntry heap_pop(HeapEntry *heap, uint32_t *size) {
  HeapEntry top = heap[0];
  HeapEntry last = heap[--(*size)];
  uint32_t n = *size, i = 0;
  for (;;) {
    uint32_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && entry_less(&heap[child + 1], &heap[child])) child++;
    if (!entry_less(&heap[child], &last)) break;
    heap[i] = heap[child];
    i = child;
  }
  if (n > 0) heap[i] = last;
  return top;
}

/* Task @id of @g ended at @end: its successors' ready times (@ready) and remaining
 * dependencies (@remaining); those whose last dependency it was are pushed at the later of
 * their ready time and their release (@release, or NULL). */
static inline void sim_engine_succeed(const SimTaskGraph *g, uint32_t id, SimTime end,
                                      SimTime *ready, uint32_t *remaining,
                                      const SimTime *release, HeapEntry *heap,
                                      uint32_t *heap_size) {
  const SimTask *tasks = (const SimTask *)g->tasks->data;
  for (uint32_t k = g->succ_offsets[id]; k < g->succ_offsets[id + 1]; k++) {
    uint32_t v = g->succ[k];
    if (end > ready[v]) ready[v] = end;
    if (--remaining[v] == 0) {
      SimTime at = release && release[v] > ready[v] ? release[v] : ready[v];
      heap_push(heap, heap_size, (HeapEntry){at, v});
      /* it pops later: its task, resources and successors are fetched meanwhile (ids are
       * scattered in time order, so these are cache misses otherwise) */
      __builtin_prefetch(&tasks[v]);
      __builtin_prefetch(&g->succ_offsets[v]);
    }
  }
}

/* @s once every one of the graph's @n tasks has popped (@popped), else NULL with a cycle error
 * (@s freed): the engines' last step (sim_engine.c). */
SimSchedule *sim_engine_checked(SimSchedule *s, uint32_t popped, uint32_t n, GError **error);

/* The engine over a reduced graph whose chains run folded collectives (sim_engine_folds.c);
 * sim_engine_run_released with @folds. */
SimSchedule *sim_engine_run_folded(const SimTaskGraph *graph, const SimTime *release,
                                   const SimFolds *folds, GError **error);

#endif
