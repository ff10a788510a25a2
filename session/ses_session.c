/* session — one path from specs to a prediction (ses_session.h). */
#include "session/ses_session.h"

#include "costmodel/cm_calibrate.h"
#include "costmodel/cm_profile.h"

G_DEFINE_QUARK(stratsim-session-error-quark, ses_error)

struct SesCosts {
  CmCalibration *calibration; /* or NULL */
  GHashTable *profiles;       /* device kind name -> CmProfiles */
};

SesCosts *ses_costs_new(ResDb *db, const char *origin, const char *calibration, GError **error) {
  SesCosts *costs = g_new0(SesCosts, 1);
  costs->profiles = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                          (GDestroyNotify)cm_profiles_free);
  if (!calibration) return costs;
  if (!db) {
    g_set_error(error, RES_ERROR, RES_ERROR_NOT_FOUND,
                "no database %s to read calibration '%s' from (make one with 'stratsim "
                "calibrate')", origin ? origin : "given", calibration);
    ses_costs_free(costs);
    return NULL;
  }
  g_autofree char *json = res_db_load_calibration(db, calibration, NULL, error);
  g_autofree char *where = g_strdup_printf("calibration '%s' in %s", calibration,
                                           origin ? origin : "the database");
  if (!json || !(costs->calibration = cm_calibration_from_json(json, where, error))) {
    ses_costs_free(costs);
    return NULL;
  }
  return costs;
}

gboolean ses_costs_load_device(SesCosts *costs, ResDb *db, const char *device, GError **error) {
  if (!db || g_hash_table_contains(costs->profiles, device)) return TRUE;
  CmProfiles *profiles = res_db_load_profiles(db, device, error);
  if (!profiles) return FALSE;
  g_hash_table_insert(costs->profiles, g_strdup(device), profiles);
  return TRUE;
}

void ses_costs_free(SesCosts *costs) {
  if (!costs) return;
  cm_calibration_free(costs->calibration);
  g_hash_table_destroy(costs->profiles);
  g_free(costs);
}

void ses_costs_apply(const SesCosts *costs, const char *device, CmParams *params) {
  params->calibration = costs ? costs->calibration : NULL;
  params->profiles = costs ? g_hash_table_lookup(costs->profiles, device) : NULL;
}

struct SesSession {
  char *model_spec, *cluster_spec, *strategy_spec, *db_path; /* as typed; owned */
  gboolean read_only;
  DevCluster *cluster;
  MdlGraph *graph;           /* or NULL */
  MdlStrategy *strategy;     /* or NULL */
  ResDb *db;                 /* or NULL */
  SesCosts *own_costs;       /* loaded by the session, or NULL when borrowed */
  CmParams params;
  SimOptions options;
};

void ses_session_free(SesSession *s) {
  if (!s) return;
  mdl_strategy_free(s->strategy);
  mdl_graph_free(s->graph);
  dev_cluster_free(s->cluster);
  ses_costs_free(s->own_costs);
  res_db_close(s->db);
  g_free(s->model_spec);
  g_free(s->cluster_spec);
  g_free(s->strategy_spec);
  g_free(s->db_path);
  g_free(s);
}

static SesSession *session_alloc(const SesSpecs *specs) {
  SesSession *s = g_new0(SesSession, 1);
  s->model_spec = g_strdup(specs->model);
  s->cluster_spec = g_strdup(specs->cluster);
  s->strategy_spec = g_strdup(specs->strategy);
  s->db_path = g_strdup(specs->db_path);
  s->read_only = specs->read_only;
  s->options = specs->options;
  cm_params_default(&s->params);
  return s;
}

/* Cluster, model, strategy, in that order (the first bad one is reported). */
static gboolean parse_specs(SesSession *s, const SesSpecs *specs, GError **error) {
  if (!specs->cluster || (specs->strategy && !specs->model)) {
    g_set_error(error, SES_ERROR, SES_ERROR_INPUT, "%s",
                !specs->cluster ? "a cluster is required" : "a strategy needs a model");
    return FALSE;
  }
  if (!(s->cluster = dev_cluster_parse_spec(specs->cluster, error))) return FALSE;
  if (specs->model && !(s->graph = mdl_graph_parse_spec(specs->model, error))) return FALSE;
  if (specs->strategy &&
      !(s->strategy = mdl_strategy_parse_spec(specs->strategy, s->graph, s->cluster, error)))
    return FALSE;
  if (s->strategy && specs->strategy_name) {
    g_free(s->strategy->name);
    s->strategy->name = g_strdup(specs->strategy_name);
  }
  return TRUE;
}

/* Opens the database unless already open: read-only ones only when the file exists. */
static gboolean open_db(SesSession *s, GError **error) {
  if (s->db || !s->db_path) return TRUE;
  if (!s->read_only) return (s->db = res_db_open(s->db_path, error)) != NULL;
  if (!g_file_test(s->db_path, G_FILE_TEST_EXISTS)) return TRUE;
  return (s->db = res_db_open_read_only(s->db_path, error)) != NULL;
}

SesSession *ses_session_new_from_specs(const SesSpecs *specs, GError **error) {
  g_return_val_if_fail(specs != NULL, NULL);
  SesSession *s = session_alloc(specs);
  /* A calibration is looked up first, in a database that must exist (a lookup creates
   * nothing): a misspelt name fails before the work. */
  if (specs->calibration && specs->db_path && g_file_test(specs->db_path, G_FILE_TEST_EXISTS) &&
      !open_db(s, error))
    goto fail;
  if (specs->calibration &&
      !(s->own_costs = ses_costs_new(s->db, specs->db_path, specs->calibration, error)))
    goto fail;
  if (!parse_specs(s, specs, error) || !open_db(s, error)) goto fail;
  if (!s->own_costs && !(s->own_costs = ses_costs_new(s->db, specs->db_path, NULL, error)))
    goto fail;
  /* Measured kernel times of this device kind override the roofline. */
  if (!specs->no_profiles &&
      !ses_costs_load_device(s->own_costs, s->db, s->cluster->device.name, error))
    goto fail;
  ses_costs_apply(s->own_costs, s->cluster->device.name, &s->params);
  return s;
fail:
  ses_session_free(s);
  return NULL;
}

SesSession *ses_session_new_with_costs(const SesSpecs *specs, const SesCosts *costs,
                                       GError **error) {
  g_return_val_if_fail(specs != NULL, NULL);
  SesSession *s = session_alloc(specs);
  g_clear_pointer(&s->db_path, g_free);
  if (!parse_specs(s, specs, error)) {
    ses_session_free(s);
    return NULL;
  }
  ses_costs_apply(costs, s->cluster->device.name, &s->params);
  return s;
}

const DevCluster *ses_session_cluster(const SesSession *s) { return s->cluster; }
const MdlGraph *ses_session_graph(const SesSession *s) { return s->graph; }
const MdlStrategy *ses_session_strategy(const SesSession *s) { return s->strategy; }
const CmParams *ses_session_params(const SesSession *s) { return &s->params; }
const SimOptions *ses_session_options(const SesSession *s) { return &s->options; }
ResDb *ses_session_db(SesSession *s) { return s->db; }
const char *ses_session_db_path(const SesSession *s) { return s->db_path; }
const char *ses_session_model_spec(const SesSession *s) { return s->model_spec; }
const char *ses_session_cluster_spec(const SesSession *s) { return s->cluster_spec; }
const char *ses_session_strategy_spec(const SesSession *s) { return s->strategy_spec; }

void ses_session_set_strategy(SesSession *s, MdlStrategy *strategy) {
  if (strategy == s->strategy) return;
  mdl_strategy_free(s->strategy);
  s->strategy = strategy;
}

SimRun *ses_session_simulate(SesSession *s, GError **error) {
  if (!s->graph || !s->strategy) {
    g_set_error(error, SES_ERROR, SES_ERROR_INPUT, "nothing to simulate: the session has no %s",
                s->graph ? "strategy" : "model");
    return NULL;
  }
  return sim_run_new_with_options(s->graph, s->strategy, s->cluster, &s->params, &s->options,
                                  error);
}

gint64 ses_session_store_simulation(SesSession *s, const SimRun *run, GError **error) {
  if (s->read_only || !s->db) {
    g_set_error(error, SES_ERROR, SES_ERROR_READ_ONLY,
                "cannot store the run: the session %s", s->read_only ? "is read-only (--no-store)"
                                                                     : "has no database");
    return -1;
  }
  return res_db_store_simulation(s->db, s->model_spec, s->cluster_spec, s->strategy_spec, run,
                                 error);
}
