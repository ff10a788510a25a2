/* model/zoo/cnn — image classifiers: AlexNet, VGG13, VGG16 on 224x224x3 images, fp32.
 *
 * AlexNet is the torchvision single-tower variant (torchvision.models.alexnet, after
 * Krizhevsky 2014 "One weird trick", not the two-GPU 2012 network): convs 64, 192, 384, 256,
 * 256 channels with kernels 11 (stride 4, pad 2), 5 (pad 2), 3, 3, 3 (pad 1); 3x3 stride-2 max
 * pools after conv1, conv2 and conv5; FC 9216 -> 4096 -> 4096 -> 1000. LRN is omitted
 * (torchvision has none) and dropout folded into the FC layers.
 * VGG13 and VGG16 are configs B and D of Simonyan & Zisserman 2015 (Table 1): 3x3 convs with
 * pad 1, 2x2 stride-2 max pools, FC 25088 -> 4096 -> 4096 -> 1000.
 * ReLU is fused into every conv and FC layer; biases are not modeled (0.02% of the
 * parameters; a bias operand on a contraction would be charged a whole dW pass).
 *
 * Conv op: dims b (SAMPLE), cout (PARAMETER), h, w (ATTRIBUTE: the output spatial positions),
 * cin (REDUCTION); kh*kw is the op constant kernel_elems. The input [b, cin, H_in, W_in] is
 * mapped (b, cin, h, w): splitting the output rows splits the input rows proportionally, the
 * halo of kernel-1 rows a split needs from its neighbour is ignored. mdl_graph_validate lets
 * CONV2D/POOL2D inputs differ in size on those dims. Pools: dims b, c, h, w, all ATTRIBUTE.
 * The flatten before the first FC is folded into it: it contracts the [b, c, H, W] activation
 * over (c, H, W) ("k", "ky", "kx") with a [c, H, W, n] weight: the FLOPs and parameters of
 * the 9216 x 4096 (or 25088 x 4096) layer.
 * Tensor parallelism: convs replicated; FC layers alternate column ("n") and row ("k") as in
 * the MLP; the loss splits its classes after a column-parallel last layer.
 */
#include "model/mdl_zoo.h"

#include <string.h>

typedef struct {
  char type;      /* 'C' conv, 'P' max pool, 'F' fully connected, 0 end */
  int out;        /* conv output channels, FC output features */
  int kernel, stride, pad;
} Layer;

#define CONV3(c) {'C', c, 3, 1, 1}
#define POOL2 {'P', 0, 2, 2, 0}
#define FC(n) {'F', n, 0, 0, 0}

static const Layer alexnet[] = {
    {'C', 64, 11, 4, 2}, {'P', 0, 3, 2, 0}, {'C', 192, 5, 1, 2}, {'P', 0, 3, 2, 0},
    CONV3(384), CONV3(256), CONV3(256), {'P', 0, 3, 2, 0},
    FC(4096), FC(4096), FC(1000), {0, 0, 0, 0, 0}};
static const Layer vgg13[] = {
    CONV3(64), CONV3(64), POOL2, CONV3(128), CONV3(128), POOL2, CONV3(256), CONV3(256), POOL2,
    CONV3(512), CONV3(512), POOL2, CONV3(512), CONV3(512), POOL2,
    FC(4096), FC(4096), FC(1000), {0, 0, 0, 0, 0}};
static const Layer vgg16[] = {
    CONV3(64), CONV3(64), POOL2, CONV3(128), CONV3(128), POOL2, CONV3(256), CONV3(256), CONV3(256),
    POOL2, CONV3(512), CONV3(512), CONV3(512), POOL2, CONV3(512), CONV3(512), CONV3(512), POOL2,
    FC(4096), FC(4096), FC(1000), {0, 0, 0, 0, 0}};

typedef struct {
  MdlGraph *g;
  int64_t b;
  int x;            /* current activation */
  int64_t c, h, w;  /* its channels and spatial size while it is 4-d; c = features after */
  int layer;        /* block index of the last conv / FC */
  int convs, pools, fcs;
} Builder;

static void conv_or_pool(Builder *B, const Layer *L) {
  gboolean conv = L->type == 'C';
  int64_t k = L->kernel;
  int64_t ho = (B->h + 2 * L->pad - k) / L->stride + 1, wo = (B->w + 2 * L->pad - k) / L->stride + 1;
  int64_t cout = conv ? L->out : B->c;
  char name[32], wname[40];
  if (conv) B->layer++;
  g_snprintf(name, sizeof name, conv ? "conv%d" : "pool%d", conv ? ++B->convs : ++B->pools);
  int y = mdl_zoo_activation(B->g, name, 4, B->b, cout, ho, wo);
  MdlOp op;
  mdl_zoo_op_init(&op, name, conv ? MDL_OP_CONV2D : MDL_OP_POOL2D, B->layer);
  op.kernel_elems = k * k;
  mdl_zoo_dim(&op, "b", B->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, conv ? "cout" : "c", cout, conv ? MDL_ROLE_PARAMETER : MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "h", ho, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "w", wo, MDL_ROLE_ATTRIBUTE, TRUE);
  if (conv) {
    mdl_zoo_dim(&op, "cin", B->c, MDL_ROLE_REDUCTION, TRUE);
    g_snprintf(wname, sizeof wname, "%s.weight", name);
    int wt = mdl_zoo_weight(B->g, wname, 4, cout, B->c, k, k);
    mdl_zoo_input(&op, B->x, "b,cin,h,w");
    mdl_zoo_input(&op, wt, "cout,cin,-,-");
    mdl_zoo_output(&op, y, "b,cout,h,w");
  } else {
    mdl_zoo_input(&op, B->x, "b,c,h,w");
    mdl_zoo_output(&op, y, "b,c,h,w");
  }
  mdl_graph_add_op(B->g, &op);
  B->x = y, B->c = cout, B->h = ho, B->w = wo;
}

static void fully_connected(Builder *B, const Layer *L) {
  gboolean flatten = B->fcs == 0;
  char name[32], wname[40];
  g_snprintf(name, sizeof name, "fc%d", ++B->fcs);
  g_snprintf(wname, sizeof wname, "%s.weight", name);
  int64_t n = L->out;
  int y = mdl_zoo_activation(B->g, name, 2, B->b, n);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_MATMUL, ++B->layer);
  mdl_zoo_dim(&op, "b", B->b, MDL_ROLE_SAMPLE, TRUE);
  int dn = mdl_zoo_dim(&op, "n", n, MDL_ROLE_PARAMETER, TRUE);
  int dk = mdl_zoo_dim(&op, "k", B->c, MDL_ROLE_REDUCTION, TRUE);
  op.tp_dim = B->fcs % 2 == 1 ? dn : dk; /* fc1 column, fc2 row, fc3 column */
  int wt;
  if (flatten) {
    mdl_zoo_dim(&op, "ky", B->h, MDL_ROLE_REDUCTION, TRUE);
    mdl_zoo_dim(&op, "kx", B->w, MDL_ROLE_REDUCTION, TRUE);
    wt = mdl_zoo_weight(B->g, wname, 4, B->c, B->h, B->w, n);
    mdl_zoo_input(&op, B->x, "b,k,ky,kx");
    mdl_zoo_input(&op, wt, "k,ky,kx,n");
  } else {
    wt = mdl_zoo_weight(B->g, wname, 2, B->c, n);
    mdl_zoo_input(&op, B->x, "b,k");
    mdl_zoo_input(&op, wt, "k,n");
  }
  mdl_zoo_output(&op, y, "b,n");
  mdl_graph_add_op(B->g, &op);
  B->x = y, B->c = n, B->h = B->w = 1;
}

MdlGraph *mdl_zoo_cnn(const char *name, const char *net, int64_t batch, GError **error) {
  const Layer *layers = strcmp(net, "alexnet") == 0 ? alexnet
                        : strcmp(net, "vgg13") == 0 ? vgg13
                        : strcmp(net, "vgg16") == 0 ? vgg16 : NULL;
  if (!layers) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_UNKNOWN_MODEL, "unknown CNN \"%s\"", net);
    return NULL;
  }
  /* The largest per-image iteration space is VGG's conv1_2, 64 x 224 x 224 x 64 < 2^28. */
  if (!mdl_zoo_check_size(name, "batch x the largest layer", error, 2, batch, (int64_t)1 << 28))
    return NULL;
  Builder B = {.b = batch, .c = 3, .h = 224, .w = 224, .layer = -1};
  MdlGraph *g = B.g = mdl_graph_new(name, "cnn", batch);
  g->default_dtype = DEV_DTYPE_FP32;
  int64_t image[4] = {batch, 3, 224, 224};
  B.x = mdl_graph_add_tensor(g, "image", 4, image, FALSE, TRUE);
  for (const Layer *L = layers; L->type; L++) {
    if (L->type == 'F') fully_connected(&B, L);
    else conv_or_pool(&B, L);
  }
  mdl_zoo_classifier_loss(g, B.x, batch, B.c, B.fcs % 2 == 1);
  return g;
}
