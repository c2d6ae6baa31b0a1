"""The Array API's creation, manipulation, indexing and linear-algebra functions under the standard's
names and signatures, over nabla's ops (every one differentiable where its values are)."""

from __future__ import annotations

import builtins
from typing import Tuple

from . import _nabla
from ._array_api import _axes
from ._array_api_dtypes import _DTYPES, _check_device, default_complex, default_float, result_type
from ._transforms import _as_tensor

_int64 = _DTYPES["int64"]


def _shape(shape) -> Tuple[int, ...]:
    return (shape,) if isinstance(shape, int) else tuple(shape)


def asarray(obj, /, *, dtype=None, device=None, copy=None, requires_grad=False):
    """An array from ``obj`` (a tensor, a NumPy array, a buffer, nested sequences or a scalar).
    A tensor of the right dtype comes back as itself unless ``copy=True``; ``copy=False`` refuses
    to copy."""
    _check_device(device)
    if isinstance(obj, _nabla.Tensor):
        if dtype is None or obj.dtype == dtype:
            return obj.astype(obj.dtype) if copy else obj
        if copy is False:
            raise ValueError(f"asarray: turning {obj.dtype} into {dtype} needs a copy, and copy=False")
        return obj.astype(dtype)
    if copy is False:
        raise ValueError("asarray: nabla keeps its own buffers, so a non-tensor input needs copy=True or None")
    return _nabla.tensor(obj, dtype=dtype, requires_grad=requires_grad)


def from_dlpack(x, /, *, device=None, copy=None):
    """A tensor over the memory of ``x`` (any object with ``__dlpack__``), shared unless
    ``copy=True``."""
    _check_device(device)
    out = _nabla.from_dlpack(x)
    return out.astype(out.dtype) if copy else out


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    """Evenly spaced values in ``[start, stop)`` (``[0, start)`` without ``stop``); the dtype follows
    the numbers unless given (any float among them gives the default float)."""
    _check_device(device)
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        dtype = result_type(start, stop, step)
    return _nabla.arange(start, stop, step, dtype=dtype)


def empty(shape, *more, dtype=None, device=None):
    """An array of ``shape`` (zero-filled: nabla never hands out uninitialised memory)."""
    return zeros(shape, *more, dtype=dtype, device=device)


def empty_like(x, /, *, dtype=None, device=None):
    """An array of ``x``'s shape (zero-filled)."""
    return zeros_like(x, dtype=dtype, device=device)


def zeros(shape, *more, dtype=None, device=None):
    """An array of ``shape`` filled with zeros (``zeros(2, 3)`` as PyTorch's works too)."""
    _check_device(device)
    return _nabla.zeros(*_shape(shape), *more, dtype=dtype)


def ones(shape, *more, dtype=None, device=None):
    """An array of ``shape`` filled with ones (``ones(2, 3)`` as PyTorch's works too)."""
    _check_device(device)
    return _nabla.ones(*_shape(shape), *more, dtype=dtype)


def zeros_like(x, /, *, dtype=None, device=None):
    """Zeros of ``x``'s shape and (unless given) dtype."""
    _check_device(device)
    return _nabla.zeros_like(_as_tensor(x), dtype=dtype)


def ones_like(x, /, *, dtype=None, device=None):
    """Ones of ``x``'s shape and (unless given) dtype."""
    _check_device(device)
    return _nabla.ones_like(_as_tensor(x), dtype=dtype)


def full(shape, fill_value, *, dtype=None, device=None):
    """An array of ``shape`` filled with ``fill_value`` (its dtype follows the value unless given)."""
    _check_device(device)
    if dtype is None:
        dtype = result_type(fill_value)
    return _nabla.full(_shape(shape), fill_value, dtype=dtype)


def full_like(x, /, fill_value, *, dtype=None, device=None):
    """An array of ``x``'s shape and (unless given) dtype filled with ``fill_value``."""
    _check_device(device)
    x = _as_tensor(x)
    return _nabla.full(tuple(x.shape), fill_value, dtype=dtype if dtype is not None else x.dtype)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    """A ``n_rows`` by ``n_cols`` matrix with ones on diagonal ``k``."""
    _check_device(device)
    n_cols = n_rows if n_cols is None else n_cols
    if not -n_rows < k < n_cols:
        return _nabla.zeros(n_rows, n_cols, dtype=dtype if dtype is not None else default_float())
    rows = _nabla.arange(n_rows, dtype=_int64).reshape(n_rows, 1)
    cols = _nabla.arange(n_cols, dtype=_int64).reshape(1, n_cols)
    return (cols - rows == k).astype(dtype if dtype is not None else default_float())


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    """``num`` evenly spaced values from ``start`` to ``stop`` (included unless ``endpoint=False``)."""
    _check_device(device)
    if num < 0:
        raise ValueError(f"linspace: num must not be negative, got {num}")
    if dtype is None:
        dtype = default_complex() if isinstance(start, complex) or isinstance(stop, complex) else default_float()
    if num == 0:
        return _nabla.zeros(0, dtype=dtype)
    divisions = (num - 1) if endpoint else num
    wide = _DTYPES["complex128"] if dtype.is_complex else _DTYPES["float64"]
    index = _nabla.arange(num, dtype=_DTYPES["float64"]).astype(wide)
    step = (stop - start) / divisions if divisions else 0.0
    out = index * step + start
    if endpoint and num > 1:
        out = _nabla.concatenate([out[:-1], _nabla.full((1,), stop, dtype=wide)], 0)
    return out.astype(dtype)


def meshgrid(*arrays, indexing="xy"):
    """Coordinate arrays from 1-D arrays (``"xy"``: the first two axes swapped, as NumPy)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    arrays = [_as_tensor(a) for a in arrays]
    shape = [a.shape[0] for a in arrays]
    if indexing == "xy" and len(arrays) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, a in enumerate(arrays):
        axis = i
        if indexing == "xy" and len(arrays) >= 2 and i < 2:
            axis = 1 - i
        view = [1] * len(arrays)
        view[axis] = a.shape[0]
        out.append(a.reshape(*view).broadcast_to(*shape))
    return tuple(out)


def tril(x, /, k=0, *, diagonal=None):
    """The lower triangle (on and below diagonal ``k``; PyTorch's ``diagonal=``) of each matrix."""
    return _as_tensor(x).tril(k if diagonal is None else diagonal)


def triu(x, /, k=0, *, diagonal=None):
    """The upper triangle (on and above diagonal ``k``; PyTorch's ``diagonal=``) of each matrix."""
    return _as_tensor(x).triu(k if diagonal is None else diagonal)


def astype(x, dtype, /, *, copy=True, device=None):
    """``x`` as ``dtype`` (a copy unless ``copy=False`` and it already is)."""
    _check_device(device)
    x = _as_tensor(x)
    if not copy and x.dtype == dtype:
        return x
    return x.astype(dtype)


def broadcast_shapes(*shapes):
    """The shape the shapes broadcast to, as NumPy's broadcasting rules give it."""
    ndim = builtins.max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(s):
            j = ndim - len(s) + i
            if out[j] == 1:
                out[j] = d
            elif d != 1 and d != out[j]:
                raise ValueError(f"broadcast_shapes: shapes {', '.join(map(str, shapes))} do not broadcast")
    return tuple(out)


def broadcast_arrays(*arrays):
    """The arrays broadcast against each other."""
    arrays = [_as_tensor(a) for a in arrays]
    shape = broadcast_shapes(*(tuple(a.shape) for a in arrays))
    return tuple(a.broadcast_to(*shape) for a in arrays)


def broadcast_to(x, /, shape):
    """``x`` broadcast to ``shape``."""
    return _as_tensor(x).broadcast_to(*_shape(shape))


def concat(arrays, /, *, axis=0):
    """The arrays joined along ``axis`` (flattened first when ``axis`` is ``None``)."""
    arrays = [_as_tensor(a) for a in arrays]
    if axis is None:
        arrays = [a.reshape(-1) for a in arrays]
        axis = 0
    return _nabla.concatenate(arrays, axis)


def stack(arrays, /, *, axis=0):
    """The arrays joined along a new ``axis``."""
    return _nabla.stack([_as_tensor(a) for a in arrays], axis)


def unstack(x, /, *, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple."""
    x = _as_tensor(x)
    axis = _axes(axis, x.ndim)[0]
    index = [slice(None)] * x.ndim
    out = []
    for i in range(x.shape[axis]):
        index[axis] = i
        out.append(x[tuple(index)])
    return tuple(out)


def expand_dims(x, /, axis=0):
    """``x`` with new axes of size one at ``axis`` (an int or a tuple, counted in the result)."""
    x = _as_tensor(x)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = x.ndim + len(axes)
    positions = sorted(_axes(axes, ndim))
    shape = list(x.shape)
    for p in positions:
        shape.insert(p, 1)
    return x.reshape(*shape)


def squeeze(x, /, axis):
    """``x`` without the size-one ``axis`` (an int or a tuple)."""
    x = _as_tensor(x)
    axes = _axes(axis, x.ndim)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} has size {x.shape[a]}, not 1")
    return x.reshape(*(d for i, d in enumerate(x.shape) if i not in axes))


def flip(x, /, *, axis=None):
    """``x`` with the order of elements along ``axis`` (every axis when ``None``) reversed."""
    x = _as_tensor(x)
    if x.ndim == 0:
        return x
    return x.flip(axis)


def permute_dims(x, /, axes):
    """``x`` with its axes reordered."""
    return _as_tensor(x).permute(*axes)


def moveaxis(x, source, destination, /):
    """``x`` with the axes ``source`` moved to ``destination``, the others kept in order."""
    x = _as_tensor(x)
    src = _axes(source, x.ndim)
    dst = _axes(destination, x.ndim)
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination must have the same number of axes")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return x.permute(*order)


def reshape(x, /, shape, *, copy=None):
    """``x`` with a new shape (one entry may be -1)."""
    x = _as_tensor(x)
    out = x.reshape(*_shape(shape))
    return out.astype(out.dtype) if copy else out


def roll(x, /, shift, *, axis=None):
    """``x`` with elements shifted by ``shift`` along ``axis`` (the flattened array when ``None``),
    wrapping around."""
    x = _as_tensor(x)
    if axis is None:
        return roll(x.reshape(-1), shift, axis=0).reshape(*x.shape)
    shifts = (shift,) * (1 if isinstance(axis, int) else len(axis)) if isinstance(shift, int) else tuple(shift)
    # One axis may appear more than once (its shifts add up, as in NumPy), so each is checked alone.
    axes = tuple(_axes(a, x.ndim)[0] for a in ((axis,) if isinstance(axis, int) else axis))
    if len(shifts) != len(axes):
        raise ValueError("roll: shift and axis must have the same length")
    for s, a in zip(shifts, axes):
        n = x.shape[a]
        if n == 0:
            continue
        s %= n
        if s:
            index_hi = [slice(None)] * x.ndim
            index_lo = [slice(None)] * x.ndim
            index_hi[a] = slice(n - s, n)
            index_lo[a] = slice(0, n - s)
            x = _nabla.concatenate([x[tuple(index_hi)], x[tuple(index_lo)]], a)
    return x


def repeat(x, repeats, /, *, axis=None):
    """Each element repeated ``repeats`` times (an int, or one count per element) along ``axis``
    (the flattened array when ``None``)."""
    x = _as_tensor(x)
    if axis is None:
        x = x.reshape(-1)
        axis = 0
    axis = _axes(axis, x.ndim)[0]
    n = x.shape[axis]
    if isinstance(repeats, int):
        if repeats < 0:
            raise ValueError(f"repeat: repeats must not be negative, got {repeats}")
        counts = _nabla.full((n,), repeats, dtype=_int64)
    else:
        counts = _as_tensor(repeats).astype(_int64).reshape(-1)
        if counts.shape[0] == 1:
            counts = counts.broadcast_to(n)
        if counts.shape[0] != n:
            raise ValueError(f"repeat: {counts.shape[0]} counts for an axis of {n} elements")
    index = _nabla.arange(n, dtype=_int64)
    total = int(counts.sum()) if n else 0
    if total == 0:
        shape = list(x.shape)
        shape[axis] = 0
        return _nabla.zeros(*shape, dtype=x.dtype)
    # Element i fills the slots from its running count on: mark each start, running-sum the marks.
    starts = counts.cumsum(0) - counts
    marks = _nabla.zeros(total + 1, dtype=_int64).index_add(0, starts, (counts > 0).astype(_int64))
    which = marks[:total].cumsum(0) - 1
    source = index[counts > 0][which] if bool((counts == 0).any()) else which
    return x.index_select(axis, source)


def tile(x, repetitions, /):
    """``x`` repeated ``repetitions`` times along each axis (leading ones fill the shorter)."""
    x = _as_tensor(x)
    reps = tuple(repetitions)
    ndim = builtins.max(len(reps), x.ndim)
    reps = (1,) * (ndim - len(reps)) + reps
    x = x.reshape(*((1,) * (ndim - x.ndim) + tuple(x.shape)))
    for a, r in enumerate(reps):
        if r != 1:
            x = _nabla.concatenate([x] * r, a) if r else x[(slice(None),) * a + (slice(0, 0),)]
    return x


def take(x, indices, /, *, axis=None):
    """The elements at ``indices`` (1-D) along ``axis`` (optional for 1-D ``x``)."""
    x = _as_tensor(x)
    if axis is None:
        if x.ndim != 1:
            raise ValueError("take: axis is required for arrays of more than one dimension")
        axis = 0
    indices = _as_tensor(indices).astype(_int64)
    n = x.shape[_axes(axis, x.ndim)[0]]
    indices = _nabla.where(indices < 0, indices + n, indices)
    return x.index_select(axis, indices)


def take_along_axis(x, indices, /, *, axis=-1):
    """The elements of ``x`` at ``indices`` (same rank, broadcast) along ``axis``."""
    x, indices = _as_tensor(x), _as_tensor(indices).astype(_int64)
    axis = _axes(axis, x.ndim)[0]
    n = x.shape[axis]
    indices = _nabla.where(indices < 0, indices + n, indices)
    shape = list(broadcast_shapes(tuple(x.shape[:axis]) + (1,) + tuple(x.shape[axis + 1 :]), tuple(indices.shape)))
    index_shape = shape.copy()
    shape[axis] = n
    return x.broadcast_to(*shape).gather(axis, indices.broadcast_to(*index_shape))


def matrix_transpose(x, /):
    """Each matrix of ``x`` transposed (the last two axes swapped)."""
    x = _as_tensor(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: needs at least two dimensions, got shape {tuple(x.shape)}")
    return x.mT


def tensordot(x1, x2, /, *, axes=2):
    """Sums products over ``axes`` (a count of trailing and leading axes, or two axis lists)."""
    a, b = _as_tensor(x1), _as_tensor(x2)
    if isinstance(axes, int):
        if axes < 0:
            raise ValueError(f"tensordot: axes must not be negative, got {axes}")
        ax_a = list(range(a.ndim - axes, a.ndim))
        ax_b = list(range(axes))
    else:
        ax_a, ax_b = (list(_axes(v, t.ndim)) for v, t in zip(axes, (a, b)))
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    sub_a = letters[: a.ndim]
    sub_b = list(letters[a.ndim : a.ndim + b.ndim])
    for i, j in zip(ax_a, ax_b):
        sub_b[j] = sub_a[i]
    kept = [c for i, c in enumerate(sub_a) if i not in ax_a] + [c for j, c in enumerate(sub_b) if j not in ax_b]
    a, b = _promoted(a, b)
    return _nabla.einsum(f"{sub_a},{''.join(sub_b)}->{''.join(kept)}", a, b)


def vecdot(x1, x2, /, *, axis=-1):
    """``sum(conj(x1) * x2)`` along ``axis`` (broadcast)."""
    a, b = _as_tensor(x1), _as_tensor(x2)
    ndim = builtins.max(a.ndim, b.ndim)
    sa, sb = (1,) * (ndim - a.ndim) + tuple(a.shape), (1,) * (ndim - b.ndim) + tuple(b.shape)
    if sa[axis] != sb[axis]:
        raise ValueError(f"vecdot: axis {axis} has size {sa[axis]} in x1 and {sb[axis]} in x2 (it is not broadcast)")
    shape = broadcast_shapes(sa, sb)
    a, b = a.broadcast_to(*shape), b.broadcast_to(*shape)
    return _nabla.sum(_nabla.conj(a) * b, (_axes(axis, len(shape))[0],), False)


def _promoted(a, b):
    dtype = result_type(a, b)
    return a.astype(dtype) if a.dtype != dtype else a, b.astype(dtype) if b.dtype != dtype else b


def matmul(x1, x2, /):
    """The matrix product ``x1 @ x2`` (batched and broadcast; 1-D operands as vectors)."""
    return _as_tensor(x1) @ _as_tensor(x2)


__all__ = [n for n, f in list(globals().items()) if not n.startswith("_") and getattr(f, "__module__", None) == __name__]
