"""NumPy indexing: basic views, negative steps, integer arrays and boolean masks, with gradients."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nabla_rs as nb

A = np.arange(60.0).reshape(3, 4, 5)

KEYS = [
    1,
    -1,
    (1, 2),
    (slice(None), 2),
    (Ellipsis, 1),
    (None, 1),
    (1, None, slice(1, 3)),
    slice(None, None, -1),
    (slice(3, 0, -1), slice(None, None, 2)),
    (slice(None), slice(-1, None, -2)),
    (slice(-2, -6, -1),),
    (slice(5, -1, -1),),
    [0, 2],
    (slice(None), [3, 0, 0]),
    ([0, 2], [1, 3]),
    ([[0], [2]], [1, 3]),
    (slice(None), [1, 2], [0, 4]),
    ([0, 1], slice(None), [0, 4]),
    (Ellipsis, [-1, 0]),
    (1, [0, 3]),
    np.array([True, False, True]),
    (slice(None), np.array([True, False, True, True])),
    A[:, :, 0] > 20,
]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k)[:40] for k in KEYS])
def test_indexing_matches_numpy(key):
    np.testing.assert_array_equal(nb.tensor(A)[key].numpy(), A[key])


def test_index_tensors_and_errors():
    t = nb.tensor(A)
    np.testing.assert_array_equal(t[nb.tensor([2, 0])].numpy(), A[[2, 0]])
    with pytest.raises(IndexError):
        t[3]
    with pytest.raises(IndexError):
        t[:, [4, 7]]
    with pytest.raises(IndexError):
        t[0, 0, 0, 0]
    with pytest.raises(IndexError):
        t[nb.tensor([0.5])]


def test_gradients_flow_through_indexing():
    x = nb.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    y = (x[:, [0, 0, 2]] * nb.tensor([1.0, 2.0, 3.0])).sum() + x[1, ::-1].sum()
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[3.0, 0.0, 3.0], [4.0, 1.0, 4.0]])


def _slices(n):
    bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
    step = st.one_of(st.none(), st.integers(-3, 3).filter(lambda s: s != 0))
    return st.builds(slice, bound, bound, step)


@settings(max_examples=200, deadline=None)
@given(st.tuples(_slices(3), _slices(4), st.one_of(_slices(5), st.integers(-5, 4))))
def test_random_basic_keys_match_numpy(key):
    np.testing.assert_array_equal(nb.tensor(A)[key].numpy(), A[key])


def test_assignment_matches_numpy():
    a = np.zeros((3, 4))
    t = nb.tensor(a)
    for key, value in [((1, 2), 5.0), ((slice(None), 0), [1.0, 2.0, 3.0]), (([0, 2], slice(1, 3)), 7.0),
                       ((Ellipsis, -1), np.arange(3.0)), ((slice(None, None, -1), 3), [9.0, 8.0, 7.0])]:
        a[key] = value
        t[key] = value
        np.testing.assert_array_equal(t.numpy(), a)
    a[a > 6] = -1.0
    t[t > 6] = -1.0
    np.testing.assert_array_equal(t.numpy(), a)
    m = nb.zeros(4, dtype=nb.bool_)
    m[1:3] = True
    assert m.tolist() == [False, True, True, False]
    inf = nb.tensor([np.inf, 1e20, np.nan])
    inf[0] = 0.0
    inf[1] = 1.0
    assert inf[:2].tolist() == [0.0, 1.0] and np.isnan(inf[2].item())
    with pytest.raises(IndexError, match="twice"):
        t[[0, 0]] = 1.0
    with pytest.raises(ValueError):
        t[0] = nb.ones(5)


def test_assignment_is_differentiable():
    x = nb.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        x[0] = 5.0
    y = x * 1.0
    y[0] = x[1] * 10.0
    (y * nb.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 12.0, 3.0])
    for transform in (nb.grad, lambda f: nb.jit(nb.grad(f))):
        g = transform(_assign_then_sum)(nb.tensor([1.0, 2.0]))
        np.testing.assert_allclose(g.numpy(), [0.0, 3.0])


def _assign_then_sum(v):
    w = v * 1.0
    w[0] = v[1] * 2.0
    return w.sum()
