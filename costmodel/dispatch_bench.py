#!/usr/bin/env python3
"""Per-op host cost of PyTorch eager: the framework time of one op's dispatch, which a GPU
run pays on the host before cudaLaunchKernel (costmodel/FRAMEWORKS.md).

Runs on the CPU build of PyTorch (Debian: apt-get install python3-torch) on one-element tensors,
so the op's own kernel is negligible and what is timed is Python, the dispatcher and autograd
bookkeeping. Forward ops are timed with autograd recording (requires_grad inputs, as in
training); backward as one backward() through a chain of the same op, divided by its length.
Also times a 12-layer stack of a plain-PyTorch GPT-2 block (Block below) the same way: its
forward and backward per layer. Prints one JSON object: per op and per block layer the median
microseconds over repeats, and the host it ran on.

usage: dispatch_bench.py [--repeats R] [--chain N]
"""
import argparse
import json
import platform
import statistics
import time

import torch
import torch.nn.functional as F


def ops(width):
    w = torch.randn(width, width, requires_grad=True)
    b = torch.randn(width, requires_grad=True)
    g = torch.ones(width, requires_grad=True)
    return {
        "add": lambda x: x + x,
        "mul": lambda x: x * 1.5,
        "linear": lambda x: F.linear(x, w, b),
        "matmul": lambda x: torch.matmul(x, w),
        "layer_norm": lambda x: F.layer_norm(x, (width,), g, b),
        "softmax": lambda x: F.softmax(x, dim=-1),
        "gelu": lambda x: F.gelu(x),
        "dropout": lambda x: F.dropout(x, 0.1, training=True),
    }


class Block(torch.nn.Module):
    """A GPT-2 block written with plain torch.nn modules, as nanoGPT's model.py (without flash
    attention) and Hugging Face's eager GPT-2: what a pytorch-eager layer dispatches. On a GPU
    its forward launches 18 kernels (ln, addmm, bmm, mul, masked_fill, softmax, dropout, bmm,
    contiguous copy, addmm, dropout, add, ln, addmm, gelu, addmm, dropout, add)."""

    def __init__(self, h, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = torch.nn.LayerNorm(h)
        self.c_attn = torch.nn.Linear(h, 3 * h)
        self.c_proj = torch.nn.Linear(h, h)
        self.attn_dropout = torch.nn.Dropout(0.1)
        self.resid_dropout = torch.nn.Dropout(0.1)
        self.ln_2 = torch.nn.LayerNorm(h)
        self.c_fc = torch.nn.Linear(h, 4 * h)
        self.gelu = torch.nn.GELU()
        self.mlp_proj = torch.nn.Linear(4 * h, h)
        self.mlp_dropout = torch.nn.Dropout(0.1)

    def attn(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(c, dim=2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (k.size(-1) ** 0.5))
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.resid_dropout(self.c_proj(y))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp_dropout(self.mlp_proj(self.gelu(self.c_fc(self.ln_2(x)))))


def time_blocks(layers, repeats):
    """Median seconds per layer of a stack's forward and of its backward."""
    torch.manual_seed(0)
    stack = torch.nn.Sequential(*[Block(16, 2) for _ in range(layers)]).train()
    fwd, bwd = [], []
    for r in range(repeats + 3):
        x = torch.randn(1, 4, 16, requires_grad=True)
        t0 = time.perf_counter()
        y = stack(x)
        t1 = time.perf_counter()
        y.sum().backward()
        t2 = time.perf_counter()
        if r >= 3:
            fwd.append((t1 - t0) / layers)
            bwd.append((t2 - t1) / layers)
    return statistics.median(fwd), statistics.median(bwd)


def time_chain(fn, x, n, backward):
    y = x
    t0 = time.perf_counter()
    for _ in range(n):
        y = fn(y)
    t1 = time.perf_counter()
    if not backward:
        return (t1 - t0) / n
    s = y.sum()
    t2 = time.perf_counter()
    s.backward()
    t3 = time.perf_counter()
    return (t3 - t2) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--chain", type=int, default=200)
    args = ap.parse_args()
    torch.set_num_threads(1)
    width = 1
    result = {"torch": torch.__version__, "python": platform.python_version(),
              "cpu": platform.processor() or platform.machine(), "chain": args.chain,
              "repeats": args.repeats, "unit": "us per op (median)", "forward": {},
              "backward": {}}
    for name, fn in ops(width).items():
        for phase in ("forward", "backward"):
            samples = []
            for r in range(args.repeats + 3):
                x = torch.randn(1, width, requires_grad=True)
                t = time_chain(fn, x, args.chain, phase == "backward")
                if r >= 3:  # warm-up
                    samples.append(t * 1e6)
            result[phase][name] = round(statistics.median(samples), 2)
    f, b = time_blocks(12, args.repeats)
    result["gpt_block"] = {"layers": 12, "forward_us_per_layer": round(f * 1e6, 1),
                           "backward_us_per_layer": round(b * 1e6, 1), "forward_kernels": 18}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
