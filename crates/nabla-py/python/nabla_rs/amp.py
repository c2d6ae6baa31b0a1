"""``nabla_rs.amp``: the loss scaler of float16 mixed precision, as ``torch.amp.GradScaler``.

Under ``nabla_rs.autocast("cpu", dtype=nabla_rs.float16)`` the products of backward round their
operands to float16, whose smallest normal number is 2**-14: small gradients flush to zero. The
scaler multiplies the loss by a large factor before ``backward`` and divides the gradients by it
before the optimizer's step, skipping steps whose gradients overflowed and adapting the factor. The
factor, the overflow check and the schedule are ``nabla::nn::optim::GradScaler`` (Rust).

    scaler = nabla_rs.amp.GradScaler()
    with nabla_rs.autocast("cpu", dtype=nabla_rs.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)      # unscales, and steps unless a gradient is inf or NaN
    scaler.update()
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from . import _nabla

__all__ = ["GradScaler"]


def _params_with_grad(optimizer):
    return [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]


class GradScaler:
    """Dynamic loss scaling with PyTorch's arguments and defaults: the factor starts at
    ``init_scale``, is multiplied by ``backoff_factor`` after a step whose gradients held an
    infinity or NaN (that step is skipped), and by ``growth_factor`` after ``growth_interval``
    steps without one. ``enabled=False`` makes every method a pass-through."""

    def __init__(self, device: str = "cpu", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True):
        if device not in ("cpu", "wgpu"):
            raise ValueError(f"GradScaler: unknown device {device!r} (expected 'cpu' or 'wgpu')")
        if isinstance(growth_interval, bool) or not isinstance(growth_interval, int) or growth_interval < 1:
            raise ValueError(f"GradScaler: growth_interval {growth_interval!r} must be an integer >= 1")
        self._core = _nabla._GradScaler(float(init_scale), float(growth_factor), float(backoff_factor),
                                        growth_interval, bool(enabled))

    def is_enabled(self) -> bool:
        return self._core.is_enabled()

    def get_scale(self) -> float:
        """The current factor (1.0 when disabled)."""
        return self._core.get_scale()

    def scale(self, outputs):
        """``outputs`` (a tensor, or lists, tuples and dicts of them) times the factor."""
        if not self.is_enabled():
            return outputs
        factor = self._core.get_scale()
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if isinstance(outputs, dict):
            return {k: self.scale(v) for k, v in outputs.items()}
        return outputs * factor

    def unscale_(self, optimizer) -> None:
        """Divides the gradients of ``optimizer``'s parameters by the factor in place (before
        clipping them, say) and records whether any is infinite or NaN. Once per iteration."""
        params = _params_with_grad(optimizer)
        unscaled = self._core.unscale_grads([p.grad for p in params])
        for p, g in zip(params, unscaled):
            p.grad = g

    def step(self, optimizer, *args, **kwargs) -> Optional[Any]:
        """Unscales (unless ``unscale_`` already did) and runs ``optimizer.step(*args, **kwargs)``
        unless a gradient was infinite or NaN; returns what that returned, or ``None`` when skipped."""
        if not self.is_enabled():
            return optimizer.step(*args, **kwargs)
        if self._core.found_inf() is None:
            self.unscale_(optimizer)
        if self._core.take_step():
            return optimizer.step(*args, **kwargs)
        return None

    def update(self, new_scale: Optional[float] = None) -> None:
        """Ends the iteration: backs the factor off after an overflow, grows it after
        ``growth_interval`` good steps; ``new_scale`` sets it instead."""
        self._core.update()
        if new_scale is not None and self.is_enabled():
            self._core.set_scale(float(new_scale))

    def get_growth_factor(self) -> float:
        return self._core.state()[1]

    def get_backoff_factor(self) -> float:
        return self._core.state()[2]

    def get_growth_interval(self) -> int:
        return self._core.state()[3]

    def state_dict(self) -> Dict[str, Any]:
        """PyTorch's keys: ``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval``,
        ``_growth_tracker`` (empty when disabled, as PyTorch)."""
        if not self.is_enabled():
            return {}
        scale, growth, backoff, interval, tracker, _ = self._core.state()
        return {"scale": scale, "growth_factor": growth, "backoff_factor": backoff,
                "growth_interval": interval, "_growth_tracker": tracker}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        if not self.is_enabled():
            return
        if not state_dict:
            raise RuntimeError("GradScaler.load_state_dict: the state dict is empty (saved from a disabled scaler)")
        try:
            state = (float(state_dict["scale"]), float(state_dict["growth_factor"]),
                     float(state_dict["backoff_factor"]), int(state_dict["growth_interval"]),
                     int(state_dict["_growth_tracker"]), True)
        except KeyError as missing:
            raise KeyError(f"GradScaler.load_state_dict: missing {missing}") from None
        self._core.load_state(state)

    def __repr__(self) -> str:
        return f"GradScaler(scale={self.get_scale()}, enabled={self.is_enabled()})"
