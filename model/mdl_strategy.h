/* model/strategy — the strategy IR: where every op runs and how its tensors are laid out.
 *
 * A strategy holds device meshes (n-dimensional views over sets of cluster devices, row-major)
 * and, for every op, a config: the mesh it runs on, the op dim split along each mesh axis (or
 * none: the op's work is replicated on that axis), and its pipeline stage. The SBP layout of
 * every operand follows from the split dims (see mdl_graph.h and mdl_layout_of_operand).
 * Pipeline: a stage is a model chunk; the global batch is cut into `num_microbatches`
 * microbatches run in the order the schedule dictates. With `virtual_stages` V > 1 (interleaved
 * 1F1B, Narayanan et al. 2021, section 2.2) there are num_stages = P * V chunks on P pipeline
 * ranks and chunk c runs on rank c % P; otherwise rank = stage. Invariants after
 * mdl_strategy_validate: every split degree divides the dim it splits (sample dims at the
 * microbatch size), every mesh device exists in the cluster, stages share devices only when
 * they are on the same rank, V > 1 exactly under the interleaved schedule (which also needs
 * num_microbatches % P == 0, as Megatron-LM does).
 */
#ifndef STRATSIM_MDL_STRATEGY_H
#define STRATSIM_MDL_STRATEGY_H

#include <glib.h>
#include "model/mdl_graph.h"
#include "devices/dev_cluster.h"

G_BEGIN_DECLS

#define MDL_MAX_MESH_AXES 4
/* Most microbatches per iteration: far past any real schedule (a 65536-sample batch cut into
 * single samples), small enough that per-microbatch arrays stay small; the task-graph size
 * limit (sim.h, SIM_MAX_TASKS) usually binds first (README, "Limits"). */
#define MDL_MAX_MICROBATCHES 1000000
/* Most devices in one mesh: the cluster limit (dev_cluster.h). */
#define MDL_MAX_MESH_DEVICES DEV_MAX_DEVICES

typedef struct {
  int ndims;
  int shape[MDL_MAX_MESH_AXES];
  int ndevices;              /* product of shape */
  int *devices;              /* row-major over shape; owned */
} MdlMesh;

typedef struct {
  int mesh;                            /* index into MdlStrategy.meshes */
  int8_t split[MDL_MAX_MESH_AXES];     /* op dim split along each mesh axis, -1: replicated */
  int stage;                           /* pipeline stage, 0-based */
} MdlOpConfig;

/* Pipeline schedules (program order per rank: sim/sim_schedule.h). */
typedef enum {
  MDL_SCHEDULE_GPIPE,        /* all forwards, then all backwards (Huang et al. 2019) */
  MDL_SCHEDULE_1F1B,         /* PipeDream-Flush (Narayanan et al. 2021, Fig. 4) */
  MDL_SCHEDULE_INTERLEAVED,  /* interleaved 1F1B over virtual stages (ibid., section 2.2) */
  MDL_SCHEDULE_EAGER_1F1B,   /* eager-1F1B (cross-mesh resharding paper, section 4) */
  MDL_SCHEDULE_COUNT
} MdlSchedule;

/* Activation recomputation (Korthikanti et al. 2022, section 4.1; Chen et al. 2016). */
typedef enum {
  MDL_RECOMPUTE_NONE,
  MDL_RECOMPUTE_SELECTIVE, /* the attention core (ops with attention_core) re-runs before its
                              backward; its activations, the 5as/h term, are not kept */
  MDL_RECOMPUTE_FULL,      /* every layer keeps only its input and re-runs its forward before
                              its backward (Megatron-LM's full, uniform checkpointing) */
  MDL_RECOMPUTE_COUNT
} MdlRecompute;

/* The training framework that runs a strategy: how many kernels each op launches and what each
 * launch costs the host (costmodel/cm_framework.h has the figures and their sources). */
typedef enum {
  MDL_FRAMEWORK_MEGATRON_LM,       /* the default: Megatron-LM, fused kernels */
  MDL_FRAMEWORK_MEGATRON_DEEPSPEED,
  MDL_FRAMEWORK_PYTORCH_EAGER,     /* plain PyTorch modules, unfused */
  MDL_FRAMEWORK_CUDA_GRAPHS,       /* the iteration captured in CUDA graphs and replayed */
  MDL_FRAMEWORK_NONE,              /* no host: kernels start when the GPU is ready */
  MDL_FRAMEWORK_COUNT
} MdlFramework;

/* Megatron-Core's MoE token dispatchers (--moe-token-dispatcher-type; megatron/core/
 * transformer/moe/token_dispatcher.py): how tokens reach the experts of an ep group. */
typedef enum {
  MDL_DISPATCHER_ALLTOALL,   /* the default: an all-to-all each way (MoEAlltoAllTokenDispatcher) */
  MDL_DISPATCHER_ALLGATHER,  /* every rank all-gathers the group's tokens and routing weights,
                                keeps its experts' tokens, and the outputs are reduce-scattered
                                back (MoEAllGatherTokenDispatcher) */
  MDL_DISPATCHER_COUNT
} MdlDispatcher;

/* "alltoall", "allgather"; parse returns FALSE for anything else. */
const char *mdl_dispatcher_name(MdlDispatcher dispatcher);
gboolean mdl_dispatcher_parse(const char *text, MdlDispatcher *out);

const char *mdl_framework_name(MdlFramework framework);
/* "megatron-lm", "megatron-deepspeed", "pytorch-eager", "cuda-graphs", "none"; FALSE else. */
gboolean mdl_framework_parse(const char *text, MdlFramework *out);

/* SBP layout of one tensor on one mesh axis. */
enum { MDL_LAYOUT_PARTIAL = -2, MDL_LAYOUT_BROADCAST = -1 }; /* >= 0: Split(tensor dim) */
typedef struct { int8_t axis[MDL_MAX_MESH_AXES]; } MdlLayout;

typedef struct {
  char *name;                /* the spec it came from, or the JSON file's "name" */
  GArray *meshes;            /* MdlMesh */
  MdlOpConfig *configs;      /* one per op of the graph it was built for; owned */
  int num_ops;
  int num_stages;
  int num_microbatches;      /* the global batch is cut into this many microbatches */
  MdlSchedule schedule;
  int virtual_stages;        /* V: model chunks per pipeline rank (> 1 only when interleaved) */
  gboolean weight_delay;     /* split backwards into B (dX) and W (dW), W delayed (see
                              * sim/sim_schedule.h); cross-mesh resharding paper, section 4 */
  DevDtype dtype;
  double bucket_bytes;       /* gradient all-reduces packed into buckets of this size, in the
                                order gradients become ready (PyTorch DDP; default 25 MiB,
                                DDP's bucket_cap_mb); 0: one all-reduce per weight tensor */
  gboolean overlap;          /* communication may run while compute runs (default); FALSE:
                                every collective also holds its members' compute streams */
  int zero_stage;            /* ZeRO (Rajbhandari et al. 2020) over each weight's data-parallel
                                replicas (mdl_operand_replica_axes): 1 partitions the optimizer
                                states, 2 also the gradients, 3 also the parameters; 0: none */
  MdlRecompute recompute;
  gboolean sequence_parallel; /* Korthikanti et al. 2022, section 4.2.2: an op that reads an
                                input through an all-gather of its producer's Split output keeps
                                that shard for the backward and gathers it again there (the
                                Megatron builder with sp=1 also splits the sequence of the ops
                                tensor parallelism replicates) */
  MdlFramework framework;    /* who launches the kernels (default megatron-lm) */
  /* For reporting: the degrees a builder used (0 when the strategy came from JSON). */
  int dp, tp, pp, vp, microbatch_size;
  int cp, ep;                /* context and expert parallelism (0 from JSON, 1: none) */
  int etp;                   /* expert tensor parallelism (0 from JSON; = tp unless set) */
  MdlDispatcher dispatcher;  /* the builder's token dispatcher (the splits carry it: JSON holds
                                the layouts, not this field) */
  int first_layers, last_layers; /* the builder's uneven pipeline (0: even; JSON holds every
                                    op's stage, not these) */
  gboolean account_embedding, account_loss; /* the builder's, as MdlMegatronConfig's */
  gboolean tp_overlap;       /* tensor-parallel collectives next to a GEMM overlap it
                                (Megatron-Core's --tp-comm-overlap; needs sequence_parallel):
                                sim/sim_build_comm.c */
  gboolean overlap_param_gather; /* ZeRO 1-2: the parameter all-gathers run ahead of the
                                    forward that needs them (Megatron-Core's distributed
                                    optimizer, --overlap-param-gather), not after the step */
  gboolean fsdp_prefetch;    /* ZeRO-3 / FSDP (default TRUE; FALSE only under zero=3): the next
                                FSDP unit's all-gather runs while the current unit computes
                                (PyTorch FSDP's forward prefetch and BACKWARD_PRE); FALSE: each
                                unit's gather starts when the unit before it has computed
                                (mdl_strategy_fsdp_units, sim/sim_build_sync.c) */
  int async_tp_allreduce;    /* the backward overlap of a tensor-parallel linear layer's
                                input-gradient collective with its weight-gradient GEMM
                                (mdl_strategy_async_tp_allreduce): 0 the framework's default,
                                1 on, -1 off */
  gboolean overlap_grad_reduce; /* ZeRO 0-1 (default TRUE; FALSE only under zero 0 or 1): each
                                   gradient bucket's all-reduce (reduce-scatter) starts once its
                                   gradients are complete, overlapping the rest of the backward
                                   (Megatron-Core's --overlap-grad-reduce); FALSE: every bucket
                                   waits for its device's last backward task (Megatron-LM's
                                   default DDP, finish_grad_sync after the whole backward) */
} MdlStrategy;

/* The strategy in one line (caller g_frees): the degrees a builder used ("dp=2 tp=8 pp=1, 4
 * microbatches of 2"), or for a strategy from JSON its meshes, stages and microbatches
 * ("2 meshes (2 x 4x2), 2 pipeline stages, 4 microbatches of 16 samples"). */
char *mdl_strategy_describe(const MdlStrategy *strategy, const MdlGraph *graph);

/* FLOPs of one training iteration as the GPUs execute them: the model's forward and backward
 * (mdl_graph_train_flops, "model FLOPs") plus the forwards that recomputation runs again
 * ("hardware FLOPs"; Korthikanti et al. 2022, section 6.3, and Chowdhery et al. 2022,
 * Appendix B, report both). Equal to the model FLOPs without recomputation. */
double mdl_strategy_hardware_flops(const MdlStrategy *strategy, const MdlGraph *graph);

/* Whether the backward of a linear layer whose input gradient needs a tensor-parallel
 * collective runs as Megatron-LM runs it (LinearWithGradAccumulationAndAsyncCommunication,
 * megatron/core/tensor_parallel/layers.py; earlier ColumnParallelLinearWithAsyncAllreduce in
 * megatron/mpu/layers.py; Korthikanti et al. 2022, section 6.2): the input gradient dX = dY W^T
 * first, its collective started asynchronously (all-reduce; reduce-scatter under sequence
 * parallelism, where the all-gather of the saved input shard also starts before the dX GEMM),
 * then the weight gradient dW = X^T dY beside it, then the wait. Named after Megatron-LM's
 * async_tensor_model_parallel_allreduce (switched off by --no-async-tensor-model-parallel-
 * allreduce, so on by default, megatron/arguments.py of 2022; arguments.py turns it off under
 * sequence parallelism only because layers.py then overlaps the reduce-scatter by itself, always).
 * The framework's default (@s->async_tp_allreduce 0): on for megatron-lm and cuda-graphs
 * (Megatron's kernels captured); off for megatron-deepspeed (its arguments.py defaults the flag
 * off: deepspeedai/Megatron-DeepSpeed issue #447, 2024; its 2021 fork has no such layer),
 * pytorch-eager and none (plain autograd: the collective after the layer's whole backward). */
gboolean mdl_strategy_async_tp_allreduce(const MdlStrategy *s);

/* Pipeline ranks (physical stages): num_stages / virtual_stages. */
static inline int mdl_strategy_num_ranks(const MdlStrategy *s) {
  return s->num_stages / (s->virtual_stages > 0 ? s->virtual_stages : 1);
}
/* The pipeline rank model chunk @stage runs on. */
static inline int mdl_strategy_rank_of_stage(const MdlStrategy *s, int stage) {
  return stage % mdl_strategy_num_ranks(s);
}

/* Parses a strategy spec for @graph on @cluster: "dp", "megatron:tp=T,pp=P,dp=D,mb=M[,schedule=
 * gpipe|1f1b|interleaved|eager1f1b][,vp=V][,wdelay=0|1][,dtype=fp32|fp16|bf16][,zero=0..3]
 * [,recompute=none|selective|full][,sp=0|1][,cp=C][,ep=E][,etp=T][,dispatcher=alltoall|allgather][,first_layers=F][,last_layers=L][,account_embedding=0|1][,account_loss=0|1][,overlap_param_gather=0|1][,tp_overlap=0|1]
 * [,fsdp_prefetch=0|1][,overlap_grad_reduce=0|1][,async_tensor_model_parallel_allreduce=0|1]
 * [,framework=megatron-lm|megatron-deepspeed|pytorch-eager|cuda-graphs|none]", or a path to a
 * strategy JSON file (the format mdl_strategy_to_json writes). Missing megatron degrees default
 * to tp=1, pp=1, dp = devices / (tp*pp), mb=1, vp=1, wdelay=0. vp > 1 needs
 * schedule=interleaved and the reverse (MDL_ERROR_STRATEGY). Validates before returning. Free
 * with mdl_strategy_free. */
MdlStrategy *mdl_strategy_parse_spec(const char *spec, const MdlGraph *graph,
                                     const DevCluster *cluster, GError **error);

/* Data parallelism over all @ndevices devices (first n of the cluster): every op splits its
 * sample dim on a 1-D mesh. */
MdlStrategy *mdl_strategy_data_parallel(const MdlGraph *graph, const DevCluster *cluster,
                                        int ndevices, DevDtype dtype, GError **error);

typedef struct {
  int tp, pp, dp;
  int microbatch_size;       /* samples per microbatch per data-parallel replica */
  MdlSchedule schedule;
  int virtual_stages;        /* vp: model chunks per pipeline rank; 0 or 1: none */
  gboolean weight_delay;
  DevDtype dtype;
  double bucket_mb;          /* 0: the default (25 MiB); < 0: one all-reduce per weight */
  gboolean no_overlap;       /* communication holds the compute streams too */
  int zero_stage;            /* 0..3 */
  MdlRecompute recompute;
  gboolean sequence_parallel; /* needs tp > 1 */
  int cp;                    /* context parallelism: the sequence split over cp ranks; 0 or 1: none */
  int ep;                    /* expert parallelism, folded over dp x cp; 0 or 1: none */
  int etp;                   /* expert tensor parallelism (Megatron-Core's
                                --expert-tensor-parallel-size): divides tp, and ep is a multiple
                                of tp/etp; 0: tp */
  MdlDispatcher dispatcher;  /* the MoE token dispatcher (default alltoall) */
  int first_layers;          /* layers of pipeline rank 0 (Megatron-Core's
                                --decoder-first-pipeline-num-layers); 0: an even split */
  int last_layers;           /* layers of the last rank (--decoder-last-pipeline-num-layers);
                                the ranks between split the rest evenly, and with vp each rank's
                                layers split evenly over its chunks */
  gboolean account_embedding; /* the embedding counts as one layer of the first pipeline chunk
                                 (Megatron-Core's account_for_embedding_in_pipeline_split) */
  gboolean account_loss;     /* the output layer and loss count as one layer of the last chunk
                                (account_for_loss_in_pipeline_split); with either, layers + the
                                counted ones split evenly over the pp x vp chunks */
  gboolean overlap_param_gather; /* needs zero=1 or 2 */
  gboolean tp_overlap;       /* needs sp=1 */
  MdlFramework framework;
  gboolean no_fsdp_prefetch; /* fsdp_prefetch=0: needs zero=3 */
  gboolean no_overlap_grad_reduce; /* overlap_grad_reduce=0: needs zero=0 or 1 */
  int async_tp_allreduce;    /* async_tensor_model_parallel_allreduce=0|1: -1 off, 1 on, 0 the
                                framework's default (MdlStrategy.async_tp_allreduce) */
} MdlMegatronConfig;

/* Megatron-LM: ranks = pp-major, then dp, then tp (tp innermost, inside hosts). Each pipeline
 * rank is a (dp, tp) mesh (with cp or ep > 1: Megatron-Core's tp-cp-ep-dp-pp layout, the mesh
 * and splits in model/mdl_strategy_axes.c; devices = tp*cp*dp*pp, ep divides dp*cp); ops split their sample dim on the dp axis and their tp_dim on the tp
 * axis; the graph is cut into pp * vp chunks of equal layer counts (balanced by forward FLOPs
 * for models without layers), chunk c on rank c % pp. Sequence parallelism (Korthikanti et al.
 * 2022, section 4.2.2) splits, on the tp axis, the sequence dim "s" of the ops without a
 * tp_dim (layernorms, dropout and residual adds); it needs tp > 1 and such ops. */
MdlStrategy *mdl_strategy_megatron(const MdlGraph *graph, const DevCluster *cluster,
                                   const MdlMegatronConfig *config, GError **error);

/* 2D, 2.5D and 3D matmul strategies (model/mdl_strategy_matmul.c states each op's SBP). */
typedef enum {
  MDL_MATMUL_SUMMA,   /* 2D: (dp, row, col) mesh; SUMMA / Optimus */
  MDL_MATMUL_2_5D,    /* (dp, depth, row, col); the survey's 2.5D-TP (Tesseract) */
  MDL_MATMUL_3D,      /* (dp, i, j, l); Agarwal et al. / AutoDDL's SBP matmul on a cube */
} MdlMatmulScheme;

typedef struct {
  MdlMatmulScheme scheme;
  int q;                     /* side of the tensor-parallel grid or cube */
  int depth;                 /* 2.5D: d, the replication depth */
  int dp;                    /* data-parallel replicas (outermost mesh axis) */
  int microbatch_size;       /* samples per microbatch per data-parallel replica */
  DevDtype dtype;
} MdlMatmulConfig;

/* Builds that strategy on devices 0..n-1 (one mesh, one stage); MDL_ERROR_STRATEGY when the
 * mesh exceeds the cluster, a degree does not divide the batch or a matmul dim. Free with
 * mdl_strategy_free. */
MdlStrategy *mdl_strategy_matmul(const MdlGraph *graph, const DevCluster *cluster,
                                 const MdlMatmulConfig *config, GError **error);
/* Whether @family is "summa", "2.5d" or "3d". */
gboolean mdl_strategy_matmul_family(const char *family);
/* Parses "summa:q=Q[,dp=D][,mb=M][,dtype=T]", "2.5d:q=Q,d=D[,dp=..][,mb=..][,dtype=..]" or
 * "3d:q=Q[,dp=..][,mb=..][,dtype=..]"; dp defaults to devices / group, mb to batch / dp (one
 * microbatch). MDL_ERROR_PARSE for unknown or malformed keys. */
MdlStrategy *mdl_strategy_matmul_parse_spec(const char *spec, const MdlGraph *graph,
                                            const DevCluster *cluster, GError **error);

/* Whether @graph has expert weights (an op with a PARAMETER dim "e", model/mdl_zoo_moe.c);
 * @experts gets their count (0 without). */
gboolean mdl_graph_num_experts(const MdlGraph *graph, int64_t *experts);

/* Checks the invariants in the file comment; errors name the op, dim and degree. */
gboolean mdl_strategy_validate(const MdlStrategy *strategy, const MdlGraph *graph,
                               const DevCluster *cluster, GError **error);

/* JSON (format in model/STRATEGY.md); caller frees the text with g_free. */
char *mdl_strategy_to_json(const MdlStrategy *strategy, const MdlGraph *graph);
MdlStrategy *mdl_strategy_from_json(const char *json_text, const char *origin,
                                    const MdlGraph *graph, const DevCluster *cluster,
                                    GError **error);

void mdl_strategy_free(MdlStrategy *strategy);
/* A deep copy (meshes, configs, name); free with mdl_strategy_free. */
MdlStrategy *mdl_strategy_copy(const MdlStrategy *strategy);
/* Whether @a and @b differ at most in their ops' splits: the same meshes, every op on the same
 * mesh and stage, the same schedule, microbatches and options (what delta simulation needs). */
gboolean mdl_strategy_same_except_splits(const MdlStrategy *a, const MdlStrategy *b);

/* Adds a mesh (copied) and returns its index. */
int mdl_strategy_add_mesh(MdlStrategy *strategy, int ndims, const int *shape, const int *devices);
static inline const MdlMesh *mdl_strategy_mesh(const MdlStrategy *s, int i) { return &g_array_index(s->meshes, MdlMesh, i); }

const char *mdl_schedule_name(MdlSchedule schedule);
gboolean mdl_schedule_parse(const char *text, MdlSchedule *out);
/* "none", "selective", "full". */
const char *mdl_recompute_name(MdlRecompute recompute);
gboolean mdl_recompute_parse(const char *text, MdlRecompute *out);

/* Whether @op re-runs its forward before its backward under @s's recomputation. */
static inline gboolean mdl_strategy_recomputes(const MdlStrategy *s, const MdlOp *op) {
  return (s->recompute == MDL_RECOMPUTE_FULL && op->layer >= 0) ||
         (s->recompute == MDL_RECOMPUTE_SELECTIVE && op->attention_core);
}

/* Recomputation groups: maximal runs of consecutive ops (graph order) that are recomputed, of
 * one layer and one stage; a group re-runs its forwards, in order, before the backward of its
 * last op. Returns per op its group (0, 1, ...; -1: not recomputed); caller g_free()s. */
int *mdl_strategy_recompute_groups(const MdlStrategy *s, const MdlGraph *graph);

/* FSDP units under ZeRO-3 (PyTorch FSDP wraps each transformer layer as one unit, Megatron-Core's
 * FSDP each layer module): maximal runs of consecutive ops (graph order) of one layer, one stage
 * and one mesh; ops outside layers (layer < 0: embeddings, the final norm and head) form a unit
 * per run between layers. One unit's weights are all-gathered together before its forward and
 * again before its backward (or its recomputed forward), and their gradients reduce-scattered
 * together after its backward. Returns per op its unit (0, 1, ... ascending in graph order);
 * caller g_free()s. */
int *mdl_strategy_fsdp_units(const MdlStrategy *s, const MdlGraph *graph);

/* The mesh axes on which weight operand @opd of @op is replicated while @op splits them:
 * data-parallel replicas of the weight, whose gradients are all-reduced over those axes
 * (reduce-scattered under ZeRO). */
unsigned mdl_operand_replica_axes(const MdlOp *op, const MdlOperand *opd,
                                  const MdlOpConfig *config, const MdlMesh *mesh);

/* The layout in which op @o keeps its input @k for the backward: the layout it reads it in,
 * except under sequence parallelism (Korthikanti et al. 2022, section 4.2.2) where the input
 * came through an all-gather of a Split output on the same mesh: that Split is kept and
 * *@regather set (the backward gathers it again); else *@regather is FALSE. */
MdlLayout mdl_saved_input_layout(const MdlGraph *graph, const MdlStrategy *s, int o, int k,
                                 gboolean *regather);

/* Layout of operand @operand of op @op under @config: per axis Split(tensor dim) where the
 * split op dim indexes the tensor, Partial for an output missing a split reduction dim,
 * Broadcast otherwise. @is_output selects the output rule. */
MdlLayout mdl_layout_of_operand(const MdlOp *op, const MdlOperand *operand, gboolean is_output,
                                const MdlOpConfig *config, const MdlMesh *mesh);

/* Product of the split degrees of op dim @dim under @config on @mesh. */
int mdl_config_dim_degree(const MdlOpConfig *config, const MdlMesh *mesh, int dim);

/* Size of op dim @dim on one device: global size / (num_microbatches for sample dims) /
 * split degree. */
double mdl_config_local_dim(const MdlOp *op, int dim, const MdlOpConfig *config,
                            const MdlMesh *mesh, int num_microbatches);

/* Tensor dim of @t that holds the batch (found through the ops that use it), -1 if none
 * (weights). */
int mdl_tensor_sample_dim(const MdlGraph *graph, int t);
/* The same for every tensor in one pass over the ops (mdl_tensor_sample_dim is a scan: calling
 * it per tensor or per operand is quadratic in the graph); caller g_free()s the array. */
int *mdl_tensor_sample_dims(const MdlGraph *graph);

/* Elements of tensor @t held per device under @layout on @mesh for one microbatch;
 * @sample_tdim is mdl_tensor_sample_dim(graph, t). */
double mdl_layout_local_elements(const MdlGraph *graph, int t, int sample_tdim,
                                 const MdlLayout *layout, const MdlMesh *mesh,
                                 int num_microbatches);

/* Writes a layout as text ("S(2),B" per axis; P for partial) into @buf. */
void mdl_layout_format(const MdlLayout *layout, int naxes, char *buf, size_t size);

G_END_DECLS

#endif
