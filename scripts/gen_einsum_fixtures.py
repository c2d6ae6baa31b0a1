#!/usr/bin/env python3
"""Generate the reference fixture checked by crates/nabla-tensor/tests/einsum.rs.

Run from anywhere (needs NumPy and JAX; written against numpy 2 and jax 0.10):

    python3 scripts/gen_einsum_fixtures.py

It writes crates/nabla-tensor/tests/fixtures/einsum.json. The equations are those of NumPy's einsum
tests (numpy/_core/tests/test_einsum.py: sums, traces, diagonals, transposes, outer and inner
products, matrix-vector and batched products, repeated indices, ellipses with broadcasting, implicit
outputs, three- and four-operand contractions), with small random operands in float64. Values come
from numpy.einsum; the gradient of sum(output * cotangent) with respect to every operand from
jax.vjp of jnp.einsum. CI needs no Python.

Each case: {"equation", "operands": [{"shape", "re"}...], "output": {...}, "cotangent": {...},
"grads": [{...} per operand]}; arrays row-major and flat, shortest round-trip repr.
"""

from __future__ import annotations

import json
import os

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

OUT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "crates", "nabla-tensor", "tests", "fixtures", "einsum.json"
)

rng = np.random.default_rng(20261126)

# (equation, operand shapes)
CASES = [
    ("i", [[5]]),
    ("i->", [[5]]),
    ("ij->", [[3, 4]]),
    ("ij->i", [[3, 4]]),
    ("ij->j", [[3, 4]]),
    ("ji", [[3, 4]]),
    ("ij->ji", [[3, 4]]),
    ("ii", [[4, 4]]),
    ("ii->i", [[4, 4]]),
    ("iii->i", [[3, 3, 3]]),
    ("iji->j", [[3, 4, 3]]),
    ("ijj->ij", [[2, 3, 3]]),
    ("...ii->...i", [[2, 3, 3]]),
    ("ii...->...i", [[3, 3, 2]]),
    ("i...i->...", [[3, 2, 3]]),
    ("...i->...", [[2, 3, 4]]),
    ("i...->...", [[4, 2, 3]]),
    ("ijk->kji", [[2, 3, 4]]),
    ("ijk->jik", [[2, 3, 4]]),
    ("i,i", [[5], [5]]),
    ("i,i->i", [[5], [5]]),
    ("i,j", [[3], [4]]),
    ("i,j->ji", [[3], [4]]),
    ("ij,j", [[3, 4], [4]]),
    ("ji,j", [[4, 3], [4]]),
    ("ij,jk", [[3, 4], [4, 5]]),
    ("ij,jk->ik", [[3, 4], [4, 5]]),
    ("ij,kj->ik", [[3, 4], [5, 4]]),
    ("ji,jk->ik", [[4, 3], [4, 5]]),
    ("ij,ij->", [[3, 4], [3, 4]]),
    ("ij,ij->ij", [[3, 4], [3, 4]]),
    ("ij,ji->", [[3, 4], [4, 3]]),
    ("bij,bjk->bik", [[2, 3, 4], [2, 4, 5]]),
    ("bij,jk->bik", [[2, 3, 4], [4, 5]]),
    ("...ij,...jk->...ik", [[2, 3, 4], [2, 4, 5]]),
    ("...ij,...jk->...ik", [[2, 1, 3, 4], [3, 4, 5]]),
    ("...ij,jk", [[2, 3, 4], [4, 5]]),
    ("i...,i...", [[3, 2], [3, 2]]),
    ("...,...", [[2, 3], [2, 3]]),
    ("...,...", [[2, 3], [3]]),
    (",", [[], []]),
    ("i,", [[3], []]),
    ("ij,i->j", [[3, 4], [3]]),
    ("ii,i->i", [[3, 3], [3]]),
    ("ij,jk,kl->il", [[2, 3], [3, 4], [4, 5]]),
    ("ab,bc,cd,de->ae", [[2, 3], [3, 4], [4, 3], [3, 2]]),
    ("ea,fb,abcd,gc,hd->efgh", [[2, 3], [2, 3], [3, 3, 3, 3], [2, 3], [2, 3]]),
    ("i,j,k->ijk", [[2], [3], [4]]),
    ("ijk,jkl->il", [[2, 3, 4], [3, 4, 2]]),
    ("abc,ab->c", [[2, 3, 4], [2, 3]]),
    ("bn,anm,bm->ba", [[2, 3], [4, 3, 5], [2, 5]]),
    ("Ij,jI->", [[3, 4], [4, 3]]),
]


def encode(a):
    a = np.asarray(a, dtype=np.float64)
    return {"shape": list(a.shape), "re": [float(v) for v in a.ravel()]}


def main():
    cases = []
    for eq, shapes in CASES:
        ops = [rng.uniform(-1, 1, s) for s in shapes]
        out = np.einsum(eq, *ops)
        f = lambda *xs, eq=eq: jnp.einsum(eq, *xs)  # noqa: E731
        jout, pullback = jax.vjp(f, *[jnp.asarray(o) for o in ops])
        np.testing.assert_allclose(np.asarray(jout), out, atol=1e-12)
        cot = rng.uniform(-1, 1, np.shape(out))
        grads = pullback(jnp.asarray(cot))
        cases.append({
            "equation": eq,
            "operands": [encode(o) for o in ops],
            "output": encode(out),
            "cotangent": encode(cot),
            "grads": [encode(g) for g in grads],
        })
    body = {"generator": "scripts/gen_einsum_fixtures.py", "numpy": np.__version__, "jax": jax.__version__,
            "cases": cases}
    with open(OUT, "w") as fh:
        json.dump(body, fh, separators=(",", ":"))
        fh.write("\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
