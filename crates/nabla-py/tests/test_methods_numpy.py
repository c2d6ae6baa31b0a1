"""PyTorch's method spellings, in-place writes, hooks and composed functions checked without
PyTorch (CI installs none): values against NumPy, gradients against central finite differences in
float64 and against the same computation written without the in-place method.
tests/test_torch_methods.py compares the same behaviour with PyTorch where it is installed."""

import numpy as np
import pytest

import nabla_rs as nb
from finite_differences import central_differences

A = np.array([[1.0, 5.0, -2.0, 5.0], [3.0, 0.5, 7.0, -1.0], [2.0, 2.0, 2.0, 9.0]])


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_dim_keywords_match_numpy(dim):
    x = nb.tensor(A)
    for keepdim in (False, True):
        np.testing.assert_allclose(x.sum(dim=dim, keepdim=keepdim).numpy(), A.sum(dim, keepdims=keepdim))
        np.testing.assert_allclose(x.mean(dim=dim, keepdim=keepdim).numpy(), A.mean(dim, keepdims=keepdim))
        assert x.argmax(dim=dim, keepdim=keepdim).tolist() == A.argmax(dim, keepdims=keepdim).tolist()
    np.testing.assert_allclose(x.cumsum(dim=dim).numpy(), A.cumsum(dim))
    e = np.exp(A - A.max(dim, keepdims=True))
    np.testing.assert_allclose(x.softmax(dim=dim).numpy(), e / e.sum(dim, keepdims=True), rtol=1e-12)


def test_max_min_pairs_sort_and_moments_match_numpy():
    x = nb.tensor(A, requires_grad=True)
    values, indices = x.max(1)
    np.testing.assert_allclose(values.numpy(), A.max(1))
    assert indices.tolist() == A.argmax(1).tolist()
    values.sum().backward()
    expected = np.zeros_like(A)
    expected[np.arange(3), A.argmax(1)] = 1.0  # the tie in row 0 sends the gradient to index 1 only
    np.testing.assert_allclose(x.grad.numpy(), expected)
    assert x.min(dim=0, keepdim=True).indices.tolist() == [A.argmin(0).tolist()]
    s = nb.tensor(A).sort(dim=1, descending=True)
    np.testing.assert_allclose(s.values.numpy(), -np.sort(-A, 1))
    assert s.indices.tolist() == np.argsort(-A, 1, kind="stable").tolist()
    np.testing.assert_allclose(nb.tensor(A).var(1, True).numpy(), A.var(1, ddof=1))
    np.testing.assert_allclose(nb.tensor(A).std(dim=0, correction=2).numpy(), A.std(0, ddof=2))


# name, arguments, the NumPy value of `y.name(*arguments)` for y = x * 1.0
INPLACE = [
    ("add_", (2.0,), {}, lambda y: y + 2.0),
    ("add_", (np.array([1.0, 2.0, 3.0, 4.0]),), {"alpha": 0.5}, lambda y: y + 0.5 * np.array([1.0, 2.0, 3.0, 4.0])),
    ("sub_", (1.5,), {}, lambda y: y - 1.5),
    ("mul_", (np.array([2.0, -1.0, 0.5, 3.0]),), {}, lambda y: y * np.array([2.0, -1.0, 0.5, 3.0])),
    ("div_", (4.0,), {}, lambda y: y / 4.0),
    ("pow_", (2.0,), {}, lambda y: y**2),
    ("clamp_", (), {"min": 0.5, "max": 2.0}, lambda y: np.clip(y, 0.5, 2.0)),
    ("exp_", (), {}, np.exp),
    ("tanh_", (), {}, np.tanh),
    ("neg_", (), {}, np.negative),
    ("addcmul_", (np.full(4, 2.0), np.arange(4.0)), {"value": 0.5}, lambda y: y + 0.5 * 2.0 * np.arange(4.0)),
    ("addcdiv_", (np.full(4, 2.0), np.arange(1.0, 5.0)), {"value": -1}, lambda y: y - 2.0 / np.arange(1.0, 5.0)),
    ("lerp_", (np.zeros(4), 0.25), {}, lambda y: 0.75 * y),
    ("fill_", (3.5,), {}, lambda y: np.full_like(y, 3.5)),
    ("zero_", (), {}, np.zeros_like),
    ("masked_fill_", (np.array([True, False, True, False]), -1.0), {}, lambda y: np.where([True, False, True, False], -1.0, y)),
]


def _arguments(args):
    return [nb.tensor(a) if isinstance(a, np.ndarray) else a for a in args]


@pytest.mark.parametrize("name, args, kwargs, reference", INPLACE, ids=[f"{c[0]}-{i}" for i, c in enumerate(INPLACE)])
def test_in_place_values_and_gradients(name, args, kwargs, reference):
    base = np.array([1.3, -0.7, 2.2, 0.35])
    weights = np.array([1.0, 2.0, 3.0, 4.0])

    def loss(x):
        y = x * 1.0
        out = getattr(y, name)(*_arguments(args), **kwargs)
        assert out is y
        return (y * nb.tensor(weights)).sum()

    y = nb.tensor(base) * 1.0
    getattr(y, name)(*_arguments(args), **kwargs)
    np.testing.assert_allclose(y.numpy(), reference(base), rtol=1e-12)
    x = nb.tensor(base, requires_grad=True)
    loss(x).backward()
    expected = central_differences(lambda v: float(loss(nb.tensor(v))), base)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6, atol=1e-8)


def test_writes_are_seen_by_every_reference_and_follow_the_dtype_rules():
    a = nb.tensor([1.0, 2.0])
    b = a
    a += 1
    a *= 2
    assert b.tolist() == [4.0, 6.0]
    with pytest.raises(RuntimeError, match="cannot be written into a int64"):
        i = nb.tensor([1, 2])
        i += 0.5
    w = nb.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        w.add_(1.0)
    (w * w).sum().backward()
    with nb.no_grad():
        w.sub_(0.5 * w.grad)
    assert w.is_leaf and w.grad.tolist() == [2.0, 4.0] and w.tolist() == [0.0, 0.0]


def test_a_saved_value_written_in_place_keeps_its_gradient():
    x0 = np.array([0.5, -1.0, 2.0])

    def f(v):
        y = v.exp()
        z = y * y
        y.add_(1.0)
        return (z.sum() + y.sum())

    x = nb.tensor(x0, requires_grad=True)
    f(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(2 * x0) + np.exp(x0), rtol=1e-12)


def test_hooks_and_retained_gradients():
    x = nb.tensor([0.5, 1.5], requires_grad=True)
    seen = []
    x.register_hook(lambda g: g * 2)
    x.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))
    y = x * x
    y.retain_grad()
    y.register_hook(lambda g: g + 1)
    y.sin().sum().backward()
    c = np.cos(np.array([0.25, 2.25]))
    np.testing.assert_allclose(y.grad.numpy(), c + 1, rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 2 * (c + 1) * 2 * np.array([0.5, 1.5]), rtol=1e-6)
    assert len(seen) == 1


def test_module_backward_hook_scales_the_input_gradient():
    lin = nb.nn.Linear(3, 2).double()
    x = nb.tensor(np.ones((2, 3)), requires_grad=True)
    lin.register_full_backward_hook(lambda m, gi, go: (gi[0] * 10,))
    lin(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 10 * np.ones((2, 2)) @ lin.weight.numpy(), rtol=1e-12)


def test_composed_functions_match_numpy():
    a = np.array([[1.0, np.nan, np.inf], [-np.inf, 2.0, -3.0]])
    np.testing.assert_array_equal(nb.nan_to_num(nb.tensor(a), nan=1.5, posinf=9.0, neginf=-9.0).numpy(),
                                  np.nan_to_num(a, nan=1.5, posinf=9.0, neginf=-9.0))
    v, m = np.array([1.0, 2.0, 3.0]), np.arange(12.0).reshape(3, 4)
    for k in (-1, 0, 2):
        np.testing.assert_array_equal(nb.diag(nb.tensor(v), k).numpy(), np.diag(v, k))
        np.testing.assert_array_equal(nb.tensor(m).diag(k).numpy(), np.diag(m, k))
    assert nb.dot(nb.tensor(v), nb.tensor(v)).item() == 14.0
    np.testing.assert_array_equal(nb.outer(nb.tensor(v), nb.tensor(v[:2])).numpy(), np.outer(v, v[:2]))
    p, q = np.arange(6.0).reshape(2, 3), np.arange(4.0).reshape(2, 2) - 1
    np.testing.assert_array_equal(nb.kron(nb.tensor(p), nb.tensor(q)).numpy(), np.kron(p, q))
    x = np.array([[1, 2, 1, 2], [3, 0, 3, 0], [1, 2, 1, 2]])
    for dim in (0, 1):
        values, inverse, counts = nb.unique(nb.tensor(x), dim=dim, return_inverse=True, return_counts=True)
        want = np.unique(x, axis=dim, return_inverse=True, return_counts=True)
        for ours, theirs in zip((values, inverse, counts), want):
            np.testing.assert_array_equal(ours.numpy(), np.asarray(theirs).reshape(-1) if ours.ndim == 1 else theirs)


def test_scatter_matches_numpy():
    base = np.arange(12.0).reshape(3, 4)
    index = np.array([[0, 2, 1], [2, 0, 0]])
    src = np.array([[10.0, 20.0, 30.0], [50.0, 60.0, 70.0]])
    expected = base.copy()
    np.add.at(expected, (np.arange(2)[:, None], index), src)
    np.testing.assert_array_equal(nb.scatter_add(nb.tensor(base), 1, nb.tensor(index), nb.tensor(src)).numpy(), expected)
    unique_index = np.array([[2, 0, 1], [1, 2, 0]])
    expected = base.copy()
    for i, j in np.ndindex(unique_index.shape):
        expected[i, unique_index[i, j]] = src[i, j]
    np.testing.assert_array_equal(nb.tensor(base).scatter(1, nb.tensor(unique_index), nb.tensor(src)).numpy(), expected)
    s = nb.tensor(src, requires_grad=True)
    nb.tensor(base).scatter(1, nb.tensor(unique_index), s).sum().backward()
    assert s.grad.tolist() == np.ones_like(src).tolist()
