#!/usr/bin/env python3
"""Data-parallel training on MPI: time per step on 1 and 2 ranks, all-reduce time, the share of it
hidden behind backward, and a model of the scaling efficiency at 8, 64 and 512 ranks.

    python3 scripts/bench_distributed.py [--rounds 3] [--steps 20]

Runs `crates/nabla-distributed/examples/bench_data_parallel.rs` under `mpirun` (OpenMPI or MPICH)
in alternating rounds, one rank per core with one thread each and a fixed batch of 32 per rank
(weak scaling: 2 ranks do twice the work of 1 in a step). Needs only the standard library.

What it prints:
- per workload and world size, the median step time (and range over rounds); the scaling
  efficiency `t(1 rank) / t(2 ranks)` (1.0 is perfect);
- all-reduce time per step, and the hidden share: `1 - exposed(buckets) / exposed(one bucket)`,
  where `exposed` is the wait for gradients after backward ends; with one bucket nothing can
  overlap, so the comparison isolates what bucketing hides;
- the latency `a` and bandwidth `b` of a 2-rank all-reduce over shared memory and over TCP,
  fitted as t(n) = 2a + n/b on buffers of 4 B to 64 MiB;
- a model on paper: a ring all-reduce of n bytes on p ranks takes T(p) = 2(p-1)a + 2(p-1)/p * n/b;
  a step on p ranks takes t(1) + T(p) * (1 - hidden share); efficiency t(1) / t(p). The 100M-
  parameter model scales the `wide` MLP's measured compute by 100M / 5.8M parameters (dense layers
  cost the same per parameter and example) and all-reduces 400 MB of f32 gradients.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(ROOT, "target", "release", "examples", "bench_data_parallel")


def mpirun(np, extra_mca=()):
    """The launcher command for `np` ranks (allowed as root, oversubscription allowed)."""
    if shutil.which("mpirun") is None:
        sys.exit("mpirun not found: apt-get install openmpi-bin libopenmpi-dev libclang-dev")
    version = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout
    if "Open MPI" in version:
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "core", "-np", str(np)]
        for key, value in extra_mca:
            cmd += ["--mca", key, value]
        return cmd
    return ["mpirun", "-n", str(np)]


def run(np, args, extra_mca=()):
    out = subprocess.run(
        mpirun(np, extra_mca) + [BINARY] + args, capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def fit(probe):
    """Least-squares t = c + n / b over buffers of 64 KiB and more; a = t(4 B) / 2."""
    rows = [(r["bytes"], r["us"] * 1e-6) for r in probe if r["bytes"] >= 65536]
    mean_n = statistics.mean(n for n, _ in rows)
    mean_t = statistics.mean(t for _, t in rows)
    slope = sum((n - mean_n) * (t - mean_t) for n, t in rows) / sum(
        (n - mean_n) ** 2 for n, _ in rows
    )
    latency = probe[0]["us"] * 1e-6 / 2
    return latency, 1.0 / slope


def ring_time(p, n, latency, bandwidth):
    return 2 * (p - 1) * latency + 2 * (p - 1) / p * n / bandwidth


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    opts = parser.parse_args()
    subprocess.run(
        [
            "cargo", "build", "--release", "-q", "-p", "nabla-distributed",
            "--features", "mpi", "--example", "bench_data_parallel",
        ],
        cwd=ROOT,
        check=True,
    )
    # (workload, ranks, bucket MiB): one bucket (nothing overlaps) and small buckets.
    configs = [
        ("cnn", 1, 25), ("cnn", 2, 25), ("cnn", 2, 0.25),
        ("wide", 1, 25), ("wide", 2, 25), ("wide", 2, 4),
    ]
    results = {c: [] for c in configs}
    for r in range(opts.rounds):
        for c in configs:
            workload, np, bucket = c
            args = ["--workload", workload, "--steps", str(opts.steps), "--bucket-mib", str(bucket)]
            results[c].append(run(np, args))
        print(f"round {r + 1}/{opts.rounds} done", file=sys.stderr)
    shm = run(2, ["--probe"])["probe"]
    tcp = run(2, ["--probe"], [("btl", "tcp,self")])["probe"]

    def med(c, key):
        return statistics.median(x[key] for x in results[c])

    print("| workload | ranks | bucket MiB | step ms (median, range) | all-reduce ms | exposed ms |")
    print("|---|---|---|---|---|---|")
    for c in configs:
        steps = [x["step_ms"] for x in results[c]]
        print(
            f"| {c[0]} | {c[1]} | {c[2]} | {statistics.median(steps):.2f} ({min(steps):.2f}-{max(steps):.2f}) "
            f"| {med(c, 'allreduce_ms'):.2f} | {med(c, 'exposed_ms'):.2f} |"
        )
    (a_shm, b_shm), (a_tcp, b_tcp) = fit(shm), fit(tcp)
    print(f"\nall-reduce, 2 ranks: shared memory a = {a_shm * 1e6:.1f} us, b = {b_shm / 1e9:.2f} GB/s; "
          f"TCP a = {a_tcp * 1e6:.1f} us, b = {b_tcp / 1e9:.2f} GB/s")
    model = {}
    for workload, small in [("cnn", 0.25), ("wide", 4)]:
        t1 = med((workload, 1, 25), "step_ms")
        t2 = med((workload, 2, small), "step_ms")
        t2_one = med((workload, 2, 25), "step_ms")
        exposed_one = med((workload, 2, 25), "exposed_ms")
        exposed_small = med((workload, 2, small), "exposed_ms")
        hidden = max(0.0, 1 - exposed_small / exposed_one) if exposed_one > 0 else 0.0
        print(f"\n{workload}: 1 -> 2 ranks efficiency {t1 / t2:.3f} with {small} MiB buckets, "
              f"{t1 / t2_one:.3f} with one bucket; share of all-reduce hidden by bucketing {hidden:.2f}")
        params = results[(workload, 1, 25)][0]["params"]
        model[workload] = (t1 * 1e-3, 4 * params, hidden)
    t_wide, bytes_wide, hidden_wide = model["wide"]
    model["100M"] = (t_wide * 1e8 / (bytes_wide / 4), 4e8, hidden_wide)
    print("\nmodelled efficiency t(1)/t(p) (ring all-reduce, measured a and b, measured hidden share):")
    print("| model | network | 8 ranks | 64 ranks | 512 ranks |")
    print("|---|---|---|---|---|")
    for name in ["cnn", "100M"]:
        t1, n, hidden = model[name]
        for net, (a, b) in [("shared memory", (a_shm, b_shm)), ("TCP", (a_tcp, b_tcp))]:
            eff = [t1 / (t1 + ring_time(p, n, a, b) * (1 - hidden)) for p in (8, 64, 512)]
            print(f"| {name} | {net} | " + " | ".join(f"{e:.3f}" for e in eff) + " |")


if __name__ == "__main__":
    main()
