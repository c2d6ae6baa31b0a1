"""``nabla_rs.nn.init`` and ``nabla_rs.nn.utils`` (nabla's Rust initialisers and gradient clipping):
clipping against PyTorch's values in the Rust crate's fixture (crates/nabla-nn/tests/fixtures/
optim.json, written by scripts/gen_torch_optim_fixtures.py), initialisers against PyTorch's formulas,
ModuleList and ModuleDict."""

import json
import math
import os

import numpy as np
import pytest

import nabla_rs as nb
from nabla_rs import nn

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "nabla-nn", "tests", "fixtures")
with open(os.path.join(FIXTURES, "optim.json")) as fh:
    CLIP = json.load(fh)["clip"]


def with_grads():
    w = nn.Parameter(nb.zeros((3, 2), dtype=nb.float64))
    b = nn.Parameter(nb.zeros(2, dtype=nb.float64))
    w.grad = nb.tensor(np.array(CLIP["grads"]["w"]).reshape(3, 2))
    b.grad = nb.tensor(np.array(CLIP["grads"]["b"]))
    return w, b


@pytest.mark.parametrize("case", CLIP["norm"], ids=lambda c: f"{c['max_norm']}-{c['norm_type']}")
def test_clip_grad_norm_follows_pytorch(case):
    w, b = with_grads()
    norm_type = math.inf if case["norm_type"] == "inf" else case["norm_type"]
    total = nn.utils.clip_grad_norm_([w, b], case["max_norm"], norm_type=norm_type)
    assert total.item() == pytest.approx(case["total_norm"], rel=1e-12)
    np.testing.assert_allclose(np.asarray(w.grad).ravel(), case["w"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(np.asarray(b.grad), case["b"], rtol=1e-12, atol=1e-15)


def test_clip_grad_value_follows_pytorch():
    w, b = with_grads()
    nn.utils.clip_grad_value_([w, b], CLIP["value"]["clip"])
    np.testing.assert_array_equal(np.asarray(w.grad).ravel(), CLIP["value"]["w"])
    np.testing.assert_array_equal(np.asarray(b.grad), CLIP["value"]["b"])


def test_clipping_errors():
    w, b = with_grads()
    w.grad = nb.tensor(np.full((3, 2), np.nan))
    with pytest.raises(ValueError, match="clip_grad_norm"):
        nn.utils.clip_grad_norm_([w, b], 1.0, error_if_nonfinite=True)
    with pytest.raises(ValueError, match="norm_type"):
        nn.utils.clip_grad_norm_([w, b], 1.0, norm_type=-1)
    with pytest.raises(ValueError, match="clip_value"):
        nn.utils.clip_grad_value_([w, b], -1.0)


def sample(fill, shape=(256, 128), **kw):
    nb.manual_seed(0)
    t = nn.Parameter(nb.zeros(shape, dtype=nb.float64))
    assert fill(t, **kw) is t
    assert t.requires_grad
    return np.asarray(t)


def test_initialisers_follow_pytorchs_formulas():
    fan_in, fan_out = 128, 256
    v = sample(nn.init.uniform_, a=-0.5, b=2.0)
    assert v.min() >= -0.5 and v.max() < 2.0 and abs(v.mean() - 0.75) < 0.02
    v = sample(nn.init.normal_, mean=1.0, std=0.5)
    assert abs(v.mean() - 1.0) < 0.01 and abs(v.std() - 0.5) < 0.01
    assert np.all(sample(nn.init.constant_, val=3.0) == 3.0)
    assert np.all(sample(nn.init.ones_) == 1.0) and np.all(sample(nn.init.zeros_) == 0.0)
    bound = math.sqrt(6 / (fan_in + fan_out))
    v = sample(nn.init.xavier_uniform_)
    assert np.abs(v).max() <= bound and np.abs(v).max() > 0.95 * bound
    v = sample(nn.init.xavier_normal_, gain=2.0)
    assert abs(v.std() / (2.0 * math.sqrt(2 / (fan_in + fan_out))) - 1) < 0.02
    gain = nn.init.calculate_gain("leaky_relu", 0.0)
    v = sample(nn.init.kaiming_uniform_, a=0.0)
    assert np.abs(v).max() <= gain * math.sqrt(3 / fan_in)
    v = sample(nn.init.kaiming_normal_, mode="fan_out", nonlinearity="relu")
    assert abs(v.std() / (math.sqrt(2) / math.sqrt(fan_out)) - 1) < 0.02
    v = sample(nn.init.trunc_normal_, std=1.0, a=-1.0, b=0.5)
    assert v.min() >= -1.0 and v.max() <= 0.5
    q = sample(nn.init.orthogonal_, shape=(64, 32), gain=1.5)
    np.testing.assert_allclose(q.T @ q, 2.25 * np.eye(32), atol=1e-10)
    assert nn.init.calculate_gain("tanh") == pytest.approx(5 / 3)
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.init.calculate_gain("swish")
    with pytest.raises(ValueError, match="mode"):
        sample(nn.init.kaiming_uniform_, mode="fan_avg")


def test_initialisers_are_reproducible_and_keep_grad():
    a, b = sample(nn.init.normal_), sample(nn.init.normal_)
    np.testing.assert_array_equal(a, b)
    lin = nn.Linear(3, 2)
    lin(nb.ones((1, 3))).sum().backward()
    grad = np.asarray(lin.weight.grad).copy()
    nn.init.kaiming_uniform_(lin.weight, a=math.sqrt(5))
    np.testing.assert_array_equal(np.asarray(lin.weight.grad), grad)


def test_module_list_and_dict():
    layers = nn.ModuleList([nn.Linear(2, 3), nn.ReLU()])
    layers.append(nn.Linear(3, 1))
    assert len(layers) == 3 and isinstance(layers[1], nn.ReLU) and len(layers[1:]) == 2
    assert [n for n, _ in layers.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    heads = nn.ModuleDict({"a": nn.Linear(2, 1), "b": nn.Linear(2, 4)})
    assert "a" in heads and list(heads) == ["a", "b"]
    assert sorted(heads.state_dict()) == ["a.bias", "a.weight", "b.bias", "b.weight"]
    x = nb.ones((5, 2))
    for layer in layers:
        x = layer(x)
    assert tuple(x.shape) == (5, 1)


def test_forward_hooks_as_pytorch():
    nb.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    seen = {}
    handle = model[0].register_forward_hook(lambda m, args, out: seen.setdefault("features", out))
    pre = model[2].register_forward_pre_hook(lambda m, args: (args[0] * 0.0,))
    x = nb.ones((5, 4))
    y = model(x)
    assert tuple(seen["features"].shape) == (5, 3)
    np.testing.assert_allclose(np.asarray(y), np.broadcast_to(np.asarray(model[2].bias), (5, 2)))
    pre.remove()
    handle.remove()
    seen.clear()
    y2 = model(x)
    assert not seen
    assert not np.allclose(np.asarray(y2), np.asarray(y))
    with model.register_forward_hook(lambda m, args, out: out * 2.0):
        np.testing.assert_allclose(np.asarray(model(x)), 2 * np.asarray(y2), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(model(x)), np.asarray(y2), rtol=1e-6)
