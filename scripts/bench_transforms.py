#!/usr/bin/env python3
"""Traced + compiled transforms in nabla against JAX (jit) and nabla eager, in one run.

Run from the repository root:

    python3 scripts/bench_transforms.py                 # 30 repeats
    python3 scripts/bench_transforms.py --repeats 10 --json out.json

Workloads, all float32 on the CPU (the same as crates/nabla/examples/bench_transforms.rs):

- mlp_grad: value and gradient of the mean cross-entropy of a 3-layer tanh MLP (batch 128,
  784-512-512-10) with respect to its six parameters. nabla: traced once, compiled by GraphCompiler,
  run by GraphExecutor; and eager. JAX: jax.jit(jax.value_and_grad(loss)).
- tanh_gram: gradient and Hessian-vector product (forward over reverse, jvp of grad) of
  sum(tanh(X X^T)) for a 256x256 X. The HVP / gradient cost ratio is reported for both frameworks.

Times are medians of --repeats runs after warm-up; JAX's include block_until_ready. Compile times:
nabla's trace and GraphCompiler time; JAX's lower + compile time of the jitted function.

nabla runs each workload in its own process, twice: with the default glibc malloc, and with glibc
told to keep freed memory mapped (MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_THRESHOLD_), which is what a
caching allocator gives; XLA has its own. The difference is the cost of page-faulting freshly
allocated output buffers on every run.

Ratios are jax_time / nabla_time: above 1 means nabla is faster.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BATCH = 128
SIZES = [784, 512, 512, 10]
GRAM = 256


# glibc settings that keep freed heap memory mapped (no trim, no per-buffer mmap). nabla's CPU backend
# caches its large output buffers itself (nabla_cpu::cached_bytes); this second configuration shows
# what is left to gain for the remaining allocations (small buffers, matmul workspaces).
TUNED_MALLOC = {"MALLOC_TRIM_THRESHOLD_": str(1 << 30), "MALLOC_MMAP_THRESHOLD_": str(1 << 28)}


def run_nabla(repeats: int, skip_build: bool, env_extra: dict | None = None) -> dict:
    if not skip_build:
        subprocess.run(
            ["cargo", "build", "--release", "-p", "nabla", "--example", "bench_transforms"],
            cwd=REPO,
            check=True,
        )
    exe = os.path.join(REPO, "target", "release", "examples", "bench_transforms")
    results = {}
    # One process per workload, as JAX's side is one process: a workload inherits no heap state.
    for workload in ("mlp_compiled", "mlp_eager", "gram_compiled", "gram_eager"):
        out = subprocess.run(
            [exe, "--repeats", str(repeats), "--workload", workload],
            cwd=REPO,
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, **(env_extra or {})},
        )
        results.update(json.loads(out.stdout.strip().splitlines()[-1]))
    return results


def median_time(f, repeats: int) -> float:
    for _ in range(3):
        f()
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        f()
        runs.append(time.perf_counter() - start)
    runs.sort()
    return runs[len(runs) // 2]


def run_jax(repeats: int) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(7)
    params = []
    for i in range(3):
        params.append((rng.standard_normal((SIZES[i], SIZES[i + 1])) / np.sqrt(SIZES[i])).astype(np.float32))
        params.append((rng.standard_normal(SIZES[i + 1]) / np.sqrt(SIZES[i])).astype(np.float32))
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    labels = np.eye(SIZES[3], dtype=np.float32)[np.arange(BATCH) % 10]
    params = [jnp.asarray(p) for p in params]
    x, labels = jnp.asarray(x), jnp.asarray(labels)

    def loss(ps, x, labels):
        h = x
        for layer in range(3):
            h = h @ ps[2 * layer] + ps[2 * layer + 1]
            if layer < 2:
                h = jnp.tanh(h)
        return -jnp.sum(jax.nn.log_softmax(h, axis=-1) * labels) / BATCH

    vg = jax.value_and_grad(loss)
    start = time.perf_counter()
    mlp = jax.jit(vg).lower(params, x, labels).compile()
    mlp_compile = time.perf_counter() - start
    mlp_time = median_time(lambda: jax.block_until_ready(mlp(params, x, labels)), repeats)

    gx = jnp.asarray((rng.standard_normal((GRAM, GRAM)) * 0.05).astype(np.float32))
    gv = jnp.asarray(rng.standard_normal((GRAM, GRAM)).astype(np.float32))

    def gram(x):
        return jnp.sum(jnp.tanh(x @ x.T))

    start = time.perf_counter()
    g = jax.jit(jax.grad(gram)).lower(gx).compile()
    grad_compile = time.perf_counter() - start
    start = time.perf_counter()
    h = jax.jit(lambda x, v: jax.jvp(jax.grad(gram), (x,), (v,))[1]).lower(gx, gv).compile()
    hvp_compile = time.perf_counter() - start
    grad_time = median_time(lambda: jax.block_until_ready(g(gx)), repeats)
    hvp_time = median_time(lambda: jax.block_until_ready(h(gx, gv)), repeats)
    return {
        "version": jax.__version__,
        "mlp_grad_s": mlp_time,
        "mlp_compile_s": mlp_compile,
        "gram_grad_s": grad_time,
        "gram_hvp_s": hvp_time,
        "gram_grad_compile_s": grad_compile,
        "gram_hvp_compile_s": hvp_compile,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")

    nabla = run_nabla(args.repeats, args.skip_build)
    tuned = run_nabla(args.repeats, True, TUNED_MALLOC)
    try:
        jax_res = run_jax(args.repeats)
    except ImportError as e:
        print(f"JAX not available ({e}); `pip install jax` to compare. nabla alone:")
        jax_res = None

    ms = lambda s: f"{s * 1e3:9.3f} ms"  # noqa: E731
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus; jax {jax_res['version'] if jax_res else '-'}")
    print(f"{'workload':34} {'nabla':>12} {'jax jit':>12} {'jax/nabla':>10}")
    rows = [
        ("mlp_grad compiled", nabla["mlp_grad_compiled_s"], jax_res and jax_res["mlp_grad_s"]),
        ("mlp_grad eager", nabla["mlp_grad_eager_s"], jax_res and jax_res["mlp_grad_s"]),
        ("tanh_gram grad compiled", nabla["gram_grad_s"], jax_res and jax_res["gram_grad_s"]),
        ("tanh_gram hvp compiled", nabla["gram_hvp_s"], jax_res and jax_res["gram_hvp_s"]),
        ("tanh_gram grad eager", nabla["gram_grad_eager_s"], jax_res and jax_res["gram_grad_s"]),
        ("tanh_gram hvp eager", nabla["gram_hvp_eager_s"], jax_res and jax_res["gram_hvp_s"]),
    ]
    rows += [
        ("mlp_grad compiled (tuned malloc)", tuned["mlp_grad_compiled_s"], jax_res and jax_res["mlp_grad_s"]),
        ("mlp_grad eager (tuned malloc)", tuned["mlp_grad_eager_s"], jax_res and jax_res["mlp_grad_s"]),
        ("tanh_gram grad compiled (tuned)", tuned["gram_grad_s"], jax_res and jax_res["gram_grad_s"]),
        ("tanh_gram hvp compiled (tuned)", tuned["gram_hvp_s"], jax_res and jax_res["gram_hvp_s"]),
    ]
    for name, n, j in rows:
        ratio = f"{j / n:10.2f}" if j else f"{'-':>10}"
        print(f"{name:34} {ms(n)} {ms(j) if j else '-':>12} {ratio}")
    print("(tuned malloc: glibc keeps freed memory mapped, " + " ".join(f"{k}={v}" for k, v in TUNED_MALLOC.items()) + ")")
    print(
        f"HVP / grad cost: nabla compiled {nabla['gram_hvp_s'] / nabla['gram_grad_s']:.2f}x, "
        f"nabla compiled with tuned malloc {tuned['gram_hvp_s'] / tuned['gram_grad_s']:.2f}x, "
        f"nabla eager {nabla['gram_hvp_eager_s'] / nabla['gram_grad_eager_s']:.2f}x"
        + (f", jax {jax_res['gram_hvp_s'] / jax_res['gram_grad_s']:.2f}x" if jax_res else "")
        + " (target <= 3x)"
    )
    print(
        f"compile: nabla mlp trace {ms(nabla['mlp_trace_s'])} + compile {ms(nabla['mlp_compile_s'])} "
        f"({nabla['mlp_nodes_before']} -> {nabla['mlp_nodes_after']} nodes); "
        f"grad {ms(nabla['gram_grad_trace_s'] + nabla['gram_grad_compile_s'])}, "
        f"hvp {ms(nabla['gram_hvp_trace_s'] + nabla['gram_hvp_compile_s'])}"
    )
    if jax_res:
        print(
            f"compile: jax mlp {ms(jax_res['mlp_compile_s'])}, grad {ms(jax_res['gram_grad_compile_s'])}, "
            f"hvp {ms(jax_res['gram_hvp_compile_s'])}"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"nabla": nabla, "nabla_tuned_malloc": tuned, "jax": jax_res}, fh, indent=1)


if __name__ == "__main__":
    main()
