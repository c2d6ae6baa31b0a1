"""``nabla_rs.random``: explicit keys as ``jax.random``. The Philox rounds run as tensor ops for
traced keys and in Rust for concrete ones; both give the same stream. Statistics are checked with
tolerances of several standard errors."""

import math

import numpy as np
import pytest

import nabla_rs as nb
from nabla_rs import random as jr


def test_keys_are_deterministic_and_independent_of_the_global_generator():
    k = jr.key(42)
    assert k.dtype == nb.int64 and k.tolist() == [42, 0]
    a = jr.normal(k, (5,))
    nb.manual_seed(3)
    nb.rand(10)
    assert jr.normal(k, (5,)).tolist() == a.tolist()
    assert jr.normal(jr.key(43), (5,)).tolist() != a.tolist()
    assert jr.key(2**64 - 1).tolist() == [-1, 0]
    with pytest.raises(ValueError, match="64 bits"):
        jr.key(2**64)


def test_concrete_and_traced_keys_give_the_same_stream():
    k = jr.fold_in(jr.key(7), 3)
    for kind, fn in (("uniform", jr.uniform), ("normal", jr.normal)):
        eager = fn(k, (4, 3), dtype=nb.float64)
        traced = nb.jit(lambda key: fn(key, (4, 3), dtype=nb.float64))(k)
        if kind == "uniform":
            assert traced.tolist() == eager.tolist()  # bit for bit
        else:
            np.testing.assert_allclose(traced.numpy(), eager.numpy(), rtol=1e-13, atol=1e-13)
    # A large offset carries into the counter's high word the same way on both paths.
    far = nb.tensor([5, 2**32 - 2], dtype=nb.int64)
    assert nb.jit(lambda key: jr.uniform(key, (4,), nb.float64))(far).tolist() == jr.uniform(far, (4,), nb.float64).tolist()


def test_the_traced_philox_matches_the_known_answers():
    # Random123's known-answer vectors for philox4x32-10, through the tensor-op rounds.
    words = [nb.tensor(0, dtype=nb.int64)] * 6
    out = [int(w) for w in jr._philox(*words)]
    assert out == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    ones = [nb.tensor(0xFFFFFFFF, dtype=nb.int64)] * 6
    assert [int(w) for w in jr._philox(*ones)] == [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]


def test_split_and_fold_in():
    k = jr.key(0)
    keys = jr.split(k, 4)
    assert tuple(keys.shape) == (4, 2) and len({tuple(r) for r in keys.tolist()}) == 4
    k1, k2 = jr.split(k)
    assert k1.tolist() == keys[0].tolist() and k2.tolist() == keys[1].tolist()
    assert jr.split(k, 0).shape == (0, 2)
    assert jr.fold_in(k, 1).tolist() != jr.fold_in(k, 2).tolist()
    assert jr.fold_in(k, 1).tolist() == jr.fold_in(k, 1).tolist()
    draws = [jr.uniform(keys[i], (1000,), nb.float64).numpy() for i in range(4)]
    assert abs(np.corrcoef(draws[0], draws[1])[0, 1]) < 0.1
    # vmap over a batch of keys draws what each key draws alone.
    batched = nb.vmap(lambda key: jr.normal(key, (3,), nb.float64))(keys)
    for i in range(4):
        np.testing.assert_allclose(batched.numpy()[i], jr.normal(keys[i], (3,), nb.float64).numpy(), rtol=1e-13)
    with pytest.raises(ValueError, match="one key"):
        jr.normal(keys, (3,))


def test_distributions_have_the_right_moments():
    k = jr.key(1)
    n = 40_000
    u = jr.uniform(k, (n,), nb.float64, minval=-1.0, maxval=3.0).numpy()
    assert u.min() >= -1.0 and u.max() < 3.0 and abs(u.mean() - 1.0) < 0.03
    z = jr.normal(jr.fold_in(k, 1), (n,), nb.float64).numpy()
    assert abs(z.mean()) < 0.03 and abs(z.std() - 1.0) < 0.02
    e = jr.exponential(jr.fold_in(k, 2), (n,), nb.float64).numpy()
    assert e.min() > 0 and abs(e.mean() - 1.0) < 0.03
    g = jr.gumbel(jr.fold_in(k, 3), (n,), nb.float64).numpy()
    assert abs(g.mean() - 0.5772156649) < 0.03
    lp = jr.laplace(jr.fold_in(k, 4), (n,), nb.float64).numpy()
    assert abs(lp.var() - 2.0) < 0.1
    lg = jr.logistic(jr.fold_in(k, 5), (n,), nb.float64).numpy()
    assert abs(lg.var() - math.pi**2 / 3) < 0.15
    b = jr.bernoulli(jr.fold_in(k, 6), 0.3, (n,)).numpy()
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 0.015
    t = jr.truncated_normal(jr.fold_in(k, 7), -0.5, 1.0, (n,), nb.float64).numpy()
    assert t.min() >= -0.5 and t.max() <= 1.0
    r = jr.randint(jr.fold_in(k, 8), (n,), 2, 7).numpy()
    assert set(np.unique(r)) == {2, 3, 4, 5, 6} and r.dtype == np.int64
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    mv = jr.multivariate_normal(jr.fold_in(k, 9), nb.tensor([1.0, -1.0], dtype=nb.float64), nb.tensor(cov), (n,)).numpy()
    np.testing.assert_allclose(np.cov(mv.T), cov, atol=0.06)
    np.testing.assert_allclose(mv.mean(0), [1.0, -1.0], atol=0.03)


def test_uniform_in_low_precision_never_reaches_maxval():
    u = jr.uniform(jr.key(5), (20_000,), nb.bfloat16, minval=0.0, maxval=1.0)
    assert float(u.astype(nb.float32).max()) < 1.0
    for dtype, tiny in ((nb.bfloat16, 2.0**-133), (nb.float16, 2.0**-24)):
        for top in (1.0, 1.5, 3.0, -2.0, -1.7, 0.0):
            below = float(jr._just_below(nb.tensor(top).astype(dtype), dtype).astype(nb.float64))
            if top == 0.0:
                assert below == -tiny
                continue
            top = nb.tensor(top).astype(dtype).astype(nb.float64).item()  # top in dtype
            grid = nb.tensor(np.linspace(top - 0.1, top, 20001)).astype(dtype).astype(nb.float64).numpy()
            assert below < top and below == grid[grid < top].max()
    assert jr.uniform(jr.key(5), (3,)).dtype == nb.float32
    with pytest.raises(TypeError, match="floating-point"):
        jr.normal(jr.key(0), (2,), nb.int64)


def test_categorical_choice_and_permutation():
    k = jr.key(11)
    logits = nb.log(nb.tensor([0.1, 0.2, 0.7], dtype=nb.float64))
    c = jr.categorical(k, logits, shape=(30_000,)).numpy()
    np.testing.assert_allclose(np.bincount(c, minlength=3) / c.size, [0.1, 0.2, 0.7], atol=0.015)
    batch = jr.categorical(k, nb.tensor([[0.0, 50.0], [50.0, 0.0]], dtype=nb.float64))
    assert batch.tolist() == [1, 0]
    p = jr.permutation(k, 10)
    assert sorted(p.tolist()) == list(range(10))
    x = nb.arange(12).reshape(3, 4)
    rows = jr.permutation(k, x, axis=1)
    assert sorted(rows[0].tolist()) == [0, 1, 2, 3] and (rows == x.index_select(1, rows[0])).all()
    without = jr.choice(k, 5, (5,), replace=False)
    assert sorted(without.tolist()) == [0, 1, 2, 3, 4]
    weighted = jr.choice(k, 3, (30_000,), p=nb.tensor([0.5, 0.0, 0.5], dtype=nb.float64)).numpy()
    assert 1 not in set(weighted) and abs((weighted == 0).mean() - 0.5) < 0.015
    assert tuple(jr.choice(k, nb.arange(6), (2, 2)).shape) == (2, 2)
    with pytest.raises(ValueError, match="without replacement"):
        jr.choice(k, 3, (4,), replace=False)


def test_draws_inside_grad_and_jit_training_loop():
    # A dropout-like mask from a key passed through jit: the compiled program takes the key as an
    # argument, so new keys do not recompile and each gives its own mask.
    def loss(w, key):
        mask = jr.bernoulli(key, 0.5, tuple(w.shape)).astype(w.dtype)
        return (w * mask).sum()

    w = nb.ones(8, dtype=nb.float64)
    step = nb.jit(loss)
    k1, k2 = jr.split(jr.key(0))
    assert step(w, k1).item() == loss(w, k1).item()
    assert step(w, k2).item() == loss(w, k2).item()
    assert len(step._cache) == 1
    g = nb.grad(loss)(w, k1)
    assert g.tolist() == jr.bernoulli(k1, 0.5, (8,)).astype(nb.float64).tolist()
