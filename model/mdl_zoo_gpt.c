/* model/zoo/gpt — a GPT-style decoder-only transformer in the Megatron-LM layout.
 *
 * Ops, in order (b batch, s seq, h hidden, a heads, dh = h/a, V vocab, ffn = 4h unless the
 * spec sets ffn=N; blocks in mdl_zoo_transformer.c):
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
 * 12h^2 + 4h (4h^2 + 2h ffn + 4h with another ffn); in total L(12h^2 + 4h) + Vh + sh + 2h.
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
    {"gpt3-125m", {12, 768, 12, 2048, GPT3_VOCAB, 256, 0}},
    {"gpt3-350m", {24, 1024, 16, 2048, GPT3_VOCAB, 256, 0}},
    {"gpt3-760m", {24, 1536, 16, 2048, GPT3_VOCAB, 256, 0}},
    {"gpt3-1.3b", {24, 2048, 16, 2048, GPT3_VOCAB, 512, 0}},
    {"gpt3-2.7b", {32, 2560, 32, 2048, GPT3_VOCAB, 512, 0}},
    {"gpt3-6.7b", {32, 4096, 32, 2048, GPT3_VOCAB, 1024, 0}},
    {"gpt3-13b", {40, 5120, 40, 2048, GPT3_VOCAB, 1024, 0}},
    {"gpt3-175b", {96, 12288, 96, 2048, GPT3_VOCAB, 1536, 0}},
};

const MdlGptConfig *mdl_zoo_gpt_named(const char *name) {
  for (guint i = 0; i < G_N_ELEMENTS(named); i++)
    if (strcmp(named[i].name, name) == 0) return &named[i].cfg;
  return NULL;
}

static int64_t ffn_of(const MdlGptConfig *c) { return c->ffn > 0 ? c->ffn : 4 * c->hidden; }

double mdl_zoo_gpt_params(const MdlGptConfig *c) {
  double h = (double)c->hidden, f = (double)ffn_of(c);
  return (double)c->layers * (4 * h * h + 2 * h * f + 4 * h) + (double)c->vocab * h +
         (double)c->seq * h + 2 * h;
}

static int transformer_layer(MdlZooSeq *B, int x, int64_t heads, int64_t ffn) {
  int64_t h = B->h;
  int ln1 = mdl_zoo_seq_norm(B, "ln1", x, 2);
  int qkv = mdl_zoo_seq_linear(B, "qkv", ln1, h, 3 * h, FALSE);
  int context = mdl_zoo_seq_attention(B, qkv, heads, h / heads, TRUE);
  int proj = mdl_zoo_seq_linear(B, "attn_proj", context, h, h, TRUE);
  /* Residual adds after dropout (Megatron's bias-dropout-add): dropout mask, add. */
  unsigned add = MDL_ZOO_DROPOUT | MDL_ZOO_UNSAVED;
  int res1 = mdl_zoo_seq_pointwise(B, "residual1", proj, x, "h", h, 2.0, add);
  int ln2 = mdl_zoo_seq_norm(B, "ln2", res1, 2);
  int fc1 = mdl_zoo_seq_linear(B, "fc1", ln2, h, ffn, FALSE);
  /* GELU, tanh approximation: ~8 FLOPs (x^3, two multiply-adds, tanh, add, two multiplies). */
  int gelu = mdl_zoo_seq_pointwise(B, "gelu", fc1, -1, "f", ffn, 8.0, MDL_ZOO_TP);
  int fc2 = mdl_zoo_seq_linear(B, "fc2", gelu, ffn, h, TRUE);
  return mdl_zoo_seq_pointwise(B, "residual2", fc2, res1, "h", h, 2.0, add);
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
         mdl_zoo_check_size(name, "the MLP [batch, seq, ffn] x hidden", error, 4, b, s, ffn_of(c), h) &&
         mdl_zoo_check_size(name, "the QKV projection", error, 5, b, s, (int64_t)3, h, h);
}

MdlGraph *mdl_zoo_gpt(const char *name, const MdlGptConfig *c, GError **error) {
  if (!check_sizes(name, c, error)) return NULL;
  MdlZooSeq B = {.b = c->batch, .s = c->seq, .h = c->hidden};
  int labels, table;
  int emb = mdl_zoo_seq_begin(&B, name, "gpt", c->layers, c->heads, c->vocab, &labels, &table);
  MdlGraph *g = B.g;

  MdlOp op;
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
    mdl_zoo_seq_enter_layer(&B, l);
    x = transformer_layer(&B, x, c->heads, ffn_of(c));
  }
  mdl_zoo_seq_enter_layer(&B, -1);
  x = mdl_zoo_seq_norm(&B, "ln_f", x, 2);
  mdl_zoo_seq_output(&B, x, labels, c->vocab, table); /* lm_head tied with the embedding */
  return g;
}
