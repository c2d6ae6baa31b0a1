"""Bad input gives Python exceptions with nabla's message, never a crash: a property test throws
random shapes, dtypes and arguments at every op."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nabla_rs as nb

ALLOWED = (ValueError, TypeError, IndexError, MemoryError, RuntimeError, NotImplementedError,
           OverflowError, FloatingPointError)


def test_error_types_and_messages():
    a, b = nb.zeros(2, 3), nb.zeros(4, 5)
    with pytest.raises(ValueError, match="add"):
        a + b
    with pytest.raises(ValueError, match="matmul"):
        a @ b
    with pytest.raises(IndexError):
        a.sum(axis=5)
    with pytest.raises(TypeError, match="unknown dtype"):
        nb.zeros(2, dtype="float128")
    with pytest.raises(MemoryError, match="allocation limit"):
        nb.zeros(1 << 20, 1 << 20, 1 << 10)
    with pytest.raises(ValueError, match="negative dimension"):
        nb.zeros(-1)
    with pytest.raises(OverflowError):
        nb.tensor(1 << 70)
    with pytest.raises(TypeError):
        nb.tensor(np.array(["a", "b"]))
    with pytest.raises(ValueError, match="reshape"):
        a.reshape(7)


DTYPES = ["float32", "float64", "int64", "int32", "bool", "complex64", "uint8", "float16"]
SHAPES = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)
ARGS = st.one_of(st.integers(-5, 5), st.floats(allow_nan=True), st.none(), st.booleans(),
                 st.tuples(st.integers(-4, 4), st.integers(-4, 4)), st.text(max_size=3))


def _ops():
    names = nb._nabla._unary_ops + nb._nabla._binary_ops + nb._nabla._compare_ops
    methods = ["sum", "mean", "max", "min", "argmax", "cumsum", "reshape", "transpose", "flatten",
               "squeeze", "unsqueeze", "flip", "softmax", "logsumexp", "var", "std", "prod",
               "broadcast_to", "swapaxes", "clip", "astype", "__getitem__", "backward", "item"]
    return [("fn", n) for n in names] + [("method", m) for m in methods]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(_ops()), st.sampled_from(DTYPES), SHAPES, SHAPES, st.lists(ARGS, max_size=2))
def test_random_calls_raise_python_errors_or_succeed(op, dtype, shape_a, shape_b, args):
    kind, name = op
    a = nb.zeros(*shape_a, dtype=dtype) if shape_a else nb.zeros((), dtype=dtype)
    b = nb.ones(*shape_b, dtype=dtype) if shape_b else nb.ones((), dtype=dtype)
    try:
        if kind == "fn":
            fn = getattr(nb, name)
            fn(a) if name in nb._nabla._unary_ops else fn(a, b)
        else:
            getattr(a, name)(*args)
    except ALLOWED:
        pass
