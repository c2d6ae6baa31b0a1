#!/usr/bin/env python3
"""Generate the PyTorch reference fixture for eig's derivatives, checked by
crates/nabla-linalg/tests/linalg/spectral_cases.rs (JAX has no eigenvector derivatives).

Run from anywhere (needs PyTorch; written against torch 2.15):

    python3 scripts/gen_torch_eig_fixture.py

It writes crates/nabla-linalg/tests/fixtures/torch_eig.json. The loss is a function of eig's results
that depends neither on the eigenvectors' phases nor on the order of the eigenvalues (LAPACK and faer
order them differently): L(A) = Σ_k Re(λ_k)³ + Σ_k Im(λ_k)² + Σ_ik |V_ik|⁴. Each case holds A and
dL/dA; for complex A, PyTorch's gradient is ∂L/∂x + i ∂L/∂y, the conjugate of JAX's (and nabla's)
convention, and is conjugated here. Arrays are {"shape", "re", "im"?}, row-major and flat.
"""

from __future__ import annotations

import json
import os

import numpy as np
import torch

OUT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "crates", "nabla-linalg", "tests", "fixtures", "torch_eig.json"
)
rng = np.random.default_rng(20261126)


def encode(a):
    a = np.asarray(a)
    out = {"shape": list(a.shape), "re": [float(v) for v in np.real(a).ravel()]}
    if np.iscomplexobj(a):
        out["im"] = [float(v) for v in np.imag(a).ravel()]
    return out


def loss(a):
    lam, v = torch.linalg.eig(a)
    return (lam.real ** 3).sum() + (lam.imag ** 2).sum() + (v.abs() ** 4).sum()


def main():
    cases = []
    for shape, complex_ in [((3, 3), False), ((2, 4, 4), False), ((3, 3), True)]:
        a = rng.uniform(-1, 1, shape)
        if complex_:
            a = a + 1j * rng.uniform(-1, 1, shape)
        t = torch.tensor(a, requires_grad=True)
        value = loss(t)
        (grad,) = torch.autograd.grad(value, t)
        grad = grad.numpy()
        if complex_:
            grad = np.conj(grad)
        cases.append({"input": encode(a), "loss": float(value), "grad": encode(grad)})
    with open(OUT, "w") as fh:
        json.dump({"generator": "scripts/gen_torch_eig_fixture.py", "torch": torch.__version__, "cases": cases},
                  fh, separators=(",", ":"))
        fh.write("\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
