#!/usr/bin/env python3
"""Scaled dot-product attention at GPT-2 small's sizes in nabla (the fused op and the composite formula)
and in PyTorch eager (torch.nn.functional.scaled_dot_product_attention and the explicit formula), in one run.

Run from the repository root:

    python3 scripts/bench_attention.py [--rounds 3] [--repeats 10] [--skip-build]

The nabla side is crates/nabla/examples/bench_attention.rs. Inputs are f32, causal, scale 1/8:
`train` [4, 12, 256, 64] forward + backward (GPT-2 small at batch 4, context 256), `long`
[1, 12, 1024, 64] forward + backward (GPT-2's full context), `infer` [4, 12, 256, 64] forward only.
Each training step makes q, k and v leaves, multiplies the output by a fixed random cotangent, sums and
runs backward. Rounds alternate the frameworks; the table shows medians over rounds and the ratios
against nabla's fused op (above 1 = the fused op is faster).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_support import median_time, run_example_times  # noqa: E402

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
WORKLOADS = {"train": ((4, 12, 256, 64), True), "long": ((1, 12, 1024, 64), True), "infer": ((4, 12, 256, 64), False)}
VARIANTS = ("fused", "composite", "torch_sdpa", "torch_math")


def run_torch(repeats: int) -> dict:
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    times = {}
    for name, (shape, train) in WORKLOADS.items():
        q, k, v, c = (torch.randn(shape) for _ in range(4))
        length = shape[2]
        mask = torch.full((length, length), float("-inf")).triu(1)

        def sdpa(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

        def math_formula(q, k, v):
            scores = q @ k.transpose(-2, -1) / math.sqrt(shape[-1]) + mask
            return torch.softmax(scores, -1) @ v

        for variant, f in (("torch_sdpa", sdpa), ("torch_math", math_formula)):
            def step():
                if not train:
                    with torch.no_grad():
                        f(q, k, v)
                    return
                leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
                (f(*leaves) * c).sum().backward()

            times[(name, variant)] = median_time(step, repeats) * 1e3
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--skip-build", action="store_true")
    args = ap.parse_args()
    if not args.skip_build:
        subprocess.run(
            ["cargo", "build", "--release", "-p", "nabla", "--example", "bench_attention"], cwd=REPO, check=True
        )
    rounds = []
    for r in range(args.rounds):
        times = run_example_times("bench_attention", args.repeats)
        times.update(run_torch(args.repeats))
        rounds.append(times)
        print(f"round {r + 1}: " + ", ".join(f"{n} {v} {ms:.2f} ms" for (n, v), ms in sorted(times.items())))
    print(f"{'workload':<9}" + "".join(f"{v + ' ms':>15}" for v in VARIANTS) + "".join(f"{v + '/fused':>18}" for v in VARIANTS[1:]))
    for name in WORKLOADS:
        med = {v: statistics.median(t[(name, v)] for t in rounds) for v in VARIANTS}
        ratio = {v: statistics.median(t[(name, v)] / t[(name, "fused")] for t in rounds) for v in VARIANTS[1:]}
        spread = {v: (min(t[(name, v)] for t in rounds), max(t[(name, v)] for t in rounds)) for v in VARIANTS}
        print(f"{name:<9}" + "".join(f"{med[v]:>15.2f}" for v in VARIANTS) + "".join(f"{ratio[v]:>18.2f}" for v in VARIANTS[1:]))
        print(f"{'  range':<9}" + "".join(f"{f'{lo:.1f}-{hi:.1f}':>15}" for lo, hi in (spread[v] for v in VARIANTS)))


if __name__ == "__main__":
    main()
