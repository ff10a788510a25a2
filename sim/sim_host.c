/* sim/host — what the host stream did to a finished run: the intervals in which each device's
 * compute stream sat idle waiting for the host to launch its next compute task (sim-int.h). */
#include "sim/sim-int.h"

/* Calls @visit(ctx, device, task, from, to) for every compute task whose stream sat idle from
 * @from to @to waiting for its launch, in engine order. Engine order is start order on every
 * resource: a compute task's predecessor on its stream is the last task holding that stream
 * seen before it (a compute task, or a collective that holds the compute stream without
 * overlap: the stream is busy then, not waiting on the host). */
typedef void (*WaitVisit)(gpointer ctx, guint device, uint32_t task, SimTime from, SimTime to);
static void each_wait(const SimTaskGraph *g, const SimSchedule *s, WaitVisit visit, gpointer ctx) {
  guint n = (guint)g->num_devices;
  const uint32_t *res = (const uint32_t *)g->task_resources->data;
  g_autofree SimTime *prev_end = g_new0(SimTime, n ? n : 1);
  for (uint32_t k = 0; k < s->num_tasks; k++) {
    uint32_t c = s->order[k];
    if (c >= g->num_compute) {
      const SimTask *o = sim_task_graph_task(g, c);
      for (uint16_t r = 0; r < o->nres; r++) {
        uint32_t stream = res[o->res_begin + r];
        if (stream >= sim_stream_resources((int)n) || sim_resource_stream_of(stream) != SIM_STREAM_COMPUTE)
          continue;
        guint d = (guint)sim_resource_device(stream);
        prev_end[d] = MAX(prev_end[d], s->start[c] + o->duration);
      }
      continue;
    }
    const SimTask *t = sim_task_graph_task(g, c);
    guint d = (guint)sim_resource_device(res[t->res_begin]);
    uint32_t h = g->host_base + c;
    SimTime launched = s->start[h] + sim_task_graph_task(g, h)->duration;
    SimTime idle_from = prev_end[d], start = s->start[c];
    SimTime wait_end = MIN(launched, start);
    if (wait_end > idle_from) visit(ctx, d, c, idle_from, wait_end);
    if (start + t->duration > prev_end[d]) prev_end[d] = start + t->duration;
  }
}

typedef struct {
  guint *offsets, *fill; /* fill NULL: counting */
  SimTime *iv;
} Intervals;

static void add_interval(gpointer ctx, guint d, uint32_t task, SimTime from, SimTime to) {
  Intervals *x = ctx;
  (void)task;
  if (!x->fill) {
    x->offsets[d + 1]++;
    return;
  }
  x->iv[2 * x->fill[d]] = from;
  x->iv[2 * x->fill[d] + 1] = to;
  x->fill[d]++;
}

SimTime *sim_host_wait_intervals(const SimTaskGraph *g, const SimSchedule *s, guint **offsets_out) {
  guint n = (guint)g->num_devices;
  Intervals x = {.offsets = g_new0(guint, n + 1)};
  *offsets_out = x.offsets;
  if (g->host_base == UINT32_MAX) return g_new(SimTime, 1);
  each_wait(g, s, add_interval, &x); /* count, then fill */
  for (guint d = 0; d < n; d++) x.offsets[d + 1] += x.offsets[d];
  x.iv = g_new(SimTime, 2 * (gsize)x.offsets[n] + 1);
  x.fill = g_memdup2(x.offsets, sizeof(guint) * (n + 1));
  each_wait(g, s, add_interval, &x);
  g_free(x.fill);
  return x.iv;
}

static void add_task_wait(gpointer ctx, guint d, uint32_t task, SimTime from, SimTime to) {
  (void)d;
  ((SimTime *)ctx)[task] += to - from;
}

SimTime *sim_host_task_waits(const SimTaskGraph *g, const SimSchedule *s) {
  SimTime *wait = g_new0(SimTime, g->num_compute ? g->num_compute : 1);
  if (g->host_base != UINT32_MAX) each_wait(g, s, add_task_wait, wait);
  return wait;
}

/* The optimizer step's host waits (sim-int.h): an optimizer phase whose task id is right after
 * a host task on no resource is gated by that task (sb_add_optimizer_step); its compute stream
 * waits on the host from the later of its previous task's end and the host task's start (before
 * that it waits for the other ranks: communication or bubble) to the earlier of the host task's
 * end and the phase's start. */
gboolean sim_host_step_wait(const SimTaskGraph *g, const SimSchedule *s, uint32_t id,
                            SimTime prev_end, SimTime *from, SimTime *to) {
  const SimTask *t = sim_task_graph_task(g, id);
  const SimTask *h = id > 0 ? sim_task_graph_task(g, id - 1) : NULL;
  if (t->kind != SIM_TASK_OPTIMIZER || !h || h->kind != SIM_TASK_HOST || h->nres != 0)
    return FALSE;
  *from = MAX(prev_end, s->start[id - 1]);
  *to = MIN(s->start[id - 1] + h->duration, s->start[id]);
  return *to > *from;
}
