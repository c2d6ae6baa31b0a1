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
    "bool": _conversion(getattr(_nabla, "bool"), "bool"),
    "isinf": isinf,
    "__reduce__": reduce,
    "isclose": isclose,
    "allclose": allclose,
}
