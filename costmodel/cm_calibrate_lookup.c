/* costmodel/calibrate_lookup — predicting with a calibration (cm_calibration_time,
 * cm_calibration_link_cost; contract in cm_calibrate.h). Per (collective, ranks, hosts) the
 * measured table decides in three size regimes, so a prediction never leaves the measured
 * curve's shape:
 *   - inside the measured sizes, one latency + size / bandwidth line per interval between two
 *     measured sizes (time linear in size: an alpha-beta fit per size regime, exact at both
 *     ends). On the public sweeps with every other size held out this missed by 4.0% on
 *     average and 19.8% at worst, where interpolating log bus bandwidth in log size (a power
 *     law per interval, the earlier rule) missed by 4.0% and 25.5% (A100 8 MiB, B200 2 MiB:
 *     20.1% -> 13.3%);
 *   - above the largest (the bandwidth asymptote): the last measured time plus what the
 *     model says the extra bytes cost at these sizes (its time at @bytes less its time at the
 *     largest measured size: its protocol, algorithm and pipeline ramps, cm_nccl_exec.c) when
 *     the caller gives the model (cm_calibration_time_model), else the model's peak cost per
 *     byte (cm_calibration_time_bounded), else the slope of the largest sizes; never less per
 *     byte than the model's peak, never more than the largest size's average, so the bus
 *     bandwidth never falls below the largest measured one (issue 14: alpha-beta fits
 *     extrapolated 36-255% off). On the public sweeps at 4x the largest fitted size: 7.8%
 *     mean, 33.6% max with the model's extra time, 8.6% and 39.6% with its peak cost;
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

static double table_time(const CmCalibrationTable *t, double factor, int i) {
  return t->bytes[i] * factor / t->busbw[i];
}

/* Time at @bytes within the table's sizes: the line through the measured sizes either side. */
static double table_interpolate(const CmCalibrationTable *t, double factor, double bytes) {
  if (t->npoints == 1 || bytes <= t->bytes[0]) return table_time(t, factor, 0);
  int hi = 1;
  while (hi < t->npoints - 1 && t->bytes[hi] < bytes) hi++;
  double lo_t = table_time(t, factor, hi - 1), hi_t = table_time(t, factor, hi);
  double x = (bytes - t->bytes[hi - 1]) / (t->bytes[hi] - t->bytes[hi - 1]);
  return lo_t + x * (hi_t - lo_t);
}

/* The marginal seconds per byte from the largest measured size to @bytes. With the @model
 * (cm_calibration_time_model): what the model's time grows by over those bytes, at least its
 * peak cost per byte (@floor). With only the @floor (its cost per byte at peak bandwidth) that
 * floor: the measured top sizes of a sweep still carry latency and protocol ramps that a slope
 * through them extrapolates (on the public 8-GPU curves a two-point slope was off by 23-34% on
 * average at 4x, the floor by 10-12%, tests/test-nccl.c). With neither, the least-squares
 * slope over the sizes within a factor 4 of the largest. Always at most the largest size's
 * average seconds per byte, so the bus bandwidth never falls below the largest measured one. */
static double top_marginal(const CmCalibrationTable *t, double factor, double floor, double bytes,
                           CmModelTimeFn model, gpointer data) {
  int last = t->npoints - 1;
  double average = table_time(t, factor, last) / t->bytes[last];
  if (model) {
    double extra = (model(t->ranks, t->nodes, bytes, data) - model(t->ranks, t->nodes, t->bytes[last], data)) /
                   (bytes - t->bytes[last]);
    return MIN(MAX(extra, floor), average);
  }
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

/* The time of @bytes on table @t in its three regimes; @source receives which. */
static double table_lookup(const CmCalibrationTable *t, double bytes, double floor, CmModelTimeFn model,
                           gpointer data, CmTimeSource *source) {
  double factor = cm_collective_busbw_factor(t->kind, t->ranks);
  int last = t->npoints - 1;
  if (bytes > t->bytes[last]) {
    /* The asymptote: the extra bytes' cost, at most the top size's average. */
    *source = CM_TIME_CALIBRATION_ASYMPTOTE;
    return table_time(t, factor, last) + (bytes - t->bytes[last]) * top_marginal(t, factor, floor, bytes, model, data);
  }
  if (bytes < t->bytes[0]) {
    /* The latency regime: the bottom two sizes' marginal cost, at most the bottom size's
     * average (so the time stays above the bottom time scaled down by size). */
    *source = CM_TIME_CALIBRATION_LATENCY;
    return table_time(t, factor, 0) - (t->bytes[0] - bytes) * bottom_marginal(t, factor);
  }
  *source = CM_TIME_CALIBRATION_TABLE;
  return table_interpolate(t, factor, bytes);
}

/* The model's peak cost per byte for the shape of @t: its time at 2^50 bytes over 2^50. */
static double model_floor(const CmCalibrationTable *t, CmModelTimeFn model, gpointer data) {
  const double huge = 1125899906842624.0; /* 2^50 bytes: latency is nothing there */
  double f = model(t->ranks, t->nodes, huge, data) / huge;
  return isfinite(f) && f > 0 ? f : 0.0;
}

/* The table to carry over to (@ranks, @nodes), which has none: of the same collective and link
 * class (one host, or several), the nearest in log ranks, then in log hosts (the first of
 * equals in the calibration's order). NULL when there is none: a table of one fabric is not
 * carried to the other (below). */
static const CmCalibrationTable *nearest_table(const CmCalibration *c, CmCollective kind, int ranks,
                                               int nodes) {
  const CmCalibrationTable *best = NULL;
  double best_d = INFINITY;
  for (guint i = 0; i < c->tables->len; i++) {
    const CmCalibrationTable *t = &g_array_index(c->tables, CmCalibrationTable, i);
    if (t->kind != kind || cm_calibration_link_of(t->nodes) != cm_calibration_link_of(nodes)) continue;
    double d = 1e3 * fabs(log((double)t->ranks / ranks)) + fabs(log((double)t->nodes / nodes));
    if (d < best_d) best_d = d, best = t;
  }
  return best;
}

static gboolean lookup(const CmCalibration *calibration, CmCollective kind, int ranks, int nodes,
                       double bytes, double floor, CmModelTimeFn model, gpointer data,
                       CmCalibratedTime *out) {
  g_return_val_if_fail(calibration != NULL && out != NULL && kind < CM_COLLECTIVE_COUNT, FALSE);
  if (ranks < 2) return FALSE;
  const CmCalibrationTable *t = find_table(calibration, kind, ranks, nodes);
  const CmCalibrationFit *f = find_fit(calibration, kind, cm_calibration_link_of(nodes));
  out->alpha = f ? f->alpha : NAN;
  out->beta = f ? f->beta : NAN;
  if (t) {
    out->time_s = table_lookup(t, bytes, model ? model_floor(t, model, data) : floor, model, data, &out->source);
    return TRUE;
  }
  /* Another rank or host count measured on the same link class: its time at this size, scaled
   * by the model's ratio of the two shapes (its ring steps, tree depth and bandwidths). Across
   * link classes (one host from several, or back) the same scaling took the public 8xB200
   * curves from the model's 20.8% / 22.0% mean error to 13.8% / 12.2%, but it carries one
   * fabric's departure from the model onto another (a network's onto NVLink), so it is not
   * done. */
  const CmCalibrationTable *ref = model ? nearest_table(calibration, kind, ranks, nodes) : NULL;
  if (ref) {
    double mine = model(ranks, nodes, bytes, data), theirs = model(ref->ranks, ref->nodes, bytes, data);
    if (isfinite(mine) && isfinite(theirs) && mine > 0 && theirs > 0) {
      CmTimeSource regime;
      out->time_s = table_lookup(ref, bytes, model_floor(ref, model, data), model, data, &regime) * mine / theirs;
      out->source = CM_TIME_CALIBRATION_SCALED;
      return TRUE;
    }
  }
  if (!f) return FALSE;
  out->source = CM_TIME_CALIBRATION_FIT;
  out->time_s = cm_calibration_fit_time(f, kind, ranks, bytes);
  return TRUE;
}

gboolean cm_calibration_time_bounded(const CmCalibration *calibration, CmCollective kind,
                                     int ranks, int nodes, double bytes, double floor,
                                     CmCalibratedTime *out) {
  return lookup(calibration, kind, ranks, nodes, bytes, floor, NULL, NULL, out);
}

gboolean cm_calibration_time_model(const CmCalibration *calibration, CmCollective kind, int ranks,
                                   int nodes, double bytes, CmModelTimeFn model, gpointer data,
                                   CmCalibratedTime *out) {
  g_return_val_if_fail(model != NULL, FALSE);
  return lookup(calibration, kind, ranks, nodes, bytes, 0.0, model, data, out);
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
           measured->oversubscription != cluster->oversubscription ||
           measured->net_latency != cluster->net_latency ||
           measured->net_step_latency != cluster->net_step_latency ||
           measured->net_simple_extra != cluster->net_simple_extra ||
           g_strcmp0(measured->nccl_algo, cluster->nccl_algo) != 0 ||
           g_strcmp0(measured->nccl_proto, cluster->nccl_proto) != 0 ||
           g_strcmp0(measured->nccl_tuner, cluster->nccl_tuner) != 0)
    what = "inter-host network";
  char *out = what ? g_strdup_printf("calibration '%s' was measured on '%s', whose %s differs from "
                                     "this cluster's; its times may not apply",
                                     calibration->name, calibration->cluster, what)
                   : NULL;
  dev_cluster_free(measured);
  return out;
}
