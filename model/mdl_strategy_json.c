/* model/strategy — the strategy JSON format (what `search` writes and `simulate --strategy FILE`
 * reads). Documented in model/STRATEGY.md:
 *   {"format": "stratsim-strategy-1", "name": ..., "dtype": "bf16", "schedule": "1f1b",
 *    "num_microbatches": M, "num_stages": P, "virtual_stages": V, "weight_delay": false,
 *    "bucket_mb": 25, "overlap": true, "zero": 0, "recompute": "none",
 *    "sequence_parallel": false, "framework": "megatron-lm", ("fsdp_prefetch": false: written
 *    only then, zero=3), ("overlap_grad_reduce": false: written only then, zero 0 or 1),
 *    ("async_tensor_model_parallel_allreduce": written only when set, else the framework's),
 *    "meshes": [{"shape": [2, 8], "devices": [0, 1, ...]}],
 *    "default": {"mesh": 0, "stage": 0, "split": ["@sample", "@tp"]},      (optional)
 *    "ops": [{"op": "layer0.qkv", "mesh": 0, "stage": 0, "split": ["b", "n"]}, ...]}
 * A split entry names an op dim, null (replicated on that axis), or "@sample" / "@tp" (the op's
 * sample dim / its tp_dim). Ops not listed take "default"; without one every op must be listed. */
#include "model/mdl_strategy-int.h"
#include "util/util_json.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

static cJSON *config_to_json(const MdlOp *op, const MdlOpConfig *c, const MdlMesh *mesh) {
  cJSON *obj = cJSON_CreateObject();
  cJSON_AddStringToObject(obj, "op", op->name);
  cJSON_AddNumberToObject(obj, "mesh", c->mesh);
  cJSON_AddNumberToObject(obj, "stage", c->stage);
  cJSON *split = cJSON_AddArrayToObject(obj, "split");
  for (int a = 0; a < mesh->ndims; a++) {
    int d = c->split[a];
    cJSON_AddItemToArray(split, d >= 0 ? cJSON_CreateString(op->dims[d].name) : cJSON_CreateNull());
  }
  return obj;
}

char *mdl_strategy_to_json(const MdlStrategy *s, const MdlGraph *graph) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", "stratsim-strategy-1");
  cJSON_AddStringToObject(root, "name", s->name ? s->name : "");
  cJSON_AddStringToObject(root, "model", graph->name);
  cJSON_AddStringToObject(root, "dtype", dev_dtype_name(s->dtype));
  cJSON_AddStringToObject(root, "schedule", mdl_schedule_name(s->schedule));
  cJSON_AddNumberToObject(root, "num_microbatches", s->num_microbatches);
  cJSON_AddNumberToObject(root, "num_stages", s->num_stages);
  cJSON_AddNumberToObject(root, "virtual_stages", s->virtual_stages);
  cJSON_AddBoolToObject(root, "weight_delay", s->weight_delay);
  cJSON_AddNumberToObject(root, "bucket_mb", s->bucket_bytes / (1024.0 * 1024.0));
  cJSON_AddBoolToObject(root, "overlap", s->overlap);
  cJSON_AddNumberToObject(root, "zero", s->zero_stage);
  cJSON_AddStringToObject(root, "recompute", mdl_recompute_name(s->recompute));
  cJSON_AddStringToObject(root, "framework", mdl_framework_name(s->framework));
  cJSON_AddBoolToObject(root, "sequence_parallel", s->sequence_parallel);
  if (s->overlap_param_gather) cJSON_AddTrueToObject(root, "overlap_param_gather");
  if (s->tp_overlap) cJSON_AddTrueToObject(root, "tp_overlap");
  if (!s->fsdp_prefetch) cJSON_AddFalseToObject(root, "fsdp_prefetch");
  if (!s->overlap_grad_reduce) cJSON_AddFalseToObject(root, "overlap_grad_reduce");
  if (s->async_tp_allreduce != 0)
    cJSON_AddBoolToObject(root, "async_tensor_model_parallel_allreduce", s->async_tp_allreduce > 0);
  cJSON *meshes = cJSON_AddArrayToObject(root, "meshes");
  for (guint m = 0; m < s->meshes->len; m++) {
    const MdlMesh *mesh = mdl_strategy_mesh(s, (int)m);
    cJSON *mj = cJSON_CreateObject();
    cJSON_AddItemToObject(mj, "shape", cJSON_CreateIntArray(mesh->shape, mesh->ndims));
    cJSON_AddItemToObject(mj, "devices", cJSON_CreateIntArray(mesh->devices, mesh->ndevices));
    cJSON_AddItemToArray(meshes, mj);
  }
  cJSON *ops = cJSON_AddArrayToObject(root, "ops");
  for (int o = 0; o < s->num_ops; o++)
    cJSON_AddItemToArray(ops, config_to_json(mdl_graph_op(graph, o), &s->configs[o],
                                             mdl_strategy_mesh(s, s->configs[o].mesh)));
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  char *out = g_strdup(text);
  cJSON_free(text);
  return out;
}

static gboolean fail(GError **error, const char *origin, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static gboolean fail(GError **error, const char *origin, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "strategy %s: %s", origin, msg);
  return FALSE;
}

static gboolean get_int(const cJSON *obj, const char *key, int lo, int hi, int *out,
                        gboolean required, const char *origin, GError **error) {
  gint64 v = 0;
  switch (util_json_int(obj, key, lo, hi, &v)) {
  case UTIL_JSON_OK: *out = (int)v; return TRUE;
  case UTIL_JSON_MISSING:
    return required ? fail(error, origin, "missing field \"%s\"", key) : TRUE;
  default: return fail(error, origin, "field \"%s\" must be an integer in %d..%d", key, lo, hi);
  }
}

/* An optional true/false field; *@out stays as it is when absent. */
static gboolean get_bool(const cJSON *obj, const char *key, gboolean *out, const char *origin,
                         GError **error) {
  if (util_json_bool(obj, key, out) == UTIL_JSON_WRONG_TYPE)
    return fail(error, origin, "field \"%s\" must be true or false", key);
  return TRUE;
}

static gboolean parse_meshes(MdlStrategy *s, const cJSON *root, const char *origin, GError **error) {
  const cJSON *meshes = cJSON_GetObjectItemCaseSensitive(root, "meshes");
  if (!cJSON_IsArray(meshes) || cJSON_GetArraySize(meshes) == 0)
    return fail(error, origin, "\"meshes\" must be a non-empty array");
  int index = 0;
  const cJSON *mj;
  cJSON_ArrayForEach(mj, meshes) {
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(mj, "shape");
    const cJSON *devices = cJSON_GetObjectItemCaseSensitive(mj, "devices");
    int nd = cJSON_GetArraySize(shape);
    if (!cJSON_IsArray(shape) || nd < 1 || nd > MDL_MAX_MESH_AXES)
      return fail(error, origin, "mesh %d: \"shape\" must have 1..%d entries", index, MDL_MAX_MESH_AXES);
    int dims[MDL_MAX_MESH_AXES];
    double product = 1; /* in double: four entries of 1e6 overflow int64 */
    for (int a = 0; a < nd; a++) {
      gint64 v = 0;
      if (util_json_int_value(cJSON_GetArrayItem(shape, a), 1, 1000000, &v) != UTIL_JSON_OK)
        return fail(error, origin, "mesh %d: shape entry %d is not a positive integer", index, a);
      dims[a] = (int)v;
      product *= (double)v;
    }
    if (product > MDL_MAX_MESH_DEVICES)
      return fail(error, origin, "mesh %d: %.15g devices exceed the limit of %d", index, product,
                  MDL_MAX_MESH_DEVICES);
    gint64 total = (gint64)product;
    if (!cJSON_IsArray(devices) || cJSON_GetArraySize(devices) != total)
      return fail(error, origin, "mesh %d: \"devices\" must list %" G_GINT64_FORMAT " device ids",
                  index, total);
    g_autofree int *ids = g_new(int, total);
    int i = 0;
    const cJSON *dj;
    cJSON_ArrayForEach(dj, devices) { /* not cJSON_GetArrayItem: that walks the list each time */
      gint64 v = 0;
      if (util_json_int_value(dj, 0, 1000000000, &v) != UTIL_JSON_OK)
        return fail(error, origin, "mesh %d: device entry %d is not a device id", index, i);
      ids[i++] = (int)v;
    }
    mdl_strategy_add_mesh(s, nd, dims, ids);
    index++;
  }
  return TRUE;
}

/* Fills @c from a config object (mesh, stage, split). */
static gboolean parse_config(const MdlStrategy *s, const MdlOp *op, const cJSON *cj,
                             MdlOpConfig *c, const char *origin, GError **error) {
  if (!get_int(cj, "mesh", 0, (int)s->meshes->len - 1, &c->mesh, FALSE, origin, error)) return FALSE;
  if (!get_int(cj, "stage", 0, 1000000, &c->stage, FALSE, origin, error)) return FALSE;
  const cJSON *split = cJSON_GetObjectItemCaseSensitive(cj, "split");
  const MdlMesh *mesh = mdl_strategy_mesh(s, c->mesh);
  for (int a = 0; a < MDL_MAX_MESH_AXES; a++) c->split[a] = -1;
  if (!split) return TRUE;
  if (!cJSON_IsArray(split) || cJSON_GetArraySize(split) > mesh->ndims)
    return fail(error, origin, "op %s: \"split\" must be an array of at most %d entries", op->name,
                mesh->ndims);
  for (int a = 0; a < cJSON_GetArraySize(split); a++) {
    const cJSON *e = cJSON_GetArrayItem(split, a);
    if (cJSON_IsNull(e)) continue;
    const char *name = cJSON_GetStringValue(e);
    if (!name) return fail(error, origin, "op %s: split entry %d must be a dim name or null", op->name, a);
    int d;
    if (strcmp(name, "@sample") == 0) d = mdl_op_sample_dim(op);
    else if (strcmp(name, "@tp") == 0) d = op->tp_dim;
    else {
      d = mdl_op_find_dim(op, name);
      if (d < 0) return fail(error, origin, "op %s has no dim \"%s\"", op->name, name);
    }
    c->split[a] = (int8_t)d;
  }
  return TRUE;
}

/* The "ops" entries: each names an op of @graph and gives its config; marks @set. */
static gboolean parse_op_configs(MdlStrategy *s, const MdlGraph *graph, const cJSON *ops,
                                 gboolean *set, const char *origin, GError **error) {
  /* Op names to indices (a scan per entry would be quadratic in the graph). */
  g_autoptr(GHashTable) op_index = g_hash_table_new(g_str_hash, g_str_equal);
  for (int i = mdl_graph_num_ops(graph) - 1; i >= 0; i--) /* the first of a name wins */
    g_hash_table_insert(op_index, mdl_graph_op(graph, i)->name, GINT_TO_POINTER(i + 1));
  const cJSON *oj;
  cJSON_ArrayForEach(oj, ops) {
    const char *opname = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(oj, "op"));
    int o = opname ? GPOINTER_TO_INT(g_hash_table_lookup(op_index, opname)) - 1 : -1;
    if (o < 0)
      return fail(error, origin, "op \"%s\" is not in model %s", opname ? opname : "(missing)",
                  graph->name);
    if (!parse_config(s, mdl_graph_op(graph, o), oj, &s->configs[o], origin, error)) return FALSE;
    set[o] = TRUE;
  }
  return TRUE;
}

MdlStrategy *mdl_strategy_from_json(const char *json_text, const char *origin,
                                    const MdlGraph *graph, const DevCluster *cluster,
                                    GError **error) {
  cJSON *root = cJSON_Parse(json_text);
  if (!root || !cJSON_IsObject(root)) {
    fail(error, origin, "malformed JSON%s", root ? " (expected an object)" : "");
    cJSON_Delete(root);
    return NULL;
  }
  int n = mdl_graph_num_ops(graph);
  MdlStrategy *s = mdl_strategy_new_empty(n);
  const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "name"));
  s->name = g_strdup(name && *name ? name : origin);
  const char *dtype = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "dtype"));
  const char *schedule = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "schedule"));
  const cJSON *ops = cJSON_GetObjectItemCaseSensitive(root, "ops");
  const cJSON *def = cJSON_GetObjectItemCaseSensitive(root, "default");
  g_autofree gboolean *set = g_new0(gboolean, n > 0 ? n : 1);
  s->dtype = graph->default_dtype;
  if (dtype && !dev_dtype_parse(dtype, &s->dtype)) {
    fail(error, origin, "unknown dtype \"%s\"", dtype);
    goto err;
  }
  if (schedule && !mdl_schedule_parse(schedule, &s->schedule)) {
    fail(error, origin, "unknown schedule \"%s\" (known: gpipe, 1f1b, interleaved, eager1f1b)",
         schedule);
    goto err;
  }
  s->weight_delay = FALSE;
  if (!get_bool(root, "weight_delay", &s->weight_delay, origin, error) ||
      !get_bool(root, "overlap", &s->overlap, origin, error))
    goto err;
  const cJSON *recompute = cJSON_GetObjectItemCaseSensitive(root, "recompute");
  if (recompute && !mdl_recompute_parse(cJSON_GetStringValue(recompute), &s->recompute)) {
    fail(error, origin, "field \"recompute\" must be \"none\", \"selective\" or \"full\"");
    goto err;
  }
  const cJSON *framework = cJSON_GetObjectItemCaseSensitive(root, "framework");
  if (framework && !mdl_framework_parse(cJSON_GetStringValue(framework), &s->framework)) {
    fail(error, origin, "field \"framework\" must be \"megatron-lm\", \"megatron-deepspeed\", "
         "\"pytorch-eager\", \"cuda-graphs\" or \"none\"");
    goto err;
  }
  s->sequence_parallel = FALSE;
  if (!get_bool(root, "sequence_parallel", &s->sequence_parallel, origin, error)) goto err;
  s->overlap_param_gather = FALSE;
  if (!get_bool(root, "overlap_param_gather", &s->overlap_param_gather, origin, error)) goto err;
  s->tp_overlap = FALSE;
  if (!get_bool(root, "tp_overlap", &s->tp_overlap, origin, error)) goto err;
  s->fsdp_prefetch = TRUE;
  if (!get_bool(root, "fsdp_prefetch", &s->fsdp_prefetch, origin, error)) goto err;
  s->overlap_grad_reduce = TRUE;
  if (!get_bool(root, "overlap_grad_reduce", &s->overlap_grad_reduce, origin, error)) goto err;
  const cJSON *async_tp = cJSON_GetObjectItemCaseSensitive(root, "async_tensor_model_parallel_allreduce");
  s->async_tp_allreduce = 0;
  if (async_tp) {
    gboolean on = FALSE;
    if (!get_bool(root, "async_tensor_model_parallel_allreduce", &on, origin, error)) goto err;
    s->async_tp_allreduce = on ? 1 : -1;
  }
  const cJSON *bucket = cJSON_GetObjectItemCaseSensitive(root, "bucket_mb");
  if (bucket) {
    double v = cJSON_GetNumberValue(bucket);
    if (!cJSON_IsNumber(bucket) || !(v >= 0 && v <= 1e6)) {
      fail(error, origin, "field \"bucket_mb\" must be a size in MiB from 0 to 1e6");
      goto err;
    }
    s->bucket_bytes = v * 1024 * 1024;
  }
  if (!get_int(root, "num_microbatches", 1, MDL_MAX_MICROBATCHES, &s->num_microbatches, FALSE, origin, error) ||
      !get_int(root, "num_stages", 1, 1000000, &s->num_stages, FALSE, origin, error) ||
      !get_int(root, "virtual_stages", 1, 1000000, &s->virtual_stages, FALSE, origin, error) ||
      !get_int(root, "zero", 0, 3, &s->zero_stage, FALSE, origin, error) ||
      !parse_meshes(s, root, origin, error))
    goto err;
  if (ops && !cJSON_IsArray(ops)) {
    fail(error, origin, "\"ops\" must be an array");
    goto err;
  }
  if (!parse_op_configs(s, graph, ops, set, origin, error)) goto err;
  for (int o = 0; o < n; o++) {
    if (set[o]) continue;
    if (!def) {
      fail(error, origin, "op %s has no config and there is no \"default\"", mdl_graph_op(graph, o)->name);
      goto err;
    }
    if (!parse_config(s, mdl_graph_op(graph, o), def, &s->configs[o], origin, error)) goto err;
  }
  for (int o = 0; o < n; o++) s->num_stages = MAX(s->num_stages, s->configs[o].stage + 1);
  cJSON_Delete(root);
  if (!mdl_strategy_validate(s, graph, cluster, error)) {
    mdl_strategy_free(s);
    return NULL;
  }
  return s;
err:
  cJSON_Delete(root);
  mdl_strategy_free(s);
  return NULL;
}
