/* validate/pipeline — see val_pipeline.h. For GPU 0 (pipeline stage 0) of a run with p stages,
 * v model chunks per stage (interleaving), m = global_batch / (micro_batch x dp) microbatches,
 * b = micro_batch, s = seq, h = hidden, t = tp:
 *  - The bubble: (p - 1) / (v m) of the time the stage is busy (Narayanan et al. 2021, section
 *    2.2.1 for 1F1B, 2.2.2 for the interleaved schedule; Korthikanti et al. 2022 section 4.2.3
 *    uses the same fraction).
 *  - The pipeline exchanges: Megatron-LM (megatron/p2p_communication.py _communicate, the code
 *    Korthikanti et al. ran) posts a stage's send and receive of one step together
 *    (torch.distributed.batch_isend_irecv), waits for them (req.wait()) and then calls
 *    torch.cuda.synchronize(): nothing of the step overlaps the compute. Without sequence
 *    parallelism it sends 1/t of the b s h activations (the scatter-gather optimization,
 *    Narayanan et al. 2021 section 4.1; --scatter-gather-tensors-in-pipeline by default) and
 *    the receiver all-gathers them over the t ranks (gather_split_1d_tensor); with sequence
 *    parallelism the activations are already split 1/t along the sequence and go as they are.
 *    In the interleaved 1F1B steady state GPU 0 makes about 2 v m such steps (a forward send
 *    paired with a backward receive and the reverse), each taking one transfer: 2 b s h / t
 *    bytes at one HDR InfiniBand HCA's 200 Gb/s (Korthikanti et al. section 6: eight 200 Gb/s
 *    HDR HCAs per node of 8 A100s; a line-rate bound), and (2v - 1) m receives, each then an
 *    all-gather of the 2 b s h bytes when scatter-gather applies (half the measured all-reduce
 *    of that size, as val_components.c times all-gathers). With p = 1 there are none.
 *  - Tensor-parallel communication hidden under the backward's GEMMs (Korthikanti et al.
 *    section 6.2: "we overlap all-reduce communication with the linear weight's gradient
 *    computation"; megatron/mpu/layers.py LinearWithGradAccumulationAndAsyncCommunication):
 *    without sequence parallelism the all-reduce of each column-parallel linear's input
 *    gradient (QKV, first MLP GEMM) runs while its weight gradient is computed; with it, the
 *    all-gather of the linear's input runs while the input gradient is computed and the
 *    reduce-scatter of that gradient while the weight gradient is. A collective is hidden up
 *    to the length of the GEMM it runs beside (6 b s h^2 / t FLOPs for QKV's dX or dW, 8 for
 *    the MLP's, at the GEMM reference's rate); the rest of val_components' communication
 *    reference is exposed. Per layer and microbatch, m microbatches, L/p layers.
 *  - Memory-bound kernels and the optimizer step: the simulator's own (no published breakdown
 *    to hold them against): the same figure on both sides. */
#include "validate/val_pipeline.h"

#define HDR_IB_BYTES_PER_S (200e9 / 8)

void val_megatron_pipeline_reference(const ValMegatronRow *r, const GArray *curve,
                                     const ValComponents *c, ValPipelineRef *out) {
  double p = r->pp, v = r->interleaved, t = r->tp;
  double m = (double)r->global_batch / (r->micro_batch * r->dp);
  double activations = 2.0 * r->micro_batch * r->seq * r->hidden; /* bytes, 16-bit */
  out->bubble_fraction = (p - 1) / (v * m);
  out->p2p_ref_s = 0;
  if (r->pp > 1) {
    double transfer = activations / t / HDR_IB_BYTES_PER_S;
    double gather = r->sequence_parallel || r->tp < 2 ? 0 : val_curve_time(curve, activations) / 2;
    out->p2p_ref_s = 2 * v * m * transfer + (2 * v - 1) * m * gather;
  }
  out->hidden_ref_s = 0;
  if (r->tp > 1) {
    double t_ar = val_curve_time(curve, activations), hidden = 0;
    for (int k = 0; k < 2; k++) { /* QKV, then the first MLP GEMM */
      double gemm = (k ? 8.0 : 6.0) * r->micro_batch * r->seq * (double)r->hidden * r->hidden / t /
                    VAL_GEMM_A100_FLOPS;
      hidden += r->sequence_parallel ? 2 * MIN(t_ar / 2, gemm) : MIN(t_ar, gemm);
    }
    out->hidden_ref_s = hidden * m * r->layers / p;
  }
  out->other_s = c->other_sim_s + c->optimizer_sim_s;
  out->busy_ref_s = c->gemm_ref_s + c->comm_ref_s - out->hidden_ref_s + out->p2p_ref_s + out->other_s;
  out->bubble_ref_s = out->bubble_fraction * out->busy_ref_s;
  out->e2e_ref_s = out->busy_ref_s + out->bubble_ref_s;
}
