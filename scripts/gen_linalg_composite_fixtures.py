#!/usr/bin/env python3
"""Generate the JAX reference fixture checked by crates/nabla-linalg/tests/linalg/composite.rs.

Run from anywhere (needs JAX and NumPy; written against jax 0.10):

    python3 scripts/gen_linalg_composite_fixtures.py

It writes crates/nabla-linalg/tests/fixtures/composite.json: for each composed linear-algebra function
(vector_norm, cross, vecdot, matrix_power, multi_dot, cond, eigvalsh, cholesky(upper=True),
pinv(hermitian=True), solve and lstsq with vector right-hand sides, tensorsolve), float64 inputs from a
seeded generator, the output, a fixed weight W of the output's shape and the gradients of
sum(f(inputs) * W) with respect to every input. Arrays are {"shape", "re"}, row-major and flat.
"""

from __future__ import annotations

import json
import os

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

OUT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "crates", "nabla-linalg", "tests", "fixtures", "composite.json"
)
rng = np.random.default_rng(20261126)


def rand(*shape):
    return rng.uniform(-1, 1, shape)


def conditioned(*shape):
    n = shape[-1]
    return rand(*shape) + n * np.eye(n)


def spd(n):
    x = rand(n, n)
    return x @ x.T + n * np.eye(n)


def sym(x):
    return (x + jnp.swapaxes(x, -1, -2)) / 2


CASES = [
    ("vector_norm_2", lambda x: jnp.linalg.vector_norm(x, ord=2, axis=-1), [rand(3, 4)]),
    ("vector_norm_3", lambda x: jnp.linalg.vector_norm(x, ord=3), [rand(3, 4)]),
    ("vector_norm_inf", lambda x: jnp.linalg.vector_norm(x, ord=jnp.inf, axis=0), [rand(3, 4)]),
    ("cross", lambda a, b: jnp.cross(a, b), [rand(4, 3), rand(4, 3)]),
    ("vecdot", lambda a, b: jnp.linalg.vecdot(a, b, axis=-1), [rand(2, 5), rand(2, 5)]),
    ("matrix_power_3", lambda a: jnp.linalg.matrix_power(a, 3), [conditioned(2, 3, 3)]),
    ("matrix_power_-2", lambda a: jnp.linalg.matrix_power(a, -2), [conditioned(3, 3)]),
    ("multi_dot", lambda a, b, c: jnp.linalg.multi_dot([a, b, c]), [rand(2, 5), rand(5, 4), rand(4, 3)]),
    ("cond_2", lambda a: jnp.linalg.cond(a), [conditioned(4, 4)]),
    ("cond_fro", lambda a: jnp.linalg.cond(a, "fro"), [conditioned(3, 3)]),
    ("eigvalsh", lambda a: jnp.linalg.eigvalsh(a), [rand(2, 4, 4)]),
    ("cholesky_upper", lambda a: jnp.linalg.cholesky(a, upper=True), [spd(4)]),
    ("pinvh", lambda a: jnp.linalg.pinv(sym(a), hermitian=True), [sym(conditioned(4, 4))]),
    ("solve_vector_broadcast", lambda a, b: jnp.linalg.solve(a, b), [conditioned(2, 3, 3), rand(3)]),
    ("lstsq_vector", lambda a, b: jnp.linalg.lstsq(a, b)[0], [rand(5, 3), rand(5)]),
    ("tensorsolve", lambda a, b: jnp.linalg.tensorsolve(a, b), [conditioned(6, 6).reshape(6, 2, 3), rand(6)]),
]


def encode(a):
    a = np.asarray(a, dtype=np.float64)
    return {"shape": list(a.shape), "re": [float(v) for v in a.ravel()]}


def main():
    cases = []
    for name, f, inputs in CASES:
        inputs = [np.asarray(x, dtype=np.float64) for x in inputs]
        out = np.asarray(f(*inputs))
        w = rand(*out.shape)
        loss = lambda *xs, f=f, w=w: jnp.sum(f(*xs) * w)  # noqa: E731
        grads = jax.grad(loss, argnums=tuple(range(len(inputs))))(*inputs)
        cases.append({"name": name, "inputs": [encode(x) for x in inputs], "output": encode(out),
                      "weight": encode(w), "grads": [encode(g) for g in grads]})
    with open(OUT, "w") as fh:
        json.dump({"generator": "scripts/gen_linalg_composite_fixtures.py", "jax": jax.__version__,
                   "cases": cases}, fh, separators=(",", ":"))
        fh.write("\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
