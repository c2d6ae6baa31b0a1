#!/usr/bin/env python3
"""Writes crates/nabla-nn/tests/fixtures/losses.json: PyTorch (float64, fixed seeds) values and
gradients of the losses of `nabla_nn::loss`, for crates/nabla-nn/tests/losses_torch.rs.

Each case names the function (`fn`), its options (`opts`), its tensors (`inputs`: shape, dtype,
data), the loss (`output`) and the gradient of `sum(loss)` (a seed of ones for reduction 'none')
with respect to each differentiable tensor (`grads`). Run: python3 scripts/gen_torch_loss_fixtures.py
"""
import json
import math
import os

import torch
import torch.nn.functional as F

torch.manual_seed(0)
DT = torch.float64
OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "nabla-nn", "tests", "fixtures", "losses.json")
REDUCTIONS = ["none", "mean", "sum"]
cases = []


def enc(t):
    t = t.detach()
    dtype = "i64" if t.dtype == torch.int64 else "f64"
    data = t.reshape(-1).tolist()
    return {"shape": list(t.shape), "dtype": dtype, "data": data}


def add(name, fn, opts, inputs, diff, call):
    """inputs: dict name -> tensor; diff: names to differentiate; call(dict) -> loss."""
    ts = {k: (v.clone().requires_grad_(True) if k in diff else v.clone()) for k, v in inputs.items()}
    loss = call(ts)
    loss.backward(torch.ones_like(loss))
    out = enc(loss)
    assert all(math.isfinite(v) for v in out["data"]), name
    cases.append({
        "name": name,
        "fn": fn,
        "opts": opts,
        "inputs": {k: enc(v) for k, v in inputs.items()},
        "output": out,
        "grads": {k: enc(ts[k].grad) for k in diff},
    })


def randn(*s):
    return torch.randn(*s, dtype=DT)


# Pointwise regression losses.
x, y = randn(3, 4), randn(3, 4)
y[0, 0] = x[0, 0]  # a zero difference: PyTorch's |d|' = sign(0) = 0
y[1, 1] = x[1, 1] + 0.25
for r in REDUCTIONS:
    add(f"mse_{r}", "mse_loss", {"reduction": r}, {"input": x, "target": y}, ["input", "target"],
        lambda t, r=r: F.mse_loss(t["input"], t["target"], reduction=r))
    add(f"l1_{r}", "l1_loss", {"reduction": r}, {"input": x, "target": y}, ["input", "target"],
        lambda t, r=r: F.l1_loss(t["input"], t["target"], reduction=r))
    for beta in [1.0, 0.5, 0.0]:
        add(f"smooth_l1_{r}_beta{beta}", "smooth_l1_loss", {"reduction": r, "beta": beta},
            {"input": x, "target": y}, ["input", "target"],
            lambda t, r=r, b=beta: F.smooth_l1_loss(t["input"], t["target"], reduction=r, beta=b))
    for delta in [1.0, 0.7]:
        add(f"huber_{r}_delta{delta}", "huber_loss", {"reduction": r, "delta": delta},
            {"input": x, "target": y}, ["input", "target"],
            lambda t, r=r, d=delta: F.huber_loss(t["input"], t["target"], reduction=r, delta=d))

# Cross-entropy and NLL with class indices.
N, C = 5, 4
logits = randn(N, C) * 2
logits_big = logits.clone()
logits_big[0] = torch.tensor([1e4, -1e4, 0.0, 5.0])
logits_big[1] = torch.tensor([-1e4, -1e4, -1e4, 1e4])
tgt = torch.tensor([0, 3, 1, 2, 3])
tgt_ign = torch.tensor([0, -100, 1, 2, -100])
tgt_ign1 = torch.tensor([0, 1, 1, 2, 3])
w = torch.rand(C, dtype=DT) + 0.5
spatial = randn(2, C, 3, 2)
tgt_spatial = torch.randint(0, C, (2, 3, 2))
tgt_spatial[0, 1, 1] = -100
single = randn(C)
probs = torch.softmax(randn(N, C), dim=1)
probs_spatial = torch.softmax(randn(2, C, 3, 2), dim=1)

ce_variants = [
    ("plain", {}, logits, tgt),
    ("big", {}, logits_big, tgt),
    ("weight", {"weight": w}, logits, tgt),
    ("ignore", {}, logits, tgt_ign),
    ("ignore1", {"ignore_index": 1}, logits, tgt_ign1),
    ("weight_ignore", {"weight": w}, logits, tgt_ign),
    ("ls", {"label_smoothing": 0.2}, logits, tgt),
    ("ls_ignore", {"label_smoothing": 0.1}, logits, tgt_ign),
    ("ls_weight_ignore", {"label_smoothing": 0.3, "weight": w}, logits, tgt_ign),
    ("spatial", {}, spatial, tgt_spatial),
    ("spatial_weight_ls", {"weight": w, "label_smoothing": 0.15}, spatial, tgt_spatial),
    ("single", {}, single, torch.tensor(2)),
    ("single_ls_weight", {"weight": w, "label_smoothing": 0.25}, single, torch.tensor(1)),
    ("probs", {}, logits, probs),
    ("probs_big", {}, logits_big, probs),
    ("probs_weight", {"weight": w}, logits, probs),
    ("probs_ls_weight", {"weight": w, "label_smoothing": 0.2}, logits, probs),
    ("probs_spatial", {"label_smoothing": 0.1}, spatial, probs_spatial),
]


def split_opts(opts):
    """The JSON options and the tensors among them."""
    js = {k: v for k, v in opts.items() if not torch.is_tensor(v)}
    tensors = {k: v for k, v in opts.items() if torch.is_tensor(v)}
    return js, tensors


for r in REDUCTIONS:
    for name, opts, inp, target in ce_variants:
        js, tensors = split_opts(opts)
        js["reduction"] = r
        diff = ["input"] + (["target"] if target.is_floating_point() else [])

        def call(t, opts=opts, r=r):
            kw = {k: (t[k] if torch.is_tensor(v) else v) for k, v in opts.items()}
            return F.cross_entropy(t["input"], t["target"], reduction=r, **kw)

        add(f"ce_{name}_{r}", "cross_entropy", js, {"input": inp, "target": target, **tensors}, diff, call)

    for name, opts, inp, target in ce_variants:
        if target.is_floating_point() or "label_smoothing" in opts or name == "big":
            continue
        js, tensors = split_opts(opts)
        js["reduction"] = r
        logp = torch.log_softmax(inp, dim=0 if inp.dim() == 1 else 1)

        def call(t, opts=opts, r=r):
            kw = {k: (t[k] if torch.is_tensor(v) else v) for k, v in opts.items()}
            return F.nll_loss(t["input"], t["target"], reduction=r, **kw)

        add(f"nll_{name}_{r}", "nll_loss", js, {"input": logp, "target": target, **tensors}, ["input"], call)

# Binary cross-entropy.
p = torch.rand(3, 4, dtype=DT) * 0.98 + 0.01
bt = torch.rand(3, 4, dtype=DT)
bt[0] = torch.tensor([0.0, 1.0, 0.0, 1.0])
bw = torch.rand(4, dtype=DT) + 0.5
z = randn(3, 4) * 3
z_big = z.clone()
z_big[0] = torch.tensor([1e4, -1e4, 1e4, -1e4])
pw = torch.rand(4, dtype=DT) * 3
for r in REDUCTIONS:
    add(f"bce_{r}", "binary_cross_entropy", {"reduction": r}, {"input": p, "target": bt}, ["input", "target"],
        lambda t, r=r: F.binary_cross_entropy(t["input"], t["target"], reduction=r))
    add(f"bce_weight_{r}", "binary_cross_entropy", {"reduction": r}, {"input": p, "target": bt, "weight": bw},
        ["input", "target"],
        lambda t, r=r: F.binary_cross_entropy(t["input"], t["target"], weight=t["weight"], reduction=r))
    for zname, zz in [("", z), ("big_", z_big)]:
        add(f"bcel_{zname}{r}", "binary_cross_entropy_with_logits", {"reduction": r},
            {"input": zz, "target": bt}, ["input", "target"],
            lambda t, r=r: F.binary_cross_entropy_with_logits(t["input"], t["target"], reduction=r))
        add(f"bcel_{zname}weights_{r}", "binary_cross_entropy_with_logits", {"reduction": r},
            {"input": zz, "target": bt, "weight": bw, "pos_weight": pw}, ["input", "target"],
            lambda t, r=r: F.binary_cross_entropy_with_logits(
                t["input"], t["target"], weight=t["weight"], pos_weight=t["pos_weight"], reduction=r))
    add(f"bcel_posweight_{r}", "binary_cross_entropy_with_logits", {"reduction": r},
        {"input": z, "target": bt, "pos_weight": pw}, ["input", "target"],
        lambda t, r=r: F.binary_cross_entropy_with_logits(t["input"], t["target"], pos_weight=t["pos_weight"], reduction=r))

# KL divergence.
logq = torch.log_softmax(randn(3, 5), dim=1)
pt = torch.softmax(randn(3, 5), dim=1)
pt[0, 2] = 0.0
logpt = torch.log_softmax(randn(3, 5), dim=1)
for r in REDUCTIONS + ["batchmean"]:
    add(f"kl_{r}", "kl_div", {"reduction": r, "log_target": False}, {"input": logq, "target": pt},
        ["input"], lambda t, r=r: F.kl_div(t["input"], t["target"], reduction=r))
    add(f"kl_logt_{r}", "kl_div", {"reduction": r, "log_target": True}, {"input": logq, "target": logpt},
        ["input", "target"], lambda t, r=r: F.kl_div(t["input"], t["target"], reduction=r, log_target=True))

# Pair and triplet losses.
e1, e2 = randn(6, 3), randn(6, 3)
e2[0] = -e1[0] * 0.5  # a very dissimilar pair
cy = torch.tensor([1.0, -1.0, 1.0, -1.0, -1.0, 1.0], dtype=DT)
s1, s2 = randn(6), randn(6)
ry = torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0, -1.0], dtype=DT)
a, pp, nn_ = randn(5, 4), randn(5, 4), randn(5, 4)
for r in REDUCTIONS:
    for m in [0.0, 0.3, -0.2]:
        add(f"cos_{r}_m{m}", "cosine_embedding_loss", {"reduction": r, "margin": m},
            {"input1": e1, "input2": e2, "target": cy}, ["input1", "input2"],
            lambda t, r=r, m=m: F.cosine_embedding_loss(t["input1"], t["input2"], t["target"], margin=m, reduction=r))
        add(f"rank_{r}_m{m}", "margin_ranking_loss", {"reduction": r, "margin": m},
            {"input1": s1, "input2": s2, "target": ry}, ["input1", "input2", "target"],
            lambda t, r=r, m=m: F.margin_ranking_loss(t["input1"], t["input2"], t["target"], margin=m, reduction=r))
    add(f"cos_single_{r}", "cosine_embedding_loss", {"reduction": r, "margin": 0.1},
        {"input1": e1[1], "input2": e2[1], "target": torch.tensor(-1.0, dtype=DT)}, ["input1", "input2"],
        lambda t, r=r: F.cosine_embedding_loss(t["input1"], t["input2"], t["target"], margin=0.1, reduction=r))
    for margin, pnorm, swap, eps in [(1.0, 2.0, False, 1e-6), (1.0, 2.0, True, 1e-6), (2.0, 1.0, False, 1e-6),
                                     (1.5, 3.0, True, 1e-3), (1.0, float("inf"), False, 1e-6),
                                     (0.5, 2.0, True, 0.0)]:
        add(f"triplet_{r}_m{margin}_p{pnorm}_swap{swap}_eps{eps}", "triplet_margin_loss",
            {"reduction": r, "margin": margin, "p": "inf" if math.isinf(pnorm) else pnorm, "swap": swap, "eps": eps},
            {"anchor": a, "positive": pp, "negative": nn_}, ["anchor", "positive", "negative"],
            lambda t, r=r, m=margin, pn=pnorm, s=swap, e=eps: F.triplet_margin_loss(
                t["anchor"], t["positive"], t["negative"], margin=m, p=pn, eps=e, swap=s, reduction=r))

with open(OUT, "w") as f:
    json.dump({"torch": torch.__version__, "cases": cases}, f, separators=(",", ":"))
print(f"{len(cases)} cases, {os.path.getsize(OUT)} bytes -> {os.path.normpath(OUT)}")
