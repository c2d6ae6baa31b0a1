"""The integer dtypes int8, int16, int32, int64, uint8, uint16, uint32 and uint64: creation, NumPy
and DLPack exchange, wrapping arithmetic, reductions, sorting and promotion, each against NumPy on the
same values (NumPy wraps on overflow as nabla does), and against PyTorch where it is installed."""

import operator

import numpy as np
import pytest

import nabla_rs as nb

try:
    import torch
except ImportError:  # the PyTorch comparisons skip; the NumPy ones run
    torch = None

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def values(name, n=24, seed=0):
    """Values across the dtype's whole range: its extremes, their neighbours, zero and small numbers."""
    info = np.iinfo(name)
    rng = np.random.default_rng(seed)
    special = [info.min, info.min + 1, info.max, info.max - 1, 0, 1, 2, 3]
    drawn = rng.integers(info.min, info.max, size=n - len(special), dtype=name, endpoint=True)
    return np.concatenate([np.array(special, dtype=name), drawn])


def same(ours, theirs):
    """``ours`` holds exactly NumPy's values, in NumPy's dtype."""
    theirs = np.asarray(theirs)
    assert ours.dtype == theirs.dtype.name, (ours.dtype, theirs.dtype)
    np.testing.assert_array_equal(ours.numpy(), theirs)


@pytest.mark.parametrize("name", INTS)
def test_creation_and_numpy_round_trip(name):
    a = values(name)
    t = nb.tensor(a)
    same(t, a)
    assert t.dtype == getattr(nb, name) and t.dtype.itemsize == a.itemsize
    assert nb.tensor(a.tolist(), dtype=name).dtype == name
    same(nb.zeros((2, 3), dtype=getattr(nb, name)), np.zeros((2, 3), dtype=name))
    same(nb.arange(5, dtype=name), np.arange(5, dtype=name))
    # Item access gives Python ints with the exact value, the extremes included.
    assert [t[i].item() for i in range(4)] == [int(v) for v in a[:4]]
    # DLPack: NumPy reads nabla's buffer and nabla reads NumPy's.
    same(t, np.from_dlpack(t))
    same(nb.from_dlpack(a), a)


@pytest.mark.parametrize("name", INTS)
def test_wrapping_arithmetic_matches_numpy(name):
    a, b = values(name, seed=1), values(name, seed=2)[::-1].copy()
    x, y = nb.tensor(a), nb.tensor(b)
    with np.errstate(over="ignore"):
        same(x + y, a + b)
        same(x - y, a - b)
        same(x * y, a * b)
        same(-x, -a)
        same(abs(x), np.abs(a))
        same(x & y, a & b)
        same(x | y, a | b)
        same(x ^ y, a ^ b)
        same(~x, ~a)
        same(nb.maximum(x, y), np.maximum(a, b))
        same(nb.minimum(x, y), np.minimum(a, b))
        same(nb.sign(x), np.sign(a))
        for cmp in ["__lt__", "__le__", "__eq__", "__ne__", "__gt__", "__ge__"]:
            same(getattr(x, cmp)(y), getattr(a, cmp)(b))


@pytest.mark.parametrize("name", INTS)
def test_division_remainder_shifts_and_powers(name):
    a = values(name, seed=3)
    b = values(name, seed=4)
    b[b == 0] = 1
    # NumPy's MIN // -1 overflows with a warning and wraps, as nabla's does.
    x, y = nb.tensor(a), nb.tensor(b)
    with np.errstate(over="ignore", divide="ignore"):
        same(x // y, a // b)
        same(x % y, a % b)
    bits = np.iinfo(name).bits
    shifts = (np.arange(a.size) % bits).astype(name)
    same(x << nb.tensor(shifts), a << shifts)
    same(x >> nb.tensor(shifts), a >> shifts)
    small = (np.arange(a.size) % 5).astype(name)
    exponents = (np.arange(a.size) % 4).astype(name)
    with np.errstate(over="ignore"):
        same(nb.tensor(small) ** nb.tensor(exponents), small**exponents)
    # True division gives the default float, as in PyTorch (NumPy's is float64; the values agree).
    q = x / y
    assert q.dtype == nb.float32
    np.testing.assert_allclose(q.numpy(), (a.astype(np.float64) / b).astype(np.float32), rtol=1e-6)


@pytest.mark.parametrize("name", INTS)
def test_reductions_sorting_and_indexing(name):
    a = values(name, seed=5).reshape(4, 6)
    x = nb.tensor(a)
    same(x.max(axis=1), a.max(axis=1))
    same(x.min(axis=0), a.min(axis=0))
    same(nb.argmax(x, axis=1), a.argmax(axis=1))
    same(nb.argmin(x, axis=0), a.argmin(axis=0))
    # The Array API's sum accumulates signed integers in int64 and unsigned ones in uint64, as NumPy.
    with np.errstate(over="ignore"):
        same(nb.sum(x, axis=1), a.sum(axis=1))
        same(nb.prod(x, axis=0), a.prod(axis=0))
        same(nb.cumulative_sum(x, axis=1), np.cumsum(a, axis=1))
    same(nb.sort(x, axis=1), np.sort(a, axis=1))
    same(nb.argsort(x, axis=1, stable=True), np.argsort(a, axis=1, kind="stable"))
    same(x[1:3, ::2], a[1:3, ::2])
    same(x[nb.tensor([2, 0])], a[[2, 0]])
    same(x[x > 2], a[a > 2])
    same(nb.where(x > 2, x, nb.zeros_like(x)), np.where(a > 2, a, np.zeros_like(a)))
    same(nb.concat([x, x], axis=0), np.concatenate([a, a]))
    with np.errstate(over="ignore"):
        same(x.T @ x, a.T @ a)


@pytest.mark.parametrize("name", INTS)
def test_casts_match_numpy(name):
    a = values(name, seed=6)
    x = nb.tensor(a)
    for to in INTS + ["float64", "bool"]:
        with np.errstate(over="ignore"):
            same(x.astype(to), a.astype(to))
    # Floats in range truncate toward zero.
    f = np.array([-3.7, -0.5, 0.0, 2.9, 100.2])
    f = f[(f >= np.iinfo(name).min) & (f <= np.iinfo(name).max)]
    same(nb.tensor(f).astype(name), f.astype(name))


def test_promotion_matches_numpy_for_every_integer_pair():
    for p in INTS + ["bool"]:
        for q in INTS + ["bool"]:
            got = (nb.zeros(1, dtype=p) + nb.zeros(1, dtype=q)).dtype
            assert got == np.result_type(p, q).name, (p, q, got)
            assert nb.result_type(getattr(nb, p if p != "bool" else "bool_"), q) == got


def test_python_numbers_are_weak_and_uint64_reaches_its_maximum():
    u8 = nb.tensor(np.array([250, 3], dtype=np.uint8))
    assert (u8 + 10).dtype == nb.uint8
    same(u8 + 10, np.array([4, 13], dtype=np.uint8))
    big = nb.tensor(2**64 - 1)
    assert big.dtype == nb.uint64 and big.item() == 2**64 - 1
    assert nb.tensor([2**63, 2**64 - 1]).dtype == nb.uint64
    same(nb.tensor(np.array([1], dtype=np.uint64)) + (2**64 - 2), np.array([2**64 - 1], dtype=np.uint64))
    assert "18446744073709551615" in repr(big)
    assert int(big) == operator.index(big) == 2**64 - 1
    with pytest.raises(OverflowError, match="int64 or uint64"):
        nb.tensor(2**64)
    with pytest.raises(TypeError, match="uint64's range"):
        nb.tensor([2**64, 1])


def test_array_api_inspection_knows_every_integer():
    info = nb.__array_namespace_info__()
    assert set(info.dtypes(kind="signed integer")) == {"int8", "int16", "int32", "int64"}
    assert set(info.dtypes(kind="unsigned integer")) == {"uint8", "uint16", "uint32", "uint64"}
    for name in INTS:
        i = nb.iinfo(getattr(nb, name))
        assert (i.bits, i.min, i.max) == (np.iinfo(name).bits, np.iinfo(name).min, np.iinfo(name).max)
    assert nb.isdtype(nb.uint16, "unsigned integer") and not nb.isdtype(nb.int16, "unsigned integer")
    assert nb.can_cast(nb.uint8, nb.int16) and not nb.can_cast(nb.uint16, nb.int16)


def test_torch_style_conversions():
    x = nb.tensor([1.7, -2.2])
    assert x.short().dtype == nb.int16 and x.char().dtype == nb.int8 and x.byte().dtype == nb.uint8
    same(x.char(), np.array([1, -2], dtype=np.int8))


def test_integer_tensors_carry_no_gradient():
    with pytest.raises(Exception, match="differentiated"):
        nb.tensor(np.array([1, 2], dtype=np.int16)).requires_grad_()


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("name", ["int8", "int16", "uint8", "uint16", "uint32", "uint64"])
def test_dlpack_with_torch(name):
    a = values(name)
    t = nb.tensor(a)
    theirs = torch.from_dlpack(t)
    assert str(theirs.dtype) == f"torch.{name}"
    np.testing.assert_array_equal(theirs.numpy(), a)
    same(nb.from_dlpack(torch.from_numpy(a.copy())), a)


@pytest.mark.parametrize("name", INTS)
def test_pickle_and_save_round_trip(name, tmp_path):
    import pickle

    a = values(name)
    t = nb.tensor(a)
    same(pickle.loads(pickle.dumps(t)), a)
    nb.save({"t": t}, tmp_path / "t.pt")
    same(nb.load(tmp_path / "t.pt")["t"], a)
