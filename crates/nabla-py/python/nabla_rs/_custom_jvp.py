"""``custom_jvp``: a function with its own forward-mode rule, as ``jax.custom_jvp``. Reverse mode
uses the same rule, transposed (the rule is linear in the tangents, so its reverse derivative
with respect to them is the transpose), as JAX does."""

from __future__ import annotations

import functools
import threading
from typing import Callable, Sequence

from . import _nabla
from ._pytree import tree_unflatten
from ._transforms import _as_tensor, _split_nondiff, vjp


class custom_jvp:
    """``f = custom_jvp(fun)`` then ``@f.defjvp`` on ``rule(primals, tangents) -> (primal_out,
    tangent_out)``, or ``f.defjvps(*per_argument)`` with ``jvp_i(tangent_i, primal_out, *primals)``
    summed, as in JAX. Forward mode (``jvp``, ``jacfwd``) calls the rule; reverse mode (``grad``,
    ``vjp``, ``backward``, ``jacrev``) transposes it, to any order. Arguments in
    ``nondiff_argnums`` are passed to the rule first and get no tangent. ``fun`` returns one
    tensor; arguments may be pytrees of tensors. A tangent the rule receives for an argument that
    has none is zeros (JAX's symbolic zero, made concrete)."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.rule = None
        self._inside_rule = threading.local()

    def defjvp(self, rule: Callable) -> Callable:
        """Sets the rule (usable as a decorator); returns it."""
        self.rule = rule
        return rule

    def defjvps(self, *jvps: Callable) -> None:
        """Sets one rule per differentiated argument, ``jvp_i(tangent_i, primal_out, *primals)``
        (``None`` for an argument with no derivative); the tangent out is their sum."""

        def rule(primals, tangents):
            out = self.fun(*primals)
            total = None
            for jvp_i, t in zip(jvps, tangents):
                if jvp_i is not None:
                    term = jvp_i(t, out, *primals)
                    total = term if total is None else total + term
            return out, total if total is not None else _nabla.zeros_like(_as_tensor(out))

        self.rule = rule

    def _call_rule(self, fixed, primals, tangents):
        """The rule's ``(primal_out, tangent_out)``; calls of the function inside it are plain."""
        self._inside_rule.depth = getattr(self._inside_rule, "depth", 0) + 1
        try:
            out = self.rule(*fixed, tuple(primals), tuple(tangents))
        finally:
            self._inside_rule.depth -= 1
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise ValueError(f"{self.__name__}: the jvp rule must return (primal_out, tangent_out)")
        return out

    def __call__(self, *args):
        if self.rule is None:
            raise TypeError(f"{self.__name__}: call defjvp(rule) before using a custom_jvp function")
        if getattr(self._inside_rule, "depth", 0):
            return self.fun(*args)
        nondiff, fixed, _, leaves, in_def = _split_nondiff(self.__name__, self.nondiff_argnums, args)

        def primals_of(xs):
            it = iter(tree_unflatten(in_def, list(xs)))
            return [args[i] if i in nondiff else next(it) for i in range(len(args))], tree_unflatten(in_def, list(xs))

        def body(xs):
            return _as_tensor(self.fun(*primals_of(xs)[0]))

        def tangent_out(xs, ts):
            _, primals = primals_of(xs)
            tangents = tree_unflatten(in_def, [_nabla.zeros_like(x) if t is None else t for x, t in zip(xs, ts)])
            _, out = self._call_rule(fixed, primals, tangents)
            return _as_tensor(out)

        def forward(inputs, output, tangents):
            return tangent_out(inputs, tangents)

        def reverse(inputs, output, g):
            zeros = [_nabla.zeros_like(x) for x in inputs]
            _, transpose = vjp(lambda *ts: tangent_out(inputs, ts), *zeros)
            return list(transpose(g))

        return _nabla._custom_call(getattr(self.fun, "__name__", "custom_jvp"), body, reverse, forward, leaves)
