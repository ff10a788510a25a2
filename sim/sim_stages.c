/* sim/stages — see sim_stages.h. Busy times are unions of the task intervals on a device's
 * two streams (integer picoseconds, summed exactly); the device is the first of the rank's
 * mesh that holds tasks, so symmetric and expanded runs report the same figures. */
#include "sim/sim_stages.h"

#include <stdlib.h>

#include "costmodel/costmodel.h"

typedef struct {
  SimTime start, end;
} Span;

static int compare_spans(const void *pa, const void *pb) {
  const Span *a = pa, *b = pb;
  return (a->start > b->start) - (a->start < b->start);
}

/* The total length of the union of @n spans (sorted in place). */
static SimTime union_length(Span *spans, guint n) {
  qsort(spans, n, sizeof(Span), compare_spans);
  SimTime total = 0, end = 0;
  for (guint i = 0; i < n; i++) {
    SimTime from = MAX(spans[i].start, end);
    if (spans[i].end > from) total += spans[i].end - from;
    end = MAX(end, spans[i].end);
  }
  return total;
}

/* The busy time of device @d's compute stream (@both: or its communication stream). */
static SimTime busy(const SimRun *run, int d, gboolean both, GArray *spans) {
  g_array_set_size(spans, 0);
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t;
    sim_run_task(run, i, &t);
    gboolean mine = FALSE;
    for (int r = 0; r < t.nres && !mine; r++)
      mine = t.resources[r] == sim_resource_compute(d) ||
             (both && t.resources[r] == sim_resource_comm(d));
    if (!mine || t.end <= t.start) continue;
    Span s = {t.start, t.end};
    g_array_append_val(spans, s);
  }
  return union_length((Span *)spans->data, spans->len);
}

SimStage *sim_run_stages(const SimRun *run, int *n) {
  g_return_val_if_fail(run && n, NULL);
  const MdlStrategy *s = sim_run_strategy(run);
  const MdlGraph *g = sim_run_graph(run);
  int ranks = mdl_strategy_num_ranks(s), ndev = dev_cluster_num_devices(sim_run_cluster(run));
  SimStage *out = g_new0(SimStage, ranks);
  g_autofree gboolean *has_tasks = g_new0(gboolean, ndev);
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t;
    sim_run_task(run, i, &t);
    if (t.device >= 0 && t.device < ndev) has_tasks[t.device] = TRUE;
  }
  g_autofree CmMemory *mem = cm_memory_per_device(g, s, sim_run_cluster(run));
  GArray *spans = g_array_new(FALSE, FALSE, sizeof(Span));
  GHashTable *layers = g_hash_table_new(g_direct_hash, g_direct_equal);
  double iteration = sim_run_prediction(run)->iteration_time_s;
  for (int r = 0; r < ranks; r++) {
    SimStage *st = &out[r];
    st->rank = r;
    st->device = -1;
    g_hash_table_remove_all(layers);
    for (int o = 0; o < mdl_graph_num_ops(g); o++) {
      if (mdl_strategy_rank_of_stage(s, s->configs[o].stage) != r) continue;
      const MdlMesh *mesh = mdl_strategy_mesh(s, s->configs[o].mesh);
      for (int i = 0; st->device < 0 && i < mesh->ndevices; i++)
        if (has_tasks[mesh->devices[i]]) st->device = mesh->devices[i];
      int layer = mdl_graph_op(g, o)->layer;
      if (layer >= 0) g_hash_table_add(layers, GINT_TO_POINTER(layer + 1));
    }
    st->layers = (int)g_hash_table_size(layers);
    if (st->device < 0) continue;
    SimTime compute = busy(run, st->device, FALSE, spans);
    SimTime either = busy(run, st->device, TRUE, spans);
    st->compute_s = sim_time_seconds(compute);
    st->comm_s = sim_time_seconds(either - compute);
    st->idle_s = MAX(0.0, iteration - sim_time_seconds(either));
    st->memory_bytes = mem[st->device].total;
  }
  g_hash_table_unref(layers);
  g_array_unref(spans);
  *n = ranks;
  return out;
}

void sim_stages_print(const SimRun *run, FILE *out) {
  int n;
  g_autofree SimStage *st = sim_run_stages(run, &n);
  fprintf(out, "\npipeline ranks: on each rank's first simulated GPU, compute, communication while "
               "the compute stream is idle, and idle (neither stream busy: the pipeline bubble "
               "and host waits), with its peak memory\n");
  fprintf(out, "  rank    GPU  layers    compute s       comm s       idle s   memory GiB\n");
  for (int r = 0; r < n; r++)
    fprintf(out, "  %4d %6d %7d %12.6f %12.6f %12.6f %12.3f\n", st[r].rank, st[r].device,
            st[r].layers, st[r].compute_s, st[r].comm_s, st[r].idle_s,
            st[r].memory_bytes / (1024.0 * 1024.0 * 1024.0));
}
