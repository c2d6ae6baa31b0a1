"""``nabla_rs.special``: ``torch.special``'s and ``scipy.special``'s everyday functions, each
differentiable to any order, eagerly and under ``jit`` and ``vmap``. ``gammaln``, ``digamma``,
``polygamma``, ``erfinv``, ``erfc``, ``ndtr``, ``ndtri``, ``log_ndtr``, the Bessel functions,
``xlogy``, ``logit``, ``log_expit`` and ``betaln`` are nabla's special-function ops (computed in float64, checked against SciPy to 1e-13);
the rest are compositions of ordinary ops. Integers and half floats compute in float32 (as
PyTorch promotes them), complex input is an error."""

from __future__ import annotations

import math

from . import _array_api_elementwise, _nabla
from ._transforms import _as_tensor

_rust = _nabla.special

gammaln = _rust.gammaln
digamma = _rust.digamma
polygamma = _rust.polygamma
erfinv = _rust.erfinv
i0 = _rust.i0
i0e = _rust.i0e
i1 = _rust.i1
i1e = _rust.i1e
xlogy = _rust.xlogy
betaln = _rust.betaln
erfc = _rust.erfc
ndtr = _rust.ndtr
ndtri = _rust.ndtri
log_ndtr = _rust.log_ndtr
log_expit = _rust.log_sigmoid
psi = digamma
lgamma = gammaln
erf = _nabla.erf
expit = _nabla.sigmoid
expm1 = _nabla.expm1
log1p = _nabla.log1p
exp2 = _array_api_elementwise.exp2


def logit(input, eps=None):
    """``ln(p / (1 - p))``; with ``eps``, ``p`` is first clamped to ``[eps, 1 - eps]``."""
    return _rust.logit(input, eps)


def _floating(x):
    x = _as_tensor(x)
    return x if x.dtype.is_floating_point else x.astype(_nabla.float32)


def xlog1py(x, y):
    """``x * log1p(y)``, 0 where ``x`` is 0 (also where ``y`` is -1 or NaN, as SciPy)."""
    x, y = _as_tensor(x), _as_tensor(y)
    product = x * _nabla.log1p(y)
    return _nabla.where(x == 0, _nabla.zeros_like(product), product)


def entr(input):
    """``-x ln x`` for ``x > 0``, 0 at 0, ``-inf`` for ``x < 0`` (NaN stays NaN)."""
    x = _floating(input)
    value = -xlogy(x, x)
    return _nabla.where(x < 0, _nabla.full(tuple(x.shape), -math.inf, dtype=x.dtype), value)


def sinc(input):
    """The normalised sinc, ``sin(pi x) / (pi x)``, 1 at 0."""
    x = _floating(input)
    at_zero = x == 0
    safe = _nabla.where(at_zero, _nabla.ones_like(x), x) * math.pi
    return _nabla.where(at_zero, _nabla.ones_like(x), _nabla.sin(safe) / safe)


def multigammaln(a, p: int):
    """The log of the multivariate gamma function of dimension ``p``:
    ``p (p - 1) / 4 ln pi + sum_j gammaln(a - j / 2)``."""
    if p < 1:
        raise ValueError(f"multigammaln: p must be at least 1, got {p}")
    a = _floating(a)
    total = p * (p - 1) / 4.0 * math.log(math.pi)
    for j in range(p):
        total = total + gammaln(a - j / 2.0)
    return total


def logsumexp(input, dim, keepdim=False):
    """``log(sum(exp(x)))`` over ``dim``, computed stably."""
    return _as_tensor(input).logsumexp(dim, keepdim)


def softmax(input, dim, dtype=None):
    """The softmax over ``dim`` (computed in ``dtype`` when given)."""
    x = _as_tensor(input)
    return (x if dtype is None else x.astype(dtype)).softmax(dim)


def log_softmax(input, dim, dtype=None):
    """The log-softmax over ``dim`` (computed in ``dtype`` when given)."""
    x = _as_tensor(input)
    return (x if dtype is None else x.astype(dtype)).log_softmax(dim)


def round(input, decimals=0):
    """Rounds half to even, to ``decimals`` places."""
    x = _as_tensor(input)
    if decimals == 0:
        return _nabla.round(x)
    scale = 10.0**decimals
    return _nabla.round(x * scale) / scale


__all__ = [n for n in dir() if not n.startswith("_") and n not in ("annotations", "math")]
