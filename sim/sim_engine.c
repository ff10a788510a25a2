/* sim/engine — the discrete-event engine (FlexFlow Algorithm 1).
 *
 * A binary min-heap over an array of (ready time, task id) entries: the deterministic tie-break
 * on the id makes runs reproducible bit for bit. Popping a task fixes its start as the max of
 * its ready time and the free time of each resource it occupies; its end becomes the ready
 * time of successors whose last dependency it was. Ready times only grow along the pops, so
 * each resource serves its tasks in ready-time order (FIFO, assumption A3). No allocation per
 * event: the heap, ready times and remaining in-degrees are arrays sized once. */
#include "sim/sim.h"

typedef struct {
  SimTime time;
  uint32_t task;
} HeapEntry;

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

SimSchedule *sim_engine_run(const SimTaskGraph *g, GError **error) {
  g_return_val_if_fail(g->succ_offsets != NULL, NULL);
  uint32_t n = g->tasks->len;
  const SimTask *tasks = (const SimTask *)g->tasks->data;
  const uint32_t *res = (const uint32_t *)g->task_resources->data;
  SimSchedule *s = g_new0(SimSchedule, 1);
  s->num_tasks = n;
  s->start = g_new0(SimTime, n ? n : 1);
  s->order = g_new(uint32_t, n ? n : 1);
  g_autofree SimTime *ready = g_new0(SimTime, n ? n : 1);
  g_autofree uint32_t *remaining = g_memdup2(g->indegree, sizeof(uint32_t) * (n ? n : 1));
  g_autofree SimTime *free_at = g_new0(SimTime, g->num_resources ? g->num_resources : 1);
  g_autofree HeapEntry *heap = g_new(HeapEntry, n ? n : 1);
  uint32_t heap_size = 0, done = 0;

  for (uint32_t i = 0; i < n; i++)
    if (remaining[i] == 0) heap_push(heap, &heap_size, (HeapEntry){0, i});
  while (heap_size > 0) {
    HeapEntry e = heap_pop(heap, &heap_size);
    const SimTask *t = &tasks[e.task];
    SimTime start = e.time;
    const uint32_t *r = res + t->res_begin;
    for (uint16_t k = 0; k < t->nres; k++)
      if (free_at[r[k]] > start) start = free_at[r[k]];
    SimTime end = start + t->duration;
    for (uint16_t k = 0; k < t->nres; k++) free_at[r[k]] = end;
    s->start[e.task] = start;
    s->order[done++] = e.task;
    if (end > s->makespan) s->makespan = end;
    for (uint32_t k = g->succ_offsets[e.task]; k < g->succ_offsets[e.task + 1]; k++) {
      uint32_t v = g->succ[k];
      if (end > ready[v]) ready[v] = end;
      if (--remaining[v] == 0) heap_push(heap, &heap_size, (HeapEntry){ready[v], v});
    }
  }
  s->events = done;
  if (done != n) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                "task graph has a dependency cycle: %u of %u tasks never became ready", n - done, n);
    sim_schedule_free(s);
    return NULL;
  }
  return s;
}

void sim_schedule_free(SimSchedule *s) {
  if (!s) return;
  g_free(s->start);
  g_free(s->order);
  g_free(s);
}
