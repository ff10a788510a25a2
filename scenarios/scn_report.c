/* scenarios/report — tables of a scenario's stored points (scn_report.h). */
#include "scenarios/scn_report.h"

#include <cjson/cJSON.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

void scn_results_free(ScnResults *r) {
  if (!r) return;
  scn_scenario_free(r->scenario);
  if (r->points) g_ptr_array_free(r->points, TRUE);
  if (r->stored) g_ptr_array_free(r->stored, TRUE);
  g_free(r->db_path);
  g_free(r);
}

ScnResults *scn_results_load(ResDb *db, const char *db_path, const char *name, GError **error) {
  g_autofree char *json = NULL, *file = NULL;
  gint64 id = res_db_find_scenario(db, name, &json, &file, error);
  if (id < 0) return NULL;
  ScnResults *r = g_new0(ScnResults, 1);
  r->db_path = g_strdup(db_path);
  GPtrArray *rows = NULL;
  GHashTable *by_key = NULL;
  if (!(r->scenario = scn_scenario_from_json(json, file, error)) ||
      !(r->points = scn_scenario_expand(r->scenario, error)) ||
      !(rows = res_db_load_points(db, id, error))) {
    scn_results_free(r);
    return NULL;
  }
  by_key = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < rows->len; i++) {
    ResPoint *p = g_ptr_array_index(rows, i);
    g_hash_table_insert(by_key, p->key, GUINT_TO_POINTER(i + 1));
  }
  r->stored = g_ptr_array_new_with_free_func((GDestroyNotify)res_point_free);
  for (guint i = 0; i < r->points->len; i++) {
    const ScnPoint *pt = g_ptr_array_index(r->points, i);
    guint at = GPOINTER_TO_UINT(g_hash_table_lookup(by_key, pt->key));
    ResPoint *p = NULL;
    if (at) {
      p = g_ptr_array_index(rows, at - 1);
      g_ptr_array_index(rows, at - 1) = NULL; /* moved */
      r->stored_count++;
      if (!p->ok) r->errors++;
    }
    g_ptr_array_add(r->stored, p);
  }
  for (guint i = 0; i < rows->len; i++)
    if (g_ptr_array_index(rows, i)) r->stale++;
  g_hash_table_destroy(by_key);
  g_ptr_array_free(rows, TRUE); /* frees the stale points (res_point_free takes NULL) */
  return r;
}

char **scn_results_variables(const ScnResults *r) {
  GPtrArray *vars = g_ptr_array_new();
  for (guint a = 0; a < r->scenario->axes->len; a++) {
    const ScnAxis *axis = g_ptr_array_index(r->scenario->axes, a);
    const ScnSetting *first = g_ptr_array_index(axis->settings, 0);
    for (int k = 0; k < first->nvars; k++) {
      gboolean used = FALSE;
      for (guint i = 0; i < r->points->len && !used; i++)
        used = scn_point_value(g_ptr_array_index(r->points, i), first->vars[k]) != NULL;
      if (used) g_ptr_array_add(vars, g_strdup(first->vars[k]));
    }
  }
  g_ptr_array_add(vars, NULL);
  return (char **)g_ptr_array_free(vars, FALSE);
}

/* Whether template @t (a label) shows variable @var. */
static gboolean label_shows(const char *label_template, const char *var) {
  g_autofree char *needle = g_strdup_printf("{%s}", var);
  return strstr(label_template, needle) != NULL;
}

char *scn_results_point_name(const ScnResults *r, guint i) {
  const ScnScenario *sc = r->scenario;
  const ScnPoint *p = g_ptr_array_index(r->points, i);
  GString *s = g_string_new(p->strategy_label);
  if (sc->models->len > 1) g_string_append_printf(s, ", %s", p->model_label);
  if (sc->clusters->len > 1) g_string_append_printf(s, ", %s", p->cluster_label);
  const ScnTemplate *tm = g_ptr_array_index(sc->models, p->model_entry);
  const ScnTemplate *tc = g_ptr_array_index(sc->clusters, p->cluster_entry);
  const ScnTemplate *ts = g_ptr_array_index(sc->strategies, p->strategy_entry);
  for (int k = 0; k < p->values->nvars; k++) {
    const char *var = p->values->vars[k];
    if (label_shows(ts->label, var) || (sc->models->len > 1 && label_shows(tm->label, var)) ||
        (sc->clusters->len > 1 && label_shows(tc->label, var)))
      continue;
    g_string_append_printf(s, " %s=%s", var, p->values->values[k]);
  }
  return g_string_free(s, FALSE);
}

gboolean scn_report_format_parse(const char *text, ScnReportFormat *out) {
  if (!text || strcmp(text, "text") == 0) *out = SCN_REPORT_TEXT;
  else if (strcmp(text, "csv") == 0) *out = SCN_REPORT_CSV;
  else if (strcmp(text, "json") == 0) *out = SCN_REPORT_JSON;
  else return FALSE;
  return TRUE;
}

static const char *status_word(const ResPoint *p) {
  if (!p) return "pending";
  if (p->ok) return "ok";
  return p->has_prediction && !p->fits_memory ? "OOM" : "error";
}

/* --- text ------------------------------------------------------------------------------- */

typedef struct {
  GPtrArray *cells; /* char *, row-major */
  guint ncols;
  gboolean *right;  /* right-aligned column */
} Table;

static void table_add(Table *t, char *cell) { g_ptr_array_add(t->cells, cell); }

static char *fmt(const char *format, double v) { return g_strdup_printf(format, v); }

static char *report_text(const ScnResults *r) {
  g_auto(GStrv) vars = scn_results_variables(r);
  guint nvars = g_strv_length(vars);
  const ScnScenario *sc = r->scenario;
  gboolean many_models = sc->models->len > 1, many_clusters = sc->clusters->len > 1;
  GPtrArray *headers = g_ptr_array_new();
  g_ptr_array_add(headers, "#");
  if (many_models) g_ptr_array_add(headers, "model");
  if (many_clusters) g_ptr_array_add(headers, "cluster");
  g_ptr_array_add(headers, "strategy");
  for (guint k = 0; k < nvars; k++) g_ptr_array_add(headers, vars[k]);
  static const char *const figures[] = {"GPUs", "iteration s", "samples/s", "TFLOP/s/GPU", "MFU %",
                                        "compute s", "exp. comm s", "host s", "bubble s", "peak GiB",
                                        "capacity GiB", "status"};
  guint first_figure = headers->len;
  for (gsize k = 0; k < G_N_ELEMENTS(figures); k++) g_ptr_array_add(headers, (gpointer)figures[k]);
  Table t = {.cells = g_ptr_array_new_with_free_func(g_free), .ncols = headers->len};
  t.right = g_new0(gboolean, t.ncols);
  t.right[0] = TRUE;
  for (guint c = first_figure; c + 1 < t.ncols; c++) t.right[c] = TRUE;
  for (guint c = 0; c < t.ncols; c++) table_add(&t, g_strdup(g_ptr_array_index(headers, c)));
  for (guint i = 0; i < r->points->len; i++) {
    const ScnPoint *pt = g_ptr_array_index(r->points, i);
    const ResPoint *p = g_ptr_array_index(r->stored, i);
    table_add(&t, g_strdup_printf("%u", i));
    if (many_models) table_add(&t, g_strdup(pt->model_label));
    if (many_clusters) table_add(&t, g_strdup(pt->cluster_label));
    table_add(&t, g_strdup(pt->strategy_label));
    for (guint k = 0; k < nvars; k++) {
      const char *v = scn_point_value(pt, vars[k]);
      table_add(&t, g_strdup(v ? v : "-"));
    }
    if (p && p->has_prediction) {
      table_add(&t, g_strdup_printf("%d", p->num_gpus));
      table_add(&t, fmt("%.4g", p->iteration_time_s));
      table_add(&t, fmt("%.4g", p->samples_per_s));
      table_add(&t, fmt("%.3g", p->tflops_per_gpu));
      table_add(&t, fmt("%.1f", 100 * p->mfu));
      table_add(&t, fmt("%.4g", p->compute_s));
      table_add(&t, fmt("%.4g", p->comm_exposed_s));
      table_add(&t, fmt("%.4g", p->host_bound_s));
      table_add(&t, fmt("%.4g", p->bubble_s));
      table_add(&t, fmt("%.2f", p->peak_memory_bytes / GIB));
      table_add(&t, fmt("%.3g", p->memory_capacity_bytes / GIB));
    } else {
      for (int k = 0; k < 11; k++) table_add(&t, g_strdup("-"));
    }
    table_add(&t, g_strdup(status_word(p)));
  }
  g_autofree guint *width = g_new0(guint, t.ncols);
  for (guint i = 0; i < t.cells->len; i++) {
    guint len = (guint)g_utf8_strlen(g_ptr_array_index(t.cells, i), -1);
    width[i % t.ncols] = MAX(width[i % t.ncols], len);
  }
  GString *out = g_string_new(NULL);
  g_string_append_printf(out, "scenario %s: %u of %u points stored", sc->name, r->stored_count,
                         r->points->len);
  if (r->errors) g_string_append_printf(out, " (%u with errors)", r->errors);
  if (r->stale) g_string_append_printf(out, "; %u stale points of an earlier version not shown", r->stale);
  g_string_append_printf(out, " (%s)\n", r->db_path ? r->db_path : "database");
  if (sc->description && sc->description[0]) g_string_append_printf(out, "  %s\n", sc->description);
  for (guint i = 0; i < t.cells->len; i++) {
    guint c = i % t.ncols;
    const char *cell = g_ptr_array_index(t.cells, i);
    guint pad = width[c] - (guint)g_utf8_strlen(cell, -1);
    if (c > 0) g_string_append(out, "  ");
    if (t.right[c]) g_string_append_printf(out, "%*s%s", (int)pad, "", cell);
    else if (c + 1 < t.ncols) g_string_append_printf(out, "%s%*s", cell, (int)pad, "");
    else g_string_append(out, cell);
    if (c + 1 == t.ncols) g_string_append_c(out, '\n');
  }
  gboolean any = FALSE;
  for (guint i = 0; i < r->points->len; i++) {
    const ResPoint *p = g_ptr_array_index(r->stored, i);
    if (!p || p->ok) continue;
    if (!any) g_string_append(out, "failed points:\n");
    any = TRUE;
    g_string_append_printf(out, "  #%u %s: %s\n", i, status_word(p), p->error ? p->error : "");
  }
  g_ptr_array_free(t.cells, TRUE);
  g_free(t.right);
  g_ptr_array_free(headers, TRUE);
  return g_string_free(out, FALSE);
}

/* --- CSV -------------------------------------------------------------------------------- */

static void csv_field(GString *out, const char *text, gboolean last) {
  if (!text) text = "";
  if (strpbrk(text, ",\"\n\r")) {
    g_string_append_c(out, '"');
    for (const char *c = text; *c; c++) {
      if (*c == '"') g_string_append_c(out, '"');
      g_string_append_c(out, *c);
    }
    g_string_append_c(out, '"');
  } else {
    g_string_append(out, text);
  }
  g_string_append(out, last ? "\r\n" : ",");
}

static char *report_csv(const ScnResults *r) {
  g_auto(GStrv) vars = scn_results_variables(r);
  GString *out = g_string_new(NULL);
  csv_field(out, "index", FALSE);
  static const char *const head[] = {"key", "model", "cluster", "strategy", "label"};
  for (gsize k = 0; k < G_N_ELEMENTS(head); k++) csv_field(out, head[k], FALSE);
  for (guint k = 0; vars[k]; k++) csv_field(out, vars[k], FALSE);
  static const char *const tail[] = {"status", "error", "num_gpus", "iteration_time_s", "samples_per_s",
                                     "tflops_per_gpu", "mfu", "compute_s", "comm_exposed_s", "host_bound_s", "bubble_s",
                                     "peak_memory_bytes", "memory_capacity_bytes", "fits_memory"};
  for (gsize k = 0; k < G_N_ELEMENTS(tail); k++) csv_field(out, tail[k], k + 1 == G_N_ELEMENTS(tail));
  for (guint i = 0; i < r->points->len; i++) {
    const ScnPoint *pt = g_ptr_array_index(r->points, i);
    const ResPoint *p = g_ptr_array_index(r->stored, i);
    g_autofree char *index = g_strdup_printf("%u", i);
    csv_field(out, index, FALSE);
    csv_field(out, pt->key, FALSE);
    csv_field(out, pt->model, FALSE);
    csv_field(out, pt->cluster, FALSE);
    csv_field(out, pt->strategy, FALSE);
    csv_field(out, pt->strategy_label, FALSE);
    for (guint k = 0; vars[k]; k++) csv_field(out, scn_point_value(pt, vars[k]), FALSE);
    csv_field(out, p ? (p->ok ? "ok" : "error") : "pending", FALSE);
    csv_field(out, p ? p->error : NULL, FALSE);
    if (p && p->has_prediction) {
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      g_autofree char *gpus = g_strdup_printf("%d", p->num_gpus);
      csv_field(out, gpus, FALSE);
      double v[] = {p->iteration_time_s, p->samples_per_s, p->tflops_per_gpu, p->mfu, p->compute_s,
                    p->comm_exposed_s, p->host_bound_s, p->bubble_s, p->peak_memory_bytes,
                    p->memory_capacity_bytes};
      for (gsize k = 0; k < G_N_ELEMENTS(v); k++)
        csv_field(out, g_ascii_formatd(buf, sizeof buf, "%.9g", v[k]), FALSE);
      csv_field(out, p->fits_memory ? "1" : "0", TRUE);
    } else {
      for (int k = 0; k < 11; k++) csv_field(out, "", FALSE);
      csv_field(out, "", TRUE);
    }
  }
  return g_string_free(out, FALSE);
}

/* --- JSON ------------------------------------------------------------------------------- */

static char *report_json(const ScnResults *r) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "scenario", r->scenario->name);
  cJSON_AddStringToObject(root, "description", r->scenario->description);
  cJSON_AddNumberToObject(root, "points_total", r->points->len);
  cJSON_AddNumberToObject(root, "points_stored", r->stored_count);
  cJSON_AddNumberToObject(root, "points_with_errors", r->errors);
  cJSON_AddNumberToObject(root, "stale_points", r->stale);
  cJSON *arr = cJSON_AddArrayToObject(root, "points");
  for (guint i = 0; i < r->points->len; i++) {
    const ScnPoint *pt = g_ptr_array_index(r->points, i);
    const ResPoint *p = g_ptr_array_index(r->stored, i);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", i);
    cJSON_AddStringToObject(o, "key", pt->key);
    cJSON_AddStringToObject(o, "model", pt->model);
    cJSON_AddStringToObject(o, "cluster", pt->cluster);
    cJSON_AddStringToObject(o, "strategy", pt->strategy);
    cJSON_AddStringToObject(o, "label", pt->strategy_label);
    cJSON *axes = cJSON_Parse(pt->axes_json);
    cJSON_AddItemToObject(o, "axes", axes ? axes : cJSON_CreateObject());
    cJSON_AddStringToObject(o, "status", p ? (p->ok ? "ok" : "error") : "pending");
    if (p && p->error) cJSON_AddStringToObject(o, "error", p->error);
    else cJSON_AddNullToObject(o, "error");
    cJSON *pred = p && p->prediction ? cJSON_Parse(p->prediction) : NULL;
    if (pred) cJSON_AddItemToObject(o, "prediction", pred);
    else cJSON_AddNullToObject(o, "prediction");
    cJSON_AddItemToArray(arr, o);
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  char *copy = g_strconcat(text, "\n", NULL);
  cJSON_free(text);
  return copy;
}

char *scn_report(const ScnResults *r, ScnReportFormat format) {
  switch (format) {
  case SCN_REPORT_CSV: return report_csv(r);
  case SCN_REPORT_JSON: return report_json(r);
  default: return report_text(r);
  }
}
