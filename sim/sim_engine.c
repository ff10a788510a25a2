/* sim/engine — the discrete-event engine (FlexFlow Algorithm 1).
 *
 * A binary min-heap over an array of (ready time, task id) entries: the deterministic tie-break
 * on the id makes runs reproducible bit for bit. Popping a task fixes its start as the max of
 * its ready time and the free time of each resource it occupies; its end becomes the ready
 * time of successors whose last dependency it was. Ready times only grow along the pops, so
 * each resource serves its tasks in ready-time order (FIFO, assumption A3). No allocation per
 * event: the heap, ready times and remaining in-degrees are arrays sized once. */
#include "sim/sim.h"
#include "sim/sim-int.h"
#include "sim/sim_engine-int.h"

/* The engine's state: the schedule it fills and its working arrays. */
typedef struct {
  const SimTaskGraph *g;
  SimSchedule *s;
  uint32_t *remaining;
  SimTime *free_at;
  HeapEntry *heap;
  const SimTime *release; /* per task, or NULL (sim_engine_run_released) */
  uint32_t heap_size, done;
} Engine;

static void engine_init(Engine *e, const SimTaskGraph *g) {
  uint32_t n = g->tasks->len;
  e->g = g;
  e->s = g_new0(SimSchedule, 1);
  e->s->cpu_s = sim_thread_cpu_s(); /* from here: engine_finish takes the difference */
  e->s->num_tasks = n;
  e->s->start = g_new0(SimTime, n ? n : 1);
  e->s->ready = g_new0(SimTime, n ? n : 1);
  e->s->order = g_new(uint32_t, n ? n : 1);
  e->remaining = g_new(uint32_t, n ? n : 1);
  e->heap = g_new(HeapEntry, n ? n : 1);
  memcpy(e->remaining, g->indegree, sizeof(uint32_t) * n);
  e->free_at = g_new0(SimTime, g->num_resources ? g->num_resources : 1);
  e->heap_size = 0;
  e->done = 0;
  e->release = NULL;
}

/* Pops until the heap is empty; returns the schedule, or NULL with @error on a cycle. */
static SimSchedule *engine_finish(Engine *e, GError **error) {
  const SimTaskGraph *g = e->g;
  uint32_t n = g->tasks->len;
  const SimTask *tasks = (const SimTask *)g->tasks->data;
  const uint32_t *res = (const uint32_t *)g->task_resources->data;
  SimSchedule *s = e->s;
  SimTime *ready = s->ready, *free_at = e->free_at;
  uint32_t *remaining = e->remaining;
  HeapEntry *heap = e->heap;
  const SimTime *release = e->release;
  uint32_t heap_size = e->heap_size, done = e->done;
  while (heap_size > 0) {
    HeapEntry top = heap_pop(heap, &heap_size);
    const SimTask *t = &tasks[top.task];
    SimTime start = top.time;
    const uint32_t *r = res + t->res_begin;
    for (uint16_t k = 0; k < t->nres; k++)
      if (free_at[r[k]] > start) start = free_at[r[k]];
    SimTime end = start + t->duration;
    for (uint16_t k = 0; k < t->nres; k++) free_at[r[k]] = end;
    s->start[top.task] = start;
    s->order[done++] = top.task;
    uint32_t id = top.task;
    if (end > s->makespan) s->makespan = end;
    sim_engine_succeed(g, id, end, ready, remaining, release, heap, &heap_size);
  }
  s->events = done;
  s->cpu_s = sim_thread_cpu_s() - s->cpu_s;
  g_free(e->remaining);
  g_free(e->free_at);
  g_free(e->heap);
  return sim_engine_checked(s, done, n, error);
}

SimSchedule *sim_engine_checked(SimSchedule *s, uint32_t popped, uint32_t n, GError **error) {
  if (popped == n) return s;
  g_set_error(error, SIM_ERROR, SIM_ERROR_CYCLE,
              "task graph has a dependency cycle: %u of %u tasks never became ready", n - popped, n);
  sim_schedule_free(s);
  return NULL;
}

SimSchedule *sim_engine_run_released(const SimTaskGraph *g, const SimTime *release,
                                     const SimFolds *folds, GError **error) {
  g_return_val_if_fail(g->succ_offsets != NULL, NULL);
  if (folds) return sim_engine_run_folded(g, release, folds, error);
  Engine e;
  engine_init(&e, g);
  e.release = release;
  for (uint32_t i = 0; i < g->tasks->len; i++)
    if (e.remaining[i] == 0) heap_push(e.heap, &e.heap_size, (HeapEntry){release ? release[i] : 0, i});
  return engine_finish(&e, error);
}

SimSchedule *sim_engine_run(const SimTaskGraph *g, GError **error) {
  return sim_engine_run_released(g, NULL, NULL, error);
}

/* Resuming (delta simulation): the old run's pops before @from are the new run's first pops,
 * in the same order, with the same starts (the caller's guarantee, sim-int.h); their effects
 * (resources' free times, successors' ready times and remaining in-degrees) are applied
 * without the heap, then the engine goes on from the tasks they left ready. */
SimSchedule *sim_engine_resume(const SimTaskGraph *g, const SimSchedule *old,
                               const uint32_t *new_of_old, SimTime from, uint32_t *kept,
                               GError **error) {
  g_return_val_if_fail(g->succ_offsets != NULL, NULL);
  Engine e;
  engine_init(&e, g);
  uint32_t n = g->tasks->len;
  const SimTask *tasks = (const SimTask *)g->tasks->data;
  const uint32_t *res = (const uint32_t *)g->task_resources->data;
  SimSchedule *s = e.s;
  /* The old pops are ordered by ready time: the prefix is found by bisection. */
  uint32_t lo = 0, hi = old->num_tasks;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (old->ready[old->order[mid]] < from) lo = mid + 1;
    else hi = mid;
  }
  g_autofree guint8 *popped = g_new0(guint8, n ? n : 1);
  for (uint32_t i = 0; i < lo; i++) {
    uint32_t x = old->order[i], y = new_of_old[x];
    g_assert(y < n);
    const SimTask *t = &tasks[y];
    SimTime start = old->start[x], end = start + t->duration;
    s->start[y] = start;
    s->ready[y] = old->ready[x];
    s->order[i] = y;
    popped[y] = 1;
    const uint32_t *r = res + t->res_begin;
    for (uint16_t k = 0; k < t->nres; k++)
      if (end > e.free_at[r[k]]) e.free_at[r[k]] = end;
    if (end > s->makespan) s->makespan = end;
    for (uint32_t k = g->succ_offsets[y]; k < g->succ_offsets[y + 1]; k++) {
      uint32_t v = g->succ[k];
      if (end > s->ready[v]) s->ready[v] = end;
      e.remaining[v]--;
    }
  }
  e.done = lo;
  for (uint32_t v = 0; v < n; v++)
    if (!popped[v] && e.remaining[v] == 0) heap_push(e.heap, &e.heap_size, (HeapEntry){s->ready[v], v});
  *kept = lo;
  return engine_finish(&e, error);
}

void sim_schedule_free(SimSchedule *s) {
  if (!s) return;
  g_free(s->start);
  g_free(s->ready);
  g_free(s->order);
  g_free(s->log);
  g_free(s->stretch);
  g_free(s->count);
  g_free(s);
}

SimTime sim_schedule_makespan(const SimSchedule *s) { return s->makespan; }
uint64_t sim_schedule_events(const SimSchedule *s) { return s->events; }
uint32_t sim_schedule_size(const SimSchedule *s) { return s->num_tasks; }

SimTime sim_schedule_start(const SimSchedule *s, uint32_t id) {
  g_return_val_if_fail(id < s->num_tasks, 0);
  return s->start[id];
}

SimTime sim_schedule_ready(const SimSchedule *s, uint32_t id) {
  g_return_val_if_fail(id < s->num_tasks, 0);
  return s->ready[id];
}

uint32_t sim_schedule_order(const SimSchedule *s, uint32_t k) {
  g_return_val_if_fail(k < s->num_tasks, 0);
  return s->order[k];
}
