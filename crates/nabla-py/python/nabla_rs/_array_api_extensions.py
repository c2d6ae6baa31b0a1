"""The Array API's ``linalg`` and ``fft`` extensions: nabla's Rust functions under the standard's
signatures and result types (``eigh`` gives ``EighResult(eigenvalues, eigenvectors)``, ...), and
the functions the standard adds (``matrix_norm``, ``vector_norm``, ``matrix_rank``, ``hfft``, ...).
PyTorch's extra functions (``norm``, ``lstsq``, ``lu``, ``cond``, ``matrix_exp``, ``multi_dot``)
stay as they are. :func:`install` puts them on the two modules."""

from __future__ import annotations

from typing import Any, NamedTuple

from . import _array_api_shapes as _shapes
from . import _nabla
from ._array_api import _axes
from ._array_api_dtypes import _DTYPES, _check_device, default_float, finfo
from ._transforms import _as_tensor

_rust_linalg = {n: getattr(_nabla.linalg, n) for n in dir(_nabla.linalg) if not n.startswith("_")}
_rust_fft = {n: getattr(_nabla.fft, n) for n in dir(_nabla.fft) if not n.startswith("_")}


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class EigResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


def _float(x):
    """``x`` as a floating tensor (integers become the default float)."""
    x = _as_tensor(x)
    return x if x.dtype.is_floating_point or x.dtype.is_complex else x.astype(default_float())


def cholesky(x, /, *, upper=False):
    """The Cholesky factor of each Hermitian positive-definite matrix (lower, or upper with
    ``upper=True``)."""
    lower = _rust_linalg["cholesky"](_as_tensor(x))
    return _nabla.conj(lower).mT if upper else lower


def cross(x1, x2, /, *, axis=-1):
    """The cross product of 3-vectors along ``axis``."""
    a, b = _shapes._promoted(_as_tensor(x1), _as_tensor(x2))
    a, b = _shapes.broadcast_arrays(a, b)
    if a.shape[axis] != 3:
        raise ValueError(f"cross: axis {axis} has size {a.shape[axis]}, not 3")
    a, b = _shapes.moveaxis(a, axis, -1), _shapes.moveaxis(b, axis, -1)
    return _shapes.moveaxis(_rust_linalg["cross"](a, b), -1, axis)


def det(x, /):
    """The determinant of each matrix."""
    return _rust_linalg["det"](_as_tensor(x))


def diagonal(x, /, *, offset=0):
    """Diagonal ``offset`` of each matrix (over the last two axes)."""
    return _as_tensor(x).diagonal(offset, -2, -1)


def eigh(x, /):
    """Eigenvalues (ascending) and eigenvectors of each Hermitian matrix."""
    return EighResult(*_rust_linalg["eigh"](_as_tensor(x)))


def eig(x, /):
    """Eigenvalues and eigenvectors of each square matrix (complex)."""
    return EigResult(*_rust_linalg["eig"](_as_tensor(x)))


def eigvalsh(x, /):
    """Eigenvalues (ascending) of each Hermitian matrix."""
    return _rust_linalg["eigvalsh"](_as_tensor(x))


def eigvals(x, /):
    """Eigenvalues of each square matrix (complex)."""
    return _rust_linalg["eigvals"](_as_tensor(x))


def inv(x, /):
    """The inverse of each square matrix."""
    return _rust_linalg["inv"](_as_tensor(x))


def matrix_power(x, n, /):
    """Each square matrix to the integer power ``n`` (negative powers invert)."""
    return _rust_linalg["matrix_power"](_as_tensor(x), n)


def solve(x1, x2, /):
    """The solution of ``x1 @ y = x2`` (``x2`` a batch of vectors or matrices)."""
    return _rust_linalg["solve"](*_shapes._promoted(_as_tensor(x1), _as_tensor(x2)))


def qr(x, /, *, mode="reduced"):
    """The QR factorisation of each matrix (``mode`` ``"reduced"`` or ``"complete"``)."""
    return QRResult(*_rust_linalg["qr"](_as_tensor(x), mode))


def slogdet(x, /):
    """The sign and the log of the absolute value of each matrix's determinant."""
    return SlogdetResult(*_rust_linalg["slogdet"](_as_tensor(x)))


def _unit_scaled(x):
    """``x`` divided by each matrix's largest magnitude (when finite and non-zero) and that scale
    (shape ``[..., 1, 1]``), so that an SVD's iteration sees entries near 1 and converges whatever
    the matrix's range."""
    if x.size == 0:
        return x, None
    scale = _nabla.max(abs(x), (x.ndim - 2, x.ndim - 1), False)
    scale = _nabla.where(_nabla.isfinite(scale) & (scale > 0), scale, _nabla.ones_like(scale))
    scale = scale.reshape(*scale.shape, 1, 1)
    return x / scale.astype(x.dtype), scale


def svd(x, /, *, full_matrices=True):
    """``U, S, Vh`` with ``x = U @ diag(S) @ Vh``, singular values descending."""
    unit, scale = _unit_scaled(_as_tensor(x))
    u, s, vh = _rust_linalg["svd"](unit, full_matrices)
    return SVDResult(u, s if scale is None else s * scale.reshape(*scale.shape[:-1]), vh)


def svdvals(x, /):
    """The singular values of each matrix, descending."""
    unit, scale = _unit_scaled(_as_tensor(x))
    s = _rust_linalg["svdvals"](unit)
    return s if scale is None else s * scale.reshape(*scale.shape[:-1])


def _default_rtol(x, singular):
    m, n = x.shape[-2], x.shape[-1]
    return finfo(singular.dtype).eps * max(m, n)


def _per_matrix(rtol):
    """A tolerance per matrix (an array over the batch) made to broadcast against singular values."""
    return rtol.reshape(*rtol.shape, 1) if isinstance(rtol, _nabla.Tensor) else rtol


def pinv(x, /, *, rtol=None):
    """The Moore-Penrose pseudo-inverse of each matrix; singular values below ``rtol`` times the
    largest are treated as zero (default: machine epsilon times the larger dimension)."""
    x = _as_tensor(x)
    if x.size == 0:
        return _nabla.zeros(*x.shape[:-2], x.shape[-1], x.shape[-2], dtype=x.dtype)
    # pinv(x) = pinv(x / c) / c, with the SVD on the unit-scaled matrix.
    unit, scale = _unit_scaled(x)
    return _pinv_unit(unit, rtol) / scale.astype(x.dtype)


def _pinv_unit(x, rtol):
    u, s, vh = _rust_linalg["svd"](x, False)
    cutoff = _per_matrix(rtol if rtol is not None else _default_rtol(x, s)) * _nabla.max(s, (s.ndim - 1,), True)
    keep = s > cutoff
    inverse = _nabla.where(keep, 1 / _nabla.where(keep, s, _nabla.ones_like(s)), _nabla.zeros_like(s))
    vecs = _nabla.conj(vh).mT * inverse.reshape(*inverse.shape[:-1], 1, inverse.shape[-1]).astype(x.dtype)
    return vecs @ _nabla.conj(u).mT


def matrix_rank(x, /, *, rtol=None):
    """The number of singular values above ``rtol`` times the largest, for each matrix."""
    x = _float(x)
    s = svdvals(x)
    if s.shape[-1] == 0:
        return _nabla.zeros(*s.shape[:-1], dtype=_DTYPES["int64"])
    tol = _per_matrix(rtol if rtol is not None else _default_rtol(x, s))
    cutoff = tol * _nabla.max(s, (s.ndim - 1,), True)
    return _nabla.sum((s > cutoff).astype(_DTYPES["int64"]), (s.ndim - 1,), False)


def outer(x1, x2, /):
    """The outer product of two vectors."""
    a, b = _shapes._promoted(_as_tensor(x1), _as_tensor(x2))
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError("outer: both arguments must be one-dimensional")
    return a.reshape(-1, 1) * b.reshape(1, -1)


def trace(x, /, *, offset=0, dtype=None):
    """The sum of diagonal ``offset`` of each matrix."""
    d = diagonal(x, offset=offset)
    from ._array_api import sum as _sum

    return _sum(d, axis=-1, dtype=dtype)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """The ``ord``-norm of the vectors along ``axis`` (all elements when ``None``); ``ord`` may be
    any real number or ``±inf``."""
    x = _float(x)
    axes = _axes(axis, x.ndim)
    a = abs(x)
    if axes is None:
        out = vector_norm(x.reshape(-1), axis=0, ord=ord)
        return out.reshape(*([1] * x.ndim)) if keepdims else out
    if axes == ():
        return a
    if ord == float("inf"):
        return _nabla.max(a, axes, keepdims)
    if ord == float("-inf"):
        return _nabla.min(a, axes, keepdims)
    if ord == 0:
        return _nabla.sum((a != 0).astype(a.dtype), axes, keepdims)
    if ord == 1:
        return _nabla.sum(a, axes, keepdims)
    if ord == 2:
        return _rust_linalg["norm"](x, None, axes, keepdims)
    return _nabla.sum(a**ord, axes, keepdims) ** (1.0 / ord)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """The ``ord``-norm of each matrix: ``"fro"``, ``"nuc"``, ``1``, ``-1``, ``2``, ``-2``,
    ``inf`` or ``-inf``."""
    x = _float(x)
    axes = (x.ndim - 2, x.ndim - 1)
    if ord == "fro":
        return vector_norm(x, axis=axes, keepdims=keepdims)
    if ord in ("nuc", 2, -2):
        s = svdvals(x)
        out = _nabla.sum(s, (s.ndim - 1,), False) if ord == "nuc" else (
            _nabla.max(s, (s.ndim - 1,), False) if ord == 2 else _nabla.min(s, (s.ndim - 1,), False)
        )
        return out.reshape(*out.shape, 1, 1) if keepdims else out
    if ord in (1, -1, float("inf"), float("-inf")):
        over = x.ndim - 2 if ord in (1, -1) else x.ndim - 1
        sums = _nabla.sum(abs(x), (over,), True)
        other = x.ndim - 1 if ord in (1, -1) else x.ndim - 2
        pick = _nabla.max if ord in (1, float("inf")) else _nabla.min
        out = pick(sums, (other,), True)
        return out if keepdims else out.reshape(*out.shape[:-2])
    raise ValueError(f"matrix_norm: unknown ord {ord!r}")


LINALG = {
    f.__name__: f
    for f in (
        cholesky, cross, det, diagonal, eigh, eig, eigvalsh, eigvals, inv, matrix_power, solve, qr,
        slogdet, svd, svdvals, pinv, matrix_rank, outer, trace, vector_norm, matrix_norm,
    )
}
LINALG.update(
    matmul=_shapes.matmul,
    matrix_transpose=_shapes.matrix_transpose,
    tensordot=_shapes.tensordot,
    vecdot=_shapes.vecdot,
)

_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def hfft(x, /, *, n=None, axis=-1, norm="backward"):
    """The FFT of a signal with Hermitian symmetry, given by its first half (real output of
    length ``n``, default ``2 * (m - 1)``)."""
    return _rust_fft["irfft"](_nabla.conj(_as_tensor(x)), n, axis, _SWAP[norm])


def ihfft(x, /, *, n=None, axis=-1, norm="backward"):
    """The inverse of :func:`hfft`: the first half of the Hermitian spectrum of a real signal."""
    return _nabla.conj(_rust_fft["rfft"](_as_tensor(x), n, axis, _SWAP[norm]))


def fftfreq(n, /, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an ``n``-point FFT with sample spacing ``d``."""
    _check_device(device)
    return _rust_fft["fftfreq"](n, d).astype(dtype if dtype is not None else default_float())


def rfftfreq(n, /, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an ``n``-point real FFT with sample spacing ``d``."""
    _check_device(device)
    return _rust_fft["rfftfreq"](n, d).astype(dtype if dtype is not None else default_float())


FFT = {f.__name__: f for f in (hfft, ihfft, fftfreq, rfftfreq)}


def install() -> None:
    """Puts the standard's functions on ``nabla_rs.linalg`` and ``nabla_rs.fft``."""
    for module, table in ((_nabla.linalg, LINALG), (_nabla.fft, FFT)):
        for name, fn in table.items():
            setattr(module, name, fn)
        module.__all__ = sorted(set(module.__all__) | set(table))
