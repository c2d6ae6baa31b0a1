"""nabla from Python: tensors with NumPy-style ops and indexing, PyTorch-style autograd
(``requires_grad``, ``backward``, ``.grad``) and JAX-style transforms (``grad``, ``vjp``, ``jvp``,
``jacfwd``, ``jacrev``, ``hessian``, ``hvp``, ``vmap``, ``jit``) to any order, on nabla's Rust core.

>>> import nabla_rs as nb
>>> x = nb.tensor([1.0, 2.0, 3.0])
>>> nb.grad(lambda x: (x * x).sum())(x)
tensor([2., 4., 6.])
"""

from __future__ import annotations

import functools as _functools
import sys as _sys

from . import _nabla
# The creation functions (arange, zeros, ...) come from the Array API namespace at the end.
from ._nabla import (  # noqa: F401
    Tensor,
    concatenate,
    einsum,
    from_numpy,
    get_rng_state,
    is_autocast_enabled,
    is_grad_enabled,
    manual_seed,
    rand,
    randn,
    set_rng_state,
    tensor,
)
from ._nabla import dtype, fft, linalg  # noqa: F401


def _join_the_thread_pool() -> None:
    """Makes the main thread one of the CPU kernels' pool threads (``RAYON_NUM_THREADS`` threads,
    by default one per logical CPU), so that an op called from it starts its parallel work itself
    rather than handing it to the pool and sleeping until it is done: 8-11% of a small model's
    training step on two cores. Imported from another thread, or with the pool already running,
    the pool starts on first use as before."""
    import threading

    if threading.current_thread() is threading.main_thread():
        try:
            _nabla._init_thread_pool()
        except ValueError:
            pass


_join_the_thread_pool()
from . import amp, data, nn, onnx, optim  # noqa: F401
from ._custom_jvp import custom_jvp  # noqa: F401
from ._serialization import load, save  # noqa: F401
from ._pytree import tree_flatten, tree_leaves, tree_map, tree_unflatten  # noqa: F401
from ._transforms import _as_tensor  # noqa: E402
from ._transforms import (  # noqa: F401
    checkpoint,
    custom_vjp,
    grad,
    hessian,
    hvp,
    jacfwd,
    jacrev,
    jit,
    jvp,
    linearize,
    value_and_grad,
    vjp,
    vmap,
)

__version__ = "0.1.0"

save_safetensors = _nabla.nn.save_safetensors
load_safetensors = _nabla.nn.load_safetensors
load_torch = _nabla.nn.load_torch

# `import nabla_rs.linalg` and `from nabla_rs.fft import rfft` work as for packages.
_sys.modules[__name__ + ".linalg"] = linalg
_sys.modules[__name__ + ".fft"] = fft


def _over_last_two(name):
    nd = getattr(fft, name + "n")

    def transform(a, s=None, axes=(-2, -1), norm=None):
        return nd(a, s, axes, norm)

    transform.__name__ = name + "2"
    transform.__doc__ = f"The 2-D {name} over ``axes`` (the last two), as ``np.fft.{name}2``."
    return transform


for _kind in ("fft", "ifft", "rfft", "irfft"):
    setattr(fft, _kind + "2", _over_last_two(_kind))
del _kind

# The dtypes, as module attributes: nabla_rs.float32, nabla_rs.int64, ...
float16 = _nabla.float16
bfloat16 = _nabla.bfloat16
float32 = _nabla.float32
float64 = _nabla.float64
complex64 = _nabla.complex64
complex128 = _nabla.complex128
int8 = _nabla.int8
int16 = _nabla.int16
int32 = _nabla.int32
int64 = _nabla.int64
uint8 = _nabla.uint8
uint16 = _nabla.uint16
uint32 = _nabla.uint32
uint64 = _nabla.uint64
bool_ = getattr(_nabla, "bool")

# Elementwise functions from nabla's op catalogue, one per op under the op's name (exp, sin,
# maximum, logical_and, lt, ...); every one is also a Tensor method unless the class has its own.
for _name in _nabla._unary_ops + _nabla._binary_ops + _nabla._compare_ops + _nabla._reduce_ops:
    globals()[_name] = getattr(_nabla, _name)


def _method(fn):
    @_functools.wraps(fn)
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    return method


for _name in _nabla._unary_ops + _nabla._binary_ops + _nabla._compare_ops + _nabla._reduce_ops:
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _method(getattr(_nabla, _name)))
del _name

# NumPy defers `array @ tensor`, `array + tensor`, ... to the tensor's reflected operators, so
# gradients flow through mixed expressions (as for PyTorch's and JAX's arrays).
Tensor.__array_priority__ = 1000

# PyTorch's and NumPy's names for functions the Array API namespace below also has.
cat = concatenate
power, absolute = _nabla.pow, _nabla.abs


def _method_function(name: str, doc: str):
    def function(input, *args, **kwargs):
        return getattr(_as_tensor(input), name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function


diagonal = _method_function("diagonal", "``torch.diagonal(input, offset=0, dim1=0, dim2=1)``.")
trace = _method_function("trace", "``torch.trace(input)``: the sum of each matrix's main diagonal.")
diag_embed = _method_function("diag_embed", "``torch.diag_embed(input, offset=0)``.")
index_select = _method_function("index_select", "``torch.index_select(input, dim, index)``.")


def stop_gradient(x):
    """``jax.lax.stop_gradient``: the same values, with no derivative (``x.detach()``)."""
    return _as_tensor(x).detach()


class _Scope:
    """A block, entered by ``with`` or by decorating a function, over one of the extension's guard
    classes (built from ``self._args`` anew for each decorated call, so that calls can nest)."""

    _args = ()

    def _guard(self):
        raise NotImplementedError

    def __enter__(self):
        self._inner = self._guard()
        self._inner.__enter__()
        return self

    def __exit__(self, *exc):
        self._inner.__exit__(*exc)
        return False

    def __call__(self, f):
        @_functools.wraps(f)
        def wrapped(*args, **kwargs):
            with type(self)(*self._args):
                return f(*args, **kwargs)

        return wrapped


class no_grad(_Scope):
    """Records nothing for autodiff inside ``with nabla_rs.no_grad():``, or in a decorated function."""

    def _guard(self):
        return _nabla.GradMode(False)


class enable_grad(_Scope):
    """Records for autodiff inside ``with nabla_rs.enable_grad():`` (or a decorated function), even
    within ``no_grad``."""

    def _guard(self):
        return _nabla.GradMode(True)


class set_grad_enabled:
    """``set_grad_enabled(mode)``, as PyTorch's: called, it turns recording for autodiff on or off on
    this thread until changed again; as a ``with`` block or a decorator, only inside it."""

    def __init__(self, mode: bool):
        self.mode = mode is True or (mode is not False and not not mode)
        self._previous = _nabla._set_grad_enabled(self.mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _nabla._set_grad_enabled(self._previous)
        return False

    def __call__(self, f):
        _nabla._set_grad_enabled(self._previous)
        mode = self.mode

        @_functools.wraps(f)
        def wrapped(*args, **kwargs):
            with set_grad_enabled(mode):
                return f(*args, **kwargs)

        return wrapped


class autocast(_Scope):
    """Mixed precision as ``torch.autocast``: inside ``with nabla_rs.autocast("cpu", dtype=nabla_rs.bfloat16):``
    matrix products and convolutions of float32 tensors (``@``, ``matmul``, ``einsum``, ``nn.Linear``,
    ``nn.Conv2d``, attention) round their operands to bfloat16 (or float16 with
    ``dtype=nabla_rs.float16``, paired with ``nabla_rs.amp.GradScaler``) and sum in float32, and their
    gradients do too, wherever ``backward`` runs. Everything else stays float32, and so do the results. ``enabled=False`` turns autocast off
    inside an enclosing block. Also a decorator. The scope belongs to the calling thread.
    """

    def __init__(self, device_type="cpu", dtype="bfloat16", enabled=True):
        if device_type not in ("cpu", "wgpu"):
            raise ValueError(f"autocast: unknown device type {device_type!r} (expected 'cpu' or 'wgpu')")
        self._args = (device_type, dtype, enabled)
        _nabla.Autocast(dtype, enabled)  # a wrong dtype fails here, not at `with`

    def _guard(self):
        return _nabla.Autocast(*self._args[1:])


def _setitem(self, key, value):
    """``t[key] = value`` as in NumPy and PyTorch, for every kind of key: the updated tensor is built
    functionally (differentiable with respect to both ``t`` and ``value``) and ``t`` then stands for
    it. NumPy views taken earlier keep the old values (nabla's buffers are immutable)."""
    shape = tuple(self.shape)
    count = 1
    for d in shape:
        count *= d
    target = _nabla.arange(count).reshape(shape)[key]
    positions = target.reshape(-1)
    if positions.device != "traced" and len(set(positions.tolist())) != positions.size:
        raise IndexError("an assignment cannot write one element twice (repeated indices)")
    dtype = self.dtype
    work = self if dtype != bool_ else self.astype(int64)
    value = tensor(value, dtype=work.dtype) if not isinstance(value, Tensor) else value.astype(work.dtype)
    flat = work.reshape(-1)
    value = value.broadcast_to(*target.shape).reshape(-1)
    updated = _torch_functions.place(flat, positions, value).reshape(shape)
    self._rebind(updated if dtype != bool_ else updated.astype(bool_))


Tensor.__setitem__ = _setitem

from ._numpy_protocol import array_function as _array_function  # noqa: E402
from ._numpy_protocol import array_ufunc as _array_ufunc  # noqa: E402

Tensor.__array_ufunc__ = _array_ufunc
Tensor.__array_function__ = _array_function

from ._torch_surface import METHODS as _METHODS  # noqa: E402
from ._torch_surface import allclose, bincount, isclose, isinf, masked_fill, unique  # noqa: E402, F401

from . import _inplace, _torch_functions, _torch_methods  # noqa: E402
from ._torch_functions import *  # noqa: E402, F401, F403
from ._torch_methods import values_indices  # noqa: E402, F401

for _methods in (_METHODS, _torch_methods.METHODS, _torch_functions.METHODS, _inplace.METHODS):
    for _name, _fn in _methods.items():
        setattr(Tensor, _name, _fn)
del _methods, _name, _fn

# The Array API namespace (2025.12): the standard's functions, with its signatures, replace the
# catalogue's plain ones at module level (the tensor methods keep PyTorch's spellings).
from . import _array_api, _array_api_elementwise, _array_api_extensions, _array_api_shapes  # noqa: E402
from ._array_api_dtypes import (  # noqa: E402, F401
    __array_namespace_info__,
    can_cast,
    finfo,
    iinfo,
    isdtype,
    result_type,
)

for _module in (_array_api_elementwise, _array_api_shapes, _array_api):
    for _name in _module.__all__:
        globals()[_name] = getattr(_module, _name)
del _module, _name
from ._array_api import e, inf, nan, newaxis, pi  # noqa: E402, F401

max = _torch_methods.top_level_extremum("max", _array_api.max)
min = _torch_methods.top_level_extremum("min", _array_api.min)

__array_api_version__ = "2025.12"
globals()["bool"] = bool_


def _array_namespace(self, /, *, api_version=None):
    """This tensor's Array API namespace: ``nabla_rs`` (for versions 2021.12 to 2025.12)."""
    if api_version is not None and api_version not in ("2021.12", "2022.12", "2023.12", "2024.12", "2025.12"):
        raise ValueError(f"__array_namespace__: unsupported api_version {api_version!r}")
    return _sys.modules[__name__]


Tensor.__array_namespace__ = _array_namespace
_array_api_extensions.install()


def _to_device(self, device, /, *, stream=None):
    """This tensor on ``device`` (``"cpu"``: itself), as the Array API's ``to_device``."""
    if stream is not None:
        raise ValueError("to_device: nabla has no streams; pass stream=None")
    return self if device == self.device else self.to(device)


Tensor.to_device = _to_device

from . import autograd, random, special  # noqa: E402, F401

# PyTorch's top-level spelling of every remaining tensor method: nb.softmax(x, 1), nb.gather(...).
_NOT_FUNCTIONS = {"backward", "numpy", "tolist", "item", "cpu", "to", "to_device", "register_hook", "retain_grad", "size"}
for _name in dir(Tensor):
    if not (_name.startswith("_") or _name.endswith("_") or _name in globals() or _name in _NOT_FUNCTIONS):
        if callable(getattr(Tensor, _name)) and not isinstance(Tensor.__dict__.get(_name), property):
            globals()[_name] = _method_function(_name, f"``{_name}(input, ...)``: ``input.{_name}(...)``.")
del _name
