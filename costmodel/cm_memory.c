/* costmodel/memory — peak memory per device: weights, gradients, optimizer states, activations.
 *
 * Weights and gradients are held in the compute dtype; Adam keeps m and v in fp32 and, under
 * 16-bit mixed precision, an fp32 master copy: 2 + 2 + 12 = 16 bytes per parameter for
 * fp16/bf16 and 4 + 4 + 8 = 16 for fp32 (Rajbhandari et al. 2020, ZeRO, section 3.1).
 * Activations: each op saves its non-weight inputs for the backward pass (the local slice in
 * the op's layout, one copy per tensor per device); a pipeline rank holds that for every
 * microbatch in flight under its schedule (in_flight). Weight gradients, dY buffers,
 * workspace, fragmentation and communication buffers are not counted (issue 3 adds buffers). */
#include "costmodel/costmodel.h"

#include "costmodel/cm_backward.h"

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

CmMemory *cm_memory_per_device(const MdlGraph *graph, const MdlStrategy *s,
                               const DevCluster *cluster) {
  int ndev = dev_cluster_num_devices(cluster);
  CmMemory *mem = g_new0(CmMemory, ndev);
  double wbytes = dev_dtype_bytes(s->dtype);
  double opt_bytes = s->dtype == DEV_DTYPE_FP32 || s->dtype == DEV_DTYPE_TF32 ? 8.0 : 12.0;
  int nmeshes = (int)s->meshes->len;
  GHashTable *seen_w = g_hash_table_new(g_direct_hash, g_direct_equal);
  GHashTable *seen_a = g_hash_table_new(g_direct_hash, g_direct_equal);
  /* Under weight delay, (tensor, mesh) pairs some reader keeps until its W. */
  GHashTable *until_w = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (int o = 0; s->weight_delay && o < mdl_graph_num_ops(graph); o++) {
    const MdlOp *op = mdl_graph_op(graph, o);
    if (cm_weight_grad_share(graph, op) <= 0) continue;
    for (int k = 0; k < op->ninputs; k++)
      if (!mdl_graph_tensor(graph, op->inputs[k].tensor)->is_weight)
        first_time(until_w, op->inputs[k].tensor, s->configs[o].mesh, nmeshes);
  }
  for (int o = 0; o < mdl_graph_num_ops(graph); o++) {
    const MdlOp *op = mdl_graph_op(graph, o);
    const MdlOpConfig *c = &s->configs[o];
    const MdlMesh *mesh = mdl_strategy_mesh(s, c->mesh);
    for (int k = 0; k < op->ninputs; k++) {
      const MdlOperand *opd = &op->inputs[k];
      const MdlTensor *t = mdl_graph_tensor(graph, opd->tensor);
      MdlLayout layout = mdl_layout_of_operand(op, opd, FALSE, c, mesh);
      if (t->is_weight) {
        if (!first_time(seen_w, opd->tensor, c->mesh, nmeshes)) continue;
        double elems = mdl_layout_local_elements(graph, opd->tensor, -1, &layout, mesh, 1);
        for (int i = 0; i < mesh->ndevices; i++) {
          CmMemory *m = &mem[mesh->devices[i]];
          m->weights += elems * wbytes;
          m->gradients += elems * wbytes;
          m->optimizer += elems * opt_bytes;
        }
      } else {
        if (!first_time(seen_a, opd->tensor, c->mesh, nmeshes)) continue;
        gpointer key = GINT_TO_POINTER(opd->tensor * nmeshes + c->mesh + 1);
        double mult = in_flight(s, c->stage, g_hash_table_contains(until_w, key));
        int sdim = mdl_tensor_sample_dim(graph, opd->tensor);
        double elems = mdl_layout_local_elements(graph, opd->tensor, sdim, &layout, mesh,
                                                 s->num_microbatches);
        for (int i = 0; i < mesh->ndevices; i++)
          mem[mesh->devices[i]].activations += elems * wbytes * mult;
      }
    }
  }
  g_hash_table_unref(seen_w);
  g_hash_table_unref(seen_a);
  g_hash_table_unref(until_w);
  for (int d = 0; d < ndev; d++)
    mem[d].total = mem[d].weights + mem[d].gradients + mem[d].optimizer + mem[d].activations;
  return mem;
}
