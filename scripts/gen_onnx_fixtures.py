"""Checks nabla's ONNX export with ONNX Runtime and writes the fixtures the Rust test
(crates/nabla-onnx/tests/onnxruntime.rs) compares against, so that the test needs no Python.

    pip install onnx onnxruntime safetensors numpy
    python scripts/gen_onnx_fixtures.py

It runs `cargo run -p nabla-onnx --example onnx_fixtures`, which writes for each case (the model
zoo's tiny ResNet, GPT-2, BERT and ViT, and a sample of the primitive catalogue) the exported
`<case>.onnx` and `<case>_inputs.safetensors` (inputs `in0`, ... and nabla's outputs `out0`, ...
at batch size 4, which the dynamic-batch export never traced at). Then, per case: the ONNX checker
(with full shape inference) accepts the model, ONNX Runtime runs it on the inputs, its outputs must
match nabla's (floats to 2e-5 of each output's scale, integers exactly), and they are saved as
`<case>_ort.safetensors`. The Rust test re-exports each case, requires the same bytes as the
committed `.onnx` file, and compares nabla's outputs with these.
"""

import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from safetensors.numpy import load_file, save_file

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "crates", "nabla-onnx", "tests", "fixtures")


def check_case(stem):
    path = os.path.join(OUT, f"{stem}.onnx")
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    io = load_file(os.path.join(OUT, f"{stem}_inputs.safetensors"))
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {i.name: io[f"in{k}"] for k, i in enumerate(session.get_inputs())}
    outputs = session.run(None, feeds)
    worst = 0.0
    for k, got in enumerate(outputs):
        want = io[f"out{k}"]
        assert got.shape == want.shape, f"{stem} output {k}: shape {got.shape} vs nabla's {want.shape}"
        if np.issubdtype(want.dtype, np.floating):
            scale = max(1.0, float(np.abs(want).max(initial=0.0)))
            err = float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max(initial=0.0)) / scale
            assert err <= 2e-5, f"{stem} output {k}: off by {err:.3g} of its scale"
            worst = max(worst, err)
        else:
            assert np.array_equal(got, want), f"{stem} output {k}: integers differ"
    dims = [[d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input]
    save_file({f"out{k}": np.ascontiguousarray(o) for k, o in enumerate(outputs)},
              os.path.join(OUT, f"{stem}_ort.safetensors"))
    print(f"{stem}: {len(model.graph.node)} nodes, inputs {dims}, worst relative error {worst:.2g}")


def main():
    subprocess.run(["cargo", "run", "--quiet", "-p", "nabla-onnx", "--example", "onnx_fixtures"], cwd=ROOT,
                   check=True)
    stems = sorted(f[: -len(".onnx")] for f in os.listdir(OUT) if f.endswith(".onnx"))
    for stem in stems:
        check_case(stem)
    print(f"ONNX Runtime {ort.__version__} agrees with nabla on {len(stems)} exported models")


if __name__ == "__main__":
    sys.exit(main())
