/* model/zoo/inception — Inception-v3 (Szegedy et al. 2016, "Rethinking the Inception
 * Architecture for Computer Vision", Table 1 and Figs. 5-7), in the layout of torchvision's
 * inception_v3 (the reference implementation the parameter count is checked against):
 * 299x299x3 images, fp32.
 *
 * Stem: 3x3/2 conv 32, 3x3 conv 32, 3x3 conv 64 (pad 1), 3x3/2 max pool, 1x1 conv 80, 3x3 conv
 * 192, 3x3/2 max pool -> 35x35x192. Then the modules, each a set of parallel branches whose
 * outputs are concatenated along channels (mdl_zoo_concat): the branches are independent ops,
 * so the simulator can run them concurrently (FlexFlow's operation dimension):
 *   mixed_5b, 5c, 5d   Inception A (Fig. 5): 1x1; 1x1 -> 5x5; 1x1 -> 3x3 -> 3x3; avg pool -> 1x1
 *   mixed_6a           reduction to 17x17: 3x3/2; 1x1 -> 3x3 -> 3x3/2; max pool/2
 *   mixed_6b .. 6e     Inception B (Fig. 6, n = 7): 1x1; 1x1 -> 1x7 -> 7x1;
 *                      1x1 -> 7x1 -> 1x7 -> 7x1 -> 1x7; avg pool -> 1x1 (c7 = 128, 160, 160, 192)
 *   mixed_7a           reduction to 8x8: 1x1 -> 3x3/2; 1x1 -> 1x7 -> 7x1 -> 3x3/2; max pool/2
 *   mixed_7b, 7c       Inception C (Fig. 7): 1x1; 1x1 -> (1x3 | 3x1); 1x1 -> 3x3 -> (1x3 | 3x1);
 *                      avg pool -> 1x1 (the split pairs concatenated first, as torchvision does)
 * then global average pool over 8x8, FC 2048 -> 1000, softmax cross-entropy. Every conv is
 * followed by batch normalisation with ReLU folded (mdl_zoo_layers.c). The auxiliary
 * classifier is left out (it only adds a loss branch; the 23.8 M parameters quoted for the
 * network exclude it). Parameters: 23,833,568 (torchvision without aux_logits: 23,834,568;
 * the FC bias, 1000, is not modeled). An op's layer is its module (0-10).
 */
#include "model/mdl_zoo.h"

#include <stdarg.h>

typedef struct {
  MdlZooNet *n;
  const char *module;
} Module;

/* One conv+BN named MODULE.LEAF. */
static int conv(const Module *m, const char *leaf, int x, int64_t cout, int kh, int kw, int stride,
                int pad_h, int pad_w) {
  char name[64];
  g_snprintf(name, sizeof name, "%s.%s", m->module, leaf);
  return mdl_zoo_conv_bn(m->n, name, x, cout, kh, kw, stride, pad_h, pad_w);
}

static int pool(const Module *m, const char *leaf, int x, int stride, int pad) {
  char name[64];
  g_snprintf(name, sizeof name, "%s.%s", m->module, leaf);
  return mdl_zoo_pool(m->n, name, x, 3, stride, pad);
}

static int concat(const Module *m, const char *leaf, int count, ...) {
  int inputs[MDL_MAX_INPUTS];
  va_list ap;
  va_start(ap, count);
  for (int i = 0; i < count; i++) inputs[i] = va_arg(ap, int);
  va_end(ap);
  char name[64];
  g_snprintf(name, sizeof name, "%s%s%s", m->module, *leaf ? "." : "", leaf);
  return mdl_zoo_concat(m->n, name, inputs, count);
}

static int inception_a(const Module *m, int x, int64_t pool_features) {
  int b1 = conv(m, "branch1x1", x, 64, 1, 1, 1, 0, 0);
  int b5 = conv(m, "branch5x5_1", x, 48, 1, 1, 1, 0, 0);
  b5 = conv(m, "branch5x5_2", b5, 64, 5, 5, 1, 2, 2);
  int b3 = conv(m, "branch3x3dbl_1", x, 64, 1, 1, 1, 0, 0);
  b3 = conv(m, "branch3x3dbl_2", b3, 96, 3, 3, 1, 1, 1);
  b3 = conv(m, "branch3x3dbl_3", b3, 96, 3, 3, 1, 1, 1);
  int bp = pool(m, "branch_pool_avg", x, 1, 1);
  bp = conv(m, "branch_pool", bp, pool_features, 1, 1, 1, 0, 0);
  return concat(m, "", 4, b1, b5, b3, bp);
}

static int inception_b(const Module *m, int x) { /* the 35 -> 17 reduction */
  int b3 = conv(m, "branch3x3", x, 384, 3, 3, 2, 0, 0);
  int bd = conv(m, "branch3x3dbl_1", x, 64, 1, 1, 1, 0, 0);
  bd = conv(m, "branch3x3dbl_2", bd, 96, 3, 3, 1, 1, 1);
  bd = conv(m, "branch3x3dbl_3", bd, 96, 3, 3, 2, 0, 0);
  int bp = pool(m, "branch_pool", x, 2, 0);
  return concat(m, "", 3, b3, bd, bp);
}

static int inception_c(const Module *m, int x, int64_t c7) {
  int b1 = conv(m, "branch1x1", x, 192, 1, 1, 1, 0, 0);
  int b7 = conv(m, "branch7x7_1", x, c7, 1, 1, 1, 0, 0);
  b7 = conv(m, "branch7x7_2", b7, c7, 1, 7, 1, 0, 3);
  b7 = conv(m, "branch7x7_3", b7, 192, 7, 1, 1, 3, 0);
  int bd = conv(m, "branch7x7dbl_1", x, c7, 1, 1, 1, 0, 0);
  bd = conv(m, "branch7x7dbl_2", bd, c7, 7, 1, 1, 3, 0);
  bd = conv(m, "branch7x7dbl_3", bd, c7, 1, 7, 1, 0, 3);
  bd = conv(m, "branch7x7dbl_4", bd, c7, 7, 1, 1, 3, 0);
  bd = conv(m, "branch7x7dbl_5", bd, 192, 1, 7, 1, 0, 3);
  int bp = pool(m, "branch_pool_avg", x, 1, 1);
  bp = conv(m, "branch_pool", bp, 192, 1, 1, 1, 0, 0);
  return concat(m, "", 4, b1, b7, bd, bp);
}

static int inception_d(const Module *m, int x) { /* the 17 -> 8 reduction */
  int b3 = conv(m, "branch3x3_1", x, 192, 1, 1, 1, 0, 0);
  b3 = conv(m, "branch3x3_2", b3, 320, 3, 3, 2, 0, 0);
  int b7 = conv(m, "branch7x7x3_1", x, 192, 1, 1, 1, 0, 0);
  b7 = conv(m, "branch7x7x3_2", b7, 192, 1, 7, 1, 0, 3);
  b7 = conv(m, "branch7x7x3_3", b7, 192, 7, 1, 1, 3, 0);
  b7 = conv(m, "branch7x7x3_4", b7, 192, 3, 3, 2, 0, 0);
  int bp = pool(m, "branch_pool", x, 2, 0);
  return concat(m, "", 3, b3, b7, bp);
}

static int inception_e(const Module *m, int x) {
  int b1 = conv(m, "branch1x1", x, 320, 1, 1, 1, 0, 0);
  int b3 = conv(m, "branch3x3_1", x, 384, 1, 1, 1, 0, 0);
  int b3a = conv(m, "branch3x3_2a", b3, 384, 1, 3, 1, 0, 1);
  int b3b = conv(m, "branch3x3_2b", b3, 384, 3, 1, 1, 1, 0);
  b3 = concat(m, "branch3x3", 2, b3a, b3b);
  int bd = conv(m, "branch3x3dbl_1", x, 448, 1, 1, 1, 0, 0);
  bd = conv(m, "branch3x3dbl_2", bd, 384, 3, 3, 1, 1, 1);
  int bda = conv(m, "branch3x3dbl_3a", bd, 384, 1, 3, 1, 0, 1);
  int bdb = conv(m, "branch3x3dbl_3b", bd, 384, 3, 1, 1, 1, 0);
  bd = concat(m, "branch3x3dbl", 2, bda, bdb);
  int bp = pool(m, "branch_pool_avg", x, 1, 1);
  bp = conv(m, "branch_pool", bp, 192, 1, 1, 1, 0, 0);
  return concat(m, "", 4, b1, b3, bd, bp);
}

MdlGraph *mdl_zoo_inception(const char *name, int64_t batch, GError **error) {
  /* The largest per-image iteration space is the stem's 64 x 147 x 147 x 32 x 9 < 2^26. */
  if (!mdl_zoo_check_size(name, "batch x the largest layer", error, 2, batch, (int64_t)1 << 28))
    return NULL;
  MdlGraph *g = mdl_graph_new(name, "cnn", batch);
  g->default_dtype = DEV_DTYPE_FP32;
  MdlZooNet n = {.g = g, .b = batch, .layer = -1};
  int64_t image[4] = {batch, 3, 299, 299};
  int x = mdl_graph_add_tensor(g, "image", 4, image, FALSE, TRUE);
  x = mdl_zoo_conv_bn(&n, "conv1a_3x3", x, 32, 3, 3, 2, 0, 0);
  x = mdl_zoo_conv_bn(&n, "conv2a_3x3", x, 32, 3, 3, 1, 0, 0);
  x = mdl_zoo_conv_bn(&n, "conv2b_3x3", x, 64, 3, 3, 1, 1, 1);
  x = mdl_zoo_pool(&n, "maxpool1", x, 3, 2, 0);
  x = mdl_zoo_conv_bn(&n, "conv3b_1x1", x, 80, 1, 1, 1, 0, 0);
  x = mdl_zoo_conv_bn(&n, "conv4a_3x3", x, 192, 3, 3, 1, 0, 0);
  x = mdl_zoo_pool(&n, "maxpool2", x, 3, 2, 0);
  static const int64_t c7[4] = {128, 160, 160, 192};
  static const char *const mixed_6[4] = {"mixed_6b", "mixed_6c", "mixed_6d", "mixed_6e"};
  Module m = {.n = &n};
  n.layer = 0;
  m.module = "mixed_5b", x = inception_a(&m, x, 32), n.layer++;
  m.module = "mixed_5c", x = inception_a(&m, x, 64), n.layer++;
  m.module = "mixed_5d", x = inception_a(&m, x, 64), n.layer++;
  m.module = "mixed_6a", x = inception_b(&m, x), n.layer++;
  for (int i = 0; i < 4; i++) m.module = mixed_6[i], x = inception_c(&m, x, c7[i]), n.layer++;
  m.module = "mixed_7a", x = inception_d(&m, x), n.layer++;
  m.module = "mixed_7b", x = inception_e(&m, x), n.layer++;
  m.module = "mixed_7c", x = inception_e(&m, x);
  n.layer = -1;
  x = mdl_zoo_global_pool(&n, "avgpool", x);
  mdl_zoo_classifier(&n, "fc", x, 1000);
  return g;
}
