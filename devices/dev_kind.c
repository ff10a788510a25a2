/* devices/kind — device kinds: the parser for one entry of devices/presets/devices.json and the
 * built-in table read from it. The table is parsed once (g_once), sorted by name, and never
 * changes afterwards, so lookups from several threads need no lock. A fault in the embedded
 * table is kept and reported by every lookup rather than aborting. */
#include "devices/dev_cluster-int.h"
#include "devices/dev_presets.h"

#include <string.h>

static const char *const dtype_fields[DEV_DTYPE_COUNT] = {
    [DEV_DTYPE_FP32] = "fp32", [DEV_DTYPE_TF32] = "tf32",
    [DEV_DTYPE_FP16] = "fp16", [DEV_DTYPE_BF16] = "bf16", [DEV_DTYPE_FP8] = "fp8"};

/* Reads number @prefix.@field, checks it with dev_check_figure and stores raw * @scale. */
static gboolean read_figure(const cJSON *obj, const char *prefix, const char *field,
                            const char *where, double scale, gboolean allow_zero, double max_si,
                            double *out, GError **error) {
  double raw;
  if (!dev_json_number(obj, prefix, field, where, &raw, error)) return FALSE;
  g_autofree char *what = g_strdup_printf("%s: field '%s%s%s'", where, prefix ? prefix : "",
                                          prefix ? "." : "", field);
  if (!dev_check_figure(what, raw, raw * scale, allow_zero, max_si, error)) return FALSE;
  *out = raw * scale;
  return TRUE;
}

gboolean dev_kind_from_cjson(const cJSON *obj, const char *where, DevKind *out, GError **error) {
  memset(out, 0, sizeof *out);
  if (!cJSON_IsObject(obj)) {
    g_set_error(error, DEV_ERROR, DEV_ERROR_PARSE, "%s: a device must be a JSON object", where);
    return FALSE;
  }
  const char *name, *description;
  if (!dev_json_string(obj, NULL, "name", where, &name, error)) return FALSE;
  g_autofree char *here = g_strdup_printf("%s '%s'", where, name);
  if (!dev_json_optional_string(obj, "description", here, "", &description, error)) return FALSE;
  const cJSON *peak;
  if (!dev_json_object(obj, NULL, "peak_tflops", here, &peak, error)) return FALSE;
  DevKind k;
  memset(&k, 0, sizeof k);
  for (int d = 0; d < DEV_DTYPE_COUNT; d++) {
    /* fp8 may be left out (device files written before it existed): unsupported. */
    if (d == DEV_DTYPE_FP8 && !cJSON_GetObjectItemCaseSensitive(peak, dtype_fields[d])) continue;
    /* fp32 must exist on any GPU; 0 marks the other dtypes as unsupported. */
    if (!read_figure(peak, "peak_tflops", dtype_fields[d], here, DEV_TFLOPS_TO_FLOPS,
                     d != DEV_DTYPE_FP32, DEV_MAX_FLOPS, &k.peak_flops[d], error))
      return FALSE;
  }
  if (!read_figure(obj, NULL, "vector_tflops", here, DEV_TFLOPS_TO_FLOPS, FALSE, DEV_MAX_FLOPS,
                   &k.vector_flops, error) ||
      !read_figure(obj, NULL, "memory_GiB", here, DEV_GIB_TO_BYTES, FALSE, DEV_MAX_MEMORY,
                   &k.memory_bytes, error) ||
      !read_figure(obj, NULL, "hbm_GBps", here, DEV_GBPS_TO_BPS, FALSE, DEV_MAX_BANDWIDTH,
                   &k.hbm_bandwidth, error))
    return FALSE;
  /* Optional: SM count for GEMM wave quantization (0 or absent: unknown). */
  if (cJSON_GetObjectItemCaseSensitive(obj, "sm_count")) {
    double sms;
    if (!dev_json_number(obj, NULL, "sm_count", here, &sms, error)) return FALSE;
    g_autofree char *what = g_strdup_printf("%s: field 'sm_count'", here);
    int n;
    if (sms != 0 && !dev_check_count(what, sms, &n, error)) return FALSE;
    k.sm_count = sms == 0 ? 0 : n;
  }
  k.name = g_strdup(name);
  k.description = g_strdup(description);
  *out = k;
  return TRUE;
}

void dev_kind_copy(DevKind *dst, const DevKind *src) {
  g_return_if_fail(dst != NULL && src != NULL);
  *dst = *src;
  dst->name = g_strdup(src->name);
  dst->description = g_strdup(src->description);
}

void dev_kind_clear(DevKind *kind) {
  if (!kind) return;
  g_free(kind->name);
  g_free(kind->description);
  memset(kind, 0, sizeof *kind);
}

/* The built-in kinds, sorted by name; names[] is NULL-terminated. Immutable once built. */
typedef struct {
  DevKind *kinds;
  int count;
  const char **names;
  GError *error; /* set when the embedded table is broken */
} KindTable;

static int compare_kinds(const void *a, const void *b) {
  return strcmp(((const DevKind *)a)->name, ((const DevKind *)b)->name);
}

static gboolean table_parse(KindTable *t, GError **error) {
  const char *where = "device table '" DEV_KINDS_FILE "'";
  const char *text = dev_presets_find(DEV_KINDS_FILE);
  if (!text) {
    g_set_error(error, DEV_ERROR, DEV_ERROR_PARSE, "%s is not built in", where);
    return FALSE;
  }
  cJSON *root = dev_json_parse(text, where, error);
  if (!root) return FALSE;
  gboolean ok = FALSE;
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "devices");
  if (!cJSON_IsArray(list)) {
    g_set_error(error, DEV_ERROR, DEV_ERROR_PARSE, "%s: field 'devices' must be an array", where);
    goto out;
  }
  t->kinds = g_new0(DevKind, cJSON_GetArraySize(list));
  const cJSON *entry;
  cJSON_ArrayForEach(entry, list) {
    g_autofree char *entry_where = g_strdup_printf("%s, device", where);
    if (!dev_kind_from_cjson(entry, entry_where, &t->kinds[t->count], error)) goto out;
    t->count++;
  }
  qsort(t->kinds, t->count, sizeof *t->kinds, compare_kinds);
  for (int i = 1; i < t->count; i++) {
    if (strcmp(t->kinds[i - 1].name, t->kinds[i].name) == 0) {
      g_set_error(error, DEV_ERROR, DEV_ERROR_PARSE, "%s: device '%s' is listed twice", where,
                  t->kinds[i].name);
      goto out;
    }
  }
  ok = TRUE;
out:
  cJSON_Delete(root);
  return ok;
}

static const KindTable *kind_table(void) {
  static gsize once = 0;
  static KindTable table;
  if (g_once_init_enter(&once)) {
    if (!table_parse(&table, &table.error)) {
      for (int i = 0; i < table.count; i++) dev_kind_clear(&table.kinds[i]);
      table.count = 0;
    }
    table.names = g_new0(const char *, table.count + 1);
    for (int i = 0; i < table.count; i++) table.names[i] = table.kinds[i].name;
    g_once_init_leave(&once, 1);
  }
  return &table;
}

char *dev_kinds_supporting(DevDtype dtype) {
  g_return_val_if_fail((guint)dtype < DEV_DTYPE_COUNT, g_strdup("none"));
  const KindTable *t = kind_table();
  GString *s = g_string_new(NULL);
  for (int i = 0; i < t->count; i++)
    if (t->kinds[i].peak_flops[dtype] > 0)
      g_string_append_printf(s, "%s%s", s->len ? ", " : "", t->kinds[i].name);
  if (!s->len) g_string_append(s, "none");
  return g_string_free(s, FALSE);
}

const char *const *dev_kind_names(void) {
  return kind_table()->names;
}

gboolean dev_kind_lookup(const char *name, DevKind *out, GError **error) {
  g_return_val_if_fail(out != NULL, FALSE);
  memset(out, 0, sizeof *out);
  const KindTable *t = kind_table();
  if (t->error) {
    g_propagate_error(error, g_error_copy(t->error));
    return FALSE;
  }
  for (int i = 0; name && i < t->count; i++) {
    if (strcmp(t->kinds[i].name, name) == 0) {
      dev_kind_copy(out, &t->kinds[i]);
      return TRUE;
    }
  }
  g_autofree char *known = dev_names_joined(t->names);
  g_set_error(error, DEV_ERROR, DEV_ERROR_UNKNOWN_DEVICE, "unknown device kind '%s' (known: %s)",
              name ? name : "(null)", known);
  return FALSE;
}
