/* validate/runner_gpu/fill — GEMM operands filled with pseudo-random values instead of zeros.
 *
 * Why: a tensor-core GEMM on all-zero (or otherwise predictable) inputs toggles fewer bits, draws
 * less power and so holds higher clocks than on real training data; measured with zeros, GEMMs
 * look faster than they run in training (H. He, "Strangely, Matrix Multiplications on GPUs Run
 * Faster When Given 'Predictable' Data!", thonking.ai, 2024; Bekman's mamf-finder.py times
 * torch.randn inputs for the same reason). Values are uniform in [-1, 1), encoded in the
 * operand's format, from a fixed seed (the same bytes on every run). */
#include "validate/runner_gpu/rg_fill.h"

#include <math.h>
#include <string.h>

/* xorshift64* (Vigna 2016): a fast, fixed-seed generator; quality is not at stake here. */
static guint64 next(guint64 *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

/* E4M3 (OCP 8-bit floating point spec, v1.0): sign, 4 exponent bits (bias 7), 3 mantissa bits;
 * |x| < 1 here, values below the smallest normal (2^-6) become zero. */
static guint8 e4m3(float x) {
  guint8 sign = x < 0 ? 0x80 : 0;
  float a = fabsf(x);
  if (a < 0.015625f) return sign;
  int e;
  float m = frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1): a = (2m) * 2^(e-1) */
  int exponent = e - 1 + 7, mantissa = (int)((2 * m - 1) * 8);
  return (guint8)(sign | (exponent << 3) | (mantissa & 7));
}

static void encode(RgFill kind, float x, guint8 *out) {
  switch (kind) {
  case RG_FILL_FP32: memcpy(out, &x, 4); break;
  case RG_FILL_BF16: {
    guint32 bits;
    memcpy(&bits, &x, 4);
    guint16 hi = (guint16)(bits >> 16);
    memcpy(out, &hi, 2);
    break;
  }
  case RG_FILL_FP16: {
    _Float16 h = (_Float16)x;
    memcpy(out, &h, 2);
    break;
  }
  case RG_FILL_E4M3: *out = e4m3(x); break;
  }
}

size_t rg_fill_size(RgFill kind) {
  return kind == RG_FILL_FP32 ? 4 : kind == RG_FILL_E4M3 ? 1 : 2;
}

RgFill rg_fill_for(ValDtype dtype) {
  return dtype == VAL_DTYPE_FP16 ? RG_FILL_FP16
         : dtype == VAL_DTYPE_BF16 ? RG_FILL_BF16
                                   : RG_FILL_FP32;
}

cudaError_t rg_fill_random(void *ptr, size_t bytes, RgFill kind) {
  if (!ptr || bytes == 0) return cudaSuccess;
  size_t size = rg_fill_size(kind), chunk = MIN(bytes, (size_t)16 << 20) / size * size;
  if (chunk == 0) return cudaMemset(ptr, 0, bytes);
  guint8 *host = g_malloc(chunk);
  guint64 state = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < chunk; i += size) {
    float x = (float)((double)(next(&state) >> 11) * 0x1p-53 * 2 - 1);
    encode(kind, x, host + i);
  }
  /* The chunk repeats over the buffer; a tail shorter than one element stays as it was. */
  cudaError_t e = cudaSuccess;
  for (size_t off = 0; off < bytes && e == cudaSuccess; off += chunk)
    e = cudaMemcpy((guint8 *)ptr + off, host, MIN(chunk, bytes - off) / size * size,
                   cudaMemcpyHostToDevice);
  g_free(host);
  return e;
}
