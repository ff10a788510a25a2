/* validate/ingest — reading a run-measurements file (validate/PLAN.md, "Run measurements JSON")
 * and storing it next to its plan's predictions (results/res_validate.h).
 *
 * The reader checks everything a report relies on: format and version, runner "gpu" or "cpu",
 * the plan object's specs and ranks, an environment object, warmup 0..100000, timed iterations
 * (each > 0 and finite, at most VAL_PLAN_MAX_ITERATIONS_READ) with their median
 * iteration_time_s (> 0, finite; required when there are iterations), steps with a rank, an id
 * and a time_s >= 0 (finite), no (rank, id) twice; "profiles" and "collectives", when present,
 * must be objects (they are read by their own parsers: cm_profiles_from_json and
 * cm_measurements_parse_json). Errors are VAL_INGEST_ERROR_INPUT and name the file, the field
 * and the value. Against a plan (val_run_measurements_check): the same model, cluster,
 * strategy and ranks, and every step naming a step of the plan. */
#ifndef STRATSIM_VAL_INGEST_H
#define STRATSIM_VAL_INGEST_H

#include <glib.h>
#include "validate/val_plan.h"

G_BEGIN_DECLS

#define VAL_INGEST_ERROR (val_ingest_error_quark())
GQuark val_ingest_error_quark(void);
typedef enum {
  VAL_INGEST_ERROR_INPUT,    /* malformed measurements, or of another plan (exit status 2) */
  VAL_INGEST_ERROR_IO,       /* a file that is there cannot be read (exit status 1; a missing
                                file is VAL_INGEST_ERROR_INPUT, exit status 2) */
} ValIngestError;

/* Most steps one measurements file may list (as the plan reader's limit). */
#define VAL_RUN_MAX_STEPS VAL_PLAN_MAX_TOTAL_STEPS

typedef struct {
  int rank;
  gint64 id;
  double time_s;
} ValRunStep;

typedef struct {
  char *runner;                       /* "gpu" | "cpu" */
  char *model, *cluster, *strategy;   /* the plan object's */
  int ranks;
  char *environment;                  /* the environment object as JSON text */
  char *device, *host, *date;         /* environment fields when strings, else NULL */
  int warmup;
  guint n_iterations;
  double *iterations_s;
  double iteration_time_s;            /* NAN without iterations */
  guint n_steps;
  ValRunStep *steps;
  char *profiles;                     /* the "profiles" object as JSON text, or NULL */
  char *collectives;                  /* the "collectives" object as JSON text, or NULL */
} ValRunMeasurements;

/* Parses measurements @text; @source names it in errors. Free with
 * val_run_measurements_free (NULL allowed). */
ValRunMeasurements *val_run_measurements_parse(const char *text, const char *source,
                                               GError **error);
void val_run_measurements_free(ValRunMeasurements *m);

/* FALSE with VAL_INGEST_ERROR_INPUT when @m is not a run of @plan (specs, ranks, step ids). */
gboolean val_run_measurements_check(const ValRunMeasurements *m, const ValPlan *plan,
                                    const char *source, GError **error);

/* What an ingest did. */
typedef struct {
  gint64 id;                /* validate_runs id */
  gboolean existing;        /* the same plan and measurements were stored before: nothing new */
  double predicted_s, measured_s, error_pct;
  guint steps, measured_steps;
  gint64 profiles_stored;   /* kernels imported as profiles (with @import_profiles), else 0 */
} ValIngestResult;

/* `stratsim validate ingest --plan PLAN MEASUREMENTS`: reads both files, checks them against
 * each other and stores the run in the database @db_path (one transaction; the same pair of
 * files twice is stored once: SHA-256 of both texts). With @import_profiles the runner's
 * "profiles" kernels are also stored as measured kernel times (res_db_store_profiles).
 * Errors: VAL_PLAN_ERROR (the plan), VAL_INGEST_ERROR, RES_ERROR (the database). */
gboolean val_ingest_files(const char *db_path, const char *plan_path,
                          const char *measurements_path, gboolean import_profiles,
                          ValIngestResult *result, GError **error);

/* `stratsim profile`: stores the "profiles" kernels of measurements file @path (a runner's
 * micro-benchmarks) as measured kernel times in @db_path; returns how many, -1 with @error
 * (VAL_INGEST_ERROR_INPUT when the file has no kernels). @device (nullable) receives their
 * device kind (g_free). */
gint64 val_import_profiles(const char *db_path, const char *path, char **device, GError **error);

G_END_DECLS

#endif
