/* model — the operator-graph IR.
 *
 * An op is an iteration space of named dims (einsum style); each dim has a role
 * (DESIGN.md): SAMPLE (batch), ATTRIBUTE (spatial, sequence, heads: splitting does not split
 * weights), PARAMETER (splitting splits weights), REDUCTION (contracted: splitting leaves
 * partial sums in the output). Every operand (input, weight or the single output) is a tensor
 * plus a map from each tensor dim to the op dim that indexes it (-1: none). Splitting an op dim
 * over a mesh axis therefore fixes the SBP layout of every operand: S(i) where tensor dim i is
 * indexed by the split dim, B where it is not, P for an output whose missing dim is a reduction.
 *
 * Shapes hold the full global batch; a microbatch scales every SAMPLE dim. Ops are stored in a
 * topological order (producers before consumers); each op has exactly one output tensor.
 * Backward ops are derived (mdl_op_backward_flops), not stored.
 */
#ifndef STRATSIM_MDL_GRAPH_H
#define STRATSIM_MDL_GRAPH_H

#include <glib.h>
#include <stdint.h>
#include "devices/dev_cluster.h"

G_BEGIN_DECLS

#define MDL_ERROR (mdl_error_quark())
GQuark mdl_error_quark(void);
typedef enum {
  MDL_ERROR_UNKNOWN_MODEL,
  MDL_ERROR_PARSE,     /* malformed JSON or spec */
  MDL_ERROR_INVALID,   /* zero/negative/overflowing sizes, cycles, bad references */
  MDL_ERROR_STRATEGY,  /* a strategy that does not fit the model or cluster */
} MdlError;

#define MDL_MAX_DIMS 8       /* dims per op and per tensor */
#define MDL_MAX_INPUTS 4     /* input operands (activations and weights) per op */
#define MDL_NAME_LEN 16
/* Largest tensor or op iteration space accepted (elements); keeps every product of sizes far
 * from int64 overflow. */
#define MDL_MAX_ELEMENTS (INT64_C(1) << 62)
/* Most ops and tensors of one graph: the zoo's largest, gpt with 100000 layers, has 1.2 M ops
 * and 1.8 M tensors; a JSON graph past these is refused before it is built (README, "Limits"). */
#define MDL_MAX_OPS 2000000
#define MDL_MAX_TENSORS 4000000

typedef enum {
  MDL_ROLE_SAMPLE,
  MDL_ROLE_ATTRIBUTE,
  MDL_ROLE_PARAMETER,
  MDL_ROLE_REDUCTION,
} MdlDimRole;

typedef enum {
  MDL_OP_MATMUL,       /* dense layer / projection: contraction with a weight */
  MDL_OP_BATCH_MATMUL, /* contraction of two activations (attention scores, context) */
  MDL_OP_CONV2D,
  MDL_OP_POOL2D,
  MDL_OP_ELEMENTWISE,  /* activations, residual adds, dropout, bias */
  MDL_OP_LAYERNORM,
  MDL_OP_SOFTMAX,
  MDL_OP_EMBEDDING,    /* table lookup: contraction over the vocabulary, ~no FLOPs */
  MDL_OP_LOSS,         /* softmax cross-entropy over classes */
  MDL_OP_KIND_COUNT
} MdlOpKind;

typedef struct {
  char name[MDL_NAME_LEN]; /* "b", "s", "n", "k", "heads", "cout", ... */
  int64_t size;            /* global size (SAMPLE dims: the whole global batch) */
  MdlDimRole role;
  gboolean splittable;     /* FALSE where a split needs a cross-device reduction the op
                              does not model (layernorm's hidden dim, softmax's class dim) */
} MdlDim;

typedef struct {
  int tensor;                    /* index into MdlGraph.tensors */
  int8_t dim_map[MDL_MAX_DIMS];  /* op dim indexing tensor dim i, or -1 */
} MdlOperand;

typedef struct {
  char *name;
  int ndims;
  int64_t shape[MDL_MAX_DIMS];   /* global shape (full batch) */
  gboolean is_weight;            /* a trained parameter: gradient sync, optimizer state */
  gboolean is_input;             /* fed by data (no producer, needs no gradient) */
  int producer;                  /* op index, -1 for weights and inputs */
} MdlTensor;

typedef struct {
  char *name;
  MdlOpKind kind;
  int ndims;
  MdlDim dims[MDL_MAX_DIMS];
  int ninputs;
  MdlOperand inputs[MDL_MAX_INPUTS];
  MdlOperand output;
  double flops;        /* forward FLOPs for the whole op at the global batch */
  int layer;           /* block index (transformer layer, conv block), -1 outside blocks */
  int tp_dim;          /* op dim Megatron-style tensor parallelism splits, -1: replicate */
  int64_t kernel_elems;     /* CONV2D, POOL2D: window area kh*kw (kernel sizes are op-level
                               constants, not dims); 0 is read as 1 */
  double flops_per_element; /* ELEMENTWISE: FLOPs per output element; 0 is read as 1 */
  /* What the backward keeps (activation memory, Korthikanti et al. 2022, section 4.1). */
  uint8_t unsaved_inputs;   /* bit k: input k is not kept for the backward (an addition's
                               gradient passes dY through and reads no operand) */
  gboolean dropout;         /* dropout on the output: its 1-byte keep mask, one per output
                               element, is kept for the backward */
  gboolean attention_core;  /* attention scores, softmax, dropout, context: what selective
                               recomputation re-runs (ibid., section 4.1, the 5as/h term) */
  gboolean gather;          /* ELEMENTWISE: inputs read through a token routing (the MoE
                               dispatch and combine, model/mdl_zoo_moe.c): see validate */
} MdlOp;

typedef struct {
  char *name;          /* "gpt3-1.3b", "mlp", or the file it came from */
  char *family;        /* "gpt", "mlp", "cnn", "json" */
  GArray *ops;         /* MdlOp, topological order */
  GArray *tensors;     /* MdlTensor */
  int64_t batch;       /* global batch in samples (sequences, images) */
  DevDtype default_dtype;
  int num_layers;      /* repeated blocks (transformer layers), 0 if none */
  int heads;           /* attention heads, 0 if none */
  int64_t seq;         /* tokens per sample, 1 for non-sequence models */
} MdlGraph;

/* --- building --- */
/* An empty graph; @name and @family are copied (family NULL: "json"). default_dtype fp32,
 * num_layers 0, heads 0, seq 1. Free with mdl_graph_free (NULL is allowed). */
MdlGraph *mdl_graph_new(const char *name, const char *family, int64_t batch);
void mdl_graph_free(MdlGraph *graph);

/* Adds a tensor; returns its index. @shape has @ndims entries; @name is copied. */
int mdl_graph_add_tensor(MdlGraph *graph, const char *name, int ndims, const int64_t *shape,
                         gboolean is_weight, gboolean is_input);
/* Appends an op (copied), sets its output tensor's producer and returns the op index. The op's
 * inputs must already exist; flops is filled by mdl_op_forward_flops when left at 0. The name
 * is copied; dim_map entries past a tensor's ndims and operands past ninputs are reset to -1
 * (and their unsaved_inputs bits cleared). */
int mdl_graph_add_op(MdlGraph *graph, const MdlOp *op);

/* Checks the whole graph: sizes positive and without overflow, operand maps consistent
 * (tensor dim size == op dim size, or op dim == heads-like grouping where the tensor dim is a
 * multiple of it), topological order, every non-input non-weight tensor produced once.
 * In detail: at most MDL_MAX_OPS ops and MDL_MAX_TENSORS tensors; names non-empty and unique
 * (ops, tensors, dims of an op); every tensor and op
 * iteration space at most MDL_MAX_ELEMENTS; exactly one SAMPLE dim per op, of size
 * graph->batch, indexing the output and every non-weight input exactly once (at the same
 * tensor dim wherever a tensor is used) and never a weight; SAMPLE dims map to tensor dims of
 * exactly their size; an op dim indexes at most one dim of an operand; the output is not
 * indexed by a REDUCTION dim; tp_dim is -1 or a splittable dim; layer < num_layers when
 * num_layers > 0. Exception to the size rule: inputs of CONV2D and POOL2D may have any size
 * on dims mapped to ATTRIBUTE dims (the output spatial dims; a split of the output splits the
 * input window proportionally, halos ignored), and so may inputs of ELEMENTWISE ops marked
 * gather (the MoE token dispatch and combine read the proportional slice). Errors are MDL_ERROR_INVALID naming the op,
 * tensor and dim. */
gboolean mdl_graph_validate(const MdlGraph *graph, GError **error);

static inline MdlOp *mdl_graph_op(const MdlGraph *g, int i) { return &g_array_index(g->ops, MdlOp, i); }
static inline MdlTensor *mdl_graph_tensor(const MdlGraph *g, int i) { return &g_array_index(g->tensors, MdlTensor, i); }
static inline int mdl_graph_num_ops(const MdlGraph *g) { return (int)g->ops->len; }
static inline int mdl_graph_num_tensors(const MdlGraph *g) { return (int)g->tensors->len; }

/* The transformer layer an op belongs to by its name, "layerN.<name>" (the zoo's GPT and llama
 * builders name their ops so): N, or -1 for any other name. */
int mdl_op_layer(const char *name);

/* Finds an op dim by name; -1 if absent. */
int mdl_op_find_dim(const MdlOp *op, const char *name);
/* Index of the op's SAMPLE dim, -1 if none. */
int mdl_op_sample_dim(const MdlOp *op);
/* "sample", "attribute", "parameter", "reduction"; the parse functions accept these names
 * (and mdl_op_kind_name's) and return FALSE for anything else. */
const char *mdl_dim_role_name(MdlDimRole role);
gboolean mdl_dim_role_parse(const char *text, MdlDimRole *out);
gboolean mdl_op_kind_parse(const char *text, MdlOpKind *out);
/* Product of @n sizes into @out; FALSE when a size is < 1 or the product exceeds
 * MDL_MAX_ELEMENTS (checked step by step, so nothing overflows). */
gboolean mdl_size_product(int n, const int64_t *sizes, int64_t *out);

/* --- costs --- */
/* "matmul", "batch_matmul", "conv2d", "pool2d", "elementwise", "layernorm", "softmax",
 * "embedding", "loss". */
const char *mdl_op_kind_name(MdlOpKind kind);
/* Forward FLOPs of @op with every dim at its global size, from its kind and dims (2 per
 * multiply-add; per-element constants for the other kinds are stated in mdl_graph.c). */
double mdl_op_forward_flops(const MdlOp *op);
/* Backward FLOPs: contractions cost one forward per operand that needs a gradient (dX for
 * activations that are not data inputs, dW for weights); other ops a kind-specific factor. */
double mdl_op_backward_flops(const MdlGraph *graph, const MdlOp *op);
/* Whether operand tensor @t needs a gradient (a weight, or an activation that is not input). */
gboolean mdl_tensor_needs_grad(const MdlGraph *graph, int t);
/* Element count of a tensor (global). */
double mdl_tensor_elements(const MdlGraph *graph, int t);
/* Total trained parameters (elements of weight tensors). */
double mdl_graph_num_params(const MdlGraph *graph);
/* Sum of forward + backward FLOPs of the whole graph at the global batch. */
double mdl_graph_train_flops(const MdlGraph *graph);

/* --- the zoo and the CLI spec --- */
/* Parses a model spec: a built-in NAME ("gpt3-1.3b", "alexnet", ...), a parameterised
 * FAMILY:key=value,... ("gpt:layers=..", "mlp:layers=L,hidden=H,batch=B"), NAME:key=value
 * (overrides on a named size, e.g. "gpt3-1.3b:batch=64"), or a path (a spec containing '/' or
 * ending in ".json") to a JSON graph or to a Hugging Face config.json of a Llama, Mistral or
 * Qwen2 model ("dir/config.json:batch=B,seq=S", overrides after ".json:"). The graph is
 * validated; free with mdl_graph_free.
 * Errors: MDL_ERROR_UNKNOWN_MODEL (the message lists the known names); MDL_ERROR_PARSE (no
 * key=value, an unknown or repeated key, an unreadable file); MDL_ERROR_INVALID (a zero,
 * negative, non-numeric or overflowing value, heads not dividing hidden, layers > 100000, a
 * tensor or op over MDL_MAX_ELEMENTS: all rejected before the graph is built; a JSON file over
 * MDL_MAX_JSON_BYTES, before it is read). */
MdlGraph *mdl_graph_parse_spec(const char *spec, GError **error);
/* Loads a JSON graph (format in model/README.md); @origin (a path) names it in errors and is
 * its name when the JSON has none. Validates before returning; free with mdl_graph_free. */
MdlGraph *mdl_graph_from_json(const char *json_text, const char *origin, GError **error);
/* Largest model or strategy JSON file read (README, "Limits"): a JSON parse takes several
 * times the text in memory, and 256 MiB is some 500 000 ops. */
#define MDL_MAX_JSON_BYTES (INT64_C(256) << 20)
/* Reads the model or strategy file @path (@what names it in errors: "model file") into @text
 * (caller g_free()s). FALSE with MDL_ERROR_PARSE (unreadable) or MDL_ERROR_INVALID (larger than
 * MDL_MAX_JSON_BYTES, refused before it is read). */
gboolean mdl_read_json_file(const char *what, const char *path, char **text, GError **error);
/* Writes @graph in that format (any graph, zoo models included); the caller g_free()s it. */
char *mdl_graph_to_json(const MdlGraph *graph);
/* Built-in model names (NULL-terminated, static) and a one-line description of each. */
const char *const *mdl_zoo_names(void);
const char *mdl_zoo_describe(const char *name);

G_END_DECLS

#endif
