#!/usr/bin/env python3
"""The optimizer step's passes, measured on a GPU: what stratsim charges per parameter
(costmodel/cm_compute.c, cm_adam_bytes_per_param: FusedAdam 28 B, the grad-norm 4 B, the
fp32 -> bf16 parameter copy 6 B, zeroing the fp32 grad buffer 4 B) against PyTorch's fused
multi-tensor kernels on the same parameter layout: fp32 main parameters and gradients split
into tensors as a GPT's layers are (per layer: qkv, proj, fc1, fc2 weights and their biases
and norms).

Prints CSV: pass, params, tensors, time_us (median of --repeats after 3 warm-ups, CUDA events),
bytes_per_param (the pass's nominal traffic), achieved_GBps.

usage: torch_optimizer_bench.py [--hidden H] [--layers L] [--repeats R]
"""
import argparse

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_kernels_bench import timed  # noqa: E402


def layer_shapes(h):
    return [(3 * h, h), (3 * h,), (h, h), (h,), (4 * h, h), (4 * h,), (h, 4 * h), (h,),
            (h,), (h,), (h,), (h,)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    torch.manual_seed(0)
    dev = "cuda"
    shapes = [s for _ in range(args.layers) for s in layer_shapes(args.hidden)]
    params = [torch.randn(s, device=dev) for s in shapes]
    grads = [torch.randn(s, device=dev) * 1e-3 for s in shapes]
    model16 = [torch.empty(s, device=dev, dtype=torch.bfloat16) for s in shapes]
    for p, g in zip(params, grads):
        p.grad = g
    n = sum(p.numel() for p in params)
    opt = torch.optim.AdamW([torch.nn.Parameter(p) for p in params], lr=1e-4, fused=True)
    for p, g in zip(opt.param_groups[0]["params"], grads):
        p.grad = g
    opt.step()  # allocates m and v
    passes = [
        ("fused_adamw", lambda: opt.step(), 28),
        ("grad_l2norm", lambda: torch._foreach_norm(grads, 2), 4),
        ("copy_fp32_to_bf16", lambda: torch._foreach_copy_(model16, params), 6),
        ("zero_fp32_grads", lambda: torch._foreach_zero_(grads), 4),
    ]
    print("# device: %s; torch %s; %d tensors, %d parameters (GPT layers h=%d x %d)"
          % (torch.cuda.get_device_name(0), torch.__version__, len(params), n, args.hidden,
             args.layers))
    print("pass,params,tensors,time_us,bytes_per_param,achieved_GBps")
    for name, fn, b in passes:
        t = timed(fn, args.repeats, calls=1)
        print("%s,%d,%d,%.1f,%d,%.1f" % (name, n, len(params), t, b, b * n / (t * 1e-6) / 1e9))


if __name__ == "__main__":
    main()
