/* sim/build — SBP resharding between layouts on one mesh (one collective per group along each
 * axis that changes), moves between meshes (device-aligned send/recv or cross-mesh resharding
 * plans), and the forward and backward data dependencies they carry.
 * Tried, not kept (2026-12-02, 175B interleaved point, callgrind, 3 predictions): filling a
 * forward conversion's input without the tp_overlap test in the loop (then a second pass where
 * it applies): 697.1 M -> 697.8 M instructions. */
#include "sim/sim-int.h"
#include "sim/sim_build-int.h"

/* Row-major strides of a mesh. */
void sb_mesh_strides(const MdlMesh *mesh, int *stride) {
  int s = 1;
  for (int a = mesh->ndims - 1; a >= 0; a--) {
    stride[a] = s;
    s *= mesh->shape[a];
  }
}

/* Mesh indices of the group through @base varying over the axes in @mask; returns its size. */
int sb_group_members(const MdlMesh *mesh, unsigned mask, int base, int *out) {
  int stride[MDL_MAX_MESH_AXES];
  sb_mesh_strides(mesh, stride);
  int count = 1;
  for (int a = 0; a < mesh->ndims; a++)
    if (mask & (1u << a)) count *= mesh->shape[a];
  for (int k = 0; k < count; k++) {
    int rem = k, idx = base;
    for (int a = mesh->ndims - 1; a >= 0; a--) {
      if (!(mask & (1u << a))) continue;
      idx += (rem % mesh->shape[a]) * stride[a];
      rem /= mesh->shape[a];
    }
    out[k] = idx;
  }
  return count;
}

/* Whether mesh index @idx is a group base (coordinate 0 on every axis in @mask). */
gboolean sb_is_group_base(const MdlMesh *mesh, unsigned mask, int idx) {
  int stride[MDL_MAX_MESH_AXES];
  sb_mesh_strides(mesh, stride);
  for (int a = 0; a < mesh->ndims; a++)
    if ((mask & (1u << a)) && (idx / stride[a]) % mesh->shape[a] != 0) return FALSE;
  return TRUE;
}

/* The duration and link class of a collective (sb_add_comm_task), from the builder's memo
 * when the same collective was just costed. */
static SimTime comm_duration(Builder *b, CmCollective coll, const int *devices, int p,
                             double bytes, uint8_t *link) {
  for (int k = 0; k < (int)G_N_ELEMENTS(b->memo); k++) {
    const SbCostMemo *m = &b->memo[k];
    if (m->p == p && m->coll == (int)coll && m->bytes == bytes &&
        memcmp(m->devices, devices, sizeof(int) * (gsize)p) == 0) {
      *link = m->link;
      return m->duration;
    }
  }
  *link = (uint8_t)cm_group_link(b->c, devices, p).link;
  SimTime d = sim_time_from_seconds(cm_group_collective_time(b->p, b->c, coll, devices, p, bytes));
  if (p <= SB_MEMO_DEVICES) {
    SbCostMemo *m = &b->memo[b->memo_next];
    b->memo_next = (b->memo_next + 1) % (int)G_N_ELEMENTS(b->memo);
    *m = (SbCostMemo){.coll = (int)coll, .p = p, .bytes = bytes, .duration = d, .link = *link};
    memcpy(m->devices, devices, sizeof(int) * (gsize)p);
  }
  return d;
}

/* A collective over the @p @devices of a group (its cost), occupying stream @stream of the
 * @nsim of them that are simulated (@sim_devices): one task timed by the alpha-beta formula,
 * or (step mode) its transfers on link resources between a gate and a join. Inputs connect to
 * .gate, consumers wait for .join. */
SimCollectiveSpan sb_add_comm_task(Builder *b, SimTaskKind kind, SimStream stream,
                                   CmCollective coll, const int *devices, int p,
                                   const int *sim_devices, int nsim, double bytes, int op,
                                   int tensor, int mb) {
  /* Without overlap a collective also holds its members' compute streams. */
  int nres = b->s->overlap ? nsim : 2 * nsim;
  uint32_t stack_res[64];
  uint32_t *res = nres <= 64 ? stack_res : g_new(uint32_t, nres);
  for (int i = 0; i < nsim; i++) res[i] = sim_resource_stream(sim_devices[i], stream);
  for (int i = nsim; i < nres; i++) res[i] = sim_resource_compute(sim_devices[i - nsim]);
  SimTask t = {0};
  t.kind = (uint8_t)kind;
  t.collective = (uint8_t)coll;
  t.op = op;
  t.tensor = tensor;
  t.microbatch = mb;
  t.bytes = (float)bytes;
  t.group_size = (uint32_t)p;
  t.phase = (uint8_t)b->phase;
  if (b->step && sim_network_supports(coll)) {
    t.link = (uint8_t)cm_group_link(b->c, devices, p).link;
    if (res != stack_res) g_free(res);
    g_autofree gboolean *simulated = g_new0(gboolean, p);
    for (int i = 0; i < p; i++)
      for (int k = 0; k < nsim && !simulated[i]; k++) simulated[i] = devices[i] == sim_devices[k];
    CmGroupShape shape;
    CmNcclRingSteps ring;
    cm_group_shape(b->c, devices, p, &shape);
    gboolean nccl = cm_nccl_ring_steps(coll, &shape, b->c, bytes, &ring);
    return sim_network_expand(b->tg, b->c, &t, coll, devices, p, simulated, bytes, !b->s->overlap,
                              stream, nccl ? &ring : NULL);
  }
  t.duration = comm_duration(b, coll, devices, p, bytes, &t.link);
  uint32_t id = sim_task_graph_add(b->tg, &t, res, nres);
  if (res != stack_res) g_free(res);
  return (SimCollectiveSpan){id, id};
}

/* Adds edges from each distinct task in @deps (n entries) to @to. */
void sb_edges_from_distinct(Builder *b, const uint32_t *deps, int n, uint32_t to) {
  for (int i = 0; i < n; i++) {
    gboolean dup = FALSE;
    for (int j = 0; j < i && !dup; j++) dup = deps[j] == deps[i];
    if (!dup && deps[i] != NO_TASK) sim_task_graph_edge(b->tg, deps[i], to);
  }
}

/* The bases of the groups along axis @a of mesh @m that have a simulated member (the others
 * are replicas' groups, which no task represents), computed once per builder. */
static const GArray *simulated_groups(Builder *b, int m, int a) {
  if (!b->sim_groups) b->sim_groups = g_new0(GArray *, b->s->meshes->len * MDL_MAX_MESH_AXES);
  GArray **slot = &b->sim_groups[m * MDL_MAX_MESH_AXES + a];
  if (*slot) return *slot;
  const MdlMesh *mesh = mdl_strategy_mesh(b->s, m);
  *slot = g_array_new(FALSE, FALSE, sizeof(int));
  g_autofree int *members = g_new(int, mesh->ndevices);
  for (int base = 0; base < mesh->ndevices; base++) {
    if (!sb_is_group_base(mesh, 1u << a, base)) continue;
    int p = sb_group_members(mesh, 1u << a, base, members);
    gboolean simulated = FALSE;
    for (int i = 0; i < p && !simulated; i++) simulated = b->rep_pos[m][members[i]] >= 0;
    if (simulated) g_array_append_val(*slot, base);
  }
  return *slot;
}

/* Converts tensor @t from @from to @to on one mesh; @ready holds per mesh index the task the
 * data waits for and is updated in place. Each axis is converted by one collective per group
 * along it; the message size n follows AutoDDL Table 2 (the larger of the per-device sizes
 * before and after the step). The steps run so that the data is smallest when it moves: first
 * the free ones (Broadcast to a Split slice or to Partial), then the reductions of partial sums
 * (all-reduce, reduce-scatter), then the all-to-alls, then the all-gathers; axes in order
 * within each. (So a row-parallel expert GEMM's output, partial over tp and split by expert,
 * is reduce-scattered over tp before its all-to-all over ep, as Megatron-Core's
 * token_unpermutation runs RS(TP) before A2A(EP).) */
int sb_conversion_steps(const Builder *b, int mesh_index, MdlLayout from, MdlLayout to, int t,
                        SbConversionStep *steps) {
  if (memcmp(&from, &to, sizeof from) == 0) return 0; /* every axis below would be skipped */
  const MdlMesh *mesh = mdl_strategy_mesh(b->s, mesh_index);
  int n = 0;
  for (int step = 0; step < 4 * mesh->ndims; step++) {
    int a = step % mesh->ndims, pass = step / mesh->ndims;
    int src = from.axis[a], dst = to.axis[a];
    if (src == dst || mesh->shape[a] == 1) continue;
    /* Pass 0: Broadcast to Split (a local slice) or to Partial (keep one copy), free; 1: partial
     * sums reduced; 2: all-to-all; 3: all-gather. */
    int kind = src == MDL_LAYOUT_PARTIAL ? 1 : src < 0 ? 0 : dst >= 0 ? 2 : 3;
    if (kind != pass) continue;
    if (kind == 0) {
      from.axis[a] = (int8_t)dst;
      continue;
    }
    CmCollective coll = kind == 1 ? (dst == MDL_LAYOUT_BROADCAST ? CM_ALL_REDUCE : CM_REDUCE_SCATTER)
                        : kind == 2 ? CM_ALL_TO_ALL
                                    : CM_ALL_GATHER;
    double before = mdl_layout_local_elements(b->g, t, b->sample_tdim[t], &from, mesh, b->Msize);
    from.axis[a] = (int8_t)dst;
    double after = mdl_layout_local_elements(b->g, t, b->sample_tdim[t], &from, mesh, b->Msize);
    steps[n++] = (SbConversionStep){a, coll, MAX(before, after)};
  }
  return n;
}

void sb_convert_on_mesh(Builder *b, int mesh_index, MdlLayout from, MdlLayout to,
                            int t, int op, int mb, uint32_t *ready) {
  const MdlMesh *mesh = mdl_strategy_mesh(b->s, mesh_index);
  const int *pos = b->rep_pos[mesh_index];
  /* Scratch on the stack for meshes of up to 64 devices (the search's hot path), else heap. */
  int stack[3 * 64];
  uint32_t stack_deps[64];
  g_autofree int *heap = mesh->ndevices > 64 ? g_new(int, 3 * (gsize)mesh->ndevices) : NULL;
  g_autofree uint32_t *heap_deps = mesh->ndevices > 64 ? g_new(uint32_t, mesh->ndevices) : NULL;
  int *members = heap ? heap : stack, *devices = members + mesh->ndevices,
      *sim = devices + mesh->ndevices;
  uint32_t *deps = heap_deps ? heap_deps : stack_deps;
  SbConversionStep steps[MDL_MAX_MESH_AXES];
  int nsteps = sb_conversion_steps(b, mesh_index, from, to, t, steps);
  for (int k = 0; k < nsteps; k++) {
    int a = steps[k].axis;
    double bytes = steps[k].elements * b->dtype_bytes;
    const GArray *bases = simulated_groups(b, mesh_index, a);
    for (guint g = 0; g < bases->len; g++) {
      int base = g_array_index(bases, int, g);
      int p = sb_group_members(mesh, 1u << a, base, members), nsim = 0;
      for (int i = 0; i < p; i++) {
        devices[i] = mesh->devices[members[i]];
        if (pos[members[i]] < 0) continue;
        deps[nsim] = ready[members[i]];
        sim[nsim++] = devices[i];
      }
      if (nsim == 0) continue; /* a replica group: its twin through a representative runs */
      SimCollectiveSpan task = sb_add_comm_task(b, SIM_TASK_COMM, SIM_STREAM_COMM, steps[k].coll,
                                                devices, p, sim, nsim, bytes, op, t, mb);
      sb_edges_from_distinct(b, deps, nsim, task.gate);
      for (int i = 0; i < p; i++) ready[members[i]] = task.join;
    }
  }
}

gboolean sb_identity_conversion(const Builder *b, int src_mesh, MdlLayout from, int dst_mesh,
                                MdlLayout to, int t) {
  SbConversionStep steps[MDL_MAX_MESH_AXES];
  return src_mesh == dst_mesh && sb_conversion_steps(b, src_mesh, from, to, t, steps) == 0;
}

/* @from with its partial sums reduced (P -> B): what a cross-mesh move starts from. */
MdlLayout sb_reduced(MdlLayout from) {
  for (int a = 0; a < MDL_MAX_MESH_AXES; a++)
    if (from.axis[a] == MDL_LAYOUT_PARTIAL) from.axis[a] = MDL_LAYOUT_BROADCAST;
  return from;
}

/* Whether a move between two meshes is device-aligned: same mesh shape and, after reducing
 * partial sums, the same layout, so device i of one sends its whole tile to device i of the
 * other (Megatron's stage-to-stage send/recv). Other moves are cross-mesh resharding, and so
 * is every move when the run chose a cross-mesh method (SimOptions.crossmesh). */
gboolean sb_aligned_move(const Builder *b, int src_mesh, MdlLayout from, int dst_mesh,
                             MdlLayout to) {
  if (b->crossmesh_all) return FALSE;
  const MdlMesh *sm = mdl_strategy_mesh(b->s, src_mesh), *dm = mdl_strategy_mesh(b->s, dst_mesh);
  if (sm->ndims != dm->ndims || memcmp(sm->shape, dm->shape, sizeof(int) * (gsize)sm->ndims) != 0)
    return FALSE;
  MdlLayout r = sb_reduced(from);
  for (int a = 0; a < sm->ndims; a++)
    if (sm->shape[a] > 1 && r.axis[a] != to.axis[a]) return FALSE;
  return TRUE;
}

int sb_scatter_gather_axis(const Builder *b, int src_mesh, MdlLayout start, int dst_mesh,
                           MdlLayout to) {
  if (b->s->framework != MDL_FRAMEWORK_MEGATRON_LM) return -1;
  const MdlMesh *sm = mdl_strategy_mesh(b->s, src_mesh), *dm = mdl_strategy_mesh(b->s, dst_mesh);
  for (int i = 0; i < dm->ndevices; i++)
    if (sm->devices[i] == dm->devices[i]) return -1; /* a local copy: nothing crosses a link */
  int axis = -1;
  for (int a = 0; a < dm->ndims; a++) {
    if (dm->shape[a] <= 1 || to.axis[a] != MDL_LAYOUT_BROADCAST || start.axis[a] != MDL_LAYOUT_BROADCAST)
      continue;
    if (axis >= 0) return -1; /* replicated over two axes: not Megatron's case */
    axis = a;
  }
  return axis;
}

/* The receivers' all-gathers of a scattered move (sb_scatter_gather_axis): per group along
 * @axis of @mesh with a simulated member, once every member's slice (@dst_ready) has arrived;
 * @bytes: the whole tensor per device. @dst_ready then holds the all-gathers. */
static void gather_scattered(Builder *b, int mesh_index, int axis, double bytes, int op, int t,
                             int mb, uint32_t *dst_ready) {
  const MdlMesh *mesh = mdl_strategy_mesh(b->s, mesh_index);
  int stack_members[64], stack_devices[64], stack_sim[64];
  uint32_t stack_deps[64];
  gboolean heap = mesh->ndevices > 64;
  int *members = heap ? g_new(int, mesh->ndevices) : stack_members;
  int *devices = heap ? g_new(int, mesh->ndevices) : stack_devices;
  int *sim = heap ? g_new(int, mesh->ndevices) : stack_sim;
  uint32_t *deps = heap ? g_new(uint32_t, mesh->ndevices) : stack_deps;
  const GArray *bases = simulated_groups(b, mesh_index, axis);
  for (guint g = 0; g < bases->len; g++) {
    int p = sb_group_members(mesh, 1u << axis, g_array_index(bases, int, g), members), nsim = 0;
    for (int i = 0; i < p; i++) {
      devices[i] = mesh->devices[members[i]];
      if (b->rep_pos[mesh_index][members[i]] < 0) continue;
      deps[nsim] = dst_ready[members[i]];
      sim[nsim++] = devices[i];
    }
    SimCollectiveSpan task = sb_add_comm_task(b, SIM_TASK_COMM, SIM_STREAM_COMM, CM_ALL_GATHER,
                                              devices, p, sim, nsim, bytes, op, t, mb);
    sb_edges_from_distinct(b, deps, nsim, task.gate);
    for (int i = 0; i < p; i++)
      if (b->rep_pos[mesh_index][members[i]] >= 0) dst_ready[members[i]] = task.join;
  }
  if (heap) {
    g_free(members);
    g_free(devices);
    g_free(sim);
    g_free(deps);
  }
}

/* The cross-mesh plan (cross-mesh resharding paper, sections 3.1-3.2: unit tasks, broadcast,
 * load balancing) for one move of a microbatch of tensor @t, planned once and reused. */
const SimCrossMeshPlan *sb_crossmesh_plan(Builder *b, int t, int src_mesh, MdlLayout from,
                                          int dst_mesh, MdlLayout to, GError **error) {
  CrossMeshCache key = {t, src_mesh, dst_mesh, from, to, NULL};
  const CrossMeshCache *known = g_hash_table_lookup(b->plans, &key);
  if (known) return known->plan;
  const MdlTensor *tensor = mdl_graph_tensor(b->g, t);
  int64_t shape[MDL_MAX_DIMS];
  for (int i = 0; i < tensor->ndims; i++)
    shape[i] = tensor->shape[i] / (i == b->sample_tdim[t] ? b->Msize : 1);
  SimCrossMeshPlan *plan =
      sim_crossmesh_plan_new(b->c, mdl_strategy_mesh(b->s, src_mesh), from,
                             mdl_strategy_mesh(b->s, dst_mesh), to, shape, tensor->ndims,
                             b->dtype_bytes, &b->crossmesh, error);
  /* The strategy was validated, but two tilings may still cut a tensor into too many slices:
   * the estimate (sim_build_estimate.c) plans every move first and reports that. */
  if (!plan) {
    g_prefix_error(error, "tensor %s: ", tensor->name);
    return NULL;
  }
  CrossMeshCache *c = g_new(CrossMeshCache, 1);
  *c = (CrossMeshCache){t, src_mesh, dst_mesh, from, to, plan};
  g_hash_table_add(b->plans, c);
  return plan;
}

guint sb_crossmesh_cache_hash(gconstpointer key) {
  const CrossMeshCache *c = key;
  guint h = 2166136261u; /* FNV-1a over the fields (layouts are int8 arrays: no padding) */
  const int ints[3] = {c->t, c->src, c->dst};
  const guint8 *parts[3] = {(const guint8 *)ints, (const guint8 *)&c->from, (const guint8 *)&c->to};
  const gsize sizes[3] = {sizeof ints, sizeof c->from, sizeof c->to};
  for (int p = 0; p < 3; p++)
    for (gsize i = 0; i < sizes[p]; i++) {
      h ^= parts[p][i];
      h *= 16777619u;
    }
  return h;
}

gboolean sb_crossmesh_cache_equal(gconstpointer a, gconstpointer b) {
  const CrossMeshCache *x = a, *y = b;
  return x->t == y->t && x->src == y->src && x->dst == y->dst &&
         memcmp(&x->from, &y->from, sizeof x->from) == 0 && memcmp(&x->to, &y->to, sizeof x->to) == 0;
}

void sb_crossmesh_cache_free(gpointer data) {
  CrossMeshCache *c = data;
  sim_crossmesh_plan_free(c->plan);
  g_free(c);
}

void sb_convert(Builder *b, int src_mesh, MdlLayout from, const uint32_t *src_ready,
                    int dst_mesh, MdlLayout to, int t, int op, int mb, uint32_t *dst_ready) {
  const MdlMesh *sm = mdl_strategy_mesh(b->s, src_mesh);
  const MdlMesh *dm = mdl_strategy_mesh(b->s, dst_mesh);
  /* a copy to update: on the stack for meshes of up to 256 devices (once per microbatch) */
  uint32_t stack_ready[256];
  g_autofree uint32_t *heap_ready = sm->ndevices > 256 ? g_new(uint32_t, sm->ndevices) : NULL;
  uint32_t *ready = heap_ready ? heap_ready : stack_ready;
  memcpy(ready, src_ready, sizeof(uint32_t) * (gsize)sm->ndevices);
  gboolean same_shape = sm->ndims == dm->ndims &&
                        memcmp(sm->shape, dm->shape, sizeof(int) * (gsize)sm->ndims) == 0;
  if (src_mesh == dst_mesh) {
    sb_convert_on_mesh(b, src_mesh, from, to, t, op, mb, ready);
    memcpy(dst_ready, ready, sizeof(uint32_t) * (gsize)dm->ndevices);
    return;
  }
  /* Partial sums are reduced on the source mesh before anything moves. */
  MdlLayout start = sb_reduced(from);
  sb_convert_on_mesh(b, src_mesh, from, start, t, op, mb, ready);
  if (!sb_aligned_move(b, src_mesh, from, dst_mesh, to)) {
    SimTask tag = {0};
    tag.kind = SIM_TASK_COMM;
    tag.op = op;
    tag.tensor = t;
    tag.microbatch = mb;
    tag.phase = (uint8_t)b->phase;
    /* Planned (and checked) by the estimate before the build: found in the cache. */
    const SimCrossMeshPlan *plan = sb_crossmesh_plan(b, t, src_mesh, start, dst_mesh, to, NULL);
    g_assert(plan);
    sim_crossmesh_emit(plan, b->tg, &tag, ready, dst_ready);
    for (int j = 0; j < dm->ndevices; j++)
      if (dst_ready[j] == SIM_CROSSMESH_NO_TASK) dst_ready[j] = NO_TASK;
    return;
  }
  double bytes = mdl_layout_local_elements(b->g, t, b->sample_tdim[t], &to, dm, b->Msize) * b->dtype_bytes;
  int scatter = sb_scatter_gather_axis(b, src_mesh, start, dst_mesh, to);
  double sent = scatter >= 0 ? bytes / dm->shape[scatter] : bytes; /* one slice a pair */
  for (int j = 0; j < dm->ndevices; j++) {
    dst_ready[j] = NO_TASK;
    if (b->rep_pos[dst_mesh][j] < 0) continue;
    int i = same_shape ? j : j % sm->ndevices;
    int pair[2] = {sm->devices[i], dm->devices[j]};
    i = b->rep_of[src_mesh][i]; /* a replica's data is ready when its representative's is */
    if (pair[0] == pair[1]) {
      dst_ready[j] = ready[i];
      continue;
    }
    SimCollectiveSpan task = sb_add_comm_task(b, SIM_TASK_COMM, SIM_STREAM_P2P, CM_SEND_RECV, pair,
                                              2, pair, 2, sent, op, t, mb);
    if (ready[i] != NO_TASK) sim_task_graph_edge(b->tg, ready[i], task.gate);
    dst_ready[j] = task.join;
  }
  if (scatter >= 0) gather_scattered(b, dst_mesh, scatter, bytes, op, t, mb, dst_ready);
}

/* sb_convert for microbatch @mb, built and recorded by @replay (sb_replay_many copies it). */
static void convert_microbatch(Builder *b, SbReplay *replay, int src_mesh, MdlLayout from,
                               const uint32_t *src_ready, int dst_mesh, MdlLayout to, int t,
                               int op, int mb, uint32_t *dst_ready) {
  SbMark begin = sb_mark(b);
  sb_convert(b, src_mesh, from, src_ready, dst_mesh, to, t, op, mb, dst_ready);
  sb_replay_record(b, replay, begin, src_ready, mb, dst_ready);
}

/* The forward conversion of tensor @t to (@mesh, @layout), built once and shared by every
 * consumer that needs the same layout; @recomputed: of the value its producer's recomputation
 * (R) gives, which a recomputed consumer reads (the forward's resharding collectives run again,
 * as they do when Megatron re-runs a checkpointed layer). */
/* Forward conversion @cv of tensor @t from its producer @p's layout @from, microbatch by
 * microbatch (each one's input at the producer's representatives: @in_c, pn a microbatch),
 * built for the first and copied to the rest where they repeat it (sb_replay_many). */
static void convert_forward(Builder *b, Conversion *cv, int t, int p, MdlLayout from,
                            int consumer, const uint32_t *in_c) {
  int pm = cfg(b, p)->mesh, mesh = cv->mesh, nrep = b->nrep[mesh];
  const int pn = b->nrep[pm], *pidx = b->rep_idx[pm];
  g_autofree uint32_t *src = g_new(uint32_t, mesh_of(b, p)->ndevices);
  g_autofree uint32_t *dst = g_new(uint32_t, mdl_strategy_mesh(b->s, mesh)->ndevices);
  for (int i = 0; i < mesh_of(b, p)->ndevices; i++) src[i] = NO_TASK; /* replicas: no task */
  SbReplay replay;
  sb_replay_init(&replay, b, pidx, pn, b->rep_idx[mesh], nrep);
  g_autofree uint32_t *out_c = g_new(uint32_t, (gsize)b->M * (gsize)MAX(nrep, 1));
  for (int mb = 0; mb < b->M;) {
    /* the next microbatches copied at once while they repeat the recording (outputs: the
     * representatives' entries, as cv->ready lists them) */
    int n = sb_replay_many(b, &replay, in_c + (gsize)mb * pn, mb, b->M - mb, out_c, NULL);
    if (n) {
      memcpy(cv->ready + (gsize)mb * nrep, out_c, sizeof(uint32_t) * (gsize)n * (gsize)nrep);
      mb += n;
      continue;
    }
    for (int r = 0; r < pn; r++) src[pidx[r]] = in_c[mb * pn + r];
    convert_microbatch(b, &replay, pm, from, src, mesh, cv->layout, t, consumer, mb, dst);
    for (int r = 0; r < nrep; r++) cv->ready[mb * nrep + r] = dst[b->rep_idx[mesh][r]];
    mb++;
  }
  sb_replay_clear(&replay);
}

const Conversion *sb_forward_conversion(Builder *b, int t, int consumer, MdlLayout layout,
                                        gboolean recomputed) {
  int mesh = cfg(b, consumer)->mesh;
  GPtrArray **slot = recomputed ? &b->rec_conversions[t] : &b->conversions[t];
  if (!*slot) *slot = g_ptr_array_new_with_free_func(sb_conversion_free);
  GPtrArray *list = *slot;
  for (guint i = 0; i < list->len; i++) {
    Conversion *cv = g_ptr_array_index(list, i);
    if (cv->mesh == mesh && memcmp(&cv->layout, &layout, sizeof layout) == 0) return cv;
  }
  int p = mdl_graph_tensor(b->g, t)->producer, pm = cfg(b, p)->mesh;
  const MdlOp *pop = mdl_graph_op(b->g, p);
  MdlLayout from = mdl_layout_of_operand(pop, &pop->output, TRUE, cfg(b, p), mesh_of(b, p));
  Conversion *cv = g_new(Conversion, 1);
  cv->mesh = mesh;
  cv->layout = layout;
  int nrep = b->nrep[mesh], pn = b->nrep[pm];
  cv->ready = g_new(uint32_t, (gsize)b->M * (gsize)MAX(nrep, 1));
  gboolean ahead = !recomputed && mesh == pm && sb_overlapped_output(b, p);
  /* nothing to build (one mesh: the same representatives): the tasks pass through */
  gboolean identity = sb_identity_conversion(b, pm, from, mesh, layout, t);
  g_assert(!identity || pn == nrep);
  /* every microbatch's input at the producer's representatives, its task of microbatch mb
   * on representative r at base + mb * pn + r (task_fwd); straight into cv->ready when it
   * passes through */
  g_autofree uint32_t *own = identity ? NULL : g_new(uint32_t, (gsize)b->M * (gsize)MAX(pn, 1));
  uint32_t *in_c = identity ? cv->ready : own;
  const uint32_t base = (recomputed ? b->rec_base : b->fwd_base)[p], *chain_prev = b->chain_prev;
  for (int j = 0; j < b->M * pn; j++) {
    uint32_t x = base + (uint32_t)j;
    in_c[j] = ahead && chain_prev[x] != NO_TASK ? chain_prev[x] /* tp_overlap: the
                                                                 reduce-scatter starts with the
                                                                 GEMM */
                                                : x;
  }
  /* the producer's block itself (in_c[j] = base + j) */
  cv->block = identity && !ahead ? (uint32_t)((recomputed ? 3 : 0) * b->nops + p) : NO_TASK;
  if (!identity) convert_forward(b, cv, t, p, from, consumer, in_c);
  g_ptr_array_add(list, cv);
  return cv;
}

gboolean sb_overlapped_input(const Builder *b, int o, int k) {
  const MdlOp *op = mdl_graph_op(b->g, o);
  const MdlTensor *t = mdl_graph_tensor(b->g, op->inputs[k].tensor);
  if (t->producer < 0 || cfg(b, t->producer)->mesh != cfg(b, o)->mesh) return FALSE;
  if (b->s->tp_overlap && op->kind == MDL_OP_MATMUL && !t->is_weight) return TRUE;
  if (b->s->cp <= 1 || !op->attention_core) return FALSE;
  int sk = mdl_op_find_dim(op, "sk");
  for (int i = 0; sk >= 0 && i < MDL_MAX_DIMS; i++)
    if (op->inputs[k].dim_map[i] == sk) return TRUE;
  return FALSE;
}

gboolean sb_overlapped_output(const Builder *b, int p) {
  return b->s->tp_overlap && mdl_graph_op(b->g, p)->kind == MDL_OP_MATMUL;
}

/* The forward segment of tensor @t (delta simulation's unit, sim_delta.c): its conversions
 * for every reader, in op order, and their edges to the readers' forward tasks.
 * Ring attention (context parallelism; Liu et al. 2023, "Ring Attention with Blockwise
 * Transformers", section 3; Megatron-Core's cp_comm_type "p2p"): the keys and values of the
 * other cp ranks arrive block by block while the attention computes on the blocks it has, so
 * their gather gates the compute task after the attention in program order instead of the
 * attention itself: the attention and the gather overlap, and what follows waits for both. In
 * the backward the gradients' reduce-scatter starts with the attention's backward
 * (sb_backward_segment).
 * Tensor-parallel communication overlap (tp_overlap=1: Megatron-Core's --tp-comm-overlap,
 * Transformer Engine's userbuffers, which split a GEMM and its sequence-parallel all-gather or
 * reduce-scatter into chunks and pipeline them): the same relaxation for the all-gather before
 * a GEMM (and, backward, its input gradient's reduce-scatter) and for the reduce-scatter after
 * a GEMM, which starts with the GEMM (sb_forward_conversion; backward, the all-gather of the
 * GEMM's output gradient gates the task after its backward). The chunked pipeline's fill and
 * drain (one chunk each) are not modeled: overlap is taken as complete. */
void sb_forward_segment(Builder *b, int t) {
  if (mdl_graph_tensor(b->g, t)->producer < 0) return;
  const SbUsers *users = &b->users[t];
  for (guint u = 0; u < users->len; u++) {
    int o = users->op[u];
    if (u > 0 && users->op[u - 1] == o) continue; /* users lists o per read */
    const MdlOp *op = mdl_graph_op(b->g, o);
    const MdlMesh *mesh = mesh_of(b, o);
    int m = cfg(b, o)->mesh;
    for (int k = 0; k < op->ninputs; k++) {
      if (op->inputs[k].tensor != t) continue;
      MdlLayout need = mdl_layout_of_operand(op, &op->inputs[k], FALSE, cfg(b, o), mesh);
      const Conversion *cv = sb_forward_conversion(b, t, o, need, FALSE);
      gboolean ring = sb_overlapped_input(b, o, k);
      if (!ring && sb_chain_repeats_block(b, cv->block, (uint32_t)o))
        continue; /* every edge below would repeat the chain (F blocks: 0 * nops + op) */
      const uint32_t *ready = cv->ready;
      const int n = b->M * b->nrep[m];
      const uint32_t base = b->fwd_base[o]; /* o's task at [mb * nrep + r] (task_fwd) */
      uint32_t *e = sb_edges_begin(b, (guint)n);
      for (int j = 0; j < n; j++) {
        uint32_t dep = ready[j], use = base + (uint32_t)j;
        if (ring && b->chain_next[use] != NO_TASK) use = b->chain_next[use];
        if (dep == NO_TASK || sb_repeats_chain(b, dep, use)) continue;
        *e++ = dep;
        *e++ = use;
      }
      sb_edges_end(b, e);
    }
  }
}

/* Gradient layout of input @k of @o: Split stays Split; Broadcast on an axis the op splits
 * becomes Partial (each device contributed part of the sum); else Broadcast. */
MdlLayout sb_input_grad_layout(const Builder *b, int o, int k) {
  const MdlOp *op = mdl_graph_op(b->g, o);
  const MdlMesh *mesh = mesh_of(b, o);
  MdlLayout l = mdl_layout_of_operand(op, &op->inputs[k], FALSE, cfg(b, o), mesh);
  for (int a = 0; a < mesh->ndims; a++)
    if (l.axis[a] == MDL_LAYOUT_BROADCAST && cfg(b, o)->split[a] >= 0 && mesh->shape[a] > 1)
      l.axis[a] = MDL_LAYOUT_PARTIAL;
  return l;
}

/* Megatron-LM's backward of a tensor-parallel linear layer (model/STRATEGY.md,
 * async_tensor_model_parallel_allreduce; layers.py's LinearWithGradAccumulationAndAsyncCommunication
 * .backward: dX = dY W^T, the all-reduce of dX (sequence parallelism: its reduce-scatter)
 * started with async_op=True, dW = X^T dY, then handle.wait()). An op with weight gradients
 * whose input gradient has partial sums on a mesh axis (sb_input_grad_layout) is split; not
 * under weight delay (W units already), tp_overlap (userbuffers overlap otherwise) or overlap=0
 * (every collective holds the compute stream: nothing runs beside it), nor an
 * MoE expert GEMM (an op dim "e": Megatron-Core's expert linears run no collective of their
 * own; the token dispatcher's backward reduces and returns the tokens after the whole expert
 * backward). */
gboolean sb_overlap_split(const Builder *b, int o) {
  if (b->overlap_split) return b->overlap_split[o];
  const MdlStrategy *s = b->s;
  if (s->weight_delay || s->tp_overlap || !s->overlap || !mdl_strategy_async_tp_allreduce(s))
    return FALSE;
  const MdlOp *op = mdl_graph_op(b->g, o);
  if (mdl_op_find_dim(op, "e") >= 0 || cm_weight_grad_share(b->g, op) <= 0) return FALSE;
  const MdlMesh *mesh = mesh_of(b, o);
  for (int k = 0; k < op->ninputs; k++) {
    const MdlTensor *t = mdl_graph_tensor(b->g, op->inputs[k].tensor);
    if (t->is_weight || t->producer < 0) continue; /* no gradient flows back */
    MdlLayout grad = sb_input_grad_layout(b, o, k);
    for (int a = 0; a < mesh->ndims; a++)
      if (grad.axis[a] == MDL_LAYOUT_PARTIAL && mesh->shape[a] > 1) return TRUE;
  }
  return FALSE;
}

/* Whether any tensor moves between meshes in a way that is not device-aligned, forward or
 * backward: such moves are cross-mesh resharding, on link resources. */
gboolean sb_needs_crossmesh(const Builder *b) {
  for (int o = 0; o < b->nops; o++) {
    const MdlOp *op = mdl_graph_op(b->g, o);
    for (int k = 0; k < op->ninputs; k++) {
      int p = mdl_graph_tensor(b->g, op->inputs[k].tensor)->producer;
      if (p < 0 || cfg(b, p)->mesh == cfg(b, o)->mesh) continue;
      const MdlOp *pop = mdl_graph_op(b->g, p);
      MdlLayout out = mdl_layout_of_operand(pop, &pop->output, TRUE, cfg(b, p), mesh_of(b, p));
      MdlLayout in = mdl_layout_of_operand(op, &op->inputs[k], FALSE, cfg(b, o), mesh_of(b, o));
      if (!sb_aligned_move(b, cfg(b, p)->mesh, out, cfg(b, o)->mesh, in) ||
          !sb_aligned_move(b, cfg(b, o)->mesh, sb_input_grad_layout(b, o, k), cfg(b, p)->mesh, sb_reduced(out)))
        return TRUE;
    }
  }
  return FALSE;
}

/* Whether reader (@o, @k) of its tensor is the one that reshards the gradients of a group of
 * readers: all readers of the tensor on the same mesh and stage whose gradients have the same
 * layout sum them locally first (as frameworks accumulate .grad) and reshard once. The group's
 * last backward in program order is its smallest op (backward runs in reverse op order within
 * a stage's unit): that reader converts, after the others on every device's chain. */
gboolean sb_gradient_group_leader(const Builder *b, int o, int k) {
  int t = mdl_graph_op(b->g, o)->inputs[k].tensor;
  MdlLayout mine = sb_input_grad_layout(b, o, k);
  const SbUsers *users = &b->users[t];
  for (guint u = 0; u < users->len; u++) {
    int o2 = users->op[u];
    if (o2 > o || cfg(b, o2)->mesh != cfg(b, o)->mesh || cfg(b, o2)->stage != cfg(b, o)->stage)
      continue;
    const MdlOp *op2 = mdl_graph_op(b->g, o2);
    for (int k2 = 0; k2 < op2->ninputs; k2++) {
      if (op2->inputs[k2].tensor != t || (o2 == o && k2 >= k)) continue;
      MdlLayout other = sb_input_grad_layout(b, o2, k2);
      if (memcmp(&other, &mine, sizeof mine) == 0) return FALSE;
    }
  }
  return TRUE;
}

/* The data edges from each microbatch's resharded gradient (@out_c: pn entries a
 * microbatch, from @mb on, @count microbatches) to the tasks that wait for it (@to_c, the
 * same layout), at @e; returns past them. */
static uint32_t *gradient_edges(const Builder *b, const uint32_t *out_c, const uint32_t *to_c,
                                int mb, int count, int pn, uint32_t *e) {
  for (int j = mb * pn; j < (mb + count) * pn; j++) {
    if (out_c[j] == NO_TASK || sb_repeats_chain(b, out_c[j], to_c[j])) continue;
    *e++ = out_c[j]; /* (sb_data_edge) */
    *e++ = to_c[j];
  }
  return e;
}

/* The gradient of tensor @t from reader @o (layout @from, its B tasks; @ring: from the task
 * before each, sb_overlapped_input) resharded to @need for its producer @p's B tasks (@ahead:
 * the task after each, sb_overlapped_output), microbatch by microbatch, and the data edges to
 * them; @identity: nothing to build (sb_identity_conversion), the tasks pass through. */
static void reshard_gradient(Builder *b, int t, int o, int p, MdlLayout from, MdlLayout need,
                             gboolean ring, gboolean ahead, gboolean identity) {
  int om = cfg(b, o)->mesh, pm = cfg(b, p)->mesh;
  g_autofree uint32_t *src = g_new(uint32_t, mesh_of(b, o)->ndevices);
  g_autofree uint32_t *dst = g_new(uint32_t, mesh_of(b, p)->ndevices);
  for (int i = 0; i < mesh_of(b, o)->ndevices; i++) src[i] = NO_TASK; /* replicas: no task */
  SbReplay replay;
  sb_replay_init(&replay, b, b->rep_idx[om], b->nrep[om], b->rep_idx[pm], b->nrep[pm]);
  replay.identity = identity;
  /* the tasks of microbatch mb on representative r: base + mb * nrep + r (task_bwd) */
  const uint32_t obase = b->bwd_base[o], pbase = b->bwd_base[p];
  const int on = b->nrep[om], pn = b->nrep[pm], *oidx = b->rep_idx[om], *pidx = b->rep_idx[pm];
  /* every microbatch's input at the representatives (the replay's compact input) and,
   * per microbatch, the output there and the tasks that wait for it (pn entries each) */
  g_autofree uint32_t *in_c = g_new(uint32_t, (gsize)b->M * (gsize)MAX(on, 1));
  g_autofree uint32_t *out_c = g_new(uint32_t, (gsize)b->M * (gsize)MAX(pn, 1));
  g_autofree uint32_t *to_c = g_new(uint32_t, (gsize)b->M * (gsize)MAX(pn, 1));
  for (int j = 0; j < b->M * on; j++) {
    uint32_t x = obase + (uint32_t)j;
    /* Overlapped: the gradients' collective starts with the reader's backward. */
    in_c[j] = ring && b->chain_prev[x] != NO_TASK ? b->chain_prev[x] : x;
  }
  for (int j = 0; j < b->M * pn; j++) {
    uint32_t use = pbase + (uint32_t)j;
    to_c[j] = ahead && b->chain_next[use] != NO_TASK ? b->chain_next[use] : use;
  }
  g_assert(!identity || on == pn);
  if (identity) memcpy(out_c, in_c, sizeof(uint32_t) * (gsize)b->M * (gsize)on);
  for (int mb = 0; mb < b->M;) {
    /* the next microbatches' conversions copied at once, each one's edges before its data
     * edges (as building them in turn orders them) */
    SbReplayTargets targets = {to_c + (gsize)mb * pn, TRUE};
    int n = identity ? 0 : sb_replay_many(b, &replay, in_c + (gsize)mb * on, mb, b->M - mb,
                                          out_c + (gsize)mb * pn, &targets);
    if (n) {
      mb += n;
      continue;
    }
    if (!identity) { /* this one built, then its data edges */
      for (int r = 0; r < on; r++) src[oidx[r]] = in_c[mb * on + r];
      convert_microbatch(b, &replay, om, from, src, pm, need, t, o, mb, dst);
      for (int r = 0; r < pn; r++) out_c[mb * pn + r] = dst[pidx[r]];
    }
    int count = identity ? b->M - mb : 1;
    uint32_t *e = sb_edges_begin(b, (guint)(count * pn));
    sb_edges_end(b, gradient_edges(b, out_c, to_c, mb, count, pn, e));
    mb += count;
  }
  sb_replay_clear(&replay);
}

/* The backward segment of tensor @t: each group of its readers' gradients resharded to what
 * its producer's backward needs (sb_gradient_group_leader), readers in op order. */
void sb_backward_segment(Builder *b, int t) {
  int p = mdl_graph_tensor(b->g, t)->producer;
  if (p < 0) return;
  const SbUsers *users = &b->users[t];
  for (guint u = 0; u < users->len; u++) {
    int o = users->op[u];
    if (u > 0 && users->op[u - 1] == o) continue;
    const MdlOp *op = mdl_graph_op(b->g, o);
    for (int k = 0; k < op->ninputs; k++) {
      if (op->inputs[k].tensor != t || !sb_gradient_group_leader(b, o, k)) continue;
      const MdlOp *pop = mdl_graph_op(b->g, p);
      const MdlMesh *pmesh = mesh_of(b, p);
      MdlLayout from = sb_input_grad_layout(b, o, k);
      /* The producer's backward needs dY where Y was Split as Split, elsewhere whole. */
      MdlLayout need = mdl_layout_of_operand(pop, &pop->output, TRUE, cfg(b, p), pmesh);
      for (int a = 0; a < MDL_MAX_MESH_AXES; a++)
        if (need.axis[a] == MDL_LAYOUT_PARTIAL) need.axis[a] = MDL_LAYOUT_BROADCAST;
      gboolean ring = sb_overlapped_input(b, o, k);
      gboolean ahead = cfg(b, p)->mesh == cfg(b, o)->mesh && sb_overlapped_output(b, p);
      int om = cfg(b, o)->mesh, pm = cfg(b, p)->mesh;
      gboolean identity = sb_identity_conversion(b, om, from, pm, need, t);
      /* nothing to build (one mesh): B(o)'s task j passes through to B(p)'s task j, and no
       * edge is added where each would repeat the chain (B blocks: 1 * nops + op) */
      if (identity && !ring && !ahead &&
          sb_chain_repeats_block(b, (uint32_t)(b->nops + o), (uint32_t)(b->nops + p)))
        continue;
      reshard_gradient(b, t, o, p, from, need, ring, ahead, identity);
    }
  }
}
