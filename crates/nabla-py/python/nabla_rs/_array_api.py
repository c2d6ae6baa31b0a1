"""``nabla_rs`` as an Array API namespace (the standard's 2025.12 revision): every function with the
standard's signature, over nabla's differentiable ops, so that code written against the standard
(scikit-learn's ``array_api_dispatch``, SciPy, einops, ...) runs on nabla tensors and gradients flow
through it. PyTorch's spellings stay accepted as extra keywords (``dim=``, ``keepdim=``).

The functions that are compositions (``cumulative_prod``, ``unique_*``, ``nonzero``, ``diff``,
``searchsorted``, ``roll``, ``tile``, ...) are built from nabla's ops, so they differentiate, vmap
and trace like any other composition."""

from __future__ import annotations

import builtins
import math
from typing import Any, NamedTuple, Optional, Tuple

from . import _nabla
from ._array_api_dtypes import _DTYPES, _INT_BITS, _UINT_BITS, result_type
from ._torch_methods import _RUST as _RUST_METHODS
from ._transforms import _as_tensor

Tensor = _nabla.Tensor
_int64 = _DTYPES["int64"]
_bool = _DTYPES["bool"]


def _widened_for_sum(x):
    """``x`` in the dtype the standard's sums and products accumulate in when no ``dtype`` is given:
    booleans and signed integers in int64, unsigned integers in uint64, floats as they are."""
    name = x.dtype.name
    if name == "bool" or name in _INT_BITS:
        return x.astype(_int64)
    if name in _UINT_BITS:
        return x.astype(_DTYPES["uint64"])
    return x

e = math.e
inf = math.inf
nan = math.nan
pi = math.pi
newaxis = None


def _axes(axis, ndim: int) -> Optional[Tuple[int, ...]]:
    """``axis`` as a tuple of non-negative axes (``None`` stays ``None``), checked against ``ndim``."""
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not -builtins.max(ndim, 1) <= a < builtins.max(ndim, 1):
            raise IndexError(f"axis {a} is out of range for an array of {ndim} dimensions")
        out.append(a % builtins.max(ndim, 1))
    if len(set(out)) != len(out):
        raise ValueError(f"axis {axis} repeats an axis")
    return tuple(out)


def _torch_keywords(name: str, axis, keepdims, kwargs):
    """Reads PyTorch's ``dim``/``keepdim`` in place of ``axis``/``keepdims``."""
    if "dim" in kwargs:
        axis = kwargs.pop("dim")
    if "keepdim" in kwargs:
        keepdims = kwargs.pop("keepdim")
    if kwargs:
        raise TypeError(f"{name}() got unexpected keyword arguments {', '.join(kwargs)}")
    return axis, keepdims


def _reduction(name: str, method, over_nothing=lambda x: x):
    """A reduction with the standard's signature over ``method(x, axes, keepdims)``; an empty
    tuple of axes reduces nothing (``over_nothing(x)``)."""

    def reduce(x, /, axis=None, keepdims=False, **kwargs):
        axis, keepdims = _torch_keywords(name, axis, keepdims, kwargs)
        x = _as_tensor(x)
        axes = _axes(axis, x.ndim)
        if axes == ():
            return over_nothing(x)
        return method(x, axes, keepdims)

    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = f"``{name}`` over ``axis`` (an int, a tuple, or ``None`` for all axes), as the Array API's."
    return reduce


def _summing(name: str, method):
    def reduce(x, /, axis=None, dtype=None, keepdims=False, **kwargs):
        axis, keepdims = _torch_keywords(name, axis, keepdims, kwargs)
        x = _as_tensor(x)
        if dtype is not None:
            x = x.astype(dtype)
        else:
            x = _widened_for_sum(x)
        axes = _axes(axis, x.ndim)
        if axes == ():
            return x if dtype is None else x.astype(dtype)
        return method(x, axes, keepdims)

    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = (
        f"``{name}`` over ``axis``; booleans and signed integers accumulate in int64, unsigned ones in uint64, unless ``dtype`` is given."
    )
    return reduce


sum = _summing("sum", lambda x, a, k: _nabla.sum(x, a, k))
prod = _summing("prod", lambda x, a, k: _nabla.prod(x, a, k))
max = _reduction("max", lambda x, a, k: _nabla.max(x, a, k))
min = _reduction("min", lambda x, a, k: _nabla.min(x, a, k))
mean = _reduction("mean", lambda x, a, k: x.mean(a, k))
all = _reduction("all", lambda x, a, k: x.all(a, k), lambda x: x != 0)
any = _reduction("any", lambda x, a, k: x.any(a, k), lambda x: x != 0)


def _moments(name: str, method: str):
    def moment(x, /, *, axis=None, correction=0.0, keepdims=False, **kwargs):
        if "unbiased" in kwargs:
            correction = 1.0 if kwargs.pop("unbiased") else 0.0
        correction = kwargs.pop("ddof", correction)
        axis, keepdims = _torch_keywords(name, axis, keepdims, kwargs)
        x = _as_tensor(x)
        axes = _axes(axis, x.ndim)
        if axes == ():
            spread = (x - x) / builtins.max(1.0 - correction, 0.0)
            return spread.astype(x.dtype)
        if float(correction).is_integer():
            return _RUST_METHODS[method](x, axes, keepdims, int(correction))
        # A fractional correction rescales the population moment: n / (n - correction).
        count = math.prod(x.shape[a] for a in (axes if axes is not None else range(x.ndim)))
        scale = count / (count - correction) if count != correction else math.inf
        population = _RUST_METHODS["var"](x, axes, keepdims, 0) * scale
        return population if method == "var" else _nabla.sqrt(population)

    moment.__name__ = moment.__qualname__ = name
    moment.__doc__ = f"``{name}`` over ``axis`` with ``correction`` (Bessel's: 1), as the Array API's."
    return moment


std = _moments("std", "std")
var = _moments("var", "var")


def _arg_reduction(x, axis, keepdims, method):
    x = _as_tensor(x)
    out = getattr(x, method)(axis, keepdims)
    if axis is None and keepdims:
        return out.reshape(*([1] * x.ndim))
    return out


def argmax(x, /, *, axis=None, keepdims=False):
    """Index of the first maximum (over the flattened array when ``axis`` is ``None``)."""
    return _arg_reduction(x, axis, keepdims, "argmax")


def argmin(x, /, *, axis=None, keepdims=False):
    """Index of the first minimum (over the flattened array when ``axis`` is ``None``)."""
    return _arg_reduction(x, axis, keepdims, "argmin")


def count_nonzero(x, /, *, axis=None, keepdims=False):
    """The number of non-zero elements over ``axis``, as int64."""
    x = _as_tensor(x)
    return sum(x != 0, axis=axis, keepdims=keepdims)


def _cumulative(name: str, x, axis, dtype, include_initial: bool, scan, identity):
    x = _as_tensor(x)
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{name}: axis is required for arrays of more than one dimension")
        axis = 0
    if x.ndim == 0:
        raise ValueError(f"{name}: needs an array of at least one dimension")
    axis = _axes(axis, x.ndim)[0]
    if dtype is not None:
        x = x.astype(dtype)
    else:
        x = _widened_for_sum(x)
    out = scan(x, axis) if x.shape[axis] else x
    if include_initial:
        shape = list(x.shape)
        shape[axis] = 1
        out = _nabla.concatenate([_nabla.full(tuple(shape), identity, dtype=x.dtype), out], axis)
    return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """Running sums along ``axis`` (with a leading 0 when ``include_initial``)."""
    return _cumulative("cumulative_sum", x, axis, dtype, include_initial, lambda t, a: t.cumsum(a), 0)


def _scan_product(x, axis: int):
    """Running products along ``axis`` by doubling (Hillis and Steele): ``ceil(log2 n)`` rounds of
    one shifted multiply each, every round differentiable."""
    n = x.shape[axis]
    shift = 1
    while shift < n:
        pad = [(0, 0)] * x.ndim
        pad[axis] = (shift, 0)
        index = [slice(None)] * x.ndim
        index[axis] = slice(0, n)
        x = x * x.pad(pad, 1.0)[tuple(index)]
        shift *= 2
    return x


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """Running products along ``axis`` (with a leading 1 when ``include_initial``)."""
    return _cumulative("cumulative_prod", x, axis, dtype, include_initial, _scan_product, 1)


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    """The ``n``-th forward difference along ``axis``, after joining ``prepend`` and ``append``."""
    x = _as_tensor(x)
    if n < 0:
        raise ValueError(f"diff: n must not be negative, got {n}")
    axis = _axes(axis, x.ndim)[0]
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = _nabla.concatenate([_as_tensor(p) for p in parts], axis)
    for _ in range(n):
        length = x.shape[axis]
        if length == 0:
            break
        hi = [slice(None)] * x.ndim
        lo = [slice(None)] * x.ndim
        hi[axis] = slice(1, length)
        lo[axis] = slice(0, length - 1)
        x = (x[tuple(hi)] != x[tuple(lo)]) if x.dtype == _bool else x[tuple(hi)] - x[tuple(lo)]
    return x


class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


def _lexicographic_order(flat):
    """The stable order of a 1-D array; complex numbers by real part, then imaginary part."""
    if not flat.dtype.is_complex:
        return flat.argsort(0)
    by_imag = _nabla.imag(flat).argsort(0)
    return by_imag[_nabla.real(flat)[by_imag].argsort(0)]


def _unique_parts(x):
    """Sorted distinct values of ``x``, where each run starts in the sorted order, the sort order
    and the run number of every sorted element. NaNs are each distinct, as the standard asks."""
    x = _as_tensor(x)
    flat = x.reshape(-1)
    order = _lexicographic_order(flat) if flat.size else _nabla.zeros(0, dtype=_int64)
    ordered = flat[order]
    if flat.size == 0:
        return ordered, _nabla.zeros(0, dtype=_bool), order, order
    starts = _nabla.concatenate([_nabla.ones(1, dtype=_bool), ordered[1:] != ordered[:-1]], 0)
    run = starts.astype(_int64).cumsum(0) - 1
    return ordered, starts, order, run


def unique_values(x, /):
    """The distinct values of ``x``, sorted, as a 1-D array."""
    ordered, starts, _, _ = _unique_parts(x)
    return ordered[starts]


def unique_counts(x, /):
    """The distinct values of ``x`` and how often each occurs."""
    ordered, starts, _, run = _unique_parts(x)
    values = ordered[starts]
    counts = _nabla.zeros(values.shape[0], dtype=_int64).index_add(0, run, _nabla.ones(run.shape[0], dtype=_int64))
    return UniqueCountsResult(values, counts)


def unique_inverse(x, /):
    """The distinct values of ``x`` and, for every element, the index of its value (``x``'s shape)."""
    x = _as_tensor(x)
    ordered, starts, order, run = _unique_parts(x)
    inverse = _nabla.zeros(order.shape[0], dtype=_int64).index_add(0, order, run)
    return UniqueInverseResult(ordered[starts], inverse.reshape(x.shape))


def unique_all(x, /):
    """The distinct values, the first index of each in the flattened ``x``, each element's value
    index (``x``'s shape) and the counts."""
    x = _as_tensor(x)
    ordered, starts, order, run = _unique_parts(x)
    values = ordered[starts]
    ones = _nabla.ones(run.shape[0], dtype=_int64)
    counts = _nabla.zeros(values.shape[0], dtype=_int64).index_add(0, run, ones)
    inverse = _nabla.zeros(order.shape[0], dtype=_int64).index_add(0, order, run)
    # The stable sort puts each value's first occurrence at the start of its run.
    first = order[starts]
    return UniqueAllResult(values, first, inverse.reshape(x.shape), counts)


def nonzero(x, /):
    """One int64 index array per axis, together the positions of the non-zero elements in row-major
    order."""
    x = _as_tensor(x)
    if x.ndim == 0:
        raise ValueError("nonzero: a zero-dimensional array has no positions; use x.reshape(1)")
    flat = _nabla.arange(x.size, dtype=_int64)[(x != 0).reshape(-1)]
    out = []
    for d in reversed(x.shape):
        out.append(flat % d if d else flat)
        flat = flat // d if d else flat
    return tuple(reversed(out))


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    """For each of ``x2``, the index in the sorted 1-D ``x1`` where it would go (before equal values
    with ``side="left"``, after them with ``"right"``); NaNs sort last, as in NumPy."""
    x1, x2 = _as_tensor(x1), _as_tensor(x2)
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be one-dimensional, got shape {tuple(x1.shape)}")
    if sorter is not None:
        x1 = x1[_as_tensor(sorter)]
    dtype = result_type(x1, x2)
    values = x2.astype(dtype).reshape(-1)
    m, n = values.shape[0], x1.shape[0]
    # One stable sort of both: with x2 first, each of its values lands before equal values of x1
    # (side="left"); with x1 first, after them. The x1 elements ahead of a value are its index.
    left = side == "left"
    joined = _nabla.concatenate([values, x1.astype(dtype)] if left else [x1.astype(dtype), values], 0)
    order = joined.argsort(0)
    from_x1 = (order >= m) if left else (order < n)
    ahead = from_x1.astype(_int64).cumsum(0) - from_x1.astype(_int64) if order.shape[0] else order
    which = ~from_x1
    positions = (order if left else order - n)[which]
    out = _nabla.zeros(m, dtype=_int64).index_add(0, positions, ahead[which])
    return out.reshape(x2.shape)


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    """Indices that sort ``x`` along ``axis`` (stable: equal values keep their order)."""
    x = _as_tensor(x)
    if x.ndim == 0:
        return _nabla.zeros((), dtype=_int64)
    return x.argsort(axis, descending)


def sort(x, /, *, axis=-1, descending=False, stable=True):
    """``x`` sorted along ``axis`` (NaNs last)."""
    x = _as_tensor(x)
    if x.ndim == 0:
        return x
    return _RUST_METHODS["sort"](x, axis, descending)


def where(condition, x1, x2, /):
    """``x1`` where ``condition`` holds, else ``x2`` (broadcast; either may be a Python scalar)."""
    from ._array_api_elementwise import _pair

    condition = _as_tensor(condition)
    return _nabla.where(condition, *_pair(x1, x2))


def isin(x1, x2, /, *, invert=False):
    """Whether each element of ``x1`` occurs in ``x2`` (by ``==``: NaN never does)."""
    from ._array_api_elementwise import _pair

    x1, x2 = _pair(x1, x2)
    values = _as_tensor(x2).reshape(-1)
    if values.shape[0] == 0:
        found = _nabla.zeros(*x1.shape, dtype=_bool)
    else:
        haystack = sort(values)
        n = haystack.shape[0]
        position = searchsorted(haystack, x1)
        clipped = _nabla.where(position >= n, position * 0 + (n - 1), position)
        found = haystack[clipped.reshape(-1)].reshape(*x1.shape) == x1
    return ~found if invert else found


__all__ = [n for n, f in list(globals().items()) if not n.startswith("_") and getattr(f, "__module__", None) == __name__]
