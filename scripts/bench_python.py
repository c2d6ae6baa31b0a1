"""Python-side speed of the `nabla_rs` package against PyTorch eager and JAX, same run.

Workloads:
- `chain_10k`: per-op overhead from Python: a 10,000-op eager chain on a 16-element tensor
  (`y = y * a + b`, 5,000 times) followed by backward (forward + backward time / 10,000 ops).
- `chain_10k_fwd`: the same chain without gradients.
- `mlp_step`: a training step (zero_grad, forward, cross-entropy, backward, Adam) of the MLP
  784-512-512-10 on a batch of 128, written with `nabla_rs.nn` / `torch.nn` (JAX is not compared
  here: scripts/bench_training.py measures its jitted step against nabla's Rust step).
- `cnn_step`: the same for conv3x3(1->32)-relu-maxpool2-conv3x3(32->64)-relu-maxpool2-
  linear(1600->128)-relu-linear(128->10) on a batch of 64 1x28x28 images.
- `mlp_grad`: the gradient of the same MLP's cross-entropy with respect to its six parameter
  tensors, written as a function of them (`nb.grad`, `torch.autograd.grad`), and `mlp_grad_jit` the
  same compiled (`nb.jit(nb.grad(loss))` against `jax.jit(jax.grad(loss))`); identical weights.

`rust` compares the two training steps with the same steps written in Rust (nabla's
`bench_training` example, when built).

Run with the package installed (`bash scripts/test_python.sh` builds it into target/py-venv, or
`maturin develop --release` in crates/nabla-py); PyTorch and JAX are compared when installed:

    target/py-venv/bin/python scripts/bench_python.py [--rounds 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from bench_support import compare_rounds, median_time  # noqa: E402

N_PAIRS = 5_000  # two ops each


def _models(nn):
    mlp = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    cnn = nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10),
    )
    return mlp, cnn


def _batches():
    import numpy as np

    r = np.random.default_rng(0)
    return (
        (r.normal(size=(128, 784)).astype(np.float32), r.integers(0, 10, 128)),
        (r.normal(size=(64, 1, 28, 28)).astype(np.float32), r.integers(0, 10, 64)),
    )


def _step(model, opt, loss_fn, x, y):
    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    return step


def _mlp_weights():
    """The MLP's weights and a batch, as NumPy arrays (the same for every framework)."""
    import numpy as np

    r = np.random.default_rng(1)
    sizes = [784, 512, 512, 10]
    params = []
    for a, b in zip(sizes, sizes[1:]):
        params += [(r.normal(size=(a, b)) / np.sqrt(a)).astype(np.float32), np.zeros(b, np.float32)]
    (x, y), _ = _batches()
    return params, x, y


def _mlp_loss(params, x, y, relu, cross_entropy):
    h = x
    for i in range(0, len(params) - 2, 2):
        h = relu(h @ params[i] + params[i + 1])
    return cross_entropy(h @ params[-2] + params[-1], y)


def nabla_measure(repeats: int) -> dict:
    import nabla_rs as nb

    mlp, cnn = _models(nb.nn)
    (xm, ym), (xc, yc) = _batches()
    ce = nb.nn.functional.cross_entropy
    mlp_step = _step(mlp, nb.optim.Adam(mlp.parameters()), ce, nb.tensor(xm), nb.tensor(ym))
    cnn_step = _step(cnn, nb.optim.Adam(cnn.parameters()), ce, nb.tensor(xc), nb.tensor(yc))

    a, b = nb.tensor([1.0001] * 16), nb.tensor([1e-4] * 16)

    def chain_grad():
        x = nb.tensor([0.5] * 16, requires_grad=True)
        y = x
        for _ in range(N_PAIRS):
            y = y * a + b
        y.sum().backward()

    def chain_fwd():
        y = nb.tensor([0.5] * 16)
        for _ in range(N_PAIRS):
            y = y * a + b

    weights, x, y = _mlp_weights()
    params, xt, yt = [nb.tensor(w) for w in weights], nb.tensor(x), nb.tensor(y)
    loss = lambda p, x, y: _mlp_loss(p, x, y, nb.nn.functional.relu, ce)
    grad, grad_jit = nb.grad(loss), nb.jit(nb.grad(loss))
    return {
        "chain_10k_s": median_time(chain_grad, repeats, warmup=1),
        "chain_10k_fwd_s": median_time(chain_fwd, repeats, warmup=1),
        "mlp_step_s": median_time(mlp_step, 4 * repeats),
        "cnn_step_s": median_time(cnn_step, 4 * repeats),
        "mlp_grad_s": median_time(lambda: grad(params, xt, yt), 4 * repeats),
        "mlp_grad_jit_s": median_time(lambda: grad_jit(params, xt, yt), 4 * repeats),
    }


def torch_setup():
    import torch

    torch.set_num_threads(2)
    a, b = torch.full((16,), 1.0001), torch.full((16,), 1e-4)

    def chain_grad():
        x = torch.full((16,), 0.5, requires_grad=True)
        y = x
        for _ in range(N_PAIRS):
            y = y * a + b
        y.sum().backward()

    def chain_fwd():
        with torch.no_grad():
            y = torch.full((16,), 0.5)
            for _ in range(N_PAIRS):
                y = y * a + b

    mlp, cnn = _models(torch.nn)
    (xm, ym), (xc, yc) = _batches()
    ce = torch.nn.functional.cross_entropy
    mlp_step = _step(mlp, torch.optim.Adam(mlp.parameters()), ce, torch.from_numpy(xm), torch.from_numpy(ym))
    cnn_step = _step(cnn, torch.optim.Adam(cnn.parameters()), ce, torch.from_numpy(xc), torch.from_numpy(yc))

    weights, x, y = _mlp_weights()
    params = [torch.from_numpy(w).requires_grad_() for w in weights]
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    def mlp_grad():
        loss = _mlp_loss(params, xt, yt, torch.relu, ce)
        return torch.autograd.grad(loss, params)

    def measure(repeats):
        return {
            "chain_10k_s": median_time(chain_grad, repeats, warmup=1),
            "chain_10k_fwd_s": median_time(chain_fwd, repeats, warmup=1),
            "mlp_step_s": median_time(mlp_step, 4 * repeats),
            "cnn_step_s": median_time(cnn_step, 4 * repeats),
            "mlp_grad_s": median_time(mlp_grad, 4 * repeats),
        }

    return torch.__version__, measure


def jax_measure(repeats: int) -> dict:
    """JAX's chain timings (run in a worker process, see `jax_setup`)."""
    import jax
    import jax.numpy as jnp

    a, b = jnp.full((16,), 1.0001), jnp.full((16,), 1e-4)

    def f(x):
        y = x
        for _ in range(N_PAIRS):
            y = y * a + b
        return y.sum()

    g = jax.grad(f)
    x0 = jnp.full((16,), 0.5)

    def cross_entropy(logits, y):
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1))

    weights, x, y = _mlp_weights()
    params, xj, yj = [jnp.asarray(w) for w in weights], jnp.asarray(x), jnp.asarray(y)
    mlp_grad = jax.jit(jax.grad(lambda p, x, y: _mlp_loss(p, x, y, jax.nn.relu, cross_entropy)))
    return {
        "chain_10k_s": median_time(lambda: g(x0).block_until_ready(), repeats, warmup=1),
        "chain_10k_fwd_s": median_time(lambda: f(x0).block_until_ready(), repeats, warmup=1),
        "mlp_grad_jit_s": median_time(lambda: jax.block_until_ready(mlp_grad(params, xj, yj)), 4 * repeats),
    }


def jax_setup():
    """JAX runs in a fresh worker process each round: its runtime's threads otherwise keep the CPU
    busy and slow the measurements that follow in this process."""
    import json
    import subprocess

    import jax  # noqa: F401 (fails here, as ImportError, when JAX is missing)

    def measure(repeats):
        out = subprocess.run(
            [sys.executable, __file__, "--jax-worker", str(repeats)], check=True, capture_output=True, text=True
        )
        return json.loads(out.stdout.strip().splitlines()[-1])

    return jax.__version__, measure


def rust_setup():
    """nabla's own Rust training steps (`crates/nabla/examples/bench_training.rs`, built with
    `cargo build --release -p nabla --example bench_training`, or the binary named by
    NABLA_BENCH_TRAINING): the same MLP and CNN steps, so `rust/nabla` is how close the Python
    step comes to the Rust one (the goal: at least 1/1.3 = 0.77)."""
    import json
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    binary = os.environ.get("NABLA_BENCH_TRAINING", os.path.join(root, "target", "release", "examples", "bench_training"))
    if not os.path.exists(binary):
        raise ImportError(f"{binary} is not built")

    def step(workload: str) -> float:
        out = subprocess.run([binary, "--workload", workload, "--steps", "30"], check=True, capture_output=True, text=True)
        return json.loads(out.stdout.strip().splitlines()[-1])["step_s"]

    return "bench_training", lambda repeats: {"mlp_step_s": step("mlp"), "cnn_step_s": step("cnn")}


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--jax-worker":
        import json

        print(json.dumps(jax_measure(int(sys.argv[2]))))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json")
    parser.add_argument("--peers", default="torch,jax,rust", help="comma-separated peers to compare (rust: nabla's Rust steps)")
    args = parser.parse_args()
    setups = {"torch": torch_setup, "jax": jax_setup, "rust": rust_setup}
    table = compare_rounds(
        lambda _: nabla_measure(args.repeats),
        {p: setups[p] for p in args.peers.split(",") if p},
        args.rounds,
        args.repeats,
        args.json,
    )
    per_op = {k: v["nabla_s"] / (2 * N_PAIRS) * 1e6 for k, v in table.items() if k.startswith("chain")}
    print("nabla per op (µs): " + ", ".join(f"{k.removesuffix('_s')} {v:.2f}" for k, v in per_op.items()))


if __name__ == "__main__":
    main()
