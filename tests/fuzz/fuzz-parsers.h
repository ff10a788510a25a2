/* tests/fuzz/fuzz-parsers — the input parsers the fuzz targets drive, shared with the
 * regression test (tests/test-fuzz-regressions.c) so both feed an input the same way.
 *
 * Each entry of fuzz_parsers takes NUL-terminated text, hands it to one parser, frees whatever
 * came back and returns whether the parser accepted it, with @error set exactly when it did not
 * (fuzz_check_error aborts otherwise: libFuzzer saves the input). Inputs are named by the
 * corpus folder: tests/fuzz/corpus/NAME, tests/fuzz/regressions/NAME, target fuzz-NAME.
 *
 * Spec strings that look like paths are read as files: callers skip fuzz_spec_escapes() inputs
 * and run in an empty directory, so no input reaches a real file (/dev/zero, a FIFO).
 * The strategy parsers need a graph and a cluster: fuzz_parsers_setup() builds a two-layer GPT
 * (op names layer0.ln1 ... as in model/STRATEGY.md) and two DGX A100 hosts.
 */
#ifndef STRATSIM_FUZZ_PARSERS_H
#define STRATSIM_FUZZ_PARSERS_H

#include "costmodel/cm_calibrate.h"
#include "costmodel/cm_profile.h"
#include "devices/dev_cluster.h"
#include "model/mdl_graph.h"
#include "model/mdl_strategy.h"
#include "scenarios/scn_scenario.h"
#include "validate/val_ingest.h"
#include "validate/val_plan.h"

#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_STRATEGY_MODEL "gpt:layers=2,hidden=64,heads=4,seq=32,vocab=128,batch=16"
#define FUZZ_STRATEGY_CLUSTER "dgx-a100:nodes=2"

static MdlGraph *fuzz_graph;
static DevCluster *fuzz_cluster;

/* Aborts unless exactly one of "accepted" and "set @error" holds, with a message. */
static inline void fuzz_check_error(const char *name, gboolean ok, const GError *error) {
  if (ok == (error != NULL)) {
    fprintf(stderr, "%s: error contract violated: %s but the GError is %s\n", name,
            ok ? "accepted" : "refused", error ? error->message : "not set");
    abort();
  }
  if (error && (!error->message || !error->message[0])) {
    fprintf(stderr, "%s: error contract violated: an empty GError message\n", name);
    abort();
  }
}

/* True when a spec string may name a file outside an empty working directory. */
static inline gboolean fuzz_spec_escapes(const char *text) {
  return text[0] == '/' || text[0] == '~' || strstr(text, "..") != NULL;
}

static inline void fuzz_parsers_setup(void) {
  if (fuzz_graph) return;
  GError *error = NULL;
  fuzz_graph = mdl_graph_parse_spec(FUZZ_STRATEGY_MODEL, &error);
  if (fuzz_graph) fuzz_cluster = dev_cluster_parse_spec(FUZZ_STRATEGY_CLUSTER, &error);
  if (!fuzz_graph || !fuzz_cluster) {
    fprintf(stderr, "fuzz: %s\n", error->message);
    abort();
  }
}

static ValPlan *fuzz_run_plan;
static inline void fuzz_parsers_teardown(void) {
  g_clear_pointer(&fuzz_run_plan, val_plan_free);
  g_clear_pointer(&fuzz_graph, mdl_graph_free);
  g_clear_pointer(&fuzz_cluster, dev_cluster_free);
}

static gboolean fuzz_cluster_json(const char *text, GError **error) {
  DevCluster *cluster = dev_cluster_from_json(text, "fuzz.json", error);
  if (cluster) g_free(dev_cluster_to_json(cluster));
  dev_cluster_free(cluster);
  return cluster != NULL;
}

static gboolean fuzz_cluster_spec(const char *text, GError **error) {
  DevCluster *cluster = dev_cluster_parse_spec(text, error);
  dev_cluster_free(cluster);
  return cluster != NULL;
}

static gboolean fuzz_model_json(const char *text, GError **error) {
  MdlGraph *graph = mdl_graph_from_json(text, "fuzz.json", error);
  if (graph) g_free(mdl_graph_to_json(graph));
  mdl_graph_free(graph);
  return graph != NULL;
}

static gboolean fuzz_model_spec(const char *text, GError **error) {
  MdlGraph *graph = mdl_graph_parse_spec(text, error);
  mdl_graph_free(graph);
  return graph != NULL;
}

static gboolean fuzz_strategy_json(const char *text, GError **error) {
  MdlStrategy *s = mdl_strategy_from_json(text, "fuzz.json", fuzz_graph, fuzz_cluster, error);
  if (s) g_free(mdl_strategy_to_json(s, fuzz_graph));
  mdl_strategy_free(s);
  return s != NULL;
}

static gboolean fuzz_strategy_spec(const char *text, GError **error) {
  MdlStrategy *s = mdl_strategy_parse_spec(text, fuzz_graph, fuzz_cluster, error);
  mdl_strategy_free(s);
  return s != NULL;
}

/* scn_scenario_from_json also expands the scenario into its points to check it. */
static gboolean fuzz_scenario(const char *text, GError **error) {
  ScnScenario *scenario = scn_scenario_from_json(text, NULL, error);
  scn_scenario_free(scenario);
  return scenario != NULL;
}

/* The calibration parsers append to an array, which must stay empty on error. */
static void fuzz_check_unchanged(const char *name, gboolean ok, const GArray *out) {
  if (!ok && out->len != 0) {
    fprintf(stderr, "%s: error contract violated: %u measurements appended on error\n", name,
            out->len);
    abort();
  }
}

static gboolean fuzz_measurements(const char *text, GError **error) {
  GArray *out = g_array_new(FALSE, TRUE, sizeof(CmMeasurement));
  char *device = NULL;
  gboolean ok = cm_measurements_parse_json(text, "fuzz.json", out, &device, error);
  fuzz_check_unchanged("measurements", ok, out);
  g_free(device);
  g_array_unref(out);
  return ok;
}

/* The collective comes from the header, else a hint: none for inputs of even length,
 * all_reduce for odd ones, so both paths are reached. */
static gboolean fuzz_nccl_tests(const char *text, GError **error) {
  GArray *out = g_array_new(FALSE, TRUE, sizeof(CmMeasurement));
  CmNcclTestsInfo info;
  memset(&info, 0, sizeof info);
  int hint = strlen(text) % 2 ? (int)CM_ALL_REDUCE : -1;
  gboolean ok = cm_nccl_tests_parse(text, "fuzz.txt", hint, out, &info, error);
  fuzz_check_unchanged("nccl-tests", ok, out);
  cm_nccl_tests_info_clear(&info);
  g_array_unref(out);
  return ok;
}

static gboolean fuzz_profiles(const char *text, GError **error) {
  CmProfiles *profiles = cm_profiles_from_json(text, "fuzz.json", error);
  cm_profiles_free(profiles);
  return profiles != NULL;
}

/* An accepted plan must keep val_plan.h's promises (indices in range, deps earlier, transfer
 * ends matched both ways, the issue order complete and in list order per rank); it is then
 * written back as measurements. */
static void fuzz_plan_check(const ValPlan *plan) {
  guint *next = g_new0(guint, plan->ranks);
  gboolean ok = plan->ranks >= 1 && plan->ranks <= VAL_PLAN_MAX_RANKS;
  for (guint64 i = 0; ok && i < plan->n_steps; i++) {
    const ValIssue *is = &plan->issue[i];
    ok = is->rank >= 0 && is->rank < plan->ranks && is->step == next[is->rank]++ &&
         (i == 0 || is->launch >= plan->issue[i - 1].launch) && is->launch < plan->n_launches;
  }
  for (int r = 0; ok && r < plan->ranks; r++) {
    const ValProgram *p = &plan->programs[r];
    ok = p->rank == r && next[r] == p->n_steps;
    for (guint i = 0; ok && i < p->n_steps; i++) {
      const ValStep *s = &p->steps[i];
      for (guint d = 0; ok && d < s->n_deps; d++) ok = s->deps[d] < i;
      if (ok && (s->kind == VAL_STEP_SEND || s->kind == VAL_STEP_RECV)) {
        const ValProgram *q = &plan->programs[s->peer];
        ok = s->peer != r && s->match < q->n_steps && q->steps[s->match].peer == r &&
             q->steps[s->match].match == i && q->steps[s->match].bytes == s->bytes &&
             q->steps[s->match].kind != s->kind;
      }
      if (ok && s->kind == VAL_STEP_COLLECTIVE)
        ok = s->group >= 0 && s->group < plan->n_groups &&
             val_group_find(&plan->groups[s->group], r) == s->group_rank && s->bytes >= 1;
      if (ok && s->kind == VAL_STEP_GEMM)
        ok = s->m >= 1 && s->n >= 1 && s->k >= 1 && s->batch >= 1 && s->m <= G_MAXINT &&
             s->n <= G_MAXINT && s->k <= G_MAXINT && s->batch <= G_MAXINT;
    }
  }
  g_free(next);
  if (!ok) {
    fprintf(stderr, "plan: an accepted plan breaks a promise of val_plan.h\n");
    abort();
  }
}

static gboolean fuzz_plan(const char *text, GError **error) {
  ValPlan *plan = val_plan_parse(text, "fuzz.json", error);
  if (plan) {
    fuzz_plan_check(plan);
    ValMeasurements *m = val_measurements_new(plan, "gpu");
    double t = 1e-3;
    val_measurements_add_iteration(m, t);
    if (plan->n_steps > 0)
      val_measurements_add_step(m, plan->issue[0].rank,
                                plan->programs[plan->issue[0].rank].steps[plan->issue[0].step].id,
                                &t, 1);
    for (guint i = 0; i < plan->n_micro_ops; i++) val_measurements_add_kernel(m, &plan->micro_ops[i], t);
    for (guint i = 0; i < plan->n_micro_collectives; i++)
      val_measurements_add_collective(m, &plan->micro_collectives[i], t);
    g_free(val_measurements_to_json(m));
    val_measurements_free(m);
  }
  val_plan_free(plan);
  return plan != NULL;
}

/* The plan measurements are checked against: two ranks, ids 0 and 1 on rank 0, 5 on rank 1
 * (the seed corpus has files that match it). */
#define FUZZ_RUN_PLAN                                                                         \
  "{\"format\":\"stratsim-plan\",\"version\":1,\"model\":\"m\",\"cluster\":\"c\","           \
  "\"strategy\":\"s\",\"dtype\":\"fp32\",\"ranks\":2,\"predicted\":{\"iteration_time_s\":0.001},\"groups\":[],"   \
  "\"programs\":[{\"rank\":0,\"steps\":[{\"id\":0,\"kind\":\"gemm\",\"m\":2,\"n\":2,"          \
  "\"k\":2,\"batch\":1},{\"id\":1,\"kind\":\"elementwise\",\"elements\":4,\"bytes\":32}]},"    \
  "{\"rank\":1,\"steps\":[{\"id\":5,\"kind\":\"elementwise\",\"elements\":4,"                 \
  "\"bytes\":32}]}]}"

/* An accepted measurements file must keep val_ingest.h's promises (ranks in range, finite
 * non-negative times, a median with the iterations); it is then checked against a plan. */
static gboolean fuzz_run_measurements(const char *text, GError **error) {
  if (!fuzz_run_plan) {
    fuzz_run_plan = val_plan_parse(FUZZ_RUN_PLAN, "fuzz-plan.json", NULL);
    if (!fuzz_run_plan) abort();
  }
  ValRunMeasurements *m = val_run_measurements_parse(text, "fuzz.json", error);
  if (!m) return FALSE;
  gboolean kept = m->ranks >= 1 && m->runner && m->environment &&
                  (m->n_iterations == 0 || (isfinite(m->iteration_time_s) && m->iteration_time_s > 0));
  for (guint i = 0; kept && i < m->n_iterations; i++)
    kept = isfinite(m->iterations_s[i]) && m->iterations_s[i] > 0;
  for (guint i = 0; kept && i < m->n_steps; i++)
    kept = m->steps[i].rank >= 0 && m->steps[i].rank < m->ranks && isfinite(m->steps[i].time_s) &&
           m->steps[i].time_s >= 0;
  if (!kept) {
    fprintf(stderr, "run-measurements: an accepted file breaks a promise of val_ingest.h\n");
    abort();
  }
  gboolean ok = val_run_measurements_check(m, fuzz_run_plan, "fuzz.json", error);
  val_run_measurements_free(m);
  return ok;
}

typedef struct {
  const char *name;                                 /* corpus folder, target fuzz-NAME */
  gboolean (*parse)(const char *text, GError **error);
  gboolean spec;                                    /* may read a file: see fuzz_spec_escapes */
} FuzzParser;

static const FuzzParser fuzz_parsers[] = {
    {"cluster-json", fuzz_cluster_json, FALSE},
    {"cluster-spec", fuzz_cluster_spec, TRUE},
    {"model-json", fuzz_model_json, FALSE},
    {"model-spec", fuzz_model_spec, TRUE},
    {"strategy-json", fuzz_strategy_json, FALSE},
    {"strategy-spec", fuzz_strategy_spec, TRUE},
    {"scenario", fuzz_scenario, FALSE},
    {"measurements", fuzz_measurements, FALSE},
    {"nccl-tests", fuzz_nccl_tests, FALSE},
    {"profiles", fuzz_profiles, FALSE},
    {"plan", fuzz_plan, FALSE},
    {"run-measurements", fuzz_run_measurements, FALSE},
};

static inline const FuzzParser *fuzz_parser_lookup(const char *name) {
  for (gsize i = 0; i < G_N_ELEMENTS(fuzz_parsers); i++)
    if (strcmp(fuzz_parsers[i].name, name) == 0) return &fuzz_parsers[i];
  return NULL;
}

/* Feeds @text to @parser: TRUE when accepted, FALSE with @error when refused; a skipped
 * path-like spec counts as refused with a G_FILE_ERROR_ACCES error. Aborts on a contract
 * violation. */
static inline gboolean fuzz_parser_run(const FuzzParser *parser, const char *text, GError **error) {
  if (parser->spec && fuzz_spec_escapes(text)) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_ACCES, "skipped: a path outside the directory");
    return FALSE;
  }
  GError *local = NULL;
  gboolean ok = parser->parse(text, &local);
  fuzz_check_error(parser->name, ok, local);
  if (local) g_propagate_error(error, local);
  return ok;
}

#endif
