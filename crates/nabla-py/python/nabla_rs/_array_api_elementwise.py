"""The Array API's elementwise functions under the standard's names and signatures: the ones nabla's
op catalogue has run its kernel; the rest (``acosh``, ``hypot``, ``logaddexp``, ``copysign``, ...)
are numerically careful compositions of those, so they differentiate like any other op."""

from __future__ import annotations

import math
import operator

from . import _nabla
from ._array_api_dtypes import _DTYPES, default_float, result_type
from ._transforms import _as_tensor

_bool = _DTYPES["bool"]

__all__ = []


def _export(fn):
    __all__.append(fn.__name__)
    return fn


def _unary(name: str, kernel, doc: str):
    def function(x, /):
        return kernel(_as_tensor(x))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    __all__.append(name)
    return function


def _binary(name: str, kernel, doc: str):
    def function(x1, x2, /):
        if not isinstance(x1, _nabla.Tensor) and not isinstance(x2, _nabla.Tensor):
            x1 = _as_tensor(x1)
        return kernel(x1, x2)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    __all__.append(name)
    return function


for _name in _nabla._unary_ops:
    if _name not in ("neg", "recip", "rsqrt", "sigmoid", "erf", "round"):
        globals()[_name] = _unary(_name, getattr(_nabla, _name), getattr(_nabla, _name).__doc__)
for _name in _nabla._binary_ops:
    if _name in ("add", "sub", "mul", "div", "rem", "pow"):
        continue
    globals()[_name] = _binary(_name, getattr(_nabla, _name), getattr(_nabla, _name).__doc__)

negative = _unary("negative", operator.neg, "``-x``.")
positive = _unary("positive", lambda x: x.astype(x.dtype), "``+x``: a copy of ``x``.")
reciprocal = _unary("reciprocal", lambda x: 1 / x, "``1 / x``.")
isinf = _unary("isinf", lambda x: ~(_nabla.isfinite(x) | _nabla.isnan(x)), "``True`` at plus or minus infinity.")
add = _binary("add", operator.add, "``x1 + x2``.")
subtract = _binary("subtract", operator.sub, "``x1 - x2``.")
multiply = _binary("multiply", operator.mul, "``x1 * x2``.")
divide = _binary("divide", operator.truediv, "``x1 / x2`` (true division: integers give floats).")
floor_divide = _binary("floor_divide", operator.floordiv, "``x1 // x2``, rounding toward negative infinity.")
remainder = _binary("remainder", operator.mod, "``x1 % x2``, with the sign of ``x2``.")
pow = _binary("pow", operator.pow, "``x1 ** x2``.")
equal = _binary("equal", operator.eq, "``x1 == x2``.")
not_equal = _binary("not_equal", operator.ne, "``x1 != x2``.")
less = _binary("less", operator.lt, "``x1 < x2``.")
less_equal = _binary("less_equal", operator.le, "``x1 <= x2``.")
greater = _binary("greater", operator.gt, "``x1 > x2``.")
greater_equal = _binary("greater_equal", operator.ge, "``x1 >= x2``.")



@_export
def round(x, /):
    """Rounds half to even; complex numbers part by part."""
    x = _as_tensor(x)
    if x.dtype.is_complex:
        return _nabla.round(_nabla.real(x)).astype(x.dtype) + _nabla.round(_nabla.imag(x)).astype(x.dtype) * 1j
    return _nabla.round(x)


@_export
def exp2(x, /):
    """``2 ** x`` (NumPy's and PyTorch's ``exp2``; exact at integers; integers give floats)."""
    x = _as_tensor(x)
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = x.astype(default_float())
    return 2.0**x


@_export
def log2(x, /):
    """Base-2 logarithm."""
    x = _as_tensor(x)
    return _nabla.log(x) / math.log(2.0)


@_export
def log10(x, /):
    """Base-10 logarithm."""
    x = _as_tensor(x)
    return _nabla.log(x) / math.log(10.0)


def _pair(x1, x2):
    """Both operands as tensors; a Python scalar takes the dtype the standard gives it beside the
    other operand."""
    if not isinstance(x1, _nabla.Tensor):
        x2 = _as_tensor(x2)
        return _nabla.tensor(x1, dtype=result_type(x2, x1)), x2
    if not isinstance(x2, _nabla.Tensor):
        return x1, _nabla.tensor(x2, dtype=result_type(x1, x2))
    return x1, x2


def _full_like(x, value):
    return _nabla.full(tuple(x.shape), value, dtype=x.dtype)


@_export
def copysign(x1, x2, /):
    """``|x1|`` with the sign of ``x2`` (``-0.0`` counts as negative)."""
    x1, x2 = _pair(x1, x2)
    # x2 only decides the sign, so the result's dtype (both promoted) comes from casting x1.
    magnitude = abs(x1.astype(result_type(x1, x2)))
    return _nabla.where(_nabla.signbit(x2), -magnitude, magnitude)


@_export
def hypot(x1, x2, /):
    """``sqrt(x1² + x2²)`` without overflow or underflow on the way (scaled by the larger), and
    infinite when either is infinite, even beside a NaN."""
    a, b = (abs(t) for t in _pair(x1, x2))
    big = _nabla.maximum(a, b)
    usable = _nabla.isfinite(big) & (big > 0)
    scale = _nabla.where(usable, big, _nabla.ones_like(big))
    ratio = _nabla.minimum(a, b) / scale
    out = _nabla.where(usable, scale * _nabla.sqrt(1 + ratio * ratio), big)
    infinite = isinf(a) | isinf(b)
    return _nabla.where(infinite, _full_like(big, math.inf), out)


@_export
def logaddexp(x1, x2, /):
    """``log(exp(x1) + exp(x2))`` without overflow: the larger plus ``log1p(exp(-|x1 - x2|))``."""
    a, b = _pair(x1, x2)
    big = _nabla.maximum(a, b)
    same = a == b
    gap = _nabla.where(same, _nabla.zeros_like(big), abs(a - b))
    out = big + _nabla.log1p(_nabla.exp(-gap))
    return _nabla.where(same, big + math.log(2.0), out)


@_export
def clip(x, /, min=None, max=None):
    """``x`` limited to ``[min, max]`` (either may be an array or ``None``); NaN stays NaN."""
    x = _as_tensor(x)
    out = x
    if min is not None:
        low = min if isinstance(min, _nabla.Tensor) else _full_like(x, min)
        out = _nabla.where(out < low, low.astype(x.dtype), out)
    if max is not None:
        high = max if isinstance(max, _nabla.Tensor) else _full_like(x, max)
        out = _nabla.where(out > high, high.astype(x.dtype), out)
    return out
