#!/usr/bin/env python3
"""Writes SYNTHETIC nccl-tests output for the calibration tests. No GPU was run.

Every file this script writes is made up: a documented ground-truth model plus fixed, seeded
noise, printed in the exact layout nccl-tests' src/common.cu prints (header, "Using devices"
rank lines, the out-of-place / in-place table, the "# Avg bus bandwidth" trailer). The ground
truth is deliberately NOT the calibration's own model (one alpha + n beta line, or a table):
it imitates NCCL's protocol switching (LL / LL128 / Simple), so the measured bus bandwidth
ramps with size and jumps where the protocol changes.

Ground truth, per protocol P:
    busbw_P(n) = B_P / (1 + (h_P / n) ** GAMMA)          (a ramp: few channels busy at small n)
    t_P(n)     = L_P + factor * n / busbw_P(n)
NCCL's tuner picks a protocol from its own model (tuning.cc: latency + size / bandwidth), not
from the true curves, so near a crossover it may pick the slower protocol. Two tuners:
  "biased" (the data sets the acceptance tests use): the tuner's estimate of each protocol is
      its true time times a fixed bias, TUNER_BIAS = {LL: 1.00, LL128: 0.96, Simple: 1.04}, and
      P*(n) = argmin_P  t_P(n) * TUNER_BIAS[P]
    so around each crossover the measured curve follows the slower protocol for a while and
    then steps by up to 1.04 / 0.96 - 1 = 8%;
  "linear" (the stress data set, *.linear-tuner.txt): the tuner's estimate has no ramp,
      P*(n) = argmin_P  L_P + factor * n / B_P
    which switches to Simple while Simple's true curve is still far up its ramp: the time jumps
    by about a third at the LL128 -> Simple switch and stays off the best protocol for a factor
    of four in size.
The "measured" time of each column is t_{P*}(n) * exp(N(0, SIGMA)), a separate draw for the
out-of-place and the in-place column, from random.Random(SEED) (Mersenne Twister; the same
numbers on every Python 3). Sizes run from the first to the last by factors of 2 (nccl-tests
-f 2); the *.between.txt set measures the sizes 1.5 x 2^k in between, from the same curves with
another seed, to check predictions at sizes a sweep never measured.

The figures (L_P, B_P, h_P) are illustrative, picked to look like public nccl-tests sweeps of
an 8 x A100 NVSwitch host and two such hosts over 8 x 200 Gb/s InfiniBand (FIELD-NOTES,
"Collective calibration"); they are not measurements and nothing should be read from them.

Usage: python3 gen_nccl_tests.py [OUTDIR]   (default: this script's directory)
"""
import math
import os
import random
import sys

GAMMA = 0.7
SIGMA = 0.015  # 1.5% log-normal run-to-run noise

TUNER_BIAS = {"LL": 1.00, "LL128": 0.96, "Simple": 1.04}

# Protocols {P: (L_P seconds, B_P bytes/s, h_P bytes)} per system.
AR_2X8 = {"LL": (20e-6, 40e9, 16 << 10), "LL128": (30e-6, 150e9, 256 << 10),
          "Simple": (45e-6, 190e9, 4 << 20)}
AG_1X8 = {"LL": (10e-6, 60e9, 8 << 10), "LL128": (14e-6, 200e9, 128 << 10),
          "Simple": (20e-6, 230e9, 2 << 20)}
SR_2X1 = {"LL": (12e-6, 6e9, 8 << 10), "LL128": (16e-6, 20e9, 64 << 10),
          "Simple": (24e-6, 23.5e9, 1 << 20)}

# name, nccl-tests program, ranks, hosts, bus bandwidth factor, redop, first size, last size,
# protocols, tuner, seed
DATASETS = [
    ("all_reduce_perf.2x8.txt", "all_reduce_perf", 16, 2, lambda p: 2 * (p - 1) / p, "sum",
     8, 4 << 30, AR_2X8, "biased", 1234),
    ("all_reduce_perf.2x8.between.txt", "all_reduce_perf", 16, 2, lambda p: 2 * (p - 1) / p,
     "sum", 12, 3 << 30, AR_2X8, "biased", 4321),
    ("all_gather_perf.1x8.txt", "all_gather_perf", 8, 1, lambda p: (p - 1) / p, "none",
     256, 4 << 30, AG_1X8, "biased", 5678),
    ("sendrecv_perf.2x1.txt", "sendrecv_perf", 2, 2, lambda p: 1.0, "sum",
     8, 1 << 30, SR_2X1, "biased", 91011),
    ("all_reduce_perf.2x8.linear-tuner.txt", "all_reduce_perf", 16, 2,
     lambda p: 2 * (p - 1) / p, "sum", 8, 4 << 30, AR_2X8, "linear", 1234),
]


def protocol_time(protocols, p, factor, n):
    lat, bw, half = protocols[p]
    return lat + factor * n / (bw / (1 + (half / n) ** GAMMA))


def true_time(protocols, tuner, factor, n):
    if tuner == "biased":
        chosen = min(protocols,
                     key=lambda p: protocol_time(protocols, p, factor, n) * TUNER_BIAS[p])
    else:
        chosen = min(protocols, key=lambda p: protocols[p][0] + factor * n / protocols[p][1])
    return protocol_time(protocols, chosen, factor, n)


def time_str(us):
    # nccl-tests src/common.cu: "%7.0f" from 10000 us, "%7.1f" from 100 us, else "%7.2f"
    if us >= 10000.0:
        return "%7.0f" % us
    if us >= 100.0:
        return "%7.1f" % us
    return "%7.2f" % us


def write(outdir, name, program, ranks, hosts, factor_of, redop, first, last, protocols, tuner,
          seed):
    rng = random.Random(seed)
    factor = factor_of(ranks)
    per_host = ranks // hosts
    lines = [
        "# SYNTHETIC: made by tests/data/nccl-tests/gen_nccl_tests.py, no GPU was run (README.md)",
        "# Collective test starting: %s" % program,
        "# nThread 1 nGpus 1 minBytes %d maxBytes %d step: 2(factor) warmup iters: 5 iters: 20 "
        "agg iters: 1 validation: 1 graph: 0" % (first, last),
        "#",
        "# Using devices",
    ]
    for r in range(ranks):
        host = "synth-node%d" % (r // per_host)
        lines.append("#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s"
                     % (r, 0, 40000 + r, host, r % per_host, 7 + 16 * (r % per_host),
                        "NVIDIA A100-SXM4-80GB"))
    lines.append("#")
    lines.append("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          "
                 % ("", "", "", "", ""))
    lines.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s"
                 % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                    "time", "algbw", "busbw", "#wrong"))
    lines.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s"
                 % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)",
                    "(GB/s)", "(GB/s)", ""))
    busbw_sum, columns = 0.0, 0
    n = first
    while n <= last:
        count = n // 4 // (ranks if program == "all_gather_perf" else 1)
        row = "%12d  %12d  %8s  %6s  %6s" % (n, count, "float", redop, "-1")
        for _ in range(2):  # out-of-place, in-place
            t = true_time(protocols, tuner, factor, n) * math.exp(rng.gauss(0.0, SIGMA))
            algbw = n / 1e9 / t
            busbw = algbw * factor
            busbw_sum += busbw
            columns += 1
            row += "  %7s  %6.2f  %6.2f  %5g" % (time_str(t * 1e6), algbw, busbw, 0)
        lines.append(row)
        n *= 2
    lines.append("# Out of bounds values : 0 OK")
    lines.append("# Avg bus bandwidth    : %g " % (busbw_sum / columns))
    lines.append("#")
    with open(os.path.join(outdir, name), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for d in DATASETS:
        write(outdir, *d)


if __name__ == "__main__":
    main()
