"""Module backward hooks, as PyTorch's ``register_full_backward_hook`` and
``register_full_backward_pre_hook``: the call's tensor inputs and outputs pass through identity ops
whose reverse rules see the gradients, so the hooks run in ``backward`` and in every reverse
transform."""

from __future__ import annotations

from .. import _nabla
from .._array_api_dtypes import result_type
from .._inplace import replacement_gradient
from .._pytree import tree_flatten, tree_unflatten
from .._transforms import _as_tensor


def _through_identity(tensors, on_grads, name: str):
    """``tensors`` passed through one identity op whose reverse rule maps their gradients (a list)
    through ``on_grads``. Several tensors are packed into one vector (in their common dtype) so
    that the rule sees all their gradients at once."""
    dtypes = {t.dtype for t in tensors}
    common = tensors[0].dtype if len(dtypes) == 1 else result_type(*tensors)
    shapes = [tuple(t.shape) for t in tensors]
    sizes = [t.size for t in tensors]

    def unpack(flat):
        parts, start = [], 0
        for shape, size in zip(shapes, sizes):
            parts.append(flat[start : start + size].reshape(*shape))
            start += size
        return parts

    def reverse(inputs, output, g):
        grads = on_grads(unpack(g))
        return [_nabla.concatenate([_as_tensor(x).astype(common).reshape(-1) for x in grads])]

    packed = _nabla.concatenate([t.astype(common).reshape(-1) for t in tensors])
    out = _nabla._custom_call(name, lambda xs: xs[0] * 1, reverse, None, [packed])
    return [part.astype(t.dtype) for part, t in zip(unpack(out), tensors)]


def _checked(what: str, new, old):
    """A hook's replacement gradients (``None``: keep ``old``), one per tensor."""
    if new is None:
        return list(old)
    new = list(new) if isinstance(new, (tuple, list)) else [new]
    if len(new) != len(old):
        raise RuntimeError(f"{what}: the hook returned {len(new)} gradients for {len(old)}")
    return [replacement_gradient(what, n, o) for n, o in zip(new, old)]


def call(module, args, kwargs, forward):
    """``forward(*args, **kwargs)`` with ``module``'s backward hooks attached to its gradients."""
    state = {"grad_output": None}
    hooks, pre_hooks = module._backward_hooks, module._backward_pre_hooks
    tracked = [i for i, a in enumerate(args) if isinstance(a, _nabla.Tensor) and a.requires_grad]

    def run_hooks(grad_input):
        grad_input = tuple(grad_input)
        for hook in list(hooks.values()):
            changed = hook(module, grad_input, state["grad_output"])
            grad_input = tuple(_checked("register_full_backward_hook", changed, grad_input))
        return grad_input

    if tracked and hooks:
        def on_input_grads(grads):
            full = [None] * len(args)
            for i, g in zip(tracked, grads):
                full[i] = g
            full = run_hooks(full)
            return [full[i] for i in tracked]

        passed = _through_identity([args[i] for i in tracked], on_input_grads, "backward_hook_inputs")
        args = list(args)
        for i, t in zip(tracked, passed):
            args[i] = t
        args = tuple(args)
    output = forward(*args, **kwargs)
    leaves, tree = tree_flatten(output)
    outs = [i for i, leaf in enumerate(leaves) if isinstance(leaf, _nabla.Tensor) and leaf.requires_grad]
    if not outs:
        return output

    def on_output_grads(grads):
        grads = tuple(grads)
        for hook in list(pre_hooks.values()):
            grads = tuple(_checked("register_full_backward_pre_hook", hook(module, grads), grads))
        state["grad_output"] = grads
        if hooks and not tracked:
            run_hooks([None] * len(args))  # no input needs a gradient: the hooks see None for each
        return list(grads)

    passed = _through_identity([leaves[i] for i in outs], on_output_grads, "backward_hook_outputs")
    for i, t in zip(outs, passed):
        leaves[i] = t
    return tree_unflatten(tree, leaves)
