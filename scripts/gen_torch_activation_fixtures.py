"""Generates crates/nabla-nn/tests/fixtures/activations.json: PyTorch reference values for nabla-nn's
Linear, a Sequential(Linear, Tanh, Linear) and every activation module of nabla_nn::activation.

Every case builds the PyTorch module in float64 with a fixed seed and records

    {"name", "module", "config": {...}, "state": {state_dict name: tensor},
     "input": tensor, "cotangent": tensor, "output": tensor,
     "grads": {"input": tensor, <parameter name>: tensor}}

where the gradients are those of sum(output * cotangent). A tensor is {"shape": [...], "data": [...]}
(row-major). Activation inputs include exact kinks (0), the Softplus thresholds, and large magnitudes
(+-30, +-1e3); every recorded value is finite.

Run:  python3 scripts/gen_torch_activation_fixtures.py
"""

from __future__ import annotations

import json
import math
import os

import torch
import torch.nn as nn

torch.set_default_dtype(torch.float64)
OUT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)),
    "..", "crates", "nabla-nn", "tests", "fixtures", "activations.json",
)


def enc(t: torch.Tensor) -> dict:
    data = t.detach().reshape(-1).tolist()
    assert all(math.isfinite(v) for v in data), "non-finite reference value"
    return {"shape": list(t.shape), "data": data}


def case(name: str, module_name: str, config: dict, module: nn.Module, x: torch.Tensor) -> dict:
    x = x.clone().requires_grad_(True)
    y = module(x)
    cot = torch.randn_like(y)
    params = dict(module.named_parameters())
    grads = torch.autograd.grad((y * cot).sum(), [x] + list(params.values()))
    return {
        "name": name,
        "module": module_name,
        "config": config,
        "state": {k: enc(v) for k, v in module.state_dict().items()},
        "input": enc(x),
        "cotangent": enc(cot),
        "output": enc(y),
        "grads": dict(zip(["input"] + list(params), map(enc, grads))),
    }


def big(shape) -> torch.Tensor:
    """Normal values with some of them replaced by +-30 and +-1e3."""
    x = torch.randn(shape)
    flat = x.view(-1)
    for i, v in zip(range(0, flat.numel(), 3), [30.0, -1e3, -30.0, 1e3]):
        flat[i] = v
    return x


def linear_cases() -> list[dict]:
    out = []
    for bias in (True, False):
        for rank, shape in ((1, [3]), (2, [5, 3]), (3, [2, 4, 3])):
            torch.manual_seed(10 + rank + 3 * bias)
            m = nn.Linear(3, 4, bias=bias)
            x = torch.randn(shape)
            tag = "bias" if bias else "nobias"
            out.append(case(f"linear_{tag}_rank{rank}", "Linear",
                            {"in_features": 3, "out_features": 4, "bias": bias}, m, x))
    torch.manual_seed(20)
    m = nn.Linear(6, 2)
    out.append(case("linear_large_inputs", "Linear",
                    {"in_features": 6, "out_features": 2, "bias": True}, m, big([3, 6])))
    torch.manual_seed(21)
    seq = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
    out.append(case("sequential_linear_tanh_linear", "Sequential",
                    {"sizes": [3, 5, 2]}, seq, torch.randn(4, 3)))
    return out


def activation_input() -> torch.Tensor:
    """[2, 3, 4]: kinks, Softplus thresholds (beta 2 threshold 1 switches at 0.5, the default at 20),
    large magnitudes, then normal values."""
    special = [-1e3, -30.0, -5.0, -1.0, -0.5, 0.0, 0.25, 0.5, 0.75, 1.0, 5.0, 20.0, 30.0, 1e3, -0.1, 25.0]
    torch.manual_seed(3)
    rest = (torch.randn(24 - len(special)) * 2).tolist()
    return torch.tensor(special + rest).reshape(2, 3, 4)


def activation_cases() -> list[dict]:
    specs = [
        ("identity", "Identity", {}, nn.Identity()),
        ("relu", "ReLU", {}, nn.ReLU()),
        ("tanh", "Tanh", {}, nn.Tanh()),
        ("sigmoid", "Sigmoid", {}, nn.Sigmoid()),
        ("silu", "SiLU", {}, nn.SiLU()),
        ("gelu", "GELU", {"approximate": "none"}, nn.GELU()),
        ("gelu_tanh", "GELU", {"approximate": "tanh"}, nn.GELU(approximate="tanh")),
        ("leaky_relu_default", "LeakyReLU", {}, nn.LeakyReLU()),
        ("leaky_relu_0.2", "LeakyReLU", {"negative_slope": 0.2}, nn.LeakyReLU(0.2)),
        ("elu_default", "ELU", {}, nn.ELU()),
        ("elu_0.5", "ELU", {"alpha": 0.5}, nn.ELU(alpha=0.5)),
        ("softplus_default", "Softplus", {}, nn.Softplus()),
        ("softplus_beta2_threshold1", "Softplus", {"beta": 2.0, "threshold": 1.0},
         nn.Softplus(beta=2.0, threshold=1.0)),
        ("softmax_dim0", "Softmax", {"dim": 0}, nn.Softmax(dim=0)),
        ("softmax_dim-1", "Softmax", {"dim": -1}, nn.Softmax(dim=-1)),
        ("log_softmax_dim0", "LogSoftmax", {"dim": 0}, nn.LogSoftmax(dim=0)),
        ("log_softmax_dim-1", "LogSoftmax", {"dim": -1}, nn.LogSoftmax(dim=-1)),
        ("flatten_default", "Flatten", {}, nn.Flatten()),
        ("flatten_0_1", "Flatten", {"start_dim": 0, "end_dim": 1}, nn.Flatten(0, 1)),
    ]
    x = activation_input()
    out = []
    for i, (name, module_name, config, m) in enumerate(specs):
        torch.manual_seed(100 + i)
        out.append(case(name, module_name, config, m, x))
    return out


def main() -> None:
    doc = {
        "generator": "scripts/gen_torch_activation_fixtures.py",
        "torch": torch.__version__,
        "cases": linear_cases() + activation_cases(),
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(doc['cases'])} cases to {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
