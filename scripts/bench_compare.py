#!/usr/bin/env python3
"""Time the benchmark workloads of issue 2 in nabla, NumPy and (if importable) JAX in one run, and print
a table of times and ratios.

Run from the repository root:

    python3 scripts/bench_compare.py                 # everything
    python3 scripts/bench_compare.py --filter matmul # a subset (substring of the workload names)
    python3 scripts/bench_compare.py --no-jax --json results.json

The nabla side is the example crates/nabla/examples/bench_report.rs: the script builds it with
`cargo build --release -p nabla --example bench_report` and runs it as `bench_report --name WORKLOAD`. It
times the same workloads (defined in crates/nabla/benches/common/workloads.rs) and prints JSON. The three
libraries run one workload after another (nabla, NumPy, JAX, then the next workload), so that a change in
machine load affects all three alike. Every library is timed the same way: a warm-up (at least 2 runs and
0.3 s; for JAX this includes compilation), then at least --repeats runs and until --budget seconds have
passed; the median is reported. JAX runs jit-compiled on the CPU and every run ends with
block_until_ready(). Results on a busy machine are noisy (OpenBLAS threads suffer most): check the load.

The ratio columns are `numpy / nabla` and `jax / nabla` times: above 1 means nabla is faster. Matmuls are
also given in GFLOP/s (2*m*n*k per product), memory-bound ops in GB/s (bytes read plus bytes written).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
N4K = 4096


def workloads():
    """(name, kind, flops, bytes, setup) for every workload; `setup(xp)` returns the arguments."""
    out = []
    for s in (256, 512, 1024, 2048):
        out.append((f"matmul_f32_{s}", "matmul", 2.0 * s**3, 0.0, ("f32", (s, s), (s, s))))
    out.append(("matmul_f64_1024", "matmul", 2.0 * 1024**3, 0.0, ("f64", (1024, 1024), (1024, 1024))))
    out.append(("bmm_f32_64x128x128", "matmul", 2.0 * 64 * 128**3, 0.0, ("f32", (64, 128, 128), (64, 128, 128))))
    for n, tag in ((1 << 20, "1M"), (1 << 24, "16M")):
        out.append((f"add_f32_{tag}", "add", 0.0, 12.0 * n, n))
    for n, tag in ((1 << 20, "1M"), (1 << 24, "16M")):
        out.append((f"exp_f32_{tag}", "exp", 0.0, 8.0 * n, n))
    for axis in (0, 1):
        out.append((f"sum_axis{axis}_f32_4096x4096", f"sum{axis}", 0.0, 4.0 * N4K * N4K, None))
    out.append(("transpose_copy_f32_4096x4096", "transpose", 0.0, 8.0 * N4K * N4K, None))
    return out


def make_inputs(kind, spec, rng):
    """NumPy float arrays in [-1, 1] for one workload."""
    def arr(shape, dt):
        return rng.uniform(-1, 1, size=shape).astype(np.float32 if dt == "f32" else np.float64)
    if kind == "matmul":
        dt, sa, sb = spec
        return [arr(sa, dt), arr(sb, dt)]
    if kind == "add":
        return [arr((spec,), "f32"), arr((spec,), "f32")]
    if kind == "exp":
        return [arr((spec,), "f32")]
    return [arr((N4K, N4K), "f32")]


def numpy_fn(kind):
    return {
        "matmul": lambda a, b: np.matmul(a, b),
        "add": lambda a, b: a + b,
        "exp": np.exp,
        "sum0": lambda x: x.sum(axis=0),
        "sum1": lambda x: x.sum(axis=1),
        "transpose": lambda x: np.ascontiguousarray(x.T),
    }[kind]


def jax_fn(kind, jax, jnp):
    f = {
        "matmul": lambda a, b: jnp.matmul(a, b),
        "add": lambda a, b: a + b,
        "exp": jnp.exp,
        "sum0": lambda x: jnp.sum(x, axis=0),
        "sum1": lambda x: jnp.sum(x, axis=1),
        "transpose": lambda x: jnp.transpose(x),
    }[kind]
    return jax.jit(f)


def time_it(run, repeats, budget):
    """Median and count of timed runs after a warm-up; `run` must finish its work before returning."""
    t0, warm = time.perf_counter(), 0
    while warm < 2 or time.perf_counter() - t0 < 0.3:
        run()
        warm += 1
    times = []
    start = time.perf_counter()
    while len(times) < repeats or (time.perf_counter() - start < budget and len(times) < 200):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), len(times)


def build_nabla():
    """Builds the Rust bench_report example and returns the path of its executable (run directly, so that
    timing a workload never waits for cargo's build lock)."""
    cmd = ["cargo", "build", "--release", "-p", "nabla", "--example", "bench_report", "--message-format=json"]
    print("$ " + " ".join(cmd[:-1]), file=sys.stderr)
    proc = subprocess.run(cmd, cwd=REPO, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise SystemExit("building bench_report failed")
    for line in proc.stdout.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("target", {}).get("name") == "bench_report":
            if msg.get("executable"):
                return msg["executable"]
    raise SystemExit("cargo did not report the bench_report executable")


def run_nabla(exe, args, name):
    """Times one workload with the Rust bench_report example; returns its JSON entry."""
    cmd = [exe, "--name", name, "--repeats", str(args.repeats), "--budget", str(args.budget)]
    proc = subprocess.run(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if proc.returncode != 0:
        return {"name": name, "error": f"bench_report exited with code {proc.returncode}"}
    results = json.loads(proc.stdout)["results"]
    return results[0] if results else {"name": name, "error": "no result"}


def fmt_ms(s):
    return "-" if s is None else f"{s * 1e3:.3f}"


def fmt_ratio(other, ours):
    return "-" if other is None or ours is None else f"{other / ours:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--filter", help="only workloads whose name contains this")
    ap.add_argument("--repeats", type=int, default=10, help="minimum timed runs per workload (default 10)")
    ap.add_argument("--budget", type=float, default=2.0, help="seconds of timed runs per workload (default 2)")
    ap.add_argument("--no-jax", action="store_true", help="skip JAX even if it is installed")
    ap.add_argument("--no-nabla", action="store_true", help="skip the Rust side (NumPy/JAX only)")
    ap.add_argument("--json", help="also write all results to this file")
    args = ap.parse_args()

    selected = [w for w in workloads() if not args.filter or args.filter in w[0]]
    if not selected:
        raise SystemExit(f"no workload matches {args.filter!r}")

    exe = None if args.no_nabla else build_nabla()

    jax = jnp = None
    if not args.no_jax:
        try:
            os.environ.setdefault("JAX_PLATFORMS", "cpu")
            import jax  # noqa: F811
            import jax.numpy as jnp  # noqa: F811
            jax.config.update("jax_enable_x64", True)  # the f64 matmul must stay f64
        except ImportError:
            print("JAX is not installed; skipping it", file=sys.stderr)
            jax = None

    load_before = os.getloadavg()[0]
    rng = np.random.default_rng(0)
    rows = []
    # Workload by workload, nabla then NumPy then JAX, so that all three see the same machine load.
    for name, kind, flops, nbytes, spec in selected:
        r = {} if exe is None else run_nabla(exe, args, name)
        inputs = make_inputs(kind, spec, rng)
        f = numpy_fn(kind)
        np_s, _ = time_it(lambda: f(*inputs), args.repeats, args.budget)
        jax_s = None
        if jax is not None:
            g = jax_fn(kind, jax, jnp)
            dev = [jax.device_put(x) for x in inputs]
            jax_s, _ = time_it(lambda: g(*dev).block_until_ready(), args.repeats, args.budget)
            del dev
        del inputs
        ours = r.get("median_s")
        if "error" in r:
            print(f"nabla failed on {name}: {r['error']}", file=sys.stderr)
        print(f"{name:<30} nabla {fmt_ms(ours):>9} ms  numpy {fmt_ms(np_s):>9} ms  jax {fmt_ms(jax_s):>9} ms",
              file=sys.stderr)
        rows.append({"name": name, "flops": flops, "bytes": nbytes, "nabla_s": ours, "numpy_s": np_s, "jax_s": jax_s})

    def rate(row, key):
        s = row[key]
        if s is None:
            return "-"
        return f"{row['flops'] / s / 1e9:.1f}" if row["flops"] else f"{row['bytes'] / s / 1e9:.1f}"

    header = ["workload", "nabla ms", "numpy ms", "jax ms", "numpy/nabla", "jax/nabla", "unit",
              "nabla rate", "numpy rate", "jax rate"]
    table = [header]
    for row in rows:
        table.append([
            row["name"], fmt_ms(row["nabla_s"]), fmt_ms(row["numpy_s"]), fmt_ms(row["jax_s"]),
            fmt_ratio(row["numpy_s"], row["nabla_s"]), fmt_ratio(row["jax_s"], row["nabla_s"]),
            "GFLOP/s" if row["flops"] else "GB/s", rate(row, "nabla_s"), rate(row, "numpy_s"), rate(row, "jax_s"),
        ])
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    print(f"\nnumpy {np.__version__}" + (f", jax {jax.__version__}" if jax is not None else ", no jax")
          + f", {platform.machine()}, {os.cpu_count()} logical CPUs, 1-minute load average"
          f" {load_before:.2f} before and {os.getloadavg()[0]:.2f} after (anything above 0.5 disturbs timings)")
    print("ratios are other-time / nabla-time: above 1 means nabla is faster\n")
    sep = "|".join("-" * (w + 2) for w in widths)
    for i, r in enumerate(table):
        print("|" + "|".join(f" {c:<{w}} " if j == 0 else f" {c:>{w}} " for j, (c, w) in enumerate(zip(r, widths))) + "|")
        if i == 0:
            print("|" + sep + "|")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"numpy": np.__version__, "jax": None if jax is None else jax.__version__, "results": rows}, fh,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
