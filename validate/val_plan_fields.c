/* validate/plan_fields — the plan reader's typed fields (val_plan-int.h): util/util_json.h
 * decides what a number, a whole number or a string is; this file words the errors as the plan
 * format's: "SOURCE: WHERE: field 'KEY' is VALUE: must be ...". */
#include "validate/val_plan-int.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

void val_plan_fail(GError **error, const Ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, VAL_PLAN_ERROR, VAL_PLAN_ERROR_INPUT, "%s: %s%s%s", c->source, c->at,
              c->at[0] ? ": " : "", msg);
  g_free(msg);
}

void val_plan_fail_value(GError **error, const Ctx *c, const char *key, const cJSON *v,
                         const char *must) {
  char *d = util_json_describe(v);
  val_plan_fail(error, c, "field '%s' is %s: %s", key, d, must);
  g_free(d);
}

gboolean val_plan_int_field(const cJSON *obj, const char *key, gint64 lo, gint64 hi,
                            gboolean required, gint64 dflt, gint64 *out, const Ctx *c,
                            GError **error) {
  switch (util_json_int(obj, key, lo, hi, out)) {
  case UTIL_JSON_OK: return TRUE;
  case UTIL_JSON_MISSING:
    if (required) {
      val_plan_fail(error, c, "missing field '%s'", key);
      return FALSE;
    }
    *out = dflt;
    return TRUE;
  default: {
    char *must = g_strdup_printf("must be a whole number in %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT,
                                 lo, hi);
    val_plan_fail_value(error, c, key, util_json_member(obj, key), must);
    g_free(must);
    return FALSE;
  }
  }
}

gboolean val_plan_int32_field(const cJSON *obj, const char *key, int lo, int hi, gboolean required,
                              int dflt, int *out, const Ctx *c, GError **error) {
  gint64 v;
  if (!val_plan_int_field(obj, key, lo, hi, required, dflt, &v, c, error)) return FALSE;
  *out = (int)v;
  return TRUE;
}

gboolean val_plan_bytes_field(const cJSON *obj, const char *key, gint64 *out, const Ctx *c,
                              GError **error) {
  double x = 0;
  UtilJsonStatus status = util_json_number(obj, key, &x);
  if (status == UTIL_JSON_MISSING) {
    val_plan_fail(error, c, "missing field '%s'", key);
    return FALSE;
  }
  if (status != UTIL_JSON_OK || x <= 0 || x > (double)VAL_PLAN_MAX_BYTES) {
    char *must = g_strdup_printf("must be a positive finite number of bytes up to %" G_GINT64_FORMAT,
                                 VAL_PLAN_MAX_BYTES);
    val_plan_fail_value(error, c, key, util_json_member(obj, key), must);
    g_free(must);
    return FALSE;
  }
  *out = (gint64)ceil(x);
  return TRUE;
}

gboolean val_plan_string_field(const cJSON *obj, const char *key, gboolean required,
                               const char **out, const Ctx *c, GError **error) {
  *out = NULL;
  switch (util_json_string(obj, key, FALSE, out)) {
  case UTIL_JSON_OK: return TRUE;
  case UTIL_JSON_MISSING:
    if (!required) return TRUE;
    val_plan_fail(error, c, "missing field '%s'", key);
    return FALSE;
  default:
    val_plan_fail_value(error, c, key, util_json_member(obj, key), "must be a string");
    return FALSE;
  }
}

int val_plan_name_index(const char *const *names, guint n, const char *text) {
  for (guint i = 0; text && i < n; i++)
    if (strcmp(names[i], text) == 0) return (int)i;
  return -1;
}

gboolean val_plan_enum_field(const cJSON *obj, const char *key, const char *const *names,
                             guint n_allowed, gboolean required, int dflt, int *out, const Ctx *c,
                             GError **error) {
  const char *text;
  if (!val_plan_string_field(obj, key, required, &text, c, error)) return FALSE;
  if (!text) {
    *out = dflt;
    return TRUE;
  }
  int i = val_plan_name_index(names, n_allowed, text);
  if (i < 0) {
    GString *must = g_string_new("must be one of ");
    for (guint j = 0; j < n_allowed; j++) g_string_append_printf(must, "%s%s", j ? ", " : "", names[j]);
    val_plan_fail_value(error, c, key, util_json_member(obj, key), must->str);
    g_string_free(must, TRUE);
    return FALSE;
  }
  *out = i;
  return TRUE;
}

cJSON *val_plan_parse_json(const char *text, const Ctx *c, GError **error) {
  UtilJsonPosition at;
  cJSON *root = util_json_parse(text, &at);
  if (root) return root;
  if (at.line == 0) at.line = at.column = 1; /* cJSON did not say where */
  val_plan_fail(error, c, "malformed JSON at line %d, column %d", at.line, at.column);
  return NULL;
}
