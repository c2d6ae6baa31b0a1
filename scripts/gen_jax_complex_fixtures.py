#!/usr/bin/env python3
"""Generate the JAX complex-autodiff fixture checked by crates/nabla-tensor/tests/complex_autodiff.rs.

Run from anywhere (needs JAX and NumPy; written against jax 0.10.2):

    python3 scripts/gen_jax_complex_fixtures.py

It writes crates/nabla-tensor/tests/fixtures/jax_complex.json. Inputs come from a seeded NumPy generator
and JAX runs with `jax_enable_x64`, so the file is deterministic for one JAX version. CI needs no Python.

The convention checked is JAX's: `jvp` multiplies tangents by f'(z) for holomorphic ops, and `vjp` is
the linear transpose of `jvp` under the pairing Re sum(u * v) (no conjugation), so `grad` of a real loss
of z = x + iy is dL/dx - i dL/dy.

Format:

    {"generator": str, "jax": version, "numpy": version, "seed": int,
     "cases": [
       {"name": str,
        "inputs":    [array, ...],      differentiated (complex or float)
        "aux":       [array, ...],      int64 constants (indices)
        "tangents":  [array, ...],      one per input, the input's dtype
        "output":    array,             g(*inputs, *aux)
        "jvp":       array,             sum_i J_i tangent_i, the output's dtype
        "cotangent": array,             the output's dtype
        "vjp":       [array, ...]       cotangent^T J_i, one per input, the input's dtype
       }, ...],
     "grads": [
       {"name": str, "inputs": [array, ...], "value": float, "grads": [array, ...]}, ...]}

An array is {"dtype": "complex128" | "complex64" | "float64" | "float32" | "int64", "shape": [...],
"data": [...]}, row-major and flat; complex entries are [re, im] pairs. Floats use Python's shortest
round-trip repr (float32 values are widened to float64 exactly). No value is NaN or infinite.
"""

from __future__ import annotations

import json
import os
import warnings

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

warnings.simplefilter("ignore")  # complex -> real casts warn that they drop the imaginary part

SEED = 20261122
OUT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)),
    "..",
    "crates",
    "nabla-tensor",
    "tests",
    "fixtures",
    "jax_complex.json",
)
RNG = np.random.default_rng(SEED)
C128, C64, F64, F32 = np.complex128, np.complex64, np.float64, np.float32


def cnormal(*shape, dtype=C128, scale=1.0):
    z = (RNG.normal(size=shape) + 1j * RNG.normal(size=shape)) * scale
    return z.astype(dtype)


def right_half(*shape, dtype=C128):
    """Values away from the branch cut of log, sqrt and pow (the negative real axis) and from 0."""
    re = RNG.uniform(0.5, 2.0, size=shape)
    im = RNG.uniform(-1.5, 1.5, size=shape)
    return (re + 1j * im).astype(dtype)


def rnormal(*shape, dtype=F64):
    return RNG.normal(size=shape).astype(dtype)


def like(x):
    """A random tangent or cotangent of x's shape and dtype."""
    x = np.asarray(x)
    if np.iscomplexobj(x):
        return cnormal(*x.shape, dtype=x.dtype)
    return rnormal(*x.shape, dtype=x.dtype)


def encode(a):
    a = np.asarray(a)
    name = str(a.dtype)
    flat = a.reshape(-1)
    if np.iscomplexobj(a):
        data = [[float(v.real), float(v.imag)] for v in flat]
    elif a.dtype.kind == "f":
        data = [float(v) for v in flat]
    else:
        data = [int(v) for v in flat]
    for v in flat:
        assert np.isfinite(v), f"non-finite value in fixture: {v}"
    return {"dtype": name, "shape": list(a.shape), "data": data}


def case(name, f, inputs, aux=()):
    inputs = [np.asarray(x) for x in inputs]
    aux = [np.asarray(a) for a in aux]

    def g(*xs):
        return f(*xs, *aux)

    tangents = [like(x) for x in inputs]
    out, jv = jax.jvp(g, tuple(jnp.asarray(x) for x in inputs), tuple(jnp.asarray(t) for t in tangents))
    out = np.asarray(out)
    cot = like(out)
    _, pull = jax.vjp(g, *[jnp.asarray(x) for x in inputs])
    vjps = pull(jnp.asarray(cot))
    for x, v in zip(inputs, vjps):
        assert np.asarray(v).dtype == x.dtype, (name, v.dtype, x.dtype)
    return {
        "name": name,
        "inputs": [encode(x) for x in inputs],
        "aux": [encode(a) for a in aux],
        "tangents": [encode(t) for t in tangents],
        "output": encode(out),
        "jvp": encode(np.asarray(jv).astype(out.dtype)),
        "cotangent": encode(cot),
        "vjp": [encode(v) for v in vjps],
    }


def cases():
    z = cnormal
    out = [
        # Elementwise, holomorphic.
        case("add", jnp.add, [z(2, 3), z(3)]),
        case("sub", jnp.subtract, [z(2, 3), z(2, 3)]),
        case("mul", jnp.multiply, [z(2, 3), z(2, 1)]),
        case("div", jnp.divide, [z(2, 3), right_half(2, 3)]),
        case("neg", jnp.negative, [z(5)]),
        case("exp", jnp.exp, [z(2, 3)]),
        case("log", jnp.log, [right_half(2, 3)]),
        case("sin", jnp.sin, [z(2, 3)]),
        case("cos", jnp.cos, [z(2, 3)]),
        case("tan", jnp.tan, [z(2, 3, scale=0.5)]),
        case("sinh", jnp.sinh, [z(2, 3)]),
        case("cosh", jnp.cosh, [z(2, 3)]),
        case("tanh", jnp.tanh, [z(2, 3, scale=0.5)]),
        case("sqrt", jnp.sqrt, [right_half(2, 3)]),
        case("rsqrt", lax.rsqrt, [right_half(2, 3)]),
        case("recip", jnp.reciprocal, [right_half(2, 3)]),
        case("square", jnp.square, [z(2, 3)]),
        case("pow", jnp.power, [right_half(2, 3), z(2, 3, scale=0.5)]),
        case("pow_int", lambda a: a**3, [z(2, 3)]),
        # Non-holomorphic.
        case("conj", jnp.conj, [z(2, 3)]),
        case("real", jnp.real, [z(2, 3)]),
        case("imag", jnp.imag, [z(2, 3)]),
        case("abs", jnp.abs, [z(2, 3)]),
        case("angle", jnp.angle, [z(2, 3)]),
        case("angle_real", jnp.angle, [np.array([1.5, -2.0, 0.5, -0.25])]),
        case("complex", lambda a, b: a + 1j * b, [rnormal(2, 3), rnormal(3)]),
        case("polar", lambda r, t: r * jnp.exp(1j * t), [np.abs(rnormal(2, 3)) + 0.5, rnormal(2, 3)]),
        case("abs2_then_log", lambda a: jnp.log(jnp.abs(a) ** 2 + 1.0) * a, [z(2, 3)]),
        # Casts.
        case("cast_real_to_complex", lambda x: x.astype(C128), [rnormal(2, 3)]),
        case("cast_complex_to_real", lambda a: a.astype(F64), [z(2, 3)]),
        case("cast_c128_to_c64", lambda a: a.astype(C64), [z(2, 3)]),
        # Reductions.
        case("sum", lambda a: jnp.sum(a, axis=1), [z(2, 3)]),
        case("sum_all", jnp.sum, [z(2, 3)]),
        case("prod", lambda a: jnp.prod(a, axis=0), [z(3, 2)]),
        case("mean", lambda a: jnp.mean(a, axis=0), [z(3, 2)]),
        case("cumsum", lambda a: jnp.cumsum(a, axis=1), [z(2, 4)]),
        # Contractions.
        case("matmul", jnp.matmul, [z(2, 3), z(3, 4)]),
        case("batched_matmul", jnp.matmul, [z(2, 2, 3), z(2, 3, 2)]),
        case("matmul_transposed", lambda a, b: a.T @ b, [z(3, 2), z(3, 2)]),
        # Movement.
        case("reshape", lambda a: a.reshape(3, 2), [z(2, 3)]),
        case("permute", lambda a: jnp.transpose(a, (2, 0, 1)), [z(2, 3, 2)]),
        case("broadcast", lambda a: jnp.broadcast_to(a, (2, 3)), [z(3)]),
        case("slice", lambda a: a[:, 1::2], [z(2, 5)]),
        case("flip", lambda a: jnp.flip(a, axis=1), [z(2, 3)]),
        case("pad", lambda a: jnp.pad(a, ((1, 0), (0, 2))), [z(2, 3)]),
        case("concat", lambda a, b: jnp.concatenate([a, b], axis=1), [z(2, 3), z(2, 1)]),
        case("where", lambda a, b, c: jnp.where(c, a, b), [z(2, 3), z(2, 3)],
             aux=[np.array([[1, 0, 1], [0, 0, 1]], dtype=np.int64)]),
        # Indexing.
        case("gather", lambda a, i: jnp.take_along_axis(a, i, axis=1), [z(2, 3)],
             aux=[np.array([[2, 0, 0, 1], [1, 1, 2, 0]], dtype=np.int64)]),
        case("index_select", lambda a, i: jnp.take(a, i, axis=0), [z(3, 2)],
             aux=[np.array([2, 0, 2], dtype=np.int64)]),
        case("scatter_add",
             lambda d, s, i: d.at[i, jnp.arange(2)[None, :]].add(s),
             [z(3, 2), z(4, 2)], aux=[np.array([[0, 2], [1, 2], [0, 0], [2, 1]], dtype=np.int64)]),
        # complex64.
        case("mul_c64", jnp.multiply, [cnormal(2, 3, dtype=C64), cnormal(2, 3, dtype=C64)]),
        case("exp_c64", jnp.exp, [cnormal(2, 3, dtype=C64)]),
        case("abs_c64", jnp.abs, [cnormal(2, 3, dtype=C64)]),
        case("matmul_c64", jnp.matmul, [cnormal(2, 3, dtype=C64), cnormal(3, 2, dtype=C64)]),
        case("cast_f32_to_c64", lambda x: x.astype(C64), [rnormal(2, 3, dtype=F32)]),
    ]
    return out


def grad_case(name, f, inputs):
    inputs = [np.asarray(x) for x in inputs]
    value, grads = jax.value_and_grad(f, argnums=tuple(range(len(inputs))))(*[jnp.asarray(x) for x in inputs])
    return {
        "name": name,
        "inputs": [encode(x) for x in inputs],
        "value": float(value),
        "grads": [encode(g) for g in grads],
    }


def grads():
    return [
        grad_case("abs2", lambda a: jnp.sum(jnp.abs(a) ** 2), [cnormal(2, 3)]),
        grad_case("abs2_scalar", lambda a: jnp.abs(a) ** 2, [np.array(3 + 4j)]),
        grad_case("re_z_conj_w", lambda a, b: jnp.real(jnp.sum(a * jnp.conj(b))), [cnormal(2, 3), cnormal(2, 3)]),
        grad_case(
            "matmul_loss",
            lambda a, b, c: jnp.sum(jnp.abs(a @ b - c) ** 2),
            [cnormal(3, 2), cnormal(2, 4), cnormal(3, 4)],
        ),
        grad_case(
            "angle_abs_loss",
            lambda a: jnp.sum(jnp.angle(a) * jnp.abs(a) + jnp.imag(jnp.exp(a))),
            [cnormal(2, 3)],
        ),
    ]


def main():
    fixture = {
        "generator": "scripts/gen_jax_complex_fixtures.py",
        "jax": jax.__version__,
        "numpy": np.__version__,
        "seed": SEED,
        "cases": cases(),
        "grads": grads(),
    }
    with open(OUT, "w") as f:
        json.dump(fixture, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT} ({os.path.getsize(OUT)} bytes, {len(fixture['cases'])} cases)")


if __name__ == "__main__":
    main()
