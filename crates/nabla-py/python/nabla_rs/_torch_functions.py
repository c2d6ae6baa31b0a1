"""PyTorch's functions that nabla composes from its ops: ``nan_to_num``, ``diag``, ``dot``,
``outer``, ``kron``, ``scatter``/``scatter_add``, ``randint`` and the ``*_like`` draws,
``set_default_dtype``. Each is differentiable where PyTorch's is; the functions that are also
tensor methods are listed in ``METHODS``."""

from __future__ import annotations

import math

from . import _nabla
from ._transforms import _as_tensor


def set_default_dtype(d) -> None:
    """Makes ``d`` (float32, float64, float16 or bfloat16) the dtype of Python floats in
    ``tensor(...)`` and of the creation functions and layers without ``dtype=``; complex numbers
    become complex128 under float64 and complex64 otherwise, as ``torch.set_default_dtype``."""
    _nabla._set_default_dtype(d)


def get_default_dtype():
    """The default floating-point dtype (float32 unless :func:`set_default_dtype` changed it)."""
    return _nabla._default_dtype()


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN replaced by ``nan`` and the infinities by ``posinf``/``neginf`` (the dtype's largest
    and lowest finite values by default), as ``torch.nan_to_num``; for complex input the real and
    imaginary parts separately. Integers and bools are returned as they are."""
    x = _as_tensor(input)
    if x.dtype.is_complex:
        real = nan_to_num(_nabla.real(x), nan, posinf, neginf)
        imag = nan_to_num(_nabla.imag(x), nan, posinf, neginf)
        return real.astype(x.dtype) + imag.astype(x.dtype) * 1j
    if not x.dtype.is_floating_point:
        return x
    from ._array_api_dtypes import finfo

    info = finfo(x.dtype)
    high = info.max if posinf is None else posinf
    low = info.min if neginf is None else neginf
    def filled(value):
        return _nabla.full(tuple(x.shape), value, dtype=x.dtype)

    out = _nabla.where(_nabla.isnan(x), filled(nan), x)
    out = _nabla.where(out == math.inf, filled(high), out)
    return _nabla.where(out == -math.inf, filled(low), out)


def diag(input, diagonal=0):
    """A vector's square matrix with it on the ``diagonal``-th diagonal, or a matrix's
    ``diagonal``-th diagonal as a vector, as ``torch.diag``."""
    x = _as_tensor(input)
    if x.ndim == 1:
        return x.diag_embed(diagonal)
    if x.ndim == 2:
        return x.diagonal(diagonal, 0, 1)
    raise ValueError(f"diag: expects a vector or a matrix, got {x.ndim} dimensions")


def _vectors(name: str, a, b):
    a, b = _as_tensor(a), _as_tensor(b)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"{name}: expects two vectors, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    return a, b


def dot(input, other):
    """The dot product of two vectors of the same length (no conjugation), as ``torch.dot``."""
    a, b = _vectors("dot", input, other)
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"dot: vectors of lengths {a.shape[0]} and {b.shape[0]}")
    return (a * b).sum()


def outer(input, vec2):
    """The outer product ``input[i] * vec2[j]`` of two vectors, as ``torch.outer``."""
    a, b = _vectors("outer", input, vec2)
    return a.reshape(-1, 1) * b.reshape(1, -1)


def kron(input, other):
    """The Kronecker product, as ``torch.kron``: the shapes multiply axis by axis (the shorter
    shape padded with leading ones)."""
    a, b = _as_tensor(input), _as_tensor(other)
    ndim = max(a.ndim, b.ndim)
    a = a.reshape(*([1] * (ndim - a.ndim) + list(a.shape)))
    b = b.reshape(*([1] * (ndim - b.ndim) + list(b.shape)))
    interleaved_a = [d for s in a.shape for d in (s, 1)]
    interleaved_b = [d for s in b.shape for d in (1, s)]
    product = a.reshape(*interleaved_a) * b.reshape(*interleaved_b)
    return product.reshape(*[p * q for p, q in zip(a.shape, b.shape)])


def _scatter_targets(x, dim: int, index):
    """The flat positions in ``x`` that ``scatter`` writes for each element of ``index``."""
    index = _as_tensor(index)
    if index.dtype.is_floating_point or index.dtype.is_complex or index.dtype == _nabla.bool:
        raise TypeError(f"scatter: the index must hold integers, got {index.dtype}")
    if index.ndim != x.ndim:
        raise ValueError(f"scatter: the index has {index.ndim} dimensions, the tensor {x.ndim}")
    dim = dim % max(x.ndim, 1)
    for a, (i, s) in enumerate(zip(index.shape, x.shape)):
        if a != dim and i > s:
            raise ValueError(f"scatter: index shape {tuple(index.shape)} exceeds the tensor's {tuple(x.shape)} along axis {a}")
    if index.size and (int(index.min()) < -x.shape[dim] or int(index.max()) >= x.shape[dim]):
        raise IndexError(f"scatter: an index is out of range for size {x.shape[dim]} along dim {dim}")
    index = index.astype(_nabla.int64)
    index = _nabla.where(index < 0, index + x.shape[dim], index)
    flat = _nabla.zeros(*index.shape, dtype=_nabla.int64)
    stride = 1
    for a in reversed(range(x.ndim)):
        if a == dim:
            coordinate = index
        else:
            shape = [1] * x.ndim
            shape[a] = index.shape[a]
            coordinate = _nabla.arange(index.shape[a]).reshape(*shape)
        flat = flat + coordinate * stride
        stride *= x.shape[a]
    return flat.reshape(-1)


def _scatter_source(x, index, src):
    """``src`` as the values to write at ``index``'s elements: a number or the leading block of a
    tensor at least ``index``'s size."""
    index_shape = tuple(_as_tensor(index).shape)
    if not isinstance(src, _nabla.Tensor):
        return _nabla.full(index_shape, src, dtype=x.dtype).reshape(-1)
    if src.ndim != len(index_shape) or any(s < i for s, i in zip(src.shape, index_shape)):
        raise ValueError(f"scatter: src of shape {tuple(src.shape)} is smaller than the index {index_shape}")
    block = src[tuple(slice(0, i) for i in index_shape)] if tuple(src.shape) != index_shape else src
    return block.astype(x.dtype).reshape(-1)


def scatter_add(input, dim, index, src):
    """``input`` with ``src[i]`` added at the position ``index[i]`` names along ``dim`` (repeated
    positions add up), as ``torch.scatter_add``; differentiable in ``input`` and ``src``."""
    x = _as_tensor(input)
    targets = _scatter_targets(x, dim, index)
    values = _scatter_source(x, index, src)
    return x.reshape(-1).index_add(0, targets, values).reshape(*x.shape)


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """``input`` with ``src[i]`` (or ``value``) written at the position ``index[i]`` names along
    ``dim``, as ``torch.scatter``. Where an index repeats a position, the last element (in
    row-major order) wins, so the result is deterministic. ``reduce="add"`` is
    :func:`scatter_add`; ``"multiply"`` is not supported."""
    if (src is None) == (value is None):
        raise TypeError("scatter: give exactly one of src and value")
    src = value if src is None else src
    if reduce == "add":
        return scatter_add(input, dim, index, src)
    if reduce is not None:
        raise ValueError(f"scatter: reduce={reduce!r} is not supported (use None or 'add')")
    x = _as_tensor(input)
    targets = _scatter_targets(x, dim, index)
    values = _scatter_source(x, index, src)
    count = targets.shape[0]
    if count == 0:
        return x
    order = targets.argsort(0)
    ordered = targets[order]
    last = _nabla.concatenate([ordered[1:] != ordered[:-1], _nabla.ones(1, dtype=_nabla.bool)])
    keep = order[last]
    return place(x.reshape(-1), targets[keep], values[keep]).reshape(*x.shape)


def place(flat, positions, values):
    """The 1-D ``flat`` with ``values`` at ``positions`` (distinct), differentiable in both. The
    written elements are selected, not adjusted by a difference, so inf and NaN among the old
    values do not leak into the new ones and no precision is lost."""
    ones = _nabla.ones(positions.shape[0], dtype=_nabla.int64)
    written = _nabla.zeros(flat.shape[0], dtype=_nabla.int64).index_add(0, positions, ones) > 0
    placed = _nabla.zeros_like(flat).index_add(0, positions, values)
    return _nabla.where(written, placed, flat)


def _shape(size) -> tuple:
    if isinstance(size, int):
        return (size,)
    return tuple(size)


def randint(low=0, high=None, size=None, *, dtype=None):
    """Integers drawn uniformly from ``[low, high)`` from the global generator (``manual_seed``),
    as ``torch.randint(low, high, size)`` or ``torch.randint(high, size)``; int64 by default."""
    if size is None:
        if high is None:
            raise TypeError("randint: give high and size")
        low, high, size = 0, low, high
    if high is None:
        raise TypeError("randint: give high")
    low, high = int(low), int(high)
    if high <= low:
        raise ValueError(f"randint: the range [{low}, {high}) is empty")
    if high - low > 2**52:
        raise ValueError(f"randint: the range [{low}, {high}) is wider than 2**52, which float64 draws cannot cover evenly")
    u = _nabla.rand(*_shape(size), dtype=_nabla.float64)
    drawn = _nabla.floor(u * (high - low)).astype(_nabla.int64) + low
    return drawn.astype(dtype) if dtype is not None else drawn


def rand_like(input, dtype=None):
    """Uniform draws on ``[0, 1)`` of ``input``'s shape and dtype."""
    x = _as_tensor(input)
    return _nabla.rand(*x.shape, dtype=dtype or x.dtype)


def randn_like(input, dtype=None):
    """Standard normal draws of ``input``'s shape and dtype."""
    x = _as_tensor(input)
    return _nabla.randn(*x.shape, dtype=dtype or x.dtype)


def randint_like(input, low=0, high=None, dtype=None):
    """Integers from ``[low, high)`` (``[0, low)`` with one bound) of ``input``'s shape."""
    x = _as_tensor(input)
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(x.shape), dtype=dtype or x.dtype)


def _scatter_method(fn):
    def method(self, dim, index, src=None, **kwargs):
        return fn(self, dim, index, src, **kwargs) if src is not None else fn(self, dim, index, **kwargs)

    method.__name__ = method.__qualname__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


METHODS = {
    "nan_to_num": nan_to_num,
    "diag": diag,
    "dot": dot,
    "outer": outer,
    "kron": kron,
    "scatter": _scatter_method(scatter),
    "scatter_add": scatter_add,
}

__all__ = [
    "set_default_dtype", "get_default_dtype", "nan_to_num", "diag", "dot", "outer", "kron",
    "scatter", "scatter_add", "randint", "rand_like", "randn_like", "randint_like",
]  # fmt: skip
