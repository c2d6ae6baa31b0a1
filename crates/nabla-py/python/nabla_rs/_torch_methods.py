"""PyTorch's spellings of the tensor methods: ``dim=``/``keepdim=`` on every method that takes an
axis, ``max(dim)``/``min(dim)``/``sort`` returning ``(values, indices)``, ``var``/``std`` with
``unbiased``/``correction``, and the small methods (``new_zeros``, ``expand_as``, ``type_as``, ...).
NumPy's ``axis=``/``keepdims=`` keep working beside them."""

from __future__ import annotations

import collections
import inspect

from . import _nabla
from ._transforms import _as_tensor

values_indices = collections.namedtuple("values_indices", ["values", "indices"])
"""What ``max(dim)``, ``min(dim)``, ``sort`` and ``topk`` return, as ``torch.return_types``: a
tuple ``(values, indices)`` whose fields have those names."""

Tensor = _nabla.Tensor
_RUST = {name: getattr(Tensor, name) for name in ("max", "min", "sort", "topk", "var", "std")}


def _axis_keywords(name: str, kwargs: dict) -> dict:
    """``kwargs`` with PyTorch's ``dim``/``keepdim`` renamed to NumPy's ``axis``/``keepdims``."""
    for torch_name, numpy_name in (("dim", "axis"), ("keepdim", "keepdims")):
        if torch_name in kwargs:
            if numpy_name in kwargs:
                raise TypeError(f"{name}() got both {torch_name}= and {numpy_name}=")
            kwargs[numpy_name] = kwargs.pop(torch_name)
    return kwargs


def _accepting_dim(name: str):
    """The method ``name`` accepting ``dim=``/``keepdim=`` besides ``axis=``/``keepdims=``."""
    method = getattr(Tensor, name)

    def with_dim(self, *args, **kwargs):
        return method(self, *args, **_axis_keywords(name, kwargs))

    with_dim.__name__ = with_dim.__qualname__ = name
    with_dim.__doc__ = (method.__doc__ or "").rstrip() + "\n\nPyTorch's ``dim=`` and ``keepdim=`` are accepted too."
    return with_dim


AXIS_METHODS = (
    "sum", "prod", "mean", "any", "all", "logsumexp", "argmax", "argmin", "cumsum", "softmax",
    "log_softmax", "argsort", "gather", "index_select", "index_add", "split", "chunk", "squeeze",
    "unsqueeze", "flip", "diagonal",
)  # fmt: skip


def _reduce_to_pair(self, name: str, dim, keepdim: bool):
    """``(values, indices)`` of the maximum or minimum along ``dim``, as PyTorch's ``max(dim)``:
    the values are gathered at the indices, so the gradient goes to that element (not shared
    among ties, as the plain reduction shares it)."""
    indices = getattr(self, "argmax" if name == "max" else "argmin")(dim, True)
    values = self.gather(dim, indices)
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return values_indices(values, indices)


def _extremum(name: str):
    def extremum(self, *args, **kwargs):
        other = args[0] if args else kwargs.get("other")
        if isinstance(other, Tensor) or (args and hasattr(other, "__array__")):
            if len(args) > 1 or set(kwargs) - {"other"}:
                raise TypeError(f"{name}(other) takes no further arguments")
            return (_nabla.maximum if name == "max" else _nabla.minimum)(self, _as_tensor(other))
        dim = args[0] if args else kwargs.pop("dim", None)
        if isinstance(dim, int) and not isinstance(dim, bool) and "axis" not in kwargs:
            keepdim = args[1] if len(args) > 1 else kwargs.pop("keepdim", kwargs.pop("keepdims", False))
            if len(args) > 2 or kwargs:
                raise TypeError(f"{name}(dim, keepdim=False) got unexpected arguments")
            return _reduce_to_pair(self, name, dim, bool(keepdim))
        kwargs = _axis_keywords(name, kwargs)
        if dim is not None:
            kwargs["axis"] = dim
        return _RUST[name](self, *args[1:], **kwargs)

    extremum.__name__ = extremum.__qualname__ = name
    extremum.__doc__ = (
        f"The {name}imum: of every element (``t.{name}()``), over ``axis=`` (an int or a tuple, a "
        f"tensor), or, as PyTorch's ``t.{name}(dim, keepdim=False)`` with an int ``dim``, the pair "
        f"``(values, indices)``; ``t.{name}(other)`` is the elementwise {name}imum."
    )
    return extremum


def sort(self, dim=-1, descending=False, stable=False, *, axis=None):
    """``(values, indices)`` of the values sorted along ``dim`` (``axis``), as ``torch.sort``; the
    sort is always stable and puts NaN last. The values are gathered by the indices, so gradients
    flow to the elements they came from."""
    if axis is not None:
        dim = axis
    indices = self.argsort(dim, descending)
    return values_indices(self.gather(dim, indices), indices)


def topk(self, k, dim=-1, largest=True, sorted=True, *, axis=None):
    """``(values, indices)`` of the ``k`` largest (smallest with ``largest=False``) entries along
    ``dim``, as ``torch.topk``; always sorted."""
    values, indices = _RUST["topk"](self, k, dim if axis is None else axis, largest)
    return values_indices(values, indices)


def _moment(name: str):
    def moment(self, *args, **kwargs):
        from ._array_api import std, var

        if args:
            if "axis" in kwargs or "dim" in kwargs:
                raise TypeError(f"{name}() got the axis twice")
            kwargs["axis"], args = args[0], args[1:]
        if args and "unbiased" not in kwargs:
            kwargs["unbiased"], args = args[0], args[1:]
        if args:
            raise TypeError(f"{name}(dim, unbiased, keepdim=...) takes at most two positional arguments")
        return (var if name == "var" else std)(self, **kwargs)

    moment.__name__ = moment.__qualname__ = name
    moment.__doc__ = (
        f"The {'variance' if name == 'var' else 'standard deviation'} over ``axis``/``dim``, with "
        "NumPy's ``ddof``, the Array API's ``correction`` or PyTorch's ``unbiased``. The default "
        "correction is 0, as NumPy's and JAX's (PyTorch's is 1: pass ``unbiased=True``)."
    )
    return moment


def cumprod(self, dim=None, *, axis=None, dtype=None):
    """The cumulative product along ``dim`` (``axis``), as ``torch.cumprod``."""
    from ._array_api import cumulative_prod

    return cumulative_prod(self, axis=dim if axis is None else axis, dtype=dtype)


def new_tensor(self, data, dtype=None):
    """A new tensor of ``data`` with this tensor's dtype unless ``dtype`` is given."""
    return _nabla.tensor(data, dtype=dtype or self.dtype)


def _new_filled(name: str, fill):
    def new(self, *size, dtype=None):
        shape = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
        return fill(shape, dtype or self.dtype)

    new.__name__ = new.__qualname__ = name
    new.__doc__ = f"``{name}(*size, dtype=None)``: a tensor of ``size`` with this tensor's dtype, as PyTorch's."
    return new


def new_full(self, size, fill_value, dtype=None):
    """A tensor of ``size`` filled with ``fill_value``, with this tensor's dtype by default."""
    return _nabla.full(tuple(size), fill_value, dtype=dtype or self.dtype)


def expand_as(self, other):
    """This tensor broadcast to ``other``'s shape."""
    return self.broadcast_to(*other.shape)


def reshape_as(self, other):
    """This tensor reshaped to ``other``'s shape."""
    return self.reshape(*other.shape)


def type_as(self, other):
    """This tensor converted to ``other``'s dtype."""
    return self.astype(other.dtype)


def transpose_last(self):
    """PyTorch's ``t()``: a matrix transposed (a vector or scalar as it is)."""
    if self.ndim > 2:
        raise ValueError(f"t() expects a tensor of at most 2 dimensions, got {self.ndim}; use mT or transpose")
    return self.T if self.ndim == 2 else self


def narrow(self, dim, start, length):
    """The slice ``start:start+length`` along ``dim``, as ``torch.narrow``."""
    dim = dim % max(self.ndim, 1)
    if start < 0:
        start += self.shape[dim]
    if not (0 <= start and length >= 0 and start + length <= self.shape[dim]):
        raise IndexError(f"narrow: start {start} and length {length} out of range for size {self.shape[dim]}")
    key = (slice(None),) * dim + (slice(start, start + length),)
    return self[key]


METHODS = {name: _accepting_dim(name) for name in AXIS_METHODS}
METHODS.update(
    {
        "max": _extremum("max"),
        "min": _extremum("min"),
        "sort": sort,
        "topk": topk,
        "var": _moment("var"),
        "std": _moment("std"),
        "cumprod": cumprod,
        "new_tensor": new_tensor,
        "new_zeros": _new_filled("new_zeros", lambda s, d: _nabla.zeros(*s, dtype=d)),
        "new_ones": _new_filled("new_ones", lambda s, d: _nabla.ones(*s, dtype=d)),
        "new_empty": _new_filled("new_empty", lambda s, d: _nabla.zeros(*s, dtype=d)),
        "new_full": new_full,
        "expand_as": expand_as,
        "reshape_as": reshape_as,
        "view_as": reshape_as,
        "type_as": type_as,
        "t": transpose_last,
        "narrow": narrow,
    }
)


def top_level_extremum(name: str, standard):
    """``nb.max``/``nb.min``: the Array API's function (``axis=``, ``keepdims=``), and PyTorch's
    ``torch.max(x, dim)`` (the ``(values, indices)`` pair) and ``torch.max(x, other)``."""

    def extremum(x, /, *args, **kwargs):
        dim = kwargs.get("dim")
        if args or "other" in kwargs or (isinstance(dim, int) and not isinstance(dim, bool)):
            return getattr(_as_tensor(x), name)(*args, **kwargs)
        return standard(x, **kwargs)

    extremum.__name__ = extremum.__qualname__ = name
    extremum.__signature__ = inspect.signature(standard)  # the standard's, which tools read
    extremum.__doc__ = standard.__doc__ + (
        f" PyTorch's ``{name}(x, dim, keepdim=False)`` gives ``(values, indices)`` and "
        f"``{name}(x, other)`` the elementwise {name}imum."
    )
    return extremum
