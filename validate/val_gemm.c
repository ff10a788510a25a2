/* validate/gemm — measured GEMMs against the model (val_gemm.h). */
#include "validate/val_gemm.h"

#include <string.h>

#include "util/util_csv.h"

static void row_free(gpointer p) {
  ValGemmRow *r = p;
  g_free(r->shape);
  g_free(r->group);
  g_free(r->device);
  g_free(r);
}

/* The value of @key in @dir/env.csv (columns key, value), or NULL with @error. */
static char *env_value(const char *dir, const char *key, GError **error) {
  g_autofree char *path = g_build_filename(dir, "env.csv", NULL);
  UtilCsv *csv = util_csv_read(path, error);
  if (!csv) return NULL;
  int k = util_csv_column(csv, "key"), v = util_csv_column(csv, "value");
  char *out = NULL;
  for (guint i = 0; k >= 0 && v >= 0 && i < csv->rows->len && !out; i++)
    if (strcmp(util_csv_field(csv, i, k), key) == 0) out = g_strdup(util_csv_field(csv, i, v));
  util_csv_free(csv);
  if (!out)
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: no row with key %s", path, key);
  return out;
}

static gboolean number(const UtilCsv *csv, guint row, int col, const char *path, double *out,
                       GError **error) {
  const char *text = util_csv_field(csv, row, col);
  char *end = NULL;
  *out = g_ascii_strtod(text, &end);
  if (end == text || *end || !(*out > 0)) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: row %u: %s is not a positive number",
                path, row + 2, text);
    return FALSE;
  }
  return TRUE;
}

/* One row of @csv (columns @col: label or -1, device or -1, dtype, batch, m, n, k, the
 * measurement) on @kind (or the row's device), predicted with @params: the measurement is a
 * time in us, or with @tflops a throughput. FALSE with @error naming @path, the row and the
 * value. */
static gboolean load_row(const UtilCsv *csv, guint i, const int *col, const char *path,
                         const DevKind *kind, gboolean tflops, const CmParams *params,
                         ValGemmRow *r, GError **error) {
  DevKind own;
  gboolean owned = col[1] >= 0;
  if (owned && !dev_kind_lookup(util_csv_field(csv, i, col[1]), &own, error)) {
    g_prefix_error(error, "%s: row %u: ", path, i + 2);
    return FALSE;
  }
  if (owned) kind = &own;
  r->device = g_strdup(kind->name);
  gboolean ok = dev_dtype_parse(util_csv_field(csv, i, col[2]), &r->dtype);
  if (!ok)
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: row %u: unknown dtype %s", path,
                i + 2, util_csv_field(csv, i, col[2]));
  double measured = 0;
  ok = ok && number(csv, i, col[3], path, &r->dims.batch, error) &&
       number(csv, i, col[4], path, &r->dims.m, error) &&
       number(csv, i, col[5], path, &r->dims.n, error) &&
       number(csv, i, col[6], path, &r->dims.k, error) &&
       number(csv, i, col[7], path, &measured, error);
  if (ok) {
    const CmGemmShape *s = &r->dims;
    r->shape = col[0] >= 0 ? g_strdup(util_csv_field(csv, i, col[0]))
                           : g_strdup_printf("%gx%gx%g b%g", s->m, s->n, s->k, s->batch);
    r->group = col[0] >= 0 ? g_strndup(r->shape, strcspn(r->shape, " ")) : g_strdup(kind->name);
    r->flops = 2 * s->m * s->n * s->k * s->batch;
    /* Operand bytes: fp8 GEMMs read 1-byte inputs and write bf16 (gpubench's cuBLASLt call);
     * tf32 moves fp32. */
    double in = r->dtype == DEV_DTYPE_FP8 ? 1 : dev_dtype_bytes(r->dtype);
    double out = r->dtype == DEV_DTYPE_FP8 ? 2 : dev_dtype_bytes(r->dtype);
    double bytes = (in * (s->m * s->k + s->k * s->n) + out * s->m * s->n) * s->batch;
    r->measured_s = tflops ? r->flops / (measured * 1e12) : measured * 1e-6;
    r->predicted_s = cm_kernel_time(params, kind, s->batch > 1 ? MDL_OP_BATCH_MATMUL : MDL_OP_MATMUL,
                                    r->dtype, r->flops, bytes, s);
  }
  if (owned) dev_kind_clear(&own);
  return ok;
}

/* The rows of @path (columns @cols, the first two optional: see load_row). */
static GPtrArray *load_rows(const char *path, const char *const *cols, const DevKind *kind,
                            gboolean tflops, const CmParams *params, GError **error) {
  UtilCsv *csv = util_csv_read(path, error);
  if (!csv) return NULL;
  int col[8];
  GPtrArray *rows = g_ptr_array_new_with_free_func(row_free);
  gboolean ok = TRUE;
  for (guint c = 0; c < G_N_ELEMENTS(col) && ok; c++)
    if ((col[c] = cols[c] ? util_csv_column(csv, cols[c]) : -1) < 0 && cols[c]) {
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: no column %s", path, cols[c]);
      ok = FALSE;
    }
  for (guint i = 0; ok && i < csv->rows->len; i++) {
    ValGemmRow *r = g_new0(ValGemmRow, 1);
    g_ptr_array_add(rows, r);
    ok = load_row(csv, i, col, path, kind, tflops, params, r, error);
  }
  util_csv_free(csv);
  if (!ok) {
    g_ptr_array_unref(rows);
    return NULL;
  }
  return rows;
}

GPtrArray *val_gemm_rows_load(const char *dir, const char *file, const CmParams *params,
                              char **device_kind, GError **error) {
  g_autofree char *kind_name = env_value(dir, "device_kind", error);
  if (!kind_name) return NULL;
  DevKind kind;
  if (!dev_kind_lookup(kind_name, &kind, error)) return NULL;
  g_autofree char *path = g_build_filename(dir, file, NULL);
  static const char *const cols[] = {"shape", NULL, "dtype", "batch", "m", "n", "k", "time_us"};
  GPtrArray *rows = load_rows(path, cols, &kind, FALSE, params, error);
  dev_kind_clear(&kind);
  if (rows && device_kind) *device_kind = g_steal_pointer(&kind_name);
  return rows;
}

GPtrArray *val_gemm_public_load(const char *path, const CmParams *params, GError **error) {
  static const char *const cols[] = {NULL, "device", "dtype", "batch", "m", "n", "k",
                                     "measured_tflops"};
  return load_rows(path, cols, NULL, TRUE, params, error);
}
