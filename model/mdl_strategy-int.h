/* Private to model/mdl_strategy*.c. */
#ifndef STRATSIM_MDL_STRATEGY_INT_H
#define STRATSIM_MDL_STRATEGY_INT_H
#include "model/mdl_strategy.h"

/* A strategy with @num_ops unsplit configs on mesh 0 / stage 0 and no meshes yet. */
MdlStrategy *mdl_strategy_new_empty(int num_ops);

/* The dtype a strategy gets when none is asked for: the model's, falling back to fp16 (then
 * fp32) where the device lacks it (bf16 before Ampere). */
DevDtype mdl_strategy_default_dtype(const MdlGraph *graph, const DevCluster *cluster);

/* Parses a positive integer option of a strategy spec (1..1e9); the error names the family,
 * key and value. */
gboolean mdl_strategy_parse_count(const char *family, const char *key, const char *value, int *out,
                                  GError **error);

/* The mesh of one Megatron pipeline rank (mdl_strategy_axes.c): the data axes, outermost
 * first, then the tensor-parallel axes (one, or with etp < tp two: tp/etp and etp); in_cp /
 * in_ep / in_tp / in_etp: the axis lies inside a context- / expert- / tensor- / expert-tensor-
 * parallel group. */
enum { AXIS_CP = 1, AXIS_EP = 2, AXIS_TP = 4, AXIS_ETP = 8 };
typedef struct {
  int ndims;
  int shape[MDL_MAX_MESH_AXES];
  uint8_t in_cp[MDL_MAX_MESH_AXES], in_ep[MDL_MAX_MESH_AXES];
  uint8_t in_tp[MDL_MAX_MESH_AXES], in_etp[MDL_MAX_MESH_AXES];
  int tp_axis;               /* the first tensor-parallel axis */
} MdlRankAxes;

/* The axes for @cfg's dp, cp, ep, tp and etp (Megatron-Core's order, see mdl_strategy_axes.c);
 * MDL_ERROR_STRATEGY when etp does not divide tp, ep is not a multiple of tp/etp, ep/(tp/etp)
 * does not divide dp*cp, or neither of that and cp divides the other. */
gboolean mdl_megatron_axes(const MdlMegatronConfig *cfg, MdlRankAxes *axes, GError **error);
/* The split of @op on every axis of @axes (-1 past them); MDL_ERROR_STRATEGY naming the op
 * when a cp axis finds no sequence dim in it. */
gboolean mdl_megatron_op_splits(const MdlOp *op, const MdlRankAxes *axes,
                                const MdlMegatronConfig *cfg, int8_t *split, GError **error);
/* The op's token dim (the first splittable ATTRIBUTE dim named s, sq or c) and its expert dim
 * (a splittable dim named e); -1 when absent. */
int mdl_op_token_dim(const MdlOp *op);
int mdl_op_expert_dim(const MdlOp *op);

#endif
