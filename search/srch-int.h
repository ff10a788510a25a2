/* Private to search/srch_*.c: workers, the evaluator they share, the drivers' entry points.
 *
 * A worker is one thread's share of a search: its budget, chain indices, strategy object,
 * evaluation cache and its best. Drivers only talk to the evaluator (srch_eval.c), which
 * counts evaluations against the budget, keeps the worker's best and convergence curve, and
 * publishes progress. Nothing a worker computes depends on another worker, so results are
 * reproducible for a given thread count and evaluation budget. */
#ifndef STRATSIM_SRCH_INT_H
#define STRATSIM_SRCH_INT_H

#include "search/srch_search.h"
#include "sim/sim_delta.h"

/* Shared by all workers of a phase for progress display only: nothing read from here
 * changes a result. */
typedef struct {
  gint evaluations;          /* atomic */
  GMutex lock;
  double best_time_s;        /* under lock */
} SrchShared;

/* The cost of a strategy that does not fit in memory: far above any iteration time and
 * growing with the excess (peak / capacity), so that MCMC and coordinate descent can walk out
 * of the infeasible region (FlexFlow treats memory as such a soft penalty); such a strategy is
 * never a result. A strategy the simulator refuses costs +infinity. */
#define SRCH_OVER_MEMORY_COST_S 1e9
static inline gboolean srch_feasible(double cost) { return cost < SRCH_OVER_MEMORY_COST_S; }

typedef struct SrchWorker SrchWorker;
typedef void (*SrchDriverFunc)(SrchWorker *worker);

struct SrchWorker {
  /* Inputs (borrowed). */
  const SrchSpace *space;    /* NULL for the grid */
  const MdlGraph *graph;
  const DevCluster *cluster;
  const CmParams *params;
  const SrchOptions *options;
  const GArray *grid;        /* MdlMegatronConfig, for the grid and dp drivers */
  SimTime *bounds;           /* grid drivers: per grid index its lower bound, SRCH_UNSCREENED or
                                SRCH_REFUSED; written by srch_grid_screen_worker (each worker
                                its own indices), read by srch_grid_worker; NULL: none */
  SrchShared *shared;
  int index, nworkers;
  guint64 budget_evaluations; /* 0: none */
  gint64 deadline_us;        /* monotonic; 0: none */
  gint64 start_us;
  SrchDriverFunc driver;
  /* State. */
  MdlStrategy *strategy;     /* the worker's strategy object, refilled per point */
  struct SimDelta *delta;    /* the worker's delta simulator (NULL: options->no_delta) */
  GHashTable *cache;         /* point -> cost (double *); NULL: no cache (exhaustive, grid) */
  guint64 steps;             /* driver iterations, evaluated or cached: a guard against
                                spinning in a space the cache already covers */
  /* Results. */
  guint64 evaluations, simulated, over_memory, failed, pruned;
  double best_time_s;
  double prune_s;            /* dp driver: a time some earlier phase reached, for pruning only
                                (INFINITY: none) */
  int *best_point;           /* point drivers */
  int best_grid;             /* grid driver: index into grid, -1 none */
  int best_chain;
  MdlStrategy *best_strategy; /* dp driver: the winner as built (owned) */
  char *best_detail;         /* dp driver: its configuration and cut (owned) */
  GArray *curve;             /* SrchCurvePoint, local evaluation indices */
  double screen_cpu_s, memory_cpu_s, simulate_cpu_s; /* grid driver: thread CPU time per step */
  gboolean complete;
  GError *error;
};

/* A cost cache for srch_worker_eval_point (keys: points with their length in front). */
GHashTable *srch_cache_new(void);
/* Whether the worker may evaluate once more (budget and deadline). */
gboolean srch_worker_has_budget(SrchWorker *w);
/* Cost of @point: iteration seconds, the over-memory penalty, or INFINITY when the simulator
 * refuses it; counts an evaluation unless the cache knew it. @chain labels the best. */
double srch_worker_eval_point(SrchWorker *w, const int *point, int chain);
/* Cost of @strategy, which the caller owns, as above (never cached); @label is the grid index
 * or -1. */
double srch_worker_eval_strategy(SrchWorker *w, MdlStrategy *strategy, int grid_index);
/* The same for a strategy the caller has just found within the device's memory with
 * srch_peak_memory (the rule evaluate applies): that check is not repeated. */
double srch_worker_eval_fitting(SrchWorker *w, MdlStrategy *strategy, int grid_index);
/* The highest cm_memory_per_device total over the devices: the simulator's fits_memory rule
 * compares it with the device's memory. */
double srch_peak_memory(const MdlGraph *graph, const MdlStrategy *s, const DevCluster *cluster);
/* srch_peak_memory of @s under each ZeRO stage z = 0..3 (@peak[z]), in one pass
 * (cm_memory_per_device_zero_stages: the same figures as four calls). */
void srch_peak_memory_zero_stages(const MdlGraph *graph, const MdlStrategy *s, const DevCluster *cluster,
                                  double peak[4]);
/* Number of distinct points the cache holds. */
guint64 srch_worker_cached(const SrchWorker *w);
/* Whether a cached driver should stop: its cache holds the whole space, or it has taken
 * many more steps than it has evaluated (every proposal already known). */
gboolean srch_worker_spinning(const SrchWorker *w);
/* A GRand for chain @chain, seeded from (seed, chain). */
GRand *srch_chain_rand(const SrchWorker *w, int chain);

/* Drivers. */
void srch_mcmc_worker(SrchWorker *w);
void srch_cd_worker(SrchWorker *w);
void srch_random_worker(SrchWorker *w);
void srch_exhaustive_worker(SrchWorker *w);
void srch_grid_worker(SrchWorker *w);
/* The grid driver's screening alone: the lower bound of each of the worker's points into
 * w->bounds (SRCH_REFUSED where the builder refuses it), until the deadline. */
void srch_grid_screen_worker(SrchWorker *w);
/* The order a screening under a time budget visits @nruns runs of points (one shape each) in:
 * a permutation of 0 .. @nruns - 1 whose prefixes spread over the whole range (grid order and
 * bit-reversed indices in turn); caller g_free()s. */
guint *srch_grid_screen_order(guint nruns);
#define SRCH_UNSCREENED ((SimTime)-1)
#define SRCH_REFUSED ((SimTime)-2)
/* Per point of @points, its bound in @full_bounds where @full (the full space @full_bounds was
 * screened for) holds the same configuration, else SRCH_UNSCREENED; caller g_free()s. */
SimTime *srch_grid_bounds_from(const GArray *points, const GArray *full, const SimTime *full_bounds);
void srch_dp_worker(SrchWorker *w);

/* The Megatron grid for @graph on all devices of @cluster: every (tp, pp, dp) with
 * tp * pp * dp = devices, microbatch size dividing batch / dp, schedules (1F1B; with pp > 1
 * also GPipe, eager-1F1B and interleaved with vp >= 2), in a fixed order, kept where
 * mdl_strategy_megatron accepts it. */
GArray *srch_grid_points(const MdlGraph *graph, const DevCluster *cluster, DevDtype dtype);
/* Sets every configuration of @points (MdlMegatronConfig) to run under @framework. */
void srch_grid_set_framework(GArray *points, MdlFramework framework);
/* The full Megatron space: the grid with vp up to layers / pp, and each point under every
 * recomputation (none, selective, full), sequence parallelism off and (tp > 1, where the model
 * has such ops) on, and ZeRO stages 0..3. */
GArray *srch_grid_full_points(const MdlGraph *graph, const DevCluster *cluster, DevDtype dtype);
/* The same, with @tp_overlap every sp point also with tp_overlap (SrchOptions.tp_overlap), the
 * builder's checks on @threads threads (the same points in the same order for any count). */
GArray *srch_grid_full_points_with(const MdlGraph *graph, const DevCluster *cluster, DevDtype dtype,
                                   gboolean tp_overlap, int threads);
/* The dp driver's groups: the full space's configurations (srch_grid_full_points_with: cp,
 * ep, recomputation, sp, tp_overlap with @tp_overlap, ZeRO, overlap_param_gather, FP8) with
 * 2 <= pp <= @units (the pipeline's units; pp need not divide the layers) and 1F1B, kept where
 * the Megatron builder accepts the one-stage configuration (pp = 1); each group stands for
 * SRCH_DP_SCHEDULES points (1F1B, GPipe, eager-1F1B). Variants that differ only in ZeRO and
 * overlap_param_gather are adjacent. */
#define SRCH_DP_SCHEDULES 3
GArray *srch_dp_groups(const MdlGraph *graph, const DevCluster *cluster, DevDtype dtype,
                       gboolean tp_overlap, int units, int threads);
/* "dp=2 tp=4 pp=1 mb=2 1f1b" (vp when > 1, then recompute=, sp, zero= when set); caller
 * g_free()s. */
char *srch_grid_describe(const MdlMegatronConfig *config);

/* srch_baseline.c. One simulation of `s` for reporting: its time (INFINITY when it cannot be
 * simulated), peak memory per device and whether that fits. */
void srch_predict(const MdlGraph *graph, const MdlStrategy *s, const DevCluster *cluster,
                  const CmParams *params, const SrchOptions *o, double *time, double *peak,
                  gboolean *fits);
/* Fills baseline `b` named `name` with `detail` (taken) and strategy `s` (taken, nullable:
 * then the baseline is absent with `detail` saying why), simulated once by srch_predict. */
void srch_set_baseline(SrchBaseline *b, const char *name, char *detail, MdlStrategy *s,
                       const MdlGraph *graph, const DevCluster *cluster, const CmParams *params,
                       const SrchOptions *o);
/* Data parallelism over every device with the fewest microbatches that fit (the one-microbatch
 * strategy when none fits), run under @framework; NULL with *detail set when the batch does not
 * split. */
MdlStrategy *srch_baseline_data_parallel(const MdlGraph *graph, const DevCluster *cluster,
                                         DevDtype dtype, MdlFramework framework, char **detail);
/* Krizhevsky 2014's "one weird trick" under @framework (NULL for models without convolutions);
 * *detail always set (newly allocated). */
MdlStrategy *srch_baseline_weird_trick(const MdlGraph *graph, const DevCluster *cluster,
                                       DevDtype dtype, MdlFramework framework, char **detail);

#endif
