"""``nabla_rs.random``: random numbers from explicit keys, as ``jax.random``.

A key is an int64 tensor ``[seed, offset]`` naming a stream of nabla's counter-based generator
(Philox-4x32-10): element ``i`` of a draw is a pure function of the seed and ``offset + i``, so
the same key gives the same numbers, and ``manual_seed``'s global stream is never touched. Keys are
tensors, so they pass through ``jit`` (as arguments, not recompiling per key) and ``vmap`` (a
batch of keys from :func:`split`): with a concrete key the draws run in Rust, with a traced one
the same Philox rounds run as integer tensor ops, giving the same bits (uniform draws exactly;
normal draws up to the last bit of ``log`` and ``cos``). As in JAX, reusing a key reuses its
numbers: :func:`split` or :func:`fold_in` a key for every independent draw."""

from __future__ import annotations

import math
from typing import Optional, Sequence, Union

from . import _nabla
from ._transforms import _as_tensor

_MASK = 0xFFFFFFFF
_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_SPLIT, _FOLD = 1, 2  # the third counter word of derived keys; draws use 0

Shape = Union[int, Sequence[int]]


def key(seed: int):
    """A key for ``seed`` (an int in ``[-2**63, 2**64)``): ``[seed, 0]`` as int64."""
    seed = int(seed)
    if not -(2**63) <= seed < 2**64:
        raise ValueError(f"random.key: the seed {seed} does not fit in 64 bits")
    if seed >= 2**63:
        seed -= 2**64
    return _nabla.tensor([seed, 0], dtype=_nabla.int64)


PRNGKey = key


def key_data(k):
    """The key's ``[seed, offset]`` words (a key is its data)."""
    return _checked(k, "key_data")


def _checked(k, name: str):
    k = _as_tensor(k)
    if k.dtype != _nabla.int64 or tuple(k.shape) != (2,):
        raise ValueError(
            f"random.{name}: expects one key, an int64 tensor of shape (2,) from random.key, got "
            f"{k.dtype} of shape {tuple(k.shape)} (split keys are rows: pass keys[i], or vmap over them)"
        )
    return k


def _words(v):
    """A 64-bit int64 tensor as its low and high 32-bit words (as int64 tensors)."""
    return v & _MASK, (v >> 32) & _MASK


def _philox(c0, c1, c2, c3, k0, k1):
    """Philox-4x32-10 on int64 tensors holding 32-bit words (broadcast together): the rounds of
    ``nabla_core::philox4x32_10``. Products of two words wrap in int64 to the same 64 bits."""
    for r in range(10):
        if r:
            k0, k1 = (k0 + _W0) & _MASK, (k1 + _W1) & _MASK
        p0, p1 = c0 * _M0, c2 * _M1
        c0, c1, c2, c3 = ((p1 >> 32) & _MASK) ^ c1 ^ k0, p1 & _MASK, ((p0 >> 32) & _MASK) ^ c3 ^ k1, p0 & _MASK
    return c0, c1, c2, c3


def _counters(k, index, domain: int):
    """The Philox counter words of elements ``offset + index`` of key ``k`` in ``domain``."""
    lo, hi = _words(k[1])
    low_sum = lo + index
    zero = low_sum * 0
    return low_sum & _MASK, (hi + (low_sum >> 32)) & _MASK, zero + domain, zero


def _stream(k, index, domain: int = 0):
    seed_lo, seed_hi = _words(k[0])
    return _philox(*_counters(k, index, domain), seed_lo, seed_hi)


def _unit(hi, lo):
    """53 random bits of two words as a float64 in [0, 1) (``nabla_core``'s ``unit_f64``)."""
    return ((hi << 21) | (lo >> 11)).astype(_nabla.float64) * (1.0 / 2.0**53)


def _draw(k, n: int, kind: str):
    """``n`` float64 draws of ``kind`` (uniform on [0, 1) or standard normal) from key ``k``."""
    if k.device != "traced":
        seed, offset = (int(v) % 2**64 for v in k.tolist())
        return _nabla._keyed_draw(kind, n, seed, offset)
    b0, b1, b2, b3 = _stream(k, _nabla.arange(n, dtype=_nabla.int64))
    if kind == "uniform":
        return _unit(b0, b1)
    u1, u2 = 1.0 - _unit(b0, b1), _unit(b2, b3)
    return _nabla.sqrt(-2.0 * _nabla.log(u1)) * _nabla.cos((2.0 * math.pi) * u2)


def _derived(k, index, domain: int):
    """Keys ``[w0 | w1 << 32, 0]`` from the stream of ``k`` in ``domain`` at ``index``."""
    w0, w1, _, _ = _stream(k, index, domain)
    seeds = w0 | (w1 << 32)
    return _nabla.stack([seeds, seeds * 0], axis=-1)


def split(k, num: int = 2):
    """``num`` new independent keys (rows of a ``[num, 2]`` tensor), as ``jax.random.split``."""
    k = _checked(k, "split")
    if num < 0:
        raise ValueError(f"random.split: num must not be negative, got {num}")
    return _derived(k, _nabla.arange(num, dtype=_nabla.int64), _SPLIT)


def fold_in(k, data):
    """A new key from ``k`` and the integer ``data`` (a step number, a device index), as
    ``jax.random.fold_in``."""
    k = _checked(k, "fold_in")
    data = _as_tensor(data).astype(_nabla.int64).reshape(())
    return _derived(k, data, _FOLD)


def _shape(shape: Optional[Shape]) -> tuple:
    if shape is None:
        return ()
    return (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)


def _float_dtype(dtype, name: str):
    dtype = dtype if dtype is not None else _nabla._default_dtype()
    if not (getattr(dtype, "is_floating_point", False)):
        raise TypeError(f"random.{name}: needs a floating-point dtype, got {dtype}")
    return dtype


def _sized(k, shape: tuple, kind: str, name: str):
    k = _checked(k, name)
    n = math.prod(shape)
    return _draw(k, n, kind).reshape(*shape)


def uniform(k, shape: Shape = (), dtype=None, minval=0.0, maxval=1.0):
    """Uniform draws on ``[minval, maxval)`` (bounds broadcast against ``shape``); a draw that
    rounds up to ``maxval`` in ``dtype`` becomes the value just below it."""
    dtype = _float_dtype(dtype, "uniform")
    u = _sized(k, _shape(shape), "uniform", "uniform")
    low, high = _as_tensor(minval).astype(_nabla.float64), _as_tensor(maxval).astype(_nabla.float64)
    f64 = _nabla.float64

    def rounded(x):  # to `dtype` and back: float64 holds every value of every float dtype
        return x.astype(dtype).astype(f64)

    value, top = rounded(low + (high - low) * u), rounded(high)
    below = _nabla.maximum(_just_below(high.astype(dtype), dtype).astype(f64), rounded(low))
    return _nabla.where(value >= top, below, value).astype(dtype)


_HALF_FLOATS = {"float16": (11, 2.0**-24), "bfloat16": (8, 2.0**-133)}  # digits, smallest subnormal


def _just_below(top, dtype):
    """The largest ``dtype`` value below ``top``. The half floats have no ``nextafter``: their
    neighbour is ``top`` scaled by one part in ``2**digits`` (a little more away from zero, where
    the scaled value could tie), rounded to the nearest half."""
    if dtype.name not in _HALF_FLOATS:
        return _nabla.nextafter(top, _nabla.full((), -math.inf, dtype=dtype))
    digits, tiny = _HALF_FLOATS[dtype.name]
    t = top.astype(_nabla.float64)
    down, up = t * (1.0 - 2.0**-digits), t * (1.0 + 1.01 * 2.0**-digits)
    return _nabla.where(t > 0, down, _nabla.where(t < 0, up, t - tiny)).astype(dtype)


def normal(k, shape: Shape = (), dtype=None):
    """Standard normal draws (Box-Muller on two uniforms per element)."""
    dtype = _float_dtype(dtype, "normal")
    return _sized(k, _shape(shape), "normal", "normal").astype(dtype)


def bernoulli(k, p=0.5, shape: Optional[Shape] = None):
    """``True`` with probability ``p`` (broadcast to ``shape``, by default ``p``'s shape)."""
    p = _as_tensor(p)
    shape = tuple(p.shape) if shape is None else _shape(shape)
    return _sized(k, shape, "uniform", "bernoulli") < p.astype(_nabla.float64)


def randint(k, shape: Shape, minval, maxval, dtype=None):
    """Integers uniform on ``[minval, maxval)`` (int64 unless ``dtype`` says otherwise)."""
    low, high = _as_tensor(minval).astype(_nabla.int64), _as_tensor(maxval).astype(_nabla.int64)
    if low.device != "traced" and high.device != "traced" and bool((high <= low).any()):
        raise ValueError("random.randint: every range [minval, maxval) must hold at least one integer")
    u = _sized(k, _shape(shape), "uniform", "randint")
    span = (high - low).astype(_nabla.float64)
    drawn = low + _nabla.minimum(_nabla.floor(u * span), span - 1).astype(_nabla.int64)
    return drawn.astype(dtype) if dtype is not None else drawn


def _unit_open(k, shape: tuple, name: str):
    """Uniform draws on (0, 1): ``1 - u`` never reaches 0."""
    return 1.0 - _sized(k, shape, "uniform", name)


def gumbel(k, shape: Shape = (), dtype=None):
    """Standard Gumbel draws, ``-log(-log(u))``."""
    dtype = _float_dtype(dtype, "gumbel")
    return (-_nabla.log(-_nabla.log(_unit_open(k, _shape(shape), "gumbel")))).astype(dtype)


def exponential(k, shape: Shape = (), dtype=None):
    """Standard exponential draws, ``-log(u)``."""
    dtype = _float_dtype(dtype, "exponential")
    return (-_nabla.log(_unit_open(k, _shape(shape), "exponential"))).astype(dtype)


def laplace(k, shape: Shape = (), dtype=None):
    """Standard Laplace draws (inverse CDF)."""
    dtype = _float_dtype(dtype, "laplace")
    u = _sized(k, _shape(shape), "uniform", "laplace") - 0.5
    return (-_nabla.sign(u) * _nabla.log1p(-2.0 * abs(u))).astype(dtype)


def logistic(k, shape: Shape = (), dtype=None):
    """Standard logistic draws, ``log(u / (1 - u))``."""
    dtype = _float_dtype(dtype, "logistic")
    u = _unit_open(k, _shape(shape), "logistic")
    return (_nabla.log(u) - _nabla.log1p(-u)).astype(dtype)


def truncated_normal(k, lower, upper, shape: Optional[Shape] = None, dtype=None):
    """Standard normal draws conditioned on ``[lower, upper]`` (inverse CDF through ``erfinv``)."""
    from .special import erfinv

    dtype = _float_dtype(dtype, "truncated_normal")
    lower, upper = _as_tensor(lower).astype(_nabla.float64), _as_tensor(upper).astype(_nabla.float64)
    shape = tuple((lower + upper).shape) if shape is None else _shape(shape)
    u = _sized(k, shape, "uniform", "truncated_normal")
    a, b = _nabla.erf(lower / math.sqrt(2.0)), _nabla.erf(upper / math.sqrt(2.0))
    z = math.sqrt(2.0) * erfinv(a + u * (b - a))
    return _nabla.minimum(_nabla.maximum(z, lower), upper).astype(dtype)


def multivariate_normal(k, mean, cov, shape: Optional[Shape] = None, dtype=None):
    """Draws of ``N(mean, cov)`` (``mean + L z`` with ``cov = L L^T``), of shape ``shape + mean.shape[-1:]``."""
    mean, cov = _as_tensor(mean), _as_tensor(cov)
    dtype = _float_dtype(dtype if dtype is not None else mean.dtype, "multivariate_normal")
    n = mean.shape[-1]
    shape = tuple(mean.shape[:-1]) if shape is None else _shape(shape)
    z = normal(k, shape + (n,), dtype)
    factor = _nabla.linalg.cholesky(cov.astype(dtype))
    return mean.astype(dtype) + (factor @ z.reshape(*shape, n, 1)).reshape(*shape, n)


def categorical(k, logits, axis: int = -1, shape: Optional[Shape] = None):
    """Indices drawn with probabilities ``softmax(logits)`` along ``axis`` (the Gumbel-max trick)."""
    logits = _as_tensor(logits)
    axis = axis % logits.ndim
    batch = tuple(s for i, s in enumerate(logits.shape) if i != axis)
    shape = batch if shape is None else _shape(shape)
    noise = gumbel(k, shape + (logits.shape[axis],), _nabla.float64)
    moved = logits.astype(_nabla.float64).swapaxes(axis, -1)
    return (moved + noise).argmax(-1)


def permutation(k, x, axis: int = 0, independent: bool = False):
    """A random permutation of ``arange(x)`` (an int) or of ``x`` along ``axis``."""
    if independent:
        raise ValueError("random.permutation: independent=True is not supported")
    if isinstance(x, int):
        order = _sized(k, (x,), "uniform", "permutation").argsort(0)
        return order
    x = _as_tensor(x)
    order = _sized(k, (x.shape[axis],), "uniform", "permutation").argsort(0)
    return x.index_select(axis, order)


def choice(k, a, shape: Shape = (), replace: bool = True, p=None, axis: int = 0):
    """Draws from ``a`` (an int: ``arange(a)``) along ``axis``, with or without replacement,
    uniformly or with probabilities ``p``."""
    values = _nabla.arange(a, dtype=_nabla.int64) if isinstance(a, int) else _as_tensor(a)
    n = values.shape[axis]
    shape = _shape(shape)
    count = math.prod(shape)
    if not replace and count > n:
        raise ValueError(f"random.choice: cannot take {count} of {n} without replacement")
    if replace and p is None:
        picks = randint(k, (count,), 0, n)
    elif replace:
        from ._array_api import searchsorted

        cdf = _as_tensor(p).astype(_nabla.float64).cumsum(0)
        u = _sized(k, (count,), "uniform", "choice") * cdf[-1]
        picks = _nabla.minimum(searchsorted(cdf, u, side="right"), _nabla.tensor(n - 1))
    else:
        weights = _nabla.zeros(n, dtype=_nabla.float64) if p is None else _nabla.log(_as_tensor(p).astype(_nabla.float64))
        picks = (weights + gumbel(k, (n,), _nabla.float64)).argsort(0, True)[:count]
    taken = values.index_select(axis, picks)
    return taken.reshape(*values.shape[:axis], *shape, *values.shape[axis + 1 :])


__all__ = [
    "key", "PRNGKey", "key_data", "split", "fold_in", "uniform", "normal", "bernoulli", "randint",
    "gumbel", "exponential", "laplace", "logistic", "truncated_normal", "multivariate_normal",
    "categorical", "permutation", "choice",
]  # fmt: skip
