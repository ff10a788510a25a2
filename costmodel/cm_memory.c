/* costmodel/memory — peak memory per device: weights, gradients, optimizer states, activations,
 * communication buffers.
 *
 * Model states (Rajbhandari et al. 2020, ZeRO, section 3.1 and 5): weights and gradients in the
 * compute dtype (but Megatron-LM accumulates bf16 models' gradients in an fp32 main_grad buffer:
 * 4 bytes, cm_framework_grad_bytes); Adam keeps m and v in fp32 and, under 16-bit mixed precision, an fp32 master
 * copy: (2 + 2 + K) bytes per parameter with K = 12 for fp16/bf16 (4 + 4 + 8 for fp32). ZeRO
 * partitions them over the Nd data-parallel replicas of each weight (the mesh axes
 * mdl_operand_replica_axes gives): stage 1 the K term, stage 2 also the gradients, stage 3 also
 * the weights, so a replicated parameter costs 2 + 2 + K/Nd, 2 + (2 + K)/Nd and (2 + 2 + K)/Nd
 * bytes (the paper's Figure 1). Stage 3 (FSDP) gathers each FSDP unit's weights
 * (mdl_strategy_fsdp_units: a layer) around its use: the buffers hold the full weights of the
 * two largest units of the device (the unit computing and the one being prefetched,
 * sim/sim_build_sync.c), or of the largest one without prefetch (fsdp_prefetch=0).
 * Activations (Korthikanti et al. 2022, section 4): each op keeps, for its backward, its
 * non-weight inputs (the local slice in the op's layout, one copy per tensor per device; under
 * sequence parallelism the gathered inputs as their shards: mdl_saved_input_layout) except
 * those it marks unsaved (an addition's), and a 1-byte mask per output element when it applies
 * dropout. A pipeline rank holds that for every microbatch in flight under its schedule
 * (in_flight). Recomputation (mdl_strategy_recompute_groups) drops what an op of a recompute
 * group keeps of tensors produced inside its group, and the masks of its ops; it is rebuilt
 * for one microbatch at a time during the backward, so the device adds its largest group's
 * dropped bytes once (full recomputation: the layer inputs stay, plus one layer's activations;
 * selective: the attention core's 5as/h term is gone, plus one layer's core). Weight-gradient
 * and dY buffers, workspace and fragmentation are not counted. */
#include "costmodel/costmodel.h"

#include <string.h>

#include "costmodel/cm_backward.h"
#include "costmodel/cm_framework.h"

/* Multiplier of one microbatch's saved inputs of an op of chunk @stage: the activation sets
 * its rank r (of P) holds at the peak of its program, M microbatches (closed forms of the
 * orders in sim/sim_schedule.h; tests/test-schedule.c checks them against the programs):
 *  - GPipe: all M (Huang et al. 2019).
 *  - 1F1B: min(M, P - r) (Narayanan et al. 2021, section 2.2).
 *  - eager-1F1B: min(M, 2(P - r - 1) + 1): the cross-mesh resharding paper's (section 4)
 *    "2 x (#stages - i) + 1" forwards before the first backward (i 1-based), at most #stages
 *    more than 1F1B, as the paper bounds it.
 *  - interleaved 1F1B: its warm-up w = min(MV, 2(P - r - 1) + (V - 1) P) (MV when M == P)
 *    plus one chunk-microbatch, min(MV, w + 1), each holding one chunk's activations: 1/V of
 *    the rank's (Narayanan et al. 2021, section 2.2: a rank's activations as in 1F1B plus
 *    the extra warm-up chunks).
 *  - weight delay: rank r postpones its first r W's to the end, and an op with a weight
 *    gradient (@held_until_w) keeps its saved inputs until its W: min(total, above + r)
 *    (so every rank peaks at 1F1B's rank-0 figure, as ZB-H1 does: Qi et al. 2024, 3.1);
 *    ops without W free theirs after B, as without delay. */
static double in_flight(const MdlStrategy *s, int stage, gboolean held_until_w) {
  int P = mdl_strategy_num_ranks(s), r = mdl_strategy_rank_of_stage(s, stage);
  int M = s->num_microbatches, V = s->virtual_stages > 0 ? s->virtual_stages : 1;
  int total = M * V, units;
  switch (s->schedule) {
  case MDL_SCHEDULE_GPIPE: units = M; break;
  case MDL_SCHEDULE_EAGER_1F1B: units = MIN(M, 2 * (P - r - 1) + 1); break;
  case MDL_SCHEDULE_INTERLEAVED: {
    int warm = M == P ? total : MIN(total, 2 * (P - r - 1) + (V - 1) * P);
    units = MIN(total, warm + 1);
    break;
  }
  default: units = MIN(M, P - r); break;
  }
  if (s->weight_delay && held_until_w) units = MIN(total, units + r);
  return (double)units / V;
}

/* Marks (tensor, mesh) pairs already counted; key = tensor * nmeshes + mesh. */
static gboolean first_time(GHashTable *seen, int tensor, int mesh, int nmeshes) {
  gpointer key = GINT_TO_POINTER(tensor * nmeshes + mesh + 1);
  if (g_hash_table_contains(seen, key)) return FALSE;
  g_hash_table_add(seen, key);
  return TRUE;
}

/* Per device, the two largest per-unit gathered weights (ZeRO-3 buffers). */
static void keep_two_largest(double *first, double *second, double v) {
  if (v > *first) {
    *second = *first;
    *first = v;
  } else if (v > *second) {
    *second = v;
  }
}

/* Devices in the same meshes receive the same additions in the same order, so the loop below
 * runs over classes of devices (the set of meshes a device belongs to) and copies each class's
 * figures to its devices: the same sums bit for bit, at the cost of one device per class (a
 * Megatron stage's dp x tp devices are one class). @cls gets each device's class; returns,
 * per mesh, its classes (GArray of int, in order of first device). */
static GArray **device_classes(const MdlStrategy *s, int ndev, int *cls, int *nclasses) {
  int nmeshes = (int)s->meshes->len;
  /* Partition refinement: after mesh m, two devices share a raw class iff they belong to the
   * same meshes among 0..m (each mesh splits every class into its members and the rest). A
   * string key per device (its mesh list, printed) cost ~6% of a Llama 3.1 405B grid search's
   * CPU over 512 devices a call (2026-12-02). */
  int nraw = 1;
  g_autofree int *raw = g_new0(int, ndev);
  g_autofree int *touched = g_new(int, ndev); /* the last mesh that moved each device */
  for (int d = 0; d < ndev; d++) touched[d] = -1;
  g_autofree int *remap = NULL;
  int remap_len = 0;
  for (int m = 0; m < nmeshes; m++) {
    const MdlMesh *mesh = mdl_strategy_mesh(s, m);
    if (remap_len < nraw) {
      remap = g_renew(int, remap, nraw + mesh->ndevices);
      remap_len = nraw + mesh->ndevices;
    }
    for (int c = 0; c < nraw; c++) remap[c] = -1;
    int before = nraw;
    for (int i = 0; i < mesh->ndevices; i++) {
      int d = mesh->devices[i];
      if (touched[d] == m) continue; /* listed twice */
      touched[d] = m;
      int c = raw[d];
      if (c < before && remap[c] < 0) remap[c] = nraw++;
      raw[d] = c < before ? remap[c] : c;
    }
  }
  /* Numbered in order of first device, as a key per device numbered them. */
  g_autofree int *id = g_new(int, nraw);
  for (int c = 0; c < nraw; c++) id[c] = -1;
  *nclasses = 0;
  for (int d = 0; d < ndev; d++) {
    if (id[raw[d]] < 0) id[raw[d]] = (*nclasses)++;
    cls[d] = id[raw[d]];
  }
  GArray **of_mesh = g_new(GArray *, nmeshes);
  int *stamp = g_new(int, *nclasses); /* the last mesh that listed each class */
  for (int c = 0; c < *nclasses; c++) stamp[c] = -1;
  for (int m = 0; m < nmeshes; m++) {
    const MdlMesh *mesh = mdl_strategy_mesh(s, m);
    of_mesh[m] = g_array_new(FALSE, FALSE, sizeof(int));
    for (int i = 0; i < mesh->ndevices; i++) {
      int c = cls[mesh->devices[i]];
      if (stamp[c] == m) continue;
      stamp[c] = m;
      g_array_append_val(of_mesh[m], c);
    }
  }
  g_free(stamp);
  return of_mesh;
}

/* The memory of every device under @s with the ZeRO stage z, for each z in @zeros (bit z),
 * into @out[z] (arrays of dev_cluster_num_devices entries; the others untouched): the stage
 * changes only how the model states divide and, at stage 3, the gathered buffers, so one pass
 * over the ops serves every stage, each stage's sums made in the order a pass for it alone
 * makes them (bit for bit). */
static void memory_per_device(const MdlGraph *graph, const MdlStrategy *s, const DevCluster *cluster,
                              unsigned zeros, CmMemory **out) {
  int ndev = dev_cluster_num_devices(cluster), nops = mdl_graph_num_ops(graph), ncls;
  g_autofree int *cls = g_new(int, ndev);
  GArray **classes = device_classes(s, ndev, cls, &ncls);
  CmMemory *mem[4] = {NULL}; /* per stage asked, per class until the end */
  for (int z = 0; z < 4; z++)
    if (zeros & (1u << z)) mem[z] = g_new0(CmMemory, ncls);
  g_autofree double *activations = g_new0(double, ncls);
  double wbytes = dev_dtype_bytes(s->dtype);
  double gbytes = cm_framework_grad_bytes(s->framework, s->dtype); /* fp32 main_grad */
  double opt_bytes = s->dtype == DEV_DTYPE_FP32 || s->dtype == DEV_DTYPE_TF32 ? 8.0 : 12.0;
  int nmeshes = (int)s->meshes->len;
  GHashTable *seen_w = g_hash_table_new(g_direct_hash, g_direct_equal);
  GHashTable *seen_a = g_hash_table_new(g_direct_hash, g_direct_equal);
  GHashTable *seen_r = g_hash_table_new(g_direct_hash, g_direct_equal);
  /* Under weight delay, (tensor, mesh) pairs some reader keeps until its W. */
  GHashTable *until_w = g_hash_table_new(g_direct_hash, g_direct_equal);
  /* Data-parallel replica axes of every (weight, mesh): the OR over its users there. */
  GHashTable *replicas = g_hash_table_new(g_direct_hash, g_direct_equal);
  g_autofree int *group = mdl_strategy_recompute_groups(s, graph);
  g_autofree int *sample_tdim = mdl_tensor_sample_dims(graph);
  g_autofree double *group_bytes = g_new0(double, ncls);  /* the current group's dropped bytes */
  g_autofree double *largest_group = g_new0(double, ncls);
  g_autofree double *gathered = g_new0(double, 2 * (gsize)ncls); /* two largest per class */
  g_autofree int *unit = zeros & (1u << 3) ? mdl_strategy_fsdp_units(s, graph) : NULL;
  GHashTable *in_unit = g_hash_table_new(g_direct_hash, g_direct_equal); /* weights gathered */
  double unit_gathered = 0;
  /* FP8 (cm_fp8.c): Transformer Engine keeps an FP8 GEMM's input for the backward as its fp8
   * copy, 1 byte an element; a tensor every reader of which is such a GEMM is saved so. */
  g_autofree gboolean *fp8_saved = g_new(gboolean, mdl_graph_num_tensors(graph));
  for (int t = 0; t < mdl_graph_num_tensors(graph); t++) fp8_saved[t] = s->dtype == DEV_DTYPE_FP8;
  for (int o = 0; o < nops && s->dtype == DEV_DTYPE_FP8; o++) {
    const MdlOp *op = mdl_graph_op(graph, o);
    for (int k = 0; k < op->ninputs; k++)
      if (!cm_fp8_gemm(op, s->dtype)) fp8_saved[op->inputs[k].tensor] = FALSE;
  }
  for (int o = 0; o < nops; o++) {
    const MdlOp *op = mdl_graph_op(graph, o);
    const MdlMesh *mesh = mdl_strategy_mesh(s, s->configs[o].mesh);
    gboolean has_w = s->weight_delay && cm_weight_grad_share(graph, op) > 0;
    for (int k = 0; k < op->ninputs; k++) {
      int t = op->inputs[k].tensor;
      gpointer key = GINT_TO_POINTER(t * nmeshes + s->configs[o].mesh + 1);
      if (!mdl_graph_tensor(graph, t)->is_weight) {
        if (has_w) g_hash_table_add(until_w, key);
        continue;
      }
      unsigned mask = GPOINTER_TO_UINT(g_hash_table_lookup(replicas, key));
      mask |= mdl_operand_replica_axes(op, &op->inputs[k], &s->configs[o], mesh);
      g_hash_table_insert(replicas, key, GUINT_TO_POINTER(mask));
    }
  }
  for (int o = 0; o < nops; o++) {
    const MdlOp *op = mdl_graph_op(graph, o);
    const MdlOpConfig *c = &s->configs[o];
    const MdlMesh *mesh = mdl_strategy_mesh(s, c->mesh);
    const GArray *mc = classes[c->mesh];
    if (o > 0 && group[o - 1] >= 0 && group[o - 1] != group[o]) { /* a group ended */
      for (int d = 0; d < ncls; d++) largest_group[d] = MAX(largest_group[d], group_bytes[d]);
      memset(group_bytes, 0, sizeof(double) * (gsize)ncls);
    }
    if (unit && (o == 0 || unit[o - 1] != unit[o])) g_hash_table_remove_all(in_unit);
    for (int k = 0; k < op->ninputs; k++) {
      const MdlOperand *opd = &op->inputs[k];
      const MdlTensor *t = mdl_graph_tensor(graph, opd->tensor);
      gpointer key = GINT_TO_POINTER(opd->tensor * nmeshes + c->mesh + 1);
      if (t->is_weight) {
        MdlLayout layout = mdl_layout_of_operand(op, opd, FALSE, c, mesh);
        double elems = mdl_layout_local_elements(graph, opd->tensor, -1, &layout, mesh, 1);
        unsigned mask = GPOINTER_TO_UINT(g_hash_table_lookup(replicas, key));
        double nd = 1;
        for (int a = 0; a < mesh->ndims; a++)
          if (mask & (1u << a)) nd *= mesh->shape[a];
        /* A weight read twice within one unit is gathered once. */
        if (unit && nd > 1 && g_hash_table_add(in_unit, GINT_TO_POINTER(opd->tensor + 1)))
          unit_gathered += elems * wbytes;
        if (!first_time(seen_w, opd->tensor, c->mesh, nmeshes)) continue;
        /* FP8: the cached fp8 weight and its transpose (cm_fp8.c), 2 bytes a parameter; under
         * ZeRO-3 the weights are gathered per use and no copy of all of them stays. */
        for (int z = 0; z < 4; z++) {
          if (!mem[z]) continue;
          double fp8_copy = cm_fp8_gemm(op, s->dtype) && z < 3 ? 2 * elems : 0;
          for (guint i = 0; i < mc->len; i++) {
            CmMemory *m = &mem[z][g_array_index(mc, int, i)];
            m->weights += elems * wbytes / (z >= 3 ? nd : 1) + fp8_copy;
            m->gradients += elems * gbytes / (z >= 2 ? nd : 1);
            m->optimizer += elems * opt_bytes / (z >= 1 ? nd : 1);
          }
        }
        continue;
      }
      gboolean outside = t->producer < 0 || group[t->producer] != group[o];
      /* A recomputed op re-reads its inputs from outside its group: the group keeps them. */
      if ((op->unsaved_inputs & (1u << k)) && !(group[o] >= 0 && outside)) continue;
      /* Recomputed inside its group before the backward: held for one microbatch while the
       * group runs; else kept from the forward for every microbatch in flight. */
      gboolean rebuilt = group[o] >= 0 && !outside;
      if (!first_time(rebuilt ? seen_r : seen_a, opd->tensor, c->mesh, nmeshes)) continue;
      gboolean regather;
      MdlLayout layout = mdl_saved_input_layout(graph, s, o, k, &regather);
      int sdim = sample_tdim[opd->tensor];
      double bytes = mdl_layout_local_elements(graph, opd->tensor, sdim, &layout, mesh,
                                               s->num_microbatches) *
                     (fp8_saved[opd->tensor] ? 1.0 : wbytes);
      double mult = rebuilt ? 0 : in_flight(s, c->stage, g_hash_table_contains(until_w, key));
      for (guint i = 0; i < mc->len; i++) {
        if (rebuilt) group_bytes[g_array_index(mc, int, i)] += bytes;
        else activations[g_array_index(mc, int, i)] += bytes * mult;
      }
    }
    if (op->dropout) { /* the keep mask, one byte per output element */
      MdlLayout layout = mdl_layout_of_operand(op, &op->output, TRUE, c, mesh);
      int sdim = sample_tdim[op->output.tensor];
      double bytes = mdl_layout_local_elements(graph, op->output.tensor, sdim, &layout, mesh,
                                               s->num_microbatches);
      double mult = in_flight(s, c->stage, FALSE); /* read by B (dX) only */
      for (guint i = 0; i < mc->len; i++) {
        if (group[o] >= 0) group_bytes[g_array_index(mc, int, i)] += bytes;
        else activations[g_array_index(mc, int, i)] += bytes * mult;
      }
    }
    if (unit && (o == nops - 1 || unit[o + 1] != unit[o])) { /* the unit ends */
      for (guint i = 0; unit_gathered > 0 && i < mc->len; i++) {
        int d = g_array_index(mc, int, i);
        keep_two_largest(&gathered[2 * d], &gathered[2 * d + 1], unit_gathered);
      }
      unit_gathered = 0;
    }
  }
  g_hash_table_unref(in_unit);
  g_hash_table_unref(seen_w);
  g_hash_table_unref(seen_a);
  g_hash_table_unref(seen_r);
  g_hash_table_unref(until_w);
  g_hash_table_unref(replicas);
  for (int z = 0; z < 4; z++) {
    if (!mem[z]) continue;
    for (int d = 0; d < ncls; d++) {
      CmMemory *m = &mem[z][d];
      m->activations = activations[d] + MAX(largest_group[d], group_bytes[d]);
      /* the gathered weights: stage 3 only (no units below it, as a pass for it alone) */
      m->buffers = z >= 3 ? gathered[2 * d] + (s->fsdp_prefetch ? gathered[2 * d + 1] : 0) : 0;
      m->total = m->weights + m->gradients + m->optimizer + m->activations + m->buffers;
    }
    out[z] = g_new(CmMemory, ndev);
    for (int d = 0; d < ndev; d++) out[z][d] = mem[z][cls[d]];
    g_free(mem[z]);
  }
  for (guint m = 0; m < s->meshes->len; m++) g_array_unref(classes[m]);
  g_free(classes);
}

CmMemory *cm_memory_per_device(const MdlGraph *graph, const MdlStrategy *s, const DevCluster *cluster) {
  CmMemory *out[4] = {NULL};
  int z = CLAMP(s->zero_stage, 0, 3); /* mdl_strategy_validate keeps it in 0..3 */
  memory_per_device(graph, s, cluster, 1u << z, out);
  return out[z];
}

void cm_memory_per_device_zero_stages(const MdlGraph *graph, const MdlStrategy *s,
                                      const DevCluster *cluster, CmMemory *out[4]) {
  memory_per_device(graph, s, cluster, 0xf, out);
}
