/* scenarios/report — a scenario's stored points as tables (text, CSV, JSON).
 *
 * The scenario is re-read from the database and re-expanded, so the rows come in the
 * expansion's order with their labels and axis values, whatever order the points were stored
 * in; points of an earlier version of the scenario that the current one no longer has are
 * counted as stale and left out.
 */
#ifndef STRATSIM_SCN_REPORT_H
#define STRATSIM_SCN_REPORT_H

#include <glib.h>
#include "results/res_scenarios.h"
#include "scenarios/scn_scenario.h"

G_BEGIN_DECLS

typedef struct {
  ScnScenario *scenario;   /* as stored; owned */
  GPtrArray *points;       /* ScnPoint, the expansion; owned */
  GPtrArray *stored;       /* ResPoint * per point, NULL where not stored yet; owned */
  guint stored_count;      /* points of the expansion that are stored */
  guint errors;            /* of which with status 'error' */
  guint stale;             /* stored points the expansion no longer has */
  char *db_path;
} ScnResults;

/* Loads scenario @name and its points from @db. NULL with RES_ERROR_NOT_FOUND (no such
 * scenario: the message lists the stored ones) or a parse error of the stored JSON. */
ScnResults *scn_results_load(ResDb *db, const char *db_path, const char *name, GError **error);
void scn_results_free(ScnResults *results);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ScnResults, scn_results_free)

/* The variables any point uses, in axis order (NULL-terminated; g_strfreev). */
char **scn_results_variables(const ScnResults *results);
/* A short name for a point in charts and tables: strategy label, then the model and cluster
 * labels when the scenario has several, then the values of the variables the labels do not
 * show (caller g_frees). */
char *scn_results_point_name(const ScnResults *results, guint i);

typedef enum { SCN_REPORT_TEXT, SCN_REPORT_CSV, SCN_REPORT_JSON } ScnReportFormat;
gboolean scn_report_format_parse(const char *text, ScnReportFormat *out);

/* The table of @results in @format (caller g_frees). Text: aligned columns, failures listed
 * below the table; CSV: RFC 4180 with a header row; JSON: one object with "points". */
char *scn_report(const ScnResults *results, ScnReportFormat format);

G_END_DECLS

#endif
