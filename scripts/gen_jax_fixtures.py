#!/usr/bin/env python3
"""Generate the JAX autodiff reference fixture checked by crates/nabla-tensor/tests/jax_fixtures.rs.

Run from anywhere (needs JAX and NumPy; written against jax 0.10.2):

    python3 scripts/gen_jax_fixtures.py

It writes crates/nabla-tensor/tests/fixtures/jax_autodiff.json. The inputs are drawn from a seeded NumPy
generator, everything is float64 (`jax_enable_x64`), and the output is deterministic for one JAX
version, so the committed file can be regenerated and diffed. CI needs no Python.

Every expression `name` is a function `g(*inputs, *aux)` returning an array; the fixture checks the
scalar `f = sum(g(...) * weight)` with a fixed random `weight` of `g`'s output shape, so that gradients are
not all ones. The Rust test holds one closure per name computing `g` with nabla's tensor ops.

Format:

    {"generator": str, "jax": version, "numpy": version, "seed": int,
     "expressions": [
       {"name": str,
        "inputs": [{"shape": [...], "data": [...]}, ...],    float64, differentiated
        "aux":    [{"dtype": "int64", "shape": [...], "data": [...]}, ...],   constants (indices)
        "weight": {"shape": [...], "data": [...]},          of g's output shape
        "output": {"shape": [...], "data": [...]},          g(inputs, aux)
        "value":  float,                                    f = sum(g * weight)
        "grads":  [[...], ...],                             df/dinput_i, flat, one per input
        "hvp":    {"v": [[...], ...], "out": [[...], ...]}  optional: the Hessian-vector product
       }, ...]}

`hvp.out[i] = d/dinput_i (sum_j <df/dinput_j, v_j>)`: the Hessian of f (over all inputs jointly) applied
to the direction `v`, which checks second derivatives, cross terms between inputs included.

All data is row-major and flat; floats are written with Python's shortest round-trip repr, so the Rust
side (serde_json with `float_roundtrip`) reads back the exact doubles. No value is NaN or infinite.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import jax.scipy.special as jsp  # noqa: E402
from jax import lax  # noqa: E402

SEED = 20250716
OUT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)),
    "..",
    "crates",
    "nabla-tensor",
    "tests",
    "fixtures",
    "jax_autodiff.json",
)

RNG = np.random.default_rng(SEED)


# ----------------------------------------------------------------------------------------------------------
# Inputs
# ----------------------------------------------------------------------------------------------------------


def normal(*shape, scale=1.0):
    return RNG.normal(size=shape) * scale


def uniform(lo, hi, *shape):
    return RNG.uniform(lo, hi, size=shape)


def positive(*shape):
    return uniform(0.5, 2.0, *shape)


def away(*shape):
    """Magnitudes in [0.5, 2] with random signs: away from zero."""
    return positive(*shape) * RNG.choice([-1.0, 1.0], size=shape)


def with_zeros(x, positions):
    x = np.array(x, dtype=np.float64)
    x.flat[positions] = 0.0
    return x


def arr(values, shape=None):
    a = np.array(values, dtype=np.float64)
    return a.reshape(shape) if shape is not None else a


def idx(values, shape=None):
    a = np.array(values, dtype=np.int64)
    return a.reshape(shape) if shape is not None else a


# ----------------------------------------------------------------------------------------------------------
# Expressions
# ----------------------------------------------------------------------------------------------------------

EXPRESSIONS = []


def expr(name, inputs, fn, aux=(), hvp=True):
    """Registers `fn(*inputs, *aux)`; `inputs` are float64 arrays (differentiated), `aux` int64 arrays."""
    EXPRESSIONS.append(
        dict(
            name=name,
            inputs=[np.asarray(x, dtype=np.float64) for x in inputs],
            aux=[np.asarray(a, dtype=np.int64) for a in aux],
            fn=fn,
            hvp=hvp,
        )
    )


def conv(x, w, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    return lax.conv_general_dilated(
        x,
        w,
        window_strides=stride,
        padding=[(padding[0], padding[0]), (padding[1], padding[1])],
        rhs_dilation=dilation,
        dimension_numbers=("NCHW", "OIHW", "NCHW"),
        feature_group_count=groups,
        precision=lax.Precision.HIGHEST,
    )


def layer_norm(x, axes, eps):
    mean = jnp.mean(x, axis=axes, keepdims=True)
    var = jnp.var(x, axis=axes, keepdims=True)
    return (x - mean) * lax.rsqrt(var + eps)


def normalize(x, p, axis, eps):
    """torch.nn.functional.normalize."""
    n = jnp.linalg.norm(x, ord=p, axis=axis, keepdims=True)
    return x / jnp.maximum(n, eps)


# Unary math: every unary op with a derivative, on a [2, 3] input inside its domain.
UNARY = [
    ("exp", jnp.exp, lambda: normal(2, 3)),
    ("log", jnp.log, lambda: positive(2, 3)),
    ("log1p", jnp.log1p, lambda: uniform(-0.5, 2.0, 2, 3)),
    ("expm1", jnp.expm1, lambda: normal(2, 3)),
    ("sqrt", jnp.sqrt, lambda: positive(2, 3)),
    ("rsqrt", lax.rsqrt, lambda: positive(2, 3)),
    ("sin", jnp.sin, lambda: normal(2, 3, scale=2.0)),
    ("cos", jnp.cos, lambda: normal(2, 3, scale=2.0)),
    ("tan", jnp.tan, lambda: uniform(-1.2, 1.2, 2, 3)),
    ("asin", jnp.arcsin, lambda: uniform(-0.9, 0.9, 2, 3)),
    ("acos", jnp.arccos, lambda: uniform(-0.9, 0.9, 2, 3)),
    ("atan", jnp.arctan, lambda: normal(2, 3, scale=2.0)),
    ("sinh", jnp.sinh, lambda: normal(2, 3)),
    ("cosh", jnp.cosh, lambda: normal(2, 3)),
    ("tanh", jnp.tanh, lambda: normal(2, 3)),
    ("sigmoid", jax.nn.sigmoid, lambda: normal(2, 3, scale=2.0)),
    ("erf", jsp.erf, lambda: normal(2, 3)),
    ("abs", jnp.abs, lambda: away(2, 3)),
    ("square", jnp.square, lambda: normal(2, 3)),
    ("reciprocal", jnp.reciprocal, lambda: away(2, 3)),
    ("neg", jnp.negative, lambda: normal(2, 3)),
]
for name, f, gen in UNARY:
    expr(name, [gen()], f)

# abs at exactly zero: JAX's derivative there is 1 (select(x >= 0, g, -g)), for 0.0 and -0.0 alike.
expr("abs_at_zero", [arr([0.0, -0.0, 1.5, -2.0])], jnp.abs)

# Binary math with broadcasting.
expr("add_bcast", [normal(2, 3), normal(3)], lambda x, y: jnp.sin(x + y))
expr("sub_bcast", [normal(2, 1), normal(1, 3)], lambda x, y: jnp.square(x - y))
expr("mul_bcast", [normal(2, 3), normal(2, 1)], lambda x, y: x * y)
expr("div_bcast", [normal(2, 3), away(3)], lambda x, y: x / y)
expr("pow_bcast", [positive(2, 3), normal(3)], lambda x, y: x**y)
expr("pow_scalar_exponent", [positive(2, 3)], lambda x: x**2.5)
# pow at a zero base (exponents 2 and 3), and at a zero exponent of a non-zero base. JAX gives NaN for
# d/dx at 0^0 with a float exponent, so that point is left out here.
expr("pow_at_zero", [arr([0.0, 0.0, 2.0, 1.5]), arr([2.0, 3.0, 0.0, 1.0])], lambda x, y: x**y)
expr(
    "maximum_ties",
    [arr([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], (2, 3)), arr([1.0, 0.5, 3.0, 5.0, 5.0, 7.0], (2, 3))],
    jnp.maximum,
)
expr(
    "minimum_ties",
    [arr([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], (2, 3)), arr([1.0, 0.5, 3.0, 5.0, 5.0, 7.0], (2, 3))],
    jnp.minimum,
)
expr("maximum_bcast", [normal(2, 3), normal(3)], lambda x, y: jnp.maximum(x, y) * x)
expr("minimum_bcast", [normal(2, 1), normal(2, 3)], lambda x, y: jnp.minimum(x, y) * y)
expr("clamp_ties", [arr([0.0, 1.0, 0.5, -1.0, 2.0, 0.25])], lambda x: jnp.clip(x, 0.0, 1.0))
expr("atan2_bcast", [normal(2, 3), away(3)], jnp.arctan2)
expr(
    "remainder",
    [arr([5.3, -5.3, 7.1, -7.1, 2.2, 0.4]), arr([2.0, 2.0, -3.0, -3.0, 0.7, -1.5])],
    jnp.remainder,
)
expr("where", [normal(2, 3), normal(2, 3)], lambda x, y: jnp.where(x > 0.2, x * y, jnp.sin(y)))

# Reductions.
expr("sum_axis", [normal(2, 3, 4)], lambda x: jnp.sin(jnp.sum(x, axis=1)))
expr("sum_keepdims", [normal(2, 3, 4)], lambda x: x * jnp.sum(x, axis=(0, 2), keepdims=True))
expr("prod_axis", [away(3, 4)], lambda x: jnp.prod(x, axis=-1))
expr(
    "prod_with_zeros",
    [arr([1.5, 0.0, -2.0, 0.7, 0.0, 0.0, 3.0, 1.1, 0.9, -1.3, 2.0, 0.8], (3, 4))],
    lambda x: jnp.prod(x, axis=1),
)
expr(
    "max_axis_ties",
    [arr([1.0, 5.0, 5.0, 2.0, -1.0, -3.0, -2.0, -1.0, 0.3, 0.1, 0.2, 0.0], (3, 4))],
    lambda x: jnp.max(x, axis=1) * jnp.sum(x, axis=1),
)
expr("max_all_ties", [arr([2.0, 7.0, 7.0, 1.0, 7.0, 0.0], (2, 3))], lambda x: jnp.max(x) * x)
expr("min_axis", [normal(3, 4)], lambda x: jnp.min(x, axis=0))
expr("min_keepdims_ties", [arr([1.0, 1.0, 3.0, 2.0, 4.0, 2.0], (2, 3))], lambda x: x - jnp.min(x, axis=1, keepdims=True))
expr("mean_axes", [normal(2, 3, 4)], lambda x: jnp.square(jnp.mean(x, axis=(0, 2))))
expr("cumsum_axis1", [normal(3, 4)], lambda x: jnp.sin(jnp.cumsum(x, axis=1)))
expr("cumsum_axis0", [normal(3, 4)], lambda x: jnp.cumsum(x, axis=0) * x)

# Matrix products.
expr("matmul_2d", [normal(2, 3), normal(3, 4)], jnp.matmul)
expr("matmul_batch_bcast", [normal(2, 1, 2, 3), normal(3, 3, 2)], jnp.matmul)
expr("matmul_vec_mat", [normal(3), normal(3, 4)], jnp.matmul)
expr("matmul_mat_vec", [normal(2, 3), normal(3)], jnp.matmul)
expr("matmul_vec_vec", [normal(3), normal(3)], jnp.matmul)
expr("matmul_batch_vec", [normal(2, 2, 3), normal(3)], jnp.matmul)
expr("matmul_vec_batch", [normal(3), normal(2, 3, 2)], jnp.matmul)

# Movement.
expr("permute", [normal(2, 3, 4)], lambda x: jnp.sin(jnp.transpose(x, (2, 0, 1))))
expr("transpose_matmul", [normal(3, 2)], lambda x: jnp.swapaxes(x, 0, 1) @ x)
expr("reshape", [normal(2, 6)], lambda x: jnp.reshape(x, (3, 4)) * jnp.reshape(x, (4, 3)).T)
expr("slice_negative_steps", [normal(4, 5)], lambda x: jnp.square(x[::-1, 1::2]))
expr("slice_range_negative", [normal(6, 3)], lambda x: jnp.exp(x[4:0:-2, -1:0:-1]))
expr("flip", [normal(2, 3, 2)], lambda x: jnp.flip(x, (0, 2)) * x)
expr("pad_zero", [normal(2, 3)], lambda x: jnp.sin(jnp.pad(x, ((1, 0), (2, 1)))))
expr("pad_value", [normal(2, 2)], lambda x: jnp.square(jnp.pad(x, ((0, 2), (1, 1)), constant_values=0.5)))
expr("concatenate", [normal(2, 3), normal(2, 2)], lambda x, y: jnp.concatenate([x, y * y], axis=1))
expr("concatenate_axis0", [normal(1, 3), normal(2, 3), normal(1, 3)], lambda a, b, c: jnp.tanh(jnp.concatenate([a, b, c], axis=0)))

# Indexing.
expr(
    "gather",
    [normal(3, 4)],
    lambda x, i: jnp.take_along_axis(x, i, axis=1) ** 2,
    aux=[idx([0, 3, 3, 1, 0, 2, 2, 2, 1, 0, 1, 3, 0, 0, 1], (3, 5))],
)
expr(
    "gather_axis0",
    [normal(3, 2)],
    lambda x, i: jnp.sin(jnp.take_along_axis(x, i, axis=0)),
    aux=[idx([2, 0, 0, 0, 1, 2, 2, 1], (4, 2))],
)
expr("index_select", [normal(4, 3)], lambda x, i: jnp.exp(jnp.take(x, i, axis=0)), aux=[idx([3, 0, 3, 1, 1])])
expr("index_select_axis1", [normal(2, 4)], lambda x, i: jnp.take(x, i, axis=1) * 2.0, aux=[idx([1, 1, 0])])
expr(
    "scatter_add",
    [normal(4, 3), normal(2, 3)],
    lambda d, s, i: jnp.square(d.at[i, jnp.arange(3)[None, :]].add(s)),
    aux=[idx([0, 3, 3, 3, 1, 0], (2, 3))],
)
expr(
    "scatter_add_axis1",
    [normal(3, 4), normal(3, 2)],
    lambda d, s, i: jnp.sin(d.at[jnp.arange(3)[:, None], i].add(s * s)),
    aux=[idx([1, 1, 0, 3, 2, 2], (3, 2))],
)
expr("sort", [normal(3, 4)], lambda x: jnp.sort(x, axis=-1) * x)
expr("sort_axis0_descending", [normal(4, 3)], lambda x: jnp.sin(jnp.sort(x, axis=0, descending=True)))
expr("sort_ties", [arr([1.0, 0.0, 1.0, 2.0, 3.0, 3.0, 3.0, -1.0], (2, 4))], lambda x: jnp.sort(x, axis=1))
expr("topk", [normal(3, 5)], lambda x: jnp.square(lax.top_k(x, 2)[0]))
expr("topk_ties", [arr([1.0, 0.0, 1.0, 2.0, 5.0, 5.0, 4.0, 5.0], (2, 4))], lambda x: lax.top_k(x, 3)[0])

# Convolution.
expr("conv2d", [normal(1, 2, 5, 5), normal(3, 2, 3, 3)], lambda x, w: conv(x, w))
expr(
    "conv2d_stride_pad_dilation",
    [normal(2, 2, 7, 6), normal(2, 2, 2, 3)],
    lambda x, w: conv(x, w, stride=(2, 1), padding=(1, 2), dilation=(2, 1)),
)
expr(
    "conv2d_groups",
    [normal(1, 4, 5, 5), normal(6, 2, 3, 3)],
    lambda x, w: jnp.tanh(conv(x, w, stride=(2, 2), padding=(1, 1), groups=2)),
)

# Casts: float64 -> float32 -> float64 rounds the value; the cotangent is rounded through float32 too.
expr(
    "cast_f64_f32_f64",
    [normal(2, 3)],
    lambda x: jnp.sin(x).astype(jnp.float32).astype(jnp.float64),
)

# Composites.
expr("softmax", [normal(3, 4, scale=2.0)], lambda x: jax.nn.softmax(x, axis=-1))
expr("softmax_axis0", [normal(3, 4, scale=2.0)], lambda x: jax.nn.softmax(x, axis=0))
expr("log_softmax", [normal(3, 4, scale=2.0)], lambda x: jax.nn.log_softmax(x, axis=-1))
expr("log_softmax_axis0", [normal(3, 2, scale=2.0)], lambda x: jax.nn.log_softmax(x, axis=0))
expr("logsumexp_axes", [normal(2, 3, 4)], lambda x: jsp.logsumexp(x, axis=(0, 2)))
expr("logsumexp_keepdims", [normal(3, 4)], lambda x: jsp.logsumexp(x, axis=1, keepdims=True) * x)
expr("logsumexp_all", [normal(2, 3, scale=3.0)], lambda x: jsp.logsumexp(x))
expr("relu", [with_zeros(normal(2, 4), [1, 6])], jax.nn.relu)
expr("leaky_relu", [with_zeros(normal(2, 4), [2])], lambda x: jax.nn.leaky_relu(x, 0.1))
expr("gelu", [normal(2, 4, scale=2.0)], lambda x: jax.nn.gelu(x, approximate=False))
expr("gelu_tanh", [normal(2, 4, scale=2.0)], lambda x: jax.nn.gelu(x, approximate=True))
expr("silu", [normal(2, 4, scale=2.0)], jax.nn.silu)
expr("softplus", [with_zeros(normal(2, 4, scale=3.0), [5])], jax.nn.softplus)
expr("elu", [with_zeros(normal(2, 4), [3])], lambda x: jax.nn.elu(x, 1.5))
expr("layer_norm", [normal(3, 4)], lambda x: layer_norm(x, (-1,), 1e-5))
expr("layer_norm_2axes", [normal(2, 2, 3)], lambda x: layer_norm(x, (-2, -1), 1e-3))
expr("variance", [normal(3, 4)], lambda x: jnp.var(x, axis=1))
expr("variance_ddof1_all", [normal(2, 3)], lambda x: jnp.var(x, ddof=1))
expr("variance_keepdims", [normal(3, 4)], lambda x: x * jnp.var(x, axis=0, keepdims=True, ddof=1))
expr("std_dev", [normal(4, 3)], lambda x: jnp.std(x, axis=0, ddof=1))
expr("std_dev_all", [normal(2, 3)], lambda x: jnp.std(x))
expr("normalize_l2", [normal(3, 4)], lambda x: normalize(x, 2, -1, 1e-12))
expr("normalize_l1_axis0", [away(3, 4)], lambda x: normalize(x, 1, 0, 1e-12))
expr("normalize_l3", [away(2, 3)], lambda x: normalize(x, 3, 1, 1e-12))
expr("normalize_linf", [normal(2, 3)], lambda x: normalize(x, np.inf, 1, 1e-12))
expr("normalize_tiny_norm", [arr([1e-14, -2e-14, 3e-14, 0.5, -0.25, 1.0], (2, 3))], lambda x: normalize(x, 2, 1, 1e-12))

# Small models.
expr(
    "mlp",
    [normal(4, 3), normal(3, 5), normal(5), normal(5, 2)],
    lambda x, w1, b1, w2: jnp.tanh(x @ w1 + b1) @ w2,
)
expr(
    "cross_entropy",
    [normal(4, 5, scale=2.0)],
    lambda z, y: -jnp.take_along_axis(jax.nn.log_softmax(z, axis=-1), y[:, None], axis=1)[:, 0],
    aux=[idx([0, 3, 4, 3])],
)
expr(
    "attention",
    [normal(2, 3, 4), normal(2, 3, 4), normal(2, 3, 4)],
    lambda q, k, v: jax.nn.softmax(q @ jnp.swapaxes(k, -1, -2) / 2.0, axis=-1) @ v,
)
expr(
    "gelu_layer_norm_chain",
    [normal(2, 4), normal(4, 4)],
    lambda x, w: jnp.sum(jax.nn.gelu(layer_norm(x @ w, (-1,), 1e-5), approximate=False) ** 2, axis=0),
)


# ----------------------------------------------------------------------------------------------------------
# Evaluation
# ----------------------------------------------------------------------------------------------------------


def flat(a):
    out = [float(v) for v in np.asarray(a, dtype=np.float64).reshape(-1)]
    for v in out:
        if not np.isfinite(v):
            raise ValueError(f"non-finite value {v}")
    return out


def array_json(a):
    a = np.asarray(a)
    return {"shape": list(a.shape), "data": flat(a)}


def evaluate(e):
    xs = [jnp.asarray(x) for x in e["inputs"]]
    aux = [jnp.asarray(a) for a in e["aux"]]
    fn = e["fn"]

    def g(*inputs):
        return fn(*inputs, *aux)

    out = g(*xs)
    weight = RNG.normal(size=np.shape(out))

    def f(*inputs):
        return jnp.sum(g(*inputs) * weight)

    argnums = tuple(range(len(xs)))
    value, grads = jax.value_and_grad(f, argnums=argnums)(*xs)
    record = {
        "name": e["name"],
        "inputs": [array_json(x) for x in e["inputs"]],
        "aux": [
            {"dtype": "int64", "shape": list(a.shape), "data": [int(v) for v in a.reshape(-1)]}
            for a in e["aux"]
        ],
        "weight": array_json(weight),
        "output": array_json(out),
        "value": flat(value)[0],
        "grads": [flat(gr) for gr in grads],
    }
    if e["hvp"]:
        vs = [jnp.asarray(RNG.normal(size=x.shape)) for x in e["inputs"]]

        def directional(*inputs):
            gs = jax.grad(f, argnums=argnums)(*inputs)
            return sum(jnp.sum(gi * vi) for gi, vi in zip(gs, vs))

        hv = jax.grad(directional, argnums=argnums)(*xs)
        record["hvp"] = {"v": [flat(v) for v in vs], "out": [flat(h) for h in hv]}
    return record


def main():
    names = [e["name"] for e in EXPRESSIONS]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        sys.exit(f"duplicate expression names: {sorted(dup)}")
    records = [evaluate(e) for e in EXPRESSIONS]
    doc = {
        "generator": "scripts/gen_jax_fixtures.py",
        "jax": jax.__version__,
        "numpy": np.__version__,
        "seed": SEED,
        "expressions": records,
    }
    text = json.dumps(doc, separators=(",", ":"))
    # One expression per line keeps diffs readable.
    text = text.replace(',{"name"', ',\n{"name"')
    with open(OUT, "w") as fh:
        fh.write(text + "\n")
    n_hvp = sum(1 for r in records if "hvp" in r)
    print(f"wrote {os.path.relpath(OUT)}: {len(records)} expressions ({n_hvp} with HVPs), {len(text)} bytes")


if __name__ == "__main__":
    main()
