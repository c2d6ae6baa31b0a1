#!/usr/bin/env python3
"""One-dimensional FFTs in nabla (eager, CPU) against NumPy and JAX (jit, CPU).

Run from the repository root:

    python3 scripts/bench_fft.py                     # 20 repeats, 3 rounds
    python3 scripts/bench_fft.py --repeats 10 --rounds 2 --json out.json

Workloads (the same as crates/nabla-fft/examples/bench_fft.rs): the complex transform (fft) and the
real one (rfft) of n = 2^10, 2^12, ..., 2^20 points, single precision (complex64 / float32) and double
(complex128 / float64). NumPy: numpy.fft (pocketfft; NumPy 2 transforms float32 in single precision).
JAX: jax.jit of jnp.fft.fft / rfft (ducc on CPU), compiled before timing, with block_until_ready.

Times are medians of --repeats runs after warm-up. The whole measurement runs --rounds times,
alternating nabla, NumPy and JAX, so that a slow spell of a shared machine hits every side; the table
gives the median over rounds and the median of the per-round ratios other_time / nabla_time (above 1:
nabla is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess

from bench_support import compare_rounds, median_time

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LOG2_SIZES = [10, 12, 14, 16, 18, 20]
PRECISIONS = [("float32", "complex64"), ("float64", "complex128")]


def run_nabla(repeats: int, skip_build: bool) -> dict:
    if not skip_build:
        subprocess.run(
            ["cargo", "build", "--release", "-p", "nabla-fft", "--example", "bench_fft"], cwd=REPO, check=True
        )
    exe = os.path.join(REPO, "target", "release", "examples", "bench_fft")
    out = subprocess.run([exe, "--repeats", str(repeats)], cwd=REPO, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def inputs(np, real: str, complex_: str, log2: int):
    n = 1 << log2
    x = ((np.arange(n) * 7919) % 1000 / 500.0 - 1.0).astype(real)
    z = (x + 1j * x[::-1]).astype(complex_)
    return x, z


def setup_numpy():
    import numpy as np

    work = {}
    for real, complex_ in PRECISIONS:
        for log2 in LOG2_SIZES:
            x, z = inputs(np, real, complex_, log2)
            work[f"fft_{complex_}_{log2}"] = (np.fft.fft, z)
            work[f"rfft_{complex_}_{log2}"] = (np.fft.rfft, x)

    def measure(repeats: int) -> dict:
        return {f"{k}_s": median_time(lambda f=f, a=a: f(a), repeats) for k, (f, a) in work.items()}

    return np.__version__, measure


def setup_jax():
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    work = {}
    for real, complex_ in PRECISIONS:
        for log2 in LOG2_SIZES:
            x, z = inputs(np, real, complex_, log2)
            x, z = jnp.asarray(x), jnp.asarray(z)
            work[f"fft_{complex_}_{log2}"] = (jax.jit(jnp.fft.fft).lower(z).compile(), z)
            work[f"rfft_{complex_}_{log2}"] = (jax.jit(jnp.fft.rfft).lower(x).compile(), x)

    def measure(repeats: int) -> dict:
        return {
            f"{k}_s": median_time(lambda f=f, a=a: jax.block_until_ready(f(a)), repeats) for k, (f, a) in work.items()
        }

    return jax.__version__, measure


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3, help="alternating nabla/NumPy/JAX rounds (default 3)")
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    if args.repeats < 1 or args.rounds < 1:
        ap.error("--repeats and --rounds must be at least 1")
    compare_rounds(
        lambda r: run_nabla(args.repeats, args.skip_build or r > 0),
        {"numpy": setup_numpy, "jax": setup_jax},
        args.rounds,
        args.repeats,
        args.json,
    )

if __name__ == "__main__":
    main()
