"""``nabla_rs.nn``'s losses, nabla's Rust loss functions bound to Python, against PyTorch's values and
gradients in the Rust crate's fixture (crates/nabla-nn/tests/fixtures/losses.json, written by
scripts/gen_torch_loss_fixtures.py), through the functions and the loss modules."""

import json
import os

import numpy as np
import pytest

import nabla_rs as nb
from nabla_rs import nn
from nabla_rs.nn import functional as F

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "nabla-nn", "tests", "fixtures")
with open(os.path.join(FIXTURES, "losses.json")) as fh:
    CASES = json.load(fh)["cases"]

MODULES = {
    "mse_loss": nn.MSELoss, "l1_loss": nn.L1Loss, "smooth_l1_loss": nn.SmoothL1Loss, "huber_loss": nn.HuberLoss,
    "cross_entropy": nn.CrossEntropyLoss, "nll_loss": nn.NLLLoss, "binary_cross_entropy": nn.BCELoss,
    "binary_cross_entropy_with_logits": nn.BCEWithLogitsLoss, "kl_div": nn.KLDivLoss,
    "cosine_embedding_loss": nn.CosineEmbeddingLoss, "margin_ranking_loss": nn.MarginRankingLoss,
    "triplet_margin_loss": nn.TripletMarginLoss,
}
# The tensors a loss takes as call arguments; the rest (weight, pos_weight) are module options.
CALL_ARGS = ("input", "target", "input1", "input2", "anchor", "positive", "negative")


def tensor(v):
    dtype = {"f64": np.float64, "i64": np.int64}[v["dtype"]]
    return nb.tensor(np.array(v["data"], dtype=dtype).reshape(v["shape"]))


def check(case, out, inputs):
    want = np.array(case["output"]["data"]).reshape(case["output"]["shape"])
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-10, atol=1e-12, err_msg="value")
    out.sum().backward()
    for k, g in case["grads"].items():
        np.testing.assert_allclose(np.asarray(inputs[k].grad), np.asarray(tensor(g)), rtol=1e-10, atol=1e-12, err_msg=f"d/d{k}")


def options(case):
    """The fixture's options, with PyTorch's ``p=inf`` (written as a string in JSON) as a float."""
    return {k: (float(v) if k == "p" else v) for k, v in case["opts"].items()}


def inputs_of(case):
    inputs = {k: tensor(v) for k, v in case["inputs"].items()}
    for k in case["grads"]:
        inputs[k].requires_grad = True
    return inputs


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_loss_functions_follow_pytorch(case):
    inputs = inputs_of(case)
    check(case, getattr(F, case["fn"])(**inputs, **options(case)), inputs)


@pytest.mark.parametrize("case", CASES[::3], ids=[c["name"] for c in CASES[::3]])
def test_loss_modules_follow_pytorch(case):
    inputs = inputs_of(case)
    tensors = {k: v for k, v in inputs.items() if k not in CALL_ARGS}
    module = MODULES[case["fn"]](**options(case), **tensors)
    assert set(module.state_dict()) == set(tensors)  # tensor options are buffers, as in PyTorch
    args = [v for k, v in inputs.items() if k in CALL_ARGS]
    check(case, module(*args), inputs)


def test_every_loss_function_has_a_module():
    assert {c["fn"] for c in CASES} == set(MODULES)


def test_loss_errors():
    x = nb.zeros((2, 3))
    with pytest.raises(ValueError, match="reduction"):
        F.mse_loss(x, x, reduction="average")
    with pytest.raises(TypeError, match="unexpected keyword argument 'reduce'"):
        nn.MSELoss(reduce=True)
    with pytest.raises(ValueError, match="binary_cross_entropy"):
        F.binary_cross_entropy(nb.full((2, 3), 2.0), x)  # probabilities outside [0, 1]
    assert repr(nn.HuberLoss(delta=0.5)) == "HuberLoss(reduction='mean', delta=0.5)"
