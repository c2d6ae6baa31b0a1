#!/usr/bin/env python3
"""Generate the JAX reference fixture checked by crates/nabla-linalg/tests/spectral.rs.

Run from anywhere (needs JAX and NumPy; written against jax 0.10):

    python3 scripts/gen_linalg_spectral_fixtures.py

It writes crates/nabla-linalg/tests/fixtures/spectral.json for the spectral ops (eigh, svd, svdvals,
matrix_exp, pinv, matrix_norm, eigvals), from a seeded NumPy generator. CI needs no Python.

Eigenvectors and singular vectors are defined up to sign (phase), so every case is compared through
gauge-invariant outputs: eigh -> [w, |V|^2], svd -> [s, |U|^2, |Vh|^2], the other ops -> their
output. A case records

    input   = the matrix batch A ({"shape", "re", "im"}; "im" only for complex cases)
    outputs = the gauge-invariant outputs at A
and, for derivative cases (complex ones: JVP only, loss = Re sum_i sum(W_i * output_i)),
    weights = one fixed weight W_i per output (complex for complex outputs);
              loss(A) = Re sum_i sum(W_i * output_i(A))
    loss    = loss(A)
    tangent = a fixed direction T;  jvp = d loss(A + t T)/dt at 0      (forward mode)
    grad    = d loss / dA                                             (reverse mode, cotangent W)
    jvp_out = the full JVP of output 0 along T (matrix_exp and pinv, whose outputs have no gauge)

All arrays are row-major and flat, written with Python's shortest round-trip repr.
"""

from __future__ import annotations

import json
import os

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

SEED = 20261123
rng = np.random.default_rng(SEED)


def uniform(shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape)


def complex_uniform(shape):
    return uniform(shape) + 1j * uniform(shape)


def array(x):
    x = np.asarray(x)
    out = {"shape": list(x.shape), "re": [float(v) for v in np.real(x).ravel()]}
    if np.iscomplexobj(x):
        out["im"] = [float(v) for v in np.imag(x).ravel()]
    return out


def eigh_outputs(a):
    w, v = jnp.linalg.eigh(a)
    return [w, jnp.abs(v) ** 2]


def svd_outputs(a):
    u, s, vh = jnp.linalg.svd(a, full_matrices=False)
    return [s, jnp.abs(u) ** 2, jnp.abs(vh) ** 2]


def norm(ord_):
    return lambda a: [jnp.linalg.matrix_norm(a, ord=ord_)]


OPS = {
    "eigh": eigh_outputs,
    "svd": svd_outputs,
    "svdvals": lambda a: [jnp.linalg.svd(a, compute_uv=False)],
    "matrix_exp": lambda a: [jax.scipy.linalg.expm(a)],
    "pinv": lambda a: [jnp.linalg.pinv(a)],
    # Power sums sum_i lambda_i^k, k = 1..3: order-free functions of the eigenvalues.
    "eigvals_powers": lambda a: [
        jnp.stack([jnp.sum(jnp.linalg.eigvals(a) ** k, axis=-1) for k in (1, 2, 3)], axis=-1)
    ],
    "norm_fro": norm("fro"),
    "norm_nuc": norm("nuc"),
    "norm_2": norm(2),
    "norm_-2": norm(-2),
    "norm_1": norm(1),
    "norm_-1": norm(-1),
    "norm_inf": norm(jnp.inf),
    "norm_-inf": norm(-jnp.inf),
}


def complex_jvp(record, f, a, outputs):
    """For complex input: real weights for real outputs and complex ones for complex outputs,
    loss = Re sum_i sum(W_i * output_i), and its JVP along a complex tangent."""
    weights = [
        jnp.asarray(complex_uniform(o.shape) if jnp.iscomplexobj(o) else uniform(o.shape))
        for o in outputs
    ]
    tangent = jnp.asarray(complex_uniform(a.shape))

    def loss(x):
        return jnp.real(sum(jnp.sum(w * o) for w, o in zip(weights, f(x))))

    value, jvp = jax.jvp(loss, (a,), (tangent,))
    record.update(
        weights=[array(w) for w in weights], loss=float(value), tangent=array(tangent), jvp=float(jvp)
    )


def case(op, a, derivatives=True, full_jvp=False):
    f = OPS[op]
    a = jnp.asarray(a)
    outputs = f(a)
    record = {"op": op, "input": array(a), "outputs": [array(o) for o in outputs]}
    if derivatives == "jvp":
        complex_jvp(record, f, a, outputs)
    elif derivatives:
        weights = [
            jnp.asarray(complex_uniform(o.shape) if jnp.iscomplexobj(o) else uniform(o.shape))
            for o in outputs
        ]
        tangent = jnp.asarray(uniform(a.shape))

        def loss(x):
            return jnp.real(sum(jnp.sum(w * o) for w, o in zip(weights, f(x))))

        value, jvp = jax.jvp(loss, (a,), (tangent,))
        record.update(
            weights=[array(w) for w in weights],
            loss=float(value),
            tangent=array(tangent),
            jvp=float(jvp),
            grad=array(jax.grad(loss)(a)),
        )
        if full_jvp:
            _, out_t = jax.jvp(lambda x: f(x)[0], (a,), (tangent,))
            record["jvp_out"] = array(out_t)
    return record


def hermitian(shape, complex_=False):
    x = complex_uniform(shape) if complex_ else uniform(shape)
    return (x + np.conj(np.swapaxes(x, -1, -2))) / 2


def sort_eigvals(w):
    w = np.asarray(w)
    flat = w.reshape(-1, w.shape[-1])
    return np.stack([np.array(sorted(row, key=lambda z: (round(z.real, 9), z.imag))) for row in flat]).reshape(w.shape)


def eigvals_case(a):
    a = np.asarray(a)
    w = np.linalg.eigvals(a) + 0j
    return {"op": "eigvals", "input": array(a), "outputs": [array(sort_eigvals(w))]}


def main():
    cases = []
    # Real float64: values and derivatives, batched.
    cases.append(case("eigh", hermitian((2, 4, 4))))
    cases.append(case("svd", uniform((2, 5, 3))))
    cases.append(case("svd", uniform((3, 5))))
    cases.append(case("svd", uniform((2, 3, 3))))
    cases.append(case("svdvals", uniform((2, 3, 4))))
    # Norms 0.4 (low Pade degree), ~2 and ~20 (scaling and squaring).
    exp_small = uniform((2, 3, 3)) * 0.1
    exp_large = uniform((4, 4)) * 6.0
    cases.append(case("matrix_exp", exp_small, full_jvp=True))
    cases.append(case("matrix_exp", uniform((2, 3, 3)), full_jvp=True))
    cases.append(case("matrix_exp", exp_large, full_jvp=True))
    cases.append(case("pinv", uniform((2, 4, 3)), full_jvp=True))
    cases.append(case("pinv", uniform((3, 5)), full_jvp=True))
    for ord_ in ["fro", "nuc", "2", "-2", "1", "-1", "inf", "-inf"]:
        cases.append(case("norm_" + ord_, uniform((2, 3, 4))))
    cases.append(eigvals_case(uniform((2, 4, 4))))
    # complex128 values, and JVPs of a real loss along a complex tangent.
    cases.append(case("eigh", hermitian((2, 3, 3), complex_=True), derivatives="jvp"))
    cases.append(case("svd", complex_uniform((2, 4, 3)), derivatives="jvp"))
    cases.append(case("svd", complex_uniform((2, 5)), derivatives="jvp"))
    cases.append(case("svdvals", complex_uniform((3, 2)), derivatives="jvp"))
    cases.append(case("matrix_exp", complex_uniform((2, 3, 3)), derivatives="jvp"))
    cases.append(case("matrix_exp", complex_uniform((3, 3)) * 4.0, derivatives=False))
    cases.append(case("pinv", complex_uniform((3, 2)), derivatives="jvp"))
    for ord_ in ["fro", "nuc", "2", "1", "-inf"]:
        cases.append(case("norm_" + ord_, complex_uniform((2, 2, 3)), derivatives=False))
    cases.append(eigvals_case(complex_uniform((2, 3, 3))))

    # Eigenvalue derivatives (real input, complex output), through order-free power sums.
    cases.append(case("eigvals_powers", uniform((2, 4, 4))))
    cases.append(case("eigvals_powers", complex_uniform((3, 3)), derivatives="jvp"))

    out = os.path.join(
        os.path.dirname(os.path.abspath(__file__)),
        "..",
        "crates",
        "nabla-linalg",
        "tests",
        "fixtures",
        "spectral.json",
    )
    with open(out, "w") as fh:
        json.dump({"jax_version": jax.__version__, "seed": SEED, "cases": cases}, fh)
        fh.write("\n")
    print(f"wrote {len(cases)} cases to {os.path.normpath(out)}")


if __name__ == "__main__":
    main()
