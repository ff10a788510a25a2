/* costmodel/backward — the B/W split of an op's backward (see cm_backward.h). */
#include "costmodel/cm_backward.h"

double cm_weight_grad_share(const MdlGraph *graph, const MdlOp *op) {
  g_return_val_if_fail(graph && op, 0.0);
  int grads = 0, weights = 0;
  for (int k = 0; k < op->ninputs; k++) {
    int t = op->inputs[k].tensor;
    if (!mdl_tensor_needs_grad(graph, t)) continue;
    grads++;
    if (mdl_graph_tensor(graph, t)->is_weight) weights++;
  }
  if (grads == 0 || weights == 0) return 0.0;
  switch (op->kind) {
  case MDL_OP_MATMUL:
  case MDL_OP_BATCH_MATMUL:
  case MDL_OP_CONV2D: return (double)weights / grads;
  case MDL_OP_EMBEDDING: return 1.0;
  default: return 0.0;
  }
}
