/* sim/build_overlap — what a backward GEMM loses to the NCCL kernel that runs beside it under
 * Megatron's backward overlap (sb_overlap_split): W(o) runs while the all-reduce, or under
 * sequence parallelism the reduce-scatter, of o's input gradient does; under sequence
 * parallelism B(o) also runs while the all-gather of o's saved input shard does (issued before
 * the dX GEMM, sb_regathers_segment).
 *
 * The cause is structural: an NCCL collective kernel runs one CTA per channel (NCCL launches a
 * grid of nChannels blocks; each holds its SM: the GEMM's CTAs, which fill an SM's shared
 * memory and registers, do not share it), so while it runs the GEMM has sm_count - nChannels
 * SMs: its tensor rate falls in proportion and its tiles fill waves of fewer SMs (the wave
 * quantization of cm_compute.c, on the smaller count). Measured case (NVIDIA developer forum,
 * "Compute-Communication Overlap Causes Severe GEMM Performance Degradation because of Tail
 * Effect", 2025, thread 337991): on an H100 (132 SMs) a GEMM of exactly 132 tiles ran at ~80%
 * MFU alone and ~47% beside an all-gather of 24 blocks, a second wave for the tiles that no
 * longer fit (1.70x). The model re-picks the GEMM's tile for the SMs left (cm_compute.c's
 * quantization over its tile list), where cuBLAS keeps the kernel it chose for the whole GPU:
 * for that case it gives 1.23x (test /sim/overlap/contention), so it errs low there; a GEMM of
 * many waves slows by the SM share (132 / 108 = 1.22x there).
 * nChannels is the tuner model's (cm_nccl_tune: NCCL's channels over the GPU's NVLinks, 12 on
 * an A100); NCCL's logs on HGX A100 show 24 (nccl-tests issue #100: "Channel 23/24", its
 * search duplicating channels), so the slowdown charged is, if anything, low. NCCL's HBM
 * traffic beside the GEMM is not charged (the dW GEMMs of a transformer are compute-bound).
 *
 * Timing, at build time: the collective and the GEMM start together (W and the reduction when
 * B ends; B and the re-gather when the task before B ends) and the collective takes c; the
 * GEMM needs w alone and w' = w x (time on the reduced SMs / time on all of them, the
 * roofline of cm_kernel_time) beside it. It progresses at 1/w' while the collective runs, at
 * 1/w after: it takes w' if c >= w', else c + (1 - c / w') w. The collective is the one of the
 * group through mesh index 0 (the same for every group of a symmetric cluster), timed by the
 * cost the tasks get (cm_group_collective_time). Depends on o's config, the layout its
 * producer gives or needs (sim_delta.c re-checks a changed producer's readers) and, for B, on
 * whether recomputation groups are known (the bound, which has none, leaves B's charge out). */
#include "sim/sim-int.h"
#include "sim/sim_build-int.h"

/* The conversions on @o's own mesh that its backward runs beside: per input @from -> @to
 * (equal where there is none) and the tensor's elements. @gather FALSE: the input gradients'
 * (sb_backward_segment's, as the reader that reshards them; partial sums are reduced on this
 * mesh before a move to another), beside W. TRUE: the sequence-parallel re-gathers of the
 * saved inputs (sb_regathers_segment's backward ones, issued before B, recomputed op or not:
 * Megatron's recomputed forward saves the shard again), beside B; none without recomputation
 * groups (b->group NULL: the pruning bound, which must not charge more than the build). */
static void beside_layouts(const Builder *b, int o, gboolean gather, MdlLayout *from,
                           MdlLayout *to, double *elements) {
  const MdlOp *op = mdl_graph_op(b->g, o);
  const MdlMesh *mesh = mesh_of(b, o);
  for (int k = 0; k < op->ninputs; k++) {
    int t = op->inputs[k].tensor, p = mdl_graph_tensor(b->g, t)->producer;
    memset(&from[k], 0, sizeof from[k]);
    to[k] = from[k];
    elements[k] = 0;
    if (p < 0 || mdl_graph_tensor(b->g, t)->is_weight) continue;
    if (gather) {
      gboolean regather = FALSE;
      if (!b->group) continue;
      MdlLayout saved = mdl_saved_input_layout(b->g, b->s, o, k, &regather);
      if (!regather) continue;
      from[k] = saved;
      to[k] = mdl_layout_of_operand(op, &op->inputs[k], FALSE, cfg(b, o), mesh);
    } else {
      from[k] = sb_input_grad_layout(b, o, k);
      to[k] = sb_reduced(from[k]);
      if (cfg(b, p)->mesh == cfg(b, o)->mesh) { /* what the producer's backward needs */
        const MdlOp *pop = mdl_graph_op(b->g, p);
        to[k] = sb_reduced(mdl_layout_of_operand(pop, &pop->output, TRUE, cfg(b, p), mesh));
      }
    }
    elements[k] = mdl_layout_local_elements(b->g, t, b->sample_tdim[t], &from[k], mesh, b->M);
  }
}

/* The collectives of those conversions, on the groups through mesh index 0: their summed time
 * into @time_s and the most channels one of them runs on. */
static void beside_collectives(const Builder *b, int o, const MdlLayout *from, const MdlLayout *to,
                                 double *time_s, int *channels) {
  const MdlOp *op = mdl_graph_op(b->g, o);
  const MdlMesh *mesh = mesh_of(b, o);
  int m = cfg(b, o)->mesh;
  *time_s = 0;
  *channels = 0;
  int members[64], devices[64];
  for (int k = 0; k < op->ninputs; k++) {
    int t = op->inputs[k].tensor;
    if (memcmp(&from[k], &to[k], sizeof to[k]) == 0) continue;
    SbConversionStep steps[MDL_MAX_MESH_AXES];
    int n = sb_conversion_steps(b, m, from[k], to[k], t, steps);
    for (int i = 0; i < n; i++) {
      if (mesh->shape[steps[i].axis] > (int)G_N_ELEMENTS(members)) continue; /* not a TP group */
      int size = sb_group_members(mesh, 1u << steps[i].axis, 0, members);
      for (int j = 0; j < size; j++) devices[j] = mesh->devices[members[j]];
      double bytes = steps[i].elements * b->dtype_bytes;
      *time_s += sb_collective_time(b, steps[i].coll, devices, size, bytes);
      *channels = MAX(*channels, sb_collective_channels(b, steps[i].coll, devices, size, bytes));
    }
  }
}

double sb_gemm_beside_nccl(const CmParams *params, const DevKind *device, int channels,
                          MdlOpKind kind, DevDtype dtype, double flops, double bytes,
                          const CmGemmShape *shape) {
  if (!shape || device->sm_count <= 0 || channels <= 0 || channels >= device->sm_count) return 1;
  DevKind reduced = *device; /* the SMs the GEMM keeps, each at the same rate */
  reduced.sm_count = device->sm_count - channels;
  for (int d = 0; d < DEV_DTYPE_COUNT; d++)
    reduced.peak_flops[d] = device->peak_flops[d] * reduced.sm_count / device->sm_count;
  return cm_kernel_time(params, &reduced, kind, dtype, flops, bytes, shape) /
         cm_kernel_time(params, device, kind, dtype, flops, bytes, shape);
}

double sb_gemm_beside_collective(const Builder *b, int o, gboolean gather, DevDtype dtype,
                                 double flops, double bytes, const CmGemmShape *shape,
                                 double alone_s) {
  if (!shape || b->c->device.sm_count <= 0 || alone_s <= 0) return alone_s;
  const MdlOp *op = mdl_graph_op(b->g, o);
  SbBesideMemo key;
  memset(&key, 0, sizeof key); /* compared with memcmp: padding zeroed */
  key.used = TRUE;
  key.gather = gather;
  key.mesh = cfg(b, o)->mesh;
  key.dtype = (int)dtype;
  key.kind = (int)op->kind;
  key.ninputs = op->ninputs;
  beside_layouts(b, o, gather, key.from, key.to, key.elements);
  key.flops = flops;
  key.bytes = bytes;
  key.alone_s = alone_s;
  key.shape = *shape;
  Builder *cache = (Builder *)b; /* the memo only (sim_build-int.h) */
  for (int i = 0; i < (int)G_N_ELEMENTS(b->beside); i++) {
    key.result_s = b->beside[i].result_s;
    if (memcmp(&key, &b->beside[i], sizeof key) == 0) return key.result_s;
  }
  double c;
  int channels;
  beside_collectives(b, o, key.from, key.to, &c, &channels);
  double result = alone_s;
  if (c > 0) {
    double beside = alone_s * sb_gemm_beside_nccl(b->p, &b->c->device, channels, op->kind, dtype,
                                                  flops, bytes, shape);
    result = c >= beside ? beside : c + (1 - c / beside) * alone_s;
  }
  key.result_s = result;
  cache->beside[cache->beside_next] = key;
  cache->beside_next = (cache->beside_next + 1) % (int)G_N_ELEMENTS(b->beside);
  return result;
}
