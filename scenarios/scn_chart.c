/* scenarios/chart — throughput, breakdown and memory charts, and running gnuplot
 * (scn_chart.h). Timelines are in scn_timeline.c. */
#include "scenarios/scn_chart.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

void scn_chart_outcome_init(ScnChartOutcome *o) {
  memset(o, 0, sizeof *o);
  o->files = g_ptr_array_new_with_free_func(g_free);
  o->scripts = g_ptr_array_new_with_free_func(g_free);
  o->notes = g_ptr_array_new_with_free_func(g_free);
}

void scn_chart_outcome_clear(ScnChartOutcome *o) {
  if (o->files) g_ptr_array_free(o->files, TRUE);
  if (o->scripts) g_ptr_array_free(o->scripts, TRUE);
  if (o->notes) g_ptr_array_free(o->notes, TRUE);
  memset(o, 0, sizeof *o);
}

/* A label as a double-quoted field of a gnuplot data file (no double quotes inside). */
static char *data_label(const char *text) {
  g_autofree char *copy = g_strdup(text);
  for (char *c = copy; *c; c++)
    if (*c == '"' || *c == '\n' || *c == '\t') *c = *c == '"' ? '\'' : ' ';
  return g_strdup_printf("\"%s\"", copy);
}

/* Writes NAME.dat and NAME.gp; @plot is everything between the terminal lines. */
static gboolean write_chart(const char *dir, const char *base, const char *data,
                            const char *plot, unsigned formats, int width, int height,
                            ScnChartOutcome *o, GError **error) {
  g_autofree char *epilogue = NULL;
  g_autofree char *terminal = util_gnuplot_terminal(base, formats, width, height, &epilogue);
  g_autofree char *dat = g_strdup_printf("%s.dat", base);
  g_autofree char *gp = g_strdup_printf("%s.gp", base);
  g_autofree char *script = g_strdup_printf(
      "# stratsim chart: draw with `gnuplot %s` in this directory (reads %s)\n%s%s%s", gp, dat,
      terminal, plot, epilogue);
  if (!util_write_file(dir, dat, data, o->files, error) ||
      !util_write_file(dir, gp, script, o->files, error))
    return FALSE;
  g_ptr_array_add(o->scripts, g_strdup(base));
  return TRUE;
}

static const char *chart_title_name(const ScnResults *r) { return r->scenario->name; }

/* --- throughput ------------------------------------------------------------------------- */

typedef struct {
  GString *key;
  char *label;                /* the strategy label of its first point */
  const char *label_template; /* borrowed */
  gboolean label_varies;      /* the label changes along the line */
  char *rest;                 /* model, cluster, splitting variables */
  char *name;                 /* the legend entry */
  GArray *members;            /* guint point indices */
} Series;

static void series_free(gpointer p) {
  Series *s = p;
  g_string_free(s->key, TRUE);
  g_free(s->label);
  g_free(s->rest);
  g_free(s->name);
  g_array_free(s->members, TRUE);
  g_free(s);
}

static gboolean point_x(const ScnResults *r, guint i, double *x) {
  const ResPoint *p = g_ptr_array_index(r->stored, i);
  if (!r->scenario->throughput_x) {
    *x = p->num_gpus;
    return TRUE;
  }
  const char *v = scn_point_value(g_ptr_array_index(r->points, i), r->scenario->throughput_x);
  char *end = NULL;
  if (!v) return FALSE;
  *x = g_ascii_strtod(v, &end);
  return *end == '\0';
}

static const char *value_or_empty(const ScnPoint *p, const char *var) {
  const char *v = scn_point_value(p, var);
  return v ? v : "";
}

static int compare_x(gconstpointer a, gconstpointer b, gpointer data) {
  const double *xs = data;
  double xa = xs[*(const guint *)a], xb = xs[*(const guint *)b];
  return xa < xb ? -1 : xa > xb ? 1 : (int)*(const guint *)a - (int)*(const guint *)b;
}

static const char *const y_column[] = {"samples_per_s", "tflops_per_gpu", "iteration_time_s",
                                       "samples_per_s_per_gpu"};
static const char *const y_label[] = {"throughput (samples/s)", "TFLOP/s per GPU", "time per iteration (s)",
                                      "throughput per GPU (samples/s/GPU)"};
static const char *const y_title[] = {"throughput", "TFLOP/s per GPU", "time per iteration",
                                      "throughput per GPU"};
/* The column of each y in throughput.dat (x is column 1). */
static const int y_data_column[] = {2, 3, 4, 5};

static double per_gpu(const ResPoint *p) {
  return p->num_gpus > 0 ? p->samples_per_s / p->num_gpus : 0.0;
}

static double y_of(const ScnScenario *sc, const ResPoint *p) {
  return sc->throughput_y == SCN_Y_TFLOPS_PER_GPU ? p->tflops_per_gpu
         : sc->throughput_y == SCN_Y_ITERATION_TIME_S ? p->iteration_time_s
         : sc->throughput_y == SCN_Y_SAMPLES_PER_S_PER_GPU ? per_gpu(p)
                                                            : p->samples_per_s;
}

/* "best over tp, ep (pp=1)" from a label template that starts with its placeholder,
 * "tp={tp} pp=1 ep={ep}": the swept variables, then the words without a placeholder. */
static char *best_over(const char *label_template) {
  GString *vars = g_string_new(NULL), *fixed = g_string_new(NULL);
  g_auto(GStrv) words = g_strsplit(label_template, " ", -1);
  for (char **w = words; *w; w++) {
    for (const char *open = strchr(*w, '{'); open; open = strchr(open + 1, '{')) {
      const char *close = strchr(open, '}');
      if (!close) break;
      g_string_append_printf(vars, "%s%.*s", vars->len ? ", " : "", (int)(close - open - 1), open + 1);
    }
  }
  /* A word without a placeholder stays, unless it names one ("seed {seed}"). */
  g_auto(GStrv) names = g_strsplit(vars->str, ", ", -1);
  for (char **w = words; *w; w++)
    if (**w && !strchr(*w, '{') && !g_strv_contains((const char *const *)names, *w))
      g_string_append_printf(fixed, "%s%s", fixed->len ? " " : "", *w);
  char *name = fixed->len ? g_strdup_printf("best over %s (%s)", vars->str, fixed->str)
                          : g_strdup_printf("best over %s", vars->str);
  g_string_free(vars, TRUE);
  g_string_free(fixed, TRUE);
  return name;
}

/* "best Megatron" from the label template "Megatron tp={tp}": the text before the first
 * placeholder, less the "key=" that introduces it. */
char *scn_chart_best_name(const char *label_template) {
  const char *brace = strchr(label_template, '{');
  if (!brace) return g_strdup_printf("best %s", label_template);
  g_autofree char *head = g_strndup(label_template, (gsize)(brace - label_template));
  gsize len = strlen(head);
  /* "tp={tp}" and "seed {seed}": the variable's name before its placeholder goes too. */
  const char *close = strchr(brace, '}');
  g_autofree char *var = close ? g_strndup(brace + 1, (gsize)(close - brace - 1)) : g_strdup("");
  gsize vlen = strlen(var);
  if (len && head[len - 1] == '=') {
    head[--len] = '\0';
    while (len && (g_ascii_isalnum(head[len - 1]) || head[len - 1] == '_')) head[--len] = '\0';
  } else if (vlen && len > vlen && head[len - 1] == ' ' &&
             strncmp(head + len - 1 - vlen, var, vlen) == 0 &&
             (len == vlen + 1 || !g_ascii_isalnum(head[len - 2 - vlen]))) {
    len -= vlen + 1;
    head[len] = '\0';
  }
  g_strchomp(head);
  while (*head && strchr(",;:(", head[strlen(head) - 1])) {
    head[strlen(head) - 1] = '\0';
    g_strchomp(head);
  }
  return *head ? g_strdup_printf("best %s", head) : best_over(label_template);
}

static gboolean chart_throughput(const ScnResults *r, const char *dir, unsigned formats,
                                 ScnChartOutcome *o, GError **error) {
  const ScnScenario *sc = r->scenario;
  g_auto(GStrv) vars = scn_results_variables(r);
  guint n = r->points->len, skipped = 0;
  g_autofree double *xs = g_new0(double, n + 1);
  g_autofree gboolean *drawn = g_new0(gboolean, n + 1);
  g_autofree gboolean *has_x = g_new0(gboolean, n + 1);
  for (guint i = 0; i < n; i++) {
    const ResPoint *p = g_ptr_array_index(r->stored, i);
    if (!p) continue;
    has_x[i] = p->has_prediction && point_x(r, i, &xs[i]);
    drawn[i] = has_x[i] && p->ok;
    if (!p->ok || !p->has_prediction) skipped++;
  }
  /* Series: one per (model, cluster, strategy) entry, split further by every variable that
   * differs between two of the entry's simulated points at the same x (a second swept axis):
   * decided per entry, so that a line keeps its points whichever of them fit. */
  guint nvars = g_strv_length(vars);
  guint entries = sc->models->len * sc->clusters->len * sc->strategies->len;
  g_autofree gboolean *splits = g_new0(gboolean, (gsize)entries * (nvars + 1) + 1);
  for (guint i = 0; i < n; i++) {
    const ScnPoint *pi = g_ptr_array_index(r->points, i);
    guint e = (pi->model_entry * sc->clusters->len + pi->cluster_entry) * sc->strategies->len + pi->strategy_entry;
    for (guint j = i + 1; j < n && has_x[i]; j++) {
      const ScnPoint *pj = g_ptr_array_index(r->points, j);
      if (!has_x[j] || xs[j] != xs[i] || pj->model_entry != pi->model_entry ||
          pj->cluster_entry != pi->cluster_entry || pj->strategy_entry != pi->strategy_entry)
        continue;
      for (guint k = 0; k < nvars; k++)
        if (!(sc->throughput_x && strcmp(vars[k], sc->throughput_x) == 0) &&
            strcmp(value_or_empty(pi, vars[k]), value_or_empty(pj, vars[k])) != 0)
          splits[e * nvars + k] = TRUE;
    }
  }
  GPtrArray *series = g_ptr_array_new_with_free_func(series_free);
  GHashTable *by_key = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < n; i++) {
    if (!drawn[i]) continue;
    const ScnPoint *pi = g_ptr_array_index(r->points, i);
    guint e = (pi->model_entry * sc->clusters->len + pi->cluster_entry) * sc->strategies->len + pi->strategy_entry;
    GString *key = g_string_new(NULL);
    g_string_printf(key, "%u", e);
    GString *suffix = g_string_new(NULL);
    const ScnTemplate *ts = g_ptr_array_index(sc->strategies, pi->strategy_entry);
    for (guint k = 0; k < nvars; k++) {
      if (!splits[e * nvars + k]) continue;
      g_string_append_printf(key, "|%s=%s", vars[k], value_or_empty(pi, vars[k]));
      g_autofree char *needle = g_strdup_printf("{%s}", vars[k]);
      if (!strstr(ts->label, needle) && scn_point_value(pi, vars[k]))
        g_string_append_printf(suffix, " %s=%s", vars[k], scn_point_value(pi, vars[k]));
    }
    Series *s = g_hash_table_lookup(by_key, key->str);
    if (!s) {
      s = g_new0(Series, 1);
      s->key = key;
      s->members = g_array_new(FALSE, FALSE, sizeof(guint));
      s->label = g_strdup(pi->strategy_label);
      s->label_template = ts->label;
      GString *rest = g_string_new(NULL);
      if (sc->models->len > 1) g_string_append_printf(rest, ", %s", pi->model_label);
      if (sc->clusters->len > 1) g_string_append_printf(rest, ", %s", pi->cluster_label);
      g_string_append(rest, suffix->str);
      s->rest = g_string_free(rest, FALSE);
      g_ptr_array_add(series, s);
      g_hash_table_insert(by_key, s->key->str, s);
    } else {
      g_string_free(key, TRUE);
      /* A label that shows the x variable changes along the line: name it by the template. */
      s->label_varies = s->label_varies || strcmp(s->label, pi->strategy_label) != 0;
    }
    g_string_free(suffix, TRUE);
    g_array_append_val(s->members, i);
  }
  g_hash_table_destroy(by_key);
  if (series->len == 0) {
    g_ptr_array_add(o->notes, g_strdup("throughput: no point was simulated and fits in memory; chart skipped"));
    g_ptr_array_free(series, TRUE);
    return TRUE;
  }
  const char *xname = sc->throughput_x ? sc->throughput_x : "GPUs";
  GString *data = g_string_new(NULL);
  g_string_append_printf(data, "# stratsim scenario %s: throughput per %s, one block per line "
                               "(gnuplot index 0, 1, ...)\n", sc->name, xname);
  double xmin = INFINITY, xmax = -INFINITY;
  for (guint s = 0; s < series->len; s++) {
    Series *se = g_ptr_array_index(series, s);
    se->name = g_strconcat(se->label_varies ? se->label_template : se->label, se->rest, NULL);
    g_array_sort_with_data(se->members, compare_x, xs);
    g_string_append_printf(data, "# series %u: %s\n# %s samples_per_s tflops_per_gpu iteration_time_s "
                                 "samples_per_s_per_gpu point\n",
                           s, se->name, sc->throughput_x ? sc->throughput_x : "gpus");
    for (guint k = 0; k < se->members->len; k++) {
      guint i = g_array_index(se->members, guint, k);
      const ResPoint *p = g_ptr_array_index(r->stored, i);
      g_string_append_printf(data, "%.9g %.9g %.9g %.9g %.9g %u\n", xs[i], p->samples_per_s,
                             p->tflops_per_gpu, p->iteration_time_s, per_gpu(p), i);
      xmin = MIN(xmin, xs[i]);
      xmax = MAX(xmax, xs[i]);
    }
    g_string_append(data, "\n\n");
  }
  /* The best point of each strategy entry drawn as more than one line, per x. */
  GPtrArray *best_names = g_ptr_array_new_with_free_func(g_free);
  for (guint e = 0; sc->throughput_best && e < entries; e++) {
    guint lines = 0;
    for (guint s = 0; s < series->len; s++) {
      Series *se = g_ptr_array_index(series, s);
      lines += (guint)g_ascii_strtoull(se->key->str, NULL, 10) == e;
    }
    if (lines < 2) continue;
    GArray *members = g_array_new(FALSE, FALSE, sizeof(guint));
    const ScnPoint *first = NULL;
    for (guint i = 0; i < n; i++) {
      const ScnPoint *pi = g_ptr_array_index(r->points, i);
      if (!drawn[i] ||
          (pi->model_entry * sc->clusters->len + pi->cluster_entry) * sc->strategies->len + pi->strategy_entry != e)
        continue;
      if (!first) first = pi;
      g_array_append_val(members, i);
    }
    g_array_sort_with_data(members, compare_x, xs);
    const ScnTemplate *ts = g_ptr_array_index(sc->strategies, first->strategy_entry);
    g_autofree char *bname = scn_chart_best_name(ts->label);
    GString *name = g_string_new(bname);
    if (sc->models->len > 1) g_string_append_printf(name, ", %s", first->model_label);
    if (sc->clusters->len > 1) g_string_append_printf(name, ", %s", first->cluster_label);
    g_string_append_printf(data, "# series %u: %s (the best point at each %s)\n# %s %s point\n",
                           series->len + best_names->len, name->str, xname,
                           sc->throughput_x ? sc->throughput_x : "gpus", y_column[sc->throughput_y]);
    for (guint k = 0; k < members->len;) {
      guint best = g_array_index(members, guint, k), j = k;
      for (; j < members->len && xs[g_array_index(members, guint, j)] == xs[best]; j++) {
        guint i = g_array_index(members, guint, j);
        double yi = y_of(sc, g_ptr_array_index(r->stored, i));
        double yb = y_of(sc, g_ptr_array_index(r->stored, best));
        if (sc->throughput_y == SCN_Y_ITERATION_TIME_S ? yi < yb : yi > yb) best = i;
      }
      g_string_append_printf(data, "%.9g %.9g %u\n", xs[best],
                             y_of(sc, g_ptr_array_index(r->stored, best)), best);
      k = j;
    }
    g_string_append(data, "\n\n");
    g_ptr_array_add(best_names, g_string_free(name, FALSE));
    g_array_free(members, TRUE);
  }
  GString *plot = g_string_new(NULL);
  g_autofree char *title = g_strdup_printf("%s: %s against %s", chart_title_name(r),
                                           y_title[sc->throughput_y], xname);
  g_autofree char *note = skipped ? g_strdup_printf("%u point%s not drawn: did not fit in memory or failed (stratsim report)",
                                                    skipped, skipped == 1 ? "" : "s") : NULL;
  g_autofree char *qtitle = util_gnuplot_title(title, note);
  g_autofree char *qx = util_gnuplot_quote(sc->throughput_x ? sc->throughput_x : "GPUs");
  g_string_append_printf(plot, "set title %s noenhanced\nset xlabel %s noenhanced\nset ylabel '%s'\n",
                         qtitle, qx, y_label[sc->throughput_y]);
  if (xmin > 0 && xmax / xmin >= 4) g_string_append(plot, "set logscale x 2\n");
  g_string_append_printf(plot, "set grid\nset key outside right top noenhanced\n%s"
                               "set offsets graph 0.04, graph 0.04, graph 0.05, %s\nset border 3\n"
                               "set xtics nomirror\nset ytics nomirror\n",
                         sc->throughput_free_y ? "" : "set yrange [0:*]\n",
                         sc->throughput_free_y ? "graph 0.05" : "0");
  g_string_append(plot, "plot ");
  for (guint s = 0; s < series->len; s++) {
    Series *se = g_ptr_array_index(series, s);
    g_autofree char *q = util_gnuplot_quote(se->name);
    /* Lines that coincide (a search that found data parallelism) would hide each other: each
     * series gets its own point shape, and earlier series are drawn wider, so that a line
     * drawn over another leaves its border and points showing. */
    static const int shapes[] = {7, 5, 9, 11, 13, 15};
    double width = MAX(1.5, 4.0 - 0.5 * s), size = MAX(0.8, 1.8 - 0.2 * s);
    g_string_append_printf(plot, "%s'throughput.dat' index %u using 1:%d with linespoints lw %.1f "
                           "pt %d ps %.1f title %s", s ? ", \\\n     " : "", s,
                           y_data_column[sc->throughput_y], width, shapes[s % G_N_ELEMENTS(shapes)],
                           size, q);
  }
  for (guint b = 0; b < best_names->len; b++) {
    g_autofree char *q = util_gnuplot_quote(g_ptr_array_index(best_names, b));
    g_string_append_printf(plot, ", \\\n     'throughput.dat' index %u using 1:2 with lines lw 6 dt 1 "
                                 "lc rgb '#80808080' title %s",
                           series->len + b, q);
  }
  g_ptr_array_free(best_names, TRUE);
  g_string_append_c(plot, '\n');
  gboolean ok = write_chart(dir, "throughput", data->str, plot->str, formats, 1000, 600, o, error);
  g_string_free(data, TRUE);
  g_string_free(plot, TRUE);
  g_ptr_array_free(series, TRUE);
  return ok;
}

/* --- per-point bars: breakdown and memory ----------------------------------------------- */

/* The x-tic settings for @count bars whose longest name is @longest characters; the chart
 * width in pixels goes to @width. */
static void bar_axis(GString *plot, guint count, gsize longest, gsize first, int *width,
                     int *height) {
  *width = (int)MAX(900, 160 + 38 * count + 6 * MIN(longest, 40));
  /* Tic labels rotated by 45 degrees (at 30, neighbours 38 pixels apart were only 19 pixels
   * apart across the text and long labels ran into each other) reach down about 0.35 of their
   * length, and the first one left by about 0.6 (in character cells of the 9-point tic font:
   * a row is about 13 pixels); the chart grows to keep the plot 470 pixels high. */
  int rows = (int)MIN(36, 3 + (longest * 7) / 20);
  *height = 620 + 13 * MAX(0, rows - 12);
  g_string_append_printf(plot, "set xtics rotate by 45 right noenhanced nomirror font ',9'\n"
                               "set bmargin %d\nset lmargin %d\n",
                         rows, (int)MIN(40, MAX(10, 2 + first * 3 / 5)));
}

static gboolean chart_breakdown(const ScnResults *r, const char *dir, unsigned formats,
                                ScnChartOutcome *o, GError **error) {
  GString *data = g_string_new(NULL);
  g_string_append_printf(data, "# stratsim scenario %s: time per iteration by where it goes (s)\n"
                               "# point compute_s comm_exposed_s bubble_s iteration_time_s index "
                               "host_bound_s\n",
                         r->scenario->name);
  guint count = 0, skipped = 0;
  gsize longest = 0, first = 0;
  for (guint i = 0; i < r->points->len; i++) {
    const ResPoint *p = g_ptr_array_index(r->stored, i);
    if (!p) continue;
    if (!p->ok || !p->has_prediction) {
      skipped++;
      continue;
    }
    g_autofree char *name = scn_results_point_name(r, i);
    g_autofree char *label = data_label(name);
    longest = MAX(longest, strlen(name));
    if (!count) first = strlen(name);
    g_string_append_printf(data, "%s %.9g %.9g %.9g %.9g %u %.9g\n", label, p->compute_s,
                           p->comm_exposed_s, p->bubble_s, p->iteration_time_s, i, p->host_bound_s);
    count++;
  }
  if (!count) {
    g_ptr_array_add(o->notes, g_strdup("breakdown: no point was simulated and fits in memory; chart skipped"));
    g_string_free(data, TRUE);
    return TRUE;
  }
  GString *plot = g_string_new(NULL);
  g_autofree char *title = g_strdup_printf("%s: time per iteration by where it goes", chart_title_name(r));
  g_autofree char *note = skipped ? g_strdup_printf("%u point%s not shown: did not fit in memory or failed (stratsim report)",
                                                    skipped, skipped == 1 ? "" : "s") : NULL;
  g_autofree char *qtitle = util_gnuplot_title(title, note);
  int width, height;
  g_string_append_printf(plot, "set title %s noenhanced\nset ylabel 'time per iteration (s)'\n", qtitle);
  bar_axis(plot, count, longest, first, &width, &height);
  g_string_append(plot, "set style data histograms\nset style histogram rowstacked\n"
                        "set style fill solid 0.85 border rgb '#404040'\nset boxwidth 0.7\n"
                        "set key outside right top\nset grid ytics\nset yrange [0:*]\nset border 3\n"
                        "set ytics nomirror\n"
                        "plot 'breakdown.dat' using 2:xtic(1) title 'compute' lc rgb '#377eb8', \\\n"
                        "     '' using 3 title 'exposed communication' lc rgb '#e41a1c', \\\n"
                        "     '' using 7 title 'host-bound' lc rgb '#ff7f00', \\\n"
                        "     '' using 4 title 'bubble (idle)' lc rgb '#c8c8c8'\n");
  gboolean ok = write_chart(dir, "breakdown", data->str, plot->str, formats, width, height, o, error);
  g_string_free(data, TRUE);
  g_string_free(plot, TRUE);
  return ok;
}

static double json_number(const cJSON *o, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static gboolean chart_memory(const ScnResults *r, const char *dir, unsigned formats,
                             ScnChartOutcome *o, GError **error) {
  GString *data = g_string_new(NULL);
  g_string_append_printf(data, "# stratsim scenario %s: peak memory of the fullest device (GiB)\n"
                               "# point weights gradients optimizer activations other capacity index total clipped_at\n",
                         r->scenario->name);
  guint count = 0;
  gsize longest = 0, first = 0;
  gboolean any_other = FALSE;
  /* Bars far over capacity would flatten the others: the axis stops at 2.5 times the largest
   * capacity and taller bars are cut there, their totals written above them. */
  double capacity = 0, tallest = 0;
  for (guint i = 0; i < r->points->len; i++) {
    const ResPoint *p = g_ptr_array_index(r->stored, i);
    if (!p || !p->has_prediction) continue;
    capacity = MAX(capacity, p->memory_capacity_bytes / GIB);
    tallest = MAX(tallest, p->peak_memory_bytes / GIB);
  }
  double ymax = tallest > 2.5 * capacity && capacity > 0 ? 2.5 * capacity : 0;
  for (guint i = 0; i < r->points->len; i++) {
    const ResPoint *p = g_ptr_array_index(r->stored, i);
    if (!p || !p->has_prediction || !p->prediction) continue;
    cJSON *pred = cJSON_Parse(p->prediction);
    const cJSON *mem = pred ? cJSON_GetObjectItemCaseSensitive(pred, "memory") : NULL;
    if (!mem) {
      cJSON_Delete(pred);
      continue;
    }
    double w = json_number(mem, "weights_bytes"), g = json_number(mem, "gradients_bytes");
    double opt = json_number(mem, "optimizer_bytes"), a = json_number(mem, "activations_bytes");
    double other = MAX(0, p->peak_memory_bytes - (w + g + opt + a));
    if (other < 1e-6 * p->peak_memory_bytes) other = 0; /* rounding */
    any_other = any_other || other > 0;
    cJSON_Delete(pred);
    g_autofree char *name = scn_results_point_name(r, i);
    g_autofree char *full = g_strdup_printf("%s%s", name, p->fits_memory ? "" : " (OOM)");
    g_autofree char *label = data_label(full);
    longest = MAX(longest, strlen(full));
    if (!count) first = strlen(full);
    double total = p->peak_memory_bytes / GIB;
    g_string_append_printf(data, "%s %.6g %.6g %.6g %.6g %.6g %.6g %u %.6g ", label, w / GIB, g / GIB,
                           opt / GIB, a / GIB, other / GIB, p->memory_capacity_bytes / GIB, i, total);
    if (ymax > 0 && total > ymax) g_string_append_printf(data, "%.6g\n", ymax);
    else g_string_append(data, "NaN\n");
    count++;
  }
  if (!count) {
    g_ptr_array_add(o->notes, g_strdup("memory: no point was simulated; chart skipped"));
    g_string_free(data, TRUE);
    return TRUE;
  }
  GString *plot = g_string_new(NULL);
  g_autofree char *title = g_strdup_printf("%s: peak memory per device against capacity", chart_title_name(r));
  g_autofree char *qtitle = util_gnuplot_quote(title);
  int width, height;
  g_string_append_printf(plot, "set title %s noenhanced\nset ylabel 'memory of the fullest GPU (GiB)'\n", qtitle);
  bar_axis(plot, count, longest, first, &width, &height);
  if (ymax > 0) g_string_append_printf(plot, "set yrange [0:%.6g]\n", ymax * 1.08);
  else g_string_append(plot, "set yrange [0:*]\n");
  g_string_append_printf(
      plot,
      "set style data histograms\nset style histogram rowstacked\n"
      "set style fill solid 0.85 border rgb '#404040'\nset boxwidth 0.7\n"
      "set key outside right top\nset grid ytics\nset border 3\nset ytics nomirror\n"
      "plot 'memory.dat' using 2:xtic(1) title 'weights' lc rgb '#377eb8', \\\n"
      "     '' using 3 title 'gradients' lc rgb '#4daf4a', \\\n"
      "     '' using 4 title 'optimizer states' lc rgb '#984ea3', \\\n"
      "     '' using 5 title 'activations' lc rgb '#ff7f00', \\\n"
      "%s"
      "     '' using 0:7:(0.45) with xerrorbars lc rgb '#d00000' lw 2.5 pt 0 ps 0 title 'capacity'%s\n",
      any_other ? "     '' using 6 title 'other (gathered ZeRO-3 weights)' lc rgb '#a65628', \\\n" : "",
      ymax > 0 ? ", \\\n     '' using 0:10:(sprintf('%.0f', $9)) with labels offset 0,0.6 font ',8' "
                 "notitle" : "");
  gboolean ok = write_chart(dir, "memory", data->str, plot->str, formats, width, height, o, error);
  g_string_free(data, TRUE);
  g_string_free(plot, TRUE);
  return ok;
}

/* --- timelines -------------------------------------------------------------------------- */

/* Whether every variable of @where that @p uses has the value listed (a point whose specs do
 * not mention a variable matches any value of it). */
static gboolean matches_where(const ScnSetting *where, const ScnPoint *p) {
  for (int k = 0; where && k < where->nvars; k++) {
    const char *v = scn_point_value(p, where->vars[k]);
    if (!v) continue;
    if (g_strcmp0(v, where->values[k]) != 0) {
      char *e1 = NULL, *e2 = NULL;
      double a = g_ascii_strtod(v, &e1), b = g_ascii_strtod(where->values[k], &e2);
      if (*e1 || *e2 || a != b) return FALSE;
    }
  }
  return TRUE;
}

static gboolean chart_timelines(const ScnResults *r, const ScnCosts *costs, const char *dir,
                                unsigned formats, ScnChartOutcome *o, GError **error) {
  const ScnScenario *sc = r->scenario;
  g_autofree gboolean *entry_done = g_new0(gboolean, sc->strategies->len * sc->models->len *
                                                        sc->clusters->len + 1);
  int drawn = 0;
  for (guint i = 0; i < r->points->len && drawn < sc->timeline_max; i++) {
    const ScnPoint *pt = g_ptr_array_index(r->points, i);
    const ResPoint *p = g_ptr_array_index(r->stored, i);
    guint entry = (pt->model_entry * sc->clusters->len + pt->cluster_entry) * sc->strategies->len +
                  pt->strategy_entry;
    if (!p || !p->ok || entry_done[entry] || !matches_where(sc->timeline_where, pt)) continue;
    GError *local = NULL;
    ScnSimulation *sim = scn_simulate(sc, pt, costs, &local);
    if (!sim) {
      g_ptr_array_add(o->notes, g_strdup_printf("timeline of point %u: %s", i, local->message));
      g_error_free(local);
      continue;
    }
    entry_done[entry] = TRUE;
    g_autofree char *name = scn_results_point_name(r, i);
    g_autofree char *title = g_strdup_printf("%s: one iteration of %s (point %u)", sc->name, name, i);
    g_autofree char *base = g_strdup_printf("timeline-%u", i);
    gboolean ok = scn_timeline_write(sim->run, dir, base, title, formats, 16, o->files, error);
    scn_simulation_free(sim);
    if (!ok) return FALSE;
    g_ptr_array_add(o->scripts, g_strdup(base));
    drawn++;
  }
  if (!drawn)
    g_ptr_array_add(o->notes, g_strdup("timeline: no simulated point that fits matches outputs.timeline; none drawn"));
  return TRUE;
}

gboolean scn_charts_write(const ScnResults *r, const ScnCosts *costs, const char *out_dir,
                          unsigned charts, unsigned formats, ScnChartOutcome *o, GError **error) {
  g_return_val_if_fail(r && out_dir && o && o->files, FALSE);
  if (g_mkdir_with_parents(out_dir, 0755) != 0) {
    int e = errno;
    g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e), "cannot create %s: %s", out_dir,
                g_strerror(e));
    return FALSE;
  }
  if (((charts & SCN_CHART_THROUGHPUT) && !chart_throughput(r, out_dir, formats, o, error)) ||
      ((charts & SCN_CHART_BREAKDOWN) && !chart_breakdown(r, out_dir, formats, o, error)) ||
      ((charts & SCN_CHART_MEMORY) && !chart_memory(r, out_dir, formats, o, error)) ||
      ((charts & SCN_CHART_TIMELINE) && !chart_timelines(r, costs, out_dir, formats, o, error)))
    return FALSE;
  return scn_chart_draw(out_dir, formats, o, error);
}

gboolean scn_chart_draw(const char *out_dir, unsigned formats, ScnChartOutcome *o,
                        GError **error) {
  g_autofree char *gnuplot = g_find_program_in_path("gnuplot");
  if (!gnuplot) {
    o->gnuplot_missing = o->scripts->len > 0;
    return TRUE;
  }
  for (guint k = 0; k < o->scripts->len; k++) {
    guint before = o->files->len;
    if (!util_gnuplot_draw(gnuplot, out_dir, g_ptr_array_index(o->scripts, k), formats, o->files,
                           error))
      return FALSE;
    o->images += o->files->len - before;
  }
  return TRUE;
}
