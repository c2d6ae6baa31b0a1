#!/usr/bin/env python3
"""Generate the JAX reference fixture checked by crates/nabla-linalg/tests/linalg/entry_points.rs.

Run from anywhere (needs JAX and NumPy; written against jax 0.10.2):

    python3 scripts/gen_jax_linalg_entry_points.py

It writes crates/nabla-linalg/tests/fixtures/jax_entry_points.json. The Rust test differentiates the
same functions through every entry point (`backward`, `grad`, `jvp`, `hvp`, `hessian`, `jacrev`,
`jacfwd`, eager and traced) with no rule setup, which only works when the linalg family's rules travel
with its ops. All float64, from a seeded NumPy generator (deterministic for one JAX version); CI needs
no Python.

Every case has one input `x` and records, row-major and flat:

    value    = f(x)                      a scalar loss over one linalg op
    grad     = df/dx                     reverse mode
    hessian  = d2f/dx2                   shape x.shape ++ x.shape
    v, jvp   = a direction and <df/dx, v>
    outputs  = g(x)                      the op's (gauge-invariant) vector/matrix output
    jacobian = dg/dx                     shape g.shape ++ x.shape
    weight   = the fixed weight W of f = sum(g(x) * W) (and any constant operand the case uses)
"""

from __future__ import annotations

import json
import os

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

SEED = 20261125
rng = np.random.default_rng(SEED)


def uniform(shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape)


def well_conditioned(shape):
    n = shape[-1]
    return uniform(shape, -0.5, 0.5) + 2.0 * np.eye(n)


def spd(shape):
    a = uniform(shape)
    n = shape[-1]
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def flat(x):
    return [float(v) for v in np.asarray(x).reshape(-1)]


def entry(x):
    x = np.asarray(x)
    return {"shape": list(x.shape), "data": flat(x)}


def case(name, g, x, extra=None):
    """`g` maps x to the op's output; the loss is sum(g(x) * W) with a fixed random W."""
    x = jnp.asarray(x)
    out = g(x)
    w = jnp.asarray(uniform(out.shape))
    v = jnp.asarray(uniform(x.shape))

    def f(x):
        return jnp.sum(g(x) * w)

    _, jvp = jax.jvp(f, (x,), (v,))
    record = {
        "name": name,
        "x": entry(x),
        "weight": entry(w),
        "value": float(f(x)),
        "grad": entry(jax.grad(f)(x)),
        "hessian": entry(jax.hessian(f)(x)),
        "v": entry(v),
        "jvp": float(jvp),
        "outputs": entry(out),
        "jacobian": entry(jax.jacrev(g)(x)),
    }
    if extra is not None:
        record["constant"] = entry(extra)
    return record


def main():
    b = uniform((3, 2))
    cases = [
        # solve(A, B) with a constant B.
        case("solve", lambda a: jnp.linalg.solve(a, jnp.asarray(b)), well_conditioned((3, 3)), b),
        # det over a batch of two matrices.
        case("det", jnp.linalg.det, well_conditioned((2, 3, 3))),
        # cholesky of an SPD matrix (JAX symmetrises the tangent, as nabla does).
        case("cholesky", jnp.linalg.cholesky, spd((3, 3))),
        # eigh: eigenvalues and the squared eigenvectors (independent of each vector's sign).
        case(
            "eigh",
            lambda a: jnp.concatenate(
                [jnp.linalg.eigh(a)[0], jnp.linalg.eigh(a)[1].reshape(-1) ** 2]
            ),
            spd((3, 3)),
        ),
        # svd: singular values and the squared left singular vectors of a tall matrix.
        case(
            "svd",
            lambda a: jnp.concatenate(
                [
                    jnp.linalg.svd(a, full_matrices=False)[1],
                    jnp.linalg.svd(a, full_matrices=False)[0].reshape(-1) ** 2,
                ]
            ),
            uniform((4, 3)),
        ),
    ]
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(
        here, "..", "crates", "nabla-linalg", "tests", "fixtures", "jax_entry_points.json"
    )
    with open(path, "w") as fh:
        json.dump(
            {"generator": "scripts/gen_jax_linalg_entry_points.py", "jax": jax.__version__, "cases": cases},
            fh,
        )
        fh.write("\n")
    print(f"wrote {len(cases)} cases to {os.path.normpath(path)}")


if __name__ == "__main__":
    main()
