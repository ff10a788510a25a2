/* validate/report — predicted against measured (val_report.h). */
#include "validate/val_report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include "results/res_validate.h"
#include "util/util_gnuplot.h"

G_DEFINE_QUARK(val-report-error-quark, val_report_error)

gboolean val_report_format_parse(const char *text, ValReportFormat *out, GError **error) {
  static const char *const names[] = {"text", "csv", "json"};
  for (int i = 0; i < 3; i++)
    if (text && strcmp(text, names[i]) == 0) {
      *out = (ValReportFormat)i;
      return TRUE;
    }
  g_set_error(error, VAL_REPORT_ERROR, VAL_REPORT_ERROR_FORMAT,
              "--format must be text, csv or json, not '%s'", text ? text : "");
  return FALSE;
}

static int sign(double v) { return (v > 0) - (v < 0); }

double val_kendall_tau(const double *x, const double *y, guint n, guint *concordant,
                       guint *discordant) {
  guint c = 0, d = 0;
  double n0 = 0, tx = 0, ty = 0;
  for (guint i = 0; i < n; i++)
    for (guint j = i + 1; j < n; j++) {
      int s = sign(x[i] - x[j]) * sign(y[i] - y[j]);
      n0++;
      tx += x[i] == x[j];
      ty += y[i] == y[j];
      c += s > 0;
      d += s < 0;
    }
  if (concordant) *concordant = c;
  if (discordant) *discordant = d;
  double denom = sqrt((n0 - tx) * (n0 - ty));
  return n < 2 || denom == 0 ? NAN : ((double)c - (double)d) / denom;
}

static double error_pct(double predicted, double measured) {
  return measured > 0 ? 100.0 * (predicted - measured) / measured : NAN;
}

/* One rank correlation: the latest run of each strategy of (model, cluster, runner). */
typedef struct {
  const ResValidateRun *first;
  GPtrArray *runs;        /* ResValidateRun * (borrowed), one per strategy */
  double tau;
  guint concordant, discordant;
} TauGroup;

static void tau_group_free(TauGroup *g) {
  g_ptr_array_unref(g->runs);
  g_free(g);
}

static GPtrArray *tau_groups(GPtrArray *runs) {
  GPtrArray *groups = g_ptr_array_new_with_free_func((GDestroyNotify)tau_group_free);
  for (guint i = 0; i < runs->len; i++) {
    const ResValidateRun *r = g_ptr_array_index(runs, i);
    TauGroup *g = NULL;
    for (guint k = 0; k < groups->len && !g; k++) {
      TauGroup *h = g_ptr_array_index(groups, k);
      if (strcmp(h->first->model, r->model) == 0 && strcmp(h->first->cluster, r->cluster) == 0 &&
          strcmp(h->first->runner, r->runner) == 0)
        g = h;
    }
    if (!g) {
      g = g_new0(TauGroup, 1);
      g->first = r;
      g->runs = g_ptr_array_new();
      g_ptr_array_add(groups, g);
    }
    guint k = 0;
    while (k < g->runs->len &&
           strcmp(((ResValidateRun *)g_ptr_array_index(g->runs, k))->strategy, r->strategy) != 0)
      k++;
    if (k < g->runs->len) g->runs->pdata[k] = (gpointer)r; /* runs come in id order: the latest */
    else g_ptr_array_add(g->runs, (gpointer)r);
  }
  for (guint k = 0; k < groups->len; k++) {
    TauGroup *g = g_ptr_array_index(groups, k);
    guint n = g->runs->len;
    g_autofree double *x = g_new(double, n + 1), *y = g_new(double, n + 1);
    for (guint i = 0; i < n; i++) {
      const ResValidateRun *r = g_ptr_array_index(g->runs, i);
      x[i] = r->predicted_s;
      y[i] = r->measured_s;
    }
    g->tau = val_kendall_tau(x, y, n, &g->concordant, &g->discordant);
  }
  return groups;
}

static ResDb *open_existing(const char *db_path, GError **error) {
  if (!g_file_test(db_path, G_FILE_TEST_IS_REGULAR)) {
    g_set_error(error, RES_ERROR, RES_ERROR_NOT_FOUND,
                "no database %s (run 'stratsim validate run' or 'validate ingest' first)", db_path);
    return NULL;
  }
  return res_db_open(db_path, error);
}

static GPtrArray *load_runs(ResDb *db, const char *db_path, GError **error) {
  GPtrArray *runs = res_db_load_validate_runs(db, error);
  if (runs && runs->len == 0) {
    g_set_error(error, VAL_REPORT_ERROR, VAL_REPORT_ERROR_EMPTY,
                "no validate runs in %s (run 'stratsim validate run' or 'validate ingest' first)",
                db_path);
    g_ptr_array_unref(runs);
    return NULL;
  }
  return runs;
}

static char *csv_field(const char *text) {
  if (!text) return g_strdup("");
  if (!strpbrk(text, ",\"\n")) return g_strdup(text);
  GString *s = g_string_new("\"");
  for (const char *p = text; *p; p++) {
    if (*p == '"') g_string_append_c(s, '"');
    g_string_append_c(s, *p);
  }
  g_string_append_c(s, '"');
  return g_string_free(s, FALSE);
}

/* A CSV number: empty when not finite (no value, or no error without a measured time). */
static char *csv_number(double v, const char *format) {
  return isfinite(v) ? g_strdup_printf(format, v) : g_strdup("");
}

static void csv_row(FILE *out, const char *section, const ResValidateRun *r, const char *key,
                    guint steps, double predicted, double measured, double value) {
  g_autofree char *m = csv_field(r ? r->model : NULL), *c = csv_field(r ? r->cluster : NULL),
                  *s = csv_field(r ? r->strategy : NULL), *k = csv_field(key);
  char id[32] = "";
  if (r && strcmp(section, "tau") != 0) g_snprintf(id, sizeof id, "%" G_GINT64_FORMAT, r->id);
  g_autofree char *p = csv_number(predicted, "%.9g"), *me = csv_number(measured, "%.9g"),
                  *e = csv_number(error_pct(predicted, measured), "%.6g"),
                  *v = csv_number(value, "%.6g");
  fprintf(out, "%s,%s,%s,%s,%s,%s,%s,%u,%s,%s,%s,%s\n", section, id, m, c,
          strcmp(section, "tau") == 0 ? "" : s, r ? r->runner : "", k, steps, p, me, e, v);
}

static cJSON *groups_json(GPtrArray *groups) {
  cJSON *arr = cJSON_CreateArray();
  for (guint i = 0; i < groups->len; i++) {
    const ResValidateGroup *g = g_ptr_array_index(groups, i);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "key", g->key ? g->key : "");
    cJSON_AddNumberToObject(o, "steps", g->steps);
    cJSON_AddNumberToObject(o, "predicted_s", g->predicted_s);
    cJSON_AddNumberToObject(o, "measured_s", g->measured_s);
    double e = error_pct(g->predicted_s, g->measured_s);
    if (isfinite(e)) cJSON_AddNumberToObject(o, "error_pct", e);
    else cJSON_AddNullToObject(o, "error_pct");
    cJSON_AddItemToArray(arr, o);
  }
  return arr;
}

static void print_groups_text(FILE *out, const char *title, GPtrArray *groups) {
  fprintf(out, "    %-28s %6s %13s %13s %9s\n", title, "steps", "predicted s", "measured s", "error");
  for (guint i = 0; i < groups->len; i++) {
    const ResValidateGroup *g = g_ptr_array_index(groups, i);
    fprintf(out, "    %-28s %6u %13.6g %13.6g %+8.1f%%\n", g->key ? g->key : "", g->steps,
            g->predicted_s, g->measured_s, error_pct(g->predicted_s, g->measured_s));
  }
}

gboolean val_report_print(const char *db_path, ValReportFormat format, FILE *out, GError **error) {
  ResDb *db = open_existing(db_path, error);
  if (!db) return FALSE;
  gboolean ok = FALSE;
  GPtrArray *runs = load_runs(db, db_path, error);
  if (!runs) {
    res_db_close(db);
    return FALSE;
  }
  GPtrArray *taus = tau_groups(runs);
  cJSON *root = format == VAL_REPORT_JSON ? cJSON_CreateObject() : NULL;
  cJSON *runs_json = root ? cJSON_AddArrayToObject(root, "runs") : NULL;
  if (format == VAL_REPORT_TEXT)
    fprintf(out, "validate report: %u runs in %s (error = (predicted - measured) / measured)\n",
            runs->len, db_path);
  if (format == VAL_REPORT_CSV)
    fprintf(out, "section,run,model,cluster,strategy,runner,key,steps,predicted_s,measured_s,"
                 "error_pct,value\n");
  for (guint i = 0; i < runs->len; i++) {
    const ResValidateRun *r = g_ptr_array_index(runs, i);
    g_autoptr(GPtrArray) kinds = res_db_validate_groups(db, r->id, "kind", error);
    if (!kinds) goto out_json;
    g_autoptr(GPtrArray) ops = res_db_validate_groups(db, r->id, "op", error);
    if (!ops) goto out_json;
    switch (format) {
    case VAL_REPORT_TEXT:
      fprintf(out, "\nrun %" G_GINT64_FORMAT ": %s on %s, strategy %s, runner %s, %d ranks, %s\n",
              r->id, r->model, r->cluster, r->strategy, r->runner, r->ranks, r->dtype);
      fprintf(out, "  measured on %s (%s) at %s, median of %d iterations", r->host ? r->host : "?",
              r->device ? r->device : "?", r->measured_at ? r->measured_at : "?", r->iterations);
      {
        /* Other processes on the cores stretch a CPU run's wall times: say what the load was. */
        cJSON *env = cJSON_Parse(r->environment ? r->environment : "{}");
        const cJSON *load = cJSON_GetObjectItemCaseSensitive(env, "load_average_before");
        const cJSON *cores = cJSON_GetObjectItemCaseSensitive(env, "cpu_cores");
        if (cJSON_IsString(load))
          fprintf(out, ", load average %s on %s cores", load->valuestring,
                  cJSON_IsString(cores) ? cores->valuestring : "?");
        cJSON_Delete(env);
      }
      fputc('\n', out);
      fprintf(out, "  iteration    predicted %.6g s, measured %.6g s, error %+.1f%%\n",
              r->predicted_s, r->measured_s, r->error_pct);
      fprintf(out, "  per kind (steps of one iteration, all ranks, summed):\n");
      print_groups_text(out, "kind", kinds);
      fprintf(out, "  per op:\n");
      print_groups_text(out, "op", ops);
      break;
    case VAL_REPORT_CSV:
      csv_row(out, "run", r, "", 0, r->predicted_s, r->measured_s, NAN);
      for (int pass = 0; pass < 2; pass++) {
        GPtrArray *groups = pass ? ops : kinds;
        for (guint k = 0; k < groups->len; k++) {
          const ResValidateGroup *g = g_ptr_array_index(groups, k);
          csv_row(out, pass ? "op" : "kind", r, g->key, g->steps, g->predicted_s, g->measured_s, NAN);
        }
      }
      break;
    case VAL_REPORT_JSON: {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddNumberToObject(o, "id", (double)r->id);
      cJSON_AddStringToObject(o, "model", r->model);
      cJSON_AddStringToObject(o, "cluster", r->cluster);
      cJSON_AddStringToObject(o, "strategy", r->strategy);
      cJSON_AddStringToObject(o, "runner", r->runner);
      cJSON_AddStringToObject(o, "dtype", r->dtype);
      cJSON_AddNumberToObject(o, "ranks", r->ranks);
      cJSON_AddStringToObject(o, "device", r->device ? r->device : "");
      cJSON_AddStringToObject(o, "host", r->host ? r->host : "");
      cJSON_AddStringToObject(o, "measured_at", r->measured_at ? r->measured_at : "");
      cJSON_AddNumberToObject(o, "iterations", r->iterations);
      cJSON *env = cJSON_Parse(r->environment ? r->environment : "{}");
      cJSON_AddItemToObject(o, "environment", env ? env : cJSON_CreateObject());
      cJSON_AddNumberToObject(o, "predicted_s", r->predicted_s);
      cJSON_AddNumberToObject(o, "measured_s", r->measured_s);
      cJSON_AddNumberToObject(o, "error_pct", r->error_pct);
      cJSON_AddItemToObject(o, "by_kind", groups_json(kinds));
      cJSON_AddItemToObject(o, "by_op", groups_json(ops));
      cJSON_AddItemToArray(runs_json, o);
      break;
    }
    }
  }
  cJSON *taus_json = root ? cJSON_AddArrayToObject(root, "rank_correlation") : NULL;
  if (format == VAL_REPORT_TEXT)
    fprintf(out, "\nrank correlation of predicted and measured iteration times (Kendall tau-b, "
                 "latest run per strategy):\n");
  for (guint k = 0; k < taus->len; k++) {
    const TauGroup *g = g_ptr_array_index(taus, k);
    switch (format) {
    case VAL_REPORT_TEXT:
      if (g->runs->len < 2)
        fprintf(out, "  %s on %s (%s runner): 1 strategy, no ranking to compare\n", g->first->model,
                g->first->cluster, g->first->runner);
      else
        fprintf(out, "  %s on %s (%s runner): %u strategies, tau = %.3f (%u concordant, %u "
                "discordant pairs)\n", g->first->model, g->first->cluster, g->first->runner,
                g->runs->len, g->tau, g->concordant, g->discordant);
      break;
    case VAL_REPORT_CSV:
      csv_row(out, "tau", g->first, "", g->runs->len, NAN, NAN, g->tau);
      break;
    case VAL_REPORT_JSON: {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "model", g->first->model);
      cJSON_AddStringToObject(o, "cluster", g->first->cluster);
      cJSON_AddStringToObject(o, "runner", g->first->runner);
      cJSON_AddNumberToObject(o, "strategies", g->runs->len);
      if (isfinite(g->tau)) cJSON_AddNumberToObject(o, "kendall_tau", g->tau);
      else cJSON_AddNullToObject(o, "kendall_tau");
      cJSON_AddNumberToObject(o, "concordant", g->concordant);
      cJSON_AddNumberToObject(o, "discordant", g->discordant);
      cJSON_AddItemToArray(taus_json, o);
      break;
    }
    }
  }
  if (root) {
    char *printed = cJSON_Print(root);
    fprintf(out, "%s\n", printed);
    cJSON_free(printed);
  }
  ok = TRUE;
out_json:
  cJSON_Delete(root);
  g_ptr_array_unref(taus);
  g_ptr_array_unref(runs);
  res_db_close(db);
  return ok;
}

/* The plot clauses that label the points: right of the points left of @middle, left of those
 * right of it (a long strategy near the right edge was cut off). A `with labels` clause that no
 * point qualifies for crashes gnuplot 5.4 (signal 11; issue 17 item 3: one validate run puts its
 * only point in one half), so a side's clause is there only when a point is, comparing the
 * values as gnuplot reads them (printed with %.9g). */
static char *label_clauses(const GPtrArray *runs, double middle) {
  g_autofree char *middle_text = g_strdup_printf("%.9g", middle);
  double middle_read = g_ascii_strtod(middle_text, NULL);
  guint left = 0, right = 0;
  for (guint i = 0; i < runs->len; i++) {
    const ResValidateRun *r = g_ptr_array_index(runs, i);
    g_autofree char *x_text = g_strdup_printf("%.9g", r->measured_s);
    double x = g_ascii_strtod(x_text, NULL);
    left += x <= middle_read;
    right += x > middle_read;
  }
  GString *clauses = g_string_new(NULL);
  if (left)
    g_string_append_printf(clauses, ", \\\n     'validate.dat' using 3:($3 <= %s ? $2 : NaN):4 "
                           "notitle with labels offset 1,0.6 left font ',8'", middle_text);
  if (right)
    g_string_append_printf(clauses, ", \\\n     'validate.dat' using 3:($3 > %s ? $2 : NaN):4 "
                           "notitle with labels offset -1,0.6 right font ',8'", middle_text);
  return g_string_free(clauses, FALSE);
}

gboolean val_report_chart(const char *db_path, const char *dir, gboolean *drawn, GError **error) {
  if (drawn) *drawn = FALSE;
  ResDb *db = open_existing(db_path, error);
  if (!db) return FALSE;
  GPtrArray *runs = load_runs(db, db_path, error);
  res_db_close(db);
  if (!runs) return FALSE;
  gboolean ok = FALSE;
  g_autofree char *epilogue = NULL, *terminal = NULL, *title = NULL, *script = NULL;
  g_autofree char *gnuplot = NULL, *labels = NULL;
  if (g_mkdir_with_parents(dir, 0755) != 0) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "cannot create %s", dir);
    goto out;
  }
  GString *data = g_string_new("# run predicted_s measured_s label\n");
  double lo = INFINITY, hi = 0;
  for (guint i = 0; i < runs->len; i++) {
    const ResValidateRun *r = g_ptr_array_index(runs, i);
    g_autofree char *label = g_strdup_printf("%" G_GINT64_FORMAT ": %s", r->id, r->strategy);
    g_strdelimit(label, "\"", '\'');
    g_string_append_printf(data, "%" G_GINT64_FORMAT " %.9g %.9g \"%s\"\n", r->id, r->predicted_s,
                           r->measured_s, label);
    lo = MIN(lo, MIN(r->predicted_s, r->measured_s));
    hi = MAX(hi, MAX(r->predicted_s, r->measured_s));
  }
  /* Log axes only where the times span more than a decade (log tics need one); else linear
   * axes from 0, so that the diagonal still reads as "exact". */
  gboolean log = hi > 20 * lo;
  double pad = log ? 1.5 : 1.3; /* room for the labels beside the points */
  if (!log) lo = 0;
  /* Labels right of points in the left half of the x range, left of those in the right half
   * (a long strategy near the right edge was cut off). */
  double middle = log ? sqrt(lo / pad * hi * pad) : (lo / pad + hi * pad) / 2;
  labels = label_clauses(runs, middle);
  terminal = util_gnuplot_terminal("validate", UTIL_GNUPLOT_PNG | UTIL_GNUPLOT_SVG, 800, 700, &epilogue);
  title = util_gnuplot_title("stratsim validate: predicted vs measured iteration time",
                             "one point per run (id: strategy); on the line, the prediction is exact");
  script = g_strdup_printf(
      "# stratsim chart: draw with `gnuplot validate.gp` in this directory (reads validate.dat)\n"
      "%sset title %s\n%sset format xy '%%g'\nset xrange [%.9g:%.9g]\nset yrange [%.9g:%.9g]\n"
      "set xlabel 'measured iteration time (s)'\nset ylabel 'predicted iteration time (s)'\n"
      "set key top left\nset grid\n"
      "plot x title 'predicted = measured' with lines dashtype 2 lc rgb '#888888', \\\n"
      "     'validate.dat' using 3:2 title 'runs' with points pt 7 ps 1.2 lc rgb '#1f77b4'%s\n%s",
      terminal, title, log ? "set logscale xy\n" : "", lo / pad, hi * pad, lo / pad, hi * pad,
      labels, epilogue);
  gboolean written = util_write_file(dir, "validate.dat", data->str, NULL, error) &&
                     util_write_file(dir, "validate.gp", script, NULL, error);
  g_string_free(data, TRUE);
  if (!written) goto out;
  gnuplot = g_find_program_in_path("gnuplot");
  if (gnuplot) {
    if (!util_gnuplot_draw(gnuplot, dir, "validate", UTIL_GNUPLOT_PNG | UTIL_GNUPLOT_SVG, NULL,
                           error))
      goto out;
    if (drawn) *drawn = TRUE;
  }
  ok = TRUE;
out:
  g_ptr_array_unref(runs);
  return ok;
}
