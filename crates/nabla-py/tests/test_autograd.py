"""PyTorch-style autograd: requires_grad, backward, .grad accumulation, no_grad, create_graph."""

import numpy as np
import pytest

import nabla_rs as nb


def test_backward_fills_grad_of_leaves():
    x = nb.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = nb.tensor([0.5, -1.0, 2.0], requires_grad=True)
    assert x.is_leaf and x.requires_grad and x.grad is None
    y = (x * w).sum() + (x**2).sum()
    assert not y.is_leaf
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.5, 3.0, 8.0])
    np.testing.assert_allclose(w.grad.numpy(), [1.0, 2.0, 3.0])


def test_grads_accumulate_and_reset():
    x = nb.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])
    x.grad = None
    assert x.grad is None
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


def test_requires_grad_in_place_and_detach():
    x = nb.tensor([2.0])
    assert not x.requires_grad
    x.requires_grad_()
    assert x.requires_grad
    (x.detach() * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0])
    with pytest.raises(RuntimeError, match="only floating-point and complex"):
        nb.tensor([1, 2], requires_grad=True)


def test_backward_with_a_seed_and_errors():
    x = nb.tensor([1.0, 2.0], requires_grad=True)
    (x * x).backward(nb.tensor([1.0, 10.0]))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 40.0])
    with pytest.raises(Exception, match="one element|scalar|seed"):
        (x * x).backward()


def test_no_grad_records_nothing():
    x = nb.tensor([1.0], requires_grad=True)
    with nb.no_grad():
        assert not nb.is_grad_enabled()
        y = x * 2
    assert nb.is_grad_enabled()
    assert not y.requires_grad

    @nb.no_grad()
    def double(v):
        return v * 2

    assert not double(x).requires_grad


def test_create_graph_gives_second_derivatives():
    x = nb.tensor([3.0], requires_grad=True)
    y = (x**3).sum()
    y.backward(create_graph=True)
    g = x.grad  # 3x^2 = 27, itself differentiable
    np.testing.assert_allclose(g.numpy(), [27.0])
    assert g.requires_grad
    x.grad = None
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [18.0])  # 6x


def test_complex_and_float64_gradients():
    z = nb.tensor(np.array([1 + 2j, 3 - 1j]), requires_grad=True)
    (z.abs() ** 2).sum().backward()
    # nabla follows JAX's convention for complex inputs: jax.grad(|z|^2) = 2 conj(z).
    np.testing.assert_allclose(z.grad.numpy(), [2 - 4j, 6 + 2j])
