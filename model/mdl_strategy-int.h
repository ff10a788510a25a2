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

#endif
