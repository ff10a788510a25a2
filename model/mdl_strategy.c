/* model/strategy — strategy IR core: meshes, configs, SBP layouts, validation.
 * Builders (data parallel, Megatron) and the CLI spec live in mdl_strategy_build.c; the JSON
 * format in mdl_strategy_json.c. */
#include "model/mdl_strategy-int.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* The index of @text in @names (@n of them), or -1. */
static int name_index(const char *const *names, int n, const char *text) {
  for (int i = 0; i < n; i++)
    if (g_strcmp0(text, names[i]) == 0) return i;
  return -1;
}

static const char *const schedule_names[MDL_SCHEDULE_COUNT] = {"gpipe", "1f1b", "interleaved",
                                                                  "eager1f1b"};

const char *mdl_schedule_name(MdlSchedule schedule) {
  g_return_val_if_fail(schedule < MDL_SCHEDULE_COUNT, "?");
  return schedule_names[schedule];
}

gboolean mdl_schedule_parse(const char *text, MdlSchedule *out) {
  int i = name_index(schedule_names, MDL_SCHEDULE_COUNT, text);
  if (i >= 0) *out = (MdlSchedule)i;
  return i >= 0;
}

static const char *const recompute_names[MDL_RECOMPUTE_COUNT] = {"none", "selective", "full"};

const char *mdl_recompute_name(MdlRecompute recompute) {
  g_return_val_if_fail(recompute < MDL_RECOMPUTE_COUNT, "?");
  return recompute_names[recompute];
}

gboolean mdl_recompute_parse(const char *text, MdlRecompute *out) {
  int i = name_index(recompute_names, MDL_RECOMPUTE_COUNT, text);
  if (i >= 0) *out = (MdlRecompute)i;
  return i >= 0;
}

static const char *const framework_names[MDL_FRAMEWORK_COUNT] = {
    "megatron-lm", "megatron-deepspeed", "pytorch-eager", "cuda-graphs", "none"};

const char *mdl_framework_name(MdlFramework framework) {
  g_return_val_if_fail(framework < MDL_FRAMEWORK_COUNT, "?");
  return framework_names[framework];
}

gboolean mdl_framework_parse(const char *text, MdlFramework *out) {
  int i = name_index(framework_names, MDL_FRAMEWORK_COUNT, text);
  if (i >= 0) *out = (MdlFramework)i;
  return i >= 0;
}

int *mdl_strategy_recompute_groups(const MdlStrategy *s, const MdlGraph *graph) {
  int n = mdl_graph_num_ops(graph), groups = 0;
  int *group = g_new(int, n > 0 ? n : 1);
  for (int o = 0; o < n; o++) {
    const MdlOp *op = mdl_graph_op(graph, o);
    group[o] = -1;
    if (!mdl_strategy_recomputes(s, op)) continue;
    const MdlOp *prev = o > 0 ? mdl_graph_op(graph, o - 1) : NULL;
    if (prev && group[o - 1] >= 0 && prev->layer == op->layer &&
        s->configs[o - 1].stage == s->configs[o].stage)
      group[o] = group[o - 1];
    else
      group[o] = groups++;
  }
  return group;
}

int *mdl_strategy_fsdp_units(const MdlStrategy *s, const MdlGraph *graph) {
  int n = mdl_graph_num_ops(graph), units = 0;
  int *unit = g_new(int, n > 0 ? n : 1);
  for (int o = 0; o < n; o++) {
    const MdlOpConfig *c = &s->configs[o], *p = o > 0 ? &s->configs[o - 1] : NULL;
    gboolean same = p && mdl_graph_op(graph, o - 1)->layer == mdl_graph_op(graph, o)->layer &&
                    p->stage == c->stage && p->mesh == c->mesh;
    unit[o] = same ? unit[o - 1] : units++;
  }
  return unit;
}

unsigned mdl_operand_replica_axes(const MdlOp *op, const MdlOperand *opd,
                                  const MdlOpConfig *config, const MdlMesh *mesh) {
  MdlLayout l = mdl_layout_of_operand(op, opd, FALSE, config, mesh);
  unsigned mask = 0;
  for (int a = 0; a < mesh->ndims; a++)
    if (l.axis[a] == MDL_LAYOUT_BROADCAST && config->split[a] >= 0 && mesh->shape[a] > 1)
      mask |= 1u << a;
  return mask;
}

MdlLayout mdl_saved_input_layout(const MdlGraph *graph, const MdlStrategy *s, int o, int k,
                                 gboolean *regather) {
  const MdlOp *op = mdl_graph_op(graph, o);
  const MdlOpConfig *c = &s->configs[o];
  const MdlMesh *mesh = mdl_strategy_mesh(s, c->mesh);
  MdlLayout saved = mdl_layout_of_operand(op, &op->inputs[k], FALSE, c, mesh);
  *regather = FALSE;
  int p = mdl_graph_tensor(graph, op->inputs[k].tensor)->producer;
  if (!s->sequence_parallel || p < 0 || s->configs[p].mesh != c->mesh) return saved;
  const MdlOp *pop = mdl_graph_op(graph, p);
  MdlLayout produced = mdl_layout_of_operand(pop, &pop->output, TRUE, &s->configs[p], mesh);
  for (int a = 0; a < mesh->ndims; a++)
    if (saved.axis[a] == MDL_LAYOUT_BROADCAST && produced.axis[a] >= 0 && mesh->shape[a] > 1) {
      saved.axis[a] = produced.axis[a];
      *regather = TRUE;
    }
  return saved;
}

static void mesh_clear(gpointer data) {
  MdlMesh *mesh = data;
  g_free(mesh->devices);
  mesh->devices = NULL;
}

MdlStrategy *mdl_strategy_new_empty(int num_ops) {
  MdlStrategy *s = g_new0(MdlStrategy, 1);
  s->meshes = g_array_new(FALSE, TRUE, sizeof(MdlMesh));
  g_array_set_clear_func(s->meshes, mesh_clear);
  s->num_ops = num_ops;
  s->configs = g_new0(MdlOpConfig, num_ops > 0 ? num_ops : 1);
  for (int i = 0; i < num_ops; i++)
    for (int a = 0; a < MDL_MAX_MESH_AXES; a++) s->configs[i].split[a] = -1;
  s->num_stages = 1;
  s->num_microbatches = 1;
  s->schedule = MDL_SCHEDULE_1F1B;
  s->virtual_stages = 1;
  s->bucket_bytes = 25.0 * 1024 * 1024;
  s->overlap = TRUE;
  s->fsdp_prefetch = TRUE;
  s->overlap_grad_reduce = TRUE;
  return s;
}

void mdl_strategy_free(MdlStrategy *strategy) {
  if (!strategy) return;
  g_array_unref(strategy->meshes);
  g_free(strategy->configs);
  g_free(strategy->name);
  g_free(strategy);
}

MdlStrategy *mdl_strategy_copy(const MdlStrategy *strategy) {
  g_return_val_if_fail(strategy != NULL, NULL);
  MdlStrategy *s = mdl_strategy_new_empty(strategy->num_ops);
  for (guint m = 0; m < strategy->meshes->len; m++) {
    const MdlMesh *mesh = mdl_strategy_mesh(strategy, (int)m);
    mdl_strategy_add_mesh(s, mesh->ndims, mesh->shape, mesh->devices);
  }
  GArray *meshes = s->meshes;
  MdlOpConfig *configs = s->configs;
  memcpy(configs, strategy->configs, sizeof(MdlOpConfig) * (gsize)MAX(strategy->num_ops, 0));
  *s = *strategy; /* every scalar field */
  s->meshes = meshes;
  s->configs = configs;
  s->name = g_strdup(strategy->name);
  return s;
}

gboolean mdl_strategy_async_tp_allreduce(const MdlStrategy *s) {
  if (s->async_tp_allreduce != 0) return s->async_tp_allreduce > 0;
  return s->framework == MDL_FRAMEWORK_MEGATRON_LM || s->framework == MDL_FRAMEWORK_CUDA_GRAPHS;
}

gboolean mdl_strategy_same_except_splits(const MdlStrategy *a, const MdlStrategy *b) {
  if (a->num_ops != b->num_ops || a->num_stages != b->num_stages ||
      a->num_microbatches != b->num_microbatches || a->schedule != b->schedule ||
      a->virtual_stages != b->virtual_stages || a->weight_delay != b->weight_delay ||
      a->dtype != b->dtype || a->bucket_bytes != b->bucket_bytes || a->overlap != b->overlap ||
      a->zero_stage != b->zero_stage || a->recompute != b->recompute ||
      a->sequence_parallel != b->sequence_parallel || a->framework != b->framework ||
      a->overlap_param_gather != b->overlap_param_gather || a->tp_overlap != b->tp_overlap ||
      a->fsdp_prefetch != b->fsdp_prefetch || a->overlap_grad_reduce != b->overlap_grad_reduce ||
      a->async_tp_allreduce != b->async_tp_allreduce ||
      a->meshes->len != b->meshes->len)
    return FALSE;
  for (guint m = 0; m < a->meshes->len; m++) {
    const MdlMesh *x = mdl_strategy_mesh(a, (int)m), *y = mdl_strategy_mesh(b, (int)m);
    if (x->ndims != y->ndims || x->ndevices != y->ndevices ||
        memcmp(x->shape, y->shape, sizeof(int) * (gsize)x->ndims) != 0 ||
        memcmp(x->devices, y->devices, sizeof(int) * (gsize)x->ndevices) != 0)
      return FALSE;
  }
  for (int o = 0; o < a->num_ops; o++)
    if (a->configs[o].mesh != b->configs[o].mesh || a->configs[o].stage != b->configs[o].stage)
      return FALSE;
  return TRUE;
}

int mdl_strategy_add_mesh(MdlStrategy *strategy, int ndims, const int *shape, const int *devices) {
  g_return_val_if_fail(ndims >= 1 && ndims <= MDL_MAX_MESH_AXES, -1);
  MdlMesh mesh = {0};
  mesh.ndims = ndims;
  mesh.ndevices = 1;
  for (int a = 0; a < ndims; a++) {
    mesh.shape[a] = shape[a];
    mesh.ndevices *= shape[a];
  }
  mesh.devices = g_memdup2(devices, sizeof(int) * (gsize)mesh.ndevices);
  g_array_append_val(strategy->meshes, mesh);
  return (int)strategy->meshes->len - 1;
}

int mdl_config_dim_degree(const MdlOpConfig *config, const MdlMesh *mesh, int dim) {
  int degree = 1;
  for (int a = 0; a < mesh->ndims; a++)
    if (config->split[a] == dim) degree *= mesh->shape[a];
  return degree;
}

double mdl_config_local_dim(const MdlOp *op, int dim, const MdlOpConfig *config,
                            const MdlMesh *mesh, int num_microbatches) {
  double size = (double)op->dims[dim].size;
  if (op->dims[dim].role == MDL_ROLE_SAMPLE) size /= num_microbatches;
  return size / mdl_config_dim_degree(config, mesh, dim);
}

MdlLayout mdl_layout_of_operand(const MdlOp *op, const MdlOperand *operand, gboolean is_output,
                                const MdlOpConfig *config, const MdlMesh *mesh) {
  MdlLayout layout;
  memset(&layout, MDL_LAYOUT_BROADCAST, sizeof layout);
  for (int a = 0; a < mesh->ndims; a++) {
    int d = config->split[a];
    if (d < 0 || mesh->shape[a] == 1) continue;
    int tdim = -1;
    for (int i = 0; i < MDL_MAX_DIMS; i++)
      if (operand->dim_map[i] == d) {
        tdim = i;
        break;
      }
    if (tdim >= 0)
      layout.axis[a] = (int8_t)tdim;
    else if (is_output && op->dims[d].role == MDL_ROLE_REDUCTION)
      layout.axis[a] = MDL_LAYOUT_PARTIAL;
  }
  return layout;
}

int mdl_tensor_sample_dim(const MdlGraph *graph, int t) {
  for (int o = 0; o < mdl_graph_num_ops(graph); o++) {
    const MdlOp *op = mdl_graph_op(graph, o);
    int sd = mdl_op_sample_dim(op);
    if (sd < 0) continue;
    for (int k = -1; k < op->ninputs; k++) {
      const MdlOperand *opd = k < 0 ? &op->output : &op->inputs[k];
      if (opd->tensor != t) continue;
      for (int i = 0; i < MDL_MAX_DIMS; i++)
        if (opd->dim_map[i] == sd) return i;
    }
  }
  return -1;
}

int *mdl_tensor_sample_dims(const MdlGraph *graph) {
  int nt = mdl_graph_num_tensors(graph);
  int *sdim = g_new(int, MAX(nt, 1));
  for (int t = 0; t < nt; t++) sdim[t] = -1;
  /* The first op (in order) and operand (output, then inputs) that indexes the tensor by its
   * sample dim decides, as in mdl_tensor_sample_dim. */
  for (int o = 0; o < mdl_graph_num_ops(graph); o++) {
    const MdlOp *op = mdl_graph_op(graph, o);
    int sd = mdl_op_sample_dim(op);
    if (sd < 0) continue;
    for (int k = -1; k < op->ninputs; k++) {
      const MdlOperand *opd = k < 0 ? &op->output : &op->inputs[k];
      if (sdim[opd->tensor] >= 0) continue;
      for (int i = 0; i < MDL_MAX_DIMS; i++)
        if (opd->dim_map[i] == sd) {
          sdim[opd->tensor] = i;
          break;
        }
    }
  }
  return sdim;
}

double mdl_layout_local_elements(const MdlGraph *graph, int t, int sample_tdim,
                                 const MdlLayout *layout, const MdlMesh *mesh,
                                 int num_microbatches) {
  const MdlTensor *tensor = mdl_graph_tensor(graph, t);
  double elements = 1.0;
  for (int i = 0; i < tensor->ndims; i++) {
    double size = (double)tensor->shape[i];
    if (i == sample_tdim) size /= num_microbatches;
    for (int a = 0; a < mesh->ndims; a++)
      if (layout->axis[a] == i) size /= mesh->shape[a];
    elements *= size;
  }
  return elements;
}

void mdl_layout_format(const MdlLayout *layout, int naxes, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (int a = 0; a < naxes && used < size; a++) {
    int v = layout->axis[a];
    int n;
    if (v == MDL_LAYOUT_PARTIAL)
      n = snprintf(buf + used, size - used, "%sP", a ? "," : "");
    else if (v == MDL_LAYOUT_BROADCAST)
      n = snprintf(buf + used, size - used, "%sB", a ? "," : "");
    else
      n = snprintf(buf + used, size - used, "%sS(%d)", a ? "," : "", v);
    if (n < 0) break;
    used += (size_t)n;
  }
}

/* @owner: per cluster device, the last mesh that listed it (shared by the calls, so that many
 * meshes on a large cluster cost their sizes, not the cluster's size each). */
static gboolean validate_mesh(const MdlMesh *mesh, int index, const DevCluster *cluster,
                              int *owner, GError **error) {
  int n = dev_cluster_num_devices(cluster);
  if (mesh->ndims < 1 || mesh->ndims > MDL_MAX_MESH_AXES) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY, "mesh %d: %d axes (1..%d allowed)", index,
                mesh->ndims, MDL_MAX_MESH_AXES);
    return FALSE;
  }
  if (mesh->ndevices > n) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "mesh %d needs %d devices but cluster %s has %d", index, mesh->ndevices,
                cluster->name, n);
    return FALSE;
  }
  for (int i = 0; i < mesh->ndevices; i++) {
    int d = mesh->devices[i];
    if (d < 0 || d >= n) {
      g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                  "mesh %d names device %d but cluster %s has devices 0..%d", index, d,
                  cluster->name, n - 1);
      return FALSE;
    }
    if (owner[d] == index) {
      g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY, "mesh %d lists device %d twice", index, d);
      return FALSE;
    }
    owner[d] = index;
  }
  return TRUE;
}

static gboolean validate_config(const MdlStrategy *s, const MdlGraph *graph, int o,
                                GError **error) {
  const MdlOp *op = mdl_graph_op(graph, o);
  const MdlOpConfig *c = &s->configs[o];
  if (c->mesh < 0 || c->mesh >= (int)s->meshes->len) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY, "op %s: mesh %d does not exist", op->name,
                c->mesh);
    return FALSE;
  }
  if (c->stage < 0 || c->stage >= s->num_stages) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY, "op %s: stage %d out of range 0..%d",
                op->name, c->stage, s->num_stages - 1);
    return FALSE;
  }
  const MdlMesh *mesh = mdl_strategy_mesh(s, c->mesh);
  for (int a = 0; a < MDL_MAX_MESH_AXES; a++) {
    int d = c->split[a];
    if (d < 0) continue;
    if (a >= mesh->ndims || d >= op->ndims) {
      g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY, "op %s: split on axis %d is invalid",
                  op->name, a);
      return FALSE;
    }
    if (!op->dims[d].splittable && mesh->shape[a] > 1) {
      g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY, "op %s: dim %s cannot be split",
                  op->name, op->dims[d].name);
      return FALSE;
    }
  }
  for (int d = 0; d < op->ndims; d++) {
    int degree = mdl_config_dim_degree(c, mesh, d);
    int64_t size = op->dims[d].size;
    if (op->dims[d].role == MDL_ROLE_SAMPLE) size /= s->num_microbatches;
    if (degree > 1 && size % degree != 0) {
      g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                  "op %s: split degree %d does not divide dim %s of size %" G_GINT64_FORMAT "%s",
                  op->name, degree, op->dims[d].name, size,
                  op->dims[d].role == MDL_ROLE_SAMPLE ? " (per microbatch)" : "");
      return FALSE;
    }
  }
  return TRUE;
}

/* Virtual stages (interleaved 1F1B, Narayanan et al. 2021, section 2.2): V chunks per rank,
 * only under the interleaved schedule, which (as Megatron-LM's) needs at least two ranks and a
 * whole number of microbatch groups of P. */
static gboolean validate_pipeline(const MdlStrategy *s, GError **error) {
  int V = s->virtual_stages;
  if (V < 1 || s->num_stages % V != 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "virtual_stages=%d must be >= 1 and divide the %d pipeline stages", V,
                s->num_stages);
    return FALSE;
  }
  gboolean interleaved = s->schedule == MDL_SCHEDULE_INTERLEAVED;
  if (V > 1 && !interleaved) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "vp=%d (virtual stages) needs schedule=interleaved, not %s", V,
                mdl_schedule_name(s->schedule));
    return FALSE;
  }
  if (!interleaved) return TRUE;
  int P = s->num_stages / V;
  if (V < 2 || P < 2) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "schedule=interleaved needs vp >= 2 and pp >= 2 (got vp=%d, pp=%d)", V, P);
    return FALSE;
  }
  if (s->num_microbatches % P != 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "schedule=interleaved: %d microbatches are not a multiple of pp=%d (Megatron-LM "
                "requires it)", s->num_microbatches, P);
    return FALSE;
  }
  return TRUE;
}

gboolean mdl_strategy_validate(const MdlStrategy *s, const MdlGraph *graph,
                               const DevCluster *cluster, GError **error) {
  if (s->num_ops != mdl_graph_num_ops(graph)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "strategy has %d op configs but model %s has %d ops", s->num_ops, graph->name,
                mdl_graph_num_ops(graph));
    return FALSE;
  }
  if (s->meshes->len == 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY, "strategy has no device mesh");
    return FALSE;
  }
  if (s->num_stages < 1 || s->num_microbatches < 1) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY, "stages (%d) and microbatches (%d) must be >= 1",
                s->num_stages, s->num_microbatches);
    return FALSE;
  }
  if (s->num_microbatches > MDL_MAX_MICROBATCHES) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "%d microbatches exceed the limit of %d: use larger microbatches (mb)",
                s->num_microbatches, MDL_MAX_MICROBATCHES);
    return FALSE;
  }
  if (!validate_pipeline(s, error)) return FALSE;
  if (s->zero_stage < 0 || s->zero_stage > 3) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY, "zero stage %d (0..3 allowed)",
                s->zero_stage);
    return FALSE;
  }
  if (s->tp_overlap && !s->sequence_parallel) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "tp_overlap needs sequence parallelism (sp=1), as Megatron-Core's "
                "--tp-comm-overlap does");
    return FALSE;
  }
  if (s->overlap_param_gather && s->zero_stage != 1 && s->zero_stage != 2) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "overlap_param_gather needs the distributed optimizer (zero=1 or 2, got zero=%d)",
                s->zero_stage);
    return FALSE;
  }
  if (!s->fsdp_prefetch && s->zero_stage != 3) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "fsdp_prefetch=0 needs FSDP (zero=3, got zero=%d)", s->zero_stage);
    return FALSE;
  }
  if (!s->overlap_grad_reduce && s->zero_stage > 1) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "overlap_grad_reduce=0 needs zero=0 or 1 (got zero=%d: stages 2 and 3 reduce "
                "every microbatch)", s->zero_stage);
    return FALSE;
  }
  if ((unsigned)s->recompute >= MDL_RECOMPUTE_COUNT) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY, "unknown recomputation mode %d",
                (int)s->recompute);
    return FALSE;
  }
  if (graph->batch % s->num_microbatches != 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "%d microbatches do not divide the global batch %" G_GINT64_FORMAT,
                s->num_microbatches, graph->batch);
    return FALSE;
  }
  if (cluster->device.peak_flops[s->dtype] <= 0) {
    g_autofree char *kinds = dev_kinds_supporting(s->dtype);
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "device %s has no %s support (built-in device kinds with it: %s)",
                cluster->device.name, dev_dtype_name(s->dtype), kinds);
    return FALSE;
  }
  int n = dev_cluster_num_devices(cluster);
  g_autofree int *owner = g_new(int, n);
  for (int d = 0; d < n; d++) owner[d] = -1;
  for (guint m = 0; m < s->meshes->len; m++)
    if (!validate_mesh(mdl_strategy_mesh(s, (int)m), (int)m, cluster, owner, error)) return FALSE;
  for (int o = 0; o < s->num_ops; o++)
    if (!validate_config(s, graph, o, error)) return FALSE;

  /* Pipeline stages: data flows to the same or a later stage (chunk c feeds c + 1, across
   * ranks under interleaving); stages share devices only when they are on the same rank.
   * Each (mesh, stage) pair is checked once: ops x mesh sizes would be quadratic. */
  for (int d = 0; d < n; d++) owner[d] = -1;
  g_autofree int *owner_rank = g_new(int, n); /* owner[d]'s rank, where owner[d] >= 0 */
  g_autoptr(GHashTable) checked = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  for (int o = 0; o < s->num_ops; o++) {
    const MdlOp *op = mdl_graph_op(graph, o);
    for (int k = 0; k < op->ninputs; k++) {
      int producer = mdl_graph_tensor(graph, op->inputs[k].tensor)->producer;
      if (producer >= 0 && s->configs[producer].stage > s->configs[o].stage) {
        g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                    "op %s (stage %d) consumes %s from a later stage %d", op->name,
                    s->configs[o].stage, mdl_graph_op(graph, producer)->name,
                    s->configs[producer].stage);
        return FALSE;
      }
    }
    if (s->num_stages == 1) continue;
    const MdlMesh *mesh = mdl_strategy_mesh(s, s->configs[o].mesh);
    int stage = s->configs[o].stage;
    gint64 pair = (gint64)s->configs[o].mesh << 32 | (guint32)stage;
    if (g_hash_table_contains(checked, &pair)) continue;
    g_hash_table_add(checked, g_memdup2(&pair, sizeof pair));
    /* the rank once a pair, not a division per device (a third of this function's time on
     * a Llama 3.1 405B grid search, 2026-12-02) */
    int rank = mdl_strategy_rank_of_stage(s, stage);
    for (int i = 0; i < mesh->ndevices; i++) {
      int d = mesh->devices[i];
      if (owner[d] >= 0 && owner_rank[d] != rank) {
        if (s->virtual_stages > 1)
          g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                      "device %d is used by pipeline stages %d (rank %d) and %d (rank %d)", d,
                      owner[d], mdl_strategy_rank_of_stage(s, owner[d]), stage,
                      mdl_strategy_rank_of_stage(s, stage));
        else
          g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                      "device %d is used by pipeline stages %d and %d", d, owner[d], stage);
        return FALSE;
      }
      owner[d] = stage;
      owner_rank[d] = rank;
    }
  }
  return TRUE;
}

/* The dtype a strategy gets when none is asked for: the model's, falling back to fp16 (then
 * fp32) where the device lacks it (bf16 before Ampere). */
DevDtype mdl_strategy_default_dtype(const MdlGraph *graph, const DevCluster *cluster) {
  DevDtype d = graph->default_dtype;
  if (cluster->device.peak_flops[d] > 0) return d;
  if (d == DEV_DTYPE_BF16 && cluster->device.peak_flops[DEV_DTYPE_FP16] > 0) return DEV_DTYPE_FP16;
  return DEV_DTYPE_FP32;
}

gboolean mdl_strategy_parse_count(const char *family, const char *key, const char *value, int *out,
                               GError **error) {
  char *end = NULL;
  errno = 0;
  long v = strtol(value, &end, 10);
  if (end == value || *end != '\0' || v < 1 || (errno != 0 && v != LONG_MAX)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "strategy %s: %s=%s is not a positive integer",
                family, key, value);
    return FALSE;
  }
  if (v > 1000000000L) { /* LONG_MAX with ERANGE included: a positive integer, too large */
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE,
                "strategy %s: %s=%s is too large (at most 1000000000)", family, key, value);
    return FALSE;
  }
  *out = (int)v;
  return TRUE;
}
