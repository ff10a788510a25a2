/* sim/stages — see sim_stages.h. Busy times are unions of the task intervals on a device's
 * streams, compute and communication (integer picoseconds, summed exactly); the device is the
 * first of the rank's mesh that holds tasks, so symmetric and expanded runs report the same
 * figures. */
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
  if (n == 0) return 0; /* an empty GArray's data is NULL: no qsort on it */
  qsort(spans, n, sizeof(Span), compare_spans);
  SimTime total = 0, end = 0;
  for (guint i = 0; i < n; i++) {
    SimTime from = MAX(spans[i].start, end);
    if (spans[i].end > from) total += spans[i].end - from;
    end = MAX(end, spans[i].end);
  }
  return total;
}

/* Adds task @t's interval to the spans of the stage whose device's stream it occupies:
 * @compute[k] gets those on the compute stream, @either[k] those on either stream. */
static void add_spans(const SimTaskInfo *t, const int *stage_of_device, int ndev,
                      GArray **compute, GArray **either) {
  if (t->end <= t->start) return;
  Span span = {t->start, t->end};
  int done = -1; /* a task on several streams of one device counts once in @either */
  for (int r = 0; r < t->nres; r++) {
    uint32_t res = t->resources[r];
    if (res >= sim_stream_resources(ndev)) continue; /* link resources, host streams */
    int d = sim_resource_device(res);
    if (stage_of_device[d] < 0) continue;
    int k = stage_of_device[d];
    if (res == sim_resource_compute(d)) g_array_append_val(compute[k], span);
    if (done != d) {
      g_array_append_val(either[k], span);
      done = d;
    }
  }
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
  GHashTable *layers = g_hash_table_new(g_direct_hash, g_direct_equal);
  g_autofree int *stage_of_device = g_new(int, ndev);
  for (int d = 0; d < ndev; d++) stage_of_device[d] = -1;
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
    if (st->device >= 0 && stage_of_device[st->device] < 0) stage_of_device[st->device] = r;
  }
  g_hash_table_unref(layers);
  GArray **compute = g_new(GArray *, ranks), **either = g_new(GArray *, ranks);
  for (int r = 0; r < ranks; r++) {
    compute[r] = g_array_new(FALSE, FALSE, sizeof(Span));
    either[r] = g_array_new(FALSE, FALSE, sizeof(Span));
  }
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t;
    sim_run_task(run, i, &t);
    add_spans(&t, stage_of_device, ndev, compute, either);
  }
  double iteration = sim_run_prediction(run)->iteration_time_s;
  for (int r = 0; r < ranks; r++) {
    SimStage *st = &out[r];
    int k = st->device >= 0 ? stage_of_device[st->device] : -1; /* ranks may share a device */
    if (k >= 0) {
      SimTime busy = union_length((Span *)compute[k]->data, compute[k]->len);
      SimTime busy_either = union_length((Span *)either[k]->data, either[k]->len);
      st->compute_s = sim_time_seconds(busy);
      st->comm_s = sim_time_seconds(busy_either - busy);
      st->idle_s = MAX(0.0, iteration - sim_time_seconds(busy_either));
      st->memory_bytes = mem[st->device].total;
    }
  }
  for (int r = 0; r < ranks; r++) {
    g_array_unref(compute[r]);
    g_array_unref(either[r]);
  }
  g_free(compute);
  g_free(either);
  *n = ranks;
  return out;
}

void sim_stages_print(const SimRun *run, FILE *out) {
  int n;
  g_autofree SimStage *st = sim_run_stages(run, &n);
  fprintf(out, "\npipeline ranks: on each rank's first simulated GPU, compute, communication while "
               "the compute stream is idle, and idle (no stream busy: the pipeline bubble "
               "and host waits), with its peak memory\n");
  fprintf(out, "  rank    GPU  layers    compute s       comm s       idle s   memory GiB\n");
  for (int r = 0; r < n; r++)
    fprintf(out, "  %4d %6d %7d %12.6f %12.6f %12.6f %12.3f\n", st[r].rank, st[r].device,
            st[r].layers, st[r].compute_s, st[r].comm_s, st[r].idle_s,
            st[r].memory_bytes / (1024.0 * 1024.0 * 1024.0));
}
