/* model/zoo/mlp — a multi-layer perceptron: the data input x [B,H], L dense layers
 * y = relu(x W + bias) with W [H,H] (ReLU and bias folded into the matmul: their FLOPs are
 * negligible next to 2BH^2 and the bias parameters are not modeled), then a softmax
 * cross-entropy over H classes against the labels [B], a second data input.
 * Tensor parallelism alternates Megatron column and row splits: even layers split their output
 * features "n", odd layers their contraction "k", so a column/row pair needs one all-reduce.
 * The loss splits its classes when the last layer is column parallel (vocab-parallel
 * cross-entropy, see mdl_zoo_gpt.c), else it is replicated.
 */
#include "model/mdl_zoo.h"

void mdl_zoo_classifier_loss(MdlGraph *g, int logits, int64_t batch, int64_t classes, gboolean split) {
  int labels = mdl_graph_add_tensor(g, "labels", 1, &batch, FALSE, TRUE);
  int loss = mdl_zoo_activation(g, "loss", 1, batch);
  MdlOp op;
  mdl_zoo_op_init(&op, "loss", MDL_OP_LOSS, -1);
  mdl_zoo_dim(&op, "b", batch, MDL_ROLE_SAMPLE, TRUE);
  int c = mdl_zoo_dim(&op, "classes", classes, MDL_ROLE_REDUCTION, TRUE);
  op.tp_dim = split ? c : -1;
  mdl_zoo_input(&op, logits, "b,classes");
  mdl_zoo_input(&op, labels, "b");
  mdl_zoo_output(&op, loss, "b");
  mdl_graph_add_op(g, &op);
}

MdlGraph *mdl_zoo_mlp(const char *name, int64_t layers, int64_t hidden, int64_t batch,
                      GError **error) {
  if (!mdl_zoo_check_size(name, "a layer [batch, hidden] x hidden", error, 3, batch, hidden, hidden))
    return NULL;
  MdlGraph *g = mdl_graph_new(name, "mlp", batch);
  g->default_dtype = DEV_DTYPE_FP32;
  g->num_layers = (int)layers;
  int64_t act[2] = {batch, hidden};
  int x = mdl_graph_add_tensor(g, "x", 2, act, FALSE, TRUE);
  for (int l = 0; l < layers; l++) {
    char wname[48], yname[48];
    g_snprintf(wname, sizeof wname, "fc%d.weight", l);
    g_snprintf(yname, sizeof yname, "fc%d", l);
    int w = mdl_zoo_weight(g, wname, 2, hidden, hidden);
    int y = mdl_zoo_activation(g, yname, 2, batch, hidden);
    MdlOp op;
    mdl_zoo_op_init(&op, yname, MDL_OP_MATMUL, l);
    mdl_zoo_dim(&op, "b", batch, MDL_ROLE_SAMPLE, TRUE);
    int n = mdl_zoo_dim(&op, "n", hidden, MDL_ROLE_PARAMETER, TRUE);
    int k = mdl_zoo_dim(&op, "k", hidden, MDL_ROLE_REDUCTION, TRUE);
    op.tp_dim = l % 2 == 0 ? n : k;
    mdl_zoo_input(&op, x, "b,k");
    mdl_zoo_input(&op, w, "k,n");
    mdl_zoo_output(&op, y, "b,n");
    mdl_graph_add_op(g, &op);
    x = y;
  }
  mdl_zoo_classifier_loss(g, x, batch, hidden, (layers - 1) % 2 == 0);
  return g;
}
