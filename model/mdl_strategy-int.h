/* Private to model/mdl_strategy*.c. */
#ifndef STRATSIM_MDL_STRATEGY_INT_H
#define STRATSIM_MDL_STRATEGY_INT_H
#include "model/mdl_strategy.h"

/* A strategy with @num_ops unsplit configs on mesh 0 / stage 0 and no meshes yet. */
MdlStrategy *mdl_strategy_new_empty(int num_ops);

#endif
