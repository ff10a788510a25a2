/* search — strategy search drivers and the run that ties them to baselines.
 *
 * Drivers (search/SEARCH.md has the details):
 *  - mcmc: Metropolis-Hastings over the space (FlexFlow section 6, eq. 1-2; AutoDDL 4.4):
 *    propose one variable set to another random value, accept with
 *    min(1, exp(beta (cost_old - cost_new))); restarts from data parallel, the expert
 *    strategy and random points.
 *  - cd: coordinate descent with restarts (AutoDDL section 4.4): sweep the variables, set each
 *    to its best value with the others held, until a sweep improves nothing; then restart.
 *  - exhaustive: depth-first enumeration with branch and bound on a compute lower bound
 *    (srch_exhaustive.c states and proves it); the global optimum when it completes.
 *  - random: uniform points.
 *  - grid: the full Megatron space (dp, tp, pp, microbatch size, schedule, virtual stages up to
 *    layers/pp, recomputation, sequence parallelism, ZeRO 0-3) through mdl_strategy_megatron,
 *    screened by memory and pruned by sim_compute_bound (exact: srch_grid.c), after the classic
 *    grid (vp <= 8, no memory options), which every algorithm runs in full as its baseline.
 *  - dp: the grid, then every pipelined point (pp > 1, not interleaved) again with the stage
 *    cuts a dynamic program picks (srch_pipeline.h: PipeDream/Alpa, the 1F1B estimate from the
 *    simulator's per-op compute and the boundary transfers), simulated in full; uneven cuts,
 *    and pp not dividing the layers, are allowed. The winner: the better of the two phases.
 *  - auto: exhaustive when the space has at most as many points as the budget allows, else
 *    coordinate descent; the winner is the best of that, the grid's best and the dp phase's
 *    (when no single-stage strategy fits: the classic grid, the full Megatron space and dp).
 * Cost = simulated iteration time (sim_run_new_with_options); strategies that do not fit in
 * memory (cm_memory_per_device, checked before simulating) are not simulated and never a
 * result (the drivers see a penalty that falls with the excess: srch-int.h).
 *
 * Parallelism: `threads` workers on a GThreadPool, each with its own GRand seeded from
 * (seed, chain index), its own strategy object, evaluation cache and share of the budget;
 * results merge deterministically (best cost, ties by chain index). With an evaluation budget
 * the same seed and thread count give the same result bit for bit; with a time budget they
 * cannot (how far each worker gets depends on the machine).
 *
 * Processes (mpirun ranks): with options.nranks = R > 1 each process runs its threads as
 * global workers rank * threads + t of R * threads (chains, restarts, grid points, exhaustive
 * subtrees and the evaluation budget split over all R * threads workers as over threads);
 * srch_result_serialize / srch_result_merge_ranks then combine the R results in rank order.
 * The caller moves the text between processes (cli/cli_mpi.c); nothing here talks to MPI.
 */
#ifndef STRATSIM_SRCH_SEARCH_H
#define STRATSIM_SRCH_SEARCH_H

#include <glib.h>
#include "search/srch_space.h"

#include "search/srch_comm.h"

G_BEGIN_DECLS

typedef enum {
  SRCH_ALGO_MCMC,
  SRCH_ALGO_CD,
  SRCH_ALGO_EXHAUSTIVE,
  SRCH_ALGO_RANDOM,
  SRCH_ALGO_GRID,
  SRCH_ALGO_AUTO,
  SRCH_ALGO_DP,
  SRCH_ALGO_COUNT
} SrchAlgo;

/* "mcmc", "cd", "exhaustive", "random", "grid", "auto", "dp". */
const char *srch_algo_name(SrchAlgo algo);
gboolean srch_algo_parse(const char *text, SrchAlgo *out);

/* A budget: evaluations (strategies examined: simulated, or rejected for memory before
 * simulating) or wall-clock seconds; exactly one is non-zero. */
typedef struct {
  guint64 evaluations;
  double seconds;
} SrchBudget;

/* Parses "500" (evaluations), "60s", "2m", "1h", "1.5m" (time). SRCH_ERROR_OPTION otherwise. */
gboolean srch_budget_parse(const char *text, SrchBudget *out, GError **error);

/* What the progress callback sees (from the thread that called srch_run, about four times a
 * second while workers run). */
typedef struct {
  const char *phase;        /* "megatron grid", "mcmc", ... */
  guint64 evaluations;      /* in this phase so far */
  double best_time_s;       /* best iteration time of the phase so far, INFINITY: none */
  double elapsed_s;
  double evals_per_s;
  double left_s;            /* seconds left in the phase (estimated from the rate under an
                               evaluation budget), < 0 when unknown */
} SrchProgress;

typedef void (*SrchProgressFunc)(const SrchProgress *progress, gpointer data);

#define SRCH_DEFAULT_BETA 100.0
#define SRCH_DEFAULT_RESTARTS 3

typedef struct {
  SrchAlgo algo;
  SrchBudget budget;
  guint32 seed;
  int threads;              /* workers, >= 1 */
  double beta;              /* MCMC: beta * (old - new) / reference cost; 0: SRCH_DEFAULT_BETA */
  int restarts;             /* MCMC: initializations each worker's budget is divided among; 0:
                               SRCH_DEFAULT_RESTARTS */
  SrchSpaceOptions space;
  SimOptions sim;
  gboolean no_delta;        /* simulate every candidate in full (default: delta simulation
                               from the worker's last candidate, sim/sim_delta.h; the same
                               answers, bit for bit) */
  gboolean no_baselines;    /* skip the baselines (tests that only need a driver) */
  gboolean tp_overlap;      /* the full Megatron space also tries every sp point with its
                               tensor-parallel collectives overlapped with the GEMMs (tp_overlap,
                               Megatron-Core's --tp-comm-overlap): half as many configurations
                               again on GPT-3 175B, and many more simulations, the bound crediting
                               the overlap in full (search/SEARCH.md) */
  int rank, nranks;         /* this process's share of a search spread over nranks processes
                               (mpirun): it runs global workers rank * threads .. + threads - 1
                               of nranks * threads; nranks 0 or 1: the whole search */
  const SrchComm *comm;     /* with nranks > 1, the ranks (borrowed): under the dp algorithm
                               srch_run then makes one collective call (allreduce_max) on every
                               path past the option checks (which all ranks pass or fail alike),
                               the earlier phases' best over all ranks, which dp's pruning starts
                               from as one process's does; every rank must call srch_run. NULL:
                               no call, and dp under nranks > 1 prunes by each worker's own best
                               only (the same winner, other counts) */
  SrchProgressFunc progress;
  gpointer progress_data;
} SrchOptions;

/* Defaults: auto, 2000 evaluations, seed 1, one thread, default space. */
void srch_options_default(SrchOptions *options);

typedef struct {
  guint64 evaluation;       /* 1-based index (see srch_run for how threads interleave) */
  double elapsed_s;
  double best_time_s;
} SrchCurvePoint;

typedef struct {
  char *name;               /* "data parallel", "megatron", "one weird trick" */
  char *detail;             /* the configuration, or why there is none */
  MdlStrategy *strategy;    /* owned; NULL when the baseline does not apply */
  double iteration_time_s;  /* INFINITY: absent or does not fit */
  double peak_memory_bytes;
  gboolean fits_memory;
  int grid_index;           /* megatron: its point in the grid (ties go to the lowest, in one
                               process and across MPI ranks alike); -1 otherwise */
} SrchBaseline;

typedef struct {
  SrchAlgo algo;            /* as asked */
  SrchAlgo ran;             /* what auto resolved to (the per-op driver) */
  MdlStrategy *best;        /* owned; NULL when nothing feasible was found */
  char *best_origin;        /* "mcmc chain 2", "megatron grid dp=2 tp=4 ...", ... */
  double best_time_s;       /* INFINITY when nothing fits */
  int best_phase, best_chain; /* where the winner came from (phase 0 grid, 1 dp, 2 the per-op
                                 search; its grid point or chain): exact ties across MPI ranks
                                 go to the lowest, as in one process */
  double best_memory_bytes;
  guint64 evaluations;      /* of the driver (baselines not included) */
  guint64 simulated;
  guint64 over_memory;      /* rejected by cm_memory_per_device before simulating */
  guint64 failed;           /* strategies the simulator refused (should be 0) */
  guint64 pruned;           /* exhaustive: subtrees cut by the bound or by memory; dp: points
                               whose DP cut is the grid's even cut (simulated there) or whose
                               weights fit no cut */
  guint64 baseline_evaluations;
  gboolean complete;        /* exhaustive and grid: the whole space was covered */
  guint64 space_points;     /* grid (and auto where it runs the full Megatron space): the
                               configurations of that space; 0 otherwise */
  guint64 space_covered;    /* of those, simulated, refused, over memory or pruned by the bound */
  double elapsed_s;
  /* The full Megatron space's CPU seconds (every worker's thread CPU time, summed) in its three
   * steps: screening (build and lower bound of every point), the memory rule (points reached
   * in bound order) and simulations. Measurements for benchmarks: not in the text or JSON. */
  double screen_cpu_s, memory_cpu_s, simulate_cpu_s;
  GArray *curve;            /* SrchCurvePoint, where the best improved */
  GArray *timeline;         /* SrchCurvePoint in wall-clock order since the search began, over
                               every phase that can supply the winner (auto and dp: the grid
                               too): elapsed_s and best_time_s where the winner-to-be improved;
                               evaluation is 0. Wall clock: not in the JSON (benchmarks) */
  SrchBaseline *baselines;  /* data parallel, megatron, one weird trick */
  int nbaselines;
  /* The space the per-op drivers walked. */
  int nvars, ncontexts;
  double log10_size;
  guint64 values_over_memory;
  char *space_description;  /* meshes and microbatch counts, one line */
} SrchResult;

/* Searches strategies for @graph on all devices of @cluster. @params (borrowed) prices every
 * simulation. Errors: SRCH_ERROR_OPTION (bad options), SRCH_ERROR_SPACE (nothing fits),
 * MDL_ERROR from the builders. A result whose best is NULL means no evaluated strategy fit.
 * Free with srch_result_free. */
SrchResult *srch_run(const MdlGraph *graph, const DevCluster *cluster, const CmParams *params,
                     const SrchOptions *options, GError **error);
void srch_result_free(SrchResult *result);
/* The share of result->space_points the search covered: space_covered / space_points; 0
 * without space_points. */
double srch_result_covered_share(const SrchResult *result);

/* The result as JSON: everything except wall-clock figures, so that runs with the same seed,
 * threads and evaluation budget print the same bytes. Caller g_free()s. */
char *srch_result_to_json(const SrchResult *result, const SrchOptions *options,
                          const MdlGraph *graph, const DevCluster *cluster);

/* One rank's result as compact JSON for srch_result_merge_ranks (doubles round-trip exactly).
 * Caller g_free()s. */
char *srch_result_serialize(const SrchResult *result, const MdlGraph *graph);
/* Merges the serialized results of ranks 1 .. nparts - 1 (@parts[0] is ignored: @into is rank
 * 0's own result) into @into: counts summed, complete only when every rank's is, the best the
 * lowest iteration time (ties: the lower rank), the Megatron baseline the best of the ranks'
 * grid shares, convergence curves combined by evaluation index, elapsed the longest. A NULL
 * part (a rank that failed) or bad text: SRCH_ERROR_FAILED. */
gboolean srch_result_merge_ranks(SrchResult *into, char **parts, int nparts, const MdlGraph *graph,
                                 const DevCluster *cluster, GError **error);

/* The protocol of a search spread over @comm's ranks, after every rank ran its share
 * (srch_run with options rank and nranks from @comm): each rank's @result (NULL on a rank
 * that failed) is serialized and gathered on rank 0, which merges the others into its own.
 * Collective: every rank calls it, failed ones too, so that no rank waits forever. Rank 0:
 * TRUE when its @result holds every rank's share; FALSE with SRCH_ERROR_FAILED when a rank
 * failed (its own failure already reported by the caller: then @result is NULL and FALSE is
 * returned with no @error). Other ranks: TRUE (rank 0 reports). One rank: TRUE. @graph and
 * @cluster may be NULL where @result is. */
gboolean srch_result_gather(SrchResult *result, const MdlGraph *graph, const DevCluster *cluster,
                            const SrchComm *comm, GError **error);

/* Tunes the C library's allocator for a search's pattern (a large task graph built and freed
 * per simulation): util_memory_tune (freed memory stays in the process; glibc, elsewhere
 * nothing). Affects the whole process; results are unchanged. */
void srch_keep_freed_memory(void);
/* The calling thread's CPU time in seconds (CLOCK_THREAD_CPUTIME_ID; 0 where there is none):
 * for measurements only, never for a decision. */
double srch_thread_cpu_s(void);

G_END_DECLS

#endif
