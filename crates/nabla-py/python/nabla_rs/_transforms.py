"""JAX-style transforms over Python callables whose arguments and results are pytrees of tensors.

The Rust core differentiates, batches and compiles functions of flat lists of tensors; this module
flattens and rebuilds the pytrees, applies ``argnums`` and ``has_aux``, and packs several outputs
into one where the core needs one. Every transform runs eagerly or, inside ``jit`` and ``vmap``, on
traced values, so they compose in any order: ``jit(vmap(grad(f)))``, ``grad(grad(f))``, ...
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, Sequence, Tuple, Union

from . import _nabla
from ._pytree import tree_flatten, tree_map, tree_unflatten

Tensor = _nabla.Tensor


def _as_tensor(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else _nabla.tensor(x)


def _argnums(argnums: Union[int, Sequence[int]], nargs: int) -> Tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for i in nums:
        if not -nargs <= i < nargs:
            raise ValueError(f"argnums {argnums} out of range for {nargs} positional arguments")
    return tuple(i % nargs for i in nums)


def _split_args(args: tuple, nums: Tuple[int, ...]):
    """The differentiated arguments' leaves and a function rebuilding the call's arguments."""
    leaves, treedef = tree_flatten(tuple(args[i] for i in nums))
    leaves = [_as_tensor(x) for x in leaves]

    def rebuild(xs):
        chosen = tree_unflatten(treedef, list(xs))
        full = list(args)
        for k, i in enumerate(nums):
            full[i] = chosen[k]
        return full

    return leaves, treedef, rebuild


def _pack(outputs: list) -> Tensor:
    """Several outputs as one vector (a single output stays as it is)."""
    if len(outputs) == 1:
        return outputs[0]
    return _nabla.concatenate([o.reshape(-1) for o in outputs])


def _unpack(packed: Tensor, shapes: list) -> list:
    if len(shapes) == 1:
        return [packed]
    out, start = [], 0
    for shape in shapes:
        n = 1
        for d in shape:
            n *= d
        out.append(packed[start : start + n].reshape(shape))
        start += n
    return out


def vjp(f: Callable, *primals: Any, has_aux: bool = False):
    """``(f(*primals), vjp_fn)`` where ``vjp_fn(cotangent)`` gives one cotangent per primal, as
    ``jax.vjp``; with ``has_aux``, ``f`` returns ``(out, aux)`` and this returns ``(out, vjp_fn, aux)``."""
    leaves, in_def, rebuild = _split_args(primals, tuple(range(len(primals))))
    state = {}

    def flat_f(xs):
        out = f(*rebuild(xs))
        if has_aux:
            out, state["aux"] = out
        outs, out_def = tree_flatten(out)
        outs = [_as_tensor(o) for o in outs]
        state["out_def"], state["shapes"] = out_def, [tuple(o.shape) for o in outs]
        return _pack(outs)

    packed, pullback = _nabla._vjp(flat_f, leaves)
    out = tree_unflatten(state["out_def"], _unpack(packed, state["shapes"]))

    def vjp_fn(cotangent: Any):
        cts, ct_def = tree_flatten(cotangent)
        if ct_def != state["out_def"]:
            raise ValueError(f"cotangent structure {ct_def!r} differs from the output's {state['out_def']!r}")
        cts = [_as_tensor(c) for c in cts]
        grads = pullback(_pack(cts))
        return tuple(tree_unflatten(in_def, grads))

    return (out, vjp_fn, state["aux"]) if has_aux else (out, vjp_fn)


def value_and_grad(
    f: Callable, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False, holomorphic: bool = False
):
    """The function returning ``(f(*args), gradient)`` (``((value, aux), gradient)`` with
    ``has_aux``), as ``jax.value_and_grad``; ``f`` must return a one-element tensor. With
    ``holomorphic=True`` the inputs and the output are complex and the gradient is the complex
    derivative ``f'(z)`` (JAX's convention)."""

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        nums = _argnums(argnums, len(args))
        leaves, in_def, rebuild = _split_args(args, nums)
        if holomorphic:
            _check_complex("inputs", leaves)
        state = {}

        def flat_f(xs):
            out = f(*rebuild(xs), **kwargs)
            if has_aux:
                out, state["aux"] = out
            return _as_tensor(out)

        value, pullback = _nabla._vjp(flat_f, leaves)
        if holomorphic:
            _check_complex("output", [value])
        grads = tree_unflatten(in_def, pullback(_nabla.ones_like(value) if holomorphic else None))
        g = grads[0] if isinstance(argnums, int) else tuple(grads)
        return ((value, state["aux"]) if has_aux else value), g

    return wrapped


def _check_complex(what: str, tensors) -> None:
    for t in tensors:
        if not t.dtype.is_complex:
            raise TypeError(f"grad(holomorphic=True) needs complex {what}, got {t.dtype}")


def grad(f: Callable, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False, holomorphic: bool = False):
    """The gradient function of a scalar function, as ``jax.grad``: nests to any order
    (``grad(grad(f))``) and composes with ``vmap``, ``jvp`` and ``jit``; ``holomorphic=True``
    differentiates a complex function of complex inputs."""
    vg = value_and_grad(f, argnums, has_aux, holomorphic)

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        (value, g) = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapped


def linearize(f: Callable, *primals: Any, has_aux: bool = False):
    """``(f(*primals), f_jvp)`` as ``jax.linearize``, where ``f_jvp(*tangents)`` is the Jacobian of
    ``f`` at ``primals`` applied to ``tangents`` (with ``has_aux``, ``(out, f_jvp, aux)``). Each
    ``f_jvp`` call runs forward mode at the saved primals (JAX keeps the partially evaluated
    linear program instead); wrap it in ``jit`` to compile it once."""
    primals = tuple(primals)
    saved = tree_map(lambda x: _as_tensor(x).detach() if isinstance(x, (Tensor, int, float, complex)) else x, primals)
    if has_aux:
        out, aux = f(*saved)
    else:
        out = f(*saved)

    def f_jvp(*tangents):
        if len(tangents) != len(saved):
            raise TypeError(f"linearize: f_jvp takes {len(saved)} tangents (one per primal), got {len(tangents)}")
        return jvp(f, saved, tangents, has_aux=has_aux)[1]

    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


def jvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False):
    """``(f(*primals), J·tangents)`` by forward mode, as ``jax.jvp``; with ``has_aux``, ``f``
    returns ``(output, aux)`` and the result is ``(output, tangent, aux)`` (``aux`` not
    differentiated)."""
    leaves, in_def, rebuild = _split_args(tuple(primals), tuple(range(len(primals))))
    t_leaves, t_def = tree_flatten(tuple(tangents))
    if t_def != in_def:
        raise ValueError(f"tangent structure {t_def!r} differs from the primals' {in_def!r}")
    state = {}

    def flat_f(xs):
        out = f(*rebuild(xs))
        if has_aux:
            out, aux = out
            state["aux"] = tree_map(lambda a: a.detach() if isinstance(a, Tensor) else a, aux)
        outs, out_def = tree_flatten(out)
        outs = [_as_tensor(o) for o in outs]
        state["out_def"], state["shapes"] = out_def, [tuple(o.shape) for o in outs]
        return _pack(outs)

    _inexact(leaves, "jvp")
    y, t = _nabla._jvp(flat_f, leaves, [_as_tensor(x) for x in t_leaves])
    rebuild_out = lambda packed: tree_unflatten(state["out_def"], _unpack(packed, state["shapes"]))
    if has_aux:
        return rebuild_out(y), rebuild_out(t), state["aux"]
    return rebuild_out(y), rebuild_out(t)


def _inexact(leaves: list, what: str) -> None:
    """JAX's rule: only float and complex inputs are differentiated (an integer input would give
    a silent zero derivative)."""
    for x in leaves:
        dtype = _as_tensor(x).dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(f"{what} requires float or complex inputs, got {dtype}; cast with .astype() first")


def _jacobian(f: Callable, argnums, forward: bool):
    @functools.wraps(f)
    def wrapped(*args):
        nums = _argnums(argnums, len(args))
        leaves, in_def, rebuild = _split_args(args, nums)
        _inexact(leaves, "jacfwd" if forward else "jacrev")
        state = {}

        def flat_f(xs):
            outs, state["out_def"] = tree_flatten(f(*rebuild(xs)))
            return [_as_tensor(o) for o in outs]

        blocks = _nabla._jacobian(flat_f, leaves, forward)
        per_output = []
        for row in blocks:
            by_arg = tree_unflatten(in_def, row)
            per_output.append(by_arg[0] if isinstance(argnums, int) else tuple(by_arg))
        return tree_unflatten(state["out_def"], per_output)

    return wrapped


def jacfwd(f: Callable, argnums: Union[int, Sequence[int]] = 0):
    """The Jacobian by forward mode (one JVP per input element), as ``jax.jacfwd``: each output
    leaf's block has shape ``out.shape + in.shape``."""
    return _jacobian(f, argnums, forward=True)


def jacrev(f: Callable, argnums: Union[int, Sequence[int]] = 0):
    """The Jacobian by reverse mode (one VJP per output element), as ``jax.jacrev``."""
    return _jacobian(f, argnums, forward=False)


def hessian(f: Callable, argnums: Union[int, Sequence[int]] = 0):
    """The Hessian of a scalar function, ``jacfwd(jacrev(f))`` as ``jax.hessian``."""
    return jacfwd(jacrev(f, argnums), argnums)


def hvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any]):
    """The Hessian-vector product of a scalar function by forward-over-reverse mode:
    ``jvp(grad(f), primals, tangents)[1]`` (without forming the Hessian)."""
    g = grad(f, argnums=tuple(range(len(primals))))
    out = jvp(lambda *xs: g(*xs), tuple(primals), tuple(tangents))[1]
    return out[0] if len(primals) == 1 else out


def _axis_leaves(axes: Any) -> list:
    """The entries of an axes pytree in order, ``None`` entries included (``tree_flatten`` drops
    ``None`` as an empty subtree)."""
    if isinstance(axes, (tuple, list)):
        return [a for sub in axes for a in _axis_leaves(sub)]
    if isinstance(axes, dict):
        return [a for k in sorted(axes, key=repr) for a in _axis_leaves(axes[k])]
    return [axes]


def _expand_axes(axes: Any, args: tuple, what: str) -> list:
    """One axis (or None) per leaf of ``args``, from an int/None or a per-argument prefix tree."""
    if axes is None or isinstance(axes, int):
        return [axes] * len(tree_flatten(args)[0])
    axes = tuple(axes)
    if len(axes) != len(args):
        raise ValueError(f"{what} has {len(axes)} entries for {len(args)} arguments")
    out = []
    for a, arg in zip(axes, args):
        n = len(tree_flatten(arg)[0])
        if a is None or isinstance(a, int):
            out.extend([a] * n)
        else:
            sub = _axis_leaves(a)
            if len(sub) != n:
                raise ValueError(f"{what} entry {a!r} does not match its argument's structure")
            out.extend(sub)
    return out


def vmap(f: Callable, in_axes: Any = 0, out_axes: Any = 0):
    """``f`` mapped over a batch axis of its arguments, computed in one pass, as ``jax.vmap``:
    ``in_axes`` per argument (``None``: shared by every example), ``out_axes`` for the outputs.
    Tensors ``f`` closes over are constants; pass what should be differentiated as arguments."""

    @functools.wraps(f)
    def wrapped(*args):
        leaves, in_def = tree_flatten(args)
        leaves = [_as_tensor(x) for x in leaves]
        axes = _expand_axes(in_axes, args, "in_axes")
        state = {}

        def flat_f(xs):
            outs, state["out_def"] = tree_flatten(f(*tree_unflatten(in_def, list(xs))))
            return [_as_tensor(o) for o in outs]

        if isinstance(out_axes, int) or out_axes is None:
            o_axes = [out_axes]
        else:
            o_axes = _axis_leaves(out_axes)
        outs = _nabla._vmap(flat_f, leaves, axes, o_axes)
        return tree_unflatten(state["out_def"], list(outs))

    return wrapped


class jit:
    """``f`` traced once per argument signature (pytree structure, shapes, dtypes, and the values
    of the static arguments) into a compiled program that later calls run without Python, as
    ``jax.jit``. Arguments may be positional or keywords, tensors or pytrees of them;
    ``static_argnums``/``static_argnames`` name arguments passed to ``f`` as they are (hashable
    Python values: sizes, flags, modes), each new value compiling anew. Tensors ``f`` closes over are
    baked in as constants. When an argument requires gradients or is itself being traced, ``f`` runs
    as it is, so gradients flow through and outer transforms see it."""

    def __init__(self, f: Callable, static_argnums: Union[int, Sequence[int]] = (), static_argnames: Union[str, Sequence[str]] = ()):
        functools.update_wrapper(self, f)
        self._f = f
        self._static_nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        self._static_names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        self._cache = {}

    def _split(self, args: tuple, kwargs: dict):
        """The static arguments (hashable, part of the cache key) and the pytree of the others."""
        nums = set()
        for i in self._static_nums:
            j = i + len(args) if i < 0 else i
            if not 0 <= j < len(args):
                raise ValueError(f"jit: static_argnums {i} is out of range for {len(args)} positional arguments")
            nums.add(j)
        static = tuple((i, args[i]) for i in sorted(nums))
        static += tuple(sorted((k, v) for k, v in kwargs.items() if k in self._static_names))
        try:
            hash(static)
        except TypeError:
            raise ValueError(f"jit: static arguments must be hashable, got {static!r}") from None
        dynamic = ([a for i, a in enumerate(args) if i not in nums], {k: v for k, v in kwargs.items() if k not in self._static_names})
        return static, nums, dynamic

    def _entry(self, args: tuple, kwargs: dict):
        static, nums, dynamic = self._split(args, kwargs)
        leaves, in_def = tree_flatten(dynamic)
        tensors = [_as_tensor(x) for x in leaves]
        if any(t.requires_grad or t.device == "traced" for t in tensors):
            return None, tensors
        key = (static, in_def, tuple((tuple(t.shape), t.dtype) for t in tensors))
        entry = self._cache.get(key)
        if entry is None:
            state = {}
            n = len(args)

            def flat_f(xs):
                dyn_args, dyn_kwargs = tree_unflatten(in_def, list(xs))
                it = iter(dyn_args)
                full = [args[i] if i in nums else next(it) for i in range(n)]
                named = {**dyn_kwargs, **{k: v for k, v in static if isinstance(k, str)}}
                outs, state["out_def"] = tree_flatten(self._f(*full, **named))
                return [_as_tensor(o) for o in outs]

            program = _nabla._compile(flat_f, [(tuple(t.shape), t.dtype) for t in tensors])
            entry = self._cache[key] = (program, state["out_def"])
        return entry, tensors

    def __call__(self, *args, **kwargs):
        entry, tensors = self._entry(args, kwargs)
        if entry is None:
            return self._f(*args, **kwargs)
        program, out_def = entry
        return tree_unflatten(out_def, list(program.run(tensors)))

    def lower(self, *args, **kwargs):
        """The compiled program for these arguments' signature (its text with ``str``)."""
        entry, _ = self._entry(args, kwargs)
        if entry is None:
            raise ValueError("jit.lower: an argument requires gradients or is being traced, so nothing is compiled")
        return entry[0]


def _split_nondiff(name: str, nondiff_argnums, args: tuple):
    """A custom rule's arguments split by ``nondiff_argnums``: the positions not differentiated,
    their values, the differentiated arguments, and those flattened to tensor leaves with their
    tree structure."""
    nondiff = {i + len(args) if i < 0 else i for i in nondiff_argnums}
    if any(not 0 <= i < len(args) for i in nondiff):
        raise ValueError(f"{name}: nondiff_argnums {tuple(nondiff_argnums)} out of range for {len(args)} arguments")
    fixed = [args[i] for i in sorted(nondiff)]
    diff_args = tuple(a for i, a in enumerate(args) if i not in nondiff)
    leaves, in_def = tree_flatten(diff_args)
    return nondiff, fixed, diff_args, [_as_tensor(x) for x in leaves], in_def


class custom_vjp:
    """A function with its own reverse-mode rule, as ``jax.custom_vjp``: ``fwd(*args)`` returns
    ``(output, residuals)`` and ``bwd(residuals, cotangent)`` one cotangent (or ``None``) per
    argument. Every reverse transform (``grad``, ``vjp``, ``backward``, ``jacrev``, nested, under
    ``vmap`` and ``jit``) uses the rule; forward mode differentiates the function itself. The
    output is one tensor. ``nondiff_argnums`` name arguments that are not differentiated (sizes,
    flags, functions): ``fwd`` receives every argument, ``bwd(*nondiff, residuals, cotangent)``
    receives them first and returns cotangents for the others only, as in JAX."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd = self.bwd = None
        self._inside_fwd = threading.local()

    def defvjp(self, fwd: Callable, bwd: Callable) -> "custom_vjp":
        self.fwd, self.bwd = fwd, bwd
        return self

    def __call__(self, *args):
        if self.fwd is None:
            raise TypeError(f"{self.fun.__name__}: call defvjp(fwd, bwd) before using a custom_vjp function")
        if getattr(self._inside_fwd, "depth", 0):
            return self.fun(*args)
        nondiff, fixed, diff_args, leaves, in_def = _split_nondiff(self.fun.__name__, self.nondiff_argnums, args)
        counts = [len(tree_flatten(a)[0]) for a in diff_args]
        cell = {}

        def call_fwd(xs):
            it = iter(tree_unflatten(in_def, list(xs)))
            # `fwd` may call the function itself, as JAX's examples do: that call is the plain one.
            self._inside_fwd.depth = getattr(self._inside_fwd, "depth", 0) + 1
            try:
                return self.fwd(*[args[i] if i in nondiff else next(it) for i in range(len(args))])
            finally:
                self._inside_fwd.depth -= 1

        def body(xs):
            out, cell["res"] = call_fwd(xs)
            return _as_tensor(out)

        def reverse(inputs, output, g):
            # The residuals saved by the (untracked) forward call serve a first-order backward.
            # When the backward is itself differentiated its inputs are tracked, and the residuals
            # must be functions of them (as JAX's are), so `fwd` runs again on those inputs.
            if any(getattr(x, "requires_grad", False) for x in inputs):
                _, res = call_fwd(inputs)
            else:
                if "res" not in cell:
                    _, cell["res"] = call_fwd(inputs)
                res = cell["res"]
            cts = self.bwd(*fixed, res, g)
            if not isinstance(cts, tuple) or len(cts) != len(diff_args):
                raise ValueError(f"{self.fun.__name__}: bwd must return a tuple of {len(diff_args)} cotangents")
            flat = []
            for i, (ct, n) in enumerate(zip(cts, counts)):
                leaves = [None] * n if ct is None else tree_flatten(ct)[0]
                if len(leaves) != n:
                    raise ValueError(f"{self.fun.__name__}: bwd's cotangent {i} has {len(leaves)} leaves, its argument {n}")
                flat.extend(leaves)
            return flat

        return _nabla._custom_call(getattr(self.fun, "__name__", "custom_vjp"), body, reverse, None, leaves)


def checkpoint(f: Callable, captured: Any = None):
    """``f`` recomputed in the backward pass instead of keeping its intermediate values, as
    ``jax.checkpoint`` / ``torch.utils.checkpoint``: same gradients, less memory. Tensors ``f`` reads
    besides its arguments must be listed in ``captured`` to receive gradients (for an ``nn.Module``,
    its parameters are taken by default)."""

    @functools.wraps(f)
    def wrapped(*args):
        leaves, in_def = tree_flatten(args)
        leaves = [_as_tensor(x) for x in leaves]
        caps = captured
        if caps is None:
            caps = list(f.parameters()) if hasattr(f, "parameters") else []

        def body(xs):
            return _as_tensor(f(*tree_unflatten(in_def, list(xs))))

        return _nabla._checkpoint(body, leaves, list(caps))

    return wrapped
