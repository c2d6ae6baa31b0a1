#!/usr/bin/env python3
"""Derivatives of linear-algebra factorizations: nabla (eager and compiled) against PyTorch
(torch.func) and JAX (jax.jit), one run.

Run from the repository root:

    python3 scripts/bench_linalg_ad.py                               # f64 and f32, 1 and 2 threads
    python3 scripts/bench_linalg_ad.py --dtypes f64 --threads 1 --sizes 2,4,8 --rounds 2 --json out.json
    python3 scripts/bench_linalg_ad.py --sizes 1000x4                 # a batch of 1,000 4 x 4 matrices

Workloads (the suite tenferro-rs publishes as `linalg_jvp_vjp`; the same as
crates/nabla-linalg/examples/bench_linalg_ad.rs), each a scalar loss of an n x n matrix A:

- eigh: sum of the eigenvalues of a symmetric positive definite A = X X^T / n + I;
- lu: sum(L) + sum(U) of the LU factorization with partial pivoting of A = X;
- qr: sum(Q) + sum(R) of the reduced QR factorization of A = X;
- solve: sum(solve(A, b)) with one right-hand side b [n, 1], A = X + n I;
- svd: sum of the singular values of A = X.

A size n is one n x n matrix; BxN is a batch of B matrices N x N (A is [B, N, N]; the loss sums over
the batch). The default sizes are 2, 4, 8, 256, 512 and 1000x4.

Modes: vjp, the gradient of the loss with respect to A (forward and reverse pass); jvp, the
derivative of the loss along a direction T (symmetrised for eigh). nabla: eager (Tensor::var, then
AdContext::grad or AdContext::jvp) and compiled (traced once, GraphCompiler, GraphExecutor).
PyTorch: torch.func.grad and torch.func.jvp, eager. JAX: jax.jit(jax.grad(loss)) and
jax.jit(lambda a, t: jax.jvp(loss, (a,), (t,))[1]), compiled before timing, block_until_ready.

Inputs: X, T, b and the check weights W come from one xorshift generator in f64 (the same numbers as
the Rust side), are combined in f64 and cast last. Before any time is reported, each framework's
check value (sum(grad * W) for vjp, the directional derivative for jvp) is compared with nabla's; a
case that disagrees beyond the dtype's tolerance is marked in the table.

Threads: nabla through RAYON_NUM_THREADS, PyTorch through torch.set_num_threads, JAX through
XLA_FLAGS (--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1 for one thread); each
framework runs in its own process per thread count and dtype. Times are medians of --repeats calls
after warm-up (twenty times as many at n <= 8); the whole measurement runs --rounds times,
alternating the frameworks, and the table gives the median over rounds and the median of the
per-round ratios other / nabla eager (above 1: nabla is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

from bench_support import median, median_time

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
EXE = os.path.join(REPO, "target", "release", "examples", "bench_linalg_ad")
WORKLOADS = ["eigh", "lu", "qr", "solve", "svd"]
MODES = ["vjp", "jvp"]
TOLERANCE = {"f64": 1e-8, "f32": 1e-3}


def uniform(seed: int, shape: tuple) -> "np.ndarray":
    """The Rust side's xorshift draws in [-1, 1), in f64."""
    import numpy as np

    mask = (1 << 64) - 1
    s = ((seed * 0x9E3779B97F4A7C15) & mask) | 1
    count = 1
    for d in shape:
        count *= d
    out = np.empty(count)
    for i in range(count):
        s ^= (s << 13) & mask
        s ^= s >> 7
        s ^= (s << 17) & mask
        out[i] = (s >> 11) / float(1 << 53) * 2.0 - 1.0
    return out.reshape(shape)


def parse_size(text: str) -> tuple:
    """(batch, n) of a size: "n" is (None, n), "BxN" is (B, N)."""
    batch, _, n = text.rpartition("x")
    return (int(batch) if batch else None, int(n))


def shape(size: str, cols: int) -> tuple:
    """One operand's shape with `cols` columns: (n, cols) or (B, n, cols)."""
    batch, n = parse_size(size)
    return (n, cols) if batch is None else (batch, n, cols)


def draws(size: str) -> dict:
    """X, T, W and b of one size, from the cache folder the parent process fills (NABLA_BENCH_INPUTS;
    the xorshift loop in Python takes about a second per 512 x 512 draw)."""
    import numpy as np

    folder = os.environ.get("NABLA_BENCH_INPUTS")
    path = os.path.join(folder, f"draws_{size}.npz") if folder else None
    if path and os.path.exists(path):
        with np.load(path) as cached:
            return dict(cached)
    n = parse_size(size)[1]
    square = shape(size, n)
    made = {"x": uniform(1, square), "t": uniform(2, square), "w": uniform(3, square), "b": uniform(4, shape(size, 1))}
    if path:
        np.savez(path, **made)
    return made


def inputs(workload: str, size: str, dtype: str):
    """(A, T, b, W) as NumPy arrays of `dtype`, made as the Rust side makes them."""
    import numpy as np

    d = draws(size)
    x, t = d["x"], d["t"]
    n = parse_size(size)[1]
    eye = np.eye(n)
    if workload == "eigh":
        a, t = x @ x.swapaxes(-1, -2) / n + eye, (t + t.swapaxes(-1, -2)) * 0.5
    elif workload == "solve":
        a = x + eye * n
    else:
        a = x
    np_dtype = {"f64": np.float64, "f32": np.float32}[dtype]
    return tuple(v.astype(np_dtype) for v in (a, t, d["b"], d["w"]))


def repeats_for(size: str, repeats: int) -> int:
    batch, n = parse_size(size)
    return repeats * 20 if n <= 8 and batch is None else repeats


def losses(ops: dict, b) -> dict:
    """The five losses written with one framework's functions (`ops`: eigvalsh, lu, qr, solve and
    svdvals); `b` is solve's right-hand side."""

    def lu(a):
        _, l, u = ops["lu"](a)
        return l.sum() + u.sum()

    def qr(a):
        q, r = ops["qr"](a)
        return q.sum() + r.sum()

    return {
        "eigh": lambda a: ops["eigvalsh"](a).sum(),
        "lu": lu,
        "qr": qr,
        "solve": lambda a: ops["solve"](a, b).sum(),
        "svd": lambda a: ops["svdvals"](a).sum(),
    }


def time_cases(workload: str, size: str, cases: dict, w, repeats: int) -> dict:
    """{case: {"s", "check"}} for each mode's function in `cases`: its median time and its check value
    (sum(grad * W) for vjp, the directional derivative for jvp)."""
    out = {}
    for mode, run in cases.items():
        value = run()
        check = float((value * w).sum()) if mode == "vjp" else float(value)
        out[f"{workload}_{mode}_{size}"] = {"s": median_time(run, repeats_for(size, repeats)), "check": check}
    return out


def torch_worker(dtype: str, threads: int, sizes: list, workloads: list, repeats: int) -> dict:
    import torch
    from torch.func import grad, jvp

    torch.set_num_threads(threads)

    ops = {
        "eigvalsh": torch.linalg.eigvalsh,
        "lu": torch.linalg.lu,
        "qr": torch.linalg.qr,
        "solve": torch.linalg.solve,
        "svdvals": torch.linalg.svdvals,
    }

    out = {}
    for workload in workloads:
        for size in sizes:
            a, t, b, w = (torch.from_numpy(v) for v in inputs(workload, size, dtype))
            f = losses(ops, b)[workload]
            g = grad(f)
            cases = {"vjp": lambda: g(a), "jvp": lambda: jvp(f, (a,), (t,))[1]}
            out.update(time_cases(workload, size, cases, w, repeats))
    return {"version": torch.__version__, "results": out}


def jax_worker(dtype: str, threads: int, sizes: list, workloads: list, repeats: int) -> dict:
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    ops = {
        "eigvalsh": jnp.linalg.eigvalsh,
        # jax.scipy.linalg.lu takes one matrix: vectorised (vmap) over a batch.
        "lu": jnp.vectorize(jax.scipy.linalg.lu, signature="(m,n)->(m,m),(m,k),(k,n)"),
        "qr": jnp.linalg.qr,
        "solve": jnp.linalg.solve,
        "svdvals": lambda a: jnp.linalg.svd(a, compute_uv=False),
    }

    out = {}
    for workload in workloads:
        for size in sizes:
            a, t, b, w = (jnp.asarray(v) for v in inputs(workload, size, dtype))
            f = losses(ops, b)[workload]
            vjp_fn = jax.jit(jax.grad(f)).lower(a).compile()
            jvp_fn = jax.jit(lambda a, t, f=f: jax.jvp(f, (a,), (t,))[1]).lower(a, t).compile()
            cases = {
                "vjp": lambda vjp_fn=vjp_fn: jax.block_until_ready(vjp_fn(a)),
                "jvp": lambda jvp_fn=jvp_fn: jax.block_until_ready(jvp_fn(a, t)),
            }
            out.update(time_cases(workload, size, cases, w, repeats))
    return {"version": jax.__version__, "results": out}


def run_process(argv: list, env: dict) -> dict:
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(framework: str, dtype: str, threads: int, args) -> dict | None:
    """One framework's {case: {"s", "check"}} for one dtype and thread count, in its own process."""
    env = dict(os.environ)
    common = ["--sizes", args.sizes, "--workloads", args.workloads, "--repeats", str(args.repeats)]
    if framework == "nabla":
        env["RAYON_NUM_THREADS"] = str(threads)
        raw = run_process([EXE, "--dtype", dtype, *common], env)
        return {k: {"s": v["eager_s"], "compiled_s": v["compiled_s"], "check": v["check"]} for k, v in raw.items()}
    if framework == "jax":
        threading = "true" if threads > 1 else "false"
        env["XLA_FLAGS"] = f"--xla_cpu_multi_thread_eigen={threading} intra_op_parallelism_threads={threads}"
    argv = [sys.executable, os.path.abspath(__file__), "--worker", framework, "--dtypes", dtype]
    try:
        return run_process([*argv, "--threads", str(threads), *common], env)["results"]
    except RuntimeError as e:
        if "ModuleNotFoundError" in str(e):
            return None
        raise


def table(rounds: dict, dtype: str, threads: int) -> dict:
    """Prints and returns the table of one dtype and thread count from the rounds' results."""
    peers = [p for p in ("torch", "jax") if rounds[p]]
    ms = lambda s: f"{s * 1e3:9.4f}"  # noqa: E731
    print(f"\n{dtype}, {threads} thread(s); times in ms; ratio = other / nabla eager (above 1: nabla is faster)")
    header = f"{'case':18} {'eager':>9} {'compiled':>9}"
    for p in peers:
        header += f" {p:>9} {p + '/eager':>12} {p + '/compiled':>15}"
    print(header)
    rows = {}
    for key in rounds["nabla"][0]:
        eager = median([r[key]["s"] for r in rounds["nabla"]])
        compiled = median([r[key]["compiled_s"] for r in rounds["nabla"]])
        row = {"nabla_eager_s": eager, "nabla_compiled_s": compiled, "check": rounds["nabla"][0][key]["check"]}
        line = f"{key:18} {ms(eager)} {ms(compiled)}"
        for p in peers:
            t = median([r[key]["s"] for r in rounds[p]])
            over_eager = median([o[key]["s"] / nb[key]["s"] for nb, o in zip(rounds["nabla"], rounds[p])])
            over_compiled = median(
                [o[key]["s"] / nb[key]["compiled_s"] for nb, o in zip(rounds["nabla"], rounds[p])]
            )
            check, ours = rounds[p][0][key]["check"], row["check"]
            agrees = abs(check - ours) <= TOLERANCE[dtype] * max(1.0, abs(ours))
            row.update({f"{p}_s": t, f"{p}_over_eager": over_eager, f"{p}_over_compiled": over_compiled})
            row[f"{p}_check"], row[f"{p}_agrees"] = check, agrees
            line += f" {ms(t)} {over_eager:12.2f} {over_compiled:15.2f}" + ("" if agrees else " (differs)")
        rows[key] = row
        print(line)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of the frameworks (default 3)")
    ap.add_argument("--dtypes", default="f64,f32")
    ap.add_argument("--threads", default="1,2", help="thread counts, comma-separated (default 1,2)")
    ap.add_argument("--sizes", default="2,4,8,256,512,1000x4")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--json", help="also write every table to this file")
    ap.add_argument("--worker", choices=("torch", "jax"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    sizes = args.sizes.split(",")
    workloads = args.workloads.split(",")
    if args.worker:
        worker = {"torch": torch_worker, "jax": jax_worker}[args.worker]
        print(json.dumps(worker(args.dtypes, int(args.threads), sizes, workloads, args.repeats)))
        return
    try:
        valid_sizes = all(b is None or b > 0 for b, _ in map(parse_size, sizes)) and min(
            n for _, n in map(parse_size, sizes)
        ) > 0
    except ValueError:
        valid_sizes = False
    if args.repeats < 1 or args.rounds < 1 or not valid_sizes or not set(workloads) <= set(WORKLOADS):
        ap.error("--repeats, --rounds and --sizes (n or BxN) must be positive and --workloads among " + ",".join(WORKLOADS))
    if not args.skip_build:
        build = ["cargo", "build", "--release", "-p", "nabla-linalg", "--example", "bench_linalg_ad"]
        subprocess.run(build, cwd=REPO, check=True)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, python {platform.python_version()}")
    cache = tempfile.TemporaryDirectory()
    os.environ["NABLA_BENCH_INPUTS"] = cache.name
    for size in sizes:
        draws(size)
    results = {}
    for dtype in args.dtypes.split(","):
        for threads in [int(t) for t in args.threads.split(",")]:
            rounds = {"nabla": [], "torch": [], "jax": []}
            for _ in range(args.rounds):
                for framework in rounds:
                    measured = measure(framework, dtype, threads, args)
                    if measured is not None:
                        rounds[framework].append(measured)
            for p in ("torch", "jax"):
                if not rounds[p]:
                    print(f"{p} not available; install it to compare")
            results[f"{dtype}_{threads}t"] = table(rounds, dtype, threads)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
