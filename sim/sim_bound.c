/* sim/bound — the lower bounds of sim_bound.h: compute-stream work plus pipeline fill and
 * drain, the communication gaps of the compute chain, the communication streams and the
 * ZeRO 1/2 all-gather tail (the arguments are in the header and search/SEARCH.md). */
#include "sim/sim_bound.h"

#include "costmodel/cm_framework.h"
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

/* Collective times already computed in this bound (the layers of a model repeat the same
 * collectives on the same groups): a direct-mapped cache keyed by everything
 * cm_group_collective_time reads that varies here. */
#define GAP_MEMO_BITS 9
#define GAP_MEMO (1 << GAP_MEMO_BITS)
typedef struct {
  int mesh, base, coll;
  unsigned mask;
  double bytes;
  SimTime time;
  gboolean used;
} GapMemo;

typedef struct {
  const Builder *b;
  const SimTime *wgt;      /* per op: its W task's duration (0: none; sb_op_durations) */
  GapMemo memo[GAP_MEMO];
  GArray *items, *buckets; /* the gradient syncs (sb_sync_items, sb_sync_buckets), once */
  GArray *unit_buckets;    /* ZeRO-3's: one per FSDP unit */
} Gaps;

static SimTime collective_time(Gaps *g, int mesh_index, unsigned mask, int base, CmCollective coll,
                               double bytes) {
  guint64 bits;
  memcpy(&bits, &bytes, sizeof bits);
  guint64 h = ((guint64)mesh_index * 0x9E3779B97F4A7C15u) ^ ((guint64)mask << 7) ^
              ((guint64)base * 0xC2B2AE3D27D4EB4Fu) ^ ((guint64)coll << 3) ^ (bits * 0x165667B19E3779F9u);
  h ^= bits >> 32;
  GapMemo *slot = &g->memo[((h ^ (h >> 31)) * 0x9E3779B97F4A7C15u) >> (64 - GAP_MEMO_BITS)];
  if (slot->used && slot->mesh == mesh_index && slot->mask == mask && slot->base == base &&
      slot->coll == (int)coll && slot->bytes == bytes)
    return slot->time;
  const MdlMesh *mesh = mdl_strategy_mesh(g->b->s, mesh_index);
  g_autofree int *members = g_new(int, mesh->ndevices);
  g_autofree int *devices = g_new(int, mesh->ndevices);
  int p = sb_group_members(mesh, mask, base, members);
  for (int i = 0; i < p; i++) devices[i] = mesh->devices[members[i]];
  SimTime t = sim_time_from_seconds(sb_collective_time(g->b, coll, devices, p, bytes));
  *slot = (GapMemo){mesh_index, base, (int)coll, mask, bytes, t, TRUE};
  return t;
}

/* The base (sb_group_members) of the group over the axes in @mask through mesh index @idx. */
static int group_base(const MdlMesh *mesh, unsigned mask, int idx) {
  int stride[MDL_MAX_MESH_AXES];
  sb_mesh_strides(mesh, stride);
  int base = idx;
  for (int a = 0; a < mesh->ndims; a++)
    if (mask & (1u << a)) base -= ((idx / stride[a]) % mesh->shape[a]) * stride[a];
  return base;
}

/* Time of converting tensor @t from @from to @to on mesh @mesh_index for the device at mesh
 * index @idx: the collectives of its groups, in sb_convert_on_mesh's steps (sb_conversion_steps:
 * the same collectives, order and bytes), timed by the same cost function. */
static SimTime conversion_time(Gaps *g, int mesh_index, MdlLayout from, MdlLayout to, int t, int idx) {
  const Builder *b = g->b;
  const MdlMesh *mesh = mdl_strategy_mesh(b->s, mesh_index);
  SbConversionStep steps[MDL_MAX_MESH_AXES];
  int n = sb_conversion_steps(b, mesh_index, from, to, t, steps);
  SimTime sum = 0;
  for (int k = 0; k < n; k++) {
    unsigned mask = 1u << steps[k].axis;
    sum += collective_time(g, mesh_index, mask, group_base(mesh, mask, idx), steps[k].coll,
                           steps[k].elements * b->dtype_bytes);
  }
  return sum;
}

/* One pair of consecutive ops p, o of a chunk with a gap on some device: the forward
 * conversion's time (F(p) -> F(o), and R(p) -> R(o) when both are recomputed in one group) and
 * the backward's (B(o) -> B(p), when no recomputed forwards sit between them). */
typedef struct {
  int p, o;
  SimTime fwd, bwd;
} GapPair;

/* Appends to @pairs the pairs of a chunk (@ops: its ops in index order, all on one mesh) with
 * a gap on the device at mesh index @idx (sim_bound.h, "Gaps"). */
static void chunk_gaps(Gaps *g, const int *ops, int count, int idx, GArray *pairs) {
  const Builder *b = g->b;
  for (int j = 1; j < count; j++) {
    int p = ops[j - 1], o = ops[j], m = cfg(b, o)->mesh;
    const MdlOp *op = mdl_graph_op(b->g, o), *pop = mdl_graph_op(b->g, p);
    if (sb_overlapped_output(b, p)) continue; /* its reduce-scatter starts with its GEMM */
    const MdlMesh *mesh = mesh_of(b, o);
    MdlLayout out = mdl_layout_of_operand(pop, &pop->output, TRUE, cfg(b, p), mesh);
    MdlLayout need_grad = out; /* what B(p) needs: dY, Partial sums reduced */
    for (int a = 0; a < MDL_MAX_MESH_AXES; a++)
      if (need_grad.axis[a] == MDL_LAYOUT_PARTIAL) need_grad.axis[a] = MDL_LAYOUT_BROADCAST;
    GapPair pair = {p, o, 0, 0};
    gboolean first = TRUE;
    for (int k = 0; k < op->ninputs; k++) {
      int t = op->inputs[k].tensor;
      if (t != pop->output.tensor) continue;
      gboolean leader = first; /* the lowest reader of t in the stage: it reshards dY */
      first = FALSE;
      if (sb_overlapped_input(b, o, k)) continue;
      MdlLayout need = mdl_layout_of_operand(op, &op->inputs[k], FALSE, cfg(b, o), mesh);
      pair.fwd = MAX(pair.fwd, conversion_time(g, m, out, need, t, idx));
      if (leader) {
        SimTime conv = conversion_time(g, m, sb_input_grad_layout(b, o, k), need_grad, t, idx);
        /* Megatron's overlap (sb_overlap_split): W(o), chained between B(o) and B(p), runs
         * beside the collective, so only what the collective takes beyond it is a gap. */
        SimTime beside = sb_overlap_split(b, o) ? g->wgt[o] : 0;
        pair.bwd = conv > beside ? conv - beside : 0;
      }
    }
    if (pair.fwd || pair.bwd) g_array_append_val(pairs, pair);
  }
}

/* The pairs with a gap on device @d (whose mesh index per mesh is @index) over its chunks
 * (chunks spread over several meshes count none). */
static GArray *device_pairs(Gaps *g, const Chunks *k, const int *index) {
  const Builder *b = g->b;
  GArray *pairs = g_array_new(FALSE, FALSE, sizeof(GapPair));
  for (int c = 0; c < k->nchunks; c++) {
    if (k->first[c] < 0 || !k->chunk_uniform[c]) continue;
    int idx = index[cfg(b, k->first[c])->mesh];
    if (idx >= 0) chunk_gaps(g, k->ops + k->begin[c], k->begin[c + 1] - k->begin[c], idx, pairs);
  }
  return pairs;
}

/* The gaps of every unit on a device: M times its pairs' per-microbatch gaps under the
 * recomputation groups @group. */
static SimTime device_gaps(const GArray *pairs, const int *group, int M) {
  SimTime per_mb = 0;
  for (guint i = 0; i < pairs->len; i++) {
    const GapPair *q = &g_array_index(pairs, GapPair, i);
    per_mb += q->fwd;
    if (group[q->o] >= 0 && group[q->o] == group[q->p]) per_mb += q->fwd; /* R(p), R(o) */
    if (group[q->p] < 0 || group[q->p] == group[q->o]) per_mb += q->bwd;  /* B(o), B(p) */
  }
  return per_mb * (SimTime)M;
}

/* Mesh index of device @d in @mesh; -1: not in it. */
static int mesh_index_of(const MdlMesh *mesh, int d) {
  for (int i = 0; i < mesh->ndevices; i++)
    if (mesh->devices[i] == d) return i;
  return -1;
}

/* Collectives on a device's data-parallel stream (sim_bound.h, "Communication streams"),
 * summed by kind over its groups: the gradient synchronization of
 * every bucket (sb_add_gradient_sync_and_optimizer) as one all-reduce, reduce-scatter and
 * all-gather each; under ZeRO-3 (FSDP: one bucket per FSDP unit) the reduce-scatters again and
 * the units' parameter all-gathers (sb_parameter_gathers_segment), one forward and one
 * backward gather each per microbatch. None depends on the recomputation. */
typedef struct {
  gboolean synced, sharded;
  SimTime all_reduce, reduce_scatter, all_gather;
  SimTime unit_reduce_scatter, unit_gathers; /* ZeRO-3: per microbatch */
} Stream;

/* Sums the collectives of @buckets over @items of the device whose mesh index per mesh is
 * @index, @coll each. */
static SimTime bucket_collectives(Gaps *g, const GArray *items, const GArray *buckets, const int *index,
                                  CmCollective coll) {
  const SyncItem *all = (const SyncItem *)items->data;
  SimTime sum = 0;
  for (guint k = 0; k < buckets->len; k++) {
    const guint *range = (const guint *)(buckets->data + k * sizeof(guint) * 2);
    const SyncItem *it = all + range[0];
    int idx = index[it->m];
    if (idx < 0) continue;
    double bytes = 0;
    for (guint i = range[0]; i < range[1]; i++) bytes += all[i].bytes;
    if (coll == CM_ALL_GATHER) bytes = sb_param_bytes(g->b, bytes); /* the parameters (add_bucket) */
    sum += collective_time(g, it->m, it->mask, group_base(mdl_strategy_mesh(g->b->s, it->m), it->mask, idx), coll, bytes);
  }
  return sum;
}

/* The gradient syncs of ZeRO 0-2 of the device whose mesh index per mesh is @index. */
static void stream_syncs(Gaps *g, const int *index, Stream *st) {
  Builder *b = (Builder *)g->b;
  if (!g->items) {
    g->items = sb_sync_items(b, NULL);
    g->buckets = sb_sync_buckets(b, g->items, FALSE); /* DDP's (ZeRO-3's are per FSDP unit) */
  }
  st->all_reduce = bucket_collectives(g, g->items, g->buckets, index, CM_ALL_REDUCE);
  st->reduce_scatter = bucket_collectives(g, g->items, g->buckets, index, CM_REDUCE_SCATTER);
  st->all_gather = bucket_collectives(g, g->items, g->buckets, index, CM_ALL_GATHER);
  st->synced = TRUE;
}

/* ZeRO-3 (FSDP) of the same device: the reduce-scatters of its per-unit buckets and the
 * all-gathers of the units it runs (sb_unit_gathers). */
static void stream_shards(Gaps *g, const int *index, Stream *st) {
  Builder *b = (Builder *)g->b;
  if (!b->fsdp_unit) {
    b->fsdp_unit = mdl_strategy_fsdp_units(b->s, b->g);
    g->unit_buckets = sb_sync_buckets(b, g->items, TRUE);
  }
  st->unit_reduce_scatter = bucket_collectives(g, g->items, g->unit_buckets, index, CM_REDUCE_SCATTER);
  GArray *gathers = g_array_new(FALSE, FALSE, sizeof(SbUnitGather));
  for (int o = 0; o < b->nops; o++) {
    int m = cfg(b, o)->mesh;
    if (index[m] < 0) continue;
    sb_unit_gathers(b, o, gathers);
    const MdlMesh *mesh = mesh_of(b, o);
    for (guint i = 0; i < gathers->len; i++) {
      const SbUnitGather *q = &g_array_index(gathers, SbUnitGather, i);
      st->unit_gathers += 2 * collective_time(g, m, q->mask, group_base(mesh, q->mask, index[m]), CM_ALL_GATHER, q->bytes);
    }
  }
  g_array_unref(gathers);
  st->sharded = TRUE;
}

/* The stream's collectives under ZeRO stage @zero; the parameter all-gathers of ZeRO 1 and 2
 * (after the step, or ahead of the forward) also go to @gathers. */
static SimTime stream_collectives(const Stream *st, int zero, int M, SimTime *gathers) {
  *gathers = zero == 1 || zero == 2 ? st->all_gather : 0;
  switch (zero) {
  case 0: return st->all_reduce;
  case 1: return st->reduce_scatter + *gathers;  /* reduce-scatters once */
  case 2: return (SimTime)M * st->reduce_scatter + *gathers; /* every microbatch */
  default: return (SimTime)M * (st->unit_reduce_scatter + st->unit_gathers);
  }
}

/* Sum of @d over the ops of chunk @c with index <= @last. */
static SimTime prefix(const MdlStrategy *s, int nops, const SimTime *d, int c, int last) {
  SimTime sum = 0;
  for (int o = 0; o <= last && o < nops; o++)
    if (s->configs[o].stage == c) sum += d[o];
  return sum;
}

struct SimBounder {
  Builder b;
  Chunks k;
  Gaps gaps;
  gboolean gaps_on;          /* not step-expanded collectives (SimOptions) */
  int nranks, ndev, nmeshes;
  SimTime *fwd, *bwd, *wgt;  /* per op, one microbatch (sb_op_durations) */
  SimTime *host_fwd, *host_bwd; /* per op, one microbatch: the host's time to launch its
                                forward (or recomputed forward), and its backward (B and W);
                                NULL without a host (framework none) */
  SimTime *fill, *drain;     /* per rank (0 where they do not apply) */
  int *device;               /* per rank: the first device of its first chunk, -1: none */
  int **index;               /* per rank: that device's mesh index per mesh (-1: not in it) */
  GArray **pairs;            /* per rank: its device's GapPairs */
  gboolean *params;          /* per rank: its device holds weights (steps an optimizer) */
  Stream *streams;           /* per rank: its device's data-parallel stream */
  /* For the strategy's recomputation as of the last refresh: */
  gboolean refreshed;
  MdlRecompute recompute;
  int *group;
  SimTime *gap, *done;       /* per rank: its device's gaps; fill + work + gaps */
  SimTime chain;             /* the compute chain's bound */
  SimTime launches;          /* the most any device's host spends launching (0: no host) */
  /* Per ZeRO stage, for the recomputation as of the last refresh: the communication streams'
   * bound and the all-gather tail's (sim_bounder_bound). */
  gboolean streamed[4];
  SimTime stream[4], tail[4];
};

/* The recomputation-dependent parts: groups, work per device, gaps, the chain bound. */
static void refresh(SimBounder *sb) {
  Builder *b = &sb->b;
  const MdlStrategy *s = b->s;
  if (sb->refreshed && sb->recompute == s->recompute) return;
  sb->refreshed = TRUE;
  sb->recompute = s->recompute;
  memset(sb->streamed, 0, sizeof sb->streamed);
  g_free(sb->group);
  sb->group = mdl_strategy_recompute_groups(s, b->g);
  g_autofree SimTime *per_mesh = g_new0(SimTime, sb->nmeshes);
  for (int o = 0; o < b->nops; o++) {
    SimTime one = sb->fwd[o] + sb->bwd[o] + sb->wgt[o] + (sb->group[o] >= 0 ? sb->fwd[o] : 0);
    per_mesh[s->configs[o].mesh] += one * (SimTime)b->M;
  }
  g_autofree SimTime *work = g_new0(SimTime, sb->ndev);
  for (int m = 0; m < sb->nmeshes; m++) {
    const MdlMesh *mesh = mdl_strategy_mesh(s, m);
    for (int i = 0; i < mesh->ndevices; i++) work[mesh->devices[i]] += per_mesh[m];
  }
  SimTime result = 0;
  for (int d = 0; d < sb->ndev; d++) result = MAX(result, work[d]);
  /* The host: a device's launches run one at a time on its host resource, each before its
   * kernel, so its last kernel starts after all of them. */
  sb->launches = 0;
  if (sb->host_fwd) {
    g_autofree SimTime *host_mesh = g_new0(SimTime, sb->nmeshes);
    for (int o = 0; o < b->nops; o++) {
      SimTime one = sb->host_fwd[o] + sb->host_bwd[o] + (sb->group[o] >= 0 ? sb->host_fwd[o] : 0);
      host_mesh[s->configs[o].mesh] += one * (SimTime)b->M;
    }
    g_autofree SimTime *host = g_new0(SimTime, sb->ndev);
    for (int m = 0; m < sb->nmeshes; m++) {
      const MdlMesh *mesh = mdl_strategy_mesh(s, m);
      for (int i = 0; i < mesh->ndevices; i++) host[mesh->devices[i]] += host_mesh[m];
    }
    for (int d = 0; d < sb->ndev; d++) sb->launches = MAX(sb->launches, host[d]);
    result = MAX(result, sb->launches);
  }
  /* Fill and drain along the ranks' first chunks, for every device of each. */
  for (int r = 0; r < sb->nranks; r++) {
    if (!sb->fill[r] && !sb->drain[r]) continue;
    const MdlMesh *mesh = mdl_strategy_mesh(s, s->configs[sb->k.first[r]].mesh);
    for (int i = 0; i < mesh->ndevices; i++)
      result = MAX(result, sb->fill[r] + work[mesh->devices[i]] + sb->drain[r]);
  }
  /* Gaps: for the first device of each rank's first chunk. */
  for (int r = 0; r < sb->nranks; r++) {
    if (sb->device[r] < 0) continue;
    sb->gap[r] = device_gaps(sb->pairs[r], sb->group, b->M);
    sb->done[r] = sb->fill[r] + work[sb->device[r]] + sb->gap[r];
    result = MAX(result, sb->done[r] + sb->drain[r]);
  }
  sb->chain = result;
}

/* Kernel and host durations per op (sb_op_durations, sim_build_host.c). */
static void bounder_durations(SimBounder *sb) {
  Builder *b = &sb->b;
  const MdlStrategy *strategy = b->s;
  sb->fwd = g_new(SimTime, b->nops);
  sb->bwd = g_new(SimTime, b->nops);
  sb->wgt = g_new(SimTime, b->nops);
  if (!b->no_replay) { /* sb_overlap_split once an op (build_each_microbatch: at each call) */
    gboolean *split = g_new(gboolean, b->nops);
    for (int o = 0; o < b->nops; o++) split[o] = sb_overlap_split(b, o);
    b->overlap_split = split;
  }
  g_autofree gboolean *has_wgt = g_new(gboolean, b->nops); /* sb_has_weight_task, once an op */
  for (int o = 0; o < b->nops; o++) {
    sb_op_durations(b, o, &sb->fwd[o], &sb->bwd[o], &sb->wgt[o]);
    has_wgt[o] = sb_has_weight_task(b, o);
    if (!has_wgt[o]) sb->wgt[o] = 0;
  }
  sb->gaps.wgt = sb->wgt;
  const CmFramework *f = cm_framework_get(strategy->framework);
  if (f) { /* the host tasks' durations, as sim_build_host.c gives them */
    sb->host_fwd = g_new(SimTime, b->nops);
    sb->host_bwd = g_new(SimTime, b->nops);
    for (int o = 0; o < b->nops; o++) {
      const MdlOp *op = mdl_graph_op(b->g, o);
      sb->host_fwd[o] = sim_time_from_seconds(cm_framework_host_time(f, op, CM_HOST_FORWARD));
      sb->host_bwd[o] = strategy->weight_delay || has_wgt[o]
                            ? sim_time_from_seconds(cm_framework_host_time(f, op, CM_HOST_BACKWARD_INPUT)) +
                                  (has_wgt[o] ? sim_time_from_seconds(cm_framework_host_time(f, op, CM_HOST_BACKWARD_WEIGHT)) : 0)
                            : sim_time_from_seconds(cm_framework_host_time(f, op, CM_HOST_BACKWARD));
    }
  }
}

/* The chunks, and fill and drain along the ranks' first chunks (sim_bound.h). */
static void bounder_pipeline(SimBounder *sb) {
  Builder *b = &sb->b;
  const MdlStrategy *strategy = b->s;
  int P = sb->nranks = mdl_strategy_num_ranks(strategy);
  Chunks *k = &sb->k;
  chunks_init(k, b->g, strategy);
  sb->fill = g_new0(SimTime, P);
  sb->drain = g_new0(SimTime, P);
  /* Fill and drain along the ranks' first chunks (not under weight delay, whose W units
   * move behind the last backward). */
  if (P > 1 && !strategy->weight_delay && k->uniform && k->nchunks >= P) {
    g_autofree int *last_mb = g_new(int, P);
    g_autofree gboolean *first_ok = g_new0(gboolean, P);
    for (int r = 0; r < P; r++) {
      int n = 0;
      SimUnit *units = sim_pipeline_units(strategy, r, &n);
      first_ok[r] = n > 0 && units[0].phase == SIM_UNIT_FORWARD && units[0].chunk == r &&
                    units[0].microbatch == 0 && k->first[r] >= 0;
      last_mb[r] = n > 0 && units[n - 1].phase == SIM_UNIT_BACKWARD && units[n - 1].chunk == r
                       ? units[n - 1].microbatch
                       : -1;
      g_free(units);
    }
    for (int r = 1; r < P; r++)
      if (first_ok[r] && first_ok[r - 1] && k->link[r] >= 0)
        sb->fill[r] = sb->fill[r - 1] + prefix(strategy, b->nops, sb->fwd, r - 1, k->link[r]);
    /* Under Megatron's overlap (sb_overlap_split) an op's W follows its B on the chain, but
     * the next stage down waits for B only: a chunk's first op counts its B alone, and rank
     * r's drain starts when B(q_r) ends, W(q_r) before the end of its chain (so W(q_r) is
     * taken off again). */
    g_autofree SimTime *backward = g_new(SimTime, b->nops);
    for (int o = 0; o < b->nops; o++) backward[o] = sb->bwd[o] + sb->wgt[o];
    for (int c = 0; c < k->nchunks; c++)
      if (k->first[c] >= 0) backward[k->first[c]] = sb->bwd[k->first[c]];
    for (int r = 0; r < P; r++) {
      if (last_mb[r] < 0 || k->first[r] < 0) continue;
      for (int c = r; c >= 1 && k->link[c] >= 0; c--)
        sb->drain[r] += prefix(strategy, b->nops, backward, c - 1, k->link[c]);
      SimTime w = sb->wgt[k->first[r]];
      sb->drain[r] = sb->drain[r] > w ? sb->drain[r] - w : 0;
    }
  }
}

/* The ranks' first devices: mesh indices, gap pairs, whether they hold weights. */
static void bounder_ranks(SimBounder *sb) {
  Builder *b = &sb->b;
  const MdlStrategy *strategy = b->s;
  const Chunks *k = &sb->k;
  int P = sb->nranks;
  g_autofree gboolean *weights = g_new0(gboolean, sb->nmeshes); /* per mesh: an op with weights */
  for (int o = 0; o < b->nops; o++) {
    const MdlOp *op = mdl_graph_op(b->g, o);
    for (int i = 0; i < op->ninputs; i++)
      weights[strategy->configs[o].mesh] |= mdl_graph_tensor(b->g, op->inputs[i].tensor)->is_weight;
  }
  sb->device = g_new(int, P);
  sb->index = g_new0(int *, P);
  sb->pairs = g_new0(GArray *, P);
  sb->params = g_new0(gboolean, P);
  sb->streams = g_new0(Stream, P);
  sb->gap = g_new0(SimTime, P);
  sb->done = g_new0(SimTime, P);
  for (int r = 0; r < P; r++) {
    sb->device[r] = -1;
    if (!sb->gaps_on || r >= k->nchunks || k->first[r] < 0) continue;
    int d = sb->device[r] = mdl_strategy_mesh(strategy, strategy->configs[k->first[r]].mesh)->devices[0];
    sb->index[r] = g_new(int, sb->nmeshes);
    for (int m = 0; m < sb->nmeshes; m++) {
      sb->index[r][m] = mesh_index_of(mdl_strategy_mesh(strategy, m), d);
      sb->params[r] |= weights[m] && sb->index[r][m] >= 0;
    }
    sb->pairs[r] = device_pairs(&sb->gaps, k, sb->index[r]);
  }
}

/* Everything that depends on @strategy (b's graph, cluster and parameters set). */
static void bounder_init(SimBounder *sb, const MdlStrategy *strategy) {
  Builder *b = &sb->b; /* the fields sb_op_durations and the layouts read */
  b->s = strategy;
  b->nops = mdl_graph_num_ops(b->g);
  b->M = b->Msize = strategy->num_microbatches;
  b->units_s = *strategy;
  b->dtype_bytes = dev_dtype_bytes(strategy->dtype);
  sb->gaps.b = b;
  sb->nmeshes = (int)strategy->meshes->len;
  sb->ndev = dev_cluster_num_devices(b->c);
  bounder_durations(sb);
  bounder_pipeline(sb);
  bounder_ranks(sb);
}

SimBounder *sim_bounder_new(const MdlGraph *graph, const MdlStrategy *strategy,
                            const DevCluster *cluster, const CmParams *params,
                            const SimOptions *options) {
  SimBounder *sb = g_new0(SimBounder, 1);
  /* build_each_microbatch: no memos (the kernel times', the split's, the collectives'), the
   * reference tests compare the memos with. */
  sb->b = (Builder){.g = graph, .c = cluster, .p = params, .sample_tdim = mdl_tensor_sample_dims(graph),
                    .no_replay = options && options->build_each_microbatch};
  sb->gaps_on = !options || !options->step_collectives;
  bounder_init(sb, strategy);
  return sb;
}

SimTime sim_bounder_chain(SimBounder *sb) {
  refresh(sb);
  return sb->chain;
}

void sim_bounder_op_gaps(SimBounder *sb, int *prev, SimTime *gap) {
  refresh(sb); /* the recomputation groups */
  for (int o = 0; o < sb->b.nops; o++) {
    prev[o] = -1;
    gap[o] = 0;
  }
  if (sb->nranks < 1 || sb->device[0] < 0) return; /* no gaps (step mode, no uniform chunk) */
  const GArray *pairs = sb->pairs[0];
  for (guint i = 0; i < pairs->len; i++) { /* as device_gaps counts them, per microbatch */
    const GapPair *q = &g_array_index(pairs, GapPair, i);
    SimTime t = q->fwd;
    if (sb->group[q->o] >= 0 && sb->group[q->o] == sb->group[q->p]) t += q->fwd;
    if (sb->group[q->p] < 0 || sb->group[q->p] == sb->group[q->o]) t += q->bwd;
    prev[q->o] = q->p;
    gap[q->o] += t;
  }
}

void sim_bounder_op_compute(SimBounder *sb, SimTime *out) {
  refresh(sb); /* the recomputation groups */
  for (int o = 0; o < sb->b.nops; o++)
    out[o] = sb->fwd[o] + sb->bwd[o] + sb->wgt[o] + (sb->group[o] >= 0 ? sb->fwd[o] : 0);
}

SimTime sim_bounder_launches(SimBounder *sb) {
  refresh(sb);
  return sb->launches;
}

void sim_bounder_op_passes(SimBounder *sb, SimTime *fwd, SimTime *bwd, SimTime *wgt) {
  memcpy(fwd, sb->fwd, sizeof(SimTime) * (gsize)sb->b.nops);
  memcpy(bwd, sb->bwd, sizeof(SimTime) * (gsize)sb->b.nops);
  memcpy(wgt, sb->wgt, sizeof(SimTime) * (gsize)sb->b.nops);
}

SimTime sim_bounder_bound(SimBounder *sb) {
  Builder *b = &sb->b;
  refresh(sb);
  int zero = b->s->zero_stage;
  g_return_val_if_fail(zero >= 0 && zero <= 3, sb->chain);
  if (!sb->streamed[zero]) {
    if (!b->users) sb_users_init(b); /* per tensor: the ops that read it, as the builder's */
    sb->stream[zero] = sb->tail[zero] = 0;
    for (int r = 0; r < sb->nranks; r++) {
      if (sb->device[r] < 0) continue;
      Stream *st = &sb->streams[r];
      if (!st->synced) stream_syncs(&sb->gaps, sb->index[r], st);
      if (zero >= 3 && !st->sharded) stream_shards(&sb->gaps, sb->index[r], st);
      SimTime gathers;
      /* The data-parallel stream alone: the gaps' collectives run on another stream. */
      sb->stream[zero] = MAX(sb->stream[zero], stream_collectives(st, zero, b->M, &gathers));
      if (sb->params[r]) sb->tail[zero] = MAX(sb->tail[zero], sb->done[r] + gathers);
    }
    sb->streamed[zero] = TRUE;
  }
  /* ZeRO 1 and 2 gather the updated parameters after the optimizer step, which follows the
   * device's last compute task (not with overlap_param_gather: ahead of the forward). */
  gboolean tail = (zero == 1 || zero == 2) && !b->s->overlap_param_gather;
  return MAX(MAX(sb->chain, sb->stream[zero]), tail ? sb->tail[zero] : 0);
}

/* Frees what bounder_init made; b's graph-level parts (users, sample dims) stay. */
static void bounder_clear(SimBounder *sb) {
  Builder *b = &sb->b;
  if (sb->gaps.items) {
    g_array_unref(sb->gaps.items);
    g_array_unref(sb->gaps.buckets);
  }
  if (sb->gaps.unit_buckets) g_array_unref(sb->gaps.unit_buckets);
  g_free(b->fsdp_unit);
  g_free((gboolean *)b->overlap_split);
  for (int r = 0; r < sb->nranks; r++) {
    g_free(sb->index[r]);
    if (sb->pairs[r]) g_array_unref(sb->pairs[r]);
  }
  chunks_clear(&sb->k);
  g_free(sb->index);
  g_free(sb->pairs);
  g_free(sb->fwd);
  g_free(sb->bwd);
  g_free(sb->wgt);
  g_free(sb->host_fwd);
  g_free(sb->host_bwd);
  g_free(sb->fill);
  g_free(sb->drain);
  g_free(sb->device);
  g_free(sb->params);
  g_free(sb->streams);
  g_free(sb->gap);
  g_free(sb->done);
  g_free(sb->group);
}

void sim_bounder_set_strategy(SimBounder *sb, const MdlStrategy *strategy) {
  g_return_if_fail(sb != NULL && strategy != NULL);
  bounder_clear(sb); /* reads nothing of the previous strategy */
  const MdlGraph *graph = sb->b.g;
  const DevCluster *cluster = sb->b.c;
  const CmParams *params = sb->b.p;
  int *sample_tdim = sb->b.sample_tdim;
  SbUsers *users = sb->b.users;
  gboolean no_replay = sb->b.no_replay;
  SbCollectiveMemo *collectives = sb->b.collectives || no_replay ? sb->b.collectives : sb_collective_memo_new();
  gboolean gaps_on = sb->gaps_on;
  memset(sb, 0, sizeof *sb); /* the per-strategy memos too: each strategy starts with empty ones */
  sb->b = (Builder){.g = graph, .c = cluster, .p = params, .sample_tdim = sample_tdim, .users = users,
                    .collectives = collectives, /* keyed by what does not change here */
                    .no_replay = no_replay};
  sb->gaps_on = gaps_on;
  bounder_init(sb, strategy);
}

void sim_bounder_free(SimBounder *sb) {
  if (!sb) return;
  Builder *b = &sb->b;
  bounder_clear(sb);
  sb_users_free(b);
  g_free(b->sample_tdim);
  sb_collective_memo_free(b->collectives);
  g_free(sb);
}

SimTime sim_compute_bound(const MdlGraph *graph, const MdlStrategy *strategy,
                          const DevCluster *cluster, const CmParams *params) {
  SimOptions step = {0};
  step.step_collectives = TRUE; /* no gaps */
  SimBounder *sb = sim_bounder_new(graph, strategy, cluster, params, &step);
  SimTime result = sim_bounder_chain(sb);
  sim_bounder_free(sb);
  return result;
}

SimTime sim_iteration_bound(const MdlGraph *graph, const MdlStrategy *strategy,
                            const DevCluster *cluster, const CmParams *params,
                            const SimOptions *options) {
  SimBounder *sb = sim_bounder_new(graph, strategy, cluster, params, options);
  SimTime result = sim_bounder_bound(sb);
  sim_bounder_free(sb);
  return result;
}
