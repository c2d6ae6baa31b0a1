#!/usr/bin/env python3
"""Generate the reference fixture checked by crates/nabla-special/tests/special.rs.

Run from anywhere (needs SciPy, NumPy, JAX and mpmath; written against scipy 1.16, jax 0.10 and
mpmath 1.3):

    python3 scripts/gen_special_fixtures.py

It writes crates/nabla-special/tests/fixtures/special.json. For each function, float64 points across
its range (negative arguments, both sides of the series/asymptotic switch at |x| = 20, the tails of
erfinv, large arguments): values from scipy.special (jax.nn.log_sigmoid for log_sigmoid), and first
and second derivatives from JAX (jax.grad of the elementwise function, nested), recorded only where
JAX's derivative is finite. Two-argument functions (xlogy, betaln) record the derivative with
respect to each argument. Two places where JAX's derivative is not the function's are replaced by
exact values (commented below): I0 and I1 at 0, log_ndtr's derivatives (mpmath), and betaln's
partials.
"""

from __future__ import annotations

import json
import os

import numpy as np
import scipy
import scipy.special as sc

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import jax.scipy.special as jsc  # noqa: E402

OUT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "crates", "nabla-special", "tests", "fixtures", "special.json"
)

BESSEL = [-30.0, -20.5, -19.9, -5.0, -1.0, -0.1, 0.0, 0.1, 1.0, 5.0, 19.9, 20.5, 30.0, 100.0, 700.0]
UNARY = [
    ("lgamma", sc.gammaln, jsc.gammaln, [-3.5, -2.5, -0.5, 0.1, 0.5, 1.0, 1.5, 2.0, 3.7, 10.0, 100.0, 1e5]),
    ("digamma", sc.digamma, jsc.digamma, [-3.5, -0.5, 0.1, 0.5, 1.0, 2.0, 5.5, 9.9, 10.1, 30.0, 1e3, 1e6]),
    ("polygamma1", lambda x: sc.polygamma(1, x), lambda x: jsc.polygamma(1, x), [-2.5, -0.5, 0.2, 1.0, 3.3, 12.0, 50.0]),
    ("polygamma2", lambda x: sc.polygamma(2, x), lambda x: jsc.polygamma(2, x), [-2.5, -0.5, 0.2, 1.0, 3.3, 12.0, 50.0]),
    ("polygamma3", lambda x: sc.polygamma(3, x), lambda x: jsc.polygamma(3, x), [-1.5, 0.2, 1.0, 3.3, 12.0, 50.0]),
    ("erfinv", sc.erfinv, jsc.erfinv,
     [-0.999999, -0.9, -0.5, -1e-10, 0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 0.999999, 1 - 1e-12]),
    ("i0", sc.i0, jsc.i0, BESSEL),
    ("i0e", sc.i0e, jsc.i0e, BESSEL),
    ("i1", sc.i1, jsc.i1, BESSEL),
    ("i1e", sc.i1e, jsc.i1e, BESSEL),
    ("logit", sc.logit, jsc.logit, [0.01, 0.3, 0.5, 0.9, 0.999]),
    ("log_sigmoid", lambda x: np.asarray(jax.nn.log_sigmoid(jnp.asarray(x))), jax.nn.log_sigmoid,
     [-50.0, -1.0, 0.0, 2.0, 40.0]),
    ("erfc", sc.erfc, jsc.erfc, [-3.0, -0.5, 0.0, 0.3, 1.0, 2.5, 5.0, 10.0, 26.0]),
    ("ndtr", sc.ndtr, jsc.ndtr, [-37.0, -20.0, -8.0, -1.5, 0.0, 0.7, 3.0, 8.0]),
    ("ndtri", sc.ndtri, jsc.ndtri,
     [1e-300, 1e-100, 1e-20, 1e-5, 0.01, 0.02425, 0.2, 0.5, 0.7, 0.97575, 0.999, 1 - 1e-12]),
    ("log_ndtr", sc.log_ndtr, jsc.log_ndtr, [-1e3, -40.0, -20.5, -19.5, -5.0, -1.0, 0.0, 2.0, 9.0, 40.0]),
]
BINARY = [
    ("xlogy", sc.xlogy, jsc.xlogy, [0.0, 0.0, 1.0, 2.5, -1.0], [0.0, 2.0, 1e-3, 3.0, 0.5]),
    ("betaln", sc.betaln, jsc.betaln, [0.5, 2.0, 10.0, 3.5], [1.5, 3.0, 0.2, 7.0]),
]


def _log_ndtr_derivatives(xs):
    import mpmath

    mpmath.mp.dps = 60
    r = [mpmath.npdf(mpmath.mpf(x)) / mpmath.ncdf(mpmath.mpf(x)) for x in xs]
    d2 = [-ri * (mpmath.mpf(x) + ri) for x, ri in zip(xs, r)]
    return np.array([float(v) for v in r]), np.array([float(v) for v in d2])


def finite_or_none(v):
    v = float(v)
    return v if np.isfinite(v) else None


def main():
    cases = []
    for name, ref, jf, xs in UNARY:
        xs = np.asarray(xs, dtype=np.float64)
        d1 = np.array(jax.vmap(jax.grad(jf))(xs))
        d2 = np.array(jax.vmap(jax.grad(jax.grad(jf)))(xs))
        if name == "i0":
            # JAX differentiates |x| as 1 at 0, which leaks into its I0'(0) = 1; the exact values
            # of the even function are I0'(0) = 0 and I0''(0) = 1/2.
            d1[xs == 0.0], d2[xs == 0.0] = 0.0, 0.5
        if name == "i1":
            # The same artifact gives JAX's I1''(0) = 1; the odd function has I1''(0) = 0.
            d2[xs == 0.0] = 0.0
        if name == "log_ndtr":
            # JAX differentiates its own series, about 1e-11 relative far in the lower tail; the
            # exact derivatives are r = phi/Phi and r' = -r (x + r), from mpmath at 60 digits.
            d1, d2 = _log_ndtr_derivatives(xs)
        cases.append({
            "name": name,
            "x": [float(v) for v in xs],
            "value": [float(v) for v in ref(xs)],
            "d1": [finite_or_none(v) for v in d1],
            "d2": [finite_or_none(v) for v in d2],
        })
    for name, ref, jf, xs, ys in BINARY:
        xs, ys = np.asarray(xs), np.asarray(ys)
        if name == "betaln":
            # JAX differentiates its own betaln approximation (about 1e-6 relative for large a);
            # the exact partials are digamma differences, from SciPy.
            gx = sc.digamma(xs) - sc.digamma(xs + ys)
            gy = sc.digamma(ys) - sc.digamma(xs + ys)
        else:
            gx = jax.vmap(jax.grad(jf, argnums=0))(xs, ys)
            gy = jax.vmap(jax.grad(jf, argnums=1))(xs, ys)
        cases.append({
            "name": name,
            "x": [float(v) for v in xs],
            "y": [float(v) for v in ys],
            "value": [float(v) for v in ref(xs, ys)],
            "dx": [finite_or_none(v) for v in gx],
            "dy": [finite_or_none(v) for v in gy],
        })
    with open(OUT, "w") as fh:
        json.dump({"generator": "scripts/gen_special_fixtures.py", "scipy": scipy.__version__,
                   "jax": jax.__version__, "cases": cases}, fh, separators=(",", ":"), allow_nan=True)
        fh.write("\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
