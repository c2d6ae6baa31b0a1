"""PyTorch's spellings of what nabla has (dim, clone, dtype conversions, isinf, isclose,
allclose), against NumPy's values (PyTorch's agree on these inputs)."""

import numpy as np
import pytest

import nabla_rs as nb
from finite_differences import central_differences

SPECIAL = np.array([1.0, -2.5, np.inf, -np.inf, np.nan, 0.0])


def test_dim_and_dtype_conversions():
    t = nb.tensor(np.arange(6.0).reshape(2, 3))
    assert t.dim() == 2 and nb.tensor(1.0).dim() == 0
    for method, dtype in [
        ("float", nb.float32),
        ("double", nb.float64),
        ("half", nb.float16),
        ("bfloat16", nb.bfloat16),
        ("long", nb.int64),
        ("int", nb.int32),
        ("bool", nb.bool_),
    ]:
        assert getattr(t, method)().dtype == dtype
    assert nb.tensor([1.7, -1.7]).long().tolist() == [1, -1]  # truncates, as PyTorch
    x = nb.tensor([1.0, 2.0], requires_grad=True)
    (x.double() * 3.0).sum().backward()
    assert x.grad.dtype == nb.float32 and x.grad.tolist() == [3.0, 3.0]


def test_clone_is_differentiable_and_independent():
    x = nb.tensor([1.0, 2.0], requires_grad=True)
    (x.clone() ** 2).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
    c = x.detach().clone()
    c[0] = 7.0
    assert c.tolist() == [7.0, 2.0] and x.tolist() == [1.0, 2.0]


def test_isinf_matches_numpy():
    np.testing.assert_array_equal(nb.isinf(nb.tensor(SPECIAL)).numpy(), np.isinf(SPECIAL))
    np.testing.assert_array_equal(nb.tensor(SPECIAL).isinf().numpy(), np.isinf(SPECIAL))
    assert not nb.tensor([1, 2]).isinf().any()


@pytest.mark.parametrize("equal_nan", [False, True])
@pytest.mark.parametrize("rtol, atol", [(1e-5, 1e-8), (0.0, 0.5), (0.1, 0.0)])
def test_isclose_and_allclose_match_numpy(rtol, atol, equal_nan):
    a = np.array([1.0, 1.0 + 1e-6, 2.0, np.inf, -np.inf, np.nan, 0.0, 1e-9, 10.0])
    b = np.array([1.0, 1.0, 2.3, np.inf, np.inf, np.nan, 1e-9, 0.0, 10.9])
    want = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    got = nb.isclose(nb.tensor(a), nb.tensor(b), rtol=rtol, atol=atol, equal_nan=equal_nan)
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(nb.tensor(a).isclose(b, rtol, atol, equal_nan).numpy(), want)
    for i in range(len(a)):
        assert nb.allclose(a[i:], b[i:], rtol, atol, equal_nan) == np.allclose(a[i:], b[i:], rtol, atol, equal_nan)
    with pytest.raises(ValueError, match="negative"):
        nb.isclose(a, b, rtol=-1.0)


@pytest.mark.parametrize(
    "name, call, reference",
    [
        ("tril", lambda t: nb.tril(t, -1), lambda a: np.tril(a, -1)),
        ("triu", lambda t: t.triu(1), lambda a: np.triu(a, 1)),
        ("diagonal", lambda t: t.diagonal(1, 1, 2), lambda a: np.diagonal(a, 1, 1, 2)),
        ("trace", lambda t: nb.trace(t), lambda a: np.trace(a, axis1=-2, axis2=-1)),
        ("diag_embed", lambda t: t[:, 0].diag_embed(1), lambda a: np.stack([np.diag(r, 1) for r in a[:, 0]])),
        ("index_select", lambda t: nb.index_select(t, 2, nb.tensor([3, 0, 3])), lambda a: np.take(a, [3, 0, 3], axis=2)),
    ],
)
def test_matrix_selections_match_numpy_with_gradients(name, call, reference):
    a = np.random.default_rng(0).normal(size=(2, 3, 4))
    out = call(nb.tensor(a))
    np.testing.assert_array_equal(np.asarray(out), reference(a))
    w = np.random.default_rng(1).normal(size=reference(a).shape)
    got = nb.grad(lambda x: (call(x) * nb.tensor(w)).sum())(nb.tensor(a))
    np.testing.assert_allclose(np.asarray(got), central_differences(lambda x: (reference(x) * w).sum(), a), atol=1e-8)
    np.testing.assert_array_equal(np.asarray(nb.jit(call)(nb.tensor(a))), reference(a))


def test_stop_gradient_and_full_like():
    x = nb.tensor(np.array([1.0, 2.0]))
    g = nb.grad(lambda x: (x * nb.stop_gradient(x)).sum())(x)
    np.testing.assert_array_equal(np.asarray(g), [1.0, 2.0])  # only the first factor is differentiated
    f = nb.full_like(nb.zeros((2, 3), dtype=nb.float64), 7)
    assert f.dtype == nb.float64 and np.all(np.asarray(f) == 7) and tuple(f.shape) == (2, 3)
    with pytest.raises(ValueError, match="tril|matri"):
        nb.tril(nb.zeros(3))
    with pytest.raises(IndexError):
        nb.index_select(nb.zeros((2, 3)), 1, nb.tensor([5]))


@pytest.mark.parametrize(
    "dtype", ["bool", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
)
def test_tensors_pickle_and_deepcopy_as_pytorch(dtype):
    import copy
    import pickle

    values = np.array([[0, 1, 2], [3, 4, 5]]) % (2 if dtype == "bool" else 7)
    x = nb.tensor(values).astype(getattr(nb, dtype))
    for y in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x)):
        assert y.dtype == x.dtype and tuple(y.shape) == tuple(x.shape)
        np.testing.assert_array_equal(np.asarray(y.astype(nb.float64)), np.asarray(x.astype(nb.float64)))
        assert not y.requires_grad


def test_pickled_leaf_keeps_requires_grad_grad_and_class():
    import copy
    import pickle

    w = nb.nn.Parameter(nb.tensor([1.0, -2.0], dtype=nb.float64))
    (w * w).sum().backward()
    for c in (pickle.loads(pickle.dumps(w)), copy.deepcopy(w)):
        assert type(c) is nb.nn.Parameter and c.requires_grad and c.is_leaf and c is not w
        np.testing.assert_array_equal(c.grad.numpy(), [2.0, -4.0])
    # A copy is independent: assigning into it leaves the original as it was.
    c = copy.deepcopy(nb.tensor([1.0, 2.0]))
    c[0] = 5.0
    shared = [w, w]
    a, b = copy.deepcopy(shared)
    assert a is b  # deepcopy's memo keeps shared tensors shared (tied weights stay tied)


def test_traced_tensors_refuse_pickling():
    import pickle

    def f(x):
        with pytest.raises(TypeError, match="traced"):
            pickle.dumps(x)
        return x * 2

    nb.jit(f)(nb.tensor([1.0]))


def test_exp2_matches_numpy_with_gradient():
    x = np.array([-3.0, 0.5, 10.0, 1023.0, -1074.0])
    np.testing.assert_array_equal(nb.exp2(nb.tensor(x)).numpy(), np.exp2(x))
    assert nb.exp2(nb.tensor([3])).dtype == nb.float32  # integers give the default float, as PyTorch
    g = nb.grad(lambda t: nb.exp2(t).sum())(nb.tensor(x[:3]))
    np.testing.assert_allclose(g.numpy(), np.exp2(x[:3]) * np.log(2.0), rtol=1e-15)


def test_bincount_unique_and_masked_fill_match_numpy():
    x = np.array([3, 1, 3, 2, 1, 7])
    w = np.array([0.5, 1.0, 2.0, 3.0, 4.0, 5.0])
    np.testing.assert_array_equal(nb.bincount(nb.tensor(x)).numpy(), np.bincount(x))
    np.testing.assert_array_equal(nb.bincount(nb.tensor(x), nb.tensor(w), minlength=10).numpy(), np.bincount(x, w, 10))
    assert nb.bincount(nb.tensor(np.zeros(0, np.int64)), minlength=3).tolist() == [0, 0, 0]
    for bad in (nb.tensor([1.0]), nb.tensor([[1]]), nb.tensor([-1, 2])):
        with pytest.raises(ValueError, match="bincount"):
            nb.bincount(bad)
    values, inverse, counts = nb.unique(nb.tensor(x), return_inverse=True, return_counts=True)
    want = np.unique(x, return_inverse=True, return_counts=True)
    for got, expected in zip((values, inverse, counts), want):
        np.testing.assert_array_equal(got.numpy(), expected)
    np.testing.assert_array_equal(nb.unique(nb.tensor(x)).numpy(), np.unique(x))
    t = nb.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=nb.float64)
    mask = nb.tensor([True, False])  # broadcast over rows
    np.testing.assert_array_equal(t.masked_fill(mask, -1.0).numpy(), np.where([True, False], -1.0, t.numpy()))
    g = nb.grad(lambda t: (t.masked_fill(mask, 0.0) ** 2).sum())(t)
    np.testing.assert_array_equal(g.numpy(), np.where([True, False], 0.0, 2 * t.numpy()))
    with pytest.raises(TypeError, match="bool"):
        t.masked_fill(nb.tensor([1, 0]), 0.0)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_along_a_dim_matches_torch(dim):
    torch = pytest.importorskip("torch")
    x = np.array([[1, 2, 1, 2], [3, 0, 3, 0], [1, 2, 1, 2], [0, 5, 0, 5]])
    ours = nb.unique(nb.tensor(x), dim=dim, return_inverse=True, return_counts=True)
    theirs = torch.unique(torch.tensor(x), dim=dim, return_inverse=True, return_counts=True)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    f = np.array([[[0.5, 1.0], [0.5, 1.0]], [[-1.0, 2.0], [0.5, 1.0]]])
    np.testing.assert_array_equal(nb.unique(nb.tensor(f), dim=2).numpy(), torch.unique(torch.tensor(f), dim=2).numpy())
    with pytest.raises(IndexError, match="out of range"):
        nb.unique(nb.tensor(x), dim=2)
