#!/usr/bin/env python3
"""Generate the JAX reference fixture checked by crates/nabla-linalg/tests/jax_transforms.rs.

Run from anywhere (needs JAX and NumPy; written against jax 0.10.2):

    python3 scripts/gen_jax_transform_fixtures.py

It writes crates/nabla-linalg/tests/fixtures/jax_transforms.json: derivatives up to third order of
scalar functions built from core ops and from the linalg extension family (solve, inv, log|det|), all
float64, from a seeded NumPy generator (deterministic for one JAX version). CI needs no Python.

Every case names a scalar function `f(*inputs)` that the Rust test also implements, and records

    value  = f(inputs)
    grads  = [df/dinput_i]                                 reverse mode
    jvp    = sum_i <df/dinput_i, v_i>                      forward mode along v
    hvp    = [d/dinput_i sum_j <df/dinput_j, v_j>]         forward over reverse
    third  = [d/dinput_i <hvp(inputs, v), v>]              a third derivative: D^3 f[v, v, .]
    weight = the fixed weight W of `sum(g(inputs) * W)` for the weighted cases

All arrays are row-major and flat, written with Python's shortest round-trip repr.
"""

from __future__ import annotations

import json
import os

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

SEED = 20261122
rng = np.random.default_rng(SEED)


def well_conditioned(shape):
    """Random square matrices near 2*I (batch allowed), far from singular."""
    n = shape[-1]
    return rng.uniform(-0.5, 0.5, size=shape) + 2.0 * np.eye(n)


def uniform(shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape)


def case(name, f, inputs, weight=None):
    inputs = [jnp.asarray(x) for x in inputs]
    vs = [jnp.asarray(uniform(x.shape)) for x in inputs]
    n = len(inputs)
    argnums = tuple(range(n))

    def directional(*xs):
        _, t = jax.jvp(f, tuple(xs), tuple(vs))
        return t

    def hvp_dot_v(*xs):
        # <hvp(xs, v), v> = D^2 f[v, v]
        return jax.jvp(lambda *ys: directional(*ys), tuple(xs), tuple(vs))[1]

    value = f(*inputs)
    grads = jax.grad(f, argnums=argnums)(*inputs)
    jvp = directional(*inputs)
    hvp = jax.grad(directional, argnums=argnums)(*inputs)
    third = jax.grad(hvp_dot_v, argnums=argnums)(*inputs)
    flat = lambda a: [float(v) for v in np.asarray(a).reshape(-1)]  # noqa: E731
    record = {
        "name": name,
        "inputs": [{"shape": list(x.shape), "data": flat(x)} for x in inputs],
        "v": [flat(v) for v in vs],
        "value": float(value),
        "grads": [flat(g) for g in grads],
        "jvp": float(jvp),
        "hvp": [flat(h) for h in hvp],
        "third": [flat(t) for t in third],
    }
    if weight is not None:
        record["weight"] = {"shape": list(weight.shape), "data": flat(weight)}
    return record


def main():
    w_solve = jnp.asarray(uniform((2, 3, 2)))
    w_inv = jnp.asarray(uniform((3, 3)))
    w_vec = jnp.asarray(uniform((4,)))
    cases = [
        case(
            "solve_weighted",
            lambda a, b: jnp.sum(jnp.linalg.solve(a, b) * w_solve),
            [well_conditioned((2, 3, 3)), uniform((2, 3, 2))],
            w_solve,
        ),
        case(
            "inv_weighted",
            lambda a: jnp.sum(jnp.linalg.inv(a) * w_inv),
            [well_conditioned((3, 3))],
            w_inv,
        ),
        case(
            "logabsdet_sum",
            lambda a: jnp.sum(jnp.linalg.slogdet(a)[1]),
            [well_conditioned((2, 3, 3))],
        ),
        case(
            "exp_sin_weighted",
            lambda x: jnp.sum(jnp.exp(jnp.sin(x)) * w_vec),
            [uniform((4,))],
            w_vec,
        ),
        case(
            "tanh_matmul_sum",
            lambda x, y: jnp.sum(jnp.tanh(x @ y)),
            [uniform((3, 4)), uniform((4, 2))],
        ),
    ]
    out = {
        "generator": "scripts/gen_jax_transform_fixtures.py",
        "jax": jax.__version__,
        "numpy": np.__version__,
        "seed": SEED,
        "cases": cases,
    }
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "crates", "nabla-linalg", "tests", "fixtures", "jax_transforms.json")
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)
        fh.write("\n")
    print(f"wrote {len(cases)} cases to {os.path.normpath(path)}")


if __name__ == "__main__":
    main()
