/* cli/search — `stratsim search --model M --cluster C --algo mcmc|cd|exhaustive|random|grid|dp|auto
 * --budget 60s|2m|N --seed S --threads T [--json] [--out FILE] [--db FILE] [--no-store]`: searches strategies
 * (search/srch_search.h), prints the winner against the baselines, writes the winner as strategy
 * JSON (what `simulate --strategy FILE` reads) and stores the run and its convergence curve.
 *
 * Under `mpirun -np N` every rank runs its share of the workers (search/srch_search.h: the
 * budget is the total, split over N x threads workers); the ranks' results are gathered on rank
 * 0 by the library's protocol (srch_result_gather over cli_mpi_comm's SrchComm), and rank 0
 * alone prints, writes --out and stores. Other ranks print only their errors. */
#include "cli/cli.h"
#include "cli/cli_outputs.h"
#include "cli/cli_mpi.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "results/res_db.h"
#include "search/srch_search.h"
#include "session/ses_session.h"
#include "sim/sim_progress.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* The search's state for the progress line (sim/sim_progress.h: in place on a terminal,
 * a line every few seconds elsewhere). */
static void show_progress(const SrchProgress *p, gpointer data) {
  char best[32] = "none yet";
  if (isfinite(p->best_time_s)) g_snprintf(best, sizeof best, "%.6g s", p->best_time_s);
  char left[32] = "?";
  if (p->left_s >= 0) g_snprintf(left, sizeof left, "%.0f s", ceil(p->left_s));
  sim_progress_set(data, "%s: best %s, %" G_GUINT64_FORMAT " evaluations, %.0f/s, %s left",
                   p->phase, best, p->evaluations, p->evals_per_s, left);
}

static void print_baseline(const SrchBaseline *b, const SrchResult *r) {
  if (!b->strategy) {
    printf("               %-16s  -             %s\n", b->name, b->detail);
    return;
  }
  char speed[48] = "";
  if (b->fits_memory && r->best)
    g_snprintf(speed, sizeof speed, "%.3fx", b->iteration_time_s / r->best_time_s);
  else if (!b->fits_memory)
    g_snprintf(speed, sizeof speed, "does not fit");
  printf("               %-16s  %-12.6g  %-12s  peak %7.3f GiB  %s\n", b->name, b->iteration_time_s,
         speed, b->peak_memory_bytes / GIB, b->detail);
}

static void print_text(const SrchResult *r, const SrchOptions *o, const MdlGraph *graph,
                       const DevCluster *c, const char *budget, const char *out_path,
                       gint64 search_id, const char *db) {
  printf("stratsim search: %s on %s (%d x %d %s), %s", graph->name, c->name, c->nodes,
         c->gpus_per_node, c->device.name, srch_algo_name(r->algo));
  if (r->algo == SRCH_ALGO_AUTO) printf(" (ran %s)", srch_algo_name(r->ran));
  printf(", budget %s, seed %u, %d thread%s", budget, o->seed, o->threads, o->threads == 1 ? "" : "s");
  if (o->nranks > 1) printf(" on each of %d MPI ranks", o->nranks);
  printf("\n");
  printf("  space        %s\n", r->space_description);
  if (r->nvars > 0)
    printf("               10^%.1f points, %" G_GUINT64_FORMAT " configs left out as unable to fit in memory\n",
           r->log10_size, r->values_over_memory);
  printf("  searched     %" G_GUINT64_FORMAT " evaluations (%" G_GUINT64_FORMAT " simulated, %" G_GUINT64_FORMAT
         " over memory", r->evaluations, r->simulated, r->over_memory);
  if (r->pruned)
    printf(", %" G_GUINT64_FORMAT " %s", r->pruned,
           r->ran == SRCH_ALGO_DP ? "points and pipelines skipped: a lower bound above the best, the "
                                    "space's own even cut, or weights that fit no cut"
           : r->ran == SRCH_ALGO_GRID ? "points whose lower bound exceeds the best"
                                   : "subtrees cut by the bound");
  printf(") in %.3f s (%.0f evaluations/s)%s\n", r->elapsed_s,
         r->elapsed_s > 0 ? (r->evaluations + r->baseline_evaluations) / r->elapsed_s : 0,
         r->complete ? ", the whole space" : "");
  if (r->space_points)
    printf("               covered %.1f%% of the space's %" G_GUINT64_FORMAT " configurations\n",
           100 * srch_result_covered_share(r), r->space_points);
  if (r->baseline_evaluations)
    printf("               plus %" G_GUINT64_FORMAT " evaluations of the Megatron grid%s\n", r->baseline_evaluations,
           r->algo == SRCH_ALGO_AUTO ? " and of its pipelines with DP cuts" : "");
  if (!r->best) {
    printf("  winner       none: no evaluated strategy fits in memory\n");
  } else {
    const MdlStrategy *s = r->best;
    const MdlMesh *mesh = mdl_strategy_mesh(s, 0);
    printf("  winner       %.6g s per iteration (%.6g samples/s), peak %.3f GiB of %.3g GiB, found by %s\n",
           r->best_time_s, (double)graph->batch / r->best_time_s, r->best_memory_bytes / GIB,
           c->device.memory_bytes / GIB, r->best_origin);
    printf("               %d stage%s, %d microbatches, mesh [", s->num_stages,
           s->num_stages == 1 ? "" : "s", s->num_microbatches);
    for (int a = 0; a < mesh->ndims; a++) printf("%s%d", a ? "," : "", mesh->shape[a]);
    printf("], %s\n", dev_dtype_name(s->dtype));
  }
  if (r->nbaselines) {
    printf("  baselines    %-16s  %-12s  %-12s\n", "", "s/iteration", "winner is");
    for (int i = 0; i < r->nbaselines; i++) print_baseline(&r->baselines[i], r);
  }
  if (out_path) printf("  strategy     %s (simulate --strategy %s reproduces the winner)\n", out_path, out_path);
  if (db) printf("  stored       search %" G_GINT64_FORMAT " in %s\n", search_id, db);
  else printf("  stored       not stored (--no-store)\n");
}

static gint64 store(ResDb *db, const SrchResult *r, const SrchOptions *o, const char *model,
                    const char *cluster, const char *budget, const char *json,
                    const char *strategy_json, GError **error) {
  guint n = r->curve->len;
  g_autofree guint64 *evaluation = g_new(guint64, MAX(n, 1));
  g_autofree double *elapsed = g_new(double, MAX(n, 1));
  g_autofree double *best = g_new(double, MAX(n, 1));
  for (guint i = 0; i < n; i++) {
    const SrchCurvePoint *p = &g_array_index(r->curve, SrchCurvePoint, i);
    evaluation[i] = p->evaluation;
    elapsed[i] = p->elapsed_s;
    best[i] = p->best_time_s;
  }
  double times[3] = {INFINITY, INFINITY, INFINITY};
  const char *megatron = NULL;
  for (int i = 0; i < r->nbaselines && i < 3; i++) {
    const SrchBaseline *b = &r->baselines[i];
    if (b->strategy && b->fits_memory) times[i] = b->iteration_time_s;
    if (i == 1 && b->strategy) megatron = b->detail;
  }
  ResSearchRecord rec = {
      .model = model, .cluster = cluster, .algo = srch_algo_name(r->algo),
      .ran = srch_algo_name(r->ran), .seed = o->seed, .threads = o->threads, .budget = budget,
      .evaluations = r->evaluations, .simulated = r->simulated, .over_memory = r->over_memory,
      .elapsed_s = r->elapsed_s, .complete = r->complete, .best_time_s = r->best_time_s,
      .best_memory_bytes = r->best_memory_bytes, .found_by = r->best_origin,
      .data_parallel_time_s = times[0], .megatron_time_s = times[1], .weird_trick_time_s = times[2],
      .megatron_config = megatron, .strategy_json = strategy_json, .json = json,
      .curve_len = n, .curve_evaluation = evaluation, .curve_elapsed_s = elapsed,
      .curve_best_time_s = best};
  return res_db_store_search(db, &rec, error);
}

static gboolean parse_choice(const char *option, const char *text, const char *a, const char *b,
                             int *out) {
  if (!text) return TRUE;
  if (strcmp(text, a) == 0) *out = 0;
  else if (strcmp(text, b) == 0) *out = 1;
  else {
    fprintf(stderr, "stratsim search: --%s must be '%s' or '%s', not '%s'\n", option, a, b, text);
    return FALSE;
  }
  return TRUE;
}

static int search_main(int argc, char **argv);

int cli_search(int argc, char **argv) {
  if (!cli_mpi_init(&argc, &argv)) return CLI_EXIT_FAILURE;
  int status = search_main(argc, argv);
  cli_mpi_finalize();
  return status;
}

static int search_main(int argc, char **argv) {
  g_autofree char *model_spec = NULL, *cluster_spec = NULL, *algo_text = NULL, *budget_text = NULL;
  g_autofree char *out_path = NULL, *db_path = NULL, *vars_text = NULL, *dims_text = NULL;
  g_autofree char *framework_text = NULL;
  g_autofree char *dtype_text = NULL, *collectives = NULL, *calibration_name = NULL;
  g_autofree char *crossmesh_method = NULL, *crossmesh_order = NULL;
  gboolean tp_overlap = FALSE;
  gboolean json = FALSE, no_delta = FALSE, no_symmetry = FALSE, no_profiles = FALSE, followers = FALSE;
  gboolean no_store = FALSE;
  gint64 seed = 1;
  /* G_MININT and -DBL_MAX: not given (the library's defaults; it reads 0 as its default, so a
   * 0 given here is refused below rather than silently replaced) */
  int threads = G_MININT, mesh_axes = 2, microbatches = 8, restarts = G_MININT;
  double beta = -DBL_MAX;
  GOptionEntry entries[] = {
      {"model", 'm', 0, G_OPTION_ARG_STRING, &model_spec, "model: NAME, gpt:..., llama:..., mlp:..., a JSON graph or a Hugging Face config.json[:batch=B,seq=S]", "M"},
      {"cluster", 'c', 0, G_OPTION_ARG_STRING, &cluster_spec, "cluster: PRESET[:key=value,...] or a JSON file", "C"},
      {"algo", 'a', 0, G_OPTION_ARG_STRING, &algo_text, "mcmc, cd (coordinate descent), exhaustive, random, grid (the full Megatron space), dp (the full Megatron space, then its 1F1B pipelines, every option included, again with stage cuts by dynamic programming), auto (default: the full space, the dp cuts and, where one stage can fit, a per-op driver)", "ALGO"},
      {"budget", 'b', 0, G_OPTION_ARG_STRING, &budget_text, "evaluations (\"500\", default 2000) or time (\"60s\", \"2m\": not reproducible)", "B"},
      {"seed", 0, 0, G_OPTION_ARG_INT64, &seed, "random seed (default 1)", "S"},
      {"threads", 'j', 0, G_OPTION_ARG_INT, &threads, "worker threads: independent chains/restarts (default: the machine's cores; 1 per rank under mpirun)", "T"},
      {"json", 0, 0, G_OPTION_ARG_NONE, &json, "print one JSON object (no wall-clock figures)", NULL},
      {"out", 'o', 0, G_OPTION_ARG_FILENAME, &out_path, "write the winning strategy as strategy JSON", "FILE"},
      {"db", 0, 0, G_OPTION_ARG_FILENAME, &db_path, "SQLite database (default results/stratsim.db)", "FILE"},
      {"no-store", 0, 0, G_OPTION_ARG_NONE, &no_store, "do not record the search: the database is only read (kernel times, calibration), never created or written", NULL},
      {"vars", 0, 0, G_OPTION_ARG_STRING, &vars_text, "group: one config per group of identical layers' ops (default); op: one per op", "group|op"},
      {"dims", 0, 0, G_OPTION_ARG_STRING, &dims_text, "all: every splittable dim (default); megatron: the sample dim and tp_dim only", "all|megatron"},
      {"followers", 0, 0, G_OPTION_ARG_NONE, &followers, "ops without weights take their input's layout instead of being variables (a smaller space)", NULL},
      {"mesh-axes", 0, 0, G_OPTION_ARG_INT, &mesh_axes, "most mesh axes (default 2)", "K"},
      {"microbatches", 0, 0, G_OPTION_ARG_INT, &microbatches, "largest microbatch count in the space (default 8)", "M"},
      {"beta", 0, 0, G_OPTION_ARG_DOUBLE, &beta, "MCMC inverse temperature, relative to the starting cost (default 100)", "B"},
      {"restarts", 0, 0, G_OPTION_ARG_INT, &restarts, "MCMC chains per thread's budget (default 3)", "R"},
      {"dtype", 0, 0, G_OPTION_ARG_STRING, &dtype_text, "fp32, tf32, fp16, bf16, fp8 (default: the model's)", "D"},
      {"framework", 0, 0, G_OPTION_ARG_STRING, &framework_text,
       "who launches the kernels of every candidate: megatron-lm (default), megatron-deepspeed, pytorch-eager, cuda-graphs, none (costmodel/FRAMEWORKS.md)", "F"},
      {"collectives", 0, 0, G_OPTION_ARG_STRING, &collectives, "task (default) or step: how every candidate is simulated", "task|step"},
      {"crossmesh", 0, 0, G_OPTION_ARG_STRING, &crossmesh_method, "plan every move between meshes (device-aligned ones too) with this method, in every candidate", "send_recv|local_allgather|global_allgather|broadcast"},
      {"crossmesh-order", 0, 0, G_OPTION_ARG_STRING, &crossmesh_order, "load balancer for --crossmesh (default ensemble)", "naive|greedy|dfs|randomized_greedy|ensemble"},
      {"no-profiles", 0, 0, G_OPTION_ARG_NONE, &no_profiles, "ignore measured kernel times (roofline only)", NULL},
      {"calibration", 0, 0, G_OPTION_ARG_STRING, &calibration_name, "collective costs from calibration NAME in the database", "NAME"},
      {"no-symmetry", 0, 0, G_OPTION_ARG_NONE, &no_symmetry, "simulate every GPU of every candidate (slow)", NULL},
      {"tp-overlap", 0, 0, G_OPTION_ARG_NONE, &tp_overlap, "the full Megatron space (grid, auto) also tries tp_overlap under sp (Megatron-Core's --tp-comm-overlap; many more simulations)", NULL},
      {"no-delta", 0, 0, G_OPTION_ARG_NONE, &no_delta, "simulate every candidate in full (default: delta simulation from the last one; same answers)", NULL},
      {NULL}};
  if (!cli_parse_options("search", "Searches parallelization strategies; compares the winner with "
                                   "data parallelism, Megatron's best grid point and one weird trick.",
                         entries, &argc, &argv))
    return CLI_EXIT_BAD_INPUT;
  if (!model_spec || !cluster_spec) {
    fprintf(stderr, "stratsim search: --model and --cluster are required\n");
    return CLI_EXIT_BAD_INPUT;
  }
  SrchOptions o;
  srch_options_default(&o);
  GError *error = NULL;
  if (algo_text && !srch_algo_parse(algo_text, &o.algo)) {
    fprintf(stderr, "stratsim search: --algo must be mcmc, cd, exhaustive, random, grid, dp or auto, not '%s'\n", algo_text);
    return CLI_EXIT_BAD_INPUT;
  }
  if (!budget_text) budget_text = g_strdup("2000");
  if (!srch_budget_parse(budget_text, &o.budget, &error)) return cli_fail(error, cli_status_for(error));
  if (seed < 0 || seed > G_MAXUINT32) {
    fprintf(stderr, "stratsim search: --seed must be 0..%u\n", G_MAXUINT32);
    return CLI_EXIT_BAD_INPUT;
  }
  o.seed = (guint32)seed;
  /* Default: every core (one per rank under mpirun, where ranks take the cores). An
   * evaluation budget is reproducible for a seed and a thread count: give --threads to
   * reproduce a run on another machine. */
  if (threads == G_MININT) threads = cli_mpi_size() > 1 ? 1 : (int)MIN(g_get_num_processors(), 1024);
  o.threads = threads;
  if (mesh_axes < 1 || mesh_axes > MDL_MAX_MESH_AXES) {
    fprintf(stderr, "stratsim search: --mesh-axes must be 1..%d (got %d)\n", MDL_MAX_MESH_AXES, mesh_axes);
    return CLI_EXIT_BAD_INPUT;
  }
  if (microbatches < 1) {
    fprintf(stderr, "stratsim search: --microbatches must be at least 1 (got %d)\n", microbatches);
    return CLI_EXIT_BAD_INPUT;
  }
  if (restarts != G_MININT && restarts < 1) {
    fprintf(stderr, "stratsim search: --restarts must be at least 1 (got %d)\n", restarts);
    return CLI_EXIT_BAD_INPUT;
  }
  if (beta != -DBL_MAX && !(beta > 0 && isfinite(beta))) {
    fprintf(stderr, "stratsim search: --beta must be a number above 0 (got %g)\n", beta);
    return CLI_EXIT_BAD_INPUT;
  }
  o.beta = beta == -DBL_MAX ? 0 : beta;
  o.restarts = restarts == G_MININT ? 0 : restarts;
  o.space.max_mesh_axes = mesh_axes;
  o.space.max_microbatches = microbatches;
  o.space.followers = followers;
  int choice = 0;
  if (!parse_choice("vars", vars_text, "group", "op", &choice)) return CLI_EXIT_BAD_INPUT;
  o.space.vars = choice ? SRCH_VARS_OP : SRCH_VARS_GROUP;
  choice = 0;
  if (!parse_choice("dims", dims_text, "all", "megatron", &choice)) return CLI_EXIT_BAD_INPUT;
  o.space.dims = choice ? SRCH_DIMS_MEGATRON : SRCH_DIMS_ALL;
  if (framework_text && !mdl_framework_parse(framework_text, &o.space.framework)) {
    fprintf(stderr, "stratsim search: --framework must be megatron-lm, megatron-deepspeed, "
                    "pytorch-eager, cuda-graphs or none, not '%s'\n", framework_text);
    return CLI_EXIT_BAD_INPUT;
  }
  if (dtype_text) {
    if (!dev_dtype_parse(dtype_text, &o.space.dtype)) {
      fprintf(stderr, "stratsim search: --dtype must be fp32, tf32, fp16 or bf16, not '%s'\n", dtype_text);
      return CLI_EXIT_BAD_INPUT;
    }
    o.space.dtype_set = TRUE;
  }
  gboolean step = FALSE;
  if (!cli_parse_collective_mode("search", collectives, &step)) return CLI_EXIT_BAD_INPUT;
  o.sim.no_symmetry = no_symmetry;
  o.no_delta = no_delta;
  o.tp_overlap = tp_overlap;
  o.sim.step_collectives = step;
  if (!cli_parse_crossmesh("search", crossmesh_method, crossmesh_order, &o.sim.crossmesh,
                           &o.sim.crossmesh_method, &o.sim.crossmesh_order))
    return CLI_EXIT_BAD_INPUT;
  SrchComm comm;
  cli_mpi_comm(&comm);
  o.rank = comm.rank;
  o.nranks = comm.size;
  g_autoptr(SimProgress) progress = o.rank == 0 ? sim_progress_new_stderr("search") : NULL;
  if (progress) {
    o.progress = show_progress;
    o.progress_data = progress;
  }
  if (!db_path) db_path = cli_results_path("stratsim.db"); /* cli_outputs.h */
  /* --out is checked before the search (cli_outputs.h), on rank 0 that writes it. */
  gboolean out_ok = o.rank != 0 || cli_output_file_ok("--out", out_path, &error);
  int out_status = out_ok ? CLI_EXIT_OK : cli_fail(error, cli_status_for(error));
  if (o.nranks > 1 ? cli_mpi_allreduce_max(out_ok ? 0.0 : 1.0) > 0 : !out_ok)
    return out_ok ? CLI_EXIT_BAD_INPUT : out_status; /* under mpirun every rank stops; rank 0 said why */

  int status = CLI_EXIT_OK;
  gboolean written = TRUE;
  GError *out_error = NULL;
  SesSession *session = NULL;
  const MdlGraph *graph = NULL;
  const DevCluster *cluster = NULL;
  SrchResult *r = NULL;
  char *text = NULL, *strategy_json = NULL;
  SesSpecs specs = {.model = model_spec, .cluster = cluster_spec, .db_path = db_path,
                    .read_only = no_store, .calibration = calibration_name,
                    .no_profiles = no_profiles};
  /* Rank 0 opens (and may create) the database before the others read it. */
  if (o.rank == 0) session = ses_session_new_from_specs(&specs, &error);
  comm.barrier(comm.data);
  if (o.rank != 0) session = ses_session_new_from_specs(&specs, &error);
  /* Every rank runs the search or none does: srch_run makes a collective call (o.comm). */
  o.comm = &comm;
  if (o.nranks > 1 && comm.allreduce_max(comm.data, session ? 0.0 : 1.0) > 0 && session) {
    ses_session_free(session);
    session = NULL;
    g_set_error(&error, SRCH_ERROR, SRCH_ERROR_OPTION, "search: another rank could not start (its error above)");
  }
  if (session) {
    graph = ses_session_graph(session);
    cluster = ses_session_cluster(session);
    r = srch_run(graph, cluster, ses_session_params(session), &o, &error);
    g_clear_pointer(&progress, sim_progress_free);
  }
  /* A rank that failed says why; then every rank takes part in the gather (search/srch_comm.h),
   * and rank 0 alone goes on with every rank's share merged into its result. */
  if (!r) {
    status = cli_fail(error, cli_status_for(error));
    error = NULL;
  }
  if (!srch_result_gather(r, graph, cluster, &comm, &error)) {
    if (error) status = cli_fail(error, cli_status_for(error));
    goto out;
  }
  if (o.rank != 0) goto out;
  if (r->best) strategy_json = mdl_strategy_to_json(r->best, graph);
  /* A winner that cannot be written is a failed side output: the search is still stored and
   * printed, then the failure said (exit 1). g_file_set_contents leaves no partial file. */
  if (out_path && strategy_json)
    written = g_file_set_contents(out_path, strategy_json, -1, &out_error);
  text = srch_result_to_json(r, &o, graph, cluster);
  gint64 search_id = -1;
  if (!no_store && (search_id = store(ses_session_db(session), r, &o, model_spec, cluster_spec,
                                      budget_text, text, strategy_json, &error)) < 0) {
    status = cli_fail(error, cli_status_for(error));
    goto out;
  }
  if (json) printf("%s\n", text);
  else print_text(r, &o, graph, cluster, budget_text, strategy_json && written ? out_path : NULL,
                  search_id, no_store ? NULL : db_path);
  if (!r->best) { /* stored and printed above; the reason in one line, exit 1 */
    gboolean whole = r->complete || (r->space_points && srch_result_covered_share(r) >= 1);
    if (whole)
      fprintf(stderr, "stratsim search: no strategy of the space fits in memory (%s on %d GPUs)\n",
              model_spec ? model_spec : "the model", dev_cluster_num_devices(cluster));
    else if (r->space_points)
      fprintf(stderr, "stratsim search: no strategy found that fits in memory within the budget "
                      "(%.1f%% of the space's %" G_GUINT64_FORMAT " configurations covered; raise --budget)\n",
              100 * srch_result_covered_share(r), r->space_points);
    else /* a per-op space, walked in part: no share to give */
      fprintf(stderr, "stratsim search: none of the %" G_GUINT64_FORMAT " strategies evaluated fits in "
                      "memory (the search does not cover its whole space: raise --budget)\n",
              r->evaluations);
    status = CLI_EXIT_FAILURE;
  }
  if (!written) status = cli_fail(out_error, cli_status_for(out_error));
out:
  g_free(text);
  g_free(strategy_json);
  srch_result_free(r);
  ses_session_free(session);
  return status;
}
