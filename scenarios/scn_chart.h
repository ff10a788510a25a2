/* scenarios/chart — gnuplot charts of a scenario's stored points.
 *
 * Each chart is a data file (NAME.dat, whitespace-separated columns with a commented header)
 * and a gnuplot script (NAME.gp) that reads it by its relative name and draws NAME.png
 * (pngcairo) and NAME.svg; both are always written next to the images, so a chart can be
 * restyled and redrawn by hand (`cd DIR && gnuplot NAME.gp`). gnuplot is an external program,
 * run as a child process in DIR; when it is not on PATH the data and scripts are still
 * written and the outcome says so.
 *
 * Charts: throughput (samples/s against the GPU count, or another axis variable, one line per
 * strategy), breakdown (compute / exposed communication / bubble per point, stacked),
 * memory (peak memory of the fullest device per point, stacked by category, against the
 * device's capacity), timeline-N (a Gantt chart of one simulated iteration of point N: a
 * compute and a communication row per GPU, boxes coloured by forward, backward, weight
 * gradient, communication, gradient synchronisation and optimizer, microbatch numbers on the
 * compute boxes, as in the cross-mesh resharding paper's Fig. 4).
 */
#ifndef STRATSIM_SCN_CHART_H
#define STRATSIM_SCN_CHART_H

#include <glib.h>
#include "scenarios/scn_report.h"
#include "scenarios/scn_sweep.h"
#include "util/util_gnuplot.h"

G_BEGIN_DECLS

typedef struct {
  GPtrArray *files;        /* every file written (char *, paths under the output directory) */
  GPtrArray *scripts;      /* the gnuplot scripts' base names, in the order they were written */
  GPtrArray *notes;        /* one-line remarks (a chart skipped: why) */
  gboolean gnuplot_missing;
  guint images;            /* images gnuplot drew */
} ScnChartOutcome;

/* The throughput chart's name for the best point of a strategy entry, from its label template:
 * "best Megatron" from "Megatron tp={tp}", "best over tp, ep (pp=1)" from "tp={tp} pp=1 ep={ep}"
 * (no placeholder is left unfilled). Caller g_free()s. */
char *scn_chart_best_name(const char *label_template);

void scn_chart_outcome_init(ScnChartOutcome *outcome);
void scn_chart_outcome_clear(ScnChartOutcome *outcome);

/* Writes the charts in @charts (SCN_CHART_*) of @results into @out_dir (created if needed),
 * drawing @formats (SCN_FORMAT_*) with gnuplot when it is on PATH. Timelines simulate their
 * points again with @costs (nullable). FALSE with @error when a file cannot be written or
 * gnuplot fails or draws nothing (UTIL_ERROR_GNUPLOT, util_gnuplot_draw). */
gboolean scn_charts_write(const ScnResults *results, const ScnCosts *costs, const char *out_dir,
                          unsigned charts, unsigned formats, ScnChartOutcome *outcome,
                          GError **error);

/* Writes the Gantt chart of @run as @dir/@base.dat and @dir/@base.gp (not drawn); @title
 * heads it. At most @max_devices devices (those with tasks, lowest ids first). */
gboolean scn_timeline_write(const SimRun *run, const char *dir, const char *base,
                            const char *title, unsigned formats, int max_devices,
                            GPtrArray *files, GError **error);

/* Runs gnuplot in @out_dir on every script of @outcome->scripts, recording the images drawn;
 * without gnuplot on PATH sets gnuplot_missing and returns TRUE. FALSE (UTIL_ERROR_GNUPLOT)
 * when gnuplot fails or leaves an image missing or empty (util_gnuplot_draw). */
gboolean scn_chart_draw(const char *out_dir, unsigned formats, ScnChartOutcome *outcome,
                        GError **error);
G_END_DECLS

#endif
