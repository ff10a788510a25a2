/* search/space — variables, meshes, contexts and their valid configs; see srch_space.h. */
#include "search/srch_space.h"

#include <math.h>
#include <string.h>

G_DEFINE_QUARK(srch-error-quark, srch_error)

void srch_space_options_default(SrchSpaceOptions *o) {
  memset(o, 0, sizeof *o);
  o->vars = SRCH_VARS_GROUP;
  o->dims = SRCH_DIMS_ALL;
  o->max_mesh_axes = 2;
  o->max_microbatches = 8;
}

/* --- variables --- */

/* The part of an op name after a "layerN." prefix, or NULL. */
static const char *layer_suffix(const char *name) {
  if (strncmp(name, "layer", 5) != 0) return NULL;
  const char *p = name + 5;
  if (!g_ascii_isdigit(*p)) return NULL;
  while (g_ascii_isdigit(*p)) p++;
  return *p == '.' && p[1] ? p + 1 : NULL;
}

/* Ops share a variable when their configs mean the same thing for both: the same kind, dims
 * (names, sizes, roles, splittability) and tp_dim. */
static void append_signature(GString *key, const MdlOp *op) {
  g_string_append_printf(key, "|%d|%d|%d", op->kind, op->ndims, op->tp_dim);
  for (int d = 0; d < op->ndims; d++)
    g_string_append_printf(key, "|%s:%" G_GINT64_FORMAT ":%d:%d", op->dims[d].name,
                           (gint64)op->dims[d].size, op->dims[d].role, op->dims[d].splittable);
}

/* Followers: ops without weight inputs that read an activation (their first one leads). */
static void find_followers(SrchSpace *s) {
  const MdlGraph *g = s->graph;
  int n = mdl_graph_num_ops(g);
  s->leader = g_new(int, n);
  s->follow_input = g_new(int, n);
  for (int o = 0; o < n; o++) {
    const MdlOp *op = mdl_graph_op(g, o);
    s->leader[o] = s->follow_input[o] = -1;
    if (!s->options.followers) continue;
    gboolean weights = FALSE;
    for (int k = 0; k < op->ninputs; k++) weights |= mdl_graph_tensor(g, op->inputs[k].tensor)->is_weight;
    for (int k = 0; k < op->ninputs && !weights && s->leader[o] < 0; k++) {
      int p = mdl_graph_tensor(g, op->inputs[k].tensor)->producer;
      if (p < 0) continue;
      s->leader[o] = p;
      s->follow_input[o] = k;
    }
  }
}

static void build_variables(SrchSpace *s) {
  const MdlGraph *g = s->graph;
  int n = mdl_graph_num_ops(g);
  find_followers(s);
  s->var_of_op = g_new(int, n);
  GHashTable *keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  GPtrArray *names = g_ptr_array_new();
  GArray *counts = g_array_new(FALSE, TRUE, sizeof(int));
  for (int o = 0; o < n; o++) {
    const MdlOp *op = mdl_graph_op(g, o);
    if (s->leader[o] >= 0) {
      s->var_of_op[o] = -1;
      continue;
    }
    const char *suffix = s->options.vars == SRCH_VARS_GROUP ? layer_suffix(op->name) : NULL;
    GString *key = g_string_new(suffix ? suffix : op->name);
    if (suffix) append_signature(key, op);
    else g_string_append_printf(key, "|op%d", o); /* never shared */
    gpointer found;
    if (g_hash_table_lookup_extended(keys, key->str, NULL, &found)) {
      s->var_of_op[o] = GPOINTER_TO_INT(found);
      g_array_index(counts, int, s->var_of_op[o])++;
      g_string_free(key, TRUE);
      continue;
    }
    int v = (int)names->len;
    s->var_of_op[o] = v;
    g_ptr_array_add(names, suffix ? g_strdup_printf("layer*.%s", suffix) : g_strdup(op->name));
    int one = 1;
    g_array_append_val(counts, one);
    g_hash_table_insert(keys, g_string_free(key, FALSE), GINT_TO_POINTER(v));
  }
  s->nvars = (int)names->len;
  s->var_names = (char **)g_ptr_array_free(names, FALSE);
  s->nmembers = g_new0(int, s->nvars);
  s->members = g_new(int *, s->nvars);
  for (int v = 0; v < s->nvars; v++) s->members[v] = g_new(int, g_array_index(counts, int, v));
  for (int o = 0; o < n; o++) {
    int v = s->var_of_op[o];
    if (v >= 0) s->members[v][s->nmembers[v]++] = o;
  }
  /* A group shared by a single op is named by the op. */
  for (int v = 0; v < s->nvars; v++)
    if (s->nmembers[v] == 1 && strncmp(s->var_names[v], "layer*.", 7) == 0) {
      g_free(s->var_names[v]);
      s->var_names[v] = g_strdup(mdl_graph_op(g, s->members[v][0])->name);
    }
  g_array_free(counts, TRUE);
  g_hash_table_unref(keys);
}

/* --- meshes (AutoDDL section 4.2: per-axis (nodes, gpus-per-node) tuples) --- */

typedef struct {
  int n, g;
} Tuple;

typedef struct {
  const Tuple *tuples;
  int ntuples, nodes, gpus, max_axes;
  GArray *meshes; /* SrchMesh */
} MeshEnum;

static void add_mesh(MeshEnum *e, const int *pick, int k) {
  SrchMesh m = {0};
  m.naxes = k;
  int total = 1;
  for (int a = 0; a < k; a++) {
    m.nodes[a] = e->tuples[pick[a]].n;
    m.gpus[a] = e->tuples[pick[a]].g;
    m.shape[a] = m.nodes[a] * m.gpus[a];
    total *= m.shape[a];
  }
  /* Coordinate c_a along axis a covers node part c_a / g_a and GPU part c_a % g_a; node and
   * GPU indices are the mixed-radix numbers of those parts (row-major, last axis fastest). */
  m.devices = g_new(int, total);
  for (int i = 0; i < total; i++) {
    int rest = i, node = 0, gpu = 0, node_stride = 1, gpu_stride = 1;
    for (int a = k - 1; a >= 0; a--) {
      int c = rest % m.shape[a];
      rest /= m.shape[a];
      node += (c / m.gpus[a]) * node_stride;
      gpu += (c % m.gpus[a]) * gpu_stride;
      node_stride *= m.nodes[a];
      gpu_stride *= m.gpus[a];
    }
    m.devices[i] = node * e->gpus + gpu;
  }
  g_array_append_val(e->meshes, m);
}

/* Multisets of tuples (indices non-increasing: axis order does not change the set of
 * strategies, only which axis is which) whose products are (nodes, gpus). */
static void enumerate_meshes(MeshEnum *e, int *pick, int k, int want_axes, int first, int n, int g) {
  if (k == want_axes) {
    if (n == e->nodes && g == e->gpus) add_mesh(e, pick, k);
    return;
  }
  for (int t = first; t < e->ntuples; t++) {
    const Tuple *tp = &e->tuples[t];
    if ((e->nodes / n) % tp->n != 0 || (e->gpus / g) % tp->g != 0) continue;
    pick[k] = t;
    enumerate_meshes(e, pick, k + 1, want_axes, t, n * tp->n, g * tp->g);
  }
}

static void build_meshes(SrchSpace *s) {
  int N = s->cluster->nodes, G = s->cluster->gpus_per_node;
  GArray *tuples = g_array_new(FALSE, FALSE, sizeof(Tuple));
  /* Inter-host-heavy tuples first: they become the outer axes. */
  for (int n = N; n >= 1; n--)
    for (int g = G; g >= 1; g--)
      if (N % n == 0 && G % g == 0 && n * g >= 2) g_array_append_val(tuples, ((Tuple){n, g}));
  MeshEnum e = {(const Tuple *)tuples->data, (int)tuples->len, N, G, s->options.max_mesh_axes,
                g_array_new(FALSE, TRUE, sizeof(SrchMesh))};
  int pick[MDL_MAX_MESH_AXES];
  if (N * G == 1) {
    static const Tuple one = {1, 1};
    e.tuples = &one;
    e.ntuples = 1;
    pick[0] = 0;
    add_mesh(&e, pick, 1);
  } else {
    for (int k = 1; k <= e.max_axes; k++) enumerate_meshes(&e, pick, 0, k, 0, 1, 1);
  }
  s->nmeshes = (int)e.meshes->len;
  s->meshes = (SrchMesh *)g_array_free(e.meshes, FALSE);
  g_array_free(tuples, TRUE);
}

char *srch_mesh_describe(const SrchMesh *mesh) {
  GString *out = g_string_new("[");
  for (int a = 0; a < mesh->naxes; a++) g_string_append_printf(out, "%s%d", a ? "," : "", mesh->shape[a]);
  g_string_append(out, "] (");
  for (int a = 0; a < mesh->naxes; a++)
    g_string_append_printf(out, "%s%dx%d", a ? "," : "", mesh->nodes[a], mesh->gpus[a]);
  g_string_append(out, ")");
  return g_string_free(out, FALSE);
}

/* --- configs --- */

static int64_t dim_size_at(const MdlOp *op, int d, int microbatches) {
  int64_t size = op->dims[d].size;
  return op->dims[d].role == MDL_ROLE_SAMPLE ? size / microbatches : size;
}

static gboolean config_valid(const MdlOp *op, const SrchConfig *c, const SrchMesh *mesh,
                             int microbatches) {
  for (int d = 0; d < op->ndims; d++) {
    int64_t degree = 1;
    for (int a = 0; a < mesh->naxes; a++)
      if (c->split[a] == d) degree *= mesh->shape[a];
    if (degree > 1 && dim_size_at(op, d, microbatches) % degree != 0) return FALSE;
  }
  return TRUE;
}

/* The dims a variable may split: its splittable dims of size > 1, or (Megatron dims) only the
 * sample dim and the tp_dim. */
static int candidate_dims(const SrchSpace *s, const MdlOp *op, int *dims) {
  int n = 0;
  for (int d = 0; d < op->ndims; d++) {
    if (!op->dims[d].splittable || op->dims[d].size < 2) continue;
    if (s->options.dims == SRCH_DIMS_MEGATRON && op->dims[d].role != MDL_ROLE_SAMPLE &&
        d != op->tp_dim)
      continue;
    dims[n++] = d;
  }
  return n;
}

/* Every assignment of (none or a candidate dim) to each axis, odometer order with the last
 * axis fastest and "none" first, kept where valid. */
static GArray *enumerate_configs(const SrchSpace *s, const MdlOp *op, const SrchMesh *mesh,
                                 int microbatches) {
  int dims[MDL_MAX_DIMS], nd = candidate_dims(s, op, dims);
  GArray *out = g_array_new(FALSE, FALSE, sizeof(SrchConfig));
  int digit[MDL_MAX_MESH_AXES] = {0};
  for (;;) {
    SrchConfig c;
    memset(c.split, -1, sizeof c.split);
    for (int a = 0; a < mesh->naxes; a++) c.split[a] = (int8_t)(digit[a] == 0 ? -1 : dims[digit[a] - 1]);
    if (config_valid(op, &c, mesh, microbatches)) g_array_append_val(out, c);
    int a = mesh->naxes - 1;
    while (a >= 0 && ++digit[a] > nd) digit[a--] = 0;
    if (a < 0) break;
  }
  return out;
}

static void mesh_view(const SrchMesh *m, MdlMesh *view) {
  memset(view, 0, sizeof *view);
  view->ndims = m->naxes;
  view->ndevices = 1;
  for (int a = 0; a < m->naxes; a++) {
    view->shape[a] = m->shape[a];
    view->ndevices *= m->shape[a];
  }
  view->devices = m->devices;
}

/* Readers of each tensor (ops that take it as an input). */
static int *tensor_readers(const MdlGraph *g) {
  int *readers = g_new0(int, mdl_graph_num_tensors(g) > 0 ? mdl_graph_num_tensors(g) : 1);
  for (int o = 0; o < mdl_graph_num_ops(g); o++) {
    const MdlOp *op = mdl_graph_op(g, o);
    for (int k = 0; k < op->ninputs; k++) readers[op->inputs[k].tensor]++;
  }
  return readers;
}

double srch_space_value_memory(const SrchSpace *s, int var, const SrchConfig *config,
                               const SrchMesh *mesh, int microbatches) {
  const MdlGraph *g = s->graph;
  const int *readers = s->readers;
  double wbytes = dev_dtype_bytes(s->dtype);
  /* Adam's m and v in fp32, plus an fp32 master copy under 16-bit training (as cm_memory.c). */
  double opt_bytes = s->dtype == DEV_DTYPE_FP32 || s->dtype == DEV_DTYPE_TF32 ? 8.0 : 12.0;
  MdlMesh view;
  mesh_view(mesh, &view);
  MdlOpConfig c = {0};
  memcpy(c.split, config->split, sizeof c.split);
  double bytes = 0;
  for (int i = 0; i < s->nmembers[var]; i++) {
    const MdlOp *op = mdl_graph_op(g, s->members[var][i]);
    for (int k = 0; k < op->ninputs; k++) {
      const MdlOperand *opd = &op->inputs[k];
      const MdlTensor *t = mdl_graph_tensor(g, opd->tensor);
      if (readers[opd->tensor] != 1) continue; /* shared: charged once, maybe by another op */
      MdlLayout layout = mdl_layout_of_operand(op, opd, FALSE, &c, &view);
      if (t->is_weight) {
        bytes += mdl_layout_local_elements(g, opd->tensor, -1, &layout, &view, 1) * (2 * wbytes + opt_bytes);
      } else if (!(op->unsaved_inputs & (1u << k))) {
        int sdim = s->sample_tdim[opd->tensor];
        /* Read by this op alone: an FP8 GEMM keeps it as fp8 (cm_memory.c, cm_fp8.c). */
        double ebytes = cm_fp8_gemm(op, s->dtype) ? 1.0 : wbytes;
        bytes += mdl_layout_local_elements(g, opd->tensor, sdim, &layout, &view, microbatches) * ebytes;
      }
    }
    if (op->dropout) {
      MdlLayout layout = mdl_layout_of_operand(op, &op->output, TRUE, &c, &view);
      int sdim = s->sample_tdim[op->output.tensor];
      bytes += mdl_layout_local_elements(g, op->output.tensor, sdim, &layout, &view, microbatches);
    }
  }
  return bytes;
}

static void context_clear(SrchSpace *s, SrchContext *ctx) {
  for (int v = 0; v < s->nvars; v++) {
    if (ctx->values) g_free(ctx->values[v]);
    if (ctx->memory) g_free(ctx->memory[v]);
    if (ctx->compute) g_free(ctx->compute[v]);
  }
  g_free(ctx->values);
  g_free(ctx->memory);
  g_free(ctx->compute);
  g_free(ctx->nvalues);
  memset(ctx, 0, sizeof *ctx);
}

/* Removes values that cannot fit even when every other variable takes its least memory:
 * own(v, j) + sum over u != v of min own(u) > capacity. Repeats until stable (a removal can
 * raise a minimum). Returns FALSE if a variable is left without values. */
static gboolean prune_memory(SrchSpace *s, SrchContext *ctx) {
  for (gboolean changed = TRUE; changed;) {
    changed = FALSE;
    double total_min = 0;
    g_autofree double *min = g_new(double, s->nvars);
    for (int v = 0; v < s->nvars; v++) {
      min[v] = INFINITY;
      for (int j = 0; j < ctx->nvalues[v]; j++) min[v] = MIN(min[v], ctx->memory[v][j]);
      total_min += min[v];
    }
    for (int v = 0; v < s->nvars; v++) {
      int kept = 0;
      for (int j = 0; j < ctx->nvalues[v]; j++) {
        if (ctx->memory[v][j] + (total_min - min[v]) > s->capacity) {
          s->values_over_memory++;
          changed = TRUE;
          continue;
        }
        ctx->values[v][kept] = ctx->values[v][j];
        ctx->memory[v][kept] = ctx->memory[v][j];
        kept++;
      }
      ctx->nvalues[v] = kept;
      if (kept == 0) return FALSE;
    }
  }
  return TRUE;
}

static gboolean build_context(SrchSpace *s, int mesh, int microbatches, SrchContext *ctx) {
  ctx->mesh = mesh;
  ctx->microbatches = microbatches;
  ctx->nvalues = g_new0(int, s->nvars);
  ctx->values = g_new0(SrchConfig *, s->nvars);
  ctx->memory = g_new0(double *, s->nvars);
  for (int v = 0; v < s->nvars; v++) {
    const MdlOp *op = mdl_graph_op(s->graph, s->members[v][0]);
    GArray *configs = enumerate_configs(s, op, &s->meshes[mesh], microbatches);
    ctx->nvalues[v] = (int)configs->len;
    ctx->values[v] = (SrchConfig *)g_array_free(configs, FALSE);
    ctx->memory[v] = g_new(double, MAX(ctx->nvalues[v], 1));
    for (int j = 0; j < ctx->nvalues[v]; j++)
      ctx->memory[v][j] = srch_space_value_memory(s, v, &ctx->values[v][j], &s->meshes[mesh], microbatches);
    if (ctx->nvalues[v] == 0) return FALSE;
  }
  return prune_memory(s, ctx);
}

/* log10 of each context's number of points, and their maximum. */
static double context_log10_sizes(const SrchSpace *s, double *l) {
  double m = -INFINITY;
  for (int c = 0; c < s->ncontexts; c++) {
    l[c] = 0;
    for (int v = 0; v < s->nvars; v++) l[c] += log10((double)s->contexts[c].nvalues[v]);
    m = MAX(m, l[c]);
  }
  return m;
}

double srch_space_log10_size(const SrchSpace *s) {
  /* log10(sum_c 10^l_c) = m + log10(sum_c 10^(l_c - m)), m = max l_c, without overflow. */
  g_autofree double *l = g_new(double, s->ncontexts);
  double m = context_log10_sizes(s, l), sum = 0;
  for (int c = 0; c < s->ncontexts; c++) sum += pow(10, l[c] - m);
  return m + log10(sum);
}

static void build_context_cdf(SrchSpace *s) {
  g_autofree double *l = g_new(double, s->ncontexts);
  double m = context_log10_sizes(s, l), sum = 0;
  s->context_cdf = g_new(double, s->ncontexts);
  for (int c = 0; c < s->ncontexts; c++) s->context_cdf[c] = sum += pow(10, l[c] - m);
  for (int c = 0; c < s->ncontexts; c++) s->context_cdf[c] /= sum;
}

static DevDtype default_dtype(const MdlGraph *graph, const DevCluster *cluster) {
  DevDtype d = graph->default_dtype;
  if (cluster->device.peak_flops[d] > 0) return d;
  if (d == DEV_DTYPE_BF16 && cluster->device.peak_flops[DEV_DTYPE_FP16] > 0) return DEV_DTYPE_FP16;
  return DEV_DTYPE_FP32;
}

SrchSpace *srch_space_new(const MdlGraph *graph, const DevCluster *cluster,
                          const SrchSpaceOptions *options, GError **error) {
  g_return_val_if_fail(graph != NULL && cluster != NULL, NULL);
  SrchSpaceOptions o;
  if (options) o = *options;
  else srch_space_options_default(&o);
  if (o.max_mesh_axes == 0) o.max_mesh_axes = 2;
  if (o.max_microbatches == 0) o.max_microbatches = 8;
  if (o.max_mesh_axes < 1 || o.max_mesh_axes > MDL_MAX_MESH_AXES) {
    g_set_error(error, SRCH_ERROR, SRCH_ERROR_OPTION, "search: mesh axes %d out of range 1..%d",
                o.max_mesh_axes, MDL_MAX_MESH_AXES);
    return NULL;
  }
  if (o.max_microbatches < 1) {
    g_set_error(error, SRCH_ERROR, SRCH_ERROR_OPTION,
                "search: the maximum microbatch count must be >= 1 (got %d)", o.max_microbatches);
    return NULL;
  }
  SrchSpace *s = g_new0(SrchSpace, 1);
  s->graph = graph;
  s->cluster = cluster;
  s->options = o;
  s->dtype = o.dtype_set ? o.dtype : default_dtype(graph, cluster);
  if (cluster->device.peak_flops[s->dtype] <= 0) {
    g_autofree char *kinds = dev_kinds_supporting(s->dtype);
    g_set_error(error, SRCH_ERROR, SRCH_ERROR_OPTION,
                "search: device %s has no %s support (built-in device kinds with it: %s)",
                cluster->device.name, dev_dtype_name(s->dtype), kinds);
    srch_space_free(s);
    return NULL;
  }
  s->ndevices = dev_cluster_num_devices(cluster);
  s->capacity = cluster->device.memory_bytes;
  s->readers = tensor_readers(graph);
  s->sample_tdim = mdl_tensor_sample_dims(graph);
  build_variables(s);
  s->point_len = s->nvars + 1;
  build_meshes(s);
  GArray *contexts = g_array_new(FALSE, TRUE, sizeof(SrchContext));
  for (int m = 0; m < s->nmeshes; m++)
    for (int mb = 1; mb <= o.max_microbatches && mb <= graph->batch; mb++) {
      if (graph->batch % mb != 0) continue;
      SrchContext ctx = {0};
      if (build_context(s, m, mb, &ctx)) g_array_append_val(contexts, ctx);
      else context_clear(s, &ctx);
    }
  s->ncontexts = (int)contexts->len;
  s->contexts = (SrchContext *)g_array_free(contexts, FALSE);
  if (s->ncontexts == 0) {
    g_set_error(error, SRCH_ERROR, SRCH_ERROR_SPACE,
                "search: no strategy of the space fits %s on %d %s (%.3g GiB each): every mesh and "
                "microbatch count leaves some op without a config that fits",
                graph->name, s->ndevices, cluster->device.name, s->capacity / (1024.0 * 1024 * 1024));
    srch_space_free(s);
    return NULL;
  }
  build_context_cdf(s);
  return s;
}

void srch_space_free(SrchSpace *s) {
  if (!s) return;
  for (int c = 0; c < s->ncontexts; c++) context_clear(s, &s->contexts[c]);
  g_free(s->contexts);
  g_free(s->context_cdf);
  for (int m = 0; m < s->nmeshes; m++) g_free(s->meshes[m].devices);
  g_free(s->meshes);
  for (int v = 0; v < s->nvars; v++) {
    g_free(s->members[v]);
    g_free(s->var_names[v]);
  }
  g_free(s->members);
  g_free(s->var_names);
  g_free(s->nmembers);
  g_free(s->var_of_op);
  g_free(s->leader);
  g_free(s->readers);
  g_free(s->sample_tdim);
  g_free(s->follow_input);
  g_free(s);
}

guint64 srch_space_size(const SrchSpace *s) {
  guint64 total = 0;
  for (int c = 0; c < s->ncontexts; c++) {
    guint64 prod = 1;
    for (int v = 0; v < s->nvars; v++) {
      guint64 n = (guint64)s->contexts[c].nvalues[v];
      if (prod > G_MAXUINT64 / n) return G_MAXUINT64;
      prod *= n;
    }
    if (total > G_MAXUINT64 - prod) return G_MAXUINT64;
    total += prod;
  }
  return total;
}

/* --- points and strategies --- */

MdlStrategy *srch_space_new_strategy(const SrchSpace *s, GError **error) {
  /* The Megatron builder on one device always yields a valid strategy object; its mesh and
   * configs are overwritten by srch_space_apply. */
  MdlMegatronConfig cfg = {.tp = 1, .pp = 1, .dp = 1, .microbatch_size = (int)s->graph->batch,
                           .schedule = MDL_SCHEDULE_1F1B, .dtype = s->dtype,
                           .framework = s->options.framework};
  MdlStrategy *st = mdl_strategy_megatron(s->graph, s->cluster, &cfg, error);
  if (!st) return NULL;
  st->dp = st->tp = st->pp = st->vp = st->microbatch_size = 0; /* not a builder's degrees */
  g_free(st->name);
  st->name = g_strdup("search");
  return st;
}

/* A follower's config: on each axis where its leader's output is Split on a tensor dim, split
 * the op dim that indexes that dim of the input, if splittable and the degree still divides
 * the dim (at the microbatch size); otherwise replicate. */
static void follow(const SrchSpace *s, int o, MdlStrategy *st, const MdlMesh *mesh, int microbatches) {
  const MdlOp *op = mdl_graph_op(s->graph, o);
  const MdlOp *lead = mdl_graph_op(s->graph, s->leader[o]);
  const MdlOperand *in = &op->inputs[s->follow_input[o]];
  MdlLayout layout = mdl_layout_of_operand(lead, &lead->output, TRUE, &st->configs[s->leader[o]], mesh);
  MdlOpConfig *c = &st->configs[o];
  memset(c->split, -1, sizeof c->split);
  for (int a = 0; a < mesh->ndims; a++) {
    if (layout.axis[a] < 0) continue;
    int d = in->dim_map[layout.axis[a]];
    if (d < 0 || !op->dims[d].splittable) continue;
    int64_t degree = mesh->shape[a];
    for (int b = 0; b < a; b++)
      if (c->split[b] == d) degree *= mesh->shape[b];
    if (dim_size_at(op, d, microbatches) % degree == 0) c->split[a] = (int8_t)d;
  }
}

void srch_space_apply(const SrchSpace *s, const int *point, MdlStrategy *st) {
  const SrchContext *ctx = &s->contexts[point[0]];
  const SrchMesh *mesh = &s->meshes[ctx->mesh];
  const MdlMesh *current = st->meshes->len ? mdl_strategy_mesh(st, 0) : NULL;
  gboolean same = current && current->ndims == mesh->naxes &&
                  memcmp(current->shape, mesh->shape, sizeof(int) * (gsize)mesh->naxes) == 0 &&
                  memcmp(current->devices, mesh->devices, sizeof(int) * (gsize)current->ndevices) == 0;
  if (!same) {
    g_array_set_size(st->meshes, 0);
    mdl_strategy_add_mesh(st, mesh->naxes, mesh->shape, mesh->devices);
  }
  st->num_microbatches = ctx->microbatches;
  st->num_stages = 1;
  st->virtual_stages = 1;
  const MdlMesh *view = mdl_strategy_mesh(st, 0);
  for (int o = 0; o < st->num_ops; o++) { /* topological: leaders come first */
    int v = s->var_of_op[o];
    MdlOpConfig *c = &st->configs[o];
    c->mesh = 0;
    c->stage = 0;
    if (v >= 0) memcpy(c->split, ctx->values[v][point[1 + v]].split, sizeof c->split);
    else follow(s, o, st, view, ctx->microbatches);
  }
}

MdlStrategy *srch_space_strategy(const SrchSpace *s, const int *point, const char *name) {
  MdlStrategy *st = srch_space_new_strategy(s, NULL);
  g_assert(st != NULL); /* srch_space_new made one already */
  srch_space_apply(s, point, st);
  g_free(st->name);
  st->name = g_strdup(name);
  return st;
}

int srch_space_find_value(const SrchSpace *s, int ctx, int var, const int8_t *split) {
  const SrchContext *c = &s->contexts[ctx];
  int naxes = s->meshes[c->mesh].naxes;
  for (int j = 0; j < c->nvalues[var]; j++)
    if (memcmp(c->values[var][j].split, split, (size_t)naxes) == 0) return j;
  return -1;
}
