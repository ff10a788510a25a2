/* validate/runner_gpu/bench — stratsim-gpubench: the micro-benchmarks that calibrate stratsim's
 * device figures on a real GPU (README.md in this folder, "stratsim-gpubench"). Plain C against
 * the CUDA runtime, cuBLAS and cuBLASLt; the one kernel of its own (an empty kernel, for launch
 * overhead) is PTX text loaded at run time with cudaLibraryLoadData, so no .cu file is needed.
 *
 * It writes CSV files into a folder:
 *  - gemm.csv (operands random, not zeros: rg_fill.c): per GEMM shape (m, n, k, batch, cuBLAS transposes, dtype) the mean kernel time of
 *    back-to-back calls (as a training step issues them) and the TFLOP/s it implies. Shapes are
 *    those of Megatron GPT layers (forward TN, data-gradient NN, weight-gradient NT, as PyTorch's
 *    F.linear calls cuBLAS) over hidden sizes, tensor-parallel degrees and token counts, the
 *    output layer over common vocabularies, attention's batched GEMMs, and a square sweep;
 *  - membw.csv: device-to-device copy and memset bandwidth by size;
 *  - launch.csv: host and device cost of kernel launches, synchronizations and a small cuBLAS
 *    call (what a framework pays per kernel besides its own dispatch);
 *  - env.csv: the device, driver, runtime and library versions, clocks.
 * Every time is the median of several timed repetitions after untimed warm-up runs. */
#include "validate/runner_gpu/rg_fill.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  FILE *out;
  cudaStream_t stream;
  cublasHandle_t blas;
  cublasLtHandle_t lt;
  void *a, *b, *c, *workspace;
  size_t buffer_bytes, workspace_bytes;
  cudaEvent_t start, end;
  int repeats;
  gboolean quick;
  gboolean graph;     /* time GEMMs replayed from a CUDA graph: device time, no host launch cost */
  double max_gflop;   /* skip GEMMs above this (0: none skipped) */
  const char *filter; /* only GEMMs whose label contains this (NULL: all) */
  gboolean all_nn;    /* run every GEMM as NN (stratsim-runner's layout) instead of its own */
} Bench;

static void die_cuda(cudaError_t s, const char *what) {
  if (s == cudaSuccess) return;
  fprintf(stderr, "stratsim-gpubench: %s: %s\n", what, cudaGetErrorString(s));
  exit(1);
}
static void die_blas(cublasStatus_t s, const char *what) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  fprintf(stderr, "stratsim-gpubench: %s: cuBLAS status %d\n", what, (int)s);
  exit(1);
}
#define CK(call) die_cuda((call), #call)
#define BK(call) die_blas((call), #call)

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef enum { DT_FP32, DT_TF32, DT_FP16, DT_BF16, DT_FP8 } Dtype;
static const char *dtype_names[] = {"fp32", "tf32", "fp16", "bf16", "fp8"};
static size_t dtype_size(Dtype d) { return d == DT_FP8 ? 1 : d <= DT_TF32 ? 4 : 2; }

typedef struct {
  const char *what;   /* e.g. "fc1-fwd h=4096 tp=2 tokens=4096" */
  int m, n, k, batch;
  char ta, tb;        /* 'N' or 'T' (cuBLAS column-major) */
} Shape;

/* One cuBLAS (or cuBLASLt for fp8) GEMM call on the bench stream. */
typedef struct {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulAlgo_t algo;
  gboolean ok;
} LtPlan;

static gboolean lt_plan(Bench *bn, const Shape *s, LtPlan *p) {
  /* FP8 on Hopper's tensor cores takes A transposed and B not ("TN" only): cuBLASLt
   * documentation, cublasLtMatmul, FP8 restrictions. E4M3 inputs, bf16 output, fp32 compute. */
  memset(p, 0, sizeof *p);
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  if (cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F)) return FALSE;
  cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
  cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
  if (cublasLtMatrixLayoutCreate(&p->la, CUDA_R_8F_E4M3, s->k, s->m, s->k) ||
      cublasLtMatrixLayoutCreate(&p->lb, CUDA_R_8F_E4M3, s->k, s->n, s->k) ||
      cublasLtMatrixLayoutCreate(&p->lc, CUDA_R_16BF, s->m, s->n, s->m))
    return FALSE;
  cublasLtMatmulPreference_t pref;
  if (cublasLtMatmulPreferenceCreate(&pref)) return FALSE;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &bn->workspace_bytes, sizeof bn->workspace_bytes);
  cublasLtMatmulHeuristicResult_t heur;
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(bn->lt, p->desc, p->la, p->lb, p->lc, p->lc,
                                                      pref, 1, &heur, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st || !found) return FALSE;
  p->algo = heur.algo;
  p->ok = TRUE;
  return TRUE;
}

static void lt_free(LtPlan *p) {
  if (p->la) cublasLtMatrixLayoutDestroy(p->la);
  if (p->lb) cublasLtMatrixLayoutDestroy(p->lb);
  if (p->lc) cublasLtMatrixLayoutDestroy(p->lc);
  if (p->desc) cublasLtMatmulDescDestroy(p->desc);
}

static void gemm_call(Bench *bn, const Shape *s, Dtype d, LtPlan *lt) {
  float one = 1.0f, zero = 0.0f;
  if (d == DT_FP8) {
    BK(cublasLtMatmul(bn->lt, lt->desc, &one, bn->a, lt->la, bn->b, lt->lb, &zero, bn->c, lt->lc,
                      bn->c, lt->lc, &lt->algo, bn->workspace, bn->workspace_bytes, bn->stream));
    return;
  }
  cudaDataType_t t = d == DT_FP16 ? CUDA_R_16F : d == DT_BF16 ? CUDA_R_16BF : CUDA_R_32F;
  cublasComputeType_t ct = d == DT_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  cublasOperation_t ta = s->ta == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t tb = s->tb == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N;
  int lda = s->ta == 'T' ? s->k : s->m, ldb = s->tb == 'T' ? s->n : s->k;
  BK(cublasGemmStridedBatchedEx(bn->blas, ta, tb, s->m, s->n, s->k, &one, bn->a, t, lda,
                                (long long)s->m * s->k, bn->b, t, ldb, (long long)s->k * s->n,
                                &zero, bn->c, t, s->m, (long long)s->m * s->n, s->batch, ct,
                                CUBLAS_GEMM_DEFAULT));
}

/* Mean seconds per call over @calls back-to-back calls, median over bn->repeats. With
 * bn->graph the calls are captured once into a CUDA graph and the graph is replayed: the
 * kernels' own time with no host launch cost between them. */
static double time_calls(Bench *bn, int calls, void (*fn)(Bench *, const void *, int),
                         const void *arg, int argi) {
  double *v = g_new(double, bn->repeats);
  if (bn->graph) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(bn->stream, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < calls; i++) fn(bn, arg, argi);
    CK(cudaStreamEndCapture(bn->stream, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    CK(cudaGraphLaunch(exec, bn->stream));
    for (int r = 0; r < bn->repeats; r++) {
      CK(cudaEventRecord(bn->start, bn->stream));
      CK(cudaGraphLaunch(exec, bn->stream));
      CK(cudaEventRecord(bn->end, bn->stream));
      CK(cudaEventSynchronize(bn->end));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, bn->start, bn->end));
      v[r] = ms * 1e-3 / calls;
    }
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    double m = median(v, bn->repeats);
    g_free(v);
    return m;
  }
  for (int r = 0; r < bn->repeats; r++) {
    CK(cudaEventRecord(bn->start, bn->stream));
    for (int i = 0; i < calls; i++) fn(bn, arg, argi);
    CK(cudaEventRecord(bn->end, bn->stream));
    CK(cudaEventSynchronize(bn->end));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, bn->start, bn->end));
    v[r] = ms * 1e-3 / calls;
  }
  double m = median(v, bn->repeats);
  g_free(v);
  return m;
}

typedef struct {
  const Shape *s;
  Dtype d;
  LtPlan *lt;
} GemmArg;
static void gemm_fn(Bench *bn, const void *arg, int unused) {
  (void)unused;
  const GemmArg *g = arg;
  gemm_call(bn, g->s, g->d, g->lt);
}

static void bench_gemm(Bench *bn, const Shape *s, Dtype d) {
  size_t e = dtype_size(d);
  size_t need_a = (size_t)s->m * s->k * s->batch * e, need_b = (size_t)s->k * s->n * s->batch * e;
  size_t need_c = (size_t)s->m * s->n * s->batch * (d == DT_FP8 ? 2 : e);
  if (need_a > bn->buffer_bytes || need_b > bn->buffer_bytes || need_c > bn->buffer_bytes) return;
  if (bn->max_gflop > 0 && 2.0 * s->m * s->n * (double)s->k * s->batch > bn->max_gflop * 1e9) return;
  if (bn->filter && !strstr(s->what, bn->filter)) return;
  Shape nn = *s;
  if (bn->all_nn && d != DT_FP8) {
    nn.ta = nn.tb = 'N';
    s = &nn;
  }
  LtPlan lt = {0};
  if (d == DT_FP8 && (s->batch != 1 || !lt_plan(bn, s, &lt))) {
    lt_free(&lt);
    return;
  }
  GemmArg g = {s, d, &lt};
  for (int i = 0; i < 3; i++) gemm_call(bn, s, d, &lt);
  CK(cudaStreamSynchronize(bn->stream));
  double flops = 2.0 * s->m * s->n * (double)s->k * s->batch;
  /* Enough back-to-back calls for about 20 ms per repetition (at least 3, at most 500). */
  double probe = time_calls(bn, 3, gemm_fn, &g, 0);
  int calls = (int)CLAMP(0.02 / (probe > 0 ? probe : 1e-6), 3, bn->quick ? 50 : 500);
  double t = time_calls(bn, calls, gemm_fn, &g, 0);
  /* fp8 runs as TN whatever the layer's layout (lt_plan). */
  fprintf(bn->out, "\"%s\",%s,%d,%d,%d,%d,%c%c,%d,%.4f,%.2f\n", s->what, dtype_names[d], s->batch,
          s->m, s->n, s->k, d == DT_FP8 ? 'T' : s->ta, d == DT_FP8 ? 'N' : s->tb, calls, t * 1e6,
          flops / t / 1e12);
  fflush(bn->out);
  lt_free(&lt);
}

static void add_shape(GArray *shapes, char *what, int m, int n, int k, int batch, char ta,
                      char tb) {
  Shape s = {what, m, n, k, batch, ta, tb};
  g_array_append_val(shapes, s);
}

/* A linear layer y[T, out] = x[T, in] W^T as PyTorch calls cuBLAS (column-major): forward TN
 * with m=out, n=T, k=in; data gradient NN with m=in, n=T, k=out; weight gradient NT with m=in,
 * n=out, k=T. */
static void add_linear(GArray *shapes, const char *name, int h, int tp, int tokens, int in,
                       int out, gboolean backward) {
  add_shape(shapes, g_strdup_printf("%s-fwd h=%d tp=%d tokens=%d", name, h, tp, tokens), out,
            tokens, in, 1, 'T', 'N');
  if (!backward) return;
  add_shape(shapes, g_strdup_printf("%s-dgrad h=%d tp=%d tokens=%d", name, h, tp, tokens), in,
            tokens, out, 1, 'N', 'N');
  add_shape(shapes, g_strdup_printf("%s-wgrad h=%d tp=%d tokens=%d", name, h, tp, tokens), in,
            out, tokens, 1, 'N', 'T');
}

static GArray *shapes_gpt(gboolean quick) {
  GArray *shapes = g_array_new(FALSE, FALSE, sizeof(Shape));
  static const int hs[] = {1024, 2048, 4096, 6144, 8192, 12288};
  static const int tps[] = {1, 2, 4, 8};
  static const int tokens[] = {1024, 2048, 4096, 8192};
  for (guint hi = 0; hi < G_N_ELEMENTS(hs); hi++)
    for (guint ti = 0; ti < G_N_ELEMENTS(tps); ti++)
      for (guint ni = 0; ni < G_N_ELEMENTS(tokens); ni++) {
        int h = hs[hi], tp = tps[ti], T = tokens[ni];
        if (quick && (ni % 2 || ti % 2)) continue;
        add_linear(shapes, "qkv", h, tp, T, h, 3 * h / tp, TRUE);
        add_linear(shapes, "proj", h, tp, T, h / tp, h, TRUE);
        add_linear(shapes, "fc1", h, tp, T, h, 4 * h / tp, TRUE);
        add_linear(shapes, "fc2", h, tp, T, 4 * h / tp, h, TRUE);
      }
  /* Output layer over GPT-2's, GPT-3's padded and Llama 3's vocabularies. */
  static const int vocab[] = {50257, 51200, 128256};
  for (guint vi = 0; vi < G_N_ELEMENTS(vocab); vi++)
    for (guint hi = 0; hi < G_N_ELEMENTS(hs); hi += 2)
      for (guint ti = 0; ti < G_N_ELEMENTS(tps); ti += 3)
        add_linear(shapes, "logits", hs[hi], tps[ti], 4096, hs[hi], vocab[vi] / tps[ti], TRUE);
  /* Attention's batched GEMMs (unfused attention, as Megatron's core attention without flash):
   * scores[s, s] = Q K^T and context[s, d] = P V per (micro-batch x head), head dim 64 or 128. */
  static const int seqs[] = {1024, 2048, 4096};
  static const int dims[] = {64, 128};
  static const int heads[] = {8, 16, 32};
  for (guint si = 0; si < G_N_ELEMENTS(seqs); si++)
    for (guint di = 0; di < G_N_ELEMENTS(dims); di++)
      for (guint bi = 0; bi < G_N_ELEMENTS(heads); bi++) {
        int s = seqs[si], d = dims[di], b = heads[bi];
        add_shape(shapes, g_strdup_printf("attn-scores s=%d d=%d heads=%d", s, d, b), s, s, d, b,
                  'T', 'N');
        add_shape(shapes, g_strdup_printf("attn-context s=%d d=%d heads=%d", s, d, b), d, s, s, b,
                  'N', 'N');
      }
  /* Square sweep, powers of two and between. */
  for (int m = 128; m <= 16384; m = m < 1024 ? m * 2 : m + (m >= 8192 ? 4096 : 1024))
    add_shape(shapes, g_strdup_printf("square %d", m), m, m, m, 1, 'T', 'N');
  return shapes;
}

/* ---- memory bandwidth ---- */
typedef struct {
  size_t bytes;
  gboolean memset;
} CopyArg;
static void copy_fn(Bench *bn, const void *arg, int unused) {
  (void)unused;
  const CopyArg *c = arg;
  if (c->memset)
    CK(cudaMemsetAsync(bn->b, 0, c->bytes, bn->stream));
  else
    CK(cudaMemcpyAsync(bn->b, bn->a, c->bytes, cudaMemcpyDeviceToDevice, bn->stream));
}

static void bench_membw(Bench *bn) {
  fprintf(bn->out, "op,bytes,calls,time_us,gbps_moved\n");
  for (int pass = 0; pass < 2; pass++)
    for (size_t bytes = 1 << 16; bytes <= bn->buffer_bytes && bytes <= ((size_t)4 << 30);
         bytes *= 4) {
      CopyArg c = {bytes, pass == 1};
      copy_fn(bn, &c, 0);
      CK(cudaStreamSynchronize(bn->stream));
      double probe = time_calls(bn, 3, copy_fn, &c, 0);
      int calls = (int)CLAMP(0.02 / (probe > 0 ? probe : 1e-6), 3, 1000);
      double t = time_calls(bn, calls, copy_fn, &c, 0);
      /* A copy reads and writes its bytes; a memset only writes them. */
      double moved = (pass == 1 ? 1.0 : 2.0) * (double)bytes;
      fprintf(bn->out, "%s,%zu,%d,%.3f,%.1f\n", pass ? "memset" : "memcpy-d2d", bytes, calls,
              t * 1e6, moved / t / 1e9);
    }
}

/* ---- launches ---- */
static const char empty_ptx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry stratsim_empty()\n{\n\tret;\n}\n";

static double now_s(void) { return (double)g_get_monotonic_time() * 1e-6; }

static void bench_launch(Bench *bn) {
  cudaLibrary_t lib;
  cudaKernel_t kernel;
  CK(cudaLibraryLoadData(&lib, empty_ptx, NULL, NULL, 0, NULL, NULL, 0));
  CK(cudaLibraryGetKernel(&kernel, lib, "stratsim_empty"));
  dim3 one = {1, 1, 1};
  fprintf(bn->out, "what,count,value_us,note\n");
  /* Host time of one launch, the queue never full: batches of 256 then a synchronize. */
  double *v = g_new(double, bn->repeats);
  for (int r = 0; r < bn->repeats; r++) {
    double host = 0;
    for (int batch = 0; batch < 40; batch++) {
      double t0 = now_s();
      for (int i = 0; i < 256; i++)
        CK(cudaLaunchKernel((const void *)kernel, one, one, NULL, 0, bn->stream));
      host += now_s() - t0;
      CK(cudaStreamSynchronize(bn->stream));
    }
    v[r] = host / (40 * 256);
  }
  fprintf(bn->out, "launch-host,%d,%.3f,cudaLaunchKernel host time of an empty kernel\n", 40 * 256,
          median(v, bn->repeats) * 1e6);
  /* Device time per back-to-back empty kernel when launched from the host (host may limit). */
  for (int r = 0; r < bn->repeats; r++) {
    CK(cudaEventRecord(bn->start, bn->stream));
    for (int i = 0; i < 1000; i++)
      CK(cudaLaunchKernel((const void *)kernel, one, one, NULL, 0, bn->stream));
    CK(cudaEventRecord(bn->end, bn->stream));
    CK(cudaEventSynchronize(bn->end));
    float ms;
    CK(cudaEventElapsedTime(&ms, bn->start, bn->end));
    v[r] = ms * 1e-3 / 1000;
  }
  fprintf(bn->out, "launch-stream-gap,1000,%.3f,device time per empty kernel launched back to back\n",
          median(v, bn->repeats) * 1e6);
  /* The same kernels captured in a CUDA graph: the device's own per-kernel cost. */
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CK(cudaStreamBeginCapture(bn->stream, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < 1000; i++)
    CK(cudaLaunchKernel((const void *)kernel, one, one, NULL, 0, bn->stream));
  CK(cudaStreamEndCapture(bn->stream, &graph));
  CK(cudaGraphInstantiate(&exec, graph, 0));
  CK(cudaGraphLaunch(exec, bn->stream));
  CK(cudaStreamSynchronize(bn->stream));
  for (int r = 0; r < bn->repeats; r++) {
    CK(cudaEventRecord(bn->start, bn->stream));
    CK(cudaGraphLaunch(exec, bn->stream));
    CK(cudaEventRecord(bn->end, bn->stream));
    CK(cudaEventSynchronize(bn->end));
    float ms;
    CK(cudaEventElapsedTime(&ms, bn->start, bn->end));
    v[r] = ms * 1e-3 / 1000;
  }
  fprintf(bn->out, "graph-kernel-gap,1000,%.3f,device time per empty kernel inside a CUDA graph\n",
          median(v, bn->repeats) * 1e6);
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
  /* A launch and a synchronize on an idle stream: the round trip a host sync (.item()) costs. */
  for (int r = 0; r < bn->repeats; r++) {
    double t0 = now_s();
    for (int i = 0; i < 1000; i++) {
      CK(cudaLaunchKernel((const void *)kernel, one, one, NULL, 0, bn->stream));
      CK(cudaStreamSynchronize(bn->stream));
    }
    v[r] = (now_s() - t0) / 1000;
  }
  fprintf(bn->out, "launch-sync-roundtrip,1000,%.3f,host time of launch + cudaStreamSynchronize\n",
          median(v, bn->repeats) * 1e6);
  for (int r = 0; r < bn->repeats; r++) {
    double t0 = now_s();
    for (int i = 0; i < 1000; i++) CK(cudaStreamSynchronize(bn->stream));
    v[r] = (now_s() - t0) / 1000;
  }
  fprintf(bn->out, "sync-idle,1000,%.3f,cudaStreamSynchronize on an idle stream\n",
          median(v, bn->repeats) * 1e6);
  for (int r = 0; r < bn->repeats; r++) {
    double t0 = now_s();
    for (int i = 0; i < 1000; i++) CK(cudaEventRecord(bn->start, bn->stream));
    v[r] = (now_s() - t0) / 1000;
    CK(cudaStreamSynchronize(bn->stream));
  }
  fprintf(bn->out, "event-record-host,1000,%.3f,cudaEventRecord host time\n",
          median(v, bn->repeats) * 1e6);
  /* A tiny cuBLAS GEMM's host time (its launch path: heuristics cache, one or two kernels). */
  Shape tiny = {"tiny", 64, 64, 64, 1, 'T', 'N'};
  for (int r = 0; r < bn->repeats; r++) {
    double host = 0;
    for (int batch = 0; batch < 20; batch++) {
      double t0 = now_s();
      for (int i = 0; i < 128; i++) gemm_call(bn, &tiny, DT_BF16, NULL);
      host += now_s() - t0;
      CK(cudaStreamSynchronize(bn->stream));
    }
    v[r] = host / (20 * 128);
  }
  fprintf(bn->out, "cublas-gemm-host,2560,%.3f,cublasGemmStridedBatchedEx bf16 64^3 host time\n",
          median(v, bn->repeats) * 1e6);
  g_free(v);
  CK(cudaLibraryUnload(lib));
}

static void bench_env(Bench *bn) {
  int dev = 0, driver = 0, runtime = 0, blas = 0;
  struct cudaDeviceProp p;
  CK(cudaGetDevice(&dev));
  CK(cudaGetDeviceProperties(&p, dev));
  CK(cudaDriverGetVersion(&driver));
  CK(cudaRuntimeGetVersion(&runtime));
  BK(cublasGetVersion(bn->blas, &blas));
  int clock_khz = 0, mem_clock_khz = 0, bus_bits = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev);
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, dev);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev);
  fprintf(bn->out, "key,value\n");
  fprintf(bn->out, "device,\"%s\"\n", p.name);
  fprintf(bn->out, "compute_capability,%d.%d\n", p.major, p.minor);
  fprintf(bn->out, "sms,%d\n", p.multiProcessorCount);
  fprintf(bn->out, "memory_bytes,%zu\n", p.totalGlobalMem);
  fprintf(bn->out, "sm_clock_max_khz,%d\n", clock_khz);
  fprintf(bn->out, "memory_clock_khz,%d\n", mem_clock_khz);
  fprintf(bn->out, "memory_bus_bits,%d\n", bus_bits);
  fprintf(bn->out, "cuda_driver,%d\n", driver);
  fprintf(bn->out, "cuda_runtime,%d\n", runtime);
  fprintf(bn->out, "cublas,%d\n", blas);
  fprintf(bn->out, "cublaslt,%zu\n", cublasLtGetVersion());
}

static FILE *open_out(const char *dir, const char *name) {
  char *path = g_build_filename(dir, name, NULL);
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "stratsim-gpubench: cannot write %s: %s\n", path, g_strerror(errno));
    exit(1);
  }
  g_free(path);
  return f;
}

int main(int argc, char **argv) {
  const char *dir = NULL, *only = NULL;
  gboolean quick = FALSE, graph = FALSE, all_nn = FALSE;
  const char *filter = NULL;
  double max_gflop = 0;
  int repeats = 5;
  GOptionEntry entries[] = {
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &dir, "folder for the CSV files (required)", "DIR"},
      {"only", 0, 0, G_OPTION_ARG_STRING, &only, "one of env, gemm, membw, launch", "PART"},
      {"quick", 0, 0, G_OPTION_ARG_NONE, &quick, "fewer shapes and calls", NULL},
      {"repeats", 0, 0, G_OPTION_ARG_INT, &repeats, "timed repetitions per figure (median)", "N"},
      {"graph", 0, 0, G_OPTION_ARG_NONE, &graph, "gemm: replay the calls from a CUDA graph (device time only)", NULL},
      {"max-gflop", 0, 0, G_OPTION_ARG_DOUBLE, &max_gflop, "gemm: only GEMMs of at most this many GFLOP", "G"},
      {"filter", 0, 0, G_OPTION_ARG_STRING, &filter, "gemm: only GEMMs whose label contains TEXT", "TEXT"},
      {"nn", 0, 0, G_OPTION_ARG_NONE, &all_nn, "gemm: every GEMM as NN (stratsim-runner's layout)", NULL},
      {NULL}};
  GOptionContext *ctx = g_option_context_new("- stratsim's GPU micro-benchmarks");
  g_option_context_add_main_entries(ctx, entries, NULL);
  GError *err = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &err) || !dir || repeats < 1 || repeats > 99) {
    fprintf(stderr, "stratsim-gpubench: %s\n",
            err ? err->message : !dir ? "-o DIR is required" : "--repeats must be 1-99");
    return 2;
  }
  g_option_context_free(ctx);
  if (g_mkdir_with_parents(dir, 0755) != 0) {
    fprintf(stderr, "stratsim-gpubench: cannot create %s: %s\n", dir, g_strerror(errno));
    return 1;
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
    fprintf(stderr, "stratsim-gpubench: no CUDA device visible\n");
    return 1;
  }
  Bench bn = {.repeats = repeats, .quick = quick, .graph = graph, .max_gflop = max_gflop,
           .filter = filter, .all_nn = all_nn};
  CK(cudaSetDevice(0));
  CK(cudaStreamCreateWithFlags(&bn.stream, cudaStreamNonBlocking));
  BK(cublasCreate(&bn.blas));
  BK(cublasSetStream(bn.blas, bn.stream));
  BK(cublasLtCreate(&bn.lt));
  CK(cudaEventCreate(&bn.start));
  CK(cudaEventCreate(&bn.end));
  bn.buffer_bytes = (size_t)3 << 30;  /* 3 GiB per operand: 16384^2 fp32, 128256 x 12288 bf16 */
  bn.workspace_bytes = (size_t)32 << 20;  /* PyTorch's cuBLAS workspace on Hopper is 32 MiB */
  CK(cudaMalloc(&bn.a, bn.buffer_bytes));
  CK(cudaMalloc(&bn.b, bn.buffer_bytes));
  CK(cudaMalloc(&bn.c, bn.buffer_bytes));
  CK(cudaMalloc(&bn.workspace, bn.workspace_bytes));
  CK(cudaMemset(bn.a, 0, bn.buffer_bytes));
  CK(cudaMemset(bn.b, 0, bn.buffer_bytes));
  BK(cublasSetWorkspace(bn.blas, bn.workspace, bn.workspace_bytes));
  if (!only || !strcmp(only, "env")) {
    bn.out = open_out(dir, "env.csv");
    bench_env(&bn);
    fclose(bn.out);
  }
  if (!only || !strcmp(only, "launch")) {
    bn.out = open_out(dir, "launch.csv");
    bench_launch(&bn);
    fclose(bn.out);
  }
  if (!only || !strcmp(only, "membw")) {
    bn.out = open_out(dir, "membw.csv");
    bench_membw(&bn);
    fclose(bn.out);
  }
  if (!only || !strcmp(only, "gemm")) {
    bn.out = open_out(dir, graph ? "gemm_graph.csv" : all_nn ? "gemm_nn.csv" : "gemm.csv");
    fprintf(bn.out, "shape,dtype,batch,m,n,k,trans,calls,time_us,tflops\n");
    GArray *shapes = shapes_gpt(quick);
    static const Dtype all[] = {DT_BF16, DT_FP8, DT_FP16, DT_TF32};
    static const RgFill fills[] = {RG_FILL_BF16, RG_FILL_E4M3, RG_FILL_FP16, RG_FILL_FP32};
    for (guint di = 0; di < (quick ? 1u : G_N_ELEMENTS(all)); di++) {
      /* Random operands in the dtype's encoding (rg_fill.c: zeros run at higher clocks). */
      CK(rg_fill_random(bn.a, bn.buffer_bytes, fills[di]));
      CK(rg_fill_random(bn.b, bn.buffer_bytes, fills[di]));
      for (guint i = 0; i < shapes->len; i++) {
        const Shape *s = &g_array_index(shapes, Shape, i);
        /* fp16 and tf32: the square sweep and the tp=1 layers only (bf16 has them all). */
        if ((all[di] == DT_FP16 || all[di] == DT_TF32) && !strstr(s->what, "square") &&
            !strstr(s->what, "tp=1 "))
          continue;
        bench_gemm(&bn, s, all[di]);
      }
    }
    fclose(bn.out);
  }
  fprintf(stderr, "stratsim-gpubench: wrote %s\n", dir);
  return 0;
}
