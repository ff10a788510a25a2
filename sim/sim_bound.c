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
  gboolean uniform;  /* every op of every chunk is on its chunk's first op's mesh */
  gboolean *chunk_uniform; /* per chunk: its ops are on one mesh */
  int *ops, *begin;  /* ops grouped by chunk in index order: chunk c's are ops[begin[c] ..
                        begin[c + 1] - 1] (ops outside every chunk left out) */
} Chunks;

static void chunks_init(Chunks *k, const MdlGraph *graph, const MdlStrategy *s) {
  int nops = mdl_graph_num_ops(graph);
  k->nchunks = s->num_stages > 0 ? s->num_stages : 1;
  k->first = g_new(int, k->nchunks);
  k->link = g_new(int, k->nchunks);
  k->uniform = TRUE;
  k->chunk_uniform = g_new(gboolean, k->nchunks);
  k->ops = g_new(int, nops);
  k->begin = g_new0(int, k->nchunks + 1);
  for (int c = 0; c < k->nchunks; c++) {
    k->first[c] = k->link[c] = -1;
    k->chunk_uniform[c] = TRUE;
  }
  for (int o = 0; o < nops; o++) {
    int c = s->configs[o].stage;
    if (c < 0 || c >= k->nchunks) {
      k->uniform = FALSE;
      continue;
    }
    k->begin[c + 1]++;
    if (k->first[c] < 0) k->first[c] = o;
    else k->chunk_uniform[c] &= s->configs[o].mesh == s->configs[k->first[c]].mesh;
    k->uniform &= k->chunk_uniform[c];
  }
  for (int c = 0; c < k->nchunks; c++) k->begin[c + 1] += k->begin[c];
  g_autofree int *fill = g_memdup2(k->begin, sizeof(int) * (gsize)k->nchunks);
  for (int o = 0; o < nops; o++) {
    int c = s->configs[o].stage;
    if (c >= 0 && c < k->nchunks) k->ops[fill[c]++] = o;
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
  g_free(k->chunk_uniform);
  g_free(k->ops);
  g_free(k->begin);
  g_free(k->first);
  g_free(k->link);
}


/* A few collective times already computed in this bound (the layers of a model repeat the
 * same collectives on the same groups): keyed by everything cm_group_collective_time reads
 * that varies here. */
#define GAP_MEMO 32
typedef struct {
  int mesh, axis, base, coll;
  double bytes;
  SimTime time;
} GapMemo;

typedef struct {
  const Builder *b;
  GapMemo memo[GAP_MEMO];
  int nmemo, next;
} Gaps;

static SimTime collective_time(Gaps *g, int mesh_index, int axis, int base, CmCollective coll,
                               double bytes) {
  for (int i = 0; i < g->nmemo; i++) {
    const GapMemo *m = &g->memo[i];
    if (m->mesh == mesh_index && m->axis == axis && m->base == base && m->coll == (int)coll &&
        m->bytes == bytes)
      return m->time;
  }
  const MdlMesh *mesh = mdl_strategy_mesh(g->b->s, mesh_index);
  g_autofree int *members = g_new(int, mesh->ndevices);
  g_autofree int *devices = g_new(int, mesh->ndevices);
  int p = sb_group_members(mesh, 1u << axis, base, members);
  for (int i = 0; i < p; i++) devices[i] = mesh->devices[members[i]];
  SimTime t = sim_time_from_seconds(cm_group_collective_time(g->b->p, g->b->c, coll, devices, p, bytes));
  GapMemo *slot = &g->memo[g->next];
  g->next = (g->next + 1) % GAP_MEMO;
  g->nmemo = MIN(g->nmemo + 1, GAP_MEMO);
  *slot = (GapMemo){mesh_index, axis, base, (int)coll, bytes, t};
  return t;
}

/* Time of converting tensor @t from @from to @to on mesh @mesh_index for the device at mesh
 * index @idx: the collectives of its groups, axis by axis, timed as sb_convert_on_mesh times
 * them (the same collective per layout change, the same bytes, the same cost function). */
static SimTime conversion_time(Gaps *g, int mesh_index, MdlLayout from, MdlLayout to, int t, int idx) {
  const Builder *b = g->b;
  const MdlMesh *mesh = mdl_strategy_mesh(b->s, mesh_index);
  int stride[MDL_MAX_MESH_AXES];
  sb_mesh_strides(mesh, stride);
  SimTime sum = 0;
  for (int a = 0; a < mesh->ndims; a++) {
    int src = from.axis[a], dst = to.axis[a];
    if (src == dst || mesh->shape[a] == 1) continue;
    if (src != MDL_LAYOUT_PARTIAL && src < 0) { /* Broadcast to Split or Partial: free */
      from.axis[a] = (int8_t)dst;
      continue;
    }
    CmCollective coll = src == MDL_LAYOUT_PARTIAL ? (dst == MDL_LAYOUT_BROADCAST ? CM_ALL_REDUCE : CM_REDUCE_SCATTER)
                                                  : (dst == MDL_LAYOUT_BROADCAST ? CM_ALL_GATHER : CM_ALL_TO_ALL);
    double before = mdl_layout_local_elements(b->g, t, b->sample_tdim[t], &from, mesh, b->M);
    from.axis[a] = (int8_t)dst;
    double after = mdl_layout_local_elements(b->g, t, b->sample_tdim[t], &from, mesh, b->M);
    int base = idx - ((idx / stride[a]) % mesh->shape[a]) * stride[a];
    sum += collective_time(g, mesh_index, a, base, coll, MAX(before, after) * b->dtype_bytes);
  }
  return sum;
}

/* The gaps of one microbatch's units of a chunk (@ops: its ops in index order, all on one
 * mesh) on the device at mesh index @idx: forward (F(p) -> F(o)), recomputed forward
 * (R(p) -> R(o), same group) and backward (B(o) -> B(p), no recomputed forwards between). */
static SimTime chunk_gaps(Gaps *g, const int *ops, int count, int idx, const int *group) {
  const Builder *b = g->b;
  SimTime sum = 0;
  for (int j = 1; j < count; j++) {
    int p = ops[j - 1], o = ops[j], m = cfg(b, o)->mesh;
    const MdlOp *op = mdl_graph_op(b->g, o), *pop = mdl_graph_op(b->g, p);
    if (sb_overlapped_output(b, p)) continue; /* its reduce-scatter starts with its GEMM */
    const MdlMesh *mesh = mesh_of(b, o);
    MdlLayout out = mdl_layout_of_operand(pop, &pop->output, TRUE, cfg(b, p), mesh);
    MdlLayout need_grad = out; /* what B(p) needs: dY, Partial sums reduced */
    for (int a = 0; a < MDL_MAX_MESH_AXES; a++)
      if (need_grad.axis[a] == MDL_LAYOUT_PARTIAL) need_grad.axis[a] = MDL_LAYOUT_BROADCAST;
    SimTime fwd = 0, bwd = 0;
    gboolean first = TRUE;
    for (int k = 0; k < op->ninputs; k++) {
      int t = op->inputs[k].tensor;
      if (t != pop->output.tensor) continue;
      gboolean leader = first; /* the lowest reader of t in the stage: it reshards dY */
      first = FALSE;
      if (sb_overlapped_input(b, o, k)) continue;
      MdlLayout need = mdl_layout_of_operand(op, &op->inputs[k], FALSE, cfg(b, o), mesh);
      fwd = MAX(fwd, conversion_time(g, m, out, need, t, idx));
      if (leader) bwd = conversion_time(g, m, sb_input_grad_layout(b, o, k), need_grad, t, idx);
    }
    sum += fwd;
    if (group[o] >= 0 && group[o] == group[p]) sum += fwd;    /* R(p), R(o) */
    if (group[p] < 0 || group[p] == group[o]) sum += bwd;     /* B(o), B(p) */
  }
  return sum;
}

/* Gaps of every unit of device @d: M times its chunks' per-microbatch gaps (chunks spread over
 * several meshes count none). */
static SimTime device_gaps(Gaps *g, const Chunks *k, int d, const int *group) {
  const Builder *b = g->b;
  SimTime per_mb = 0;
  for (int c = 0; c < k->nchunks; c++) {
    if (k->first[c] < 0 || !k->chunk_uniform[c]) continue;
    const MdlMesh *mesh = mesh_of(b, k->first[c]);
    int idx = -1;
    for (int i = 0; i < mesh->ndevices && idx < 0; i++)
      if (mesh->devices[i] == d) idx = i;
    if (idx >= 0)
      per_mb += chunk_gaps(g, k->ops + k->begin[c], k->begin[c + 1] - k->begin[c], idx, group);
  }
  return per_mb * (SimTime)b->M;
}

/* Sum of @d over the ops of chunk @c with index <= @last. */
static SimTime prefix(const MdlStrategy *s, int nops, const SimTime *d, int c, int last) {
  SimTime sum = 0;
  for (int o = 0; o <= last && o < nops; o++)
    if (s->configs[o].stage == c) sum += d[o];
  return sum;
}

static SimTime bound(const MdlGraph *graph, const MdlStrategy *strategy, const DevCluster *cluster,
                     const CmParams *params, gboolean gaps) {
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
  SimTime result = 0;
  for (int d = 0; d < ndev; d++) result = MAX(result, work[d]);
  int P = mdl_strategy_num_ranks(strategy);
  Chunks k;
  chunks_init(&k, graph, strategy);
  SimTime *fill = g_new0(SimTime, P), *drain = g_new0(SimTime, P);
  /* Fill and drain along the ranks' first chunks (not under weight delay, whose W units
   * move behind the last backward). */
  if (P > 1 && !strategy->weight_delay && k.uniform && k.nchunks >= P) {
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
        result = MAX(result, fill[r] + work[mesh->devices[i]] + drain[r]);
    }
    g_free(last_mb);
    g_free(first_ok);
  }
  /* Gaps: for the first device of each rank's first chunk, its work, its gaps, and the fill
   * and drain where they apply (0 elsewhere). */
  if (gaps) {
    Gaps gp;
    memset(&gp, 0, sizeof gp);
    gp.b = &b;
    for (int r = 0; r < MIN(P, k.nchunks); r++) {
      if (k.first[r] < 0) continue;
      int d = mdl_strategy_mesh(strategy, strategy->configs[k.first[r]].mesh)->devices[0];
      result = MAX(result, fill[r] + work[d] + device_gaps(&gp, &k, d, group) + drain[r]);
    }
  }
  g_free(fill);
  g_free(drain);
  chunks_clear(&k);
  g_free(work);
  g_free(per_mesh);
  g_free(fwd);
  g_free(bwd);
  g_free(group);
  g_free(b.sample_tdim);
  return result;
}

SimTime sim_compute_bound(const MdlGraph *graph, const MdlStrategy *strategy,
                          const DevCluster *cluster, const CmParams *params) {
  return bound(graph, strategy, cluster, params, FALSE);
}

SimTime sim_iteration_bound(const MdlGraph *graph, const MdlStrategy *strategy,
                            const DevCluster *cluster, const CmParams *params,
                            const SimOptions *options) {
  return bound(graph, strategy, cluster, params, !options || !options->step_collectives);
}
