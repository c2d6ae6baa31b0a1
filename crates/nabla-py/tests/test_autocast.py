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
        nb.autocast(dtype=nb.float64)
    with pytest.raises(Exception, match="autocast"):
        nb.autocast(dtype=nb.int32)


def f16(x):
    return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32)


def test_float16_blocks_round_products_and_convolutions_to_float16():
    a, b = data(3, (6, 40)), data(4, (40, 7))
    x, w = nb.tensor(a, requires_grad=True), nb.tensor(b, requires_grad=True)
    with nb.autocast("cpu", dtype=nb.float16):
        y = x @ w
    close(y.numpy(), f16(a).astype(np.float64) @ f16(b).astype(np.float64), 1e-4)
    assert np.abs(y.numpy() - a @ b).max() > 1e-5
    y.sum().backward()
    close(w.grad.numpy(), f16(a).T.astype(np.float64) @ np.ones((6, 7)), 1e-4)
    img, k = data(5, (1, 2, 6, 6)), data(6, (3, 2, 3, 3))
    with nb.autocast("cpu", dtype=nb.float16):
        out = nb.nn.functional.conv2d(nb.tensor(img), nb.tensor(k), padding=1)
    ref = nb.nn.functional.conv2d(nb.tensor(f16(img)), nb.tensor(f16(k)), padding=1)
    close(out.numpy(), ref.numpy(), 1e-4)
    # Past float16's 65504 an operand is infinite.
    with nb.autocast("cpu", dtype=nb.float16):
        big = nb.tensor(np.array([[7e4, 1.0]], np.float32)) @ nb.tensor(np.ones((2, 1), np.float32))
    assert np.isinf(big.numpy()).all()


def regression(scaler=None, steps=3):
    """A linear model whose loss is scaled down by 1e-7: its gradients' products see cotangents of
    1e-7, which float16 holds only as a coarse subnormal unless the loss is scaled up."""
    w = nb.tensor(np.array([[0.5], [-1.0]], np.float32), requires_grad=True)
    x = nb.tensor(np.array([[1.0, 2.0]], np.float32))
    opt = nb.optim.SGD([w], lr=1e5)
    for _ in range(steps):
        opt.zero_grad()
        with nb.autocast("cpu", dtype=nb.float16):
            loss = (x @ w).sum() * 1e-7
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
    return w.numpy().ravel()


def test_grad_scaler_keeps_small_float16_gradients_and_skips_overflowed_steps():
    # Exact: each step moves w by lr * 1e-7 * x = (0.01, 0.02).
    want = np.array([0.5 - 0.03, -1.0 - 0.06])
    np.testing.assert_allclose(regression(nb.amp.GradScaler()), want, rtol=0, atol=1e-5)
    # Unscaled, the cotangent rounds to 2**-23 = 1.19e-7: 19% too far.
    assert np.abs(regression() - want).max() > 5e-3
    # An overflow: a factor of 2**40 takes the scaled cotangent to 1.1e5, past float16's 65504, so the
    # first step is skipped and the factor halves; at 2**39 (5.5e4) the other three steps run.
    scaler = nb.amp.GradScaler(init_scale=2.0**40, growth_interval=1000)
    w = regression(scaler, steps=4)
    state = scaler.state_dict()
    assert state["scale"] == 2.0**39 and state["_growth_tracker"] == 3, state
    np.testing.assert_allclose(w, want, rtol=0, atol=1e-5)


def test_grad_scaler_growth_state_and_errors():
    scaler = nb.amp.GradScaler(init_scale=4.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=2)
    regression(scaler, steps=2)
    assert scaler.get_scale() == 12.0 and scaler.state_dict()["_growth_tracker"] == 0
    saved = scaler.state_dict()
    other = nb.amp.GradScaler()
    other.load_state_dict(saved)
    assert other.state_dict() == saved and other.get_growth_factor() == 3.0
    scaler.update(new_scale=5.0)
    assert scaler.get_scale() == 5.0
    off = nb.amp.GradScaler(enabled=False)
    assert off.state_dict() == {} and off.get_scale() == 1.0
    t = nb.tensor(np.ones(2, np.float32))
    assert off.scale(t) is t
    with pytest.raises(Exception, match="growth_factor"):
        nb.amp.GradScaler(growth_factor=0.5)
    with pytest.raises(ValueError, match="growth_interval"):
        nb.amp.GradScaler(growth_interval=0)
    with pytest.raises(ValueError, match="device"):
        nb.amp.GradScaler("tpu")
    w = nb.tensor(np.ones((1,), np.float32), requires_grad=True)
    opt = nb.optim.SGD([w], lr=0.1)
    (w * 2.0).sum().backward()
    s = nb.amp.GradScaler()
    s.unscale_(opt)
    with pytest.raises(Exception, match="already unscaled"):
        s.unscale_(opt)
