#!/usr/bin/env python3
"""costmodel/dispatch_bench.py with every tensor on the GPU: the per-op and per-layer host time
of PyTorch eager when each op also launches its CUDA kernel(s), on the same CPU as a CPU-only
run of dispatch_bench.py. The GPU keeps up with these one-element ops, so what is timed is the
host: Python, the dispatcher, autograd, the caching allocator and cudaLaunchKernel.
Prints dispatch_bench.py's JSON with "device" added.

usage: torch_dispatch_gpu.py [--repeats R] [--chain N]
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "costmodel"))
import dispatch_bench  # noqa: E402

if __name__ == "__main__":
    if not torch.cuda.is_available():
        sys.exit("torch_dispatch_gpu.py: no CUDA device visible to PyTorch")
    torch.set_default_device("cuda")
    print('{"device": "%s", "result":' % torch.cuda.get_device_name(0))
    sys.stdout.flush()
    dispatch_bench.main()
    print("}")
