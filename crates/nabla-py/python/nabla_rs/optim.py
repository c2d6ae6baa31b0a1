"""``nabla_rs.optim``: PyTorch's optimizers and learning-rate schedulers (``optim.lr_scheduler``),
with PyTorch's class names, arguments, defaults and update rules.

Each optimizer is nabla's Rust one (``nabla::nn::optim``), the same code a Rust program trains
with: ``step()`` reads every parameter's ``.grad`` and updates all of them in one call into Rust,
replacing each parameter's values in place (its ``.grad`` is kept, as PyTorch keeps it).
``param_groups`` are live views of the Rust groups, so ``group["lr"] = ...`` takes effect at the
next step. ``Optimizer`` is also the base class for optimizers written in Python.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any, Dict, Iterable, List

from . import _arguments, _nabla

_engine = _nabla.optim


class Optimizer:
    """The base class of optimizers written in Python, as ``torch.optim.Optimizer``:
    ``param_groups`` (each a dict with ``params`` and hyper-parameters), a per-parameter ``state``,
    ``zero_grad``, ``state_dict`` and ``load_state_dict``. Subclasses implement ``step()``."""

    def __init__(self, params: Iterable[Any], defaults: Dict[str, Any]):
        self.defaults = defaults
        self.param_groups: List[Dict[str, Any]] = []
        self.state: Dict[Any, Dict[str, Any]] = {}
        groups = _groups(params)
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, param_group: Dict[str, Any]) -> None:
        group = {**self.defaults, **param_group, "params": _group_params(param_group["params"])}
        for p in group["params"]:
            if not p.requires_grad:
                raise ValueError("an optimizer can only update tensors that require grad")
        self.param_groups.append(group)

    def _params(self) -> List[Any]:
        return [p for group in self.param_groups for p in group["params"]]

    def zero_grad(self, set_to_none: bool = True) -> None:
        _engine.zero_grad(self._params(), set_to_none)

    def state_dict(self) -> Dict[str, Any]:
        """PyTorch's layout: ``state`` by parameter index (in ``param_groups`` order) and the groups'
        hyper-parameters with ``params`` as indices."""
        params = self._params()
        index = {id(p): i for i, p in enumerate(params)}
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        groups, start = [], 0
        for group in self.param_groups:
            n = len(group["params"])
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": list(range(start, start + n))})
            start += n
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores what ``state_dict`` saved, onto this optimizer's parameters in the same order."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups) or any(
            len(g["params"]) != len(own["params"]) for g, own in zip(groups, self.param_groups)
        ):
            raise ValueError("the saved optimizer state has other parameter groups than this optimizer")
        params = self._params()
        for group, saved in zip(self.param_groups, groups):
            group.update({k: v for k, v in saved.items() if k != "params"})
        self.state = {params[int(i)]: dict(s) for i, s in state_dict["state"].items()}

    def step(self, closure=None):
        raise NotImplementedError(f"{type(self).__name__} has no step()")


def _group_params(params) -> list:
    """A group's ``params``: one tensor, or an iterable of them."""
    return [params] if isinstance(params, _nabla.Tensor) else list(params)


def _groups(params) -> List[Dict[str, Any]]:
    if isinstance(params, _nabla.Tensor):
        raise TypeError("params should be an iterable of tensors or dicts (as model.parameters()), got one tensor")
    params = list(params)
    if not params:
        raise ValueError("optimizer got an empty parameter list")
    if not isinstance(params[0], dict):
        return [{"params": params}]
    return [{**g, "params": _group_params(g["params"])} for g in params]


class _ParamGroup(MutableMapping):
    """A live view of one of a Rust optimizer's parameter groups: ``params`` and its
    hyper-parameters (and ``initial_lr`` once a scheduler is attached)."""

    def __init__(self, engine, index: int):
        self._engine, self._index = engine, index

    def __getitem__(self, key):
        if key == "params":
            return self._engine.group_params(self._index)
        return self._engine.get_option(self._index, key)

    def __setitem__(self, key, value):
        if key == "params":
            raise TypeError("a parameter group's params are fixed; use add_param_group for more")
        self._engine.set_option(self._index, key, value)

    def __delitem__(self, key):
        raise TypeError(f"the entries of a parameter group cannot be deleted ({key!r})")

    def __iter__(self):
        return iter(["params", *self._engine.option_names(self._index)])

    def __len__(self):
        return 1 + len(self._engine.option_names(self._index))

    def __repr__(self):
        return repr({k: v for k, v in self.items() if k != "params"})


class _RustOptimizer(Optimizer):
    """An optimizer whose update is nabla's Rust one; subclasses name it (``_kind``)."""

    _kind = ""

    def __init__(self, params, *args, **kwargs):
        for name in _IGNORED:
            kwargs.pop(name, None)
        if kwargs.pop("differentiable", False):
            raise NotImplementedError(f"{self._kind}(differentiable=True): nabla's update is not differentiable")
        self.defaults = _arguments.bind(self._kind, _rows(self._kind), args, kwargs)
        groups = _groups(params)
        first = groups[0]
        self._param_list = list(first.pop("params"))
        self._engine = _engine.Engine(self._kind, self._param_list, {**self.defaults, **first})
        for g in groups[1:]:
            self.add_param_group(g)

    def add_param_group(self, param_group: Dict[str, Any]) -> None:
        """Adds a group of parameters with its own hyper-parameters (the rest as ``defaults``)."""
        group = dict(param_group)
        params = _group_params(group.pop("params"))
        given = {k: v for k, v in self.defaults.items()}
        given.update(group)
        self._engine.add_param_group(params, given)
        self._param_list = self._param_list + params

    @property
    def param_groups(self) -> List[_ParamGroup]:
        return [_ParamGroup(self._engine, i) for i in range(self._engine.group_count())]

    @property
    def state(self) -> Dict[Any, Dict[str, Any]]:
        """Per-parameter state (``step``, ``exp_avg``, ...), keyed by parameter (a snapshot)."""
        params = self._params()
        return {params[i]: s for i, s in self._engine.state_dict()["state"].items()}

    def _params(self) -> List[Any]:
        # Kept in Python, so that an L-BFGS closure's zero_grad() needs no call into the engine
        # (which is busy stepping).
        return self._param_list

    def step(self, closure=None):
        """One update from the parameters' ``.grad``; ``closure`` (optional) recomputes the loss
        first, with gradients enabled, and its loss is returned."""
        loss = None
        if closure is not None:
            with _nabla.GradMode(True):
                loss = closure()
        self._engine.step()
        return loss

    def state_dict(self) -> Dict[str, Any]:
        """PyTorch's layout: ``{"state": {index: {"step": n, "exp_avg": tensor, ...}},
        "param_groups": [{hyper-parameters..., "params": [indices]}]}``."""
        return self._engine.state_dict()

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores the step counts, moments and hyper-parameters saved by ``state_dict``."""
        self._engine.load_state_dict(state_dict)

    def __repr__(self) -> str:
        lines = [f"{self._kind} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {k}: {v}" for k, v in group.items() if k != "params")
        return "\n".join(lines) + "\n)"


# PyTorch's implementation switches: nabla's step is already one call over all parameters.
_IGNORED = ("foreach", "fused", "capturable")


def _rows(kind: str) -> list:
    """``(name, required, default)`` of optimizer ``kind``'s hyper-parameters, from the Rust config."""
    names, values = _engine.signature(kind)
    return [(n, False, v) for n, v in zip(names, values)]


def _optimizer_class(kind: str, doc: str) -> type:
    cls = type(kind, (_RustOptimizer,), {"_kind": kind, "__doc__": doc, "__module__": __name__})
    cls.__signature__ = _arguments.signature(_rows(kind), leading=("params",))
    return cls


SGD = _optimizer_class("SGD", "Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay (``torch.optim.SGD``).")
Adam = _optimizer_class("Adam", "Adam with bias correction, L2 weight decay and AMSGrad (``torch.optim.Adam``); one fused kernel per parameter.")
AdamW = _optimizer_class("AdamW", "Adam with decoupled weight decay, 0.01 by default (``torch.optim.AdamW``).")
Adamax = _optimizer_class("Adamax", "Adamax, Adam with the infinity norm (``torch.optim.Adamax``).")
NAdam = _optimizer_class("NAdam", "Adam with Nesterov momentum and momentum decay (``torch.optim.NAdam``).")
RAdam = _optimizer_class("RAdam", "Rectified Adam (``torch.optim.RAdam``).")
RMSprop = _optimizer_class("RMSprop", "RMSprop with momentum, centering and weight decay (``torch.optim.RMSprop``).")
Adagrad = _optimizer_class("Adagrad", "Adagrad with learning-rate decay and an initial accumulator (``torch.optim.Adagrad``).")
Lion = _optimizer_class("Lion", "Lion, the sign of an interpolated momentum (Chen et al. 2023), with decoupled weight decay.")


class LBFGS(_RustOptimizer):
    """L-BFGS with PyTorch's arguments, optionally with the strong-Wolfe line search
    (``torch.optim.LBFGS``). ``step(closure)``: the closure clears the gradients, computes the loss,
    calls ``backward()`` on it and returns it."""

    _kind = "LBFGS"

    def step(self, closure=None):
        if closure is None:
            raise TypeError("LBFGS.step needs a closure that recomputes the loss and its gradients")

        def evaluate():
            with _nabla.GradMode(True):
                return closure()

        return self._engine.step_closure(evaluate)


LBFGS.__signature__ = _arguments.signature(_rows("LBFGS"), leading=("params",))


class _Scheduler:
    """A learning-rate scheduler: nabla's Rust one, driving the optimizer's groups."""

    def __init__(self, optimizer, kind: str, args: Dict[str, Any], functions=(), children=()):
        if not isinstance(optimizer, _RustOptimizer) or isinstance(optimizer, LBFGS):
            raise TypeError(f"{kind} schedules nabla's first-order optimizers (SGD, Adam, ...), not {type(optimizer).__name__}")
        self.optimizer = optimizer
        self._engine = _engine.Scheduler(kind, optimizer._engine, args, list(functions), [c._engine for c in children])

    def step(self, epoch=None) -> None:
        """Advances one epoch (or jumps to ``epoch``) and sets the groups' learning rates."""
        self._engine.step(self.optimizer._engine, epoch)

    def get_last_lr(self) -> List[float]:
        return self._engine.get_last_lr()

    @property
    def last_epoch(self) -> int:
        return self._engine.last_epoch

    def state_dict(self) -> Dict[str, Any]:
        return self._engine.state_dict()

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        self._engine.load_state_dict(state_dict)


def _no_resume(last_epoch: int) -> None:
    if last_epoch != -1:
        raise NotImplementedError("resume a scheduler with load_state_dict(), not last_epoch=")


def _functions(lr_lambda) -> list:
    return list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda]


class _LrScheduler:
    """``optim.lr_scheduler``: PyTorch's schedulers with their arguments and defaults (nabla's Rust
    ones; a scheduler written in Python sets ``group["lr"]`` itself)."""

    class StepLR(_Scheduler):
        """Multiplies the learning rate by ``gamma`` every ``step_size`` epochs."""

        def __init__(self, optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
            _no_resume(last_epoch)
            super().__init__(optimizer, "StepLR", dict(step_size=step_size, gamma=gamma))

    class MultiStepLR(_Scheduler):
        """Multiplies the learning rate by ``gamma`` at each milestone."""

        def __init__(self, optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
            _no_resume(last_epoch)
            super().__init__(optimizer, "MultiStepLR", dict(milestones=list(milestones), gamma=gamma))

    class ConstantLR(_Scheduler):
        """Scales the learning rate by ``factor`` for ``total_iters`` epochs."""

        def __init__(self, optimizer, factor: float = 1.0 / 3, total_iters: int = 5, last_epoch: int = -1):
            _no_resume(last_epoch)
            super().__init__(optimizer, "ConstantLR", dict(factor=factor, total_iters=total_iters))

    class LinearLR(_Scheduler):
        """Scales the learning rate by a factor going linearly from ``start_factor`` to
        ``end_factor`` over ``total_iters`` epochs."""

        def __init__(self, optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1):
            _no_resume(last_epoch)
            super().__init__(optimizer, "LinearLR", dict(start_factor=start_factor, end_factor=end_factor, total_iters=total_iters))

    class ExponentialLR(_Scheduler):
        """Multiplies the learning rate by ``gamma`` every epoch."""

        def __init__(self, optimizer, gamma: float, last_epoch: int = -1):
            _no_resume(last_epoch)
            super().__init__(optimizer, "ExponentialLR", dict(gamma=gamma))

    class CosineAnnealingLR(_Scheduler):
        """Cosine annealing to ``eta_min`` over ``T_max`` epochs."""

        def __init__(self, optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
            _no_resume(last_epoch)
            super().__init__(optimizer, "CosineAnnealingLR", dict(T_max=T_max, eta_min=eta_min))

    class PolynomialLR(_Scheduler):
        """Polynomial decay to 0 over ``total_iters`` epochs."""

        def __init__(self, optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1):
            _no_resume(last_epoch)
            super().__init__(optimizer, "PolynomialLR", dict(total_iters=total_iters, power=power))

    class LambdaLR(_Scheduler):
        """``lr = base · lr_lambda(epoch)`` (one function, or one per group)."""

        def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
            _no_resume(last_epoch)
            super().__init__(optimizer, "LambdaLR", {}, _functions(lr_lambda))

    class MultiplicativeLR(_Scheduler):
        """``lr = lr · lr_lambda(epoch)`` at every step (one function, or one per group)."""

        def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
            _no_resume(last_epoch)
            super().__init__(optimizer, "MultiplicativeLR", {}, _functions(lr_lambda))

    class OneCycleLR(_Scheduler):
        """The one-cycle policy (up to ``max_lr``, then down far below the start); without
        momentum cycling, so ``cycle_momentum`` must be False."""

        def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None, pct_start: float = 0.3,
                     anneal_strategy: str = "cos", cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95,
                     div_factor: float = 25.0, final_div_factor: float = 1e4, three_phase: bool = False, last_epoch: int = -1):
            _no_resume(last_epoch)
            if cycle_momentum:
                raise NotImplementedError("OneCycleLR: nabla does not cycle the momentum; pass cycle_momentum=False")
            if total_steps is None:
                if epochs is None or steps_per_epoch is None:
                    raise ValueError("OneCycleLR needs total_steps, or epochs and steps_per_epoch")
                total_steps = epochs * steps_per_epoch
            max_lr = list(max_lr) if isinstance(max_lr, (list, tuple)) else [max_lr]
            super().__init__(optimizer, "OneCycleLR", dict(
                max_lr=max_lr, total_steps=total_steps, pct_start=pct_start, anneal_strategy=anneal_strategy,
                div_factor=div_factor, final_div_factor=final_div_factor, three_phase=three_phase))

    class CosineAnnealingWarmRestarts(_Scheduler):
        """Cosine annealing restarted every ``T_0 · T_mult^i`` epochs; ``step(epoch)`` takes
        fractional epochs."""

        def __init__(self, optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0, last_epoch: int = -1):
            _no_resume(last_epoch)
            super().__init__(optimizer, "CosineAnnealingWarmRestarts", dict(T_0=T_0, T_mult=T_mult, eta_min=eta_min))

    class ReduceLROnPlateau(_Scheduler):
        """Reduces the learning rates by ``factor`` when the metric passed to ``step(metric)`` has
        not improved for ``patience`` epochs."""

        def __init__(self, optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10, threshold: float = 1e-4,
                     threshold_mode: str = "rel", cooldown: int = 0, min_lr=0.0, eps: float = 1e-8):
            min_lr = list(min_lr) if isinstance(min_lr, (list, tuple)) else [min_lr]
            super().__init__(optimizer, "ReduceLROnPlateau", dict(
                mode=mode, factor=factor, patience=patience, threshold=threshold, threshold_mode=threshold_mode,
                cooldown=cooldown, min_lr=min_lr, eps=eps))

        def step(self, metrics, epoch=None) -> None:
            self._engine.step(self.optimizer._engine, float(metrics))

    class SequentialLR(_Scheduler):
        """Runs ``schedulers`` one after another, switching at ``milestones``."""

        def __init__(self, optimizer, schedulers, milestones, last_epoch: int = -1):
            _no_resume(last_epoch)
            super().__init__(optimizer, "SequentialLR", dict(milestones=list(milestones)), (), list(schedulers))

    class ChainedScheduler(_Scheduler):
        """Steps every scheduler of ``schedulers`` at each step, their factors multiplying."""

        def __init__(self, schedulers, optimizer=None):
            schedulers = list(schedulers)
            if not schedulers:
                raise ValueError("ChainedScheduler needs at least one scheduler")
            super().__init__(optimizer or schedulers[0].optimizer, "ChainedScheduler", {}, (), schedulers)


lr_scheduler = _LrScheduler
