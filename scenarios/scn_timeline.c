/* scenarios/timeline — a Gantt chart of one simulated iteration (scn_chart.h), drawn like the
 * cross-mesh resharding paper's Fig. 4: one row per pipeline stage's GPU, boxes numbered by
 * microbatch. Here every simulated GPU has one row per stream (sim.h's SimStream: compute,
 * then the TP/CP/EP collectives, pipeline p2p and data-parallel communication streams); a
 * run of tasks of one kind and microbatch that follow each other on a row
 * with gaps under 0.2% of the iteration is drawn as one box, so a stage's forward of a
 * microbatch is one box however many kernels it has. Step-expanded collectives are drawn from
 * their gate to their join on the members' rows of their stream, as in the Perfetto trace. */
#include "scenarios/scn_chart.h"

#include <math.h>
#include <string.h>

typedef enum {
  CAT_FORWARD,
  CAT_BACKWARD,
  CAT_WEIGHT,
  CAT_COMM,
  CAT_GRAD_SYNC,
  CAT_OPTIMIZER,
  CAT_COUNT
} Category;

static const char *const cat_title[CAT_COUNT] = {
    "forward", "backward", "weight gradients (W, split by weight delay)",
    "communication (activations, resharding)", "gradient synchronisation", "optimizer step"};
static const char *const cat_colour[CAT_COUNT] = {"#4daf4a", "#377eb8", "#ff7f00",
                                                  "#e41a1c", "#984ea3", "#999999"};

static Category category_of(const SimTaskInfo *t) {
  switch (t->kind) {
  case SIM_TASK_FORWARD: return CAT_FORWARD;
  case SIM_TASK_BACKWARD: return CAT_BACKWARD;
  case SIM_TASK_BACKWARD_WEIGHT: return CAT_WEIGHT;
  case SIM_TASK_GRAD_SYNC: return CAT_GRAD_SYNC;
  case SIM_TASK_OPTIMIZER: return CAT_OPTIMIZER;
  default: return CAT_COMM;
  }
}

typedef struct {
  SimTime begin, end;
  int row;
  int microbatch;
  Category cat;
} Box;

static int compare_box(gconstpointer a, gconstpointer b) {
  const Box *x = a, *y = b;
  if (x->row != y->row) return x->row - y->row;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end ? 1 : 0;
}

gboolean scn_timeline_write(const SimRun *run, const char *dir, const char *base,
                            const char *title, unsigned formats, int max_devices,
                            GPtrArray *files, GError **error) {
  const SimTaskGraph *g = sim_run_task_graph(run);
  const SimSchedule *s = sim_run_schedule(run);
  int ndev = sim_task_graph_num_devices(g);
  uint32_t ntasks = sim_run_num_tasks(run);
  uint32_t streams = sim_stream_resources(ndev);
  SimTaskInfo t;
  /* Devices with tasks, the first max_devices of them get rows SIM_STREAMS k + stream. */
  g_autofree int *row_of = g_new(int, ndev + 1);
  g_autofree int *device_of_row = g_new0(int, SIM_STREAMS * ((gsize)max_devices + 1));
  int used = 0, shown = 0;
  for (int d = 0; d < ndev; d++) row_of[d] = -1;
  g_autofree gboolean *has = g_new0(gboolean, ndev + 1);
  for (uint32_t i = 0; i < ntasks; i++) {
    sim_run_task(run, i, &t);
    for (int r = 0; r < t.nres; r++)
      if (t.resources[r] < streams) has[sim_resource_device(t.resources[r])] = TRUE;
  }
  for (int d = 0; d < ndev; d++) {
    if (!has[d]) continue;
    used++;
    if (shown < max_devices) {
      row_of[d] = SIM_STREAMS * shown;
      for (int k = 0; k < SIM_STREAMS; k++) device_of_row[SIM_STREAMS * shown + k] = d;
      shown++;
    }
  }
  GArray *boxes = g_array_new(FALSE, FALSE, sizeof(Box));
  for (uint32_t i = 0; i < ntasks; i++) {
    sim_run_task(run, i, &t);
    if (t.role != SIM_ROLE_WHOLE || t.duration == 0) continue;
    for (int r = 0; r < t.nres; r++) {
      uint32_t resource = t.resources[r];
      if (resource >= streams || row_of[sim_resource_device(resource)] < 0) continue; /* links */
      Box b = {t.start, t.end, row_of[sim_resource_device(resource)] + (int)sim_resource_stream_of(resource),
               t.microbatch, category_of(&t)};
      g_array_append_val(boxes, b);
    }
  }
  for (uint32_t k = 0; k < sim_task_graph_num_spans(g); k++) {
    uint32_t gate, join;
    sim_task_graph_span(g, k, &gate, &join);
    sim_run_task(run, gate, &t);
    SimTime begin = t.start, end = sim_schedule_start(s, join);
    if (end <= begin) continue;
    for (int r = 0; r < t.nres; r++) {
      uint32_t resource = t.resources[r];
      if (resource >= streams || row_of[sim_resource_device(resource)] < 0) continue;
      Box b = {begin, end, row_of[sim_resource_device(resource)] + (int)sim_resource_stream_of(resource),
               t.microbatch, category_of(&t)};
      g_array_append_val(boxes, b);
    }
  }
  g_array_sort(boxes, compare_box);
  /* Merge runs of one kind and microbatch on a row. */
  SimTime makespan = sim_schedule_makespan(s) > 0 ? sim_schedule_makespan(s) : 1;
  SimTime tolerance = makespan / 500;
  guint kept = 0;
  for (guint i = 0; i < boxes->len; i++) {
    Box *b = &g_array_index(boxes, Box, i);
    if (kept > 0) {
      Box *last = &g_array_index(boxes, Box, kept - 1);
      if (last->row == b->row && last->cat == b->cat && last->microbatch == b->microbatch &&
          b->begin <= last->end + tolerance) {
        if (b->end > last->end) last->end = b->end;
        continue;
      }
    }
    g_array_index(boxes, Box, kept++) = *b;
  }
  g_array_set_size(boxes, kept);
  /* Time unit that keeps the axis numbers short. */
  double seconds = sim_time_seconds(makespan);
  double scale = seconds < 1e-3 ? 1e6 : seconds < 10 ? 1e3 : 1;
  const char *unit = seconds < 1e-3 ? "us" : seconds < 10 ? "ms" : "s";
  GString *data = g_string_new(NULL);
  g_string_append_printf(data, "# stratsim timeline: %s\n# one block per kind (gnuplot index): "
                               "begin end row microbatch, times in %s; the last block: labels "
                               "(x y text)\n", title, unit);
  gboolean present[CAT_COUNT] = {FALSE};
  for (int c = 0; c < CAT_COUNT; c++) {
    g_string_append_printf(data, "# %s\n", cat_title[c]);
    gboolean any = FALSE;
    for (guint i = 0; i < boxes->len; i++) {
      const Box *b = &g_array_index(boxes, Box, i);
      if (b->cat != (Category)c) continue;
      g_string_append_printf(data, "%.9g %.9g %d %d\n", sim_time_seconds(b->begin) * scale,
                             sim_time_seconds(b->end) * scale, b->row, b->microbatch);
      any = TRUE;
    }
    /* An empty block would shift gnuplot's index numbering: give it one invisible line. */
    if (!any) g_string_append(data, "NaN NaN NaN -1\n");
    present[c] = any;
    g_string_append(data, "\n\n");
  }
  g_string_append(data, "# labels: microbatch numbers on compute boxes wide enough to hold one\n");
  guint labels = 0;
  for (guint i = 0; i < boxes->len; i++) {
    const Box *b = &g_array_index(boxes, Box, i);
    if (b->microbatch < 0 || b->cat > CAT_WEIGHT || (b->end - b->begin) * 60 < makespan) continue;
    g_string_append_printf(data, "%.9g %d \"%d\"\n",
                           sim_time_seconds(b->begin + (b->end - b->begin) / 2) * scale, b->row,
                           b->microbatch);
    labels++;
  }
  if (!labels) g_string_append(data, "NaN NaN \"\"\n");
  int rows = SIM_STREAMS * shown;
  int height = 190 + 34 * rows, width = 1300;
  g_autofree char *epilogue = NULL;
  g_autofree char *terminal = util_gnuplot_terminal(base, formats, width, height, &epilogue);
  GString *plot = g_string_new(NULL);
  g_string_append_printf(plot, "# stratsim chart: draw with `gnuplot %s.gp` in this directory (reads %s.dat)\n%s",
                         base, base, terminal);
  GString *full_title = g_string_new(title);
  if (used > shown)
    g_string_append_printf(full_title, " - first %d of %d simulated GPUs", shown, used);
  if (sim_run_prediction(run)->symmetric)
    g_string_append(full_title, " (symmetry: GPUs identical to those shown are not drawn)");
  g_autofree char *qtitle = util_gnuplot_quote(full_title->str);
  g_string_free(full_title, TRUE);
  g_string_append_printf(plot, "set title %s noenhanced\nset xlabel 'time (%s)'\n", qtitle, unit);
  /* Row 0 at the top: an explicit range is inverted by writing it high to low. */
  g_string_append_printf(plot, "set yrange [%g:%g]\nset xrange [0:%.9g]\n", rows - 0.4, -0.6,
                         seconds * scale);
  g_string_append(plot, "set ytics (");
  for (int r = 0; r < rows; r++)
    g_string_append_printf(plot, "%s'GPU %d %s' %d", r ? ", " : "", device_of_row[r],
                           sim_stream_name((SimStream)(r % SIM_STREAMS)), r);
  g_string_append(plot, ") nomirror\nset grid xtics\nset border 3\nset xtics nomirror\n"
                        "set key bmargin center horizontal\nset bmargin 7\n");
  g_string_append(plot, "plot ");
  gboolean first = TRUE;
  for (int c = 0; c < CAT_COUNT; c++) {
    if (!present[c]) continue;
    g_string_append_printf(plot,
                           "%s'%s.dat' index %d using (($1+$2)/2):3:(($2-$1)/2):(%s) "
                           "with boxxyerror fs solid 0.9 %s lc rgb '%s' title '%s'",
                           first ? "" : ", \\\n     ", base, c, c <= CAT_WEIGHT ? "0.38" : "0.3",
                           /* Communication comes in slivers a border would paint black. */
                           c <= CAT_WEIGHT ? "border rgb '#202020'" : "noborder", cat_colour[c],
                           cat_title[c]);
    first = FALSE;
  }
  if (first) g_string_append_printf(plot, "NaN notitle");
  if (labels)
    g_string_append_printf(plot, ", \\\n     '%s.dat' index %d using 1:2:3 with labels font ',8' "
                                 "tc rgb '#ffffff' notitle",
                           base, CAT_COUNT);
  g_string_append_printf(plot, "\n%s", epilogue);
  g_autofree char *dat = g_strdup_printf("%s.dat", base);
  g_autofree char *gp = g_strdup_printf("%s.gp", base);
  gboolean ok = util_write_file(dir, dat, data->str, files, error) &&
                util_write_file(dir, gp, plot->str, files, error);
  g_string_free(data, TRUE);
  g_string_free(plot, TRUE);
  g_array_free(boxes, TRUE);
  return ok;
}
