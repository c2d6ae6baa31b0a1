#!/usr/bin/env python3
"""Softmax, log-softmax and layer norm, forward + backward, in nabla (fused row ops and the composite formula)
and in PyTorch eager (its fused kernels), in one run.

Run from the repository root:

    python3 scripts/bench_fused_rows.py [--rounds 3] [--repeats 20] [--skip-build]

The nabla side is crates/nabla/examples/bench_fused_rows.rs. Shapes (f32) are the GPT benchmarks':
softmax over attention scores [32, 4, 64, 64] (last axis), log-softmax over logits of GPT-2's
vocabulary [256, 50257] (last axis; what cross-entropy runs), layer norm over [32, 64, 128] (last
axis, eps 1e-5). Each step makes the input a leaf, computes the op, multiplies by a fixed random cotangent,
sums, and runs backward. Rounds alternate the frameworks; the table shows medians over rounds and
the ratios torch/nabla (above 1 = nabla faster) and composite/fused.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_support import median_time, run_example_times  # noqa: E402

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SHAPES = {"softmax": (32, 4, 64, 64), "log_softmax": (256, 50257), "layer_norm": (32, 64, 128)}


def run_torch(repeats: int) -> dict:
    import torch

    torch.manual_seed(0)
    times = {}
    for name, shape in SHAPES.items():
        x = torch.randn(shape)
        c = torch.randn(shape)
        if name == "softmax":
            f = lambda v: torch.softmax(v, -1)
        elif name == "log_softmax":
            f = lambda v: torch.log_softmax(v, -1)
        else:
            f = lambda v: torch.nn.functional.layer_norm(v, (shape[-1],), eps=1e-5)

        def step():
            v = x.clone().requires_grad_(True)
            (f(v) * c).sum().backward()

        times[(name, "torch")] = median_time(step, repeats) * 1e3
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--skip-build", action="store_true")
    args = ap.parse_args()
    if not args.skip_build:
        subprocess.run(
            ["cargo", "build", "--release", "-p", "nabla", "--example", "bench_fused_rows"], cwd=REPO, check=True
        )
    rounds = []
    for r in range(args.rounds):
        times = run_example_times("bench_fused_rows", args.repeats)
        times.update(run_torch(args.repeats))
        rounds.append(times)
        print(f"round {r + 1}: " + ", ".join(f"{n} {v} {ms:.3f} ms" for (n, v), ms in sorted(times.items())))
    print(f"{'op':<12}{'fused ms':>10}{'composite ms':>14}{'torch ms':>10}{'composite/fused':>17}{'torch/fused':>13}")
    for name in SHAPES:
        med = {v: statistics.median(t[(name, v)] for t in rounds) for v in ("fused", "composite", "torch")}
        ratio = lambda v: statistics.median(t[(name, v)] / t[(name, "fused")] for t in rounds)
        print(
            f"{name:<12}{med['fused']:>10.3f}{med['composite']:>14.3f}{med['torch']:>10.3f}"
            f"{ratio('composite'):>17.2f}{ratio('torch'):>13.2f}"
        )


if __name__ == "__main__":
    main()
