/* costmodel/calibrate_lookup — predicting with a calibration (cm_calibration_time,
 * cm_calibration_link_cost; contract in cm_calibrate.h). Per (collective, ranks, hosts) the
 * measured table decides in three size regimes, so a prediction never leaves the measured
 * curve's shape:
 *   - inside the measured sizes, log-log interpolation of bus bandwidth;
 *   - above the largest (the bandwidth asymptote): the last measured time plus the extra bytes
 *     at the model's peak bandwidth when the caller gives it (else the slope of the largest
 *     sizes), never more per byte than the largest size's average, so the bus bandwidth never
 *     falls below the largest measured one (issue 14: alpha-beta fits extrapolated 36-255%
 *     off);
 *   - below the smallest (the latency regime): the smallest time less the missing bytes at the
 *     marginal cost of the two smallest sizes, between the smallest time scaled by size and the
 *     smallest time itself.
 * Only without a table for that rank count does the fit of the collective and link class
 * answer (its latency is a base plus one per ring step: a function of the ranks). */
#include "costmodel/cm_calibrate-int.h"

#include <math.h>
#include <string.h>

static const CmCalibrationFit *find_fit(const CmCalibration *c, CmCollective kind, DevLinkClass link) {
  for (guint i = 0; i < c->fits->len; i++) {
    const CmCalibrationFit *f = &g_array_index(c->fits, CmCalibrationFit, i);
    if (f->kind == kind && f->link == link) return f;
  }
  return NULL;
}

static const CmCalibrationTable *find_table(const CmCalibration *c, CmCollective kind, int ranks,
                                            int nodes) {
  for (guint i = 0; i < c->tables->len; i++) {
    const CmCalibrationTable *t = &g_array_index(c->tables, CmCalibrationTable, i);
    if (t->kind == kind && t->ranks == ranks && t->nodes == nodes) return t;
  }
  return NULL;
}

/* Bus bandwidth at @bytes within the table's sizes: linear in log(size) - log(busbw). Equal
 * to interpolating log(time), since time = size x factor / busbw. */
static double table_busbw(const CmCalibrationTable *t, double bytes) {
  int hi = 1;
  while (hi < t->npoints - 1 && t->bytes[hi] < bytes) hi++;
  if (t->npoints == 1 || bytes <= t->bytes[0]) return t->busbw[0];
  int lo = hi - 1;
  double x = (log(bytes) - log(t->bytes[lo])) / (log(t->bytes[hi]) - log(t->bytes[lo]));
  return exp(log(t->busbw[lo]) + x * (log(t->busbw[hi]) - log(t->busbw[lo])));
}

static double table_time(const CmCalibrationTable *t, double factor, int i) {
  return t->bytes[i] * factor / t->busbw[i];
}

/* The marginal seconds per byte above the table. With the model's @floor (its cost per byte at
 * peak bandwidth) that floor: the measured top sizes of a sweep still carry latency and
 * protocol ramps that a slope through them extrapolates (on the public 8-GPU curves a
 * two-point slope was off by 23-34% on average at 4x, the floor by 10-12%,
 * tests/test-nccl.c). Without one, the least-squares slope over the sizes within a factor 4
 * of the largest. Either way at most the largest size's average seconds per byte, so the bus
 * bandwidth never falls below the largest measured one. */
static double top_marginal(const CmCalibrationTable *t, double factor, double floor) {
  int last = t->npoints - 1;
  double average = table_time(t, factor, last) / t->bytes[last];
  if (floor > 0) return MIN(floor, average);
  if (t->npoints < 2) return average;
  int first = last - 1;
  while (first > 0 && t->bytes[first - 1] >= t->bytes[last] / 4) first--;
  double n = last - first + 1, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (int i = first; i <= last; i++) {
    double x = t->bytes[i], y = table_time(t, factor, i);
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  double s = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  return CLAMP(s, 0.0, average);
}

/* Seconds per byte between the two smallest measured sizes, clamped to [0, the smallest size's
 * average]. */
static double bottom_marginal(const CmCalibrationTable *t, double factor) {
  double average = table_time(t, factor, 0) / t->bytes[0];
  if (t->npoints < 2) return average;
  double s = (table_time(t, factor, 1) - table_time(t, factor, 0)) / (t->bytes[1] - t->bytes[0]);
  return CLAMP(s, 0.0, average);
}

gboolean cm_calibration_time(const CmCalibration *calibration, CmCollective kind, int ranks,
                             int nodes, double bytes, CmCalibratedTime *out) {
  return cm_calibration_time_bounded(calibration, kind, ranks, nodes, bytes, 0.0, out);
}

gboolean cm_calibration_time_bounded(const CmCalibration *calibration, CmCollective kind,
                                     int ranks, int nodes, double bytes, double floor,
                                     CmCalibratedTime *out) {
  g_return_val_if_fail(calibration != NULL && out != NULL && kind < CM_COLLECTIVE_COUNT, FALSE);
  if (ranks < 2) return FALSE;
  const CmCalibrationTable *t = find_table(calibration, kind, ranks, nodes);
  const CmCalibrationFit *f = find_fit(calibration, kind, cm_calibration_link_of(nodes));
  double factor = cm_collective_busbw_factor(kind, ranks);
  out->alpha = f ? f->alpha : NAN;
  out->beta = f ? f->beta : NAN;
  if (t) {
    int last = t->npoints - 1;
    if (bytes > t->bytes[last]) {
      /* The asymptote: the top sizes' marginal cost, at most the top size's average. */
      double s = top_marginal(t, factor, floor);
      out->time_s = table_time(t, factor, last) + (bytes - t->bytes[last]) * s;
      out->source = CM_TIME_CALIBRATION_ASYMPTOTE;
    } else if (bytes < t->bytes[0]) {
      /* The latency regime: the bottom two sizes' marginal cost, at most the bottom size's
       * average (so the time stays above the bottom time scaled down by size). */
      double s = bottom_marginal(t, factor);
      out->time_s = table_time(t, factor, 0) - (t->bytes[0] - bytes) * s;
      out->source = CM_TIME_CALIBRATION_LATENCY;
    } else {
      out->time_s = bytes * factor / table_busbw(t, bytes);
      out->source = CM_TIME_CALIBRATION_TABLE;
    }
    return TRUE;
  }
  if (!f) return FALSE;
  out->source = CM_TIME_CALIBRATION_FIT;
  out->time_s = cm_calibration_fit_time(f, kind, ranks, bytes);
  return TRUE;
}

gboolean cm_calibration_link_cost(const CmCalibration *calibration, CmCollective kind,
                                  DevLinkClass link, CmLinkCost *out) {
  g_return_val_if_fail(calibration != NULL && out != NULL, FALSE);
  const CmCalibrationFit *f = find_fit(calibration, kind, link);
  if (!f) return FALSE;
  out->alpha = f->alpha;
  out->beta = f->beta;
  out->link = link;
  return TRUE;
}

/* Whether two link descriptions are the same hardware. */
static gboolean same_link(const DevLink *a, const DevLink *b) {
  return g_strcmp0(a->kind, b->kind) == 0 && a->bandwidth == b->bandwidth && a->latency == b->latency;
}

char *cm_calibration_cluster_mismatch(const CmCalibration *calibration, const DevCluster *cluster) {
  g_return_val_if_fail(calibration != NULL && cluster != NULL, NULL);
  g_autoptr(GError) error = NULL;
  DevCluster *measured = dev_cluster_parse_spec(calibration->cluster, &error);
  if (!measured)
    return g_strdup_printf("calibration '%s' names cluster '%s', which cannot be read (%s)",
                           calibration->name, calibration->cluster, error->message);
  const char *what = NULL;
  if (g_strcmp0(measured->device.name, cluster->device.name) != 0) what = "GPU";
  else if (measured->gpus_per_node != cluster->gpus_per_node) what = "GPUs per host";
  else if (!same_link(&measured->link[DEV_LINK_INTRA], &cluster->link[DEV_LINK_INTRA])) what = "intra-host link";
  else if (!same_link(&measured->link[DEV_LINK_INTER], &cluster->link[DEV_LINK_INTER]) ||
           measured->nics_per_node != cluster->nics_per_node ||
           measured->oversubscription != cluster->oversubscription)
    what = "inter-host network";
  char *out = what ? g_strdup_printf("calibration '%s' was measured on '%s', whose %s differs from "
                                     "this cluster's; its times may not apply",
                                     calibration->name, calibration->cluster, what)
                   : NULL;
  dev_cluster_free(measured);
  return out;
}
