"""PyTorch's spellings of what nabla has (dim, clone, dtype conversions, isinf, isclose,
allclose), against NumPy's values (PyTorch's agree on these inputs)."""

import numpy as np
import pytest

import nabla_rs as nb

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
