#!/usr/bin/env python3
"""Generate the reference fixture checked by crates/nabla-fft/tests/fft/fixtures.rs.

Run from anywhere (needs NumPy and JAX; written against numpy 2 and jax 0.10):

    python3 scripts/gen_fft_fixtures.py

It writes crates/nabla-fft/tests/fixtures/fft.json. Values come from numpy.fft; derivatives from JAX
in float64/complex128 (jax.vjp and jax.jvp of the same jnp.fft call). CI needs no Python.

Each case records
    fn, n / s, axis / axes, norm  = the call (NumPy's argument names; absent means the default)
    input     = x                              ({"shape", "re", "im"}; "im" only for complex arrays)
    output    = numpy.fft.<fn>(x, ...)
    cotangent = a fixed array of the output's shape and dtype
    vjp       = jax.vjp(f, x)[1](cotangent)    (the linear transpose, no conjugation: JAX's convention)
    tangent   = a fixed array of the input's shape and dtype
    jvp       = jax.jvp(f, (x,), (tangent,))[1]
All arrays are row-major and flat, written with Python's shortest round-trip repr.
"""

from __future__ import annotations

import json
import os

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

OUT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "crates", "nabla-fft", "tests", "fixtures", "fft.json"
)

rng = np.random.default_rng(20261126)


def array(shape, complex_):
    a = rng.uniform(-1, 1, shape)
    if complex_:
        a = a + 1j * rng.uniform(-1, 1, shape)
    return a


def encode(a):
    a = np.asarray(a)
    out = {"shape": list(a.shape), "re": [float(v) for v in np.real(a).ravel()]}
    if np.iscomplexobj(a):
        out["im"] = [float(v) for v in np.imag(a).ravel()]
    return out


# (fn, input shape, complex input, keyword arguments)
CASES = [
    ("fft", [8], True, {}),
    ("fft", [2, 5], False, {"n": 7, "axis": 0}),
    ("fft", [3, 6], True, {"n": 4, "norm": "forward"}),
    ("fft", [1], True, {}),
    ("fft", [13], True, {"norm": "ortho"}),
    ("ifft", [3, 6], True, {"norm": "ortho"}),
    ("ifft", [4, 5], True, {"axis": 0, "n": 6}),
    ("fftn", [3, 4, 5], True, {"s": [4, 3], "axes": [0, 2], "norm": "forward"}),
    ("fftn", [2, 3, 4], False, {}),
    ("ifftn", [3, 4, 2], True, {"axes": [1, 0]}),
    ("fft2", [2, 3, 4], True, {"s": [5, 4]}),
    ("ifft2", [2, 3, 4], True, {"norm": "ortho"}),
    ("rfft", [2, 6], False, {}),
    ("rfft", [7], False, {"norm": "ortho"}),
    ("rfft", [5, 3], False, {"axis": 0, "n": 8, "norm": "forward"}),
    ("rfft", [1], False, {}),
    ("rfftn", [4, 6, 5], False, {"axes": [0, 2]}),
    ("rfftn", [6, 3], False, {"axes": [-1, 0]}),
    ("rfft2", [2, 4, 6], False, {"norm": "ortho"}),
    ("irfft", [2, 4], True, {"n": 6}),
    ("irfft", [5], True, {}),
    ("irfft", [3], True, {"n": 5, "norm": "ortho"}),
    ("irfft", [4, 3], True, {"axis": 0, "norm": "forward"}),
    ("irfft", [1], True, {"n": 1}),
    ("irfft", [2], True, {"n": 2}),
    ("irfftn", [3, 4], True, {"s": [3, 6], "norm": "forward"}),
    ("irfftn", [4, 3, 5], True, {"axes": [0, 2]}),
    ("irfft2", [2, 3, 4], True, {"s": [3, 7]}),
]


def call(module, fn, x, kwargs):
    return getattr(module.fft, fn)(x, **kwargs)


def main():
    cases = []
    for fn, shape, complex_, kwargs in CASES:
        x = array(shape, complex_)
        out = call(np, fn, x, kwargs)
        f = lambda v, fn=fn, kwargs=kwargs: call(jnp, fn, v, kwargs)  # noqa: E731
        jout, pullback = jax.vjp(f, jnp.asarray(x))
        np.testing.assert_allclose(np.asarray(jout), out, atol=1e-12)
        cot = array(out.shape, np.iscomplexobj(out))
        (vjp,) = pullback(jnp.asarray(cot, dtype=jout.dtype))
        tangent = array(shape, complex_)
        _, jvp = jax.jvp(f, (jnp.asarray(x),), (jnp.asarray(tangent),))
        case = {"fn": fn, "input": encode(x), "output": encode(out), "cotangent": encode(cot),
                "vjp": encode(vjp), "tangent": encode(tangent), "jvp": encode(jvp)}
        case.update(kwargs)
        cases.append(case)
    body = {"generator": "scripts/gen_fft_fixtures.py", "numpy": np.__version__, "jax": jax.__version__,
            "cases": cases}
    with open(OUT, "w") as fh:
        json.dump(body, fh, separators=(",", ":"))
        fh.write("\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
