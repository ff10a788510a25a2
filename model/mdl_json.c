/* model/json — the JSON graph format (documented with an example in model/README.md):
 *   {"name", "batch", "dtype", ["family", "num_layers", "heads", "seq"],
 *    "tensors": [{"name", "shape": [...], "weight": bool, "input": bool}],
 *    "ops": [{"name", "kind", "dims": [{"name", "size", "role", "splittable"}],
 *             "inputs": [{"tensor", "dims": [op dim name or null, ...], ["saved"]}],
 *             "output": {...}, ["tp_dim", "layer", "flops", "kernel_elems",
 *             "flops_per_element", "dropout", "attention_core", "gather"]}]}
 * Reading checks types and references first (every error names the op or tensor and the
 * field), rejects forward references and cycles by name, then builds the graph with the IR
 * functions and runs mdl_graph_validate. Writing emits every field the reader takes, "flops"
 * only where it differs from what mdl_op_forward_flops computes, so zoo graphs round-trip.
 */
#include "model/mdl_graph.h"
#include "model/mdl_json_count.h"
#include "util/util_json.h"

#include <cjson/cJSON.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

static const char *const dtype_names[DEV_DTYPE_COUNT] = {"fp32", "tf32", "fp16", "bf16", "fp8"};

/* Local twins of dev_dtype_name/parse, so the model module does not link devices/. */
static const char *dtype_name(DevDtype d) {
  return (unsigned)d < DEV_DTYPE_COUNT ? dtype_names[d] : "fp32";
}
static gboolean dtype_parse(const char *text, DevDtype *out) {
  for (int d = 0; text && d < DEV_DTYPE_COUNT; d++)
    if (strcmp(text, dtype_names[d]) == 0) return (*out = (DevDtype)d), TRUE;
  return FALSE;
}

typedef struct {
  const char *origin;
  GError **error;
  GHashTable *tensor_index; /* tensor name -> index + 1 (names borrowed from the graph) */
  const char **op_names;    /* per op of the JSON, its "name" (NULL when missing) */
  int *producer;            /* per tensor, the index of the op that outputs it, -1 none */
} Reader;

G_GNUC_PRINTF(3, 4)
static gboolean fail(Reader *r, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(r->error, MDL_ERROR, code, "%s: %s", r->origin, msg);
  return FALSE;
}
/* Codes as in devices/: a missing or ill-typed field is a parse error; a value out of range,
 * a bad reference, a cycle is invalid. */
#define BAD(...) fail(r, MDL_ERROR_INVALID, __VA_ARGS__)
#define MALFORMED(...) fail(r, MDL_ERROR_PARSE, __VA_ARGS__)

static const cJSON *field(const cJSON *obj, const char *key) {
  return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* An integer field in [lo, MDL_MAX_ELEMENTS]; absent: @def, or an error when @required. */
static gboolean get_int(Reader *r, const cJSON *obj, const char *key, gboolean required,
                        int64_t def, int64_t lo, const char *where, int64_t *out) {
  gint64 v = def;
  *out = def; /* set on every path (GCC 12 -O3 cannot tell through the switch) */
  switch (util_json_int(obj, key, lo, MDL_MAX_ELEMENTS, &v)) {
  case UTIL_JSON_MISSING:
    if (required) return MALFORMED("%s: missing \"%s\"", where, key);
    break;
  case UTIL_JSON_WRONG_TYPE: return MALFORMED("%s: \"%s\" must be a number", where, key);
  case UTIL_JSON_OUT_OF_RANGE:
    return BAD("%s: \"%s\" must be an integer >= %" G_GINT64_FORMAT, where, key, (gint64)lo);
  case UTIL_JSON_OK: break;
  }
  *out = v;
  return TRUE;
}

static gboolean get_bool(Reader *r, const cJSON *obj, const char *key, gboolean def,
                         const char *where, gboolean *out) {
  *out = def;
  if (util_json_bool(obj, key, out) == UTIL_JSON_WRONG_TYPE)
    return MALFORMED("%s: \"%s\" must be true or false", where, key);
  return TRUE;
}

static const char *get_string(Reader *r, const cJSON *obj, const char *key, const char *where) {
  const char *s = NULL;
  if (util_json_string(obj, key, TRUE, &s) != UTIL_JSON_OK)
    MALFORMED("%s: missing or empty string \"%s\"", where, key);
  return s;
}

static int find_tensor(const Reader *r, const char *name) {
  return GPOINTER_TO_INT(g_hash_table_lookup(r->tensor_index, name)) - 1;
}

static gboolean read_tensor(Reader *r, MdlGraph *g, const cJSON *tj, int index) {
  char where[64];
  g_snprintf(where, sizeof where, "tensors[%d]", index);
  if (!cJSON_IsObject(tj)) return MALFORMED("%s must be an object", where);
  const char *name = get_string(r, tj, "name", where);
  if (!name) return FALSE;
  g_autofree char *what = g_strdup_printf("tensor %s", name);
  if (find_tensor(r, name) >= 0) return BAD("%s is defined twice", what);
  const cJSON *shape = field(tj, "shape");
  int n = cJSON_IsArray(shape) ? cJSON_GetArraySize(shape) : -1;
  if (n < 1 || n > MDL_MAX_DIMS)
    return MALFORMED("%s: \"shape\" must be an array of 1 to %d sizes", what, MDL_MAX_DIMS);
  int64_t dims[MDL_MAX_DIMS];
  for (int i = 0; i < n; i++) {
    gint64 d = 0;
    UtilJsonStatus status = util_json_int_value(cJSON_GetArrayItem(shape, i), 1, MDL_MAX_ELEMENTS, &d);
    if (status == UTIL_JSON_WRONG_TYPE) return MALFORMED("%s: shape[%d] must be a number", what, i);
    if (status != UTIL_JSON_OK) return BAD("%s: shape[%d] must be a positive integer", what, i);
    dims[i] = d;
  }
  gboolean weight = FALSE, input = FALSE;
  if (!get_bool(r, tj, "weight", FALSE, what, &weight) || !get_bool(r, tj, "input", FALSE, what, &input))
    return FALSE;
  int t = mdl_graph_add_tensor(g, name, n, dims, weight, input);
  g_hash_table_insert(r->tensor_index, mdl_graph_tensor(g, t)->name, GINT_TO_POINTER(t + 1));
  return TRUE;
}

static gboolean read_dims(Reader *r, MdlOp *op, const cJSON *dj, const char *what) {
  int n = cJSON_IsArray(dj) ? cJSON_GetArraySize(dj) : -1;
  if (n < 1 || n > MDL_MAX_DIMS) return MALFORMED("%s: \"dims\" must be an array of 1 to %d dims", what, MDL_MAX_DIMS);
  op->ndims = n;
  for (int d = 0; d < n; d++) {
    const cJSON *e = cJSON_GetArrayItem(dj, d);
    char where[96];
    g_snprintf(where, sizeof where, "%s: dims[%d]", what, d);
    if (!cJSON_IsObject(e)) return MALFORMED("%s must be an object", where);
    const char *name = get_string(r, e, "name", where);
    if (!name) return FALSE;
    if (strlen(name) >= MDL_NAME_LEN)
      return BAD("%s: dim name \"%s\" is longer than %d characters", what, name, MDL_NAME_LEN - 1);
    g_strlcpy(op->dims[d].name, name, MDL_NAME_LEN);
    if (!get_int(r, e, "size", TRUE, 0, 1, where, &op->dims[d].size)) return FALSE;
    const char *role = get_string(r, e, "role", where);
    if (!role) return FALSE;
    if (!mdl_dim_role_parse(role, &op->dims[d].role))
      return BAD("%s: role \"%s\" is not sample, attribute, parameter or reduction", where, role);
    if (!get_bool(r, e, "splittable", TRUE, where, &op->dims[d].splittable)) return FALSE;
  }
  return TRUE;
}

/* Reads operand @k (-1: the output) of op @o; checks the order here, so that the error names
 * the ops. */
static gboolean read_operand(Reader *r, const MdlGraph *g, MdlOp *op, const cJSON *oj, int o, int k) {
  gboolean is_output = k < 0;
  MdlOperand *opd = is_output ? &op->output : &op->inputs[k];
  char where[96];
  if (is_output) g_snprintf(where, sizeof where, "op %s: output", op->name);
  else g_snprintf(where, sizeof where, "op %s: inputs[%d]", op->name, k);
  if (!cJSON_IsObject(oj)) return MALFORMED("%s must be an object {\"tensor\", \"dims\"}", where);
  const char *tname = get_string(r, oj, "tensor", where);
  if (!tname) return FALSE;
  int t = find_tensor(r, tname);
  if (t < 0) return BAD("%s: unknown tensor \"%s\"", where, tname);
  const MdlTensor *tensor = mdl_graph_tensor(g, t);
  if (!is_output && !tensor->is_weight && !tensor->is_input) {
    int p = r->producer[t];
    if (p == o) return BAD("op %s reads its own output %s (a cycle)", op->name, tname);
    if (p < 0)
      return BAD("%s: tensor %s is neither a weight nor an input and no op produces it", where, tname);
    if (p > o) {
      return BAD("%s: tensor %s is produced by a later op (%s); ops must be listed in topological "
                 "order, cycles are not allowed", where, tname, r->op_names[p] ? r->op_names[p] : "?");
    }
  }
  const cJSON *dims = field(oj, "dims");
  if (!cJSON_IsArray(dims) || cJSON_GetArraySize(dims) != tensor->ndims)
    return BAD("%s: \"dims\" must list one op dim (or null) for each of tensor %s's %d dims", where,
               tname, tensor->ndims);
  opd->tensor = t;
  memset(opd->dim_map, -1, sizeof opd->dim_map);
  for (int i = 0; i < tensor->ndims; i++) {
    const cJSON *e = cJSON_GetArrayItem(dims, i);
    if (cJSON_IsNull(e)) continue;
    const char *name = cJSON_GetStringValue(e);
    if (!name) return MALFORMED("%s: dims[%d] must be an op dim name or null", where, i);
    int d = mdl_op_find_dim(op, name);
    if (d < 0) return BAD("%s: dims[%d] names \"%s\", which is not a dim of op %s", where, i, name, op->name);
    opd->dim_map[i] = (int8_t)d;
  }
  if (!is_output) {
    gboolean saved = TRUE;
    if (!get_bool(r, oj, "saved", TRUE, where, &saved)) return FALSE;
    if (!saved) op->unsaved_inputs |= (uint8_t)(1u << k);
  } else if (field(oj, "saved")) {
    return BAD("%s: \"saved\" applies to inputs only", where);
  }
  return TRUE;
}

static gboolean read_op(Reader *r, MdlGraph *g, const cJSON *oj, int o) {
  char where[64];
  g_snprintf(where, sizeof where, "ops[%d]", o);
  if (!cJSON_IsObject(oj)) return MALFORMED("%s must be an object", where);
  const char *name = get_string(r, oj, "name", where);
  if (!name) return FALSE;
  MdlOp op;
  memset(&op, 0, sizeof op);
  op.name = (char *)name;
  g_autofree char *what = g_strdup_printf("op %s", name);
  const char *kind = get_string(r, oj, "kind", what);
  if (!kind) return FALSE;
  if (!mdl_op_kind_parse(kind, &op.kind)) return BAD("%s: unknown kind \"%s\"", what, kind);
  if (!read_dims(r, &op, field(oj, "dims"), what)) return FALSE;
  const cJSON *inputs = field(oj, "inputs");
  int n = cJSON_IsArray(inputs) ? cJSON_GetArraySize(inputs) : -1;
  if (n < 1 || n > MDL_MAX_INPUTS)
    return MALFORMED("%s: \"inputs\" must be an array of 1 to %d operands", what, MDL_MAX_INPUTS);
  op.ninputs = n;
  int k = 0;
  for (const cJSON *ij = inputs->child; ij; ij = ij->next, k++)
    if (!read_operand(r, g, &op, ij, o, k)) return FALSE;
  if (!read_operand(r, g, &op, field(oj, "output"), o, -1)) return FALSE;
  const cJSON *tp = field(oj, "tp_dim");
  op.tp_dim = -1;
  if (tp && !cJSON_IsNull(tp)) {
    const char *dim = cJSON_GetStringValue(tp);
    if (!dim || (op.tp_dim = mdl_op_find_dim(&op, dim)) < 0)
      return BAD("%s: \"tp_dim\" must name one of its dims (or be null)", what);
  }
  int64_t layer, kernel;
  if (!get_int(r, oj, "layer", FALSE, -1, -1, what, &layer) ||
      !get_int(r, oj, "kernel_elems", FALSE, 0, 1, what, &kernel))
    return FALSE;
  op.layer = (int)MIN(layer, G_MAXINT);
  op.kernel_elems = kernel;
  const cJSON *fpe = field(oj, "flops_per_element"), *flops = field(oj, "flops");
  if (fpe && (!cJSON_IsNumber(fpe) || !(fpe->valuedouble >= 0) || !isfinite(fpe->valuedouble)))
    return BAD("%s: \"flops_per_element\" must be a non-negative number", what);
  if (fpe) op.flops_per_element = fpe->valuedouble;
  if (!get_bool(r, oj, "dropout", FALSE, what, &op.dropout) ||
      !get_bool(r, oj, "attention_core", FALSE, what, &op.attention_core) ||
      !get_bool(r, oj, "gather", FALSE, what, &op.gather))
    return FALSE;
  if (flops && (!cJSON_IsNumber(flops) || !(flops->valuedouble >= 0) || !isfinite(flops->valuedouble)))
    return BAD("%s: \"flops\" must be a non-negative number", what);
  int index = mdl_graph_add_op(g, &op);
  if (flops) mdl_graph_op(g, index)->flops = flops->valuedouble; /* an override, 0 included */
  return TRUE;
}

static gboolean read_graph(Reader *r, MdlGraph *g, const cJSON *root) {
  const char *dtype = cJSON_GetStringValue(field(root, "dtype"));
  if (field(root, "dtype") && !dtype_parse(dtype, &g->default_dtype))
    return BAD("\"dtype\" must be one of fp32, tf32, fp16, bf16, fp8");
  int64_t v;
  if (!get_int(r, root, "num_layers", FALSE, 0, 0, "graph", &v)) return FALSE;
  g->num_layers = (int)MIN(v, G_MAXINT);
  if (!get_int(r, root, "heads", FALSE, 0, 0, "graph", &v)) return FALSE;
  g->heads = (int)MIN(v, G_MAXINT);
  if (!get_int(r, root, "seq", FALSE, 1, 1, "graph", &g->seq)) return FALSE;
  const cJSON *tensors = field(root, "tensors"), *ops = field(root, "ops");
  if (!cJSON_IsArray(tensors)) return MALFORMED("missing array \"tensors\"");
  if (!cJSON_IsArray(ops) || cJSON_GetArraySize(ops) == 0) return MALFORMED("missing or empty array \"ops\"");
  /* Counted before anything is built: a huge graph is refused before it takes the memory. */
  if (cJSON_GetArraySize(ops) > MDL_MAX_OPS || cJSON_GetArraySize(tensors) > MDL_MAX_TENSORS)
    return BAD("%d ops and %d tensors exceed the limits of %d ops and %d tensors",
               cJSON_GetArraySize(ops), cJSON_GetArraySize(tensors), MDL_MAX_OPS, MDL_MAX_TENSORS);
  int i = 0;
  for (const cJSON *tj = tensors->child; tj; tj = tj->next, i++)
    if (!read_tensor(r, g, tj, i)) return FALSE;
  /* Producers by name first, so that a forward reference can be told from a missing producer. */
  int nt = mdl_graph_num_tensors(g), nops = cJSON_GetArraySize(ops), o = 0;
  g_autofree int *producer = g_new(int, nt ? nt : 1);
  g_autofree const char **op_names = g_new0(const char *, nops);
  for (int t = 0; t < nt; t++) producer[t] = -1;
  for (const cJSON *oj = ops->child; oj; oj = oj->next, o++) {
    op_names[o] = cJSON_GetStringValue(field(oj, "name"));
    const char *out = cJSON_GetStringValue(field(field(oj, "output"), "tensor"));
    int t = out ? find_tensor(r, out) : -1;
    if (t >= 0 && producer[t] < 0) producer[t] = o;
  }
  r->op_names = op_names;
  r->producer = producer;
  o = 0;
  for (const cJSON *oj = ops->child; oj; oj = oj->next, o++)
    if (!read_op(r, g, oj, o)) return FALSE;
  return TRUE;
}

MdlGraph *mdl_graph_from_json(const char *json_text, const char *origin, GError **error) {
  g_return_val_if_fail(json_text, NULL);
  Reader rd = {origin ? origin : "json", error, g_hash_table_new(g_str_hash, g_str_equal), NULL, NULL};
  Reader *r = &rd;
  MdlGraph *g = NULL;
  const char *at = NULL; /* the error position; cJSON_GetErrorPtr would read a global */
  /* Counted before cJSON builds its tree: a hostile count is refused in a byte scan. */
  cJSON *root = NULL;
  if (!mdl_json_count_text(json_text, rd.origin, error)) goto out;
  root = cJSON_ParseWithOpts(json_text, &at, FALSE);
  if (!root) {
    int line = 1;
    for (const char *p = json_text; at && p < at && *p; p++) line += *p == '\n';
    char near[24];
    gsize n = 0;
    for (; at && *at && n + 1 < sizeof near; at++) {
      char c = g_ascii_isspace(*at) ? ' ' : *at;
      if (c == ' ' && (n == 0 || near[n - 1] == ' ')) continue; /* one line, spaces squeezed */
      near[n++] = c;
    }
    near[n] = '\0';
    fail(r, MDL_ERROR_PARSE, "malformed JSON at line %d, near \"%s\"", line, near);
    goto out;
  }
  if (!cJSON_IsObject(root)) {
    fail(r, MDL_ERROR_PARSE, "the top level must be an object");
    goto out;
  }
  int64_t batch;
  if (!get_int(r, root, "batch", TRUE, 0, 1, "graph", &batch)) goto out;
  const char *name = cJSON_GetStringValue(field(root, "name"));
  const char *family = cJSON_GetStringValue(field(root, "family"));
  g = mdl_graph_new(name && *name ? name : rd.origin, family && *family ? family : "json", batch);
  GError *invalid = NULL;
  if (!read_graph(r, g, root)) {
    mdl_graph_free(g);
    g = NULL;
  } else if (!mdl_graph_validate(g, &invalid)) {
    g_propagate_prefixed_error(error, invalid, "%s: ", rd.origin);
    mdl_graph_free(g);
    g = NULL;
  }
out:
  g_hash_table_unref(rd.tensor_index);
  cJSON_Delete(root);
  return g;
}

/* --- writing --- */

static cJSON *operand_to_json(const MdlGraph *g, const MdlOp *op, const MdlOperand *opd) {
  const MdlTensor *t = mdl_graph_tensor(g, opd->tensor);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "tensor", t->name);
  cJSON *dims = cJSON_AddArrayToObject(o, "dims");
  for (int i = 0; i < t->ndims; i++) {
    int d = opd->dim_map[i];
    cJSON_AddItemToArray(dims, d >= 0 ? cJSON_CreateString(op->dims[d].name) : cJSON_CreateNull());
  }
  return o;
}

static cJSON *op_to_json(const MdlGraph *g, const MdlOp *op) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", op->name);
  cJSON_AddStringToObject(o, "kind", mdl_op_kind_name(op->kind));
  if (op->layer >= 0) cJSON_AddNumberToObject(o, "layer", op->layer);
  cJSON *dims = cJSON_AddArrayToObject(o, "dims");
  for (int d = 0; d < op->ndims; d++) {
    cJSON *dj = cJSON_CreateObject();
    cJSON_AddStringToObject(dj, "name", op->dims[d].name);
    cJSON_AddNumberToObject(dj, "size", (double)op->dims[d].size);
    cJSON_AddStringToObject(dj, "role", mdl_dim_role_name(op->dims[d].role));
    if (!op->dims[d].splittable) cJSON_AddFalseToObject(dj, "splittable");
    cJSON_AddItemToArray(dims, dj);
  }
  cJSON *inputs = cJSON_AddArrayToObject(o, "inputs");
  for (int k = 0; k < op->ninputs; k++) {
    cJSON *ij = operand_to_json(g, op, &op->inputs[k]);
    if (op->unsaved_inputs & (1u << k)) cJSON_AddFalseToObject(ij, "saved");
    cJSON_AddItemToArray(inputs, ij);
  }
  cJSON_AddItemToObject(o, "output", operand_to_json(g, op, &op->output));
  if (op->tp_dim >= 0) cJSON_AddStringToObject(o, "tp_dim", op->dims[op->tp_dim].name);
  if (op->kernel_elems > 1) cJSON_AddNumberToObject(o, "kernel_elems", (double)op->kernel_elems);
  if (op->flops_per_element > 0) cJSON_AddNumberToObject(o, "flops_per_element", op->flops_per_element);
  if (op->dropout) cJSON_AddTrueToObject(o, "dropout");
  if (op->attention_core) cJSON_AddTrueToObject(o, "attention_core");
  if (op->gather) cJSON_AddTrueToObject(o, "gather");
  if (op->flops != mdl_op_forward_flops(op)) cJSON_AddNumberToObject(o, "flops", op->flops);
  return o;
}

char *mdl_graph_to_json(const MdlGraph *graph) {
  g_return_val_if_fail(graph, NULL);
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "name", graph->name);
  cJSON_AddStringToObject(root, "family", graph->family);
  cJSON_AddNumberToObject(root, "batch", (double)graph->batch);
  cJSON_AddStringToObject(root, "dtype", dtype_name(graph->default_dtype));
  cJSON_AddNumberToObject(root, "num_layers", graph->num_layers);
  cJSON_AddNumberToObject(root, "heads", graph->heads);
  cJSON_AddNumberToObject(root, "seq", (double)graph->seq);
  cJSON *tensors = cJSON_AddArrayToObject(root, "tensors");
  for (int t = 0; t < mdl_graph_num_tensors(graph); t++) {
    const MdlTensor *tensor = mdl_graph_tensor(graph, t);
    cJSON *tj = cJSON_CreateObject();
    cJSON_AddStringToObject(tj, "name", tensor->name);
    cJSON *shape = cJSON_AddArrayToObject(tj, "shape");
    for (int i = 0; i < tensor->ndims; i++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)tensor->shape[i]));
    if (tensor->is_weight) cJSON_AddTrueToObject(tj, "weight");
    if (tensor->is_input) cJSON_AddTrueToObject(tj, "input");
    cJSON_AddItemToArray(tensors, tj);
  }
  cJSON *ops = cJSON_AddArrayToObject(root, "ops");
  for (int o = 0; o < mdl_graph_num_ops(graph); o++)
    cJSON_AddItemToArray(ops, op_to_json(graph, mdl_graph_op(graph, o)));
  char *printed = cJSON_Print(root);
  cJSON_Delete(root);
  char *out = g_strdup(printed);
  cJSON_free(printed);
  return out;
}

gboolean mdl_read_json_file(const char *what, const char *path, char **text, GError **error) {
  GStatBuf st;
  if (g_stat(path, &st) == 0 && (gint64)st.st_size > MDL_MAX_JSON_BYTES) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                "%s %s is %" G_GINT64_FORMAT " bytes, over the limit of %" G_GINT64_FORMAT
                " MiB", what, path, (gint64)st.st_size, MDL_MAX_JSON_BYTES >> 20);
    return FALSE;
  }
  GError *io = NULL;
  if (!g_file_get_contents(path, text, NULL, &io)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "%s %s: %s", what, path, io->message);
    g_error_free(io);
    return FALSE;
  }
  return TRUE;
}
