/* scenarios/sweep — simulating points and storing them one transaction each (scn_sweep.h). */
#include "scenarios/scn_sweep.h"

#include <string.h>

#include "scenarios/scn_search.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

ScnCosts *scn_costs_load(ResDb *db, const ScnScenario *sc, const GPtrArray *points,
                         GError **error) {
  SesCosts *costs = ses_costs_new(db, NULL, sc->calibration, error);
  if (!costs || sc->no_profiles) return costs;
  /* The device kinds the clusters use; a spec that does not parse fails later, at its point. */
  GHashTable *seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < points->len; i++) {
    const ScnPoint *p = g_ptr_array_index(points, i);
    if (g_hash_table_contains(seen, p->cluster)) continue;
    g_hash_table_add(seen, g_strdup(p->cluster));
    g_autofree char *spec = scn_scenario_resolve(sc, p->cluster);
    DevCluster *c = dev_cluster_parse_spec(spec, NULL);
    gboolean ok = !c || ses_costs_load_device(costs, db, c->device.name, error);
    dev_cluster_free(c);
    if (!ok) {
      g_hash_table_destroy(seen);
      ses_costs_free(costs);
      return NULL;
    }
  }
  g_hash_table_destroy(seen);
  return costs;
}

void scn_simulation_free(ScnSimulation *s) {
  if (!s) return;
  sim_run_free(s->run);
  ses_session_free(s->session);
  g_free(s);
}

/* The strategy of a search or baseline entry: the best strategy the search finds, or the
 * baseline it reports. NULL with @error. */
static MdlStrategy *search_strategy(const ScnPoint *point, const SesSession *session,
                                    GError **error) {
  SrchOptions search;
  const char *baseline = NULL;
  if (scn_baseline_spec_is(point->strategy)
          ? !scn_baseline_spec_parse(point->strategy, &search, &baseline, error)
          : !scn_search_spec_parse(point->strategy, &search, error))
    return NULL;
  search.sim = *ses_session_options(session);
  SrchResult *found = srch_run(ses_session_graph(session), ses_session_cluster(session),
                               ses_session_params(session), &search, error);
  MdlStrategy *strategy = NULL;
  if (found && baseline) {
    for (int i = 0; i < found->nbaselines && !strategy; i++)
      if (strcmp(found->baselines[i].name, baseline) == 0) {
        if (found->baselines[i].strategy)
          strategy = g_steal_pointer(&found->baselines[i].strategy);
        else
          g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID, "%s: %s", point->strategy,
                      found->baselines[i].detail);
      }
    if (!strategy && error && !*error)
      g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID, "%s: the search reported no such baseline",
                  point->strategy);
  } else if (found && !found->best) {
    g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID,
                "%s found no strategy that fits in memory (%" G_GUINT64_FORMAT " evaluated, %"
                G_GUINT64_FORMAT " over memory)", point->strategy, found->evaluations, found->over_memory);
  } else if (found) {
    strategy = g_steal_pointer(&found->best);
  }
  if (strategy) {
    g_free(strategy->name);
    strategy->name = baseline ? g_strdup(point->strategy)
                              : g_strdup_printf("%s: %s", point->strategy, found->best_origin);
  }
  srch_result_free(found);
  return strategy;
}

ScnSimulation *scn_simulate(const ScnScenario *sc, const ScnPoint *point, const ScnCosts *costs,
                            GError **error) {
  g_autofree char *model = scn_scenario_resolve(sc, point->model);
  g_autofree char *cluster = scn_scenario_resolve(sc, point->cluster);
  g_autofree char *strategy = scn_scenario_resolve(sc, point->strategy);
  gboolean search = scn_search_spec_is(point->strategy) || scn_baseline_spec_is(point->strategy);
  /* The strategy's name is the spec as written in the scenario, not the resolved path. */
  SesSpecs specs = {.model = model, .cluster = cluster, .strategy = search ? NULL : strategy,
                    .strategy_name = point->strategy,
                    .options = {.no_symmetry = sc->no_symmetry,
                                .step_collectives = sc->step_collectives,
                                .crossmesh = sc->crossmesh, .crossmesh_method = sc->crossmesh_method,
                                .crossmesh_order = sc->crossmesh_order}};
  ScnSimulation *s = g_new0(ScnSimulation, 1);
  if (!(s->session = ses_session_new_with_costs(&specs, costs, error))) goto fail;
  if (search) {
    MdlStrategy *found = search_strategy(point, s->session, error);
    if (!found) goto fail;
    ses_session_set_strategy(s->session, found);
  }
  if (sc->has_framework) { /* options.framework overrides the strategy's own */
    MdlStrategy *copy = mdl_strategy_copy(ses_session_strategy(s->session));
    copy->framework = (MdlFramework)sc->framework;
    ses_session_set_strategy(s->session, copy);
  }
  s->cluster = ses_session_cluster(s->session);
  s->graph = ses_session_graph(s->session);
  s->strategy = ses_session_strategy(s->session);
  if (!(s->run = ses_session_simulate(s->session, error))) goto fail;
  return s;
fail:
  scn_simulation_free(s);
  return NULL;
}

ResPoint *scn_point_result(const ScnPoint *point, const ScnSimulation *sim, const GError *failure) {
  ResPoint *r = g_new0(ResPoint, 1);
  r->key = g_strdup(point->key);
  r->index = (int)point->index;
  r->model = g_strdup(point->model);
  r->cluster = g_strdup(point->cluster);
  r->strategy = g_strdup(point->strategy);
  r->label = g_strdup(point->strategy_label);
  r->axes = g_strdup(point->axes_json);
  if (!sim) {
    r->ok = FALSE;
    r->error = g_strdup(failure ? failure->message : "unknown error");
    return r;
  }
  const SimPrediction *p = sim_run_prediction(sim->run);
  r->has_prediction = TRUE;
  r->num_gpus = p->num_gpus;
  r->iteration_time_s = p->iteration_time_s;
  r->samples_per_s = p->samples_per_s;
  r->tflops_per_gpu = p->tflops_per_gpu;
  r->mfu = p->mfu;
  r->compute_s = p->compute_s;
  r->comm_exposed_s = p->comm_exposed_s;
  r->bubble_s = p->bubble_s;
  r->host_bound_s = p->host_bound_s;
  r->peak_memory_bytes = p->peak_memory_bytes;
  r->memory_capacity_bytes = p->memory_capacity_bytes;
  r->fits_memory = p->fits_memory;
  /* Without the wall-clock field: a point's row is the same whoever simulated it. */
  r->prediction = sim_prediction_to_json(sim->run, FALSE);
  r->ok = p->fits_memory;
  if (!p->fits_memory)
    r->error = g_strdup_printf("does not fit in memory: peak %.2f GiB on GPU %d, capacity %.2f GiB",
                               p->peak_memory_bytes / GIB, p->peak_memory_device,
                               p->memory_capacity_bytes / GIB);
  return r;
}

/* --- the sweep -------------------------------------------------------------------------- */

/* A claim lasts this long unless renewed; the writer renews its claims every quarter of it
 * while it waits for a point, so only a sweep that stopped (killed, or its machine gone) lets
 * its claims lapse. On this host a claim of a process that is gone is free at once. */
#define CLAIM_LEASE_S 60.0
#define CLAIM_RENEW_US ((gint64)(CLAIM_LEASE_S / 4 * G_USEC_PER_SEC))

typedef struct {
  const ScnScenario *scenario;
  const ScnCosts *costs;
  ScnPoint **taken;         /* points this process took, in the order it took them */
  ResPoint **results;       /* one per taken point, set by the workers */
  GMutex lock;
  GCond done;
} Sweep;

static ResPoint *run_point(const ScnScenario *sc, const ScnCosts *costs, const ScnPoint *point) {
  GError *error = NULL;
  ScnSimulation *sim = scn_simulate(sc, point, costs, &error);
  ResPoint *r = scn_point_result(point, sim, error);
  g_clear_error(&error);
  scn_simulation_free(sim);
  return r;
}

static void worker(gpointer data, gpointer user_data) {
  Sweep *sw = user_data;
  guint j = GPOINTER_TO_UINT(data) - 1;
  ResPoint *r = run_point(sw->scenario, sw->costs, sw->taken[j]);
  g_mutex_lock(&sw->lock);
  sw->results[j] = r;
  g_cond_broadcast(&sw->done);
  g_mutex_unlock(&sw->lock);
}

/* The state of one pass over the candidate points. */
typedef struct {
  ResDb *db;
  gint64 scenario_id;
  const ResClaimer *claimer; /* NULL: shares set by rank, no claims */
  GThreadPool *pool;
  guint ntaken, nstored;     /* taken so far, of which stored */
  guint limit;               /* most points to take (max_points), 0: no limit */
} Pass;

/* Waits for taken point @j (renewing the claims while it waits) and returns it. */
static ResPoint *wait_point(Sweep *sw, Pass *pass, guint j, GError **error) {
  if (!pass->pool) return run_point(sw->scenario, sw->costs, sw->taken[j]);
  g_mutex_lock(&sw->lock);
  while (!sw->results[j]) {
    gint64 until = g_get_monotonic_time() + CLAIM_RENEW_US;
    if (!g_cond_wait_until(&sw->done, &sw->lock, until) && !sw->results[j] && pass->claimer) {
      g_mutex_unlock(&sw->lock);
      if (!res_db_renew_claims(pass->db, pass->claimer, error)) return NULL;
      g_mutex_lock(&sw->lock);
    }
  }
  ResPoint *r = sw->results[j];
  sw->results[j] = NULL;
  g_mutex_unlock(&sw->lock);
  return r;
}

/* Runs the points of @candidates: claims them ahead of the simulating threads (a window of
 * twice their number), stores each as it finishes, in the order taken. Points another sweep
 * stored are counted in by_others; those another live sweep holds are put in @held. */
static gboolean run_pass(Sweep *sw, Pass *pass, GPtrArray *candidates, GPtrArray *held,
                         const ScnSweepOptions *options, ScnSweepSummary *sum, GError **error) {
  guint window = options->threads > 1 ? (guint)options->threads * 2 : 1, next = 0;
  for (;;) {
    while (pass->ntaken - pass->nstored < window && next < candidates->len &&
           (pass->limit == 0 || pass->ntaken < pass->limit)) {
      ScnPoint *p = g_ptr_array_index(candidates, next++);
      ResClaimOutcome outcome = RES_CLAIM_TAKEN;
      if (pass->claimer &&
          !res_db_claim_point(pass->db, pass->scenario_id, p->key, pass->claimer, &outcome, error))
        return FALSE;
      if (outcome == RES_CLAIM_STORED) sum->by_others++;
      if (outcome == RES_CLAIM_HELD) g_ptr_array_add(held, p);
      if (outcome != RES_CLAIM_TAKEN) continue;
      sw->taken[pass->ntaken] = p;
      if (pass->pool) g_thread_pool_push(pass->pool, GUINT_TO_POINTER(pass->ntaken + 1), NULL);
      pass->ntaken++;
    }
    if (pass->nstored == pass->ntaken) break;
    ResPoint *r = wait_point(sw, pass, pass->nstored, error);
    if (!r) return FALSE;
    gboolean inserted = FALSE;
    gboolean stored_ok = res_db_store_point(pass->db, pass->scenario_id, r, &inserted, error);
    if (stored_ok && inserted) {
      sum->ran++;
      if (!r->ok) sum->errors++;
    } else if (stored_ok) {
      sum->by_others++; /* its claim had lapsed and another sweep stored it meanwhile */
    }
    res_point_free(r);
    if (!stored_ok) return FALSE;
    pass->nstored++;
    if (options->progress)
      options->progress(sum->ran + sum->by_others, sum->points - sum->stored_before, sum->errors,
                        options->progress_data);
  }
  sum->left += candidates->len - next;
  return TRUE;
}

gboolean scn_sweep_run(const ScnScenario *sc, ResDb *db, const ScnSweepOptions *options,
                       ScnSweepSummary *summary, GError **error) {
  g_return_val_if_fail(sc && db, FALSE);
  ScnSweepOptions defaults = {0};
  if (!options) options = &defaults;
  g_return_val_if_fail(options->share_size < 2 ||
                           (options->share_rank >= 0 && options->share_rank < options->share_size),
                       FALSE);
  ScnSweepSummary sum = {0};
  gboolean ok = FALSE;
  GPtrArray *points = NULL, *todo = NULL, *held = g_ptr_array_new(), *retry = NULL;
  GHashTable *stored = NULL;
  ScnCosts *costs = NULL;
  ResClaimer claimer = {0};
  Pass pass = {.db = db};
  Sweep sw = {.scenario = sc};
  g_mutex_init(&sw.lock);
  g_cond_init(&sw.done);
  if (!(points = scn_scenario_expand(sc, error))) goto out;
  sum.points = points->len;
  if ((sum.scenario_id = res_db_store_scenario(db, sc->name, sc->file, sc->json, error)) < 0 ||
      !(stored = res_db_point_keys(db, sum.scenario_id, error)))
    goto out;
  pass.scenario_id = sum.scenario_id;
  todo = g_ptr_array_new();
  for (guint i = 0; i < points->len; i++) {
    ScnPoint *p = g_ptr_array_index(points, i);
    if (g_hash_table_contains(stored, p->key)) sum.stored_before++;
    else g_ptr_array_add(todo, p);
  }
  if (options->share_size > 1) {
    /* mpirun ranks: the shares are fixed by position, no claims (scn_sweep.h). */
    if (options->max_points > 0 && todo->len > options->max_points) {
      sum.left = todo->len - options->max_points;
      g_ptr_array_set_size(todo, options->max_points);
    }
    if (options->planned) options->planned(options->planned_data);
    guint kept = 0;
    for (guint j = 0; j < todo->len; j++)
      if (j % (guint)options->share_size == (guint)options->share_rank)
        g_ptr_array_index(todo, kept++) = g_ptr_array_index(todo, j);
    g_ptr_array_set_size(todo, kept);
  } else {
    if (options->planned) options->planned(options->planned_data);
    res_claimer_init(&claimer, CLAIM_LEASE_S);
    pass.claimer = &claimer;
    pass.limit = options->max_points;
  }
  if (!(costs = scn_costs_load(db, sc, todo, error))) goto out;
  sw.costs = costs;
  sw.taken = g_new0(ScnPoint *, todo->len + 1);
  sw.results = g_new0(ResPoint *, todo->len + 1);
  if (options->progress) options->progress(0, todo->len, 0, options->progress_data);
  if (options->threads > 1 && todo->len > 1 &&
      !(pass.pool = g_thread_pool_new(worker, &sw, options->threads, FALSE, error)))
    goto out;
  if (!run_pass(&sw, &pass, todo, held, options, &sum, error)) goto out;
  /* Points held by other sweeps: once more at the end, when those may be stored, or their
   * sweep gone (its claims then free); what is still held is theirs to finish. */
  if (held->len) {
    retry = held;
    held = g_ptr_array_new();
    guint left = sum.left;
    if (!run_pass(&sw, &pass, retry, held, options, &sum, error)) goto out;
    sum.left = left;
    sum.held_elsewhere = held->len;
  }
  ok = TRUE;
out:
  if (!ok) sum.left = sum.points - sum.stored_before - sum.ran - sum.by_others;
  if (pass.pool) g_thread_pool_free(pass.pool, !ok, TRUE); /* on failure drops the queued points */
  if (pass.claimer) res_db_release_claims(db, &claimer, NULL); /* hands on what was not stored */
  res_claimer_clear(&claimer);
  if (sw.results) {
    for (guint j = 0; j < pass.ntaken; j++) res_point_free(sw.results[j]);
    g_free(sw.results);
  }
  g_free(sw.taken);
  if (todo) g_ptr_array_free(todo, TRUE);
  if (retry) g_ptr_array_free(retry, TRUE);
  g_ptr_array_free(held, TRUE);
  g_mutex_clear(&sw.lock);
  g_cond_clear(&sw.done);
  ses_costs_free(costs);
  if (stored) g_hash_table_destroy(stored);
  if (points) g_ptr_array_free(points, TRUE);
  if (summary) *summary = sum;
  return ok;
}

static void barrier(gpointer data) {
  const SrchComm *comm = data;
  comm->barrier(comm->data);
}

void scn_sweep_share(ScnSweepOptions *options, const SrchComm *comm) {
  if (comm->size < 2) return;
  options->share_rank = comm->rank;
  options->share_size = comm->size;
  options->planned = barrier;
  options->planned_data = (gpointer)comm;
}

gboolean scn_sweep_all_ok(const SrchComm *comm, gboolean ok) {
  return comm->allreduce_max(comm->data, ok ? 0.0 : 1.0) == 0.0;
}

void scn_sweep_gather(const SrchComm *comm, ScnSweepSummary *summary, double *elapsed_s,
                      char ***lines) {
  g_autofree char *mine = g_strdup_printf(
      "  rank %d on %s: %u point%s simulated (%u failed or do not fit), %.1f s", comm->rank,
      g_get_host_name(), summary->ran, summary->ran == 1 ? "" : "s", summary->errors, *elapsed_s);
  char **gathered = comm->gather_strings(comm->data, mine);
  if (lines) *lines = gathered;
  else comm->strings_free(comm->data, gathered);
  ScnSweepSummary own = *summary;
  summary->ran = (guint)comm->allreduce_sum(comm->data, own.ran);
  summary->errors = (guint)comm->allreduce_sum(comm->data, own.errors);
  summary->stored_before = summary->points - summary->ran - summary->left;
  *elapsed_s = comm->allreduce_max(comm->data, *elapsed_s);
}
