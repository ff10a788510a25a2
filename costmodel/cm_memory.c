/* costmodel/memory — peak memory per device: weights, gradients, optimizer states, activations.
 *
 * Weights and gradients are held in the compute dtype; Adam keeps m and v in fp32 and, under
 * 16-bit mixed precision, an fp32 master copy: 2 + 2 + 12 = 16 bytes per parameter for
 * fp16/bf16 and 4 + 4 + 8 = 16 for fp32 (Rajbhandari et al. 2020, ZeRO, section 3.1).
 * Activations: each op saves its non-weight inputs for the backward pass (the local slice in
 * the op's layout, one copy per tensor per device); a stage holds that for every microbatch in
 * flight: GPipe all m, 1F1B min(m, p - stage) (Narayanan et al. 2021, section 2.2).
 * Workspace, fragmentation and communication buffers are not counted (issue 3 adds buffers). */
#include "costmodel/costmodel.h"

static int in_flight(const MdlStrategy *s, int stage) {
  if (s->schedule == MDL_SCHEDULE_GPIPE) return s->num_microbatches;
  int depth = s->num_stages - stage;
  return depth < s->num_microbatches ? depth : s->num_microbatches;
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
  for (int o = 0; o < mdl_graph_num_ops(graph); o++) {
    const MdlOp *op = mdl_graph_op(graph, o);
    const MdlOpConfig *c = &s->configs[o];
    const MdlMesh *mesh = mdl_strategy_mesh(s, c->mesh);
    int mult = in_flight(s, c->stage);
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
  for (int d = 0; d < ndev; d++)
    mem[d].total = mem[d].weights + mem[d].gradients + mem[d].optimizer + mem[d].activations;
  return mem;
}
