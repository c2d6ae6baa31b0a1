"""nabla_rs.autocast: float32 products inside the block multiply bfloat16-rounded operands with float32
sums (values and gradients against NumPy over explicitly rounded operands); other dtypes, code after
the block and enabled=False are untouched; wrong arguments are errors."""

import numpy as np
import pytest

import nabla_rs as nb


def bf16(x):
    """x rounded to bfloat16 (nearest, ties to even) and back to float32."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32)


def data(seed, shape):
    # Values with low mantissa bits set, so that rounding changes them.
    return (np.random.default_rng(seed).normal(size=shape) + 1.0 / 1024).astype(np.float32)


def close(got, want, tol):
    np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=tol)


def test_products_and_gradients_use_bf16_operands():
    a, b = data(1, (8, 33)), data(2, (33, 5))
    x, w = nb.tensor(a, requires_grad=True), nb.tensor(b, requires_grad=True)
    with nb.autocast("cpu", dtype=nb.bfloat16):
        assert nb.is_autocast_enabled()
        y = x @ w
        loss = (y * y).sum()
    assert not nb.is_autocast_enabled()
    want = bf16(a).astype(np.float64) @ bf16(b).astype(np.float64)
    close(y.numpy(), want, 1e-4)
    assert np.abs(y.numpy() - a @ b).max() > 1e-3  # the rounding is visible
    loss.backward()  # outside the block: the gradient's products are still bf16
    g = 2 * y.numpy()
    close(w.grad.numpy(), bf16(a).T.astype(np.float64) @ bf16(g), 1e-3)
    close(x.grad.numpy(), bf16(g).astype(np.float64) @ bf16(b).T, 1e-3)


def test_other_dtypes_disabled_blocks_and_decorators():
    a, b = data(3, (4, 6)), data(4, (6, 3))
    with nb.autocast(dtype="bfloat16"):
        np.testing.assert_array_equal((nb.tensor(a.astype(np.float64)) @ nb.tensor(b.astype(np.float64))).numpy(),
                                      a.astype(np.float64) @ b.astype(np.float64))
        with nb.autocast(enabled=False):
            assert not nb.is_autocast_enabled()
            full = (nb.tensor(a) @ nb.tensor(b)).numpy()
        assert nb.is_autocast_enabled()
    close(full, a.astype(np.float64) @ b, 1e-5)

    @nb.autocast()
    def product(p, q):
        return p @ q

    close(product(nb.tensor(a), nb.tensor(b)).numpy(), bf16(a).astype(np.float64) @ bf16(b), 1e-5)
    assert not nb.is_autocast_enabled()


def test_wrong_arguments_are_errors():
    with pytest.raises(ValueError, match="autocast"):
        nb.autocast("tpu")
    with pytest.raises(Exception, match="autocast"):
        nb.autocast(dtype=nb.float16)
    with pytest.raises(Exception, match="autocast"):
        nb.autocast(dtype=nb.float64)
