"""PyTorch's in-place methods (``add_``, ``mul_``, ``zero_``, ``fill_``, ``copy_``, ``clamp_``, ...,
``x += y``) and gradient hooks (``register_hook``, ``retain_grad``).

nabla's buffers are immutable, so an in-place method computes its result with the ordinary
differentiable op and the tensor then stands for the result (as ``t[i] = v`` does): every Python
reference to the tensor sees the new values, the graph records the op, and values saved for a
backward pass keep the old values, so gradients are right where PyTorch would raise its
"modified by an inplace operation" error. A leaf that requires gradients can only be written
under ``no_grad`` (as in PyTorch): it stays a leaf and keeps its ``.grad``. Tensors taken from
this one before (``t[0]``, ``t.reshape(...)``) are copies, not views, and keep the old values."""

from __future__ import annotations

import weakref

from . import _nabla
from ._array_api_dtypes import result_type
from ._transforms import _as_tensor

Tensor = _nabla.Tensor


def _casts_in_place(source, target) -> bool:
    """PyTorch's rule for writing a result of dtype ``source`` into a tensor of dtype ``target``:
    never complex into real, floating into integer, or anything else into bool."""
    if source == target:
        return True
    if source.is_complex and not target.is_complex:
        return False
    if source.is_floating_point and not (target.is_floating_point or target.is_complex):
        return False
    return not (target == _nabla.bool and source != _nabla.bool)


def write(self, result, name: str):
    """Makes ``self`` stand for ``result`` (same shape; a dtype PyTorch's rule casts to
    ``self``'s) and returns ``self``."""
    result = _as_tensor(result)
    if tuple(result.shape) != tuple(self.shape):
        raise RuntimeError(
            f"{name}: the result has shape {tuple(result.shape)}, the tensor written in place "
            f"{tuple(self.shape)} (an in-place op cannot change the shape)"
        )
    if result.dtype != self.dtype:
        if not _casts_in_place(result.dtype, self.dtype):
            raise RuntimeError(f"{name}: a result of dtype {result.dtype} cannot be written into a {self.dtype} tensor")
        result = result.astype(self.dtype)
    self._rebind(result)
    return self


def _in_place(name: str, compute):
    def method(self, *args, **kwargs):
        return write(self, compute(self, *args, **kwargs), name)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In place: ``self`` becomes ``self.{name[:-1]}(...)`` and is returned (see ``nabla_rs._inplace``)."
    return method


def _with_alpha(op):
    def compute(self, other, *, alpha=1):
        return op(self, _as_tensor(other) * alpha if alpha != 1 else other)

    return compute


def _divide(self, other, *, rounding_mode=None):
    if rounding_mode is None:
        return self / other
    if rounding_mode == "floor":
        return self // other
    if rounding_mode == "trunc":
        other = _as_tensor(other)
        quotient = _nabla.trunc(self / other)
        integers = not (self.dtype.is_floating_point or other.dtype.is_floating_point)
        return quotient.astype(result_type(self, other)) if integers else quotient
    raise ValueError(f"div_: rounding_mode must be None, 'floor' or 'trunc', got {rounding_mode!r}")


def _addcmul(self, tensor1, tensor2, *, value=1):
    return self + value * (_as_tensor(tensor1) * tensor2)


def _addcdiv(self, tensor1, tensor2, *, value=1):
    return self + value * (_as_tensor(tensor1) / tensor2)


def _lerp(self, end, weight):
    return self + weight * (_as_tensor(end) - self)


def _replacing(self, values):
    """``values`` (of ``self``'s shape) in place of ``self``'s: a tensor that requires gradients
    stays in the graph, with zero gradient for the replaced values, as PyTorch's."""
    if not self.requires_grad:
        return values
    return _nabla.where(_nabla.ones((), dtype=_nabla.bool), values, self)


def _fill(self, value):
    value = _as_tensor(value)
    if value.ndim != 0:
        raise RuntimeError(f"fill_: the value must be a number or a 0-d tensor, got shape {tuple(value.shape)}")
    return _replacing(self, value.astype(self.dtype).broadcast_to(*self.shape))


def _copy(self, src, non_blocking=False):
    return _replacing(self, _as_tensor(src).astype(self.dtype).broadcast_to(*self.shape))


def _random(draw):
    def compute(self, *args, generator=None):
        if generator is not None:
            raise ValueError("the in-place random methods draw from nabla's global generator; pass generator=None")
        if not self.dtype.is_floating_point:
            raise TypeError(f"the in-place random methods fill floating-point tensors, not {self.dtype}")
        return draw(self, *args)

    return compute


def _uniform(self, a=0.0, b=1.0):
    return a + (b - a) * _nabla.rand(*self.shape, dtype=self.dtype)


def _normal(self, mean=0.0, std=1.0):
    return mean + std * _nabla.randn(*self.shape, dtype=self.dtype)


_UNARY_SKIPPED = {"real", "imag", "isnan", "isfinite", "signbit", "conj"}
_EXTRA = {
    "add_": _with_alpha(lambda a, b: a + b),
    "sub_": _with_alpha(lambda a, b: a - b),
    "div_": _divide,
    "remainder_": lambda self, other: self % other,
    "reciprocal_": lambda self: _nabla.recip(self),
    "negative_": lambda self: -self,
    "clamp_": lambda self, min=None, max=None: self.clip(min, max),
    "clip_": lambda self, min=None, max=None: self.clip(min, max),
    "relu_": lambda self: _nabla.nn.relu(self),
    "zero_": lambda self: _replacing(self, _nabla.zeros_like(self)),
    "fill_": _fill,
    "copy_": _copy,
    "masked_fill_": lambda self, mask, value: self.masked_fill(mask, value),
    "index_add_": lambda self, dim, index, source, *, alpha=1: self.index_add(dim, index, source * alpha),
    "addcmul_": _addcmul,
    "addcdiv_": _addcdiv,
    "lerp_": _lerp,
    "scatter_": lambda self, *args, **kwargs: self.scatter(*args, **kwargs),
    "scatter_add_": lambda self, dim, index, src: self.scatter_add(dim, index, src),
    "nan_to_num_": lambda self, *args, **kwargs: self.nan_to_num(*args, **kwargs),
    "uniform_": _random(_uniform),
    "normal_": _random(_normal),
}

METHODS = {}
for _name in _nabla._unary_ops:
    if _name not in _UNARY_SKIPPED:
        METHODS[_name + "_"] = _in_place(_name + "_", getattr(_nabla, _name))
for _name in _nabla._binary_ops:
    METHODS[_name + "_"] = _in_place(_name + "_", getattr(_nabla, _name))
for _name, _compute in _EXTRA.items():
    METHODS[_name] = _in_place(_name, _compute)
del _name, _compute

_OPERATORS = {
    "__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_", "__itruediv__": "div_",
    "__ifloordiv__": None, "__imod__": "remainder_", "__ipow__": "pow_", "__iand__": None,
    "__ior__": None, "__ixor__": None, "__ilshift__": "bitwise_left_shift_",
    "__irshift__": "bitwise_right_shift_", "__imatmul__": None,
}  # fmt: skip


def _operator(dunder: str, method: str):
    binary = "__" + dunder[3:]

    def operator(self, other):
        if method is not None:
            return METHODS[method](self, other)
        return write(self, getattr(self, binary)(other), dunder)

    operator.__name__ = operator.__qualname__ = dunder
    operator.__doc__ = f"``self {dunder[3:-2]}= other`` in place, as PyTorch's and NumPy's."
    return operator


for _dunder, _method in _OPERATORS.items():
    METHODS[_dunder] = _operator(_dunder, _method)
del _dunder, _method


class RemovableHandle:
    """What the ``register_*hook`` methods return: ``remove()`` takes the hook off (also as a
    ``with`` block's end). A hook kept in a Python dict is stored under the handle's ``id``; one
    kept elsewhere (a leaf's gradient slot in Rust) is taken off by ``on_remove``."""

    _next_id = 0

    def __init__(self, hooks=None, hook=None, *, on_remove=None):
        RemovableHandle._next_id += 1
        self.id = RemovableHandle._next_id
        self._hooks, self._on_remove = hooks, on_remove
        if hooks is not None:
            hooks[self.id] = hook

    def remove(self) -> None:
        """Stops the hook from running (again)."""
        if self._hooks is not None:
            self._hooks.pop(self.id, None)
        if self._on_remove is not None:
            self._on_remove()
            self._on_remove = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def replacement_gradient(what: str, new, old):
    """What a gradient hook returned in place of ``old``: ``old`` for ``None``, else ``new`` (of
    ``old``'s shape, in its dtype). The one rule of the Python hooks (``what`` names the kind)."""
    if new is None or old is None:
        return old if new is None else new
    new = _as_tensor(new)
    if tuple(new.shape) != tuple(old.shape):
        raise RuntimeError(f"{what}: the hook returned a gradient of shape {tuple(new.shape)} for one of shape {tuple(old.shape)}")
    return new.astype(old.dtype)


_computed_hooks = {}
"""For each computed tensor with hooks (by ``id``): its hooks by handle and whether it retains its
gradient. The tensor stands for one identity op whose reverse rule runs them."""


def _hooked(self) -> dict:
    """The hook state of the computed tensor ``self``, made (with its identity op) on first use."""
    key = id(self)
    state = _computed_hooks.get(key)
    if state is not None:
        return state
    state = _computed_hooks[key] = {"hooks": {}, "retain": False, "grad": None}
    weakref.finalize(self, _computed_hooks.pop, key, None)

    def reverse(inputs, output, g):
        for hook in list(state["hooks"].values()):
            g = replacement_gradient("register_hook", hook(g), g)
        if state["retain"]:
            held = state["grad"]
            state["grad"] = g.detach() if held is None else held + g.detach()
        return [g]

    self._rebind(_nabla._custom_call("register_hook", lambda xs: xs[0] * 1, reverse, None, [self]))
    return state


def register_hook(self, hook):
    """Runs ``hook(grad)`` on this tensor's gradient in every backward pass, as PyTorch's: the hook
    may return a replacement (same shape) or ``None``; hooks run in the order registered. On a
    leaf, the hook sees each gradient before it is added to ``.grad``. On a computed tensor, it
    sees the gradient flowing through the uses of the tensor made after its first hook (the tensor
    then stands for an identity op carrying its hooks), in ``backward``, ``grad``, ``vjp`` and the
    other reverse transforms."""
    if not self.requires_grad:
        raise RuntimeError("register_hook: the tensor does not require grad, so no gradient reaches a hook")
    if self.is_leaf:
        handle = self._add_grad_hook(hook)
        owner = weakref.ref(self)

        def remove():
            leaf = owner()
            if leaf is not None:
                leaf._remove_grad_hook(handle)

        return RemovableHandle(on_remove=remove)
    return RemovableHandle(_hooked(self)["hooks"], hook)


def register_post_accumulate_grad_hook(self, hook):
    """Runs ``hook(tensor)`` after each ``backward`` added to this leaf's ``.grad`` (an optimizer
    step per parameter, as PyTorch's); returns a handle whose ``remove()`` takes it off."""
    if not (self.is_leaf and self.requires_grad):
        raise RuntimeError("register_post_accumulate_grad_hook: only a leaf tensor that requires grad takes one")
    owner = weakref.ref(self)

    def call():
        leaf = owner()
        if leaf is not None:
            hook(leaf)

    handle = self._add_grad_hook(call, True)

    def remove():
        leaf = owner()
        if leaf is not None:
            leaf._remove_grad_hook(handle)

    return RemovableHandle(on_remove=remove)


_rust_grad = Tensor.__dict__["grad"]


def retain_grad(self) -> None:
    """Keeps this computed tensor's gradient in ``.grad`` after ``backward`` (accumulating over
    calls, as a leaf's), as PyTorch's ``retain_grad``: the gradient after the tensor's hooks. A
    leaf keeps its gradient anyway."""
    if not self.requires_grad:
        raise RuntimeError("retain_grad: the tensor does not require grad")
    if not self.is_leaf:
        _hooked(self)["retain"] = True


def _retaining(self):
    state = _computed_hooks.get(id(self))
    return state if state is not None and state["retain"] else None


def _get_grad(self):
    state = _retaining(self)
    return state["grad"] if state is not None else _rust_grad.__get__(self)


def _set_grad(self, value):
    state = _retaining(self)
    if state is None:
        _rust_grad.__set__(self, value)
        return
    if value is not None and tuple(_as_tensor(value).shape) != tuple(self.shape):
        raise RuntimeError(f"assigned grad has shape {tuple(_as_tensor(value).shape)}, the tensor {tuple(self.shape)}")
    state["grad"] = value


METHODS["register_hook"] = register_hook
METHODS["register_post_accumulate_grad_hook"] = register_post_accumulate_grad_hook
METHODS["retain_grad"] = retain_grad
METHODS["retains_grad"] = property(lambda self: _retaining(self) is not None, doc="Whether ``retain_grad`` was called on this computed tensor.")
METHODS["grad"] = property(_get_grad, _set_grad, doc=_rust_grad.__doc__)
