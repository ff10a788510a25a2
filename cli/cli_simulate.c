/* cli/simulate — `stratsim simulate --model M --cluster C --strategy S [--json] [--trace FILE]
 * [--db FILE] [--no-store]`: one iteration's prediction, printed and (unless --no-store)
 * stored in SQLite. Parse options -> session (session/ses_session.h) -> simulate -> print. */
#include "cli/cli.h"
#include "cli/cli_outputs.h"
#include "sim/sim_progress.h"

#include <cjson/cJSON.h>
#include <stdio.h>

#include "session/ses_session.h"
#include "sim/sim.h"
#include "sim/sim_crossmesh.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static void print_text(const SimRun *run, const char *strategy_spec, gint64 run_id, const char *db) {
  const SimPrediction *p = sim_run_prediction(run);
  const MdlStrategy *s = sim_run_strategy(run);
  const DevCluster *c = sim_run_cluster(run);
  double t = p->iteration_time_s;
  double peak = c->device.peak_flops[s->dtype] / 1e12;
  printf("stratsim simulate: %s on %s (%d x %d %s), strategy %s\n", sim_run_graph(run)->name, c->name,
         c->nodes, c->gpus_per_node, c->device.name, strategy_spec);
  g_autofree char *described = mdl_strategy_describe(s, sim_run_graph(run));
  printf("  strategy     %s, schedule %s", described, mdl_schedule_name(s->schedule));
  if (s->virtual_stages > 1) printf(" (vp=%d)", s->virtual_stages);
  if (s->cp > 1) printf(", context parallel cp=%d", s->cp);
  if (s->ep > 1) printf(", expert parallel ep=%d", s->ep);
  if (s->weight_delay) printf(" with weight delay");
  if (s->zero_stage > 0) printf(", ZeRO-%d", s->zero_stage);
  if (s->overlap_param_gather) printf(" with the parameter all-gather overlapped");
  if (s->recompute != MDL_RECOMPUTE_NONE) printf(", %s recomputation", mdl_recompute_name(s->recompute));
  if (s->sequence_parallel) printf(", sequence parallel");
  if (s->tp_overlap) printf(" with its communication overlapped");
  if (s->async_tp_allreduce != 0) /* set against the framework's default (model/STRATEGY.md) */
    printf(", input-gradient collectives %s the weight-gradient GEMMs",
           s->async_tp_allreduce > 0 ? "beside" : "after");
  printf(", %s, %d GPUs\n", dev_dtype_name(s->dtype), p->num_gpus);
  printf("  iteration    %.6g s  (%.6g samples/s)\n", t, p->samples_per_s);
  printf("  per GPU      %.4g TFLOP/s  (%.1f%% of the %.4g TFLOP/s %s peak)\n", p->tflops_per_gpu,
         100 * p->mfu, peak, dev_dtype_name(s->dtype));
  /* Model FLOPs (above, MFU) leave recomputation out; hardware FLOPs count it (Korthikanti
   * et al. 2022 print both). */
  double hardware = p->hardware_tflops_per_gpu;
  if (s->recompute != MDL_RECOMPUTE_NONE)
    printf("  hardware     %.4g TFLOP/s per GPU with the recomputed forwards (%.1f%% of peak); "
           "the figure above is model FLOPs, without them\n", hardware,
           peak > 0 ? 100 * hardware / peak : 0);
  else
    printf("  hardware     %.4g TFLOP/s per GPU: no recomputation, model and hardware FLOPs "
           "agree\n", hardware);
  printf("  breakdown    compute %.6g s (%.1f%%), exposed communication %.6g s (%.1f%%), "
         "host-bound %.6g s (%.1f%%), bubble %.6g s (%.1f%%)\n",
         p->compute_s, t > 0 ? 100 * p->compute_s / t : 0, p->comm_exposed_s,
         t > 0 ? 100 * p->comm_exposed_s / t : 0, p->host_bound_s,
         t > 0 ? 100 * p->host_bound_s / t : 0, p->bubble_s, t > 0 ? 100 * p->bubble_s / t : 0);
  printf("  host         %s\n", mdl_framework_name(s->framework));
  printf("  memory       peak %.3f GiB on GPU %d of %.3g GiB: %s\n", p->peak_memory_bytes / GIB,
         p->peak_memory_device, p->memory_capacity_bytes / GIB,
         p->fits_memory ? "fits" : "DOES NOT FIT");
  printf("               weights %.3f, gradients %.3f, optimizer %.3f, activations %.3f, "
         "buffers %.3f GiB\n",
         p->peak_memory.weights / GIB, p->peak_memory.gradients / GIB,
         p->peak_memory.optimizer / GIB, p->peak_memory.activations / GIB,
         p->peak_memory.buffers / GIB);
  printf("  simulated    %" G_GUINT64_FORMAT " tasks, %" G_GUINT64_FORMAT
         " events in %.3f s (%s; %s)\n",
         p->tasks, p->events, p->sim_wall_s,
         p->step_collectives ? "collectives step-expanded on links" : "one task per collective",
         p->symmetric ? "symmetry: identical replicas simulated once" : "every GPU simulated");
  if (p->steady_microbatches)
    printf("  steady       %d of %d microbatches timed, the rest proven to repeat a period of "
           "%.9g s (steady state, exact)\n",
           p->steady_microbatches, s->num_microbatches, p->steady_period_s);
  if (sim_run_profiled_kernels(run) > 0)
    printf("  kernels      %d measured kernel times of %s (interpolated between shapes), roofline "
           "for the rest\n", sim_run_profiled_kernels(run), c->device.name);
  else
    printf("  kernels      roofline (no measured kernel times of %s in the database)\n", c->device.name);
  if (sim_run_calibration(run)) printf("  collectives  calibration %s\n", sim_run_calibration(run));
  if (p->crossmesh)
    printf("  crossmesh    every move between meshes planned: %s, %s load balancing\n",
           sim_crossmesh_method_name(p->crossmesh_method), sim_crossmesh_order_name(p->crossmesh_order));
  if (db) printf("  stored       run %" G_GINT64_FORMAT " in %s\n", run_id, db);
  else printf("  stored       not stored (--no-store)\n");
}

/* A strategy that does not fit its GPUs' memory is bad input (exit 2, one line on stderr naming
 * the device and the sizes) after its prediction is printed and stored: the time it would take
 * is still worth seeing, and a script that checks the status learns that it cannot run. */
static int refuse_overflow(const SimRun *run, const char *strategy_spec) {
  const SimPrediction *p = sim_run_prediction(run);
  if (p->fits_memory) return CLI_EXIT_OK;
  const CmMemory *m = &p->peak_memory;
  fprintf(stderr, "stratsim simulate: strategy %s does not fit: GPU %d needs %.3f GiB of its %.3g "
          "GiB (weights %.3f, gradients %.3f, optimizer %.3f, activations %.3f, buffers %.3f); "
          "the prediction above is of a run that cannot start\n", strategy_spec,
          p->peak_memory_device, p->peak_memory_bytes / GIB, p->memory_capacity_bytes / GIB,
          m->weights / GIB, m->gradients / GIB, m->optimizer / GIB, m->activations / GIB,
          m->buffers / GIB);
  return CLI_EXIT_BAD_INPUT;
}

int cli_simulate(int argc, char **argv) {
  g_autofree char *model_spec = NULL, *cluster_spec = NULL, *strategy_spec = NULL;
  g_autofree char *trace = NULL, *db_path = NULL;
  gboolean json = FALSE, no_symmetry = FALSE, step = FALSE, no_profiles = FALSE, no_store = FALSE;
  g_autofree char *collectives = NULL;
  g_autofree char *calibration_name = NULL;
  g_autofree char *crossmesh_method = NULL, *crossmesh_order = NULL;
  GOptionEntry entries[] = {
      {"model", 'm', 0, G_OPTION_ARG_STRING, &model_spec, "model: NAME, gpt:..., llama:..., mlp:..., a JSON graph or a Hugging Face config.json[:batch=B,seq=S]", "M"},
      {"cluster", 'c', 0, G_OPTION_ARG_STRING, &cluster_spec, "cluster: PRESET[:key=value,...] or a JSON file", "C"},
      {"strategy", 's', 0, G_OPTION_ARG_STRING, &strategy_spec, "strategy: dp, megatron:tp=..,pp=..,dp=..,mb=.., summa:q=.., 2.5d:q=..,d=.., 3d:q=.., or a JSON file", "S"},
      {"json", 0, 0, G_OPTION_ARG_NONE, &json, "print one JSON object", NULL},
      {"trace", 't', 0, G_OPTION_ARG_FILENAME, &trace, "write a Chrome/Perfetto trace", "FILE"},
      {"db", 0, 0, G_OPTION_ARG_FILENAME, &db_path, "SQLite database (default results/stratsim.db)", "FILE"},
      {"no-store", 0, 0, G_OPTION_ARG_NONE, &no_store, "do not record the run: the database is only read (kernel times, calibration), never created or written", NULL},
      {"collectives", 0, 0, G_OPTION_ARG_STRING, &collectives, "task: one task per collective (default); step: ring steps on link resources, with contention", "task|step"},
      {"no-profiles", 0, 0, G_OPTION_ARG_NONE, &no_profiles, "ignore measured kernel times (roofline only)", NULL},
      {"calibration", 0, 0, G_OPTION_ARG_STRING, &calibration_name, "collective costs from calibration NAME (stratsim calibrate) in the database", "NAME"},
      {"no-symmetry", 0, 0, G_OPTION_ARG_NONE, &no_symmetry, "simulate every GPU (no folding of identical replicas)", NULL},
      {"crossmesh", 0, 0, G_OPTION_ARG_STRING, &crossmesh_method, "plan every move between meshes (device-aligned ones too) with this method (default: aligned moves tile by tile, others broadcast)", "send_recv|local_allgather|global_allgather|broadcast"},
      {"crossmesh-order", 0, 0, G_OPTION_ARG_STRING, &crossmesh_order, "load balancer for --crossmesh (default ensemble)", "naive|greedy|dfs|randomized_greedy|ensemble"},
      {NULL}};
  if (!cli_parse_options("simulate", "Simulates one training iteration.", entries, &argc, &argv))
    return CLI_EXIT_BAD_INPUT;
  if (!cli_parse_collective_mode("simulate", collectives, &step)) return CLI_EXIT_BAD_INPUT;
  /* Without a trace only the prediction is wanted: chain merging may time it (sim_merge.c,
   * bit for bit the full engine's answer). */
  SimOptions options = {.no_symmetry = no_symmetry, .step_collectives = step,
                        .prediction_only = trace == NULL};
  if (!cli_parse_crossmesh("simulate", crossmesh_method, crossmesh_order, &options.crossmesh,
                           &options.crossmesh_method, &options.crossmesh_order))
    return CLI_EXIT_BAD_INPUT;
  if (!model_spec || !cluster_spec) {
    fprintf(stderr, "stratsim simulate: --model and --cluster are required\n");
    return CLI_EXIT_BAD_INPUT;
  }
  if (!strategy_spec) strategy_spec = g_strdup("dp");
  if (!db_path) db_path = cli_results_path("stratsim.db"); /* cli_outputs.h */

  GError *error = NULL;
  int status = CLI_EXIT_OK;
  SimRun *run = NULL;
  GError *trace_error = NULL;
  /* Output paths are checked before the work (cli_outputs.h). */
  if (!cli_output_file_ok("--trace", trace, &error)) return cli_fail(error, cli_status_for(error));
  /* Long (step-mode, expanded) simulations say where they are on stderr (sim_progress.h);
   * stopped before the results are printed. The session borrows it for its one simulation. */
  g_autoptr(SimProgress) progress = sim_progress_new_stderr("simulate");
  options.progress = progress;
  SesSpecs specs = {.model = model_spec, .cluster = cluster_spec, .strategy = strategy_spec,
                    .db_path = db_path, .read_only = no_store, .calibration = calibration_name,
                    .no_profiles = no_profiles, .options = options};
  SesSession *session = ses_session_new_from_specs(&specs, &error);
  if (!session || !(run = ses_session_simulate(session, &error))) {
    status = cli_fail(error, cli_status_for(error));
    goto out;
  }
  /* A trace that cannot be written (a full disk) is a failed side output: the run is still
   * stored and printed, then the failure said in one line (exit 1); sim_trace_write leaves no
   * partial file. */
  if (trace) sim_progress_set(progress, "writing the trace %s", trace);
  gboolean traced = !trace || sim_trace_write(run, trace, &trace_error);
  g_clear_pointer(&progress, sim_progress_free);
  gint64 run_id = -1;
  if (!no_store && (run_id = ses_session_store_simulation(session, run, &error)) < 0) {
    status = cli_fail(error, cli_status_for(error));
    goto out;
  }
  if (json) {
    /* The prediction and the run id it was stored under (null with --no-store). */
    g_autofree char *text = sim_prediction_to_json(run, TRUE);
    cJSON *root = cJSON_Parse(text);
    if (run_id >= 0) cJSON_AddNumberToObject(root, "run_id", (double)run_id);
    else cJSON_AddNullToObject(root, "run_id");
    char *printed = cJSON_PrintUnformatted(root);
    printf("%s\n", printed);
    cJSON_free(printed);
    cJSON_Delete(root);
  } else {
    print_text(run, strategy_spec, run_id, no_store ? NULL : db_path);
    if (trace && traced)
      printf("  trace        %s (open in https://ui.perfetto.dev)%s\n", trace,
             sim_run_prediction(run)->symmetric ? "; it shows the simulated GPUs, --no-symmetry for all" : "");
  }
  if (!traced) status = cli_fail(trace_error, cli_status_for(trace_error));
  else status = refuse_overflow(run, strategy_spec);
out:
  sim_run_free(run);
  ses_session_free(session);
  return status;
}
