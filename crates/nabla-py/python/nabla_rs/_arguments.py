"""A call's arguments bound to a PyTorch-style signature, given as ``(name, required, default)``
rows, with errors that name the class: shared by the generated layer, loss and optimizer classes."""

from __future__ import annotations

import inspect
from typing import Any, Dict, Sequence, Tuple

Rows = Sequence[Tuple[str, bool, Any]]


def signature(rows: Rows, leading: Sequence[str] = (), keyword_only: Sequence[str] = ()) -> inspect.Signature:
    """The ``inspect`` signature of ``rows`` (for ``help()``), after the ``leading`` positional
    parameters and before the ``keyword_only`` ones (which default to ``None``)."""
    kinds = inspect.Parameter
    params = [kinds(n, kinds.POSITIONAL_OR_KEYWORD) for n in leading]
    params += [kinds(n, kinds.POSITIONAL_OR_KEYWORD, **({} if required else {"default": d})) for n, required, d in rows]
    params += [kinds(n, kinds.KEYWORD_ONLY, default=None) for n in keyword_only]
    return inspect.Signature(params)


def bind(kind: str, rows: Rows, args: tuple, kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """Every argument of ``rows`` by name, in their order: given positionally, by keyword, or its
    default."""
    names = [n for n, _, _ in rows]
    if len(args) > len(names):
        raise TypeError(f"{kind} takes at most {len(names)} arguments, got {len(args)}")
    values = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names:
            raise TypeError(f"{kind} got an unexpected keyword argument {k!r}; its arguments are {', '.join(names)}")
        if k in values:
            raise TypeError(f"{kind} got two values for {k!r}")
        values[k] = v
    for n, required, default in rows:
        if n not in values:
            if required:
                raise TypeError(f"{kind} is missing the argument {n!r}")
            values[n] = default
    return {n: values[n] for n, _, _ in rows}
