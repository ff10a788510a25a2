/* sim/bound — the lower bound of sim_bound.h: compute-stream work plus pipeline fill and
 * drain (the argument is in the header). */
#include "sim/sim_bound.h"

#include "sim/sim_build-int.h"
#include "sim/sim_schedule.h"

typedef struct {
  int nchunks;
  int *first;        /* per chunk: its lowest op index (its first forward task), -1: none */
  int *link;         /* per chunk c >= 1: the highest-index op of chunk c - 1 whose output the
                        first op of c reads, -1: none */
  gboolean uniform;  /* every op of a chunk is on its first op's mesh */
} Chunks;

static void chunks_init(Chunks *k, const MdlGraph *graph, const MdlStrategy *s) {
  int nops = mdl_graph_num_ops(graph);
  k->nchunks = s->num_stages > 0 ? s->num_stages : 1;
  k->first = g_new(int, k->nchunks);
  k->link = g_new(int, k->nchunks);
  k->uniform = TRUE;
  for (int c = 0; c < k->nchunks; c++) k->first[c] = k->link[c] = -1;
  for (int o = 0; o < nops; o++) {
    int c = s->configs[o].stage;
    if (c < 0 || c >= k->nchunks) {
      k->uniform = FALSE;
      continue;
    }
    if (k->first[c] < 0) k->first[c] = o;
    else k->uniform &= s->configs[o].mesh == s->configs[k->first[c]].mesh;
  }
  for (int c = 1; c < k->nchunks; c++) {
    if (k->first[c] < 0) continue;
    const MdlOp *op = mdl_graph_op(graph, k->first[c]);
    for (int i = 0; i < op->ninputs; i++) {
      const MdlTensor *t = mdl_graph_tensor(graph, op->inputs[i].tensor);
      if (t->is_weight || t->producer < 0 || s->configs[t->producer].stage != c - 1) continue;
      k->link[c] = MAX(k->link[c], t->producer);
    }
  }
}

static void chunks_clear(Chunks *k) {
  g_free(k->first);
  g_free(k->link);
}

/* Sum of @d over the ops of chunk @c with index <= @last. */
static SimTime prefix(const MdlStrategy *s, int nops, const SimTime *d, int c, int last) {
  SimTime sum = 0;
  for (int o = 0; o <= last && o < nops; o++)
    if (s->configs[o].stage == c) sum += d[o];
  return sum;
}

SimTime sim_compute_bound(const MdlGraph *graph, const MdlStrategy *strategy,
                          const DevCluster *cluster, const CmParams *params) {
  Builder b;
  memset(&b, 0, sizeof b);
  b.g = graph;
  b.s = strategy;
  b.c = cluster;
  b.p = params;
  b.nops = mdl_graph_num_ops(graph);
  b.M = strategy->num_microbatches;
  b.dtype_bytes = dev_dtype_bytes(strategy->dtype);
  b.sample_tdim = mdl_tensor_sample_dims(graph);
  int *group = mdl_strategy_recompute_groups(strategy, graph);
  int nmeshes = (int)strategy->meshes->len, ndev = dev_cluster_num_devices(cluster);
  SimTime *per_mesh = g_new0(SimTime, nmeshes);
  SimTime *fwd = g_new(SimTime, b.nops), *bwd = g_new(SimTime, b.nops);
  for (int o = 0; o < b.nops; o++) {
    SimTime w;
    sb_op_durations(&b, o, &fwd[o], &bwd[o], &w);
    SimTime one = fwd[o] + bwd[o] + (sb_has_weight_task(&b, o) ? w : 0) + (group[o] >= 0 ? fwd[o] : 0);
    per_mesh[strategy->configs[o].mesh] += one * (SimTime)b.M;
  }
  SimTime *work = g_new0(SimTime, ndev);
  for (int m = 0; m < nmeshes; m++) {
    const MdlMesh *mesh = mdl_strategy_mesh(strategy, m);
    for (int i = 0; i < mesh->ndevices; i++) work[mesh->devices[i]] += per_mesh[m];
  }
  SimTime bound = 0;
  for (int d = 0; d < ndev; d++) bound = MAX(bound, work[d]);
  /* Fill and drain along the ranks' first chunks (not under weight delay, whose W units
   * move behind the last backward). */
  int P = mdl_strategy_num_ranks(strategy);
  Chunks k;
  chunks_init(&k, graph, strategy);
  if (P > 1 && !strategy->weight_delay && k.uniform && k.nchunks >= P) {
    SimTime *fill = g_new0(SimTime, P), *drain = g_new0(SimTime, P);
    int *last_mb = g_new(int, P);
    gboolean *first_ok = g_new0(gboolean, P);
    for (int r = 0; r < P; r++) {
      int n = 0;
      SimUnit *units = sim_pipeline_units(strategy, r, &n);
      first_ok[r] = n > 0 && units[0].phase == SIM_UNIT_FORWARD && units[0].chunk == r &&
                    units[0].microbatch == 0 && k.first[r] >= 0;
      last_mb[r] = n > 0 && units[n - 1].phase == SIM_UNIT_BACKWARD && units[n - 1].chunk == r
                       ? units[n - 1].microbatch
                       : -1;
      g_free(units);
    }
    for (int r = 1; r < P; r++)
      if (first_ok[r] && first_ok[r - 1] && k.link[r] >= 0)
        fill[r] = fill[r - 1] + prefix(strategy, b.nops, fwd, r - 1, k.link[r]);
    for (int r = 0; r < P; r++) {
      if (last_mb[r] < 0 || k.first[r] < 0) continue;
      for (int c = r; c >= 1 && k.link[c] >= 0; c--) drain[r] += prefix(strategy, b.nops, bwd, c - 1, k.link[c]);
      const MdlMesh *mesh = mdl_strategy_mesh(strategy, strategy->configs[k.first[r]].mesh);
      for (int i = 0; i < mesh->ndevices; i++)
        bound = MAX(bound, fill[r] + work[mesh->devices[i]] + drain[r]);
    }
    g_free(fill);
    g_free(drain);
    g_free(last_mb);
    g_free(first_ok);
  }
  chunks_clear(&k);
  g_free(work);
  g_free(per_mesh);
  g_free(fwd);
  g_free(bwd);
  g_free(group);
  g_free(b.sample_tdim);
  return bound;
}
