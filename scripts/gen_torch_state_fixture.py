#!/usr/bin/env python3
"""Writes a PyTorch state dict as safetensors, for nabla-nn's loading test.

    python3 scripts/gen_torch_state_fixture.py

Writes crates/nabla-nn/tests/fixtures/torch_mlp.safetensors (the state dict of
nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)) in float32, saved by
safetensors.torch.save_file) and torch_mlp.json (an input batch and the model's output on it), so the
test checks that a file written by PyTorch loads by name into the equivalent nabla model and computes
the same thing. Needs torch and safetensors (pip install torch safetensors).
"""

import json
import os

import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "nabla-nn", "tests", "fixtures")


def main():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    x = torch.randn(5, 4)
    with torch.no_grad():
        y = model(x)
    os.makedirs(OUT, exist_ok=True)
    save_file(model.state_dict(), os.path.join(OUT, "torch_mlp.safetensors"))
    with open(os.path.join(OUT, "torch_mlp.json"), "w") as fh:
        json.dump({"input": x.flatten().tolist(), "input_shape": list(x.shape), "output": y.flatten().tolist()}, fh)


if __name__ == "__main__":
    main()
