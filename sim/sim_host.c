/* sim/host — what the host stream did to a finished run: the intervals in which each device's
 * compute stream sat idle waiting for the host to launch its next compute task (sim-int.h). */
#include "sim/sim-int.h"

SimTime *sim_host_wait_intervals(const SimTaskGraph *g, const SimSchedule *s, guint **offsets_out) {
  guint n = (guint)g->num_devices;
  guint *offsets = g_new0(guint, n + 1);
  *offsets_out = offsets;
  if (g->host_base == UINT32_MAX) return g_new(SimTime, 1);
  const uint32_t *res = (const uint32_t *)g->task_resources->data;
  /* Engine order is start order on every resource: a compute task's predecessor on its stream
   * is the last compute task of its device seen before it. Two passes: count, then fill. */
  g_autofree SimTime *prev_end = g_new(SimTime, n);
  SimTime *iv = NULL;
  for (int pass = 0; pass < 2; pass++) {
    g_autofree guint *fill = pass ? g_memdup2(offsets, sizeof(guint) * (n + 1)) : NULL;
    memset(prev_end, 0, sizeof(SimTime) * n);
    for (uint32_t k = 0; k < s->num_tasks; k++) {
      uint32_t c = s->order[k];
      if (c >= g->num_compute) continue;
      const SimTask *t = sim_task_graph_task(g, c);
      guint d = (guint)sim_resource_device(res[t->res_begin]);
      uint32_t h = g->host_base + c;
      SimTime launched = s->start[h] + sim_task_graph_task(g, h)->duration;
      SimTime idle_from = prev_end[d], start = s->start[c];
      SimTime wait_end = MIN(launched, start);
      if (wait_end > idle_from) {
        if (pass) {
          iv[2 * fill[d]] = idle_from;
          iv[2 * fill[d] + 1] = wait_end;
          fill[d]++;
        } else {
          offsets[d + 1]++;
        }
      }
      if (start + t->duration > prev_end[d]) prev_end[d] = start + t->duration;
    }
    if (!pass) {
      for (guint d = 0; d < n; d++) offsets[d + 1] += offsets[d];
      iv = g_new(SimTime, 2 * (gsize)offsets[n] + 1);
    }
  }
  return iv;
}
