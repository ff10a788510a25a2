/* sim/build — gradient synchronization of replicated weights (DDP-style buckets), ZeRO's
 * reduce-scatters and parameter all-gathers, sequence parallelism's re-gathers, and the
 * optimizer step. */
#include "sim/sim-int.h"
#include "sim/sim_build-int.h"

#include "costmodel/cm_framework.h"

/* The mesh axes over which weight @w's gradient is all-reduced on mesh @m: those it is
 * replicated on (Broadcast) while an op using it there splits them. @first gets the first such
 * op (-1: no op uses @w on @m) and @layout the weight's layout there. */
unsigned sb_grad_sync_mask(const Builder *b, int w, int m, int *first, MdlLayout *layout) {
  const MdlMesh *mesh = mdl_strategy_mesh(b->s, m);
  const SbUsers *users = &b->users[w];
  unsigned mask = 0;
  *first = -1;
  for (guint u = 0; u < users->len; u++) {
    int o = users->op[u];
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

/* The all-gathers of input @k of @o (kept as its @saved shard, needed as @need), one per
 * microbatch and representative r, each gating the task that reads it (@base + mb * nrep + r)
 * and issued when the task two before that one in program order ends (issue_point). */
static void regather_into(Builder *b, int o, int k, MdlLayout saved, MdlLayout need,
                          uint32_t base) {
  const MdlMesh *mesh = mesh_of(b, o);
  int m = cfg(b, o)->mesh, t = mdl_graph_op(b->g, o)->inputs[k].tensor;
  /* per microbatch mb and representative r (in mesh order): the task that reads the
   * re-gathered input, base + mb * nrep + r, and where the gather is issued (in_c) */
  const int nrep = b->nrep[m], *idx = b->rep_idx[m], n = b->M * nrep;
  g_autofree uint32_t *in_c = g_new(uint32_t, (gsize)MAX(n, 1));
  g_autofree uint32_t *out_c = g_new(uint32_t, (gsize)MAX(n, 1));
  g_autofree uint32_t *to_c = g_new(uint32_t, (gsize)MAX(n, 1));
  for (int j = 0; j < n; j++) in_c[j] = issue_point(b, base + (uint32_t)j);
  for (int j = 0; j < n; j++) to_c[j] = base + (uint32_t)j;
  g_autofree uint32_t *input = g_new(uint32_t, mesh->ndevices);
  g_autofree uint32_t *ready = g_new(uint32_t, mesh->ndevices);
  SbReplay replay;
  sb_replay_init(&replay, b, idx, nrep, idx, nrep);
  for (int mb = 0; mb < b->M;) {
    /* the next microbatches' gathers copied at once (each one's edges before its own), or
     * this one built and recorded */
    SbReplayTargets targets = {to_c + (gsize)mb * nrep, FALSE};
    int copies = sb_replay_many(b, &replay, in_c + (gsize)mb * nrep, mb, b->M - mb,
                                out_c + (gsize)mb * nrep, &targets);
    if (copies) {
      mb += copies;
      continue;
    }
    for (int i = 0; i < mesh->ndevices; i++) input[i] = NO_TASK;
    for (int r = 0; r < nrep; r++) input[idx[r]] = in_c[mb * nrep + r];
    memcpy(ready, input, sizeof(uint32_t) * (gsize)mesh->ndevices);
    SbMark begin = sb_mark(b);
    sb_convert_on_mesh(b, m, saved, need, t, o, mb, ready);
    sb_replay_record(b, &replay, begin, input, mb, ready);
    for (int r = 0; r < nrep; r++)
      if (ready[idx[r]] != NO_TASK) sim_task_graph_edge(b->tg, ready[idx[r]], to_c[mb * nrep + r]);
    mb++;
  }
  sb_replay_clear(&replay);
}

/* Sequence parallelism (Korthikanti et al. 2022, section 4.2.2): an input kept as its shard
 * (mdl_saved_input_layout) is all-gathered again before the first backward-pass task that
 * reads it (its W under weight delay or Megatron's overlap: only dW = X^T dY reads X), once
 * per microbatch. Megatron-LM's LinearWithGradAccumulationAndAsyncCommunication
 * (megatron/core/tensor_parallel/layers.py, NVIDIA/Megatron-LM 000c4ac) saves the input shard
 * in its forward (ctx.save_for_backward(input, weight)) and, in its backward, all-gathers it
 * again (async_op=True, before grad_output.matmul(weight); handle.wait() before the dW GEMM).
 * Under recomputation the same holds for a recomputed op: CheckpointFunction.backward
 * (megatron/core/tensor_parallel/random.py) re-runs the checkpointed forward under
 * torch.enable_grad() (the forward's all-gathers again: sb_recompute_segment, and for an input
 * kept from outside the group the first gather below, which feeds R) and then runs
 * torch.autograd.backward through it, whose linear layers saved their input shards again: the
 * backward's re-gather runs as well, beside dX. */
void sb_regathers_segment(Builder *b, int o) {
  const MdlOp *op = mdl_graph_op(b->g, o);
  for (int k = 0; k < op->ninputs; k++) {
    int p = mdl_graph_tensor(b->g, op->inputs[k].tensor)->producer;
    gboolean regather;
    if (p < 0) continue;
    MdlLayout saved = mdl_saved_input_layout(b->g, b->s, o, k, &regather);
    if (!regather) continue;
    MdlLayout need = mdl_layout_of_operand(op, &op->inputs[k], FALSE, cfg(b, o), mesh_of(b, o));
    gboolean in_group = b->group[o] >= 0 && b->group[p] == b->group[o];
    if (b->rec_base[o] != NO_TASK && !in_group) regather_into(b, o, k, saved, need, b->rec_base[o]);
    regather_into(b, o, k, saved, need, b->wgt_base[o] != NO_TASK ? b->wgt_base[o] : b->bwd_base[o]);
  }
}

/* Whether weight operand @k of op @u was read by an earlier operand of the unit's ops
 * @first..@u (a weight read twice within a unit is gathered once). */
static gboolean read_earlier_in_unit(const Builder *b, int first, int u, int k) {
  int w = mdl_graph_op(b->g, u)->inputs[k].tensor;
  for (int o = first; o <= u; o++) {
    const MdlOp *op = mdl_graph_op(b->g, o);
    for (int j = 0; j < (o == u ? k : op->ninputs); j++)
      if (op->inputs[j].tensor == w) return TRUE;
  }
  return FALSE;
}

void sb_unit_gathers(const Builder *b, int o, GArray *out) {
  g_array_set_size(out, 0);
  if (o > 0 && b->fsdp_unit[o - 1] == b->fsdp_unit[o]) return;
  const MdlMesh *mesh = mesh_of(b, o);
  int m = cfg(b, o)->mesh;
  for (int u = o; u < b->nops && b->fsdp_unit[u] == b->fsdp_unit[o]; u++) {
    const MdlOp *op = mdl_graph_op(b->g, u);
    for (int k = 0; k < op->ninputs; k++) {
      int w = op->inputs[k].tensor, first;
      if (!mdl_graph_tensor(b->g, w)->is_weight || read_earlier_in_unit(b, o, u, k)) continue;
      MdlLayout layout;
      unsigned mask = sb_grad_sync_mask(b, w, m, &first, &layout);
      if (!mask) continue; /* not replicated: nothing to gather */
      MdlLayout mine = mdl_layout_of_operand(op, &op->inputs[k], FALSE, cfg(b, u), mesh);
      double bytes = mdl_layout_local_elements(b->g, w, -1, &mine, mesh, 1) * b->dtype_bytes;
      guint g = 0;
      while (g < out->len && g_array_index(out, SbUnitGather, g).mask != mask) g++;
      if (g == out->len) {
        SbUnitGather add = {mask, w, 0};
        g_array_append_val(out, add);
      }
      g_array_index(out, SbUnitGather, g).bytes += bytes;
    }
  }
}

/* Whether compute tasks @t and @u are of one block: the same FSDP unit, microbatch and pass
 * (forward F; or backward: R, B and W). */
static gboolean same_block(const Builder *b, uint32_t t, uint32_t u) {
  const SimTask *x = &g_array_index(b->tg->tasks, SimTask, t);
  const SimTask *y = &g_array_index(b->tg->tasks, SimTask, u);
  return b->fsdp_unit[x->op] == b->fsdp_unit[y->op] && x->microbatch == y->microbatch &&
         (x->kind == SIM_TASK_FORWARD) == (y->kind == SIM_TASK_FORWARD);
}

/* The first compute task, in its device's program, of the block holding @t. */
static uint32_t block_start(const Builder *b, uint32_t t) {
  for (uint32_t p = b->chain_prev[t]; p != NO_TASK && same_block(b, p, t); p = b->chain_prev[p])
    t = p;
  return t;
}

/* Where the gather of the block starting at @start is issued: with prefetch, when the block
 * before it starts (the task before that block ends), so that the gather runs while that block
 * computes (PyTorch FSDP: forward prefetch, and backward_prefetch=BACKWARD_PRE, which issues
 * the next unit's all-gather before the current unit's gradient computation,
 * https://pytorch.org/docs/stable/fsdp.html and notes/fsdp.html; Megatron-Core's Megatron-FSDP,
 * megatron/core/distributed/fsdp/src/megatron_fsdp, groups parameters by fsdp_unit_modules and
 * with overlap_param_gather overlaps the all-gathers with the forward compute); without, when the block before it has computed (backward_prefetch=None:
 * "no overlap"), so the gather is exposed. NO_TASK: nothing before it. */
static uint32_t fsdp_issue_point(const Builder *b, uint32_t start) {
  uint32_t prev = b->chain_prev[start];
  if (!b->s->fsdp_prefetch || prev == NO_TASK) return prev;
  return b->chain_prev[block_start(b, prev)];
}

/* The groups over the axes @mask of mesh @m (they partition it), with their simulated
 * members: found once for a loop over microbatches or buckets. */
typedef struct {
  int n;                 /* groups, in the order of their bases */
  int *size, *nsim;      /* per group: its devices, its simulated ones */
  int *devices;          /* every group's devices, one group after the other */
  int *sim, *sim_members; /* every group's simulated devices and their mesh indices */
} MeshGroups;

static void mesh_groups(const Builder *b, int m, unsigned mask, MeshGroups *g) {
  const MdlMesh *mesh = mdl_strategy_mesh(b->s, m);
  int nd = mesh->ndevices, nall = 0, nsims = 0;
  g_autofree int *members = g_new(int, nd);
  g->n = 0;
  g->size = g_new(int, nd);
  g->nsim = g_new(int, nd);
  g->devices = g_new(int, nd);
  g->sim = g_new(int, nd);
  g->sim_members = g_new(int, nd);
  for (int base = 0; base < nd; base++) {
    if (!sb_is_group_base(mesh, mask, base)) continue;
    int p = sb_group_members(mesh, mask, base, members), nsim = 0;
    g_assert(nall + p <= nd);
    for (int i = 0; i < p; i++) {
      g->devices[nall + i] = mesh->devices[members[i]];
      if (b->rep_pos[m][members[i]] < 0) continue;
      g->sim_members[nsims + nsim] = members[i];
      g->sim[nsims + nsim++] = g->devices[nall + i];
    }
    g->size[g->n] = p;
    g->nsim[g->n++] = nsim;
    nall += p;
    nsims += nsim;
  }
}

static void mesh_groups_clear(MeshGroups *g) {
  g_free(g->size);
  g_free(g->nsim);
  g_free(g->devices);
  g_free(g->sim);
  g_free(g->sim_members);
}

/* The last groups found (mesh_groups), kept while the buckets that follow are over the same
 * mesh and axes (sorted by them: sb_sync_items). */
typedef struct {
  int m;                 /* -1: none yet */
  unsigned mask;
  MeshGroups groups;
} GroupsCache;

static const MeshGroups *groups_for(const Builder *b, GroupsCache *c, int m, unsigned mask) {
  if (c->m == m && c->mask == mask) return &c->groups;
  if (c->m >= 0) mesh_groups_clear(&c->groups);
  mesh_groups(b, m, mask, &c->groups);
  c->m = m;
  c->mask = mask;
  return &c->groups;
}

/* ZeRO-3 (Rajbhandari et al. 2020, section 5.3) as FSDP runs it (Zhao et al. 2023, "PyTorch
 * FSDP", section 3): the weights of one FSDP unit (a layer) are all-gathered together over their
 * data-parallel replicas before the unit's forward and again before its backward, per
 * microbatch, and freed after each (reshard after forward); the backward's gather also feeds the
 * unit's recomputed forward, which runs inside its backward (activation checkpointing inside an
 * FSDP unit). W computes dW = X^T dY without the weight, so only the block's start waits. */
void sb_parameter_gathers_segment(Builder *b, gboolean backward, int o) {
  GArray *gathers = g_array_new(FALSE, FALSE, sizeof(SbUnitGather));
  sb_unit_gathers(b, o, gathers);
  const MdlMesh *mesh = mesh_of(b, o);
  int m = cfg(b, o)->mesh, last = o;
  while (last + 1 < b->nops && b->fsdp_unit[last + 1] == b->fsdp_unit[o]) last++;
  g_autofree uint32_t *deps = g_new(uint32_t, mesh->ndevices);
  g_autofree uint32_t *users = g_new(uint32_t, mesh->ndevices);
  for (guint g = 0; g < gathers->len; g++) {
    const SbUnitGather *gather = &g_array_index(gathers, SbUnitGather, g);
    MeshGroups groups;
    mesh_groups(b, m, gather->mask, &groups);
    for (int mb = 0; mb < b->M; mb++)
      for (int k = 0, at = 0, at_sim = 0; k < groups.n; at += groups.size[k], at_sim += groups.nsim[k], k++) {
        int nsim = groups.nsim[k];
        if (nsim == 0) continue;
        for (int i = 0; i < nsim; i++) {
          /* The unit's backward starts with its last op's B (or the R before it). */
          int member = groups.sim_members[at_sim + i];
          uint32_t any = backward ? task_bwd(b, last, mb, member) : task_fwd(b, o, mb, member);
          users[i] = block_start(b, any);
          deps[i] = fsdp_issue_point(b, users[i]);
        }
        SimCollectiveSpan span = sb_add_comm_task(b, SIM_TASK_COMM, SIM_STREAM_DP, CM_ALL_GATHER,
                                                  groups.devices + at, groups.size[k],
                                                  groups.sim + at_sim, nsim, gather->bytes, o,
                                                  gather->w, mb);
        sb_edges_from_distinct(b, deps, nsim, span.gate);
        for (int i = 0; i < nsim; i++) sim_task_graph_edge(b->tg, span.join, users[i]);
      }
    mesh_groups_clear(&groups);
  }
  g_array_unref(gathers);
}

static int compare_ints(const void *pa, const void *pb) {
  int a = *(const int *)pa, b = *(const int *)pb;
  return (a > b) - (a < b);
}

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
 * parameter all-gather follows; without overlap_grad_reduce, each device's last backward task), or with @prefetch by nothing, the first microbatch's forwards
 * of the bucket's weights waiting for it instead (the parameter all-gather overlapped with the
 * forward pass). With @syncs, the joins go there as (task, device) pairs. @groups: those over
 * @items[0]'s mesh and axes (mesh_groups). */
double sb_param_bytes(const Builder *b, double grad_bytes) {
  return grad_bytes * b->dtype_bytes / cm_framework_grad_bytes(b->s->framework, b->s->dtype);
}

static void add_bucket(Builder *b, const SyncItem *items, int n, CmCollective coll, int mb,
                       const uint32_t *after, gboolean prefetch, GArray *syncs,
                       const MeshGroups *groups) {
  int m = items[0].m;
  double bytes = 0;
  for (int k = 0; k < n; k++) bytes += items[k].bytes;
  if (coll == CM_ALL_GATHER) bytes = sb_param_bytes(b, bytes); /* the parameters */
  const MeshGroups *gs = groups;
  for (int g = 0, at = 0, at_sim = 0; g < gs->n; at += gs->size[g], at_sim += gs->nsim[g], g++) {
    int p = gs->size[g], nsim = gs->nsim[g];
    const int *devices = gs->devices + at, *sim = gs->sim + at_sim;
    const int *sim_members = gs->sim_members + at_sim;
    if (nsim == 0) continue;
    SimCollectiveSpan span = sb_add_comm_task(b, SIM_TASK_GRAD_SYNC, SIM_STREAM_DP, coll, devices,
                                              p, sim, nsim, bytes, items[0].first, items[0].w, mb);
    for (int i = 0; after && i < nsim; i++)
      if (after[sim[i]] != NO_TASK) sim_task_graph_edge(b->tg, after[sim[i]], span.gate);
    for (int k = 0; !after && k < n; k++) {
      const SbUsers *users = &b->users[items[k].w];
      for (guint u = 0; u < users->len; u++) {
        int o = users->op[u];
        if (cfg(b, o)->mesh != m) continue;
        for (int i = 0; i < nsim; i++) {
          int idx = sim_members[i];
          if (prefetch) {
            sim_task_graph_edge(b->tg, span.join, task_fwd(b, o, 0, idx));
            continue;
          }
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

/* The sync items, sorted (sim_build-int.h). */
GArray *sb_sync_items(const Builder *b, double *local_params) {
  GArray *items = g_array_new(FALSE, FALSE, sizeof(SyncItem));
  GArray *meshes = g_array_new(FALSE, FALSE, sizeof(int));
  for (int w = 0; w < mdl_graph_num_tensors(b->g); w++) {
    if (!mdl_graph_tensor(b->g, w)->is_weight) continue;
    /* The meshes its readers run on, ascending (the order every mesh was once scanned in, so
     * that each device's parameter sum adds in the same order; scanning every mesh for every
     * weight is quadratic in deep pipelines). */
    const SbUsers *users = &b->users[w];
    g_array_set_size(meshes, 0);
    for (guint u = 0; u < users->len; u++)
      g_array_append_val(meshes, cfg(b, users->op[u])->mesh);
    g_array_sort(meshes, compare_ints);
    for (guint i = 0; i < meshes->len; i++) {
      int m = g_array_index(meshes, int, i);
      if (i > 0 && m == g_array_index(meshes, int, i - 1)) continue;
      const MdlMesh *mesh = mdl_strategy_mesh(b->s, m);
      SyncItem it = {.w = w, .m = m, .ready = INT_MAX};
      MdlLayout layout;
      it.mask = sb_grad_sync_mask(b, w, m, &it.first, &layout);
      if (it.first < 0) continue;
      double elems = mdl_layout_local_elements(b->g, w, -1, &layout, mesh, 1), nd = 1;
      for (int a = 0; a < mesh->ndims; a++)
        if (it.mask & (1u << a)) nd *= mesh->shape[a];
      double stepped = b->s->zero_stage >= 1 ? elems / nd : elems; /* this device's shard */
      for (int r = 0; local_params && r < b->nrep[m]; r++)
        local_params[mesh->devices[b->rep_idx[m][r]]] += stepped;
      if (!it.mask) continue;
      for (guint u = 0; u < users->len; u++) {
        int o = users->op[u];
        if (cfg(b, o)->mesh == m && o < it.ready) it.ready = o;
      }
      /* Megatron-LM reduces a bf16 model's gradients in fp32 (cm_framework_grad_bytes). */
      it.bytes = elems * cm_framework_grad_bytes(b->s->framework, b->s->dtype);
      g_array_append_val(items, it);
    }
  }
  g_array_unref(meshes);
  g_array_sort(items, compare_sync_items);
  return items;
}

GArray *sb_sync_buckets(const Builder *b, const GArray *items, gboolean per_unit) {
  const SyncItem *all = (const SyncItem *)items->data;
  GArray *buckets = g_array_new(FALSE, FALSE, sizeof(guint) * 2); /* [begin, end) in items */
  gboolean fsdp = per_unit;
  for (guint i = 0; i < items->len;) {
    guint j = i;
    double filled = 0;
    /* Fill a bucket up to the cap (a weight larger than the cap gets one of its own). */
    while (j < items->len && all[j].m == all[i].m && all[j].mask == all[i].mask) {
      /* FSDP (ZeRO-3): one bucket per unit, its gradients reduce-scattered together once its
       * backward is done (PyTorch FSDP's post-backward hook reduce-scatters the unit's flat
       * gradient; Zhao et al. 2023, section 3), whatever the bucket cap. */
      if (fsdp && b->fsdp_unit[all[j].ready] != b->fsdp_unit[all[i].ready]) break;
      filled += all[j].bytes;
      j++;
      if (!fsdp && (b->s->bucket_bytes <= 0 || filled >= b->s->bucket_bytes)) break;
    }
    guint range[2] = {i, j};
    g_array_append_val(buckets, range);
    i = j;
  }
  return buckets;
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
 * all-gather of the same bytes, 2 Psi (the survey's Table IV). Stage 3 (FSDP) reduce-scatters
 * each microbatch as stage 2 does, one bucket per FSDP unit, and gathers parameters where they
 * are used (sb_parameter_gathers_segment), not after the step. Stage 1's reduce-scatter of a bucket starts as soon as its last gradients are ready,
 * overlapping the rest of the backward (Megatron-Core's distributed optimizer with
 * --overlap-grad-reduce); with overlap_param_gather its all-gathers move ahead of the forward.
 * Without overlap_grad_reduce (ZeRO 0-1 only) every bucket's collective starts after the
 * device's last backward task instead. */
void sb_add_gradient_sync_and_optimizer(Builder *b, const uint32_t *last_compute) {
  int ndev = b->tg->num_devices;
  g_autofree double *local_params = g_new0(double, ndev);
  GArray *syncs = g_array_new(FALSE, FALSE, sizeof(uint32_t) * 2); /* (task, device) */
  GArray *items = sb_sync_items(b, local_params);
  const SyncItem *all = (const SyncItem *)items->data;
  GArray *buckets = sb_sync_buckets(b, items, b->s->zero_stage >= 3);
  /* Without overlap_grad_reduce (Megatron-LM's default DDP: finish_grad_sync runs after
   * forward_backward_func; the 2021 code's allreduce_gradients after the backward) every bucket
   * waits for its device's last compute task, the iteration's last backward (B or W) task. */
  const uint32_t *after_backward = b->s->overlap_grad_reduce ? NULL : last_compute;
  GroupsCache cache = {.m = -1};
  for (guint k = 0; k < buckets->len; k++) {
    const guint *range = (const guint *)(buckets->data + k * sizeof(guint) * 2);
    guint i = range[0], j = range[1];
    /* ZeRO (Rajbhandari et al. 2020, section 7.2.1): with optimizer states partitioned (stage 1)
     * each rank needs only its shard of the summed gradient: a reduce-scatter once the
     * accumulated gradients are complete, then an all-gather of the updated parameters — the
     * same 2 Psi as data parallelism's all-reduce (the survey's Table IV). Stage 2 also keeps
     * gradients partitioned during accumulation: a reduce-scatter every microbatch. */
    const MeshGroups *groups = groups_for(b, &cache, all[i].m, all[i].mask);
    if (b->s->zero_stage >= 2) { /* one bucket per microbatch */
      for (int mb = 0; mb < b->M; mb++)
        add_bucket(b, all + i, (int)(j - i), CM_REDUCE_SCATTER, mb, NULL, FALSE, syncs, groups);
    } else {
      add_bucket(b, all + i, (int)(j - i), b->s->zero_stage == 1 ? CM_REDUCE_SCATTER : CM_ALL_REDUCE,
                 -1, after_backward, FALSE, syncs, groups);
    }
  }
  /* The optimizer step: its first kernels wait for the synced gradients, the all-gathers after
   * it for its last (sim_build_host.c: the host synchronizations inside it). */
  g_autofree uint32_t *opt = g_new(uint32_t, ndev);
  g_autofree uint32_t *opt_first = g_new(uint32_t, ndev);
  sb_add_optimizer_step(b, last_compute, local_params, opt_first, opt);
  for (guint i = 0; i < syncs->len; i++) {
    const uint32_t *pair = (const uint32_t *)(syncs->data + i * sizeof(uint32_t) * 2);
    sim_task_graph_edge(b->tg, pair[0], opt_first[pair[1]]);
  }
  g_array_unref(syncs);
  /* Megatron-Core's --overlap-param-gather: the all-gather of the parameters the previous
   * step updated runs during this iteration's forward, bucket by bucket in the order the
   * forward needs them (the reverse of the gradients'), each ahead of the first forward that
   * reads its weights (megatron/core/distributed/param_and_grad_buffer.py: the next bucket's
   * all-gather is dispatched when a forward pre-hook finds its own). In steady state that is
   * the step's all-gather; here it opens the iteration. */
  gboolean ahead = b->s->overlap_param_gather;
  for (guint k = 0; (b->s->zero_stage == 1 || b->s->zero_stage == 2) && k < buckets->len; k++) {
    const guint *range = (const guint *)(buckets->data + (ahead ? buckets->len - 1 - k : k) *
                                                             sizeof(guint) * 2);
    add_bucket(b, all + range[0], (int)(range[1] - range[0]), CM_ALL_GATHER, -1,
               ahead ? NULL : opt, ahead, NULL,
               groups_for(b, &cache, all[range[0]].m, all[range[0]].mask));
  }
  if (cache.m >= 0) mesh_groups_clear(&cache.groups);
  g_array_unref(buckets);
  g_array_unref(items);
}
