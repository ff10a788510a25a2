/* util/json — typed access to cJSON documents (util_json.h). */
#include "util/util_json.h"

#include <math.h>
#include <string.h>

cJSON *util_json_parse(const char *text, UtilJsonPosition *where) {
  g_return_val_if_fail(text != NULL, NULL);
  const char *end = NULL; /* cJSON_GetErrorPtr would read a global */
  cJSON *root = cJSON_ParseWithOpts(text, &end, TRUE);
  if (root || !where) return root;
  where->line = where->column = 0;
  where->at_end = FALSE;
  if (!end || end < text) return NULL; /* cJSON did not say where */
  where->line = 1;
  where->column = 1;
  for (const char *p = text; p < end && *p; p++) {
    if (*p == '\n') where->line++, where->column = 1;
    else where->column++;
  }
  where->at_end = *end == '\0';
  return NULL;
}

const cJSON *util_json_member(const cJSON *obj, const char *key) {
  return cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

UtilJsonStatus util_json_int_value(const cJSON *v, gint64 lo, gint64 hi, gint64 *out) {
  if (!v) return UTIL_JSON_MISSING;
  if (!cJSON_IsNumber(v)) return UTIL_JSON_WRONG_TYPE;
  double x = v->valuedouble;
  if (!isfinite(x) || x != floor(x) || x < (double)lo || x > (double)hi)
    return UTIL_JSON_OUT_OF_RANGE;
  *out = (gint64)x;
  return UTIL_JSON_OK;
}

UtilJsonStatus util_json_int(const cJSON *obj, const char *key, gint64 lo, gint64 hi,
                             gint64 *out) {
  return util_json_int_value(util_json_member(obj, key), lo, hi, out);
}

UtilJsonStatus util_json_number_value(const cJSON *v, double *out) {
  if (!v) return UTIL_JSON_MISSING;
  if (!cJSON_IsNumber(v)) return UTIL_JSON_WRONG_TYPE;
  if (!isfinite(v->valuedouble)) return UTIL_JSON_OUT_OF_RANGE;
  *out = v->valuedouble;
  return UTIL_JSON_OK;
}

UtilJsonStatus util_json_number(const cJSON *obj, const char *key, double *out) {
  return util_json_number_value(util_json_member(obj, key), out);
}

UtilJsonStatus util_json_string(const cJSON *obj, const char *key, gboolean non_empty,
                                const char **out) {
  const cJSON *v = util_json_member(obj, key);
  if (!v) return UTIL_JSON_MISSING;
  if (!cJSON_IsString(v) || !v->valuestring || (non_empty && !*v->valuestring))
    return UTIL_JSON_WRONG_TYPE;
  *out = v->valuestring;
  return UTIL_JSON_OK;
}

UtilJsonStatus util_json_bool(const cJSON *obj, const char *key, gboolean *out) {
  const cJSON *v = util_json_member(obj, key);
  if (!v) return UTIL_JSON_MISSING;
  if (!cJSON_IsBool(v)) return UTIL_JSON_WRONG_TYPE;
  *out = cJSON_IsTrue(v);
  return UTIL_JSON_OK;
}

UtilJsonStatus util_json_object(const cJSON *obj, const char *key, const cJSON **out) {
  const cJSON *v = util_json_member(obj, key);
  if (!v) return UTIL_JSON_MISSING;
  if (!cJSON_IsObject(v)) return UTIL_JSON_WRONG_TYPE;
  *out = v;
  return UTIL_JSON_OK;
}

char *util_json_describe(const cJSON *v) {
  if (cJSON_IsNumber(v)) return g_strdup_printf("%.17g", v->valuedouble);
  char *text = cJSON_PrintUnformatted(v);
  if (!text) return g_strdup("?");
  char *out = strlen(text) > 40 ? g_strdup_printf("%.37s...", text) : g_strdup(text);
  cJSON_free(text);
  return out;
}
