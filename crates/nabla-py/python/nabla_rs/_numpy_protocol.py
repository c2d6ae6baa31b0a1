"""NumPy's dispatch protocols on tensors (NEP 13 ``__array_ufunc__`` and NEP 18
``__array_function__``): ``np.exp(t)``, ``np.sum(t, axis=0)``, ``array + t`` run nabla's own op and
return a tensor, so gradients flow through them. A NumPy function or ufunc that nabla has no op for
runs on NumPy copies of the tensors when no gradient is needed, as before, and raises ``TypeError``
when a tensor requires grad rather than silently dropping its graph."""

import operator
import sys
from typing import Any, Callable, Dict, Optional

import numpy as np

from . import _nabla
from ._pytree import tree_leaves, tree_map

# NumPy ufuncs whose nabla op has another name or is an operator; every other ufunc runs the nabla
# function of its own name when there is one.
_UFUNC_ALIASES: Dict[str, Callable] = {
    "add": operator.add,
    "subtract": operator.sub,
    "multiply": operator.mul,
    "divide": operator.truediv,
    "true_divide": operator.truediv,
    "floor_divide": operator.floordiv,
    "remainder": operator.mod,
    "mod": operator.mod,
    "power": operator.pow,
    "negative": operator.neg,
    "positive": operator.pos,
    "absolute": operator.abs,
    "fabs": operator.abs,
    "invert": operator.invert,
    "bitwise_not": operator.invert,
    "bitwise_and": operator.and_,
    "bitwise_or": operator.or_,
    "bitwise_xor": operator.xor,
    "equal": operator.eq,
    "not_equal": operator.ne,
    "less": operator.lt,
    "less_equal": operator.le,
    "greater": operator.gt,
    "greater_equal": operator.ge,
    "matmul": operator.matmul,
    "arcsin": _nabla.asin,
    "arccos": _nabla.acos,
    "arctan": _nabla.atan,
    "arctan2": _nabla.atan2,
    "conjugate": _nabla.conj,
}


def _reduction(method: str, allowed=("axis", "keepdims")) -> Callable:
    """``np.<name>(t, axis=None, keepdims=False)`` as the tensor's method; ``None`` (not handled)
    for arguments past those."""

    def run(a, *args, **kwargs):
        names = ("axis", "keepdims")
        for name, value in zip(names, args):
            kwargs.setdefault(name, value)
        if len(args) > len(names) or any(k not in allowed and v is not None for k, v in kwargs.items()):
            return None
        kwargs = {k: v for k, v in kwargs.items() if k in allowed}
        return getattr(_as_tensor(a), method)(**kwargs)

    return run


# NumPy functions that run nabla's op (with the arguments listed; others fall back).
_FUNCTIONS: Dict[str, Callable[..., Optional[Any]]] = {
    "sum": _reduction("sum"),
    "mean": _reduction("mean"),
    "max": _reduction("max"),
    "amax": _reduction("max"),
    "min": _reduction("min"),
    "amin": _reduction("min"),
    "prod": _reduction("prod"),
    "any": _reduction("any"),
    "all": _reduction("all"),
    "argmax": _reduction("argmax"),
    "argmin": _reduction("argmin"),
    "concatenate": lambda seq, axis=0: _nabla.concatenate([_as_tensor(t) for t in seq], axis),
    "stack": lambda seq, axis=0: _nabla.stack([_as_tensor(t) for t in seq], axis),
    "where": lambda c, x, y: _nabla.where(_as_tensor(c), _as_tensor(x), _as_tensor(y)),
    "reshape": lambda a, shape: _as_tensor(a).reshape(*((shape,) if isinstance(shape, int) else shape)),
    "transpose": lambda a, axes=None: _as_tensor(a).transpose(*(() if axes is None else axes)),
}


def _as_tensor(x):
    """A NumPy argument as a tensor, read by ``np.asarray`` first so that it keeps the dtype NumPy
    gives it (Python floats in a list become float64, as in NumPy, not nabla's float32)."""
    return x if isinstance(x, _nabla.Tensor) else _nabla.tensor(np.asarray(x))


def _tensors(tree):
    """The tensors among the leaves of ``tree``."""
    return [x for x in tree_leaves(tree) if isinstance(x, _nabla.Tensor)]


def _to_numpy(tree):
    """``tree`` with every tensor replaced by a NumPy copy of its values."""
    return tree_map(lambda x: np.array(x) if isinstance(x, _nabla.Tensor) else x, tree)


def _fallback(name: str, run: Callable, args, kwargs):
    """Runs NumPy's own ``name`` on NumPy copies, unless a tensor needs its graph kept."""
    if any(t.requires_grad for t in _tensors((args, kwargs))):
        raise TypeError(
            f"numpy.{name} has no nabla op and would drop the graph of a tensor that requires grad; "
            "use nabla_rs's functions, or pass t.detach() to compute without gradients"
        )
    if _tensors(kwargs.get("out")):
        raise TypeError(f"numpy.{name}: tensors are immutable and cannot be an out= argument")
    return run(*_to_numpy(args), **_to_numpy(kwargs))


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """NEP 13: the ufunc as nabla's op when it is a plain call with no ``out=`` or other options."""
    name = ufunc.__name__
    op = _UFUNC_ALIASES.get(name) or getattr(sys.modules[__package__], name, None)
    plain = method == "__call__" and not {k: v for k, v in kwargs.items() if v is not None}
    if op is not None and plain:
        operands = [x if isinstance(x, _nabla.Tensor) or np.isscalar(x) else _as_tensor(x) for x in inputs]
        return op(*operands)
    return _fallback(f"{name}.{method}" if method != "__call__" else name, getattr(ufunc, method), inputs, kwargs)


def array_function(self, func, types, args, kwargs):
    """NEP 18: the NumPy function as nabla's op where there is one for its arguments."""
    name = func.__name__
    run = _FUNCTIONS.get(name)
    if run is not None:
        try:
            result = run(*args, **kwargs)
        except TypeError:
            result = None
        if result is not None:
            return result
    return _fallback(name, func, args, kwargs)
