/* costmodel/tuner — cm_collective_estimate and cm_group_collective_time: the collective model
 * shared by simulate, explain, search and `stratsim collective` (cm_tuner.h). */
#include "costmodel/cm_tuner.h"

#include <math.h>
#include <string.h>

/* The NCCL model's choice for a collective it covers: time, algorithm, protocol, the steps the
 * algorithm takes on each link class (for reports) and one phase. */
static void nccl_estimate(const DevCluster *cluster, CmCollectiveEstimate *e) {
  CmNcclHardware hw;
  cm_nccl_hardware(cluster, &hw);
  /* The choice is NCCL's: its tuner's formula (cm_nccl_time), the fastest pair as
   * cm_nccl_tune picks it (the same order: ring, tree, NVLS, NVLS-tree; strictly faster
   * wins). The times are what the kernels take (cm_nccl_exec_time): each candidate's is that
   * of the protocol the tuner gives it. */
  static const CmAlgorithm order[] = {CM_ALGO_RING, CM_ALGO_TREE, CM_ALGO_NVLS, CM_ALGO_NVLS_TREE};
  CmAlgorithm algorithm = CM_ALGO_RING;
  CmProtocol protocol = CM_PROTO_SIMPLE;
  double best = INFINITY;
  for (gsize i = 0; i < G_N_ELEMENTS(order); i++) {
    CmAlgorithm a = order[i];
    if (!cm_algorithm_is_candidate(e->kind, a)) continue;
    double best_a = INFINITY;
    for (int p = 0; p < CM_PROTO_COUNT; p++) {
      double t = cm_nccl_time(e->kind, a, (CmProtocol)p, &e->shape, &hw, e->bytes, NULL);
      if (isnan(t) || !(t < best_a)) continue;
      best_a = t;
      e->candidates[a] = cm_nccl_exec_time(e->kind, a, (CmProtocol)p, &e->shape, &hw, e->bytes, NULL);
      if (t < best) best = t, algorithm = a, protocol = (CmProtocol)p;
    }
  }
  /* Where the platform's tuner plugin chooses (AWS's region tuner on p6-b200: cm_aws_tuner.h),
   * its pair replaces the formula's; the candidates keep the formula's times. */
  CmAlgorithm plugin_algorithm;
  CmProtocol plugin_protocol;
  if (cm_nccl_plugin_choice(e->kind, &e->shape, &hw, e->bytes, &plugin_algorithm, &plugin_protocol)) {
    algorithm = plugin_algorithm;
    protocol = plugin_protocol;
  }
  CmNcclCost cost = {0};
  cm_nccl_time(e->kind, algorithm, protocol, &e->shape, &hw, e->bytes, &cost);
  double t = cm_nccl_exec_time(e->kind, algorithm, protocol, &e->shape, &hw, e->bytes, NULL);
  e->algorithm = algorithm;
  e->protocol = (int)protocol;
  e->channels = cost.channels;
  e->model_time_s = t;
  const CmGroupShape *g = &e->shape;
  int passes = e->kind == CM_ALL_REDUCE ? 2 : 1;
  if (algorithm == CM_ALGO_RING && (e->kind == CM_BROADCAST || e->kind == CM_REDUCE)) passes = 1;
  if (algorithm == CM_ALGO_RING) {
    e->steps[DEV_LINK_INTRA] = passes * (g->ranks - g->hosts);
    e->steps[DEV_LINK_INTER] = passes * (g->hosts - 1);
  } else if (algorithm == CM_ALGO_TREE) {
    e->steps[DEV_LINK_INTRA] = 2 * (g->ranks / g->hosts - 1);
    e->steps[DEV_LINK_INTER] = 2 * (int)floor(log2(g->hosts));
  } else { /* NVLS: one switch reduction inside the host; NVLS-tree: and the tree across */
    e->steps[DEV_LINK_INTRA] = 1;
    e->steps[DEV_LINK_INTER] = algorithm == CM_ALGO_NVLS_TREE ? 2 * (int)floor(log2(g->hosts)) : 0;
  }
  e->nphases = 1;
  CmCollectivePhase *ph = &e->phases[0];
  ph->kind = e->kind;
  ph->algorithm = algorithm;
  ph->link = g->hosts > 1 ? DEV_LINK_INTER : DEV_LINK_INTRA;
  ph->ranks = g->ranks;
  ph->bytes = e->bytes;
  ph->time_s = t;
}

/* All-to-all and send/recv (NCCL's point-to-point): the alpha-beta forms of cm_collective.h. */
static void p2p_estimate(const DevCluster *cluster, CmCollectiveEstimate *e) {
  CmLinkFigures figures;
  cm_link_figures(cluster, &figures);
  CmAlgorithm best = CM_ALGO_NONE;
  double best_time = INFINITY;
  for (int a = 0; a < CM_ALGO_COUNT; a++) {
    if (!cm_algorithm_is_candidate(e->kind, (CmAlgorithm)a)) continue;
    e->candidates[a] = cm_algorithm_time(e->kind, (CmAlgorithm)a, &e->shape, &figures, e->bytes, NULL);
    if (!isnan(e->candidates[a]) && e->candidates[a] < best_time) {
      best_time = e->candidates[a];
      best = (CmAlgorithm)a;
    }
  }
  cm_algorithm_time(e->kind, best, &e->shape, &figures, e->bytes, e);
}

/* The model's estimate for a group of @shape (no calibration). */
static CmCollectiveEstimate model_estimate(const DevCluster *cluster, CmCollective kind,
                                           const CmGroupShape *shape, double bytes) {
  CmCollectiveEstimate e;
  memset(&e, 0, sizeof e);
  for (int a = 0; a < CM_ALGO_COUNT; a++) e.candidates[a] = NAN;
  e.protocol = -1;
  e.kind = kind;
  e.bytes = bytes;
  e.shape = *shape;
  if (shape->ranks <= 1) e.algorithm = CM_ALGO_NONE;
  else if (cm_nccl_covers(kind)) nccl_estimate(cluster, &e);
  else p2p_estimate(cluster, &e);
  e.time_s = e.model_time_s;
  e.source = CM_TIME_MODEL;
  return e;
}

/* The model's time of one collective at another size or shape, for a calibration
 * (cm_calibration_time_model): the group's own shape at its rank and host count, else ranks
 * spread evenly over hosts of this cluster (NAN where they do not fit on its hosts). */
typedef struct {
  const DevCluster *cluster;
  CmCollective kind;
  const CmGroupShape *shape;
} ModelCurve;

static double model_time_at(int ranks, int hosts, double bytes, gpointer data) {
  const ModelCurve *m = data;
  CmGroupShape shape = *m->shape;
  if (ranks != shape.ranks || hosts != shape.hosts) {
    int per = hosts > 0 ? ranks / hosts : 0;
    if (per < 1 || per * hosts != ranks || per > m->cluster->gpus_per_node) return NAN;
    shape = (CmGroupShape){ranks, hosts, per, per};
  }
  return model_estimate(m->cluster, m->kind, &shape, bytes).model_time_s;
}

CmCollectiveEstimate cm_collective_estimate(const DevCluster *cluster, CmCollective kind,
                                            const int *devices, int n, double bytes,
                                            const CmCalibration *calibration) {
  CmCollectiveEstimate e;
  memset(&e, 0, sizeof e);
  g_return_val_if_fail(cluster != NULL && kind < CM_COLLECTIVE_COUNT && n >= 0, e);
  CmGroupShape shape;
  cm_group_shape(cluster, devices, n, &shape);
  e = model_estimate(cluster, kind, &shape, bytes);
  CmCalibratedTime calibrated;
  ModelCurve curve = {cluster, kind, &shape};
  if (calibration && n > 1 &&
      cm_calibration_time_model(calibration, kind, n, shape.hosts, bytes, model_time_at, &curve,
                                &calibrated)) {
    e.time_s = calibrated.time_s;
    e.source = calibrated.source;
  }
  e.algbw = e.time_s > 0 ? bytes / e.time_s : 0.0;
  e.busbw = e.algbw * cm_collective_busbw_factor(kind, n);
  return e;
}

double cm_group_collective_time(const CmParams *params, const DevCluster *cluster,
                                CmCollective kind, const int *devices, int p, double bytes) {
  if (kind != CM_SEND_RECV && p <= 1) return 0.0;
  CmCollectiveEstimate e = cm_collective_estimate(cluster, kind, devices, p, bytes, params->calibration);
  return e.time_s;
}
