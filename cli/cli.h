/* cli — the `stratsim` command: parse arguments, call the library, print. No model logic.
 * Exit status: 0 success, 2 bad input (one line on stderr naming the problem), 1 failure. */
#ifndef STRATSIM_CLI_H
#define STRATSIM_CLI_H

#include <glib.h>

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAILURE 1
#define CLI_EXIT_BAD_INPUT 2

int cli_simulate(int argc, char **argv);
int cli_list(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_explain(int argc, char **argv);
int cli_profiles(int argc, char **argv);
int cli_collective(int argc, char **argv);
int cli_calibrate(int argc, char **argv);
int cli_sweep(int argc, char **argv);
int cli_report(int argc, char **argv);
int cli_plot(int argc, char **argv);
int cli_search(int argc, char **argv);
int cli_db(int argc, char **argv);
/* `stratsim reshard`: single cross-mesh moves (cli_reshard.c). */
int cli_reshard(int argc, char **argv);
/* Runs reshard file @path: prints its table and (@chart) draws its chart into @out_dir (NULL:
 * results/NAME). Returns the exit status. */
int cli_reshard_file(const char *path, const char *out_dir, gboolean chart);
/* `stratsim validate plan|run|ingest|report|host-cluster` and `stratsim profile` (cli_validate.c). */
int cli_validate(int argc, char **argv);
int cli_profile(int argc, char **argv);
/* `stratsim bench --suite delta` (cli_bench_delta.c). */
int cli_bench_delta(void);
/* `stratsim bench --suite store`: what storing a 16-GPU simulate costs beyond simulating it
 * (cli_bench_store.c); @repeat runs each way. */
int cli_bench_store(int repeat);
/* `stratsim bench --suite table4`: FlexFlow Table 4, search time full vs delta. */
int cli_bench_table4(void);
/* `stratsim bench --suite step`: step-expanded collectives at the README's scale: tasks, wall
 * time, peak memory, folded against expanded (cli_bench_step.c). */
int cli_bench_step(void);
/* `stratsim bench --suite predict`: the GPT-3 175B iteration on 1024 A100s and neighbouring
 * strategies as prediction-only runs (issue 16, item 2): build and simulate milliseconds over
 * @repeat runs, tasks before and after chain merging, peak memory (cli_bench_predict.c). With
 * @strategy (and optionally @model, @cluster: default the 175B case) that one point only. */
int cli_bench_predict(int repeat, const char *model, const char *cluster, const char *strategy,
                      gboolean every);
/* The process's peak resident memory in bytes (Linux /proc/self/status VmHWM), after
 * resetting it with /proc/self/clear_refs (proc(5): writing 5 resets the peak RSS) when
 * @reset (returns 0 then); -1 where /proc does not tell (cli_bench_step.c). */
double cli_peak_rss(gboolean reset);
/* `bench --suite megatron`: per-component errors on Korthikanti et al. Table 5 (@data_dir:
 * the validation data folder, NULL: cli_validation_dir()). */
int cli_bench_megatron(const char *data_dir);
/* `stratsim bench --suite bridge`: Megatron-Bridge's published Llama throughputs against the
 * simulator's (cli_bench_bridge.c). */
int cli_bench_bridge(const char *data_dir);
/* `stratsim bench --suite gemm [--data DIR]`: the GEMM model against GEMMs measured on a GPU
 * (cli_bench_gemm.c). */
int cli_bench_gemm(const char *data_dir);
/* `stratsim bench --suite host [--data DIR]`: the host stream per layer against a layer stack
 * PyTorch ran on a GPU (cli_bench_host.c). */
int cli_bench_host(const char *data_dir);

/* Prints "stratsim: <message>" on stderr and returns @status; frees @error. */
int cli_fail(GError *error, int status);
/* Exit status for a library error: errors/err_status.h's one classification (bad input -> 2,
 * failure -> 1). */
int cli_status_for(const GError *error);
/* Parses `--collectives task|step` (NULL: task) into @step; on error prints one line. */
gboolean cli_parse_collective_mode(const char *command, const char *text, gboolean *step);
/* Parses `--crossmesh METHOD` and `--crossmesh-order ORDER` (sim_crossmesh.h's names; both NULL:
 * the default planning, sim.h's SimOptions.crossmesh FALSE; one of them given: the other takes
 * the planner's default, broadcast or ensemble) into the three SimOptions fields; on error prints one line. */
gboolean cli_parse_crossmesh(const char *command, const char *method, const char *order,
                             gboolean *crossmesh, int *crossmesh_method, int *crossmesh_order);
/* Parses @argv with @entries; on error prints one line and returns FALSE. */
gboolean cli_parse_options(const char *command, const char *summary, GOptionEntry *entries,
                           int *argc, char ***argv);

#endif
