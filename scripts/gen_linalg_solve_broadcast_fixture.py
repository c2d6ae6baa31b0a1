#!/usr/bin/env python3
"""Generate the NumPy fixture checked by crates/nabla-linalg/tests/linalg/solve_rule.rs.

Run from anywhere (needs NumPy 2; written against numpy 2.4):

    python3 scripts/gen_linalg_solve_broadcast_fixture.py

It writes crates/nabla-linalg/tests/fixtures/solve_broadcast.json: right-hand sides of solve and lstsq
under NumPy 2's rule (b is a vector only when it is 1-D, otherwise a stack of matrices [..., m, k]
whose batch dimensions broadcast against A's), including the shapes where the rule of NumPy 1 (b a
stack of vectors whenever b.ndim == A.ndim - 1) gives another answer. Each case holds float64 inputs
from a seeded generator and either NumPy's result or "error": true where NumPy raises. solve's
values are numpy.linalg.solve's; numpy.linalg.lstsq takes no stacks, so lstsq's are pinv(A) @ b
(numpy.linalg.pinv stacks, and matmul applies the same vector rule). Arrays are {"shape", "re"},
row-major and flat.
"""

from __future__ import annotations

import json
import os

import numpy as np

OUT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "crates", "nabla-linalg", "tests", "fixtures",
    "solve_broadcast.json",
)
rng = np.random.default_rng(20260512)


def rand(*shape):
    return rng.uniform(-1, 1, shape)


def conditioned(*shape):
    n = shape[-1]
    return rand(*shape) + n * np.eye(n)


def lstsq(a, b):
    return np.linalg.pinv(a) @ b


# (name, op, A, b): the first two are the shapes of the issue.
CASES = [
    ("solve_matrix_b_against_a_batch", "solve", conditioned(2, 3, 3), rand(3, 2)),
    ("solve_square_b_one_rank_below_a", "solve", conditioned(3, 3, 3), rand(3, 3)),
    ("solve_vector", "solve", conditioned(3, 3), rand(3)),
    ("solve_vector_against_a_batch", "solve", conditioned(2, 3, 3), rand(3)),
    ("solve_batches_broadcast", "solve", conditioned(2, 1, 3, 3), rand(4, 3, 2)),
    ("solve_batched_b_single_a", "solve", conditioned(3, 3), rand(2, 3, 1)),
    ("solve_matrix", "solve", conditioned(4, 4), rand(4, 4)),
    ("solve_stack_of_vectors_is_not_a_vector", "solve", conditioned(2, 3, 3), rand(2, 3)),
    ("lstsq_matrix_b_against_a_batch", "lstsq", rand(2, 5, 3), rand(5, 2)),
    ("lstsq_vector_against_a_batch", "lstsq", rand(2, 5, 3), rand(5)),
    ("lstsq_square_b_one_rank_below_a", "lstsq", rand(4, 4, 3), rand(4, 4)),
    ("lstsq_stack_of_vectors_is_not_a_vector", "lstsq", rand(3, 4, 3), rand(3, 4)),
]

FUNCTIONS = {"solve": np.linalg.solve, "lstsq": lstsq}


def encode(a):
    a = np.asarray(a, dtype=np.float64)
    return {"shape": list(a.shape), "re": [float(v) for v in a.ravel()]}


def main():
    cases = []
    for name, op, a, b in CASES:
        case = {"name": name, "op": op, "a": encode(a), "b": encode(b)}
        try:
            case["x"] = encode(FUNCTIONS[op](a, b))
        except ValueError:
            case["error"] = True
        cases.append(case)
    with open(OUT, "w") as fh:
        json.dump({"generator": "scripts/gen_linalg_solve_broadcast_fixture.py", "numpy": np.__version__,
                   "cases": cases}, fh, separators=(",", ":"))
        fh.write("\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
