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

G_BEGIN_DECLS

typedef struct {
  GPtrArray *files;        /* every file written (char *, paths under the output directory) */
  GPtrArray *scripts;      /* the gnuplot scripts' base names, in the order they were written */
  GPtrArray *notes;        /* one-line remarks (a chart skipped: why) */
  gboolean gnuplot_missing;
  guint images;            /* images gnuplot drew */
} ScnChartOutcome;

void scn_chart_outcome_init(ScnChartOutcome *outcome);
void scn_chart_outcome_clear(ScnChartOutcome *outcome);

/* Writes the charts in @charts (SCN_CHART_*) of @results into @out_dir (created if needed),
 * drawing @formats (SCN_FORMAT_*) with gnuplot when it is on PATH. Timelines simulate their
 * points again with @costs (nullable). FALSE with @error when a file cannot be written or
 * gnuplot fails (SCN_ERROR_GNUPLOT, with its first error line). */
gboolean scn_charts_write(const ScnResults *results, const ScnCosts *costs, const char *out_dir,
                          unsigned charts, unsigned formats, ScnChartOutcome *outcome,
                          GError **error);

/* Writes the Gantt chart of @run as @dir/@base.dat and @dir/@base.gp (not drawn); @title
 * heads it. At most @max_devices devices (those with tasks, lowest ids first). */
gboolean scn_timeline_write(const SimRun *run, const char *dir, const char *base,
                            const char *title, unsigned formats, int max_devices,
                            GPtrArray *files, GError **error);

/* Helpers the chart writers share (scn_chart.c). */
/* The gnuplot lines that draw the current plot to @base.png and @base.svg at @width x @height
 * pixels; the plot command must follow and then the returned epilogue. */
char *scn_gnuplot_terminal(const char *base, unsigned formats, int width, int height,
                           char **epilogue);
/* A double-quoted gnuplot string of @title and, on a second line, @note (nullable). */
char *scn_gnuplot_title(const char *title, const char *note);
/* @text as a single-quoted gnuplot string (quotes doubled). */
char *scn_gnuplot_quote(const char *text);
/* Runs @gnuplot (a path) on @script.gp in @dir; FALSE with SCN_ERROR_GNUPLOT naming the
 * script and gnuplot's first error line when it fails. */
gboolean scn_gnuplot_run(const char *gnuplot, const char *dir, const char *script,
                         GError **error);
/* Runs gnuplot in @out_dir on every script of @outcome->scripts, recording the images drawn;
 * without gnuplot on PATH sets gnuplot_missing and returns TRUE. FALSE (SCN_ERROR_GNUPLOT)
 * when gnuplot fails. */
gboolean scn_chart_draw(const char *out_dir, unsigned formats, ScnChartOutcome *outcome,
                        GError **error);
/* Writes @contents to @dir/@name and records it in @files. */
gboolean scn_chart_write_file(const char *dir, const char *name, const char *contents,
                              GPtrArray *files, GError **error);

G_END_DECLS

#endif
