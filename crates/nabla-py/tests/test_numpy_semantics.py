"""Regression tests for results that used to be silently wrong: true division of integers, integer
negative powers, iteration over 0-d tensors, boolean scalar indices and boolean masks of the wrong
length. Each is compared with NumPy on the same inputs (PyTorch and JAX agree with it on these)."""

import numpy as np
import pytest

import nabla_rs as nb


@pytest.mark.parametrize(
    "a, b",
    [
        ([1, 3], 2),
        ([1, 3], [2, 4]),
        ([[7, -7]], [[2], [-2]]),
        ([True, True], 2),
        ([1, 3], True),
    ],
)
def test_dividing_integers_is_true_division(a, b):
    x = nb.tensor(a)
    y = nb.tensor(b) if isinstance(b, list) else b
    want = np.asarray(a) / np.asarray(b)
    got = x / y
    # PyTorch's default float type: float32 (NumPy's float64 values, rounded).
    assert got.dtype == nb.float32
    np.testing.assert_allclose(got.numpy(), want.astype(np.float32), rtol=0)
    reflected = b / x if not isinstance(b, list) else nb.tensor(b) / x
    np.testing.assert_allclose(reflected.numpy(), (np.asarray(b) / np.asarray(a)).astype(np.float32))


def test_floor_division_and_float_division_are_unchanged():
    assert (nb.tensor([7, -7]) // 2).tolist() == [3, -4]
    assert (nb.tensor([1.0, 3.0]) / 2).tolist() == [0.5, 1.5]
    assert (nb.tensor([1.0, 3.0], dtype=nb.float64) / nb.tensor([2, 4])).dtype == nb.float64


def test_true_division_keeps_gradients_of_float_operands():
    x = nb.tensor([1.0, 4.0], requires_grad=True)
    (x / nb.tensor([2, 8])).sum().backward()
    assert x.grad.tolist() == [0.5, 0.125]


@pytest.mark.parametrize(
    "power",
    [
        lambda: nb.tensor([2, 3]) ** -1,
        lambda: nb.tensor([2, 3]) ** nb.tensor([1, -2]),
        lambda: 2 ** nb.tensor([1, -1]),
    ],
)
def test_integers_to_negative_integer_powers_raise(power):
    with np.testing.assert_raises(ValueError):
        np.array([2, 3]) ** -1
    with pytest.raises(ValueError, match="negative integer powers"):
        power()


def test_nonnegative_and_float_powers_still_work():
    assert (nb.tensor([2, 3]) ** 2).tolist() == [4, 9]
    assert (nb.tensor([2, 3]) ** nb.tensor([0, 1])).tolist() == [1, 3]
    assert (2 ** nb.tensor([0, 3])).tolist() == [1, 8]
    np.testing.assert_allclose((nb.tensor([2.0, 4.0]) ** -1).numpy(), [0.5, 0.25])
    np.testing.assert_allclose((nb.tensor([2, 4]) ** -1.0).numpy(), [0.5, 0.25])


def test_iteration_follows_the_first_axis_and_refuses_0d():
    with pytest.raises(TypeError):
        list(np.array(1.0))
    with pytest.raises(TypeError, match="0-d"):
        list(nb.tensor(1.0))
    rows = list(nb.tensor([[1, 2], [3, 4]]))
    assert [r.tolist() for r in rows] == [[1, 2], [3, 4]]
    assert list(nb.zeros((0, 3))) == []


@pytest.mark.parametrize("flag", [True, False, np.True_, np.False_])
def test_boolean_scalar_index_adds_an_axis(flag):
    a = np.arange(6.0).reshape(2, 3)
    want = a[flag]
    got = nb.tensor(a)[bool(flag)]
    assert tuple(got.shape) == want.shape
    np.testing.assert_array_equal(got.numpy(), want)
    assert tuple(nb.tensor(a)[nb.tensor(bool(flag))].shape) == want.shape


def test_boolean_scalar_assignment_writes_all_or_nothing():
    t = nb.tensor([1.0, 2.0])
    t[True] = 5.0
    assert t.tolist() == [5.0, 5.0]
    t[False] = 7.0
    assert t.tolist() == [5.0, 5.0]


def test_boolean_scalar_inside_a_tuple_is_an_error_not_an_integer():
    with pytest.raises(IndexError, match="boolean scalar"):
        nb.tensor(np.arange(6.0).reshape(2, 3))[0, True]


@pytest.mark.parametrize(
    "mask, axis",
    [
        ([True], 0),
        ([True, False, True], 0),
        ((slice(None), [True, False]), 1),
        ([[True, False, True]], 0),
    ],
)
def test_masks_of_the_wrong_shape_raise(mask, axis):
    a = np.arange(6.0).reshape(2, 3)
    key = tuple(np.asarray(m) if isinstance(m, list) else m for m in mask) if isinstance(mask, tuple) else np.asarray(mask)
    with pytest.raises(IndexError):
        a[key]
    with pytest.raises(IndexError, match=f"axis {axis}"):
        nb.tensor(a)[key]


def test_masks_of_the_right_shape_select_as_numpy():
    a = np.arange(6.0).reshape(2, 3)
    for key in [np.array([True, False]), (slice(None), np.array([True, False, True])), a > 2]:
        np.testing.assert_array_equal(nb.tensor(a)[key].numpy(), a[key])


def test_dtypes_equal_their_names_and_numpys():
    t = nb.tensor([1.0])
    assert t.dtype == "float32" and t.dtype == np.dtype("float32") and t.dtype == np.float32
    assert t.dtype != "float64" and t.dtype != np.dtype("int32") and t.dtype != "no such dtype"
    assert t.dtype != 3 and not (t.dtype == None)  # noqa: E711
    assert {nb.float32: 1}[t.dtype] == 1


def test_a_gradient_of_the_wrong_shape_is_refused_when_assigned():
    p = nb.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="shape"):
        p.grad = nb.zeros((3,))
    p.grad = nb.ones((2,))
    assert p.grad.tolist() == [1.0, 1.0]


def test_data_no_dtype_holds_is_a_clear_error():
    with pytest.raises(TypeError, match="int64's range"):
        nb.tensor([2**70])
    with pytest.raises(TypeError, match="not a number"):
        nb.tensor([object(), 1])
    with pytest.raises(ValueError, match="inhomogeneous"):  # NumPy's own message, as PyTorch's ValueError
        nb.tensor([[1, 2], [3]])


X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])


@pytest.mark.parametrize(
    "f",
    [np.exp, np.sin, np.tanh, np.sqrt, np.abs, np.negative, np.square, np.arctan, np.log1p],
)
def test_numpy_ufuncs_run_nablas_op_and_keep_the_graph(f):
    x = np.abs(X) if f in (np.sqrt, np.log1p) else X
    t = nb.tensor(x, requires_grad=True)
    y = f(t)
    assert isinstance(y, nb.Tensor) and y.requires_grad
    np.testing.assert_allclose(y.numpy(), f(x), rtol=1e-12)
    y.sum().backward()
    h = 1e-6
    numeric = (f(x + h) - f(x - h)) / (2 * h)
    np.testing.assert_allclose(t.grad.numpy(), numeric, rtol=1e-5, atol=1e-8)


def test_numpy_binary_ufuncs_and_mixed_operands():
    t = nb.tensor(X, requires_grad=True)
    other = np.full((1, 3), 0.5)
    for f in (np.add, np.subtract, np.multiply, np.divide, np.maximum, np.arctan2, np.power):
        a = np.abs(X) if f is np.power else X
        ta = nb.tensor(a)
        np.testing.assert_allclose(f(ta, other).numpy(), f(a, other), rtol=1e-12)
        np.testing.assert_allclose(f(other, ta).numpy(), f(other, a), rtol=1e-12)
    assert (np.less(t, 0.5)).tolist() == (X < 0.5).tolist()
    z = other * t  # the array's operator defers to the tensor's protocol
    assert isinstance(z, nb.Tensor)
    z.sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), np.broadcast_to(other, X.shape))


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("sum", {}),
        ("sum", {"axis": 0}),
        ("mean", {"axis": 1, "keepdims": True}),
        ("max", {"axis": 0}),
        ("min", {}),
        ("prod", {"axis": 1}),
        ("argmax", {"axis": 1}),
        ("amax", {"axis": -1}),
    ],
)
def test_numpy_functions_run_nablas_op(name, kwargs):
    f = getattr(np, name)
    got = f(nb.tensor(X), **kwargs)
    assert isinstance(got, nb.Tensor)
    np.testing.assert_allclose(got.numpy(), f(X, **kwargs), rtol=1e-12)


def test_numpy_functions_keep_the_graph():
    t = nb.tensor(X, requires_grad=True)
    loss = np.sum(np.exp(t) * t)
    loss.backward()
    np.testing.assert_allclose(t.grad.numpy(), np.exp(X) * (1 + X), rtol=1e-12)
    np.testing.assert_array_equal(np.concatenate([t, t], axis=1).detach().numpy(), np.concatenate([X, X], axis=1))
    np.testing.assert_array_equal(np.stack([t, t]).detach().numpy(), np.stack([X, X]))
    np.testing.assert_array_equal(np.where(X > 0, t, 0.0).detach().numpy(), np.where(X > 0, X, 0.0))
    np.testing.assert_array_equal(np.reshape(t, (3, 2)).detach().numpy(), X.reshape(3, 2))
    np.testing.assert_array_equal(np.transpose(t).detach().numpy(), X.T)


def test_numpy_without_a_nabla_op_runs_on_copies_or_refuses_to_drop_the_graph():
    t = nb.tensor(X)
    np.testing.assert_allclose(np.cbrt(t), np.cbrt(X))
    np.testing.assert_allclose(np.add.reduce(t, axis=1), X.sum(axis=1))
    np.testing.assert_allclose(np.median(t), np.median(X))
    assert np.allclose(t, X)
    g = nb.tensor(X, requires_grad=True)
    with pytest.raises(TypeError, match="cbrt.*requires grad"):
        np.cbrt(g)
    with pytest.raises(TypeError, match="median.*requires grad"):
        np.median(g)
    with pytest.raises(TypeError, match="immutable"):
        np.exp(X, out=nb.tensor(X))
