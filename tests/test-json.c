/* Tests of util/json: the one place that decides what a JSON number, whole number, string,
 * boolean and object are for every reader (devices, model, strategy, measurements, reshard,
 * validate plans), and where a parse error is. */
#include <glib.h>
#include <string.h>

#include "util/util_json.h"

static cJSON *parse(const char *text) {
  cJSON *root = util_json_parse(text, NULL);
  g_assert_nonnull(root);
  return root;
}

static void test_int(void) {
  cJSON *o = parse("{\"a\": 3, \"b\": 3.5, \"c\": \"3\", \"d\": 1e999, \"e\": -1e999,"
                   " \"f\": 4611686018427387904, \"g\": -2, \"h\": null}");
  gint64 v = 42;
  g_assert_cmpint(util_json_int(o, "a", 0, 10, &v), ==, UTIL_JSON_OK);
  g_assert_cmpint(v, ==, 3);
  v = 42;
  g_assert_cmpint(util_json_int(o, "missing", 0, 10, &v), ==, UTIL_JSON_MISSING);
  g_assert_cmpint(util_json_int(o, "b", 0, 10, &v), ==, UTIL_JSON_OUT_OF_RANGE);
  g_assert_cmpint(util_json_int(o, "c", 0, 10, &v), ==, UTIL_JSON_WRONG_TYPE);
  g_assert_cmpint(util_json_int(o, "h", 0, 10, &v), ==, UTIL_JSON_WRONG_TYPE);
  g_assert_cmpint(util_json_int(o, "d", 0, G_MAXINT64, &v), ==, UTIL_JSON_OUT_OF_RANGE);
  g_assert_cmpint(util_json_int(o, "e", G_MININT64, 0, &v), ==, UTIL_JSON_OUT_OF_RANGE);
  g_assert_cmpint(v, ==, 42); /* untouched unless OK */
  /* 2^62 is exact as a double: the bound itself is in range, and 2^62 + 1 reads as 2^62 */
  g_assert_cmpint(util_json_int(o, "f", 0, G_GINT64_CONSTANT(1) << 62, &v), ==, UTIL_JSON_OK);
  g_assert_cmpint(v, ==, G_GINT64_CONSTANT(1) << 62);
  g_assert_cmpint(util_json_int(o, "f", 0, (G_GINT64_CONSTANT(1) << 62) - 4096, &v), ==,
                  UTIL_JSON_OUT_OF_RANGE);
  g_assert_cmpint(util_json_int(o, "g", -2, -2, &v), ==, UTIL_JSON_OK);
  g_assert_cmpint(v, ==, -2);
  g_assert_cmpint(util_json_int(o, "g", -1, 5, &v), ==, UTIL_JSON_OUT_OF_RANGE);
  /* array items and a non-object to look in */
  cJSON *a = parse("[1, 2.5]");
  g_assert_cmpint(util_json_int_value(cJSON_GetArrayItem(a, 0), 1, 1, &v), ==, UTIL_JSON_OK);
  g_assert_cmpint(util_json_int_value(cJSON_GetArrayItem(a, 1), 1, 5, &v), ==,
                  UTIL_JSON_OUT_OF_RANGE);
  g_assert_cmpint(util_json_int_value(NULL, 1, 5, &v), ==, UTIL_JSON_MISSING);
  g_assert_cmpint(util_json_int(a, "a", 0, 10, &v), ==, UTIL_JSON_MISSING);
  g_assert_cmpint(util_json_int(NULL, "a", 0, 10, &v), ==, UTIL_JSON_MISSING);
  cJSON_Delete(a);
  cJSON_Delete(o);
}

static void test_number_string_bool_object(void) {
  cJSON *o = parse("{\"n\": -2.5, \"inf\": 1e999, \"s\": \"x\", \"empty\": \"\", \"t\": true,"
                   " \"f\": false, \"o\": {}, \"arr\": []}");
  double d = 7;
  g_assert_cmpint(util_json_number(o, "n", &d), ==, UTIL_JSON_OK);
  g_assert_cmpfloat(d, ==, -2.5);
  g_assert_cmpint(util_json_number(o, "inf", &d), ==, UTIL_JSON_OUT_OF_RANGE);
  g_assert_cmpint(util_json_number(o, "s", &d), ==, UTIL_JSON_WRONG_TYPE);
  g_assert_cmpint(util_json_number(o, "none", &d), ==, UTIL_JSON_MISSING);
  g_assert_cmpfloat(d, ==, -2.5);
  const char *s = NULL;
  g_assert_cmpint(util_json_string(o, "s", TRUE, &s), ==, UTIL_JSON_OK);
  g_assert_cmpstr(s, ==, "x");
  g_assert_cmpint(util_json_string(o, "empty", TRUE, &s), ==, UTIL_JSON_WRONG_TYPE);
  g_assert_cmpint(util_json_string(o, "empty", FALSE, &s), ==, UTIL_JSON_OK);
  g_assert_cmpstr(s, ==, "");
  g_assert_cmpint(util_json_string(o, "n", FALSE, &s), ==, UTIL_JSON_WRONG_TYPE);
  g_assert_cmpint(util_json_string(o, "none", FALSE, &s), ==, UTIL_JSON_MISSING);
  gboolean b = TRUE;
  g_assert_cmpint(util_json_bool(o, "f", &b), ==, UTIL_JSON_OK);
  g_assert_false(b);
  g_assert_cmpint(util_json_bool(o, "t", &b), ==, UTIL_JSON_OK);
  g_assert_true(b);
  g_assert_cmpint(util_json_bool(o, "n", &b), ==, UTIL_JSON_WRONG_TYPE);
  g_assert_cmpint(util_json_bool(o, "none", &b), ==, UTIL_JSON_MISSING);
  const cJSON *inner = NULL;
  g_assert_cmpint(util_json_object(o, "o", &inner), ==, UTIL_JSON_OK);
  g_assert_true(cJSON_IsObject(inner));
  g_assert_cmpint(util_json_object(o, "arr", &inner), ==, UTIL_JSON_WRONG_TYPE);
  cJSON_Delete(o);
}

static void test_parse_position(void) {
  UtilJsonPosition at = {0};
  g_assert_null(util_json_parse("{\n  \"a\": 1,\n  x}", &at));
  g_assert_cmpint(at.line, ==, 3);
  g_assert_cmpint(at.column, ==, 4); /* cJSON stops one past the x */
  g_assert_false(at.at_end);
  g_assert_null(util_json_parse("{\"a\": [1, 2", &at));
  g_assert_true(at.at_end);
  g_assert_cmpint(at.line, ==, 1);
  /* one value and nothing after it */
  g_assert_null(util_json_parse("{} {}", &at));
  g_assert_false(at.at_end);
  g_assert_cmpint(at.column, ==, 4);
}

static void test_describe(void) {
  cJSON *o = parse("{\"n\": 0.1, \"s\": \"a\", \"long\": \"0123456789012345678901234567890123456789\"}");
  g_autofree char *n = util_json_describe(cJSON_GetObjectItem(o, "n"));
  g_assert_cmpstr(n, ==, "0.10000000000000001");
  g_autofree char *s = util_json_describe(cJSON_GetObjectItem(o, "s"));
  g_assert_cmpstr(s, ==, "\"a\"");
  g_autofree char *l = util_json_describe(cJSON_GetObjectItem(o, "long"));
  g_assert_cmpuint(strlen(l), ==, 40);
  g_assert_true(g_str_has_suffix(l, "..."));
  cJSON_Delete(o);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/util/json/int", test_int);
  g_test_add_func("/util/json/number-string-bool-object", test_number_string_bool_object);
  g_test_add_func("/util/json/parse-position", test_parse_position);
  g_test_add_func("/util/json/describe", test_describe);
  return g_test_run();
}
