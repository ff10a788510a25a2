/* devices/json — reading preset JSON with cJSON: parse errors with a line and column, and
 * typed member access whose errors name the missing or ill-typed field. */
#include "devices/dev_cluster-int.h"

#include <math.h>

cJSON *dev_json_parse(const char *text, const char *where, GError **error) {
  g_return_val_if_fail(text != NULL, NULL);
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithOpts(text, &end, TRUE);
  if (root) return root;
  if (!end || end < text) {
    g_set_error(error, DEV_ERROR, DEV_ERROR_PARSE, "%s: malformed JSON", where);
    return NULL;
  }
  int line = 1, column = 1;
  for (const char *p = text; p < end && *p; p++) {
    if (*p == '\n') line++, column = 1;
    else column++;
  }
  if (*end == '\0')
    g_set_error(error, DEV_ERROR, DEV_ERROR_PARSE,
                "%s: malformed JSON: unexpected end of text at line %d, column %d", where, line,
                column);
  else
    g_set_error(error, DEV_ERROR, DEV_ERROR_PARSE, "%s: malformed JSON at line %d, column %d",
                where, line, column);
  return NULL;
}

/* The member @field of @obj, or NULL with an error naming it. */
static const cJSON *member(const cJSON *obj, const char *prefix, const char *field,
                           const char *where, GError **error) {
  const cJSON *item = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, field) : NULL;
  if (!item)
    g_set_error(error, DEV_ERROR, DEV_ERROR_PARSE, "%s: field '%s%s%s' is missing", where,
                prefix ? prefix : "", prefix ? "." : "", field);
  return item;
}

static void type_error(const char *prefix, const char *field, const char *where,
                       const char *expected, GError **error) {
  g_set_error(error, DEV_ERROR, DEV_ERROR_PARSE, "%s: field '%s%s%s' must be %s", where,
              prefix ? prefix : "", prefix ? "." : "", field, expected);
}

gboolean dev_json_number(const cJSON *obj, const char *prefix, const char *field,
                         const char *where, double *out, GError **error) {
  const cJSON *item = member(obj, prefix, field, where, error);
  if (!item) return FALSE;
  if (!cJSON_IsNumber(item)) {
    type_error(prefix, field, where, "a number", error);
    return FALSE;
  }
  if (!isfinite(item->valuedouble)) {
    g_set_error(error, DEV_ERROR, DEV_ERROR_INVALID, "%s: field '%s%s%s' is not a finite number",
                where, prefix ? prefix : "", prefix ? "." : "", field);
    return FALSE;
  }
  *out = item->valuedouble;
  return TRUE;
}

gboolean dev_json_string(const cJSON *obj, const char *prefix, const char *field,
                         const char *where, const char **out, GError **error) {
  const cJSON *item = member(obj, prefix, field, where, error);
  if (!item) return FALSE;
  if (!cJSON_IsString(item) || !item->valuestring || !*item->valuestring) {
    type_error(prefix, field, where, "a non-empty string", error);
    return FALSE;
  }
  *out = item->valuestring;
  return TRUE;
}

gboolean dev_json_object(const cJSON *obj, const char *prefix, const char *field,
                         const char *where, const cJSON **out, GError **error) {
  const cJSON *item = member(obj, prefix, field, where, error);
  if (!item) return FALSE;
  if (!cJSON_IsObject(item)) {
    type_error(prefix, field, where, "an object", error);
    return FALSE;
  }
  *out = item;
  return TRUE;
}

gboolean dev_json_optional_string(const cJSON *obj, const char *field, const char *where,
                                  const char *fallback, const char **out, GError **error) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, field);
  if (!item) {
    *out = fallback;
    return TRUE;
  }
  if (!cJSON_IsString(item) || !item->valuestring) {
    type_error(NULL, field, where, "a string", error);
    return FALSE;
  }
  *out = item->valuestring;
  return TRUE;
}
