/* scenarios/scenario — parsing scenario JSON (scn_scenario.h); expanding it into points is in
 * scn_expand.c, the placeholder language in scn_template.c. */
#include "scenarios/scn_scenario.h"
#include "scenarios/scn_search.h"
#include "sim/sim_crossmesh.h"
#include "util/util_json.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

G_DEFINE_QUARK(scn-error-quark, scn_error)

static void template_free(gpointer p) {
  ScnTemplate *t = p;
  g_free(t->spec);
  g_free(t->label);
  g_free(t);
}

static void axis_free(gpointer p) {
  ScnAxis *a = p;
  g_free(a->name);
  g_ptr_array_free(a->settings, TRUE);
  g_free(a);
}

void scn_scenario_free(ScnScenario *s) {
  if (!s) return;
  g_free(s->name);
  g_free(s->description);
  g_free(s->file);
  g_free(s->dir);
  g_free(s->json);
  if (s->models) g_ptr_array_free(s->models, TRUE);
  if (s->clusters) g_ptr_array_free(s->clusters, TRUE);
  if (s->strategies) g_ptr_array_free(s->strategies, TRUE);
  if (s->axes) g_ptr_array_free(s->axes, TRUE);
  g_free(s->calibration);
  g_free(s->throughput_x);
  scn_setting_free(s->timeline_where);
  g_free(s);
}

/* --- parsing ---------------------------------------------------------------------------- */

static gboolean scalar_value(const cJSON *v, char **text, gboolean *numeric);
static gboolean check_fields(const cJSON *obj, const char *origin, const char *where,
                             const char *const *known, GError **error);

static gboolean parse_templates(const cJSON *root, const char *plural, const char *singular,
                                const char *origin, gboolean strategies, GPtrArray **out,
                                GError **error) {
  const cJSON *many = cJSON_GetObjectItemCaseSensitive(root, plural);
  const cJSON *one = cJSON_GetObjectItemCaseSensitive(root, singular);
  if (many && one) {
    g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: give \"%s\" or \"%s\", not both",
                origin, plural, singular);
    return FALSE;
  }
  const cJSON *list = many ? many : one;
  const char *field = many ? plural : singular;
  if (!list) {
    g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: \"%s\" is missing", origin, plural);
    return FALSE;
  }
  *out = g_ptr_array_new_with_free_func(template_free);
  int n = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : 1;
  if (n == 0) {
    g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: \"%s\" is empty", origin, field);
    return FALSE;
  }
  for (int i = 0; i < n; i++) {
    const cJSON *item = cJSON_IsArray(list) ? cJSON_GetArrayItem(list, i) : list;
    ScnTemplate *t = g_new0(ScnTemplate, 1);
    g_ptr_array_add(*out, t);
    if (cJSON_IsString(item) && item->valuestring[0]) {
      t->spec = g_strdup(item->valuestring);
    } else if (cJSON_IsObject(item)) {
      const cJSON *search = strategies ? cJSON_GetObjectItemCaseSensitive(item, "search") : NULL;
      const cJSON *spec = cJSON_GetObjectItemCaseSensitive(item, "spec");
      const cJSON *label = cJSON_GetObjectItemCaseSensitive(item, "label");
      g_autofree char *search_spec = NULL;
      if (search) {
        /* {"search": {"algo": .., "budget": .., "seed": ..}}: the spec "search:algo=..,..."
         * (scn_search.h), keys in a fixed order so that the point key does not depend on the
         * file's. */
        static const char *const keys[] = {"algo", "budget", "seed", "vars", "dims", "followers",
                                           "mesh_axes", "microbatches", NULL};
        if (spec || !cJSON_IsObject(search) ||
            !check_fields(search, origin, "a search entry", keys, error)) {
          if (error && !*error)
            g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE,
                        "scenario %s: %s[%d]: \"search\" must be an object of algo, budget, seed, "
                        "vars, dims, followers, mesh_axes, microbatches (and the entry has no "
                        "\"spec\")", origin, field, i);
          return FALSE;
        }
        GString *text = g_string_new("search");
        for (int k = 0; keys[k]; k++) {
          const cJSON *v = cJSON_GetObjectItemCaseSensitive(search, keys[k]);
          if (!v) continue;
          g_autofree char *value = NULL;
          gboolean numeric;
          if (cJSON_IsBool(v)) {
            value = g_strdup(cJSON_IsTrue(v) ? "true" : "false");
          } else if (!scalar_value(v, &value, &numeric)) {
            g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: %s[%d].search.%s must be a "
                        "number or a string", origin, field, i, keys[k]);
            g_string_free(text, TRUE);
            return FALSE;
          }
          g_string_append_printf(text, "%c%s=%s", text->len == 6 ? ':' : ',', keys[k], value);
        }
        search_spec = g_string_free(text, FALSE);
      } else if (!cJSON_IsString(spec) || !spec->valuestring[0]) {
        spec = NULL;
      }
      if ((!spec && !search_spec) || (label && !cJSON_IsString(label))) {
        g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE,
                    "scenario %s: %s[%d]: an object entry needs \"spec\" (a string) and may have "
                    "\"label\" (a string)", origin, field, i);
        return FALSE;
      }
      for (const cJSON *f = item->child; f; f = f->next)
        if (strcmp(f->string, "spec") != 0 && strcmp(f->string, "label") != 0 && f->string[0] != '_' &&
            !(search && strcmp(f->string, "search") == 0)) {
          g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: %s[%d]: unknown field \"%s\"",
                      origin, field, i, f->string);
          return FALSE;
        }
      t->spec = search_spec ? g_steal_pointer(&search_spec) : g_strdup(spec->valuestring);
      if (label && label->valuestring[0]) t->label = g_strdup(label->valuestring);
    } else {
      g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE,
                  "scenario %s: %s[%d] must be a spec string or {\"spec\": ..., \"label\": ...}",
                  origin, field, i);
      return FALSE;
    }
    if (!t->label) t->label = g_strdup(t->spec);
    /* A search entry without placeholders is checked now, not at every point. */
    SrchOptions search_options;
    GError *local = NULL;
    const char *baseline;
    if (strategies && !strchr(t->spec, '{') &&
        ((scn_search_spec_is(t->spec) && !scn_search_spec_parse(t->spec, &search_options, &local)) ||
         (scn_baseline_spec_is(t->spec) &&
          !scn_baseline_spec_parse(t->spec, &search_options, &baseline, &local)))) {
      g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID, "scenario %s: %s[%d]: %s", origin, field, i,
                  local->message);
      g_error_free(local);
      return FALSE;
    }
  }
  return TRUE;
}

/* A scalar axis value: numbers and strings. */
static gboolean scalar_value(const cJSON *v, char **text, gboolean *numeric) {
  if (cJSON_IsNumber(v) && isfinite(v->valuedouble)) {
    *text = scn_format_number(v->valuedouble);
    *numeric = TRUE;
    return TRUE;
  }
  if (cJSON_IsString(v)) {
    *text = g_strdup(v->valuestring);
    char *end = NULL;
    double d = g_ascii_strtod(v->valuestring, &end);
    *numeric = v->valuestring[0] && *end == '\0' && isfinite(d);
    return TRUE;
  }
  return FALSE;
}

static gboolean parse_setting_object(const cJSON *obj, const char *origin, const char *where,
                                     ScnSetting **out, GError **error) {
  ScnSetting *s = g_new0(ScnSetting, 1);
  for (const cJSON *f = obj->child; f; f = f->next) {
    char *text = NULL;
    gboolean numeric = FALSE;
    if (!scn_is_variable_name(f->string)) {
      g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE,
                  "scenario %s: %s: \"%s\" is not a variable name (letters, digits, _)", origin,
                  where, f->string);
      scn_setting_free(s);
      return FALSE;
    }
    if (!scalar_value(f, &text, &numeric)) {
      g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE,
                  "scenario %s: %s: \"%s\" must be a number or a string", origin, where, f->string);
      scn_setting_free(s);
      return FALSE;
    }
    scn_setting_add(s, f->string, text, numeric);
    g_free(text);
  }
  *out = s;
  return TRUE;
}

static gboolean parse_axes(const cJSON *root, ScnScenario *sc, GError **error) {
  sc->axes = g_ptr_array_new_with_free_func(axis_free);
  const cJSON *axes = cJSON_GetObjectItemCaseSensitive(root, "axes");
  if (!axes) return TRUE;
  if (!cJSON_IsObject(axes)) {
    g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: \"axes\" must be an object", sc->name);
    return FALSE;
  }
  GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal); /* variable -> axis name */
  gboolean ok = FALSE;
  for (const cJSON *a = axes->child; a; a = a->next) {
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) == 0) {
      g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE,
                  "scenario %s: axes.%s must be a non-empty list of values", sc->name, a->string);
      goto out;
    }
    ScnAxis *axis = g_new0(ScnAxis, 1);
    axis->name = g_strdup(a->string);
    axis->settings = g_ptr_array_new_with_free_func((GDestroyNotify)scn_setting_free);
    g_ptr_array_add(sc->axes, axis);
    int n = cJSON_GetArraySize(a);
    for (int i = 0; i < n; i++) {
      const cJSON *v = cJSON_GetArrayItem(a, i);
      g_autofree char *where = g_strdup_printf("axes.%s[%d]", a->string, i);
      ScnSetting *s = NULL;
      if (cJSON_IsObject(v)) {
        if (!parse_setting_object(v, sc->name, where, &s, error)) goto out;
        if (s->nvars == 0) {
          scn_setting_free(s);
          g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: %s is an empty object",
                      sc->name, where);
          goto out;
        }
      } else {
        char *text = NULL;
        gboolean numeric = FALSE;
        if (!scn_is_variable_name(a->string)) {
          g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE,
                      "scenario %s: axis \"%s\" is not a variable name (letters, digits, _)",
                      sc->name, a->string);
          goto out;
        }
        if (!scalar_value(v, &text, &numeric)) {
          g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE,
                      "scenario %s: %s must be a number, a string or an object of variables",
                      sc->name, where);
          goto out;
        }
        s = g_new0(ScnSetting, 1);
        scn_setting_add(s, a->string, text, numeric);
        g_free(text);
      }
      g_ptr_array_add(axis->settings, s);
      /* Every setting of an axis must set the same variables (a table, not a ragged list). */
      ScnSetting *first = g_ptr_array_index(axis->settings, 0);
      gboolean same = s->nvars == first->nvars;
      for (int k = 0; same && k < s->nvars; k++) same = scn_setting_find(first, s->vars[k]) >= 0;
      if (!same) {
        g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE,
                    "scenario %s: %s sets other variables than axes.%s[0]", sc->name, where, a->string);
        goto out;
      }
    }
    ScnSetting *first = g_ptr_array_index(axis->settings, 0);
    for (int k = 0; k < first->nvars; k++) {
      const char *other = g_hash_table_lookup(seen, first->vars[k]);
      if (other) {
        g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE,
                    "scenario %s: variable '%s' is set by both axes.%s and axes.%s", sc->name,
                    first->vars[k], other, a->string);
        goto out;
      }
      g_hash_table_insert(seen, first->vars[k], a->string);
    }
  }
  ok = TRUE;
out:
  g_hash_table_destroy(seen);
  return ok;
}

static gboolean parse_string_flags(const cJSON *list, const char *origin, const char *field,
                                   const char *const *names, unsigned *out, GError **error) {
  if (!list) return TRUE;
  if (!cJSON_IsArray(list)) {
    g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: %s must be a list", origin, field);
    return FALSE;
  }
  *out = 0;
  for (const cJSON *v = list->child; v; v = v->next) {
    int k = -1;
    for (int i = 0; names[i] && cJSON_IsString(v); i++)
      if (strcmp(v->valuestring, names[i]) == 0) k = i;
    if (k < 0) {
      g_autofree char *known = g_strjoinv(", ", (char **)names);
      g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: %s: unknown entry %s%s%s (known: %s)",
                  origin, field, cJSON_IsString(v) ? "'" : "", cJSON_IsString(v) ? v->valuestring : "(not a string)",
                  cJSON_IsString(v) ? "'" : "", known);
      return FALSE;
    }
    *out |= 1u << k;
  }
  return TRUE;
}

static gboolean check_fields(const cJSON *obj, const char *origin, const char *where,
                             const char *const *known, GError **error) {
  for (const cJSON *f = obj->child; f; f = f->next) {
    if (f->string[0] == '_') continue; /* comments */
    gboolean ok = FALSE;
    for (int i = 0; known[i] && !ok; i++) ok = strcmp(f->string, known[i]) == 0;
    if (!ok) {
      g_autofree char *list = g_strjoinv(", ", (char **)known);
      g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: %s: unknown field \"%s\" (known: %s)",
                  origin, where, f->string, list);
      return FALSE;
    }
  }
  return TRUE;
}

/* options.@key, true or false: *@off set to whether it is false (untouched when absent). */
static gboolean option_off(const cJSON *options, const char *key, const ScnScenario *sc,
                           gboolean *off, GError **error) {
  gboolean on = TRUE;
  UtilJsonStatus status = util_json_bool(options, key, &on);
  if (status == UTIL_JSON_WRONG_TYPE) {
    g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: options.%s must be true or false",
                sc->name, key);
    return FALSE;
  }
  if (status == UTIL_JSON_OK) *off = !on;
  return TRUE;
}

static gboolean parse_options(const cJSON *root, ScnScenario *sc, GError **error) {
  const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, "options");
  if (!o) return TRUE;
  static const char *const known[] = {"collectives", "symmetry", "profiles", "calibration",
                                      "crossmesh", "crossmesh_order", "framework", NULL};
  if (!cJSON_IsObject(o)) {
    g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: \"options\" must be an object", sc->name);
    return FALSE;
  }
  if (!check_fields(o, sc->name, "options", known, error)) return FALSE;
  const cJSON *v;
  if ((v = cJSON_GetObjectItemCaseSensitive(o, "collectives"))) {
    if (!cJSON_IsString(v) || (strcmp(v->valuestring, "task") != 0 && strcmp(v->valuestring, "step") != 0)) {
      g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: options.collectives must be \"task\" or \"step\"", sc->name);
      return FALSE;
    }
    sc->step_collectives = strcmp(v->valuestring, "step") == 0;
  }
  if (!option_off(o, "symmetry", sc, &sc->no_symmetry, error) ||
      !option_off(o, "profiles", sc, &sc->no_profiles, error))
    return FALSE;
  if ((v = cJSON_GetObjectItemCaseSensitive(o, "calibration"))) {
    if (!cJSON_IsString(v) || !v->valuestring[0]) {
      g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: options.calibration must be a calibration name", sc->name);
      return FALSE;
    }
    sc->calibration = g_strdup(v->valuestring);
  }
  /* Who launches the kernels (costmodel/cm_framework.h), as the strategy key framework=. */
  if ((v = cJSON_GetObjectItemCaseSensitive(o, "framework"))) {
    MdlFramework f;
    if (!cJSON_IsString(v) || !mdl_framework_parse(v->valuestring, &f)) {
      g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: options.framework must be "
                  "\"megatron-lm\", \"megatron-deepspeed\", \"pytorch-eager\", \"cuda-graphs\" or "
                  "\"none\"", sc->name);
      return FALSE;
    }
    sc->has_framework = TRUE;
    sc->framework = (int)f;
  }
  /* Cross-mesh planning, as `simulate --crossmesh METHOD --crossmesh-order ORDER`. */
  SimCrossMeshOptions defaults;
  sim_crossmesh_options_init(&defaults);
  sc->crossmesh_method = (int)defaults.method;
  sc->crossmesh_order = (int)defaults.order;
  if ((v = cJSON_GetObjectItemCaseSensitive(o, "crossmesh"))) {
    SimCrossMeshMethod m;
    if (!cJSON_IsString(v) || !sim_crossmesh_method_parse(v->valuestring, &m)) {
      g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: options.crossmesh must be "
                  "\"send_recv\", \"local_allgather\", \"global_allgather\" or \"broadcast\"", sc->name);
      return FALSE;
    }
    sc->crossmesh = TRUE;
    sc->crossmesh_method = (int)m;
  }
  if ((v = cJSON_GetObjectItemCaseSensitive(o, "crossmesh_order"))) {
    SimCrossMeshOrder r;
    if (!cJSON_IsString(v) || !sim_crossmesh_order_parse(v->valuestring, &r)) {
      g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: options.crossmesh_order must be "
                  "\"naive\", \"greedy\", \"dfs\", \"randomized_greedy\" or \"ensemble\"", sc->name);
      return FALSE;
    }
    sc->crossmesh = TRUE;
    sc->crossmesh_order = (int)r;
  }
  return TRUE;
}

static gboolean parse_outputs(const cJSON *root, ScnScenario *sc, GError **error) {
  static const char *const chart_names[] = {"throughput", "breakdown", "memory", "timeline", NULL};
  static const char *const table_names[] = {"text", "csv", "json", NULL};
  static const char *const format_names[] = {"png", "svg", NULL};
  static const char *const known[] = {"charts", "tables", "formats", "timeline", "throughput", NULL};
  sc->charts = SCN_CHART_THROUGHPUT | SCN_CHART_BREAKDOWN | SCN_CHART_MEMORY;
  sc->tables = SCN_TABLE_TEXT;
  sc->formats = SCN_FORMAT_PNG | SCN_FORMAT_SVG;
  sc->timeline_max = 4;
  const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, "outputs");
  if (!o) return TRUE;
  if (!cJSON_IsObject(o)) {
    g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: \"outputs\" must be an object", sc->name);
    return FALSE;
  }
  if (!check_fields(o, sc->name, "outputs", known, error) ||
      !parse_string_flags(cJSON_GetObjectItemCaseSensitive(o, "charts"), sc->name, "outputs.charts",
                          chart_names, &sc->charts, error) ||
      !parse_string_flags(cJSON_GetObjectItemCaseSensitive(o, "tables"), sc->name, "outputs.tables",
                          table_names, &sc->tables, error) ||
      !parse_string_flags(cJSON_GetObjectItemCaseSensitive(o, "formats"), sc->name, "outputs.formats",
                          format_names, &sc->formats, error))
    return FALSE;
  const cJSON *tp = cJSON_GetObjectItemCaseSensitive(o, "throughput");
  if (tp) {
    static const char *const tp_known[] = {"x", "y", "best", "zero", NULL};
    static const char *const y_names[] = {"samples_per_s", "tflops_per_gpu", "iteration_time_s",
                                          "samples_per_s_per_gpu", NULL};
    const cJSON *x = cJSON_IsObject(tp) ? cJSON_GetObjectItemCaseSensitive(tp, "x") : NULL;
    const cJSON *y = cJSON_IsObject(tp) ? cJSON_GetObjectItemCaseSensitive(tp, "y") : NULL;
    const cJSON *best = cJSON_IsObject(tp) ? cJSON_GetObjectItemCaseSensitive(tp, "best") : NULL;
    const cJSON *zero = cJSON_IsObject(tp) ? cJSON_GetObjectItemCaseSensitive(tp, "zero") : NULL;
    sc->throughput_y = -1;
    for (int k = 0; y && cJSON_IsString(y) && y_names[k]; k++)
      if (strcmp(y->valuestring, y_names[k]) == 0) sc->throughput_y = k;
    if (!cJSON_IsObject(tp) || !check_fields(tp, sc->name, "outputs.throughput", tp_known, error) ||
        (x && (!cJSON_IsString(x) || (strcmp(x->valuestring, "gpus") != 0 && !scn_is_variable_name(x->valuestring)))) ||
        (y && sc->throughput_y < 0) || (best && !cJSON_IsBool(best)) || (zero && !cJSON_IsBool(zero))) {
      if (error && !*error)
        g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE,
                    "scenario %s: outputs.throughput must be {\"x\": \"gpus\" or an axis variable, "
                    "\"y\": \"samples_per_s\", \"samples_per_s_per_gpu\", \"tflops_per_gpu\" or "
                    "\"iteration_time_s\", "
                    "\"best\": true or false, \"zero\": true or false}", sc->name);
      return FALSE;
    }
    if (sc->throughput_y < 0) sc->throughput_y = SCN_Y_SAMPLES_PER_S;
    sc->throughput_best = cJSON_IsTrue(best);
    sc->throughput_free_y = cJSON_IsFalse(zero);
    if (x && strcmp(x->valuestring, "gpus") != 0) sc->throughput_x = g_strdup(x->valuestring);
  }
  const cJSON *tl = cJSON_GetObjectItemCaseSensitive(o, "timeline");
  if (tl) {
    static const char *const tl_known[] = {"where", "max", NULL};
    if (!cJSON_IsObject(tl) || !check_fields(tl, sc->name, "outputs.timeline", tl_known, error)) {
      if (error && !*error)
        g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: outputs.timeline must be an object", sc->name);
      return FALSE;
    }
    const cJSON *where = cJSON_GetObjectItemCaseSensitive(tl, "where");
    const cJSON *max = cJSON_GetObjectItemCaseSensitive(tl, "max");
    if (where && (!cJSON_IsObject(where) ||
                  !parse_setting_object(where, sc->name, "outputs.timeline.where", &sc->timeline_where, error))) {
      if (error && !*error)
        g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: outputs.timeline.where must be an object of axis values", sc->name);
      return FALSE;
    }
    if (max) {
      gint64 count = 0;
      if (util_json_int_value(max, 1, 64, &count) != UTIL_JSON_OK) {
        g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: outputs.timeline.max must be an integer from 1 to 64", sc->name);
        return FALSE;
      }
      sc->timeline_max = (int)count;
    }
    sc->charts |= SCN_CHART_TIMELINE;
  }
  return TRUE;
}

/* Whether an axis of @sc sets variable @var. */
static gboolean axes_set(const ScnScenario *sc, const char *var) {
  for (guint a = 0; a < sc->axes->len; a++) {
    const ScnAxis *axis = g_ptr_array_index(sc->axes, a);
    if (scn_setting_find(g_ptr_array_index(axis->settings, 0), var) >= 0) return TRUE;
  }
  return FALSE;
}

ScnScenario *scn_scenario_from_json(const char *json_text, const char *file, GError **error) {
  g_return_val_if_fail(json_text != NULL, NULL);
  const char *origin = file ? file : "(text)";
  cJSON *root = cJSON_Parse(json_text);
  if (!root || !cJSON_IsObject(root)) {
    const char *at = cJSON_GetErrorPtr();
    g_autofree char *near = at && *at ? g_strndup(at, 30) : NULL;
    g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: not a JSON object%s%s%s", origin,
                near ? " (near '" : "", near ? near : "", near ? "')" : "");
    cJSON_Delete(root);
    return NULL;
  }
  ScnScenario *sc = g_new0(ScnScenario, 1);
  static const char *const known[] = {"name", "description", "paper", "models", "model", "clusters",
                                      "cluster", "strategies", "strategy", "axes", "options",
                                      "outputs", NULL};
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
  const cJSON *desc = cJSON_GetObjectItemCaseSensitive(root, "description");
  if (!cJSON_IsString(name) || !name->valuestring[0]) {
    g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: \"name\" (a non-empty string) is missing", origin);
    goto fail;
  }
  sc->name = g_strdup(name->valuestring);
  if (desc && !cJSON_IsString(desc)) {
    g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "scenario %s: \"description\" must be a string", sc->name);
    goto fail;
  }
  sc->description = g_strdup(desc ? desc->valuestring : "");
  sc->file = g_strdup(file);
  sc->dir = file ? g_path_get_dirname(file) : NULL;
  sc->json = g_strdup(json_text);
  if (!check_fields(root, sc->name, "top level", known, error) ||
      !parse_templates(root, "models", "model", sc->name, FALSE, &sc->models, error) ||
      !parse_templates(root, "clusters", "cluster", sc->name, FALSE, &sc->clusters, error) ||
      !parse_templates(root, "strategies", "strategy", sc->name, TRUE, &sc->strategies, error) ||
      !parse_axes(root, sc, error) || !parse_options(root, sc, error) ||
      !parse_outputs(root, sc, error))
    goto fail;
  cJSON_Delete(root);
  root = NULL;
  if (sc->throughput_x && !axes_set(sc, sc->throughput_x)) {
    g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE,
                "scenario %s: outputs.throughput.x: no axis sets '%s'", sc->name, sc->throughput_x);
    goto fail;
  }
  for (int k = 0; sc->timeline_where && k < sc->timeline_where->nvars; k++)
    if (!axes_set(sc, sc->timeline_where->vars[k])) {
      g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE,
                  "scenario %s: outputs.timeline.where: no axis sets '%s'", sc->name,
                  sc->timeline_where->vars[k]);
      goto fail;
    }
  /* Expanding once here reports every template error at load time, not mid-sweep. */
  GPtrArray *points = scn_scenario_expand(sc, error);
  if (!points) {
    scn_scenario_free(sc);
    return NULL;
  }
  g_ptr_array_free(points, TRUE);
  return sc;
fail:
  cJSON_Delete(root);
  scn_scenario_free(sc);
  return NULL;
}

ScnScenario *scn_scenario_load(const char *path, GError **error) {
  g_autofree char *text = NULL;
  if (!g_file_get_contents(path, &text, NULL, error)) return NULL;
  /* Absolute, so that `plot` finds the scenario's strategy files from any directory. */
  g_autofree char *absolute = g_canonicalize_filename(path, NULL);
  return scn_scenario_from_json(text, absolute, error);
}
