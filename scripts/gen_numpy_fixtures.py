#!/usr/bin/env python3
"""Generate the NumPy-semantics fixtures of the backend conformance suite, crates/nabla-backend-tests/fixtures/
(checked by crates/nabla-backend-tests/src/fixtures/ on every backend that runs the suite).

Run from the repository root (needs only NumPy):

    python3 scripts/gen_numpy_fixtures.py

The output is deterministic (seeded), so re-running it with the same NumPy version rewrites identical
files. The fixtures are committed, so CI needs no Python.

The file format is described in scripts/fixture_format.py, which also holds the encoder.
"""

from __future__ import annotations

import math
import os
import sys
import warnings

import numpy as np

from fixture_format import DTYPE_NAMES, INF, NAN, NP_DTYPES, OUT_DIR, Family, apply_view, flush_subnormals, viewed

SEED = 20240602


# ----------------------------------------------------------------------------------------------------------
# Value sets
# ----------------------------------------------------------------------------------------------------------

EDGE_F64 = np.array([NAN, INF, -INF, -0.0, 0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e300, -1e-300])
EDGE_F32 = np.array([NAN, INF, -INF, -0.0, 0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 3e38, 1e-40], dtype=np.float32)
INTS = np.array([-7, -3, -1, 0, 1, 2, 3, 7], dtype=np.int64)

BINARY_NP = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": None,  # true division for floats, floor division for integers
    "rem": np.remainder,
    "pow": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "atan2": np.arctan2,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
}
EXACT_BINARY = {"add", "sub", "mul", "div", "maximum", "minimum"}
SIGNED_ZERO_BINARY = {"add", "sub", "mul", "div"}


def np_binary(op, a, b):
    if op == "div":
        if a.dtype.kind in "iu":
            return np.floor_divide(a, b)
        return np.true_divide(a, b)
    out = BINARY_NP[op](a, b)
    return out.astype(a.dtype) if out.dtype != a.dtype and op in ("add", "mul") else out


# ----------------------------------------------------------------------------------------------------------
# Families
# ----------------------------------------------------------------------------------------------------------


def flushed(fn, *inputs):
    """`fn` on `inputs` as a device that flushes float32 subnormals computes it, or None when no input is a
    float32 array holding a subnormal (the expectation is then the same)."""
    def subnormal(x):
        x = np.asarray(x)
        return x.dtype == np.float32 and bool(np.any((x != 0) & (np.abs(x) < np.finfo(np.float32).tiny)))
    if not any(subnormal(x) for x in inputs):
        return None
    return flush_subnormals(fn(*(flush_subnormals(x) for x in inputs)))


def gen_binary(rng) -> Family:
    f = Family("binary")
    # Float edge grids: every pair of special values, by broadcasting a column against a row.
    for dt, edge in (("float64", EDGE_F64), ("float32", EDGE_F32)):
        a, b = edge.reshape(-1, 1), edge.reshape(1, -1)
        for op in ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "atan2"):
            f.add(
                f"{op} {dt} edge grid (column x row broadcast)",
                "binary",
                {"op": op},
                [a, b],
                np_binary(op, a, b),
                exact=op in EXACT_BINARY,
                signed_zero=op in SIGNED_ZERO_BINARY,
                expected_ftz=flushed(lambda x, y: np_binary(op, x, y), a, b),
            )
        # Remainder: finite non-zero divisors (sign of the divisor), then the special divisors.
        fin = np.array([-7.5, -5.5, -2.0, -0.0, 0.0, 0.25, 2.0, 5.5, 7.5], dtype=edge.dtype)
        divs = np.array([-2.0, -0.75, 0.75, 2.0, 3.5], dtype=edge.dtype)
        f.add(f"rem {dt} finite divisors", "binary", {"op": "rem"}, [fin.reshape(-1, 1), divs],
              np.remainder(fin.reshape(-1, 1), divs))
        specials = np.array([0.0, -0.0, INF, -INF, NAN], dtype=edge.dtype)
        f.add(f"rem {dt} zero/inf/nan divisors", "binary", {"op": "rem"}, [fin.reshape(-1, 1), specials],
              np.remainder(fin.reshape(-1, 1), specials))
    # Random operands with NumPy broadcasting of several shapes, on strided views.
    shapes = [((3, 1, 4), (2, 1)), ((1,), (2, 3)), ((4, 1), (1, 5)), ((2, 3, 4), (4,)), ((0, 3), (1, 3)), ((), (2, 2))]
    for i, (sa, sb) in enumerate(shapes):
        x = rng.uniform(-3, 3, size=sa)
        y = rng.uniform(0.5, 3, size=sb) * rng.choice([-1.0, 1.0], size=sb)
        for op in ("add", "sub", "mul", "div", "rem", "maximum", "minimum", "atan2"):
            f.add(f"{op} float64 broadcast {sa} with {sb}", "binary", {"op": op}, [x, y], np_binary(op, x, y),
                  exact=op in EXACT_BINARY)
        xp = rng.uniform(0.1, 3, size=sa)
        f.add(f"pow float64 broadcast {sa} with {sb}", "binary", {"op": "pow"}, [xp, y], np.power(xp, y))
    # Binary ops on views: a transposed operand and a negative-step operand.
    base = rng.uniform(-2, 2, size=(4, 3))
    other = rng.uniform(-2, 2, size=(3, 8))
    va, ia = viewed(base, [["transpose", 0, 1]])
    vb, ib = viewed(other, [["slice", 1, None, None, -2]])
    for op in ("add", "mul", "maximum"):
        f.add(f"{op} float64 transposed view with negative-step view", "binary", {"op": op}, [ia, ib],
              np_binary(op, va, vb), exact=True)
    vc, ic = viewed(rng.uniform(-2, 2, size=(4,)), [["unsqueeze", 0], ["broadcast_to", [3, 4]]])
    f.add("sub float64 explicit broadcast view", "binary", {"op": "sub"}, [ic, ia], np_binary("sub", vc, va), exact=True)
    # Integers: floor division and remainder with every sign combination, division by zero gives 0.
    for dt in (np.int64, np.int32):
        name = DTYPE_NAMES[np.dtype(dt)]
        a, b = INTS.astype(dt).reshape(-1, 1), INTS.astype(dt).reshape(1, -1)
        with np.errstate(all="ignore"):
            for op in ("add", "sub", "mul", "div", "rem", "maximum", "minimum"):
                f.add(f"{op} {name} sign grid", "binary", {"op": op}, [a, b], np_binary(op, a, b))
        bases = np.arange(-3, 4, dtype=dt).reshape(-1, 1)
        exps = np.array([0, 1, 2, 3, 5], dtype=dt)
        f.add(f"pow {name} non-negative exponents", "binary", {"op": "pow"}, [bases, exps], np.power(bases, exps))
    info = np.iinfo(np.int64)
    big = np.array([info.min, info.max, info.min, info.max, 5], dtype=np.int64)
    one = np.array([-1, 1, 1, -1, -1], dtype=np.int64)
    with np.errstate(all="ignore"):
        f.add("div int64 overflow corner (min // -1 wraps)", "binary", {"op": "div"}, [big, one], np.floor_divide(big, one))
        f.add("rem int64 overflow corner (min % -1 is 0)", "binary", {"op": "rem"}, [big, one], np.remainder(big, one))
        f.add("add int64 wraps", "binary", {"op": "add"}, [big, one], big + one)
        i32 = np.array([2**31 - 1, -(2**31), 65536], dtype=np.int32)
        f.add("mul int32 wraps", "binary", {"op": "mul"}, [i32, np.array([2, 2, 65536], dtype=np.int32)],
              i32 * np.array([2, 2, 65536], dtype=np.int32))
        f.add("pow int32 wraps", "binary", {"op": "pow"}, [np.array([3, 2, -3], dtype=np.int32), np.array([21, 31, 21], dtype=np.int32)],
              np.power(np.array([3, 2, -3], dtype=np.int32), np.array([21, 31, 21], dtype=np.int32)))
    u = np.array([0, 3, 200, 255, 16, 7], dtype=np.uint8)
    v = np.array([5, 5, 100, 1, 16, 0], dtype=np.uint8)
    with np.errstate(all="ignore"):
        for op in ("add", "sub", "mul", "div", "rem", "maximum", "minimum"):
            f.add(f"{op} uint8 wraps and divides by zero", "binary", {"op": op}, [u, v], np_binary(op, u, v))
        f.add("pow uint8 wraps", "binary", {"op": "pow"}, [np.array([3, 2, 0, 1], dtype=np.uint8), np.array([6, 8, 0, 200], dtype=np.uint8)],
              np.power(np.array([3, 2, 0, 1], dtype=np.uint8), np.array([6, 8, 0, 200], dtype=np.uint8)))
    # Bools: add is or, mul is and, maximum is or, minimum is and.
    p = np.array([False, False, True, True]).reshape(-1, 1)
    q = np.array([False, True]).reshape(1, -1)
    for op in ("add", "mul", "maximum", "minimum", "logical_and", "logical_or", "logical_xor"):
        f.add(f"{op} bool truth table", "binary", {"op": op}, [p, q], np_binary(op, p, q))
    # where (select) with broadcasting and NaN in the branches.
    cond = rng.uniform(size=(3, 1)) > 0.5
    cond[0, 0], cond[1, 0] = True, False
    t = np.array([NAN, 1.0, -0.0, INF])
    fl = rng.uniform(-1, 1, size=(3, 4))
    f.add("where bool (3,1) float64 (4,) and (3,4)", "where", {}, [cond, t, fl], np.where(cond, t, fl), exact=True, signed_zero=True)
    ci = np.array([[True, False, True]])
    f.add("where int64 broadcast", "where", {}, [ci, np.arange(6, dtype=np.int64).reshape(2, 3), np.array([-1], dtype=np.int64)],
          np.where(ci, np.arange(6).reshape(2, 3), -1))
    return f


def gen_compare(rng) -> Family:
    f = Family("compare")
    ops = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}
    for dt, edge in (("float64", EDGE_F64), ("float32", EDGE_F32)):
        a, b = edge.reshape(-1, 1), edge.reshape(1, -1)
        for op, fn in ops.items():
            f.add(f"{op} {dt} edge grid with nan and signed zeros", "compare", {"op": op}, [a, b], fn(a, b),
                  expected_ftz=flushed(fn, a, b))
    for dt in (np.int64, np.int32, np.uint8):
        x = rng.integers(0, 5, size=(3, 1, 4)).astype(dt)
        y = rng.integers(0, 5, size=(2, 1)).astype(dt)
        for op, fn in ops.items():
            f.add(f"{op} {DTYPE_NAMES[np.dtype(dt)]} broadcast", "compare", {"op": op}, [x, y], fn(x, y))
    p = np.array([False, True]).reshape(-1, 1)
    q = np.array([False, True])
    for op, fn in ops.items():
        f.add(f"{op} bool", "compare", {"op": op}, [p, q], fn(p, q))
    z = np.array([1 + 2j, NAN + 0j, 0j, complex(0.0, -0.0)])
    w = np.array([1 + 2j, NAN + 0j, complex(-0.0, 0.0), 0j])
    for op in ("eq", "ne"):
        f.add(f"{op} complex128 with nan and signed zeros", "compare", {"op": op}, [z, w], ops[op](z, w))
    return f


UNARY = {
    "neg": np.negative,
    "abs": np.abs,
    "sign": np.sign,
    "recip": lambda x: np.divide(x.dtype.type(1), x),
    "square": np.square,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: np.divide(x.dtype.type(1), np.sqrt(x)),
    "exp": np.exp,
    "expm1": np.expm1,
    "log": np.log,
    "log1p": np.log1p,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "sigmoid": lambda x: (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(x.dtype),
    "erf": lambda x: np.array([math.erf(v) for v in x.astype(np.float64).reshape(-1)]).reshape(x.shape).astype(x.dtype),
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.round,
    "trunc": np.trunc,
    "isnan": np.isnan,
    "isfinite": np.isfinite,
}
EXACT_UNARY = {"neg", "abs", "sign", "square", "sqrt", "floor", "ceil", "round", "trunc", "isnan", "isfinite"}
SIGNED_ZERO_UNARY = {"neg", "abs", "square", "floor", "ceil", "round", "trunc"}


def gen_unary(rng) -> Family:
    f = Family("unary")
    specials = [NAN, INF, -INF, -0.0, 0.0]
    for dt in (np.float64, np.float32):
        name = DTYPE_NAMES[np.dtype(dt)]
        typical = np.concatenate([specials, [1.0, -1.0, 0.5, -0.5], rng.uniform(-6, 6, size=15)]).astype(dt)
        unit = np.concatenate([specials, [1.0, -1.0, 0.999, -0.25], rng.uniform(-1.2, 1.2, size=11)]).astype(dt)
        for op, fn in UNARY.items():
            x = unit if op in ("asin", "acos") else typical
            with np.errstate(all="ignore"):
                expected = fn(x)
            f.add(f"{op} {name}", "unary", {"op": op}, [x], expected,
                  exact=op in EXACT_UNARY, signed_zero=op in SIGNED_ZERO_UNARY)
        # Large arguments where naive formulas overflow or lose accuracy.
        big = np.array([-1000.0, -100.0, -30.0, -1e-10, 1e-10, 30.0, 88.0, 100.0, 1000.0], dtype=dt)
        for op in ("exp", "expm1", "log1p", "tanh", "sigmoid", "sinh", "cosh", "erf"):
            with np.errstate(all="ignore"):
                expected = UNARY[op](big)
            f.add(f"{op} {name} large and tiny arguments", "unary", {"op": op}, [big], expected)
        # Rounding: half to even, signed zeros, values beyond 2^52 (already integers).
        halves = np.array([0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, -0.4, 0.49999999999999994, 4503599627370497.0,
                           -4503599627370497.0, 1e300, 2.675, -7.5], dtype=dt)
        for op in ("round", "floor", "ceil", "trunc"):
            f.add(f"{op} {name} halves and signed zeros", "unary", {"op": op}, [halves], UNARY[op](halves),
                  exact=True, signed_zero=True)
        # Unary ops on a negative-step, transposed view.
        v, inp = viewed(rng.uniform(0.1, 4, size=(3, 5)).astype(dt), [["slice", 1, None, None, -2], ["transpose", 0, 1]])
        for op in ("exp", "sqrt", "log", "neg"):
            f.add(f"{op} {name} on a negative-step transposed view", "unary", {"op": op}, [inp], UNARY[op](v),
                  exact=op in EXACT_UNARY)
    for dt in (np.int64, np.int32):
        name = DTYPE_NAMES[np.dtype(dt)]
        x = np.array([-5, -1, 0, 1, 7, 123], dtype=dt)
        for op in ("neg", "abs", "sign", "square", "round", "floor"):
            f.add(f"{op} {name}", "unary", {"op": op}, [x], UNARY[op](x))
    u = np.array([0, 1, 15, 16, 255], dtype=np.uint8)
    with np.errstate(all="ignore"):
        f.add("neg uint8 wraps", "unary", {"op": "neg"}, [u], np.negative(u))
        f.add("square uint8 wraps", "unary", {"op": "square"}, [u], np.square(u))
    f.add("logical_not bool", "unary", {"op": "logical_not"}, [np.array([True, False])], np.array([False, True]))
    return f


def gen_complex(rng) -> Family:
    f = Family("complex")
    z = np.array([1 + 2j, -3 + 0.5j, 0.25 - 4j, -1 - 1j, 2 + 0j, 0 + 1.5j, -0.5 - 0.5j, 3.0 + 3.0j])
    w = np.array([2 - 1j, 0.5 + 0.5j, -1 + 3j, 4 + 0j])
    za, wb = z.reshape(-1, 1), w.reshape(1, -1)
    f.add("add complex128 broadcast", "binary", {"op": "add"}, [za, wb], za + wb, exact=True)
    f.add("sub complex128 broadcast", "binary", {"op": "sub"}, [za, wb], za - wb, exact=True)
    f.add("mul complex128 broadcast", "binary", {"op": "mul"}, [za, wb], za * wb)
    f.add("div complex128 broadcast", "binary", {"op": "div"}, [za, wb], za / wb)
    f.add("div complex128 by large and small divisors", "binary", {"op": "div"},
          [np.array([1 + 1j, 1e300 + 1e300j, 1e-300 + 2e-300j]), np.array([1e300 + 1e300j, 2e300 - 1e300j, 3e-300 + 1e-300j])],
          np.array([1 + 1j, 1e300 + 1e300j, 1e-300 + 2e-300j]) / np.array([1e300 + 1e300j, 2e300 - 1e300j, 3e-300 + 1e-300j]))
    f.add("pow complex128", "binary", {"op": "pow"}, [z[:4], w], z[:4] ** w)
    special = np.array([0j, complex(-4, 0.0), complex(-4, -0.0), complex(0, 2), complex(-1, 0.0), 1 + 0j, np.pi * 1j])
    zz = np.concatenate([z, special])
    with np.errstate(all="ignore"):
        for op, fn in (("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("abs", np.abs), ("neg", np.negative),
                       ("square", np.square), ("conj", np.conj), ("real", np.real), ("imag", np.imag),
                       ("sin", np.sin), ("cos", np.cos), ("tanh", np.tanh), ("recip", lambda x: 1 / x)):
            arg = zz[1:] if op == "recip" else zz  # 1 / 0j has no agreed value
            f.add(f"{op} complex128", "unary", {"op": op}, [arg], np.asarray(fn(arg)), exact=op in ("neg", "conj", "real", "imag"))
        z64 = z.astype(np.complex64)
        for op, fn in (("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("abs", np.abs)):
            f.add(f"{op} complex64", "unary", {"op": op}, [z64], np.asarray(fn(z64)))
        f.add("mul complex64", "binary", {"op": "mul"}, [z64.reshape(-1, 1), w.astype(np.complex64)],
              z64.reshape(-1, 1) * w.astype(np.complex64))
        f.add("div complex64", "binary", {"op": "div"}, [z64.reshape(-1, 1), w.astype(np.complex64)],
              z64.reshape(-1, 1) / w.astype(np.complex64))
    m = rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3))
    n = rng.normal(size=(3, 2)) + 1j * rng.normal(size=(3, 2))
    f.add("matmul complex128", "matmul", {}, [m, n], m @ n)
    f.add("sum complex128 axis 1", "reduce", {"op": "sum", "axes": [1], "keepdims": False}, [m], m.sum(axis=1))
    f.add("prod complex128 all", "reduce", {"op": "prod", "axes": None, "keepdims": False}, [m], np.asarray(m.prod()))
    f.add("mean complex128 axis 0", "reduce", {"op": "mean", "axes": [0], "keepdims": True}, [m], m.mean(axis=0, keepdims=True))
    f.add("cumsum complex128 axis 1", "cumsum", {"axis": 1}, [m], np.cumsum(m, axis=1))
    return f


def gen_cast(rng) -> Family:
    f = Family("cast")

    def c(name, x, dt):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                y = x.astype(dt)
        f.add(name, "cast", {"dtype": DTYPE_NAMES[np.dtype(dt)]}, [x], y, exact=True, signed_zero=True)

    fl = np.array([-2.7, -2.5, -0.5, -0.0, 0.0, 0.5, 0.9999, 2.5, 2.7, 1e10, -1e15, 123456789.9])
    c("float64 to int64 truncates toward zero", fl, np.int64)
    c("float64 to int32 truncates toward zero", np.array([-2.9, 2.9, -0.7, 2147483647.0, -2147483648.0, 65536.5]), np.int32)
    c("float32 to int32 truncates toward zero", np.array([-2.9, 2.9, 1e9, -16777217.0, 0.5], dtype=np.float32), np.int32)
    c("float32 to int64", np.array([-3.5, 3.5, 1e18, -1e18], dtype=np.float32), np.int64)
    c("float64 to uint8 in range truncates", np.array([0.0, 0.9, 1.9, 127.5, 254.5, 255.99]), np.uint8)
    c("int64 to uint8 wraps", np.array([-1, 0, 1, 127, 128, 255, 256, 300, -129, 1000, -256], dtype=np.int64), np.uint8)
    c("int64 to int32 wraps", np.array([2**31, -(2**31) - 1, 2**40 + 5, -(2**40) - 5, 7, -7], dtype=np.int64), np.int32)
    c("int32 to uint8 wraps", np.array([-1, 256, 511, -200, 42], dtype=np.int32), np.uint8)
    c("uint8 to int64", np.array([0, 1, 128, 255], dtype=np.uint8), np.int64)
    c("uint8 to int32", np.array([0, 200, 255], dtype=np.uint8), np.int32)
    c("int32 to int64 sign extends", np.array([-(2**31), -1, 0, 2**31 - 1], dtype=np.int32), np.int64)
    c("int64 to float32 rounds to nearest even", np.array([2**24 + 1, 2**24 + 3, -(2**24) - 1, 2**62, 7], dtype=np.int64), np.float32)
    c("int64 to float64 rounds to nearest even", np.array([2**53 + 1, 2**53 + 3, -(2**63), 2**63 - 1], dtype=np.int64), np.float64)
    c("int32 to float64", np.array([-(2**31), 2**31 - 1, 0], dtype=np.int32), np.float64)
    c("uint8 to float32", np.array([0, 128, 255], dtype=np.uint8), np.float32)
    c("float64 to float32 rounds, overflows to inf, underflows to zero",
      np.array([1 / 3, -1 / 3, 1e40, -1e40, 1e-50, -1e-50, NAN, INF, -0.0, 3.4028235677973366e38, 1.401298464324817e-45]), np.float32)
    c("float32 to float64 is exact", np.array([0.1, NAN, -INF, -0.0, 1e-40], dtype=np.float32), np.float64)
    c("float64 to float16 rounds to nearest even", np.array([0.1, 65504.0, 65519.0, 65520.0, 1e-8, 5.96e-8, -0.0, NAN, -INF, 1.0009765625, 2049.0]), np.float16)
    c("float16 to float32 is exact", np.array([0.1, 65504.0, 6e-8, -0.0, NAN, INF], dtype=np.float16), np.float32)
    c("float32 to float16", np.array([0.333, -70000.0, 3.0e-5, 1.5], dtype=np.float32), np.float16)
    c("float64 to bool (nan is true, -0.0 is false)", np.array([NAN, -0.0, 0.0, 1e-300, -INF, 2.0]), np.bool_)
    c("float32 to bool", np.array([0.0, -0.0, 0.5, NAN], dtype=np.float32), np.bool_)
    c("int64 to bool", np.array([0, 1, -1, 256], dtype=np.int64), np.bool_)
    c("uint8 to bool", np.array([0, 1, 255], dtype=np.uint8), np.bool_)
    b = np.array([True, False, True])
    for dt in (np.float32, np.float64, np.int64, np.int32, np.uint8, np.complex128):
        c(f"bool to {DTYPE_NAMES[np.dtype(dt)]}", b, dt)
    z = np.array([1.5 - 2j, -0.5 + 1j, complex(-0.0, 3)])
    c("complex128 to float64 takes the real part", z, np.float64)
    c("complex128 to int64 truncates the real part", z, np.int64)
    c("complex128 to complex64", np.array([1 / 3 + 2j / 3, 1e40 + 1j]), np.complex64)
    c("complex128 to bool (either part non-zero)", np.array([0j, 1j, 1 + 0j, complex(-0.0, 0.0)]), np.bool_)
    c("float64 to complex128", np.array([1.5, -0.0, NAN]), np.complex128)
    c("float32 to complex64", np.array([1.5, -2.0], dtype=np.float32), np.complex64)
    c("int64 to complex128", np.array([-3, 4], dtype=np.int64), np.complex128)
    v, inp = viewed(np.arange(12, dtype=np.float64).reshape(3, 4) - 5.5, [["transpose", 0, 1], ["slice", 0, None, None, -1]])
    f.add("cast float64 view to int32", "cast", {"dtype": "int32"}, [inp], v.astype(np.int32), exact=True)
    return f


def gen_reduce(rng) -> Family:
    f = Family("reduce")
    x3 = rng.normal(size=(2, 3, 4))
    axes_list = [[0], [1], [2], [-1], [0, 2], [1, -1], [0, 1, 2], None]

    def red(op, x, axes, keepdims, dtype=None):
        ax = None if axes is None else tuple(axes)
        kw = {} if dtype is None else {"dtype": dtype}
        fn = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean}[op]
        return np.asarray(fn(x, axis=ax, keepdims=keepdims, **kw))

    for op in ("sum", "prod", "max", "min", "mean"):
        for axes in axes_list:
            for keepdims in (False, True):
                if keepdims and axes in ([0], [-1]):
                    continue
                f.add(f"{op} float64 axes {axes} keepdims {keepdims}", "reduce",
                      {"op": op, "axes": axes, "keepdims": keepdims}, [x3], red(op, x3, axes, keepdims),
                      exact=op in ("max", "min"))
    # float32 sums of small integers are exact in any summation order.
    xi = rng.integers(-8, 9, size=(3, 5, 2)).astype(np.float32)
    for axes in ([0], [1, 2], None):
        f.add(f"sum float32 integers axes {axes}", "reduce", {"op": "sum", "axes": axes, "keepdims": False}, [xi],
              red("sum", xi, axes, False), exact=True)
        f.add(f"mean float32 axes {axes}", "reduce", {"op": "mean", "axes": axes, "keepdims": False}, [xi],
              red("mean", xi, axes, False))
    # NaN propagation and infinities.
    xn = np.array([[1.0, NAN, 3.0], [-INF, 2.0, 0.5], [INF, -INF, 1.0], [-0.0, 0.0, -1.0]])
    for op in ("sum", "prod", "max", "min"):
        for axes in ([0], [1], None):
            f.add(f"{op} float64 with nan and inf axes {axes}", "reduce", {"op": op, "axes": axes, "keepdims": False},
                  [xn], red(op, xn, axes, False), exact=op in ("max", "min"))
    xn32 = xn.astype(np.float32)
    for op in ("max", "min"):
        f.add(f"{op} float32 with nan axis 1", "reduce", {"op": op, "axes": [1], "keepdims": True}, [xn32],
              red(op, xn32, [1], True), exact=True)
    # Empty reductions: sum of nothing is 0, product of nothing is 1.
    for dt in (np.float64, np.float32, np.int64, np.int32):
        name = DTYPE_NAMES[np.dtype(dt)]
        e = np.zeros((0, 3), dtype=dt)
        for op in ("sum", "prod"):
            for axes in ([0], [1], None):
                f.add(f"{op} {name} empty (0,3) axes {axes}", "reduce", {"op": op, "axes": axes, "keepdims": False}, [e],
                      red(op, e, axes, False, dtype=dt), exact=True)
        f.add(f"sum {name} empty (0,3) axes [0] keepdims", "reduce", {"op": "sum", "axes": [0], "keepdims": True}, [e],
              red("sum", e, [0], True, dtype=dt), exact=True)
    e3 = np.zeros((2, 0, 3))
    f.add("sum float64 empty middle axis", "reduce", {"op": "sum", "axes": [1], "keepdims": False}, [e3], e3.sum(axis=1), exact=True)
    f.add("prod float64 empty middle axis keepdims", "reduce", {"op": "prod", "axes": [1, 2], "keepdims": True}, [e3],
          e3.prod(axis=(1, 2), keepdims=True), exact=True)
    f.add("max float64 over non-empty axis of an empty array", "reduce", {"op": "max", "axes": [2], "keepdims": False}, [e3],
          e3.max(axis=2), exact=True)
    # Integers (same-dtype accumulation, as nabla does; NumPy is told the dtype), bools count in int64.
    xi64 = rng.integers(-100, 100, size=(3, 4)).astype(np.int64)
    for op in ("sum", "prod", "max", "min"):
        for axes in ([0], [1], None):
            f.add(f"{op} int64 axes {axes}", "reduce", {"op": op, "axes": axes, "keepdims": False}, [xi64],
                  red(op, xi64, axes, False, dtype=np.int64 if op in ("sum", "prod") else None))
    xi32 = rng.integers(-50, 50, size=(4, 3)).astype(np.int32)
    f.add("sum int32 axis 0 (int32 accumulation)", "reduce", {"op": "sum", "axes": [0], "keepdims": False}, [xi32],
          np.sum(xi32, axis=0, dtype=np.int32))
    xu = rng.integers(0, 20, size=(3, 4)).astype(np.uint8)
    f.add("sum uint8 axis 1 (uint8 accumulation)", "reduce", {"op": "sum", "axes": [1], "keepdims": False}, [xu],
          np.sum(xu, axis=1, dtype=np.uint8))
    f.add("max uint8 all", "reduce", {"op": "max", "axes": None, "keepdims": False}, [xu], np.asarray(xu.max()))
    xb = rng.uniform(size=(3, 4)) > 0.5
    xb[0, :] = True
    xb[1, :] = False
    for axes in ([0], [1], None):
        f.add(f"sum bool counts in int64 axes {axes}", "reduce", {"op": "sum", "axes": axes, "keepdims": False}, [xb],
              red("sum", xb, axes, False))
        f.add(f"any bool axes {axes}", "any", {"axes": axes, "keepdims": False}, [xb], np.asarray(np.any(xb, axis=None if axes is None else tuple(axes))))
        f.add(f"all bool axes {axes}", "all", {"axes": axes, "keepdims": False}, [xb], np.asarray(np.all(xb, axis=None if axes is None else tuple(axes))))
        f.add(f"max bool (any) axes {axes}", "reduce", {"op": "max", "axes": axes, "keepdims": False}, [xb], red("max", xb, axes, False))
        f.add(f"min bool (all) axes {axes}", "reduce", {"op": "min", "axes": axes, "keepdims": False}, [xb], red("min", xb, axes, False))
    # Reductions of strided views.
    v, inp = viewed(rng.normal(size=(4, 6)), [["slice", 1, None, None, -2], ["transpose", 0, 1]])
    for axes in ([0], [1], None):
        f.add(f"sum float64 of a negative-step transposed view axes {axes}", "reduce",
              {"op": "sum", "axes": axes, "keepdims": True}, [inp], red("sum", v, axes, True))
    v, inp = viewed(np.arange(3.0), [["unsqueeze", 0], ["broadcast_to", [4, 3]]])
    f.add("sum float64 of a broadcast view axis 0", "reduce", {"op": "sum", "axes": [0], "keepdims": False}, [inp], v.sum(axis=0))
    # argmax / argmin: ties give the first index, NaN counts as the extreme.
    xa = np.array([[1.0, 3.0, 3.0, -1.0], [NAN, 2.0, NAN, 5.0], [-0.0, 0.0, -INF, -INF], [2.0, 2.0, 2.0, 2.0]])
    for op, fn in (("argmax", np.argmax), ("argmin", np.argmin)):
        for axis in (0, 1, -1):
            for keepdims in (False, True):
                f.add(f"{op} float64 ties and nan axis {axis} keepdims {keepdims}", op, {"axis": axis, "keepdims": keepdims},
                      [xa], np.asarray(fn(xa, axis=axis, keepdims=keepdims)).astype(np.int64))
        xi = np.array([[4, 1, 4, 0], [-2, -2, 7, 7]], dtype=np.int32)
        f.add(f"{op} int32 ties axis 1", op, {"axis": 1, "keepdims": False}, [xi], fn(xi, axis=1).astype(np.int64))
        xu = np.array([3, 255, 0, 255, 0], dtype=np.uint8)
        f.add(f"{op} uint8 ties", op, {"axis": 0, "keepdims": False}, [xu], np.asarray(fn(xu)).astype(np.int64))
        xb2 = np.array([False, True, True, False])
        f.add(f"{op} bool", op, {"axis": 0, "keepdims": False}, [xb2], np.asarray(fn(xb2)).astype(np.int64))
        v, inp = viewed(xa, [["flip", [1]], ["transpose", 0, 1]])
        f.add(f"{op} float64 of a flipped transposed view axis 1", op, {"axis": 1, "keepdims": False}, [inp],
              fn(v, axis=1).astype(np.int64))
    # cumsum.
    xc = rng.normal(size=(3, 4))
    for axis in (0, 1, -1):
        f.add(f"cumsum float64 axis {axis}", "cumsum", {"axis": axis}, [xc], np.cumsum(xc, axis=axis))
    xci = rng.integers(-5, 5, size=(2, 3, 2)).astype(np.int64)
    for axis in (0, 1, 2):
        f.add(f"cumsum int64 axis {axis}", "cumsum", {"axis": axis}, [xci], np.cumsum(xci, axis=axis))
    f.add("cumsum int32 axis 0 (int32 accumulation)", "cumsum", {"axis": 0}, [xci[0].astype(np.int32)],
          np.cumsum(xci[0].astype(np.int32), axis=0, dtype=np.int32))
    f.add("cumsum bool counts in int64", "cumsum", {"axis": 1}, [xb], np.cumsum(xb, axis=1))
    f.add("cumsum float64 with nan and inf", "cumsum", {"axis": 0}, [np.array([1.0, INF, 2.0, NAN, 3.0])],
          np.cumsum(np.array([1.0, INF, 2.0, NAN, 3.0])))
    f.add("cumsum float32 integers", "cumsum", {"axis": 1}, [xi.astype(np.float32)], np.cumsum(xi.astype(np.float32), axis=1), exact=True)
    f.add("cumsum float64 empty axis", "cumsum", {"axis": 1}, [np.zeros((3, 0))], np.zeros((3, 0)))
    v, inp = viewed(xc, [["slice", 1, None, None, -1], ["transpose", 0, 1]])
    f.add("cumsum float64 of a reversed transposed view axis 1", "cumsum", {"axis": 1}, [inp], np.cumsum(v, axis=1))
    return f


def gen_matmul(rng) -> Family:
    f = Family("matmul")
    cases = [
        ((2, 3), (3, 4)),
        ((3,), (3, 4)),
        ((2, 3), (3,)),
        ((4,), (4,)),
        ((2, 1, 3, 4), (5, 4, 2)),
        ((3, 2, 4), (4, 5)),
        ((4,), (2, 4, 3)),
        ((2, 3, 4), (4,)),
        ((1, 2, 3), (4, 3, 2)),
        ((2, 0), (0, 3)),
        ((0, 3), (3, 2)),
        ((2, 3), (3, 0)),
    ]
    for sa, sb in cases:
        a, b = rng.normal(size=sa), rng.normal(size=sb)
        f.add(f"matmul float64 {sa} @ {sb}", "matmul", {}, [a, b], np.asarray(a @ b))
        ai = rng.integers(-4, 5, size=sa).astype(np.float32)
        bi = rng.integers(-4, 5, size=sb).astype(np.float32)
        f.add(f"matmul float32 small integers {sa} @ {sb}", "matmul", {}, [ai, bi], np.asarray(ai @ bi), exact=True)
    for dt in (np.int64, np.int32):
        a = rng.integers(-5, 6, size=(2, 3, 4)).astype(dt)
        b = rng.integers(-5, 6, size=(4, 3)).astype(dt)
        f.add(f"matmul {DTYPE_NAMES[np.dtype(dt)]} batch broadcast", "matmul", {}, [a, b], a @ b)
    f.add("matmul uint8 wraps", "matmul", {}, [np.full((2, 3), 200, np.uint8), np.full((3, 2), 3, np.uint8)],
          np.full((2, 3), 200, np.uint8) @ np.full((3, 2), 3, np.uint8))
    # Strided operands: transposed, negative-step and broadcast views.
    base_a, base_b = rng.normal(size=(4, 3)), rng.normal(size=(5, 4))
    va, ia = viewed(base_a, [["transpose", 0, 1]])
    vb, ib = viewed(base_b, [["transpose", 0, 1]])
    f.add("matmul float64 transposed views (3,4)^T-style", "matmul", {}, [ia, ib], va @ vb)
    va, ia = viewed(rng.normal(size=(3, 8)), [["slice", 1, None, None, -2]])
    vb, ib = viewed(rng.normal(size=(6, 5)), [["slice", 0, 1, -1, 1], ["slice", 1, None, None, 2]])
    f.add("matmul float64 negative-step and stepped views", "matmul", {}, [ia, ib], va @ vb)
    va, ia = viewed(rng.normal(size=(3, 4)), [["unsqueeze", 0], ["broadcast_to", [2, 3, 4]]])
    vb, ib = viewed(rng.normal(size=(2, 4, 5)), [["flip", [0]]])
    f.add("matmul float64 broadcast view batch", "matmul", {}, [ia, ib], va @ vb)
    va, ia = viewed(rng.integers(-3, 4, size=(2, 4, 3)).astype(np.float32), [["permute", [0, 2, 1]]])
    vb, ib = viewed(rng.integers(-3, 4, size=(2, 5, 4)).astype(np.float32), [["permute", [0, 2, 1]]])
    f.add("matmul float32 batched transposed views", "matmul", {}, [ia, ib], va @ vb, exact=True)
    return f


def gen_movement(rng) -> Family:
    f = Family("movement")
    x = np.arange(10, dtype=np.int64)
    x2 = np.arange(24, dtype=np.float64).reshape(4, 6)
    x3 = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    views = [
        ("x[::-2]", x, [["slice", 0, None, None, -2]]),
        ("x[1:-1:2]", x, [["slice", 0, 1, -1, 2]]),
        ("x[-2:-8:-3]", x, [["slice", 0, -2, -8, -3]]),
        ("x[-100:100] clamps", x, [["slice", 0, -100, 100, 1]]),
        ("x[7:2] is empty", x, [["slice", 0, 7, 2, 1]]),
        ("x[2:7:-1] is empty", x, [["slice", 0, 2, 7, -1]]),
        ("x[::-1][::3]", x, [["slice", 0, None, None, -1], ["slice", 0, None, None, 3]]),
        ("2-D x[::-1, 1::2]", x2, [["slice", 0, None, None, -1], ["slice", 1, 1, None, 2]]),
        ("2-D transpose", x2, [["transpose", 0, 1]]),
        ("2-D transpose then reshape (copies)", x2, [["transpose", 0, 1], ["reshape", [4, 6]]]),
        ("2-D transpose then reshape to 1-D", x2, [["transpose", 0, 1], ["reshape", [24]]]),
        ("2-D reshape of a stepped view", x2, [["slice", 1, None, None, 2], ["reshape", [2, 6]]]),
        ("2-D flip both axes", x2, [["flip", [0, 1]]]),
        ("2-D flip then transpose then slice", x2, [["flip", [1]], ["transpose", 0, 1], ["slice", 1, 1, 3, 1]]),
        ("3-D permute (2,0,1)", x3, [["permute", [2, 0, 1]]]),
        ("3-D permute then negative-step slice", x3, [["permute", [1, 2, 0]], ["slice", 1, None, None, -3]]),
        ("3-D reshape (4,6) then transpose", x3, [["reshape", [4, 6]], ["transpose", 0, 1]]),
        ("3-D squeeze after slicing to one", x3, [["slice", 1, 1, 2, 1], ["squeeze", 1]]),
        ("unsqueeze then broadcast", x, [["unsqueeze", 0], ["broadcast_to", [3, 10]]]),
        ("broadcast of a negative-step view", x, [["slice", 0, None, None, -3], ["unsqueeze", 1], ["broadcast_to", [2, 4, 3]]]),
        ("reshape with an inferred dimension", x3, [["reshape", [-1, 8]]]),
    ]
    for name, arr, steps in views:
        f.add(f"view {name}", "view", {}, [(arr, steps)], apply_view(arr, steps), exact=True)
    # pad with a constant.
    p = rng.integers(-9, 9, size=(2, 3)).astype(np.int64)
    f.add("pad int64 ((1,2),(0,1)) with 9", "pad", {"pads": [[1, 2], [0, 1]], "value": 9}, [p],
          np.pad(p, ((1, 2), (0, 1)), constant_values=9))
    pf = rng.normal(size=(2, 2, 3)).astype(np.float32)
    f.add("pad float32 3-D with -1.5", "pad", {"pads": [[0, 1], [2, 0], [1, 1]], "value": -1.5}, [pf],
          np.pad(pf, ((0, 1), (2, 0), (1, 1)), constant_values=-1.5), exact=True)
    f.add("pad float64 empty axis", "pad", {"pads": [[1, 1], [0, 2]], "value": 0.25}, [np.zeros((0, 2))],
          np.pad(np.zeros((0, 2)), ((1, 1), (0, 2)), constant_values=0.25), exact=True)
    v, inp = viewed(x2, [["transpose", 0, 1], ["slice", 0, None, None, -2]])
    f.add("pad float64 of a negative-step transposed view", "pad", {"pads": [[1, 0], [0, 2]], "value": NAN}, [inp],
          np.pad(v, ((1, 0), (0, 2)), constant_values=NAN), exact=True)
    f.add("pad bool with true", "pad", {"pads": [[1, 1]], "value": True}, [np.array([False, False])],
          np.pad(np.array([False, False]), (1, 1), constant_values=True))
    # concatenate.
    a = rng.normal(size=(2, 3))
    b = rng.normal(size=(1, 3))
    c = rng.normal(size=(2, 2))
    f.add("concatenate float64 axis 0", "concatenate", {"axis": 0}, [a, b, a], np.concatenate([a, b, a], axis=0), exact=True)
    f.add("concatenate float64 axis 1", "concatenate", {"axis": 1}, [a[:, :2], c], np.concatenate([a[:, :2], c], axis=1), exact=True)
    f.add("concatenate float64 axis -1 with an empty part", "concatenate", {"axis": -1}, [c, np.zeros((2, 0)), c],
          np.concatenate([c, np.zeros((2, 0)), c], axis=-1), exact=True)
    va, ia = viewed(a, [["slice", 0, None, None, -1]])
    vc, ic = viewed(rng.normal(size=(3, 2)), [["transpose", 0, 1]])
    f.add("concatenate float64 views axis 0", "concatenate", {"axis": 0}, [ia, ic], np.concatenate([va, vc], axis=0), exact=True)
    f.add("concatenate bool axis 0", "concatenate", {"axis": 0}, [np.array([True]), np.array([False, True])],
          np.array([True, False, True]))
    f.add("concatenate int32 3-D axis 1", "concatenate", {"axis": 1}, [x3, x3[:, :1]], np.concatenate([x3, x3[:, :1]], axis=1))
    # stack.
    for axis in (0, 1, 2, -1):
        f.add(f"stack float64 axis {axis}", "stack", {"axis": axis}, [a, a * 2, a - 1], np.stack([a, a * 2, a - 1], axis=axis), exact=True)
    f.add("stack int64 scalars-as-1-D axis 0", "stack", {"axis": 0}, [np.array([1], dtype=np.int64), np.array([2], dtype=np.int64)],
          np.stack([np.array([1]), np.array([2])]))
    return f


def descending_stable_argsort(x, axis):
    """Stable descending order that keeps equal elements in their original order and puts NaN first."""
    n = x.shape[axis]
    rev = np.flip(x, axis)
    s = np.argsort(rev, axis=axis, kind="stable")
    return (n - 1) - np.flip(s, axis)


def gen_indexing(rng) -> Family:
    f = Family("indexing")
    # take_along_axis (gather).
    x = rng.normal(size=(3, 4))
    idx = np.array([[0, 3], [2, -1], [-4, 1]], dtype=np.int64)
    f.add("take_along_axis float64 axis 1 with negative indices", "take_along_axis", {"axis": 1}, [x, idx],
          np.take_along_axis(x, idx, axis=1), exact=True)
    idx0 = np.array([[2, 0, 1, 1]], dtype=np.int64)
    f.add("take_along_axis float64 axis 0", "take_along_axis", {"axis": 0}, [x, idx0], np.take_along_axis(x, idx0, axis=0), exact=True)
    idxb = np.array([[1, 0, 2]], dtype=np.int64)
    f.add("take_along_axis broadcasts the index over axis 0", "take_along_axis", {"axis": 1}, [x, idxb],
          np.take_along_axis(x, idxb, axis=1), exact=True)
    x3 = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    idx3 = rng.integers(0, 3, size=(2, 5, 4)).astype(np.int64)
    f.add("take_along_axis int32 3-D axis 1", "take_along_axis", {"axis": 1}, [x3, idx3], np.take_along_axis(x3, idx3, axis=1))
    i32 = np.array([[3], [0], [1]], dtype=np.int32)
    f.add("take_along_axis with an int32 index", "take_along_axis", {"axis": 1}, [x, i32], np.take_along_axis(x, i32, axis=1), exact=True)
    v, inp = viewed(x, [["transpose", 0, 1], ["slice", 0, None, None, -1]])
    ii = np.array([[2, 0], [1, 1], [0, 2], [2, 2]], dtype=np.int64)
    f.add("take_along_axis of a reversed transposed view", "take_along_axis", {"axis": 1}, [inp, ii],
          np.take_along_axis(v, ii, axis=1), exact=True)
    # index_select (np.take along an axis).
    sel = np.array([2, 0, 2, -1], dtype=np.int64)
    f.add("index_select float64 axis 0 (np.take)", "index_select", {"axis": 0}, [x, sel[:3]], np.take(x, sel[:3], axis=0), exact=True)
    f.add("index_select int32 axis 2", "index_select", {"axis": 2}, [x3, np.array([3, 0], dtype=np.int64)],
          np.take(x3, [3, 0], axis=2))
    # scatter_add (np.add.at).
    dst = np.zeros((3, 4))
    src = rng.normal(size=(3, 2))
    sidx = np.array([[1, 1], [0, 3], [2, 0]], dtype=np.int64)
    out = dst.copy()
    for i in range(3):
        for j in range(2):
            out[i, sidx[i, j]] += src[i, j]
    f.add("scatter_add float64 axis 1 with repeated indices", "scatter_add", {"axis": 1}, [dst, sidx, src], out)
    # one-hot (np.eye(classes)[idx]).
    oh = np.array([[0, 2, 3], [1, 1, 0]], dtype=np.int64)
    for dt in (np.float32, np.int64, np.bool_):
        f.add(f"one_hot 4 classes as {DTYPE_NAMES[np.dtype(dt)]} (np.eye[idx])", "one_hot",
              {"classes": 4, "dtype": DTYPE_NAMES[np.dtype(dt)]}, [oh], np.eye(4, dtype=dt)[oh])
    f.add("one_hot of an empty index", "one_hot", {"classes": 3, "dtype": "float64"}, [np.zeros((0,), dtype=np.int64)],
          np.eye(3)[np.zeros((0,), dtype=np.int64)])
    # Stable sort and argsort, NaN last (first when descending), -0.0 and 0.0 equal.
    s = np.array([3.0, NAN, -0.0, 1.0, 0.0, -INF, 1.0, NAN, INF, -0.0, 2.5])
    f.add("sort float64 stable with nan and signed zeros", "sort", {"axis": 0, "descending": False, "output": "values"}, [s],
          np.sort(s, kind="stable"), exact=True, signed_zero=True)
    f.add("argsort float64 stable with nan and signed zeros", "sort", {"axis": 0, "descending": False, "output": "indices"}, [s],
          np.argsort(s, kind="stable"))
    d = descending_stable_argsort(s, 0)
    f.add("sort float64 descending stable (nan first)", "sort", {"axis": 0, "descending": True, "output": "values"}, [s], s[d],
          exact=True, signed_zero=True)
    f.add("argsort float64 descending stable (nan first)", "sort", {"axis": 0, "descending": True, "output": "indices"}, [s], d)
    m = rng.integers(0, 4, size=(4, 6)).astype(np.int64)
    for axis in (0, 1, -1):
        f.add(f"argsort int64 ties stable axis {axis}", "sort", {"axis": axis, "descending": False, "output": "indices"}, [m],
              np.argsort(m, axis=axis, kind="stable"))
        f.add(f"sort int64 axis {axis}", "sort", {"axis": axis, "descending": False, "output": "values"}, [m],
              np.sort(m, axis=axis, kind="stable"))
        dd = descending_stable_argsort(m, axis)
        f.add(f"argsort int64 descending stable axis {axis}", "sort", {"axis": axis, "descending": True, "output": "indices"}, [m], dd)
    m32 = rng.integers(-3, 3, size=(3, 5)).astype(np.float32)
    m32[1, 2] = NAN
    f.add("argsort float32 with nan axis 1", "sort", {"axis": 1, "descending": False, "output": "indices"}, [m32],
          np.argsort(m32, axis=1, kind="stable"))
    u = np.array([5, 255, 0, 5, 17], dtype=np.uint8)
    f.add("argsort uint8 stable", "sort", {"axis": 0, "descending": False, "output": "indices"}, [u], np.argsort(u, kind="stable"))
    bb = np.array([True, False, True, False])
    f.add("argsort bool stable", "sort", {"axis": 0, "descending": False, "output": "indices"}, [bb], np.argsort(bb, kind="stable"))
    v, inp = viewed(m, [["transpose", 0, 1], ["slice", 0, None, None, -1]])
    f.add("argsort int64 of a reversed transposed view axis 1", "sort", {"axis": 1, "descending": False, "output": "indices"}, [inp],
          np.argsort(v, axis=1, kind="stable"))
    f.add("sort float64 empty axis", "sort", {"axis": 1, "descending": False, "output": "values"}, [np.zeros((2, 0))], np.zeros((2, 0)))
    # top-k via argsort: distinct values, so the order is unambiguous.
    t = rng.permutation(20).astype(np.float64).reshape(4, 5) - 7.5
    for k in (1, 3, 5):
        desc = descending_stable_argsort(t, 1)[:, :k]
        asc = np.argsort(t, axis=1, kind="stable")[:, :k]
        f.add(f"topk largest k={k} values", "topk", {"k": k, "axis": 1, "largest": True, "output": "values"}, [t],
              np.take_along_axis(t, desc, axis=1), exact=True)
        f.add(f"topk largest k={k} indices", "topk", {"k": k, "axis": 1, "largest": True, "output": "indices"}, [t], desc)
        f.add(f"topk smallest k={k} indices", "topk", {"k": k, "axis": 1, "largest": False, "output": "indices"}, [t], asc)
    desc0 = descending_stable_argsort(t, 0)[:2]
    f.add("topk largest k=2 axis 0 values", "topk", {"k": 2, "axis": 0, "largest": True, "output": "values"}, [t],
          np.take_along_axis(t, desc0, axis=0), exact=True)
    tt = np.array([1, 5, 5, 2, 5, 0], dtype=np.int64)
    f.add("topk int64 with ties (values only)", "topk", {"k": 3, "axis": 0, "largest": True, "output": "values"}, [tt],
          np.sort(tt)[::-1][:3].copy())
    f.add("topk k=0 is empty", "topk", {"k": 0, "axis": 0, "largest": True, "output": "values"}, [tt], tt[:0])
    return f


def gen_creation(rng) -> Family:
    f = Family("creation")
    for start, end, n, dt in [(0.0, 1.0, 5, "float64"), (-1.0, 1.0, 7, "float32"), (2.0, 3.0, 1, "float64"),
                              (0.0, 10.0, 0, "float64"), (1.0, 0.0, 4, "float64"), (0.0, 1.0, 11, "float64"),
                              (-3.0, 7.0, 6, "int64"), (0.1, 0.9, 9, "float32")]:
        f.add(f"linspace({start}, {end}, {n}) {dt}", "linspace", {"start": start, "end": end, "n": n, "dtype": dt}, [],
              np.linspace(start, end, n).astype(NP_DTYPES[dt]))
    for start, end, step, dt in [(0, 10, 3, "int64"), (5, 0, -2, "int64"), (0.0, 1.0, 0.1, "float64"), (-1.0, 1.0, 0.25, "float32"),
                                 (1.5, 4, 1, "float64"), (0, 0, 1, "int64"), (3, -3, -1, "int32"), (0, 5, 1, "uint8"),
                                 (10.0, 0.0, -1.5, "float64")]:
        f.add(f"arange({start}, {end}, {step}) {dt}", "arange", {"start": start, "end": end, "step": step, "dtype": dt}, [],
              np.arange(start, end, step, dtype=np.float64 if isinstance(step, float) else None).astype(NP_DTYPES[dt]))
    for n, dt in ((3, "int64"), (4, "float32"), (0, "float64"), (2, "bool")):
        f.add(f"eye({n}) {dt}", "eye", {"n": n, "dtype": dt}, [], np.eye(n, dtype=NP_DTYPES[dt]))
    f.add("full (2,3) with 2.5 as float32", "full", {"shape": [2, 3], "value": 2.5, "dtype": "float32"}, [],
          np.full((2, 3), 2.5, dtype=np.float32))
    f.add("full with 300 as uint8 wraps", "full", {"shape": [2], "value": 300, "dtype": "uint8"}, [],
          np.array([300, 300]).astype(np.uint8))
    f.add("full with -2.7 as int32 truncates", "full", {"shape": [3], "value": -2.7, "dtype": "int32"}, [],
          np.array([-2.7] * 3).astype(np.int32))
    return f


def main() -> int:
    # Special values are the point of many cases: NumPy's floating-point warnings are expected.
    np.seterr(all="ignore")
    warnings.simplefilter("ignore")
    os.makedirs(OUT_DIR, exist_ok=True)
    rng = np.random.default_rng(SEED)
    families = [gen_binary(rng), gen_compare(rng), gen_unary(rng), gen_complex(rng), gen_cast(rng), gen_reduce(rng),
                gen_matmul(rng), gen_movement(rng), gen_indexing(rng), gen_creation(rng)]
    total_cases, total_bytes = 0, 0
    for fam in families:
        path, n, size = fam.write()
        total_cases += n
        total_bytes += size
        print(f"{os.path.relpath(path)}: {n} cases, {size / 1024:.1f} KiB")
    print(f"total: {total_cases} cases, {total_bytes / 1024:.1f} KiB")
    if total_bytes > 1_000_000:
        print("fixtures exceed 1 MB; shrink them", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
