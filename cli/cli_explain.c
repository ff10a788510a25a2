/* cli/explain — `stratsim explain --model M --cluster C --strategy S [--json] [--rows N]
 * [--no-symmetry] [--no-store]`: every op's layouts, the collectives each device runs, memory per device. */
#include "cli/cli.h"
#include "cli/cli_outputs.h"

#include <stdio.h>

#include "session/ses_session.h"
#include "sim/sim.h"
#include "sim/sim_stages.h"

int cli_explain(int argc, char **argv) {
  g_autofree char *model_spec = NULL, *cluster_spec = NULL, *strategy_spec = NULL;
  gboolean json = FALSE, no_symmetry = FALSE, step = FALSE, no_profiles = FALSE, no_store = FALSE;
  g_autofree char *collectives = NULL;
  g_autofree char *calibration_name = NULL, *db_path = NULL;
  int rows = 20;
  g_autofree char *crossmesh_method = NULL, *crossmesh_order = NULL;
  GOptionEntry entries[] = {
      {"model", 'm', 0, G_OPTION_ARG_STRING, &model_spec, "model: NAME, gpt:..., llama:..., mlp:..., a JSON graph or a Hugging Face config.json[:batch=B,seq=S]", "M"},
      {"cluster", 'c', 0, G_OPTION_ARG_STRING, &cluster_spec, "cluster: PRESET[:key=value,...] or a JSON file", "C"},
      {"strategy", 's', 0, G_OPTION_ARG_STRING, &strategy_spec, "strategy: dp, megatron:..., summa:..., 2.5d:..., 3d:..., or a JSON file", "S"},
      {"json", 0, 0, G_OPTION_ARG_NONE, &json, "print one JSON object", NULL},
      {"rows", 'n', 0, G_OPTION_ARG_INT, &rows, "rows of ops and of collectives per device in text (default 20)", "N"},
      {"collectives", 0, 0, G_OPTION_ARG_STRING, &collectives, "task: one task per collective (default); step: ring steps on link resources, with contention", "task|step"},
      {"db", 0, 0, G_OPTION_ARG_FILENAME, &db_path, "SQLite database holding calibrations (default results/stratsim.db)", "FILE"},
      {"no-store", 0, 0, G_OPTION_ARG_NONE, &no_store, "accepted as in simulate and search: explain never writes the database", NULL},
      {"no-profiles", 0, 0, G_OPTION_ARG_NONE, &no_profiles, "ignore measured kernel times (roofline only)", NULL},
      {"calibration", 0, 0, G_OPTION_ARG_STRING, &calibration_name, "collective costs from calibration NAME (stratsim calibrate) in the database", "NAME"},
      {"no-symmetry", 0, 0, G_OPTION_ARG_NONE, &no_symmetry, "simulate every GPU", NULL},
      {"crossmesh", 0, 0, G_OPTION_ARG_STRING, &crossmesh_method, "plan every move between meshes (device-aligned ones too) with this method", "send_recv|local_allgather|global_allgather|broadcast"},
      {"crossmesh-order", 0, 0, G_OPTION_ARG_STRING, &crossmesh_order, "load balancer for --crossmesh (default ensemble)", "naive|greedy|dfs|randomized_greedy|ensemble"},
      {NULL}};
  if (!cli_parse_options("explain", "Explains a strategy: layouts, collectives, memory.", entries,
                         &argc, &argv))
    return CLI_EXIT_BAD_INPUT;
  if (!cli_parse_collective_mode("explain", collectives, &step)) return CLI_EXIT_BAD_INPUT;
  SimOptions options = {.no_symmetry = no_symmetry, .step_collectives = step};
  if (!cli_parse_crossmesh("explain", crossmesh_method, crossmesh_order, &options.crossmesh,
                           &options.crossmesh_method, &options.crossmesh_order))
    return CLI_EXIT_BAD_INPUT;
  if (!model_spec || !cluster_spec) {
    fprintf(stderr, "stratsim explain: --model and --cluster are required\n");
    return CLI_EXIT_BAD_INPUT;
  }
  if (rows < 1) {
    fprintf(stderr, "stratsim explain: --rows must be at least 1\n");
    return CLI_EXIT_BAD_INPUT;
  }
  if (!strategy_spec) strategy_spec = g_strdup("dp");
  (void)no_store;
  GError *error = NULL;
  int status = CLI_EXIT_OK;
  SimRun *run = NULL;
  g_autofree char *default_db = cli_results_path("stratsim.db"); /* cli_outputs.h */
  /* Read only: explain writes nothing and creates no database; measured kernel times and the
   * calibration are read as simulate reads them. */
  SesSpecs specs = {.model = model_spec, .cluster = cluster_spec, .strategy = strategy_spec,
                    .db_path = db_path ? db_path : default_db, .read_only = TRUE,
                    .calibration = calibration_name, .no_profiles = no_profiles,
                    .options = options};
  SesSession *session = ses_session_new_from_specs(&specs, &error);
  if (!session || !(run = ses_session_simulate(session, &error))) {
    status = cli_fail(error, cli_status_for(error));
    goto out;
  }
  if (json) {
    g_autofree char *text = sim_explain_json(run);
    printf("%s\n", text);
  } else {
    sim_explain_print(run, stdout, rows);
    if (mdl_strategy_num_ranks(sim_run_strategy(run)) > 1) sim_stages_print(run, stdout);
  }
out:
  sim_run_free(run);
  ses_session_free(session);
  return status;
}
