/* sim — private to the sim/ module: what sim_run.c and sim_delta.c share. */
#ifndef STRATSIM_SIM_INT_H
#define STRATSIM_SIM_INT_H

#include "sim/sim.h"

/* A task as the graph stores it: compact (the engine's hot loop walks an array of these). */
struct SimTask {
  SimTime duration;
  uint32_t res_begin;    /* first entry in SimTaskGraph.task_resources */
  uint16_t nres;
  uint8_t kind;          /* SimTaskKind */
  uint8_t collective;    /* CmCollective for COMM and GRAD_SYNC tasks */
  int32_t op;            /* op the task computes or feeds, -1 for the optimizer */
  int32_t tensor;        /* tensor a communication task moves, -1 otherwise */
  int32_t microbatch;    /* -1 for per-iteration tasks */
  float bytes;           /* per-device bytes of a communication task */
  uint32_t group_size;   /* devices in the collective (under symmetry more than nres) */
  uint8_t link;          /* DevLinkClass the collective runs on */
  uint8_t phase;         /* SimPhase: which pass a communication task belongs to */
  uint8_t role;          /* SimTaskRole: whole collective, or a piece of an expanded one */
};

struct SimTaskGraph {
  GArray *tasks;           /* SimTask */
  GArray *task_resources;  /* uint32_t resource ids, runs referenced by tasks */
  GArray *edges;           /* uint32_t pairs (from, to), while building */
  GArray *spans;           /* uint32_t pairs (gate, join) of step-expanded collectives */
  uint32_t *succ_offsets;  /* CSR after sim_task_graph_finish: n + 1 entries */
  uint32_t *succ;
  uint32_t *indegree;
  int num_devices;
  int num_resources;       /* SIM_STREAMS * num_devices, more with link resources
                              (sim_network.h) and host streams */
  gboolean symmetric;      /* replicas folded into representatives (see sim_build) */
  int simulated_devices;   /* devices that have tasks */
  /* The host stream (sim_build_host.c): compute task i < num_compute is launched by host task
   * host_base + i, on resource host_resource_base + its device. host_base is UINT32_MAX when
   * the strategy's framework has no host (MDL_FRAMEWORK_NONE). */
  uint32_t num_compute;
  uint32_t host_base;
  uint32_t host_resource_base;
  /* Per compute task (num_compute entries): the compute task before it in its device's program
   * (UINT32_MAX for the first), as the builder chained them; NULL where the graph was not built
   * by sim_build (delta simulation's copies, white-box graphs): sim_merge then does not apply. */
  uint32_t *chain_prev;
  /* The same as programs (with chain_prev; NULL where it is): per device d its compute tasks
   * in program order, program[program_begin[d] .. program_begin[d + 1]) (num_devices + 1
   * entries in program_begin). */
  uint32_t *program;
  uint32_t *program_begin;
  /* A graph built for chain merging only (sim_build_unfinished with @for_merge): per position
   * in program its compute task's block (program_block: kind k and op o as k * nops + o), and
   * per block its tasks' duration (block_duration) and their launch's (block_host; NULL
   * without a host stream): every microbatch and simulated device of a block is the same.
   * Its compute tasks' SimTask entries are then not written (ids only), except under ZeRO-3
   * (the builder reads them back: sim_build_sync.c). Its host stream is not materialized,
   * nor the launch queue's edges q -> h(c): per block the kernels its tasks launch
   * (block_kernels) and the queue's depth (host_queue_depth) let sim_merge run the queue
   * (sim_build_host.c's add_queue_edges, position by position), and host_queue_reach bounds
   * how many positions back a launch waits (c's - q's). host_base is then UINT32_MAX and the graph has
   * num_compute fewer tasks than the full one; its program-order edges are left out too
   * (chain_prev has them), and so are data edges that repeat them (from a compute task's
   * chain predecessor: sb_data_edge). NULL in any other graph. */
  uint32_t *program_block;
  /* A graph for merging's: per compute task (num_compute entries) its position in program
   * (the builder writes it as it chains them: sim_merge then reads it instead of inverting
   * program). NULL in any other graph. */
  uint32_t *program_pos;
  SimTime *block_duration;
  SimTime *block_host;
  int *block_kernels;
  uint32_t host_queue_depth, host_queue_reach;
};

/* One pop of the engine as the breakdown reads it (SimSchedule.log): what it would otherwise
 * fetch by id from the graph, the folds and the schedule, in pop order. */
typedef struct {
  SimTime start, duration;
  SimTime fork;        /* a folded collective: its fork's end (when it popped or would have) */
  uint32_t id;
  uint32_t res_begin;  /* its resources in the graph's task_resources */
  uint32_t res0;       /* the first of them (UINT32_MAX: none) */
  uint16_t nres;
  uint8_t kind;
  uint8_t folded;      /* a folded collective */
  uint32_t stretch;    /* a folded collective: its steps' compute stretches (those lasting more
                          than zero), SimSchedule.stretch[stretch .. stretch + nstretches) */
  uint32_t nstretches;
} SimPop;

/* The timeline the engine computes. */
struct SimSchedule {
  SimTime *start;          /* per task */
  SimTime *ready;          /* per task: when its last dependency ended (its pop time; with
                              releases, sim_engine_run_released, it pops at the later of this
                              and its release; a folded collective: its fork's end, when it
                              pops or would have) */
  uint32_t *order;         /* task ids in the order the engine started them */
  SimPop *log;             /* the same pops with what the breakdown reads (NULL: not kept;
                              sim_engine_folds.c keeps it), and withdrawn reservations
                              (SimPop.id UINT32_MAX: skip them) */
  uint32_t nlog;           /* entries in the log, withdrawn ones included */
  SimTime *stretch;        /* with the log: the folded collectives' compute stretches as
                              (from, to) pairs, as the engine timed them (SimPop.stretch) */
  guint *count;            /* with the log: per resource r, count[r + 1] the log's pops on r
                              (withdrawn ones not) plus, on a compute stream, its device's
                              stretches (sizes for sim_breakdown_sums; num_resources + 1
                              entries, count[0] = 0) */
  SimTime makespan;
  uint64_t events;         /* priority-queue pops */
  uint32_t num_tasks;
  double cpu_s;            /* the engine's own thread CPU time (the simulator measuring itself) */
};

struct SimRun {
  const MdlGraph *graph;      /* borrowed: must outlive the run */
  const MdlStrategy *strategy;
  const DevCluster *cluster;
  SimTaskGraph *tasks;        /* owned */
  SimSchedule *schedule;      /* owned */
  SimPrediction prediction;
  char *calibration;          /* name of the calibration the costs came from, or NULL; owned */
  int profiled_kernels;       /* measured kernel times available to the cost model */
};

/* sim_build_with_options, or with @for_merge the graph chain merging (sim_merge.c) reads: no
 * CSR (it reads the edge list in any order) and the host stream not materialized (see
 * SimTaskGraph.program_block); unless the launches look too slow for merging to hold (a
 * host-bound run: sb_host_bound), where the full graph is built. Which one came back: a graph
 * for merging has no CSR (succ_offsets NULL). */
SimTaskGraph *sim_build_unfinished(const MdlGraph *graph, const MdlStrategy *strategy,
                                   const DevCluster *cluster, const CmParams *params,
                                   const SimOptions *options, gboolean for_merge, GError **error);

/* Building a graph (sim_build*.c, sim_network.c, sim_crossmesh*.c, white-box tests). */
SimTaskGraph *sim_task_graph_new(int num_devices);
/* Adds a task on @nres resources (copied); returns its id. A task on none (@nres 0) is a pure
 * delay: it waits for its dependencies, lasts its duration and holds nothing (the host's
 * waits inside the optimizer step, sim_build_host.c). */
uint32_t sim_task_graph_add(SimTaskGraph *graph, const SimTask *task, const uint32_t *resources,
                            int nres);
static inline void sim_task_graph_edge(SimTaskGraph *g, uint32_t from, uint32_t to) {
  uint32_t pair[2] = {from, to};
  g_array_append_vals(g->edges, pair, 2);
}
/* Builds the successor lists (CSR) and in-degrees from the edges; drops the edge list. */
void sim_task_graph_finish(SimTaskGraph *graph);
static inline SimTask *sim_task_graph_task(const SimTaskGraph *g, uint32_t i) {
  return &g_array_index(g->tasks, SimTask, i);
}

/* A run over a finished task graph (@tasks: owned, freed on error): runs the engine unless
 * @schedule (owned) is given, then the prediction's statistics and memory. @t0 and @t1 are the
 * wall-clock times (g_get_monotonic_time) the build started and ended. */
SimRun *sim_run_from_graph(const MdlGraph *graph, const MdlStrategy *strategy,
                           const DevCluster *cluster, const CmParams *params,
                           const SimOptions *options, SimTaskGraph *tasks,
                           SimSchedule *schedule, gint64 t0, gint64 t1, GError **error);

/* Re-times @graph from the run @old of a graph that differs from it only in tasks the old run
 * popped at or after @from and in tasks of @graph that cannot become ready before @from
 * (sim_delta.c establishes both): the old pops before @from are kept (@new_of_old maps old
 * task ids to @graph's; every kept task must map), the rest simulated. The result is
 * sim_engine_run's, bit for bit. @kept: the pops kept. */
SimSchedule *sim_engine_resume(const SimTaskGraph *graph, const SimSchedule *old,
                               const uint32_t *new_of_old, SimTime from, uint32_t *kept,
                               GError **error);

/* Collectives folded into compute chains (sim_merge.c): a chain task c with folded collectives
 * x1, x2, ... (in the order of their forks: the members they wait for) runs its first compute
 * stretch (its duration) up to x1's fork; x1 then pops as an ordinary task (at the stretch's
 * end, under its own id; it starts when its resources are free too) while the chain goes on
 * beside it: x1's steps, each waiting for the end of the collective it names (the one joining
 * there: the member that waits for it) and then computing its duration, up to x2's fork;
 * then x2 pops, and so on; c's successors see c end with its last collective's last step.
 * Spans (fork to join) may overlap: a step joins a collective forked before (x1's own, or an
 * earlier one's). A folded collective has no edges and is never pushed otherwise; the engine
 * logs its fork's end (SimPop.fork). Per task (graph-sized; UINT32_MAX: none): */
typedef struct {
  uint32_t next;   /* a chain's first folded collective; a folded collective's next */
  uint32_t owner;  /* a folded collective's chain */
  uint32_t step;   /* a folded collective's first step in SimFolds.steps */
  uint32_t nsteps; /* and how many */
  uint32_t stream; /* a folded collective's resource (one stream) and duration, as its task has */
  SimTime duration; /* them (beside the rest: the engine times a chain's collectives from here) */
} SimFold;
typedef struct {
  SimTime duration; /* compute after the wait */
  uint32_t join;    /* the folded collective it waits for (UINT32_MAX: none) */
} SimFoldStep;
typedef struct {
  const SimFold *task; /* side by side: one cache miss per pop */
  const SimFoldStep *steps;
} SimFolds;
/* Where the chain is after a folded collective's steps (@f), from @t (its fork's end): @end_of
 * gives a joined collective's end; @stretch (or NULL) gets each step's compute stretch (the
 * engine times chains with it, the breakdown lists their busy intervals). */
typedef SimTime (*SimFoldEnd)(void *ctx, uint32_t collective);
typedef void (*SimFoldStretch)(void *ctx, SimTime from, SimTime to);
static inline SimTime sim_fold_steps(const SimFolds *folds, const SimFold *f, SimTime t,
                                     SimFoldEnd end_of, SimFoldStretch stretch, void *ctx) {
  for (uint32_t k = f->step; k < f->step + f->nsteps; k++) {
    const SimFoldStep *st = &folds->steps[k];
    if (st->join != UINT32_MAX) t = MAX(t, end_of(ctx, st->join));
    if (stretch && st->duration) stretch(ctx, t, t + st->duration);
    t += st->duration;
  }
  return t;
}

/* The engine with a release time per task (@release: graph-sized, or NULL for none): a task
 * becomes ready no earlier than its release (SimSchedule.ready keeps its dependencies' end);
 * with @folds (or NULL), chains run their folded collectives (SimFolds; sim_engine_folds.c
 * times a chain's collectives but its last when the chain pops, so SimSchedule.order lists
 * them right after it: per resource not always in start order). sim_engine_run is this with
 * neither. */
SimSchedule *sim_engine_run_released(const SimTaskGraph *graph, const SimTime *release,
                                     const SimFolds *folds, GError **error);

/* The breakdown's sums over a finished schedule (sim_run.c; with @folds, or NULL, those the
 * engine ran: a chain's compute stretches, see SimFolds): per device the compute stream's
 * busy time, the communication not under compute and the host waits not under communication
 * (@host_iv/@host_off: sim_host_wait_intervals' layout), and the communication's own measure
 * (@comm), communication being the union of its communication streams' busy intervals;
 * summed over the @used devices that have tasks on their streams. */
typedef struct {
  SimTime compute, exposed, host, comm;
  int used;
  double engine_cpu_s, breakdown_cpu_s; /* the schedule's engine's and the sums' own thread CPU
                                           time (SimPrediction's) */
} SimBreakdownSums;

void sim_breakdown_sums(const SimTaskGraph *graph, const SimSchedule *schedule,
                        const SimTime *host_iv, const guint *host_off, const SimFolds *folds,
                        SimBreakdownSums *out);
/* The same, and (@window: or NULL) the sums of every interval clipped to [@from, @to): each
 * figure is a measure over time, so the window's add to the rest's. */
void sim_breakdown_sums_window(const SimTaskGraph *graph, const SimSchedule *schedule,
                               const SimTime *host_iv, const guint *host_off,
                               const SimFolds *folds, SimTime from, SimTime to,
                               SimBreakdownSums *out, SimBreakdownSums *window);

/* Devices whose host launches chain merging proved early without walking them
 * (sim_merge_host.c early_device), counted over the process's predictions: for tests. */
guint sim_merge_host_bounded_devices(void);
/* The host pass's bound on one device's launches (sim_merge_host.c, where the arguments are
 * described); exposed for tests, which check that the chunked bound implies @by_position's. */
gboolean sim_merge_launches_early(const uint32_t *block, const SimTime *host, const int *kernels,
                                  guint64 depth, const SimTime *cum, uint32_t first, uint32_t end,
                                  SimTime start, gboolean by_position);
/* The same bound over the program [@first, @to) ++ ([@from, @to) repeated @copies more times) ++
 * [@to, @end) (@first <= @from <= @to <= @end): the steady-state route's longer program, whose
 * blocks repeat those of one period (sim_merge_period.c), walked without being written out. */
gboolean sim_merge_launches_repeated(const uint32_t *block, const SimTime *host,
                                     const int *kernels, guint64 depth, const SimTime *cum,
                                     uint32_t first, uint32_t from, uint32_t to, uint32_t end,
                                     guint copies, SimTime start, gboolean by_position);
/* Chain merging (sim_merge.c): the makespan and breakdown sums of @graph's schedule, computed
 * on a reduced graph (compute chains merged, the host stream timed outside the engine), bit
 * for bit those of sim_engine_run + sim_breakdown_sums on @graph; @reduced_tasks gets the
 * reduced graph's size. FALSE where the reduction does not apply or its check fails (the
 * caller then runs the full engine, which also reports a dependency cycle). */
gboolean sim_merge_predict(const SimTaskGraph *graph, SimTime *makespan, SimBreakdownSums *out,
                           uint32_t *reduced_tasks);

/* The steady-state route (sim/sim_merge_period.c): a graph of @built of @strategy's
 * microbatches (SimOptions.build_microbatches) timed by merging, and the proof that the rest
 * repeat one period of it. */
typedef struct {
  const MdlStrategy *strategy; /* in: the strategy (its num_microbatches: N) */
  int built;                   /* in: k, the microbatches the graph holds */
  gboolean proven;             /* out: */
  int period, periods;         /* p microbatches a period, i = (N - k) / p inserted */
  SimTime cut_a, cut_b;        /* the cuts one period apart */
  SimTime makespan;            /* N's */
  SimBreakdownSums window;     /* the breakdown's sums over [cut_a, cut_b) */
  uint32_t reduced_segment;    /* reduced tasks popping between the cuts */
  uint32_t tried;              /* cut pairs checked */
} SimSteady;

/* sim_merge_predict on a graph of @steady->built microbatches, and where the steady state is
 * proven (@steady->proven) @makespan, @out and @reduced_tasks are the N-microbatch graph's;
 * else they are the graph's own (the caller builds the whole graph). */
gboolean sim_merge_predict_steady(const SimTaskGraph *graph, SimSteady *steady, SimTime *makespan,
                                  SimBreakdownSums *out, uint32_t *reduced_tasks);

/* Per device (CSR: @offsets_out gets num_devices + 1 entries, caller frees), the intervals in
 * which its compute stream was idle because the host had not yet launched its next compute
 * task: from the stream's previous task's end to min(the launch's end, the task's start), as
 * (start, end) pairs of picoseconds, sorted and disjoint per device. Empty without a host
 * stream. Caller frees the array (sim_host.c). */
SimTime *sim_host_wait_intervals(const SimTaskGraph *graph, const SimSchedule *schedule,
                                 guint **offsets_out);
/* Per compute task of @graph (num_compute entries), how long its stream sat idle right before
 * it waiting for its launch (the intervals of sim_host_wait_intervals, by the task they end
 * at; communication running meanwhile not subtracted). Zeros without a host stream. Caller
 * frees (sim_host.c). */
SimTime *sim_host_task_waits(const SimTaskGraph *graph, const SimSchedule *schedule);
/* The host wait inside a device's optimizer step before task @id, popped on that device's
 * compute stream after the stream's earlier tasks (in the engine's order) ended by @prev_end:
 * the interval [*@from, *@to) in which the stream sat idle while the host, back from a
 * synchronization (sb_add_optimizer_step), had not yet launched @id. FALSE where @id is not
 * such a phase or the interval is empty (sim_host.c). The breakdown adds these after each
 * device's compute-launch waits (they end before its last compute task does). */
gboolean sim_host_step_wait(const SimTaskGraph *graph, const SimSchedule *schedule, uint32_t id,
                            SimTime prev_end, SimTime *from, SimTime *to);

/* `explain`'s components (sim_explain_components.c): the breakdown with compute per layer and
 * the communication hidden under compute, as a JSON object (caller owns) and as text. */
struct cJSON;
struct cJSON *sim_components_json(const SimRun *run);
void sim_components_print(const SimRun *run, FILE *out, int max_rows);

#endif
