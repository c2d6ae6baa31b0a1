"""``nabla_rs.nn.utils``: gradient clipping as PyTorch's ``torch.nn.utils``, computed by nabla's Rust
``clip_grad_norm`` and ``clip_grad_value`` over the parameters' ``.grad``."""

from __future__ import annotations

from .. import _nabla


def _list(parameters):
    return [parameters] if isinstance(parameters, _nabla.Tensor) else list(parameters)


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None):
    """Scales the gradients in place so that their total ``norm_type``-norm is at most ``max_norm``;
    returns the total norm before clipping (a 0-d tensor). ``foreach`` is accepted and ignored."""
    params = _list(parameters)
    norm = _nabla.nn.clip_grad_norm_(params, float(max_norm), float(norm_type), error_if_nonfinite)
    grads = [p.grad for p in params if p.grad is not None]
    return _nabla.tensor(norm, dtype=grads[0].dtype if grads else _nabla.float32)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamps every gradient element to ``[-clip_value, clip_value]`` in place."""
    _nabla.nn.clip_grad_value_(_list(parameters), float(clip_value))
