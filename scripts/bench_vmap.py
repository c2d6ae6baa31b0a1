#!/usr/bin/env python3
"""Per-example gradients (vmap of grad) in nabla against JAX (jit) and torch.func, in one run.

Run from the repository root:

    python3 scripts/bench_vmap.py                  # 30 repeats, 3 rounds
    python3 scripts/bench_vmap.py --repeats 10 --rounds 5 --json out.json

Workloads, float32 on the CPU (the same as crates/nabla/examples/bench_vmap.rs): the gradient of each
example's cross-entropy with respect to every parameter, the parameters shared by the batch,

- mlp: a 784-256-10 tanh MLP, batch 64;
- cnn: conv 3x3 (1 -> 8, padding 1), ReLU, 2x2 max-pool, conv 3x3 (8 -> 16, padding 1), ReLU, 2x2
  max-pool, linear 256 -> 10, on 1x16x16 images, batch 32.

nabla: eager (`vmap(...).call` per step) and traced + compiled (GraphCompiler, GraphExecutor).
JAX: jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))). PyTorch: torch.func.vmap(torch.func.grad(
loss), in_dims=(None, 0, 0)), eager.

Times are medians of --repeats runs after warm-up; the whole measurement runs --rounds times,
alternating the frameworks, and the table gives the median over rounds and the median of per-round
ratios (peer time / nabla time: above 1 means nabla is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess

from bench_support import median, median_time

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MLP_BATCH, MLP_SIZES = 64, (784, 256, 10)
CNN_BATCH, IMAGE = 32, 16


def run_nabla(repeats: int, skip_build: bool) -> dict:
    if not skip_build:
        subprocess.run(["cargo", "build", "--release", "-p", "nabla", "--example", "bench_vmap"],
                       cwd=REPO, check=True)
    exe = os.path.join(REPO, "target", "release", "examples", "bench_vmap")
    results = {}
    for workload in ("mlp", "cnn"):
        out = subprocess.run([exe, "--repeats", str(repeats), "--workload", workload], cwd=REPO,
                             check=True, capture_output=True, text=True)
        results.update(json.loads(out.stdout.strip().splitlines()[-1]))
    return results


def shapes():
    d, h, c = MLP_SIZES
    flat = 16 * (IMAGE // 4) ** 2
    return {
        "mlp": [(d, h), (h,), (h, c), (c,)],
        "cnn": [(8, 1, 3, 3), (8,), (16, 8, 3, 3), (16,), (flat, 10), (10,)],
    }


def data(np):
    rng = np.random.default_rng(7)
    out = {}
    for name, batch, xshape in (("mlp", MLP_BATCH, (MLP_SIZES[0],)), ("cnn", CNN_BATCH, (1, IMAGE, IMAGE))):
        params = []
        for s in shapes()[name]:
            fan_in = s[1] * s[2] * s[3] if len(s) == 4 else s[0]
            params.append((rng.standard_normal(s) / np.sqrt(fan_in)).astype(np.float32))
        x = rng.standard_normal((batch, *xshape)).astype(np.float32)
        y = np.eye(10, dtype=np.float32)[np.arange(batch) % 10]
        out[name] = (params, x, y)
    return out


def workloads(mlp_loss, cnn_loss, convert):
    """(name, loss, (params, x, y)) of each workload, its arrays converted by `convert`."""
    import numpy as np

    arrays = data(np)
    for name, loss in (("mlp", mlp_loss), ("cnn", cnn_loss)):
        params, x, y = arrays[name]
        yield name, loss, ([convert(p) for p in params], convert(x), convert(y))


def setup_jax():
    import jax
    import jax.numpy as jnp

    def nll(logits, y):
        return -jnp.sum(jax.nn.log_softmax(logits) * y)

    def mlp_loss(ps, x, y):
        h = jnp.tanh(x @ ps[0] + ps[1])
        return nll(h @ ps[2] + ps[3], y)

    def cnn_loss(ps, x, y):
        h = x[None]
        for layer in range(2):
            h = jax.lax.conv_general_dilated(h, ps[2 * layer], (1, 1), ((1, 1), (1, 1)))
            h = jax.nn.relu(h + ps[2 * layer + 1].reshape(1, -1, 1, 1))
            h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        return nll(h.reshape(-1) @ ps[4] + ps[5], y)

    fns = {}
    for name, loss, (params, x, y) in workloads(mlp_loss, cnn_loss, jnp.asarray):
        f = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))).lower(params, x, y).compile()
        fns[name] = (f, params, x, y)

    def measure(repeats):
        return {f"{n}_s": median_time(lambda: jax.block_until_ready(f(p, x, y)), repeats)
                for n, (f, p, x, y) in fns.items()}

    return jax.__version__, measure


def setup_torch():
    import torch
    import torch.nn.functional as F
    from torch.func import grad, vmap

    torch.set_num_threads(os.cpu_count() or 1)

    def nll(logits, y):
        return -(F.log_softmax(logits, dim=-1) * y).sum()

    def mlp_loss(ps, x, y):
        h = torch.tanh(x @ ps[0] + ps[1])
        return nll(h @ ps[2] + ps[3], y)

    def cnn_loss(ps, x, y):
        h = x.unsqueeze(0)
        for layer in range(2):
            h = F.relu(F.conv2d(h, ps[2 * layer], ps[2 * layer + 1], padding=1))
            h = F.max_pool2d(h, 2)
        return nll(h.reshape(-1) @ ps[4] + ps[5], y)

    fns = {
        name: (vmap(grad(loss), in_dims=(None, 0, 0)), params, x, y)
        for name, loss, (params, x, y) in workloads(mlp_loss, cnn_loss, torch.from_numpy)
    }

    def measure(repeats):
        with torch.no_grad():
            return {f"{n}_s": median_time(lambda: f(p, x, y), repeats) for n, (f, p, x, y) in fns.items()}

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

    peers = {}
    for label, setup in (("jax", setup_jax), ("torch", setup_torch)):
        try:
            peers[label] = setup()
        except ImportError as e:
            print(f"{label} not available ({e}); comparing without it")

    rounds = {"nabla": []} | {k: [] for k in peers}
    for r in range(args.rounds):
        rounds["nabla"].append(run_nabla(args.repeats, args.skip_build or r > 0))
        for label, (_, measure) in peers.items():
            rounds[label].append(measure(args.repeats))

    ms = lambda s: f"{s * 1e3:9.3f} ms"  # noqa: E731
    versions = ", ".join(f"{k} {v[0]}" for k, v in peers.items())
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus; {versions}")
    print(f"rounds: {args.rounds} (times: median over rounds; ratios: median of per-round peer/nabla)")
    header = f"{'workload':12} {'nabla eager':>13} {'nabla jit':>13}"
    for label in peers:
        header += f" {label:>12} {label + '/eager':>12} {label + '/jit':>12}"
    print(header)
    for name in ("mlp", "cnn"):
        eager = median([r[f"{name}_eager_s"] for r in rounds["nabla"]])
        jit = median([r[f"{name}_compiled_s"] for r in rounds["nabla"]])
        line = f"{name:12} {ms(eager)}   {ms(jit)}  "
        for label in peers:
            peer = median([r[f"{name}_s"] for r in rounds[label]])
            re = median([p[f"{name}_s"] / n[f"{name}_eager_s"] for p, n in zip(rounds[label], rounds["nabla"])])
            rj = median([p[f"{name}_s"] / n[f"{name}_compiled_s"] for p, n in zip(rounds[label], rounds["nabla"])])
            line += f" {ms(peer)} {re:12.2f} {rj:12.2f}"
        print(line)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rounds, fh, indent=1)


if __name__ == "__main__":
    main()
