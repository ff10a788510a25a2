/* costmodel/check — published collective curves against the model and the calibration
 * (cm_check.h). */
#include "costmodel/cm_check.h"

#include <math.h>
#include <string.h>

enum { COL_KIND, COL_SIZE, COL_RANKS, COL_NODES, COL_GPN, COL_SYSTEM, COL_ALGBW, COL_BUSBW,
       COL_TIME, COL_SOURCE, NCOLS };

void cm_curve_free(CmCurve *curve) {
  if (!curve) return;
  g_free(curve->system);
  g_free(curve->source);
  g_array_free(curve->bytes, TRUE);
  g_array_free(curve->time_s, TRUE);
  g_free(curve);
}

/* Splits one CSV line (RFC 4180 quoting, "" for a quote inside quotes) into @fields (g_strfreev). */
static char **split_csv(const char *line) {
  GPtrArray *out = g_ptr_array_new();
  GString *field = g_string_new(NULL);
  gboolean quoted = FALSE;
  for (const char *p = line;; p++) {
    if (quoted && *p == '"' && p[1] == '"') {
      g_string_append_c(field, '"');
      p++;
    } else if (*p == '"') {
      quoted = !quoted;
    } else if ((*p == ',' && !quoted) || *p == '\0' || (*p == '\r' && !quoted)) {
      g_ptr_array_add(out, g_string_free(field, FALSE));
      if (*p != ',') break;
      field = g_string_new(NULL);
    } else {
      g_string_append_c(field, *p);
    }
  }
  g_ptr_array_add(out, NULL);
  return (char **)g_ptr_array_free(out, FALSE);
}

static int algorithm_of(const char *system) {
  if (strstr(system, "algo=Ring")) return CM_ALGO_RING;
  if (strstr(system, "algo=NVLSTree")) return CM_ALGO_NVLS_TREE;
  if (strstr(system, "algo=NVLS")) return CM_ALGO_NVLS;
  if (strstr(system, "algo=Tree")) return CM_ALGO_TREE;
  return -1;
}

/* all_reduce_bench.py (stas00/ml-engineering network/benchmarks/) in its one-call timing
 * (every version before its queued default, and --with-host-overhead since): dist.barrier(),
 * start_event.record(), one dist.all_reduce, end_event.record(). The start event completes
 * as soon as it is recorded on the idle stream, while the NCCL kernel starts only once the
 * host has been through dist.all_reduce (ProcessGroupNCCL's work object and stream events,
 * ncclAllReduce's enqueue and launch), so every measured call carries that host path. The
 * script's author puts it at 20-30 us ("PyTorch's 20-30us of host overhead per call",
 * network/benchmarks/README.md at commit 0cc3de5, "How the calls are timed"). The figure used:
 * 16.6 us, the median over their 16 common sizes (32 KiB - 1 GiB) of the difference between
 * the two sweeps of one VM of 4 H100 with NCCL 2.26.2, all_reduce_bench.py minus nccl-tests
 * (whose back-to-back calls hide the host) (dudeperf3ct/dudeperf3ct.github.io
 * content/posts/distributed_communication_part1.md, commit 30f9cbd): 14-20 us at every size
 * up to 512 MiB. The same author's two 8 x H200 all_reduce_bench.py sweeps, one call per trial
 * (network/README.md, 744d01e) against queued calls (0cc3de5), differ by 14-27 us from 32 KiB
 * to 1 GiB (18-22 at 12 of the 16 sizes; median 20.0 us). tests/test-nccl.c
 * (/nccl/public/harness) recomputes the median from the CSV. */
#define TORCH_ONE_CALL_HOST_S 16.6e-6

double cm_curve_harness(const char *system) {
  g_return_val_if_fail(system != NULL, 0.0);
  return strstr(system, "one dist.all_reduce per trial") ? TORCH_ONE_CALL_HOST_S : 0.0;
}

static gboolean number(const char *text, double *out) {
  char *end = NULL;
  if (!text || !*text) return FALSE;
  *out = g_ascii_strtod(text, &end);
  return end && *end == '\0' && isfinite(*out);
}

static CmCurve *find_or_add(GPtrArray *curves, char **f, CmCollective kind, int ranks, int nodes) {
  for (guint i = 0; i < curves->len; i++) {
    CmCurve *c = g_ptr_array_index(curves, i);
    if (c->kind == kind && c->ranks == ranks && c->nodes == nodes && g_str_equal(c->system, f[COL_SYSTEM]))
      return c;
  }
  CmCurve *c = g_new0(CmCurve, 1);
  c->system = g_strdup(f[COL_SYSTEM]);
  c->source = g_strdup(f[COL_SOURCE]);
  c->kind = kind;
  c->ranks = ranks;
  c->nodes = nodes;
  c->gpus_per_node = atoi(f[COL_GPN]);
  c->algorithm = algorithm_of(f[COL_SYSTEM]);
  c->harness_s = cm_curve_harness(f[COL_SYSTEM]);
  c->bytes = g_array_new(FALSE, FALSE, sizeof(double));
  c->time_s = g_array_new(FALSE, FALSE, sizeof(double));
  g_ptr_array_add(curves, c);
  return c;
}

/* Inserts (bytes, time) keeping the curve ascending in bytes. */
static void add_point(CmCurve *c, double bytes, double time_s) {
  guint i = c->bytes->len;
  while (i > 0 && g_array_index(c->bytes, double, i - 1) > bytes) i--;
  g_array_insert_val(c->bytes, i, bytes);
  g_array_insert_val(c->time_s, i, time_s);
}

GPtrArray *cm_curves_load(const char *path, GError **error) {
  g_autofree char *text = NULL;
  if (!g_file_get_contents(path, &text, NULL, error)) return NULL;
  GPtrArray *curves = g_ptr_array_new_with_free_func((GDestroyNotify)cm_curve_free);
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (int ln = 1; lines[ln]; ln++) { /* line 0 is the header */
    if (!*g_strstrip(lines[ln])) continue;
    g_auto(GStrv) f = split_csv(lines[ln]);
    double size, ranks, nodes, time_us, busbw;
    CmCollective kind;
    if (g_strv_length(f) != NCOLS || !cm_collective_parse(f[COL_KIND], &kind) ||
        !number(f[COL_SIZE], &size) || !number(f[COL_RANKS], &ranks) ||
        !number(f[COL_NODES], &nodes) || !(size > 0) || !(ranks >= 2) || !(nodes >= 1)) {
      g_set_error(error, CM_ERROR, CM_ERROR_PARSE, "%s:%d: not a row of collective, size_bytes, "
                  "ranks, nodes, gpus_per_node, gpu_system, algbw_GBps, busbw_GBps, time_us, source",
                  path, ln + 1);
      g_ptr_array_unref(curves);
      return NULL;
    }
    double time_s;
    if (number(f[COL_TIME], &time_us) && time_us > 0) {
      time_s = time_us * 1e-6;
    } else if (number(f[COL_BUSBW], &busbw) && busbw > 0) {
      time_s = size * cm_collective_busbw_factor(kind, (int)ranks) / (busbw * 1e9);
    } else {
      g_set_error(error, CM_ERROR, CM_ERROR_PARSE, "%s:%d: neither time_us nor busbw_GBps", path, ln + 1);
      g_ptr_array_unref(curves);
      return NULL;
    }
    add_point(find_or_add(curves, f, kind, (int)ranks, (int)nodes), size, time_s);
  }
  return curves;
}

/* The NCCL release a curve's gpu_system says it ran ("NCCL 2.30.7", "NCCL 2.16.2+cuda11.6"), as
 * the `nccl_version` override takes it; NULL where it states none. */
static char *stated_nccl_release(const char *system) {
  for (const char *p = strstr(system, "NCCL "); p; p = strstr(p + 1, "NCCL ")) {
    const char *v = p + 5, *end = v;
    while (g_ascii_isdigit(*end) || *end == '.') end++;
    g_autofree char *text = g_strndup(v, (gsize)(end - v));
    int code;
    if (dev_nccl_version_parse(text, &code)) return g_steal_pointer(&text);
  }
  return NULL;
}

char *cm_curve_cluster_spec(const CmCurve *curve) {
  static const struct {
    const char *needle;
    const char *spec;
  } map[] = {/* The networks the multi-host curves ran on have presets of their own: Google
              * Cloud A3 Mega (GPUDirect-TCPXO, 8 x 200 Gb/s) and AWS p6-b200 (EFAv4,
              * 8 x 400 Gb/s; the same author's "P6-B200 1-node vs 4-node" table, network/README.md
              * of stas00/ml-engineering, places the 4 x 8 B200 sweep there). */
             {"A3 Mega", "gcp-a3-mega"}, {"p6-b200", "aws-p6-b200"}, {"4 nodes x 8 B200", "aws-p6-b200"},
             {"A100", "dgx-a100"}, {"H200", "dgx-h200"}, {"H100", "dgx-h100"}, {"B200", "dgx-b200"}};
  for (gsize i = 0; i < G_N_ELEMENTS(map); i++) {
    if (!strstr(curve->system, map[i].needle)) continue;
    GString *spec = g_string_new(map[i].spec);
    if (curve->nodes > 1) g_string_append_printf(spec, "%snodes=%d", strchr(spec->str, ':') ? "," : ":", curve->nodes);
    /* The release a curve states it ran: NCCL's tables of that release (cm_nccl.c), on one
     * host and across hosts (the network terms of those tables that the model takes are said
     * in cm_nccl.c; costmodel/NETWORK.md). */
    g_autofree char *release = stated_nccl_release(curve->system);
    if (release) g_string_append_printf(spec, "%snccl_version=%s", strchr(spec->str, ':') ? "," : ":", release);
    return g_string_free(spec, FALSE);
  }
  return NULL;
}

/* Ranks fill hosts in order, as the launcher placed them: ranks / nodes on each host. */
static int *curve_devices(const CmCurve *curve, const DevCluster *cluster) {
  int *devices = g_new(int, curve->ranks), per = curve->ranks / curve->nodes;
  for (int i = 0; i < curve->ranks; i++) devices[i] = (i / per) * cluster->gpus_per_node + i % per;
  return devices;
}

static void stats_add(CmErrorStats *s, double predicted, double measured) {
  double e = fabs(predicted - measured) / measured;
  s->mean = s->points == 0 ? e : s->mean + e;
  s->max = s->points == 0 ? e : MAX(s->max, e);
  s->points++;
}

static void stats_finish(CmErrorStats *s) {
  if (s->points > 0) s->mean /= s->points;
  else s->mean = s->max = NAN;
}

void cm_check_model_errors(const CmCurve *curve, const DevCluster *cluster, double min_bytes,
                           double *errors) {
  g_autofree int *devices = curve_devices(curve, cluster);
  for (guint i = 0; i < curve->bytes->len; i++) {
    double bytes = g_array_index(curve->bytes, double, i), measured = g_array_index(curve->time_s, double, i);
    errors[i] = NAN;
    if (bytes < min_bytes) continue;
    CmCollectiveEstimate e = cm_collective_estimate(cluster, curve->kind, devices, curve->ranks, bytes, NULL);
    double t = (curve->algorithm >= 0 ? e.candidates[curve->algorithm] : e.time_s) + curve->harness_s;
    errors[i] = (t - measured) / measured;
  }
}

/* Mean and max of the absolute values of @errors that are not NAN. */
static gboolean stats_of(const double *errors, guint n, CmErrorStats *out) {
  memset(out, 0, sizeof *out);
  for (guint i = 0; i < n; i++)
    if (!isnan(errors[i])) stats_add(out, 1 + errors[i], 1);
  stats_finish(out);
  return out->points > 0;
}

void cm_check_model(const CmCurve *curve, const DevCluster *cluster, double min_bytes,
                    CmErrorStats *out) {
  g_autofree double *errors = g_new(double, curve->bytes->len);
  cm_check_model_errors(curve, cluster, min_bytes, errors);
  stats_of(errors, curve->bytes->len, out);
}

static CmMeasurement measurement_at(const CmCurve *c, guint i) {
  return (CmMeasurement){c->kind, c->ranks, c->nodes, g_array_index(c->bytes, double, i),
                         g_array_index(c->time_s, double, i)};
}

/* The calibrated time as `stratsim collective --calibration` gives it (through
 * cm_collective_estimate, with the model's floor on the asymptote) when @cluster is known,
 * else the calibration alone. */
static double calibrated(const CmCalibration *cal, const CmCurve *c, const DevCluster *cluster,
                         double bytes) {
  if (cluster) {
    g_autofree int *devices = curve_devices(c, cluster);
    return cm_collective_estimate(cluster, c->kind, devices, c->ranks, bytes, cal).time_s;
  }
  CmCalibratedTime t;
  return cm_calibration_time(cal, c->kind, c->ranks, c->nodes, bytes, &t) ? t.time_s : NAN;
}

/* Signed relative error of @predicted against @measured. */
static double signed_error(double predicted, double measured) { return (predicted - measured) / measured; }

gboolean cm_check_heldout_errors(const CmCurve *curve, const DevCluster *cluster, double min_bytes,
                                 double *errors) {
  guint first = 0, n = curve->bytes->len;
  for (guint i = 0; i < n; i++) errors[i] = NAN;
  while (first < n && g_array_index(curve->bytes, double, first) < min_bytes) first++;
  if (n - first < 4) return FALSE;
  g_autoptr(GArray) fit = g_array_new(FALSE, FALSE, sizeof(CmMeasurement));
  for (guint i = first; i < n; i += 2) {
    CmMeasurement m = measurement_at(curve, i);
    g_array_append_val(fit, m);
  }
  CmCalibration *cal = cm_calibration_fit("held-out", "check", (CmMeasurement *)fit->data, fit->len, NULL);
  if (!cal) return FALSE;
  gboolean any = FALSE;
  for (guint i = first + 1; i + 1 < n; i += 2, any = TRUE)
    errors[i] = signed_error(calibrated(cal, curve, cluster, g_array_index(curve->bytes, double, i)),
                             g_array_index(curve->time_s, double, i));
  cm_calibration_free(cal);
  return any;
}

gboolean cm_check_extrapolation_errors(const CmCurve *curve, const DevCluster *cluster, double min_bytes,
                                       double *errors) {
  guint n = curve->bytes->len;
  g_autofree CmMeasurement *m = g_new(CmMeasurement, n);
  for (guint i = 0; i < n; i++) m[i] = measurement_at(curve, i), errors[i] = NAN;
  gboolean any = FALSE;
  for (guint last = 1; last < n; last++) {
    double limit = m[last].bytes;
    if (limit < min_bytes) continue;
    guint at = last + 1;
    while (at < n && m[at].bytes < 4 * limit) at++;
    if (at >= n || m[at].bytes != 4 * limit) continue;
    CmCalibration *cal = cm_calibration_fit("extrapolation", "check", m, last + 1, NULL);
    if (!cal) continue;
    errors[at] = signed_error(calibrated(cal, curve, cluster, m[at].bytes), m[at].time_s);
    any = TRUE;
    cm_calibration_free(cal);
  }
  return any;
}

gboolean cm_check_heldout(const CmCurve *curve, const DevCluster *cluster, double min_bytes,
                          CmErrorStats *out) {
  g_autofree double *errors = g_new(double, curve->bytes->len);
  gboolean ok = cm_check_heldout_errors(curve, cluster, min_bytes, errors);
  return stats_of(errors, curve->bytes->len, out) && ok;
}

gboolean cm_check_extrapolation(const CmCurve *curve, const DevCluster *cluster, double min_bytes,
                                CmErrorStats *out) {
  g_autofree double *errors = g_new(double, curve->bytes->len);
  cm_check_extrapolation_errors(curve, cluster, min_bytes, errors);
  return stats_of(errors, curve->bytes->len, out);
}
