/* validate/plan (private) — what the plan reader's files share: where a check is (Ctx), the
 * error wording "SOURCE: WHERE: field 'KEY' is VALUE: must ...", the typed field readers over
 * util/util_json.h (val_plan_fields.c), and the cross-rank checks (val_plan_check.c). */
#ifndef STRATSIM_VAL_PLAN_INT_H
#define STRATSIM_VAL_PLAN_INT_H

#include <cjson/cJSON.h>

#include "util/util_json.h"
#include "validate/val_plan.h"

G_BEGIN_DECLS

/* Where a check is: "programs[1].steps[4] (id 9)", "groups[0]", "" (top level). */
typedef struct {
  const char *source;
  char at[128];
} Ctx;

/* Sets @error (VAL_PLAN_ERROR_INPUT): "SOURCE: AT: message". */
void val_plan_fail(GError **error, const Ctx *c, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
/* Sets @error: "field '@key' is VALUE: @must" (the value as util_json_describe renders it). */
void val_plan_fail_value(GError **error, const Ctx *c, const char *key, const cJSON *v,
                         const char *must);

/* Field readers: FALSE with @error naming the field and its value. */
/* A whole number in [lo, hi] (hi <= 2^62, exact as a double), else @dflt when absent and not
 * @required. */
gboolean val_plan_int_field(const cJSON *obj, const char *key, gint64 lo, gint64 hi,
                            gboolean required, gint64 dflt, gint64 *out, const Ctx *c,
                            GError **error);
gboolean val_plan_int32_field(const cJSON *obj, const char *key, int lo, int hi, gboolean required,
                              int dflt, int *out, const Ctx *c, GError **error);
/* A byte count: a finite number in (0, VAL_PLAN_MAX_BYTES], rounded up to whole bytes. */
gboolean val_plan_bytes_field(const cJSON *obj, const char *key, gint64 *out, const Ctx *c,
                              GError **error);
/* A string (borrowed from @obj): NULL when absent and not @required. */
gboolean val_plan_string_field(const cJSON *obj, const char *key, gboolean required,
                               const char **out, const Ctx *c, GError **error);
/* The index of @text among the first @n of @names, or -1. */
int val_plan_name_index(const char *const *names, guint n, const char *text);
/* A named enum field; @n_allowed names the accepted prefix of @names; @dflt when absent and not
 * @required. */
gboolean val_plan_enum_field(const cJSON *obj, const char *key, const char *const *names,
                             guint n_allowed, gboolean required, int dflt, int *out, const Ctx *c,
                             GError **error);
/* Parses @text (one JSON value); NULL with "malformed JSON at line L, column C". */
cJSON *val_plan_parse_json(const char *text, const Ctx *c, GError **error);

/* The cross-rank checks, in this order, on a plan whose programs are read (val_plan_check.c). */
gboolean val_plan_match_transfers(ValPlan *plan, Ctx *c, GError **error);
gboolean val_plan_match_collectives(ValPlan *plan, Ctx *c, GError **error);
/* A runner's communicator must stay on one stream (NCCL orders a communicator's operations;
 * two streams sharing one can deadlock): every collective of a group on one stream, every
 * send and recv of the plan (one world communicator) on one stream. */
gboolean val_plan_check_streams(const ValPlan *plan, Ctx *c, GError **error);
/* Also fills plan->issue and plan->n_launches. */
gboolean val_plan_check_deadlock(ValPlan *plan, Ctx *c, GError **error);

G_END_DECLS

#endif
