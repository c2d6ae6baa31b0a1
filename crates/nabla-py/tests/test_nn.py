"""nn modules, losses, optimizers, state dicts and the data loader against PyTorch's numbers
(fixtures/torch_nn.json, written by scripts/gen_torch_py_fixtures.py)."""

import json
import os

import numpy as np
import pytest

import nabla_rs as nb
from nabla_rs import nn, optim
from nabla_rs.nn import functional as F

HERE = os.path.dirname(__file__)
with open(os.path.join(HERE, "fixtures", "torch_nn.json")) as fh:
    REF = json.load(fh)


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def small_cnn():
    m = nn.Sequential(
        nn.Conv2d(1, 3, 3, padding=1, dtype=nb.float64),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(3 * 2 * 2, 4, dtype=nb.float64),
    )
    m.load_state_dict({k: np.array(v) for k, v in REF["init"].items()})
    return m


def test_state_dict_names_match_pytorch():
    m = small_cnn()
    assert list(m.state_dict()) == list(REF["init"])
    assert [n for n, _ in m.named_parameters()] == list(REF["init"])
    assert all(p.requires_grad and p.is_leaf for p in m.parameters())


def test_functional_ops_match_pytorch():
    ops = REF["ops"]
    x = nb.tensor(np.array(REF["x"]), requires_grad=True)
    w = nb.tensor(np.array(ops["w"]), requires_grad=True)
    conv = F.conv2d(x, w, stride=1, padding=1)
    pool = F.max_pool2d(conv, 2)
    close(conv, ops["conv"])
    close(pool, ops["pool"])
    loss = F.cross_entropy(pool.flatten(1)[:, :4], nb.tensor(REF["y"]), label_smoothing=0.1)
    close(loss, ops["loss"])
    loss.backward()
    close(x.grad, ops["grad_x"])
    close(w.grad, ops["grad_w"])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sequential_relu_before_max_pool_matches_the_written_order(dtype):
    rng = np.random.default_rng(0)
    v = rng.standard_normal((2, 3, 6, 6))
    v.flat[::7] = np.nan
    v.flat[1::5] = 2.0  # ties
    v.flat[3::11] = -0.0
    v[:, :, :2, :2] = -1.0  # windows of at most 0
    v = v.astype(dtype)
    g = nb.tensor(rng.standard_normal((2, 3, 3, 3)).astype(dtype))
    reordered = nb.tensor(v, requires_grad=True)
    written = nb.tensor(v, requires_grad=True)
    y = nn.Sequential(nn.ReLU(), nn.MaxPool2d(2))(reordered)
    y_ref = F.max_pool2d(F.relu(written), 2)
    assert np.asarray(y).tobytes() == np.asarray(y_ref).tobytes()
    (y * g).sum().backward()
    (y_ref * g).sum().backward()
    assert np.asarray(reordered.grad).tobytes() == np.asarray(written.grad).tobytes()


@pytest.mark.parametrize("name", ["sgd_momentum", "sgd_nesterov", "adam", "adamw", "rmsprop", "adagrad"])
def test_optimizers_follow_pytorch(name):
    m = small_cnn()
    make = {
        "sgd_momentum": lambda p: optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01),
        "sgd_nesterov": lambda p: optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True),
        "adam": lambda p: optim.Adam(p, lr=0.01, weight_decay=0.1),
        "adamw": lambda p: optim.AdamW(p, lr=0.01),
        "rmsprop": lambda p: optim.RMSprop(p, lr=0.01, momentum=0.5, centered=True, weight_decay=0.01),
        "adagrad": lambda p: optim.Adagrad(p, lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1),
    }[name]
    opt = make(m.parameters())
    x, y = nb.tensor(np.array(REF["x"])), nb.tensor(REF["y"])
    losses = []
    for _ in range(3):
        loss = F.cross_entropy(m(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    run = REF["runs"][name]
    close(losses, run["losses"])
    for k, v in m.state_dict().items():
        close(v, run["final"][k])


def test_schedulers():
    p = nn.Parameter(nb.zeros(2))
    opt = optim.SGD([p], lr=1.0)
    sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    lrs = []
    for _ in range(5):
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    assert lrs == [1.0, 0.5, 0.5, 0.25, 0.25]
    cos = optim.lr_scheduler.CosineAnnealingLR(optim.SGD([p], lr=2.0), T_max=4)
    for _ in range(4):
        cos.step()
    assert cos.get_last_lr()[0] == pytest.approx(0.0)


def test_safetensors_interchange_with_pytorch(tmp_path):
    torch_state = nb.load_safetensors(os.path.join(HERE, "fixtures", "torch_state.safetensors"))
    assert set(torch_state) == set(REF["init"])
    for k, v in torch_state.items():
        close(v, np.array(REF["init"][k], dtype=np.float32).astype(np.float64), tol=1e-6)
    m = small_cnn()
    path = tmp_path / "model.safetensors"
    nb.save_safetensors(m.state_dict(), str(path), metadata={"format": "pt"})
    m2 = small_cnn()
    for p in m2.parameters():
        p.data = nb.zeros_like(p)
    m2.load_state_dict(nb.load_safetensors(str(path)))
    for (k, a), (_, b) in zip(m.state_dict().items(), m2.state_dict().items()):
        close(a, b, tol=0)
    with pytest.raises(OSError):
        nb.load_safetensors(str(tmp_path / "missing.safetensors"))
    with pytest.raises(KeyError):
        m.load_state_dict({"nope": nb.zeros(1)})


def test_data_loader_batches_and_shuffles():
    x = np.arange(10.0)
    y = np.arange(10) * 2
    batches = list(nb.data.DataLoader(x, y, batch_size=4))
    assert [len(b[0]) for b in batches] == [4, 4, 2]
    assert batches[2][1].tolist() == [16, 18]
    dl = nb.data.DataLoader(x, y, batch_size=4, shuffle=True, drop_last=True, seed=3)
    assert len(dl) == 2
    first = [b[0].tolist() for b in dl]
    seen = sorted(v for b in first for v in b)
    assert len(seen) == 8 and len(set(seen)) == 8
    again = [b[0].tolist() for b in nb.data.DataLoader(x, y, batch_size=4, shuffle=True, drop_last=True, seed=3)]
    assert first == again
    with pytest.raises(ValueError):
        nb.data.DataLoader(x, y[:3])


def test_dropout_and_layer_norm():
    x = nb.ones(1000)
    d = F.dropout(x, 0.25)
    kept = (d != 0).astype(nb.float32).mean().item()
    assert 0.65 < kept < 0.85
    values = d.numpy()
    assert np.all(np.isclose(values, 0.0) | np.isclose(values, 1 / 0.75))
    assert F.dropout(x, 0.25, training=False).tolist() == x.tolist()
    ln = nn.LayerNorm(4)
    y = ln(nb.tensor(np.arange(8.0, dtype=np.float32).reshape(2, 4)))
    close(y.mean(-1), [0, 0], tol=1e-6)


def test_batch_norm_matches_pytorch():
    ref = REF["batch_norm"]
    bn = nn.BatchNorm2d(3, dtype=nb.float64)
    bn.weight.data = nb.tensor([1.0, 2.0, 0.5])
    bn.bias.data = nb.tensor([0.0, -1.0, 1.0])
    x = nb.tensor(np.array(ref["x"]), requires_grad=True)
    out = bn(x)
    close(out, ref["train_out"])
    (out * nb.arange(48.0, dtype=nb.float64).reshape(4, 3, 2, 2)).sum().backward()
    close(x.grad, ref["grad_x"])
    close(bn.running_mean, ref["running_mean"])
    close(bn.running_var, ref["running_var"])
    assert "running_var" in bn.state_dict() and bn.num_batches_tracked.item() == 1
    bn.eval()
    close(bn(nb.tensor(np.array(ref["x"]))), ref["eval_out"])


def test_optimizer_state_resumes_training():
    def run(steps, opt_state=None, params=None):
        m = small_cnn()
        if params is not None:
            m.load_state_dict(params)
        opt = optim.Adam(m.parameters(), lr=0.01)
        if opt_state is not None:
            opt.load_state_dict(opt_state)
        x, y = nb.tensor(np.array(REF["x"])), nb.tensor(REF["y"])
        for _ in range(steps):
            opt.zero_grad()
            F.cross_entropy(m(x), y).backward()
            opt.step()
        return m, opt

    straight, _ = run(3)
    first, opt = run(2)
    saved = opt.state_dict()
    assert sorted(saved["state"]) == list(range(4)) and saved["state"][0]["step"] == 2
    resumed, _ = run(1, saved, first.state_dict())
    for (k, a), (_, b) in zip(straight.state_dict().items(), resumed.state_dict().items()):
        close(a, b, tol=1e-14)


@pytest.mark.parametrize("name", ["lstm", "gru", "attention"])
def test_recurrent_layers_and_attention_match_pytorch(name):
    ref = REF["layers"][name]
    layer = {
        "lstm": lambda: nn.LSTM(3, 4, num_layers=2, dtype=nb.float64),
        "gru": lambda: nn.GRU(3, 4, batch_first=True, dtype=nb.float64),
        "attention": lambda: nn.MultiheadAttention(8, 2, dtype=nb.float64),
    }[name]()
    assert sorted(layer.state_dict()) == sorted(ref["params"])
    layer.load_state_dict({k: np.array(v) for k, v in ref["params"].items()})
    inputs = [nb.tensor(np.array(t), requires_grad=True) for t in ref["inputs"]]
    out = layer(*inputs)
    flat = [out[0]] + (list(out[1]) if isinstance(out[1], tuple) else [out[1]])
    for ours, theirs in zip(flat, ref["outputs"]):
        close(ours, theirs)
    total = sum((t * nb.linspace(-1, 1, t.size, dtype=nb.float64).reshape(t.shape)).sum() for t in flat)
    total.backward()
    for k, p in layer.named_parameters():
        close(p.grad, ref["grads"][k])
    for t, g in zip(inputs, ref["input_grads"]):
        close(t.grad, g)


def test_scaled_dot_product_attention_matches_pytorch():
    """Against PyTorch's values in the Rust crate's fixture (scripts/gen_torch_sdpa_fixtures.py)."""
    path = os.path.join(HERE, "..", "..", "nabla-nn", "tests", "fixtures", "sdpa.json")
    with open(path) as fh:
        cases = json.load(fh)["cases"]
    arr = lambda t: np.array(t["data"], dtype=np.float64).reshape(t["shape"])  # noqa: E731
    for c in cases:
        q, k, v = (nb.tensor(arr(c[n]), requires_grad=True) for n in ("q", "k", "v"))
        mask = None
        if "mask" in c:
            mask = arr(c["mask"])
            mask = nb.tensor(mask > 0.5) if c["mask_kind"] == "bool" else nb.tensor(mask)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=c["is_causal"],
                                             scale=c["scale"], enable_gqa=c["enable_gqa"])
        close(out, arr(c["out"]))
        (out * nb.tensor(arr(c["w"]))).sum().backward()
        for t, name in ((q, "grad_q"), (k, "grad_k"), (v, "grad_v")):
            close(t.grad, arr(c[name]))
    with pytest.raises(Exception, match="scaled_dot_product_attention"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=nb.tensor(np.ones((2, 2), bool)), is_causal=True)


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_without_weights_runs_the_fused_attention_with_the_same_values(batch_first):
    rng = np.random.default_rng(3)
    mha = nn.MultiheadAttention(8, 2, batch_first=batch_first, dtype=nb.float64)
    shape = (2, 5, 8) if batch_first else (5, 2, 8)
    causal = np.triu(np.ones((5, 5), bool), 1)
    for mask in (None, causal, np.where(causal, -np.inf, 0.0)):
        x = nb.tensor(rng.standard_normal(shape), requires_grad=True)
        with_weights, w = mha(x, x, x, attn_mask=mask)
        without, none = mha(x, x, x, need_weights=False, attn_mask=mask)
        assert w is not None and none is None
        close(without, with_weights, 1e-12)
        g1 = nb.grad(lambda t: mha(t, t, t, attn_mask=mask)[0].sum())(x)
        g2 = nb.grad(lambda t: mha(t, t, t, need_weights=False, attn_mask=mask)[0].sum())(x)
        close(g2, g1, 1e-12)


def test_module_backward_hooks_match_torch():
    torch = pytest.importorskip("torch")

    class Pair(nb.nn.Module):
        def forward(self, a, b):
            return a * b, a + b

    class TorchPair(torch.nn.Module):
        def forward(self, a, b):
            return a * b, a + b

    seen, seen_t = [], []
    ours, theirs = Pair(), TorchPair()
    ours.register_full_backward_pre_hook(lambda m, go: (go[0] * 2, go[1]))
    theirs.register_full_backward_pre_hook(lambda m, go: (go[0] * 2, go[1]))
    ours.register_full_backward_hook(lambda m, gi, go: seen.append([None if g is None else g.tolist() for g in gi + go]) or (gi[0] * 10, gi[1]))
    theirs.register_full_backward_hook(lambda m, gi, go: seen_t.append([None if g is None else g.tolist() for g in gi + go]) or (gi[0] * 10, gi[1]))
    a, b = nb.tensor([1.0, 2.0], requires_grad=True), nb.tensor([3.0, -1.0], requires_grad=True)
    ta, tb = torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([3.0, -1.0], requires_grad=True)
    p, q = ours(a * 1.0, b * 1.0)
    tp, tq = theirs(ta * 1.0, tb * 1.0)
    (p * nb.tensor([1.0, 2.0]) + q).sum().backward()
    (tp * torch.tensor([1.0, 2.0]) + tq).sum().backward()
    assert seen == seen_t
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy())
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy())


def test_backward_hook_on_a_layer_with_an_input_that_needs_no_gradient():
    torch = pytest.importorskip("torch")
    lin = nb.nn.Linear(3, 2)
    ref = torch.nn.Linear(3, 2)
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(lin.weight.numpy()))
        ref.bias.copy_(torch.tensor(lin.bias.numpy()))
    got, want = [], []
    handle = lin.register_full_backward_hook(lambda m, gi, go: got.append((gi, go[0].tolist())))
    ref.register_full_backward_hook(lambda m, gi, go: want.append((gi, go[0].tolist())))
    x = np.ones((2, 3), np.float32)
    (lin(nb.tensor(x)) ** 2).sum().backward()
    (ref(torch.tensor(x)) ** 2).sum().backward()
    assert got[0][0] == (None,) and want[0][0] == (None,)
    np.testing.assert_allclose(got[0][1], want[0][1], rtol=1e-6)
    np.testing.assert_allclose(lin.weight.grad.numpy(), ref.weight.grad.numpy(), rtol=1e-6)
    handle.remove()
    (lin(nb.tensor(x)) ** 2).sum().backward()
    assert len(got) == 1
