/* costmodel/calibrate — making a collective calibration: fitting measurements, storing it as
 * JSON; contract in cm_calibrate.h (its lookup is cm_calibrate_lookup.c).
 * Invariants: fits hold one entry per (collective, link class) with beta >= 0 and alpha >= 0;
 * tables one per (collective, ranks, hosts) with sizes ascending and distinct, bandwidths > 0. */
#include "costmodel/cm_calibrate-int.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const link_names[DEV_LINK_COUNT] = {"intra", "inter"};

static void table_clear(gpointer data) {
  CmCalibrationTable *t = data;
  g_free(t->bytes);
  g_free(t->busbw);
}

static CmCalibration *calibration_new(const char *name, const char *cluster) {
  CmCalibration *c = g_new0(CmCalibration, 1);
  c->name = g_strdup(name);
  c->cluster = g_strdup(cluster);
  c->fits = g_array_new(FALSE, TRUE, sizeof(CmCalibrationFit));
  c->tables = g_array_new(FALSE, TRUE, sizeof(CmCalibrationTable));
  g_array_set_clear_func(c->tables, table_clear);
  return c;
}

void cm_calibration_free(CmCalibration *calibration) {
  if (!calibration) return;
  g_free(calibration->name);
  g_free(calibration->cluster);
  g_array_free(calibration->fits, TRUE);
  g_array_free(calibration->tables, TRUE);
  g_free(calibration);
}

const char *cm_calibration_name(const CmCalibration *c) { return c->name; }
const char *cm_calibration_cluster(const CmCalibration *c) { return c->cluster; }
guint cm_calibration_n_fits(const CmCalibration *c) { return c->fits->len; }
guint cm_calibration_n_tables(const CmCalibration *c) { return c->tables->len; }

const CmCalibrationFit *cm_calibration_fit_at(const CmCalibration *c, guint i) {
  g_return_val_if_fail(i < c->fits->len, NULL);
  return &g_array_index(c->fits, CmCalibrationFit, i);
}

const CmCalibrationTable *cm_calibration_table_at(const CmCalibration *c, guint i) {
  g_return_val_if_fail(i < c->tables->len, NULL);
  return &g_array_index(c->tables, CmCalibrationTable, i);
}

static int compare_measurement(const void *a, const void *b) {
  const CmMeasurement *x = a, *y = b;
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  if (x->ranks != y->ranks) return x->ranks < y->ranks ? -1 : 1;
  if (x->nodes != y->nodes) return x->nodes < y->nodes ? -1 : 1;
  if (x->bytes != y->bytes) return x->bytes < y->bytes ? -1 : 1;
  return (x->time_s > y->time_s) - (x->time_s < y->time_s);
}

/* Weighted least squares for t_i = base + a_i alpha + b_i beta (a_i the ring steps, b_i the
 * bus traffic), weights w_i = 1/t_i^2 (AutoDDL Sec. 3.2 fits alpha and beta by least squares;
 * the weights and the base term are ours). Why 1/t^2: measured times span five orders of
 * magnitude (microseconds at 8 bytes, tenths of seconds at gigabytes); plain least squares
 * minimises absolute error, so the few largest messages decide the line and every small or
 * mid-size message is off by tens of percent (FIELD-NOTES: 15-70% held out). Dividing each
 * residual by its t minimises relative error, which is what a prediction is judged by. Why the
 * base: NCCL's latency is a base plus one per step (tuning.cc), and a per-step latency alone,
 * pooled over rank counts, charges small groups too little (issue 14: 30-70% at 1 MiB); with
 * one rank count the base and the per-step latency cannot be told apart and the per-step
 * one is kept. With u_ik = column k / t_i this is ordinary least squares of 1 = sum_k u_ik c_k.
 * Every coefficient is physical (>= 0): each subset of the three columns is solved, the
 * feasible one with the smallest residual kept (ties to the earlier subset, the
 * per-step-and-bandwidth line first). */
enum { COL_BASE, COL_STEP, COL_BYTES, NCOLS };

/* Solves the normal equations of the columns in @mask (Gaussian elimination with partial
 * pivoting, at most 3 x 3); FALSE when singular or a coefficient is negative. */
static gboolean solve_subset(const double g[NCOLS][NCOLS], const double r[NCOLS], unsigned mask,
                             double coef[NCOLS]) {
  int idx[NCOLS], k = 0;
  for (int c = 0; c < NCOLS; c++)
    if (mask & (1u << c)) idx[k++] = c;
  double a[NCOLS][NCOLS + 1];
  for (int i = 0; i < k; i++) {
    for (int j = 0; j < k; j++) a[i][j] = g[idx[i]][idx[j]];
    a[i][k] = r[idx[i]];
  }
  for (int col = 0; col < k; col++) {
    int piv = col;
    for (int i = col + 1; i < k; i++)
      if (fabs(a[i][col]) > fabs(a[piv][col])) piv = i;
    if (!(fabs(a[piv][col]) > 1e-12 * g[idx[col]][idx[col]])) return FALSE;
    for (int j = 0; j <= k; j++) {
      double t = a[col][j];
      a[col][j] = a[piv][j], a[piv][j] = t;
    }
    for (int i = 0; i < k; i++) {
      if (i == col) continue;
      double f = a[i][col] / a[col][col];
      for (int j = col; j <= k; j++) a[i][j] -= f * a[col][j];
    }
  }
  for (int c = 0; c < NCOLS; c++) coef[c] = 0.0;
  for (int i = 0; i < k; i++) {
    coef[idx[i]] = a[i][k] / a[i][i];
    if (coef[idx[i]] < 0) return FALSE;
  }
  return TRUE;
}

static gboolean fit_alpha_beta(const CmMeasurement *m, guint n, CmCalibrationFit *fit,
                               GError **error) {
  double g[NCOLS][NCOLS] = {{0}}, r[NCOLS] = {0};
  double first_bytes = m[0].bytes;
  gboolean sizes_differ = FALSE;
  for (guint i = 0; i < n; i++) {
    double u[NCOLS] = {1.0 / m[i].time_s,
                       cm_calibration_alpha_coefficient(m[i].kind, m[i].ranks) / m[i].time_s,
                       cm_calibration_beta_coefficient(m[i].kind, m[i].ranks, m[i].bytes) / m[i].time_s};
    for (int a = 0; a < NCOLS; a++) {
      r[a] += u[a];
      for (int b = 0; b < NCOLS; b++) g[a][b] += u[a] * u[b];
    }
    sizes_differ |= m[i].bytes != first_bytes;
  }
  if (!sizes_differ) {
    g_set_error(error, CM_ERROR, CM_ERROR_INVALID,
                "%s over %s-host links: measurements at one size only; fitting alpha and beta "
                "needs two sizes or more",
                cm_collective_name(fit->kind), link_names[fit->link]);
    return FALSE;
  }
  /* Subsets in order of preference: step + bytes (the classic line), all three, base + bytes,
   * then the one-column fits. */
  static const unsigned subsets[] = {0x6, 0x7, 0x5, 0x4, 0x2, 0x1, 0x3};
  double best[NCOLS] = {0}, best_ssr = INFINITY;
  for (gsize s = 0; s < G_N_ELEMENTS(subsets); s++) {
    double c[NCOLS];
    if (!solve_subset(g, r, subsets[s], c)) continue;
    /* Sum of squared relative residuals: n - 2 c.r + c G c. */
    double ssr = n;
    for (int a = 0; a < NCOLS; a++) {
      ssr -= 2 * c[a] * r[a];
      for (int b = 0; b < NCOLS; b++) ssr += c[a] * g[a][b] * c[b];
    }
    if (ssr < best_ssr * (1 - 1e-9) - 1e-15) {
      best_ssr = ssr;
      memcpy(best, c, sizeof best);
    }
  }
  fit->base = best[COL_BASE];
  fit->alpha = best[COL_STEP];
  fit->beta = best[COL_BYTES];
  fit->points = (int)n;
  fit->mean_rel_error = fit->max_rel_error = 0.0;
  for (guint i = 0; i < n; i++) {
    double t = cm_calibration_fit_time(fit, m[i].kind, m[i].ranks, m[i].bytes);
    double e = fabs(t - m[i].time_s) / m[i].time_s;
    fit->mean_rel_error += e / n;
    fit->max_rel_error = MAX(fit->max_rel_error, e);
  }
  return TRUE;
}

/* Measurements sorted by (kind, ranks, nodes, bytes): one table per run of equal (kind, ranks,
 * nodes), one point per size, the mean of the times measured at that size. */
static void build_tables(CmCalibration *c, const CmMeasurement *m, guint n) {
  for (guint start = 0; start < n;) {
    guint end = start;
    while (end < n && m[end].kind == m[start].kind && m[end].ranks == m[start].ranks &&
           m[end].nodes == m[start].nodes)
      end++;
    CmCalibrationTable t = {m[start].kind, m[start].ranks, m[start].nodes, 0, NULL, NULL};
    t.bytes = g_new(double, end - start);
    t.busbw = g_new(double, end - start);
    double factor = cm_collective_busbw_factor(t.kind, t.ranks);
    for (guint i = start; i < end;) {
      guint j = i;
      double sum = 0;
      while (j < end && m[j].bytes == m[i].bytes) sum += m[j++].time_s;
      t.bytes[t.npoints] = m[i].bytes;
      t.busbw[t.npoints] = m[i].bytes * factor / (sum / (j - i));
      t.npoints++;
      i = j;
    }
    g_array_append_val(c->tables, t);
    start = end;
  }
}

CmCalibration *cm_calibration_fit(const char *name, const char *cluster,
                                  const CmMeasurement *measurements, guint n, GError **error) {
  g_return_val_if_fail(name != NULL && cluster != NULL && (n == 0 || measurements != NULL), NULL);
  if (n == 0) {
    g_set_error(error, CM_ERROR, CM_ERROR_INVALID, "no measurements to calibrate from");
    return NULL;
  }
  for (guint i = 0; i < n; i++) {
    const CmMeasurement *m = &measurements[i];
    if (m->kind >= CM_COLLECTIVE_COUNT || m->ranks < 2 || m->nodes < 1 || m->nodes > m->ranks ||
        !(m->bytes > 0) || !isfinite(m->bytes) || !(m->time_s > 0) || !isfinite(m->time_s)) {
      g_set_error(error, CM_ERROR, CM_ERROR_INVALID,
                  "measurement %u (%s, %d ranks, %d hosts, %g bytes, %g s) is out of range", i,
                  m->kind < CM_COLLECTIVE_COUNT ? cm_collective_name(m->kind) : "?", m->ranks,
                  m->nodes, m->bytes, m->time_s);
      return NULL;
    }
  }
  CmMeasurement *sorted = g_memdup2(measurements, sizeof(CmMeasurement) * n);
  qsort(sorted, n, sizeof(CmMeasurement), compare_measurement);
  CmCalibration *c = calibration_new(name, cluster);
  build_tables(c, sorted, n);
  /* One fit per (kind, link class), pooling the rank counts of that class. */
  GArray *group = g_array_new(FALSE, FALSE, sizeof(CmMeasurement));
  for (int kind = 0; kind < CM_COLLECTIVE_COUNT; kind++) {
    for (int link = 0; link < DEV_LINK_COUNT; link++) {
      g_array_set_size(group, 0);
      for (guint i = 0; i < n; i++)
        if ((int)sorted[i].kind == kind && (int)cm_calibration_link_of(sorted[i].nodes) == link)
          g_array_append_val(group, sorted[i]);
      if (group->len == 0) continue;
      CmCalibrationFit fit = {(CmCollective)kind, (DevLinkClass)link, 0, 0, 0, 0, 0, 0};
      if (!fit_alpha_beta((const CmMeasurement *)group->data, group->len, &fit, error)) {
        g_array_free(group, TRUE);
        g_free(sorted);
        cm_calibration_free(c);
        return NULL;
      }
      g_array_append_val(c->fits, fit);
    }
  }
  g_array_free(group, TRUE);
  g_free(sorted);
  return c;
}

/* ---- JSON (costmodel/CALIBRATION.md) ---- */

char *cm_calibration_to_json(const CmCalibration *c) {
  g_return_val_if_fail(c != NULL, NULL);
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", "stratsim-calibration");
  cJSON_AddNumberToObject(root, "version", 1);
  cJSON_AddStringToObject(root, "name", c->name);
  cJSON_AddStringToObject(root, "cluster", c->cluster);
  cJSON *fits = cJSON_AddArrayToObject(root, "fits");
  for (guint i = 0; i < c->fits->len; i++) {
    const CmCalibrationFit *f = &g_array_index(c->fits, CmCalibrationFit, i);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", cm_collective_name(f->kind));
    cJSON_AddStringToObject(o, "link", link_names[f->link]);
    cJSON_AddNumberToObject(o, "base_s", f->base);
    cJSON_AddNumberToObject(o, "alpha_s", f->alpha);
    cJSON_AddNumberToObject(o, "beta_s_per_byte", f->beta);
    cJSON_AddNumberToObject(o, "points", f->points);
    cJSON_AddNumberToObject(o, "mean_rel_error", f->mean_rel_error);
    cJSON_AddNumberToObject(o, "max_rel_error", f->max_rel_error);
    cJSON_AddItemToArray(fits, o);
  }
  cJSON *tables = cJSON_AddArrayToObject(root, "tables");
  for (guint i = 0; i < c->tables->len; i++) {
    const CmCalibrationTable *t = &g_array_index(c->tables, CmCalibrationTable, i);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", cm_collective_name(t->kind));
    cJSON_AddNumberToObject(o, "ranks", t->ranks);
    cJSON_AddNumberToObject(o, "nodes", t->nodes);
    cJSON_AddItemToObject(o, "bytes", cJSON_CreateDoubleArray(t->bytes, t->npoints));
    cJSON_AddItemToObject(o, "busbw_Bps", cJSON_CreateDoubleArray(t->busbw, t->npoints));
    cJSON_AddItemToArray(tables, o);
  }
  char *text = cJSON_PrintUnformatted(root);
  char *out = g_strdup(text);
  cJSON_free(text);
  cJSON_Delete(root);
  return out;
}

static gboolean number_at(const cJSON *o, const char *key, double lo, double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo) return FALSE;
  *out = v->valuedouble;
  return TRUE;
}

static gboolean read_fit(const cJSON *o, CmCalibrationFit *f) {
  const cJSON *kind = cJSON_GetObjectItemCaseSensitive(o, "kind");
  const cJSON *link = cJSON_GetObjectItemCaseSensitive(o, "link");
  double points;
  if (!cJSON_IsString(kind) || !cm_collective_parse(kind->valuestring, &f->kind) ||
      !cJSON_IsString(link))
    return FALSE;
  if (strcmp(link->valuestring, "intra") == 0) f->link = DEV_LINK_INTRA;
  else if (strcmp(link->valuestring, "inter") == 0) f->link = DEV_LINK_INTER;
  else return FALSE;
  /* base_s: absent in calibrations stored before it was fitted (0). */
  f->base = 0.0;
  if (cJSON_GetObjectItemCaseSensitive(o, "base_s") && !number_at(o, "base_s", 0, &f->base)) return FALSE;
  if (!number_at(o, "alpha_s", 0, &f->alpha) || !number_at(o, "beta_s_per_byte", 0, &f->beta) ||
      !number_at(o, "points", 0, &points) || !number_at(o, "mean_rel_error", 0, &f->mean_rel_error) ||
      !number_at(o, "max_rel_error", 0, &f->max_rel_error))
    return FALSE;
  f->points = (int)points;
  return TRUE;
}

static gboolean read_table(const cJSON *o, CmCalibrationTable *t) {
  const cJSON *kind = cJSON_GetObjectItemCaseSensitive(o, "kind");
  const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(o, "bytes");
  const cJSON *busbw = cJSON_GetObjectItemCaseSensitive(o, "busbw_Bps");
  double ranks, nodes;
  if (!cJSON_IsString(kind) || !cm_collective_parse(kind->valuestring, &t->kind) ||
      !number_at(o, "ranks", 2, &ranks) || !number_at(o, "nodes", 1, &nodes) ||
      !cJSON_IsArray(bytes) || !cJSON_IsArray(busbw) ||
      cJSON_GetArraySize(bytes) != cJSON_GetArraySize(busbw) || cJSON_GetArraySize(bytes) < 1)
    return FALSE;
  t->ranks = (int)ranks;
  t->nodes = (int)nodes;
  t->npoints = cJSON_GetArraySize(bytes);
  t->bytes = g_new(double, t->npoints);
  t->busbw = g_new(double, t->npoints);
  const cJSON *b = bytes->child, *w = busbw->child;
  for (int i = 0; i < t->npoints; i++, b = b->next, w = w->next) {
    if (!cJSON_IsNumber(b) || !cJSON_IsNumber(w) || !(b->valuedouble > 0) || !(w->valuedouble > 0) ||
        (i > 0 && b->valuedouble <= t->bytes[i - 1]))
      return FALSE;
    t->bytes[i] = b->valuedouble;
    t->busbw[i] = w->valuedouble;
  }
  return TRUE;
}

CmCalibration *cm_calibration_from_json(const char *json, const char *origin, GError **error) {
  g_return_val_if_fail(json != NULL && origin != NULL, NULL);
  cJSON *root = cJSON_Parse(json);
  const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
  const cJSON *cluster = cJSON_GetObjectItemCaseSensitive(root, "cluster");
  const cJSON *fits = cJSON_GetObjectItemCaseSensitive(root, "fits");
  const cJSON *tables = cJSON_GetObjectItemCaseSensitive(root, "tables");
  CmCalibration *c = NULL;
  if (!cJSON_IsString(format) || strcmp(format->valuestring, "stratsim-calibration") != 0 ||
      !cJSON_IsString(name) || !cJSON_IsString(cluster) || !cJSON_IsArray(fits) ||
      !cJSON_IsArray(tables))
    goto bad;
  c = calibration_new(name->valuestring, cluster->valuestring);
  for (const cJSON *o = fits->child; o; o = o->next) {
    CmCalibrationFit f;
    if (!read_fit(o, &f)) goto bad;
    g_array_append_val(c->fits, f);
  }
  for (const cJSON *o = tables->child; o; o = o->next) {
    CmCalibrationTable t = {0};
    gboolean ok = read_table(o, &t);
    g_array_append_val(c->tables, t); /* appended either way, so the clear func frees it */
    if (!ok) goto bad;
  }
  cJSON_Delete(root);
  return c;
bad:
  g_set_error(error, CM_ERROR, CM_ERROR_PARSE, "%s: not a stratsim calibration (costmodel/CALIBRATION.md)",
              origin);
  cm_calibration_free(c);
  cJSON_Delete(root);
  return NULL;
}
