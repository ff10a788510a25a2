/* costmodel/profile — measured kernel times; see cm_profile.h for the interpolation rules. */
#include "costmodel/cm_profile.h"
#include "util/util_json.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

struct CmProfiles {
  GArray *points; /* CmProfilePoint */
  char *source;
};

static void point_clear(gpointer data) { g_free(((CmProfilePoint *)data)->device); }

CmProfiles *cm_profiles_new(void) {
  CmProfiles *p = g_new0(CmProfiles, 1);
  p->points = g_array_new(FALSE, FALSE, sizeof(CmProfilePoint));
  g_array_set_clear_func(p->points, point_clear);
  return p;
}

void cm_profiles_free(CmProfiles *p) {
  if (!p) return;
  g_array_unref(p->points);
  g_free(p->source);
  g_free(p);
}

void cm_profiles_add(CmProfiles *p, const CmProfilePoint *point) {
  CmProfilePoint copy = *point;
  copy.device = g_strdup(point->device);
  g_array_append_val(p->points, copy);
}

guint cm_profiles_size(const CmProfiles *p) { return p->points->len; }

const char *cm_profiles_source(const CmProfiles *p) { return p->source; }

const CmProfilePoint *cm_profiles_at(const CmProfiles *p, guint i) {
  g_return_val_if_fail(i < p->points->len, NULL);
  return &g_array_index(p->points, CmProfilePoint, i);
}

static gboolean is_gemm(MdlOpKind kind) {
  return kind == MDL_OP_MATMUL || kind == MDL_OP_BATCH_MATMUL || kind == MDL_OP_CONV2D;
}

/* Squared distance between two GEMM shapes in log space. */
static double log_distance2(const CmGemmShape *a, const CmGemmShape *b) {
  double d[4] = {log(a->m / b->m), log(a->n / b->n), log(a->k / b->k), log(a->batch / b->batch)};
  return d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + d[3] * d[3];
}

static gboolean lookup_gemm(const CmProfiles *p, const char *device, DevDtype dtype,
                            const CmGemmShape *shape, double *time_s) {
  enum { NEAREST = 4 };
  double best_d[NEAREST];
  double best_rate[NEAREST];
  int found = 0;
  double flops = 2 * shape->m * shape->n * shape->k * shape->batch;
  for (guint i = 0; i < p->points->len; i++) {
    const CmProfilePoint *pt = &g_array_index(p->points, CmProfilePoint, i);
    if (!is_gemm(pt->kind) || pt->dtype != dtype || strcmp(pt->device, device) != 0) continue;
    double d = log_distance2(shape, &pt->shape);
    double rate = 2 * pt->shape.m * pt->shape.n * pt->shape.k * pt->shape.batch / pt->time_s;
    if (d == 0) {
      *time_s = pt->time_s;
      return TRUE;
    }
    /* Keep the NEAREST closest (insertion into a small sorted array). */
    int pos = found < NEAREST ? found : NEAREST;
    while (pos > 0 && best_d[pos - 1] > d) {
      if (pos < NEAREST) best_d[pos] = best_d[pos - 1], best_rate[pos] = best_rate[pos - 1];
      pos--;
    }
    if (pos < NEAREST) {
      best_d[pos] = d;
      best_rate[pos] = rate;
      if (found < NEAREST) found++;
    }
  }
  if (found == 0) return FALSE;
  double wsum = 0, lsum = 0;
  for (int i = 0; i < found; i++) {
    double w = 1.0 / best_d[i];
    wsum += w;
    lsum += w * log(best_rate[i]);
  }
  *time_s = flops / exp(lsum / wsum);
  return TRUE;
}

static gboolean lookup_elements(const CmProfiles *p, const char *device, MdlOpKind kind,
                                DevDtype dtype, double elements, gboolean backward,
                                double *time_s) {
  const CmProfilePoint *lo = NULL, *hi = NULL;
  for (guint i = 0; i < p->points->len; i++) {
    const CmProfilePoint *pt = &g_array_index(p->points, CmProfilePoint, i);
    if (pt->kind != kind || pt->dtype != dtype || pt->backward != backward ||
        strcmp(pt->device, device) != 0)
      continue;
    if (pt->elements == elements) {
      *time_s = pt->time_s;
      return TRUE;
    }
    if (pt->elements < elements && (!lo || pt->elements > lo->elements)) lo = pt;
    if (pt->elements > elements && (!hi || pt->elements < hi->elements)) hi = pt;
  }
  if (!lo && !hi) return FALSE;
  if (!lo || !hi) {
    const CmProfilePoint *end = lo ? lo : hi;
    *time_s = end->time_s * elements / end->elements;
    return TRUE;
  }
  double f = log(elements / lo->elements) / log(hi->elements / lo->elements);
  *time_s = exp(log(lo->time_s) + f * (log(hi->time_s) - log(lo->time_s)));
  return TRUE;
}

gboolean cm_profiles_lookup(const CmProfiles *p, const char *device, MdlOpKind kind,
                            DevDtype dtype, const CmGemmShape *shape, double elements,
                            gboolean backward, double *time_s) {
  if (!p || !device) return FALSE;
  if (is_gemm(kind)) return shape && lookup_gemm(p, device, dtype, shape, time_s);
  return elements > 0 && lookup_elements(p, device, kind, dtype, elements, backward, time_s);
}

static gboolean positive(const cJSON *obj, const char *key, double *out) {
  double v = 0;
  if (util_json_number(obj, key, &v) != UTIL_JSON_OK || v <= 0) return FALSE;
  *out = v;
  return TRUE;
}

CmProfiles *cm_profiles_from_json(const char *text, const char *origin, GError **error) {
  cJSON *root = cJSON_Parse(text);
  const char *device = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "device"));
  const char *source = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "source"));
  const cJSON *kernels = cJSON_GetObjectItemCaseSensitive(root, "kernels");
  if (!root || !cJSON_IsObject(root) || !device || !source || !*source || !cJSON_IsArray(kernels)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE,
                "profiles %s: expected a JSON object with \"device\", \"source\" and a \"kernels\" array",
                origin);
    cJSON_Delete(root);
    return NULL;
  }
  CmProfiles *p = cm_profiles_new();
  p->source = g_strdup(source);
  int i = 0;
  const cJSON *kj;
  cJSON_ArrayForEach(kj, kernels) {
    CmProfilePoint pt = {.device = (char *)device};
    const char *op = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(kj, "op"));
    const char *dtype = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(kj, "dtype"));
    gboolean ok = op && mdl_op_kind_parse(op, &pt.kind) && dtype && dev_dtype_parse(dtype, &pt.dtype) &&
                  positive(kj, "time_s", &pt.time_s);
    if (ok && is_gemm(pt.kind)) {
      pt.shape.batch = 1;
      ok = positive(kj, "m", &pt.shape.m) && positive(kj, "n", &pt.shape.n) &&
           positive(kj, "k", &pt.shape.k) &&
           (!cJSON_GetObjectItemCaseSensitive(kj, "batch") || positive(kj, "batch", &pt.shape.batch));
    } else if (ok) {
      ok = positive(kj, "elements", &pt.elements);
      const char *phase = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(kj, "phase"));
      if (phase && strcmp(phase, "backward") == 0) pt.backward = TRUE;
      else if (phase && strcmp(phase, "forward") != 0) ok = FALSE;
    }
    if (!ok) {
      g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE,
                  "profiles %s: kernel %d needs \"op\" (an op kind), \"dtype\", a positive \"time_s\" "
                  "and positive m, n, k (contractions) or elements (other kinds)",
                  origin, i);
      cm_profiles_free(p);
      cJSON_Delete(root);
      return NULL;
    }
    cm_profiles_add(p, &pt);
    i++;
  }
  cJSON_Delete(root);
  return p;
}
