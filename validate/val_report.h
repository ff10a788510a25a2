/* validate/report — `stratsim validate report`: predicted against measured, from the database.
 *
 * Per stored run: predicted and measured iteration time and the error, 100 (predicted -
 * measured) / measured (positive: the simulator predicted too slow); per run, the steps of
 * one iteration summed by step kind (gemm, elementwise, collective:all_reduce, send, recv) and
 * by op, with the same error. Over a set of strategies (the latest run of each strategy among
 * the runs of one model on one cluster with one runner): Kendall's tau-b between predicted and
 * measured iteration times, the question a strategy search asks of a simulator (does it rank
 * the strategies as the hardware does?). A scatter chart of predicted against measured
 * iteration times goes through gnuplot (util/util_gnuplot.h). */
#ifndef STRATSIM_VAL_REPORT_H
#define STRATSIM_VAL_REPORT_H

#include <glib.h>
#include <stdio.h>

G_BEGIN_DECLS

#define VAL_REPORT_ERROR (val_report_error_quark())
GQuark val_report_error_quark(void);
typedef enum {
  VAL_REPORT_ERROR_EMPTY,   /* no validate runs stored (exit status 2) */
  VAL_REPORT_ERROR_FORMAT,  /* an unknown --format (exit status 2) */
} ValReportError;

typedef enum { VAL_REPORT_TEXT, VAL_REPORT_CSV, VAL_REPORT_JSON } ValReportFormat;

/* Parses "text", "csv", "json". */
gboolean val_report_format_parse(const char *text, ValReportFormat *out, GError **error);

/* Kendall's tau-b of the pairs (x[i], y[i]) (ties in either variable corrected; Kendall 1945):
 * (concordant - discordant) / sqrt((n0 - n1)(n0 - n2)), n0 = n(n-1)/2, n1 and n2 the pairs tied
 * in x and in y. NAN when n < 2 or either variable is constant. @concordant and @discordant
 * (nullable) receive the counts. */
double val_kendall_tau(const double *x, const double *y, guint n, guint *concordant,
                       guint *discordant);

/* Prints the report of the database @db_path (which must exist: RES_ERROR_NOT_FOUND otherwise)
 * to @out. VAL_REPORT_ERROR_EMPTY when it holds no validate run. */
gboolean val_report_print(const char *db_path, ValReportFormat format, FILE *out, GError **error);

/* Writes the scatter chart (validate.dat, validate.gp) into @dir (created) and draws it with
 * gnuplot when on PATH; *@drawn (nullable) says whether it was drawn. FALSE with
 * UTIL_ERROR_GNUPLOT when gnuplot fails or leaves validate.png or validate.svg missing or empty. */
gboolean val_report_chart(const char *db_path, const char *dir, gboolean *drawn, GError **error);

G_END_DECLS

#endif
