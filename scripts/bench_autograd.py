#!/usr/bin/env python3
"""Per-op overhead of nabla's eager autodiff tape against PyTorch eager, in one run.

Run from the repository root:

    python3 scripts/bench_autograd.py                    # 10,000-op chain, 30 repeats
    python3 scripts/bench_autograd.py --ops 2000 --repeats 10 --json out.json
    python3 scripts/bench_autograd.py --torch-threads 0  # leave PyTorch's intra-op thread count alone

The workload is a chain of additions of a 4-element float32 tensor, small enough that only the per-op
cost of the framework is measured (dispatch, allocation, graph recording, the reverse pass):

    x = randn(4, requires_grad=True); y = x
    for _ in range(10_000): y = y + x
    y.sum().backward()

Three cases are timed in both frameworks: the chain on an untracked tensor, the chain on a variable
(recording the graph, then dropping it) and the chain plus backward. Each is the best of --repeats runs
after warm-up runs; every run includes freeing what it made. Times are divided by the chain length
(the final sum is one more op, which is negligible).

The nabla side is crates/nabla/examples/bench_autograd.rs, built with
`cargo build --release -p nabla --example bench_autograd` and run once; it prints one JSON line. The
PyTorch side runs in this process, after nabla.

Threads: nabla runs these tiny ops on the calling thread (its kernels only go parallel above 32K
elements). PyTorch is pinned to one intra-op thread (`torch.set_num_threads(1)`, default
--torch-threads 1) so that it does the same; for 4-element tensors PyTorch never parallelises anyway,
so the setting changes little, but it keeps the comparison like for like on a loaded machine. Note that
PyTorch's autograd engine runs backward on its own worker thread for CPU tensors too; that cost is
part of what is measured, as a user pays it. Python interpreter overhead (the loop, the `y + x`
dispatch into C++) is also part of PyTorch's time: this is "PyTorch eager as used from Python", the
usual baseline for eager frameworks.

If PyTorch cannot be imported (`pip install torch` failed or was not run), the script says so and
reports nabla alone.

The ratio is `torch_time / nabla_time`: above 1 means nabla is faster.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CASES = ("untracked_forward", "forward", "forward_backward")
TARGET_US = 1.0  # issue: below 1 microsecond per op, forward + backward


def run_nabla(ops: int, repeats: int, skip_build: bool) -> dict:
    if not skip_build:
        subprocess.run(
            ["cargo", "build", "--release", "-p", "nabla", "--example", "bench_autograd"],
            cwd=REPO,
            check=True,
        )
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target"))
    exe = os.path.join(target, "release", "examples", "bench_autograd")
    out = subprocess.run(
        [exe, "--ops", str(ops), "--repeats", str(repeats)],
        cwd=REPO,
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"bench_autograd printed no JSON line:\n{out}")
    return json.loads(lines[-1])


def run_torch(ops: int, repeats: int, threads: int) -> dict | None:
    try:
        import torch
    except ImportError as e:  # pragma: no cover - depends on the machine
        print(f"PyTorch is not importable ({e}); `pip install torch` to compare. Reporting nabla only.",
              file=sys.stderr)
        return None
    if threads > 0:
        torch.set_num_threads(threads)
    torch.manual_seed(0)
    base = torch.tensor([0.5, -1.0, 1.5, 2.0], dtype=torch.float32)

    def untracked_forward():
        x = base
        y = x
        for _ in range(ops):
            y = y + x
        s = y.sum()
        del y, s

    def forward():
        x = base.clone().requires_grad_(True)
        y = x
        for _ in range(ops):
            y = y + x
        s = y.sum()
        del y, s  # frees the graph

    def forward_backward():
        x = base.clone().requires_grad_(True)
        y = x
        for _ in range(ops):
            y = y + x
        y.sum().backward()
        g = x.grad
        assert g is not None and bool((g == ops + 1).all()), g
        del y, g, x

    fns = {"untracked_forward": untracked_forward, "forward": forward, "forward_backward": forward_backward}
    result = {
        "tool": "torch",
        "version": torch.__version__,
        "threads": torch.get_num_threads(),
        "ops": ops,
        "repeats": repeats,
    }
    for name in CASES:
        fn = fns[name]
        for _ in range(3):
            fn()
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        times.sort()
        best, median = times[0], times[len(times) // 2]
        result[name] = {"best_s": best, "median_s": median, "us_per_op": best / ops * 1e6}
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", type=int, default=10_000, help="chain length (default 10000)")
    ap.add_argument("--repeats", type=int, default=30, help="timed runs per case (default 30)")
    ap.add_argument("--torch-threads", type=int, default=1,
                    help="torch.set_num_threads value; 0 keeps PyTorch's default (default 1)")
    ap.add_argument("--skip-build", action="store_true", help="use the already-built example")
    ap.add_argument("--json", metavar="PATH", help="also write both results as JSON to PATH")
    args = ap.parse_args()
    if args.ops <= 0 or args.repeats <= 0:
        ap.error("--ops and --repeats must be positive")

    nabla = run_nabla(args.ops, args.repeats, args.skip_build)
    torch_res = run_torch(args.ops, args.repeats, args.torch_threads)

    print(f"\nper-op overhead: chain of {args.ops} adds of a [4] float32 tensor, best of {args.repeats} runs")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, python {platform.python_version()}"
          + (f", torch {torch_res['version']} ({torch_res['threads']} intra-op thread(s))" if torch_res else ""))
    header = f"{'case':<20}{'nabla us/op':>13}{'allocs/op':>11}"
    if torch_res:
        header += f"{'torch us/op':>13}{'torch/nabla':>13}"
    print(header)
    print("-" * len(header))
    for name in CASES:
        n = nabla[name]
        row = f"{name:<20}{n['us_per_op']:>13.3f}{n.get('allocations_per_op', float('nan')):>11.1f}"
        if torch_res:
            t = torch_res[name]
            row += f"{t['us_per_op']:>13.3f}{t['best_s'] / n['best_s']:>13.2f}"
        print(row)
    fb = nabla["forward_backward"]["us_per_op"]
    verdict = "meets" if fb < TARGET_US else "misses"
    print(f"\nnabla forward+backward: {fb:.3f} us/op, {verdict} the {TARGET_US:.0f} us/op target"
          + ("" if torch_res else " (PyTorch not available: no ratio)"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"nabla": nabla, "torch": torch_res}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
