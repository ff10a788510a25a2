/* search/baseline — the strategies a search reports beside its own best: data parallelism with
 * the fewest microbatches that fit, Krizhevsky's "one weird trick" for convolutional models,
 * and the one simulation each baseline (and the reported best) gets. Split from srch_run.c. */
#include "search/srch-int.h"

#include <math.h>

/* One simulation for reporting: time, peak memory, fit. */
void srch_predict(const MdlGraph *graph, const MdlStrategy *s, const DevCluster *cluster,
                  const CmParams *params, const SrchOptions *o, double *time, double *peak,
                  gboolean *fits) {
  GError *error = NULL;
  SimRun *run = sim_run_new_with_options(graph, s, cluster, params, &o->sim, &error);
  *time = INFINITY;
  *peak = 0;
  *fits = FALSE;
  if (!run) {
    g_debug("search: %s", error->message);
    g_clear_error(&error);
    return;
  }
  *time = sim_run_prediction(run)->iteration_time_s;
  *peak = sim_run_prediction(run)->peak_memory_bytes;
  *fits = sim_run_prediction(run)->fits_memory;
  sim_run_free(run);
}

void srch_set_baseline(SrchBaseline *b, const char *name, char *detail, MdlStrategy *s,
                       const MdlGraph *graph, const DevCluster *cluster, const CmParams *params,
                       const SrchOptions *o) {
  b->name = g_strdup(name);
  b->detail = detail;
  b->strategy = s;
  b->grid_index = -1;
  b->iteration_time_s = INFINITY;
  if (s) srch_predict(graph, s, cluster, params, o, &b->iteration_time_s, &b->peak_memory_bytes, &b->fits_memory);
}

static gboolean fits(const MdlGraph *graph, const MdlStrategy *s, const DevCluster *cluster) {
  return srch_peak_memory(graph, s, cluster) <= cluster->device.memory_bytes;
}

/* Data parallelism over every device with the fewest microbatches (gradient accumulation)
 * that fit in memory; the one-microbatch strategy when none fits. */
MdlStrategy *srch_baseline_data_parallel(const MdlGraph *graph, const DevCluster *cluster,
                                         DevDtype dtype, MdlFramework framework, char **detail) {
  int n = dev_cluster_num_devices(cluster);
  if (graph->batch % n) {
    *detail = g_strdup_printf("the batch of %" G_GINT64_FORMAT " does not split over %d GPUs",
                              (gint64)graph->batch, n);
    return NULL;
  }
  int64_t per = graph->batch / n;
  MdlStrategy *first = NULL;
  for (int64_t m = 1; m <= per; m++) {
    if (per % m) continue;
    MdlMegatronConfig cfg = {.tp = 1, .pp = 1, .dp = n, .microbatch_size = (int)(per / m),
                             .schedule = MDL_SCHEDULE_1F1B, .dtype = dtype, .framework = framework};
    GError *error = NULL;
    MdlStrategy *s = mdl_strategy_megatron(graph, cluster, &cfg, &error);
    if (!s) {
      *detail = g_strdup(error->message);
      g_error_free(error);
      mdl_strategy_free(first);
      return NULL;
    }
    if (fits(graph, s, cluster)) {
      mdl_strategy_free(first);
      *detail = g_strdup_printf("sample dim split over all %d GPUs, %" G_GINT64_FORMAT
                                " microbatch%s of %" G_GINT64_FORMAT, n, (gint64)m,
                                m == 1 ? "" : "es", (gint64)(per / m));
      return s;
    }
    if (!first) first = s;
    else mdl_strategy_free(s);
  }
  *detail = g_strdup_printf("sample dim split over all %d GPUs: does not fit with any number "
                            "of microbatches", n);
  return first;
}

/* Krizhevsky 2014, "One weird trick": data-parallel convolutions, fully connected layers split
 * on their parameter dim over all devices; NULL for models without convolutions. */
MdlStrategy *srch_baseline_weird_trick(const MdlGraph *graph, const DevCluster *cluster,
                                       DevDtype dtype, MdlFramework framework, char **detail) {
  gboolean convs = FALSE;
  for (int o = 0; o < mdl_graph_num_ops(graph); o++) convs |= mdl_graph_op(graph, o)->kind == MDL_OP_CONV2D;
  if (!convs) {
    *detail = g_strdup("applies to models with convolutions");
    return NULL;
  }
  int n = dev_cluster_num_devices(cluster);
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_data_parallel(graph, cluster, n, dtype, &error);
  if (!s) {
    *detail = g_strdup_printf("no data-parallel layout to start from: %s", error->message);
    g_error_free(error);
    return NULL;
  }
  int model_parallel = 0;
  const MdlMesh *mesh = mdl_strategy_mesh(s, 0);
  for (int o = 0; o < mdl_graph_num_ops(graph); o++) {
    const MdlOp *op = mdl_graph_op(graph, o);
    if (op->kind != MDL_OP_MATMUL) continue;
    for (int d = 0; d < op->ndims; d++) {
      if (op->dims[d].role != MDL_ROLE_PARAMETER || !op->dims[d].splittable ||
          op->dims[d].size % mesh->ndevices)
        continue;
      /* The data-parallel mesh is (dp, 1): the whole split moves to the parameter dim. */
      s->configs[o].split[0] = (int8_t)(mesh->shape[0] > 1 ? d : -1);
      s->configs[o].split[1] = (int8_t)(mesh->shape[0] > 1 ? -1 : d);
      model_parallel++;
      break;
    }
  }
  if (!mdl_strategy_validate(s, graph, cluster, &error)) {
    *detail = g_strdup_printf("invalid: %s", error->message);
    g_error_free(error);
    mdl_strategy_free(s);
    return NULL;
  }
  s->framework = framework;
  g_free(s->name);
  s->name = g_strdup("one-weird-trick");
  s->dp = s->tp = s->pp = s->vp = s->microbatch_size = 0;
  *detail = g_strdup_printf("convolutions data parallel, %d FC layers split on their output "
                            "features over %d GPUs", model_parallel, n);
  return s;
}
