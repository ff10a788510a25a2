/* devices/json — reading preset JSON: parse errors with a line and column, and typed member
 * access (util/util_json.h) whose errors name the missing or ill-typed field. */
#include "devices/dev_cluster-int.h"

#include "util/util_json.h"

cJSON *dev_json_parse(const char *text, const char *where, GError **error) {
  g_return_val_if_fail(text != NULL, NULL);
  UtilJsonPosition at;
  cJSON *root = util_json_parse(text, &at);
  if (root) return root;
  if (at.line == 0)
    g_set_error(error, DEV_ERROR, DEV_ERROR_PARSE, "%s: malformed JSON", where);
  else if (at.at_end)
    g_set_error(error, DEV_ERROR, DEV_ERROR_PARSE,
                "%s: malformed JSON: unexpected end of text at line %d, column %d", where,
                at.line, at.column);
  else
    g_set_error(error, DEV_ERROR, DEV_ERROR_PARSE, "%s: malformed JSON at line %d, column %d",
                where, at.line, at.column);
  return NULL;
}

/* FALSE with the error @status calls for on field @prefix.@field; TRUE when OK. */
static gboolean check(UtilJsonStatus status, const char *prefix, const char *field,
                      const char *where, const char *expected, GError **error) {
  const char *dot = prefix ? "." : "";
  if (!prefix) prefix = "";
  switch (status) {
  case UTIL_JSON_OK: return TRUE;
  case UTIL_JSON_MISSING:
    g_set_error(error, DEV_ERROR, DEV_ERROR_PARSE, "%s: field '%s%s%s' is missing", where, prefix,
                dot, field);
    return FALSE;
  case UTIL_JSON_WRONG_TYPE:
    g_set_error(error, DEV_ERROR, DEV_ERROR_PARSE, "%s: field '%s%s%s' must be %s", where, prefix,
                dot, field, expected);
    return FALSE;
  case UTIL_JSON_OUT_OF_RANGE:
    g_set_error(error, DEV_ERROR, DEV_ERROR_INVALID, "%s: field '%s%s%s' is not a finite number",
                where, prefix, dot, field);
    return FALSE;
  }
  return FALSE;
}

gboolean dev_json_number(const cJSON *obj, const char *prefix, const char *field,
                         const char *where, double *out, GError **error) {
  return check(util_json_number(obj, field, out), prefix, field, where, "a number", error);
}

gboolean dev_json_string(const cJSON *obj, const char *prefix, const char *field,
                         const char *where, const char **out, GError **error) {
  return check(util_json_string(obj, field, TRUE, out), prefix, field, where,
               "a non-empty string", error);
}

gboolean dev_json_object(const cJSON *obj, const char *prefix, const char *field,
                         const char *where, const cJSON **out, GError **error) {
  return check(util_json_object(obj, field, out), prefix, field, where, "an object", error);
}

gboolean dev_json_optional_string(const cJSON *obj, const char *field, const char *where,
                                  const char *fallback, const char **out, GError **error) {
  UtilJsonStatus status = util_json_string(obj, field, FALSE, out);
  if (status == UTIL_JSON_MISSING) {
    *out = fallback;
    return TRUE;
  }
  return check(status, NULL, field, where, "a string", error);
}
