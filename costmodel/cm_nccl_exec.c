/* costmodel/nccl_exec — what NCCL's kernels take for the (algorithm, protocol) its tuner
 * picked, where that differs from the tuner's own latency + size / bandwidth (cm_nccl.h,
 * cm_nccl_exec_time). The tuner's formula is a ranking model: it charges a fixed latency and
 * streams every byte at the algorithm bandwidth from the first. The kernels move the data in
 * chunk-sized steps through a pipeline of stages, and a pipeline of D stages over K steps
 * takes K + D - 1 step times, not K: the D - 1 extra steps are its fill, one step time each
 * (a step of every channel at once, at the algorithm bandwidth).
 *
 * Modelled: single-host NVLS all-reduce (NVLink SHARP). Sources, NVIDIA/nccl:
 *  - src/device/all_reduce.h, RunWorkElement<ncclFuncAllReduce, NCCL_ALGO_NVLS, Simple>: on
 *    one host (no network peer) the warps split into three groups chained by step FIFOs:
 *    scatter (user buffer into each head's NVLS buffer), reduce + broadcast through the
 *    NVSwitch multicast address (directRecvDirectSend on nvls->down), gather (back into the
 *    user buffer): D = 3 stages; each loop moves nChannels x nHeads chunks
 *    (loopSize = nChannels * nvls->nHeads * chunkSize), one step per (channel, head).
 *  - src/enqueue.cc, calcCollChunking, NCCL_ALGO_NVLS: chunkSize starts at comm->nvlsChunkSize
 *    (NCCL_NVLS_CHUNKSIZE, default 128 KiB, src/transport/nvls.cc) and, with
 *    concurrentOps = nChannels * nHeads, drops to 64 KiB when nBytes < 64 x concurrentOps x
 *    chunkSize, to 32 KiB when nBytes < 8 x concurrentOps x chunkSize, to 16 KiB when
 *    nBytes < 2 x concurrentOps x chunkSize (the current calcCollChunking; the older
 *    computeColl of NVIDIA/nccl 5d3ab08 capped at 128 KiB and used 32x for the first
 *    threshold).
 *  - src/transport/nvls.cc: nvlsChannels NVLS_NCHANNELS_SM90 16, NVLS_NCHANNELS_SM100_NVL 24
 *    (one NVLink domain), NVLS_NCHANNELS_SM100 32 (several hosts); enqueue.cc getAlgoInfo
 *    runs NVLS on comm->nvlsChannels, never fewer ("NVLS should not need more than 16
 *    channels to get peak BW"). nHeads: one NVLS head per GPU of the host (src/graph/connect.cc
 *    connectNvls sets channel->nvls.nHeads from the NVLS graph's heads, one per local GPU).
 *
 * Not modelled, and why: the ring and tree (all_reduce.h runRing, runTreeSplit). Every rank
 * of a ring sends its own chunk at step 0 and each later step waits only on the previous
 * rank's previous step, so the ranks advance in lock-step and the ring has no fill beyond the
 * per-step latency the tuner already charges (hwLat x 2(n-1)); the steps of further loops
 * (beyond nChannels x nranks x 2 MiB for Simple: ALLREDUCE_CHUNKSTEPS 4 x 512 KiB steps of
 * the 4 MiB buffer over NCCL_STEPS 8) synchronise while the previous slice's data is still
 * moving (up to NCCL_STEPS steps in flight), and there a 1 MiB slice takes 50-100 us a
 * channel against a few us of step latency. NVLS-tree across hosts chains more stages through the network proxy; its chunk rules
 * (NVLSTREE_MAX_CHUNKSIZE, per-SM100 tuning) were not checked against a curve, so it keeps
 * the tuner's time. */
#include "costmodel/cm_nccl.h"

#include <math.h>

/* src/transport/nvls.cc. */
#define NVLS_NCHANNELS_SM90 16
#define NVLS_NCHANNELS_SM100_NVL 24
#define NVLS_NCHANNELS_SM100 32
/* NCCL_NVLS_CHUNKSIZE default (nvls.cc) and the floors of calcCollChunking (enqueue.cc). */
#define NVLS_CHUNK_BYTES 131072.0
/* all_reduce.h: scatter, reduce + multicast, gather. */
#define NVLS_ALLREDUCE_STAGES 3

static int nvls_channels(const CmNcclHardware *hw, int hosts) {
  if (hw->sm >= 100) return hosts > 1 ? NVLS_NCHANNELS_SM100 : NVLS_NCHANNELS_SM100_NVL;
  return NVLS_NCHANNELS_SM90;
}

/* calcCollChunking's NVLS chunk size for @bytes over @ops concurrent (channel, head) pairs. */
static double nvls_chunk(double bytes, double ops) {
  double chunk = NVLS_CHUNK_BYTES;
  if (bytes < 64 * ops * chunk && chunk > 65536) chunk = 65536;
  if (bytes < 8 * ops * chunk && chunk > 32768) chunk = 32768;
  if (bytes < 2 * ops * chunk && chunk > 16384) chunk = 16384;
  return chunk;
}

double cm_nccl_exec_time(CmCollective kind, CmAlgorithm a, CmProtocol p, const CmGroupShape *g,
                         const CmNcclHardware *hw, double bytes, CmNcclExec *out) {
  g_return_val_if_fail(g != NULL && hw != NULL, NAN);
  /* The network plugin's reported latency (latencyInter) enters NCCL's choice, not the time:
   * aws-ofi-nccl reports 35-75 us per network step on EFA instances, which on 4 x 8 B200
   * (aws-p6-b200: 4 network steps each way of NVLS-tree, twice for Simple) adds 280 us to a
   * 1 MiB all-reduce measured at 163 us in all. */
  CmNcclHardware kernel_hw = *hw;
  kernel_hw.net_latency_us = 0.0;
  kernel_hw.kernel_view = TRUE;
  CmNcclCost cost;
  double tuner = cm_nccl_time(kind, a, p, g, &kernel_hw, bytes, &cost);
  CmNcclExec e = {.tuner_s = tuner, .time_s = tuner, .stages = 1};
  if (!isnan(tuner) && a == CM_ALGO_NVLS && kind == CM_ALL_REDUCE && g->hosts == 1 && bytes > 0 &&
      cost.algbw > 0) {
    e.concurrent_ops = nvls_channels(hw, g->hosts) * g->max_per_host;
    e.chunk_bytes = nvls_chunk(bytes, e.concurrent_ops);
    e.stages = NVLS_ALLREDUCE_STAGES;
    /* One step: every (channel, head) moves a chunk (the last loop: what is left). */
    double step_bytes = MIN(bytes, e.chunk_bytes * e.concurrent_ops);
    e.fill_s = (e.stages - 1) * step_bytes / cost.algbw;
    e.time_s = tuner + e.fill_s;
  }
  if (out) *out = e;
  return e.time_s;
}
