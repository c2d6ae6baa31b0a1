"""JAX reference values for nabla's custom derivative rules (crates/nabla-tensor/tests/custom_rules.rs).

Writes crates/nabla-tensor/tests/fixtures/jax_custom_rules.json: for each classic use of
jax.custom_vjp (a stable softplus, a gradient-clipping identity, a straight-through estimator, an
implicit-function rule for a fixed-point solver), the inputs and the gradient JAX computes, in f64.

    python scripts/gen_jax_custom_rules.py
"""

import json
import os

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)

OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "nabla-tensor", "tests", "fixtures",
                   "jax_custom_rules.json")


@jax.custom_vjp
def softplus(x):
    return jnp.log1p(jnp.exp(x))


softplus.defvjp(lambda x: (softplus(x), x), lambda x, g: (g * jax.nn.sigmoid(x),))

LO, HI = -0.5, 0.5


@jax.custom_vjp
def clip_gradient(x):
    return x


clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (jnp.clip(g, LO, HI),))


@jax.custom_vjp
def ste_round(x):
    return jnp.round(x)


ste_round.defvjp(lambda x: (jnp.round(x), None), lambda _, g: (g,))


def t_map(a, z):
    """The contraction whose fixed point z = T(a, z) the solver finds."""
    return jnp.tanh(a * z + 0.5)


@jax.custom_vjp
def fixed_point(a):
    z = jnp.zeros_like(a)
    for _ in range(200):
        z = t_map(a, z)
    return z


def fixed_point_fwd(a):
    z = fixed_point(a)
    return z, (a, z)


def fixed_point_bwd(res, g):
    # The adjoint w = g + (dT/dz)^T w, solved by the same iteration; the gradient is (dT/da)^T w.
    a, z = res
    _, vjp_a = jax.vjp(lambda a: t_map(a, z), a)
    _, vjp_z = jax.vjp(lambda z: t_map(a, z), z)
    w = g
    for _ in range(200):
        w = g + vjp_z(w)[0]
    return vjp_a(w)


fixed_point.defvjp(fixed_point_fwd, fixed_point_bwd)


def main():
    x = jnp.array([-3.0, 0.0, 2.5, 50.0, 1000.0])
    c = jnp.array([-1.5, -0.25, 0.3, 0.7, 2.0])
    w = jnp.array([1.0, 2.0, 3.0, 4.0, 5.0])
    a = jnp.array([0.1, 0.4, -0.3, 0.8])
    cases = {
        "softplus": {"x": x.tolist(),
                     "grad": jax.grad(lambda x: softplus(x).sum())(x).tolist()},
        "clip_gradient": {"x": c.tolist(), "lo": LO, "hi": HI,
                          "grad": jax.grad(lambda x: (clip_gradient(x ** 3) * 2.0).sum())(c).tolist()},
        "straight_through": {"x": c.tolist(), "w": w.tolist(),
                             "value": ste_round(c).tolist(),
                             "grad": jax.grad(lambda x: (ste_round(x) * w).sum())(c).tolist()},
        "fixed_point": {"a": a.tolist(), "value": fixed_point(a).tolist(),
                        "grad": jax.grad(lambda a: (fixed_point(a) ** 2).sum())(a).tolist()},
    }
    doc = {"generator": "scripts/gen_jax_custom_rules.py", "jax": jax.__version__, "cases": cases}
    with open(OUT, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()
