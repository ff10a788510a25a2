/* model/zoo — private to model/mdl_zoo*.c: the builders of the built-in models and the small
 * op-building helpers they share. Builders take sizes already checked to be positive; they
 * check products against MDL_MAX_ELEMENTS themselves (before allocating anything large) and
 * return a graph that the caller validates. */
#ifndef STRATSIM_MDL_ZOO_H
#define STRATSIM_MDL_ZOO_H

#include "model/mdl_graph.h"

/* GPT-style decoder-only transformer (Brown et al. 2020; Megatron-LM layout). */
typedef struct {
  int64_t layers, hidden, heads, seq, vocab, batch;
  int64_t ffn; /* MLP width; 0: 4 hidden (GPT-3) */
} MdlGptConfig;

/* A named size: sizes from GPT-3 Table 2.1 (see mdl_zoo_gpt.c). NULL if @name is not one. */
const MdlGptConfig *mdl_zoo_gpt_named(const char *name);
/* Builds the transformer; @name becomes the graph's name. NULL and MDL_ERROR_INVALID when
 * hidden is not a multiple of heads or a tensor would exceed MDL_MAX_ELEMENTS. */
MdlGraph *mdl_zoo_gpt(const char *name, const MdlGptConfig *cfg, GError **error);
/* Parameters of that model, from the closed form (no graph built). */
double mdl_zoo_gpt_params(const MdlGptConfig *cfg);

/* Llama-style decoder (mdl_zoo_llama.c): grouped-query attention, SwiGLU MLP, RMSNorm, RoPE,
 * untied (or tied) embeddings, attention unfused or FlashAttention-style fused. */
typedef struct {
  int64_t layers, hidden, heads, kv_heads, ffn, seq, vocab, batch;
  int64_t head_dim; /* 0: hidden / heads */
  int64_t tied;     /* 1: the output layer uses the embedding table */
  int64_t flash;    /* 1: fused attention (attn=flash), 0: unfused */
} MdlLlamaConfig;

/* A named size (llama3-8b, llama3-70b, llama3.1-405b, qwen2.5-72b, mistral-7b: their published
 * config.json, see mdl_zoo_llama.c); NULL if @name is not one. */
const MdlLlamaConfig *mdl_zoo_llama_named(const char *name);
/* NULL and MDL_ERROR_INVALID when heads is not a multiple of kv_heads, hidden of heads (without
 * head_dim), or a tensor would exceed MDL_MAX_ELEMENTS. */
MdlGraph *mdl_zoo_llama(const char *name, const MdlLlamaConfig *cfg, GError **error);
/* Parameters of that model, from the closed form (no graph built). */
double mdl_zoo_llama_params(const MdlLlamaConfig *cfg);

/* Hugging Face config.json (mdl_zoo_hf.c). Whether @text looks like one: a JSON object with
 * "architectures" or "model_type" and no "ops". (mdl_zoo_hf_config: model/mdl_zoo_moe.h.) */
gboolean mdl_zoo_hf_detect(const char *text);

/* L dense hidden x hidden layers and a softmax cross-entropy over hidden classes. */
MdlGraph *mdl_zoo_mlp(const char *name, int64_t layers, int64_t hidden, int64_t batch,
                      GError **error);

/* Appends "labels" [batch] (a data input) and the op "loss": softmax cross-entropy of the
 * logits [batch, classes]; @split: tp_dim = classes (vocab-parallel cross-entropy), else -1. */
void mdl_zoo_classifier_loss(MdlGraph *g, int logits, int64_t batch, int64_t classes, gboolean split);

/* "alexnet", "vgg13", "vgg16"; NULL and MDL_ERROR_UNKNOWN_MODEL for any other @net. */
MdlGraph *mdl_zoo_cnn(const char *name, const char *net, int64_t batch, GError **error);

/* ResNet-101 (mdl_zoo_resnet.c) and Inception-v3 (mdl_zoo_inception.c) at @batch images. */
MdlGraph *mdl_zoo_resnet(const char *name, int64_t batch, GError **error);
MdlGraph *mdl_zoo_inception(const char *name, int64_t batch, GError **error);

/* The cross-mesh resharding paper's U-Transformer (mdl_zoo_unet.c): first level @channels,
 * @image x @image inputs. NULL and MDL_ERROR_INVALID when channels is not a multiple of 8,
 * the image size of 8, or a tensor would exceed MDL_MAX_ELEMENTS. */
MdlGraph *mdl_zoo_unet(const char *name, int64_t channels, int64_t image, int64_t batch,
                       GError **error);

/* FlexFlow's recurrent benchmarks (mdl_zoo_rnn.c): LSTM layers unrolled over seq steps. */
typedef enum { MDL_RNN_TC, MDL_RNN_LM, MDL_RNN_NMT } MdlRnnKind;
typedef struct {
  MdlRnnKind kind;
  int64_t layers;   /* recurrent layers (NMT: per encoder and per decoder) */
  int64_t hidden;   /* hidden = embedding size */
  int64_t seq;      /* unrolled steps (NMT: source and target each) */
  int64_t vocab;
  int64_t classes;  /* RNNTC's output classes */
  int64_t batch;
} MdlRnnConfig;
/* NULL and MDL_ERROR_INVALID when a tensor would exceed MDL_MAX_ELEMENTS or the unrolled graph
 * MDL_MAX_OPS. */
MdlGraph *mdl_zoo_rnn(const char *name, const MdlRnnConfig *cfg, GError **error);
/* Parameters of that model, from the closed form (no graph built). */
double mdl_zoo_rnn_params(const MdlRnnConfig *cfg);

/* --- CNN layers (mdl_zoo_layers.c): activations [b, c, h, w]; each returns its output --- */
typedef struct {
  MdlGraph *g;
  int64_t b;   /* the batch */
  int layer;   /* block index given to the ops added, -1 outside blocks */
} MdlZooNet;
/* Conv "NAME" (kh x kw, stride, padding; no bias) then "NAME.bn": batch norm with ReLU, its
 * [2, cout] gamma/beta weight. */
int mdl_zoo_conv_bn(MdlZooNet *net, const char *name, int x, int64_t cout, int kh, int kw,
                    int stride, int pad_h, int pad_w);
/* k x k pooling (max or average: the same cost). */
int mdl_zoo_pool(MdlZooNet *net, const char *name, int x, int k, int stride, int pad);
/* Global average pooling to [b, c, 1, 1]. */
int mdl_zoo_global_pool(MdlZooNet *net, const char *name, int x);
/* Concatenation of @count (1..MDL_MAX_INPUTS) tensors of equal h, w along channels. */
int mdl_zoo_concat(MdlZooNet *net, const char *name, const int *inputs, int count);
/* Residual addition with ReLU. */
int mdl_zoo_add_relu(MdlZooNet *net, const char *name, int a, int b);
/* FC [b, c, 1, 1] -> [b, classes] (column parallel) and the softmax cross-entropy "loss". */
int mdl_zoo_classifier(MdlZooNet *net, const char *name, int x, int64_t classes);

/* --- transformer blocks (mdl_zoo_transformer.c), shared by gpt and llama --- */
typedef struct {
  MdlGraph *g;
  int64_t b, s, h;  /* batch, sequence, hidden */
  int layer;        /* -1 outside the layers */
  char prefix[32];  /* "layer3." or "" */
} MdlZooSeq;
/* Flags of mdl_zoo_seq_pointwise. */
#define MDL_ZOO_TP 0x1      /* split the width dim on the tensor-parallel axis */
#define MDL_ZOO_DROPOUT 0x2 /* dropout on the output (its 1-byte mask is kept) */
#define MDL_ZOO_UNSAVED 0x4 /* the backward reads no input (an add, a rotation) */
/* Norm over hidden with a [@rows, h] weight: 2 for LayerNorm (gamma, beta), 1 for RMSNorm. */
int mdl_zoo_seq_norm(MdlZooSeq *B, const char *leaf, int x, int64_t rows);
/* Appends a linear layer's dims to @op: n (PARAMETER, the output features) and k (REDUCTION),
 * and sets its tp_dim: k for Megatron's row parallel (@row), else n (column parallel). */
void mdl_zoo_linear_dims(MdlOp *op, int64_t k, int64_t n, gboolean row);
/* y[b,s,n] = x[b,s,k] W[k,n]; @row: Megatron row parallel (split k), else column (split n). */
int mdl_zoo_seq_linear(MdlZooSeq *B, const char *leaf, int x, int64_t k, int64_t n, gboolean row);
/* An elementwise op over [b,s,width] (dim @dim) of @x and, if >= 0, @other (read with the same
 * map, so @x may be a multiple of width wide, as SwiGLU's [gate, up] input is). */
int mdl_zoo_seq_pointwise(MdlZooSeq *B, const char *leaf, int x, int other, const char *dim,
                          int64_t width, double flops_per_element, unsigned flags);
/* Unfused attention core over the fused QKV activation @qkv [b,s,w] (w a multiple of @heads,
 * read as Q, K and V through the heads grouping): attn_scores, attn_softmax (@dropout),
 * attn_context; returns the context [b,s,heads*dh]. */
int mdl_zoo_seq_attention(MdlZooSeq *B, int qkv, int64_t heads, int64_t dh, gboolean dropout);
/* Starts a decoder graph in B->g (bf16, @layers, @heads, seq B->s; @family is copied): the
 * token ids and @labels [b,s] (data inputs) and the embedding; returns its output [b,s,h]. */
int mdl_zoo_seq_begin(MdlZooSeq *B, const char *name, const char *family, int64_t layers,
                      int64_t heads, int64_t vocab, int *labels, int *table);
/* Names the ops added next as layer @layer's ("layer3."), or as outside the layers (-1). */
void mdl_zoo_seq_enter_layer(MdlZooSeq *B, int layer);
/* Token table "embedding.weight" [vocab,h] (returned in @table) and its vocab-parallel lookup
 * of @tokens [b,s]; returns the embedding [b,s,h]. */
int mdl_zoo_seq_embedding(MdlZooSeq *B, int tokens, int64_t vocab, int *table);
/* lm_head (logits = x . table^T, @table [vocab,h]) and the vocab-parallel cross-entropy
 * "loss" over @labels [b,s]; returns the loss tensor. */
int mdl_zoo_seq_output(MdlZooSeq *B, int x, int labels, int64_t vocab, int table);

/* --- llama pieces (mdl_zoo_llama.c), shared with the moe family (mdl_zoo_moe_model.c) --- */
/* One decoder layer over its input @x; @data is the builder's. Returns the layer's output. */
typedef int (*MdlZooLayerFunc)(MdlZooSeq *B, int x, gconstpointer data);
/* The llama graph (embedding, ln_f, lm_head, loss, sizes checked as mdl_zoo_llama does) with
 * @layer building each of @cfg's layers; the graph's family is @family (copied). */
MdlGraph *mdl_zoo_llama_with_layers(const char *name, const MdlLlamaConfig *cfg,
                                    const char *family, MdlZooLayerFunc layer,
                                    gconstpointer data, GError **error);
/* llama's attention over the normalised @x: qkv, rope (Q) and rope_kv (K, V), the core;
 * returns the context [b, s, heads * head_dim]. */
int mdl_zoo_llama_attention(MdlZooSeq *B, int x, const MdlLlamaConfig *cfg);
/* llama's SwiGLU MLP of width @ffn over @x (fc1, swiglu, fc2) and residual2 adding @residual. */
int mdl_zoo_llama_mlp(MdlZooSeq *B, int x, int residual, int64_t ffn);

/* --- op building (mdl_zoo.c) --- */
/* Clears @op and sets its name (not copied: mdl_graph_add_op copies it), kind, layer;
 * tp_dim -1, every map entry -1. */
void mdl_zoo_op_init(MdlOp *op, const char *name, MdlOpKind kind, int layer);
/* Appends a dim; returns its index. */
int mdl_zoo_dim(MdlOp *op, const char *name, int64_t size, MdlDimRole role, gboolean splittable);
/* Appends an input operand, or sets the output, for @tensor; @dims names the op dim indexing
 * each tensor dim, comma-separated, "-" for none (e.g. "b,s,k"). Aborts on a name the op does
 * not have: zoo code is not user input. */
void mdl_zoo_input(MdlOp *op, int tensor, const char *dims);
void mdl_zoo_output(MdlOp *op, int tensor, const char *dims);
/* Adds a weight / an activation tensor named @name with @ndims sizes from the varargs
 * (int64_t). */
int mdl_zoo_weight(MdlGraph *g, const char *name, int ndims, ...);
int mdl_zoo_activation(MdlGraph *g, const char *name, int ndims, ...);
/* FALSE with MDL_ERROR_INVALID naming @model and @what when the product of the @n sizes
 * (int64_t varargs) exceeds MDL_MAX_ELEMENTS. */
gboolean mdl_zoo_check_size(const char *model, const char *what, GError **error, int n, ...);

#endif
