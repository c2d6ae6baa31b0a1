"""``nb.autograd.grad`` and ``nb.autograd.backward`` as PyTorch's: values against analytic
derivatives, and against PyTorch on the same inputs when it is installed."""

import numpy as np
import pytest

import nabla_rs as nb


def test_grad_of_leaves_and_computed_tensors():
    x = nb.tensor([1.0, 2.0, 3.0], dtype=nb.float64, requires_grad=True)
    h = x * x
    y = (h.sin()).sum()
    gx, gh = nb.autograd.grad(y, [x, h])
    np.testing.assert_allclose(gh.numpy(), np.cos([1.0, 4.0, 9.0]), rtol=1e-14)
    np.testing.assert_allclose(gx.numpy(), np.cos([1.0, 4.0, 9.0]) * 2 * np.array([1.0, 2.0, 3.0]), rtol=1e-14)
    assert x.grad is None  # .grad is left alone


def test_grad_outputs_several_outputs_and_create_graph():
    x = nb.tensor([0.5, -1.0], dtype=nb.float64, requires_grad=True)
    (g,) = nb.autograd.grad(x**3, x, grad_outputs=nb.tensor([1.0, 2.0], dtype=nb.float64), create_graph=True)
    np.testing.assert_allclose(g.numpy(), 3 * np.array([0.25, 1.0]) * [1.0, 2.0])
    (h,) = nb.autograd.grad(g.sum(), x)  # the gradient differentiated again: 6x * seed
    np.testing.assert_allclose(h.numpy(), 6 * np.array([0.5, -1.0]) * [1.0, 2.0])
    (both,) = nb.autograd.grad([x.sum(), (x * x).sum()], [x])
    np.testing.assert_allclose(both.numpy(), 1 + 2 * np.array([0.5, -1.0]))


def test_unused_inputs_and_errors():
    x = nb.tensor([1.0], requires_grad=True)
    u = nb.tensor([2.0], requires_grad=True)
    y = (x * 3).sum()
    with pytest.raises(RuntimeError, match="not used"):
        nb.autograd.grad(y, [x, u])
    assert nb.autograd.grad(y, [x, u], allow_unused=True)[1] is None
    assert nb.autograd.grad(y, [x, u], materialize_grads=True)[1].tolist() == [0.0]
    with pytest.raises(RuntimeError, match="does not require grad"):
        nb.autograd.grad(y, nb.tensor([1.0]))
    with pytest.raises(RuntimeError, match="grad_outputs must be given"):
        nb.autograd.grad(nb.stack([x, x]) * 2, x)
    with pytest.raises(RuntimeError, match="no output requires grad"):
        nb.autograd.grad(nb.tensor(1.0), x)


def test_backward_accumulates_into_leaves():
    x = nb.tensor([1.0, 2.0], requires_grad=True)
    nb.autograd.backward([x.sum(), (x * x).sum()])
    assert x.grad.tolist() == [3.0, 5.0]
    nb.autograd.backward(x * 2, grad_tensors=nb.tensor([1.0, 10.0]))
    assert x.grad.tolist() == [5.0, 25.0]


def test_gradient_penalty_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    w0, x0 = rng.normal(size=(3, 4)), rng.normal(size=(5, 3))
    w, x = nb.tensor(w0, requires_grad=True), nb.tensor(x0, requires_grad=True)
    tw, tx = torch.tensor(w0, requires_grad=True), torch.tensor(x0, requires_grad=True)
    (g,) = nb.autograd.grad((x @ w).tanh().sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad((tx @ tw).tanh().sum(), tx, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-12)
    ((g * g).sum()).backward()
    ((tg * tg).sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-10)


def test_batched_grad_outputs_give_one_vjp_per_row():
    """``is_grads_batched=True``: the rows of the seed are separate vector-Jacobian products; with the
    identity as seeds that is the Jacobian, here of ``y = A x`` (which is ``A``) and of ``sin``."""
    a = np.array([[1.0, 2.0, 0.5], [-1.0, 0.0, 3.0]])
    x = nb.tensor([0.3, -0.7, 1.1], dtype=nb.float64, requires_grad=True)
    y = nb.tensor(a) @ x
    (jac,) = nb.autograd.grad(y, x, grad_outputs=nb.eye(2, dtype=nb.float64), is_grads_batched=True)
    np.testing.assert_allclose(jac.numpy(), a, rtol=1e-15)
    s = nb.sin(x)
    seeds = nb.tensor(np.array([[1.0, 0.0, 0.0], [0.5, 2.0, -1.0]]))
    (rows,) = nb.autograd.grad(s, x, grad_outputs=seeds, is_grads_batched=True)
    np.testing.assert_allclose(rows.numpy(), seeds.numpy() * np.cos([0.3, -0.7, 1.1]), rtol=1e-15)
    (empty,) = nb.autograd.grad(s, x, grad_outputs=nb.zeros((0, 3), dtype=nb.float64), is_grads_batched=True)
    assert tuple(empty.shape) == (0, 3)
    with pytest.raises(ValueError, match="leading batch axis"):
        nb.autograd.grad(s, x, is_grads_batched=True)
    torch = pytest.importorskip("torch")
    xt = torch.tensor([0.3, -0.7, 1.1], dtype=torch.float64, requires_grad=True)
    (want,) = torch.autograd.grad(torch.sin(xt), xt, torch.tensor(seeds.numpy()), is_grads_batched=True)
    np.testing.assert_allclose(rows.numpy(), want.numpy(), rtol=1e-15)
