/* model/zoo/gpt — a GPT-style decoder-only transformer in the Megatron-LM layout.
 *
 * Ops, in order (b batch, s seq, h hidden, a heads, dh = h/a, V vocab, ffn = 4h):
 *   embedding  token table [V,h] lookup of the token ids [b,s]: dims b, s, h(P), vocab(R);
 *              vocab-parallel under tensor parallelism (Megatron splits the table by rows and
 *              all-reduces the partial lookups).
 *   pos_embed  the learned position table [s,h] added (an ELEMENTWISE op with a weight, not a
 *              second embedding operand: the addition is replicated on the tensor-parallel axis
 *              after the embedding's all-reduce, as in Megatron).
 *   per layer: ln1, qkv (column parallel), attn_scores, attn_softmax, attn_context (split on
 *              heads), attn_proj (row parallel), residual1, ln2, fc1 (column), gelu, fc2 (row),
 *              residual2.
 *   ln_f, lm_head (logits = x . table^T with the token table tied: its weight operand maps
 *              table dim 0 (vocab) to "n" and dim 1 to "k"), loss (vocab-parallel
 *              cross-entropy over the labels [b,s], a second data input).
 * Folded in: biases of the linear layers (their 9h parameters a layer, <0.1% of the 12h^2,
 * are not modeled: a bias operand on a contraction would be charged a whole dW matmul);
 * attention scale, causal mask and dropout (into attn_softmax); hidden dropout (into the
 * residual adds). Layernorm gamma and beta are one [2,h] weight. Parameters per layer:
 * 12h^2 + 4h; in total L(12h^2 + 4h) + Vh + sh + 2h.
 * Saved activations as Korthikanti et al. 2022, section 4.1 lists them: every op keeps its
 * inputs except the adds (residual1, residual2, pos_embed: dropout then add, whose backward
 * reads no operand), which keep only their dropout's 1-byte mask (op->dropout), as does
 * attn_softmax for the attention dropout; attn_scores, attn_softmax and attn_context are the
 * attention core (op->attention_core) that selective recomputation re-runs. Per layer that is
 * sbh(34 + 5as/h) bytes at 16 bits (tests/test-memory.c checks it): attn_softmax keeps its
 * input where Megatron keeps the softmax output, of the same size.
 * Attention: the fused QKV activation [b,s,3h] is read through the "heads grouping" (its dim 2
 * is a multiple of the op's heads dim): attn_scores reads it twice, as Q (mapped b, sq, heads)
 * and as K (b, sk, heads), so that a split of sq leaves K whole and the backward is charged
 * both dQ and dK; attn_context reads it as V (b, sk, heads). dh cannot be split (the fused
 * tensor dim is indexed by heads only).
 */
#include "model/mdl_zoo.h"

#include <string.h>

/* GPT-3 sizes, Brown et al. 2020, Table 2.1 (n_layers, d_model, n_heads; batch = batch tokens /
 * 2048 tokens per sequence). Two rows of the table are inconsistent with d_model = n_heads x
 * d_head: 1.3B lists 24 heads of 128 (= 3072 != 2048) and 13B lists d_model 5140 (40 x 128 =
 * 5120). We keep d_head 128 and use 16 heads for 1.3B and d_model 5120 for 13B. The batch
 * sizes "0.5M, 1M, 2M, 3.2M" tokens are taken as 2^19, 2^20, 2^21 tokens = 256, 512, 1024
 * sequences, and 1536 sequences (3.1M tokens) for 175B, the batch Megatron-LM uses for it
 * (Narayanan et al. 2021, Table 1). Context 2048. Vocabulary: the GPT-2 BPE's 50257 tokens
 * padded to 50304, a multiple of 128, as Megatron-LM does (--make-vocab-size-divisible-by 128,
 * "padded vocab (size: 50257) with 47 dummy tokens"): the vocab-parallel embedding, lm_head and
 * loss split the vocabulary, and a split degree must divide it (50257 = 29 x 1733 divides by no
 * tensor-parallel degree). The 47 rows add 0.01% to the 1.3B parameters. */
#define GPT3_VOCAB 50304
static const struct {
  const char *name;
  MdlGptConfig cfg; /* layers, hidden, heads, seq, vocab, batch */
} named[] = {
    {"gpt3-125m", {12, 768, 12, 2048, GPT3_VOCAB, 256}},
    {"gpt3-350m", {24, 1024, 16, 2048, GPT3_VOCAB, 256}},
    {"gpt3-760m", {24, 1536, 16, 2048, GPT3_VOCAB, 256}},
    {"gpt3-1.3b", {24, 2048, 16, 2048, GPT3_VOCAB, 512}},
    {"gpt3-2.7b", {32, 2560, 32, 2048, GPT3_VOCAB, 512}},
    {"gpt3-6.7b", {32, 4096, 32, 2048, GPT3_VOCAB, 1024}},
    {"gpt3-13b", {40, 5120, 40, 2048, GPT3_VOCAB, 1024}},
    {"gpt3-175b", {96, 12288, 96, 2048, GPT3_VOCAB, 1536}},
};

const MdlGptConfig *mdl_zoo_gpt_named(const char *name) {
  for (guint i = 0; i < G_N_ELEMENTS(named); i++)
    if (strcmp(named[i].name, name) == 0) return &named[i].cfg;
  return NULL;
}

double mdl_zoo_gpt_params(const MdlGptConfig *c) {
  double h = (double)c->hidden;
  return (double)c->layers * (12 * h * h + 4 * h) + (double)c->vocab * h + (double)c->seq * h + 2 * h;
}

typedef struct {
  MdlGraph *g;
  int64_t b, s, h;
  int layer;        /* -1 outside the layers */
  char prefix[32];  /* "layer3." or "" */
} Builder;

static const char *full_name(const Builder *B, const char *leaf, const char *suffix, char *buf) {
  g_snprintf(buf, 96, "%s%s%s", B->prefix, leaf, suffix);
  return buf;
}

static int layernorm(Builder *B, const char *leaf, int x) {
  char name[96];
  int w = mdl_zoo_weight(B->g, full_name(B, leaf, ".weight", name), 2, (int64_t)2, B->h);
  int y = mdl_zoo_activation(B->g, full_name(B, leaf, "", name), 3, B->b, B->s, B->h);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_LAYERNORM, B->layer);
  mdl_zoo_dim(&op, "b", B->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "s", B->s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "h", B->h, MDL_ROLE_PARAMETER, FALSE); /* normalised: a split needs a reduction */
  mdl_zoo_input(&op, x, "b,s,h");
  mdl_zoo_input(&op, w, "-,h");
  mdl_zoo_output(&op, y, "b,s,h");
  mdl_graph_add_op(B->g, &op);
  return y;
}

/* y[b,s,n] = x[b,s,k] W[k,n]; @row: Megatron row parallel (split k), else column (split n). */
static int linear(Builder *B, const char *leaf, int x, int64_t k, int64_t n, gboolean row) {
  char name[96];
  int w = mdl_zoo_weight(B->g, full_name(B, leaf, ".weight", name), 2, k, n);
  int y = mdl_zoo_activation(B->g, full_name(B, leaf, "", name), 3, B->b, B->s, n);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_MATMUL, B->layer);
  mdl_zoo_dim(&op, "b", B->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "s", B->s, MDL_ROLE_ATTRIBUTE, TRUE);
  int dn = mdl_zoo_dim(&op, "n", n, MDL_ROLE_PARAMETER, TRUE);
  int dk = mdl_zoo_dim(&op, "k", k, MDL_ROLE_REDUCTION, TRUE);
  op.tp_dim = row ? dk : dn;
  mdl_zoo_input(&op, x, "b,s,k");
  mdl_zoo_input(&op, w, "k,n");
  mdl_zoo_output(&op, y, "b,s,n");
  mdl_graph_add_op(B->g, &op);
  return y;
}

/* An elementwise op over [b,s,width] (dim @dim) of @x and, if >= 0, @other; @tp: split @dim
 * on the tensor-parallel axis (GELU between fc1 and fc2) or replicate (residual adds). */
static int elementwise(Builder *B, const char *leaf, int x, int other, const char *dim, int64_t width,
                       double flops_per_element, gboolean tp) {
  char name[96];
  int y = mdl_zoo_activation(B->g, full_name(B, leaf, "", name), 3, B->b, B->s, width);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_ELEMENTWISE, B->layer);
  mdl_zoo_dim(&op, "b", B->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "s", B->s, MDL_ROLE_ATTRIBUTE, TRUE);
  int d = mdl_zoo_dim(&op, dim, width, MDL_ROLE_ATTRIBUTE, TRUE);
  op.tp_dim = tp ? d : -1;
  op.flops_per_element = flops_per_element;
  if (other >= 0) { /* a residual add after dropout (Megatron's bias-dropout-add) */
    op.dropout = TRUE;
    op.unsaved_inputs = 0x3;
  }
  char map[32];
  g_snprintf(map, sizeof map, "b,s,%s", dim);
  mdl_zoo_input(&op, x, map);
  if (other >= 0) mdl_zoo_input(&op, other, map);
  mdl_zoo_output(&op, y, map);
  mdl_graph_add_op(B->g, &op);
  return y;
}

/* The attention core over the fused [b,s,3h] @qkv; returns the context [b,s,h]. */
static int attention(Builder *B, int qkv, int64_t heads) {
  char name[96];
  int64_t dh = B->h / heads;
  int scores = mdl_zoo_activation(B->g, full_name(B, "attn_scores", "", name), 4, B->b, heads, B->s, B->s);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_BATCH_MATMUL, B->layer);
  op.attention_core = TRUE;
  mdl_zoo_dim(&op, "b", B->b, MDL_ROLE_SAMPLE, TRUE);
  op.tp_dim = mdl_zoo_dim(&op, "heads", heads, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "sq", B->s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "sk", B->s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "dh", dh, MDL_ROLE_REDUCTION, FALSE);
  mdl_zoo_input(&op, qkv, "b,sq,heads"); /* Q */
  mdl_zoo_input(&op, qkv, "b,sk,heads"); /* K */
  mdl_zoo_output(&op, scores, "b,heads,sq,sk");
  mdl_graph_add_op(B->g, &op);

  /* Scale, causal mask and attention dropout folded in. */
  int probs = mdl_zoo_activation(B->g, full_name(B, "attn_softmax", "", name), 4, B->b, heads, B->s, B->s);
  mdl_zoo_op_init(&op, name, MDL_OP_SOFTMAX, B->layer);
  op.attention_core = TRUE;
  op.dropout = TRUE;
  mdl_zoo_dim(&op, "b", B->b, MDL_ROLE_SAMPLE, TRUE);
  op.tp_dim = mdl_zoo_dim(&op, "heads", heads, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "sq", B->s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "sk", B->s, MDL_ROLE_ATTRIBUTE, FALSE); /* normalised over */
  mdl_zoo_input(&op, scores, "b,heads,sq,sk");
  mdl_zoo_output(&op, probs, "b,heads,sq,sk");
  mdl_graph_add_op(B->g, &op);

  int context = mdl_zoo_activation(B->g, full_name(B, "attn_context", "", name), 3, B->b, B->s, B->h);
  mdl_zoo_op_init(&op, name, MDL_OP_BATCH_MATMUL, B->layer);
  op.attention_core = TRUE;
  mdl_zoo_dim(&op, "b", B->b, MDL_ROLE_SAMPLE, TRUE);
  op.tp_dim = mdl_zoo_dim(&op, "heads", heads, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "sq", B->s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "dh", dh, MDL_ROLE_ATTRIBUTE, FALSE);
  mdl_zoo_dim(&op, "sk", B->s, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, probs, "b,heads,sq,sk");
  mdl_zoo_input(&op, qkv, "b,sk,heads"); /* V */
  mdl_zoo_output(&op, context, "b,sq,heads");
  mdl_graph_add_op(B->g, &op);
  return context;
}

static int transformer_layer(Builder *B, int x, int64_t heads) {
  int64_t h = B->h;
  int ln1 = layernorm(B, "ln1", x);
  int qkv = linear(B, "qkv", ln1, h, 3 * h, FALSE);
  int context = attention(B, qkv, heads);
  int proj = linear(B, "attn_proj", context, h, h, TRUE);
  int res1 = elementwise(B, "residual1", proj, x, "h", h, 2.0 /* dropout mask, add */, FALSE);
  int ln2 = layernorm(B, "ln2", res1);
  int fc1 = linear(B, "fc1", ln2, h, 4 * h, FALSE);
  /* GELU, tanh approximation: ~8 FLOPs (x^3, two multiply-adds, tanh, add, two multiplies). */
  int gelu = elementwise(B, "gelu", fc1, -1, "f", 4 * h, 8.0, TRUE);
  int fc2 = linear(B, "fc2", gelu, 4 * h, h, TRUE);
  return elementwise(B, "residual2", fc2, res1, "h", h, 2.0, FALSE);
}

static gboolean check_sizes(const char *name, const MdlGptConfig *c, GError **error) {
  if (c->hidden % c->heads != 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                "model %s: hidden=%" G_GINT64_FORMAT " is not divisible by heads=%" G_GINT64_FORMAT,
                name, (gint64)c->hidden, (gint64)c->heads);
    return FALSE;
  }
  int64_t b = c->batch, s = c->seq, h = c->hidden, v = c->vocab, a = c->heads;
  return mdl_zoo_check_size(name, "the logits [batch, seq, vocab] x hidden", error, 4, b, s, v, h) &&
         mdl_zoo_check_size(name, "the attention [batch, heads, seq, seq] x dh", error, 4, b, s, s, h) &&
         mdl_zoo_check_size(name, "the attention probabilities", error, 4, b, a, s, s) &&
         mdl_zoo_check_size(name, "the MLP [batch, seq, 4 hidden] x hidden", error, 5, b, s, (int64_t)4, h, h) &&
         mdl_zoo_check_size(name, "the QKV projection", error, 5, b, s, (int64_t)3, h, h);
}

MdlGraph *mdl_zoo_gpt(const char *name, const MdlGptConfig *c, GError **error) {
  if (!check_sizes(name, c, error)) return NULL;
  Builder B = {.b = c->batch, .s = c->seq, .h = c->hidden, .layer = -1};
  MdlGraph *g = B.g = mdl_graph_new(name, "gpt", c->batch);
  g->default_dtype = DEV_DTYPE_BF16;
  g->num_layers = (int)c->layers;
  g->heads = (int)c->heads;
  g->seq = c->seq;
  int64_t ids[2] = {B.b, B.s};
  int tokens = mdl_graph_add_tensor(g, "tokens", 2, ids, FALSE, TRUE);
  int labels = mdl_graph_add_tensor(g, "labels", 2, ids, FALSE, TRUE);
  int table = mdl_zoo_weight(g, "embedding.weight", 2, c->vocab, B.h);

  MdlOp op;
  int emb = mdl_zoo_activation(g, "embedding", 3, B.b, B.s, B.h);
  mdl_zoo_op_init(&op, "embedding", MDL_OP_EMBEDDING, -1);
  mdl_zoo_dim(&op, "b", B.b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "s", B.s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "h", B.h, MDL_ROLE_PARAMETER, TRUE);
  op.tp_dim = mdl_zoo_dim(&op, "vocab", c->vocab, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, tokens, "b,s");
  mdl_zoo_input(&op, table, "vocab,h");
  mdl_zoo_output(&op, emb, "b,s,h");
  mdl_graph_add_op(g, &op);

  int pos_table = mdl_zoo_weight(g, "pos_embed.weight", 2, B.s, B.h);
  int x = mdl_zoo_activation(g, "pos_embed", 3, B.b, B.s, B.h);
  mdl_zoo_op_init(&op, "pos_embed", MDL_OP_ELEMENTWISE, -1);
  op.dropout = TRUE;         /* the embedding dropout (Korthikanti et al. 2022, section 4.3) */
  op.unsaved_inputs = 0x1;   /* an add: its backward reads no operand */
  mdl_zoo_dim(&op, "b", B.b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "s", B.s, MDL_ROLE_ATTRIBUTE, TRUE); /* also indexes the position table */
  mdl_zoo_dim(&op, "h", B.h, MDL_ROLE_PARAMETER, TRUE);
  mdl_zoo_input(&op, emb, "b,s,h");
  mdl_zoo_input(&op, pos_table, "s,h");
  mdl_zoo_output(&op, x, "b,s,h");
  mdl_graph_add_op(g, &op);

  for (int l = 0; l < c->layers; l++) {
    B.layer = l;
    g_snprintf(B.prefix, sizeof B.prefix, "layer%d.", l);
    x = transformer_layer(&B, x, c->heads);
  }
  B.layer = -1;
  B.prefix[0] = '\0';
  x = layernorm(&B, "ln_f", x);

  int logits = mdl_zoo_activation(g, "lm_head", 3, B.b, B.s, c->vocab);
  mdl_zoo_op_init(&op, "lm_head", MDL_OP_MATMUL, -1);
  mdl_zoo_dim(&op, "b", B.b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "s", B.s, MDL_ROLE_ATTRIBUTE, TRUE);
  op.tp_dim = mdl_zoo_dim(&op, "n", c->vocab, MDL_ROLE_PARAMETER, TRUE);
  mdl_zoo_dim(&op, "k", B.h, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, x, "b,s,k");
  mdl_zoo_input(&op, table, "n,k"); /* tied with the embedding */
  mdl_zoo_output(&op, logits, "b,s,n");
  mdl_graph_add_op(g, &op);

  int loss = mdl_zoo_activation(g, "loss", 2, B.b, B.s);
  mdl_zoo_op_init(&op, "loss", MDL_OP_LOSS, -1);
  mdl_zoo_dim(&op, "b", B.b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "s", B.s, MDL_ROLE_ATTRIBUTE, TRUE);
  /* Splittable: Megatron's vocab-parallel cross-entropy (Shoeybi et al. 2019, section 3)
   * all-reduces only the per-token max and sum of exponentials, [b,s] values. */
  op.tp_dim = mdl_zoo_dim(&op, "classes", c->vocab, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, logits, "b,s,classes");
  mdl_zoo_input(&op, labels, "b,s");
  mdl_zoo_output(&op, loss, "b,s");
  mdl_graph_add_op(g, &op);
  return g;
}
