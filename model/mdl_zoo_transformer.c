/* model/zoo/transformer — the decoder blocks the gpt and llama families share: norms, linear
 * layers in Megatron's column/row-parallel layouts, pointwise ops, GPT's attention core, the
 * token embedding, the output layer and its loss (the llama family's grouped-query attention
 * is in mdl_zoo_llama.c).
 *
 * Every block appends its weight (if any), its output activation [b, s, width] and one op to
 * the graph, named prefix + leaf ("layer3.qkv"), and returns the output tensor. Dims are named
 * as the strategies expect them: b (SAMPLE), s (the sequence, ATTRIBUTE: sequence parallelism
 * splits the ops without a tp_dim on it), n/k for linear layers, heads for attention.
 */
#include "model/mdl_zoo.h"

int mdl_zoo_seq_norm(MdlZooSeq *B, const char *leaf, int x, int64_t rows) {
  char name[96];
  g_snprintf(name, sizeof name, "%s%s.weight", B->prefix, leaf);
  int w = mdl_zoo_weight(B->g, name, 2, rows, B->h);
  g_snprintf(name, sizeof name, "%s%s", B->prefix, leaf);
  int y = mdl_zoo_activation(B->g, name, 3, B->b, B->s, B->h);
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

void mdl_zoo_linear_dims(MdlOp *op, int64_t k, int64_t n, gboolean row) {
  int dn = mdl_zoo_dim(op, "n", n, MDL_ROLE_PARAMETER, TRUE);
  int dk = mdl_zoo_dim(op, "k", k, MDL_ROLE_REDUCTION, TRUE);
  op->tp_dim = row ? dk : dn;
}

int mdl_zoo_seq_linear(MdlZooSeq *B, const char *leaf, int x, int64_t k, int64_t n, gboolean row) {
  char name[96];
  g_snprintf(name, sizeof name, "%s%s.weight", B->prefix, leaf);
  int w = mdl_zoo_weight(B->g, name, 2, k, n);
  g_snprintf(name, sizeof name, "%s%s", B->prefix, leaf);
  int y = mdl_zoo_activation(B->g, name, 3, B->b, B->s, n);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_MATMUL, B->layer);
  mdl_zoo_dim(&op, "b", B->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "s", B->s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_linear_dims(&op, k, n, row);
  mdl_zoo_input(&op, x, "b,s,k");
  mdl_zoo_input(&op, w, "k,n");
  mdl_zoo_output(&op, y, "b,s,n");
  mdl_graph_add_op(B->g, &op);
  return y;
}

int mdl_zoo_seq_pointwise(MdlZooSeq *B, const char *leaf, int x, int other, const char *dim,
                          int64_t width, double flops_per_element, unsigned flags) {
  char name[96];
  g_snprintf(name, sizeof name, "%s%s", B->prefix, leaf);
  int y = mdl_zoo_activation(B->g, name, 3, B->b, B->s, width);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_ELEMENTWISE, B->layer);
  mdl_zoo_dim(&op, "b", B->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "s", B->s, MDL_ROLE_ATTRIBUTE, TRUE);
  int d = mdl_zoo_dim(&op, dim, width, MDL_ROLE_ATTRIBUTE, TRUE);
  op.tp_dim = (flags & MDL_ZOO_TP) ? d : -1;
  op.flops_per_element = flops_per_element;
  op.dropout = (flags & MDL_ZOO_DROPOUT) != 0;
  if (flags & MDL_ZOO_UNSAVED) op.unsaved_inputs = other >= 0 ? 0x3 : 0x1;
  char map[32];
  g_snprintf(map, sizeof map, "b,s,%s", dim);
  mdl_zoo_input(&op, x, map);
  if (other >= 0) mdl_zoo_input(&op, other, map);
  mdl_zoo_output(&op, y, map);
  mdl_graph_add_op(B->g, &op);
  return y;
}

/* The dims every attention op shares: b, heads (tp_dim), sq. */
static void attention_dims(MdlZooSeq *B, MdlOp *op, const char *name, MdlOpKind kind, int64_t heads) {
  mdl_zoo_op_init(op, name, kind, B->layer);
  op->attention_core = TRUE;
  mdl_zoo_dim(op, "b", B->b, MDL_ROLE_SAMPLE, TRUE);
  op->tp_dim = mdl_zoo_dim(op, "heads", heads, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(op, "sq", B->s, MDL_ROLE_ATTRIBUTE, TRUE);
}

int mdl_zoo_seq_attention(MdlZooSeq *B, int qkv, int64_t heads, int64_t dh, gboolean dropout) {
  char name[96];
  g_snprintf(name, sizeof name, "%sattn_scores", B->prefix);
  int scores = mdl_zoo_activation(B->g, name, 4, B->b, heads, B->s, B->s);
  MdlOp op;
  attention_dims(B, &op, name, MDL_OP_BATCH_MATMUL, heads);
  mdl_zoo_dim(&op, "sk", B->s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "dh", dh, MDL_ROLE_REDUCTION, FALSE);
  mdl_zoo_input(&op, qkv, "b,sq,heads"); /* Q */
  mdl_zoo_input(&op, qkv, "b,sk,heads"); /* K */
  mdl_zoo_output(&op, scores, "b,heads,sq,sk");
  mdl_graph_add_op(B->g, &op);

  /* Scale, causal mask and (if any) attention dropout folded in. */
  g_snprintf(name, sizeof name, "%sattn_softmax", B->prefix);
  int probs = mdl_zoo_activation(B->g, name, 4, B->b, heads, B->s, B->s);
  attention_dims(B, &op, name, MDL_OP_SOFTMAX, heads);
  op.dropout = dropout;
  mdl_zoo_dim(&op, "sk", B->s, MDL_ROLE_ATTRIBUTE, FALSE); /* normalised over */
  mdl_zoo_input(&op, scores, "b,heads,sq,sk");
  mdl_zoo_output(&op, probs, "b,heads,sq,sk");
  mdl_graph_add_op(B->g, &op);

  g_snprintf(name, sizeof name, "%sattn_context", B->prefix);
  int context = mdl_zoo_activation(B->g, name, 3, B->b, B->s, heads * dh);
  attention_dims(B, &op, name, MDL_OP_BATCH_MATMUL, heads);
  mdl_zoo_dim(&op, "dh", dh, MDL_ROLE_ATTRIBUTE, FALSE);
  mdl_zoo_dim(&op, "sk", B->s, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, probs, "b,heads,sq,sk");
  mdl_zoo_input(&op, qkv, "b,sk,heads"); /* V */
  mdl_zoo_output(&op, context, "b,sq,heads");
  mdl_graph_add_op(B->g, &op);
  return context;
}

int mdl_zoo_seq_begin(MdlZooSeq *B, const char *name, const char *family, int64_t layers,
                      int64_t heads, int64_t vocab, int *labels, int *table) {
  MdlGraph *g = B->g = mdl_graph_new(name, family, B->b);
  g->default_dtype = DEV_DTYPE_BF16;
  g->num_layers = (int)layers;
  g->heads = (int)heads;
  g->seq = B->s;
  B->layer = -1;
  B->prefix[0] = '\0';
  int64_t ids[2] = {B->b, B->s};
  int tokens = mdl_graph_add_tensor(g, "tokens", 2, ids, FALSE, TRUE);
  *labels = mdl_graph_add_tensor(g, "labels", 2, ids, FALSE, TRUE);
  return mdl_zoo_seq_embedding(B, tokens, vocab, table);
}

void mdl_zoo_seq_enter_layer(MdlZooSeq *B, int layer) {
  B->layer = layer;
  if (layer >= 0) g_snprintf(B->prefix, sizeof B->prefix, "layer%d.", layer);
  else B->prefix[0] = '\0';
}

int mdl_zoo_seq_embedding(MdlZooSeq *B, int tokens, int64_t vocab, int *table) {
  *table = mdl_zoo_weight(B->g, "embedding.weight", 2, vocab, B->h);
  int emb = mdl_zoo_activation(B->g, "embedding", 3, B->b, B->s, B->h);
  MdlOp op;
  mdl_zoo_op_init(&op, "embedding", MDL_OP_EMBEDDING, -1);
  mdl_zoo_dim(&op, "b", B->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "s", B->s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "h", B->h, MDL_ROLE_PARAMETER, TRUE);
  op.tp_dim = mdl_zoo_dim(&op, "vocab", vocab, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, tokens, "b,s");
  mdl_zoo_input(&op, *table, "vocab,h");
  mdl_zoo_output(&op, emb, "b,s,h");
  mdl_graph_add_op(B->g, &op);
  return emb;
}

int mdl_zoo_seq_output(MdlZooSeq *B, int x, int labels, int64_t vocab, int table) {
  MdlGraph *g = B->g;
  int logits = mdl_zoo_activation(g, "lm_head", 3, B->b, B->s, vocab);
  MdlOp op;
  mdl_zoo_op_init(&op, "lm_head", MDL_OP_MATMUL, -1);
  mdl_zoo_dim(&op, "b", B->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "s", B->s, MDL_ROLE_ATTRIBUTE, TRUE);
  op.tp_dim = mdl_zoo_dim(&op, "n", vocab, MDL_ROLE_PARAMETER, TRUE);
  mdl_zoo_dim(&op, "k", B->h, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, x, "b,s,k");
  mdl_zoo_input(&op, table, "n,k"); /* [vocab, hidden], the embedding's layout */
  mdl_zoo_output(&op, logits, "b,s,n");
  mdl_graph_add_op(g, &op);

  int loss = mdl_zoo_activation(g, "loss", 2, B->b, B->s);
  mdl_zoo_op_init(&op, "loss", MDL_OP_LOSS, -1);
  mdl_zoo_dim(&op, "b", B->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "s", B->s, MDL_ROLE_ATTRIBUTE, TRUE);
  /* Splittable: Megatron's vocab-parallel cross-entropy (Shoeybi et al. 2019, section 3)
   * all-reduces only the per-token max and sum of exponentials, [b,s] values. */
  op.tp_dim = mdl_zoo_dim(&op, "classes", vocab, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, logits, "b,s,classes");
  mdl_zoo_input(&op, labels, "b,s");
  mdl_zoo_output(&op, loss, "b,s");
  mdl_graph_add_op(g, &op);
  return loss;
}
