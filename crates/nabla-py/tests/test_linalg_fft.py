"""linalg and fft against NumPy (values) and JAX (gradients)."""

import numpy as np
import pytest

import nabla_rs as nb
from nabla_rs import fft, linalg

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


@pytest.fixture
def spd():
    r = np.random.default_rng(3)
    m = r.normal(size=(2, 4, 4))
    return m @ np.swapaxes(m, -1, -2) + 4 * np.eye(4)


def test_linalg_values_match_numpy(spd):
    a = nb.tensor(spd)
    close(linalg.inv(a), np.linalg.inv(spd))
    close(linalg.det(a), np.linalg.det(spd))
    sign, logdet = linalg.slogdet(a)
    close(logdet, np.linalg.slogdet(spd)[1])
    close(linalg.cholesky(a), np.linalg.cholesky(spd))
    close(linalg.eigvalsh(a), np.linalg.eigvalsh(spd))
    b = np.arange(8.0).reshape(2, 4)
    close(linalg.solve(a, nb.tensor(b)[..., None])[..., 0], np.linalg.solve(spd, b[..., None])[..., 0])
    # NumPy 2's rule: b is a vector only when it is 1-D, so a [2, 4] b is a stack of [2, 4] matrices.
    with pytest.raises(ValueError, match="linalg.solve"):
        linalg.solve(a, nb.tensor(b))
    close(linalg.solve(a, nb.tensor(b[0])), np.linalg.solve(spd, b[0]))
    close(linalg.svdvals(a), np.linalg.svd(spd, compute_uv=False))
    q, r = linalg.qr(a)
    close(nb.matmul(q, r), spd)
    u, s, vh = linalg.svd(a[0], full_matrices=False)
    close((u * s) @ vh, spd[0])
    close(linalg.norm(a[0]), np.linalg.norm(spd[0]))
    close(linalg.norm(a[0], "nuc"), np.linalg.norm(spd[0], "nuc"))
    close(linalg.norm(a[0, 0], 1), np.linalg.norm(spd[0, 0], 1))
    close(linalg.pinv(a[0]), np.linalg.pinv(spd[0]))
    close(linalg.matrix_power(a[0], 3), np.linalg.matrix_power(spd[0], 3), tol=1e-8)
    close(linalg.multi_dot([a[0], a[1], a[0]]), spd[0] @ spd[1] @ spd[0], tol=1e-8)
    with pytest.raises(ValueError):
        linalg.inv(nb.zeros(2, 3, dtype=nb.float64))


def test_linalg_gradients_match_jax(spd):
    f = lambda a: linalg.slogdet(a)[1].sum() + linalg.inv(a).sum() + linalg.eigh(a)[0].sum()
    fj = lambda a: jnp.linalg.slogdet(a)[1].sum() + jnp.linalg.inv(a).sum() + jnp.linalg.eigh(a)[0].sum()
    close(nb.grad(f)(nb.tensor(spd)), jax.grad(fj)(spd), tol=1e-8)
    g = lambda a: linalg.solve(a, a[..., 0][..., None])[..., 0].sum()
    gj = lambda a: jnp.linalg.solve(a, a[..., 0][..., None])[..., 0].sum()
    close(nb.grad(g)(nb.tensor(spd)), jax.grad(gj)(spd), tol=1e-8)


def test_fft_values_and_gradients():
    x = np.random.default_rng(4).normal(size=(3, 8))
    close(fft.fft(nb.tensor(x)), np.fft.fft(x))
    close(fft.rfft(nb.tensor(x), norm="ortho"), np.fft.rfft(x, norm="ortho"))
    close(fft.irfft(fft.rfft(nb.tensor(x))), x)
    close(fft.fft2(nb.tensor(x)), np.fft.fft2(x))
    close(fft.rfftn(nb.tensor(x), axes=[0]), np.fft.rfftn(x, axes=[0]))
    close(fft.fftfreq(8, 0.5), np.fft.fftfreq(8, 0.5))
    close(fft.fftshift(nb.tensor(x)), np.fft.fftshift(x))
    f = lambda x: (fft.rfft(x).abs() ** 2).sum()
    fj = lambda x: (jnp.abs(jnp.fft.rfft(x)) ** 2).sum()
    close(nb.grad(f)(nb.tensor(x)), jax.grad(fj)(x))
