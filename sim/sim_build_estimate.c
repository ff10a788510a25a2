/* sim/build — the task graph's size before it is built, and the limits on it (sim.h:
 * SIM_MAX_TASKS, SIM_MAX_DEVICE_SLOTS; README, "Limits").
 *
 * The estimate walks the same decisions as the builder once per op and operand instead of once
 * per microbatch and device: which tensors are resharded on which mesh axes (forward, backward,
 * recomputation, sequence-parallel re-gathers), ZeRO-3 parameter gathers, the DDP buckets of
 * the gradient sync (sb_sync_items/sb_sync_buckets, shared with the builder), the cross-mesh
 * plans (planned here into the builder's cache, so the build reuses them). Every collective
 * per microbatch is counted as one task per group that has a simulated member, or under
 * `--collectives step` as its gate, transfers and join (sim_network.h). The number of groups
 * with a simulated member follows from which mesh axes symmetry folds (the representatives have
 * coordinate 0 on those): along an axis mask, each such group holds the product of the unfolded
 * masked axes' sizes of simulated members, so there are nrep / that many. Nothing here is per
 * microbatch or per task: a graph of billions of tasks is estimated in the time of one pass over
 * the ops. The test (tests/test-limits.c) checks estimate >= built size and estimate close to
 * it on strategies of every kind. */
#include "sim/sim-int.h"
#include "sim/sim_build-int.h"

#include "costmodel/cm_framework.h"

/* One forward conversion the builder shares among readers: (tensor, mesh, layout). */
typedef struct {
  int t, mesh;
  MdlLayout layout;
} ConversionKey;

static guint conversion_key_hash(gconstpointer p) {
  const ConversionKey *k = p;
  guint h = (guint)k->t * 2654435761u ^ (guint)k->mesh * 40503u;
  for (int a = 0; a < MDL_MAX_MESH_AXES; a++) h = h * 31u + (guint8)k->layout.axis[a];
  return h;
}

static gboolean conversion_key_equal(gconstpointer a, gconstpointer b) {
  return memcmp(a, b, sizeof(ConversionKey)) == 0;
}

typedef struct {
  Builder *b;
  unsigned *folded;         /* per mesh: the axes symmetry folds */
  GHashTable *seen;         /* forward conversions counted (ConversionKey) */
  GHashTable *seen_rec;     /* the same for recomputed values */
  GError **error;
} Estimator;

guint64 sb_device_slots(const MdlGraph *graph, const MdlStrategy *strategy) {
  guint64 slots = 0;
  for (int o = 0; o < mdl_graph_num_ops(graph); o++)
    slots += (guint64)mdl_strategy_mesh(strategy, strategy->configs[o].mesh)->ndevices;
  return slots * (guint64)strategy->num_microbatches;
}

/* Groups of mesh @m along the axes in @mask that have a simulated member; @p gets the group
 * size, @nsim the simulated members of each. */
static guint64 groups(const Estimator *e, int m, unsigned mask, int *p, int *nsim) {
  const MdlMesh *mesh = mdl_strategy_mesh(e->b->s, m);
  *p = *nsim = 1;
  for (int a = 0; a < mesh->ndims; a++) {
    if (!(mask & (1u << a))) continue;
    *p *= mesh->shape[a];
    if (!(e->folded[m] & (1u << a))) *nsim *= mesh->shape[a];
  }
  return (guint64)(e->b->nrep[m] / *nsim);
}

/* Tasks of one collective over @p devices of which @nsim are simulated (sb_add_comm_task). */
static guint64 collective_tasks(const Builder *b, CmCollective coll, int p, int nsim) {
  if (!b->step || !sim_network_supports(coll)) return 1;
  guint64 steps;
  switch (coll) {
  case CM_ALL_REDUCE: steps = 2 * (guint64)(p - 1); break;
  case CM_ALL_GATHER:
  case CM_REDUCE_SCATTER:
  case CM_ALL_TO_ALL: steps = (guint64)(p - 1); break;
  default: return 3; /* send/recv: gate, one transfer, join */
  }
  return 2 + steps * (nsim == 1 && p > 1 ? 1 : (guint64)p);
}

/* Tasks per microbatch of sb_convert_on_mesh(@m, @from, @to). */
static guint64 on_mesh(const Estimator *e, int m, MdlLayout from, MdlLayout to) {
  const MdlMesh *mesh = mdl_strategy_mesh(e->b->s, m);
  guint64 n = 0;
  for (int a = 0; a < mesh->ndims; a++) {
    int src = from.axis[a], dst = to.axis[a];
    if (src == dst || mesh->shape[a] == 1) continue;
    CmCollective coll;
    if (src == MDL_LAYOUT_PARTIAL)
      coll = dst == MDL_LAYOUT_BROADCAST ? CM_ALL_REDUCE : CM_REDUCE_SCATTER;
    else if (src >= 0)
      coll = dst == MDL_LAYOUT_BROADCAST ? CM_ALL_GATHER : CM_ALL_TO_ALL;
    else continue; /* Broadcast to Split or Partial: a free local slice */
    int p, nsim;
    guint64 g = groups(e, m, 1u << a, &p, &nsim);
    n += g * collective_tasks(e->b, coll, p, nsim);
  }
  return n;
}

/* Tasks per microbatch of sb_convert(); FALSE (error set) when a cross-mesh move cannot be
 * planned. */
static gboolean convert(Estimator *e, int t, int src_mesh, MdlLayout from, int dst_mesh,
                        MdlLayout to, guint64 *n) {
  if (src_mesh == dst_mesh) {
    *n = on_mesh(e, src_mesh, from, to);
    return TRUE;
  }
  MdlLayout start = sb_reduced(from);
  *n = on_mesh(e, src_mesh, from, start);
  if (sb_aligned_move(e->b, src_mesh, from, dst_mesh, to)) {
    /* One send/recv per simulated destination (none where it is its own source), and the
     * all-gathers of a scattered move. */
    *n += (guint64)e->b->nrep[dst_mesh] * collective_tasks(e->b, CM_SEND_RECV, 2, 2);
    int axis = sb_scatter_gather_axis(e->b, src_mesh, start, dst_mesh, to);
    if (axis >= 0) {
      int p, nsim;
      guint64 g = groups(e, dst_mesh, 1u << axis, &p, &nsim);
      *n += g * collective_tasks(e->b, CM_ALL_GATHER, p, nsim);
    }
    return TRUE;
  }
  const SimCrossMeshPlan *plan =
      sb_crossmesh_plan(e->b, t, src_mesh, start, dst_mesh, to, e->error);
  if (!plan) return FALSE;
  SimCrossMeshStats stats = sim_crossmesh_plan_stats(plan);
  *n += (guint64)stats.transfer_tasks + (guint64)stats.join_tasks;
  return TRUE;
}

/* A forward conversion of @t's value (recomputed: its re-run's) to (@mesh, @layout) for
 * reader @o, counted once per distinct target as sb_forward_conversion builds it. */
static gboolean forward_conversion(Estimator *e, int t, int o, MdlLayout layout,
                                   gboolean recomputed, guint64 *n) {
  const Builder *b = e->b;
  ConversionKey key = {t, cfg(b, o)->mesh, layout};
  GHashTable *seen = recomputed ? e->seen_rec : e->seen;
  *n = 0;
  if (g_hash_table_contains(seen, &key)) return TRUE;
  g_hash_table_add(seen, g_memdup2(&key, sizeof key));
  int p = mdl_graph_tensor(b->g, t)->producer;
  const MdlOp *pop = mdl_graph_op(b->g, p);
  MdlLayout from = mdl_layout_of_operand(pop, &pop->output, TRUE, cfg(b, p), mesh_of(b, p));
  return convert(e, t, cfg(b, p)->mesh, from, key.mesh, layout, n);
}

/* Per microbatch: the resharding of every operand (sb_add_forward_dependencies,
 * add_recompute_dependencies, sb_add_backward_dependencies, sb_add_regathers). */
static gboolean dependencies(Estimator *e, guint64 *total) {
  Builder *b = e->b;
  for (int o = 0; o < b->nops; o++) {
    const MdlOp *op = mdl_graph_op(b->g, o);
    const MdlMesh *mesh = mesh_of(b, o);
    for (int k = 0; k < op->ninputs; k++) {
      int t = op->inputs[k].tensor, p = mdl_graph_tensor(b->g, t)->producer;
      if (p < 0) continue;
      guint64 n;
      MdlLayout need = mdl_layout_of_operand(op, &op->inputs[k], FALSE, cfg(b, o), mesh);
      if (!forward_conversion(e, t, o, need, FALSE, &n)) return FALSE;
      *total += n;
      gboolean in_group = b->group[o] >= 0 && b->group[p] == b->group[o];
      if (in_group) { /* the recomputed value, resharded again */
        if (!forward_conversion(e, t, o, need, TRUE, &n)) return FALSE;
        *total += n;
      }
      if (sb_gradient_group_leader(b, o, k)) {
        const MdlOp *pop = mdl_graph_op(b->g, p);
        MdlLayout pneed = mdl_layout_of_operand(pop, &pop->output, TRUE, cfg(b, p), mesh_of(b, p));
        for (int a = 0; a < MDL_MAX_MESH_AXES; a++)
          if (pneed.axis[a] == MDL_LAYOUT_PARTIAL) pneed.axis[a] = MDL_LAYOUT_BROADCAST;
        MdlLayout grad = sb_input_grad_layout(b, o, k);
        if (!convert(e, t, cfg(b, o)->mesh, grad, cfg(b, p)->mesh, pneed, &n)) return FALSE;
        *total += n;
      }
      gboolean regather;
      MdlLayout saved = mdl_saved_input_layout(b->g, b->s, o, k, &regather);
      if (regather) /* the backward's re-gather, and the recomputed forward's of a kept input */
        *total += on_mesh(e, cfg(b, o)->mesh, saved, need) *
                  (b->group[o] >= 0 && !in_group ? 2 : 1);
    }
  }
  return TRUE;
}

/* Per microbatch: ZeRO-3's parameter all-gathers, per FSDP unit before its forward and before
 * its backward (sb_parameter_gathers_segment). */
static guint64 parameter_gathers(const Estimator *e) {
  const Builder *b = e->b;
  guint64 n = 0;
  GArray *gathers = g_array_new(FALSE, FALSE, sizeof(SbUnitGather));
  for (int o = 0; o < b->nops; o++) {
    sb_unit_gathers(b, o, gathers);
    for (guint k = 0; k < gathers->len; k++) {
      int p, nsim;
      guint64 g = groups(e, cfg(b, o)->mesh, g_array_index(gathers, SbUnitGather, k).mask, &p, &nsim);
      n += 2 * g * collective_tasks(b, CM_ALL_GATHER, p, nsim);
    }
  }
  g_array_unref(gathers);
  return n;
}

/* The gradient sync's collectives (sb_add_gradient_sync_and_optimizer). */
static guint64 gradient_sync(const Estimator *e) {
  const Builder *b = e->b;
  GArray *items = sb_sync_items(b, NULL);
  GArray *buckets = sb_sync_buckets(b, items, b->s->zero_stage >= 3);
  const SyncItem *all = (const SyncItem *)items->data;
  guint64 n = 0;
  for (guint k = 0; k < buckets->len; k++) {
    const guint *range = (const guint *)(buckets->data + k * sizeof(guint) * 2);
    const SyncItem *first = &all[range[0]];
    int p, nsim;
    guint64 g = groups(e, first->m, first->mask, &p, &nsim);
    if (b->s->zero_stage >= 2)
      n += (guint64)b->M * g * collective_tasks(b, CM_REDUCE_SCATTER, p, nsim);
    else if (b->s->zero_stage == 1)
      n += g * collective_tasks(b, CM_REDUCE_SCATTER, p, nsim);
    else
      n += g * collective_tasks(b, CM_ALL_REDUCE, p, nsim);
    if (b->s->zero_stage == 1 || b->s->zero_stage == 2) /* the parameters' all-gather */
      n += g * collective_tasks(b, CM_ALL_GATHER, p, nsim);
  }
  g_array_unref(buckets);
  g_array_unref(items);
  return n;
}

gboolean sb_estimate_tasks(Builder *b, SimEstimate *out, GError **error) {
  int nm = (int)b->s->meshes->len;
  Estimator e = {b, g_new0(unsigned, nm),
                 g_hash_table_new_full(conversion_key_hash, conversion_key_equal, g_free, NULL),
                 g_hash_table_new_full(conversion_key_hash, conversion_key_equal, g_free, NULL),
                 error};
  for (int m = 0; m < nm; m++) {
    const MdlMesh *mesh = mdl_strategy_mesh(b->s, m);
    int stride[MDL_MAX_MESH_AXES];
    sb_mesh_strides(mesh, stride);
    /* The mesh index with coordinate 1 on axis a and 0 elsewhere is simulated exactly when
     * symmetry leaves a unfolded. */
    for (int a = 0; a < mesh->ndims; a++)
      if (mesh->shape[a] > 1 && b->rep_pos[m][stride[a]] < 0) e.folded[m] |= 1u << a;
  }
  guint64 compute = 0, per_microbatch = 0;
  for (int o = 0; o < b->nops; o++) {
    guint64 kinds = 2 + (sb_has_weight_task(b, o) ? 1 : 0) + (b->group[o] >= 0 ? 1 : 0);
    compute += kinds * (guint64)b->nrep[cfg(b, o)->mesh];
  }
  compute *= (guint64)b->M;
  gboolean ok = dependencies(&e, &per_microbatch);
  if (ok) {
    if (b->s->zero_stage >= 3) per_microbatch += parameter_gathers(&e);
    guint64 optimizer = 0;
    for (int m = 0; m < nm; m++) optimizer += (guint64)b->nrep[m];
    optimizer = MIN(optimizer, (guint64)b->tg->num_devices);
    /* each synchronization inside the step: a join, and per device a wait and a phase
     * (sb_add_optimizer_step) */
    double before[CM_MAX_STEP_SYNCS];
    guint64 syncs = (guint64)cm_framework_step_syncs(cm_framework_get(b->s->framework),
                                                     b->s->dtype, before);
    optimizer += syncs * (2 * optimizer + 1);
    out->compute_tasks = compute;
    guint64 host = b->s->framework == MDL_FRAMEWORK_NONE ? 0 : compute; /* one launch each */
    out->tasks = compute + host + per_microbatch * (guint64)b->M + gradient_sync(&e) + optimizer;
    out->simulated_devices = b->tg->simulated_devices;
    out->symmetric = b->symmetric;
  }
  g_free(e.folded);
  g_hash_table_unref(e.seen);
  g_hash_table_unref(e.seen_rec);
  return ok;
}

gboolean sim_estimate_check(const SimEstimate *e, GError **error) {
  if (e->device_slots > SIM_MAX_DEVICE_SLOTS) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "the simulation is too large: ops x microbatches x mesh devices = %" G_GUINT64_FORMAT
                " exceeds the limit of %" G_GUINT64_FORMAT " (about 8.5 GB): use fewer, larger "
                "microbatches (a larger mb), fewer devices or a smaller model",
                (guint64)e->device_slots, (guint64)SIM_MAX_DEVICE_SLOTS);
    return FALSE;
  }
  if (e->tasks > SIM_MAX_TASKS) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "the simulation is too large: about %" G_GUINT64_FORMAT " tasks (%" G_GUINT64_FORMAT
                " compute tasks on %d simulated GPU%s) exceed the limit of %" G_GUINT64_FORMAT
                " tasks (about 9 GB at 91 bytes a task): use fewer, larger microbatches (a larger mb), a smaller batch "
                "or fewer layers%s",
                (guint64)e->tasks, (guint64)e->compute_tasks, e->simulated_devices,
                e->simulated_devices == 1 ? "" : "s",
                (guint64)SIM_MAX_TASKS,
                e->symmetric ? ""
                             : ", or let symmetry fold the replicas where links allow (no "
                               "--no-symmetry; step mode folds only with a NIC per GPU and "
                               "overlap on, --collectives task always)");
    return FALSE;
  }
  return TRUE;
}
