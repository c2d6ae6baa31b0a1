"""Property tests against NumPy: random shapes (zero-size and broadcast included), dtypes and
operators, strided inputs, and gradients against central differences."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nabla_rs as nb

FLOATS = st.floats(-3, 3, allow_nan=False, width=64)


@st.composite
def broadcast_pair(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    a_shape, b_shape = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, base_shape=shape, max_side=4)).input_shapes
    a = draw(hnp.arrays(np.float64, a_shape, elements=FLOATS))
    b = draw(hnp.arrays(np.float64, b_shape, elements=FLOATS))
    return a, b


OPS = [
    (lambda x, y: x + y, np.add),
    (lambda x, y: x - y, np.subtract),
    (lambda x, y: x * y, np.multiply),
    (lambda x, y: nb.maximum(x, y), np.maximum),
    (lambda x, y: nb.minimum(x, y), np.minimum),
    (lambda x, y: x < y, np.less),
    (lambda x, y: nb.where(x > y, x, y), lambda x, y: np.where(x > y, x, y)),
]


@settings(max_examples=150, deadline=None)
@given(broadcast_pair(), st.sampled_from(OPS), st.sampled_from(["float64", "float32", "int64"]))
def test_broadcast_binary_ops_match_numpy(pair, op, dtype):
    a, b = (v.astype(dtype) for v in pair)
    ours, ref = op[0](nb.tensor(a), nb.tensor(b)), op[1](a, b)
    assert tuple(ours.shape) == ref.shape
    np.testing.assert_allclose(ours.numpy().astype(np.float64), ref.astype(np.float64), rtol=1e-6, atol=1e-6)


@settings(max_examples=100, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5), elements=FLOATS),
       st.sampled_from(["sum", "mean", "max", "min", "prod"]), st.booleans())
def test_reductions_of_strided_views_match_numpy(a, name, keepdims):
    view = a[..., ::-1]
    axis = a.ndim - 1
    ours = getattr(nb.tensor(a)[..., ::-1], name)(axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(ours.numpy(), getattr(np, name)(view, axis=axis, keepdims=keepdims), rtol=1e-10, atol=1e-12)


UNARY = ["exp", "sin", "tanh", "sigmoid", "square", "abs"]


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=4), elements=FLOATS),
       st.sampled_from(UNARY))
def test_gradients_match_central_differences(a, name):
    f = lambda x: (getattr(nb, name)(x) * nb.tensor(np.arange(a.size, dtype=np.float64).reshape(a.shape) + 1)).sum()
    g = nb.grad(f)(nb.tensor(a)).numpy()
    h = 1e-6
    for idx in np.ndindex(a.shape):
        if name == "abs" and abs(a[idx]) < 1e-3:
            continue  # |x| has no derivative at 0
        up, down = a.copy(), a.copy()
        up[idx] += h
        down[idx] -= h
        fd = (f(nb.tensor(up)).item() - f(nb.tensor(down)).item()) / (2 * h)
        np.testing.assert_allclose(g[idx], fd, rtol=1e-5, atol=1e-6)
