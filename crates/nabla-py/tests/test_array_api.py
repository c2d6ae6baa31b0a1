"""``nabla_rs`` as an Array API (2025.12) namespace: its functions against a reference namespace on
the same NumPy inputs (array_api_strict when installed, else NumPy 2's own namespace), the
``linalg``/``fft`` extensions, gradients through the compositions (finite differences, and PyTorch
when installed), errors, and scikit-learn's ``array_api_dispatch`` on nabla tensors."""

import os

# SciPy and scikit-learn read this when they are imported (inside the tests below).
os.environ["SCIPY_ARRAY_API"] = "1"

import math  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import nabla_rs as nb  # noqa: E402
from finite_differences import central_differences  # noqa: E402


class _NumpyReference:
    """NumPy 2's namespace, with the few spellings of the standard it lacks (descending sorts,
    ``fftfreq(dtype=)``), for when array_api_strict is not installed."""

    def __init__(self, module=np):
        self._module = module

    def __getattr__(self, name):
        if self._module is np and name in ("linalg", "fft"):
            return _NumpyReference(getattr(np, name))
        return getattr(self._module, name)

    def argsort(self, x, /, *, axis=-1, descending=False, stable=True):
        if not descending:
            return np.argsort(x, axis=axis, stable=True)
        # Stable descending order: sort the reversed array, reverse back, map the indices.
        return x.shape[axis] - 1 - np.flip(np.argsort(np.flip(x, axis), axis=axis, stable=True), axis)

    def sort(self, x, /, *, axis=-1, descending=False, stable=True):
        return np.take_along_axis(x, self.argsort(x, axis=axis, descending=descending), axis)

    def fftfreq(self, n, /, d=1.0, *, dtype=None):
        return np.fft.fftfreq(n, d).astype(dtype)

    def rfftfreq(self, n, /, d=1.0, *, dtype=None):
        return np.fft.rfftfreq(n, d).astype(dtype)


try:
    import array_api_strict as ref
except ImportError:
    ref = _NumpyReference()

INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
DTYPES = ("bool", *INTEGERS, "float32", "float64", "complex64", "complex128")

R = np.random.default_rng(20251201)
F = R.standard_normal((3, 4, 5))
F32 = R.standard_normal((4, 6)).astype(np.float32)
M = R.standard_normal((2, 4, 3))
SQ = R.standard_normal((2, 4, 4))
SPD = SQ @ np.swapaxes(SQ, -1, -2) + 4 * np.eye(4)
W = R.standard_normal((4, 5))
I32 = R.integers(-50, 50, (4, 6)).astype(np.int32)
I64 = R.integers(-(2**40), 2**40, (4, 6))
U8 = R.integers(0, 256, (4, 6)).astype(np.uint8)
TIES = R.integers(0, 4, (3, 9)).astype(np.float64)
SPECIAL = np.array([0.0, -0.0, 1.5, -2.5, np.inf, -np.inf, 1e300, -1e-300, 3.0])
BIG_A = np.array([1e200, 3e-200, np.inf, np.nan, 0.0, -3.0, -np.inf, 5.0])
BIG_B = np.array([1e200, 4e-200, np.nan, np.inf, 0.0, 4.0, 2.0, -12.0])
LSE_A = np.array([800.0, -800.0, 2.0, np.inf, -np.inf, -np.inf, 0.5, 1e-20])
LSE_B = np.array([799.0, -801.0, 2.0, 1.0, -np.inf, 3.0, -0.5, -1e-20])
DUPS = np.array([[3.0, np.nan, 1.0, 3.0], [-0.5, np.nan, 1.0, 7.0], [3.0, -0.5, 2.0, 1.0]])
CPLX = np.array([1 + 2j, 1 - 1j, -2 + 0j, 1 + 2j, 1 - 1j, 0.5j, -2 + 0j, 1 + 0j])
SORTED_SRC = np.array([4.0, 1.0, 3.0, 3.0, 9.0, 1.0, np.nan, 5.0])
NEEDLES = np.array([[0.0, 1.0, 3.0, 4.5], [9.0, 10.0, np.nan, 3.0]])
SHIFT_BY = {"int32": 35, "int64": 67, "uint8": 11}


def _bits(dtype):
    x = R.integers(-(2**20), 2**20, (3, 8)) if dtype != "uint8" else R.integers(0, 256, (3, 8))
    s = np.tile(np.arange(8) * (SHIFT_BY[dtype] // 7), (3, 1))
    s[:, -1] = SHIFT_BY[dtype]  # shifts by at least the width
    return x.astype(dtype), s.astype(dtype)


BITS = {d: _bits(d) for d in ("int32", "int64", "uint8")}


def compare(actual, expected, rtol=1e-12, atol=0.0):
    """Recursively compares nabla outputs (tensors, tuples, namedtuples) with reference outputs:
    shapes and dtypes exactly, floats to ``rtol``/``atol`` (NaNs equal), everything else exactly."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, tuple), f"expected a tuple, got {type(actual)}"
        assert len(actual) == len(expected)
        if hasattr(expected, "_fields"):
            assert actual._fields == expected._fields
        for a, e in zip(actual, expected):
            compare(a, e, rtol, atol)
        return
    assert isinstance(actual, nb.Tensor), f"expected a nabla_rs.Tensor, got {type(actual)}"
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.shape == e.shape, f"shape {a.shape} != {e.shape}"
    assert a.dtype == e.dtype, f"dtype {a.dtype} != {e.dtype}"
    if np.issubdtype(e.dtype, np.inexact):
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
        if np.issubdtype(e.dtype, np.floating) and atol == 0:  # zeros keep their sign
            zeros = (e == 0) & (a == 0)
            np.testing.assert_array_equal(np.signbit(a[zeros]), np.signbit(e[zeros]), "signs of zeros")
    else:
        np.testing.assert_array_equal(a, e)


def case(name, fn, *inputs, rtol=1e-12, atol=0.0, numpy=None):
    """One row of the table: ``fn(namespace, *arrays)`` on nabla and on the reference namespace, or
    (where the reference lacks the case or differs from the standard) ``numpy(*inputs)``."""
    return pytest.param(fn, inputs, rtol, atol, numpy, id=name)


def call(path, *args, **kwargs):
    """``namespace.<path>(*arrays, *args, **kwargs)``, a ``dtype`` name read as the namespace's."""

    def fn(ns, *arrays):
        target = ns
        for part in path.split("."):
            target = getattr(target, part)
        kw = {k: getattr(ns, v) if k == "dtype" else v for k, v in kwargs.items()}
        return target(*arrays, *args, **kw)

    return fn


def _elementwise_cases():
    yield case("acosh", call("acosh"), np.concatenate([1 + np.abs(F.ravel()), [1.0, 1e300, np.inf]]))
    yield case("asinh", call("asinh"), np.concatenate([F.ravel(), SPECIAL, [1e-10, -1e20]]))
    yield case("atanh", call("atanh"), np.concatenate([np.tanh(F.ravel()), [0.0, -0.0, 1e-12, 1.0, -1.0]]))
    yield case("hypot", call("hypot"), BIG_A, BIG_B)
    yield case("hypot_broadcast_f32", call("hypot"), F32, F32[:1] * 3, rtol=1e-6)
    yield case("logaddexp", call("logaddexp"), LSE_A, LSE_B)
    yield case("logaddexp_broadcast", call("logaddexp"), F, W)
    yield case("copysign", call("copysign"), SPECIAL, SPECIAL[::-1].copy())
    yield case("copysign_scalar", call("copysign", -0.0), SPECIAL)
    yield case("log2", call("log2"), np.concatenate([np.abs(F.ravel()), [0.0, 1.0, 1024.0, np.inf]]))
    yield case("log10", call("log10"), np.concatenate([np.abs(F.ravel()), [0.0, 1e-300, 1e5, np.inf]]))
    yield case("signbit", call("signbit"), SPECIAL)
    yield case("nextafter", call("nextafter"), SPECIAL, SPECIAL[::-1].copy())
    yield case("nextafter_f32", call("nextafter"), F32, -F32 * 2, rtol=0)
    divisors = np.where(I32 == 0, 3, I32 // 3 + (I32 // 3 == 0)).astype(np.int32)
    for name in ("floor_divide", "remainder"):
        yield case(f"{name}_int", call(name), I32 * 7, divisors)
        yield case(f"{name}_float", call(name), F * 10, W + 0.3, atol=1e-12)
    for d, (x, s) in BITS.items():
        for name in ("and", "or", "xor"):
            yield case(f"bitwise_{name}_{d}", call(f"bitwise_{name}"), x, x[::-1].copy())
        yield case(f"bitwise_invert_{d}", call("bitwise_invert"), x)
        yield case(f"bitwise_left_shift_{d}", call("bitwise_left_shift"), x, s)
        yield case(f"bitwise_right_shift_{d}", call("bitwise_right_shift"), x, s)
    yield case("clip_arrays", lambda ns, x, lo, hi: ns.clip(x, min=lo, max=hi), F, W * 0 - 0.5, np.abs(W))
    yield case("clip_scalars", call("clip", min=-0.25, max=0.75), np.append(F.ravel(), np.nan))
    yield case("clip_min_only_int", call("clip", min=-3), I32)


def _reduction_cases():
    yield case("sum_dtype_i32", call("sum", axis=1, dtype="int64"), I32)
    yield case("sum_default_i32", call("sum"), I32)
    yield case("sum_f32_as_f64", call("sum", axis=(0, 1), dtype="float64"), F32)
    yield case("sum_axis_empty_tuple", call("sum", axis=()), F)
    yield case("prod_dtype", call("prod", axis=0, dtype="float64", keepdims=True), F32)
    yield case("prod_i64", lambda ns, x: ns.prod(x % 5 - 2, axis=-1), I64)
    for name in ("max", "min", "mean"):
        yield case(f"{name}_axes_keepdims", call(name, axis=(0, 2), keepdims=True), F)
        yield case(f"{name}_neg_axis", call(name, axis=-1), F)
    yield case("max_int_empty_tuple", call("max", axis=()), I32)
    for name in ("std", "var"):
        for c in (0, 1, 0.5):
            yield case(f"{name}_correction_{c}", call(name, axis=(0, 2), correction=c), F)
        yield case(f"{name}_keepdims", call(name, axis=1, keepdims=True, correction=1), F)
        yield case(f"{name}_all", call(name, correction=0.5), F)
    for name in ("argmax", "argmin"):
        yield case(f"{name}_keepdims", call(name, axis=1, keepdims=True), TIES)
        yield case(f"{name}_none_keepdims", call(name, keepdims=True), F)
        yield case(f"{name}_flat", call(name), TIES)
    yield case("count_nonzero_axes", call("count_nonzero", axis=(0, 1)), TIES.reshape(3, 3, 3))
    yield case("count_nonzero_keepdims", call("count_nonzero", axis=1, keepdims=True), TIES)
    yield case("all_any", lambda ns, x: (ns.all(x, axis=1), ns.any(x, axis=0, keepdims=True)), TIES > 1)
    yield case("cumsum_initial", call("cumulative_sum", axis=1, include_initial=True), F)
    yield case("cumsum_int_dtype", call("cumulative_sum", axis=0, dtype="int64"), I32)
    yield case("cumsum_1d", call("cumulative_sum"), F[0, 0])
    yield case("cumprod_initial", call("cumulative_prod", axis=2, include_initial=True), F)
    yield case("cumprod_long", call("cumulative_prod"), 1 + 0.05 * np.sin(np.arange(37.0)))
    yield case("cumprod_int", call("cumulative_prod", axis=1, include_initial=True), I64 % 3 - 1)
    diff_joined = lambda ns, x, p, q: ns.diff(x, axis=1, prepend=p, append=q)  # noqa: E731
    yield case("diff_prepend_append", diff_joined, F, F[:, :1], F[:, :2])
    yield case("diff_n2", call("diff", n=2), F)
    yield case("diff_int_axis0", call("diff", axis=0, n=2), I32)


def _np_unique(x):
    values, index, inverse, counts = np.unique(x, True, True, True, equal_nan=False)
    return values, index, inverse.reshape(x.shape), counts


def _set_sort_search_cases():
    # The standard leaves the order of unique values open (NumPy 2.3 stopped sorting them); nabla's
    # are sorted (complex numbers lexicographically), with every NaN distinct, as np.unique gives.
    for tag, x in (("nan", DUPS), ("complex", CPLX), ("int", I32 % 5), ("bool", TIES > 1)):
        yield case(f"unique_values_{tag}", call("unique_values"), x, numpy=lambda a: _np_unique(a)[0])
        yield case(f"unique_counts_{tag}", call("unique_counts"), x, numpy=lambda a: _np_unique(a)[::3])
        yield case(f"unique_inverse_{tag}", call("unique_inverse"), x, numpy=lambda a: _np_unique(a)[::2])
        yield case(f"unique_all_{tag}", call("unique_all"), x, numpy=_np_unique)
    yield case("nonzero_2d", call("nonzero"), TIES)
    yield case("nonzero_3d_bool", call("nonzero"), F > 0.5)
    for side in ("left", "right"):
        yield case(f"searchsorted_{side}", call("searchsorted", side=side), np.sort(SORTED_SRC), NEEDLES)
        sorter = np.argsort(SORTED_SRC, stable=True)
        yield case(f"searchsorted_{side}_sorter", call("searchsorted", side=side, sorter=nb.asarray(sorter)),
                   SORTED_SRC, NEEDLES, numpy=lambda a, v, s=side: np.searchsorted(a, v, side=s, sorter=sorter))
    # The standard asks isin for integers only (array_api_strict refuses floats, and ignores invert).
    yield case("isin_int", call("isin"), I32, I32[0])
    yield case("isin_int_scalar", call("isin", 7), I32 % 9)
    hay = np.array([3.0, np.nan, 7.0, 2.0, -0.5])
    yield case("isin_float_nan", call("isin"), DUPS, hay, numpy=np.isin)
    yield case("isin_invert", call("isin", invert=True), I32, I32[0], numpy=lambda a, b: np.isin(a, b, invert=True))
    yield case("isin_empty", call("isin"), DUPS, hay[:0], numpy=np.isin)
    for desc in (False, True):
        yield case(f"sort_descending_{desc}", call("sort", axis=0, descending=desc), F)
        yield case(f"argsort_stable_descending_{desc}", call("argsort", descending=desc), TIES)
        yield case(f"argsort_axis0_descending_{desc}", call("argsort", axis=0, descending=desc), TIES)
    yield case("sort_nan_last", call("sort"), SORTED_SRC)
    yield case("where_scalars", lambda ns, c, x: (ns.where(c, x, 0.0), ns.where(c, 1.5, x)), F > 0, F)
    yield case("where_int_scalar", call("where", -7), I32 > 0, I32)
    yield case("where_broadcast", call("where"), F[0] > 0, F, W)


def _creation_cases():
    yield case("arange_float", call("arange", 0.5, 3.0, 0.25, dtype="float64"))
    yield case("arange_int_neg_step", call("arange", 10, -3, -3, dtype="int64"))
    yield case("arange_stop", call("arange", 7, dtype="int32"))
    yield case("arange_empty", call("arange", 3, 1, dtype="int64"))
    yield case("arange_float_neg_step", call("arange", 1.0, -1.0, -0.3, dtype="float64"))
    yield case("linspace_no_endpoint", call("linspace", -1.0, 2.0, 7, endpoint=False, dtype="float64"))
    yield case("linspace_endpoint", call("linspace", 0.1, 0.7, 13, dtype="float64"))
    yield case("linspace_complex", call("linspace", 1j, 2 + 3j, 5, dtype="complex128"))
    yield case("eye_k1", call("eye", 3, 5, k=1, dtype="float64"))
    yield case("eye_k-2_int", call("eye", 4, k=-2, dtype="int32"))
    yield case("eye_k_outside", call("eye", 2, 3, k=5, dtype="float64"))
    yield case("full", lambda ns: (ns.full((2, 3), 7, dtype=ns.int32), ns.full(4, -1.25, dtype=ns.float64)))
    yield case("full_bool_default", call("full", (2,), True))
    yield case("likes", lambda ns, x: (ns.zeros_like(x), ns.ones_like(x, dtype=ns.int64), ns.full_like(x, 2.5)), F)
    for ix in ("xy", "ij"):
        yield case(f"meshgrid_{ix}", call("meshgrid", indexing=ix), F[0, 0], W[0, :3], F[1, 1, :2])
    for k in (-1, 0, 2):
        yield case(f"tril_triu_k{k}", lambda ns, x, k=k: (ns.tril(x, k=k), ns.triu(x, k=k)), M)


def _manipulation_cases():
    yield case("concat_axis_none", lambda ns, a, b: ns.concat((a, b), axis=None), F, W)
    yield case("concat_neg_axis", lambda ns, a, b: ns.concat((a, b), axis=-1), F[0], W)
    yield case("stack", lambda ns, a, b: ns.stack((a, b), axis=1), F[0], W)
    yield case("unstack", call("unstack", axis=1), F)
    yield case("expand_dims_tuple", call("expand_dims", axis=(0, -1, 2)), W)
    yield case("squeeze_tuple", call("squeeze", axis=(0, 2)), F[:1, :, :1])
    yield case("moveaxis", call("moveaxis", (0, 1), (2, 0)), F)
    yield case("permute_dims", call("permute_dims", (2, 0, 1)), F)
    yield case("roll_tuple", call("roll", (2, -7), axis=(0, 2)), F)
    yield case("roll_axis_none", call("roll", -13), F)
    yield case("roll_same_axis_twice", call("roll", (1, 2), axis=(1, 1)), F)
    yield case("repeat_int", call("repeat", 2, axis=1), W)
    yield case("repeat_axis_none", call("repeat", 3), W[:2])
    yield case("repeat_counts_zeros", lambda ns, x, r: ns.repeat(x, r, axis=1), W, np.array([0, 2, 0, 1, 3]))
    yield case("repeat_all_zero", lambda ns, x, r: ns.repeat(x, r, axis=0), W, np.zeros(4, dtype=np.int64))
    yield case("tile", lambda ns, x: (ns.tile(x, (2, 1, 3)), ns.tile(x, (2,)), ns.tile(x, (0, 2))), W)
    yield case("flip", lambda ns, x: (ns.flip(x), ns.flip(x, axis=(0, 2)), ns.flip(x, axis=-2)), F)
    yield case("broadcast_arrays", call("broadcast_arrays"), F[:, :1], W)
    yield case("broadcast_to", call("broadcast_to", (2, 4, 5)), W[:1])
    yield case("reshape", call("reshape", (5, -1)), F)
    yield case("take_negative", call("take", axis=1), F, np.array([-1, 0, -4, 2, 3]))
    yield case("take_1d", call("take"), F[0, 0], np.array([4, -2, 0]))
    yield case("take_along_axis_negative", call("take_along_axis", axis=1), W, R.integers(-5, 5, (4, 7)))
    yield case("take_along_axis_broadcast", call("take_along_axis", axis=0), F, R.integers(-3, 3, (2, 1, 5)))
    yield case("astype", lambda ns, x: (ns.astype(x, ns.int32), ns.astype(x, ns.complex128)), F * 10)


def _linear_algebra_cases():
    yield case("matmul_batched", call("matmul"), M, SQ[:, :3, :])
    yield case("matmul_vectors", lambda ns, a, u, v: (ns.matmul(a, u), ns.matmul(v, a)), M, F[0, 0, :3], F[0, 0, :4])
    yield case("matmul_int", call("matmul"), I32, I32.T.copy())
    yield case("tensordot_int", call("tensordot", axes=1), F, R.standard_normal((5, 2)))
    yield case("tensordot_0", call("tensordot", axes=0), F[0], W[0])
    yield case("tensordot_pairs", call("tensordot", axes=((0, 2), (1, 0))), F, R.standard_normal((5, 3, 2)))
    yield case("vecdot", call("vecdot", axis=-2), F, W)
    yield case("vecdot_complex", call("vecdot"), F[0] + 1j * W, W - 2j * F[1])
    yield case("matrix_transpose", call("matrix_transpose"), F)
    yield case("linalg_matmul_vecdot", lambda ns, a, b: (ns.linalg.matmul(a, b), ns.linalg.vecdot(a, a)), M, SQ[:, :3])
    for o in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        for keep in (False, True):
            yield case(f"matrix_norm_{o}_{keep}", call("linalg.matrix_norm", ord=o, keepdims=keep), M, rtol=1e-10)
    for o in (2, 1, 0, 3, 0.5, -1, math.inf, -math.inf):
        for axis in (None, 1, (0, 2), -1):
            yield case(f"vector_norm_{o}_{axis}", call("linalg.vector_norm", ord=o, axis=axis), F, rtol=1e-10)
    yield case("vector_norm_keepdims", call("linalg.vector_norm", keepdims=True), F, rtol=1e-10)
    yield case("vector_norm_3_keepdims", call("linalg.vector_norm", axis=(1, 2), keepdims=True, ord=3), F, rtol=1e-10)
    deficient = np.concatenate([M, M[..., :1] + M[..., 1:2]], axis=-1)
    yield case("matrix_rank", call("linalg.matrix_rank"), deficient)
    yield case("matrix_rank_rtol", call("linalg.matrix_rank", rtol=0.5), SPD)
    yield case("pinv", call("linalg.pinv"), M, rtol=1e-9, atol=1e-12)
    yield case("pinv_deficient", call("linalg.pinv"), deficient, rtol=1e-8, atol=1e-10)
    yield case("pinv_huge_entries", call("linalg.pinv"), M * 1e150, rtol=1e-9)
    pinv_rtol = lambda ns, x, t: ns.linalg.pinv(x, rtol=t)  # noqa: E731
    yield case("pinv_rtol_array", pinv_rtol, SPD, np.array([0.0, 0.9]), rtol=1e-9, atol=1e-12)
    yield case("cholesky_upper", call("linalg.cholesky", upper=True), SPD, rtol=1e-10)
    yield case("cholesky", call("linalg.cholesky"), SPD, rtol=1e-10)
    yield case("cross_axis-2", call("linalg.cross", axis=-2), M[0, :3], W[:3, :3])
    cross0 = lambda a, b: np.cross(a, b, axis=0)  # noqa: E731  (the standard's axes are negative)
    yield case("cross_axis0", call("linalg.cross", axis=0), F[:, 0], W[:3, :], numpy=cross0)
    yield case("cross_broadcast", call("linalg.cross"), M, F[0, 0, :3])
    for off in (-2, 0, 1):
        yield case(f"diagonal_{off}", call("linalg.diagonal", offset=off), M)
        yield case(f"trace_{off}", call("linalg.trace", offset=off), M)
    yield case("trace_int_dtype", call("linalg.trace", dtype="int64"), I32[:, :4].reshape(1, 4, 4))
    yield case("outer", call("linalg.outer"), F[0, 0], W[1])
    yield case("det_inv", lambda ns, a: (ns.linalg.det(a), ns.linalg.inv(a)), SPD, rtol=1e-9)
    yield case("solve", call("linalg.solve"), SPD, M[..., :2], rtol=1e-9)
    yield case("eigvalsh_svdvals", lambda ns, a, m: (ns.linalg.eigvalsh(a), ns.linalg.svdvals(m)), SPD, M, rtol=1e-10)
    for n in (3, -2):
        yield case(f"matrix_power_{n}", call("linalg.matrix_power", n), SPD, rtol=1e-9)
    sig = R.standard_normal(9) + 1j * R.standard_normal(9)
    for norm in ("backward", "ortho", "forward"):
        for n in (None, 6, 11):
            yield case(f"hfft_{n}_{norm}", call("fft.hfft", n=n, norm=norm), sig, rtol=1e-10, atol=1e-12)
            yield case(f"ihfft_{n}_{norm}", call("fft.ihfft", n=n, norm=norm), W[0].repeat(3), rtol=1e-10, atol=1e-12)
    yield case("hfft_axis0", call("fft.hfft", axis=0), sig.reshape(3, 3), rtol=1e-10, atol=1e-12)
    yield case("fftfreq_f64", call("fft.fftfreq", 7, d=0.5, dtype="float64"))
    yield case("fftfreq_f32", call("fft.fftfreq", 8, dtype="float32"))
    yield case("rfftfreq_f64", call("fft.rfftfreq", 9, d=0.25, dtype="float64"))
    yield case("rfftfreq_f32", call("fft.rfftfreq", 8, dtype="float32"))


@pytest.mark.parametrize(
    "fn, inputs, rtol, atol, numpy",
    [
        *_elementwise_cases(),
        *_reduction_cases(),
        *_set_sort_search_cases(),
        *_creation_cases(),
        *_manipulation_cases(),
        *_linear_algebra_cases(),
    ],
)
def test_matches_reference(fn, inputs, rtol, atol, numpy):
    with np.errstate(all="ignore"):
        expected = fn(ref, *map(ref.asarray, inputs)) if numpy is None else numpy(*inputs)
    compare(fn(nb, *map(nb.asarray, inputs)), expected, rtol, atol)


def test_floor_divide_special_cases():
    # The standard's special cases (where NumPy follows Python instead: 1 // -inf is -1 there).
    a = nb.asarray(np.array([1.0, -1.0, 1.0, -1.0, np.inf, -np.inf, -0.0, 0.0]))
    b = nb.asarray(np.array([-np.inf, np.inf, np.inf, -np.inf, 2.0, 2.0, 3.0, -3.0]))
    got = np.asarray(nb.floor_divide(a, b))
    want = np.array([-0.0, -0.0, 0.0, 0.0, np.inf, -np.inf, -0.0, -0.0])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


# --- The namespace, its constants and its inspection object ---------------------------------------


def test_namespace_and_constants():
    x = nb.asarray(F)
    assert x.__array_namespace__() is nb
    assert x.__array_namespace__(api_version="2023.12") is nb
    with pytest.raises(ValueError, match="api_version"):
        x.__array_namespace__(api_version="2099.01")
    assert nb.__array_api_version__ == "2025.12"
    assert (nb.e, nb.pi, nb.inf) == (math.e, math.pi, math.inf) and math.isnan(nb.nan)
    assert nb.newaxis is None and x[nb.newaxis, :, nb.newaxis].shape == (1, 3, 1, 4, 5)
    assert x.device == "cpu" and x.to_device("cpu") is x and nb.zeros(2, device=x.device).device == "cpu"
    assert x.dtype == nb.float64 and (x.ndim, x.size, tuple(x.shape)) == (3, 60, (3, 4, 5))
    assert nb.bool is nb.bool_ and nb.asarray([True]).dtype == nb.bool
    assert x.mT.shape == (3, 5, 4)


def test_namespace_info():
    info = nb.__array_namespace_info__()
    caps = info.capabilities()
    assert caps["boolean indexing"] is True and caps["data-dependent shapes"] is True and "max dimensions" in caps
    assert info.default_device() in info.devices() == ("cpu",)
    defaults = info.default_dtypes()
    assert defaults == info.default_dtypes(device="cpu")
    assert defaults == {
        "real floating": nb.float32, "complex floating": nb.complex64, "integral": nb.int64, "indexing": nb.int64}
    # The defaults are the dtypes the namespace really gives.
    assert nb.asarray(1.0).dtype == nb.zeros(2).dtype == nb.linspace(0, 1, 3).dtype == defaults["real floating"]
    assert nb.asarray(1j).dtype == defaults["complex floating"]
    assert nb.asarray(1).dtype == nb.arange(3).dtype == defaults["integral"]
    assert nb.argmax(nb.asarray(F)).dtype == nb.nonzero(nb.asarray(F))[0].dtype == defaults["indexing"]
    everything = info.dtypes()
    assert list(everything) == list(DTYPES) and all(everything[n] == getattr(nb, n) for n in DTYPES)
    kinds = {"bool": ["bool"], "signed integer": list(INTEGERS[:4]), "unsigned integer": list(INTEGERS[4:]),
             "integral": list(INTEGERS), "real floating": ["float32", "float64"],
             "complex floating": ["complex64", "complex128"], "numeric": list(DTYPES[1:]),
             ("bool", "complex floating"): ["bool", "complex64", "complex128"]}
    for kind, names in kinds.items():
        assert list(info.dtypes(kind=kind)) == names, kind


# --- Data type functions --------------------------------------------------------------------------


def test_finfo_iinfo():
    for name in ("float32", "float64", "complex64", "complex128"):
        got = nb.finfo(getattr(nb, name))
        real = {"complex64": "float32", "complex128": "float64"}.get(name, name)
        want = np.finfo(real)
        assert (got.bits, got.eps, got.max, got.min, got.smallest_normal) == (
            want.bits, float(want.eps), float(want.max), float(want.min), float(want.smallest_normal))
        assert got.dtype == getattr(nb, real)
    assert nb.finfo(nb.asarray(F32)).bits == 32 and nb.finfo(nb.asarray(CPLX)).dtype == nb.float64
    for name in INTEGERS:
        got, want = nb.iinfo(getattr(nb, name)), np.iinfo(name)
        assert (got.bits, got.max, got.min, got.dtype) == (want.bits, want.max, want.min, getattr(nb, name))
    assert nb.iinfo(nb.asarray(U8)).max == 255
    with pytest.raises(TypeError):
        nb.finfo(nb.int32)
    with pytest.raises(TypeError):
        nb.iinfo(nb.float64)


def test_isdtype():
    kinds = ("bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating", "numeric")
    for name in DTYPES:
        d = getattr(nb, name)
        for kind in kinds:
            assert nb.isdtype(d, kind) == np.isdtype(np.dtype(name), kind), (name, kind)
        assert nb.isdtype(d, d) and not nb.isdtype(d, nb.int64 if name != "int64" else nb.int32)
        assert nb.isdtype(d, ("bool", "numeric"))
        assert nb.isdtype(d, (nb.float32, "integral")) == (name == "float32" or name in INTEGERS)
        assert nb.isdtype(d, ()) is False


KIND = {n: "bool" if n == "bool" else "int" if n in INTEGERS else "inexact" for n in DTYPES}


def _expected_promotion(a, b):
    """The standard's lattice within a kind (NumPy agrees there, and gives float64 for uint64 with a
    signed integer, which the standard leaves open, as nabla does); across kinds, which the standard
    leaves open, nabla's rule: the higher kind (bool < integers < floats < complex)."""
    if KIND[a] == KIND[b]:
        return np.result_type(a, b).name
    order = ("bool", "int", "inexact")
    return a if order.index(KIND[a]) > order.index(KIND[b]) else b


def test_result_type_and_can_cast():
    for a in DTYPES:
        for b in DTYPES:
            want = _expected_promotion(a, b)
            assert nb.result_type(getattr(nb, a), getattr(nb, b)).name == want, (a, b)
            x, y = nb.asarray(np.zeros(2, a)), nb.asarray(np.zeros(3, b)).reshape(3, 1)
            assert nb.result_type(x, y).name == want
            # result_type is what the ops do.
            assert (x + y).dtype.name == want and nb.where(x == 0, x, y).dtype.name == want, (a, b)
            # A cast is allowed exactly where promotion lands on the target.
            assert nb.can_cast(getattr(nb, a), getattr(nb, b)) == (want == b), (a, b)
    assert nb.can_cast(nb.asarray(I32), nb.int64) and not nb.can_cast(nb.asarray(F), nb.float32)
    assert nb.result_type(nb.int32, nb.uint8, nb.int64) == nb.int64
    assert nb.result_type(nb.uint8, nb.float32, nb.complex64, nb.float64) == nb.complex128
    # Python scalars take the array's dtype within a kind and move it up a kind where the standard says.
    scalars = {
        ("int32", 7): "int32", ("uint8", 3): "uint8", ("float32", 2): "float32", ("float32", 2.5): "float32",
        ("float64", 1): "float64", ("complex64", 1.5): "complex64", ("float32", 1j): "complex64",
        ("float64", 1j): "complex128", ("bool", True): "bool", ("int64", 2.5): "float32",
    }
    for (name, s), want in scalars.items():
        assert nb.result_type(nb.asarray(np.zeros(2, name)), s).name == want, (name, s)
        assert nb.result_type(s, getattr(nb, name)).name == want, (name, s)
    assert [nb.result_type(s).name for s in (True, 1, 1.0, 1j)] == ["bool", "int64", "float32", "complex64"]
    assert (nb.asarray(I32) + 1).dtype == nb.int32 and (nb.asarray(F32) * 2.0).dtype == nb.float32


def test_result_type_matches_array_api_strict():
    xp = pytest.importorskip("array_api_strict")
    for a in DTYPES:
        for b in DTYPES:
            try:
                want = xp.result_type(getattr(xp, a), getattr(xp, b))
            except TypeError:
                # The standard leaves mixed kinds undefined, and uint64 with a signed integer.
                assert KIND[a] != KIND[b] or {a, b} & {"uint64"} and (a + b).count("uint") == 1, (a, b)
                continue
            assert nb.result_type(getattr(nb, a), getattr(nb, b)).name == str(want).split(".")[-1], (a, b)
            assert nb.can_cast(getattr(nb, a), getattr(nb, b)) == xp.can_cast(getattr(xp, a), getattr(xp, b)), (a, b)
        for s in (True, 3, 2.5, 1j):
            try:
                want = xp.result_type(xp.asarray(np.zeros(1, a)), s)
            except TypeError:
                continue
            assert nb.result_type(nb.asarray(np.zeros(1, a)), s).name == str(want).split(".")[-1], (a, s)


# --- Named results: the standard's field names, and values that hold together ----------------------


def close(actual, expected, tol=1e-10):
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=tol, atol=tol)


def named(result, name, fields):
    assert type(result).__name__ == name and result._fields == fields
    return [np.asarray(t) for t in result]


def test_linalg_results_are_named_tuples():
    w, v = named(nb.linalg.eigh(nb.asarray(SPD)), "EighResult", ("eigenvalues", "eigenvectors"))
    close(w, np.linalg.eigvalsh(SPD))
    close(v * w[:, None, :] @ np.swapaxes(v, -1, -2), SPD)
    lam, vec = named(nb.linalg.eig(nb.asarray(SQ)), "EigResult", ("eigenvalues", "eigenvectors"))
    assert lam.dtype == vec.dtype == np.complex128
    close(SQ @ vec, vec * lam[:, None, :])
    close(np.sort_complex(lam), np.sort_complex(np.linalg.eigvals(SQ)))
    for mode, q_shape in (("reduced", (2, 4, 3)), ("complete", (2, 4, 4))):
        q, r = named(nb.linalg.qr(nb.asarray(M), mode=mode), "QRResult", ("Q", "R"))
        assert q.shape == q_shape and np.allclose(np.tril(r, -1), 0)
        close(q @ r, M)
    sign, logabsdet = named(nb.linalg.slogdet(nb.asarray(SQ)), "SlogdetResult", ("sign", "logabsdet"))
    close(sign, np.linalg.slogdet(SQ)[0])
    close(logabsdet, np.linalg.slogdet(SQ)[1])
    for full, u_shape in ((True, (2, 4, 4)), (False, (2, 4, 3))):
        u, s, vh = named(nb.linalg.svd(nb.asarray(M), full_matrices=full), "SVDResult", ("U", "S", "Vh"))
        assert (u.shape, s.shape, vh.shape) == (u_shape, (2, 3), (2, 3, 3))
        close((u[..., :3] * s[:, None, :]) @ vh, M)
        close(s, np.linalg.svd(M, compute_uv=False))


def test_unique_results_are_named_tuples():
    x = nb.asarray(DUPS)
    named(nb.unique_counts(x), "UniqueCountsResult", ("values", "counts"))
    named(nb.unique_inverse(x), "UniqueInverseResult", ("values", "inverse_indices"))
    values, indices, inverse, counts = named(
        nb.unique_all(x), "UniqueAllResult", ("values", "indices", "inverse_indices", "counts"))
    np.testing.assert_array_equal(DUPS.ravel()[indices], values)
    np.testing.assert_array_equal(values[inverse], DUPS)
    assert counts.sum() == DUPS.size and np.isnan(values).sum() == 2


def test_pinv_scale_and_tolerance_per_matrix():
    # pinv of a huge matrix: the SVD must see entries near 1, and pinv(c A) = pinv(A) / c.
    huge = nb.linalg.pinv(nb.asarray(M * 1e150))
    close(np.asarray(huge) * 1e150, np.linalg.pinv(M), tol=1e-9)
    assert np.isfinite(np.asarray(nb.linalg.pinv(nb.asarray(M * 1e-150)))).all()
    # A tolerance per matrix: the second matrix keeps only its largest singular value.
    p = np.asarray(nb.linalg.pinv(nb.asarray(SPD), rtol=nb.asarray(np.array([0.0, 0.99]))))
    u, s, vh = np.linalg.svd(SPD[1])
    close(p[0], np.linalg.inv(SPD[0]), tol=1e-9)
    close(p[1], np.outer(vh[0], u[:, 0]) / s[0], tol=1e-9)


# --- Gradients through the compositions -----------------------------------------------------------

GX = R.standard_normal((4, 5))
GY = R.standard_normal((4, 5))
GW = R.standard_normal((4, 5))
GW_TILE = R.standard_normal((8, 5))
GW5 = R.standard_normal((5, 5))
GW6 = R.standard_normal((4, 6))
GIDX = np.array([[0, -1, 2, 2, -5, 1], [4, 3, -2, 0, 0, 1], [1, 1, 1, -1, -3, 2], [-4, 0, 4, 3, 2, 2]])
GI = nb.asarray(GIDX)
N = {k: nb.asarray(v) for k, v in {"y": GY, "w": GW, "wt": GW_TILE, "w5": GW5, "w6": GW6}.items()}

# name: (nabla function, NumPy function, PyTorch function (t: torch, x)), each to a scalar.
GRADS = {
    "cumulative_prod": (lambda x: nb.sum(nb.cumulative_prod(x, axis=1)),
                        lambda x: np.sum(np.cumprod(x, axis=1)),
                        lambda t, x: t.cumprod(x, 1).sum()),
    "cumulative_prod_initial": (lambda x: nb.sum(nb.cumulative_prod(x, axis=0, include_initial=True) * N["w5"]),
                                lambda x: np.sum(np.cumulative_prod(x, axis=0, include_initial=True) * GW5),
                                None),
    "hypot": (lambda x: nb.sum(nb.hypot(x, N["y"]) * N["w"]),
              lambda x: np.sum(np.hypot(x, GY) * GW),
              lambda t, x: (t.hypot(x, t.from_numpy(GY)) * t.from_numpy(GW)).sum()),
    "logaddexp": (lambda x: nb.sum(nb.logaddexp(x * 30, N["y"] * 30) * N["w"]),
                  lambda x: np.sum(np.logaddexp(x * 30, GY * 30) * GW),
                  lambda t, x: (t.logaddexp(x * 30, t.from_numpy(GY) * 30) * t.from_numpy(GW)).sum()),
    "asinh": (lambda x: nb.sum(nb.asinh(x * 3) * N["w"]),
              lambda x: np.sum(np.arcsinh(x * 3) * GW),
              lambda t, x: (t.asinh(x * 3) * t.from_numpy(GW)).sum()),
    "atanh_acosh": (lambda x: nb.sum(nb.atanh(nb.tanh(x)) * N["w"] + nb.acosh(1.5 + x * x)),
                    lambda x: np.sum(np.arctanh(np.tanh(x)) * GW + np.arccosh(1.5 + x * x)),
                    lambda t, x: (t.atanh(t.tanh(x)) * t.from_numpy(GW) + t.acosh(1.5 + x * x)).sum()),
    "vector_norm": (lambda x: nb.linalg.vector_norm(x),
                    lambda x: np.linalg.norm(x),
                    lambda t, x: t.linalg.vector_norm(x)),
    "vector_norm_ord3_axis": (lambda x: nb.sum(nb.linalg.vector_norm(x, axis=1, ord=3) * N["w"][:, 0]),
                              lambda x: np.sum(np.linalg.vector_norm(x, axis=1, ord=3) * GW[:, 0]),
                              lambda t, x: (t.linalg.vector_norm(x, ord=3, dim=1) * t.from_numpy(GW[:, 0])).sum()),
    "roll": (lambda x: nb.sum(nb.roll(x, (1, -2), axis=(0, 1)) * N["w"]),
             lambda x: np.sum(np.roll(x, (1, -2), axis=(0, 1)) * GW),
             lambda t, x: (t.roll(x, (1, -2), (0, 1)) * t.from_numpy(GW)).sum()),
    "tile": (lambda x: nb.sum(nb.tile(x, (2, 1)) * N["wt"]),
             lambda x: np.sum(np.tile(x, (2, 1)) * GW_TILE),
             lambda t, x: (t.tile(x, (2, 1)) * t.from_numpy(GW_TILE)).sum()),
    "take_along_axis": (lambda x: nb.sum(nb.take_along_axis(x, GI, axis=1) * N["w6"]),
                        lambda x: np.sum(np.take_along_axis(x, GIDX, axis=1) * GW6),
                        lambda t, x: (t.take_along_dim(x, t.from_numpy(GIDX % 5), 1) * t.from_numpy(GW6)).sum()),
    "std_correction": (lambda x: nb.sum(nb.std(x, axis=0, correction=0.5) * N["w"][0]),
                       lambda x: np.sum(np.std(x, axis=0, correction=0.5) * GW[0]),
                       lambda t, x: (t.std(x, dim=0, correction=0.5) * t.from_numpy(GW[0])).sum()),
    "matrix_norm_nuc": (lambda x: nb.linalg.matrix_norm(x, ord="nuc"),
                        lambda x: np.linalg.matrix_norm(x, ord="nuc"),
                        lambda t, x: t.linalg.matrix_norm(x, ord="nuc")),
    "pinv": (lambda x: nb.sum(nb.linalg.pinv(x) * N["w"].mT),
             lambda x: np.sum(np.linalg.pinv(x) * GW.T),
             lambda t, x: (t.linalg.pinv(x) * t.from_numpy(GW.T)).sum()),
}


@pytest.mark.parametrize("name", list(GRADS))
def test_gradient_matches_finite_differences(name):
    f_nb, f_np, _ = GRADS[name]
    g = nb.grad(f_nb)(nb.asarray(GX))
    assert isinstance(g, nb.Tensor) and g.dtype == nb.float64 and tuple(g.shape) == GX.shape
    close(float(f_nb(nb.asarray(GX))), f_np(GX), tol=1e-12)
    np.testing.assert_allclose(np.asarray(g), central_differences(f_np, GX), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", [n for n, (_, _, f) in GRADS.items() if f is not None])
def test_gradient_matches_torch(name):
    torch = pytest.importorskip("torch")
    f_nb, _, f_torch = GRADS[name]
    x = torch.from_numpy(GX.copy()).requires_grad_(True)
    (want,) = torch.autograd.grad(f_torch(torch, x), x)
    np.testing.assert_allclose(np.asarray(nb.grad(f_nb)(nb.asarray(GX))), want.numpy(), rtol=1e-10, atol=1e-12)


# --- Errors ---------------------------------------------------------------------------------------

ERRORS = {
    "squeeze_non_1": (lambda: nb.squeeze(nb.asarray(F[:1]), axis=(0, 1)), ValueError, "axis 1 has size 4"),
    "vecdot_mismatch": (lambda: nb.vecdot(nb.asarray(F), nb.asarray(W[:, :4])), ValueError, "vecdot"),
    "searchsorted_2d": (lambda: nb.searchsorted(nb.asarray(W), nb.asarray(W[0])), ValueError, "one-dimensional"),
    "searchsorted_side": (lambda: nb.searchsorted(nb.asarray(W[0]), 1.0, side="middle"), ValueError, "side"),
    "isdtype_kind": (lambda: nb.isdtype(nb.float32, "floating"), ValueError, "unknown kind"),
    "isdtype_not_dtype": (lambda: nb.isdtype("float32", "numeric"), TypeError, "dtype"),
    "asarray_copy_false": (lambda: nb.asarray([1.0, 2.0], copy=False), ValueError, "copy"),
    "astype_copy_false": (lambda: nb.asarray(nb.asarray(F), dtype=nb.float32, copy=False), ValueError, "copy"),
    "device_asarray": (lambda: nb.asarray([1.0], device="cuda:0"), ValueError, "unknown device"),
    "device_zeros": (lambda: nb.zeros((2, 2), device="gpu"), ValueError, "unknown device"),
    "device_fftfreq": (lambda: nb.fft.fftfreq(4, device="meta"), ValueError, "unknown device"),
    "device_info": (lambda: nb.__array_namespace_info__().dtypes(device="gpu"), ValueError, "unknown device"),
    "to_device_stream": (lambda: nb.asarray(F).to_device("cpu", stream=1), ValueError, "stream"),
    "repeated_axis": (lambda: nb.sum(nb.asarray(F), axis=(0, -3)), ValueError, "repeats"),
    "axis_range": (lambda: nb.max(nb.asarray(F), axis=3), IndexError, "out of range"),
    "cumsum_needs_axis": (lambda: nb.cumulative_sum(nb.asarray(F)), ValueError, "axis is required"),
    "nonzero_0d": (lambda: nb.nonzero(nb.asarray(1.0)), ValueError, "zero-dimensional"),
    "diff_negative_n": (lambda: nb.diff(nb.asarray(W), n=-1), ValueError, "n must not be negative"),
    "roll_lengths": (lambda: nb.roll(nb.asarray(F), (1, 2), axis=0), ValueError, "same length"),
    "repeat_counts": (lambda: nb.repeat(nb.asarray(W), nb.asarray([1, 2]), axis=0), ValueError, "counts"),
    "take_needs_axis": (lambda: nb.take(nb.asarray(W), nb.asarray([0])), ValueError, "axis is required"),
    "broadcast_shapes": (lambda: nb.broadcast_shapes((2, 3), (4, 3)), ValueError, "do not broadcast"),
    "meshgrid_indexing": (lambda: nb.meshgrid(nb.asarray(W[0]), indexing="yx"), ValueError, "indexing"),
    "cross_size": (lambda: nb.linalg.cross(nb.asarray(W), nb.asarray(W)), ValueError, "not 3"),
    "matrix_norm_ord": (lambda: nb.linalg.matrix_norm(nb.asarray(W), ord=3), ValueError, "unknown ord"),
    "unexpected_keyword": (lambda: nb.max(nb.asarray(F), axes=0), TypeError, "unexpected keyword"),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_bad_arguments_raise_clear_errors(name):
    fn, error, message = ERRORS[name]
    with pytest.raises(error, match=message):
        fn()


def test_torch_spellings_and_copies():
    x = nb.asarray(F)
    close(nb.sum(x, dim=1, keepdim=True), F.sum(axis=1, keepdims=True), tol=1e-12)
    close(nb.var(x, dim=(0, 2), unbiased=True), F.var(axis=(0, 2), ddof=1), tol=1e-12)
    close(nb.std(x, axis=1, ddof=0), F.std(axis=1), tol=1e-12)
    assert nb.asarray(x) is x and nb.asarray(x, copy=False) is x
    assert nb.asarray(x, copy=True) is not x and nb.astype(x, nb.float64, copy=False) is x
    assert nb.astype(x, nb.float64) is not x
    np.testing.assert_array_equal(np.asarray(nb.asarray(x, copy=True)), F)


# --- scikit-learn's array_api_dispatch on nabla tensors --------------------------------------------


def test_sklearn_array_api_dispatch():
    sklearn = pytest.importorskip("sklearn")
    from sklearn.decomposition import PCA
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    rng = np.random.default_rng(7)
    X = rng.standard_normal((90, 6)) + np.repeat(np.eye(3, 6) * 2.0, 30, axis=0)
    y = np.repeat(np.arange(3), 30)
    with sklearn.config_context(array_api_dispatch=True):
        lda = LinearDiscriminantAnalysis().fit(nb.asarray(X), nb.asarray(y))
        predicted = lda.predict(nb.asarray(X))
        lda_z = lda.transform(nb.asarray(X))
        pca = PCA(n_components=3, svd_solver="full").fit(nb.asarray(X))
        pca_z = pca.transform(nb.asarray(X))
    lda_np = LinearDiscriminantAnalysis().fit(X, y)
    pca_np = PCA(n_components=3, svd_solver="full").fit(X)
    for fitted in (lda.coef_, lda.intercept_, lda.means_, lda.classes_, predicted, lda_z):
        assert isinstance(fitted, nb.Tensor), type(fitted)
    for fitted in (pca.components_, pca.explained_variance_, pca.explained_variance_ratio_, pca.mean_, pca_z):
        assert isinstance(fitted, nb.Tensor), type(fitted)
    np.testing.assert_array_equal(np.asarray(predicted), lda_np.predict(X))
    close(lda.coef_, lda_np.coef_)
    close(lda.intercept_, lda_np.intercept_)
    close(np.abs(np.asarray(lda_z)), np.abs(lda_np.transform(X)))
    close(pca.explained_variance_, pca_np.explained_variance_)
    close(pca.mean_, pca_np.mean_)
    # Each component (and its column of scores) is defined up to sign.
    signs = np.sign(np.sum(np.asarray(pca.components_) * pca_np.components_, axis=1))
    assert np.all(signs != 0)
    close(np.asarray(pca.components_) * signs[:, None], pca_np.components_)
    close(np.asarray(pca_z) * signs, pca_np.transform(X))


def test_dtype_is_never_equal_to_none():
    # NumPy reads None as float64; a dtype compared with None (a missing entry of a table) is not.
    assert nb.float64 != None  # noqa: E711
    assert not (nb.float64 == None)  # noqa: E711
    assert nb.can_cast(nb.bool, nb.bool) and not nb.can_cast(nb.float64, nb.int64)


def test_empty_mask_axis_selects_nothing_as_numpy():
    for shape, mask_shape in [((0, 1), (0, 0)), ((2, 3), (2, 0))]:
        x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
        mask = np.zeros(mask_shape, dtype=bool)
        assert nb.asarray(x)[nb.asarray(mask)].shape == x[mask].shape
    with pytest.raises(IndexError, match="did not match"):
        nb.zeros((0, 1))[nb.zeros((1, 0), dtype=nb.bool)]
