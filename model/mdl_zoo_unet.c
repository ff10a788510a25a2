/* model/zoo/unet — the U-Transformer of the cross-mesh resharding paper's end-to-end and
 * overlap experiments (Zhuang et al. 2023, Sec. 5.2, Table 3: "U-Trans case1", 1B parameters,
 * batch 2048, fp16, two pipeline stages; Sec. 5.3.2, Fig. 9): a U-shaped convolutional network
 * with attention layers after the convolutions and long skip connections from each level of
 * the down path to the same level of the up path (Petit et al. 2021, "U-Net Transformer").
 *
 * Sizes are those of the paper's benchmark code, Alpa's UNet suite (github.com/alpa-projects/
 * alpa, benchmark/alpa/suite_unet.py, "1B": image size 32, first channel count 480, 4 blocks;
 * benchmark_one_case_unet.py): a diffusers UNet2DConditionModel with in_channels 3,
 * out_channels 4, block_out_channels (c, 2c, 4c, 4c), layers_per_block 1, down blocks
 * CrossAttnDownBlock2D x 3 + DownBlock2D, up blocks UpBlock2D + CrossAttnUpBlock2D x 3, a mid
 * block, and an encoder context of (32/8)^2 = 16 tokens of 4c features (a data input).
 * Per level: a ResNet block (GroupNorm+SiLU, 3x3 conv, GroupNorm+SiLU, 3x3 conv, a 1x1
 * shortcut when the channels change, add), a transformer block on the levels with attention
 * (GroupNorm, 1x1 proj_in, self-attention, cross-attention on the context, a GEGLU
 * feed-forward of 4x, 1x1 proj_out, add), and a 3x3 stride-2 downsampling conv (up path:
 * nearest 2x upsampling, then a 3x3 conv). The up path's ResNet blocks read the concatenation
 * of their input with a skip tensor saved on the way down (8 skips: conv_in, each level's
 * output and each downsampling's). Attention has 8 heads (diffusers' attention_head_dim 8).
 * Left out, as small: the timestep embedding and its projections into the ResNet blocks (a
 * sinusoid and an MLP on [b, 4c]), the transformer blocks' three LayerNorms, biases. The loss
 * is the mean squared error against targets of the output's shape.
 *
 * Activations are [b, c, s] with s = h x w flattened (convolutions: dims b, cout, s, cin with
 * kernel_elems 9; the stride-2 conv's input has 4s positions, allowed for CONV2D/POOL2D inputs,
 * as the upsampling's POOL2D reading s/4). Attention reads the fused [b, 3c, s] QKV through the
 * heads grouping as the GPT does (mdl_zoo_gpt.c). The model has no layer index (num_layers 0):
 * pipeline stages are cut by forward FLOPs, as the paper balanced its two stages ("we balance
 * pipeline stages with respect to FLOPs", Sec. 5.2).
 */
#include "model/mdl_zoo.h"

#include <string.h>

#define HEADS 8

typedef struct {
  MdlGraph *g;
  int64_t b;
  int context;      /* encoder hidden states [b, ctx_tokens, ctx_dim] */
  int64_t ctx_tokens, ctx_dim;
} Unet;

static int64_t channels(const Unet *u, int x) { return mdl_graph_tensor(u->g, x)->shape[1]; }
static int64_t positions(const Unet *u, int x) { return mdl_graph_tensor(u->g, x)->shape[2]; }

/* A k x k convolution (k = 1 or 3) of @x to @cout channels over @s output positions. */
static int conv(Unet *u, const char *name, int x, int64_t cout, int k, int64_t s) {
  char wname[96];
  g_snprintf(wname, sizeof wname, "%s.weight", name);
  int64_t cin = channels(u, x);
  int w = mdl_zoo_weight(u->g, wname, 4, cout, cin, (int64_t)k, (int64_t)k);
  int y = mdl_zoo_activation(u->g, name, 3, u->b, cout, s);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_CONV2D, -1);
  op.kernel_elems = (int64_t)k * k;
  mdl_zoo_dim(&op, "b", u->b, MDL_ROLE_SAMPLE, TRUE);
  op.tp_dim = mdl_zoo_dim(&op, "cout", cout, MDL_ROLE_PARAMETER, TRUE);
  mdl_zoo_dim(&op, "s", s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "cin", cin, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, x, "b,cin,s");
  mdl_zoo_input(&op, w, "cout,cin,-,-");
  mdl_zoo_output(&op, y, "b,cout,s");
  mdl_graph_add_op(u->g, &op);
  return y;
}

/* GroupNorm (with SiLU when @act) over [b, c, s]: per-sample statistics, a [2, c] weight. */
static int norm(Unet *u, const char *name, int x, gboolean act) {
  char wname[96];
  g_snprintf(wname, sizeof wname, "%s.weight", name);
  int64_t c = channels(u, x), s = positions(u, x);
  int w = mdl_zoo_weight(u->g, wname, 2, (int64_t)2, c);
  int y = mdl_zoo_activation(u->g, name, 3, u->b, c, s);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_ELEMENTWISE, -1);
  op.flops_per_element = act ? 12.0 : 8.0; /* normalise, scale and shift; SiLU ~4 */
  mdl_zoo_dim(&op, "b", u->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "c", c, MDL_ROLE_PARAMETER, FALSE); /* groups of channels are normalised */
  mdl_zoo_dim(&op, "s", s, MDL_ROLE_ATTRIBUTE, FALSE);
  mdl_zoo_input(&op, x, "b,c,s");
  mdl_zoo_input(&op, w, "-,c");
  mdl_zoo_output(&op, y, "b,c,s");
  mdl_graph_add_op(u->g, &op);
  return y;
}

static int add(Unet *u, const char *name, int a, int b) {
  int64_t c = channels(u, a), s = positions(u, a);
  int y = mdl_zoo_activation(u->g, name, 3, u->b, c, s);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_ELEMENTWISE, -1);
  mdl_zoo_dim(&op, "b", u->b, MDL_ROLE_SAMPLE, TRUE);
  op.tp_dim = mdl_zoo_dim(&op, "c", c, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "s", s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_input(&op, a, "b,c,s");
  mdl_zoo_input(&op, b, "b,c,s");
  op.unsaved_inputs = 0x3;
  mdl_zoo_output(&op, y, "b,c,s");
  mdl_graph_add_op(u->g, &op);
  return y;
}

/* Concatenation along channels (the skip connection into the up path). */
static int concat(Unet *u, const char *name, int a, int b) {
  int64_t s = positions(u, a), c = channels(u, a) + channels(u, b);
  int y = mdl_zoo_activation(u->g, name, 3, u->b, c, s);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_ELEMENTWISE, -1);
  mdl_zoo_dim(&op, "b", u->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "c", c, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "s", s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_input(&op, a, "b,-,s");
  mdl_zoo_input(&op, b, "b,-,s");
  op.unsaved_inputs = 0x3;
  mdl_zoo_output(&op, y, "b,c,s");
  mdl_graph_add_op(u->g, &op);
  return y;
}

/* Nearest 2x upsampling (4x the positions): a POOL2D so that its input may be smaller. */
static int upsample(Unet *u, const char *name, int x) {
  int64_t c = channels(u, x), s = 4 * positions(u, x);
  int y = mdl_zoo_activation(u->g, name, 3, u->b, c, s);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_POOL2D, -1);
  op.kernel_elems = 1;
  mdl_zoo_dim(&op, "b", u->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "c", c, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "s", s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_input(&op, x, "b,c,s");
  mdl_zoo_output(&op, y, "b,c,s");
  mdl_graph_add_op(u->g, &op);
  return y;
}

static int resnet(Unet *u, const char *prefix, int x, int64_t cout) {
  char name[96];
  int64_t s = positions(u, x);
#define NAME(leaf) (g_snprintf(name, sizeof name, "%s.%s", prefix, leaf), name)
  int h = norm(u, NAME("norm1"), x, TRUE);
  h = conv(u, NAME("conv1"), h, cout, 3, s);
  h = norm(u, NAME("norm2"), h, TRUE);
  h = conv(u, NAME("conv2"), h, cout, 3, s);
  int shortcut = channels(u, x) == cout ? x : conv(u, NAME("shortcut"), x, cout, 1, s);
  return add(u, NAME("add"), h, shortcut);
#undef NAME
}

/* Attention of the queries in [b, c, s] (the fused @qkv read through the heads grouping, or
 * @q alone for cross-attention) over keys and values @kv with @sk positions. */
static int attention(Unet *u, const char *prefix, int q, const char *qmap, int kv, const char *kmap,
                     const char *vmap, int64_t c, int64_t s, int64_t sk) {
  char name[96];
  g_snprintf(name, sizeof name, "%s.scores", prefix);
  int scores = mdl_zoo_activation(u->g, name, 4, u->b, (int64_t)HEADS, s, sk);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_BATCH_MATMUL, -1);
  op.attention_core = TRUE;
  mdl_zoo_dim(&op, "b", u->b, MDL_ROLE_SAMPLE, TRUE);
  op.tp_dim = mdl_zoo_dim(&op, "heads", HEADS, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "sq", s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "sk", sk, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "dh", c / HEADS, MDL_ROLE_REDUCTION, FALSE);
  mdl_zoo_input(&op, q, qmap);
  mdl_zoo_input(&op, kv, kmap);
  mdl_zoo_output(&op, scores, "b,heads,sq,sk");
  mdl_graph_add_op(u->g, &op);

  g_snprintf(name, sizeof name, "%s.softmax", prefix);
  int probs = mdl_zoo_activation(u->g, name, 4, u->b, (int64_t)HEADS, s, sk);
  mdl_zoo_op_init(&op, name, MDL_OP_SOFTMAX, -1);
  op.attention_core = TRUE;
  mdl_zoo_dim(&op, "b", u->b, MDL_ROLE_SAMPLE, TRUE);
  op.tp_dim = mdl_zoo_dim(&op, "heads", HEADS, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "sq", s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "sk", sk, MDL_ROLE_ATTRIBUTE, FALSE);
  mdl_zoo_input(&op, scores, "b,heads,sq,sk");
  mdl_zoo_output(&op, probs, "b,heads,sq,sk");
  mdl_graph_add_op(u->g, &op);

  g_snprintf(name, sizeof name, "%s.context", prefix);
  int context = mdl_zoo_activation(u->g, name, 3, u->b, c, s);
  mdl_zoo_op_init(&op, name, MDL_OP_BATCH_MATMUL, -1);
  op.attention_core = TRUE;
  mdl_zoo_dim(&op, "b", u->b, MDL_ROLE_SAMPLE, TRUE);
  op.tp_dim = mdl_zoo_dim(&op, "heads", HEADS, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "sq", s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "dh", c / HEADS, MDL_ROLE_ATTRIBUTE, FALSE);
  mdl_zoo_dim(&op, "sk", sk, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, probs, "b,heads,sq,sk");
  mdl_zoo_input(&op, kv, vmap);
  mdl_zoo_output(&op, context, "b,heads,sq");
  mdl_graph_add_op(u->g, &op);
  return context;
}

/* K and V of the cross-attention: the context [b, t, d] projected to [b, 2c, t]. */
static int context_kv(Unet *u, const char *name, int64_t c) {
  char wname[96];
  g_snprintf(wname, sizeof wname, "%s.weight", name);
  int w = mdl_zoo_weight(u->g, wname, 2, u->ctx_dim, 2 * c);
  int y = mdl_zoo_activation(u->g, name, 3, u->b, 2 * c, u->ctx_tokens);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_MATMUL, -1);
  mdl_zoo_dim(&op, "b", u->b, MDL_ROLE_SAMPLE, TRUE);
  op.tp_dim = mdl_zoo_dim(&op, "n", 2 * c, MDL_ROLE_PARAMETER, TRUE);
  mdl_zoo_dim(&op, "t", u->ctx_tokens, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "k", u->ctx_dim, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, u->context, "b,t,k");
  mdl_zoo_input(&op, w, "k,n");
  mdl_zoo_output(&op, y, "b,n,t");
  mdl_graph_add_op(u->g, &op);
  return y;
}

/* GEGLU: the [b, 8c, s] projection's halves multiplied (GELU on one): [b, 4c, s]. */
static int geglu(Unet *u, const char *name, int x) {
  int64_t f = channels(u, x) / 2, s = positions(u, x);
  int y = mdl_zoo_activation(u->g, name, 3, u->b, f, s);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_ELEMENTWISE, -1);
  op.flops_per_element = 9.0; /* GELU ~8, the product */
  mdl_zoo_dim(&op, "b", u->b, MDL_ROLE_SAMPLE, TRUE);
  op.tp_dim = mdl_zoo_dim(&op, "f", f, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "s", s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_input(&op, x, "b,f,s"); /* the 8c dim read through the grouping rule */
  mdl_zoo_output(&op, y, "b,f,s");
  mdl_graph_add_op(u->g, &op);
  return y;
}

static int transformer(Unet *u, const char *prefix, int x) {
  char name[96];
  int64_t c = channels(u, x), s = positions(u, x);
#define NAME(leaf) (g_snprintf(name, sizeof name, "%s.%s", prefix, leaf), name)
  int h = norm(u, NAME("norm"), x, FALSE);
  h = conv(u, NAME("proj_in"), h, c, 1, s);
  int qkv = conv(u, NAME("attn1.qkv"), h, 3 * c, 1, s);
  int a = attention(u, NAME("attn1"), qkv, "b,heads,sq", qkv, "b,heads,sk", "b,heads,sk", c, s, s);
  a = conv(u, NAME("attn1.out"), a, c, 1, s);
  h = add(u, NAME("attn1.add"), a, h);
  int q = conv(u, NAME("attn2.q"), h, c, 1, s);
  int kv = context_kv(u, NAME("attn2.kv"), c);
  a = attention(u, NAME("attn2"), q, "b,heads,sq", kv, "b,heads,sk", "b,heads,sk", c, s, u->ctx_tokens);
  a = conv(u, NAME("attn2.out"), a, c, 1, s);
  h = add(u, NAME("attn2.add"), a, h);
  int f = conv(u, NAME("ff.proj"), h, 8 * c, 1, s);
  f = geglu(u, NAME("ff.geglu"), f);
  f = conv(u, NAME("ff.out"), f, c, 1, s);
  h = add(u, NAME("ff.add"), f, h);
  h = conv(u, NAME("proj_out"), h, c, 1, s);
  return add(u, NAME("add"), h, x);
#undef NAME
}

MdlGraph *mdl_zoo_unet(const char *name, int64_t channel, int64_t image, int64_t batch,
                       GError **error) {
  if (channel % HEADS != 0 || image % 8 != 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                "model %s: channels must be a multiple of %d and the image size of 8", name, HEADS);
    return NULL;
  }
  int64_t s0 = image * image;
  /* The largest tensors: attention scores [b, 8, s0, s0] and the feed-forward [b, 8c, s0]. */
  if (!mdl_zoo_check_size(name, "the attention scores", error, 4, batch, (int64_t)HEADS, s0, s0) ||
      !mdl_zoo_check_size(name, "a 3x3 convolution", error, 5, batch, 8 * channel, s0, 8 * channel,
                          (int64_t)9))
    return NULL;
  MdlGraph *g = mdl_graph_new(name, "unet", batch);
  g->default_dtype = DEV_DTYPE_FP16;
  Unet u = {.g = g, .b = batch, .ctx_tokens = s0 / 64, .ctx_dim = 4 * channel};
  int64_t img[3] = {batch, 3, s0}, ctx[3] = {batch, u.ctx_tokens, u.ctx_dim};
  int x = mdl_graph_add_tensor(g, "image", 3, img, FALSE, TRUE);
  u.context = mdl_graph_add_tensor(g, "context", 3, ctx, FALSE, TRUE);
  const int64_t out[4] = {channel, 2 * channel, 4 * channel, 4 * channel};
  int skips[8], nskips = 0;
  x = conv(&u, "conv_in", x, channel, 3, s0);
  skips[nskips++] = x;
  int64_t s = s0;
  for (int i = 0; i < 4; i++) {
    char prefix[32], leaf[48];
    g_snprintf(prefix, sizeof prefix, "down%d.resnet", i);
    x = resnet(&u, prefix, x, out[i]);
    if (i < 3) {
      g_snprintf(prefix, sizeof prefix, "down%d.attn", i);
      x = transformer(&u, prefix, x);
    }
    skips[nskips++] = x;
    if (i < 3) {
      s /= 4;
      g_snprintf(leaf, sizeof leaf, "down%d.downsample", i);
      x = conv(&u, leaf, x, out[i], 3, s);
      skips[nskips++] = x;
    }
  }
  x = resnet(&u, "mid.resnet0", x, out[3]);
  x = transformer(&u, "mid.attn", x);
  x = resnet(&u, "mid.resnet1", x, out[3]);
  for (int i = 0; i < 4; i++) {
    int64_t o = out[3 - i];
    for (int j = 0; j < 2; j++) {
      char prefix[32], leaf[48];
      g_snprintf(leaf, sizeof leaf, "up%d.cat%d", i, j);
      x = concat(&u, leaf, x, skips[--nskips]);
      g_snprintf(prefix, sizeof prefix, "up%d.resnet%d", i, j);
      x = resnet(&u, prefix, x, o);
      if (i > 0) {
        g_snprintf(prefix, sizeof prefix, "up%d.attn%d", i, j);
        x = transformer(&u, prefix, x);
      }
    }
    if (i < 3) {
      char leaf[48];
      g_snprintf(leaf, sizeof leaf, "up%d.upsample", i);
      x = upsample(&u, leaf, x);
      s *= 4;
      g_snprintf(leaf, sizeof leaf, "up%d.upconv", i);
      x = conv(&u, leaf, x, o, 3, s);
    }
  }
  g_assert(nskips == 0);
  x = norm(&u, "norm_out", x, TRUE);
  x = conv(&u, "conv_out", x, 4, 3, s0);
  int targets = mdl_graph_add_tensor(g, "targets", 3, (int64_t[]){batch, 4, s0}, FALSE, TRUE);
  int loss = mdl_zoo_activation(g, "loss", 1, batch);
  MdlOp op;
  mdl_zoo_op_init(&op, "loss", MDL_OP_LOSS, -1);
  mdl_zoo_dim(&op, "b", batch, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "c", 4, MDL_ROLE_REDUCTION, FALSE);
  mdl_zoo_dim(&op, "s", s0, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, x, "b,c,s");
  mdl_zoo_input(&op, targets, "b,c,s");
  mdl_zoo_output(&op, loss, "b");
  mdl_graph_add_op(g, &op);
  return g;
}
