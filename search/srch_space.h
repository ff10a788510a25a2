/* search/space — the strategy space the per-op search drivers walk.
 *
 * A point of the space is one strategy on one pipeline stage that uses every device of the
 * cluster: a context (a device mesh and a microbatch count) and, per variable, one config
 * (the op dim split along each mesh axis, or none). Variables are single ops, or groups of
 * the ops of identical repeated layers ("layer0.qkv", "layer1.qkv", ...: the same name after
 * "layerN." and the same dims), which then share one config ("per group of identical layers").
 * Optionally ops without weights are followers, not variables: they take the layout of their
 * first activation input (each axis splits the op dim that indexes the tensor dim the
 * producer's output is split on, where valid, else replicates), as Alpa clusters such ops
 * with their operands; this shrinks the space to the ops that own weights.
 * Meshes are AutoDDL's (section 4.2, "Strategies for heterogeneous interconnected networks")
 * factorizations of (nodes, gpus-per-node) into per-axis tuples (n_i, g_i) with prod n_i =
 * nodes and prod g_i = gpus-per-node: an axis of n_i * g_i devices spans n_i hosts with g_i
 * GPUs on each. Microbatch counts are the divisors of the global batch up to a maximum.
 *
 * Invariants: every config in a context's lists is valid on its mesh at its microbatch count
 * (each split degree divides the dim it splits, sample dims at the microbatch size; only
 * splittable dims), so every point is a strategy mdl_strategy_validate accepts; values whose
 * own tensors cannot fit in device memory together with the least any other variable needs
 * (srch_space_value_memory) are not in the lists; contexts with a variable left without
 * values are dropped. A point is an int array of point_len entries: [0] the context index,
 * [1 + v] the value index of variable v in that context's list.
 */
#ifndef STRATSIM_SRCH_SPACE_H
#define STRATSIM_SRCH_SPACE_H

#include <glib.h>
#include "costmodel/costmodel.h"
#include "devices/dev_cluster.h"
#include "model/mdl_graph.h"
#include "model/mdl_strategy.h"
#include "sim/sim.h"

G_BEGIN_DECLS

#define SRCH_ERROR (srch_error_quark())
GQuark srch_error_quark(void);
typedef enum {
  SRCH_ERROR_SPACE,   /* no strategy of the space fits, or the space is empty */
  SRCH_ERROR_OPTION,  /* a malformed budget, algorithm or option */
  SRCH_ERROR_FAILED,  /* nothing could be evaluated */
} SrchError;

typedef enum {
  SRCH_VARS_GROUP,    /* one variable per group of identical layers' ops (default) */
  SRCH_VARS_OP,       /* one variable per op */
} SrchVarMode;

typedef enum {
  SRCH_DIMS_ALL,      /* every splittable dim of an op (default) */
  SRCH_DIMS_MEGATRON, /* only the sample dim and the op's tp_dim: a smaller space */
} SrchDimMode;

typedef struct {
  SrchVarMode vars;
  SrchDimMode dims;
  int max_mesh_axes;     /* 1..MDL_MAX_MESH_AXES; 0: 2 */
  int max_microbatches;  /* the space holds the divisors of the batch up to this; 0: 8 */
  gboolean followers;    /* ops without weights follow their input's layout (default FALSE) */
  gboolean dtype_set;    /* FALSE: the model's dtype (fp16, then fp32, where the device lacks it) */
  DevDtype dtype;
  MdlFramework framework; /* who launches the kernels of every candidate, the space's, the grid's
                             and the baselines' (the strategy key framework=; zero:
                             megatron-lm, the default) */
} SrchSpaceOptions;

/* Fills the defaults stated above. */
void srch_space_options_default(SrchSpaceOptions *options);

typedef struct {
  int naxes;
  int shape[MDL_MAX_MESH_AXES];
  int nodes[MDL_MAX_MESH_AXES];  /* AutoDDL tuple (nodes, gpus) of each axis */
  int gpus[MDL_MAX_MESH_AXES];
  int *devices;                  /* row-major over shape; owned */
} SrchMesh;

typedef struct {
  int8_t split[MDL_MAX_MESH_AXES]; /* op dim split along each mesh axis, -1: replicated */
} SrchConfig;

typedef struct {
  int mesh;              /* index into SrchSpace.meshes */
  int microbatches;
  int *nvalues;          /* per variable */
  SrchConfig **values;   /* per variable: its valid configs, in enumeration order */
  double **memory;       /* per variable and value: srch_space_value_memory's bytes */
  SimTime **compute;     /* per variable and value: per-device compute of its ops (ps), or
                            NULL until srch_space_measure_compute */
} SrchContext;

typedef struct {
  const MdlGraph *graph;       /* borrowed: must outlive the space */
  const DevCluster *cluster;   /* borrowed */
  SrchSpaceOptions options;
  DevDtype dtype;
  int ndevices;
  double capacity;             /* device memory, bytes */
  int nmeshes;
  SrchMesh *meshes;
  int ncontexts;
  SrchContext *contexts;
  double *context_cdf;         /* cumulative share of the points in contexts 0..c */
  int nvars;
  int *var_of_op;              /* per op; -1 for a follower */
  int *leader;                 /* per op: the producer whose output layout a follower takes
                                  (through input follow_input[o]), else -1 */
  int *follow_input;
  int *nmembers;               /* per variable */
  int **members;               /* per variable: its ops, in graph order */
  char **var_names;            /* "layer*.qkv" for a group, else the op name */
  int point_len;               /* nvars + 1 */
  guint64 values_over_memory;  /* configs left out because they cannot fit */
  int *readers;                /* per tensor: ops that read it (for the memory bound) */
  int *sample_tdim;            /* per tensor: mdl_tensor_sample_dim */
} SrchSpace;

/* Builds the space of @graph on all devices of @cluster (both borrowed). Errors:
 * SRCH_ERROR_OPTION for options out of range, SRCH_ERROR_SPACE when no context keeps a value
 * for every variable (nothing fits). Free with srch_space_free. */
SrchSpace *srch_space_new(const MdlGraph *graph, const DevCluster *cluster,
                          const SrchSpaceOptions *options, GError **error);
void srch_space_free(SrchSpace *space);

/* log10 of the number of points (sum over contexts of the product of value counts). */
double srch_space_log10_size(const SrchSpace *space);
/* The number of points, G_MAXUINT64 when larger. */
guint64 srch_space_size(const SrchSpace *space);

/* A valid strategy object for srch_space_apply to fill; caller frees (mdl_strategy_free). */
MdlStrategy *srch_space_new_strategy(const SrchSpace *space, GError **error);
/* Writes @point into @strategy (one made by srch_space_new_strategy): its mesh, microbatch
 * count and every op's split; stage 0, no pipeline. */
void srch_space_apply(const SrchSpace *space, const int *point, MdlStrategy *strategy);
/* A new strategy for @point named @name (copied); caller frees. */
MdlStrategy *srch_space_strategy(const SrchSpace *space, const int *point, const char *name);

/* Starting points. Each fills @point. Data parallelism: the 1-axis mesh, the fewest
 * microbatches where every op can split its sample dim over all devices; FALSE (and the
 * nearest point: other variables at their first value) where the space has no such point.
 * Expert: Krizhevsky's "one weird trick" for models with convolutions (convs data parallel,
 * FC layers split on their parameter dim over all devices); otherwise Megatron-style (sample
 * dim across hosts, tp_dim across the GPUs of a host); where a wished split is not in the
 * space, the op falls back to replication on that axis. Random: a uniform point of the space
 * (a context drawn in proportion to its number of points, then uniform values). */
gboolean srch_space_data_parallel(const SrchSpace *space, int *point);
void srch_space_expert(const SrchSpace *space, int *point);
void srch_space_random(const SrchSpace *space, GRand *rng, int *point);

/* Moves @point to context @ctx, mapping each variable's config to the config of the new
 * context whose per-dim split degrees are nearest (equal where possible; ties: first). */
void srch_space_set_context(const SrchSpace *space, int *point, int ctx);
/* Index of the value of @var in @ctx whose splits equal @split (MDL_MAX_MESH_AXES entries,
 * axes past the mesh ignored), -1 if none. */
int srch_space_find_value(const SrchSpace *space, int ctx, int var, const int8_t *split);

/* Fills every context's compute table: for value j of variable v, the compute-stream time one
 * device spends on v's ops (forwards, backwards, recomputation; every microbatch) under that
 * config, read from the task graph sim_build_with_options makes (an op's kernel times depend
 * only on its own config, the microbatch count and the dtype). One build per value index per
 * context. FALSE with @error if a build fails. */
gboolean srch_space_measure_compute(SrchSpace *space, const CmParams *params,
                                    const SimOptions *options, GError **error);

/* Bytes per device that the ops of @var need under @config on mesh @mesh at @microbatches,
 * counting only tensors no other op reads: weights with their gradients and Adam states (no
 * ZeRO), saved inputs for one microbatch in flight, dropout masks. A lower bound of what
 * cm_memory_per_device charges for them in any strategy the space holds (it charges these
 * tensors exactly so, times the microbatches in flight, >= 1, and more besides). */
double srch_space_value_memory(const SrchSpace *space, int var, const SrchConfig *config,
                               const SrchMesh *mesh, int microbatches);

/* "[2,4] (2x1,1x4)": shape and AutoDDL tuples; caller g_free()s. */
char *srch_mesh_describe(const SrchMesh *mesh);

G_END_DECLS

#endif
