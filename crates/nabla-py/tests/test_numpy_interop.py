"""Zero-copy exchange with NumPy and DLPack: pointer identity, lifetimes, read-only views."""

import gc
import sys

import numpy as np
import pytest

import nabla_rs as nb


def address(a):
    return a.__array_interface__["data"][0]


def test_from_numpy_shares_memory():
    a = np.arange(12.0).reshape(3, 4)
    t = nb.from_numpy(a)
    assert address(t.numpy()) == address(a)
    a[0, 0] = 100.0  # shared, as torch.from_numpy
    assert t[0, 0].item() == 100.0
    copied = nb.tensor(a)  # a writable array is copied, as torch.tensor
    assert address(copied.numpy()) != address(a)
    a[0, 0] = 5.0
    assert copied[0, 0].item() == 100.0
    a.flags.writeable = False  # a read-only array is shared
    assert address(nb.tensor(a).numpy()) == address(a)


def test_strided_arrays_are_views_too():
    a = np.arange(24.0).reshape(4, 6)
    view = a[::2, 1::3]
    t = nb.from_numpy(view)
    np.testing.assert_array_equal(t.numpy(), view)
    assert address(t.numpy()) == address(view)
    rev = a[::-1]
    np.testing.assert_array_equal(nb.from_numpy(rev).numpy(), rev)
    assert address(nb.from_numpy(rev).numpy()) == address(rev)


def test_numpy_of_a_tensor_is_a_read_only_view():
    t = nb.arange(6).reshape(2, 3)
    a = t.numpy()
    assert address(a) == address(t.numpy())
    assert not a.flags.writeable
    with pytest.raises(ValueError):
        a[0, 0] = 1
    tt = t.T
    assert address(tt.numpy()) == address(a)  # a transposed view shares the buffer
    np.testing.assert_array_equal(tt.numpy(), a.T)
    b = np.array(t)  # np.array copies and is writable
    b[0, 0] = 5
    assert t[0, 0].item() == 0


def test_a_view_outlives_its_base():
    a = np.arange(1000.0)
    t = nb.from_numpy(a)
    ref = sys.getrefcount(a)
    del a
    gc.collect()
    assert t.sum().item() == sum(range(1000))
    t2 = nb.arange(5, dtype=nb.float64) * 2
    view = t2.numpy()
    del t2
    gc.collect()
    np.testing.assert_array_equal(view, [0, 2, 4, 6, 8])
    assert ref >= 2


def test_the_tensor_releases_the_array():
    a = np.arange(10.0)
    before = sys.getrefcount(a)
    t = nb.from_numpy(a)
    assert sys.getrefcount(a) == before + 1
    del t
    gc.collect()
    assert sys.getrefcount(a) == before


def test_byte_swapped_and_bool_arrays_are_copied_correctly():
    a = np.arange(4, dtype=">f8")
    np.testing.assert_array_equal(nb.from_numpy(a).numpy(), [0.0, 1.0, 2.0, 3.0])
    m = np.array([0, 2, 0, 1], dtype=np.uint8).view(np.bool_)
    assert nb.from_numpy(m).tolist() == [False, True, False, True]


def test_array_protocol_and_dtype_argument():
    t = nb.tensor([1.0, 2.0])
    assert np.asarray(t).dtype == np.float32
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert (np.add(t, 1) == [2.0, 3.0]).all()


def test_dlpack_round_trips_without_copies():
    a = np.arange(6.0).reshape(2, 3)
    t = nb.from_dlpack(a)
    np.testing.assert_array_equal(t.numpy(), a)
    assert address(t.numpy()) == address(a)
    back = np.from_dlpack(t)
    assert address(back) == address(a)
    assert t.__dlpack_device__() == (1, 0)
    s = nb.tensor(np.arange(12).reshape(3, 4)).T
    np.testing.assert_array_equal(np.from_dlpack(s), np.arange(12).reshape(3, 4).T)
    legacy = t.__dlpack__()
    assert nb.from_dlpack(legacy).tolist() == a.tolist()
    with pytest.raises(TypeError):
        nb.from_dlpack(legacy)  # a capsule is consumed once


def test_dlpack_with_jax():
    jax = pytest.importorskip("jax")
    x = jax.numpy.arange(6.0).reshape(2, 3)
    t = nb.from_dlpack(x)
    np.testing.assert_array_equal(t.numpy(), np.asarray(x))
    y = jax.numpy.from_dlpack(nb.tensor([1.0, 2.0]))
    np.testing.assert_array_equal(np.asarray(y), [1.0, 2.0])


def test_dlpack_bools_are_normalised_and_legacy_capsules_copy():
    weird = np.array([0, 2, 1, 0], dtype=np.uint8).view(np.bool_)
    assert nb.from_dlpack(weird).tolist() == [False, True, True, False]
    t = nb.tensor([1.0, 2.0])
    legacy = nb.from_dlpack(t.__dlpack__())
    assert address(legacy.numpy()) != address(t.numpy())
    versioned = nb.from_dlpack(t)
    assert address(versioned.numpy()) == address(t.numpy())
