/* model/zoo/llama — a Llama-style decoder (Touvron et al. 2023; Llama 3, Dubey et al. 2024,
 * section 3.2; the Hugging Face LlamaForCausalLM, MistralForCausalLM and Qwen2ForCausalLM
 * share it) in Megatron-Core's layout (megatron/core/transformer: linear_qkv, core_attention,
 * linear_proj, linear_fc1 with gated_linear_unit, linear_fc2).
 *
 * Ops per layer (b batch, s seq, h hidden, a heads, g kv_heads, dh head_dim, f ffn; blocks in
 * mdl_zoo_transformer.c):
 *   ln1        RMSNorm (Zhang & Sennrich 2019): a [1,h] weight; charged as a LayerNorm (8 FLOPs
 *              per element where RMSNorm needs ~4: both are memory bound).
 *   qkv        grouped-query attention (Ainslie et al. 2023): K and V have g heads, each
 *              shared by r = a/g query heads. Megatron-Core's linear_qkv lays its output out
 *              per query group, [s, b, g, (r + 2) dh] (r query heads, then K, then V), and
 *              splits the groups over tensor parallelism (it requires g % t == 0,
 *              num_query_groups % tensor_model_parallel_size). Here the op has dims b, s,
 *              groups (PARAMETER, the tp_dim), w = (r + 2) dh (PARAMETER) and k = h
 *              (REDUCTION): weight [h, g, w], output [b, s, g, w]. A tp that does not divide g
 *              is refused by the strategy ("split degree does not divide dim groups").
 *   rope       rotary position embedding (Su et al. 2021) on Q and K: 3 FLOPs per rotated
 *              element (two multiplies, one add), V passes through; its backward rotates dY
 *              back and reads no input (unsaved); no weight.
 *   attention  dims b, groups (tp_dim), per_group (r), sq, sk, dh; Q, K and V are read from
 *              the rotated [b, s, g, w] activation mapped on (b, s, groups), its w dim whole.
 *              Unfused (attn=unfused): attn_scores, attn_softmax, attn_context, the s x s
 *              scores [b, g, r, sq, sk] in HBM and the probabilities kept for the backward;
 *              fused (attn=flash, the default): one attn_flash op, no s x s tensor in HBM or
 *              kept, causal blocks skipped (costs below). The context is [b, s, a dh]. No
 *              attention dropout (Llama's attention_dropout is 0.0).
 *   attn_proj  row parallel, [a dh, h].
 *   residual1  add, no dropout (Llama has none): no operand kept.
 *   ln2        RMSNorm.
 *   fc1        column parallel, [h, 2f]: SwiGLU's gate and up projections fused (Shazeer 2020;
 *              Megatron-Core's linear_fc1 under gated_linear_unit), split per rank as f/t of
 *              each.
 *   swiglu     silu(gate) x up over [b, s, f] reading [b, s, 2f]: 5 FLOPs per output
 *              (sigmoid as exp, add, divide; two multiplies); keeps its input.
 *   fc2        row parallel, [f, h].
 *   residual2  add.
 * Outside the layers: the token embedding (vocab parallel), no position table (RoPE), ln_f
 * (RMSNorm), lm_head with its own [V, h] weight "lm_head.weight" (untied, as Llama 3 >= 8B,
 * Qwen2.5-72B and Mistral-7B set tie_word_embeddings false) or the embedding table (tied=1),
 * the vocab-parallel cross-entropy. Biases are not modeled (Qwen2's Q/K/V biases are
 * (a + 2g) dh per layer, 1e-5 of its parameters).
 * Parameters: L (h (a + 2g) dh + a dh h + 3 h f + 2 h) + V h (x 2 untied) + h.
 * FlashAttention (Dao et al. 2022, Algorithm 1; FlashAttention-2, Dao 2023, section 3): one
 * kernel computes softmax(Q K^T) V block by block in on-chip memory, so neither the scores nor
 * the probabilities reach HBM or are kept for the backward, which recomputes them from Q, K, V
 * (and the per-row log-sum-exp, b x a x s floats, not counted). Forward: the two GEMMs,
 * 4 b a s^2 dh FLOPs, halved by the causal mask: FlashAttention-2 skips the blocks above the
 * diagonal (section 3.1.1). Backward: the op reads Q, K and V as three operands, so it is
 * charged three forwards (dQ, dK, dV); FlashAttention-2's backward runs five GEMMs of the
 * forward's two, 2.5 forwards, so this is 20% over on the attention backward.
 * Sliding-window attention (Mistral-7B v0.1, window 4096) is not modeled: its default seq is
 * 4096, where the window covers the whole causal context.
 */
#include "model/mdl_zoo.h"

#include <string.h>

/* Named sizes from each model's published Hugging Face config.json (hidden_size,
 * num_hidden_layers, num_attention_heads, num_key_value_heads, intermediate_size, vocab_size,
 * tie_word_embeddings false):
 *  - llama3-8b: meta-llama/Meta-Llama-3-8B: 4096, 32, 32, 8, 14336, 128256.
 *  - llama3-70b: meta-llama/Meta-Llama-3-70B: 8192, 80, 64, 8, 28672, 128256.
 *  - llama3.1-405b: meta-llama/Llama-3.1-405B: 16384, 126, 128, 8, 53248, 128256.
 *  - qwen2.5-72b: Qwen/Qwen2.5-72B: 8192, 80, 64, 8, 29568, 152064.
 *  - mistral-7b: mistralai/Mistral-7B-v0.1: 4096, 32, 32, 8, 14336, 32000.
 * Sequence: the pre-training context of each: 8192 for Llama 3 and 3.1 (Dubey et al. 2024,
 * section 3.4.1: 8K tokens before long-context training), 4096 for Qwen2.5 (Qwen2.5 technical
 * report, Qwen Team 2024, long-context pre-training: 4,096 tokens before extending the context
 * to 32,768) and for Mistral-7B (the
 * sliding window, 4096: see above). Batch 128 sequences is a simulation default, not a
 * published figure (Llama 3 trained with 4M-16M tokens per batch: 512-2048 sequences of
 * 8192): override it with batch=N. */
static const struct {
  const char *name;
  MdlLlamaConfig cfg; /* layers, hidden, heads, kv_heads, ffn, seq, vocab, batch, head_dim,
                         tied, flash */
} named[] = {
    {"llama3-8b", {32, 4096, 32, 8, 14336, 8192, 128256, 128, 0, 0, 1}},
    {"llama3-70b", {80, 8192, 64, 8, 28672, 8192, 128256, 128, 0, 0, 1}},
    {"llama3.1-405b", {126, 16384, 128, 8, 53248, 8192, 128256, 128, 0, 0, 1}},
    {"qwen2.5-72b", {80, 8192, 64, 8, 29568, 4096, 152064, 128, 0, 0, 1}},
    {"mistral-7b", {32, 4096, 32, 8, 14336, 4096, 32000, 128, 0, 0, 1}},
};

const MdlLlamaConfig *mdl_zoo_llama_named(const char *name) {
  for (guint i = 0; i < G_N_ELEMENTS(named); i++)
    if (strcmp(named[i].name, name) == 0) return &named[i].cfg;
  return NULL;
}

static int64_t head_dim_of(const MdlLlamaConfig *c) {
  return c->head_dim > 0 ? c->head_dim : c->hidden / c->heads;
}

double mdl_zoo_llama_params(const MdlLlamaConfig *c) {
  double h = (double)c->hidden, dh = (double)head_dim_of(c), a = (double)c->heads;
  double g = (double)c->kv_heads, f = (double)c->ffn, v = (double)c->vocab;
  double layer = h * (a + 2 * g) * dh + a * dh * h + 3 * h * f + 2 * h;
  return (double)c->layers * layer + v * h * (c->tied ? 1 : 2) + h;
}

/* An op with output [b, s, groups, w] (groups the tp_dim, w whole: the QKV projection and
 * RoPE, whose dims are PARAMETER and ATTRIBUTE respectively); returns the output tensor. */
static int grouped_op(MdlZooSeq *B, MdlOp *op, const char *leaf, MdlOpKind kind,
                      const MdlLlamaConfig *c, int64_t width, MdlDimRole role, char *name) {
  g_snprintf(name, 96, "%s%s", B->prefix, leaf); /* @name[96]: the op keeps pointing at it */
  int y = mdl_zoo_activation(B->g, name, 4, B->b, B->s, c->kv_heads, width);
  mdl_zoo_op_init(op, name, kind, B->layer);
  mdl_zoo_dim(op, "b", B->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(op, "s", B->s, MDL_ROLE_ATTRIBUTE, TRUE);
  op->tp_dim = mdl_zoo_dim(op, "groups", c->kv_heads, role, TRUE);
  mdl_zoo_dim(op, "w", width, role, role != MDL_ROLE_PARAMETER);
  mdl_zoo_output(op, y, "b,s,groups,w");
  return y;
}

/* The per-group QKV projection [h] -> [g, (r + 2) dh], column parallel over the groups. */
static int qkv_projection(MdlZooSeq *B, int x, const MdlLlamaConfig *c, int64_t width) {
  char name[96];
  g_snprintf(name, sizeof name, "%sqkv.weight", B->prefix);
  int w = mdl_zoo_weight(B->g, name, 3, B->h, c->kv_heads, width);
  MdlOp op;
  int y = grouped_op(B, &op, "qkv", MDL_OP_MATMUL, c, width, MDL_ROLE_PARAMETER, name);
  mdl_zoo_dim(&op, "k", B->h, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, x, "b,s,k");
  mdl_zoo_input(&op, w, "k,groups,w");
  mdl_graph_add_op(B->g, &op);
  return y;
}

/* RoPE over one part of each group of the QKV projection @qkv: its r query heads ("rope",
 * width r dh, every element rotated) or its key and value ("rope_kv", width 2 dh, the key
 * rotated, the value passed through). Two outputs so that what reads only K and V (context
 * parallelism's key/value all-gather) moves only them; the op reads its slice of each group
 * (a gather: model/mdl_graph.h). */
static int rope(MdlZooSeq *B, int qkv, const MdlLlamaConfig *c, gboolean kv) {
  char name[96];
  MdlOp op;
  int64_t dh = head_dim_of(c), width = kv ? 2 * dh : c->heads / c->kv_heads * dh;
  int y = grouped_op(B, &op, kv ? "rope_kv" : "rope", MDL_OP_ELEMENTWISE, c, width,
                     MDL_ROLE_ATTRIBUTE, name);
  op.flops_per_element = kv ? 1.5 : 3.0; /* rotated elements: 3 FLOPs each */
  op.unsaved_inputs = 0x1;
  op.gather = TRUE;
  mdl_zoo_input(&op, qkv, "b,s,groups,w");
  mdl_graph_add_op(B->g, &op);
  return y;
}

/* An attention op's leading dims: b, groups (tp_dim), per_group, sq. */
static void gqa_dims(MdlZooSeq *B, MdlOp *op, const char *leaf, MdlOpKind kind,
                     const MdlLlamaConfig *c, char *name) {
  g_snprintf(name, 96, "%s%s", B->prefix, leaf);
  mdl_zoo_op_init(op, name, kind, B->layer);
  op->attention_core = TRUE;
  mdl_zoo_dim(op, "b", B->b, MDL_ROLE_SAMPLE, TRUE);
  op->tp_dim = mdl_zoo_dim(op, "groups", c->kv_heads, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(op, "per_group", c->heads / c->kv_heads, MDL_ROLE_ATTRIBUTE, FALSE);
  mdl_zoo_dim(op, "sq", B->s, MDL_ROLE_ATTRIBUTE, TRUE);
}

/* Unfused: scores = Q K^T, softmax (scale and causal mask folded in), context = P V. */
static int attention_unfused(MdlZooSeq *B, int q, int kv, const MdlLlamaConfig *c, int64_t dh) {
  char name[96];
  int64_t g = c->kv_heads, r = c->heads / c->kv_heads;
  g_snprintf(name, sizeof name, "%sattn_scores", B->prefix);
  int scores = mdl_zoo_activation(B->g, name, 5, B->b, g, r, B->s, B->s);
  MdlOp op;
  gqa_dims(B, &op, "attn_scores", MDL_OP_BATCH_MATMUL, c, name);
  mdl_zoo_dim(&op, "sk", B->s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "dh", dh, MDL_ROLE_REDUCTION, FALSE);
  mdl_zoo_input(&op, q, "b,sq,groups,-"); /* Q */
  mdl_zoo_input(&op, kv, "b,sk,groups,-"); /* K */
  mdl_zoo_output(&op, scores, "b,groups,per_group,sq,sk");
  mdl_graph_add_op(B->g, &op);

  g_snprintf(name, sizeof name, "%sattn_softmax", B->prefix);
  int probs = mdl_zoo_activation(B->g, name, 5, B->b, g, r, B->s, B->s);
  gqa_dims(B, &op, "attn_softmax", MDL_OP_SOFTMAX, c, name);
  mdl_zoo_dim(&op, "sk", B->s, MDL_ROLE_ATTRIBUTE, FALSE); /* normalised over */
  mdl_zoo_input(&op, scores, "b,groups,per_group,sq,sk");
  mdl_zoo_output(&op, probs, "b,groups,per_group,sq,sk");
  mdl_graph_add_op(B->g, &op);

  g_snprintf(name, sizeof name, "%sattn_context", B->prefix);
  int context = mdl_zoo_activation(B->g, name, 3, B->b, B->s, c->heads * dh);
  gqa_dims(B, &op, "attn_context", MDL_OP_BATCH_MATMUL, c, name);
  mdl_zoo_dim(&op, "dh", dh, MDL_ROLE_ATTRIBUTE, FALSE);
  mdl_zoo_dim(&op, "sk", B->s, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, probs, "b,groups,per_group,sq,sk");
  mdl_zoo_input(&op, kv, "b,sk,groups,-"); /* V */
  mdl_zoo_output(&op, context, "b,sq,groups");
  mdl_graph_add_op(B->g, &op);
  return context;
}

static int attention_flash(MdlZooSeq *B, int q, int kv, const MdlLlamaConfig *c, int64_t dh) {
  char name[96];
  g_snprintf(name, sizeof name, "%sattn_flash", B->prefix);
  int context = mdl_zoo_activation(B->g, name, 3, B->b, B->s, c->heads * dh);
  MdlOp op;
  gqa_dims(B, &op, "attn_flash", MDL_OP_BATCH_MATMUL, c, name);
  mdl_zoo_dim(&op, "dh", dh, MDL_ROLE_ATTRIBUTE, FALSE);
  mdl_zoo_dim(&op, "sk", B->s, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, q, "b,sq,groups,-"); /* Q */
  mdl_zoo_input(&op, kv, "b,sk,groups,-"); /* K */
  mdl_zoo_input(&op, kv, "b,sk,groups,-"); /* V */
  mdl_zoo_output(&op, context, "b,sq,groups");
  op.flops = 0.5 * 4.0 * (double)B->b * (double)c->heads * (double)B->s * (double)B->s * (double)dh;
  mdl_graph_add_op(B->g, &op);
  return context;
}

int mdl_zoo_llama_attention(MdlZooSeq *B, int x, const MdlLlamaConfig *c) {
  int64_t a = c->heads, g = c->kv_heads, dh = head_dim_of(c);
  int qkv = qkv_projection(B, x, c, (a / g + 2) * dh); /* one query group's Q, K, V */
  int q = rope(B, qkv, c, FALSE), kv = rope(B, qkv, c, TRUE);
  return c->flash ? attention_flash(B, q, kv, c, dh) : attention_unfused(B, q, kv, c, dh);
}

int mdl_zoo_llama_mlp(MdlZooSeq *B, int x, int residual, int64_t f) {
  int64_t h = B->h;
  int fc1 = mdl_zoo_seq_linear(B, "fc1", x, h, 2 * f, FALSE);
  int swiglu = mdl_zoo_seq_pointwise(B, "swiglu", fc1, -1, "f", f, 5.0, MDL_ZOO_TP);
  int fc2 = mdl_zoo_seq_linear(B, "fc2", swiglu, f, h, TRUE);
  return mdl_zoo_seq_pointwise(B, "residual2", fc2, residual, "h", h, 1.0, MDL_ZOO_UNSAVED);
}

static int llama_layer(MdlZooSeq *B, int x, gconstpointer data) {
  const MdlLlamaConfig *c = data;
  int64_t h = B->h;
  int ln1 = mdl_zoo_seq_norm(B, "ln1", x, 1);
  int context = mdl_zoo_llama_attention(B, ln1, c);
  int proj = mdl_zoo_seq_linear(B, "attn_proj", context, c->heads * head_dim_of(c), h, TRUE);
  int res1 = mdl_zoo_seq_pointwise(B, "residual1", proj, x, "h", h, 1.0, MDL_ZOO_UNSAVED);
  int ln2 = mdl_zoo_seq_norm(B, "ln2", res1, 1);
  return mdl_zoo_llama_mlp(B, ln2, res1, c->ffn);
}

static gboolean invalid(GError **error, const char *name, const char *why) {
  g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID, "model %s: %s", name, why);
  return FALSE;
}

static gboolean check_sizes(const char *name, const MdlLlamaConfig *c, GError **error) {
  if (c->heads % c->kv_heads != 0) {
    g_autofree char *why = g_strdup_printf("heads=%" G_GINT64_FORMAT " is not a multiple of "
                                           "kv_heads=%" G_GINT64_FORMAT,
                                           (gint64)c->heads, (gint64)c->kv_heads);
    return invalid(error, name, why);
  }
  if (c->head_dim <= 0 && c->hidden % c->heads != 0) {
    g_autofree char *why = g_strdup_printf("hidden=%" G_GINT64_FORMAT " is not divisible by "
                                           "heads=%" G_GINT64_FORMAT,
                                           (gint64)c->hidden, (gint64)c->heads);
    return invalid(error, name, why);
  }
  int64_t b = c->batch, s = c->seq, h = c->hidden, v = c->vocab, a = c->heads;
  int64_t dh = head_dim_of(c), w = c->heads + 2 * c->kv_heads, f = c->ffn;
  return mdl_zoo_check_size(name, "the logits [batch, seq, vocab] x hidden", error, 4, b, s, v, h) &&
         mdl_zoo_check_size(name, "the attention [batch, heads, seq, seq] x head_dim", error, 5, b, a, s, s, dh) &&
         mdl_zoo_check_size(name, "the MLP [batch, seq, 2 ffn] x hidden", error, 5, b, s, (int64_t)2, f, h) &&
         mdl_zoo_check_size(name, "the QKV projection", error, 5, b, s, w, dh, h);
}

MdlGraph *mdl_zoo_llama(const char *name, const MdlLlamaConfig *c, GError **error) {
  return mdl_zoo_llama_with_layers(name, c, "llama", llama_layer, c, error);
}

MdlGraph *mdl_zoo_llama_with_layers(const char *name, const MdlLlamaConfig *c, const char *family,
                                    MdlZooLayerFunc layer, gconstpointer data, GError **error) {
  if (!check_sizes(name, c, error)) return NULL;
  MdlZooSeq B = {.b = c->batch, .s = c->seq, .h = c->hidden};
  int labels, table;
  int x = mdl_zoo_seq_begin(&B, name, family, c->layers, c->heads, c->vocab, &labels, &table);
  MdlGraph *g = B.g;
  for (int l = 0; l < c->layers; l++) {
    mdl_zoo_seq_enter_layer(&B, l);
    x = layer(&B, x, data);
  }
  mdl_zoo_seq_enter_layer(&B, -1);
  x = mdl_zoo_seq_norm(&B, "ln_f", x, 1);
  int head = c->tied ? table : mdl_zoo_weight(g, "lm_head.weight", 2, c->vocab, B.h);
  mdl_zoo_seq_output(&B, x, labels, c->vocab, head);
  return g;
}
