#!/usr/bin/env python3
"""Generate crates/nabla-tensor/tests/fixtures/promotion.json, checked by tests/promotion.rs: the
result of torch.promote_types for every pair of nabla's dtypes (null where PyTorch refuses the
pair: it has no promotion for uint16, uint32 and uint64 with other dtypes), jnp.promote_types for
comparison (recorded, with the pairs where they differ), and torch's result dtypes of a tensor combined with
a Python number (bool, int, float, complex).

Run from anywhere (needs PyTorch and JAX):

    python3 scripts/gen_promotion_fixture.py
"""

from __future__ import annotations

import json
import os

import jax
import jax.numpy as jnp
import torch

jax.config.update("jax_enable_x64", True)

OUT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "crates", "nabla-tensor", "tests", "fixtures", "promotion.json"
)
NAMES = {
    "float16": (torch.float16, jnp.float16),
    "bfloat16": (torch.bfloat16, jnp.bfloat16),
    "float32": (torch.float32, jnp.float32),
    "float64": (torch.float64, jnp.float64),
    "complex64": (torch.complex64, jnp.complex64),
    "complex128": (torch.complex128, jnp.complex128),
    "int8": (torch.int8, jnp.int8),
    "int16": (torch.int16, jnp.int16),
    "int32": (torch.int32, jnp.int32),
    "int64": (torch.int64, jnp.int64),
    "uint8": (torch.uint8, jnp.uint8),
    "uint16": (torch.uint16, jnp.uint16),
    "uint32": (torch.uint32, jnp.uint32),
    "uint64": (torch.uint64, jnp.uint64),
    "bool": (torch.bool, jnp.bool_),
}
BY_TORCH = {v[0]: k for k, v in NAMES.items()}
BY_JAX = {jnp.dtype(v[1]): k for k, v in NAMES.items()}


def main():
    pairs = []
    for a, (ta, ja) in NAMES.items():
        for b, (tb, jb) in NAMES.items():
            try:
                t = BY_TORCH[torch.promote_types(ta, tb)]
            except RuntimeError:
                t = None
            j = BY_JAX.get(jnp.promote_types(ja, jb), str(jnp.promote_types(ja, jb)))
            pairs.append({"a": a, "b": b, "torch": t, "jax": j})
    scalars = []
    for a, (ta, _) in NAMES.items():
        x = torch.zeros(2, dtype=ta)
        for kind, value in [("bool", True), ("int", 3), ("float", 2.5), ("complex", 1j)]:
            try:
                r = torch.result_type(x, value)
            except RuntimeError:
                continue
            # float16 * 1j is complex32 in PyTorch, a dtype nabla does not have.
            scalars.append({"tensor": a, "scalar": kind, "torch": BY_TORCH.get(r, str(r).removeprefix("torch."))})
    with open(OUT, "w") as fh:
        json.dump({"generator": "scripts/gen_promotion_fixture.py", "torch": torch.__version__,
                   "jax": jax.__version__, "pairs": pairs, "scalars": scalars}, fh, indent=0)
        fh.write("\n")
    differ = [(p["a"], p["b"], p["torch"], p["jax"]) for p in pairs if p["torch"] != p["jax"]]
    print(f"wrote {len(pairs)} pairs and {len(scalars)} scalar cases to {OUT}; torch and jax differ on {differ}")


if __name__ == "__main__":
    main()
