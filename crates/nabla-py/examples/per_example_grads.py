"""Per-example gradients of a small network with ``vmap(grad(loss))``, checked against a loop.

    python crates/nabla-py/examples/per_example_grads.py
"""

import numpy as np

import nabla_rs as nb

rng = np.random.default_rng(0)
params = {"w1": nb.tensor(rng.normal(size=(4, 8)) * 0.5), "b1": nb.zeros(8, dtype=nb.float64),
          "w2": nb.tensor(rng.normal(size=(8, 3)) * 0.5)}
xs = nb.tensor(rng.normal(size=(16, 4)))
ys = nb.tensor(rng.integers(0, 3, 16))


def loss(params, x, y):
    hidden = nb.tanh(x @ params["w1"] + params["b1"])
    logits = hidden @ params["w2"]
    return nb.nn.functional.cross_entropy(logits[None], y[None])


# One gradient per example, computed in one batched pass.
per_example = nb.vmap(nb.grad(loss), in_axes=(None, 0, 0))(params, xs, ys)
print({name: tuple(g.shape) for name, g in per_example.items()})  # w1: (16, 4, 8), ...

for i in range(len(xs)):
    single = nb.grad(loss)(params, xs[i], ys[i])
    for name in params:
        np.testing.assert_allclose(per_example[name][i].numpy(), single[name].numpy(), rtol=1e-10, atol=1e-12)
print("per-example gradients match a loop over examples")
