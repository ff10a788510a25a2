/* model/strategy — the strategy IR: where every op runs and how its tensors are laid out.
 *
 * A strategy holds device meshes (n-dimensional views over sets of cluster devices, row-major)
 * and, for every op, a config: the mesh it runs on, the op dim split along each mesh axis (or
 * none: the op's work is replicated on that axis), and its pipeline stage. The SBP layout of
 * every operand follows from the split dims (see mdl_graph.h and mdl_layout_of_operand).
 * Pipeline: stages are disjoint meshes; the global batch is cut into `num_microbatches`
 * microbatches run in the stage order the schedule dictates. Invariants after
 * mdl_strategy_validate: every split degree divides the dim it splits (sample dims at the
 * microbatch size), every mesh device exists in the cluster, stages use disjoint devices.
 */
#ifndef STRATSIM_MDL_STRATEGY_H
#define STRATSIM_MDL_STRATEGY_H

#include <glib.h>
#include "model/mdl_graph.h"
#include "devices/dev_cluster.h"

G_BEGIN_DECLS

#define MDL_MAX_MESH_AXES 4

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

typedef enum { MDL_SCHEDULE_GPIPE, MDL_SCHEDULE_1F1B, MDL_SCHEDULE_COUNT } MdlSchedule;

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
  DevDtype dtype;
  /* For reporting: the degrees a builder used (0 when the strategy came from JSON). */
  int dp, tp, pp, microbatch_size;
} MdlStrategy;

/* Parses a strategy spec for @graph on @cluster: "dp", "megatron:tp=T,pp=P,dp=D,mb=M[,schedule=
 * gpipe|1f1b][,dtype=fp32|fp16|bf16]", or a path to a strategy JSON file (the format
 * mdl_strategy_to_json writes). Missing megatron degrees default to tp=1, pp=1, dp = devices /
 * (tp*pp), mb=1. Validates before returning. Free with mdl_strategy_free. */
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
  DevDtype dtype;
} MdlMegatronConfig;

/* Megatron-LM: ranks = pp-major, then dp, then tp (tp innermost, inside hosts). Each stage is
 * a (dp, tp) mesh; ops split their sample dim on the dp axis and their tp_dim on the tp axis;
 * stages cut the graph into pp parts balanced by forward FLOPs at layer boundaries. */
MdlStrategy *mdl_strategy_megatron(const MdlGraph *graph, const DevCluster *cluster,
                                   const MdlMegatronConfig *config, GError **error);

/* Checks the invariants in the file comment; errors name the op, dim and degree. */
gboolean mdl_strategy_validate(const MdlStrategy *strategy, const MdlGraph *graph,
                               const DevCluster *cluster, GError **error);

/* JSON (format in model/STRATEGY.md); caller frees the text with g_free. */
char *mdl_strategy_to_json(const MdlStrategy *strategy, const MdlGraph *graph);
MdlStrategy *mdl_strategy_from_json(const char *json_text, const char *origin,
                                    const MdlGraph *graph, const DevCluster *cluster,
                                    GError **error);

void mdl_strategy_free(MdlStrategy *strategy);

/* Adds a mesh (copied) and returns its index. */
int mdl_strategy_add_mesh(MdlStrategy *strategy, int ndims, const int *shape, const int *devices);
static inline const MdlMesh *mdl_strategy_mesh(const MdlStrategy *s, int i) { return &g_array_index(s->meshes, MdlMesh, i); }

const char *mdl_schedule_name(MdlSchedule schedule);
gboolean mdl_schedule_parse(const char *text, MdlSchedule *out);

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

/* Elements of tensor @t held per device under @layout on @mesh for one microbatch;
 * @sample_tdim is mdl_tensor_sample_dim(graph, t). */
double mdl_layout_local_elements(const MdlGraph *graph, int t, int sample_tdim,
                                 const MdlLayout *layout, const MdlMesh *mesh,
                                 int num_microbatches);

/* Writes a layout as text ("S(2),B" per axis; P for partial) into @buf. */
void mdl_layout_format(const MdlLayout *layout, int naxes, char *buf, size_t size);

G_END_DECLS

#endif
