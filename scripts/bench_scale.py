#!/usr/bin/env python3
"""Training steps at the sizes people train: nabla against PyTorch (eager, bf16 autocast, optionally
torch.compile) and optionally JAX, in one run, from the same weights.

Run from the repository root:

    python3 scripts/bench_scale.py                     # 3 rounds of 5 steps after 2 warm-up steps
    python3 scripts/bench_scale.py --compile --jax     # also torch.compile and JAX jit (slow to start)
    python3 scripts/bench_scale.py --rounds 2 --steps 3 --json out.json

Workloads (crates/nabla/examples/bench_scale.rs is nabla's side, scripts/bench_scale_models.py the
PyTorch and JAX models):

- gpt2: GPT-2 small, 124M parameters: token (50,257) and learned position (256) embeddings of width
  768, 12 pre-norm transformer layers (12 heads, feed-forward 3,072 with exact GELU, causal, no
  dropout), a final layer norm, the head tied to the token embedding; batch 4 of context 256,
  next-token mean cross-entropy over all 1,024 positions, AdamW with PyTorch's defaults (lr 1e-3,
  weight decay 0.01). PyTorch builds it from nn.TransformerEncoderLayer (the same modules and names
  as nabla's), JAX by hand.
- gpt2-hf: GPT-2 small as Hugging Face builds it (GPT2LMHeadModel, 1,024 positions, the tanh GELU,
  transformers' initialisation) against nabla's model zoo's Gpt2, which shares its names and
  layout; the batch, loss and optimizer of gpt2. No JAX run: transformers 5 has no Flax models.
- bert: a BERT-base-sized encoder, 110M parameters: token (30,522) and learned position (512) embeddings
  of width 768 and a layer norm, 12 post-norm transformer layers (12 heads, feed-forward 3,072 with
  exact GELU, bidirectional, no dropout), the head tied to the token embedding; batch 8 of sequence
  128, mean cross-entropy against fixed ids (as a masked-language-model head predicts ids), AdamW as
  GPT-2's.
- resnet50: ResNet-50 in ImageNet's layout (7x7 stride-2 stem, 3x3 stride-2 max-pool, 3-4-6-3 bottleneck
  blocks with the stride on the 3x3 convolution, 1,000 classes, 25.6M parameters), batch 8 of 3 x 224
  x 224 fixed images, otherwise as resnet18.
- resnet18: ResNet-18 in the CIFAR layout (3x3 stem, no max-pool, batch norm, 11M parameters),
  batch 32 of 3 x 32 x 32 fixed images, mean cross-entropy, SGD with momentum 0.9 and lr 0.01.

Runs: nabla f32; nabla under autocast(BF16) (matrix products and convolutions in bf16 with f32 sums,
f32 weights and activations); PyTorch eager f32; PyTorch eager under torch.autocast("cpu", dtype=torch.bfloat16)
(f32 weights and optimizer, products in bf16); --compile: torch.compile of the model, f32; --jax: the
whole step under jax.jit, f32.

The weights are drawn once by PyTorch (seed 0, its default initialisation but GPT-2's for the
embeddings: normal with standard deviation 0.02 for tokens, 0.01 for positions) and written as a
safetensors file that every framework loads by name, so all start from the same model: the first
step's losses must agree to 4 decimals (f32) before any time is reported (bf16 is compared to 2).

A step is forward + loss + backward + optimizer update. Each framework runs in its own subprocess with
2 threads; each run reports the median and the best of --steps steps after --warmup steps, and its
peak resident memory (ru_maxrss, which includes the Python runtime for PyTorch and JAX). The rounds
alternate the order of the frameworks; the table gives the median and range over rounds, and each
ratio is the median of the per-round ratios other / nabla (above 1 means nabla is faster).

Rates: a step's work is counted as 3 x the forward's multiply-adds x 2 (GEMMs, convolutions and
attention's two products over the full context, as computed; GPT-2's tied head included), divided by
the median step time, and compared with the matrix-product rate measured here at 2048^3 (nabla's f32,
PyTorch's f32 and bf16).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_scale_models as models  # noqa: E402

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
NABLA_EXE = os.path.join(REPO, "target", "release", "examples", "bench_scale")
WORKLOADS = ("gpt2", "gpt2-hf", "bert", "resnet18", "resnet50")


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def timed(step, steps: int, warmup: int) -> dict:
    times, first = [], None
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        loss = step()
        if i == 0:
            first = loss
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return {"first_loss": first, "step_s": median(times), "best_s": min(times)}


def worker_torch(workload: str, mode: str, weights: str, steps: int, warmup: int) -> dict:
    import torch
    from safetensors.torch import load_file

    torch.set_num_threads(2)
    model = models.torch_model(workload)
    missing, unexpected = model.load_state_dict(load_file(weights), strict=False)
    # A head tied to the token embedding is not in the file; nothing else may be missing.
    if unexpected or set(missing) - {"lm_head.weight"}:
        raise RuntimeError(f"{weights} does not fit {workload}: missing {missing}, unexpected {unexpected}")
    opt = models.torch_optimizer(workload, model)
    if mode == "compile":
        model = torch.compile(model)
    x, y = (torch.tensor(a) for a in models.inputs(workload))

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode == "bf16"):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return float(loss.detach())

    result = timed(step, steps, warmup)
    result["version"] = torch.__version__
    return result


def worker_torch_peak() -> dict:
    import torch

    torch.set_num_threads(2)
    out = {}
    for dtype, name in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
        a, b = torch.rand(2048, 2048, dtype=dtype), torch.rand(2048, 2048, dtype=dtype)
        times = []
        for i in range(13):
            t0 = time.perf_counter()
            a @ b
            if i >= 3:
                times.append(time.perf_counter() - t0)
        out[f"matmul_{name}_gflops"] = 2 * 2048**3 / median(times) / 1e9
    return out


def worker_jax(workload: str, weights: str, steps: int, warmup: int) -> dict:
    import jax
    import jax.numpy as jnp
    from safetensors.numpy import load_file

    stats = ("running_mean", "running_var", "num_batches_tracked")  # unused by the training loss
    params = {k: jnp.asarray(v) for k, v in load_file(weights).items() if not k.endswith(stats)}
    x, y = (jnp.asarray(a) for a in models.inputs(workload))
    loss_fn = models.jax_loss(workload)
    init, update = models.jax_update(workload)

    @jax.jit
    def train_step(p, state, t):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        p, state = update(p, g, state, t)
        return p, state, loss

    box = {"p": params, "state": init(params), "t": 0}
    t0 = time.perf_counter()
    train_step.lower(params, box["state"], 1).compile()
    compile_s = time.perf_counter() - t0

    def step():
        box["t"] += 1
        box["p"], box["state"], loss = train_step(box["p"], box["state"], box["t"])
        return float(jax.block_until_ready(loss))

    result = timed(step, steps, warmup)
    result.update(version=jax.__version__, compile_s=compile_s)
    return result


def run_child(cmd: list[str]) -> dict:
    """Runs `cmd`, returns its last stdout line as JSON plus its peak RSS in MiB (from os.wait4)."""
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    proc.stdout.close()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with status {os.waitstatus_to_exitcode(status)}")
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_rss_mib"] = usage.ru_maxrss / 1024  # Linux reports KiB
    return result


def command(run: str, workload: str, weights: str, args) -> list[str]:
    common = ["--workload", workload, "--weights", weights, "--steps", str(args.steps), "--warmup", str(args.warmup)]
    if run == "nabla":
        return [NABLA_EXE, *common]
    if run == "nabla-bf16":
        return [NABLA_EXE, *common, "--autocast", "bf16"]
    me = [sys.executable, os.path.abspath(__file__), *common]
    if run == "jax":
        return me + ["--worker", "jax"]
    mode = {"torch": "eager", "torch-bf16": "bf16", "torch-compile": "compile"}[run]
    return me + ["--worker", "torch", "--mode", mode]


def check_losses(workload: str, results: dict, runs: list[str]) -> None:
    """The first step's loss of every run agrees with nabla's (4 decimals in f32, 2 in bf16)."""
    want = results["nabla"][0]["first_loss"]
    for run in runs:
        for r in results[run]:
            tolerance = 1e-2 if run.endswith("bf16") else 1e-4
            if abs(r["first_loss"] - want) > tolerance * max(1.0, abs(want)):
                sys.exit(f"{workload}: {run}'s first loss {r['first_loss']:.6f} differs from nabla's {want:.6f}: "
                         "the models are not the same, no time is reported")


def report(workload: str, results: dict, runs: list[str], peaks: dict) -> None:
    flops = models.flops(workload)
    print(f"\n{workload}: {flops / 1e9:.0f} GFLOP a step, first loss {results['nabla'][0]['first_loss']:.6f} "
          "(rates against the same framework's f32 peak; bf16 against torch's bf16 peak)")
    print(f"{'run':15}{'median s':>10}{'range s':>18}{'best s':>9}{'/nabla':>8}{'GFLOP/s':>9}{'% peak':>8}{'RSS MiB':>9}")
    for run in runs:
        rs = results[run]
        steps = [r["step_s"] for r in rs]
        ratio = median([r["step_s"] / n["step_s"] for r, n in zip(rs, results["nabla"])])
        rate = flops / median(steps) / 1e9
        peak = peaks["torch_bf16"] if run.endswith("bf16") else peaks["nabla" if run == "nabla" else "torch_f32"]
        print(f"{run:15}{median(steps):10.3f}   {min(steps):6.3f} - {max(steps):6.3f}{min(r['best_s'] for r in rs):9.3f}"
              f"{ratio:8.2f}{rate:9.0f}{100 * rate / peak:7.0f}%{median([r['peak_rss_mib'] for r in rs]):9.0f}")
    n = results["nabla"][-1]
    print(f"nabla: forward {n['forward_s']:.3f} s, backward with the update {n['backward_s']:.3f} s; buffer cache "
          f"capacity {n['cache_capacity_mib']:.0f} MiB, high water {n['cache_high_water_mib']:.0f} MiB, hit rate "
          f"{n['cache_hit_rate']:.3f}, fresh memory {n['fresh_mib_per_timed_step']:.0f} MiB a timed step")
    if "jax" in runs:
        print(f"jax jit compile (not in step times): {median([r['compile_s'] for r in results['jax']]):.1f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma-separated subset of {','.join(WORKLOADS)}")
    ap.add_argument("--steps", type=int, default=5, help="timed steps per run (default 5)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first (default 2)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    ap.add_argument("--compile", action="store_true", help="also torch.compile (minutes to compile)")
    ap.add_argument("--jax", action="store_true", help="also JAX jit (GPT-2: about 15 s a step here)")
    ap.add_argument("--skip-build", action="store_true", help="do not run cargo build first")
    ap.add_argument("--json", help="also write every run's results to this file")
    ap.add_argument("--worker", choices=("torch", "jax", "torch-peak"), help=argparse.SUPPRESS)
    ap.add_argument("--workload", choices=WORKLOADS, help=argparse.SUPPRESS)
    ap.add_argument("--mode", choices=("eager", "bf16", "compile"), default="eager", help=argparse.SUPPRESS)
    ap.add_argument("--weights", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.steps < 1 or args.warmup < 1 or args.rounds < 1:
        ap.error("--steps, --warmup and --rounds must be at least 1")
    if args.worker == "torch":
        print(json.dumps(worker_torch(args.workload, args.mode, args.weights, args.steps, args.warmup)))
        return
    if args.worker == "jax":
        print(json.dumps(worker_jax(args.workload, args.weights, args.steps, args.warmup)))
        return
    if args.worker == "torch-peak":
        print(json.dumps(worker_torch_peak()))
        return

    workloads = args.workloads.split(",")
    if any(w not in WORKLOADS for w in workloads):
        ap.error(f"--workloads takes a comma-separated subset of {','.join(WORKLOADS)}")
    for need in ("torch", "safetensors") + (("jax",) if args.jax else ()):
        if importlib.util.find_spec(need) is None:
            sys.exit(f"{need} is needed (pip install {need})")
    if not args.skip_build:
        subprocess.run(["cargo", "build", "--release", "-p", "nabla", "--example", "bench_scale"], cwd=REPO, check=True)
    base_runs = ["nabla", "torch", "torch-bf16"] + (["torch-compile"] if args.compile else []) + (["jax"] if args.jax else [])
    peaks = {"nabla": run_child([NABLA_EXE, "--workload", "peak"])["matmul_f32_gflops"]}
    torch_peak = run_child([sys.executable, os.path.abspath(__file__), "--worker", "torch-peak"])
    peaks.update(torch_f32=torch_peak["matmul_f32_gflops"], torch_bf16=torch_peak["matmul_bf16_gflops"])
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus; matmul 2048^3 GFLOP/s: nabla f32 "
          f"{peaks['nabla']:.0f}, torch f32 {peaks['torch_f32']:.0f}, torch bf16 {peaks['torch_bf16']:.0f}")
    everything = {"peaks": peaks}
    with tempfile.TemporaryDirectory(prefix="nabla-bench-scale-") as tmp:
        for workload in workloads:
            weights = os.path.join(tmp, f"{workload}.safetensors")
            subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
                            f"import bench_scale_models as m; m.write_weights({workload!r}, {weights!r})"], check=True)
            runs = base_runs[:1] + ["nabla-bf16"] + base_runs[1:]
            if workload == "gpt2-hf":
                runs = [r for r in runs if r != "jax"]
            results = {run: [] for run in runs}
            for r in range(args.rounds):
                for run in (runs if r % 2 == 0 else runs[::-1]):
                    results[run].append(run_child(command(run, workload, weights, args)))
                    print(f"{workload} round {r + 1}: {run:14} {results[run][-1]['step_s']:.3f} s, first loss "
                          f"{results[run][-1]['first_loss']:.6f}", file=sys.stderr)
            os.remove(weights)
            check_losses(workload, results, runs)
            report(workload, results, runs, peaks)
            everything[workload] = results
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(everything, fh, indent=1)


if __name__ == "__main__":
    main()
