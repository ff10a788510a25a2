#!/usr/bin/env python3
"""Host-bound or not: a Megatron-LM GPT layer stack run by PyTorch on a real GPU.

Runs costmodel/dispatch_bench.py's MegatronBlock (a Megatron-LM ParallelTransformerLayer at
tp=1 written from its structure: the same modules, autograd Functions, TorchScript fusions and
gradient hooks) on CUDA in bf16, for a set of (layers, hidden, heads, sequence, micro-batch)
configurations, and prints one CSV row per configuration and phase (forward, backward):

  host_ms    time for Python to return from the phase, no synchronization: what the host spends
             dispatching and launching (when the GPU keeps up, the host's own cost);
  wall_ms    time for the phase with a synchronization at its end;
  gpu_ms     the sum of the phase's CUDA kernel durations from torch.profiler (CUPTI);
  kernels    the phase's CUDA kernel count per layer from the profiler (stratsim's framework
             profile charges 13 forward / 40 backward kernels per Megatron-LM layer);
  host_bound wall_ms - gpu_ms: time the GPU sat idle, waiting on the host.

Each figure is the median over --repeats timed runs after 3 untimed ones. The embedding, the
output layer and the optimizer are not run: the rows are a layer stack's own host and GPU costs.

usage: torch_layer_bench.py [--repeats R] [--quick]
"""
import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "costmodel"))
import dispatch_bench  # noqa: E402


def build(layers, h, heads):
    torch.manual_seed(0)
    stack = torch.nn.Sequential(*[dispatch_bench.MegatronBlock(h, heads)
                                  for _ in range(layers)]).train()
    dispatch_bench.add_main_grad_hooks(stack)
    return stack


def run_phase(stack, x, phase, y=None):
    if phase == "forward":
        return stack(x)
    y.float().sum().backward()
    return None


def measure(layers, h, heads, seq, mb, repeats):
    stack = build(layers, h, heads)
    host = {"forward": [], "backward": []}
    wall = {"forward": [], "backward": []}
    for r in range(repeats + 3):
        x = torch.randn(seq, mb, h, requires_grad=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        y = stack(x)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        y.float().sum().backward()
        t3 = time.perf_counter()
        torch.cuda.synchronize()
        t4 = time.perf_counter()
        if r >= 3:
            host["forward"].append(t1 - t0)
            wall["forward"].append(t2 - t0)
            host["backward"].append(t3 - t2)
            wall["backward"].append(t4 - t2)
    gpu, kernels = {}, {}
    x = torch.randn(seq, mb, h, requires_grad=True)
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=acts) as prof:
        y = stack(x)
        torch.cuda.synchronize()
    gpu["forward"], kernels["forward"] = kernel_sum(prof)
    with torch.profiler.profile(activities=acts) as prof:
        y.float().sum().backward()
        torch.cuda.synchronize()
    gpu["backward"], kernels["backward"] = kernel_sum(prof)
    rows = []
    for phase in ("forward", "backward"):
        h_ms = statistics.median(host[phase]) * 1e3
        w_ms = statistics.median(wall[phase]) * 1e3
        rows.append((layers, h, heads, seq, mb, phase, h_ms, w_ms, gpu[phase] * 1e3,
                     kernels[phase] / layers, w_ms - gpu[phase] * 1e3))
    return rows


def kernel_sum(prof):
    total, count = 0.0, 0
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            total += ev.device_time_total * 1e-6 if hasattr(ev, "device_time_total") \
                else ev.cuda_time_total * 1e-6
            count += 1
    return total, count


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_layer_bench.py: no CUDA device visible to PyTorch")
    torch.set_default_device("cuda")
    torch.set_default_dtype(torch.bfloat16)
    configs = []
    for layers, h, heads in ((12, 1024, 16), (24, 1024, 16), (24, 2048, 16), (12, 4096, 32)):
        for seq in (256, 512, 1024, 2048):
            for mb in (1, 2, 4, 8):
                if args.quick and (seq != 1024 or mb > 2):
                    continue
                configs.append((layers, h, heads, seq, mb))
    print("# device: %s; torch %s; CUDA %s; one process, bf16, MegatronBlock (tp=1)"
          % (torch.cuda.get_device_name(0), torch.__version__, torch.version.cuda))
    print("layers,hidden,heads,seq,micro_batch,phase,host_ms,wall_ms,gpu_ms,"
          "kernels_per_layer,host_bound_ms")
    for c in configs:
        try:
            rows = measure(*c, args.repeats)
        except torch.cuda.OutOfMemoryError:
            print("# %s: out of memory" % (c,))
            torch.cuda.empty_cache()
            continue
        for r in rows:
            print("%d,%d,%d,%d,%d,%s,%.3f,%.3f,%.3f,%.1f,%.3f" % r, flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
