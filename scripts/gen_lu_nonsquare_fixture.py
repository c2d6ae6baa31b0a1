#!/usr/bin/env python3
"""Generate the JAX reference fixture for derivatives of LU of non-square matrices, checked by
crates/nabla-linalg/tests/linalg/factor.rs.

Run from anywhere (needs JAX; written against jax 0.10):

    python3 scripts/gen_lu_nonsquare_fixture.py

It writes crates/nabla-linalg/tests/fixtures/lu_nonsquare.json: for a tall (5 x 3), a wide (3 x 5) and
a batched wide (2 x 3 x 4) float64 matrix, P, L and U from jax.scipy.linalg.lu (partial pivoting picks
the largest pivot, as faer does, so P agrees), fixed weights W_L and W_U, and the gradient of
sum(W_L * L) + sum(W_U * U). Arrays are {"shape", "re"}, row-major and flat.
"""

from __future__ import annotations

import json
import os

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import jax.scipy.linalg as jsl  # noqa: E402

OUT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "crates", "nabla-linalg", "tests", "fixtures", "lu_nonsquare.json"
)
rng = np.random.default_rng(20261126)


def encode(a):
    a = np.asarray(a, dtype=np.float64)
    return {"shape": list(a.shape), "re": [float(v) for v in a.ravel()]}


def main():
    cases = []
    for shape in [(5, 3), (3, 5), (2, 3, 4)]:
        a = rng.uniform(-1, 1, shape)
        lu = jax.vmap(jsl.lu) if len(shape) == 3 else jsl.lu  # jax.scipy.linalg.lu takes one matrix
        p, l, u = lu(a)
        wl, wu = rng.uniform(-1, 1, l.shape), rng.uniform(-1, 1, u.shape)

        def loss(x, wl=wl, wu=wu, lu=lu):
            _, l, u = lu(x)
            return jnp.sum(wl * l) + jnp.sum(wu * u)

        grad = jax.grad(loss)(a)
        cases.append({"input": encode(a), "p": encode(p), "l": encode(l), "u": encode(u),
                      "wl": encode(wl), "wu": encode(wu), "grad": encode(grad)})
    with open(OUT, "w") as fh:
        json.dump({"generator": "scripts/gen_lu_nonsquare_fixture.py", "jax": jax.__version__, "cases": cases},
                  fh, separators=(",", ":"))
        fh.write("\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
