#!/usr/bin/env python3
"""einsum in nabla (eager) against JAX (jit) and PyTorch (eager), in one run.

Run from the repository root:

    python3 scripts/bench_einsum.py                  # 30 repeats, 3 rounds
    python3 scripts/bench_einsum.py --repeats 10 --rounds 5 --json out.json

Workloads, float32 on the CPU (the same as crates/nabla/examples/bench_einsum.rs):
- chain: einsum("ij,jk,kl->il", A, B, C) with three 256 x 256 matrices;
- chain_grad: the value and gradients (A, B, C) of sum(einsum("ij,jk,kl->il", A, B, C));
- batched: einsum("bij,bjk->bik", X, Y) with 64 pairs of 64 x 64 matrices.

JAX: jax.jit of jnp.einsum (and of jax.value_and_grad), compiled before timing, block_until_ready.
PyTorch: torch.einsum eager (backward for chain_grad), with the default threads.

Times are medians of --repeats runs after warm-up; the whole measurement runs --rounds times,
alternating the frameworks, and the table gives the median over rounds and the median of per-round
ratios (peer time / nabla time: above 1 means nabla is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess

from bench_support import compare_rounds, median_time

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
N = 256
WORKLOADS = ["chain", "chain_grad", "batched"]


def run_nabla(repeats: int, skip_build: bool) -> dict:
    if not skip_build:
        subprocess.run(["cargo", "build", "--release", "-p", "nabla", "--example", "bench_einsum"], cwd=REPO, check=True)
    exe = os.path.join(REPO, "target", "release", "examples", "bench_einsum")
    out = subprocess.run([exe, "--repeats", str(repeats)], cwd=REPO, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def arrays(np):
    rng = np.random.default_rng(0)
    mats = [rng.uniform(0, 1, (N, N)).astype(np.float32) for _ in range(3)]
    batch = [rng.uniform(0, 1, (64, 64, 64)).astype(np.float32) for _ in range(2)]
    return mats, batch


def setup_jax():
    import jax
    import jax.numpy as jnp
    import numpy as np

    mats, batch = arrays(np)
    mats, batch = [jnp.asarray(m) for m in mats], [jnp.asarray(b) for b in batch]
    chain = jax.jit(lambda a, b, c: jnp.einsum("ij,jk,kl->il", a, b, c))
    grad = jax.jit(jax.value_and_grad(lambda a, b, c: jnp.einsum("ij,jk,kl->il", a, b, c).sum(), argnums=(0, 1, 2)))
    batched = jax.jit(lambda x, y: jnp.einsum("bij,bjk->bik", x, y))
    work = {"chain": lambda: chain(*mats), "chain_grad": lambda: grad(*mats), "batched": lambda: batched(*batch)}

    def measure(repeats):
        return {f"{k}_s": median_time(lambda f=f: jax.block_until_ready(f()), repeats) for k, f in work.items()}

    return jax.__version__, measure


def setup_torch():
    import numpy as np
    import torch

    mats, batch = arrays(np)
    mats, batch = [torch.from_numpy(m) for m in mats], [torch.from_numpy(b) for b in batch]

    def chain_grad():
        vs = [m.clone().requires_grad_(True) for m in mats]
        torch.einsum("ij,jk,kl->il", *vs).sum().backward()

    work = {
        "chain": lambda: torch.einsum("ij,jk,kl->il", *mats),
        "chain_grad": chain_grad,
        "batched": lambda: torch.einsum("bij,bjk->bik", *batch),
    }

    def measure(repeats):
        return {f"{k}_s": median_time(f, repeats) for k, f in work.items()}

    return torch.__version__, measure


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    if args.repeats < 1 or args.rounds < 1:
        ap.error("--repeats and --rounds must be at least 1")
    compare_rounds(
        lambda r: run_nabla(args.repeats, args.skip_build or r > 0),
        {"jax": setup_jax, "torch": setup_torch},
        args.rounds,
        args.repeats,
        args.json,
    )

if __name__ == "__main__":
    main()
