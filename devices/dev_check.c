/* devices/check — the error domain and the range checks every user-supplied figure passes
 * (from a preset, a cluster file or an override): counts are whole numbers from 1 to
 * DEV_MAX_COUNT, bandwidths positive and finite, latencies non-negative and finite, and none
 * absurdly large. Messages quote the value as the user wrote it, in the user's units. */
#include "devices/dev_cluster-int.h"

#include <math.h>

G_DEFINE_QUARK(dev-error-quark, dev_error)

gboolean dev_check_count(const char *what, double raw, int *out, GError **error) {
  if (!isfinite(raw) || raw != floor(raw) || raw < 1 || raw > DEV_MAX_COUNT) {
    g_set_error(error, DEV_ERROR, DEV_ERROR_INVALID,
                "%s must be a whole number from 1 to %d, got %g", what, DEV_MAX_COUNT, raw);
    return FALSE;
  }
  *out = (int)raw;
  return TRUE;
}

gboolean dev_check_bandwidth(const char *what, double raw, double si, GError **error) {
  if (!isfinite(raw) || !isfinite(si) || si <= 0) {
    g_set_error(error, DEV_ERROR, DEV_ERROR_INVALID,
                "%s must be a positive, finite bandwidth, got %g", what, raw);
    return FALSE;
  }
  if (si > DEV_MAX_BANDWIDTH) {
    g_set_error(error, DEV_ERROR, DEV_ERROR_INVALID,
                "%s is absurdly large (%g; the limit is %g bytes/s)", what, raw, DEV_MAX_BANDWIDTH);
    return FALSE;
  }
  return TRUE;
}

gboolean dev_check_latency(const char *what, double raw, double si, GError **error) {
  if (!isfinite(raw) || !isfinite(si) || si < 0) {
    g_set_error(error, DEV_ERROR, DEV_ERROR_INVALID,
                "%s must be a non-negative, finite latency, got %g", what, raw);
    return FALSE;
  }
  if (si > DEV_MAX_LATENCY) {
    g_set_error(error, DEV_ERROR, DEV_ERROR_INVALID,
                "%s is absurdly large (%g; the limit is %g s)", what, raw, DEV_MAX_LATENCY);
    return FALSE;
  }
  return TRUE;
}

gboolean dev_check_figure(const char *what, double raw, double si, gboolean allow_zero,
                          double max_si, GError **error) {
  if (!isfinite(raw) || !isfinite(si) || si < 0 || (si == 0 && !allow_zero)) {
    g_set_error(error, DEV_ERROR, DEV_ERROR_INVALID, "%s must be %s and finite, got %g", what,
                allow_zero ? "zero (unsupported) or positive" : "positive", raw);
    return FALSE;
  }
  if (si > max_si) {
    g_set_error(error, DEV_ERROR, DEV_ERROR_INVALID, "%s is absurdly large (%g)", what, raw);
    return FALSE;
  }
  return TRUE;
}

gboolean dev_check_devices(const char *where, int nodes, int gpus_per_node, GError **error) {
  if ((gint64)nodes * gpus_per_node > DEV_MAX_DEVICES) {
    g_set_error(error, DEV_ERROR, DEV_ERROR_INVALID,
                "%s: nodes x gpus_per_node = %d x %d exceeds the limit of %d devices", where,
                nodes, gpus_per_node, DEV_MAX_DEVICES);
    return FALSE;
  }
  return TRUE;
}

gboolean dev_check_oversubscription(const char *what, double raw, double *out, GError **error) {
  if (!(raw >= 1.0 && raw <= 1000.0)) {
    g_set_error(error, DEV_ERROR, DEV_ERROR_INVALID,
                "%s must be an oversubscription ratio from 1 (non-blocking) to 1000, got %g", what,
                raw);
    return FALSE;
  }
  *out = raw;
  return TRUE;
}
