#!/usr/bin/env python3
"""The linalg family's ops in nabla (eager, CPU) against JAX (jit, CPU).

Run from the repository root:

    python3 scripts/bench_linalg.py                      # 10 repeats, 3 rounds, all ops
    python3 scripts/bench_linalg.py --ops solve,cholesky --repeats 5 --rounds 2 --json out.json

Workloads (the same as crates/nabla-linalg/examples/bench_linalg.rs), for n = 256 and 512, float32
and float64: the value of sum(op(A) * W), and its value and gradient with respect to A, where op is

- solve: A⁻¹ B with B of shape [n, 32] (A well conditioned);
- cholesky: the Cholesky factor of a symmetric positive definite A;
- eigh: the eigenvalues of a symmetric A (the eigenvectors are computed too);
- svd: the singular values of A (from the reduced SVD with U and Vh).

nabla: eager tensors, Tensor::var + AdContext::grad. JAX: jax.jit of the loss and of
jax.value_and_grad(loss), compiled before timing. Times are medians of --repeats runs after warm-up
(JAX's include block_until_ready). The whole measurement runs --rounds times, alternating nabla and
JAX, so that a slow spell of a shared machine hits both sides; the table gives the median over
rounds and the median of the per-round ratios jax_time / nabla_time (above 1: nabla is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time

from bench_support import median, median_time

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SIZES = [256, 512]
DTYPES = ["float32", "float64"]
SOLVE_RHS = 32


def run_nabla(ops: list[str], repeats: int, skip_build: bool) -> dict:
    if not skip_build:
        subprocess.run(
            ["cargo", "build", "--release", "-p", "nabla-linalg", "--example", "bench_linalg"],
            cwd=REPO,
            check=True,
        )
    exe = os.path.join(REPO, "target", "release", "examples", "bench_linalg")
    out = subprocess.run(
        [exe, "--repeats", str(repeats), "--ops", ",".join(ops)],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def setup_jax(ops: list[str]):
    """Compiles the JAX functions once; returns a function that measures them."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(7)
    apply = {
        "solve": lambda a, b: jnp.linalg.solve(a, b),
        "cholesky": lambda a, b: jnp.linalg.cholesky(a),
        "eigh": lambda a, b: jnp.linalg.eigh(a)[0],
        "svd": lambda a, b: jnp.linalg.svd(a, full_matrices=False)[1],
    }
    workloads = {}
    for op in ops:
        for dtype in DTYPES:
            for n in SIZES:
                x = rng.uniform(-1, 1, (n, n))
                a = {
                    "solve": x + n * np.eye(n),
                    "cholesky": x @ x.T / n + np.eye(n),
                    "eigh": x + x.T,
                    "svd": x,
                }[op].astype(dtype)
                b = rng.uniform(-1, 1, (n, SOLVE_RHS)).astype(dtype)
                f = apply[op]
                w = rng.uniform(-1, 1, f(a, b).shape).astype(dtype)
                a, b, w = jnp.asarray(a), jnp.asarray(b), jnp.asarray(w)

                def loss(a, b=b, w=w, f=f):
                    return jnp.sum(f(a, b) * w)

                value = jax.jit(loss).lower(a).compile()
                grad = jax.jit(jax.value_and_grad(loss)).lower(a).compile()
                workloads[f"{op}_{dtype}_{n}"] = (value, grad, a)

    def measure(repeats: int) -> dict:
        res = {}
        for key, (value, grad, a) in workloads.items():
            res[f"{key}_value_s"] = median_time(lambda: jax.block_until_ready(value(a)), repeats)
            res[f"{key}_grad_s"] = median_time(lambda: jax.block_until_ready(grad(a)), repeats)
        return res

    return jax.__version__, measure


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3, help="alternating nabla/JAX rounds (default 3)")
    ap.add_argument("--ops", default="solve,cholesky,eigh,svd")
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    ops = args.ops.split(",")
    if args.repeats < 1 or args.rounds < 1:
        ap.error("--repeats and --rounds must be at least 1")
    try:
        version, jax_measure = setup_jax(ops)
    except ImportError as e:
        print(f"JAX not available ({e}); `pip install jax` to compare. nabla alone:")
        version, jax_measure = "-", None

    nabla_rounds, jax_rounds = [], []
    for r in range(args.rounds):
        nabla_rounds.append(run_nabla(ops, args.repeats, args.skip_build or r > 0))
        if jax_measure:
            jax_rounds.append(jax_measure(args.repeats))

    ms = lambda s: f"{s * 1e3:9.3f} ms"  # noqa: E731
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus; jax {version}")
    print(f"rounds: {args.rounds} (times: median over rounds; ratio: median of per-round ratios)")
    print(f"{'workload':34} {'nabla':>12} {'jax jit':>12} {'jax/nabla':>10}")
    table = {}
    for key in nabla_rounds[0]:
        n = median([r[key] for r in nabla_rounds])
        j = median([r[key] for r in jax_rounds]) if jax_rounds else None
        ratio = median([jr[key] / nr[key] for nr, jr in zip(nabla_rounds, jax_rounds)]) if jax_rounds else None
        table[key] = {"nabla_s": n, "jax_s": j, "jax_over_nabla": ratio}
        name = key.removesuffix("_s").replace("_grad", " value+grad").replace("_value", " value")
        print(f"{name:34} {ms(n)} {ms(j) if j else '-':>12} {f'{ratio:10.2f}' if ratio else '-':>10}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"jax_version": version, "results": table}, fh, indent=1)


if __name__ == "__main__":
    main()
