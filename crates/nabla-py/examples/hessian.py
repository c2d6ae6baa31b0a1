"""The Hessian of a small network's loss with respect to its weights, three ways: ``hessian``
(forward over reverse), ``jacrev(jacrev)``, and Hessian-vector products.

    python crates/nabla-py/examples/hessian.py
"""

import numpy as np

import nabla_rs as nb

rng = np.random.default_rng(1)
x = nb.tensor(rng.normal(size=(32, 3)))
y = nb.tensor(rng.normal(size=(32,)))
w = nb.tensor(rng.normal(size=(3, 4)))  # hidden layer
v = nb.tensor(rng.normal(size=(4,)))    # output layer


def loss(w, v):
    return ((nb.tanh(x @ w) @ v - y) ** 2).mean()


h = nb.hessian(loss)(w, v)  # ∂²L/∂w², of shape (3, 4, 3, 4)
print("Hessian w.r.t. w:", tuple(h.shape))
h2 = nb.jacrev(nb.jacrev(loss))(w, v)
np.testing.assert_allclose(h.numpy(), h2.numpy(), rtol=1e-10, atol=1e-12)

# The Hessian-vector product never forms the Hessian.
direction = nb.tensor(rng.normal(size=(3, 4)))
hv = nb.hvp(lambda w: loss(w, v), (w,), (direction,))
np.testing.assert_allclose(hv.numpy(), np.einsum("ijkl,kl->ij", h.numpy(), direction.numpy()), rtol=1e-10, atol=1e-12)
eigenvalues = np.linalg.eigvalsh(h.numpy().reshape(12, 12))
print("Hessian eigenvalues from", eigenvalues.min().round(4), "to", eigenvalues.max().round(4))
