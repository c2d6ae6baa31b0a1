"""``nabla_rs.onnx``: ONNX export, as ``torch.onnx.export``.

``export(model, args, f)`` traces ``model(*args)`` (any callable of tensors: a module, a function)
as ``jit`` traces it, so the tensors it closes over (a module's parameters and buffers) become the
model's initialisers, and writes an ONNX model at opset ``OPSET`` to the path ``f``. A module is
traced in evaluation mode (dropout off, batch norm on its running statistics) and put back in the
mode it was in. With ``dynamic_batch=True`` axis 0 of every input has any size (ONNX's symbolic
``batch``), as ``dynamic_axes={name: {0: "batch"}}`` for every input in PyTorch; the function is
traced at three batch sizes, and sizes that do not follow the batch are an error.

    nb.onnx.export(model, (x,), "model.onnx", input_names=["x"], output_names=["logits"],
                   dynamic_batch=True)

Operations ONNX cannot express with nabla's semantics (complex numbers, linear-algebra and FFT
extension ops, ``atan2``, dropout in training mode) are an error naming them.
"""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence

from . import _nabla
from ._pytree import tree_flatten
from ._transforms import _as_tensor

__all__ = ["export", "OPSET"]

OPSET = _nabla.onnx.OPSET


def export(model: Any, args: Any, f: "os.PathLike[str] | str", *, input_names: Optional[Sequence[str]] = None,
           output_names: Optional[Sequence[str]] = None, dynamic_batch: bool = False) -> None:
    """Writes ``model(*args)`` as an ONNX model to ``f`` (see the module's documentation)."""
    if not isinstance(args, (tuple, list)):
        args = (args,)
    tensors = [_as_tensor(a) for a in args]

    def flat_f(xs):
        leaves, _ = tree_flatten(model(*xs))
        return [_as_tensor(o) for o in leaves]

    training = getattr(model, "training", None)
    if training:
        model.eval()
    try:
        _nabla.onnx._export(flat_f, [(tuple(t.shape), t.dtype) for t in tensors], os.fspath(f),
                            list(input_names or []), list(output_names or []), bool(dynamic_batch))
    finally:
        if training:
            model.train()
