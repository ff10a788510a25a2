/* results/scenarios — storage of sweeps: the scenarios table (one row per scenario name) and
 * the points table (one row per simulated point of a scenario), schema version 5
 * (results/README.md). A point is stored in one transaction with INSERT ... ON CONFLICT DO
 * NOTHING on UNIQUE(scenario_id, point_key): a sweep killed at any moment and run again, or two
 * sweeps of the same scenario at once, store every point exactly once; claims (v7) make such
 * sweeps share the points rather than each simulate all of them. */
#ifndef STRATSIM_RES_SCENARIOS_H
#define STRATSIM_RES_SCENARIOS_H

#include <glib.h>
#include "results/res_db.h"

G_BEGIN_DECLS

/* One stored point. The headline figures are meaningful when has_prediction is TRUE: the
 * point was simulated (status ok, or status error because it does not fit in memory). */
typedef struct {
  char *key;                 /* scn_scenario.h: SHA-256 of the canonical specs */
  int index;                 /* position in the expansion when it was stored */
  char *model, *cluster, *strategy; /* the substituted specs */
  char *label;               /* the strategy's label */
  char *axes;                /* JSON object of the axis values */
  gboolean ok;               /* status 'ok' (else 'error') */
  char *error;               /* why it failed, or NULL */
  gboolean has_prediction;
  int num_gpus;
  double iteration_time_s, samples_per_s, tflops_per_gpu, mfu;
  double compute_s, comm_exposed_s, bubble_s;
  double host_bound_s;       /* 0 in rows stored before schema 7 */
  double peak_memory_bytes, memory_capacity_bytes;
  gboolean fits_memory;
  char *prediction;          /* the simulate --json object, or NULL */
  char *created_at;          /* ISO 8601 UTC; set by the database on store */
} ResPoint;

void res_point_free(ResPoint *point);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ResPoint, res_point_free)

/* Records scenario @name (creating it, or updating its file and JSON); returns its id, -1 with
 * RES_ERROR_WRITE on failure. */
gint64 res_db_store_scenario(ResDb *db, const char *name, const char *file, const char *json,
                             GError **error);
/* The id of scenario @name; -1 with RES_ERROR_NOT_FOUND (the message lists the stored
 * scenarios) when there is none. @json and @file (nullable) receive its stored JSON and file
 * (g_free). */
gint64 res_db_find_scenario(ResDb *db, const char *name, char **json, char **file,
                            GError **error);
/* The keys of the points stored for scenario @id: a set (g_hash_table_contains) of strings. */
GHashTable *res_db_point_keys(ResDb *db, gint64 scenario_id, GError **error);
/* Stores @point under scenario @id in one transaction; *@inserted (nullable) is FALSE when a
 * point of that key was already there (it is left as it was). FALSE with RES_ERROR_WRITE. */
gboolean res_db_store_point(ResDb *db, gint64 scenario_id, const ResPoint *point,
                            gboolean *inserted, GError **error);
/* Claims (schema v7, table point_claims): a sweep claims a point before simulating it, so that
 * several sweeps of one scenario at once share its points. A claim is a lease: it expires
 * @lease_s after it was taken or last renewed, and a claim whose process is gone from this
 * host is free at once, so the points of a killed sweep are taken by the next one. Storing the
 * point (res_db_store_point) deletes its claim in the same transaction. */
typedef struct {
  char *owner;      /* host:pid:start time, unique per sweep */
  char *host;
  int pid;
  double lease_s;
} ResClaimer;

/* This process as a claimer with a lease of @lease_s seconds; res_claimer_clear frees it. */
void res_claimer_init(ResClaimer *claimer, double lease_s);
void res_claimer_clear(ResClaimer *claimer);

typedef enum {
  RES_CLAIM_TAKEN,   /* claimed by @claimer now: simulate and store it */
  RES_CLAIM_STORED,  /* already stored (by another sweep) */
  RES_CLAIM_HELD,    /* claimed by another sweep that is alive and within its lease */
} ResClaimOutcome;

/* Claims point @key of scenario @id for @claimer, in one transaction. FALSE with
 * RES_ERROR_WRITE on a database failure. */
gboolean res_db_claim_point(ResDb *db, gint64 scenario_id, const char *key,
                            const ResClaimer *claimer, ResClaimOutcome *outcome, GError **error);
/* Extends every claim of @claimer by its lease from now (one statement). */
gboolean res_db_renew_claims(ResDb *db, const ResClaimer *claimer, GError **error);
/* Drops every claim of @claimer (a sweep that stops early hands its points on). */
gboolean res_db_release_claims(ResDb *db, const ResClaimer *claimer, GError **error);

/* The points of scenario @id in storage order (GPtrArray of ResPoint, owning them). */
GPtrArray *res_db_load_points(ResDb *db, gint64 scenario_id, GError **error);

G_END_DECLS

#endif
