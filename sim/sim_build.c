/* sim/build — the task graph of one training iteration.
 *
 * Tasks: for every op, microbatch and device of the op's mesh a forward and a backward compute
 * task; communication wherever a consumer needs a tensor in another layout than its producer
 * left it (SBP resharding per mesh axis, DESIGN.md: P->B all-reduce, P->S reduce-scatter,
 * S->B all-gather, S(i)->S(j) all-to-all, B->S a free local slice), in the backward pass the
 * reverse flow (an input Broadcast on an axis the op splits yields a Partial-sum gradient);
 * gradient all-reduce over the axes a weight is replicated on, after the last backward (or
 * W) of its ops in program order; one optimizer step per device.
 * Compute streams follow program order: each pipeline rank's schedule units (phase, chunk,
 * microbatch; sim/sim_schedule.h), the chunk's ops in topological order (forward) or reverse
 * (backward), chained by edges. Under weight delay an op's backward is two tasks, B (dX, which
 * the producers wait for) and W (dW, which the gradient sync waits for), in separate units.
 * Memory options (issue 3): under recomputation a recomputed op's forward runs again (R) right
 * before its group's backward, its resharding collectives too; under sequence parallelism an
 * input kept as its shard is all-gathered again for the backward; ZeRO turns the gradient
 * all-reduce into reduce-scatters and parameter all-gathers (add_gradient_sync_and_optimizer,
 * add_parameter_gathers).
 * Between different meshes (pipeline stages) a tensor moves by send/recv to the device with
 * the same mesh index (after the source mesh reshapes it into the destination's layout when
 * the shapes agree); issue 4 replaces this with the cross-mesh resharding paper's unit tasks.
 * Task ids are assigned in a fixed order, so the graph, and the timeline, are deterministic. */
#include "sim/sim.h"
#include "sim/sim_crossmesh.h"
#include "sim/sim_network.h"

#include <limits.h>
#include <string.h>

#include "costmodel/cm_backward.h"
#include "sim/sim_schedule.h"

#define NO_TASK UINT32_MAX

typedef struct {
  int mesh;
  MdlLayout layout;
  uint32_t *ready;          /* M x mesh size: task each device waits for, per microbatch */
} Conversion;

typedef struct {
  const MdlGraph *g;
  const MdlStrategy *s;
  const DevCluster *c;
  const CmParams *p;
  SimTaskGraph *tg;
  int nops;
  int M;                    /* microbatches */
  double dtype_bytes;
  uint32_t *fwd_base;       /* per op: id of F(op, mb 0, mesh index 0) */
  uint32_t *bwd_base;
  uint32_t *wgt_base;       /* per op: W tasks under weight delay; NO_TASK: the op has no W */
  uint32_t *rec_base;       /* per op: R tasks (its forward re-run before its backward under
                               recomputation); NO_TASK: not recomputed */
  int *group;               /* per op: recomputation group (mdl_strategy_recompute_groups) */
  uint32_t *chain_prev;     /* per compute task: the compute task before it in its device's
                               program (NO_TASK: the first); compute tasks have the lowest ids */
  int *grads_done_b;        /* per stage: microbatch of its last B unit in program order */
  int *grads_done_w;        /* per stage: microbatch of its last W unit (weight delay) */
  int *sample_tdim;         /* per tensor */
  GPtrArray **conversions;  /* per tensor: forward conversions already built (Conversion *) */
  GPtrArray **rec_conversions; /* per tensor: the same for its recomputed values */
  GArray **users;           /* per tensor: ops that read it (int) */
  /* Symmetry: per mesh, the mesh indices simulated (all of them without symmetry), and for
   * each mesh index its position among them (-1: a replica that is not simulated) and the
   * index of the representative whose timeline it shares. */
  int *nrep;
  int **rep_idx;
  int **rep_pos;
  int **rep_of;
  gboolean symmetric;
  SimPhase phase;           /* the pass communication tasks are being built for */
  gboolean step;            /* step-expanded collectives on link resources */
  GPtrArray *plans;         /* CrossMeshCache: cross-mesh resharding plans, one per move */
} Builder;

/* A cross-mesh resharding plan for moving tensor t between two (mesh, layout)s. */
typedef struct {
  int t, src, dst;
  MdlLayout from, to;
  SimCrossMeshPlan *plan;
} CrossMeshCache;

static inline const MdlOpConfig *cfg(const Builder *b, int op) { return &b->s->configs[op]; }
static inline const MdlMesh *mesh_of(const Builder *b, int op) {
  return mdl_strategy_mesh(b->s, b->s->configs[op].mesh);
}
/* Forward/backward task of @op, microbatch @mb, on the device at mesh index @i (which must be
 * simulated: rep_pos >= 0). */
static inline uint32_t task_fwd(const Builder *b, int op, int mb, int i) {
  int m = b->s->configs[op].mesh;
  return b->fwd_base[op] + (uint32_t)(mb * b->nrep[m] + b->rep_pos[m][i]);
}
static inline uint32_t task_bwd(const Builder *b, int op, int mb, int i) {
  int m = b->s->configs[op].mesh;
  return b->bwd_base[op] + (uint32_t)(mb * b->nrep[m] + b->rep_pos[m][i]);
}
static inline uint32_t task_wgt(const Builder *b, int op, int mb, int i) {
  int m = b->s->configs[op].mesh;
  return b->wgt_base[op] + (uint32_t)(mb * b->nrep[m] + b->rep_pos[m][i]);
}
static inline uint32_t task_rec(const Builder *b, int op, int mb, int i) {
  int m = b->s->configs[op].mesh;
  return b->rec_base[op] + (uint32_t)(mb * b->nrep[m] + b->rep_pos[m][i]);
}
/* Where a collective that compute task @t waits for is issued: when the compute task two
 * before @t in its device's program ends, so that it runs while the one just before computes
 * (a one-task prefetch, as DeepSpeed's ZeRO-3 prefetches the next module's parameters and
 * Megatron overlaps the sequence-parallel re-gather with the backward's other GEMM). */
static inline uint32_t issue_point(const Builder *b, uint32_t t) {
  uint32_t prev = b->chain_prev[t];
  return prev == NO_TASK ? NO_TASK : b->chain_prev[prev];
}
/* The task after which @op's weight gradients on mesh index @i are complete: its last W (or,
 * for an op without W, its last B) in the rank's program order; compute tasks of a device are
 * chained, so every earlier microbatch's is done too. */
static inline uint32_t task_grads_done(const Builder *b, int op, int i) {
  int stage = b->s->configs[op].stage;
  if (b->wgt_base[op] != NO_TASK) return task_wgt(b, op, b->grads_done_w[stage], i);
  return task_bwd(b, op, b->grads_done_b[stage], i);
}

static double operand_bytes(const Builder *b, const MdlOp *op, const MdlOperand *opd,
                            gboolean is_output, const MdlOpConfig *c, const MdlMesh *mesh) {
  MdlLayout layout = mdl_layout_of_operand(op, opd, is_output, c, mesh);
  return mdl_layout_local_elements(b->g, opd->tensor, b->sample_tdim[opd->tensor], &layout, mesh,
                                   b->M) * b->dtype_bytes;
}

/* Forward and backward kernel times of one shard of @o for one microbatch; under weight delay
 * the backward splits into @bwd (B) and @wgt (W) by cm_weight_grad_share, FLOPs and traffic
 * alike; otherwise @wgt is 0. */
static void op_durations(const Builder *b, int o, SimTime *fwd, SimTime *bwd, SimTime *wgt) {
  const MdlOp *op = mdl_graph_op(b->g, o);
  const MdlOpConfig *c = cfg(b, o);
  const MdlMesh *mesh = mesh_of(b, o);
  double scale = 1.0, local[MDL_MAX_DIMS];
  for (int d = 0; d < op->ndims; d++) {
    local[d] = mdl_config_local_dim(op, d, c, mesh, b->M);
    scale *= local[d] / (double)op->dims[d].size;
  }
  double bytes = operand_bytes(b, op, &op->output, TRUE, c, mesh);
  double out_elems = bytes / b->dtype_bytes;
  for (int k = 0; k < op->ninputs; k++) bytes += operand_bytes(b, op, &op->inputs[k], FALSE, c, mesh);
  const DevKind *dev = &b->c->device;
  DevDtype dt = b->s->dtype;
  /* Contractions run as GEMMs whose shape sets their tile and wave quantization: forward
   * (m, n, k); the input gradient dX = dY W^T as (m, k, n); the weight gradient dW = X^T dY as
   * (k, n, m). */
  CmGemmShape fs, xs, ws;
  gboolean gemm = cm_gemm_shape(op, local, &fs);
  if (gemm) {
    xs = (CmGemmShape){fs.m, fs.k, fs.n, fs.batch};
    ws = (CmGemmShape){fs.k, fs.n, fs.m, fs.batch};
  }
  *fwd = sim_time_from_seconds(
      cm_kernel_time_profiled(b->p, dev, op->kind, dt, op->flops * scale, bytes, gemm ? &fs : NULL,
                              out_elems, FALSE, 1.0));
  /* Backward reads dY and the saved inputs and writes dX/dW: twice the forward traffic, split
   * between the dX and dW kernels by their share of the work. */
  double bflops = mdl_op_backward_flops(b->g, op) * scale, bbytes = 2 * bytes;
  double share = cm_weight_grad_share(b->g, op);
  double dx = share < 1 ? cm_kernel_time_profiled(b->p, dev, op->kind, dt, bflops * (1 - share),
                                                  bbytes * (1 - share), gemm ? &xs : NULL,
                                                  out_elems, TRUE, 1 - share)
                        : 0;
  double dw = share > 0 ? cm_kernel_time_profiled(b->p, dev, op->kind, dt, bflops * share,
                                                  bbytes * share, gemm ? &ws : NULL, out_elems,
                                                  TRUE, share)
                        : 0;
  if (b->s->weight_delay) {
    *bwd = sim_time_from_seconds(dx);
    *wgt = sim_time_from_seconds(dw);
  } else {
    *bwd = sim_time_from_seconds(dx + dw);
    *wgt = 0;
  }
}

/* Whether @o gets W tasks: under weight delay, when part of its backward is weight gradients. */
static gboolean has_weight_task(const Builder *b, int o) {
  return b->s->weight_delay && cm_weight_grad_share(b->g, mdl_graph_op(b->g, o)) > 0;
}

/* Forward, backward, (weight delay) weight-gradient and (recomputation) recomputed-forward
 * tasks, in that order of ids. */
static void add_compute_tasks(Builder *b) {
  static const SimTaskKind kinds[4] = {SIM_TASK_FORWARD, SIM_TASK_BACKWARD,
                                       SIM_TASK_BACKWARD_WEIGHT, SIM_TASK_RECOMPUTE};
  uint32_t *bases[4] = {b->fwd_base, b->bwd_base, b->wgt_base, b->rec_base};
  SimTask t = {0};
  t.tensor = -1;
  for (int phase = 0; phase < 4; phase++) {
    for (int o = 0; o < b->nops; o++) {
      const MdlMesh *mesh = mesh_of(b, o);
      SimTime durations[3];
      op_durations(b, o, &durations[0], &durations[1], &durations[2]);
      bases[phase][o] = NO_TASK;
      if (phase == 2 && !has_weight_task(b, o)) continue; /* its dW, if any, is in B */
      if (phase == 3 && b->group[o] < 0) continue;
      t.kind = (uint8_t)kinds[phase];
      t.duration = durations[phase == 3 ? 0 : phase]; /* a recomputation re-runs the forward */
      t.op = o;
      bases[phase][o] = sim_task_graph_size(b->tg);
      int m = cfg(b, o)->mesh;
      for (int mb = 0; mb < b->M; mb++) {
        t.microbatch = mb;
        for (int r = 0; r < b->nrep[m]; r++) {
          uint32_t res = sim_resource_compute(mesh->devices[b->rep_idx[m][r]]);
          sim_task_graph_add(b->tg, &t, &res, 1);
        }
      }
    }
  }
}

/* Appends the tasks from @base of op @o for microbatch @mb to its simulated devices' programs
 * (@prev: each device's last task so far). */
static void chain_op(Builder *b, uint32_t *prev, int o, uint32_t base, int mb) {
  const MdlMesh *mesh = mesh_of(b, o);
  int m = cfg(b, o)->mesh;
  for (int r = 0; r < b->nrep[m]; r++) {
    uint32_t t = base + (uint32_t)(mb * b->nrep[m] + r);
    int d = mesh->devices[b->rep_idx[m][r]];
    b->chain_prev[t] = prev[d];
    if (prev[d] != NO_TASK) sim_task_graph_edge(b->tg, prev[d], t);
    prev[d] = t;
  }
}

/* Chains every device's compute tasks in program order: per pipeline rank its schedule units
 * (sim_pipeline_units), per unit the chunk's ops forward (F) or in reverse (B, W); before the
 * backward of the last op of a recomputation group (met first in reverse), the group's
 * recomputed forwards R in forward order (Megatron's checkpointing: a layer's, or the
 * attention core's, forward re-runs right before its backward; Korthikanti et al. 2022,
 * section 4.1). Records per stage the microbatch of its last B and W units and every compute
 * task's predecessor (chain_prev). Returns the last task per device. */
static uint32_t *chain_compute(Builder *b) {
  uint32_t *prev = g_new(uint32_t, b->c->nodes * b->c->gpus_per_node);
  for (int d = 0; d < b->tg->num_devices; d++) prev[d] = NO_TASK;
  int nstages = b->s->num_stages;
  g_autofree int *stage_ops = g_new(int, b->nops);       /* ops grouped by stage, in order */
  g_autofree int *stage_begin = g_new0(int, nstages + 1);
  for (int o = 0; o < b->nops; o++) stage_begin[cfg(b, o)->stage + 1]++;
  for (int st = 0; st < nstages; st++) stage_begin[st + 1] += stage_begin[st];
  g_autofree int *fill = g_memdup2(stage_begin, sizeof(int) * (gsize)nstages);
  for (int o = 0; o < b->nops; o++) stage_ops[fill[cfg(b, o)->stage]++] = o;
  for (int rank = 0; rank < mdl_strategy_num_ranks(b->s); rank++) {
    int nunits = 0;
    g_autofree SimUnit *units = sim_pipeline_units(b->s, rank, &nunits);
    for (int u = 0; u < nunits; u++) {
      int st = units[u].chunk, mb = units[u].microbatch, phase = units[u].phase;
      if (phase == SIM_UNIT_BACKWARD) b->grads_done_b[st] = mb;
      if (phase == SIM_UNIT_WEIGHT) b->grads_done_w[st] = mb;
      int count = stage_begin[st + 1] - stage_begin[st];
      const int *ops = stage_ops + stage_begin[st];
      for (int k = 0; k < count; k++) {
        int idx = phase == SIM_UNIT_FORWARD ? k : count - 1 - k, o = ops[idx];
        if (phase == SIM_UNIT_WEIGHT && b->wgt_base[o] == NO_TASK) continue;
        int g = b->group[o];
        gboolean group_ends = idx == count - 1 || b->group[ops[idx + 1]] != g;
        if (phase == SIM_UNIT_BACKWARD && g >= 0 && group_ends) {
          int begin = idx;
          while (begin > 0 && b->group[ops[begin - 1]] == g) begin--;
          for (int j = begin; j <= idx; j++) chain_op(b, prev, ops[j], b->rec_base[ops[j]], mb);
        }
        uint32_t base = phase == SIM_UNIT_FORWARD    ? b->fwd_base[o]
                        : phase == SIM_UNIT_BACKWARD ? b->bwd_base[o]
                                                     : b->wgt_base[o];
        chain_op(b, prev, o, base, mb);
      }
    }
  }
  return prev;
}

/* Row-major strides of a mesh. */
static void mesh_strides(const MdlMesh *mesh, int *stride) {
  int s = 1;
  for (int a = mesh->ndims - 1; a >= 0; a--) {
    stride[a] = s;
    s *= mesh->shape[a];
  }
}

/* Mesh indices of the group through @base varying over the axes in @mask; returns its size. */
static int group_members(const MdlMesh *mesh, unsigned mask, int base, int *out) {
  int stride[MDL_MAX_MESH_AXES];
  mesh_strides(mesh, stride);
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
static gboolean is_group_base(const MdlMesh *mesh, unsigned mask, int idx) {
  int stride[MDL_MAX_MESH_AXES];
  mesh_strides(mesh, stride);
  for (int a = 0; a < mesh->ndims; a++)
    if ((mask & (1u << a)) && (idx / stride[a]) % mesh->shape[a] != 0) return FALSE;
  return TRUE;
}

/* A collective over the @p @devices of a group (its cost), occupying the communication
 * streams of the @nsim of them that are simulated (@sim_devices): one task timed by the
 * alpha-beta formula, or (step mode) its transfers on link resources between a gate and a
 * join. Inputs connect to .gate, consumers wait for .join. */
static SimCollectiveSpan add_comm_task(Builder *b, SimTaskKind kind, CmCollective coll,
                                       const int *devices, int p, const int *sim_devices, int nsim,
                                       double bytes, int op, int tensor, int mb) {
  /* Without overlap a collective also holds its members' compute streams. */
  int nres = b->s->overlap ? nsim : 2 * nsim;
  uint32_t stack_res[64];
  uint32_t *res = nres <= 64 ? stack_res : g_new(uint32_t, nres);
  for (int i = 0; i < nsim; i++) res[i] = sim_resource_comm(sim_devices[i]);
  for (int i = nsim; i < nres; i++) res[i] = sim_resource_compute(sim_devices[i - nsim]);
  CmLinkCost link = cm_group_link(b->c, devices, p);
  SimTask t = {0};
  t.kind = (uint8_t)kind;
  t.collective = (uint8_t)coll;
  t.op = op;
  t.tensor = tensor;
  t.microbatch = mb;
  t.bytes = (float)bytes;
  t.group_size = (uint32_t)p;
  t.link = (uint8_t)link.link;
  t.phase = (uint8_t)b->phase;
  if (b->step && sim_network_supports(coll)) {
    if (res != stack_res) g_free(res);
    g_autofree gboolean *simulated = g_new0(gboolean, p);
    for (int i = 0; i < p; i++)
      for (int k = 0; k < nsim && !simulated[i]; k++) simulated[i] = devices[i] == sim_devices[k];
    return sim_network_expand(b->tg, b->c, &t, coll, devices, p, simulated, bytes, !b->s->overlap);
  }
  t.duration = sim_time_from_seconds(cm_group_collective_time(b->p, b->c, coll, devices, p, bytes));
  uint32_t id = sim_task_graph_add(b->tg, &t, res, nres);
  if (res != stack_res) g_free(res);
  return (SimCollectiveSpan){id, id};
}

/* Adds edges from each distinct task in @deps (n entries) to @to. */
static void edges_from_distinct(Builder *b, const uint32_t *deps, int n, uint32_t to) {
  for (int i = 0; i < n; i++) {
    gboolean dup = FALSE;
    for (int j = 0; j < i && !dup; j++) dup = deps[j] == deps[i];
    if (!dup && deps[i] != NO_TASK) sim_task_graph_edge(b->tg, deps[i], to);
  }
}

/* Converts tensor @t from @from to @to on one mesh; @ready holds per mesh index the task the
 * data waits for and is updated in place. Axes are converted in order, each by one collective
 * per group along the axis; the message size n follows AutoDDL Table 2 (the larger of the
 * per-device sizes before and after the step). */
static void convert_on_mesh(Builder *b, int mesh_index, MdlLayout from, MdlLayout to,
                            int t, int op, int mb, uint32_t *ready) {
  const MdlMesh *mesh = mdl_strategy_mesh(b->s, mesh_index);
  const int *pos = b->rep_pos[mesh_index];
  g_autofree int *members = g_new(int, mesh->ndevices);
  g_autofree int *devices = g_new(int, mesh->ndevices);
  g_autofree int *sim = g_new(int, mesh->ndevices);
  g_autofree uint32_t *deps = g_new(uint32_t, mesh->ndevices);
  for (int a = 0; a < mesh->ndims; a++) {
    int src = from.axis[a], dst = to.axis[a];
    if (src == dst || mesh->shape[a] == 1) continue;
    CmCollective coll;
    if (src == MDL_LAYOUT_PARTIAL) coll = dst == MDL_LAYOUT_BROADCAST ? CM_ALL_REDUCE : CM_REDUCE_SCATTER;
    else if (src >= 0) coll = dst == MDL_LAYOUT_BROADCAST ? CM_ALL_GATHER : CM_ALL_TO_ALL;
    else { /* Broadcast to Split (a local slice) or to Partial (keep one copy): free. */
      from.axis[a] = (int8_t)dst;
      continue;
    }
    double before = mdl_layout_local_elements(b->g, t, b->sample_tdim[t], &from, mesh, b->M);
    from.axis[a] = (int8_t)dst;
    double after = mdl_layout_local_elements(b->g, t, b->sample_tdim[t], &from, mesh, b->M);
    double bytes = MAX(before, after) * b->dtype_bytes;
    for (int base = 0; base < mesh->ndevices; base++) {
      if (!is_group_base(mesh, 1u << a, base)) continue;
      int p = group_members(mesh, 1u << a, base, members), nsim = 0;
      for (int i = 0; i < p; i++) {
        devices[i] = mesh->devices[members[i]];
        if (pos[members[i]] < 0) continue;
        deps[nsim] = ready[members[i]];
        sim[nsim++] = devices[i];
      }
      if (nsim == 0) continue; /* a replica group: its twin through a representative runs */
      SimCollectiveSpan task = add_comm_task(b, SIM_TASK_COMM, coll, devices, p, sim, nsim, bytes, op, t, mb);
      edges_from_distinct(b, deps, nsim, task.gate);
      for (int i = 0; i < p; i++) ready[members[i]] = task.join;
    }
  }
}

/* Moves tensor @t (one microbatch) from layout @from on mesh @src_mesh, available after
 * @src_ready, to layout @to on mesh @dst_mesh; fills @dst_ready (per destination index). */
/* @from with its partial sums reduced (P -> B): what a cross-mesh move starts from. */
static MdlLayout reduced(MdlLayout from) {
  for (int a = 0; a < MDL_MAX_MESH_AXES; a++)
    if (from.axis[a] == MDL_LAYOUT_PARTIAL) from.axis[a] = MDL_LAYOUT_BROADCAST;
  return from;
}

/* Whether a move between two meshes is device-aligned: same mesh shape and, after reducing
 * partial sums, the same layout, so device i of one sends its whole tile to device i of the
 * other (Megatron's stage-to-stage send/recv). Other moves are cross-mesh resharding. */
static gboolean aligned_move(const Builder *b, int src_mesh, MdlLayout from, int dst_mesh,
                             MdlLayout to) {
  const MdlMesh *sm = mdl_strategy_mesh(b->s, src_mesh), *dm = mdl_strategy_mesh(b->s, dst_mesh);
  if (sm->ndims != dm->ndims || memcmp(sm->shape, dm->shape, sizeof(int) * (gsize)sm->ndims) != 0)
    return FALSE;
  MdlLayout r = reduced(from);
  for (int a = 0; a < sm->ndims; a++)
    if (sm->shape[a] > 1 && r.axis[a] != to.axis[a]) return FALSE;
  return TRUE;
}

/* The cross-mesh plan (cross-mesh resharding paper, sections 3.1-3.2: unit tasks, broadcast,
 * load balancing) for one move of a microbatch of tensor @t, planned once and reused. */
static const SimCrossMeshPlan *crossmesh_plan(Builder *b, int t, int src_mesh, MdlLayout from,
                                              int dst_mesh, MdlLayout to) {
  for (guint i = 0; i < b->plans->len; i++) {
    const CrossMeshCache *c = g_ptr_array_index(b->plans, i);
    if (c->t == t && c->src == src_mesh && c->dst == dst_mesh &&
        memcmp(&c->from, &from, sizeof from) == 0 && memcmp(&c->to, &to, sizeof to) == 0)
      return c->plan;
  }
  const MdlTensor *tensor = mdl_graph_tensor(b->g, t);
  int64_t shape[MDL_MAX_DIMS];
  for (int i = 0; i < tensor->ndims; i++)
    shape[i] = tensor->shape[i] / (i == b->sample_tdim[t] ? b->M : 1);
  GError *error = NULL;
  SimCrossMeshPlan *plan =
      sim_crossmesh_plan_new(b->c, mdl_strategy_mesh(b->s, src_mesh), from,
                             mdl_strategy_mesh(b->s, dst_mesh), to, shape, tensor->ndims,
                             b->dtype_bytes, NULL, &error);
  /* The strategy was validated: layouts split only dims the tensor has, and divide them. */
  if (!plan) g_error("cross-mesh plan for %s: %s", tensor->name, error->message);
  CrossMeshCache *c = g_new(CrossMeshCache, 1);
  *c = (CrossMeshCache){t, src_mesh, dst_mesh, from, to, plan};
  g_ptr_array_add(b->plans, c);
  return plan;
}

static void crossmesh_cache_free(gpointer data) {
  CrossMeshCache *c = data;
  sim_crossmesh_plan_free(c->plan);
  g_free(c);
}

static void convert(Builder *b, int src_mesh, MdlLayout from, const uint32_t *src_ready,
                    int dst_mesh, MdlLayout to, int t, int op, int mb, uint32_t *dst_ready) {
  const MdlMesh *sm = mdl_strategy_mesh(b->s, src_mesh);
  const MdlMesh *dm = mdl_strategy_mesh(b->s, dst_mesh);
  g_autofree uint32_t *ready = g_memdup2(src_ready, sizeof(uint32_t) * (gsize)sm->ndevices);
  gboolean same_shape = sm->ndims == dm->ndims &&
                        memcmp(sm->shape, dm->shape, sizeof(int) * (gsize)sm->ndims) == 0;
  if (src_mesh == dst_mesh) {
    convert_on_mesh(b, src_mesh, from, to, t, op, mb, ready);
    memcpy(dst_ready, ready, sizeof(uint32_t) * (gsize)dm->ndevices);
    return;
  }
  /* Partial sums are reduced on the source mesh before anything moves. */
  MdlLayout start = reduced(from);
  convert_on_mesh(b, src_mesh, from, start, t, op, mb, ready);
  if (!aligned_move(b, src_mesh, from, dst_mesh, to)) {
    SimTask tag = {0};
    tag.kind = SIM_TASK_COMM;
    tag.op = op;
    tag.tensor = t;
    tag.microbatch = mb;
    tag.phase = (uint8_t)b->phase;
    const SimCrossMeshPlan *plan = crossmesh_plan(b, t, src_mesh, start, dst_mesh, to);
    sim_crossmesh_emit(plan, b->tg, &tag, ready, dst_ready);
    for (int j = 0; j < dm->ndevices; j++)
      if (dst_ready[j] == SIM_CROSSMESH_NO_TASK) dst_ready[j] = NO_TASK;
    return;
  }
  double bytes = mdl_layout_local_elements(b->g, t, b->sample_tdim[t], &to, dm, b->M) * b->dtype_bytes;
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
    SimCollectiveSpan task = add_comm_task(b, SIM_TASK_COMM, CM_SEND_RECV, pair, 2, pair, 2, bytes, op, t, mb);
    if (ready[i] != NO_TASK) sim_task_graph_edge(b->tg, ready[i], task.gate);
    dst_ready[j] = task.join;
  }
}

/* The forward conversion of tensor @t to (@mesh, @layout), built once and shared by every
 * consumer that needs the same layout; @recomputed: of the value its producer's recomputation
 * (R) gives, which a recomputed consumer reads (the forward's resharding collectives run again,
 * as they do when Megatron re-runs a checkpointed layer). */
static const uint32_t *forward_conversion(Builder *b, int t, int consumer, MdlLayout layout,
                                          gboolean recomputed) {
  int mesh = cfg(b, consumer)->mesh;
  GPtrArray *list = recomputed ? b->rec_conversions[t] : b->conversions[t];
  for (guint i = 0; i < list->len; i++) {
    Conversion *cv = g_ptr_array_index(list, i);
    if (cv->mesh == mesh && memcmp(&cv->layout, &layout, sizeof layout) == 0) return cv->ready;
  }
  int p = mdl_graph_tensor(b->g, t)->producer;
  const MdlOp *pop = mdl_graph_op(b->g, p);
  MdlLayout from = mdl_layout_of_operand(pop, &pop->output, TRUE, cfg(b, p), mesh_of(b, p));
  int sn = mesh_of(b, p)->ndevices, dn = mdl_strategy_mesh(b->s, mesh)->ndevices;
  Conversion *cv = g_new(Conversion, 1);
  cv->mesh = mesh;
  cv->layout = layout;
  cv->ready = g_new(uint32_t, (gsize)b->M * dn);
  g_autofree uint32_t *src = g_new(uint32_t, sn);
  for (int mb = 0; mb < b->M; mb++) {
    for (int i = 0; i < sn; i++)
      src[i] = b->rep_pos[cfg(b, p)->mesh][i] < 0 ? NO_TASK
               : recomputed                       ? task_rec(b, p, mb, i)
                                                  : task_fwd(b, p, mb, i);
    convert(b, cfg(b, p)->mesh, from, src, mesh, layout, t, consumer, mb, cv->ready + mb * dn);
  }
  g_ptr_array_add(list, cv);
  return cv->ready;
}

static void add_forward_dependencies(Builder *b) {
  for (int o = 0; o < b->nops; o++) {
    const MdlOp *op = mdl_graph_op(b->g, o);
    const MdlMesh *mesh = mesh_of(b, o);
    for (int k = 0; k < op->ninputs; k++) {
      int t = op->inputs[k].tensor;
      if (mdl_graph_tensor(b->g, t)->producer < 0) continue;
      MdlLayout need = mdl_layout_of_operand(op, &op->inputs[k], FALSE, cfg(b, o), mesh);
      const uint32_t *ready = forward_conversion(b, t, o, need, FALSE);
      int m = cfg(b, o)->mesh;
      for (int mb = 0; mb < b->M; mb++)
        for (int r = 0; r < b->nrep[m]; r++) {
          int i = b->rep_idx[m][r];
          uint32_t dep = ready[mb * mesh->ndevices + i];
          if (dep != NO_TASK) sim_task_graph_edge(b->tg, dep, task_fwd(b, o, mb, i));
        }
    }
  }
}

/* Gradient layout of input @k of @o: Split stays Split; Broadcast on an axis the op splits
 * becomes Partial (each device contributed part of the sum); else Broadcast. */
static MdlLayout input_grad_layout(const Builder *b, int o, int k) {
  const MdlOp *op = mdl_graph_op(b->g, o);
  const MdlMesh *mesh = mesh_of(b, o);
  MdlLayout l = mdl_layout_of_operand(op, &op->inputs[k], FALSE, cfg(b, o), mesh);
  for (int a = 0; a < mesh->ndims; a++)
    if (l.axis[a] == MDL_LAYOUT_BROADCAST && cfg(b, o)->split[a] >= 0 && mesh->shape[a] > 1)
      l.axis[a] = MDL_LAYOUT_PARTIAL;
  return l;
}

/* Whether any tensor moves between meshes in a way that is not device-aligned, forward or
 * backward: such moves are cross-mesh resharding, on link resources. */
static gboolean needs_crossmesh(const Builder *b) {
  for (int o = 0; o < b->nops; o++) {
    const MdlOp *op = mdl_graph_op(b->g, o);
    for (int k = 0; k < op->ninputs; k++) {
      int p = mdl_graph_tensor(b->g, op->inputs[k].tensor)->producer;
      if (p < 0 || cfg(b, p)->mesh == cfg(b, o)->mesh) continue;
      const MdlOp *pop = mdl_graph_op(b->g, p);
      MdlLayout out = mdl_layout_of_operand(pop, &pop->output, TRUE, cfg(b, p), mesh_of(b, p));
      MdlLayout in = mdl_layout_of_operand(op, &op->inputs[k], FALSE, cfg(b, o), mesh_of(b, o));
      if (!aligned_move(b, cfg(b, p)->mesh, out, cfg(b, o)->mesh, in) ||
          !aligned_move(b, cfg(b, o)->mesh, input_grad_layout(b, o, k), cfg(b, p)->mesh, reduced(out)))
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
static gboolean gradient_group_leader(const Builder *b, int o, int k) {
  int t = mdl_graph_op(b->g, o)->inputs[k].tensor;
  MdlLayout mine = input_grad_layout(b, o, k);
  GArray *users = b->users[t];
  for (guint u = 0; u < users->len; u++) {
    int o2 = g_array_index(users, int, u);
    if (o2 > o || cfg(b, o2)->mesh != cfg(b, o)->mesh || cfg(b, o2)->stage != cfg(b, o)->stage)
      continue;
    const MdlOp *op2 = mdl_graph_op(b->g, o2);
    for (int k2 = 0; k2 < op2->ninputs; k2++) {
      if (op2->inputs[k2].tensor != t || (o2 == o && k2 >= k)) continue;
      MdlLayout other = input_grad_layout(b, o2, k2);
      if (memcmp(&other, &mine, sizeof mine) == 0) return FALSE;
    }
  }
  return TRUE;
}

static void add_backward_dependencies(Builder *b) {
  for (int o = 0; o < b->nops; o++) {
    const MdlOp *op = mdl_graph_op(b->g, o);
    const MdlMesh *mesh = mesh_of(b, o);
    for (int k = 0; k < op->ninputs; k++) {
      int t = op->inputs[k].tensor;
      int p = mdl_graph_tensor(b->g, t)->producer;
      if (p < 0 || !gradient_group_leader(b, o, k)) continue;
      const MdlOp *pop = mdl_graph_op(b->g, p);
      const MdlMesh *pmesh = mesh_of(b, p);
      MdlLayout from = input_grad_layout(b, o, k);
      /* The producer's backward needs dY where Y was Split as Split, elsewhere whole. */
      MdlLayout need = mdl_layout_of_operand(pop, &pop->output, TRUE, cfg(b, p), pmesh);
      for (int a = 0; a < MDL_MAX_MESH_AXES; a++)
        if (need.axis[a] == MDL_LAYOUT_PARTIAL) need.axis[a] = MDL_LAYOUT_BROADCAST;
      g_autofree uint32_t *src = g_new(uint32_t, mesh->ndevices);
      g_autofree uint32_t *dst = g_new(uint32_t, pmesh->ndevices);
      for (int mb = 0; mb < b->M; mb++) {
        for (int i = 0; i < mesh->ndevices; i++)
          src[i] = b->rep_pos[cfg(b, o)->mesh][i] >= 0 ? task_bwd(b, o, mb, i) : NO_TASK;
        convert(b, cfg(b, o)->mesh, from, src, cfg(b, p)->mesh, need, t, o, mb, dst);
        for (int j = 0; j < pmesh->ndevices; j++)
          if (dst[j] != NO_TASK && b->rep_pos[cfg(b, p)->mesh][j] >= 0)
            sim_task_graph_edge(b->tg, dst[j], task_bwd(b, p, mb, j));
      }
    }
  }
}

/* The mesh axes over which weight @w's gradient is all-reduced on mesh @m: those it is
 * replicated on (Broadcast) while an op using it there splits them. @first gets the first such
 * op (-1: no op uses @w on @m) and @layout the weight's layout there. */
static unsigned grad_sync_mask(const Builder *b, int w, int m, int *first, MdlLayout *layout) {
  const MdlMesh *mesh = mdl_strategy_mesh(b->s, m);
  GArray *users = b->users[w];
  unsigned mask = 0;
  *first = -1;
  for (guint u = 0; u < users->len; u++) {
    int o = g_array_index(users, int, u);
    if (cfg(b, o)->mesh != m) continue;
    const MdlOp *op = mdl_graph_op(b->g, o);
    for (int k = 0; k < op->ninputs; k++) {
      if (op->inputs[k].tensor != w) continue;
      if (*first < 0)
        *first = o, *layout = mdl_layout_of_operand(op, &op->inputs[k], FALSE, cfg(b, o), mesh);
      mask |= mdl_operand_replica_axes(op, &op->inputs[k], cfg(b, o), mesh);
    }
  }
  return mask;
}

/* Recomputation: each recomputed op's R waits for the recomputed values of the inputs its
 * group produces, resharded again as in the forward; inputs from outside the group are the
 * kept ones (the layer input, Q/K/V), ready since the op's forward ran on the same devices. */
static void add_recompute_dependencies(Builder *b) {
  for (int o = 0; o < b->nops; o++) {
    if (b->group[o] < 0) continue;
    const MdlOp *op = mdl_graph_op(b->g, o);
    const MdlMesh *mesh = mesh_of(b, o);
    int m = cfg(b, o)->mesh;
    for (int k = 0; k < op->ninputs; k++) {
      int t = op->inputs[k].tensor, p = mdl_graph_tensor(b->g, t)->producer;
      if (p < 0 || b->group[p] != b->group[o]) continue;
      MdlLayout need = mdl_layout_of_operand(op, &op->inputs[k], FALSE, cfg(b, o), mesh);
      const uint32_t *ready = forward_conversion(b, t, o, need, TRUE);
      for (int mb = 0; mb < b->M; mb++)
        for (int r = 0; r < b->nrep[m]; r++) {
          int i = b->rep_idx[m][r];
          uint32_t dep = ready[mb * mesh->ndevices + i];
          if (dep != NO_TASK) sim_task_graph_edge(b->tg, dep, task_rec(b, o, mb, i));
        }
    }
  }
}

/* Sequence parallelism (Korthikanti et al. 2022, section 4.2.2): an input kept as its shard
 * (mdl_saved_input_layout) is all-gathered again before the first backward-pass task that
 * reads it (its W under weight delay: only dW = X^T dY reads X), once per microbatch. */
static void add_regathers(Builder *b) {
  for (int o = 0; o < b->nops; o++) {
    const MdlOp *op = mdl_graph_op(b->g, o);
    const MdlMesh *mesh = mesh_of(b, o);
    int m = cfg(b, o)->mesh;
    for (int k = 0; k < op->ninputs; k++) {
      int t = op->inputs[k].tensor, p = mdl_graph_tensor(b->g, t)->producer;
      if (p < 0 || (b->group[o] >= 0 && b->group[p] == b->group[o])) continue; /* recomputed */
      gboolean regather;
      MdlLayout saved = mdl_saved_input_layout(b->g, b->s, o, k, &regather);
      if (!regather) continue;
      MdlLayout need = mdl_layout_of_operand(op, &op->inputs[k], FALSE, cfg(b, o), mesh);
      g_autofree uint32_t *ready = g_new(uint32_t, mesh->ndevices);
      g_autofree uint32_t *use = g_new(uint32_t, mesh->ndevices);
      for (int mb = 0; mb < b->M; mb++) {
        for (int i = 0; i < mesh->ndevices; i++) {
          use[i] = ready[i] = NO_TASK;
          if (b->rep_pos[m][i] < 0) continue;
          use[i] = b->rec_base[o] != NO_TASK ? task_rec(b, o, mb, i)
                   : b->wgt_base[o] != NO_TASK ? task_wgt(b, o, mb, i)
                                               : task_bwd(b, o, mb, i);
          ready[i] = issue_point(b, use[i]);
        }
        convert_on_mesh(b, m, saved, need, t, o, mb, ready);
        for (int i = 0; i < mesh->ndevices; i++)
          if (use[i] != NO_TASK && ready[i] != NO_TASK) sim_task_graph_edge(b->tg, ready[i], use[i]);
      }
    }
  }
}

/* ZeRO-3 (Rajbhandari et al. 2020, section 5.3): every use of a partitioned weight all-gathers
 * it over its data-parallel replicas first, per microbatch and without caching: before the
 * forward F (phase forward), and before the recomputed forward R and the backward B (phase
 * backward; W computes dW = X^T dY without the weight). @use picks the task. */
static void add_parameter_gathers(Builder *b, uint32_t (*use)(const Builder *, int, int, int)) {
  for (int o = 0; o < b->nops; o++) {
    const MdlOp *op = mdl_graph_op(b->g, o);
    const MdlMesh *mesh = mesh_of(b, o);
    int m = cfg(b, o)->mesh;
    if (use == task_rec && b->rec_base[o] == NO_TASK) continue;
    g_autofree int *members = g_new(int, mesh->ndevices);
    g_autofree int *devices = g_new(int, mesh->ndevices);
    g_autofree int *sim = g_new(int, mesh->ndevices);
    g_autofree uint32_t *deps = g_new(uint32_t, mesh->ndevices);
    g_autofree uint32_t *users = g_new(uint32_t, mesh->ndevices);
    for (int k = 0; k < op->ninputs; k++) {
      int w = op->inputs[k].tensor, first;
      if (!mdl_graph_tensor(b->g, w)->is_weight) continue;
      gboolean again = FALSE; /* the same weight read twice by one op is gathered once */
      for (int j = 0; j < k; j++) again |= op->inputs[j].tensor == w;
      MdlLayout layout;
      unsigned mask = grad_sync_mask(b, w, m, &first, &layout);
      if (again || !mask) continue;
      MdlLayout mine = mdl_layout_of_operand(op, &op->inputs[k], FALSE, cfg(b, o), mesh);
      double bytes = mdl_layout_local_elements(b->g, w, -1, &mine, mesh, 1) * b->dtype_bytes;
      for (int mb = 0; mb < b->M; mb++)
        for (int base = 0; base < mesh->ndevices; base++) {
          if (!is_group_base(mesh, mask, base)) continue;
          int p = group_members(mesh, mask, base, members), nsim = 0;
          for (int i = 0; i < p; i++) {
            devices[i] = mesh->devices[members[i]];
            if (b->rep_pos[m][members[i]] < 0) continue;
            users[nsim] = use(b, o, mb, members[i]);
            deps[nsim] = issue_point(b, users[nsim]);
            sim[nsim++] = devices[i];
          }
          if (nsim == 0) continue;
          SimCollectiveSpan span = add_comm_task(b, SIM_TASK_COMM, CM_ALL_GATHER, devices, p, sim,
                                                 nsim, bytes, o, w, mb);
          edges_from_distinct(b, deps, nsim, span.gate);
          for (int i = 0; i < nsim; i++) sim_task_graph_edge(b->tg, span.join, users[i]);
        }
    }
  }
}

/* Gradient all-reduce of every weight over the axes it is replicated on while its ops split
 * them, then one optimizer step per device after its last compute task and its syncs. */
/* One weight's gradient sync on one mesh. */
typedef struct {
  int w, m;
  unsigned mask;
  int first;        /* first op using it there */
  int ready;        /* smallest index of its ops there: its gradient completes when that op's
                       backward does, and backward runs in reverse op order */
  double bytes;     /* per device */
} SyncItem;

static int compare_sync_items(const void *pa, const void *pb) {
  const SyncItem *a = pa, *b = pb;
  if (a->m != b->m) return a->m < b->m ? -1 : 1;
  if (a->mask != b->mask) return a->mask < b->mask ? -1 : 1;
  if (a->ready != b->ready) return a->ready > b->ready ? -1 : 1; /* ready earlier first */
  return (a->w > b->w) - (a->w < b->w);
}

/* One collective @coll per group over the mesh axes of @items[0].mask for the bucket
 * @items[0..n): gated by the bucket's gradients of microbatch @mb (-1: complete, after the last
 * microbatch) or, with @after, by those tasks per device (the optimizer steps, which ZeRO's
 * parameter all-gather follows). With @syncs, the joins go there as (task, device) pairs. */
static void add_bucket(Builder *b, const SyncItem *items, int n, CmCollective coll, int mb,
                       const uint32_t *after, GArray *syncs) {
  int m = items[0].m;
  unsigned mask = items[0].mask;
  const MdlMesh *mesh = mdl_strategy_mesh(b->s, m);
  double bytes = 0;
  for (int k = 0; k < n; k++) bytes += items[k].bytes;
  g_autofree int *members = g_new(int, mesh->ndevices);
  g_autofree int *devices = g_new(int, mesh->ndevices);
  g_autofree int *sim = g_new(int, mesh->ndevices);
  g_autofree int *sim_members = g_new(int, mesh->ndevices);
  for (int base = 0; base < mesh->ndevices; base++) {
    if (!is_group_base(mesh, mask, base)) continue;
    int p = group_members(mesh, mask, base, members), nsim = 0;
    for (int i = 0; i < p; i++) {
      devices[i] = mesh->devices[members[i]];
      if (b->rep_pos[m][members[i]] < 0) continue;
      sim_members[nsim] = members[i];
      sim[nsim++] = devices[i];
    }
    if (nsim == 0) continue;
    SimCollectiveSpan span = add_comm_task(b, SIM_TASK_GRAD_SYNC, coll, devices, p, sim, nsim,
                                           bytes, items[0].first, items[0].w, mb);
    for (int i = 0; after && i < nsim; i++)
      if (after[sim[i]] != NO_TASK) sim_task_graph_edge(b->tg, after[sim[i]], span.gate);
    for (int k = 0; !after && k < n; k++) {
      GArray *users = b->users[items[k].w];
      for (guint u = 0; u < users->len; u++) {
        int o = g_array_index(users, int, u);
        if (cfg(b, o)->mesh != m) continue;
        for (int i = 0; i < nsim; i++) {
          int idx = sim_members[i];
          uint32_t done = mb < 0                       ? task_grads_done(b, o, idx)
                          : b->wgt_base[o] != NO_TASK ? task_wgt(b, o, mb, idx)
                                                      : task_bwd(b, o, mb, idx);
          sim_task_graph_edge(b->tg, done, span.gate);
        }
      }
    }
    for (int i = 0; syncs && i < nsim; i++) {
      uint32_t pair[2] = {span.join, (uint32_t)sim[i]};
      g_array_append_val(syncs, pair);
    }
  }
}

/* Gradient all-reduce of every weight over the axes it is replicated on while its ops split
 * them, packed into buckets in the order gradients become ready (PyTorch DDP, Li et al. 2020,
 * "PyTorch Distributed", section 3.2.3: a bucket's all-reduce starts when all its gradients
 * are ready, overlapping the rest of the backward pass), then one optimizer step per device
 * after its last compute task and its syncs.
 * ZeRO (Rajbhandari et al. 2020; DeepSpeed's stage_1_and_2.py and stage3.py) over those Nd
 * replicas: the optimizer steps 1/Nd of each replicated weight. Stage 1 reduce-scatters each
 * bucket once, after the last microbatch (the paper's section 7.2.1: each rank needs only its
 * shard of the summed gradient), then all-gathers the updated parameters per bucket after the
 * step: 2 Psi on the wire, as data parallelism's all-reduce. Stage 2 keeps only its
 * gradient shard, so each microbatch's bucket is reduce-scattered as its backward completes
 * (DeepSpeed's gradient hooks reduce every micro-step) and the parameters are all-gathered
 * after the step: with one microbatch, the all-reduce becomes a reduce-scatter and an
 * all-gather of the same bytes, 2 Psi (the survey's Table IV). Stage 3 reduce-scatters as
 * stage 2 and gathers parameters where they are used (add_parameter_gathers), not after the
 * step. */
static void add_gradient_sync_and_optimizer(Builder *b, const uint32_t *last_compute) {
  int ndev = b->tg->num_devices;
  g_autofree double *local_params = g_new0(double, ndev);
  GArray *syncs = g_array_new(FALSE, FALSE, sizeof(uint32_t) * 2); /* (task, device) */
  GArray *items = g_array_new(FALSE, FALSE, sizeof(SyncItem));
  int nmeshes = (int)b->s->meshes->len;
  for (int w = 0; w < mdl_graph_num_tensors(b->g); w++) {
    if (!mdl_graph_tensor(b->g, w)->is_weight) continue;
    for (int m = 0; m < nmeshes; m++) {
      const MdlMesh *mesh = mdl_strategy_mesh(b->s, m);
      SyncItem it = {.w = w, .m = m, .ready = INT_MAX};
      MdlLayout layout;
      it.mask = grad_sync_mask(b, w, m, &it.first, &layout);
      if (it.first < 0) continue;
      double elems = mdl_layout_local_elements(b->g, w, -1, &layout, mesh, 1), nd = 1;
      for (int a = 0; a < mesh->ndims; a++)
        if (it.mask & (1u << a)) nd *= mesh->shape[a];
      double stepped = b->s->zero_stage >= 1 ? elems / nd : elems; /* this device's shard */
      for (int r = 0; r < b->nrep[m]; r++) local_params[mesh->devices[b->rep_idx[m][r]]] += stepped;
      if (!it.mask) continue;
      GArray *users = b->users[w];
      for (guint u = 0; u < users->len; u++) {
        int o = g_array_index(users, int, u);
        if (cfg(b, o)->mesh == m && o < it.ready) it.ready = o;
      }
      it.bytes = elems * b->dtype_bytes;
      g_array_append_val(items, it);
    }
  }
  g_array_sort(items, compare_sync_items);
  const SyncItem *all = (const SyncItem *)items->data;
  GArray *buckets = g_array_new(FALSE, FALSE, sizeof(guint) * 2); /* [begin, end) in items */
  for (guint i = 0; i < items->len;) {
    guint j = i;
    double filled = 0;
    /* Fill a bucket up to the cap (a weight larger than the cap gets one of its own). */
    while (j < items->len && all[j].m == all[i].m && all[j].mask == all[i].mask) {
      filled += all[j].bytes;
      j++;
      if (b->s->bucket_bytes <= 0 || filled >= b->s->bucket_bytes) break;
    }
    guint range[2] = {i, j};
    g_array_append_val(buckets, range);
    /* ZeRO (Rajbhandari et al. 2020, section 7.2.1): with optimizer states partitioned (stage 1)
     * each rank needs only its shard of the summed gradient: a reduce-scatter once the
     * accumulated gradients are complete, then an all-gather of the updated parameters — the
     * same 2 Psi as data parallelism's all-reduce (the survey's Table IV). Stage 2 also keeps
     * gradients partitioned during accumulation: a reduce-scatter every microbatch. */
    if (b->s->zero_stage >= 2)
      for (int mb = 0; mb < b->M; mb++)
        add_bucket(b, all + i, (int)(j - i), CM_REDUCE_SCATTER, mb, NULL, syncs);
    else if (b->s->zero_stage == 1)
      add_bucket(b, all + i, (int)(j - i), CM_REDUCE_SCATTER, -1, NULL, syncs);
    else
      add_bucket(b, all + i, (int)(j - i), CM_ALL_REDUCE, -1, NULL, syncs);
    i = j;
  }
  g_autofree uint32_t *opt = g_new(uint32_t, ndev);
  SimTask t = {0};
  t.kind = SIM_TASK_OPTIMIZER;
  t.op = -1;
  t.tensor = -1;
  t.microbatch = -1;
  for (int d = 0; d < ndev; d++) {
    opt[d] = NO_TASK;
    if (local_params[d] <= 0) continue;
    t.duration = sim_time_from_seconds(cm_optimizer_time(b->p, &b->c->device, local_params[d]));
    uint32_t r = sim_resource_compute(d);
    opt[d] = sim_task_graph_add(b->tg, &t, &r, 1);
    if (last_compute[d] != NO_TASK) sim_task_graph_edge(b->tg, last_compute[d], opt[d]);
  }
  for (guint i = 0; i < syncs->len; i++) {
    const uint32_t *pair = (const uint32_t *)(syncs->data + i * sizeof(uint32_t) * 2);
    sim_task_graph_edge(b->tg, pair[0], opt[pair[1]]);
  }
  g_array_unref(syncs);
  for (guint k = 0; (b->s->zero_stage == 1 || b->s->zero_stage == 2) && k < buckets->len; k++) {
    const guint *range = (const guint *)(buckets->data + k * sizeof(guint) * 2);
    add_bucket(b, all + range[0], (int)(range[1] - range[0]), CM_ALL_GATHER, -1, opt, NULL);
  }
  g_array_unref(buckets);
  g_array_unref(items);
}

/* --- Symmetry (issue 4): devices a strategy treats alike are simulated once. ---
 * Along a mesh axis every device runs the same tasks on equal partitions; when in addition
 * every group of devices along any set of the mesh's axes communicates at the same cost
 * (cm_group_link), and every stage-to-stage transfer pair costs the same, the task graph is
 * invariant under permuting replicas, so each replica's timeline equals its representative's:
 * simulating the devices with coordinate 0 on those axes gives the expanded graph's answer,
 * bit for bit. A collective then occupies only its simulated members' streams and still costs
 * the whole group's time. Meshes that share devices (FlexFlow-style per-op placements) are
 * always expanded. */

static gboolean uniform_group_cost(const Builder *b, const MdlMesh *mesh, unsigned mask) {
  g_autofree int *members = g_new(int, mesh->ndevices);
  g_autofree int *devices = g_new(int, mesh->ndevices);
  CmLinkCost first = {0};
  gboolean have = FALSE;
  for (int base = 0; base < mesh->ndevices; base++) {
    if (!is_group_base(mesh, mask, base)) continue;
    int p = group_members(mesh, mask, base, members);
    for (int i = 0; i < p; i++) devices[i] = mesh->devices[members[i]];
    CmLinkCost c = cm_group_link(b->c, devices, p);
    if (!have) first = c, have = TRUE;
    else if (c.alpha != first.alpha || c.beta != first.beta) return FALSE;
  }
  return TRUE;
}

/* Every transfer between two meshes (index-aligned pairs, as convert() sends) costs the same. */
static gboolean uniform_transfers(const Builder *b) {
  int nm = (int)b->s->meshes->len;
  for (int m1 = 0; m1 < nm; m1++)
    for (int m2 = 0; m2 < nm; m2++) {
      if (m1 == m2) continue;
      const MdlMesh *sm = mdl_strategy_mesh(b->s, m1), *dm = mdl_strategy_mesh(b->s, m2);
      CmLinkCost first = {0};
      for (int j = 0; j < dm->ndevices; j++) {
        int pair[2] = {sm->devices[j % sm->ndevices], dm->devices[j]};
        CmLinkCost c = cm_group_link(b->c, pair, 2);
        if (pair[0] == pair[1]) c.alpha = c.beta = -1;
        if (j == 0) first = c;
        else if (c.alpha != first.alpha || c.beta != first.beta) return FALSE;
      }
    }
  return TRUE;
}

static gboolean meshes_disjoint(const Builder *b) {
  int n = b->tg->num_devices;
  g_autofree int *owner = g_new(int, n);
  for (int d = 0; d < n; d++) owner[d] = -1;
  for (guint m = 0; m < b->s->meshes->len; m++) {
    const MdlMesh *mesh = mdl_strategy_mesh(b->s, (int)m);
    for (int i = 0; i < mesh->ndevices; i++) {
      if (owner[mesh->devices[i]] >= 0) return FALSE;
      owner[mesh->devices[i]] = (int)m;
    }
  }
  return TRUE;
}

/* Mask of the axes of mesh @m whose replicas may be folded: all axes of size > 1, when the
 * groups the simulation forms on it (along each single axis for resharding, over the gradient
 * sync masks) have uniform costs; otherwise none. */
static unsigned symmetric_axes(const Builder *b, int m) {
  const MdlMesh *mesh = mdl_strategy_mesh(b->s, m);
  unsigned all = 0;
  for (int a = 0; a < mesh->ndims; a++)
    if (mesh->shape[a] > 1) all |= 1u << a;
  for (int a = 0; a < mesh->ndims; a++)
    if ((all & (1u << a)) && !uniform_group_cost(b, mesh, 1u << a)) return 0;
  for (int w = 0; w < mdl_graph_num_tensors(b->g); w++) {
    if (!mdl_graph_tensor(b->g, w)->is_weight) continue;
    int first;
    MdlLayout layout;
    unsigned mask = grad_sync_mask(b, w, m, &first, &layout);
    if (mask && !uniform_group_cost(b, mesh, mask)) return 0;
  }
  return all;
}

static void choose_representatives(Builder *b, gboolean allow) {
  int nm = (int)b->s->meshes->len;
  b->nrep = g_new0(int, nm);
  b->rep_idx = g_new0(int *, nm);
  b->rep_pos = g_new0(int *, nm);
  b->rep_of = g_new0(int *, nm);
  /* Step mode is always expanded: collectives of different axes (and stage-to-stage sends)
   * contend for a device's ports and NICs, and with only a representative's transfers built
   * the receiving sides' contention is not mirrored (a replica's ingress port is used by its
   * neighbours' transfers, which are not simulated). */
  b->symmetric = allow && !b->step && meshes_disjoint(b) && uniform_transfers(b);
  for (int m = 0; m < nm; m++) {
    const MdlMesh *mesh = mdl_strategy_mesh(b->s, m);
    unsigned mask = b->symmetric ? symmetric_axes(b, m) : 0;
    int stride[MDL_MAX_MESH_AXES];
    mesh_strides(mesh, stride);
    b->rep_idx[m] = g_new(int, mesh->ndevices);
    b->rep_pos[m] = g_new(int, mesh->ndevices);
    b->rep_of[m] = g_new(int, mesh->ndevices);
    for (int i = 0; i < mesh->ndevices; i++) {
      int rep = i;
      for (int a = 0; a < mesh->ndims; a++)
        if (mask & (1u << a)) rep -= ((i / stride[a]) % mesh->shape[a]) * stride[a];
      b->rep_of[m][i] = rep;
      b->rep_pos[m][i] = -1;
      if (rep == i) {
        b->rep_pos[m][i] = b->nrep[m];
        b->rep_idx[m][b->nrep[m]++] = i;
      }
    }
  }
}

static void free_representatives(Builder *b) {
  for (guint m = 0; m < b->s->meshes->len; m++) {
    g_free(b->rep_idx[m]);
    g_free(b->rep_pos[m]);
    g_free(b->rep_of[m]);
  }
  g_free(b->rep_idx);
  g_free(b->rep_pos);
  g_free(b->rep_of);
  g_free(b->nrep);
}

static void conversion_free(gpointer data) {
  Conversion *cv = data;
  g_free(cv->ready);
  g_free(cv);
}

SimTaskGraph *sim_build(const MdlGraph *graph, const MdlStrategy *strategy,
                        const DevCluster *cluster, const CmParams *params, GError **error) {
  SimOptions options = {0};
  return sim_build_with_options(graph, strategy, cluster, params, &options, error);
}

SimTaskGraph *sim_build_with_options(const MdlGraph *graph, const MdlStrategy *strategy,
                                     const DevCluster *cluster, const CmParams *params,
                                     const SimOptions *options, GError **error) {
  if (!mdl_strategy_validate(strategy, graph, cluster, error)) return NULL;
  Builder b = {0};
  b.g = graph;
  b.s = strategy;
  b.c = cluster;
  b.p = params;
  b.nops = mdl_graph_num_ops(graph);
  b.M = strategy->num_microbatches;
  b.dtype_bytes = dev_dtype_bytes(strategy->dtype);
  b.tg = sim_task_graph_new(dev_cluster_num_devices(cluster));
  int nt = mdl_graph_num_tensors(graph);
  b.fwd_base = g_new(uint32_t, b.nops);
  b.bwd_base = g_new(uint32_t, b.nops);
  b.wgt_base = g_new(uint32_t, b.nops);
  b.rec_base = g_new(uint32_t, b.nops);
  b.group = mdl_strategy_recompute_groups(strategy, graph);
  b.grads_done_b = g_new0(int, strategy->num_stages);
  b.grads_done_w = g_new0(int, strategy->num_stages);
  b.sample_tdim = g_new(int, nt);
  b.conversions = g_new(GPtrArray *, nt);
  b.rec_conversions = g_new(GPtrArray *, nt);
  b.users = g_new(GArray *, nt);
  for (int t = 0; t < nt; t++) {
    b.sample_tdim[t] = -1;
    b.conversions[t] = g_ptr_array_new_with_free_func(conversion_free);
    b.rec_conversions[t] = g_ptr_array_new_with_free_func(conversion_free);
    b.users[t] = g_array_new(FALSE, FALSE, sizeof(int));
  }
  /* Sample dims and users in one pass over the operands. */
  for (int o = 0; o < b.nops; o++) {
    const MdlOp *op = mdl_graph_op(graph, o);
    int sd = mdl_op_sample_dim(op);
    for (int k = -1; k < op->ninputs; k++) {
      const MdlOperand *opd = k < 0 ? &op->output : &op->inputs[k];
      if (k >= 0) g_array_append_val(b.users[opd->tensor], o);
      for (int i = 0; sd >= 0 && i < MDL_MAX_DIMS; i++)
        if (opd->dim_map[i] == sd && b.sample_tdim[opd->tensor] < 0) b.sample_tdim[opd->tensor] = i;
    }
  }
  b.step = options->step_collectives;
  b.plans = g_ptr_array_new_with_free_func(crossmesh_cache_free);
  /* Cross-mesh resharding runs on link resources and plans every device's slices, so the
   * graph is expanded (symmetry would need per-unit orbits). */
  gboolean crossmesh = needs_crossmesh(&b);
  if (b.step || crossmesh) b.tg->num_resources = sim_network_num_resources(cluster);
  choose_representatives(&b, !options->no_symmetry && !crossmesh);
  b.tg->symmetric = b.symmetric;
  for (guint m = 0; m < strategy->meshes->len; m++) b.tg->simulated_devices += b.nrep[m];
  add_compute_tasks(&b);
  b.chain_prev = g_new(uint32_t, sim_task_graph_size(b.tg) + 1);
  for (uint32_t i = 0; i < sim_task_graph_size(b.tg); i++) b.chain_prev[i] = NO_TASK;
  g_autofree uint32_t *last = chain_compute(&b);
  add_forward_dependencies(&b);
  if (strategy->zero_stage >= 3) add_parameter_gathers(&b, task_fwd);
  b.phase = SIM_PHASE_BACKWARD;
  add_backward_dependencies(&b);
  add_recompute_dependencies(&b);
  add_regathers(&b);
  if (strategy->zero_stage >= 3) {
    add_parameter_gathers(&b, task_rec);
    add_parameter_gathers(&b, task_bwd);
  }
  b.phase = SIM_PHASE_ITERATION;
  add_gradient_sync_and_optimizer(&b, last);
  sim_task_graph_finish(b.tg);
  for (int t = 0; t < nt; t++) {
    g_ptr_array_unref(b.conversions[t]);
    g_ptr_array_unref(b.rec_conversions[t]);
    g_array_unref(b.users[t]);
  }
  g_free(b.conversions);
  g_free(b.rec_conversions);
  g_free(b.chain_prev);
  g_free(b.rec_base);
  g_free(b.group);
  g_free(b.users);
  free_representatives(&b);
  g_ptr_array_unref(b.plans);
  g_free(b.sample_tdim);
  g_free(b.fwd_base);
  g_free(b.bwd_base);
  g_free(b.wgt_base);
  g_free(b.grads_done_b);
  g_free(b.grads_done_w);
  return b.tg;
}
