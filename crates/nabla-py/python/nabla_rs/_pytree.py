"""Pytrees: nested tuples, lists and dicts (and None) with tensors or other values at the leaves.

The transforms flatten their arguments and results with these, as JAX's ``jax.tree_util`` does.
"""

from __future__ import annotations

from typing import Any, Callable, List, Tuple


class TreeDef:
    """The structure of a pytree without its leaves."""

    __slots__ = ("kind", "meta", "children")

    def __init__(self, kind: str, meta: Any = None, children: Tuple["TreeDef", ...] = ()):
        self.kind = kind
        self.meta = meta
        self.children = children

    @property
    def num_leaves(self) -> int:
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, TreeDef)
            and self.kind == other.kind
            and self.meta == other.meta
            and self.children == other.children
        )

    def __hash__(self) -> int:
        return hash((self.kind, self.meta, self.children))

    def __repr__(self) -> str:
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(map(repr, self.children))
        if self.kind == "dict":
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.meta, self.children))
            return "{" + inner + "}"
        return ("(" if self.kind == "tuple" else "[") + inner + (")" if self.kind == "tuple" else "]")


_LEAF = TreeDef("leaf")


def tree_flatten(tree: Any) -> Tuple[List[Any], TreeDef]:
    """The leaves of ``tree`` in order, and its structure."""
    leaves: List[Any] = []

    def walk(node: Any) -> TreeDef:
        if node is None:
            return TreeDef("none")
        if isinstance(node, tuple) and not hasattr(node, "_fields"):
            return TreeDef("tuple", None, tuple(walk(c) for c in node))
        if isinstance(node, tuple):  # a named tuple keeps its type
            return TreeDef("namedtuple", type(node), tuple(walk(c) for c in node))
        if isinstance(node, list):
            return TreeDef("list", None, tuple(walk(c) for c in node))
        if isinstance(node, dict):
            keys = tuple(sorted(node.keys(), key=repr))
            return TreeDef("dict", keys, tuple(walk(node[k]) for k in keys))
        leaves.append(node)
        return _LEAF

    return leaves, walk(tree)


def tree_unflatten(treedef: TreeDef, leaves: List[Any]) -> Any:
    """The pytree of structure ``treedef`` with ``leaves`` in order."""
    it = iter(leaves)

    def build(d: TreeDef) -> Any:
        if d.kind == "leaf":
            return next(it)
        if d.kind == "none":
            return None
        children = [build(c) for c in d.children]
        if d.kind == "tuple":
            return tuple(children)
        if d.kind == "namedtuple":
            return d.meta(*children)
        if d.kind == "list":
            return children
        return dict(zip(d.meta, children))

    out = build(treedef)
    rest = list(it)
    if rest:
        raise ValueError(f"{len(rest)} leaves left over for the tree {treedef!r}")
    return out


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """``f`` applied to every leaf (and the matching leaves of ``rest``, of the same structure)."""
    leaves, treedef = tree_flatten(tree)
    others = []
    for r in rest:
        r_leaves, r_def = tree_flatten(r)
        if r_def != treedef:
            raise ValueError(f"tree structures differ: {treedef!r} and {r_def!r}")
        others.append(r_leaves)
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])


def tree_leaves(tree: Any) -> List[Any]:
    """The leaves of ``tree`` in order."""
    return tree_flatten(tree)[0]
