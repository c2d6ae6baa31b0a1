"""Tensors against NumPy: creation, dtypes, printing, operators, promotion, reductions, shapes."""

import numpy as np
import pytest

import nabla_rs as nb


def test_creation_and_dtypes(close):
    x = nb.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.shape == (2, 2) and x.ndim == 2 and x.size == 4
    assert x.dtype == nb.float32  # Python floats become float32, as torch.tensor
    assert nb.tensor([1, 2]).dtype == nb.int64
    assert nb.tensor([True]).dtype == nb.bool_
    assert nb.tensor([1 + 2j]).dtype == nb.complex64
    assert nb.tensor(np.arange(3.0)).dtype == nb.float64  # arrays keep their dtype
    assert nb.tensor([1, 2], dtype="float64").dtype == nb.float64
    assert nb.tensor([1, 2], dtype=np.float32).dtype == nb.float32
    assert nb.zeros(2, 3).shape == (2, 3)
    assert nb.ones((2, 3), dtype=nb.int32).dtype == nb.int32
    close(nb.full((2,), 7.5), [7.5, 7.5])
    close(nb.arange(5), np.arange(5))
    close(nb.arange(1.0, 2.0, 0.25), np.arange(1.0, 2.0, 0.25))
    close(nb.linspace(0, 1, 5), np.linspace(0, 1, 5))
    close(nb.eye(3), np.eye(3))
    assert nb.randn(3, 4).shape == (3, 4)
    assert 0 <= float(nb.rand(100).min()) and float(nb.rand(100).max()) < 1


def test_every_dtype_round_trips_through_numpy():
    for name in ["float16", "float32", "float64", "complex64", "complex128", "int32", "int64", "uint8", "bool"]:
        a = (np.arange(6) % 3).astype(name).reshape(2, 3)
        t = nb.tensor(a)
        assert t.dtype == getattr(nb, name if name != "bool" else "bool_")
        np.testing.assert_array_equal(t.numpy(), a)
    with pytest.raises(TypeError, match="bfloat16"):
        nb.zeros(2, dtype=nb.bfloat16).numpy()
    assert nb.zeros(2, dtype=nb.bfloat16).astype(nb.float32).tolist() == [0.0, 0.0]


def test_printing_like_numpy():
    assert repr(nb.tensor([1.0, 2.5])) == "tensor([1.0000, 2.5000])"
    assert "requires_grad=True" in repr(nb.tensor([1.0], requires_grad=True))
    assert repr(nb.float32) == "nabla_rs.float32"


BINARY = [
    (lambda a, b: a + b, np.add),
    (lambda a, b: a - b, np.subtract),
    (lambda a, b: a * b, np.multiply),
    (lambda a, b: a / b, np.divide),
    (lambda a, b: a ** b, np.power),
    (lambda a, b: a // b, np.floor_divide),
    (lambda a, b: a % b, np.mod),
    (lambda a, b: a @ b.T, lambda a, b: a @ b.T),
    (lambda a, b: nb.maximum(a, b), np.maximum),
    (lambda a, b: nb.atan2(a, b), np.arctan2),
]


@pytest.mark.parametrize("op,ref", BINARY)
def test_binary_ops_match_numpy(op, ref, rng, close):
    a = rng.uniform(0.5, 2.0, (3, 4))
    b = rng.uniform(0.5, 2.0, (3, 4))
    close(op(nb.tensor(a), nb.tensor(b)), ref(a, b), rtol=1e-12)


def test_broadcasting_reflected_ops_and_weak_numbers(close):
    a = np.arange(6.0).reshape(2, 3)
    t = nb.tensor(a)
    close(t + np.array([1.0, 2.0, 3.0]), a + [1, 2, 3])
    close(2 - t, 2 - a)
    close(1 / (t + 1), 1 / (a + 1))
    close(2 ** t, 2**a)
    assert (nb.tensor([1, 2], dtype=nb.float32) * 2.5).dtype == nb.float32  # numbers are weak
    assert (nb.tensor([1, 2]) * 2.5).dtype == nb.float32  # int tensor * float: default float
    assert (nb.tensor([1, 2], dtype=nb.int32) + nb.tensor([1.0], dtype=nb.float64)).dtype == nb.float64
    close(-t, -a)
    close(abs(-t), a)
    assert (~nb.tensor([True, False])).tolist() == [False, True]


def test_comparisons_and_where(close):
    a = np.array([1.0, 5.0, 3.0])
    t = nb.tensor(a)
    assert (t > 2).tolist() == [False, True, True]
    assert (t == 3.0).tolist() == [False, False, True]
    assert (t != t).tolist() == [False, False, False]
    close(nb.where(t > 2, t, 0.0), np.where(a > 2, a, 0.0))
    assert nb.tensor([1.0]) != "a string"  # not comparable: Python's default


UNARY = ["exp", "log", "sqrt", "sin", "cos", "tanh", "abs", "floor", "ceil", "expm1", "log1p"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_catalogue_functions_and_methods(name, rng, close):
    a = rng.uniform(0.1, 3.0, (4, 5))
    ref = getattr(np, name)(a)
    close(getattr(nb, name)(nb.tensor(a)), ref, rtol=1e-12)
    close(getattr(nb.tensor(a), name)(), ref, rtol=1e-12)


def test_reductions_match_numpy(rng, close):
    a = rng.normal(size=(3, 4, 5))
    t = nb.tensor(a)
    for axis in [None, 0, 1, -1, (0, 2)]:
        close(t.sum(axis), a.sum(axis), rtol=1e-12)
        close(t.mean(axis), a.mean(axis), rtol=1e-12)
        close(t.max(axis=axis), a.max(axis))
        close(t.min(axis=axis, keepdims=True), a.min(axis=axis, keepdims=True))
        close(t.var(axis), a.var(axis), rtol=1e-10)
        close(t.std(axis, ddof=1), a.std(axis, ddof=1), rtol=1e-10)
    assert t.argmax().item() == a.argmax()
    close(t.argmin(1), a.argmin(1))
    close(t.cumsum(2), a.cumsum(2), rtol=1e-12)
    close(t.prod(0), a.prod(0), rtol=1e-12)
    assert nb.sum(t).item() == pytest.approx(a.sum())


def test_shape_methods_match_numpy(close):
    a = np.arange(24.0).reshape(2, 3, 4)
    t = nb.tensor(a)
    close(t.reshape(4, 6), a.reshape(4, 6))
    close(t.reshape((-1, 2)), a.reshape(-1, 2))
    close(t.transpose(), a.transpose())
    close(t.transpose(1, 0, 2), a.transpose(1, 0, 2))
    close(t.T, a.T)
    close(t.mT, np.swapaxes(a, -1, -2))
    close(t.flatten(), a.flatten())
    close(t.unsqueeze(0).squeeze(), a)
    close(t.flip(1), np.flip(a, 1))
    close(nb.tensor([1.0, 2.0]).broadcast_to(3, 2), np.broadcast_to([1.0, 2.0], (3, 2)))
    assert nb.zeros(3, 1).expand(-1, 4).shape == (3, 4)
    with pytest.raises(ValueError, match="invalid size"):
        nb.zeros(3, 1).expand(-2, 4)
    close(nb.concatenate([t, t], axis=1), np.concatenate([a, a], axis=1))
    close(nb.stack([t, t]), np.stack([a, a]))
    close(nb.einsum("ijk,ikl->ijl", t, t.transpose(0, 2, 1)), np.einsum("ijk,ikl->ijl", a, a.transpose(0, 2, 1)))
    assert len(t) == 2
    assert float(nb.tensor(2.5)) == 2.5 and int(nb.tensor(3)) == 3
    assert bool(nb.tensor([True]))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(nb.tensor([True, False]))


def test_softmax_and_logsumexp(rng, close):
    a = rng.normal(size=(3, 5))
    e = np.exp(a - a.max(1, keepdims=True))
    close(nb.tensor(a).softmax(), e / e.sum(1, keepdims=True), rtol=1e-12)
    close(nb.tensor(a).logsumexp(1), np.log(np.exp(a).sum(1)), rtol=1e-12)


def test_sorting_selection_splitting_and_padding(close):
    a = np.array([[3.0, 1.0, 2.0], [0.5, 9.0, -1.0]])
    t = nb.tensor(a)
    close(t.sort().values, np.sort(a))
    close(t.sort(axis=0, descending=True).values, -np.sort(-a, axis=0))
    close(t.argsort(), np.argsort(a, kind="stable"))
    values, indices = t.topk(2)
    close(values, [[3.0, 2.0], [9.0, 0.5]])
    close(indices, [[0, 2], [1, 0]])
    close(t.gather(1, nb.tensor([[2], [0]])), [[2.0], [0.5]])
    parts = nb.arange(7).split(3)
    assert [p.tolist() for p in parts] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [p.shape for p in t.chunk(3, axis=1)] == [(2, 1)] * 3
    close(nb.tensor([0, 2]).one_hot(3), np.eye(3)[[0, 2]])
    close(t.pad([(1, 0), (0, 2)], value=-1.0), np.pad(a, [(1, 0), (0, 2)], constant_values=-1.0))


def test_devices():
    t = nb.tensor([1.0, 2.0], requires_grad=True)
    assert t.device == "cpu"
    moved = t.to("cpu")
    (moved * moved).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), [2.0, 4.0])  # moves are differentiable
    assert t.to("float64").dtype == nb.float64
    assert t.to(nb.float16).dtype == nb.float16
    with pytest.raises(ValueError, match="tpu"):
        t.to("tpu")
