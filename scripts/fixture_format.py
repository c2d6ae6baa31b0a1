"""The format of the NumPy fixtures (crates/nabla-backend-tests/fixtures/numpy_*.json) and its encoder,
used by scripts/gen_numpy_fixtures.py.

Each file crates/nabla-backend-tests/fixtures/numpy_<family>.json holds

    {"generator": ..., "numpy": version, "cases": [case, ...]}

and each case is

    {"name": str, "op": str, "params": {...},
     "inputs": [{"dtype": str, "shape": [...], "data": [...], "view": [step, ...]?}, ...],
     "expected": {"dtype": str, "shape": [...], "data": [...]},
     "exact": bool?, "signed_zero": bool?, "expected_ftz": {...}?}

Encoding of `data` (row-major, flattened):
  * floats: JSON numbers; the special values as strings "nan", "inf", "-inf", "-0.0";
  * complex: [re, im] pairs of encoded floats;
  * integers: JSON integers; bools: true/false.

`view` is a list of view steps applied, in order, to the uploaded input before the op runs (the same steps
are applied to the NumPy array), so that ops are checked on strided, broadcast and negative-step inputs:
  ["slice", axis, start|null, end|null, step]   x[..., start:end:step, ...]
  ["permute", [axes]]                           np.transpose(x, axes)
  ["transpose", a, b]                           np.swapaxes(x, a, b)
  ["reshape", [dims]]                           x.reshape(dims)
  ["flip", [axes]]                              np.flip(x, axes)
  ["broadcast_to", [dims]]                      np.broadcast_to(x, dims)
  ["unsqueeze", axis]                           np.expand_dims(x, axis)
  ["squeeze", axis]                             np.squeeze(x, axis)

`exact` asks for bit-exact float comparison (IEEE-exact ops); otherwise the Rust test uses a relative
tolerance (about 1e-12 for float64, 1e-6 for float32). `signed_zero` also requires the sign of zero
results to match. NaN always matches NaN.

`expected_ftz` (float32 cases with subnormal inputs) is NumPy's result with every float32 subnormal, in the
inputs and in the result, flushed to a zero of its sign: what a device that flushes subnormals (NVIDIA's
GPUs under Vulkan) computes. Such a backend's results may match either expectation.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np


OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "nabla-backend-tests", "fixtures")

DTYPE_NAMES = {
    np.dtype(np.float16): "float16",
    np.dtype(np.float32): "float32",
    np.dtype(np.float64): "float64",
    np.dtype(np.complex64): "complex64",
    np.dtype(np.complex128): "complex128",
    np.dtype(np.int32): "int32",
    np.dtype(np.int64): "int64",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.bool_): "bool",
}
NP_DTYPES = {v: k for k, v in DTYPE_NAMES.items()}

NAN, INF = float("nan"), float("inf")


# ----------------------------------------------------------------------------------------------------------
# Encoding
# ----------------------------------------------------------------------------------------------------------


def enc_float(v: float):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0.0 and math.copysign(1.0, v) < 0:
        return "-0.0"
    return v


def encode(a) -> dict:
    a = np.asarray(a)
    name = DTYPE_NAMES[a.dtype]
    flat = a.reshape(-1)
    if a.dtype.kind == "f":
        data = [enc_float(v) for v in flat.tolist()]
    elif a.dtype.kind == "c":
        data = [[enc_float(v.real), enc_float(v.imag)] for v in flat.tolist()]
    elif a.dtype.kind == "b":
        data = [bool(v) for v in flat.tolist()]
    else:
        data = [int(v) for v in flat.tolist()]
    return {"dtype": name, "shape": list(a.shape), "data": data}


def enc_params(p):
    """Encodes float parameters (a padding value may be NaN) like data values."""
    if isinstance(p, dict):
        return {k: enc_params(v) for k, v in p.items()}
    if isinstance(p, list):
        return [enc_params(v) for v in p]
    if isinstance(p, float):
        return enc_float(p)
    return p


def apply_view(x: np.ndarray, steps) -> np.ndarray:
    for step in steps:
        kind = step[0]
        if kind == "slice":
            _, axis, start, end, stepv = step
            idx = [slice(None)] * x.ndim
            idx[axis] = slice(start, end, stepv)
            x = x[tuple(idx)]
        elif kind == "permute":
            x = np.transpose(x, step[1])
        elif kind == "transpose":
            x = np.swapaxes(x, step[1], step[2])
        elif kind == "reshape":
            x = x.reshape(step[1])
        elif kind == "flip":
            x = np.flip(x, tuple(step[1]))
        elif kind == "broadcast_to":
            x = np.broadcast_to(x, step[1])
        elif kind == "unsqueeze":
            x = np.expand_dims(x, step[1])
        elif kind == "squeeze":
            x = np.squeeze(x, step[1])
        else:
            raise ValueError(f"unknown view step {step}")
    return x


class Family:
    """Collects the cases of one fixture file."""

    def __init__(self, name: str):
        self.name = name
        self.cases: list[dict] = []
        self.names: set[str] = set()

    def add(self, name, op, params, inputs, expected, exact=False, signed_zero=False, expected_ftz=None):
        """`inputs` is a list of arrays or (array, view_steps) pairs."""
        if name in self.names:
            raise ValueError(f"duplicate case name {name}")
        self.names.add(name)
        enc_inputs = []
        for inp in inputs:
            if isinstance(inp, tuple):
                arr, view = inp
                e = encode(arr)
                e["view"] = view
            else:
                e = encode(inp)
            enc_inputs.append(e)
        case = {"name": name, "op": op, "params": enc_params(params), "inputs": enc_inputs, "expected": encode(expected)}
        if exact:
            case["exact"] = True
        if signed_zero:
            case["signed_zero"] = True
        if expected_ftz is not None:
            case["expected_ftz"] = encode(expected_ftz)
        self.cases.append(case)

    def write(self) -> tuple[str, int, int]:
        path = os.path.join(OUT_DIR, f"numpy_{self.name}.json")
        lines = [json.dumps(c, separators=(",", ":"), allow_nan=False) for c in self.cases]
        header = json.dumps({"generator": "scripts/gen_numpy_fixtures.py", "numpy": np.__version__})
        text = header[:-1] + ', "cases": [\n' + ",\n".join(lines) + "\n]}\n"
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path, len(self.cases), len(text.encode())


def flush_subnormals(a):
    """`a` with float32 subnormals replaced by zeros of their sign (other dtypes unchanged)."""
    a = np.asarray(a)
    if a.dtype != np.float32:
        return a
    return np.where(np.abs(a) < np.finfo(np.float32).tiny, np.copysign(np.float32(0), a), a).astype(np.float32)


def viewed(arr, steps):
    """The NumPy result of applying `steps` to `arr`, paired with the steps for the fixture input."""
    return apply_view(arr, steps), (arr, steps)
