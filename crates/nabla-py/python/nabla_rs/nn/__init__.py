"""``nabla_rs.nn``: modules with PyTorch's names, defaults and initialisation, over nabla's kernels.

A ``Module`` registers the ``Parameter``\\ s and sub-modules assigned to it, as ``torch.nn.Module``:
``parameters()``, ``named_parameters()``, ``state_dict()``, ``load_state_dict()``, ``train()`` and
``eval()`` behave the same, and ``state_dict()`` saves to safetensors files that PyTorch reads.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Dict, Iterator, Tuple

from .. import _nabla
from . import functional as F  # noqa: F401
from . import functional

Tensor = _nabla.Tensor


class Parameter(Tensor):
    """A tensor that is a module's parameter: a leaf that requires gradients (by default)."""

    def __new__(cls, data, requires_grad: bool = True):
        return super().__new__(cls, data, None, requires_grad)

    def __init__(self, data, requires_grad: bool = True):
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


def _uniform(shape, bound: float, dtype) -> Parameter:
    return Parameter(_nabla.nn._uniform(list(shape), -bound, bound, dtype))


class Module:
    """The base class of layers and models, as ``torch.nn.Module``."""

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("call Module.__init__() before assigning attributes")
        for store in ("_parameters", "_buffers", "_modules"):
            self.__dict__[store].pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            d = self.__dict__.get(store)
            if d is not None and name in d:
                return d[name]
        raise AttributeError(f"{type(self).__name__!r} has no attribute {name!r}")

    def register_buffer(self, name: str, tensor) -> None:
        """A tensor saved in the state dict but not trained (running statistics, ...)."""
        self._buffers[name] = tensor

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def named_modules(self, prefix: str = "") -> Iterator[Tuple[str, "Module"]]:
        yield prefix, self
        for name, m in self._modules.items():
            yield from m.named_modules(f"{prefix}.{name}" if prefix else name)

    def modules(self) -> Iterator["Module"]:
        return (m for _, m in self.named_modules())

    def children(self) -> Iterator["Module"]:
        return iter(self._modules.values())

    def named_parameters(self, prefix: str = "") -> Iterator[Tuple[str, Parameter]]:
        seen = set()
        for mod_name, m in self.named_modules(prefix):
            for name, p in m._parameters.items():
                if p is not None and id(p) not in seen:
                    seen.add(id(p))
                    yield (f"{mod_name}.{name}" if mod_name else name), p

    def parameters(self) -> Iterator[Parameter]:
        return (p for _, p in self.named_parameters())

    def train(self, mode: bool = True) -> "Module":
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = None

    def state_dict(self) -> Dict[str, Tensor]:
        """Parameters and buffers by dotted name, detached (PyTorch's names: ``0.weight``, ...)."""
        out = OrderedDict()
        for mod_name, m in self.named_modules():
            for store in (m._parameters, m._buffers):
                for name, t in store.items():
                    if t is not None:
                        out[f"{mod_name}.{name}" if mod_name else name] = t.detach()
        return out

    def load_state_dict(self, state: Dict[str, Tensor], strict: bool = True):
        """Copies values into the parameters and buffers of the same names (shapes must match)."""
        own = {}
        for mod_name, m in self.named_modules():
            for store_name in ("_parameters", "_buffers"):
                for name in getattr(m, store_name):
                    own[f"{mod_name}.{name}" if mod_name else name] = (m, store_name, name)
        missing = [k for k in own if k not in state]
        unexpected = [k for k in state if k not in own]
        if strict and (missing or unexpected):
            raise KeyError(f"state dict mismatch: missing {missing}, unexpected {unexpected}")
        for key, (m, store_name, name) in own.items():
            if key not in state:
                continue
            target = getattr(m, store_name)[name]
            value = state[key]
            if tuple(target.shape) != tuple(_nabla.tensor(value).shape):
                raise ValueError(f"{key}: shape {tuple(_nabla.tensor(value).shape)} does not match {tuple(target.shape)}")
            if store_name == "_parameters":
                target.data = value
            else:
                getattr(m, store_name)[name] = _nabla.tensor(value, dtype=target.dtype)
        return missing, unexpected

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [f"({name}): " + repr(m).replace("\n", "\n  ") for name, m in self._modules.items()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        return head + ")" if not lines else head + "\n  " + "\n  ".join(lines) + "\n)"


class Linear(Module):
    """``y = x Wᵀ + b`` with PyTorch's initialisation: U(-1/√in, 1/√in) for both."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, dtype=None):
        super().__init__()
        dtype = dtype or _nabla.float32
        bound = 1.0 / math.sqrt(in_features) if in_features > 0 else 0.0
        self.in_features, self.out_features = in_features, out_features
        self.weight = _uniform((out_features, in_features), bound, dtype)
        self.bias = _uniform((out_features,), bound, dtype) if bias else None

    def forward(self, x):
        return functional.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


class Conv2d(Module):
    """2-D convolution (cross-correlation) with PyTorch's arguments and initialisation."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True, dtype=None):
        super().__init__()
        dtype = dtype or _nabla.float32
        kh, kw = _pair(kernel_size)
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"in_channels {in_channels} and out_channels {out_channels} must divide by groups {groups}")
        fan_in = in_channels // groups * kh * kw
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding = (kh, kw), _pair(stride), _pair(padding)
        self.dilation, self.groups = _pair(dilation), groups
        self.weight = _uniform((out_channels, in_channels // groups, kh, kw), bound, dtype)
        self.bias = _uniform((out_channels,), bound, dtype) if bias else None

    def forward(self, x):
        return functional.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self):
        return f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"


class MaxPool2d(Module):
    """2-D max pooling (the stride defaults to the kernel size)."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.ceil_mode = dilation, ceil_mode

    def forward(self, x):
        return functional.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)


class Flatten(Module):
    """Merges axes ``start_dim..=end_dim`` (from 1 by default, keeping the batch axis)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)


class Dropout(Module):
    """Zeroes elements with probability ``p`` while training, scaling the rest by ``1/(1-p)``."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        self.p = p

    def forward(self, x):
        return functional.dropout(x, self.p, self.training)


class _BatchNorm(Module):
    """Batch normalisation over every axis but the channels (axis 1), as PyTorch's: batch statistics
    (biased variance) while training, updating the running mean and the unbiased running variance
    with ``momentum``; the running statistics in evaluation."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = True,
                 track_running_stats: bool = True, dtype=None):
        super().__init__()
        dtype = dtype or _nabla.float32
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.weight = Parameter(_nabla.ones(num_features, dtype=dtype)) if affine else None
        self.bias = Parameter(_nabla.zeros(num_features, dtype=dtype)) if affine else None
        self.track_running_stats = track_running_stats
        if track_running_stats:
            self.register_buffer("running_mean", _nabla.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", _nabla.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", _nabla.tensor(0))

    def forward(self, x):
        axes = tuple(a for a in range(x.ndim) if a != 1)
        shape = [1] * x.ndim
        shape[1] = self.num_features
        if self.training or not self.track_running_stats:
            mean = x.mean(axes)
            var = x.var(axes)
            if self.training and self.track_running_stats:
                count = x.size // self.num_features
                with _nabla.GradMode(False):
                    m = self.momentum
                    unbiased = var.detach() * (count / max(count - 1, 1))
                    self._buffers["running_mean"] = self.running_mean * (1 - m) + mean.detach() * m
                    self._buffers["running_var"] = self.running_var * (1 - m) + unbiased * m
                    self._buffers["num_batches_tracked"] = self.num_batches_tracked + 1
        else:
            mean, var = self.running_mean, self.running_var
        y = (x - mean.reshape(shape)) / (var.reshape(shape) + self.eps).sqrt()
        if self.weight is not None:
            y = y * self.weight.reshape(shape) + self.bias.reshape(shape)
        return y


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of ``[N, C]`` or ``[N, C, L]`` inputs."""


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of ``[N, C, H, W]`` inputs."""


class LayerNorm(Module):
    """Layer normalisation over the trailing ``normalized_shape`` with learned scale and shift."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, dtype=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        dtype = dtype or _nabla.float32
        self.weight = Parameter(_nabla.ones(shape, dtype=dtype)) if elementwise_affine else None
        self.bias = Parameter(_nabla.zeros(shape, dtype=dtype)) if elementwise_affine else None

    def forward(self, x):
        return functional.layer_norm(x, list(self.normalized_shape), self.weight, self.bias, self.eps)


class Embedding(Module):
    """A lookup table of ``num_embeddings`` vectors, initialised N(0, 1)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, dtype=None):
        super().__init__()
        self.weight = Parameter(_nabla.randn(num_embeddings, embedding_dim, dtype=dtype or _nabla.float32))

    def forward(self, indices):
        return self.weight[indices]


def _activation(name, fn, doc):
    def forward(self, x):
        return fn(x)

    return type(name, (Module,), {"forward": forward, "__doc__": doc})


ReLU = _activation("ReLU", functional.relu, "``max(x, 0)``.")
GELU = _activation("GELU", functional.gelu, "The exact GELU.")
SiLU = _activation("SiLU", functional.silu, "``x sigmoid(x)``.")
Tanh = _activation("Tanh", functional.tanh, "Hyperbolic tangent.")
Sigmoid = _activation("Sigmoid", functional.sigmoid, "The logistic sigmoid.")
Softplus = _activation("Softplus", functional.softplus, "``log(1 + e^x)``.")
Identity = _activation("Identity", lambda x: x, "Returns its input.")


class Sequential(Module):
    """Modules applied in order; named ``0``, ``1``, ... as in PyTorch.

    A ``ReLU`` directly followed by a ``MaxPool2d`` runs after the pooling instead, on the smaller
    tensor (as the Rust ``Sequential`` does): ``relu(max(window)) == max(relu(window))`` and the
    gradient reaches the same element, so values and gradients are the written order's bit for bit.
    """

    def __init__(self, *modules: Module):
        super().__init__()
        for i, m in enumerate(modules):
            setattr(self, str(i), m)

    def forward(self, x):
        modules = list(self._modules.values())
        i = 0
        while i < len(modules):
            if type(modules[i]) is ReLU and i + 1 < len(modules) and type(modules[i + 1]) is MaxPool2d:
                x = modules[i](modules[i + 1](x))
                i += 2
            else:
                x = modules[i](x)
                i += 1
        return x

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def __len__(self):
        return len(self._modules)


class CrossEntropyLoss(Module):
    """``functional.cross_entropy`` as a module."""

    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__()
        self.weight, self.ignore_index, self.reduction, self.label_smoothing = weight, ignore_index, reduction, label_smoothing

    def forward(self, input, target):
        return functional.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing)


class MSELoss(Module):
    """``functional.mse_loss`` as a module."""

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return functional.mse_loss(input, target, self.reduction)


from ._recurrent import GRU, LSTM, MultiheadAttention  # noqa: E402,F401
