/* costmodel/backward — how an op's backward splits into B (activation gradients, dX: what the
 * producers of its inputs wait for) and W (weight gradients, dW: needed only by the gradient
 * sync and the optimizer). Used by backward weight delaying (cross-mesh resharding paper,
 * section 4; Qi et al. 2024, "Zero Bubble Pipeline Parallelism", section 2). */
#ifndef STRATSIM_CM_BACKWARD_H
#define STRATSIM_CM_BACKWARD_H

#include <glib.h>
#include "model/mdl_graph.h"

G_BEGIN_DECLS

/* Fraction of @op's backward (mdl_op_backward_flops, and its memory traffic) that is W:
 * a contraction (matmul, batched matmul, conv) costs one forward per operand needing a
 * gradient, so W is (#weight inputs) / (#inputs needing a gradient); an embedding's backward
 * is the scatter-add into its table, all W (the token ids need no gradient); every other kind
 * computes its (small, if any) weight gradients inside B: 0. 0 for an op without backward. */
double cm_weight_grad_share(const MdlGraph *graph, const MdlOp *op);

G_END_DECLS

#endif
