/* validate/measurements — the run-measurements writer (validate/PLAN.md, "Run measurements
 * JSON"), shared by both runners so their files have one format. Results are kept as plain
 * arrays and cJSON fragments, and the file is assembled in PLAN.md's field order on output. */
#include "validate/val_plan.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

typedef struct {
  int rank;
  gint64 id;
  double time_s;
} StepTime;

struct ValMeasurements {
  char *runner;
  char *model, *cluster, *strategy;
  int ranks;
  int warmup;
  cJSON *environment;     /* object, keys in the order first set */
  GArray *iterations;     /* double */
  GArray *steps;          /* StepTime */
  char *device_kind, *source;
  cJSON *kernels;         /* array of profiles entries with time_s */
  cJSON *collectives;     /* array of measurements entries with time_s */
};

ValMeasurements *val_measurements_new(const ValPlan *plan, const char *runner) {
  g_return_val_if_fail(plan != NULL && runner != NULL, NULL);
  ValMeasurements *m = g_new0(ValMeasurements, 1);
  m->runner = g_strdup(runner);
  m->model = g_strdup(plan->model);
  m->cluster = g_strdup(plan->cluster);
  m->strategy = g_strdup(plan->strategy);
  m->ranks = plan->ranks;
  m->warmup = plan->warmup;
  m->environment = cJSON_CreateObject();
  m->iterations = g_array_new(FALSE, FALSE, sizeof(double));
  m->steps = g_array_new(FALSE, FALSE, sizeof(StepTime));
  m->kernels = cJSON_CreateArray();
  m->collectives = cJSON_CreateArray();
  return m;
}

void val_measurements_free(ValMeasurements *m) {
  if (!m) return;
  g_free(m->runner);
  g_free(m->model);
  g_free(m->cluster);
  g_free(m->strategy);
  cJSON_Delete(m->environment);
  g_array_unref(m->iterations);
  g_array_unref(m->steps);
  g_free(m->device_kind);
  g_free(m->source);
  cJSON_Delete(m->kernels);
  cJSON_Delete(m->collectives);
  g_free(m);
}

static void set_env(ValMeasurements *m, const char *key, cJSON *value) {
  if (cJSON_GetObjectItemCaseSensitive(m->environment, key))
    cJSON_ReplaceItemInObjectCaseSensitive(m->environment, key, value);
  else
    cJSON_AddItemToObject(m->environment, key, value);
}

void val_measurements_set_env_string(ValMeasurements *m, const char *key, const char *value) {
  g_return_if_fail(m != NULL && key != NULL);
  if (!value) {
    cJSON_DeleteItemFromObjectCaseSensitive(m->environment, key);
    return;
  }
  set_env(m, key, cJSON_CreateString(value));
}

void val_measurements_set_env_int(ValMeasurements *m, const char *key, gint64 value) {
  g_return_if_fail(m != NULL && key != NULL);
  set_env(m, key, cJSON_CreateNumber((double)value));
}

/* An argument as a POSIX shell would need it: as is when it has only safe characters. */
static void append_quoted(GString *out, const char *arg) {
  gboolean plain = arg[0] != '\0';
  for (const char *p = arg; *p && plain; p++)
    plain = g_ascii_isalnum(*p) || strchr("_-./=:,+@%", *p) != NULL;
  if (plain) {
    g_string_append(out, arg);
  } else {
    char *q = g_shell_quote(arg);
    g_string_append(out, q);
    g_free(q);
  }
}

void val_measurements_set_env_defaults(ValMeasurements *m, int argc, char **argv) {
  g_return_if_fail(m != NULL);
  val_measurements_set_env_string(m, "host", g_get_host_name());
  GDateTime *now = g_date_time_new_now_utc();
  char *date = g_date_time_format(now, "%Y-%m-%dT%H:%M:%SZ");
  val_measurements_set_env_string(m, "date", date);
  g_free(date);
  g_date_time_unref(now);
  GString *command = g_string_new(NULL);
  for (int i = 0; i < argc; i++) {
    if (i) g_string_append_c(command, ' ');
    append_quoted(command, argv[i]);
  }
  val_measurements_set_env_string(m, "command", command->str);
  g_string_free(command, TRUE);
}

void val_measurements_set_warmup(ValMeasurements *m, int warmup) {
  g_return_if_fail(m != NULL && warmup >= 0);
  m->warmup = warmup;
}

void val_measurements_add_iteration(ValMeasurements *m, double seconds) {
  g_return_if_fail(m != NULL && isfinite(seconds) && seconds > 0);
  g_array_append_val(m->iterations, seconds);
}

void val_measurements_add_step(ValMeasurements *m, int rank, gint64 id, const double *times_s,
                               guint n) {
  g_return_if_fail(m != NULL && times_s != NULL && n >= 1);
  StepTime t = {rank, id, val_median(times_s, n)};
  g_array_append_val(m->steps, t);
}

void val_measurements_set_microbench_info(ValMeasurements *m, const char *device_kind,
                                          const char *source) {
  g_return_if_fail(m != NULL);
  g_free(m->device_kind);
  g_free(m->source);
  m->device_kind = g_strdup(device_kind);
  m->source = g_strdup(source);
}

void val_measurements_add_kernel(ValMeasurements *m, const ValMicroOp *op, double time_s) {
  g_return_if_fail(m != NULL && op != NULL && op->op != NULL);
  cJSON *k = cJSON_CreateObject();
  cJSON_AddStringToObject(k, "op", op->op);
  cJSON_AddStringToObject(k, "dtype", val_dtype_name(op->dtype));
  if (op->gemm) {
    cJSON_AddNumberToObject(k, "m", (double)op->m);
    cJSON_AddNumberToObject(k, "n", (double)op->n);
    cJSON_AddNumberToObject(k, "k", (double)op->k);
    cJSON_AddNumberToObject(k, "batch", (double)op->batch);
  } else {
    cJSON_AddNumberToObject(k, "elements", (double)op->elements);
    cJSON_AddStringToObject(k, "phase", op->backward ? "backward" : "forward");
  }
  cJSON_AddNumberToObject(k, "time_s", time_s);
  cJSON_AddItemToArray(m->kernels, k);
}

void val_measurements_add_collective(ValMeasurements *m, const ValMicroCollective *c,
                                     double time_s) {
  g_return_if_fail(m != NULL && c != NULL);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "kind", val_collective_name(c->kind));
  cJSON_AddNumberToObject(o, "ranks", c->ranks);
  cJSON_AddNumberToObject(o, "nodes", c->nodes);
  cJSON_AddNumberToObject(o, "bytes", (double)c->bytes);
  cJSON_AddNumberToObject(o, "time_s", time_s);
  cJSON_AddItemToArray(m->collectives, o);
}

/* "profiles" or "collectives": {"device", "source", KEY: entries}. */
static cJSON *microbench_section(const ValMeasurements *m, const char *key, const cJSON *entries) {
  cJSON *o = cJSON_CreateObject();
  if (m->device_kind) cJSON_AddStringToObject(o, "device", m->device_kind);
  if (m->source) cJSON_AddStringToObject(o, "source", m->source);
  cJSON_AddItemToObject(o, key, cJSON_Duplicate(entries, TRUE));
  return o;
}

char *val_measurements_to_json(const ValMeasurements *m) {
  g_return_val_if_fail(m != NULL, NULL);
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", "stratsim-measurements");
  cJSON_AddNumberToObject(root, "version", 1);
  cJSON_AddStringToObject(root, "runner", m->runner);
  cJSON *plan = cJSON_AddObjectToObject(root, "plan");
  cJSON_AddStringToObject(plan, "model", m->model);
  cJSON_AddStringToObject(plan, "cluster", m->cluster);
  cJSON_AddStringToObject(plan, "strategy", m->strategy);
  cJSON_AddNumberToObject(plan, "ranks", m->ranks);
  cJSON_AddItemToObject(root, "environment", cJSON_Duplicate(m->environment, TRUE));
  cJSON_AddNumberToObject(root, "warmup", m->warmup);
  cJSON *iterations = cJSON_AddArrayToObject(root, "iterations_s");
  for (guint i = 0; i < m->iterations->len; i++)
    cJSON_AddItemToArray(iterations, cJSON_CreateNumber(g_array_index(m->iterations, double, i)));
  if (m->iterations->len > 0)
    cJSON_AddNumberToObject(root, "iteration_time_s",
                            val_median((const double *)(void *)m->iterations->data,
                                       m->iterations->len));
  cJSON *steps = cJSON_AddArrayToObject(root, "steps");
  for (guint i = 0; i < m->steps->len; i++) {
    const StepTime *t = &g_array_index(m->steps, StepTime, i);
    cJSON *s = cJSON_CreateObject();
    cJSON_AddNumberToObject(s, "rank", t->rank);
    cJSON_AddNumberToObject(s, "id", (double)t->id);
    cJSON_AddNumberToObject(s, "time_s", t->time_s);
    cJSON_AddItemToArray(steps, s);
  }
  if (cJSON_GetArraySize(m->kernels) > 0)
    cJSON_AddItemToObject(root, "profiles", microbench_section(m, "kernels", m->kernels));
  if (cJSON_GetArraySize(m->collectives) > 0)
    cJSON_AddItemToObject(root, "collectives",
                          microbench_section(m, "collectives", m->collectives));
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  g_assert(text != NULL); /* cJSON fails only for lack of memory */
  char *out = g_strconcat(text, "\n", NULL);
  cJSON_free(text);
  return out;
}

gboolean val_measurements_write(const ValMeasurements *m, const char *path, GError **error) {
  g_return_val_if_fail(m != NULL && path != NULL, FALSE);
  char *text = val_measurements_to_json(m);
  GError *local = NULL;
  gboolean ok = g_file_set_contents(path, text, -1, &local);
  if (!ok) {
    g_set_error(error, VAL_PLAN_ERROR, VAL_PLAN_ERROR_IO, "%s: cannot write the measurements: %s",
                path, local->message);
    g_error_free(local);
  }
  g_free(text);
  return ok;
}
