/* sim/build — private to sim/sim_build*.c: the builder's state and the functions its files
 * share. sim_build.c: compute tasks, program order, the entry point; sim_build_comm.c: SBP
 * resharding, cross-mesh moves, forward and backward data dependencies; sim_build_sync.c:
 * gradient synchronization, ZeRO, optimizer; sim_build_symmetry.c: representatives;
 * sim_build_estimate.c: the graph's size before it is built, and its limits. */
#ifndef STRATSIM_SIM_BUILD_INT_H
#define STRATSIM_SIM_BUILD_INT_H

#include "sim/sim-int.h"
#include "sim/sim.h"
#include "sim/sim_crossmesh.h"
#include "sim/sim_network.h"

#include <limits.h>
#include <string.h>

#include "costmodel/cm_backward.h"
#include "sim/sim_schedule.h"

#define NO_TASK UINT32_MAX

typedef struct {
  int mesh;
  MdlLayout layout;
  uint32_t *ready;          /* M x the mesh's representatives (nrep): task each simulated
                               device waits for, per microbatch */
  uint32_t block;           /* where ready[j] is task j of one compute block (an identity
                               conversion passing its producer's tasks through): that block
                               (SimTaskGraph.program_block's numbering), else NO_TASK */
} Conversion;

/* A collective's cost as sb_add_comm_task computed it, kept for the next identical call (the
 * same group and size recur for every microbatch): the cost model is a pure function of
 * these, so reusing it is exact. */
#define SB_MEMO_DEVICES 16
typedef struct {
  int coll, p;              /* p = 0: empty */
  double bytes;
  SimTime duration;
  uint8_t link;
  int devices[SB_MEMO_DEVICES];
} SbCostMemo;

/* A GEMM duration sb_gemm_beside_collective computed, kept for the next op of the same
 * shape and gradient layouts (the layers of a model repeat them): a pure function of the key. */
typedef struct {
  gboolean used, gather;
  int mesh, dtype, kind, ninputs;
  MdlLayout from[MDL_MAX_INPUTS], to[MDL_MAX_INPUTS];
  double elements[MDL_MAX_INPUTS];
  double flops, bytes, alone_s;
  CmGemmShape shape;
  double result_s;
} SbBesideMemo;

/* A kernel time cm_kernel_time_profiled gave, kept for the next call with the same
 * arguments (the layers of a model repeat them; sb_op_durations): its key is every argument
 * and every field it reads (sim_build.c kernel_key), as 64-bit words; used = 0: empty. */
#define SB_KERNEL_KEY_WORDS 11
#define SB_KERNEL_MEMO 256 /* a power of two */
typedef struct {
  uint64_t key[SB_KERNEL_KEY_WORDS];
  double time_s;
  gboolean used;
} SbKernelMemo;

/* The ops that read a tensor, once per operand that reads it, in op order (Builder.users). */
typedef struct {
  const int *op;
  guint len;
} SbUsers;

/* Collective times and channel counts across strategies (sim_build_memo.c). */
typedef struct SbCollectiveMemo SbCollectiveMemo;

typedef struct {
  const MdlGraph *g;
  const MdlStrategy *s;
  const DevCluster *c;
  const CmParams *p;
  SimTaskGraph *tg;
  int nops;
  int M;                    /* microbatches built (SimOptions.build_microbatches, else all) */
  int Msize;                /* the strategy's microbatches: what a microbatch's sizes divide by */
  MdlStrategy units_s;      /* the strategy with M microbatches: the schedule's units (a shallow
                               copy, for sim_pipeline_units only) */
  double dtype_bytes;
  uint32_t *fwd_base;       /* per op: id of F(op, mb 0, mesh index 0) */
  uint32_t *bwd_base;
  uint32_t *wgt_base;       /* per op: W tasks under weight delay; NO_TASK: the op has no W */
  SimTime *op_durations;    /* per op: its forward, backward and W tasks' durations
                               (sb_op_durations, once) */
  gboolean virtual_compute; /* a graph for merging whose compute tasks are ids only
                               (SimTaskGraph.program_block) */
  uint32_t *rec_base;       /* per op: R tasks (its forward re-run before its backward under
                               recomputation); NO_TASK: not recomputed */
  int *group;               /* per op: recomputation group (mdl_strategy_recompute_groups) */
  int *fsdp_unit;           /* per op: its FSDP unit (mdl_strategy_fsdp_units), used under
                               ZeRO-3 only */
  uint32_t *chain_prev;     /* per compute task: the compute task before it in its device's
                               program (NO_TASK: the first); compute tasks have the lowest ids */
  uint32_t *chain_next;     /* per compute task: the one after it (NO_TASK: the last); NULL
                               unless collectives run ahead (tp_overlap, cp > 1: the ring and
                               ahead cases of sim_build_comm.c, its only readers) */
  uint32_t *block_prev;     /* per compute block (kind * nops + op, 4 * nops): the block whose
                               task j is chain_prev of the block's task j for every j (the
                               entry before it in the one template entry that chains it, on the
                               same mesh: sb_chain_repeats_block), else NO_TASK */
  uint32_t *program_fill;   /* per device, while chain_op fills SimTaskGraph.program: where its
                               next task goes */
  int *grads_done_b;        /* per stage: microbatch of its last B unit in program order */
  int *grads_done_w;        /* per stage: microbatch of its last W unit (weight delay) */
  int *sample_tdim;         /* per tensor */
  GPtrArray **conversions;  /* per tensor: forward conversions already built (Conversion *) */
  GPtrArray **rec_conversions; /* per tensor: the same for its recomputed values */
  SbUsers *users;           /* per tensor: the ops that read it, once per read, in op order
                               (sb_users_init: one array for all) */
  /* Symmetry: per mesh, the mesh indices simulated (all of them without symmetry), and for
   * each mesh index its position among them (-1: a replica that is not simulated) and the
   * index of the representative whose timeline it shares. */
  int *nrep;
  int **rep_idx;
  int **rep_pos;
  int **rep_of;
  gboolean symmetric;
  SimPhase phase;           /* the pass communication tasks are being built for */
  gboolean step;            /* step-expanded collectives on link resources */
  GHashTable *plans;        /* CrossMeshCache -> itself: cross-mesh resharding plans, one per
                               move (delta simulation keeps them across builds) */
  gboolean crossmesh_all;   /* options->crossmesh: aligned moves are planned too */
  SimCrossMeshOptions crossmesh; /* how moves are planned (defaults unless options->crossmesh) */
  uint32_t *last_compute;   /* per device: its last compute task in program order */
  GArray *marks;            /* SbMark before each segment and at the end, when recording
                               (delta simulation), else NULL */
  GArray **sim_groups;      /* per mesh x axis (MDL_MAX_MESH_AXES per mesh): bases of the groups
                               along the axis with a simulated member (int), built on first use
                               by sb_convert_on_mesh; NULL until then */
  gboolean for_merge;       /* a graph for chain merging only (sim_build_unfinished): the host
                               stream as durations and queue pairs (SimTaskGraph.host_duration),
                               no program-order edges (chain_prev stands for them) */
  SbCostMemo memo[4];       /* the last collectives' costs (sb_add_comm_task), round robin */
  SbBesideMemo beside[4];   /* the last W durations beside a collective, round robin: a cache
                               sb_op_durations writes through its const Builder (its results
                               do not depend on it) */
  int beside_next;
  int memo_next;
  SbKernelMemo kernels[SB_KERNEL_MEMO]; /* open addressing (kernel_time in sim_build.c), off
                                           under no_replay; written through a const Builder
                                           like beside */
  int nkernels;
  const gboolean *overlap_split; /* per op: sb_overlap_split, computed once by a bounder for
                                    its strategy (sim_bound.c); NULL: computed at each call */
  SbCollectiveMemo *collectives; /* NULL but in a bounder pointed at several strategies
                                    (sim_bounder_set_strategy): sb_collective_time */
  gboolean no_replay;       /* SimOptions.build_each_microbatch (sim_build_replay.c; and no
                               stamp_unit or sb_chain_repeats_block) */
} Builder;

/* Delta simulation (sim_delta.c) sees the build as the compute tasks (ids 0..n-1: per phase,
 * op, microbatch and simulated device), their program-order edges, then a sequence of
 * segments, pass by pass: per tensor its forward conversions, gradient resharding and
 * recomputed conversions, per op its ZeRO-3 parameter gathers and sequence-parallel
 * re-gathers, and the gradient sync with the optimizer step as one. A segment's tasks and
 * edges depend only on the configs of the ops that read or write its tensor (or its op's
 * tensors), and its edges join its own tasks or compute tasks, never another segment's: so
 * a segment whose ops kept their configs is copied, with its task ids shifted. */
typedef enum {
  SB_PASS_FORWARD,           /* per tensor (sb_forward_segment) */
  SB_PASS_PARAM_FORWARD,     /* per op, ZeRO-3: the FSDP unit the op opens (empty for the
                                other ops of a unit; sb_parameter_gathers_segment) */
  SB_PASS_BACKWARD,          /* per tensor (sb_backward_segment) */
  SB_PASS_RECOMPUTE,         /* per tensor (sb_recompute_segment) */
  SB_PASS_REGATHER,          /* per op (sb_regathers_segment) */
  SB_PASS_PARAM_BACKWARD,    /* per op, ZeRO-3 (feeds the recomputed forwards too) */
  SB_PASS_SYNC,              /* one: sb_add_gradient_sync_and_optimizer */
  SB_PASS_COUNT
} SbPass;

/* Where a segment starts in the graph's arrays. */
typedef struct {
  uint32_t task, res, edge, span; /* edge and span count uint32_t entries (pairs: 2 each) */
} SbMark;

/* One microbatch's conversion recorded to be replayed for the next ones (sim_build_replay.c):
 * its marks, its input at the @nin mesh indices @in (the representatives of the source mesh:
 * the task each waits for; every other entry of an input is NO_TASK, the caller's guarantee)
 * with, per entry, the first entry equal to it, its edges, and its output at the @nout mesh
 * indices @out (the only entries of an output the caller reads), encoded against its own
 * tasks and its input. */
typedef struct {
  gboolean off, recorded;
  gboolean identity;       /* the conversion builds nothing (sb_identity_conversion): the
                              caller passes the input through, neither recorded nor replayed */
  SbMark begin, end;
  const int *in, *out;     /* borrowed */
  int nin, nout;
  uint32_t *input, *first, *output; /* per entry of @in, of @in, of @out */
  GArray *edges;
} SbReplay;
void sb_replay_init(SbReplay *r, const Builder *b, const int *in, int nin, const int *out,
                    int nout);
void sb_replay_clear(SbReplay *r);
/* Edges a caller adds after each microbatch's conversion, from its output: copy i's output j
 * (the entry at index @out j) to to[i * nout + j] (NO_TASK: none), left out where the output is
 * NO_TASK or, for @data edges, where it repeats the chain (sb_data_edge). */
typedef struct {
  const uint32_t *to;
  gboolean data;
} SbReplayTargets;
/* Emits the conversions of microbatches @mb .. @mb + @count - 1 as copies of the recorded one,
 * from the first on while their inputs repeat its pattern: @in_c holds each one's input at
 * the indices @in only (nin entries a microbatch, in order), @out_c gets its output at the
 * indices @out (nout a microbatch). Returns how many were emitted (0: none, where there is no
 * recording or the first input does not repeat it: the caller builds that one, then records
 * it). The graph grows as building each in turn would make it grow (sim_build_replay.c),
 * each copy's edges followed by the caller's for that microbatch (@targets, or NULL: none). */
int sb_replay_many(Builder *b, const SbReplay *r, const uint32_t *in_c, int mb, int count,
                   uint32_t *out_c, const SbReplayTargets *targets);
/* Records the conversion just built from @begin (sb_mark before it) for microbatch @mb. */
void sb_replay_record(Builder *b, SbReplay *r, SbMark begin, const uint32_t *input, int mb,
                      const uint32_t *output);

/* Segments of @pass (0 where it does not apply); whether a pass is per tensor. */
int sb_pass_segments(const Builder *b, SbPass pass);
gboolean sb_pass_per_tensor(SbPass pass);
/* Builds segment @index of @pass into b->tg (b->phase set for the pass). */
void sb_run_segment(Builder *b, SbPass pass, int index);
SbMark sb_mark(const Builder *b);
/* Forward, backward and (weight delay) weight-gradient kernel times of one shard of op @o for
 * one microbatch (needs b->g, s, c, p, M, dtype_bytes and sample_tdim only). */
void sb_op_durations(const Builder *b, int o, SimTime *fwd, SimTime *bwd, SimTime *wgt);
/* Sets the durations of op @o's compute tasks in b->tg from its config (delta simulation). */
void sb_set_compute_durations(Builder *b, int o);
/* The builder's steps around the segments, shared with sim_delta.c: builder_init (validation,
 * representatives; @enforce: refuse a graph over the limits), the compute tasks and their
 * program order, and builder_clear. */
gboolean sb_builder_init(Builder *b, const MdlGraph *graph, const MdlStrategy *strategy,
                         const DevCluster *cluster, const CmParams *params,
                         const SimOptions *options, gboolean enforce, SimEstimate *estimate,
                         GError **error);
void sb_builder_clear(Builder *b);
/* Builder.users of @b->g (its ops read once: two passes, one allocation); sb_users_free frees
 * them (NULL: nothing). */
void sb_users_init(Builder *b);
void sb_users_free(Builder *b);
/* Frees a Conversion (the free function of Builder.conversions' lists). */
void sb_conversion_free(gpointer data);
void sb_build_compute(Builder *b);
/* The host stream (sim_build_host.c): one host task per compute task, after them, in program
 * order; nothing under MDL_FRAMEWORK_NONE. Called by sb_build_compute. */
void sb_add_host_tasks(Builder *b);
/* Whether, on some simulated device, launching its compute tasks takes the host longer than
 * the kernels take the GPU: the host cannot keep up, launches gate kernels throughout, and
 * chain merging (which needs them ahead) would fall back after a wasted try. A guess that
 * only picks the faster of two exact paths (measured: runs that merged had ratios up to 0.82,
 * every one above 1 fell back); needs the compute tasks built. */
gboolean sb_host_bound(const Builder *b);
void sb_build_segments(Builder *b);
/* The optimizer step on each device d with @local_params[d] > 0 parameters, after its last
 * compute task (@last_compute): its kernels, and with a host stream the host synchronizations
 * inside it (cm_framework_step_syncs) cutting them into phases: each phase's end joins every
 * simulated device's (the scalar's all-reduce over the model-parallel ranks), then a host task
 * (no resource) waits out the scalar's copy and the next launch (cm_framework_sync_s) before
 * the next phase. @first[d] and @last[d] get its first and last phase (NO_TASK: none). */
void sb_add_optimizer_step(Builder *b, const uint32_t *last_compute, const double *local_params,
                           uint32_t *first, uint32_t *last);

/* A cross-mesh resharding plan for moving tensor t between two (mesh, layout)s. */
typedef struct {
  int t, src, dst;
  MdlLayout from, to;
  SimCrossMeshPlan *plan;
} CrossMeshCache;

static inline const MdlOpConfig *cfg(const Builder *b, int op) { return &b->s->configs[op]; }
static inline const MdlMesh *mesh_of(const Builder *b, int op) {
  return mdl_strategy_mesh(b->s, b->s->configs[op].mesh);
}
/* Megatron's backward overlap (mdl_strategy_async_tp_allreduce, model/STRATEGY.md;
 * sim_build_comm.c): whether op @o's backward is built as B (dX) then W (dW), chained one after
 * the other in its backward unit, because its input gradient needs a reduction over a mesh axis
 * (partial sums: the all-reduce, or under sequence parallelism the reduce-scatter, of a
 * column-parallel GEMM) that then runs beside W. Depends on @o's own config only (its layouts),
 * so delta simulation can tell when a changed op changes the compute tasks (sim_delta.c). */
gboolean sb_overlap_split(const Builder *b, int o);
/* The time of one of @o's backward GEMMs (@flops, @bytes, @shape; @alone_s by itself) when it
 * runs beside an NCCL kernel under Megatron's overlap, with the SMs that kernel's channels
 * leave it (sim_build_overlap.c): W beside the input gradient's reduction (@gather FALSE), B
 * beside the sequence-parallel re-gather of its saved input (@gather TRUE); @alone_s where
 * nothing applies (no GEMM shape, no SM count, no NCCL collective beside it). */
double sb_gemm_beside_collective(const Builder *b, int o, gboolean gather, DevDtype dtype,
                                 double flops, double bytes, const CmGemmShape *shape,
                                 double alone_s);
/* cm_group_collective_time(b->p, b->c, ...), from b->collectives where it holds the same
 * collective, devices and bytes (sim_build_memo.c); and the channels NCCL's tuner runs it on
 * (0: not an NCCL collective kernel), the same way. The memo (owned by the bounder) is valid
 * for one b->p and b->c. */
SbCollectiveMemo *sb_collective_memo_new(void);
void sb_collective_memo_free(SbCollectiveMemo *memo);
double sb_collective_time(const Builder *b, CmCollective coll, const int *devices, int p, double bytes);
int sb_collective_channels(const Builder *b, CmCollective coll, const int *devices, int p, double bytes);
/* How much longer a GEMM (cm_kernel_time's arguments) takes on @device while an NCCL kernel of
 * @channels CTAs holds that many of its SMs (>= 1; 1 without a shape or an SM count). */
double sb_gemm_beside_nccl(const CmParams *params, const DevKind *device, int channels,
                          MdlOpKind kind, DevDtype dtype, double flops, double bytes,
                          const CmGemmShape *shape);
/* Whether @o gets W tasks: when part of its backward is weight gradients, under weight delay (W
 * in W units) or Megatron's overlap (sb_overlap_split: W right after B). */
static inline gboolean sb_has_weight_task(const Builder *b, int o) {
  return cm_weight_grad_share(b->g, mdl_graph_op(b->g, o)) > 0 &&
         (b->s->weight_delay || sb_overlap_split(b, o));
}
/* Forward/backward task of @op, microbatch @mb, on the device at mesh index @i (which must be
 * simulated: rep_pos >= 0). */
static inline uint32_t task_fwd(const Builder *b, int op, int mb, int i) {
  int m = b->s->configs[op].mesh;
  return b->fwd_base[op] + (uint32_t)(mb * b->nrep[m] + b->rep_pos[m][i]);
}
static inline uint32_t task_bwd(const Builder *b, int op, int mb, int i) {
  int m = b->s->configs[op].mesh;
  return b->bwd_base[op] + (uint32_t)(mb * b->nrep[m] + b->rep_pos[m][i]);
}
static inline uint32_t task_wgt(const Builder *b, int op, int mb, int i) {
  int m = b->s->configs[op].mesh;
  return b->wgt_base[op] + (uint32_t)(mb * b->nrep[m] + b->rep_pos[m][i]);
}
static inline uint32_t task_rec(const Builder *b, int op, int mb, int i) {
  int m = b->s->configs[op].mesh;
  return b->rec_base[op] + (uint32_t)(mb * b->nrep[m] + b->rep_pos[m][i]);
}
/* A data dependency into a compute task (a reader waits for what it reads). In a graph for
 * merging (b->for_merge) one from @to's chain predecessor is left out: it repeats the program
 * order, which such a graph keeps as chain_prev only (sim_merge.c: the reduced run is the same
 * without it; most of a transformer's data edges are these, from one op to the next). */
static inline gboolean sb_repeats_chain(const Builder *b, uint32_t from, uint32_t to) {
  return b->for_merge && to < b->tg->num_compute && b->chain_prev[to] == from;
}
/* Whether every data edge from task j of compute block @from to task j of block @to repeats
 * the chain (sb_repeats_chain for each j at once, from the templates: b->block_prev). */
static inline gboolean sb_chain_repeats_block(const Builder *b, uint32_t from, uint32_t to) {
  return b->for_merge && !b->no_replay && from != NO_TASK && b->block_prev[to] == from;
}
static inline void sb_data_edge(Builder *b, uint32_t from, uint32_t to) {
  if (!sb_repeats_chain(b, from, to)) sim_task_graph_edge(b->tg, from, to);
}
/* Room for @n more edges at the end of the graph's edge list, to be written as (from, to)
 * pairs at the returned pointer and committed by sb_edges_end with the pointer past the last
 * one written (one resize for a loop's edges instead of an append each). */
static inline uint32_t *sb_edges_begin(Builder *b, guint n) {
  guint len = b->tg->edges->len;
  g_array_set_size(b->tg->edges, len + 2 * n);
  return (uint32_t *)b->tg->edges->data + len;
}
static inline void sb_edges_end(Builder *b, const uint32_t *end) {
  g_array_set_size(b->tg->edges, (guint)(end - (const uint32_t *)b->tg->edges->data));
}
/* Where a collective that compute task @t waits for is issued: when the compute task two
 * before @t in its device's program ends, so that it runs while the one just before computes
 * (a one-task prefetch, as DeepSpeed's ZeRO-3 prefetches the next module's parameters and
 * Megatron overlaps the sequence-parallel re-gather with the backward's other GEMM). */
static inline uint32_t issue_point(const Builder *b, uint32_t t) {
  uint32_t prev = b->chain_prev[t];
  return prev == NO_TASK ? NO_TASK : b->chain_prev[prev];
}
/* Communication that overlaps the compute it feeds (sim_build_comm.c): whether the conversion
 * of input @k of @o (from a producer on the same mesh) runs while @o computes: context
 * parallelism's ring attention (the keys and values an attention op reads over the whole
 * sequence, an op dim "sk", under cp > 1) and, under tp_overlap, the all-gather before a GEMM.
 * And whether the conversions of @p's output on its own mesh run while @p computes: under
 * tp_overlap, the reduce-scatter after a GEMM. */
gboolean sb_overlapped_input(const Builder *b, int o, int k);
gboolean sb_overlapped_output(const Builder *b, int p);

/* The task after which @op's weight gradients on mesh index @i are complete: its last W (or,
 * for an op without W, its last B) in the rank's program order (a W right after its B, under
 * Megatron's overlap, is in the last B unit); compute tasks of a device are
 * chained, so every earlier microbatch's is done too. */
static inline uint32_t task_grads_done(const Builder *b, int op, int i) {
  int stage = b->s->configs[op].stage;
  if (b->wgt_base[op] != NO_TASK) /* W in W units (weight delay) or right after B */
    return task_wgt(b, op, b->s->weight_delay ? b->grads_done_w[stage] : b->grads_done_b[stage], i);
  return task_bwd(b, op, b->grads_done_b[stage], i);
}

void sb_mesh_strides(const MdlMesh *mesh, int *stride);
int sb_group_members(const MdlMesh *mesh, unsigned mask, int base, int *out);
gboolean sb_is_group_base(const MdlMesh *mesh, unsigned mask, int idx);
/* A collective over the @p @devices of a group on their stream @stream (sim_build_comm.c). */
SimCollectiveSpan sb_add_comm_task(Builder *b, SimTaskKind kind, SimStream stream,
                                   CmCollective coll, const int *devices, int p,
                                   const int *sim_devices, int nsim, double bytes, int op,
                                   int tensor, int mb);
void sb_edges_from_distinct(Builder *b, const uint32_t *deps, int n, uint32_t to);
void sb_convert_on_mesh(Builder *b, int mesh_index, MdlLayout from, MdlLayout to,
                            int t, int op, int mb, uint32_t *ready);
/* One collective step of a conversion on a mesh: axis @axis changes by @coll, which moves
 * @elements per device (the larger of the sizes before and after it, AutoDDL Table 2). */
typedef struct {
  int axis;
  CmCollective coll;
  double elements;
} SbConversionStep;
/* The collective steps of converting tensor @t from @from to @to on mesh @mesh_index, in the
 * order sb_convert_on_mesh runs them (its comment); the free steps (a local slice) are applied
 * but not listed. Returns their count (at most MDL_MAX_MESH_AXES). The simulator, its task
 * estimate and the search's bound (sim/sim_bound.c) all enumerate conversions through it. */
int sb_conversion_steps(const Builder *b, int mesh_index, MdlLayout from, MdlLayout to, int t,
                        SbConversionStep *steps);
/* Whether moving tensor @t from @from on mesh @src_mesh to @to on @dst_mesh builds nothing
 * (one mesh, no collective step): sb_convert passes the ready tasks through. */
gboolean sb_identity_conversion(const Builder *b, int src_mesh, MdlLayout from, int dst_mesh,
                                MdlLayout to, int t);
void sb_convert(Builder *b, int src_mesh, MdlLayout from, const uint32_t *src_ready,
                    int dst_mesh, MdlLayout to, int t, int op, int mb, uint32_t *dst_ready);
/* The forward conversion of tensor @t for @consumer: per microbatch mb and representative r of
 * the consumer's mesh, the task the data waits for at ->ready[mb * nrep + r] (NO_TASK: none). */
const Conversion *sb_forward_conversion(Builder *b, int t, int consumer, MdlLayout layout,
                                        gboolean recomputed);
void sb_forward_segment(Builder *b, int t);
gboolean sb_needs_crossmesh(const Builder *b);
void sb_backward_segment(Builder *b, int t);
void sb_recompute_segment(Builder *b, int t);
unsigned sb_grad_sync_mask(const Builder *b, int w, int m, int *first, MdlLayout *layout);
void sb_regathers_segment(Builder *b, int o);
void sb_add_gradient_sync_and_optimizer(Builder *b, const uint32_t *last_compute);
void sb_choose_representatives(Builder *b, gboolean allow);
void sb_free_representatives(Builder *b);
/* ZeRO-3 / FSDP (sim_build_sync.c): the parameter all-gathers of the FSDP unit op @o opens
 * (b->fsdp_unit; nothing when @o does not open one), per microbatch, before the unit's forward
 * or (@backward) before its first backward-pass task (its recomputed forward or backward). */
void sb_parameter_gathers_segment(Builder *b, gboolean backward, int o);
/* One all-gather of an FSDP unit: its weights on the unit's mesh that share one replica mask
 * (those its gradient is reduced over), @bytes their sum per device once gathered, @w the
 * first of them (what the task names). */
typedef struct {
  unsigned mask;
  int w;
  double bytes;
} SbUnitGather;
/* The all-gathers (SbUnitGather) of the unit op @o opens, in order of first use; empty when
 * @o is not the first op of its unit. Clears @out first. */
void sb_unit_gathers(const Builder *b, int o, GArray *out);
/* Megatron-LM's scatter/gather optimization of pipeline transfers (Narayanan et al. 2021,
 * "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", section
 * 4.1 and Fig. 9; Megatron-LM's p2p_communication.py, scatter_gather_tensors_in_pipeline, on
 * by default, off under sequence parallelism): where a tensor moved between two stage meshes
 * is replicated over the tensor-parallel ranks on both sides, each of the t sender/receiver
 * pairs sends 1/t of it (its own NIC: t times less over the inter-stage links), and the t
 * receivers all-gather the slices over their own link (NVLink), on their TP stream. For a
 * device-aligned move (sb_aligned_move) from layout @start (partial sums reduced) to @to:
 * the axis of the destination mesh it scatters over, or -1 where it does not apply (another
 * framework than megatron-lm, a device that is its own counterpart, no replicated axis or
 * more than one). */
int sb_scatter_gather_axis(const Builder *b, int src_mesh, MdlLayout start, int dst_mesh,
                           MdlLayout to);
void sb_crossmesh_cache_free(gpointer data);
guint sb_crossmesh_cache_hash(gconstpointer key);
gboolean sb_crossmesh_cache_equal(gconstpointer a, gconstpointer b);
/* @from with its partial sums reduced (P -> B): what a move between meshes starts from. */
MdlLayout sb_reduced(MdlLayout from);
/* Whether a move between two meshes is device-aligned (send/recv to the same mesh index). */
gboolean sb_aligned_move(const Builder *b, int src_mesh, MdlLayout from, int dst_mesh,
                         MdlLayout to);
/* The cross-mesh plan of one move, from the builder's cache or planned now and cached; NULL
 * with @error set when it cannot be planned (too many slices). */
const SimCrossMeshPlan *sb_crossmesh_plan(Builder *b, int t, int src_mesh, MdlLayout from,
                                          int dst_mesh, MdlLayout to, GError **error);
/* Layout of the gradient input @k of @o produces; whether (@o, @k) is the reader of its
 * tensor that reshards its group's summed gradient (sb_add_backward_dependencies). */
MdlLayout sb_input_grad_layout(const Builder *b, int o, int k);
gboolean sb_gradient_group_leader(const Builder *b, int o, int k);

/* One weight's gradient sync on one mesh. */
typedef struct {
  int w, m;
  unsigned mask;
  int first;        /* first op using it there */
  int ready;        /* smallest index of its ops there: its gradient completes when that op's
                       backward does, and backward runs in reverse op order */
  double bytes;     /* per device: its gradient (cm_framework_grad_bytes per element) */
} SyncItem;
/* Bytes of the parameters whose gradients are @grad_bytes (ZeRO 1/2's all-gather after the
 * step moves the model's parameters, not the fp32 gradients Megatron-LM reduces). */
double sb_param_bytes(const Builder *b, double grad_bytes);
/* The gradient syncs (SyncItem) of every weight on every mesh where it is replicated, in
 * bucket order; with @local_params (per device, zeroed) also adds each simulated device's
 * parameters its optimizer steps. Caller g_array_unref()s. */
GArray *sb_sync_items(const Builder *b, double *local_params);
/* The buckets over sorted @items: [begin, end) pairs of guint; @per_unit: one per FSDP unit
 * (ZeRO-3, b->fsdp_unit), else DDP's up to the bucket cap. Caller g_array_unref()s. */
GArray *sb_sync_buckets(const Builder *b, const GArray *items, gboolean per_unit);

/* The strategy's device slots: op x microbatch x mesh device, summed (sim_build_estimate.c;
 * checked against SIM_MAX_DEVICE_SLOTS, sim.h). The builder keeps per-microbatch entries only
 * for the representatives (a forward conversion's readiness is M x nrep, sim_build_comm.c), so
 * under symmetry the replicas' slots cost next to nothing; an expanded build pays for all. */
guint64 sb_device_slots(const MdlGraph *graph, const MdlStrategy *strategy);
/* Fills @out's task counts from the representatives chosen; plans every cross-mesh move (into
 * the builder's cache), FALSE with @error when one cannot be planned. */
gboolean sb_estimate_tasks(Builder *b, SimEstimate *out, GError **error);

#endif
