/* cli/main — subcommand dispatch and shared error reporting. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

#include "devices/dev_cluster.h"
#include "errors/err_status.h"
#include "model/mdl_graph.h"
#include "costmodel/cm_calibrate.h"
#include "results/res_db.h"
#include "sim/sim_crossmesh.h"
#include "util/util_memory.h"

int cli_fail(GError *error, int status) {
  fprintf(stderr, "stratsim: %s\n", error ? error->message : "unknown error");
  if (error) g_error_free(error);
  return status;
}

int cli_status_for(const GError *error) { return (int)err_exit_status(error); }

gboolean cli_parse_options(const char *command, const char *summary, GOptionEntry *entries,
                           int *argc, char ***argv) {
  g_autofree char *usage = g_strdup_printf("%s", "");
  GOptionContext *ctx = g_option_context_new(NULL);
  g_autofree char *prog = g_strdup_printf("stratsim %s", command);
  g_set_prgname(prog);
  g_option_context_set_summary(ctx, summary);
  g_option_context_add_main_entries(ctx, entries, NULL);
  GError *error = NULL;
  gboolean ok = g_option_context_parse(ctx, argc, argv, &error);
  g_option_context_free(ctx);
  if (!ok) {
    fprintf(stderr, "stratsim %s: %s\n", command, error->message);
    g_error_free(error);
    return FALSE;
  }
  if (*argc > 1) {
    fprintf(stderr, "stratsim %s: unexpected argument '%s'\n", command, (*argv)[1]);
    return FALSE;
  }
  return TRUE;
}

gboolean cli_parse_collective_mode(const char *command, const char *text, gboolean *step) {
  *step = FALSE;
  if (!text || strcmp(text, "task") == 0) return TRUE;
  if (strcmp(text, "step") == 0) {
    *step = TRUE;
    return TRUE;
  }
  fprintf(stderr, "stratsim %s: --collectives must be 'task' or 'step', not '%s'\n", command, text);
  return FALSE;
}

gboolean cli_parse_crossmesh(const char *command, const char *method, const char *order,
                             gboolean *crossmesh, int *crossmesh_method, int *crossmesh_order) {
  SimCrossMeshOptions o;
  sim_crossmesh_options_init(&o);
  *crossmesh = method || order;
  *crossmesh_method = (int)o.method;
  *crossmesh_order = (int)o.order;
  SimCrossMeshMethod m;
  SimCrossMeshOrder r;
  if (method && !sim_crossmesh_method_parse(method, &m)) {
    fprintf(stderr, "stratsim %s: --crossmesh must be send_recv, local_allgather, "
                    "global_allgather or broadcast, not '%s'\n", command, method);
    return FALSE;
  }
  if (order && !sim_crossmesh_order_parse(order, &r)) {
    fprintf(stderr, "stratsim %s: --crossmesh-order must be naive, greedy, dfs, "
                    "randomized_greedy or ensemble, not '%s'\n", command, order);
    return FALSE;
  }
  if (method) *crossmesh_method = (int)m;
  if (order) *crossmesh_order = (int)r;
  return TRUE;
}

static void usage(FILE *f) {
  fputs("usage: stratsim COMMAND [OPTIONS]\n"
        "\n"
        "Predicts how fast a parallelization strategy trains a model on a cluster.\n"
        "\n"
        "commands:\n"
        "  simulate  simulate one training iteration (--model, --cluster, --strategy)\n"
        "  search    search strategies (MCMC, coordinate descent, exhaustive, random, Megatron grid)\n"
        "  explain   why a strategy is slow or does not fit: layouts, collectives, memory\n"
        "  profiles  import measured kernel times that override the roofline (profiles import FILE)\n"
        "  list      list built-in models, clusters or devices (list models|clusters|devices)\n"
        "  bench     measure the task-graph builder and the event engine on a large graph\n"
        "  collective  time and bus bandwidth of one collective (--kind, --bytes, --ranks, --cluster)\n"
        "  calibrate   fit collective costs to nccl-tests output or measurements JSON\n"
        "  sweep     run every point of a scenario file into the database (resumable), table and charts\n"
        "  report    table of a swept scenario's points (--scenario NAME, --format text|csv|json)\n"
        "  plot      redraw a swept scenario's gnuplot charts from the database (--scenario NAME)\n"
        "  reshard   time single cross-mesh moves, cases x methods (a reshard file, or --src-mesh ...)\n"
        "  db        check the results database: integrity, foreign keys, rows (db check [--db FILE])\n"
        "  validate  plan a strategy per rank, run it (CPU/MPI or GPU runner), ingest, report the error\n"
        "  profile   measure the op kernels of a model+strategy with a runner and store them as profiles\n"
        "  version   print the version\n"
        "\n"
        "Run 'stratsim COMMAND --help' for a command's options.\n",
        f);
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
      strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? CLI_EXIT_BAD_INPUT : CLI_EXIT_OK;
  }
  const char *cmd = argv[1];
  util_memory_tune(); /* every command may build task graphs (util_memory.h) */
  if (strcmp(cmd, "simulate") == 0) return cli_simulate(argc - 1, argv + 1);
  if (strcmp(cmd, "search") == 0) return cli_search(argc - 1, argv + 1);
  if (strcmp(cmd, "list") == 0) return cli_list(argc - 1, argv + 1);
  if (strcmp(cmd, "bench") == 0) return cli_bench(argc - 1, argv + 1);
  if (strcmp(cmd, "collective") == 0) return cli_collective(argc - 1, argv + 1);
  if (strcmp(cmd, "calibrate") == 0) return cli_calibrate(argc - 1, argv + 1);
  if (strcmp(cmd, "explain") == 0) return cli_explain(argc - 1, argv + 1);
  if (strcmp(cmd, "profiles") == 0) return cli_profiles(argc - 1, argv + 1);
  if (strcmp(cmd, "sweep") == 0) return cli_sweep(argc - 1, argv + 1);
  if (strcmp(cmd, "report") == 0) return cli_report(argc - 1, argv + 1);
  if (strcmp(cmd, "plot") == 0) return cli_plot(argc - 1, argv + 1);
  if (strcmp(cmd, "db") == 0) return cli_db(argc - 1, argv + 1);
  if (strcmp(cmd, "reshard") == 0) return cli_reshard(argc - 1, argv + 1);
  if (strcmp(cmd, "validate") == 0) return cli_validate(argc - 1, argv + 1);
  if (strcmp(cmd, "profile") == 0) return cli_profile(argc - 1, argv + 1);
  if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
    printf("stratsim %s\n", STRATSIM_VERSION_STRING);
    return CLI_EXIT_OK;
  }
  fprintf(stderr, "stratsim: unknown command '%s' (run 'stratsim help')\n", cmd);
  return CLI_EXIT_BAD_INPUT;
}
