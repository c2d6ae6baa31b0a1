"""``nabla_rs.nn.init``: PyTorch's initialisers (``torch.nn.init``) as nabla's Rust ones
(``nabla::nn::init``), drawing from the global generator (``nabla_rs.manual_seed``). Each fills a
tensor in place (its values replaced, as ``tensor.data = ...``; a parameter keeps its ``.grad``) and
returns it."""

from __future__ import annotations

from .. import _nabla

calculate_gain = _nabla.nn.calculate_gain


def _fill(tensor, kind: str, **args):
    tensor.data = _nabla.nn._init(kind, list(tensor.shape), tensor.dtype, args)
    return tensor


def uniform_(tensor, a: float = 0.0, b: float = 1.0):
    """Samples of U(a, b)."""
    return _fill(tensor, "uniform", a=a, b=b)


def normal_(tensor, mean: float = 0.0, std: float = 1.0):
    """Samples of N(mean, std²)."""
    return _fill(tensor, "normal", mean=mean, std=std)


def constant_(tensor, val: float):
    """Every element ``val``."""
    return _fill(tensor, "constant", val=val)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def xavier_uniform_(tensor, gain: float = 1.0):
    """Glorot uniform: U(-a, a) with ``a = gain √(6 / (fan_in + fan_out))``."""
    return _fill(tensor, "xavier_uniform", gain=gain)


def xavier_normal_(tensor, gain: float = 1.0):
    """Glorot normal: ``std = gain √(2 / (fan_in + fan_out))``."""
    return _fill(tensor, "xavier_normal", gain=gain)


def kaiming_uniform_(tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"):
    """He uniform: U(-b, b) with ``b = gain √(3 / fan)``."""
    return _fill(tensor, "kaiming_uniform", a=a, mode=mode, nonlinearity=nonlinearity)


def kaiming_normal_(tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"):
    """He normal: ``std = gain / √fan``."""
    return _fill(tensor, "kaiming_normal", a=a, mode=mode, nonlinearity=nonlinearity)


def trunc_normal_(tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0):
    """N(mean, std²) truncated to [a, b]."""
    return _fill(tensor, "trunc_normal", mean=mean, std=std, a=a, b=b)


def orthogonal_(tensor, gain: float = 1.0):
    """A (semi-)orthogonal matrix (the trailing axes flattened), scaled by ``gain``."""
    return _fill(tensor, "orthogonal", gain=gain)
