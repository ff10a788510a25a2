/* model/zoo/layers — the CNN layers ResNet and Inception are built from: convolution with
 * batch normalisation, pooling, channel concatenation, residual addition, the classifier.
 *
 * Activations are [b, c, h, w] (NCHW). A convolution is the op "NAME" (dims b sample, cout
 * parameter, h, w attribute (output positions), cin reduction; kernel_elems = kh x kw, as in
 * mdl_zoo_cnn.c) followed by "NAME.bn", batch normalisation with the ReLU folded in: an
 * ELEMENTWISE op reading the conv output and its [2, c] weight (gamma, beta) mapped on c, so
 * c is a parameter dim, at 8 FLOPs per element (mean, variance, normalise, scale and shift,
 * ReLU). Its statistics are per device (as PyTorch's BatchNorm2d under DDP), so every dim
 * splits. Convolutions have no bias (BN's beta takes its place, as in torchvision).
 * Concatenation along channels ("mixed" outputs of Inception modules): an ELEMENTWISE op over
 * the output [b, C, h, w] whose inputs map b, h, w and leave their channel dim unindexed, so a
 * split of the output channels reads each branch whole (an upper bound on what it needs); its
 * backward slices dY and reads no operand (unsaved). Residual addition: ELEMENTWISE over two
 * equal tensors, ReLU folded, no operand saved.
 */
#include "model/mdl_zoo.h"

#include <string.h>

static void shape_of(const MdlZooNet *n, int x, int64_t *c, int64_t *h, int64_t *w) {
  const MdlTensor *t = mdl_graph_tensor(n->g, x);
  g_assert(t->ndims == 4);
  *c = t->shape[1], *h = t->shape[2], *w = t->shape[3];
}

int mdl_zoo_conv_bn(MdlZooNet *n, const char *name, int x, int64_t cout, int kh, int kw,
                    int stride, int pad_h, int pad_w) {
  int64_t cin, h, w;
  shape_of(n, x, &cin, &h, &w);
  int64_t ho = (h + 2 * pad_h - kh) / stride + 1, wo = (w + 2 * pad_w - kw) / stride + 1;
  g_assert(ho >= 1 && wo >= 1);
  char wname[96], bn[96];
  g_snprintf(wname, sizeof wname, "%s.weight", name);
  int wt = mdl_zoo_weight(n->g, wname, 4, cout, cin, (int64_t)kh, (int64_t)kw);
  int y = mdl_zoo_activation(n->g, name, 4, n->b, cout, ho, wo);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_CONV2D, n->layer);
  op.kernel_elems = (int64_t)kh * kw;
  mdl_zoo_dim(&op, "b", n->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "cout", cout, MDL_ROLE_PARAMETER, TRUE);
  mdl_zoo_dim(&op, "h", ho, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "w", wo, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "cin", cin, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, x, "b,cin,h,w");
  mdl_zoo_input(&op, wt, "cout,cin,-,-");
  mdl_zoo_output(&op, y, "b,cout,h,w");
  mdl_graph_add_op(n->g, &op);

  g_snprintf(bn, sizeof bn, "%s.bn", name);
  g_snprintf(wname, sizeof wname, "%s.bn.weight", name);
  int gamma_beta = mdl_zoo_weight(n->g, wname, 2, (int64_t)2, cout);
  int z = mdl_zoo_activation(n->g, bn, 4, n->b, cout, ho, wo);
  mdl_zoo_op_init(&op, bn, MDL_OP_ELEMENTWISE, n->layer);
  op.flops_per_element = 8.0;
  mdl_zoo_dim(&op, "b", n->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "c", cout, MDL_ROLE_PARAMETER, TRUE);
  mdl_zoo_dim(&op, "h", ho, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "w", wo, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_input(&op, y, "b,c,h,w");
  mdl_zoo_input(&op, gamma_beta, "-,c");
  mdl_zoo_output(&op, z, "b,c,h,w");
  mdl_graph_add_op(n->g, &op);
  return z;
}

int mdl_zoo_pool(MdlZooNet *n, const char *name, int x, int k, int stride, int pad) {
  int64_t c, h, w;
  shape_of(n, x, &c, &h, &w);
  int64_t ho = (h + 2 * pad - k) / stride + 1, wo = (w + 2 * pad - k) / stride + 1;
  g_assert(ho >= 1 && wo >= 1);
  int y = mdl_zoo_activation(n->g, name, 4, n->b, c, ho, wo);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_POOL2D, n->layer);
  op.kernel_elems = (int64_t)k * k;
  mdl_zoo_dim(&op, "b", n->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "c", c, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "h", ho, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "w", wo, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_input(&op, x, "b,c,h,w");
  mdl_zoo_output(&op, y, "b,c,h,w");
  mdl_graph_add_op(n->g, &op);
  return y;
}

int mdl_zoo_global_pool(MdlZooNet *n, const char *name, int x) {
  int64_t c, h, w;
  shape_of(n, x, &c, &h, &w);
  int y = mdl_zoo_activation(n->g, name, 4, n->b, c, (int64_t)1, (int64_t)1);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_POOL2D, n->layer);
  op.kernel_elems = h * w;
  mdl_zoo_dim(&op, "b", n->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "c", c, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_input(&op, x, "b,c,-,-");
  mdl_zoo_output(&op, y, "b,c,-,-");
  mdl_graph_add_op(n->g, &op);
  return y;
}

int mdl_zoo_concat(MdlZooNet *n, const char *name, const int *inputs, int count) {
  g_assert(count >= 1 && count <= MDL_MAX_INPUTS);
  int64_t total = 0, c, h = 0, w = 0;
  for (int i = 0; i < count; i++) {
    int64_t hi, wi;
    shape_of(n, inputs[i], &c, &hi, &wi);
    g_assert(i == 0 || (hi == h && wi == w));
    total += c, h = hi, w = wi;
  }
  int y = mdl_zoo_activation(n->g, name, 4, n->b, total, h, w);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_ELEMENTWISE, n->layer);
  mdl_zoo_dim(&op, "b", n->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "c", total, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "h", h, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "w", w, MDL_ROLE_ATTRIBUTE, TRUE);
  for (int i = 0; i < count; i++) mdl_zoo_input(&op, inputs[i], "b,-,h,w");
  op.unsaved_inputs = (uint8_t)((1u << count) - 1);
  mdl_zoo_output(&op, y, "b,c,h,w");
  mdl_graph_add_op(n->g, &op);
  return y;
}

int mdl_zoo_add_relu(MdlZooNet *n, const char *name, int a, int b) {
  int64_t c, h, w;
  shape_of(n, a, &c, &h, &w);
  int y = mdl_zoo_activation(n->g, name, 4, n->b, c, h, w);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_ELEMENTWISE, n->layer);
  op.flops_per_element = 2.0; /* add, ReLU */
  mdl_zoo_dim(&op, "b", n->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "c", c, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "h", h, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "w", w, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_input(&op, a, "b,c,h,w");
  mdl_zoo_input(&op, b, "b,c,h,w");
  op.unsaved_inputs = 0x3;
  mdl_zoo_output(&op, y, "b,c,h,w");
  mdl_graph_add_op(n->g, &op);
  return y;
}

int mdl_zoo_classifier(MdlZooNet *n, const char *name, int x, int64_t classes) {
  int64_t c, h, w;
  shape_of(n, x, &c, &h, &w);
  g_assert(h == 1 && w == 1);
  char wname[96];
  g_snprintf(wname, sizeof wname, "%s.weight", name);
  int wt = mdl_zoo_weight(n->g, wname, 2, c, classes);
  int y = mdl_zoo_activation(n->g, name, 2, n->b, classes);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_MATMUL, n->layer);
  mdl_zoo_dim(&op, "b", n->b, MDL_ROLE_SAMPLE, TRUE);
  op.tp_dim = mdl_zoo_dim(&op, "n", classes, MDL_ROLE_PARAMETER, TRUE); /* column parallel */
  mdl_zoo_dim(&op, "k", c, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, x, "b,k,-,-");
  mdl_zoo_input(&op, wt, "k,n");
  mdl_zoo_output(&op, y, "b,n");
  mdl_graph_add_op(n->g, &op);
  mdl_zoo_classifier_loss(n->g, y, n->b, classes, TRUE);
  return y;
}
