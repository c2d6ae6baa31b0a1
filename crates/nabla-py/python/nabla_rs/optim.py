"""``nabla_rs.optim``: SGD, Adam and AdamW with PyTorch's arguments, defaults and update rules, and
learning-rate schedulers (``optim.lr_scheduler``).

An optimizer reads each parameter's ``.grad`` (filled by ``loss.backward()``) and replaces the
parameter's values in place (``p.data = ...``), so modules see the update.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Iterable, List

from . import _nabla


class Optimizer:
    """The base class: ``param_groups`` (each a dict with ``params`` and hyper-parameters) and a
    per-parameter ``state``."""

    def __init__(self, params: Iterable[Any], defaults: Dict[str, Any]):
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.defaults = defaults
        self.param_groups: List[Dict[str, Any]] = []
        for g in groups:
            group = {**defaults, **g, "params": list(g["params"])}
            for p in group["params"]:
                if not p.requires_grad:
                    raise ValueError("an optimizer can only update tensors that require grad")
            self.param_groups.append(group)
        self.state: Dict[int, Dict[str, Any]] = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None if set_to_none or p.grad is None else _nabla.zeros_like(p.grad)

    def state_dict(self) -> Dict[str, Any]:
        """PyTorch's layout: ``state`` by parameter index (in ``param_groups`` order) and the groups'
        hyper-parameters with ``params`` as indices."""
        index, groups = 0, []
        state = {}
        for group in self.param_groups:
            ids = []
            for p in group["params"]:
                if id(p) in self.state:
                    state[index] = dict(self.state[id(p)])
                ids.append(index)
                index += 1
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": ids})
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores what ``state_dict`` saved, onto this optimizer's parameters in the same order."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups) or any(
            len(g["params"]) != len(own["params"]) for g, own in zip(groups, self.param_groups)
        ):
            raise ValueError("the saved optimizer state has other parameter groups than this optimizer")
        params = [p for group in self.param_groups for p in group["params"]]
        for group, saved in zip(self.param_groups, groups):
            group.update({k: v for k, v in saved.items() if k != "params"})
        self.state = {id(params[int(i)]): dict(s) for i, s in state_dict["state"].items()}

    def step(self) -> None:
        with _nabla.NoGrad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        self._update(p, p.grad, group, self.state.setdefault(id(p), {}))

    def _update(self, p, g, group, state) -> None:
        raise NotImplementedError


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum (PyTorch's form), dampening, Nesterov
    momentum and L2 weight decay."""

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, maximize: bool = False):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov, maximize=maximize))

    def _update(self, p, g, group, state):
        if group["maximize"]:
            g = -g
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p.data
        m = group["momentum"]
        if m:
            buf = state.get("momentum_buffer")
            buf = g if buf is None else buf * m + (1 - group["dampening"]) * g
            state["momentum_buffer"] = buf
            g = g + m * buf if group["nesterov"] else buf
        p.data = p.data - group["lr"] * g


class Adam(Optimizer):
    """Adam (Kingma & Ba) with bias correction, as ``torch.optim.Adam``; ``weight_decay`` adds an L2
    term to the gradient (see ``AdamW`` for decoupled decay)."""

    decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, maximize: bool = False):
        if not 0.0 <= betas[0] < 1.0 or not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"betas must be in [0, 1), got {betas}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize))

    def _update(self, p, g, group, state):
        # One fused pass per parameter (nabla's Adam kernel, PyTorch's formulas and roundings).
        if group["maximize"]:
            g = -g
        t = state.get("step", 0) + 1
        names = ["exp_avg", "exp_avg_sq"] + (["max_exp_avg_sq"] if group["amsgrad"] else [])
        moments = [state.get(n) for n in names]
        if moments[0] is None:
            moments = [_nabla.zeros_like(p.data) for _ in names]
        out = _nabla.nn._adam_step(p.data, g, moments, t, group["lr"], group["betas"], group["eps"],
                                   group["weight_decay"], self.decoupled, group["amsgrad"])
        state["step"] = t
        state.update(zip(names, out[:-1]))
        p.data = out[-1]


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), as ``torch.optim.AdamW``
    (``weight_decay`` defaults to 0.01)."""

    decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, maximize: bool = False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize)


class RMSprop(Optimizer):
    """RMSprop with PyTorch's arguments and update (``alpha``, ``eps`` outside the square root,
    optional momentum, centering and L2 weight decay)."""

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False):
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered))

    def _update(self, p, g, group, state):
        a = group["alpha"]
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p.data
        sq = state.get("square_avg")
        sq = (1 - a) * g * g if sq is None else sq * a + (1 - a) * g * g
        state["square_avg"] = sq
        if group["centered"]:
            ga = state.get("grad_avg")
            ga = (1 - a) * g if ga is None else ga * a + (1 - a) * g
            state["grad_avg"] = ga
            avg = (sq - ga * ga).sqrt() + group["eps"]
        else:
            avg = sq.sqrt() + group["eps"]
        if group["momentum"]:
            buf = state.get("momentum_buffer")
            buf = g / avg if buf is None else buf * group["momentum"] + g / avg
            state["momentum_buffer"] = buf
            p.data = p.data - group["lr"] * buf
        else:
            p.data = p.data - group["lr"] * g / avg


class Adagrad(Optimizer):
    """Adagrad with PyTorch's arguments and update (``lr_decay``, ``initial_accumulator_value``)."""

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0.0, weight_decay: float = 0.0,
                 initial_accumulator_value: float = 0.0, eps: float = 1e-10):
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, eps=eps))

    def _update(self, p, g, group, state):
        t = state.get("step", 0) + 1
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p.data
        acc = state.get("sum")
        if acc is None:
            acc = _nabla.full(tuple(p.shape), group["initial_accumulator_value"], dtype=p.dtype)
        acc = acc + g * g
        state.update(step=t, sum=acc)
        clr = group["lr"] / (1 + (t - 1) * group["lr_decay"])
        p.data = p.data - clr * g / (acc.sqrt() + group["eps"])


class _Scheduler:
    """Sets each group's ``lr`` from the epoch count on every ``step()``."""

    def __init__(self, optimizer: Optimizer):
        self.optimizer = optimizer
        self.base_lrs = [g["lr"] for g in optimizer.param_groups]
        self.last_epoch = 0

    def _lr(self, base: float, epoch: int) -> float:
        raise NotImplementedError

    def step(self) -> None:
        self.last_epoch += 1
        for g, base in zip(self.optimizer.param_groups, self.base_lrs):
            g["lr"] = self._lr(base, self.last_epoch)

    def get_last_lr(self) -> List[float]:
        return [g["lr"] for g in self.optimizer.param_groups]


class _LrScheduler:
    """``optim.lr_scheduler``: StepLR, ExponentialLR, CosineAnnealingLR and LambdaLR."""

    class StepLR(_Scheduler):
        """``lr = base · gamma^(epoch // step_size)``."""

        def __init__(self, optimizer, step_size: int, gamma: float = 0.1):
            super().__init__(optimizer)
            self.step_size, self.gamma = step_size, gamma

        def _lr(self, base, epoch):
            return base * self.gamma ** (epoch // self.step_size)

    class ExponentialLR(_Scheduler):
        """``lr = base · gamma^epoch``."""

        def __init__(self, optimizer, gamma: float):
            super().__init__(optimizer)
            self.gamma = gamma

        def _lr(self, base, epoch):
            return base * self.gamma**epoch

    class CosineAnnealingLR(_Scheduler):
        """``lr = eta_min + (base - eta_min)(1 + cos(π epoch / T_max)) / 2``."""

        def __init__(self, optimizer, T_max: int, eta_min: float = 0.0):
            super().__init__(optimizer)
            self.T_max, self.eta_min = T_max, eta_min

        def _lr(self, base, epoch):
            return self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * epoch / self.T_max)) / 2

    class LambdaLR(_Scheduler):
        """``lr = base · lr_lambda(epoch)``."""

        def __init__(self, optimizer, lr_lambda):
            super().__init__(optimizer)
            self.lr_lambda = lr_lambda

        def _lr(self, base, epoch):
            return base * self.lr_lambda(epoch)


lr_scheduler = _LrScheduler
