/* costmodel/framework — framework profiles (cm_framework.h). Every figure's source:
 *
 * Host time per kernel launch, PyTorch-based frameworks, measured on a GPU host: PyTorch
 * 2.11.0+cu130 on one H100 80GB HBM3 SXM node (16 vCPUs of an Intel Xeon, a VM), every tensor
 * on the GPU (validate/torch_dispatch_gpu.py running costmodel/dispatch_bench.py's ops and
 * blocks on tiny tensors, b=1, s=4, h=16, 12 layers, --repeats 20, so that the GPU keeps up and
 * what is timed is the host: Python, nn.Module calls, the dispatcher, autograd, the caching
 * allocator and cudaLaunchKernel), two runs alternated with CPU-only runs in one session,
 * 2026-11-24 22:02-22:03 UTC (tests/data/gpu/h100-sxm-2026-11-24/dispatch_gpu_run1.json and
 * dispatch_gpu_run2.json; the README there). Each figure is the mean of the two runs' medians
 * (the node's CPU varied 1.6-2x between runs, cpu.txt and the README):
 *  - megatron-lm and megatron-deepspeed (the same model code): the MegatronBlock, a
 *    Megatron-LM layer's host-side structure at tp=1 (its autograd Functions for the
 *    tensor-parallel linears with gradient-accumulation fusion, apex-style fused layernorm and
 *    upper-triangular softmax Functions, the RNG tracker's fork around the attention dropout,
 *    the TorchScript bias-dropout-add and bias-GeLU fusions, the DDP main_grad hooks):
 *    975.6 / 852.2 us forward and 1756.4 / 967.3 us backward per layer (runs 1 / 2), over the
 *    13 and 40 kernels such a layer launches (below): (975.6 + 852.2) / 2 / 13 = 70.3 us per
 *    forward kernel, (1756.4 + 967.3) / 2 / 40 = 34.0 us per backward kernel.
 *  - pytorch-eager: the plain torch.nn GPT-2 block: 862.2 / 658.1 us forward and
 *    977.9 / 818.1 us backward per layer, over 18 and 43 kernels: 42.2 and 20.9 us.
 * This agrees with the "10-30 us of CPU time per kernel in PyTorch-based frameworks"
 * at the level of single ops (the same runs: 8.7-28.8 us per eager op forward, 12.3-79.4 us
 * backward); the rest is module and Python overhead. Per op, the GPU adds a median 11.9 / 10.8
 * us of host time to the same op on CPU tensors (dispatch_cpu_run1/2.json, the same session).
 * The earlier profile, measured on a CPU-only PyTorch (1.13, Debian python3-torch) on the
 * development VM's AMD EPYC vCPU, charged 26.7 / 9.5 us (Megatron) and 14.4 / 5.7 us (eager):
 * a host that launches no kernels. A Megatron layer stack on the same H100 node with real
 * tensor sizes (tests/data/gpu/h100-sxm-2026-11-24/torch_layers.csv) spends more host time
 * still, a median 1.84 / 2.06 ms per layer forward / backward over the rows where the GPU
 * idled more than half the time (1.85 / 2.24 ms at micro-batch 1-2), and launches
 * 20-26 / 48-64 kernels (cuBLAS split-K reductions, TorchScript's unfused pieces): the check
 * /sim/host/torch-layers (tests/test-host.c) and `bench --suite host`
 * compare the profile with those rows; they are not fitted to.
 * Launch queue: the host runs ahead of the GPU until 1024 launches are pending in the stream
 * (the CUDA driver's per-stream pushbuffer depth, as reported on the NVIDIA Developer Forums,
 * "cudaLaunchKernel blocks after ~1024 pending launches"; an approximate, undocumented figure).
 *
 * Kernels per op (the op kinds of model/mdl_graph.h; a GPT layer's ops: model/mdl_zoo_gpt.c):
 *  - megatron-lm (NVIDIA/Megatron-LM megatron/model/transformer.py with its fused kernels,
 *    megatron/core/tensor_parallel/layers.py, megatron/model/distributed.py; commit 00baee46,
 *    whose layer runs the kernels of the 2022 code): matmul: one GEMM forward (the bias is
 *    skipped and fused into the next op, skip_bias_add; the QKV projection alone adds its bias
 *    in a second kernel, one in four matmuls of a layer: not counted); backward dX GEMM, dW
 *    GEMM accumulated into main_grad (gradient-accumulation fusion,
 *    fused_weight_gradient_mlp_cuda), the bias gradient reduction and the DDP param hook's
 *    param.main_grad.add_(param.grad) for the bias (every parameter whose .grad the fused
 *    GEMM does not bypass): 4, of which 3 weight. batch matmul (baddbmm, bmm): 1 and 2 (the
 *    context's permute(...).contiguous() copy, 1 and 1 on one of the two: not counted).
 *    softmax: FusedScaleMaskSoftmax (scaled_upper_triang_masked_softmax_cuda) + the separate
 *    attention dropout: 2 and 2. layernorm: apex FusedLayerNormAffineFunction, 1 forward,
 *    backward cuComputeGradInput + cuComputePartGradGammaBeta + cuComputeGradGammaBeta and the
 *    main_grad adds of gamma and beta: 5, 4 weight. Elementwise by class: dropout-add
 *    (bias_dropout_add_fused_train) 1 forward, backward the dropout's masked scale, the
 *    skipped bias's gradient sum and the autograd engine's sum of the two gradients at the
 *    residual fork: 3; activation (bias_gelu) 1, backward bias_gelu_back + the bias gradient
 *    sum: 2; any other elementwise (the position-embedding add) 1 and 1. embedding
 *    (VocabParallelEmbedding): range mask (2 compares, or), shift, masked_fill, lookup,
 *    output masked_fill: 7; backward embedding_dense_backward (sort, segment sums, scatter:
 *    ~4) + the mask + the main_grad add: 6, all weight. loss (vocab_parallel_cross_entropy):
 *    max, shift, range mask (3), masked target, gather, masked_fill, exp, sum, log, subtract,
 *    mean, scale: ~14 forward; backward softmax recovery, one-hot subtract, scale: ~4.
 *    A GPT layer: 13 kernels forward, 40 backward.
 *  - megatron-deepspeed (microsoft/Megatron-DeepSpeed: the same model code and kernels under
 *    the DeepSpeed engine): DeepSpeed's ZeRO stage 1/2 optimizer registers a hook on every
 *    parameter's gradient (deepspeed/runtime/zero/stage_1_and_2.py,
 *    create_reduce_and_remove_grad_hooks -> reduce_ready_partitions_and_remove_grads) that
 *    copies it into the reduction bucket: one more kernel (and its host time) per weight tensor
 *    in backward, in place of Megatron's main_grad adds: matmul 3 + 2 (weight, bias), layernorm
 *    3 + 2 (gamma, beta), embedding 5 + 1; the elementwise classes as megatron-lm.
 *  - pytorch-eager (plain torch.nn modules, unfused, as nanoGPT without flash attention or
 *    HF GPT-2 eager): matmul: addmm 1; backward dX, dW, bias sum + AccumulateGrad adds of
 *    weight and bias (gradient accumulation over microbatches): 5, 4 weight. batch matmul:
 *    GEMM + scale 2, backward 3. softmax: causal masked_fill, softmax, dropout: 3 and 3.
 *    layernorm: 1; backward native layer_norm_backward (2) + 2 AccumulateGrad: 4, 3 weight.
 *    elementwise (GELU; residual dropout + add; position add): 2 and 2 on average. embedding:
 *    1; backward 2 + AccumulateGrad: 3, all weight. loss: log_softmax + nll_loss: 2 and 2.
 *  - cuda-graphs (Megatron's kernels captured once and replayed: the host launches a whole
 *    graph, not its kernels; NVIDIA Developer Blog, "Getting Started with CUDA Graphs", 2019):
 *    0 host time per kernel. On the H100 node a graph runs one empty kernel per 0.796 us
 *    (launch.csv graph-kernel-gap) where the host launches one per 4.32 us (launch-host): the
 *    graph's own gap is under the 1 us per-kernel overhead every compute task already pays on
 *    the GPU (CmParams.kernel_overhead_s), so it is not charged again.
 * Convolutions and pooling (not in transformers): cuDNN forward 1, backward data + filter 2
 * (1 weight) for every framework; pooling 1 and 1.
 *
 * Memory traffic of the memory-bound ops (CmOpTraffic: passes over output-sized activations of
 * e bytes, + 1 byte per element for a dropout keep mask), from the code each framework runs;
 * the roofline's default (the op's operands, forward; twice that, backward) is what "none"
 * keeps:
 *  - megatron-lm (NVIDIA/Megatron-LM megatron/model/transformer.py, CoreAttention.forward,
 *    ParallelMLP, bias_dropout_add_fused_train; the 2022 code Korthikanti et al. ran and e.g.
 *    commit 00baee46 have the same kernels; megatron/model/fused_layer_norm.py):
 *    layernorm (apex fused_layer_norm_cuda): forward reads x, writes y: 2; backward
 *    cuComputePartGradGammaBeta reads dY and x, cuComputeGradInput reads dY and x and writes
 *    dX: 5.
 *    softmax with attention dropout: FusedScaleMaskSoftmax (scaled_upper_triang_masked_softmax)
 *    reads the scores and writes the probabilities, then self.attention_dropout, a separate
 *    torch.nn.Dropout kernel, reads them and writes its output and the mask: 4 + mask;
 *    backward: the dropout's masked scale (reads dY and the mask, writes dX) and the fused
 *    softmax backward (reads dY and the saved probabilities, writes dX): 5 + mask.
 *    dropout-add (bias_dropout_add_fused_train, one TorchScript/nvfuser kernel): reads x and
 *    the residual, writes the sum and the mask: 3 + mask; backward: the dropout's masked scale
 *    (dY, mask -> dX: 2 + mask), the skipped bias's gradient summed over the tokens (reads dX:
 *    1, counted as its own reduction), and the autograd engine's sum of the two gradients
 *    reaching the residual's input (this add's dY and the next layernorm's dX: reads 2, writes
 *    1): 6 + mask.
 *    activation (bias_gelu, @torch.jit.script): reads x, writes y: 2; backward
 *    GeLUFunction.backward's bias_gelu_back reads dY and x, writes dX, the bias gradient sums
 *    dX: 4.
 *    loss (per logit element; megatron/model/gpt_model.py post_language_model_processing
 *    casts the logits with output.float() unless --fp16-lm-cross-entropy, then
 *    megatron/core/tensor_parallel/cross_entropy.py _VocabParallelCrossEntropy): the cast
 *    reads e and writes 4, max reads 4, the max subtraction reads and writes 4, exp in place
 *    4 + 4, the sum reads 4, the division in place 4 + 4 (the softmax kept for the backward):
 *    1 pass + 9 fp32 passes = e + 36; backward grad_input.mul_ 4 + 4 in place (the target
 *    correction touches one element a row), the cast back reads 4 and writes e: 1 + 3 fp32.
 *  - megatron-deepspeed and cuda-graphs: Megatron's kernels, the same traffic.
 *  - pytorch-eager (unfused torch.nn, bias inside addmm): layernorm 2 and 5 (native
 *    layer_norm_backward reads dY and x twice, for dX and for gamma/beta); softmax: causal
 *    masked_fill (2), softmax (2), dropout (2 + mask): 6 + mask; backward dropout (2 + mask),
 *    softmax (3), masked_fill (2): 7 + mask. dropout-add: dropout (2 + mask) then add (3):
 *    5 + mask; backward dropout (2 + mask) and the gradient sum at the residual fork (3):
 *    5 + mask. activation (GeLU): 2 and 3. loss (F.cross_entropy under autocast: log_softmax
 *    runs in fp32): cast (e read, 4 written), log_softmax (4 + 4): 1 + 3 fp32; backward
 *    nll_loss_backward writes a dense fp32 gradient (4), log_softmax_backward reads it and
 *    the output and writes (12), the cast back (4 read, e written): 1 + 5 fp32. */
#include "costmodel/cm_framework.h"

/* dispatch_gpu_run{1,2}.json (the header comment): per layer, mean of the two runs, over the
 * kernels the block launches */
#define HOST_FORWARD_S (0.5 * (862.2e-6 + 658.1e-6) / 18)
#define HOST_BACKWARD_S (0.5 * (977.9e-6 + 818.1e-6) / 43)
#define HOST_MEGATRON_FORWARD_S (0.5 * (975.6e-6 + 852.2e-6) / 13)
#define HOST_MEGATRON_BACKWARD_S (0.5 * (1756.4e-6 + 967.3e-6) / 40)
#define LAUNCH_QUEUE 1024
/* A synchronization inside the step, from the GPU finishing what it waits for to the host's
 * next launch: launch.csv's launch-sync-roundtrip, the host time of a kernel launch followed by
 * cudaStreamSynchronize, 10.04 us (the launch alone 4.32 us), measured on one H100 SXM in a VM
 * with 16 vCPUs of an Intel Xeon (tests/data/gpu/h100-sxm-2026-11-24). A .item() also copies
 * its scalar to the host: 5-7 us per small cudaMemcpyAsync call measured by Wu et al. 2026
 * (DualPath, arXiv 2602.21548, section 5.2), mostly issued before the GPU finishes; not added. */
#define HOST_SYNC_ROUNDTRIP_S 10.04e-6

/* Kernel counts per op kind; a kind not listed (added to the IR later) launches one kernel
 * forward and two backward (cm_framework_kernels). */
#define CNN_KERNELS [MDL_OP_CONV2D] = {1, 2, 1}, [MDL_OP_POOL2D] = {1, 1, 0}
/* Megatron's elementwise fusions by class (the header comment): dropout-add, bias-GeLU. */
#define MEGATRON_CLASS_KERNELS                                                                  \
  {[CM_TRAFFIC_DROPOUT_ADD] = {1, 3, 0}, [CM_TRAFFIC_ACTIVATION] = {1, 2, 0}}
#define MEGATRON_KERNELS(matmul_bwd, matmul_wgt, ln_bwd, ln_wgt, emb_bwd)                      \
  {[MDL_OP_MATMUL] = {1, matmul_bwd, matmul_wgt}, [MDL_OP_BATCH_MATMUL] = {1, 2, 0},             \
   CNN_KERNELS, [MDL_OP_ELEMENTWISE] = {1, 1, 0}, [MDL_OP_LAYERNORM] = {1, ln_bwd, ln_wgt},       \
   [MDL_OP_SOFTMAX] = {2, 2, 0}, [MDL_OP_EMBEDDING] = {7, emb_bwd, emb_bwd},                     \
   [MDL_OP_LOSS] = {14, 4, 0}}
/* Activation passes forward and backward, mask (the header comment). */
#define MEGATRON_TRAFFIC                                                                        \
  {[CM_TRAFFIC_LAYERNORM] = {2, 5, 0, 0, 0}, [CM_TRAFFIC_SOFTMAX] = {4, 5, 1, 0, 0},            \
   [CM_TRAFFIC_DROPOUT_ADD] = {3, 6, 1, 0, 0}, [CM_TRAFFIC_ACTIVATION] = {2, 4, 0, 0, 0},       \
   [CM_TRAFFIC_LOSS] = {1, 1, 0, 9, 3}}
static const CmFramework frameworks[] = {
  {MDL_FRAMEWORK_MEGATRON_LM, HOST_MEGATRON_FORWARD_S,
   HOST_MEGATRON_BACKWARD_S, LAUNCH_QUEUE, TRUE, MEGATRON_KERNELS(4, 3, 5, 4, 6),
   MEGATRON_CLASS_KERNELS, MEGATRON_TRAFFIC},
  {MDL_FRAMEWORK_MEGATRON_DEEPSPEED, HOST_MEGATRON_FORWARD_S,
   HOST_MEGATRON_BACKWARD_S, LAUNCH_QUEUE, TRUE, MEGATRON_KERNELS(5, 4, 5, 4, 6), MEGATRON_CLASS_KERNELS,
   MEGATRON_TRAFFIC},
  {MDL_FRAMEWORK_PYTORCH_EAGER, HOST_FORWARD_S,
   HOST_BACKWARD_S, LAUNCH_QUEUE, FALSE,
   {[MDL_OP_MATMUL] = {1, 5, 4}, [MDL_OP_BATCH_MATMUL] = {2, 3, 0}, CNN_KERNELS,
    [MDL_OP_ELEMENTWISE] = {2, 2, 0}, [MDL_OP_LAYERNORM] = {1, 4, 3},
    [MDL_OP_SOFTMAX] = {3, 3, 0}, [MDL_OP_EMBEDDING] = {1, 3, 3}, [MDL_OP_LOSS] = {2, 2, 0}},
   {{0}},
   {[CM_TRAFFIC_LAYERNORM] = {2, 5, 0, 0, 0}, [CM_TRAFFIC_SOFTMAX] = {6, 7, 1, 0, 0},
    [CM_TRAFFIC_DROPOUT_ADD] = {5, 5, 1, 0, 0}, [CM_TRAFFIC_ACTIVATION] = {2, 3, 0, 0, 0},
    [CM_TRAFFIC_LOSS] = {1, 1, 0, 3, 5}}},
  {MDL_FRAMEWORK_CUDA_GRAPHS, 0, 0, LAUNCH_QUEUE, TRUE, MEGATRON_KERNELS(4, 3, 5, 4, 6),
   MEGATRON_CLASS_KERNELS, MEGATRON_TRAFFIC},
};

const CmFramework *cm_framework_get(MdlFramework kind) {
  for (guint i = 0; i < G_N_ELEMENTS(frameworks); i++)
    if (frameworks[i].kind == kind) return &frameworks[i];
  return NULL;
}

/* The class of memory-bound @op, or CM_TRAFFIC_COUNT when no profile lists it: softmax and
 * dropout-add only with their dropout (the figures count its kernel and mask); an
 * elementwise op of two or more inputs without dropout (concatenations, normalizations of
 * CNNs) keeps the roofline. */
static CmTrafficClass traffic_class(const MdlOp *op) {
  switch (op->kind) {
  case MDL_OP_LAYERNORM: return CM_TRAFFIC_LAYERNORM;
  case MDL_OP_SOFTMAX: return op->dropout ? CM_TRAFFIC_SOFTMAX : CM_TRAFFIC_COUNT;
  case MDL_OP_ELEMENTWISE:
    if (op->dropout && op->unsaved_inputs) return CM_TRAFFIC_DROPOUT_ADD;
    return !op->dropout && op->ninputs == 1 ? CM_TRAFFIC_ACTIVATION : CM_TRAFFIC_COUNT;
  case MDL_OP_LOSS: return CM_TRAFFIC_LOSS;
  default: return CM_TRAFFIC_COUNT;
  }
}

int cm_framework_kernels(const CmFramework *f, const MdlOp *op, CmHostPhase phase) {
  g_return_val_if_fail(f && op && op->kind < MDL_OP_KIND_COUNT, 0);
  static const CmOpKernels unlisted = {1, 2, 0};
  CmTrafficClass c = traffic_class(op);
  const CmOpKernels *k = &f->kernels[op->kind];
  if (c != CM_TRAFFIC_COUNT && (f->class_kernels[c].forward || f->class_kernels[c].backward))
    k = &f->class_kernels[c];
  if (k->forward == 0 && k->backward == 0) k = &unlisted;
  switch (phase) {
  case CM_HOST_FORWARD: return k->forward;
  case CM_HOST_BACKWARD: return k->backward;
  case CM_HOST_BACKWARD_INPUT: return k->backward - k->weight;
  case CM_HOST_BACKWARD_WEIGHT: return k->weight;
  }
  g_return_val_if_reached(0);
}

double cm_framework_host_time(const CmFramework *f, const MdlOp *op, CmHostPhase phase) {
  double per = phase == CM_HOST_FORWARD ? f->forward_launch_s : f->backward_launch_s;
  return cm_framework_kernels(f, op, phase) * per;
}

gboolean cm_framework_traffic(const CmFramework *f, const MdlOp *op, double in_elems,
                              double out_elems, double elem_bytes, double *forward,
                              double *backward) {
  g_return_val_if_fail(op && forward && backward, FALSE);
  CmTrafficClass c = traffic_class(op);
  if (!f || c == CM_TRAFFIC_COUNT) return FALSE;
  if (c == CM_TRAFFIC_ACTIVATION && in_elems != out_elems) return FALSE; /* e.g. SwiGLU */
  const CmOpTraffic *t = &f->traffic[c];
  if (t->forward == 0 && t->backward == 0) return FALSE;
  double n = c == CM_TRAFFIC_LOSS ? in_elems : out_elems;
  *forward = n * (t->forward * elem_bytes + t->forward_fp32 * 4.0 + t->mask);
  *backward = n * (t->backward * elem_bytes + t->backward_fp32 * 4.0 + t->mask);
  return TRUE;
}

/* The optimizer step's host synchronizations (cm_framework.h). Megatron-LM's train_step ->
 * optimizer.step() (megatron/optimizer/optimizer.py, MixedPrecisionOptimizer.step; the same in
 * megatron/core/optimizer/optimizer.py):
 *  - fp16 only (a grad scaler: --fp16 or --loss-scale): _unscale_main_grads_and_check_for_nan
 *    runs torch._amp_foreach_non_finite_check_and_unscale_, all-reduces found_inf (MAX) over
 *    the model-parallel group and reads found_inf.item() before anything else is launched.
 *    The kernels before it: the cast of the fp16 grads into fp32 main grads (2 read, 4
 *    written) and the unscale (8): 14 bytes per parameter (cm_adam_bytes_per_param's fp16
 *    terms, cm_compute.c). PyTorch's GradScaler does the same (scaler.step reads
 *    found_inf.item() before optimizer.step): pytorch-eager has it too.
 *  - clip_grad_norm_fp32 (megatron/optimizer/clip_grads.py, --clip-grad 1.0 by default):
 *    multi_tensor_l2norm over the fp32 grads (4 bytes), an all-reduce of the norm over the
 *    model-parallel group, then total_norm.item() before the clip and FusedAdam are launched.
 *    DeepSpeed reads its global norm the same way (megatron-deepspeed: deepspeed/runtime/zero/
 *    stage_1_and_2.py get_grad_norm_direct all-reduces total_norm_cuda, then
 *    total_norm_cuda[0].item()); CUDA-graph
 *    runs replay the forward and backward only, the optimizer stays eager (cuda-graphs). Plain
 *    PyTorch's torch.nn.utils.clip_grad_norm_ computes the clip coefficient on the device (no
 *    .item()): pytorch-eager has no norm sync. */
int cm_framework_step_syncs(const CmFramework *f, DevDtype dtype, double *bytes_before) {
  g_return_val_if_fail(bytes_before, 0);
  int n = 0;
  if (!f) return 0;
  if (dtype == DEV_DTYPE_FP16) bytes_before[n++] = (2 + 4) + 8;
  if (f->grad_norm_sync) bytes_before[n++] = 4;
  return n;
}

double cm_framework_sync_s(const CmFramework *f) {
  g_return_val_if_fail(f, 0);
  return HOST_SYNC_ROUNDTRIP_S;
}

/* Megatron-LM, megatron/arguments.py (NVIDIA/Megatron-LM, 2022 and since: megatron/training/
 * arguments.py): "bfloat16 requires gradient accumulation and all-reduce to be done in fp32", so
 * --bf16 forces accumulate_allreduce_grads_in_fp32 and the DistributedDataParallel grad buffer
 * (param.main_grad, one contiguous buffer per dtype) is torch.float: 4 bytes per parameter; the
 * bf16 .grad the autograd engine produces is added into it and freed (or never materialized under
 * gradient-accumulation fusion, where the dW GEMM writes main_grad). fp16 keeps the default
 * (accumulate_allreduce_grads_in_fp32 off): a 16-bit buffer. */
double cm_framework_grad_bytes(MdlFramework kind, DevDtype dtype) {
  gboolean megatron = kind == MDL_FRAMEWORK_MEGATRON_LM || kind == MDL_FRAMEWORK_CUDA_GRAPHS;
  if (megatron && dtype == DEV_DTYPE_BF16) return 4.0;
  return dev_dtype_bytes(dtype);
}
