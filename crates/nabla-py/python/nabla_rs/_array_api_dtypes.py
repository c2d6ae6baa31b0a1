"""The Array API standard's data type functions and inspection namespace over nabla's dtypes:
``finfo``, ``iinfo``, ``isdtype``, ``can_cast``, ``result_type`` and ``__array_namespace_info__``.

Promotion is nabla's (``nabla_rs.dtype.promote``, the rule its ops apply), which is the standard's
table within each kind; mixing kinds, which the standard leaves undefined, gives the higher kind (an
integer array with a float array gives the float, as NumPy and PyTorch do). Python scalars take the
dtype of the array they meet unless they are of a higher kind."""

from __future__ import annotations

from typing import Any, NamedTuple

from . import _nabla

_DTYPES = {d.name: d for d in (getattr(_nabla, n) for n in dir(_nabla)) if isinstance(d, _nabla.dtype)}

# Bits of each integer dtype (signed, unsigned) and of each floating dtype's real part.
_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_UINT_BITS = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}
_FLOAT_BITS = {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}
_COMPLEX_BITS = {"complex64": 32, "complex128": 64}

# The standard's kinds, each the set of dtype names it holds.
_KINDS = {
    "bool": {"bool"},
    "signed integer": set(_INT_BITS),
    "unsigned integer": set(_UINT_BITS),
    "integral": set(_INT_BITS) | set(_UINT_BITS),
    "real floating": {"float32", "float64"},
    "complex floating": set(_COMPLEX_BITS),
}
_KINDS["numeric"] = _KINDS["integral"] | _KINDS["real floating"] | _KINDS["complex floating"]


class finfo_object(NamedTuple):
    """Machine limits of a floating-point dtype (``finfo``)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: Any


class iinfo_object(NamedTuple):
    """Machine limits of an integer dtype (``iinfo``)."""

    bits: int
    max: int
    min: int
    dtype: Any


def _dtype_of(x) -> Any:
    """The nabla dtype of a dtype spelling or of an array."""
    if isinstance(x, _nabla.Tensor):
        return x.dtype
    return _nabla.dtype(x)


def finfo(type, /) -> finfo_object:
    """Limits of a floating dtype (or an array's); for a complex dtype, those of its real part."""
    import numpy as np

    d = _dtype_of(type)
    if d.name not in _FLOAT_BITS and d.name not in _COMPLEX_BITS:
        raise TypeError(f"finfo: {d.name} is not a floating-point dtype")
    real = {"complex64": "float32", "complex128": "float64"}.get(d.name, d.name)
    if real == "bfloat16":
        return finfo_object(16, 2.0**-7, 3.3895313892515355e38, -3.3895313892515355e38, 2.0**-126, _DTYPES[real])
    info = np.finfo(real)
    return finfo_object(
        int(info.bits), float(info.eps), float(info.max), float(info.min), float(info.smallest_normal), _DTYPES[real]
    )


def iinfo(type, /) -> iinfo_object:
    """Limits of an integer dtype (or an array's)."""
    d = _dtype_of(type)
    if d.name in _INT_BITS:
        bits = _INT_BITS[d.name]
        return iinfo_object(bits, 2 ** (bits - 1) - 1, -(2 ** (bits - 1)), d)
    if d.name in _UINT_BITS:
        bits = _UINT_BITS[d.name]
        return iinfo_object(bits, 2**bits - 1, 0, d)
    raise TypeError(f"iinfo: {d.name} is not an integer dtype")


def isdtype(dtype, kind) -> bool:
    """Whether ``dtype`` is ``kind``: a dtype, one of the standard's kind names (``"bool"``,
    ``"signed integer"``, ``"unsigned integer"``, ``"integral"``, ``"real floating"``,
    ``"complex floating"``, ``"numeric"``) or a tuple of those."""
    if not isinstance(dtype, _nabla.dtype):
        raise TypeError(f"isdtype: expected a nabla_rs dtype, got {dtype!r}")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}; the kinds are {', '.join(map(repr, _KINDS))}")
        return dtype.name in _KINDS[kind]
    if isinstance(kind, _nabla.dtype):
        return dtype == kind
    raise TypeError(f"isdtype: kind must be a dtype, a kind name or a tuple of those, got {kind!r}")


def _category(name: str) -> str:
    if name == "bool":
        return "bool"
    if name in _INT_BITS or name in _UINT_BITS:
        return "int"
    return "inexact"


def _promote(a: str, b: str) -> str:
    """The promotion of two dtype names: nabla's rule, which every op with two operands applies
    (the standard's table within a kind; across kinds, which the standard leaves open, the higher
    kind, as NumPy and PyTorch)."""
    return _DTYPES[a].promote(_DTYPES[b]).name


def result_type(*arrays_and_dtypes):
    """The dtype the standard's promotion rules give for arrays, dtypes and Python scalars together
    (scalars take the arrays' dtypes; alone they give the default dtypes)."""
    names, scalars = [], []
    for x in arrays_and_dtypes:
        if isinstance(x, (bool, int, float, complex)) and not isinstance(x, _nabla.Tensor):
            scalars.append(x)
        else:
            names.append(_dtype_of(x).name)
    if not names and not scalars:
        raise ValueError("result_type: needs at least one array or dtype")
    if not names:
        names.append(_scalar_dtype(scalars.pop(0)))
    out = names[0]
    for n in names[1:]:
        out = _promote(out, n)
    for s in scalars:
        out = _promote(out, _scalar_dtype(s)) if _scalar_widens(out, s) else out
    return _DTYPES[out]


def default_float():
    """The default floating-point dtype (float32 unless ``set_default_dtype`` changed it)."""
    return _nabla._default_dtype()


def default_complex():
    """The default complex dtype: complex128 under a float64 default, complex64 otherwise."""
    return _DTYPES["complex128"] if default_float() == _DTYPES["float64"] else _DTYPES["complex64"]


def _scalar_dtype(s) -> str:
    if isinstance(s, bool):
        return "bool"
    if isinstance(s, int):
        return "uint64" if s > 2**63 - 1 else "int64"
    if isinstance(s, float):
        return default_float().name
    return default_complex().name


def _scalar_widens(name: str, s) -> bool:
    """Whether a Python scalar moves an array's dtype to another kind (a float scalar with an
    integer array, a complex one with a real array); same-kind scalars never widen."""
    cat = _category(name)
    if isinstance(s, bool):
        return False
    if isinstance(s, int):
        return cat == "bool"
    if isinstance(s, float):
        return cat != "inexact"
    return name not in _COMPLEX_BITS


def can_cast(from_, to, /) -> bool:
    """Whether ``from_`` (a dtype or an array) promotes to ``to``: casting keeps every value's
    kind and loses no range."""
    a, b = _dtype_of(from_).name, _dtype_of(to).name
    return _promote(a, b) == b


class _Info:
    """``__array_namespace_info__()``: what this namespace offers (devices, dtypes, capabilities)."""

    __module__ = "nabla_rs"

    def capabilities(self) -> dict:
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": None}

    def default_device(self) -> str:
        return "cpu"

    def devices(self) -> tuple:
        return ("cpu",)

    def default_dtypes(self, *, device=None) -> dict:
        _check_device(device)
        return {
            "real floating": default_float(),
            "complex floating": default_complex(),
            "integral": _DTYPES["int64"],
            "indexing": _DTYPES["int64"],
        }

    def dtypes(self, *, device=None, kind=None) -> dict:
        _check_device(device)
        names = ["bool", *_INT_BITS, *_UINT_BITS, "float32", "float64", "complex64", "complex128"]
        if kind is not None:
            names = [n for n in names if isdtype(_DTYPES[n], kind)]
        return {n: _DTYPES[n] for n in names}


def _check_device(device) -> None:
    if device is not None and device != "cpu":
        raise ValueError(f"unknown device {device!r}; this namespace's devices are ('cpu',)")


def __array_namespace_info__() -> _Info:
    """The standard's inspection object for this namespace."""
    return _Info()
