/* validate/runner_gpu/fill — pseudo-random GEMM operands (rg_fill.c says why not zeros). */
#ifndef STRATSIM_RG_FILL_H
#define STRATSIM_RG_FILL_H

#include "validate/val_plan.h"

#include <cuda_runtime_api.h>
#include <glib.h>

G_BEGIN_DECLS

typedef enum { RG_FILL_FP32, RG_FILL_BF16, RG_FILL_FP16, RG_FILL_E4M3 } RgFill;

/* Bytes per element of @kind. */
size_t rg_fill_size(RgFill kind);
/* The encoding of a plan dtype's operands (tf32 operands are fp32). */
RgFill rg_fill_for(ValDtype dtype);
/* Fills @bytes of device memory at @ptr with values uniform in [-1, 1) encoded as @kind, the
 * same bytes on every call; synchronous (cudaMemcpy). A NULL @ptr or 0 @bytes does nothing. */
cudaError_t rg_fill_random(void *ptr, size_t bytes, RgFill kind);

G_END_DECLS

#endif
