"""``nabla_rs.nn`` layers computed by nabla's Rust layers, against PyTorch's values and gradients in the
Rust crate's fixture (crates/nabla-nn/tests/fixtures/layers.json, written by
scripts/gen_torch_layer_fixtures.py), plus transforms, weight tying, state dicts and errors."""

import json
import os

import numpy as np
import pytest

import nabla_rs as nb
from nabla_rs import nn, optim

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "nabla-nn", "tests", "fixtures")
with open(os.path.join(FIXTURES, "layers.json")) as fh:
    LAYERS = json.load(fh)["cases"]

# nabla's positional embeddings have no PyTorch class to bind them under.
NOT_BOUND = {"SinusoidalPositionalEmbedding", "LearnedPositionalEmbedding"}
BOUND = [c for c in LAYERS if c["layer"] not in NOT_BOUND]


def test_every_fixture_layer_is_bound_or_named():
    assert {c["layer"] for c in LAYERS} - set(nb._nabla.nn.LAYERS) == NOT_BOUND


def arr(t):
    return np.array(t["data"], dtype=np.int64 if all(isinstance(v, int) for v in t["data"]) and t["data"] else np.float64).reshape(t["shape"])


def close(got, want, what, tol=1e-10):
    np.testing.assert_allclose(np.asarray(got), arr(want), rtol=tol, atol=tol, err_msg=what)


def build(case):
    config = {k: (tuple(v) if isinstance(v, list) and k != "normalized_shape" else v) for k, v in case["config"].items()}
    m = getattr(nn, case["layer"])(**config, dtype=nb.float64)
    state = {k: nb.tensor(arr(v)) for k, v in case["state"].items()}
    missing, unexpected = m.load_state_dict(state)
    assert not missing and not unexpected
    return m


def check_step(m, step, name):
    inputs = {k: nb.tensor(arr(step[k])) for k in ("input", "input2") if k in step}
    for x in inputs.values():
        if x.dtype == nb.float64:
            x.requires_grad = True
    y = m(*inputs.values())
    close(y, step["output"], f"{name}: output")
    (y * nb.tensor(arr(step["cotangent"]))).sum().backward()
    for key, want in step["grads"].items():
        got = inputs[key].grad if key in inputs else getattr(m, key).grad
        close(got, want, f"{name}: gradient of {key}")


@pytest.mark.parametrize("case", BOUND, ids=[c["name"] for c in BOUND])
def test_layers_follow_pytorch(case):
    m = build(case)
    if "steps" not in case:
        check_step(m, case, case["name"])
        return
    for k, step in enumerate(case["steps"]):
        for p in m.parameters():
            p.grad = None
        check_step(m, step, f"{case['name']} step {k}")
        for key, want in step["state"].items():
            close(m.state_dict()[key], want, f"{case['name']} step {k}: {key}")
    m.eval()
    close(m(nb.tensor(arr(case["eval"]["input"]))), case["eval"]["output"], f"{case['name']}: eval")


def small_model():
    nb.manual_seed(3)
    return nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1, dtype=nb.float64), nn.GroupNorm(2, 4, dtype=nb.float64), nn.GELU(),
        nn.AvgPool2d(2), nn.Flatten(), nn.Linear(4 * 2 * 2, 3, dtype=nb.float64), nn.LogSoftmax(dim=-1),
    )


def test_jit_vmap_and_grad_run_the_bound_layers():
    m = small_model()
    x = nb.tensor(np.random.default_rng(0).normal(size=(5, 2, 4, 4)))
    eager = m(x)
    np.testing.assert_allclose(np.asarray(nb.jit(m)(x)), np.asarray(eager), rtol=1e-12, atol=1e-12)
    per_example = nb.vmap(lambda xi: m(xi[None])[0])(x)
    np.testing.assert_allclose(np.asarray(per_example), np.asarray(eager), rtol=1e-12, atol=1e-12)
    f = lambda x: m(x).sum()
    xg = nb.tensor(np.asarray(x), requires_grad=True)
    f(xg).backward()
    np.testing.assert_allclose(np.asarray(nb.grad(f)(x)), np.asarray(xg.grad), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(nb.jit(nb.grad(f))(x)), np.asarray(xg.grad), rtol=1e-12, atol=1e-12)


def test_batchnorm_buffers_update_in_training_only():
    bn = nn.BatchNorm1d(3, dtype=nb.float64)
    x = nb.tensor(np.arange(12.0).reshape(4, 3))
    bn(x)
    np.testing.assert_allclose(np.asarray(bn.running_mean), 0.1 * np.arange(12.0).reshape(4, 3).mean(0))
    assert bn.num_batches_tracked.item() == 1
    nb.jit(bn)(x)  # a traced call leaves the buffers alone
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    before = np.asarray(bn.running_var).copy()
    bn(x)
    np.testing.assert_array_equal(np.asarray(bn.running_var), before)
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]


def test_weight_tying_and_training_with_an_optimizer():
    nb.manual_seed(0)
    emb = nn.Embedding(6, 4, dtype=nb.float64)
    head = nn.Linear(4, 6, bias=False, dtype=nb.float64)
    head.weight = emb.weight  # tied, as language models do
    params = list(emb.parameters()) + [p for p in head.parameters() if p is not emb.weight]
    opt = optim.SGD(params, lr=0.1)
    tokens = nb.tensor(np.array([0, 3, 5, 1]))
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(head(emb(tokens)), tokens)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert head.weight is emb.weight
    np.testing.assert_array_equal(np.asarray(head.weight), np.asarray(emb.weight))


def test_module_surface_is_pytorchs():
    lin = nn.Linear(3, 2, bias=False)
    assert lin.bias is None and lin.in_features == 3 and tuple(lin.weight.shape) == (2, 3)
    assert lin.weight.dtype == nb.float32
    assert repr(lin) == "Linear(in_features=3, out_features=2, bias=False)"
    conv = nn.Conv2d(1, 2, 3, stride=2)
    assert [n for n, _ in conv.named_parameters()] == ["weight", "bias"]
    assert "stride=2" in repr(conv)
    bound = 1 / np.sqrt(9)
    assert np.all(np.abs(np.asarray(conv.weight)) <= bound)  # PyTorch's kaiming-uniform bound


def test_bad_layer_arguments_raise():
    with pytest.raises(TypeError, match="missing the argument 'out_features'"):
        nn.Linear(3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'kernel'"):
        nn.Conv2d(1, 2, kernel=3)
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv2d(1, 2, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="return_indices"):
        nn.MaxPool2d(2, return_indices=True)
    with pytest.raises(ValueError, match="dim"):
        nn.Softmax()
    with pytest.raises(ValueError, match="in_features"):
        nn.Linear(3, 2)(nb.zeros((4, 5)))
    lin = nn.Linear(3, 2)
    lin.weight = nn.Parameter(nb.zeros((5, 5)))
    with pytest.raises(ValueError, match="weight"):
        lin(nb.zeros((4, 3)))


with open(os.path.join(FIXTURES, "sequence.json")) as fh:
    SEQUENCE = json.load(fh)["cases"]


def seq_tensor(v):
    dtype = np.bool_ if v["dtype"] == "bool" else np.float64
    return nb.tensor(np.array(v["data"], dtype=dtype).reshape(v["shape"]))


def sequence_layer(name, cfg):
    """The module of a sequence.json case (its config holds PyTorch's arguments and a few notes)."""
    cfg = dict(cfg)
    if name.startswith("layer_norm"):
        return nn.LayerNorm(cfg["normalized_shape"], eps=cfg["eps"], bias=cfg["bias"], dtype=nb.float64)
    if name.startswith("mha"):
        return nn.MultiheadAttention(cfg["embed_dim"], cfg["num_heads"], batch_first=cfg["batch_first"], dtype=nb.float64)
    if name.startswith(("encoder", "decoder")):
        cls = nn.TransformerEncoderLayer if name.startswith("encoder") else nn.TransformerDecoderLayer
        m = cls(**cfg, dtype=nb.float64)
        m.eval()  # dropout off, as the fixture
        return m
    kind = cfg.pop("kind")
    return {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}[kind](**cfg, dtype=nb.float64)


def sequence_call(name, m, x, cfg):
    if name.startswith("layer_norm"):
        return [m(x["x"])]
    if name.startswith("mha"):
        q, k, v = (x["x"],) * 3 if "x" in x else (x["q"], x["k"], x["v"])
        out, w = m(q, k, v, key_padding_mask=x["key_padding_mask"], attn_mask=x["attn_mask"],
                   average_attn_weights=cfg["average_attn_weights"])
        return [out, w]
    if name.startswith("encoder"):
        return [m(x["src"], src_mask=x["src_mask"], src_key_padding_mask=x["src_key_padding_mask"])]
    if name.startswith("decoder"):
        return [m(x["tgt"], x["memory"], x["tgt_mask"], x["memory_mask"], x["tgt_key_padding_mask"], x["memory_key_padding_mask"])]
    if cfg["kind"] == "lstm":
        out, (h, c) = m(x["x"], (x["h0"], x["c0"]) if "c0" in x else None)
        return [out, h, c]
    out, h = m(x["x"], x.get("h0"))
    return [out, h]


@pytest.mark.parametrize("name", list(SEQUENCE))
def test_sequence_layers_follow_pytorch(name):
    case = SEQUENCE[name]
    m = sequence_layer(name, case["config"])
    m.load_state_dict({k: seq_tensor(v) for k, v in case["params"].items()})
    x = {k: seq_tensor(v) for k, v in case["inputs"].items()}
    for k in case["input_grads"]:
        x[k].requires_grad = True
    outputs = sequence_call(name, m, x, case["config"])
    assert len(outputs) == len(case["outputs"])
    loss = None
    for i, (o, want, w) in enumerate(zip(outputs, case["outputs"], case["loss_weights"])):
        np.testing.assert_allclose(np.asarray(o), np.asarray(seq_tensor(want)), rtol=1e-10, atol=1e-10, err_msg=f"output {i}")
        term = (o * seq_tensor(w)).sum()
        loss = term if loss is None else loss + term
    loss.backward()
    for k, g in case["input_grads"].items():
        np.testing.assert_allclose(np.asarray(x[k].grad), np.asarray(seq_tensor(g)), rtol=1e-10, atol=1e-10, err_msg=f"d/d{k}")
    named = dict(m.named_parameters())
    assert set(named) == set(case["param_grads"])
    for k, g in case["param_grads"].items():
        np.testing.assert_allclose(np.asarray(named[k].grad), np.asarray(seq_tensor(g)), rtol=1e-10, atol=1e-10, err_msg=f"d/d{k}")
