/* validate/ingest — the run-measurements reader and the ingest into SQLite (val_ingest.h). */
#include "validate/val_ingest.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include "costmodel/cm_calibrate.h"
#include "costmodel/cm_profile.h"
#include "results/res_validate.h"
#include "util/util_json.h"

G_DEFINE_QUARK(val-ingest-error-quark, val_ingest_error)

static void bad(GError **error, const char *source, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static void bad(GError **error, const char *source, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, VAL_INGEST_ERROR, VAL_INGEST_ERROR_INPUT, "%s: %s", source, msg);
}

static const cJSON *field(const cJSON *obj, const char *key) { return util_json_member(obj, key); }

static gboolean string_of(const cJSON *obj, const char *key, const char *where, const char *source,
                          char **out, GError **error) {
  const char *text = NULL;
  UtilJsonStatus status = util_json_string(obj, key, FALSE, &text);
  if (status != UTIL_JSON_OK) {
    bad(error, source, status == UTIL_JSON_MISSING ? "field '%s%s' is missing"
                                                    : "field '%s%s' must be a string", where, key);
    return FALSE;
  }
  *out = g_strdup(text);
  return TRUE;
}

/* A whole number in [lo, hi] (whole numbers exact as doubles). */
static gboolean int_of(const cJSON *obj, const char *key, const char *where, double lo, double hi,
                       const char *source, gint64 *out, GError **error) {
  UtilJsonStatus status = util_json_int(obj, key, (gint64)lo, (gint64)hi, out);
  if (status == UTIL_JSON_MISSING) bad(error, source, "field '%s%s' is missing", where, key);
  else if (status != UTIL_JSON_OK)
    bad(error, source, "field '%s%s' must be a whole number in %.17g..%.17g", where, key, lo, hi);
  return status == UTIL_JSON_OK;
}

/* A finite time: > 0, or >= 0 with @zero_ok. */
static gboolean time_of(const cJSON *v, const char *what, gboolean zero_ok, const char *source,
                        double *out, GError **error) {
  double t = 0;
  if (util_json_number_value(v, &t) != UTIL_JSON_OK || t < 0 || (!zero_ok && t == 0)) {
    bad(error, source, "%s must be a finite number of seconds %s 0", what, zero_ok ? ">=" : ">");
    return FALSE;
  }
  *out = t;
  return TRUE;
}

static char *optional_env_string(const cJSON *env, const char *key) {
  const cJSON *v = field(env, key);
  return cJSON_IsString(v) && v->valuestring ? g_strdup(v->valuestring) : NULL;
}

static char *print(const cJSON *v) {
  char *p = cJSON_PrintUnformatted(v);
  g_assert(p != NULL);
  char *text = g_strdup(p);
  cJSON_free(p);
  return text;
}

void val_run_measurements_free(ValRunMeasurements *m) {
  if (!m) return;
  g_free(m->runner);
  g_free(m->model);
  g_free(m->cluster);
  g_free(m->strategy);
  g_free(m->environment);
  g_free(m->device);
  g_free(m->host);
  g_free(m->date);
  g_free(m->iterations_s);
  g_free(m->steps);
  g_free(m->profiles);
  g_free(m->collectives);
  g_free(m);
}

static guint64 step_key(int rank, gint64 id) {
  return ((guint64)(guint32)rank << 40) ^ (guint64)id;
}

static gboolean read_steps(ValRunMeasurements *m, const cJSON *root, const char *source,
                           GError **error) {
  const cJSON *steps = field(root, "steps");
  if (!cJSON_IsArray(steps)) {
    bad(error, source, steps ? "field 'steps' must be an array" : "field 'steps' is missing");
    return FALSE;
  }
  int n = cJSON_GetArraySize(steps);
  if (n > VAL_RUN_MAX_STEPS) {
    bad(error, source, "field 'steps' has %d entries, more than %d", n, VAL_RUN_MAX_STEPS);
    return FALSE;
  }
  m->steps = g_new0(ValRunStep, n ? n : 1);
  g_autoptr(GHashTable) seen = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  const cJSON *s;
  cJSON_ArrayForEach(s, steps) {
    g_autofree char *where = g_strdup_printf("steps[%u].", m->n_steps);
    gint64 rank, id;
    ValRunStep *out = &m->steps[m->n_steps];
    if (!cJSON_IsObject(s)) {
      bad(error, source, "field 'steps[%u]' must be an object", m->n_steps);
      return FALSE;
    }
    if (!int_of(s, "rank", where, 0, m->ranks - 1, source, &rank, error) ||
        !int_of(s, "id", where, 0, 9007199254740991.0, source, &id, error))
      return FALSE;
    g_autofree char *what = g_strdup_printf("field '%stime_s'", where);
    const cJSON *t = field(s, "time_s");
    if (!t) {
      bad(error, source, "%s is missing", what);
      return FALSE;
    }
    if (!time_of(t, what, TRUE, source, &out->time_s, error)) return FALSE;
    guint64 key = step_key((int)rank, id);
    if (g_hash_table_contains(seen, &key)) {
      bad(error, source, "steps[%u]: rank %d step %" G_GINT64_FORMAT " is listed twice",
          m->n_steps, (int)rank, id);
      return FALSE;
    }
    g_hash_table_add(seen, g_memdup2(&key, sizeof key));
    out->rank = (int)rank;
    out->id = id;
    m->n_steps++;
  }
  return TRUE;
}

ValRunMeasurements *val_run_measurements_parse(const char *text, const char *source,
                                               GError **error) {
  g_return_val_if_fail(text != NULL, NULL);
  if (!source) source = "measurements";
  cJSON *root = cJSON_ParseWithOpts(text, NULL, TRUE);
  if (!root) {
    bad(error, source, "malformed JSON");
    return NULL;
  }
  ValRunMeasurements *m = g_new0(ValRunMeasurements, 1);
  m->iteration_time_s = NAN;
  char *format = NULL;
  gint64 version, ranks, warmup;
  const cJSON *plan = field(root, "plan"), *env = field(root, "environment");
  if (!cJSON_IsObject(root)) {
    bad(error, source, "the text must be a JSON object");
    goto err;
  }
  if (!string_of(root, "format", "", source, &format, error)) goto err;
  if (strcmp(format, "stratsim-measurements") != 0) {
    bad(error, source, "field 'format' is '%s', not 'stratsim-measurements'", format);
    goto err;
  }
  if (!int_of(root, "version", "", 1, 1000000, source, &version, error)) goto err;
  if (version != 1) {
    bad(error, source, "format version %" G_GINT64_FORMAT " is not supported (this stratsim reads 1)", version);
    goto err;
  }
  if (!string_of(root, "runner", "", source, &m->runner, error)) goto err;
  if (strcmp(m->runner, "gpu") != 0 && strcmp(m->runner, "cpu") != 0) {
    bad(error, source, "field 'runner' is '%s', not 'gpu' or 'cpu'", m->runner);
    goto err;
  }
  if (!cJSON_IsObject(plan)) {
    bad(error, source, plan ? "field 'plan' must be an object" : "field 'plan' is missing");
    goto err;
  }
  if (!string_of(plan, "model", "plan.", source, &m->model, error) ||
      !string_of(plan, "cluster", "plan.", source, &m->cluster, error) ||
      !string_of(plan, "strategy", "plan.", source, &m->strategy, error) ||
      !int_of(plan, "ranks", "plan.", 1, VAL_PLAN_MAX_RANKS, source, &ranks, error))
    goto err;
  m->ranks = (int)ranks;
  if (!cJSON_IsObject(env)) {
    bad(error, source, env ? "field 'environment' must be an object" : "field 'environment' is missing");
    goto err;
  }
  m->environment = print(env);
  m->device = optional_env_string(env, "device");
  m->host = optional_env_string(env, "host");
  m->date = optional_env_string(env, "date");
  if (!int_of(root, "warmup", "", 0, VAL_PLAN_MAX_ITERATIONS_READ, source, &warmup, error)) goto err;
  m->warmup = (int)warmup;
  const cJSON *its = field(root, "iterations_s");
  if (!cJSON_IsArray(its)) {
    bad(error, source, its ? "field 'iterations_s' must be an array" : "field 'iterations_s' is missing");
    goto err;
  }
  int n = cJSON_GetArraySize(its);
  if (n > VAL_PLAN_MAX_ITERATIONS_READ) {
    bad(error, source, "field 'iterations_s' has %d entries, more than %d", n, VAL_PLAN_MAX_ITERATIONS_READ);
    goto err;
  }
  m->iterations_s = g_new0(double, n ? n : 1);
  const cJSON *it;
  cJSON_ArrayForEach(it, its) {
    g_autofree char *what = g_strdup_printf("field 'iterations_s[%u]'", m->n_iterations);
    if (!time_of(it, what, FALSE, source, &m->iterations_s[m->n_iterations], error)) goto err;
    m->n_iterations++;
  }
  const cJSON *median = field(root, "iteration_time_s");
  if (m->n_iterations > 0 && !median) {
    bad(error, source, "field 'iteration_time_s' is missing (there are timed iterations)");
    goto err;
  }
  if (median && !time_of(median, "field 'iteration_time_s'", FALSE, source, &m->iteration_time_s, error))
    goto err;
  if (!read_steps(m, root, source, error)) goto err;
  const char *sections[2] = {"profiles", "collectives"};
  char **texts[2] = {&m->profiles, &m->collectives};
  for (int i = 0; i < 2; i++) {
    const cJSON *v = field(root, sections[i]);
    if (!v) continue;
    if (!cJSON_IsObject(v)) {
      bad(error, source, "field '%s' must be an object", sections[i]);
      goto err;
    }
    *texts[i] = print(v);
  }
  g_free(format);
  cJSON_Delete(root);
  return m;
err:
  g_free(format);
  cJSON_Delete(root);
  val_run_measurements_free(m);
  return NULL;
}

gboolean val_run_measurements_check(const ValRunMeasurements *m, const ValPlan *plan,
                                    const char *source, GError **error) {
  if (strcmp(m->model, plan->model) != 0 || strcmp(m->cluster, plan->cluster) != 0 ||
      strcmp(m->strategy, plan->strategy) != 0 || m->ranks != plan->ranks) {
    bad(error, source,
        "measured a run of another plan: %s on %s, strategy %s, %d ranks (the plan %s: %s on %s, "
        "strategy %s, %d ranks)", m->model, m->cluster, m->strategy, m->ranks, plan->source,
        plan->model, plan->cluster, plan->strategy, plan->ranks);
    return FALSE;
  }
  g_autoptr(GHashTable) ids = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  for (int r = 0; r < plan->ranks; r++)
    for (guint i = 0; i < plan->programs[r].n_steps; i++) {
      guint64 key = step_key(r, plan->programs[r].steps[i].id);
      g_hash_table_add(ids, g_memdup2(&key, sizeof key));
    }
  for (guint i = 0; i < m->n_steps; i++) {
    guint64 key = step_key(m->steps[i].rank, m->steps[i].id);
    if (!g_hash_table_contains(ids, &key)) {
      bad(error, source, "steps[%u]: the plan %s has no step %" G_GINT64_FORMAT " on rank %d", i,
          plan->source, m->steps[i].id, m->steps[i].rank);
      return FALSE;
    }
  }
  return TRUE;
}

/* The plan's "predicted" object as JSON text ("{}" when absent). */
static char *predicted_text(const char *plan_text) {
  cJSON *root = cJSON_Parse(plan_text);
  const cJSON *p = field(root, "predicted");
  char *text = p ? print(p) : g_strdup("{}");
  cJSON_Delete(root);
  return text;
}

static char *read_file(const char *path, const char *what, GError **error) {
  char *text = NULL;
  GError *local = NULL;
  if (!g_file_get_contents(path, &text, NULL, &local)) {
    gboolean missing = g_error_matches(local, G_FILE_ERROR, G_FILE_ERROR_NOENT);
    g_set_error(error, VAL_INGEST_ERROR, missing ? VAL_INGEST_ERROR_INPUT : VAL_INGEST_ERROR_IO,
                "cannot read %s %s: %s", what, path, local->message);
    g_error_free(local);
    return NULL;
  }
  return text;
}

gboolean val_ingest_files(const char *db_path, const char *plan_path,
                          const char *measurements_path, gboolean import_profiles,
                          ValIngestResult *result, GError **error) {
  g_return_val_if_fail(db_path && plan_path && measurements_path && result, FALSE);
  memset(result, 0, sizeof *result);
  gboolean ok = FALSE;
  ValPlan *plan = NULL;
  ValRunMeasurements *m = NULL;
  ResDb *db = NULL;
  CmProfiles *profiles = NULL;
  g_autoptr(GHashTable) measured = NULL;
  g_autofree char *lengths = NULL, *hash = NULL, *prediction = NULL, *iterations = NULL;
  g_autofree char *source = NULL;
  g_autofree char *plan_text = read_file(plan_path, "plan", error);
  if (!plan_text) return FALSE;
  g_autofree char *text = read_file(measurements_path, "measurements", error);
  if (!text) return FALSE;
  if (!(plan = val_plan_parse(plan_text, plan_path, error)) ||
      !(m = val_run_measurements_parse(text, measurements_path, error)) ||
      !val_run_measurements_check(m, plan, measurements_path, error))
    goto out;
  if (m->n_iterations == 0) {
    bad(error, measurements_path, "no timed iterations (a micro-benchmark-only run): nothing to "
        "compare with the plan's prediction");
    goto out;
  }
  if (!isfinite(plan->predicted_iteration_time_s)) {
    bad(error, plan_path, "the plan has no predicted iteration time");
    goto out;
  }
  if (import_profiles && m->profiles &&
      !(profiles = cm_profiles_from_json(m->profiles, measurements_path, error)))
    goto out;

  /* One hash over both texts (their lengths first, so no two pairs run together). */
  GChecksum *sum = g_checksum_new(G_CHECKSUM_SHA256);
  lengths = g_strdup_printf("%zu:%zu:", strlen(plan_text), strlen(text));
  g_checksum_update(sum, (const guchar *)lengths, -1);
  g_checksum_update(sum, (const guchar *)plan_text, -1);
  g_checksum_update(sum, (const guchar *)text, -1);
  hash = g_strdup(g_checksum_get_string(sum));
  g_checksum_free(sum);

  measured = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  for (guint i = 0; i < m->n_steps; i++) {
    guint64 *key = g_new(guint64, 1);
    *key = step_key(m->steps[i].rank, m->steps[i].id);
    g_hash_table_insert(measured, key, &m->steps[i]);
  }
  GArray *steps = g_array_new(FALSE, TRUE, sizeof(ResValidateStep));
  for (int r = 0; r < plan->ranks; r++) {
    const ValProgram *p = &plan->programs[r];
    for (guint i = 0; i < p->n_steps; i++) {
      const ValStep *s = &p->steps[i];
      guint64 key = step_key(r, s->id);
      const ValRunStep *ms = g_hash_table_lookup(measured, &key);
      ResValidateStep rs = {
          .rank = r, .step = (int)s->id, .stream = val_stream_name(s->stream),
          .kind = val_step_kind_name(s->kind),
          .collective = s->kind == VAL_STEP_COLLECTIVE ? val_collective_name(s->collective) : NULL,
          .name = s->name ? s->name : val_step_kind_name(s->kind), .op = s->op, .phase = s->phase,
          .microbatch = s->microbatch, .predicted_s = isfinite(s->predicted_s) ? s->predicted_s : 0,
          .measured_s = ms ? ms->time_s : NAN};
      g_array_append_val(steps, rs);
      result->measured_steps += ms != NULL;
    }
  }
  prediction = predicted_text(plan_text);
  cJSON *its = cJSON_CreateDoubleArray(m->iterations_s, (int)m->n_iterations);
  iterations = print(its);
  cJSON_Delete(its);
  ResValidateRecord rec = {
      .content_hash = hash, .model = plan->model, .cluster = plan->cluster,
      .strategy = plan->strategy, .dtype = val_dtype_name(plan->dtype), .ranks = plan->ranks,
      .runner = m->runner, .warmup = m->warmup, .iterations = (int)m->n_iterations,
      .predicted_s = plan->predicted_iteration_time_s, .measured_s = m->iteration_time_s,
      .device = m->device, .host = m->host, .measured_at = m->date,
      .environment = m->environment, .prediction = prediction, .iterations_s = iterations,
      .plan = plan_text, .nsteps = steps->len, .steps = (const ResValidateStep *)steps->data};
  if (!(db = res_db_open(db_path, error))) {
    g_array_unref(steps);
    goto out;
  }
  result->id = res_db_store_validate(db, &rec, &result->existing, error);
  g_array_unref(steps);
  if (result->id < 0) goto out;
  if (profiles && !result->existing) {
    source = g_strdup_printf("%s: %s", measurements_path, cm_profiles_source(profiles));
    result->profiles_stored = res_db_store_profiles(db, profiles, source, error);
    if (result->profiles_stored < 0) goto out;
  }
  result->steps = rec.nsteps;
  result->predicted_s = rec.predicted_s;
  result->measured_s = rec.measured_s;
  result->error_pct = 100.0 * (rec.predicted_s - rec.measured_s) / rec.measured_s;
  ok = TRUE;
out:
  cm_profiles_free(profiles);
  res_db_close(db);
  val_run_measurements_free(m);
  val_plan_free(plan);
  return ok;
}

gint64 val_import_profiles(const char *db_path, const char *path, char **device, GError **error) {
  g_autofree char *text = read_file(path, "measurements", error);
  if (!text) return -1;
  ValRunMeasurements *m = val_run_measurements_parse(text, path, error);
  if (!m) return -1;
  gint64 n = -1;
  CmProfiles *profiles = NULL;
  ResDb *db = NULL;
  g_autofree char *source = NULL;
  if (!m->profiles) {
    bad(error, path, "no 'profiles' (the runner measured no kernels)");
    goto out;
  }
  if (!(profiles = cm_profiles_from_json(m->profiles, path, error))) goto out;
  if (!(db = res_db_open(db_path, error))) goto out;
  source = g_strdup_printf("%s: %s", path, cm_profiles_source(profiles));
  n = res_db_store_profiles(db, profiles, source, error);
  if (n >= 0 && device && cm_profiles_size(profiles) > 0)
    *device = g_strdup(cm_profiles_at(profiles, 0)->device);
out:
  res_db_close(db);
  cm_profiles_free(profiles);
  val_run_measurements_free(m);
  return n;
}
