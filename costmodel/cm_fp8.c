/* costmodel/fp8 — Transformer Engine's FP8 recipe: which kernels run on FP8 tensor cores and
 * what the casts around them cost.
 *
 * Transformer Engine (docs, "Using FP8 with Transformer Engine" and the te.Linear API):
 *  - Only the linear layers of the transformer blocks (te.Linear, LayerNormLinear,
 *    LayerNormMLP) run their GEMMs in FP8, with E4M3 inputs, E5M2 gradients and fp32
 *    accumulation; attention (DotProductAttention, unless fp8_dpa is set), norms, activations
 *    and the output layer (Megatron-Core builds it as a plain ColumnParallelLinear) stay in
 *    bf16. Here: MATMUL ops inside a layer (op->layer >= 0) run at the device's fp8 peak,
 *    everything else at bf16.
 *  - Each FP8 GEMM's activation operand is cast by one fused kernel that reads the bf16
 *    tensor, takes its amax for the delayed-scaling history and writes the fp8 copy and its
 *    transpose (cast_transpose; the transpose feeds the weight-gradient GEMM): 2 bytes read,
 *    2 written per element. The backward casts dY the same way. A norm's output is written in
 *    fp8 by the norm kernel itself (Megatron-Core builds linear_qkv and linear_fc1 as
 *    TELayerNormColumnParallelLinear, whose fused LayerNorm/RMSNorm emits the fp8 input), so
 *    no cast is charged for it; linear_proj's and linear_fc2's inputs (attention output,
 *    activation output) are cast. Weights are cast once per
 *    iteration (the fp8 copy is cached across microbatches, is_first_microbatch) and that
 *    cast is not charged; the per-iteration amax-history and scale update is a few small
 *    kernels per layer and is not charged either.
 *  - The cached fp8 weight and its transpose stay in memory: 2 bytes per parameter of those
 *    GEMMs (cm_memory.c adds them; not under ZeRO-3, which gathers weights per use).
 *  - TE keeps a GEMM's activation input for the backward as its fp8 copy (te.Linear and
 *    LayerNormLinear save the cast input, used by the weight-gradient GEMM): 1 byte an
 *    element for a tensor only such GEMMs read (cm_memory.c); norms' and other ops' inputs
 *    stay at 2 bytes.
 * Not modeled: the GEMMs' own operand traffic at 1 byte (they are compute bound at the sizes
 * where FP8 matters). */
#include "costmodel/costmodel.h"

gboolean cm_fp8_gemm(const MdlOp *op, DevDtype dtype) {
  return dtype == DEV_DTYPE_FP8 && op->kind == MDL_OP_MATMUL && op->layer >= 0;
}

gboolean cm_fp8_cast_fused(const MdlGraph *graph, int tensor) {
  const MdlTensor *t = mdl_graph_tensor(graph, tensor);
  if (t->is_weight) return TRUE; /* cast once an iteration, not charged (above) */
  return t->producer >= 0 && mdl_graph_op(graph, t->producer)->kind == MDL_OP_LAYERNORM;
}

DevDtype cm_op_dtype(const MdlOp *op, DevDtype dtype) {
  if (dtype != DEV_DTYPE_FP8 || cm_fp8_gemm(op, dtype)) return dtype;
  return DEV_DTYPE_BF16;
}

double cm_fp8_cast_time(const CmParams *params, const DevKind *device, double elements) {
  if (elements <= 0) return 0;
  /* amax compare and scale multiply: 2 FLOPs an element; read 2 bytes, write 1 + 1. */
  return cm_compute_time(params, device, MDL_OP_ELEMENTWISE, DEV_DTYPE_BF16, 2 * elements,
                         4 * elements) +
         params->kernel_overhead_s;
}
