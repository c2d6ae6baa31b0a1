"""PyTorch's tensor methods that are spellings of what nabla already has: ``dim()``, ``clone()``,
the dtype conversions (``float()``, ``long()``, ...), ``isinf``, ``isclose`` and ``allclose``. Each is
a composition of nabla's differentiable ops, so gradients flow as PyTorch's do."""

from . import _nabla
from ._transforms import _as_tensor


def dim(self) -> int:
    """The number of axes (PyTorch's ``dim()``; also ``ndim``)."""
    return len(self.shape)


def clone(self):
    """A new tensor with the same values; gradients flow through it unchanged (as PyTorch's
    ``clone``). Assigning into the clone (``c[i] = v``) leaves this tensor as it is."""
    return self.astype(self.dtype)


def _conversion(dtype, name):
    def convert(self):
        return self.astype(dtype)

    convert.__name__ = name
    convert.__doc__ = f"``self.astype({dtype})``, as PyTorch's ``{name}()``."
    return convert


def _rebuild(cls, values, dtype_name, requires_grad, grad=None):
    """A tensor (or a subclass such as ``nn.Parameter``) from what :func:`reduce` saved."""
    dtype = getattr(_nabla, dtype_name)
    data = _nabla.tensor(values).astype(dtype)
    out = _nabla.tensor(data, requires_grad=requires_grad) if cls is _nabla.Tensor else cls(data, requires_grad)
    if grad is not None:
        out.grad = _nabla.tensor(grad).astype(dtype)
    return out


def _host_copy(t):
    """The values of ``t`` as a NumPy array of their own (halves as float32, which holds them
    exactly, since NumPy has no bfloat16)."""
    import numpy as np

    if t.dtype in (_nabla.float16, _nabla.bfloat16):
        t = t.astype(_nabla.float32)
    return np.array(t.detach().numpy())


def reduce(self):
    """Pickling and ``copy.deepcopy``, as PyTorch's: the values, dtype, ``requires_grad``, the
    ``.grad`` of a leaf and the class (``nn.Parameter`` stays one). A copy is a new leaf; tensors
    inside ``jit`` or ``vmap`` cannot be pickled."""
    if self.device == "traced":
        raise TypeError("cannot pickle a traced tensor (inside jit or vmap); pickle the result instead")
    grad = self.grad
    return (
        _rebuild,
        (type(self), _host_copy(self), self.dtype.name, self.requires_grad, None if grad is None else _host_copy(grad)),
    )


def masked_fill(self, mask, value):
    """``self`` with ``value`` where ``mask`` (broadcast) is true, as PyTorch's ``masked_fill``;
    the gradient flows to the kept elements (and to ``value`` when it is a tensor)."""
    mask = _as_tensor(mask)
    if mask.dtype != _nabla.bool:
        raise TypeError(f"masked_fill: the mask must be bool, got {mask.dtype}")
    if not isinstance(value, _nabla.Tensor):
        value = _nabla.tensor(value, dtype=self.dtype)
    elif value.ndim != 0:
        raise ValueError(f"masked_fill: value must be a number or a 0-d tensor, got shape {tuple(value.shape)}")
    return _nabla.where(mask, value.astype(self.dtype), self)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """``torch.unique``: the sorted distinct values of the flattened tensor, or with ``dim`` the
    distinct slices along ``dim`` (in lexicographic order), with the inverse indices and the
    counts when asked."""
    from ._array_api import unique_all

    if dim is None:
        values, _, inverse, counts = unique_all(input)
    else:
        values, inverse, counts = _unique_slices(_as_tensor(input), dim)
    extra = ([inverse] if return_inverse else []) + ([counts] if return_counts else [])
    return (values, *extra) if extra else values


def _unique_slices(x, dim: int):
    """The distinct slices of ``x`` along ``dim`` (sorted lexicographically), the index of each
    slice's distinct one, and how often each occurs."""
    if x.ndim == 0:
        raise ValueError("unique: dim= needs a tensor of at least one dimension")
    if not -x.ndim <= dim < x.ndim:
        raise IndexError(f"unique: dim {dim} is out of range for {x.ndim} dimensions")
    if x.dtype.is_complex:
        raise TypeError("unique: complex slices have no order; dim= needs real or integer values")
    dim %= x.ndim
    moved = x.swapaxes(0, dim) if dim else x
    n = moved.shape[0]
    rows = moved.reshape(n, -1)
    order = _nabla.arange(n, dtype=_nabla.int64)
    # Lexicographic order: stable sorts by each column, the last column first.
    for column in reversed(range(rows.shape[1])):
        order = order[rows[order][:, column].argsort(0)]
    ordered = rows[order]
    if n == 0:
        empty = _nabla.zeros(0, dtype=_nabla.int64)
        return x, empty, empty
    differs = (ordered[1:] != ordered[:-1]).any(1) if rows.shape[1] else _nabla.zeros(n - 1, dtype=_nabla.bool)
    starts = _nabla.concatenate([_nabla.ones(1, dtype=_nabla.bool), differs])
    group = starts.astype(_nabla.int64).cumsum(0) - 1
    inverse = _nabla.zeros(n, dtype=_nabla.int64).index_add(0, order, group)
    first = order[starts]
    counts = bincount(group)
    values = moved[first]
    values = values.swapaxes(0, dim) if dim else values
    return values, inverse, counts


def bincount(input, weights=None, minlength=0):
    """``torch.bincount``: how often each non-negative integer of the 1-D ``input`` occurs (the sum
    of its ``weights`` when given), over ``max(input) + 1`` bins, at least ``minlength``."""
    x = _as_tensor(input)
    if x.ndim != 1 or x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == _nabla.bool:
        raise ValueError(f"bincount: expects a 1-D tensor of integers, got {x.dtype} of shape {tuple(x.shape)}")
    if x.size and int(_nabla.min(x, (0,), False)) < 0:
        raise ValueError("bincount: the input must not hold negative values")
    bins = max(int(_nabla.max(x, (0,), False)) + 1 if x.size else 0, int(minlength))
    if weights is None:
        ones = _nabla.ones(x.shape[0], dtype=_nabla.int64)
        return _nabla.zeros(bins, dtype=_nabla.int64).index_add(0, x.astype(_nabla.int64), ones)
    w = _as_tensor(weights)
    if tuple(w.shape) != tuple(x.shape):
        raise ValueError(f"bincount: weights of shape {tuple(w.shape)} for an input of shape {tuple(x.shape)}")
    if not (w.dtype.is_floating_point or w.dtype.is_complex):
        w = w.astype(_nabla.float64)
    return _nabla.zeros(bins, dtype=w.dtype).index_add(0, x.astype(_nabla.int64), w)


def isinf(x):
    """``True`` where ``x`` is plus or minus infinity (never for integers)."""
    x = _as_tensor(x)
    return ~(_nabla.isfinite(x) | _nabla.isnan(x))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|a - b| <= atol + rtol * |b|`` elementwise, as NumPy's and PyTorch's ``isclose``: equal
    infinities are close, NaNs only with ``equal_nan``."""
    a, b = _as_tensor(a), _as_tensor(b)
    if rtol < 0 or atol < 0:
        raise ValueError(f"isclose: rtol ({rtol}) and atol ({atol}) must not be negative")
    finite = _nabla.isfinite(a) & _nabla.isfinite(b)
    close = (a == b) | (finite & (abs(a - b) <= atol + rtol * abs(b)))
    if equal_nan:
        close = close | (_nabla.isnan(a) & _nabla.isnan(b))
    return close


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Whether every pair is :func:`isclose` (after broadcasting)."""
    return bool(isclose(a, b, rtol, atol, equal_nan).all())


METHODS = {
    "dim": dim,
    "clone": clone,
    "float": _conversion(_nabla.float32, "float"),
    "double": _conversion(_nabla.float64, "double"),
    "half": _conversion(_nabla.float16, "half"),
    "bfloat16": _conversion(_nabla.bfloat16, "bfloat16"),
    "long": _conversion(_nabla.int64, "long"),
    "int": _conversion(_nabla.int32, "int"),
    "short": _conversion(_nabla.int16, "short"),
    "char": _conversion(_nabla.int8, "char"),
    "byte": _conversion(_nabla.uint8, "byte"),
    "bool": _conversion(getattr(_nabla, "bool"), "bool"),
    "isinf": isinf,
    "__reduce__": reduce,
    "masked_fill": masked_fill,
    "isclose": isclose,
    "allclose": allclose,
}
