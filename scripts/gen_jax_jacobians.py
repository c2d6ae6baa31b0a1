"""JAX reference values for nabla's multi-input Jacobians, Hessians and linearize
(crates/nabla-tensor/tests/jacobians.rs).

Writes crates/nabla-tensor/tests/fixtures/jax_jacobians.json (f64):
  * jac:       jax.jacfwd(f, argnums=(0, 1)) of f(a, b) = (sin(a) * sum(b), a @ b) with a [2, 3], b [3]
               (jacrev gives the same blocks)
  * hessian:   jax.hessian(g, argnums=(0, 1)) of g(a, b) = sum(tanh(a @ b)) * b[0]
  * linearize: jax.linearize(h, x) of h(x) = exp(sin(x)) * x, applied to two tangents

    python scripts/gen_jax_jacobians.py
"""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "nabla-tensor", "tests", "fixtures",
                   "jax_jacobians.json")
RNG = np.random.default_rng(1125)


def enc(x):
    x = np.asarray(x, dtype=np.float64)
    return {"shape": list(x.shape), "data": [float(v) for v in x.reshape(-1)]}


def blocks(nested):
    return [[enc(b) for b in row] for row in nested]


def main():
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal(3)
    f = lambda a, b: (jnp.sin(a) * jnp.sum(b), a @ b)
    jf = jax.jacfwd(f, argnums=(0, 1))(a, b)
    jr = jax.jacrev(f, argnums=(0, 1))(a, b)
    for rf, rr in zip(jf, jr):
        for x, y in zip(rf, rr):
            np.testing.assert_allclose(x, y, rtol=1e-12)
    g = lambda a, b: jnp.sum(jnp.tanh(a @ b)) * b[0]
    h = jax.hessian(g, argnums=(0, 1))(a, b)

    x = RNG.standard_normal(3)
    t1, t2 = RNG.standard_normal(3), RNG.standard_normal(3)
    fun = lambda x: jnp.exp(jnp.sin(x)) * x
    y, lin = jax.linearize(fun, x)
    doc = {
        "generator": "scripts/gen_jax_jacobians.py",
        "jax": jax.__version__,
        "a": enc(a),
        "b": enc(b),
        "jac": blocks(jf),
        "hessian": blocks(h),
        "x": enc(x),
        "tangents": [enc(t1), enc(t2)],
        "linearize_value": enc(y),
        "linearize_out": [enc(lin(t1)), enc(lin(t2))],
    }
    with open(OUT, "w") as fh:
        json.dump(doc, fh)
        fh.write("\n")


if __name__ == "__main__":
    main()
