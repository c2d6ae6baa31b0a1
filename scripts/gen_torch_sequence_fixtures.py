"""Reference values for nabla-nn's sequence layers (LayerNorm, RNN/LSTM/GRU, MultiheadAttention,
Transformer encoder/decoder layers), computed by PyTorch in float64.

Writes crates/nabla-nn/tests/fixtures/sequence.json. For every case: the module's settings, its
parameters by state_dict name (randomised so that no value is trivial), the inputs, the outputs, and the
gradients of `loss = sum_i sum(output_i * weight_i)` (fixed random `weight_i`, stored as "loss_weights")
with respect to every input marked differentiable and every parameter. Modules run in eval mode.

Run from the repository root: python3 scripts/gen_torch_sequence_fixtures.py
"""

import json
import math
import os

import torch
from torch import nn

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)

OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "nabla-nn", "tests", "fixtures", "sequence.json")


def enc(t):
    """A tensor as {"shape", "dtype", "data"} (flat row-major data)."""
    t = t.detach()
    if t.dtype == torch.bool:
        return {"shape": list(t.shape), "dtype": "bool", "data": [int(v) for v in t.flatten().tolist()]}
    # JSON has no infinities: non-finite values are written as the strings "inf", "-inf", "nan".
    data = [v if math.isfinite(v) else str(v) for v in t.flatten().tolist()]
    return {"shape": list(t.shape), "dtype": "f64", "data": data}


def randomise(module):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.empty_like(p).uniform_(-0.6, 0.6))


def case(module, config, inputs, diff, run):
    """`inputs`: name -> tensor; `diff`: names of inputs to differentiate; `run(module, inputs)` returns
    a tuple of output tensors."""
    randomise(module)
    module.eval()
    inputs = {k: (v.clone().requires_grad_(True) if k in diff else v) for k, v in inputs.items()}
    outputs = run(module, inputs)
    weights = [torch.randn_like(o) for o in outputs]
    loss = sum((o * w).sum() for o, w in zip(outputs, weights))
    params = dict(module.named_parameters())
    wrt = [inputs[k] for k in diff] + list(params.values())
    grads = torch.autograd.grad(loss, wrt)
    return {
        "config": config,
        "params": {k: enc(v) for k, v in module.state_dict().items()},
        "inputs": {k: enc(v) for k, v in inputs.items()},
        "outputs": [enc(o) for o in outputs],
        "loss_weights": [enc(w) for w in weights],
        "input_grads": {k: enc(g) for k, g in zip(diff, grads[: len(diff)])},
        "param_grads": {k: enc(g) for k, g in zip(params.keys(), grads[len(diff):])},
    }


def causal_bool(n):
    return torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)


cases = {}

# LayerNorm over two trailing dimensions, and one without bias.
cases["layer_norm"] = case(
    nn.LayerNorm([3, 4], eps=1e-5), {"normalized_shape": [3, 4], "eps": 1e-5, "bias": True},
    {"x": torch.randn(2, 3, 4)}, ["x"], lambda m, i: (m(i["x"]),))
cases["layer_norm_nobias"] = case(
    nn.LayerNorm([5], eps=1e-3, bias=False), {"normalized_shape": [5], "eps": 1e-3, "bias": False},
    {"x": torch.randn(3, 5) * 3 + 1}, ["x"], lambda m, i: (m(i["x"]),))

# Recurrent layers.
def rnn_case(kind, cfg, x_shape, with_state, **extra):
    cls = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}[kind]
    m = cls(cfg["input_size"], cfg["hidden_size"], num_layers=cfg["num_layers"], bias=cfg["bias"],
            batch_first=cfg["batch_first"], dropout=0.0, bidirectional=cfg["bidirectional"], **extra)
    d = 2 if cfg["bidirectional"] else 1
    batched = len(x_shape) == 3
    n = x_shape[0 if cfg["batch_first"] else 1] if batched else None
    state_shape = [d * cfg["num_layers"]] + ([n] if batched else []) + [cfg["hidden_size"]]
    inputs = {"x": torch.randn(*x_shape)}
    if with_state:
        inputs["h0"] = torch.randn(*state_shape)
        if kind == "lstm":
            inputs["c0"] = torch.randn(*state_shape)

    def run(m, i):
        if kind == "lstm":
            out, (h, c) = m(i["x"], (i["h0"], i["c0"]) if with_state else None)
            return out, h, c
        out, h = m(i["x"], i["h0"] if with_state else None)
        return out, h

    config = dict(cfg, kind=kind, **{k: v for k, v in extra.items()})
    return case(m, config, inputs, list(inputs.keys()), run)


def rnn_cfg(**kw):
    cfg = {"input_size": 3, "hidden_size": 4, "num_layers": 1, "bias": True, "batch_first": False,
           "bidirectional": False}
    cfg.update(kw)
    return cfg


cases["rnn_tanh"] = rnn_case("rnn", rnn_cfg(num_layers=2, bidirectional=True), [5, 2, 3], True,
                             nonlinearity="tanh")
cases["rnn_relu"] = rnn_case("rnn", rnn_cfg(batch_first=True, bias=False), [2, 4, 3], False,
                             nonlinearity="relu")
cases["lstm"] = rnn_case("lstm", rnn_cfg(num_layers=2, bidirectional=True, batch_first=True), [2, 5, 3], True)
cases["lstm_unbatched"] = rnn_case("lstm", rnn_cfg(), [4, 3], False)
cases["gru"] = rnn_case("gru", rnn_cfg(num_layers=2, bidirectional=True), [5, 2, 3], True)
cases["gru_unbatched"] = rnn_case("gru", rnn_cfg(num_layers=2), [4, 3], True)

# MultiheadAttention: self-attention with a causal bool mask and key padding; cross-attention with a
# float mask, batch first and per-head weights.
E, H = 6, 2
kpm = torch.tensor([[False, False, False, False], [False, False, False, True]])
cases["mha_self"] = case(
    nn.MultiheadAttention(E, H), {"embed_dim": E, "num_heads": H, "batch_first": False,
                                  "average_attn_weights": True},
    {"x": torch.randn(4, 2, E), "attn_mask": causal_bool(4), "key_padding_mask": kpm}, ["x"],
    lambda m, i: m(i["x"], i["x"], i["x"], key_padding_mask=i["key_padding_mask"], need_weights=True,
                   attn_mask=i["attn_mask"]))
cases["mha_cross"] = case(
    nn.MultiheadAttention(E, H, batch_first=True), {"embed_dim": E, "num_heads": H, "batch_first": True,
                                                    "average_attn_weights": False},
    {"q": torch.randn(2, 3, E), "k": torch.randn(2, 5, E), "v": torch.randn(2, 5, E),
     "attn_mask": torch.randn(3, 5),
     "key_padding_mask": torch.tensor([[False, True, False, False, False], [False] * 4 + [True]])},
    ["q", "k", "v"],
    lambda m, i: m(i["q"], i["k"], i["v"], key_padding_mask=i["key_padding_mask"], need_weights=True,
                   attn_mask=i["attn_mask"], average_attn_weights=False))

# Transformer layers, post-norm and pre-norm.
FF = 8


def tcfg(norm_first, activation, batch_first):
    return {"d_model": E, "nhead": H, "dim_feedforward": FF, "dropout": 0.1, "activation": activation,
            "layer_norm_eps": 1e-5, "batch_first": batch_first, "norm_first": norm_first}


def make(cls, cfg):
    return cls(cfg["d_model"], cfg["nhead"], dim_feedforward=cfg["dim_feedforward"], dropout=cfg["dropout"],
               activation=cfg["activation"], layer_norm_eps=cfg["layer_norm_eps"],
               batch_first=cfg["batch_first"], norm_first=cfg["norm_first"])


for norm_first, act, bf in [(False, "relu", False), (True, "gelu", True)]:
    cfg = tcfg(norm_first, act, bf)
    src = torch.randn(2, 4, E) if bf else torch.randn(4, 2, E)
    cases[f"encoder_{'pre' if norm_first else 'post'}"] = case(
        make(nn.TransformerEncoderLayer, cfg), cfg,
        {"src": src, "src_mask": causal_bool(4), "src_key_padding_mask": kpm}, ["src"],
        lambda m, i: (m(i["src"], src_mask=i["src_mask"], src_key_padding_mask=i["src_key_padding_mask"]),))

    tgt = torch.randn(2, 4, E) if bf else torch.randn(4, 2, E)
    memory = torch.randn(2, 5, E) if bf else torch.randn(5, 2, E)
    cases[f"decoder_{'pre' if norm_first else 'post'}"] = case(
        make(nn.TransformerDecoderLayer, cfg), cfg,
        {"tgt": tgt, "memory": memory,
         "tgt_mask": nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64),
         "memory_mask": torch.tensor([[False, False, True, False, False]] * 4),
         "tgt_key_padding_mask": kpm,
         "memory_key_padding_mask": torch.tensor([[False] * 5, [False, False, False, True, True]])},
        ["tgt", "memory"],
        lambda m, i: (m(i["tgt"], i["memory"], tgt_mask=i["tgt_mask"], memory_mask=i["memory_mask"],
                        tgt_key_padding_mask=i["tgt_key_padding_mask"],
                        memory_key_padding_mask=i["memory_key_padding_mask"]),))

os.makedirs(os.path.dirname(OUT), exist_ok=True)
with open(OUT, "w") as f:
    json.dump({"generator": "scripts/gen_torch_sequence_fixtures.py", "torch": torch.__version__,
               "cases": cases}, f, separators=(",", ":"))
print(f"wrote {OUT}: {os.path.getsize(OUT)} bytes, {len(cases)} cases")
