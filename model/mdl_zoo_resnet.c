/* model/zoo/resnet — ResNet-101 (He et al. 2016, "Deep Residual Learning for Image
 * Recognition", Table 1): 224x224x3 images, fp32.
 *
 * Stem: conv1 7x7/2 with 64 channels (pad 3) -> 112x112, 3x3/2 max pool (pad 1) -> 56x56.
 * Four stages of bottleneck blocks, [3, 4, 23, 3] blocks of (1x1 w, 3x3 w, 1x1 4w) with
 * w = 64, 128, 256, 512; the first block of stages 2-4 strides by 2 in its 3x3 conv (the
 * torchvision "v1.5" placement) and the first block of every stage projects its shortcut with
 * a 1x1 conv (stride 2 where the block strides). Every conv is followed by batch normalisation
 * (ReLU folded, mdl_zoo_layers.c); the block ends by adding the shortcut (ReLU folded). Global
 * average pool over 7x7, FC 2048 -> 1000, softmax cross-entropy.
 * Parameters: 44,548,160 (torchvision resnet101: 44,549,160; the FC bias, 1000, is not
 * modeled). Ops are named "l3.b7.conv2", "l3.b7.conv2.bn", "l3.b7.add"; an op's layer is its
 * block (0-32), the stem and classifier are outside blocks.
 */
#include "model/mdl_zoo.h"

static int bottleneck(MdlZooNet *n, int x, int stage, int block, int64_t width, int stride) {
  char name[64];
  int64_t cin = mdl_graph_tensor(n->g, x)->shape[1], cout = 4 * width;
#define NAME(leaf) (g_snprintf(name, sizeof name, "l%d.b%d." leaf, stage, block), name)
  int y = mdl_zoo_conv_bn(n, NAME("conv1"), x, width, 1, 1, 1, 0, 0);
  y = mdl_zoo_conv_bn(n, NAME("conv2"), y, width, 3, 3, stride, 1, 1);
  y = mdl_zoo_conv_bn(n, NAME("conv3"), y, cout, 1, 1, 1, 0, 0);
  int shortcut = x;
  if (block == 0 && (stride != 1 || cin != cout))
    shortcut = mdl_zoo_conv_bn(n, NAME("downsample"), x, cout, 1, 1, stride, 0, 0);
  return mdl_zoo_add_relu(n, NAME("add"), y, shortcut);
#undef NAME
}

MdlGraph *mdl_zoo_resnet(const char *name, int64_t batch, GError **error) {
  /* The largest per-image tensor is conv1's output, 64 x 112 x 112 < 2^20; the largest
   * iteration space a conv's 64 x 112 x 112 x 3 x 49 < 2^27. */
  if (!mdl_zoo_check_size(name, "batch x the largest layer", error, 2, batch, (int64_t)1 << 28))
    return NULL;
  static const int blocks[4] = {3, 4, 23, 3};
  MdlGraph *g = mdl_graph_new(name, "cnn", batch);
  g->default_dtype = DEV_DTYPE_FP32;
  MdlZooNet n = {.g = g, .b = batch, .layer = -1};
  int64_t image[4] = {batch, 3, 224, 224};
  int x = mdl_graph_add_tensor(g, "image", 4, image, FALSE, TRUE);
  x = mdl_zoo_conv_bn(&n, "conv1", x, 64, 7, 7, 2, 3, 3);
  x = mdl_zoo_pool(&n, "maxpool", x, 3, 2, 1);
  int block_index = 0;
  for (int s = 0; s < 4; s++)
    for (int b = 0; b < blocks[s]; b++) {
      n.layer = block_index++;
      x = bottleneck(&n, x, s + 1, b, (int64_t)64 << s, b == 0 && s > 0 ? 2 : 1);
    }
  n.layer = -1;
  x = mdl_zoo_global_pool(&n, "avgpool", x);
  mdl_zoo_classifier(&n, "fc", x, 1000);
  return g;
}
