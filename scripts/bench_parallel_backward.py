#!/usr/bin/env python3
"""nabla's reverse pass on one thread and on two, against PyTorch eager's, in one run.

Run from the repository root:

    python3 scripts/bench_parallel_backward.py                 # 5 rounds of 20 passes
    python3 scripts/bench_parallel_backward.py --rounds 3 --repeats 10 --json out.json

The nabla side is crates/nabla/examples/bench_parallel_backward.rs (built with
`cargo build --release -p nabla --example bench_parallel_backward`): it alternates
`ParallelBackward::Off` and `Auto` (or `MinElements`) in one process, checks that their gradients are bitwise equal and
prints one JSON line per workload. This script then times the same models in PyTorch (default
intra-op threads, as a user runs it): the backward pass only, after an untimed forward pass, median of
--repeats passes per round, median over rounds.

Workloads (f32): `heads` (attention with a projection per head, x [128, 256], 8 heads of width 32)
and `inception` (1x1, 3x3, 5x5 convolutions and a pooled 1x1 convolution on [16, 32, 16, 16],
concatenated); the controls `mlp` and `chain` have no independent branches and run in nabla only.

Ratios: `speedup` is nabla one thread / nabla two; `torch/nabla` is PyTorch's backward time over
nabla's with two lanes (above 1 means nabla is faster). PyTorch's CPU autograd engine runs the
backward pass on one thread; its kernels use the intra-op pool.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
HEADS = 8


def run_nabla(rounds: int, repeats: int) -> dict:
    subprocess.run(
        ["cargo", "build", "--release", "-p", "nabla", "--example", "bench_parallel_backward"],
        cwd=REPO,
        check=True,
    )
    exe = os.path.join(REPO, "target", "release", "examples", "bench_parallel_backward")
    out = subprocess.run(
        [exe, "--rounds", str(rounds), "--repeats", str(repeats)],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    )
    sys.stderr.write(out.stderr)
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return {row["workload"]: row for row in rows}


def torch_models(torch):
    def randn(*shape, scale=1.0):
        return (torch.randn(*shape) * scale).requires_grad_()

    def heads():
        x = randn(128, 256)
        ws = [randn(256, 32, scale=0.0625) for _ in range(3 * HEADS)]
        wo = randn(256, 256, scale=0.0625)

        def loss():
            outs = []
            for h in range(HEADS):
                wq, wk, wv = ws[3 * h : 3 * h + 3]
                scores = (x @ wq) @ (x @ wk).t() * 0.176
                outs.append(scores.softmax(-1) @ (x @ wv))
            return (torch.cat(outs, 1) @ wo).square().mean()

        return loss

    def inception():
        F = torch.nn.functional
        x = randn(16, 32, 16, 16)
        w1, w3 = randn(16, 32, 1, 1, scale=0.17), randn(16, 32, 3, 3, scale=0.06)
        w5, wp = randn(8, 32, 5, 5, scale=0.035), randn(8, 32, 1, 1, scale=0.17)

        def loss():
            pooled = F.conv2d(F.max_pool2d(x, 3, 1, 1), wp)
            branches = [F.conv2d(x, w1), F.conv2d(x, w3, padding=1), F.conv2d(x, w5, padding=2), pooled]
            return torch.cat(branches, 1).relu().square().mean()

        return loss

    return {"heads": heads(), "inception": inception()}


def time_torch(loss, rounds: int, repeats: int) -> float:
    medians = []
    for _ in range(rounds):
        runs = []
        for k in range(repeats + 2):
            y = loss()
            start = time.perf_counter()
            y.backward()
            if k >= 2:
                runs.append(time.perf_counter() - start)
        medians.append(statistics.median(runs))
    return statistics.median(medians)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    nabla = run_nabla(args.rounds, args.repeats)
    try:
        import torch
    except ImportError:
        torch = None
        print("PyTorch is not installed: reporting nabla alone")
    results = []
    for name, row in nabla.items():
        row = dict(row)
        if torch is not None and name in ("heads", "inception"):
            torch.manual_seed(0)
            row["torch_s"] = time_torch(torch_models(torch)[name], args.rounds, args.repeats)
            row["torch_over_nabla"] = row["torch_s"] / row["parallel_s"]
        results.append(row)
        line = (
            f"{name:>9}: nabla one thread {row['off_s'] * 1e3:.3f} ms, two {row['parallel_s'] * 1e3:.3f} ms "
            f"(speedup {row['speedup']:.2f})"
        )
        if "torch_s" in row:
            line += f"; PyTorch {row['torch_s'] * 1e3:.3f} ms (torch/nabla {row['torch_over_nabla']:.2f})"
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
