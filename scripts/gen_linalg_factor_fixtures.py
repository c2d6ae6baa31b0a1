#!/usr/bin/env python3
"""Generate the JAX reference fixture checked by crates/nabla-linalg/tests/factor.rs.

Run from anywhere (needs JAX and NumPy; written against jax 0.10):

    python3 scripts/gen_linalg_factor_fixtures.py

It writes crates/nabla-linalg/tests/fixtures/factor.json: for each case of the factorisation ops
(cholesky, triangular_solve, det, slogdet, lu, qr, lstsq, and solve, inv, logabsdet), the function's
outputs on fixed random batched inputs, a JVP along fixed random tangents and a VJP of fixed random
cotangents, in float64, complex128 and (a few cases) complex64. CI needs no Python.

Complex derivatives follow JAX: the JVP is f'(z)·dz (the real-linear tangent map for non-holomorphic
functions), the VJP of a cotangent u is what `jax.vjp` returns, the linear transpose of the JVP under
the pairing Re Σ u·v (no conjugation). Tangents and cotangents are complex for complex arrays and real
for real ones (e.g. the log |det| of a complex matrix).

Each case records

    name        the function, implemented by the Rust test under the same name
    dtype       "complex64" for single-precision cases (arrays are written as float64 numbers whose
                float32 rounding is the value; absent: float64 or complex128, from the arrays)
    inputs      the input arrays
    values      the function's outputs
    tangents    one array per input; jvp = the outputs' tangents along them (absent: values only)
    cotangents  one array per output; vjp = the inputs' cotangents (absent: values only)

Arrays are {"shape": [...], "re": [...], "im": [...]} (row-major, flat; "im" only for complex),
written with Python's shortest round-trip repr (float32's for complex64 cases); inputs, tangents
and cotangents are rounded to three decimals to keep the file small. QR outputs are normalised so that R has a real
positive diagonal (Q diag(d), diag(conj d) R with d = R_jj / |R_jj|), which makes them unique.
"""

from __future__ import annotations

import json
import os

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import jax.scipy.linalg as jsl  # noqa: E402

SEED = 20261123
rng = np.random.default_rng(SEED)


def uniform(shape, complex_=False):
    """Random values in [-1, 1) (both parts when complex), rounded to three decimals."""
    x = rng.uniform(-1.0, 1.0, size=shape)
    if complex_:
        x = x + 1j * rng.uniform(-1.0, 1.0, size=shape)
    return rounded(x)


def rounded(x):
    """x rounded to three decimals (short in the fixture, exact in float64 and float32 alike)."""
    return np.round(x, 3)


def well_conditioned(shape, complex_=False):
    """Random square matrices near 2*I, far from singular."""
    return rounded(0.5 * uniform(shape, complex_) + 2.0 * np.eye(shape[-1]))


def spd(shape, complex_=False):
    """Random Hermitian positive definite matrices."""
    x = uniform(shape, complex_)
    return rounded(x @ np.conj(np.swapaxes(x, -1, -2)) + shape[-1] * np.eye(shape[-1]))


def array(x):
    x = np.asarray(x)

    def numbers(parts):
        if parts.dtype == np.float32:  # float32's shortest repr: exact once rounded to float32
            return [float(str(v)) for v in parts.ravel()]
        return [float(v) for v in parts.ravel()]

    out = {"shape": list(x.shape), "re": numbers(np.real(x))}
    if np.iscomplexobj(x):
        out["im"] = numbers(np.imag(x))
    return out


def tri(a, lower, unit):
    t = jnp.tril(a, -1 if unit else 0) if lower else jnp.triu(a, 1 if unit else 0)
    return t + jnp.eye(a.shape[-1], dtype=a.dtype) if unit else t


def h(x):
    return jnp.conj(jnp.swapaxes(x, -1, -2))


def triangular(lower, left, unit, adjoint):
    """op(A) X = B (left) or X op(A) = B, by a general solve on the masked triangle."""

    def f(a, b):
        t = tri(a, lower, unit)
        if adjoint:
            t = h(t)
        if left:
            return (jnp.linalg.solve(t, b),)
        return (jnp.swapaxes(jnp.linalg.solve(jnp.swapaxes(t, -1, -2), jnp.swapaxes(b, -1, -2)), -1, -2),)

    return f


def normalised_qr(mode):
    def f(a):
        q, r = jnp.linalg.qr(a, mode=mode)
        k = min(r.shape[-2], r.shape[-1])
        diag = jnp.diagonal(r[..., :k, :k], axis1=-2, axis2=-1)
        d = jax.lax.stop_gradient(diag / jnp.abs(diag))
        if q.shape[-1] > k:  # complete Q of a tall matrix: leave the extra columns alone
            ones = jnp.ones(q.shape[:-2] + (q.shape[-1] - k,), dtype=d.dtype)
            d = jnp.concatenate([d, ones], axis=-1)
        return (q * d[..., None, :], jnp.conj(d)[..., :, None] * r)

    return f


def slogdet(a):
    s, l = jnp.linalg.slogdet(a)
    return (s, l)


def batched(f, a, *rest):
    """f on one matrix (jax.scipy.linalg.lu, jnp.linalg.lstsq), mapped over the batch dims."""
    for _ in range(a.ndim - 2):
        f = jax.vmap(f)
    return f(a, *rest)


def lu(a):
    return tuple(batched(jsl.lu, a))


def lstsq(a, b):
    return (batched(lambda x, y: jnp.linalg.lstsq(x, y)[0], a, b),)


CASES = []

# (lower, left, unit_diagonal, adjoint) variants of the triangular solve.
TRIANGULAR = [
    (True, True, False, False),
    (False, True, True, False),
    (True, False, False, False),
    (False, False, False, True),
    (True, True, True, True),
]


def triangular_name(lower, left, unit, adjoint):
    return "triangular_solve_{}_{}_{}_{}".format(
        "lower" if lower else "upper",
        "left" if left else "right",
        "unit" if unit else "nonunit",
        "adjoint" if adjoint else "plain",
    )


def case(name, f, inputs, derivatives=True, dtype=None):
    """Records f on inputs (cast to dtype when given), with a JVP and a VJP unless not derivatives.

    f is the whole differentiated function: any normalisation of its outputs happens inside it, so
    the JVP and VJP are those of the normalised outputs."""
    inputs = [jnp.asarray(x, dtype=dtype) for x in inputs]
    outs = f(*inputs)
    entry = {"name": name}
    if dtype is not None:
        entry["dtype"] = jnp.dtype(dtype).name
    entry["inputs"] = [array(x) for x in inputs]
    entry["values"] = [array(y) for y in outs]
    if derivatives:
        # Complex tangents and cotangents for complex arrays, real ones for real arrays.
        vs = [jnp.asarray(uniform(x.shape, jnp.iscomplexobj(x)), dtype=x.dtype) for x in inputs]
        us = [jnp.asarray(uniform(y.shape, jnp.iscomplexobj(y)), dtype=y.dtype) for y in outs]
        _, jvp = jax.jvp(f, tuple(inputs), tuple(vs))
        _, pullback = jax.vjp(f, *inputs)
        entry["tangents"] = [array(v) for v in vs]
        entry["jvp"] = [array(t) for t in jvp]
        entry["cotangents"] = [array(u) for u in us]
        entry["vjp"] = [array(g) for g in pullback(tuple(us))]
    CASES.append(entry)


def main():
    # Real float64: values, a JVP and a VJP.
    case("cholesky", lambda a: (jnp.linalg.cholesky(a),), [spd((2, 3, 3))])
    for lower, left, unit, adjoint in TRIANGULAR:
        b_shape = (2, 3, 2) if left else (2, 2, 3)
        case(triangular_name(lower, left, unit, adjoint), triangular(lower, left, unit, adjoint),
             [well_conditioned((2, 3, 3)), uniform(b_shape)])
    case("det", lambda a: (jnp.linalg.det(a),), [well_conditioned((3, 3, 3)) * np.array([1, -1, 1])[:, None, None]])
    sign_mix = np.array([1, -1, 1])[:, None, None]
    case("slogdet", slogdet, [well_conditioned((3, 3, 3)) * sign_mix])
    # Rows in an order that makes partial pivoting permute them.
    case("lu", lu, [np.flip(well_conditioned((2, 4, 4)), axis=-2)])
    case("lu", lu, [uniform((2, 4, 3))], derivatives=False)
    case("lu", lu, [uniform((3, 5))], derivatives=False)
    case("qr", normalised_qr("reduced"), [uniform((2, 4, 3))])
    case("qr", normalised_qr("reduced"), [uniform((2, 3, 3))])
    case("qr", normalised_qr("reduced"), [uniform((3, 5))], derivatives=False)
    case("qr_full", normalised_qr("complete"), [uniform((2, 3, 3))])
    case("lstsq", lstsq, [uniform((2, 5, 3)), uniform((2, 5, 2))])

    # complex128: values, a JVP and a VJP (batched, plus a few single matrices).
    c = True
    case("cholesky", lambda a: (jnp.linalg.cholesky(a),), [spd((2, 3, 3), c)])
    for lower, left, unit, adjoint in TRIANGULAR:
        b_shape = (2, 3, 2) if left else (2, 2, 3)
        case(triangular_name(lower, left, unit, adjoint), triangular(lower, left, unit, adjoint),
             [well_conditioned((2, 3, 3), c), uniform(b_shape, c)])
    case("solve", lambda a, b: (jnp.linalg.solve(a, b),), [well_conditioned((2, 3, 3), c), uniform((2, 3, 2), c)])
    case("inv", lambda a: (jnp.linalg.inv(a),), [well_conditioned((2, 3, 3), c)])
    case("det", lambda a: (jnp.linalg.det(a),), [well_conditioned((2, 3, 3), c) * np.array([1, 1j])[:, None, None]])
    case("slogdet", slogdet, [well_conditioned((2, 3, 3), c) * np.array([-1, 1j])[:, None, None]])
    case("logabsdet", lambda a: (jnp.linalg.slogdet(a)[1],), [well_conditioned((2, 3, 3), c)])
    case("lu", lu, [np.flip(well_conditioned((2, 3, 3), c), axis=-2)])
    case("lu", lu, [uniform((2, 4, 3), c)], derivatives=False)
    case("qr", normalised_qr("reduced"), [uniform((2, 4, 3), c)])
    case("qr", normalised_qr("reduced"), [uniform((3, 3), c)])
    case("qr", normalised_qr("reduced"), [uniform((2, 3), c)], derivatives=False)
    case("qr_full", normalised_qr("complete"), [uniform((3, 3), c)])
    case("lstsq", lstsq, [uniform((2, 4, 3), c), uniform((2, 4, 2), c)])

    # complex64: a few cases (checked to ~1e-4).
    c64 = jnp.complex64
    case("cholesky", lambda a: (jnp.linalg.cholesky(a),), [spd((2, 3, 3), c)], dtype=c64)
    case(triangular_name(*TRIANGULAR[0]), triangular(*TRIANGULAR[0]),
         [well_conditioned((2, 3, 3), c), uniform((2, 3, 2), c)], dtype=c64)
    case("solve", lambda a, b: (jnp.linalg.solve(a, b),), [well_conditioned((3, 3), c), uniform((3, 2), c)], dtype=c64)
    case("slogdet", slogdet, [well_conditioned((2, 3, 3), c)], dtype=c64)
    case("qr", normalised_qr("reduced"), [uniform((2, 4, 3), c)], dtype=c64)

    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "nabla-linalg", "tests", "fixtures", "factor.json")
    with open(out, "w") as fh:
        json.dump({"jax_version": jax.__version__, "seed": SEED, "cases": CASES}, fh, separators=(",", ":"))
        fh.write("\n")
    print(f"wrote {len(CASES)} cases to {os.path.normpath(out)}")


if __name__ == "__main__":
    main()
