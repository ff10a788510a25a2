/* model/graph — the operator-graph IR: building, validation, FLOPs and parameter counts.
 *
 * Invariants after mdl_graph_validate (the contract is in mdl_graph.h): ops are in topological
 * order, each op has one SAMPLE dim of size graph->batch, every operand map is consistent with
 * its tensor's shape, and every size product fits in MDL_MAX_ELEMENTS, so FLOP and element
 * counts can be taken in doubles without further checks.
 *
 * FLOP constants (per element, forward; 2 FLOPs per multiply-add throughout):
 *  - MATMUL, BATCH_MATMUL: 2 x the product of all dims (the einsum iteration space).
 *  - CONV2D: 2 x the product of all dims x kernel_elems (kh*kw is an op constant).
 *  - EMBEDDING: 0 (a lookup copies rows; it is a one-hot contraction only in its layout).
 *  - ELEMENTWISE: flops_per_element x output elements (default 1: an add; the zoo sets GELU 8).
 *  - LAYERNORM: 8 per element: mean (1 add), variance (sub, mul, add), normalise (sub, mul by
 *    the reciprocal std), scale and shift (mul, add).
 *  - SOFTMAX: 5 per element: max (compare), subtract, exp, sum (add), divide.
 *  - LOSS: 5 per logit: the log-softmax above with the label pick folded in.
 *  - POOL2D: kernel_elems per output element (one compare or add per window element).
 * Backward (mdl_op_backward_flops): a contraction costs one forward per operand that needs a
 * gradient (dX = dY W^T and dW = X^T dY have the forward's iteration space); the embedding's
 * backward is a scatter-add of dY into the table rows, 1 FLOP per output element; every other
 * kind costs 2 x forward (it reads dY and the saved input and recomputes the per-element
 * terms to write dX). An op none of whose inputs needs a gradient has no backward work.
 */
#include "model/mdl_graph.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

G_DEFINE_QUARK(mdl-error-quark, mdl_error)

static const char *const kind_names[MDL_OP_KIND_COUNT] = {
    "matmul", "batch_matmul", "conv2d", "pool2d", "elementwise",
    "layernorm", "softmax", "embedding", "loss",
};
static const char *const role_names[] = {"sample", "attribute", "parameter", "reduction"};

static void clear_op(gpointer data) { g_free(((MdlOp *)data)->name); }
static void clear_tensor(gpointer data) { g_free(((MdlTensor *)data)->name); }

MdlGraph *mdl_graph_new(const char *name, const char *family, int64_t batch) {
  MdlGraph *g = g_new0(MdlGraph, 1);
  g->name = g_strdup(name ? name : "");
  g->family = g_strdup(family ? family : "json");
  g->ops = g_array_new(FALSE, TRUE, sizeof(MdlOp));
  g_array_set_clear_func(g->ops, clear_op);
  g->tensors = g_array_new(FALSE, TRUE, sizeof(MdlTensor));
  g_array_set_clear_func(g->tensors, clear_tensor);
  g->batch = batch;
  g->default_dtype = DEV_DTYPE_FP32;
  g->seq = 1;
  return g;
}

void mdl_graph_free(MdlGraph *graph) {
  if (!graph) return;
  g_array_unref(graph->ops);
  g_array_unref(graph->tensors);
  g_free(graph->name);
  g_free(graph->family);
  g_free(graph);
}

int mdl_graph_add_tensor(MdlGraph *graph, const char *name, int ndims, const int64_t *shape,
                         gboolean is_weight, gboolean is_input) {
  g_return_val_if_fail(graph && name && ndims >= 0 && ndims <= MDL_MAX_DIMS, -1);
  g_return_val_if_fail(ndims == 0 || shape, -1);
  MdlTensor t;
  memset(&t, 0, sizeof t);
  t.name = g_strdup(name);
  t.ndims = ndims;
  for (int i = 0; i < ndims; i++) t.shape[i] = shape[i];
  t.is_weight = is_weight;
  t.is_input = is_input;
  t.producer = -1;
  g_array_append_val(graph->tensors, t);
  return (int)graph->tensors->len - 1;
}

/* Resets map entries a tensor does not have to -1, so that scans over MDL_MAX_DIMS entries
 * (as the layout code does) never see a stray 0. */
static void normalise_operand(const MdlGraph *graph, MdlOperand *opd) {
  int ndims = 0;
  if (opd->tensor >= 0 && opd->tensor < mdl_graph_num_tensors(graph))
    ndims = mdl_graph_tensor(graph, opd->tensor)->ndims;
  for (int i = ndims; i < MDL_MAX_DIMS; i++) opd->dim_map[i] = -1;
}

int mdl_graph_add_op(MdlGraph *graph, const MdlOp *op) {
  g_return_val_if_fail(graph && op && op->name, -1);
  g_return_val_if_fail(op->ninputs >= 0 && op->ninputs <= MDL_MAX_INPUTS, -1);
  MdlOp copy = *op;
  copy.name = g_strdup(op->name);
  for (int k = 0; k < MDL_MAX_INPUTS; k++) {
    if (k >= copy.ninputs) copy.inputs[k].tensor = -1;
    normalise_operand(graph, &copy.inputs[k]);
  }
  normalise_operand(graph, &copy.output);
  copy.unsaved_inputs &= (uint8_t)((1u << copy.ninputs) - 1);
  if (copy.flops == 0) copy.flops = mdl_op_forward_flops(&copy);
  int index = (int)graph->ops->len;
  g_array_append_val(graph->ops, copy);
  int out = copy.output.tensor;
  if (out >= 0 && out < mdl_graph_num_tensors(graph) && mdl_graph_tensor(graph, out)->producer < 0)
    mdl_graph_tensor(graph, out)->producer = index; /* a second producer is left to validate */
  return index;
}

int mdl_op_find_dim(const MdlOp *op, const char *name) {
  g_return_val_if_fail(op && name, -1);
  for (int d = 0; d < op->ndims && d < MDL_MAX_DIMS; d++) /* (first letters first: a search's
                                                             builders ask per op and point) */
    if (op->dims[d].name[0] == name[0] && strcmp(op->dims[d].name, name) == 0) return d;
  return -1;
}

int mdl_op_sample_dim(const MdlOp *op) {
  g_return_val_if_fail(op, -1);
  for (int d = 0; d < op->ndims && d < MDL_MAX_DIMS; d++)
    if (op->dims[d].role == MDL_ROLE_SAMPLE) return d;
  return -1;
}

const char *mdl_op_kind_name(MdlOpKind kind) {
  return (unsigned)kind < MDL_OP_KIND_COUNT ? kind_names[kind] : "unknown";
}

gboolean mdl_op_kind_parse(const char *text, MdlOpKind *out) {
  for (int k = 0; text && k < MDL_OP_KIND_COUNT; k++)
    if (strcmp(text, kind_names[k]) == 0) {
      *out = (MdlOpKind)k;
      return TRUE;
    }
  return FALSE;
}

const char *mdl_dim_role_name(MdlDimRole role) {
  return (unsigned)role < G_N_ELEMENTS(role_names) ? role_names[role] : "unknown";
}

gboolean mdl_dim_role_parse(const char *text, MdlDimRole *out) {
  for (guint r = 0; text && r < G_N_ELEMENTS(role_names); r++)
    if (strcmp(text, role_names[r]) == 0) {
      *out = (MdlDimRole)r;
      return TRUE;
    }
  return FALSE;
}

gboolean mdl_size_product(int n, const int64_t *sizes, int64_t *out) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) {
    if (sizes[i] < 1 || __builtin_mul_overflow(p, sizes[i], &p) || p > MDL_MAX_ELEMENTS) return FALSE;
  }
  *out = p;
  return TRUE;
}

/* --- costs --- */

static double dims_product(const MdlOp *op) {
  double p = 1.0;
  for (int d = 0; d < op->ndims; d++) p *= (double)op->dims[d].size;
  return p;
}

static double kernel_area(const MdlOp *op) {
  return op->kernel_elems > 0 ? (double)op->kernel_elems : 1.0;
}

double mdl_op_forward_flops(const MdlOp *op) {
  g_return_val_if_fail(op, 0.0);
  double points = dims_product(op);
  switch (op->kind) {
  case MDL_OP_MATMUL:
  case MDL_OP_BATCH_MATMUL: return 2.0 * points;
  case MDL_OP_CONV2D: return 2.0 * points * kernel_area(op);
  case MDL_OP_EMBEDDING: return 0.0;
  case MDL_OP_ELEMENTWISE:
    return (op->flops_per_element > 0 ? op->flops_per_element : 1.0) * points;
  case MDL_OP_LAYERNORM: return 8.0 * points;
  case MDL_OP_SOFTMAX: return 5.0 * points;
  case MDL_OP_LOSS: return 5.0 * points;
  case MDL_OP_POOL2D: return kernel_area(op) * points;
  default: return 0.0;
  }
}

gboolean mdl_tensor_needs_grad(const MdlGraph *graph, int t) {
  g_return_val_if_fail(graph && t >= 0 && t < mdl_graph_num_tensors(graph), FALSE);
  const MdlTensor *tensor = mdl_graph_tensor(graph, t);
  return tensor->is_weight || !tensor->is_input;
}

double mdl_op_backward_flops(const MdlGraph *graph, const MdlOp *op) {
  g_return_val_if_fail(graph && op, 0.0);
  int grads = 0;
  for (int k = 0; k < op->ninputs; k++)
    if (mdl_tensor_needs_grad(graph, op->inputs[k].tensor)) grads++;
  if (grads == 0) return 0.0;
  switch (op->kind) {
  case MDL_OP_MATMUL:
  case MDL_OP_BATCH_MATMUL:
  case MDL_OP_CONV2D: return op->flops * grads;
  case MDL_OP_EMBEDDING: return mdl_tensor_elements(graph, op->output.tensor);
  default: return 2.0 * op->flops;
  }
}

double mdl_tensor_elements(const MdlGraph *graph, int t) {
  g_return_val_if_fail(graph && t >= 0 && t < mdl_graph_num_tensors(graph), 0.0);
  const MdlTensor *tensor = mdl_graph_tensor(graph, t);
  double n = 1.0;
  for (int i = 0; i < tensor->ndims; i++) n *= (double)tensor->shape[i];
  return n;
}

int mdl_op_layer(const char *name) {
  if (!name || !g_str_has_prefix(name, "layer")) return -1;
  char *end = NULL;
  long n = strtol(name + 5, &end, 10);
  return end != name + 5 && *end == '.' && n >= 0 && n < G_MAXINT ? (int)n : -1;
}

double mdl_graph_num_params(const MdlGraph *graph) {
  g_return_val_if_fail(graph, 0.0);
  double n = 0.0;
  for (int t = 0; t < mdl_graph_num_tensors(graph); t++)
    if (mdl_graph_tensor(graph, t)->is_weight) n += mdl_tensor_elements(graph, t);
  return n;
}

double mdl_graph_train_flops(const MdlGraph *graph) {
  g_return_val_if_fail(graph, 0.0);
  double n = 0.0;
  for (int o = 0; o < mdl_graph_num_ops(graph); o++) {
    const MdlOp *op = mdl_graph_op(graph, o);
    n += op->flops + mdl_op_backward_flops(graph, op);
  }
  return n;
}

/* --- validation --- */

G_GNUC_PRINTF(2, 3)
static gboolean invalid(GError **error, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error_literal(error, MDL_ERROR, MDL_ERROR_INVALID, msg);
  return FALSE;
}
#define INVALID(...) invalid(error, __VA_ARGS__)

static gboolean validate_tensor(const MdlGraph *g, int t, GHashTable *names, GError **error) {
  const MdlTensor *tensor = mdl_graph_tensor(g, t);
  if (!tensor->name || !*tensor->name) return INVALID("tensor %d has an empty name", t);
  if (!g_hash_table_add(names, tensor->name))
    return INVALID("tensor name \"%s\" is used twice", tensor->name);
  if (tensor->ndims < 1 || tensor->ndims > MDL_MAX_DIMS)
    return INVALID("tensor %s: %d dims (1 to %d allowed)", tensor->name, tensor->ndims, MDL_MAX_DIMS);
  for (int i = 0; i < tensor->ndims; i++)
    if (tensor->shape[i] < 1)
      return INVALID("tensor %s: dim %d has size %" G_GINT64_FORMAT " (must be positive)",
                     tensor->name, i, (gint64)tensor->shape[i]);
  int64_t elements;
  if (!mdl_size_product(tensor->ndims, tensor->shape, &elements))
    return INVALID("tensor %s has more than 2^62 elements", tensor->name);
  if (tensor->is_weight && tensor->is_input)
    return INVALID("tensor %s is marked both weight and input", tensor->name);
  return TRUE;
}

static gboolean validate_dims(const MdlGraph *g, const MdlOp *op, GError **error) {
  if (op->ndims < 1 || op->ndims > MDL_MAX_DIMS)
    return INVALID("op %s: %d dims (1 to %d allowed)", op->name, op->ndims, MDL_MAX_DIMS);
  int samples = 0;
  int64_t sizes[MDL_MAX_DIMS];
  for (int d = 0; d < op->ndims; d++) {
    const MdlDim *dim = &op->dims[d];
    if (!memchr(dim->name, '\0', MDL_NAME_LEN) || !dim->name[0])
      return INVALID("op %s: dim %d has an empty or unterminated name", op->name, d);
    for (int e = 0; e < d; e++)
      if (strcmp(op->dims[e].name, dim->name) == 0)
        return INVALID("op %s: dim name \"%s\" is used twice", op->name, dim->name);
    if ((unsigned)dim->role > MDL_ROLE_REDUCTION)
      return INVALID("op %s: dim %s has an invalid role %d", op->name, dim->name, (int)dim->role);
    if (dim->size < 1)
      return INVALID("op %s: dim %s has size %" G_GINT64_FORMAT " (must be positive)", op->name,
                     dim->name, (gint64)dim->size);
    samples += dim->role == MDL_ROLE_SAMPLE;
    sizes[d] = dim->size;
  }
  if (samples != 1) return INVALID("op %s has %d sample dims (exactly one needed)", op->name, samples);
  const MdlDim *sample = &op->dims[mdl_op_sample_dim(op)];
  if (sample->size != g->batch)
    return INVALID("op %s: sample dim %s has size %" G_GINT64_FORMAT ", the graph's batch is %"
                   G_GINT64_FORMAT, op->name, sample->name, (gint64)sample->size, (gint64)g->batch);
  if (!sample->splittable) return INVALID("op %s: sample dim %s must be splittable", op->name, sample->name);
  int64_t points;
  if (!mdl_size_product(op->ndims, sizes, &points))
    return INVALID("op %s: its iteration space has more than 2^62 points", op->name);
  if (op->tp_dim < -1 || op->tp_dim >= op->ndims)
    return INVALID("op %s: tp_dim %d is not one of its %d dims", op->name, op->tp_dim, op->ndims);
  if (op->tp_dim >= 0 && !op->dims[op->tp_dim].splittable)
    return INVALID("op %s: tp_dim %s is not splittable", op->name, op->dims[op->tp_dim].name);
  if (!(op->flops >= 0) || !isfinite(op->flops))
    return INVALID("op %s: flops %g must be finite and non-negative", op->name, op->flops);
  if (op->kernel_elems < 0) return INVALID("op %s: negative kernel_elems", op->name);
  if (!(op->flops_per_element >= 0) || !isfinite(op->flops_per_element))
    return INVALID("op %s: flops_per_element must be finite and non-negative", op->name);
  if (op->layer < -1 || (g->num_layers > 0 && op->layer >= g->num_layers))
    return INVALID("op %s: layer %d outside -1..%d", op->name, op->layer, g->num_layers - 1);
  return TRUE;
}

/* Checks operand @k of @op (-1: the output); @sample_tdim records, per tensor, which tensor dim
 * the sample dim indexes (-2: not seen yet) so that every use of a tensor agrees. */
static gboolean validate_operand(const MdlGraph *g, const MdlOp *op, int k, int *sample_tdim,
                                 GError **error) {
  gboolean is_output = k < 0;
  const MdlOperand *opd = is_output ? &op->output : &op->inputs[k];
  char what[32];
  if (is_output) g_strlcpy(what, "output", sizeof what);
  else g_snprintf(what, sizeof what, "input %d", k);
  if (opd->tensor < 0 || opd->tensor >= mdl_graph_num_tensors(g))
    return INVALID("op %s: %s refers to tensor %d (the graph has %d)", op->name, what, opd->tensor,
                   mdl_graph_num_tensors(g));
  const MdlTensor *t = mdl_graph_tensor(g, opd->tensor);
  gboolean spatial_window = !is_output && (op->kind == MDL_OP_CONV2D || op->kind == MDL_OP_POOL2D);
  /* An elementwise gather reads its inputs through a token routing (the MoE dispatch and
   * combine, model/mdl_zoo_moe.c): a split of the op dim reads the proportional slice. */
  gboolean gather = !is_output && op->kind == MDL_OP_ELEMENTWISE && op->gather;
  int sd = mdl_op_sample_dim(op), sample_at = -1;
  for (int i = 0; i < MDL_MAX_DIMS; i++) {
    int d = opd->dim_map[i];
    if (i >= t->ndims) {
      if (d != -1) return INVALID("op %s: %s (tensor %s) maps dim %d, past its %d dims", op->name,
                                  what, t->name, i, t->ndims);
      continue;
    }
    if (d == -1) continue;
    if (d < 0 || d >= op->ndims)
      return INVALID("op %s: %s (tensor %s) dim %d maps to op dim %d (the op has %d)", op->name,
                     what, t->name, i, d, op->ndims);
    for (int j = 0; j < i; j++)
      if (opd->dim_map[j] == d)
        return INVALID("op %s: %s (tensor %s) maps op dim %s to two tensor dims", op->name, what,
                       t->name, op->dims[d].name);
    const MdlDim *dim = &op->dims[d];
    int64_t size = t->shape[i];
    gboolean ok = size == dim->size ||
                  (dim->role != MDL_ROLE_SAMPLE && size % dim->size == 0) ||
                  ((spatial_window || gather) && dim->role == MDL_ROLE_ATTRIBUTE);
    if (!ok)
      return INVALID("op %s: %s (tensor %s) dim %d has size %" G_GINT64_FORMAT
                     ", neither op dim %s's size %" G_GINT64_FORMAT " nor a multiple of it",
                     op->name, what, t->name, i, (gint64)size, dim->name, (gint64)dim->size);
    if (is_output && dim->role == MDL_ROLE_REDUCTION)
      return INVALID("op %s: output (tensor %s) is indexed by reduction dim %s", op->name, t->name,
                     dim->name);
    if (d == sd) sample_at = i;
  }
  if (t->is_weight) {
    if (sample_at >= 0)
      return INVALID("op %s: weight %s is indexed by the sample dim", op->name, t->name);
    return TRUE;
  }
  if (sample_at < 0)
    return INVALID("op %s: %s (tensor %s) is not indexed by the sample dim %s", op->name, what,
                   t->name, op->dims[sd].name);
  if (sample_tdim[opd->tensor] == -2) sample_tdim[opd->tensor] = sample_at;
  else if (sample_tdim[opd->tensor] != sample_at)
    return INVALID("op %s: tensor %s has its sample dim at dim %d here and at dim %d elsewhere",
                   op->name, t->name, sample_at, sample_tdim[opd->tensor]);
  return TRUE;
}

static gboolean validate_op(const MdlGraph *g, int o, int *producer, int *sample_tdim,
                            GHashTable *names, GError **error) {
  const MdlOp *op = mdl_graph_op(g, o);
  if (!op->name || !*op->name) return INVALID("op %d has an empty name", o);
  if (!g_hash_table_add(names, op->name)) return INVALID("op name \"%s\" is used twice", op->name);
  if ((unsigned)op->kind >= MDL_OP_KIND_COUNT) return INVALID("op %s: invalid kind %d", op->name, (int)op->kind);
  if (!validate_dims(g, op, error)) return FALSE;
  if (op->ninputs < 1 || op->ninputs > MDL_MAX_INPUTS)
    return INVALID("op %s: %d inputs (1 to %d allowed)", op->name, op->ninputs, MDL_MAX_INPUTS);
  for (int k = 0; k < op->ninputs; k++) {
    if (!validate_operand(g, op, k, sample_tdim, error)) return FALSE;
    const MdlTensor *t = mdl_graph_tensor(g, op->inputs[k].tensor);
    if (t->is_weight || t->is_input) continue;
    int p = producer[op->inputs[k].tensor];
    if (p == o) return INVALID("op %s reads its own output %s (a cycle)", op->name, t->name);
    if (p < 0 || p > o)
      return INVALID("op %s: input %s is not produced by an earlier op (ops must be in topological "
                     "order; cycles are not allowed)", op->name, t->name);
  }
  if (!validate_operand(g, op, -1, sample_tdim, error)) return FALSE;
  const MdlTensor *out = mdl_graph_tensor(g, op->output.tensor);
  if (out->is_weight || out->is_input)
    return INVALID("op %s writes %s, which is a %s", op->name, out->name,
                   out->is_weight ? "weight" : "data input");
  return TRUE;
}

gboolean mdl_graph_validate(const MdlGraph *graph, GError **error) {
  g_return_val_if_fail(graph, FALSE);
  const MdlGraph *g = graph;
  int nt = mdl_graph_num_tensors(g), no = mdl_graph_num_ops(g);
  if (!g->name || !*g->name) return INVALID("the graph has an empty name");
  if (g->batch < 1) return INVALID("graph %s: batch %" G_GINT64_FORMAT " must be positive", g->name, (gint64)g->batch);
  if (g->num_layers < 0 || g->heads < 0 || g->seq < 1)
    return INVALID("graph %s: num_layers, heads must be >= 0 and seq >= 1", g->name);
  if ((unsigned)g->default_dtype >= DEV_DTYPE_COUNT) return INVALID("graph %s: invalid dtype", g->name);
  if (no == 0) return INVALID("graph %s has no ops", g->name);
  if (no > MDL_MAX_OPS || nt > MDL_MAX_TENSORS)
    return INVALID("graph %s: %d ops and %d tensors exceed the limits of %d ops and %d tensors",
                   g->name, no, nt, MDL_MAX_OPS, MDL_MAX_TENSORS);
  gboolean ok = FALSE;
  int *producer = g_new(int, nt ? nt : 1), *sample_tdim = g_new(int, nt ? nt : 1);
  GHashTable *names = g_hash_table_new(g_str_hash, g_str_equal);
  for (int t = 0; t < nt; t++) {
    producer[t] = -1;
    sample_tdim[t] = -2;
    if (!validate_tensor(g, t, names, error)) goto out;
  }
  /* Producers first, so that a forward reference is told apart from a missing producer. */
  for (int o = 0; o < no; o++) {
    const MdlOp *op = mdl_graph_op(g, o);
    int t = op->output.tensor;
    if (t < 0 || t >= nt) continue; /* reported by validate_op */
    if (producer[t] >= 0) {
      INVALID("tensor %s is produced twice, by ops %s and %s", mdl_graph_tensor(g, t)->name,
              mdl_graph_op(g, producer[t])->name, op->name);
      goto out;
    }
    producer[t] = o;
  }
  g_hash_table_remove_all(names);
  for (int o = 0; o < no; o++)
    if (!validate_op(g, o, producer, sample_tdim, names, error)) goto out;
  for (int t = 0; t < nt; t++) {
    const MdlTensor *tensor = mdl_graph_tensor(g, t);
    if (tensor->producer != producer[t]) {
      INVALID("tensor %s: producer field %d, but op %d writes it", tensor->name, tensor->producer,
              producer[t]);
      goto out;
    }
    if (!tensor->is_weight && !tensor->is_input && producer[t] < 0) {
      INVALID("tensor %s is neither a weight nor a data input, and no op produces it", tensor->name);
      goto out;
    }
  }
  ok = TRUE;
out:
  g_hash_table_unref(names);
  g_free(producer);
  g_free(sample_tdim);
  return ok;
}
