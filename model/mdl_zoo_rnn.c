/* model/zoo/rnn — FlexFlow's recurrent benchmarks (Jia et al. 2019, "Beyond Data and Model
 * Parallelism for Deep Neural Networks", Table 3 and section 8.1): RNNTC (text
 * classification: 4 recurrent layers and a softmax), RNNLM (language model: 2 recurrent
 * layers and a softmax) and NMT (an encoder and a decoder of 2 recurrent layers each, an
 * attention and a softmax), with LSTM cells unrolled over 40 time steps (section 8.1:
 * "we set the number of unrolling steps for each recurrent layer to 40"), batch 64, fp32.
 * Hidden and embedding size 2048 and NMT's vocabulary of 20 x 1024 words are the defaults of
 * FlexFlow's own NMT benchmark (github.com/flexflow/FlexFlow, nmt/nmt.cc: hidden_size 2048,
 * embed_size 2048, vocab_size 20 * 1024). RNNLM's vocabulary is Penn Treebank's 10,000 words
 * (Mikolov et al. 2010; Zaremba et al. 2014); RNNTC's is Movie Reviews' 18,765 words with 2
 * classes (Kim 2014, Table 1).
 *
 * The graph is unrolled as FlexFlow's operator graph is: one op per layer and time step, so
 * the search can place and split each step on its own. Per layer l and step t:
 *   l{l}.t{t}.x     matmul x_t [b, in] . Wx_l [in, 4h] -> the gate inputs [b, 4h]
 *   l{l}.t{t}.h     matmul h_{t-1} [b, h] . Wh_l [h, 4h] (absent at t = 0 of a stack that
 *                   starts from zero state)
 *   l{l}.t{t}.cell  the LSTM cell, ELEMENTWISE over [b, h] reading both gate tensors through
 *                   the grouping rule (their 4h dim is indexed by the cell's h): 4 adds,
 *                   3 sigmoids and 2 tanh at ~5 FLOPs each, c = f c + i g, h = o tanh(c):
 *                   33 FLOPs per hidden unit. The cell state c stays inside the cell op (its
 *                   dependence on c_{t-1} runs through h_{t-1}).
 * Wx_l and Wh_l are shared by all steps of the layer (their gradients are summed, then
 * synchronised once). Embedding lookups are per step (embed.t{t}, or src_embed / tgt_embed
 * for NMT), as is the softmax layer (softmax.t{t}: [b, h] . [h, V], then loss.t{t}) of RNNLM
 * and NMT; RNNTC classifies the last step only. NMT's decoder starts from the encoder's final
 * state per layer; its attention (Luong et al. 2015, "general" with the output layer
 * h~ = tanh(Wc [c; h])) attends over the encoder's top-layer outputs, stacked into
 * enc.memory [b, s, h] by a tree of ELEMENTWISE stacking ops (an op reads at most 4 tensors):
 * per decoder step attn_scores (batch_matmul over h), attn_softmax (over the source steps),
 * attn_context (batch_matmul over s), attn_ctx / attn_hid (matmuls [h, h]) and attn_out (add,
 * tanh). Biases are not modeled.
 * Ops are ordered embeddings first, then layer by layer, then the softmax, and each op's layer
 * is its recurrent layer (NMT: encoder 0..L-1, decoder L..2L-1; attention in the top decoder
 * layer), so megatron:pp=P places whole layers on pipeline stages, the layer-wise model
 * parallelism of GNMT (Wu et al. 2016) that FlexFlow's expert strategy for RNNs uses.
 * Tensor parallelism (tp_dim): gate matmuls column parallel (their 4h outputs), the cell on h,
 * embeddings vocab parallel, the softmax layer on the vocabulary.
 */
#include "model/mdl_zoo.h"

#include <string.h>

typedef struct {
  MdlGraph *g;
  int64_t b, h;
  int layer;
} Rnn;

static int matmul(Rnn *r, const char *name, int x, int w, int64_t k, int64_t n, int layer) {
  int y = mdl_zoo_activation(r->g, name, 2, r->b, n);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_MATMUL, layer);
  mdl_zoo_dim(&op, "b", r->b, MDL_ROLE_SAMPLE, TRUE);
  op.tp_dim = mdl_zoo_dim(&op, "n", n, MDL_ROLE_PARAMETER, TRUE);
  mdl_zoo_dim(&op, "k", k, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, x, "b,k");
  mdl_zoo_input(&op, w, "k,n");
  mdl_zoo_output(&op, y, "b,n");
  mdl_graph_add_op(r->g, &op);
  return y;
}

/* An elementwise op over [b, h] reading up to 3 [b, h or a multiple] inputs. */
static int elementwise(Rnn *r, const char *name, const int *inputs, int count, double flops,
                       int layer) {
  int y = mdl_zoo_activation(r->g, name, 2, r->b, r->h);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_ELEMENTWISE, layer);
  op.flops_per_element = flops;
  mdl_zoo_dim(&op, "b", r->b, MDL_ROLE_SAMPLE, TRUE);
  op.tp_dim = mdl_zoo_dim(&op, "h", r->h, MDL_ROLE_ATTRIBUTE, TRUE);
  for (int i = 0; i < count; i++) mdl_zoo_input(&op, inputs[i], "b,h");
  mdl_zoo_output(&op, y, "b,h");
  mdl_graph_add_op(r->g, &op);
  return y;
}

static int embedding(Rnn *r, const char *name, int table, int64_t vocab) {
  char tokens[64];
  g_snprintf(tokens, sizeof tokens, "%s.tokens", name);
  int ids = mdl_graph_add_tensor(r->g, tokens, 1, &r->b, FALSE, TRUE);
  int y = mdl_zoo_activation(r->g, name, 2, r->b, r->h);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_EMBEDDING, -1);
  mdl_zoo_dim(&op, "b", r->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "h", r->h, MDL_ROLE_PARAMETER, TRUE);
  op.tp_dim = mdl_zoo_dim(&op, "vocab", vocab, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, ids, "b");
  mdl_zoo_input(&op, table, "vocab,h");
  mdl_zoo_output(&op, y, "b,h");
  mdl_graph_add_op(r->g, &op);
  return y;
}

/* Runs @layers LSTM layers over @steps inputs @x (replaced by the top layer's outputs);
 * @init, when not NULL, holds each layer's initial hidden state (NMT's decoder), and
 * @last receives each layer's final one. Layers are numbered from @first_layer. */
static void lstm_stack(Rnn *r, const char *prefix, int *x, int steps, int layers, int first_layer,
                       const int *init, int *last) {
  int64_t h = r->h;
  for (int l = 0; l < layers; l++) {
    int layer = first_layer + l;
    char name[64];
    g_snprintf(name, sizeof name, "%sl%d.wx", prefix, l);
    int wx = mdl_zoo_weight(r->g, name, 2, h, 4 * h); /* input size = hidden = embedding */
    g_snprintf(name, sizeof name, "%sl%d.wh", prefix, l);
    int wh = mdl_zoo_weight(r->g, name, 2, h, 4 * h);
    int state = init ? init[l] : -1;
    for (int t = 0; t < steps; t++) {
      int gates[2], n = 0;
      g_snprintf(name, sizeof name, "%sl%d.t%d.x", prefix, l, t);
      gates[n++] = matmul(r, name, x[t], wx, h, 4 * h, layer);
      if (state >= 0) {
        g_snprintf(name, sizeof name, "%sl%d.t%d.h", prefix, l, t);
        gates[n++] = matmul(r, name, state, wh, h, 4 * h, layer);
      }
      g_snprintf(name, sizeof name, "%sl%d.t%d.cell", prefix, l, t);
      state = x[t] = elementwise(r, name, gates, n, 33.0, layer);
    }
    if (last) last[l] = state;
  }
}

/* Per-step softmax layer and loss over @classes for the @steps outputs in @y. */
static void softmax_layer(Rnn *r, const int *y, int steps, int first_step, int64_t classes,
                          gboolean per_step) {
  int w = mdl_zoo_weight(r->g, "softmax.weight", 2, r->h, classes);
  for (int t = first_step; t < steps; t++) {
    char name[64], labels[64], loss[64];
    g_snprintf(name, sizeof name, per_step ? "softmax.t%d" : "softmax", t);
    int logits = matmul(r, name, y[t], w, r->h, classes, -1);
    g_snprintf(labels, sizeof labels, per_step ? "labels.t%d" : "labels", t);
    g_snprintf(loss, sizeof loss, per_step ? "loss.t%d" : "loss", t);
    int lab = mdl_graph_add_tensor(r->g, labels, 1, &r->b, FALSE, TRUE);
    int out = mdl_zoo_activation(r->g, loss, 1, r->b);
    MdlOp op;
    mdl_zoo_op_init(&op, loss, MDL_OP_LOSS, -1);
    mdl_zoo_dim(&op, "b", r->b, MDL_ROLE_SAMPLE, TRUE);
    op.tp_dim = mdl_zoo_dim(&op, "classes", classes, MDL_ROLE_REDUCTION, TRUE);
    mdl_zoo_input(&op, logits, "b,classes");
    mdl_zoo_input(&op, lab, "b");
    mdl_zoo_output(&op, out, "b");
    mdl_graph_add_op(r->g, &op);
  }
}

/* Stacks the [b, h] (or already stacked [b, s_i, h]) tensors @parts into one [b, sum s_i, h],
 * at most 4 per op. */
static int stack(Rnn *r, int *parts, int count, int layer) {
  int level = 0;
  while (count > 1) {
    int next = 0;
    for (int i = 0; i < count; i += MDL_MAX_INPUTS, next++) {
      int n = MIN(MDL_MAX_INPUTS, count - i);
      int64_t s = 0;
      for (int j = 0; j < n; j++) {
        const MdlTensor *t = mdl_graph_tensor(r->g, parts[i + j]);
        s += t->ndims == 2 ? 1 : t->shape[1];
      }
      char name[64];
      g_snprintf(name, sizeof name, "enc.memory.%d.%d", level, next);
      gboolean top = count <= MDL_MAX_INPUTS;
      int y = mdl_zoo_activation(r->g, top ? "enc.memory" : name, 3, r->b, s, r->h);
      MdlOp op;
      mdl_zoo_op_init(&op, top ? "enc.memory" : name, MDL_OP_ELEMENTWISE, layer);
      mdl_zoo_dim(&op, "b", r->b, MDL_ROLE_SAMPLE, TRUE);
      mdl_zoo_dim(&op, "s", s, MDL_ROLE_ATTRIBUTE, TRUE);
      mdl_zoo_dim(&op, "h", r->h, MDL_ROLE_ATTRIBUTE, TRUE);
      for (int j = 0; j < n; j++)
        mdl_zoo_input(&op, parts[i + j], mdl_graph_tensor(r->g, parts[i + j])->ndims == 2 ? "b,h" : "b,-,h");
      op.unsaved_inputs = (uint8_t)((1u << n) - 1);
      mdl_zoo_output(&op, y, "b,s,h");
      mdl_graph_add_op(r->g, &op);
      parts[next] = y;
    }
    count = next;
    level++;
  }
  return parts[0];
}

/* Luong attention of decoder output @query over @memory [b, s, h]; returns h~ [b, h]. */
static int attention(Rnn *r, int query, int memory, int64_t s, int wc, int wq, int t, int layer) {
  char name[64];
  g_snprintf(name, sizeof name, "dec.t%d.attn_scores", t);
  int scores = mdl_zoo_activation(r->g, name, 2, r->b, s);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_BATCH_MATMUL, layer);
  op.attention_core = TRUE;
  mdl_zoo_dim(&op, "b", r->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "s", s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "k", r->h, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, query, "b,k");
  mdl_zoo_input(&op, memory, "b,s,k");
  mdl_zoo_output(&op, scores, "b,s");
  mdl_graph_add_op(r->g, &op);

  g_snprintf(name, sizeof name, "dec.t%d.attn_softmax", t);
  int probs = mdl_zoo_activation(r->g, name, 2, r->b, s);
  mdl_zoo_op_init(&op, name, MDL_OP_SOFTMAX, layer);
  op.attention_core = TRUE;
  mdl_zoo_dim(&op, "b", r->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "s", s, MDL_ROLE_ATTRIBUTE, FALSE); /* normalised over */
  mdl_zoo_input(&op, scores, "b,s");
  mdl_zoo_output(&op, probs, "b,s");
  mdl_graph_add_op(r->g, &op);

  g_snprintf(name, sizeof name, "dec.t%d.attn_context", t);
  int context = mdl_zoo_activation(r->g, name, 2, r->b, r->h);
  mdl_zoo_op_init(&op, name, MDL_OP_BATCH_MATMUL, layer);
  op.attention_core = TRUE;
  mdl_zoo_dim(&op, "b", r->b, MDL_ROLE_SAMPLE, TRUE);
  op.tp_dim = mdl_zoo_dim(&op, "h", r->h, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "s", s, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, probs, "b,s");
  mdl_zoo_input(&op, memory, "b,s,h");
  mdl_zoo_output(&op, context, "b,h");
  mdl_graph_add_op(r->g, &op);

  int parts[2];
  g_snprintf(name, sizeof name, "dec.t%d.attn_ctx", t);
  parts[0] = matmul(r, name, context, wc, r->h, r->h, layer);
  g_snprintf(name, sizeof name, "dec.t%d.attn_hid", t);
  parts[1] = matmul(r, name, query, wq, r->h, r->h, layer);
  g_snprintf(name, sizeof name, "dec.t%d.attn_out", t);
  return elementwise(r, name, parts, 2, 6.0 /* add, tanh */, layer);
}

MdlGraph *mdl_zoo_rnn(const char *name, const MdlRnnConfig *c, GError **error) {
  int64_t b = c->batch, h = c->hidden, v = c->vocab, s = c->seq;
  if (!mdl_zoo_check_size(name, "a gate matmul [batch, 4 hidden] x hidden", error, 4, b, h, h,
                          (int64_t)4) ||
      !mdl_zoo_check_size(name, "the softmax [batch, vocab] x hidden", error, 3, b, v, h) ||
      !mdl_zoo_check_size(name, "the attention [batch, seq, hidden]", error, 3, b, s, h))
    return NULL;
  /* Ops grow with seq x layers; the graph limit is MDL_MAX_OPS. */
  if (s * c->layers * (c->kind == MDL_RNN_NMT ? 2 : 1) * 16 > MDL_MAX_OPS) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                "model %s: seq x layers = %" G_GINT64_FORMAT " x %" G_GINT64_FORMAT
                " unrolls into more than %d ops", name, (gint64)s, (gint64)c->layers, MDL_MAX_OPS);
    return NULL;
  }
  int steps = (int)s, layers = (int)c->layers;
  MdlGraph *g = mdl_graph_new(name, "rnn", b);
  g->default_dtype = DEV_DTYPE_FP32;
  g->seq = s;
  g->num_layers = layers * (c->kind == MDL_RNN_NMT ? 2 : 1);
  Rnn r = {.g = g, .b = b, .h = h};
  int *x = g_new(int, steps), *y = g_new(int, steps);
  int *final = g_new(int, layers);
  if (c->kind != MDL_RNN_NMT) {
    int table = mdl_zoo_weight(g, "embed.weight", 2, v, h);
    for (int t = 0; t < steps; t++) {
      char e[32];
      g_snprintf(e, sizeof e, "embed.t%d", t);
      x[t] = embedding(&r, e, table, v);
    }
    lstm_stack(&r, "", x, steps, layers, 0, NULL, NULL);
    if (c->kind == MDL_RNN_LM) softmax_layer(&r, x, steps, 0, v, TRUE);
    else softmax_layer(&r, x, steps, steps - 1, c->classes, FALSE);
  } else {
    int src = mdl_zoo_weight(g, "src_embed.weight", 2, v, h);
    int tgt = mdl_zoo_weight(g, "tgt_embed.weight", 2, v, h);
    for (int t = 0; t < steps; t++) {
      char e[32];
      g_snprintf(e, sizeof e, "src_embed.t%d", t);
      x[t] = embedding(&r, e, src, v);
    }
    for (int t = 0; t < steps; t++) {
      char e[32];
      g_snprintf(e, sizeof e, "tgt_embed.t%d", t);
      y[t] = embedding(&r, e, tgt, v);
    }
    lstm_stack(&r, "enc.", x, steps, layers, 0, NULL, final);
    int memory = stack(&r, x, steps, layers - 1); /* x now holds the top layer's outputs */
    lstm_stack(&r, "dec.", y, steps, layers, layers, final, NULL);
    int wc = mdl_zoo_weight(g, "attn.wc", 2, h, h), wq = mdl_zoo_weight(g, "attn.wh", 2, h, h);
    for (int t = 0; t < steps; t++) y[t] = attention(&r, y[t], memory, s, wc, wq, t, 2 * layers - 1);
    softmax_layer(&r, y, steps, 0, v, TRUE);
  }
  g_free(x);
  g_free(y);
  g_free(final);
  return g;
}

double mdl_zoo_rnn_params(const MdlRnnConfig *c) {
  double h = (double)c->hidden, v = (double)c->vocab, lstm = 8 * h * h;
  switch (c->kind) {
  case MDL_RNN_LM: return c->layers * lstm + 2 * v * h;
  case MDL_RNN_TC: return c->layers * lstm + v * h + h * c->classes;
  default: return 2 * c->layers * lstm + 3 * v * h + 2 * h * h;
  }
}
