/* results — the embedded SQLite database where runs land (default results/stratsim.db).
 *
 * Schema version lives in PRAGMA user_version; res_db_open applies the migrations from the
 * stored version up to RES_SCHEMA_VERSION, each in its own transaction, so a database written
 * by an older stratsim is migrated, and one written by a newer stratsim is refused with a clear
 * error rather than damaged. WAL mode and a busy timeout let several writers share a file;
 * synchronous=NORMAL and no checkpoint on close make a commit cost no fsync, so the database is
 * the file together with its FILE-wal (kept between runs; a killed process loses nothing).
 * Tables (v1): runs (one row per command run), predictions (one per simulated iteration,
 * the headline figures as columns plus the full JSON); (v2) calibrations (one per name: a
 * collective calibration as JSON, costmodel/CALIBRATION.md); (v3) op_profiles (measured kernel
 * times); (v4) search_runs (one per `stratsim search`: winner, baselines, counts) and
 * search_convergence (its best-so-far curve); (v5) scenarios and points (sweeps,
 * results/res_scenarios.h); (v6) validate_runs and validate_steps (measured runs of plans next
 * to their predictions, results/res_validate.h); (v7) point_claims (the points a running sweep
 * is simulating, results/res_scenarios.h). Documented in results/README.md. */
#ifndef STRATSIM_RES_DB_H
#define STRATSIM_RES_DB_H

#include <glib.h>
#include "sim/sim.h"

G_BEGIN_DECLS

#define RES_ERROR (res_error_quark())
GQuark res_error_quark(void);
typedef enum { RES_ERROR_OPEN, RES_ERROR_SCHEMA, RES_ERROR_WRITE, RES_ERROR_NOT_FOUND } ResError;

#define RES_SCHEMA_VERSION 8

typedef struct ResDb ResDb;

/* Opens (creating the file and its directory if needed) and migrates a database. */
ResDb *res_db_open(const char *path, GError **error);
/* Opens an existing database read-only (`--no-store`, explain, validate plan: they write
 * nothing): no file or directory is created, nothing migrated, so a read-only file or
 * directory serves. NULL with RES_ERROR_OPEN when the file is missing or cannot be opened,
 * RES_ERROR_SCHEMA when it is of another schema version than RES_SCHEMA_VERSION. */
ResDb *res_db_open_read_only(const char *path, GError **error);
void res_db_close(ResDb *db);
int res_db_schema_version(ResDb *db);

/* Stores one simulate run and its prediction in a single transaction; returns the run id, or
 * -1 with @error set (nothing is stored then). The specs are what the user typed. */
gint64 res_db_store_simulation(ResDb *db, const char *model_spec, const char *cluster_spec,
                               const char *strategy_spec, const SimRun *run, GError **error);

/* Stores calibration @json under @name for @cluster (the spec as typed), replacing any earlier
 * calibration of that name, in one transaction. FALSE with RES_ERROR_WRITE on failure. */
gboolean res_db_store_calibration(ResDb *db, const char *name, const char *cluster,
                                  const char *json, GError **error);

/* The JSON of calibration @name (caller g_frees); @cluster (nullable) receives the cluster it
 * was made for (g_free). NULL with RES_ERROR_NOT_FOUND (the message lists the stored names)
 * when there is none of that name. */
char *res_db_load_calibration(ResDb *db, const char *name, char **cluster, GError **error);

struct CmProfiles;
/* Stores measured kernel times (cm_profile.h) with their @source, one transaction; a point
 * already stored for the same kernel is replaced. Returns the number stored, -1 on error. */
gint64 res_db_store_profiles(ResDb *db, const struct CmProfiles *profiles, const char *source,
                             GError **error);
/* The stored kernel times of device kind @device (cm_profiles_free), never NULL on success:
 * possibly empty. */
struct CmProfiles *res_db_load_profiles(ResDb *db, const char *device, GError **error);

/* One `stratsim search` as stored (results/README.md): plain figures, so that results/ does
 * not depend on search/. Times that are not finite are stored as NULL. */
typedef struct {
  const char *model, *cluster;   /* the specs as typed */
  const char *algo, *ran;        /* as asked, and what auto resolved to */
  guint32 seed;
  int threads;
  const char *budget;            /* as typed */
  guint64 evaluations, simulated, over_memory;
  double elapsed_s;
  gboolean complete;
  double best_time_s, best_memory_bytes;
  const char *found_by;          /* nullable */
  double data_parallel_time_s, megatron_time_s, weird_trick_time_s;
  const char *megatron_config;   /* nullable */
  const char *strategy_json;     /* the winner, nullable */
  const char *json;              /* the whole result */
  guint curve_len;
  const guint64 *curve_evaluation;
  const double *curve_elapsed_s, *curve_best_time_s;
} ResSearchRecord;

/* Stores a search: a runs row (command "search", strategy "search:ALGO"), its search_runs row
 * and its convergence curve, in one transaction. Returns the search_runs id, or -1 with
 * RES_ERROR_WRITE (nothing stored then). */
gint64 res_db_store_search(ResDb *db, const ResSearchRecord *record, GError **error);

/* `stratsim db check`: what a database holds and whether it is consistent. */
typedef struct {
  int schema_version;        /* PRAGMA user_version */
  GPtrArray *tables;         /* char *: every table, by name */
  GArray *rows;              /* gint64 per table: its row count */
  GPtrArray *problems;       /* char *: integrity_check and foreign_key_check findings, tables
                                missing for the schema version; empty when consistent */
} ResDbCheck;

/* Checks the database at @path without creating or migrating anything: PRAGMA integrity_check,
 * PRAGMA foreign_key_check, the tables the schema version must have, row counts per table.
 * NULL with RES_ERROR_OPEN when the file is missing or is not a SQLite database. Free with
 * res_db_check_free (NULL allowed). */
ResDbCheck *res_db_check(const char *path, GError **error);
void res_db_check_free(ResDbCheck *check);

/* Number of rows in @table (for tests and `report`); -1 on error. */
gint64 res_db_count(ResDb *db, const char *table, GError **error);

G_END_DECLS

#endif
