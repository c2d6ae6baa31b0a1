"""Generates crates/nabla-nn/tests/fixtures/layers.json: PyTorch reference values for the nabla-nn
convolution, pooling, normalisation, embedding, bilinear and positional layers.

Every case builds the PyTorch module in float64 with a fixed seed and records

    {"name", "layer", "config": {...}, "state": {state_dict name: tensor},
     "input": tensor, "input2": tensor?, "cotangent": tensor, "output": tensor,
     "grads": {"input": tensor, "input2"?: tensor, <parameter name>: tensor}}

where the gradients are those of sum(output * cotangent). A tensor is {"shape": [...], "data": [...]}
(row-major; int64 data for embedding indices). BatchNorm cases instead hold "steps" (one such record per
training step, plus "state" after the step) and "eval" ({"input", "output"} in eval mode).

Run:  python3 scripts/gen_torch_layer_fixtures.py
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
    "..", "crates", "nabla-nn", "tests", "fixtures", "layers.json",
)


def enc(t: torch.Tensor) -> dict:
    t = t.detach()
    data = t.reshape(-1).tolist()
    return {"shape": list(t.shape), "data": data}


def randomize(module: nn.Module) -> None:
    """Non-default parameter values, so scale/shift gradients are exercised."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p))


def run(module, inputs: list[torch.Tensor], grad_inputs: bool = True) -> dict:
    inputs = [x.clone().requires_grad_(grad_inputs and x.is_floating_point()) for x in inputs]
    y = module(*inputs)
    cot = torch.randn_like(y)
    params = dict(module.named_parameters())
    wrt = [x for x in inputs if x.requires_grad] + list(params.values())
    grads = torch.autograd.grad((y * cot).sum(), wrt, allow_unused=True)
    out = {"cotangent": enc(cot), "output": enc(y), "grads": {}}
    names = ["input", "input2"][: len([x for x in inputs if x.requires_grad])] + list(params)
    for name, g in zip(names, grads):
        if g is not None:
            out["grads"][name] = enc(g)
    out["input"] = enc(inputs[0])
    if len(inputs) > 1:
        out["input2"] = enc(inputs[1])
    return out


def case(name: str, layer: str, config: dict, module: nn.Module, inputs, randomize_params=False) -> dict:
    if randomize_params:
        randomize(module)
    state = {k: enc(v) for k, v in module.state_dict().items()}
    rec = {"name": name, "layer": layer, "config": config, "state": state}
    rec.update(run(module, inputs))
    return rec


def conv_cases() -> list[dict]:
    out = []
    specs = [
        ("conv2d_basic", dict(in_channels=3, out_channels=4, kernel_size=[3, 3]), [1, 3, 6, 7]),
        ("conv2d_stride_pad", dict(in_channels=2, out_channels=3, kernel_size=[3, 2], stride=[2, 1],
                                   padding=[1, 2]), [1, 2, 7, 6]),
        ("conv2d_dilation_groups", dict(in_channels=4, out_channels=6, kernel_size=[2, 3], dilation=[2, 1],
                                        groups=2, padding=[1, 0], bias=False), [1, 4, 6, 5]),
        ("conv2d_unbatched", dict(in_channels=2, out_channels=3, kernel_size=[3, 3], padding=[1, 1]),
         [2, 5, 5]),
    ]
    for name, cfg, shape in specs:
        m = nn.Conv2d(**{k: tuple(v) if isinstance(v, list) else v for k, v in cfg.items()})
        out.append(case(name, "Conv2d", cfg, m, [torch.randn(shape)]))
    specs1 = [
        ("conv1d_basic", dict(in_channels=3, out_channels=4, kernel_size=3), [2, 3, 9]),
        ("conv1d_all", dict(in_channels=4, out_channels=2, kernel_size=3, stride=2, padding=2, dilation=2,
                            groups=2), [2, 4, 11]),
        ("conv1d_unbatched", dict(in_channels=2, out_channels=3, kernel_size=2, bias=False), [2, 6]),
    ]
    for name, cfg, shape in specs1:
        out.append(case(name, "Conv1d", cfg, nn.Conv1d(**cfg), [torch.randn(shape)]))
    spect = [
        ("convt2d_basic", dict(in_channels=3, out_channels=2, kernel_size=[3, 3]), [2, 3, 4, 5]),
        ("convt2d_all", dict(in_channels=4, out_channels=6, kernel_size=[3, 2], stride=[2, 3], padding=[1, 0],
                             output_padding=[1, 2], groups=2), [1, 4, 2, 3]),
        ("convt2d_dilation", dict(in_channels=2, out_channels=2, kernel_size=[2, 2], dilation=[2, 2],
                                  output_padding=[1, 1], padding=[1, 1], bias=False), [2, 2, 4, 4]),
        ("convt2d_unbatched", dict(in_channels=2, out_channels=3, kernel_size=[2, 3], stride=[2, 2]),
         [2, 3, 3]),
    ]
    for name, cfg, shape in spect:
        m = nn.ConvTranspose2d(**{k: tuple(v) if isinstance(v, list) else v for k, v in cfg.items()})
        out.append(case(name, "ConvTranspose2d", cfg, m, [torch.randn(shape)]))
    return out


def pool_cases() -> list[dict]:
    out = []

    def t(v):
        return tuple(v) if isinstance(v, list) else v

    specs = [
        ("maxpool2d_basic", "MaxPool2d", dict(kernel_size=[3, 3]), [2, 3, 7, 8]),
        ("maxpool2d_all", "MaxPool2d", dict(kernel_size=[3, 2], stride=[2, 1], padding=[1, 1], dilation=[1, 2],
                                            ceil_mode=True), [1, 2, 8, 7]),
        ("maxpool2d_ceil", "MaxPool2d", dict(kernel_size=[2, 2], stride=[2, 2], ceil_mode=True), [1, 2, 5, 5]),
        ("maxpool2d_unbatched", "MaxPool2d", dict(kernel_size=[2, 3], stride=[1, 2], padding=[1, 1]), [2, 4, 5]),
        ("maxpool1d_pad", "MaxPool1d", dict(kernel_size=3, stride=2, padding=1), [2, 3, 10]),
        ("maxpool1d_dilation_ceil", "MaxPool1d", dict(kernel_size=2, dilation=2, ceil_mode=True), [2, 2, 9]),
        ("avgpool2d_ceil_include", "AvgPool2d", dict(kernel_size=[3, 3], stride=[2, 2], padding=[1, 1],
                                                     ceil_mode=True, count_include_pad=True), [2, 2, 7, 8]),
        ("avgpool2d_exclude", "AvgPool2d", dict(kernel_size=[3, 2], stride=[2, 2], padding=[1, 1],
                                                count_include_pad=False), [1, 3, 6, 7]),
        ("avgpool2d_ceil_exclude", "AvgPool2d", dict(kernel_size=[3, 3], stride=[2, 2], padding=[1, 1],
                                                     ceil_mode=True, count_include_pad=False), [1, 2, 6, 6]),
        ("avgpool2d_divisor", "AvgPool2d", dict(kernel_size=[2, 2], divisor_override=3), [1, 1, 4, 5]),
        ("avgpool1d_include", "AvgPool1d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                                count_include_pad=True), [2, 3, 10]),
        ("avgpool1d_exclude", "AvgPool1d", dict(kernel_size=4, stride=3, padding=2, count_include_pad=False),
         [2, 2, 11]),
        ("adaptive_3x2", "AdaptiveAvgPool2d", dict(output_size=[3, 2]), [2, 3, 7, 5]),
        ("adaptive_overlap", "AdaptiveAvgPool2d", dict(output_size=[4, 4]), [1, 2, 5, 6]),
        ("adaptive_global", "AdaptiveAvgPool2d", dict(output_size=[1, 1]), [2, 3, 4, 3]),
    ]
    for name, layer, cfg, shape in specs:
        m = getattr(nn, layer)(**{k: t(v) for k, v in cfg.items()})
        # Normal samples: ties inside a max-pooling window have probability zero.
        out.append(case(name, layer, cfg, m, [torch.randn(shape)]))
    # Ties: PyTorch sends the whole gradient to the first maximum of each window.
    x = torch.tensor([[[1.0, 1.0, 2.0, 2.0, 0.5, 0.5, 0.5]]])
    out.append(case("maxpool1d_ties", "MaxPool1d", dict(kernel_size=3, stride=2, padding=1),
                    nn.MaxPool1d(3, 2, 1), [x]))
    return out


def batchnorm_cases() -> list[dict]:
    out = []
    specs = [
        ("bn1d_2d", "BatchNorm1d", dict(num_features=3), [4, 3]),
        ("bn1d_3d_cumulative", "BatchNorm1d", dict(num_features=3, momentum=None), [4, 3, 3]),
        ("bn2d_momentum", "BatchNorm2d", dict(num_features=2, momentum=0.3, eps=1e-3), [3, 2, 3, 4]),
        ("bn2d_plain", "BatchNorm2d", dict(num_features=3, affine=False, track_running_stats=False),
         [2, 3, 3, 3]),
    ]
    for name, layer, cfg, shape in specs:
        m = getattr(nn, layer)(**cfg)
        randomize(m)
        rec = {"name": name, "layer": layer, "config": cfg,
               "state": {k: enc(v) for k, v in m.state_dict().items()}, "steps": []}
        m.train()
        for _ in range(3):
            step = run(m, [torch.randn(shape) * 2.0 + 0.5])
            step["state"] = {k: enc(v) for k, v in m.state_dict().items()}
            rec["steps"].append(step)
        m.eval()
        x = torch.randn(shape)
        rec["eval"] = {"input": enc(x), "output": enc(m(x))}
        out.append(rec)
    return out


def norm_cases() -> list[dict]:
    out = []
    specs = [
        ("groupnorm_basic", "GroupNorm", dict(num_groups=2, num_channels=4), [2, 4, 3, 5]),
        ("groupnorm_plain", "GroupNorm", dict(num_groups=3, num_channels=6, eps=1e-3, affine=False), [3, 6, 4]),
        ("groupnorm_rank2", "GroupNorm", dict(num_groups=1, num_channels=3), [2, 3]),
        ("rmsnorm_default_eps", "RMSNorm", dict(normalized_shape=[5]), [2, 3, 5]),
        ("rmsnorm_2d_eps", "RMSNorm", dict(normalized_shape=[3, 4], eps=1e-3), [2, 3, 4]),
        ("rmsnorm_plain", "RMSNorm", dict(normalized_shape=[4], elementwise_affine=False), [3, 4]),
    ]
    for name, layer, cfg, shape in specs:
        m = getattr(nn, layer)(**cfg)
        out.append(case(name, layer, cfg, m, [torch.randn(shape)], randomize_params=True))
    return out


def embedding_cases() -> list[dict]:
    out = []
    m = nn.Embedding(10, 4)
    idx = torch.tensor([[1, 3, 9], [3, 0, 1]])
    out.append(case("embedding_basic", "Embedding", dict(num_embeddings=10, embedding_dim=4), m, [idx]))
    m = nn.Embedding(7, 3, padding_idx=-2)
    with torch.no_grad():
        m.weight.copy_(torch.randn(7, 3))  # a non-zero padding row: its value is used, never trained
    idx = torch.tensor([[[5, 1, 5], [0, 6, 2]], [[5, 5, 3], [1, 1, 4]]])
    out.append(case("embedding_padding", "Embedding", dict(num_embeddings=7, embedding_dim=3, padding_idx=-2),
                    m, [idx]))
    return out


def bilinear_cases() -> list[dict]:
    out = []
    specs = [
        ("bilinear_basic", dict(in1_features=3, in2_features=4, out_features=5), [6, 3], [6, 4]),
        ("bilinear_nobias_batched", dict(in1_features=2, in2_features=3, out_features=2, bias=False),
         [2, 3, 2], [2, 3, 3]),
    ]
    for name, cfg, s1, s2 in specs:
        out.append(case(name, "Bilinear", cfg, nn.Bilinear(**cfg), [torch.randn(s1), torch.randn(s2)]))
    return out


class Sinusoidal(nn.Module):
    """The "Attention is all you need" table as in the PyTorch tutorial (odd dims allowed)."""

    def __init__(self, max_len, dim, batch_first):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1).double()
        div_term = torch.exp(torch.arange(0, dim, 2).double() * (-math.log(10000.0) / dim))
        pe = torch.zeros(max_len, dim)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term[: dim // 2])
        self.pe, self.batch_first = pe, batch_first

    def forward(self, x):
        seq = x.shape[1] if self.batch_first else x.shape[0]
        pe = self.pe[:seq]
        return x + (pe if self.batch_first else pe.unsqueeze(1))


class Learned(nn.Module):
    def __init__(self, max_len, dim, batch_first):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(max_len, dim))
        self.batch_first = batch_first

    def forward(self, x):
        seq = x.shape[1] if self.batch_first else x.shape[0]
        pe = self.weight[:seq]
        return x + (pe if self.batch_first else pe.unsqueeze(1))


def positional_cases() -> list[dict]:
    specs = [
        ("sinusoidal_batch_first", Sinusoidal, dict(max_len=10, dim=6, batch_first=True), [2, 7, 6]),
        ("sinusoidal_seq_first_odd", Sinusoidal, dict(max_len=5, dim=5, batch_first=False), [4, 2, 5]),
        ("learned_batch_first", Learned, dict(max_len=6, dim=4, batch_first=True), [3, 6, 4]),
        ("learned_seq_first", Learned, dict(max_len=8, dim=3, batch_first=False), [5, 2, 3]),
    ]
    layer = {Sinusoidal: "SinusoidalPositionalEmbedding", Learned: "LearnedPositionalEmbedding"}
    return [case(name, layer[cls], cfg, cls(**cfg), [torch.randn(shape)]) for name, cls, cfg, shape in specs]


def main() -> None:
    torch.manual_seed(0)
    cases = []
    for make in (conv_cases, pool_cases, batchnorm_cases, norm_cases, embedding_cases, bilinear_cases,
                 positional_cases):
        cases.extend(make())
    doc = {"generator": "scripts/gen_torch_layer_fixtures.py", "torch": torch.__version__, "cases": cases}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    print(f"wrote {len(cases)} cases to {os.path.normpath(OUT)} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
