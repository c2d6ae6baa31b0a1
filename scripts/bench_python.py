"""Python-side speed of the `nabla_rs` package against PyTorch eager and JAX, same run.

Workloads:
- `chain_10k`: per-op overhead from Python: a 10,000-op eager chain on a 16-element tensor
  (`y = y * a + b`, 5,000 times) followed by backward (forward + backward time / 10,000 ops).
- `chain_10k_fwd`: the same chain without gradients.

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


def nabla_measure(repeats: int) -> dict:
    import nabla_rs as nb

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

    return {
        "chain_10k_s": median_time(chain_grad, repeats, warmup=1),
        "chain_10k_fwd_s": median_time(chain_fwd, repeats, warmup=1),
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

    def measure(repeats):
        return {
            "chain_10k_s": median_time(chain_grad, repeats, warmup=1),
            "chain_10k_fwd_s": median_time(chain_fwd, repeats, warmup=1),
        }

    return torch.__version__, measure


def jax_setup():
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

    def measure(repeats):
        return {
            "chain_10k_s": median_time(lambda: g(x0).block_until_ready(), repeats, warmup=1),
            "chain_10k_fwd_s": median_time(lambda: f(x0).block_until_ready(), repeats, warmup=1),
        }

    return jax.__version__, measure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    table = compare_rounds(
        lambda _: nabla_measure(args.repeats),
        {"torch": torch_setup, "jax": jax_setup},
        args.rounds,
        args.repeats,
        args.json,
    )
    per_op = {k: v["nabla_s"] / (2 * N_PAIRS) * 1e6 for k, v in table.items()}
    print("nabla per op (µs): " + ", ".join(f"{k.removesuffix('_s')} {v:.2f}" for k, v in per_op.items()))


if __name__ == "__main__":
    main()
