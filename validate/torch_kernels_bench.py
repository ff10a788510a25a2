#!/usr/bin/env python3
"""Memory-bound kernels of a transformer layer measured on a GPU: PyTorch's bf16 layer norm,
softmax, GELU, dropout and add at Megatron activation sizes, each timed over back-to-back
calls with CUDA events (median of --repeats). Prints CSV: op, shape, elements, bytes (the
kernel's nominal traffic: inputs read once, outputs written once; dropout also writes its
1-byte mask), time_us, achieved_GBps. stratsim charges such kernels their bytes at 0.80 of the
device's HBM bandwidth (costmodel/cm_compute.c, memory_efficiency).

usage: torch_kernels_bench.py [--repeats R]
"""
import argparse
import statistics

import torch
import torch.nn.functional as F


def timed(fn, repeats, calls=20):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        fn()
    samples = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3 / calls)
    return statistics.median(samples)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    dt = torch.bfloat16
    print("op,shape,elements,bytes,time_us,achieved_GBps")
    rows = []
    for tokens, h in ((4096, 1024), (4096, 4096), (16384, 4096), (8192, 8192)):
        x = torch.randn(tokens, h, device="cuda", dtype=dt)
        w = torch.ones(h, device="cuda", dtype=dt)
        b = torch.zeros(h, device="cuda", dtype=dt)
        n = x.numel()
        rows.append(("layer_norm", "%dx%d" % (tokens, h), n, 4 * n,
                     lambda x=x, h=h, w=w, b=b: F.layer_norm(x, (h,), w, b)))
        x2 = torch.randn(tokens, h, device="cuda", dtype=dt)
        rows.append(("add", "%dx%d" % (tokens, h), n, 6 * n, lambda x=x, x2=x2: x + x2))
        y = torch.randn(tokens, 4 * h, device="cuda", dtype=dt)
        rows.append(("gelu", "%dx%d" % (tokens, 4 * h), y.numel(), 4 * y.numel(),
                     lambda y=y: F.gelu(y, approximate="tanh")))
        rows.append(("dropout", "%dx%d" % (tokens, h), n, 5 * n,
                     lambda x=x: F.dropout(x, 0.1, training=True)))
    for heads_b, s in ((32, 1024), (64, 2048)):
        z = torch.randn(heads_b, s, s, device="cuda", dtype=dt)
        rows.append(("softmax", "%dx%dx%d" % (heads_b, s, s), z.numel(), 4 * z.numel(),
                     lambda z=z: torch.softmax(z, dim=-1)))
    for op, shape, n, nbytes, fn in rows:
        t = timed(fn, args.repeats)
        print("%s,%s,%d,%d,%.2f,%.1f" % (op, shape, n, nbytes, t, nbytes / (t * 1e-6) / 1e9),
              flush=True)


if __name__ == "__main__":
    main()
