/* scenarios/sweep — running a scenario's points and storing each as it finishes.
 *
 * A sweep expands the scenario (scn_scenario.h), asks the database which point keys are
 * stored already, and simulates the others: on the calling thread, or on a GThreadPool of
 * --threads workers. Before a point is handed to a worker the calling thread claims it in the
 * database (res_db_claim_point, a lease renewed while it runs), so that sweeps of one scenario
 * running at once on one database share the points rather than each simulate all of them;
 * points held by another live sweep are tried once more at the end and otherwise left to it.
 * Workers only simulate; the calling thread is the one writer and stores the results in the
 * order it claimed them, each point in its own transaction (res_scenarios.h) that also drops
 * its claim. Killed at any moment, a sweep loses at most the points simulated but not yet
 * stored; its claims lapse (at once on the same host, where its process is seen to be gone)
 * and the next run simulates exactly those points again. A point that cannot be simulated (invalid strategy, unknown
 * model, a file missing) or that does not fit in memory is stored with status 'error' and its
 * message, and is not retried: delete its row to run it again.
 */
#ifndef STRATSIM_SCN_SWEEP_H
#define STRATSIM_SCN_SWEEP_H

#include <glib.h>
#include "results/res_db.h"
#include "results/res_scenarios.h"
#include "scenarios/scn_scenario.h"
#include "search/srch_comm.h"
#include "session/ses_session.h"
#include "sim/sim.h"

G_BEGIN_DECLS

/* What the cost model reads from the database for a scenario: the calibration it names and
 * the measured kernel times of every device kind its clusters use (session/ses_session.h's
 * SesCosts). Read-only once loaded, so worker threads share it. Free with ses_costs_free. */
typedef SesCosts ScnCosts;

/* Loads the costs @scenario asks for over @points (ScnPoint). NULL with RES_ERROR_NOT_FOUND
 * when the named calibration is missing. */
ScnCosts *scn_costs_load(ResDb *db, const ScnScenario *scenario, const GPtrArray *points,
                         GError **error);

/* One simulated point: the session (cluster, model, strategy, costs) and its run; the three
 * input pointers are the session's, for reading. */
typedef struct {
  SesSession *session;
  const DevCluster *cluster;
  const MdlGraph *graph;
  const MdlStrategy *strategy;
  SimRun *run;
} ScnSimulation;

/* Simulates one point of @scenario (its specs resolved against the scenario's directory) with
 * @costs (nullable: presets and rooflines). NULL with the library's error (DEV_ERROR,
 * MDL_ERROR, ...). Thread-safe. Free with scn_simulation_free. */
ScnSimulation *scn_simulate(const ScnScenario *scenario, const ScnPoint *point,
                            const ScnCosts *costs, GError **error);
void scn_simulation_free(ScnSimulation *simulation);

/* The row to store for @point: from @simulation, or @failure when it could not be simulated
 * (exactly one is non-NULL). A simulation that does not fit in memory gives status 'error'
 * with its figures kept. Free with res_point_free. */
ResPoint *scn_point_result(const ScnPoint *point, const ScnSimulation *simulation,
                           const GError *failure);

typedef void (*ScnProgressFunc)(guint done, guint total, guint errors, gpointer user_data);

typedef struct {
  int threads;              /* simulating threads; < 2: the calling thread */
  guint max_points;         /* simulate at most this many new points (0: all) */
  ScnProgressFunc progress; /* called after each stored point, and once before the first */
  gpointer progress_data;
  /* Sharing one sweep among share_size processes (mpirun ranks) writing to one database:
   * each lists the pending points (after max_points), then simulates and stores only those
   * whose position j in that list has j % share_size == share_rank. For every process to
   * share out the same list, none may store a point before all have listed them: @planned is
   * called once the list is known, before the first point is simulated (a barrier). */
  int share_rank;
  int share_size;                 /* < 2: this process runs every pending point */
  void (*planned)(gpointer data); /* nullable */
  gpointer planned_data;
} ScnSweepOptions;

typedef struct {
  gint64 scenario_id;
  guint points;             /* in the expansion */
  guint stored_before;      /* already stored when it started: skipped */
  guint ran;                /* simulated and stored by this process (its share) */
  guint errors;             /* of which stored with status 'error' */
  guint by_others;          /* stored meanwhile by other sweeps running at once */
  guint held_elsewhere;     /* claimed by another sweep still running at the end: not stored */
  guint left;               /* still to run (max_points reached, or the sweep failed) */
} ScnSweepSummary;

/* Runs @scenario into @db. FALSE with @error only for failures of the sweep itself (the
 * database, a missing calibration); point failures are stored, counted in @summary. */
gboolean scn_sweep_run(const ScnScenario *scenario, ResDb *db, const ScnSweepOptions *options,
                       ScnSweepSummary *summary, GError **error);

/* The protocol of a sweep shared by @comm's ranks (scenarios/README.md, "Under mpirun"; the
 * transport: search/srch_comm.h). Every function is collective: every rank calls it. */

/* Fills @options' share with @comm's ranks (nothing to share on one rank): each rank runs the
 * points of its share, and none stores before all have listed the pending points. */
void scn_sweep_share(ScnSweepOptions *options, const SrchComm *comm);
/* Whether every rank says @ok. */
gboolean scn_sweep_all_ok(const SrchComm *comm, gboolean ok);
/* After every rank ran its share: this rank's @summary becomes the sweep's on every rank (its
 * counts summed; stored_before what neither rank ran nor left), @elapsed_s the longest; on
 * rank 0 @lines gets one line per rank in rank order (who simulated how many points, where;
 * free with comm->strings_free), NULL on the others. */
void scn_sweep_gather(const SrchComm *comm, ScnSweepSummary *summary, double *elapsed_s,
                      char ***lines);

G_END_DECLS

#endif
