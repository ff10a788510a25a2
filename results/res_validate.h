/* results/validate — storage of validate runs (schema v6, results/README.md): a measured run of
 * a plan next to the plan's predictions. One run is stored in one transaction: a validate_runs
 * row (with a runs row, command "validate") and one validate_steps row per plan step.
 * UNIQUE(content_hash) with INSERT ... ON CONFLICT DO NOTHING makes ingesting the same plan and
 * measurements twice (or from two processes at once) store them once. */
#ifndef STRATSIM_RES_VALIDATE_H
#define STRATSIM_RES_VALIDATE_H

#include <glib.h>
#include "results/res_db.h"

G_BEGIN_DECLS

/* One plan step with its measured time. */
typedef struct {
  int rank, step;
  const char *stream, *kind;
  const char *collective;     /* nullable */
  const char *name;
  const char *op, *phase;     /* nullable */
  int microbatch;
  double predicted_s;
  double measured_s;          /* NAN: not measured (stored as NULL) */
} ResValidateStep;

/* A run as ingested; the strings are borrowed. */
typedef struct {
  const char *content_hash;   /* SHA-256 hex of the plan and measurements texts */
  const char *model, *cluster, *strategy, *dtype;
  int ranks;
  const char *runner;
  int warmup, iterations;
  double predicted_s, measured_s;
  const char *device, *host, *measured_at;   /* nullable */
  const char *environment, *prediction, *iterations_s, *plan; /* JSON texts */
  guint nsteps;
  const ResValidateStep *steps;
} ResValidateRecord;

/* Stores @record in one transaction; returns the validate_runs id. When a run with the same
 * content_hash is already stored, stores nothing, sets *@existing (nullable) and returns that
 * run's id. -1 with RES_ERROR_WRITE on failure (nothing stored). */
gint64 res_db_store_validate(ResDb *db, const ResValidateRecord *record, gboolean *existing,
                             GError **error);

/* A stored run, for reports. */
typedef struct {
  gint64 id;
  char *model, *cluster, *strategy, *runner, *dtype, *device, *host, *measured_at, *created_at;
  char *environment;          /* the measurements' environment object (JSON) */
  int ranks, iterations;
  double predicted_s, measured_s, error_pct;
} ResValidateRun;

void res_validate_run_free(ResValidateRun *run);

/* Every stored run in id order (ResValidateRun *, owned by the array); never NULL on success. */
GPtrArray *res_db_load_validate_runs(ResDb *db, GError **error);

/* Steps of run @id summed per group: @by "kind" (step kind, collectives as collective:NAME) or
 * "op" (the op name, else the step name: "optimizer step"). Only steps with a measured time count. */
typedef struct {
  char *key;
  guint steps;
  double predicted_s, measured_s;   /* sums over the steps of one iteration */
} ResValidateGroup;

void res_validate_group_free(ResValidateGroup *group);
GPtrArray *res_db_validate_groups(ResDb *db, gint64 id, const char *by, GError **error);

G_END_DECLS

#endif
