/* util/json — typed access to cJSON documents, shared by every reader of JSON files (devices,
 * model graphs and strategies, collective measurements, reshard files, validate plans).
 *
 * The readers word their errors differently (each names its file, field and value in its own
 * format and error domain), so these functions set no GError: they classify what they found
 * (UtilJsonStatus) and the caller says what was wrong. What they decide once for all readers:
 * a number is a cJSON number with a finite value; an integer is a finite whole number inside
 * the asked range (compared as doubles, so a bound must be exact as a double, at most 2^53 apart
 * from a neighbour: 2^62 is); a string is a cJSON string (optionally non-empty); a parse error
 * has a 1-based line and column. */
#ifndef STRATSIM_UTIL_JSON_H
#define STRATSIM_UTIL_JSON_H

#include <cjson/cJSON.h>
#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  UTIL_JSON_OK,
  UTIL_JSON_MISSING,      /* no member of that name (or not an object to look in) */
  UTIL_JSON_WRONG_TYPE,   /* present, but not of the type asked for */
  UTIL_JSON_OUT_OF_RANGE, /* a number, but not finite, not whole or outside the range asked */
} UtilJsonStatus;

/* Where parsing stopped in a malformed text: 1-based line and column (both 0 when cJSON did not
 * say), and whether the text ended first (an unexpected end rather than a wrong character). */
typedef struct {
  int line, column;
  gboolean at_end;
} UtilJsonPosition;

/* Parses @text (which must be one JSON value, nothing after it). NULL when malformed, with
 * *@where (nullable) set. Free the result with cJSON_Delete. Reads no global state (cJSON's
 * error pointer is a global, so searches parsing on threads must not use it). */
cJSON *util_json_parse(const char *text, UtilJsonPosition *where);

/* The member @key of @obj, or NULL (also when @obj is NULL or not an object). */
const cJSON *util_json_member(const cJSON *obj, const char *key);

/* @v as an integer in [@lo, @hi] into *@out (untouched unless OK); MISSING when @v is NULL. */
UtilJsonStatus util_json_int_value(const cJSON *v, gint64 lo, gint64 hi, gint64 *out);
/* util_json_int_value of the member @key of @obj. */
UtilJsonStatus util_json_int(const cJSON *obj, const char *key, gint64 lo, gint64 hi,
                             gint64 *out);

/* @v as a finite number into *@out (untouched unless OK): WRONG_TYPE when not a number,
 * OUT_OF_RANGE when infinite; MISSING when @v is NULL. */
UtilJsonStatus util_json_number_value(const cJSON *v, double *out);
/* util_json_number_value of the member @key of @obj. */
UtilJsonStatus util_json_number(const cJSON *obj, const char *key, double *out);

/* The member @key of @obj as a string (borrowed from @obj) into *@out (untouched unless OK);
 * WRONG_TYPE when not a string, or when empty and @non_empty. */
UtilJsonStatus util_json_string(const cJSON *obj, const char *key, gboolean non_empty,
                                const char **out);

/* The member @key of @obj as true or false into *@out (untouched unless OK). */
UtilJsonStatus util_json_bool(const cJSON *obj, const char *key, gboolean *out);

/* The member @key of @obj when it is an object (borrowed) into *@out (untouched unless OK). */
UtilJsonStatus util_json_object(const cJSON *obj, const char *key, const cJSON **out);

/* A short rendering of @v for an error message: a number with 17 significant digits, anything
 * else as compact JSON cut to 40 characters. Free with g_free. */
char *util_json_describe(const cJSON *v);

G_END_DECLS

#endif
