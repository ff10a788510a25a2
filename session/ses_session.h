/* session — one path from specs to a prediction (issue 13, item 1).
 *
 * A session owns what one simulation needs: the parsed cluster, model and strategy, the cost
 * model's parameters with the calibration and measured kernel times read from the results
 * database, and the simulation options. Every command that simulates (simulate, explain,
 * search, collective, bench, a sweep's points, validate plan) builds one from the specs the
 * user typed and calls it, instead of repeating the chain parse -> load costs -> CmParams ->
 * SimOptions -> run. Searches and sweeps borrow its parts.
 *
 * Layer: above devices/, model/, costmodel/, sim/ and results/ (it reads the database), below
 * scenarios/, validate/ and cli/, which use it. search/ does not depend on it: a search is
 * handed the session's parts. Not thread-safe: one session per thread; SesCosts, once
 * loaded, is read-only and shared by the sessions of a sweep's threads. */
#ifndef STRATSIM_SES_SESSION_H
#define STRATSIM_SES_SESSION_H

#include <glib.h>

#include "costmodel/costmodel.h"
#include "devices/dev_cluster.h"
#include "model/mdl_graph.h"
#include "model/mdl_strategy.h"
#include "results/res_db.h"
#include "sim/sim.h"

G_BEGIN_DECLS

#define SES_ERROR (ses_error_quark())
GQuark ses_error_quark(void);
typedef enum {
  SES_ERROR_INPUT,    /* bad input: specs that cannot go together (a strategy without a model,
                         a calibration without a database) */
  SES_ERROR_READ_ONLY /* bad input: storing through a session opened read-only (--no-store) */
} SesError;

/* What the cost model reads from the database: a calibration of collectives and the measured
 * kernel times of device kinds. Read-only once loaded (threads share it). */
typedef struct SesCosts SesCosts;

/* Loads calibration @calibration (NULL: none) from @db (NULL: none; then a calibration is
 * refused with RES_ERROR_NOT_FOUND). @origin names the database in messages. Kernel times are
 * added per device kind with ses_costs_load_device. Free with ses_costs_free. */
SesCosts *ses_costs_new(ResDb *db, const char *origin, const char *calibration, GError **error);
/* Loads the measured kernel times of device kind @device from @db (nothing if @db is NULL or
 * they are already loaded). FALSE with the database's error. */
gboolean ses_costs_load_device(SesCosts *costs, ResDb *db, const char *device, GError **error);
void ses_costs_free(SesCosts *costs);
/* Points @params' calibration and profiles (for device kind @device) at @costs (borrowed). */
void ses_costs_apply(const SesCosts *costs, const char *device, CmParams *params);

/* What a session is built from: the specs as the user typed them (copied). */
typedef struct {
  const char *model;          /* model spec (mdl_graph_parse_spec); NULL: none (collective) */
  const char *cluster;        /* cluster spec (dev_cluster_parse_spec); required */
  const char *strategy;       /* strategy spec (mdl_strategy_parse_spec); NULL: none yet (a
                                 search, or ses_session_set_strategy later) */
  const char *strategy_name;  /* the parsed strategy's name; NULL: what the parser gives */
  const char *db_path;        /* results database with calibrations and kernel times; NULL:
                                 none (presets and rooflines only) */
  gboolean read_only;         /* never create or write the database (--no-store, explain,
                                 validate plan): an existing one is opened read-only, a missing
                                 one means no kernel times */
  const char *calibration;    /* calibration name in the database; NULL: the presets' figures.
                                 Needs an existing database (a lookup creates nothing) */
  gboolean no_profiles;       /* ignore measured kernel times (rooflines only) */
  SimOptions options;
} SesSpecs;

typedef struct SesSession SesSession;

/* Parses the specs, opens the database (created unless read-only) and loads the calibration
 * and the kernel times of the cluster's device kind. NULL with the error of the part that
 * failed: DEV_ERROR, MDL_ERROR (bad specs), RES_ERROR (database; RES_ERROR_NOT_FOUND for a
 * missing calibration or database), SES_ERROR, G_FILE_ERROR. Free with ses_session_free. */
SesSession *ses_session_new_from_specs(const SesSpecs *specs, GError **error);
/* As ses_session_new_from_specs, but the calibration and kernel times come from @costs
 * (borrowed, must outlive the session; NULL: none) and no database is opened (@specs->db_path
 * and ->calibration are ignored). For a sweep's points. */
SesSession *ses_session_new_with_costs(const SesSpecs *specs, const SesCosts *costs,
                                       GError **error);
void ses_session_free(SesSession *session);

/* The session's parts (borrowed; valid until it is freed or, for the strategy, replaced). */
const DevCluster *ses_session_cluster(const SesSession *session);
const MdlGraph *ses_session_graph(const SesSession *session);       /* NULL without a model */
const MdlStrategy *ses_session_strategy(const SesSession *session); /* NULL without one */
const CmParams *ses_session_params(const SesSession *session);
const SimOptions *ses_session_options(const SesSession *session);
/* The database, or NULL when the session has none (no path, or read-only and missing). */
ResDb *ses_session_db(SesSession *session);
const char *ses_session_db_path(const SesSession *session);
/* The specs as typed (for storing runs); NULL where not given. */
const char *ses_session_model_spec(const SesSession *session);
const char *ses_session_cluster_spec(const SesSession *session);
const char *ses_session_strategy_spec(const SesSession *session);

/* Replaces the session's strategy with @strategy (owned from now on; a search's winner, a
 * strategy with another dtype). */
void ses_session_set_strategy(SesSession *session, MdlStrategy *strategy);

/* Simulates one iteration of the session's strategy. The run borrows the session's parts: free
 * it (sim_run_free) before the session. NULL with SES_ERROR_INPUT when the session has no
 * model or strategy, else the simulator's error. */
SimRun *ses_session_simulate(SesSession *session, GError **error);

/* Stores @run (made by ses_session_simulate) in the session's database under its specs;
 * returns the run id, or -1 with @error: SES_ERROR_READ_ONLY for a read-only session,
 * RES_ERROR_WRITE when the write fails. */
gint64 ses_session_store_simulation(SesSession *session, const SimRun *run, GError **error);

G_END_DECLS

#endif
