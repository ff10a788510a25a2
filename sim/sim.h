/* sim — the task graph, the event engine, and one simulated training iteration.
 *
 * Time is simulated in integer picoseconds (SimTime): sums are exact and runs reproduce bit for
 * bit. Resources: every device has SIM_STREAMS streams, resources SIM_STREAMS * d + SimStream:
 * its compute stream and three communication streams, one per class of communicator, as
 * Megatron-Core runs them (SimStream below). A task occupies one or more resources (a
 * collective occupies its class's stream of every member) for its duration. Streams of one
 * device share its links: in step mode (sim_network.h) transfers of every stream queue on the
 * link resources; in task mode a collective is one task timed alone, so collectives of two
 * streams that run at once on the same link each get the link's full bandwidth (optimistic;
 * sim/STREAMS.md quantifies it). The engine is FlexFlow's Algorithm 1: a priority queue of
 * ready tasks ordered by (ready time, task id); a popped task starts at max(ready time, the time
 * each of its resources frees up) — FIFO per resource by ready time, ties by task id.
 * Program order on a compute stream (the pipeline schedule, ops in topological order) is
 * expressed as edges, like kernels launched in order on one CUDA stream.
 * The host: every compute task is launched by a host task on its device's host stream (a
 * resource after all others), which takes the framework's time for its kernels
 * (costmodel/cm_framework.h); the compute task cannot start before its launch ends, and the
 * host runs ahead of the GPU by at most the launch queue (sim_build_host.c).
 *
 * SimRun, SimTaskGraph and SimSchedule are opaque: their layout is sim/'s own (sim-int.h) and
 * may change; everything outside sim/ (trace and timeline writers, the validate plan builder,
 * results, bench, tests) reads them through the accessors here: SimTaskInfo per task,
 * sim_run_* for the prediction and the inputs a run borrowed, SimTimeline for the tasks in the
 * engine's order with their start and end.
 */
#ifndef STRATSIM_SIM_H
#define STRATSIM_SIM_H

#include <glib.h>
#include <stdint.h>
#include <stdio.h>
#include "costmodel/costmodel.h"
#include "devices/dev_cluster.h"
#include "model/mdl_graph.h"
#include "model/mdl_strategy.h"

G_BEGIN_DECLS

/* Errors of the simulator itself. Bad input (an invalid strategy, a graph over the limits) is
 * reported in the model's domain (MDL_ERROR) where it is found; SIM_ERROR is for internal
 * invariants that a correct build never breaks, so a failure (exit status 1), not bad input. */
#define SIM_ERROR (sim_error_quark())
GQuark sim_error_quark(void);
typedef enum {
  SIM_ERROR_CYCLE, /* a built task graph has a dependency cycle (tasks never became ready) */
} SimError;

typedef uint64_t SimTime;               /* picoseconds */
#define SIM_PS_PER_SECOND 1e12

/* Seconds to picoseconds, rounded to nearest. */
SimTime sim_time_from_seconds(double seconds);
static inline double sim_time_seconds(SimTime t) { return (double)t / SIM_PS_PER_SECOND; }

typedef enum {
  SIM_TASK_FORWARD,
  SIM_TASK_BACKWARD,       /* the whole backward, or under weight delay its dX part (B) */
  SIM_TASK_COMM,          /* resharding collective or transfer (forward or backward) */
  SIM_TASK_GRAD_SYNC,     /* data-parallel sync of replicated weights: gradient all-reduce, or
                             under ZeRO the gradient reduce-scatter and the all-gather of the
                             updated parameters after the optimizer step */
  SIM_TASK_OPTIMIZER,
  SIM_TASK_BACKWARD_WEIGHT, /* weight-gradient part (W) of a backward split by weight delay */
  SIM_TASK_RECOMPUTE,     /* a forward re-run before the backward (activation recomputation) */
  SIM_TASK_HOST,          /* the host launching one compute task's kernels (sim_build_host.c) */
  SIM_TASK_KIND_COUNT
} SimTaskKind;

const char *sim_task_kind_name(SimTaskKind kind);

typedef enum {
  SIM_ROLE_WHOLE,     /* a compute task, or a collective timed as one task */
  SIM_ROLE_GATE,      /* step-expanded collective: zero-duration start on the members' streams */
  SIM_ROLE_TRANSFER,  /* one transfer on link resources (sim_network.h) */
  SIM_ROLE_JOIN,      /* zero-duration completion */
} SimTaskRole;

typedef enum { SIM_PHASE_FORWARD, SIM_PHASE_BACKWARD, SIM_PHASE_ITERATION } SimPhase;

/* The task graph of one iteration and the engine's timeline of it are opaque (their layout is
 * private to sim/, sim-int.h): read them through the accessors below. */
typedef struct SimTask SimTask;
typedef struct SimTaskGraph SimTaskGraph;
typedef struct SimSchedule SimSchedule;

/* One task, as the read API yields it (a copy; @resources borrowed from the graph, valid while
 * it lives). */
typedef struct {
  uint32_t id;
  SimTaskKind kind;
  SimTaskRole role;        /* whole collective, or a piece of a step-expanded one */
  SimPhase phase;          /* which pass a communication task belongs to */
  CmCollective collective; /* for COMM and GRAD_SYNC tasks */
  DevLinkClass link;       /* the link class the collective runs on */
  int32_t op;              /* op the task computes or feeds, -1 for the optimizer */
  int32_t tensor;          /* tensor a communication task moves, -1 otherwise */
  int32_t microbatch;      /* -1 for per-iteration tasks */
  float bytes;             /* per-device bytes of a communication task */
  uint32_t group_size;     /* devices in the collective (under symmetry more than nres) */
  SimTime duration;
  const uint32_t *resources; /* the resources it occupies: below sim_stream_resources(devices)
                                device streams (sim_resource_stream), the rest link resources
                                and (sim_task_graph_host_device) host streams */
  int nres;
  int device;              /* the device of its first stream resource (a collective's first
                              member; a host launch's device), -1 for a task on link resources
                              only (a transfer) or on none (the host's waits inside the
                              optimizer step) */
  SimTime start, end;      /* read from a run (sim_run_task, SimTimeline): when it ran;
                              from a bare graph: 0 */
} SimTaskInfo;

/* Tasks in @graph (ids 0 .. size-1). */
uint32_t sim_task_graph_size(const SimTaskGraph *graph);
/* Task @id of @graph into @out (start and end 0). */
void sim_task_graph_get(const SimTaskGraph *graph, uint32_t id, SimTaskInfo *out);
/* Successors of task @id in a finished graph: @count of them; borrowed. */
const uint32_t *sim_task_graph_successors(const SimTaskGraph *graph, uint32_t id, uint32_t *count);
/* Dependency edges of a finished graph. */
uint32_t sim_task_graph_num_edges(const SimTaskGraph *graph);
/* Devices of the cluster the graph was built for; resources (streams and link resources). */
int sim_task_graph_num_devices(const SimTaskGraph *graph);
int sim_task_graph_num_resources(const SimTaskGraph *graph);
/* Whether symmetry folded replicas into representatives; devices that have tasks. */
gboolean sim_task_graph_symmetric(const SimTaskGraph *graph);
int sim_task_graph_simulated_devices(const SimTaskGraph *graph);
/* Step-expanded collectives (SimOptions.step_collectives): @k of sim_task_graph_num_spans,
 * its gate task (zero-duration start on the members' communication streams) and join task
 * (completion); the collective occupies its members from the gate's start to the join's. */
uint32_t sim_task_graph_num_spans(const SimTaskGraph *graph);
void sim_task_graph_span(const SimTaskGraph *graph, uint32_t k, uint32_t *gate, uint32_t *join);
void sim_task_graph_free(SimTaskGraph *graph);
/* Whether resource @resource is a host stream (SIM_TASK_HOST tasks run there); its device into
 * @device. */
gboolean sim_task_graph_host_device(const SimTaskGraph *graph, uint32_t resource, int *device);
/* Compute time per op: for each of @graph's @nops ops, @sum[op] gets the durations of its
 * forward, backward, weight-gradient and recompute tasks and @forwards[op] its forward tasks
 * (one per microbatch and simulated device), both zeroed first. */
void sim_task_graph_op_compute(const SimTaskGraph *graph, int nops, guint64 *sum,
                               guint64 *forwards);

/* A device's streams (sim/STREAMS.md). Megatron-Core gives each process group its own NCCL
 * communicator, and NCCL runs each communicator's kernels on the stream they are issued to:
 * tensor-, sequence-, context- and expert-parallel collectives on the one that runs with the
 * layer's compute; pipeline send/recv as batched isend/irecv on their own
 * (pipeline_parallel/p2p_communication.py); the overlapped data-parallel gradient
 * reduce-scatter or all-reduce and the distributed optimizer's parameter all-gathers as async
 * ops of the data-parallel group (distributed/param_and_grad_buffer.py). One stream per class:
 * a collective of one class never queues behind one of another. */
typedef enum {
  SIM_STREAM_COMPUTE,    /* kernels (forward, backward, recompute, optimizer) */
  SIM_STREAM_COMM,       /* collectives resharding on one mesh: TP/SP/CP/EP */
  SIM_STREAM_P2P,        /* moves between meshes: pipeline send/recv, cross-mesh resharding */
  SIM_STREAM_DP,         /* gradient sync, ZeRO parameter all-gathers (SIM_TASK_GRAD_SYNC and
                            ZeRO-3's per-unit gathers) */
  SIM_STREAMS            /* streams per device */
} SimStream;
/* Short name of a stream for traces and tables: "compute", "comm", "p2p", "dp". */
const char *sim_stream_name(SimStream stream);
/* Stream resources come first: [0, sim_stream_resources(devices)). */
static inline uint32_t sim_stream_resources(int devices) { return (uint32_t)devices * SIM_STREAMS; }
static inline uint32_t sim_resource_stream(int device, SimStream stream) {
  return (uint32_t)device * SIM_STREAMS + (uint32_t)stream;
}
static inline uint32_t sim_resource_compute(int device) {
  return sim_resource_stream(device, SIM_STREAM_COMPUTE);
}
static inline uint32_t sim_resource_comm(int device) {
  return sim_resource_stream(device, SIM_STREAM_COMM);
}
/* Device and stream of a stream resource (@resource < sim_stream_resources(devices)). */
static inline int sim_resource_device(uint32_t resource) { return (int)(resource / SIM_STREAMS); }
static inline SimStream sim_resource_stream_of(uint32_t resource) {
  return (SimStream)(resource % SIM_STREAMS);
}

/* Runs the engine over a finished task graph; returns FALSE with @error set (SIM_ERROR_CYCLE)
 * if the graph has a cycle (tasks left unscheduled). Free the result with sim_schedule_free. */
SimSchedule *sim_engine_run(const SimTaskGraph *graph, GError **error);
void sim_schedule_free(SimSchedule *schedule);
/* The timeline: when the last task ends; priority-queue pops; tasks timed. */
SimTime sim_schedule_makespan(const SimSchedule *schedule);
uint64_t sim_schedule_events(const SimSchedule *schedule);
uint32_t sim_schedule_size(const SimSchedule *schedule);
/* When task @id started, and when its last dependency ended (its pop time). */
SimTime sim_schedule_start(const SimSchedule *schedule, uint32_t id);
SimTime sim_schedule_ready(const SimSchedule *schedule, uint32_t id);
/* The task the engine started @k-th (0 <= k < sim_schedule_size). */
uint32_t sim_schedule_order(const SimSchedule *schedule, uint32_t k);

typedef struct {
  gboolean no_symmetry;   /* force the expanded graph (`--no-symmetry`) */
  gboolean step_collectives; /* expand collectives into transfers on link resources
                                (contention; `--collectives step`) */
  /* Moves between meshes (sim/CROSSMESH.md, "In a training iteration"). FALSE, the default:
   * a device-aligned move (same mesh shape and layout) is Megatron's stage-to-stage send/recv,
   * tile by tile from device i to device i, and every other move is planned with broadcast and
   * the ensemble load balancer. TRUE (`--crossmesh`, scenario option "crossmesh"): every move
   * between meshes, aligned ones included, is planned with the method and load balancer
   * below. */
  gboolean crossmesh;
  int crossmesh_method;      /* SimCrossMeshMethod (sim_crossmesh.h), when crossmesh is set */
  int crossmesh_order;       /* SimCrossMeshOrder, when crossmesh is set */
  /* Only the prediction is wanted: no per-task output (trace, timeline, explain, delta), so
   * the run may be timed on a graph with its compute chains merged (sim_merge.c, exact: the
   * same prediction bit for bit). Where it was (SimPrediction.merged_tasks > 0) the run has no
   * schedule: sim_run_schedule is NULL, the timeline is empty and sim_run_task refuses. */
  gboolean prediction_only;
  /* Testing: build every microbatch's resharding in full instead of replaying the first
   * one's (sim_build_replay.c), and a graph for merging's programs entry by entry and its
   * data edges one by one instead of per template (sim_build.c's stamp_unit,
   * sb_chain_repeats_block); the graph is the same either way, byte for byte. The bounds
   * (sim_bound.h) computed under it keep no memos: the same bound either way. */
  gboolean build_each_microbatch;
  /* Build only the first @build_microbatches microbatches of the strategy's (each the size of
   * one of its microbatches; 0: all): sim_run's steady-state route (sim/sim_merge_period.c)
   * times such a graph and proves what the rest add. */
  int build_microbatches;
  /* Time every microbatch even where the steady state could be proven (tests, benchmarks). */
  gboolean no_steady_state;
  struct SimProgress *progress; /* nullable, borrowed: the run's phases are reported there
                                   (sim/sim_progress.h); nothing computed depends on it */
} SimOptions;

/* Limits on one simulation (README, "Limits"), checked before the task graph is allocated.
 * A task costs about 91 bytes at the peak of a run with its resources, edges (a list while
 * building, then CSR) and schedule entries (measured 2026-12-02, `bench --suite gpt3`: 5.71 GB
 * max RSS and 32 s wall for the 63.1 M tasks of GPT-3 175B on 1024 GPUs expanded; 2026-11-24:
 * 102 bytes, 5.96 GB for 58.2 M): 10^8 tasks are about 9 GB and half a minute or more. A device slot is one (op, microbatch, mesh
 * device) of the strategy. The builder no longer keeps an array of them: a forward
 * conversion's readiness is kept per microbatch and representative (M x nrep,
 * sb_forward_conversion in sim_build_comm.c), and the per-mesh-index arrays of a conversion
 * (sb_convert_on_mesh's @ready) live for one microbatch's call. So under symmetry a slot now
 * costs next to nothing (measured: mlp:layers=100,hidden=256 at 512 microbatches of 1,
 * dp=8 on 8 A100s against dp=1024 on 1024: 101 ops, 5.3 x 10^7 slots more, both 0.13 s
 * wall, 28.6 against 28.8 MB max RSS); the ~8.5 bytes and ~35 ns a slot once cost, on which
 * the limit and its error message's "about 8.5 GB" rest, were measured with per-mesh-index
 * readiness. The limit still bounds an expanded build, whose representatives are every mesh
 * device. */
#define SIM_MAX_TASKS UINT64_C(100000000)
#define SIM_MAX_DEVICE_SLOTS UINT64_C(1000000000)

/* The size of an iteration's task graph, computed without building it. */
typedef struct {
  uint64_t tasks;          /* tasks the build would add (an upper bound: exact for compute
                              tasks, collectives and cross-mesh moves; every aligned stage-to-
                              stage send counted, even one a device sends to itself) */
  uint64_t compute_tasks;  /* of which forward, backward, weight-gradient and recompute tasks
                              (as many host tasks launch them, unless the framework is none) */
  uint64_t device_slots;   /* sum over ops of microbatches x devices of the op's mesh */
  int simulated_devices;   /* devices with tasks: the representatives under symmetry */
  gboolean symmetric;      /* whether symmetry folds replicas */
} SimEstimate;

/* Estimates the task graph sim_build_with_options would build, at the cost of validating the
 * strategy, choosing the representatives and planning the cross-mesh moves (linear in ops and
 * mesh sizes; nothing per microbatch or per task). FALSE with @error for a strategy that is
 * invalid or a cross-mesh move that cannot be planned; a graph over the limits is estimated,
 * not refused (sim_estimate_check). */
gboolean sim_build_estimate(const MdlGraph *graph, const MdlStrategy *strategy,
                            const DevCluster *cluster, const SimOptions *options,
                            SimEstimate *estimate, GError **error);
/* FALSE with MDL_ERROR_STRATEGY (one line naming the estimate, the limit and what to change)
 * when @estimate is over SIM_MAX_DEVICE_SLOTS or SIM_MAX_TASKS. */
gboolean sim_estimate_check(const SimEstimate *estimate, GError **error);

/* Builds the task graph of one training iteration (forward and backward of every microbatch in
 * the schedule's order, SBP resharding collectives, gradient all-reduce, optimizer step).
 * By default devices the strategy treats alike are simulated once (symmetry, where valid:
 * see sim_build.c); the answer is the expanded graph's, bit for bit. Refuses (NULL, @error as
 * sim_estimate_check) a graph over the limits above before allocating it. */
SimTaskGraph *sim_build(const MdlGraph *graph, const MdlStrategy *strategy,
                        const DevCluster *cluster, const CmParams *params, GError **error);
SimTaskGraph *sim_build_with_options(const MdlGraph *graph, const MdlStrategy *strategy,
                                     const DevCluster *cluster, const CmParams *params,
                                     const SimOptions *options, GError **error);

/* One iteration's prediction. */
typedef struct {
  double iteration_time_s;
  double samples_per_s;
  double tflops_per_gpu;      /* model FLOPs (forward + backward) per second per GPU */
  double mfu;                 /* tflops_per_gpu / peak of the strategy's dtype */
  double hardware_tflops_per_gpu; /* hardware FLOPs per second per GPU: the recomputed forwards
                                     counted too (Korthikanti et al. 2022 print both) */
  double compute_s;           /* mean over used devices of compute-stream busy time */
  double comm_exposed_s;      /* mean communication time not hidden under compute or a wait
                                 for the host (host_bound_s): communication is the union of a
                                 device's communication streams (SIM_STREAM_COMM, P2P, DP) */
  double comm_busy_s;         /* mean time some communication stream is busy (the union) */
  double host_bound_s;        /* mean time the compute stream waits for the host to launch its
                                 next kernel (host-bound time), communication running or not */
  double bubble_s;            /* the rest: no stream busy (pipeline bubbles, waits) */
  double peak_memory_bytes;
  int peak_memory_device;
  CmMemory peak_memory;       /* the breakdown on that device */
  double memory_capacity_bytes;
  gboolean fits_memory;
  int num_gpus;               /* devices the strategy uses */
  int simulated_gpus;         /* of which simulated (fewer under symmetry) */
  gboolean symmetric;
  gboolean step_collectives;  /* which collective mode ran */
  gboolean crossmesh;         /* moves between meshes planned as SimOptions asked (below) */
  int crossmesh_method, crossmesh_order; /* SimCrossMeshMethod and SimCrossMeshOrder */
  uint64_t tasks;
  uint64_t events;
  uint64_t merged_tasks;      /* SimOptions.prediction_only: the tasks of the reduced graph the
                                 engine timed (sim_merge.c); 0 when the full graph was timed */
  int steady_microbatches;    /* the steady-state route (sim/sim_merge_period.c): the
                                 microbatches timed, the rest proven to repeat a period of them
                                 (0: every microbatch timed) */
  double steady_period_s;     /* and the time one period adds */
  double build_wall_s;        /* wall-clock time to build the task graph */
  double sim_wall_s;          /* wall-clock time of build + engine + stats */
  double engine_cpu_s;        /* the thread's CPU time in the engine (the last one that timed the
                                 prediction: the reduced graph's under merging) */
  double breakdown_cpu_s;     /* and in the breakdown after it (bench --suite predict) */
} SimPrediction;

typedef struct SimRun SimRun;   /* opaque: read through the accessors below */

/* The calling thread's CPU time in seconds (0 where the clock is missing): the simulator
 * measuring itself (SimPrediction.engine_cpu_s, the benches, the search's CPU figures), never
 * read by anything simulated. */
double sim_thread_cpu_s(void);

/* Simulates one iteration. The run borrows its inputs; free with sim_run_free. */
SimRun *sim_run_new(const MdlGraph *graph, const MdlStrategy *strategy, const DevCluster *cluster,
                    const CmParams *params, GError **error);
SimRun *sim_run_new_with_options(const MdlGraph *graph, const MdlStrategy *strategy,
                                 const DevCluster *cluster, const CmParams *params,
                                 const SimOptions *options, GError **error);
void sim_run_free(SimRun *run);

/* What a run holds (all borrowed from it). The model, strategy and cluster are the inputs it
 * borrowed; the calibration is the name of the one its collective costs came from, or NULL;
 * profiled kernels: measured kernel times the cost model had. */
const SimPrediction *sim_run_prediction(const SimRun *run);
const MdlGraph *sim_run_graph(const SimRun *run);
const MdlStrategy *sim_run_strategy(const SimRun *run);
const DevCluster *sim_run_cluster(const SimRun *run);
const char *sim_run_calibration(const SimRun *run);
int sim_run_profiled_kernels(const SimRun *run);
const SimTaskGraph *sim_run_task_graph(const SimRun *run);
const SimSchedule *sim_run_schedule(const SimRun *run);
/* Tasks of the run; task @id with its start and end. */
uint32_t sim_run_num_tasks(const SimRun *run);
void sim_run_task(const SimRun *run, uint32_t id, SimTaskInfo *out);

/* The timeline of a run, task by task in the order the engine started them (its pops: by
 * ready time, ties by task id; start times need not be in order, a task waits for its
 * resources):
 *   SimTimeline it; SimTaskInfo t;
 *   sim_timeline_init(&it, run);
 *   while (sim_timeline_next(&it, &t)) ...
 * The fields are private. */
typedef struct {
  const SimRun *run;
  uint32_t next;
} SimTimeline;
void sim_timeline_init(SimTimeline *it, const SimRun *run);
/* The next task into @out; FALSE after the last. */
gboolean sim_timeline_next(SimTimeline *it, SimTaskInfo *out);

/* The prediction as a JSON object (model, cluster, strategy, figures); caller frees the text
 * with g_free. @with_wall includes sim_wall_s (the only field that varies between runs). */
char *sim_prediction_to_json(const SimRun *run, gboolean with_wall);

/* Writes a Chrome trace-event JSON file (Perfetto, chrome://tracing): one process per device,
 * one thread per stream. */
gboolean sim_trace_write(const SimRun *run, const char *path, GError **error);

/* `stratsim explain`: ops with their layouts and kernel times, per representative device the
 * collectives its communication streams run (grouped, with counts and stream; their total per
 * stream is that stream's busy time in the simulation), and memory per device. JSON: caller frees
 * with g_free. Text: at most @max_rows collective rows per device. */
char *sim_explain_json(const SimRun *run);
void sim_explain_print(const SimRun *run, FILE *out, int max_rows);

G_END_DECLS

#endif
