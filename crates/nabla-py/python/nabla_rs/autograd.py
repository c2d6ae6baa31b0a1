"""``nabla_rs.autograd``: PyTorch's ``torch.autograd.grad`` and ``torch.autograd.backward`` over
nabla's reverse mode (the functional transforms are ``nb.grad``, ``nb.vjp``, ...)."""

from __future__ import annotations

from . import _nabla
from ._transforms import _as_tensor

Tensor = _nabla.Tensor


def _as_list(x, what: str) -> list:
    if isinstance(x, Tensor):
        return [x]
    items = list(x)
    if not all(isinstance(t, Tensor) for t in items):
        raise TypeError(f"autograd: {what} must be a tensor or a sequence of tensors")
    return items


def _combined(outputs: list, grad_outputs) -> tuple:
    """One output and its seed standing for several: ``sum_i <output_i, seed_i>``."""
    seeds = [None] * len(outputs) if grad_outputs is None else _seeds(grad_outputs, len(outputs))
    if not any(o.requires_grad for o in outputs):
        raise RuntimeError("autograd: no output requires grad (none was computed from a tensor with requires_grad)")
    for i, (o, s) in enumerate(zip(outputs, seeds)):
        if s is None and o.size != 1:
            raise RuntimeError(f"autograd: output {i} has shape {tuple(o.shape)}; grad_outputs must be given for outputs of more than one element")
    if len(outputs) == 1:
        return outputs[0], seeds[0]
    total = None
    for o, s in zip(outputs, seeds):
        term = (o * (1.0 if s is None else _as_tensor(s))).sum()
        total = term if total is None else total + term
    return total, None


def _seeds(grad_outputs, n: int) -> list:
    seeds = [grad_outputs] if isinstance(grad_outputs, Tensor) or grad_outputs is None else list(grad_outputs)
    if len(seeds) != n:
        raise ValueError(f"autograd: {len(seeds)} grad_outputs for {n} outputs")
    return seeds


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` (weighted by ``grad_outputs``) with respect to each of
    ``inputs`` (leaves or computed tensors), as ``torch.autograd.grad``; ``.grad`` is left alone.
    An input the outputs do not depend on is an error, ``None`` with ``allow_unused=True``, zeros
    with ``materialize_grads=True``. With ``create_graph=True`` the gradients can be differentiated
    again. The graph is kept whatever ``retain_graph`` says (it is freed with its tensors). With
    ``is_grads_batched=True`` the first axis of every ``grad_outputs`` tensor is a batch: one
    gradient per seed row, stacked on a new first axis of each result (PyTorch's per-sample
    vector-Jacobian products)."""
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grad_outputs, create_graph, allow_unused, materialize_grads)
    xs = _as_list(inputs, "inputs")
    for i, x in enumerate(xs):
        if not x.requires_grad:
            raise RuntimeError(f"autograd.grad: input {i} does not require grad")
    y, seed = _combined(_as_list(outputs, "outputs"), grad_outputs)
    found = _nabla._autograd_grad(y, xs, seed, bool(create_graph))
    allow_unused = materialize_grads if allow_unused is None else allow_unused
    result = []
    for i, (x, g) in enumerate(zip(xs, found)):
        if g is None and materialize_grads:
            g = _nabla.zeros_like(x)
        elif g is None and not allow_unused:
            raise RuntimeError(f"autograd.grad: input {i} was not used to compute the outputs; pass allow_unused=True to get None for it")
        result.append(g)
    return tuple(result)


def _batched_grad(outputs, inputs, grad_outputs, create_graph, allow_unused, materialize_grads) -> tuple:
    """``grad`` once per row of the batched seeds, each result stacked on a new first axis."""
    if grad_outputs is None:
        raise ValueError("autograd.grad: is_grads_batched=True needs grad_outputs with a leading batch axis")
    seeds = [None if s is None else _as_tensor(s) for s in _seeds(grad_outputs, len(_as_list(outputs, "outputs")))]
    if any(s is None or s.ndim == 0 for s in seeds) or len({s.shape[0] for s in seeds}) != 1:
        raise ValueError("autograd.grad: with is_grads_batched=True every grad_outputs tensor needs the same leading batch axis")
    batch, xs = seeds[0].shape[0], _as_list(inputs, "inputs")
    if batch == 0:
        return tuple(_nabla.zeros((0, *x.shape), dtype=x.dtype) for x in xs)
    rows = [grad(outputs, inputs, [s[b] for s in seeds], None, create_graph,
                 allow_unused=allow_unused, materialize_grads=materialize_grads)
            for b in range(batch)]
    return tuple(None if rows[0][i] is None else _nabla.stack([r[i] for r in rows]) for i in range(len(xs)))


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Adds the gradients of ``tensors`` (weighted by ``grad_tensors``) to the ``.grad`` of the
    leaves they depend on, as ``torch.autograd.backward``."""
    if inputs is not None:
        raise ValueError("autograd.backward: inputs= is not supported; use autograd.grad for chosen inputs")
    y, seed = _combined(_as_list(tensors, "tensors"), grad_tensors)
    y.backward(seed, retain_graph, create_graph)
