#!/usr/bin/env python3
"""Time per training step and peak memory of a CNN, an MLP, a GPT-style model and an LSTM: nabla,
PyTorch and JAX, one run.

Run from the repository root:

    python3 scripts/bench_training.py                       # 3 rounds of 20 steps
    python3 scripts/bench_training.py --steps 10 --rounds 2 --json out.json
    python3 scripts/bench_training.py --profile             # also nabla's per-layer CNN times

Workloads, float32 on the CPU, one fixed random batch, class-index labels, mean cross-entropy, Adam
(lr 1e-3, PyTorch's defaults), the same in the three frameworks (crates/nabla/examples/bench_training.rs
is nabla's side):

- cnn: conv3x3(1->32)-relu-maxpool2-conv3x3(32->64)-relu-maxpool2-flatten-linear(1600->128)-relu-
  linear(128->10), batch 64, 1x28x28 input, no padding;
- mlp: linear(784->512)-relu-linear(512->512)-relu-linear(512->10), batch 128;
- gpt: a character model, token and learned position embeddings (vocabulary 65, context 64, d_model
  128), 2 pre-norm transformer layers (4 heads, causal mask, feed-forward 512 with ReLU, no dropout),
  final layer norm, linear head; batch 32, next-character cross-entropy over every position
  (crates/nabla/examples/bench_sequence.rs is nabla's side of gpt and lstm);
- lstm: embedding (65 -> 64), 2-layer LSTM (hidden 256), linear head; sequence 50, batch 32.

A step is forward + loss + backward + Adam update. nabla runs it as `nabla train` does
(opt.backward_step(&loss), with the main thread in the CPU pool). PyTorch runs eagerly with
torch.set_num_threads(2) (zero_grad(set_to_none=True), loss.backward(), opt.step()); JAX jits the whole step (value_and_grad
plus a hand-written Adam with PyTorch's formulas) and each step ends with block_until_ready. Each run
reports the median and the best (minimum) of --steps steps after --warmup steps: on a shared machine the
best step is the one least disturbed by other processes.

Every framework/workload pair runs in its own fresh subprocess, so each gets a clean heap, and the peak
memory reported is that process's maximum resident set size (ru_maxrss from os.wait4), which includes
the runtime itself (the Python interpreter and the imported framework for PyTorch and JAX). Linux counts
the parent's resident memory at fork time in a child's peak, so this script imports no framework itself
(its own ~10 MiB are a floor under every figure). The whole
measurement runs --rounds times, the frameworks alternating within each round, so that a slow spell of a
shared machine hits all of them; the table gives the median over rounds, and each ratio is the median of
the per-round ratios other / nabla (above 1 means nabla is faster).

If PyTorch or JAX cannot be imported, the script says so and leaves it out.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
NABLA_EXE = os.path.join(REPO, "target", "release", "examples", "bench_training")
NABLA_SEQUENCE_EXE = os.path.join(REPO, "target", "release", "examples", "bench_sequence")
WORKLOADS = ("cnn", "mlp", "gpt", "lstm")
VOCAB, CONTEXT, D_MODEL, SEQUENCE, EMBED, HIDDEN, BATCH = 65, 64, 128, 50, 64, 256, 32
FRAMEWORKS = ("nabla", "torch", "jax")
SHAPES = {"cnn": (64, (1, 28, 28)), "mlp": (128, (784,))}
MLP_SIZES = (784, 512, 512, 10)
LR, BETAS, EPS = 1e-3, (0.9, 0.999), 1e-8


def fixed_batch(workload: str):
    """The same kind of batch as nabla's: uniform [0, 1) inputs, labels (7 i) mod 10; for the
    sequence models ids (7 i + 3 j) mod 65 and each next id as the target."""
    import numpy as np

    if workload in ("gpt", "lstm"):
        t = CONTEXT if workload == "gpt" else SEQUENCE
        i, j = np.meshgrid(np.arange(BATCH), np.arange(t + 1), indexing="ij")
        ids = (7 * i + 3 * j) % VOCAB
        return ids[:, :t].astype(np.int64), ids[:, 1:].reshape(-1).astype(np.int64)
    n, shape = SHAPES[workload]
    x = np.random.default_rng(1).random((n, *shape), dtype=np.float32)
    y = (np.arange(n) * 7) % 10
    return x, y


def timed_steps(step, steps: int, warmup: int) -> dict:
    """Median and best seconds of `step()` over `steps` runs after `warmup` runs."""
    for _ in range(warmup):
        step()
    runs = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        runs.append(time.perf_counter() - start)
    runs.sort()
    return {"step_s": runs[len(runs) // 2], "best_s": runs[0]}


def worker_torch(workload: str, steps: int, warmup: int) -> dict:
    import torch
    from torch import nn

    torch.set_num_threads(2)
    torch.manual_seed(0)
    if workload == "cnn":
        model = nn.Sequential(
            nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10),
        )
    elif workload == "mlp":
        a, b, c, d = MLP_SIZES
        model = nn.Sequential(nn.Linear(a, b), nn.ReLU(), nn.Linear(b, c), nn.ReLU(), nn.Linear(c, d))
    else:
        model = torch_sequence_model(workload)
    x, y = fixed_batch(workload)
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    opt = torch.optim.Adam(model.parameters(), lr=LR, betas=BETAS, eps=EPS)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    return {**timed_steps(step, steps, warmup), "version": torch.__version__}


def torch_sequence_model(workload: str):
    import torch
    from torch import nn

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(VOCAB, D_MODEL), nn.Embedding(CONTEXT, D_MODEL)
            self.layers = nn.ModuleList(
                nn.TransformerEncoderLayer(D_MODEL, 4, 4 * D_MODEL, dropout=0.0, batch_first=True, norm_first=True)
                for _ in range(2)
            )
            self.norm, self.head = nn.LayerNorm(D_MODEL), nn.Linear(D_MODEL, VOCAB)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(CONTEXT))
            self.register_buffer("positions", torch.arange(CONTEXT))

        def forward(self, ids):
            x = self.tok(ids) + self.pos(self.positions)
            for layer in self.layers:
                x = layer(x, src_mask=self.mask, is_causal=True)
            return self.head(self.norm(x)).reshape(-1, VOCAB)

    class CharLstm(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, EMBED)
            self.lstm = nn.LSTM(EMBED, HIDDEN, num_layers=2, batch_first=True)
            self.head = nn.Linear(HIDDEN, VOCAB)

        def forward(self, ids):
            out, _ = self.lstm(self.embed(ids))
            return self.head(out).reshape(-1, VOCAB)

    return Gpt() if workload == "gpt" else CharLstm()


def jax_sequence_params(workload: str, key):
    """Parameters of the gpt or lstm model (normal embeddings, PyTorch-style uniform weights)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    keys = iter(jax.random.split(key, 64))

    def uniform(shape, fan_in):
        bound = 1.0 / np.sqrt(fan_in)
        return jax.random.uniform(next(keys), shape, minval=-bound, maxval=bound)

    def embedding(n, d):
        return jax.random.normal(next(keys), (n, d))

    if workload == "lstm":
        layers = [
            {"w_ih": uniform((i, 4 * HIDDEN), HIDDEN), "w_hh": uniform((HIDDEN, 4 * HIDDEN), HIDDEN),
             "b": uniform((4 * HIDDEN,), HIDDEN)}
            for i in (EMBED, HIDDEN)
        ]
        return {"embed": embedding(VOCAB, EMBED), "layers": layers,
                "head_w": uniform((HIDDEN, VOCAB), HIDDEN), "head_b": uniform((VOCAB,), HIDDEN)}
    # Distinct arrays for every leaf: the step donates its parameters.
    d = D_MODEL
    ones, zeros = (lambda n=d: jnp.ones((n,))), (lambda n=d: jnp.zeros((n,)))  # noqa: E731
    layers = [
        {"ln1_g": ones(), "ln1_b": zeros(), "in_w": uniform((d, 3 * d), d), "in_b": zeros(3 * d),
         "out_w": uniform((d, d), d), "out_b": zeros(), "ln2_g": ones(), "ln2_b": zeros(),
         "w1": uniform((d, 4 * d), d), "b1": uniform((4 * d,), d),
         "w2": uniform((4 * d, d), 4 * d), "b2": uniform((d,), 4 * d)}
        for _ in range(2)
    ]
    return {"tok": embedding(VOCAB, d), "pos": embedding(CONTEXT, d), "layers": layers,
            "ln_g": ones(), "ln_b": zeros(), "head_w": uniform((d, VOCAB), d), "head_b": uniform((VOCAB,), d)}


def jax_sequence_forward(workload: str, p, ids):
    """Logits [N * T, vocab] of the gpt or lstm model."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    def layer_norm(x, g, b):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + 1e-5) * g + b

    if workload == "lstm":
        x = p["embed"][ids].swapaxes(0, 1)  # [T, N, E]
        for layer in p["layers"]:
            xs = x @ layer["w_ih"] + layer["b"]  # the input projection of every step at once

            def cell(carry, xt, w_hh=layer["w_hh"]):
                h, c = carry
                i, f, g, o = jnp.split(xt + h @ w_hh, 4, axis=-1)
                c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
                h = jax.nn.sigmoid(o) * jnp.tanh(c)
                return (h, c), h

            zero = jnp.zeros((ids.shape[0], HIDDEN))
            _, x = lax.scan(cell, (zero, zero), xs)
        return (x.swapaxes(0, 1) @ p["head_w"] + p["head_b"]).reshape(-1, VOCAB)
    n, t = ids.shape
    heads, dh = 4, D_MODEL // 4
    causal = jnp.tril(jnp.ones((t, t), dtype=bool))
    x = p["tok"][ids] + p["pos"][None, :t]
    for layer in p["layers"]:
        h = layer_norm(x, layer["ln1_g"], layer["ln1_b"]) @ layer["in_w"] + layer["in_b"]
        q, k, v = (a.reshape(n, t, heads, dh).transpose(0, 2, 1, 3) for a in jnp.split(h, 3, axis=-1))
        att = jnp.where(causal, q @ k.swapaxes(-1, -2) / jnp.sqrt(dh), -jnp.inf)
        o = (jax.nn.softmax(att, axis=-1) @ v).transpose(0, 2, 1, 3).reshape(n, t, D_MODEL)
        x = x + o @ layer["out_w"] + layer["out_b"]
        h = layer_norm(x, layer["ln2_g"], layer["ln2_b"])
        x = x + jax.nn.relu(h @ layer["w1"] + layer["b1"]) @ layer["w2"] + layer["b2"]
    return (layer_norm(x, p["ln_g"], p["ln_b"]) @ p["head_w"] + p["head_b"]).reshape(-1, VOCAB)


def jax_params(workload: str, key):
    """Parameters with PyTorch's default initialisation: U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    import jax
    import numpy as np

    if workload in ("gpt", "lstm"):
        return jax_sequence_params(workload, key)
    if workload == "cnn":
        shapes = [((32, 1, 3, 3), 9), ((64, 32, 3, 3), 288), ((1600, 128), 1600), ((128, 10), 128)]
    else:
        shapes = [((i, o), i) for i, o in zip(MLP_SIZES, MLP_SIZES[1:])]
    params = []
    for shape, fan_in in shapes:
        key, kw, kb = jax.random.split(key, 3)
        bound = 1.0 / np.sqrt(fan_in)
        bias_len = shape[0] if len(shape) == 4 else shape[1]
        params.append(jax.random.uniform(kw, shape, minval=-bound, maxval=bound))
        params.append(jax.random.uniform(kb, (bias_len,), minval=-bound, maxval=bound))
    return params


def jax_forward(workload: str, params, x):
    import jax
    import jax.numpy as jnp
    from jax import lax

    if workload in ("gpt", "lstm"):
        return jax_sequence_forward(workload, params, x)
    if workload == "mlp":
        h = x
        for i in range(0, len(params), 2):
            h = h @ params[i] + params[i + 1]
            if i + 2 < len(params):
                h = jax.nn.relu(h)
        return h
    dims = ("NCHW", "OIHW", "NCHW")
    h = x
    for i in (0, 2):
        h = lax.conv_general_dilated(h, params[i], (1, 1), "VALID", dimension_numbers=dims)
        h = jax.nn.relu(h + params[i + 1][None, :, None, None])
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    h = h.reshape(h.shape[0], -1)
    h = jax.nn.relu(h @ params[4] + params[5])
    return h @ params[6] + params[7]


def worker_jax(workload: str, steps: int, warmup: int) -> dict:
    import jax
    import jax.numpy as jnp

    params = jax_params(workload, jax.random.PRNGKey(0))
    x, y = fixed_batch(workload)
    x, y = jnp.asarray(x), jnp.asarray(y)

    def loss(ps, x, y):
        logp = jax.nn.log_softmax(jax_forward(workload, ps, x), axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    def train_step(ps, m, v, t, x, y):
        # PyTorch's Adam (single-tensor formulas, no weight decay).
        value, g = jax.value_and_grad(loss)(ps, x, y)
        t = t + 1
        tree_map = jax.tree_util.tree_map
        m = tree_map(lambda mi, gi: BETAS[0] * mi + (1 - BETAS[0]) * gi, m, g)
        v = tree_map(lambda vi, gi: BETAS[1] * vi + (1 - BETAS[1]) * gi * gi, v, g)
        c1, c2 = 1 - BETAS[0] ** t, 1 - BETAS[1] ** t
        ps = tree_map(lambda p, mi, vi: p - LR / c1 * mi / (jnp.sqrt(vi / c2) + EPS), ps, m, v)
        return ps, m, v, t, value

    start = time.perf_counter()
    zeros = lambda: jax.tree_util.tree_map(jnp.zeros_like, params)  # noqa: E731 (donated: distinct buffers)
    state = [params, zeros(), zeros(), jnp.float32(0.0)]
    compiled = jax.jit(train_step, donate_argnums=(0, 1, 2)).lower(*state, x, y).compile()
    compile_s = time.perf_counter() - start

    def step():
        *new, value = compiled(*state, x, y)
        state[:] = new
        jax.block_until_ready(value)

    return {**timed_steps(step, steps, warmup), "compile_s": compile_s, "version": jax.__version__}


def run_child(cmd: list[str]) -> dict:
    """Runs `cmd`, returns its last stdout line as JSON plus its peak RSS in MiB (from os.wait4)."""
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    proc.stdout.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with status {proc.returncode}")
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_rss_mib"] = usage.ru_maxrss / 1024  # Linux reports KiB
    return result


def command(framework: str, workload: str, args) -> list[str]:
    common = ["--workload", workload, "--steps", str(args.steps), "--warmup", str(args.warmup)]
    if framework == "nabla":
        return [NABLA_SEQUENCE_EXE if workload in ("gpt", "lstm") else NABLA_EXE, *common]
    return [sys.executable, os.path.abspath(__file__), "--worker", framework, *common]


def available(framework: str) -> bool:
    """Whether `framework` can be imported, found without importing it: a child's peak RSS counts the
    parent's resident memory at fork time (Linux keeps it across exec), so this process stays small."""
    if framework == "nabla" or importlib.util.find_spec(framework) is not None:
        return True
    print(f"{framework} is not installed (pip install {framework}); leaving it out")
    return False


def median(values: list[float]) -> float:
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def report(results: dict, frameworks: list[str], workloads: list[str], rounds: int) -> None:
    ms = lambda s: f"{s * 1e3:10.2f}"  # noqa: E731
    versions = ", ".join(f"{f} {results[(f, workloads[0])][0].get('version', '')}" for f in frameworks if f != "nabla")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus; {versions}")
    print(f"rounds: {rounds} (per run: median and best step; table: median over rounds; ratios: median of")
    print("per-round other / nabla, above 1 = nabla faster; 'best' is the least disturbed by other load)")
    head = "".join(f"{f + ' ms':>11}" for f in frameworks)
    ratios = "".join(f"{f + '/nabla':>12}" for f in frameworks if f != "nabla")
    mem = "".join(f"{f + ' MiB':>11}" for f in frameworks)
    print(f"{'workload':12}{head}{ratios}   peak RSS:{mem}")
    for w in workloads:
        for stat, label in (("step_s", "median"), ("best_s", "best")):
            line = f"{w + ' ' + label:12}"
            line += "".join(ms(median([r[stat] for r in results[(f, w)]])) + " " for f in frameworks)
            for f in frameworks[1:]:
                rs = [o[stat] / n[stat] for o, n in zip(results[(f, w)], results[("nabla", w)])]
                line += f"{median(rs):12.2f}"
            if stat == "step_s":
                line += "            " + "".join(
                    f"{median([r['peak_rss_mib'] for r in results[(f, w)]]):10.0f} " for f in frameworks
                )
            print(line)
    if "jax" in frameworks:
        compile_s = [median([r["compile_s"] for r in results[("jax", w)]]) for w in workloads]
        print("jax jit compile (not in step times): " + ", ".join(f"{w} {s:.2f} s" for w, s in zip(workloads, compile_s)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=20, help="timed steps per run (default 20)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of all frameworks (default 3)")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma-separated subset of {','.join(WORKLOADS)}")
    ap.add_argument("--skip-build", action="store_true", help="do not run cargo build first")
    ap.add_argument("--profile", action="store_true", help="also print nabla's per-layer CNN times")
    ap.add_argument("--json", help="also write every run's results to this file")
    ap.add_argument("--worker", choices=("torch", "jax"), help=argparse.SUPPRESS)
    ap.add_argument("--workload", choices=WORKLOADS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.steps < 1 or args.warmup < 1 or args.rounds < 1:
        ap.error("--steps, --warmup and --rounds must be at least 1")
    if args.worker:
        worker = worker_torch if args.worker == "torch" else worker_jax
        print(json.dumps(worker(args.workload, args.steps, args.warmup)))
        return

    if not args.skip_build:
        build = ["cargo", "build", "--release", "-p", "nabla", "--example", "bench_training", "--example", "bench_sequence"]
        subprocess.run(build, cwd=REPO, check=True)
    workloads = [w for w in WORKLOADS if w in args.workloads.split(",")]
    if not workloads or any(w not in WORKLOADS for w in args.workloads.split(",")):
        ap.error(f"--workloads takes a comma-separated subset of {','.join(WORKLOADS)}")
    frameworks = [f for f in FRAMEWORKS if available(f)]
    results = {(f, w): [] for f in frameworks for w in workloads}
    for r in range(args.rounds):
        # Alternate the order too, so that no framework always runs right after the same one.
        order = frameworks if r % 2 == 0 else frameworks[::-1]
        for f in order:
            for w in workloads:
                results[(f, w)].append(run_child(command(f, w, args)))
                print(f"round {r + 1}: {f:5} {w}: {results[(f, w)][-1]['step_s'] * 1e3:.2f} ms", file=sys.stderr)
    report(results, frameworks, workloads, args.rounds)
    if args.profile:
        subprocess.run([NABLA_EXE, "--workload", "cnn", "--steps", "10", "--warmup", "2", "--profile"], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({f"{f}/{w}": runs for (f, w), runs in results.items()}, fh, indent=1)


if __name__ == "__main__":
    main()
