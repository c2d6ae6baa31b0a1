#!/usr/bin/env python3
"""Traced + compiled transforms in nabla against JAX (jit) and nabla eager, in one run.

Run from the repository root:

    python3 scripts/bench_transforms.py                 # 30 repeats
    python3 scripts/bench_transforms.py --repeats 10 --rounds 5 --json out.json

Workloads, all float32 on the CPU (the same as crates/nabla/examples/bench_transforms.rs):

- mlp_grad: value and gradient of the mean cross-entropy of a 3-layer tanh MLP (batch 128,
  784-512-512-10) with respect to its six parameters. nabla: traced once, compiled by GraphCompiler,
  run by GraphExecutor; and eager. JAX: jax.jit(jax.value_and_grad(loss)).
- tanh_gram: gradient and Hessian-vector product of sum(tanh(X X^T)) for a 256x256 X. The HVP /
  gradient cost ratio is reported for both frameworks. nabla's HVP is its hvp (reverse over forward,
  the gradient of the directional derivative), compiled and eager; compiled, it is also timed forward
  over reverse (jvp of grad). JAX's is jvp of grad, its usual form, and is also timed reverse over
  forward.
  nabla compiles it twice: with the default (bit-exact) passes and with the opt-in Pass::Reassociate,
  which merges products sharing a factor as XLA does (S X + S^T X -> (S + S^T) X).

Times are medians of --repeats runs after warm-up; JAX's include block_until_ready. The whole
measurement runs --rounds times, alternating nabla and JAX, so that a slow spell of a shared machine
hits both sides; the table gives the median over rounds and the median of the per-round ratios. Compile times:
nabla's trace and GraphCompiler time; JAX's lower + compile time of the jitted function.

nabla runs each workload in its own process, so that one workload's heap state does not slow the
next; its CPU backend keeps large freed output buffers for reuse (nabla_cpu::cached_bytes), as XLA's
allocator does, so a compiled program does not page-fault fresh memory on every run.

Ratios are jax_time / nabla_time: above 1 means nabla is faster.
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
BATCH = 128
SIZES = [784, 512, 512, 10]
GRAM = 256


def run_nabla(repeats: int, skip_build: bool) -> dict:
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
        )
        results.update(json.loads(out.stdout.strip().splitlines()[-1]))
    return results


def setup_jax():
    """Compiles the JAX side once; returns its compile times and a function that measures run times."""
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
    # Reverse over forward too (the gradient of the directional derivative), as nabla's hvp takes it.
    h_rev = jax.jit(
        lambda x, v: jax.grad(lambda y: jax.jvp(gram, (y,), (v,))[1])(x)
    ).lower(gx, gv).compile()

    def measure(repeats: int) -> dict:
        return {
            "mlp_grad_s": median_time(lambda: jax.block_until_ready(mlp(params, x, labels)), repeats),
            "gram_grad_s": median_time(lambda: jax.block_until_ready(g(gx)), repeats),
            "gram_hvp_s": median_time(lambda: jax.block_until_ready(h(gx, gv)), repeats),
            "gram_hvp_rev_s": median_time(lambda: jax.block_until_ready(h_rev(gx, gv)), repeats),
        }

    compile_times = {
        "version": jax.__version__,
        "mlp_compile_s": mlp_compile,
        "gram_grad_compile_s": grad_compile,
        "gram_hvp_compile_s": hvp_compile,
    }
    return compile_times, measure


def combine(rounds: list[dict]) -> dict:
    """Per key, the median over rounds (times and counts alike)."""
    return {key: median([r[key] for r in rounds]) for key in rounds[0]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3, help="alternating nabla/JAX rounds (default 3)")
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    if args.repeats < 1 or args.rounds < 1:
        ap.error("--repeats and --rounds must be at least 1")

    try:
        jax_compile, jax_measure = setup_jax()
    except ImportError as e:
        print(f"JAX not available ({e}); `pip install jax` to compare. nabla alone:")
        jax_compile, jax_measure = None, None

    # Rounds alternate nabla and JAX, so that a slow spell of the machine hits both sides; each
    # reported time is the median over rounds, each ratio the median of the per-round ratios.
    nabla_rounds, jax_rounds = [], []
    for r in range(args.rounds):
        nabla_rounds.append(run_nabla(args.repeats, args.skip_build or r > 0))
        if jax_measure:
            jax_rounds.append(jax_measure(args.repeats))
    nabla = combine(nabla_rounds)
    jax_res = {**jax_compile, **combine(jax_rounds)} if jax_measure else None

    def ratio(nabla_key: str, jax_key: str, side: list[dict]) -> float | None:
        if not jax_rounds:
            return None
        return median([j[jax_key] / n[nabla_key] for n, j in zip(side, jax_rounds)])

    ms = lambda s: f"{s * 1e3:9.3f} ms"  # noqa: E731
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus; jax {jax_res['version'] if jax_res else '-'}")
    print(f"{'workload':38} {'nabla':>12} {'jax jit':>12} {'jax/nabla':>10}")
    def hvp_cost(side: list[dict], hvp_key: str, grad_key: str) -> float:
        return median([r[hvp_key] / r[grad_key] for r in side])

    rows = [
        ("mlp_grad compiled", "mlp_grad_compiled_s", "mlp_grad_s", nabla_rounds),
        ("mlp_grad eager", "mlp_grad_eager_s", "mlp_grad_s", nabla_rounds),
        ("tanh_gram grad compiled", "gram_grad_s", "gram_grad_s", nabla_rounds),
        ("tanh_gram hvp compiled", "gram_hvp_s", "gram_hvp_s", nabla_rounds),
        ("  same, fwd over rev", "gram_hvp_fwd_rev_s", "gram_hvp_s", nabla_rounds),
        ("tanh_gram grad compiled, reassociate", "gram_grad_reassoc_s", "gram_grad_s", nabla_rounds),
        ("tanh_gram hvp compiled, reassociate", "gram_hvp_reassoc_s", "gram_hvp_s", nabla_rounds),
        ("  same, fwd over rev", "gram_hvp_fwd_rev_reassoc_s", "gram_hvp_s", nabla_rounds),
        ("tanh_gram grad eager", "gram_grad_eager_s", "gram_grad_s", nabla_rounds),
        ("tanh_gram hvp eager", "gram_hvp_eager_s", "gram_hvp_s", nabla_rounds),
    ]
    print(f"rounds: {args.rounds} (times: median over rounds; ratio: median of per-round ratios)")
    for name, nabla_key, jax_key, side in rows:
        n = combine(side)[nabla_key]
        j = jax_res and jax_res[jax_key]
        r = ratio(nabla_key, jax_key, side)
        print(f"{name:38} {ms(n)} {ms(j) if j else '-':>12} {f'{r:10.2f}' if r else '-':>10}")
    print(
        f"HVP / grad cost (median over rounds): nabla compiled {hvp_cost(nabla_rounds, 'gram_hvp_s', 'gram_grad_s'):.2f}x, "
        f"forward over reverse {hvp_cost(nabla_rounds, 'gram_hvp_fwd_rev_s', 'gram_grad_s'):.2f}x, "
        f"reassociated {hvp_cost(nabla_rounds, 'gram_hvp_reassoc_s', 'gram_grad_reassoc_s'):.2f}x, "
        f"nabla eager {hvp_cost(nabla_rounds, 'gram_hvp_eager_s', 'gram_grad_eager_s'):.2f}x"
        + (
            f"; jax {hvp_cost(jax_rounds, 'gram_hvp_s', 'gram_grad_s'):.2f}x, "
            f"reverse over forward {hvp_cost(jax_rounds, 'gram_hvp_rev_s', 'gram_grad_s'):.2f}x"
            if jax_res
            else ""
        )
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
            json.dump(
                {"nabla": nabla_rounds, "jax": jax_rounds, "jax_compile": jax_compile},
                fh,
                indent=1,
            )


if __name__ == "__main__":
    main()
