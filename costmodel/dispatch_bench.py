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


# --- A Megatron-LM layer's host-side structure (NVIDIA/Megatron-LM megatron/model/transformer.py,
# megatron/core/tensor_parallel/layers.py, mappings.py, random.py, megatron/model/fused_*.py,
# megatron/model/distributed.py; commit 00baee46), at tensor-parallel size 1, written from
# its structure (not its code): the same modules, autograd Functions, TorchScript fusions,
# RNG-tracker fork and gradient hooks, each doing on the CPU what its CUDA kernel does. On a
# GPU the layer launches 13 kernels forward and 40 backward (costmodel/cm_framework.c).


class _Identity(torch.autograd.Function):
    """copy_to / reduce_from_tensor_model_parallel_region at tp=1: Functions that return their
    input (no kernel)."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g


class _LinearAccum(torch.autograd.Function):
    """LinearWithGradAccumulationAndAsyncCommunication: matmul (+ bias when not skipped);
    backward dX = dY W, dW accumulated into main_grad (gradient-accumulation fusion: one GEMM
    writing main_grad), the bias gradient as a sum."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        ctx.use_bias = bias is not None
        out = torch.matmul(x, weight.t())
        if bias is not None:
            out = out + bias
        return out

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        gx = g.matmul(weight)
        g2, x2 = g.view(-1, g.shape[-1]), x.view(-1, x.shape[-1])
        weight.main_grad.addmm_(g2.t(), x2)
        gb = g2.sum(dim=0) if ctx.use_bias else None
        return gx, None, gb


class _MegatronLinear(torch.nn.Module):
    def __init__(self, n_in, n_out, skip_bias_add, row):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(n_out, n_in))
        self.weight.main_grad = torch.zeros(n_out, n_in)
        self.bias = torch.nn.Parameter(torch.zeros(n_out))
        self.skip_bias_add, self.row = skip_bias_add, row

    def forward(self, x):
        if not self.row:
            x = _Identity.apply(x)
        out = _LinearAccum.apply(x, self.weight, None if self.skip_bias_add else self.bias)
        if self.row:
            out = _Identity.apply(out)
        return out, (self.bias if self.skip_bias_add else None)


class _FusedLayerNorm(torch.autograd.Function):
    """apex FusedLayerNormAffineFunction: one forward kernel; backward input and gamma/beta
    gradients."""

    @staticmethod
    def forward(ctx, x, gamma, beta, shape):
        out, mean, rstd = torch.native_layer_norm(x, shape, gamma, beta, 1e-5)
        ctx.save_for_backward(x, gamma, beta, mean, rstd)
        ctx.shape = shape
        return out

    @staticmethod
    def backward(ctx, g):
        x, gamma, beta, mean, rstd = ctx.saved_tensors
        gx, gg, gb = torch.ops.aten.native_layer_norm_backward(
            g, x, ctx.shape, mean, rstd, gamma, beta, [True, True, True])
        return gx, gg, gb, None


class _MegatronLayerNorm(torch.nn.Module):
    def __init__(self, h):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(h))
        self.bias = torch.nn.Parameter(torch.zeros(h))
        self.shape = (h,)

    def forward(self, x):
        return _FusedLayerNorm.apply(x, self.weight, self.bias, self.shape)


class _UpperTriangSoftmax(torch.autograd.Function):
    """scaled_upper_triang_masked_softmax: scale, causal mask and softmax in one kernel;
    backward one kernel from the saved probabilities."""

    @staticmethod
    def forward(ctx, x, scale):
        probs = torch.softmax(x * scale, dim=-1)
        ctx.save_for_backward(probs)
        ctx.scale = scale
        return probs

    @staticmethod
    def backward(ctx, g):
        (probs,) = ctx.saved_tensors
        return torch._softmax_backward_data(g, probs, -1, probs.dtype) * ctx.scale, None


class _FusedScaleMaskSoftmax(torch.nn.Module):
    def forward(self, scores, scale):
        b, np_, sq, sk = scores.size()
        if sq == sk and sk <= 4096 and np_ >= 1:  # is_kernel_available's checks
            x = scores.view(-1, sq, sk)
            return _UpperTriangSoftmax.apply(x, scale).view(b, np_, sq, sk)
        return torch.softmax(scores * scale, dim=-1)


class _RngFork:
    """CudaRNGStatesTracker.fork(): save the default generator state, set the model-parallel
    one, restore (torch.cuda.get/set_rng_state on a GPU)."""

    def __init__(self):
        self.state = torch.get_rng_state()

    def __enter__(self):
        self.saved = torch.get_rng_state()
        torch.set_rng_state(self.state)

    def __exit__(self, *exc):
        self.state = torch.get_rng_state()
        torch.set_rng_state(self.saved)


@torch.jit.script
def _bias_dropout_add(x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor,
                      prob: float) -> torch.Tensor:
    out = torch.nn.functional.dropout(x + bias, p=prob, training=True)
    return residual + out


@torch.jit.script
def _bias_gelu(bias: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x = bias + y
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


@torch.jit.script
def _bias_gelu_back(g: torch.Tensor, bias: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x = bias + y
    tanh_out = torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x))
    ff = 0.5 * x * ((1 - tanh_out * tanh_out) * (0.79788456 + 0.1070322243 * x * x)) + \
        0.5 * (1 + tanh_out)
    return ff * g


class _GeLUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, y, bias):
        ctx.save_for_backward(y, bias)
        return _bias_gelu(bias, y)

    @staticmethod
    def backward(ctx, g):
        y, bias = ctx.saved_tensors
        tmp = _bias_gelu_back(g, bias, y)
        return tmp, tmp


class MegatronBlock(torch.nn.Module):
    """ParallelTransformerLayer at tp=1: input_layernorm, ParallelAttention (ColumnParallelLinear
    QKV with its bias, CoreAttention: baddbmm into a preallocated buffer, FusedScaleMaskSoftmax,
    attention dropout under the RNG tracker's fork, bmm, permute + contiguous; RowParallelLinear
    dense with its bias skipped), bias_dropout_add_fused_train, post_attention_layernorm,
    ParallelMLP (ColumnParallelLinear, bias_gelu_impl, RowParallelLinear), bias_dropout_add."""

    def __init__(self, h, heads):
        super().__init__()
        self.h, self.heads = h, heads
        self.input_layernorm = _MegatronLayerNorm(h)
        self.query_key_value = _MegatronLinear(h, 3 * h, False, False)
        self.scale_mask_softmax = _FusedScaleMaskSoftmax()
        self.attention_dropout = torch.nn.Dropout(0.1)
        self.dense = _MegatronLinear(h, h, True, True)
        self.post_attention_layernorm = _MegatronLayerNorm(h)
        self.dense_h_to_4h = _MegatronLinear(h, 4 * h, True, False)
        self.dense_4h_to_h = _MegatronLinear(4 * h, h, True, True)
        self.rng = _RngFork()
        self.buffer = None

    def attention(self, x):
        sq, b, _ = x.size()
        hn = self.h // self.heads
        mixed, _ = self.query_key_value(x)
        mixed = mixed.view(sq, b, self.heads, 3 * hn)
        q, k, v = torch.split(mixed, hn, dim=3)
        q = q.reshape(sq, b * self.heads, hn)
        k = k.reshape(sq, b * self.heads, hn)
        if self.buffer is None:  # mpu.get_global_memory_buffer().get_tensor
            self.buffer = torch.empty(b * self.heads, sq, sq)
        scores = torch.baddbmm(self.buffer, q.transpose(0, 1), k.transpose(0, 1).transpose(1, 2),
                               beta=0.0, alpha=1.0)
        probs = self.scale_mask_softmax(scores.view(b, self.heads, sq, sq), hn ** -0.5)
        with self.rng:
            probs = self.attention_dropout(probs)
        v = v.reshape(sq, b * self.heads, hn)
        context = torch.bmm(probs.view(b * self.heads, sq, sq), v.transpose(0, 1))
        context = context.view(b, self.heads, sq, hn).permute(2, 0, 1, 3).contiguous()
        return self.dense(context.view(sq, b, self.h))

    def forward(self, x):
        ln = self.input_layernorm(x)
        out, bias = self.attention(ln)
        x = _bias_dropout_add(out, bias.expand_as(x), x, 0.1)
        ln = self.post_attention_layernorm(x)
        y, bias = self.dense_h_to_4h(ln)
        y = _GeLUFunction.apply(y, bias)
        out, bias = self.dense_4h_to_h(y)
        return _bias_dropout_add(out, bias.expand_as(x), x, 0.1)


def add_main_grad_hooks(stack):
    """DistributedDataParallel's per-parameter hook: a gradient the fused dW GEMM did not
    write to main_grad (biases, layernorm gamma/beta) is added into it and freed."""
    for p in stack.parameters():
        if hasattr(p, "main_grad"):
            continue
        p.main_grad = torch.zeros_like(p)

        def hook(g, p=p):
            p.main_grad.add_(g)
            return None
        p.register_hook(hook)


def time_blocks(layers, repeats, block=None):
    """Median seconds per layer of a stack's forward and of its backward."""
    torch.manual_seed(0)
    if block is None:
        stack = torch.nn.Sequential(*[Block(16, 2) for _ in range(layers)]).train()
    else:
        stack = torch.nn.Sequential(*[block() for _ in range(layers)]).train()
        add_main_grad_hooks(stack)
    fwd, bwd = [], []
    for r in range(repeats + 3):
        # b=1, s=4, h=16: [b, s, h] for the GPT-2 block, Megatron's [s, b, h]
        x = torch.randn(*((1, 4, 16) if block is None else (4, 1, 16)), requires_grad=True)
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
    f, b = time_blocks(12, args.repeats, lambda: MegatronBlock(16, 2))
    result["megatron_block"] = {"layers": 12, "forward_us_per_layer": round(f * 1e6, 1),
                                "backward_us_per_layer": round(b * 1e6, 1),
                                "forward_kernels": 13, "backward_kernels": 40}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
