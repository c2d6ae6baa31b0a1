"""Timing helpers shared by the benchmark scripts (imported as `from bench_support import ...`)."""

from __future__ import annotations

import time


def median(values: list[float]) -> float:
    """The median (the mean of the middle two for an even count)."""
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def median_time(f, repeats: int, warmup: int = 3) -> float:
    """Median seconds of `f()` over `repeats` calls after `warmup` calls."""
    for _ in range(warmup):
        f()
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        f()
        runs.append(time.perf_counter() - start)
    return median(runs)


def run_example_times(example: str, repeats: int) -> dict:
    """Runs the release build of the nabla example `example` with `--repeats`, whose stdout lines are
    `workload variant ms`, and returns {(workload, variant): ms}."""
    import os
    import subprocess

    repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    exe = os.path.join(repo, "target", "release", "examples", example)
    out = subprocess.run([exe, "--repeats", str(repeats)], check=True, capture_output=True, text=True)
    times = {}
    for line in out.stdout.splitlines():
        name, variant, ms = line.split()
        times[(name, variant)] = float(ms)
    return times


def compare_rounds(run_nabla, setups: dict, rounds: int, repeats: int, json_path: str | None, width: int = 24) -> dict:
    """Runs `rounds` alternating rounds of nabla and each available peer, prints the table and returns it.

    `run_nabla(round_index)` returns {key: seconds}; `setups` maps a peer's name to a function returning
    `(version, measure)`, where `measure(repeats)` returns {key: seconds} for the same keys (or some of them) (a peer whose setup
    raises ImportError is left out, with a message). The table gives, per key, the median time over
    rounds and the median of the per-round ratios peer / nabla (above 1: nabla is faster); with
    `json_path` it is also written there as JSON.
    """
    import json
    import os
    import platform

    peers = {}
    for name, setup in setups.items():
        try:
            peers[name] = setup()
        except ImportError as e:
            print(f"{name} not available ({e}); install it to compare")
    results = {"nabla": [], **{p: [] for p in peers}}
    for r in range(rounds):
        results["nabla"].append(run_nabla(r))
        for p, (_, measure) in peers.items():
            results[p].append(measure(repeats))
    ms = lambda s: f"{s * 1e3:10.4f}"  # noqa: E731
    versions = ", ".join(f"{p} {v}" for p, (v, _) in peers.items())
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus; {versions}")
    print(f"rounds: {rounds} (times in ms: median over rounds; ratio: median of per-round other/nabla)")
    print(f"{'workload':{width}} {'nabla':>10}" + "".join(f" {p:>10} {p + '/nabla':>12}" for p in peers))
    table = {}
    for key in results["nabla"][0]:
        row = {"nabla_s": median([r[key] for r in results["nabla"]])}
        line = f"{key.removesuffix('_s'):{width}} {ms(row['nabla_s'])}"
        for p in peers:
            if key not in results[p][0]:  # a peer may measure only some workloads
                line += f" {'-':>10} {'-':>12}"
                continue
            t = median([r[key] for r in results[p]])
            ratio = median([o[key] / nb[key] for nb, o in zip(results["nabla"], results[p])])
            row[f"{p}_s"], row[f"{p}_over_nabla"] = t, ratio
            line += f" {ms(t)} {ratio:12.2f}"
        table[key] = row
        print(line)
    if json_path:
        with open(json_path, "w") as fh:
            json.dump({"versions": {p: v for p, (v, _) in peers.items()}, "results": table}, fh, indent=1)
    return table
