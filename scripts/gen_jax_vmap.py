"""JAX reference values for nabla's vmap compositions (crates/nabla-tensor/tests/vmap_compose.rs).

Writes crates/nabla-tensor/tests/fixtures/jax_vmap.json: the inputs and outputs (f64) of
  * nested:        vmap(vmap(f, (None, 0)), (0, None)) of f(a, b) = tanh(a @ b)
  * per_example:   vmap(grad(loss), (None, 0, 0)) of loss(w, x, y) = (tanh(x @ w) - y)^2
  * grad_of_vmap:  grad(w -> sum(vmap(x -> sin(x @ w))(X)))
  * jacrev:        vmap(vjp(f, x)) over the basis cotangents, f(x) = x * cumsum(sin(x)), with jacrev(f)
  * hessians:      vmap(hessian(g)) of g(x) = sum(exp(x) * x[0]), and hessian(x -> sum(vmap(g)(x)))
  * axes:          vmap(f, in_axes=(1, None), out_axes=1) of f(x, s) = softmax(x * s)

    python scripts/gen_jax_vmap.py
"""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "nabla-tensor", "tests", "fixtures",
                   "jax_vmap.json")
RNG = np.random.default_rng(20261125)


def rand(*shape):
    return RNG.standard_normal(shape)


def enc(x):
    x = np.asarray(x, dtype=np.float64)
    return {"shape": list(x.shape), "data": [float(v) for v in x.reshape(-1)]}


def main():
    cases = {}

    a, b = rand(4, 2, 3), rand(5, 3)
    f = lambda a, b: jnp.tanh(a @ b)
    nested = jax.vmap(jax.vmap(f, (None, 0)), (0, None))(a, b)
    cases["nested"] = {"inputs": [enc(a), enc(b)], "output": enc(nested)}

    w, x, y = rand(3), rand(6, 3), rand(6)
    loss = lambda w, x, y: (jnp.tanh(x @ w) - y) ** 2
    per_example = jax.vmap(jax.grad(loss), (None, 0, 0))(w, x, y)
    cases["per_example"] = {"inputs": [enc(w), enc(x), enc(y)], "output": enc(per_example)}

    w2, xs = rand(3, 2), rand(4, 3)
    g = jax.grad(lambda w: jnp.sum(jax.vmap(lambda x: jnp.sin(x @ w))(xs)))(w2)
    cases["grad_of_vmap"] = {"inputs": [enc(w2), enc(xs)], "output": enc(g)}

    x0 = rand(3)
    fj = lambda x: x * jnp.cumsum(jnp.sin(x))
    _, pullback = jax.vjp(fj, x0)
    jac = jax.vmap(lambda ct: pullback(ct)[0])(jnp.eye(3))
    np.testing.assert_allclose(jac, jax.jacrev(fj)(x0), rtol=1e-12)
    cases["jacrev"] = {"inputs": [enc(x0)], "output": enc(jac)}

    xh = rand(3, 2)
    gh = lambda x: jnp.sum(jnp.exp(x) * x[0])
    cases["vmap_hessian"] = {"inputs": [enc(xh)], "output": enc(jax.vmap(jax.hessian(gh))(xh))}
    hb = jax.hessian(lambda x: jnp.sum(jax.vmap(gh)(x)))(xh)
    cases["hessian_of_vmap"] = {"inputs": [enc(xh)], "output": enc(hb)}

    xa, s = rand(3, 5), rand(3)
    fa = lambda x, s: jax.nn.softmax(x * s)
    out = jax.vmap(fa, in_axes=(1, None), out_axes=1)(xa, s)
    cases["axes"] = {"inputs": [enc(xa), enc(s)], "output": enc(out)}

    doc = {"generator": "scripts/gen_jax_vmap.py", "jax": jax.__version__, "cases": cases}
    with open(OUT, "w") as fh:
        json.dump(doc, fh)
        fh.write("\n")


if __name__ == "__main__":
    main()
