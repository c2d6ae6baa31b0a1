"""``nabla_rs.optim``, nabla's Rust optimizers and schedulers bound to Python, against PyTorch's
trajectories in the Rust crate's fixtures (crates/nabla-nn/tests/fixtures/{optim,sched}.json,
written by scripts/gen_torch_optim_fixtures.py), plus param groups, state dicts and errors."""

import json
import math
import os

import numpy as np
import pytest

import nabla_rs as nb
from nabla_rs import nn, optim

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "nabla-nn", "tests", "fixtures")
with open(os.path.join(FIXTURES, "optim.json")) as fh:
    OPTIM = json.load(fh)
with open(os.path.join(FIXTURES, "sched.json")) as fh:
    SCHED = json.load(fh)
S = optim.lr_scheduler

X = nb.tensor(np.array(OPTIM["x"]).reshape(4, 3))
T = nb.tensor(np.array(OPTIM["t"]).reshape(4, 2))


def problem_loss(w, b):
    return ((X @ w + b - T) ** 2).mean() + 0.1 * (w**4).sum() + 0.5 * (b**2).sum()


def fresh():
    w = nn.Parameter(nb.tensor(np.array(OPTIM["params"]["w"]).reshape(3, 2)))
    b = nn.Parameter(nb.tensor(np.array(OPTIM["params"]["b"])))
    return w, b


KINDS = {
    "sgd": optim.SGD, "adam": optim.Adam, "adamw": optim.AdamW, "adamax": optim.Adamax,
    "nadam": optim.NAdam, "radam": optim.RAdam, "rmsprop": optim.RMSprop, "adagrad": optim.Adagrad,
    "lion": optim.Lion,
}


def make(case, w, b):
    kind, opts = case["kind"], dict(case["opts"])
    if "betas" in opts:
        opts["betas"] = tuple(opts["betas"])
    if kind == "sgd_groups":
        return optim.SGD([{"params": [w], "lr": 0.1, "momentum": 0.9}, {"params": [b], "lr": 0.01}], lr=0.5)
    if kind == "adam_groups":
        return optim.Adam([{"params": [w], "lr": 0.1}, {"params": [b], "lr": 0.01, "weight_decay": 0.1}])
    return KINDS[kind]([w, b], **opts)


@pytest.mark.parametrize("case", OPTIM["cases"], ids=[c["name"] for c in OPTIM["cases"]])
def test_optimizers_follow_pytorch(case):
    w, b = fresh()
    opt = make(case, w, b)
    for i, want in enumerate(case["trajectory"]):
        opt.zero_grad()
        problem_loss(w, b).backward()
        opt.step()
        np.testing.assert_allclose(np.asarray(w).ravel(), want["w"], rtol=1e-12, atol=1e-13, err_msg=f"step {i}")
        np.testing.assert_allclose(np.asarray(b), want["b"], rtol=1e-12, atol=1e-13, err_msg=f"step {i}")


def rosenbrock(a, b):
    return (100.0 * (b - a**2) ** 2 + (1.0 - a) ** 2).sum()


@pytest.mark.parametrize("case", OPTIM["lbfgs"], ids=[c["name"] for c in OPTIM["lbfgs"]])
def test_lbfgs_follows_pytorch(case):
    a = nn.Parameter(nb.tensor(np.array(case["a0"])))
    b = nn.Parameter(nb.tensor(np.array(case["b0"])))
    opt = optim.LBFGS([a, b], **case["opts"])

    def closure():
        opt.zero_grad()
        loss = rosenbrock(a, b)
        loss.backward()
        return loss

    for i, want in enumerate(case["trajectory"]):
        loss = opt.step(closure)
        # Rosenbrock amplifies rounding (see the generator), so the Rust test's 1e-8 applies here too.
        assert loss.item() == pytest.approx(want["loss"], rel=1e-8, abs=1e-8), f"step {i}"
        np.testing.assert_allclose(np.asarray(a), want["a"], rtol=1e-8, atol=1e-8, err_msg=f"step {i}")
        np.testing.assert_allclose(np.asarray(b), want["b"], rtol=1e-8, atol=1e-8, err_msg=f"step {i}")
        st = opt.state_dict()["state"][0]
        assert (st["func_evals"], st["n_iter"]) == (want["func_evals"], want["n_iter"])


LAMBDAS = {
    "pow095": lambda e: 0.95**e,
    "inverse": lambda e: 1.0 / (1.0 + e),
    "const09": lambda e: 0.9,
    "halve_every_3": lambda e: 0.5 if e % 3 == 0 else 1.0,
}


def scheduler(opt, name, args):
    args = dict(args)
    if name in ("SequentialLR", "ChainedScheduler"):
        children = [scheduler(opt, n, a) for n, a in args.pop("schedulers")]
        return S.SequentialLR(opt, children, **args) if name == "SequentialLR" else S.ChainedScheduler(children, opt)
    if name in ("LambdaLR", "MultiplicativeLR"):
        fns = [LAMBDAS[n] for n in args["lr_lambda"]]
        return getattr(S, name)(opt, fns if len(fns) > 1 else fns[0])
    if name == "OneCycleLR":
        args["cycle_momentum"] = False
    return getattr(S, name)(opt, **args)


def two_groups():
    p1, p2 = nn.Parameter(nb.zeros(2)), nn.Parameter(nb.zeros(2))
    return optim.SGD([{"params": [p1], "lr": 0.1}, {"params": [p2], "lr": 0.05}], lr=0.1)


@pytest.mark.parametrize("case", SCHED["cases"], ids=[f"{i}-{c['name']}" for i, c in enumerate(SCHED["cases"])])
def test_schedulers_follow_pytorch(case):
    opt = two_groups()
    sched = scheduler(opt, case["name"], case["args"])
    for epoch, want in enumerate(case["lrs"]):
        got = [g["lr"] for g in opt.param_groups]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15, err_msg=f"epoch {epoch}")
        opt.step()
        if case["name"] == "ReduceLROnPlateau":
            m = SCHED["metrics"][epoch]
            sched.step(m if case["args"]["mode"] == "min" else 2.0 - m)
        else:
            sched.step()
    assert sched.get_last_lr() == [g["lr"] for g in opt.param_groups]


def test_optimizer_and_scheduler_state_resume_midway():
    """A run stopped after 5 steps and resumed from the state dicts goes on as the unbroken run."""

    def run(resume_at=None):
        w, b = fresh()
        opt = optim.Adam([w, b], lr=0.1, amsgrad=True)
        sched = S.CosineAnnealingLR(opt, T_max=7)
        for i in range(10):
            if i == resume_at:
                saved_opt, saved_sched = opt.state_dict(), sched.state_dict()
                w2, b2 = fresh()
                w2.data, b2.data = w.detach(), b.detach()
                w, b = w2, b2
                opt = optim.Adam([w, b], lr=0.5)
                sched = S.CosineAnnealingLR(opt, T_max=7)
                opt.load_state_dict(saved_opt)
                sched.load_state_dict(saved_sched)
            opt.zero_grad()
            problem_loss(w, b).backward()
            opt.step()
            sched.step()
        return np.asarray(w), np.asarray(b), opt.param_groups[0]["lr"]

    whole, resumed = run(), run(resume_at=5)
    np.testing.assert_array_equal(whole[0], resumed[0])
    np.testing.assert_array_equal(whole[1], resumed[1])
    assert whole[2] == resumed[2]


def test_state_dict_has_pytorchs_layout():
    w, b = fresh()
    opt = optim.Adam([w, b], lr=0.01, betas=(0.8, 0.9))
    problem_loss(w, b).backward()
    opt.step()
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert sorted(sd["state"]) == [0, 1]
    assert sd["state"][0]["step"] == 1
    assert tuple(sd["state"][1]["exp_avg"].shape) == (2,)
    (group,) = sd["param_groups"]
    assert group["params"] == [0, 1] and group["lr"] == 0.01 and group["betas"] == (0.8, 0.9)
    assert set(opt.state[w]) == {"step", "exp_avg", "exp_avg_sq"}
    with pytest.raises(ValueError, match="momentum"):
        optim.SGD([w, b], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="param group 0 has 2 parameters in the state, 1"):
        optim.Adam([w]).load_state_dict(sd)


def test_param_groups_are_live_views():
    w, b = fresh()
    opt = optim.SGD([w], lr=0.1, momentum=0.5)
    opt.add_param_group({"params": [b], "lr": 0.01})
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.01]
    assert opt.param_groups[1]["momentum"] == 0.5  # the optimizer's default
    assert opt.param_groups[1]["params"][0] is b
    before = np.asarray(b).copy()
    opt.param_groups[1]["lr"] = 0.0
    problem_loss(w, b).backward()
    opt.step()
    np.testing.assert_array_equal(np.asarray(b), before)
    with pytest.raises(KeyError, match="not one"):
        opt.param_groups[0]["foo"] = 1
    with pytest.raises(TypeError):
        opt.param_groups[0]["nesterov"] = "yes"


def test_step_keeps_grad_and_sees_replaced_data():
    w = nn.Parameter(nb.tensor(np.array([1.0, 2.0])))
    opt = optim.SGD([w], lr=0.5)
    (w * w).sum().backward()
    opt.step()
    np.testing.assert_array_equal(np.asarray(w), [0.0, 0.0])
    np.testing.assert_array_equal(np.asarray(w.grad), [2.0, 4.0])  # kept, as PyTorch
    w.data = nb.tensor(np.array([10.0, 10.0]))
    opt.zero_grad()
    (w * w).sum().backward()
    np.testing.assert_array_equal(np.asarray(w.grad), [20.0, 20.0])
    opt.step()
    np.testing.assert_array_equal(np.asarray(w), [0.0, 0.0])
    # A parameter without a gradient is left alone.
    opt.zero_grad()
    opt.step()
    np.testing.assert_array_equal(np.asarray(w), [0.0, 0.0])


def test_closure_loss_is_returned():
    w = nn.Parameter(nb.tensor(np.array([3.0])))
    opt = optim.SGD([w], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    with nb.no_grad():
        loss = opt.step(closure)  # the closure records even inside no_grad
    assert loss.item() == 9.0
    assert w.item() == pytest.approx(2.4)


def test_bad_arguments_raise():
    w = nn.Parameter(nb.zeros(2))
    with pytest.raises(TypeError, match="unexpected keyword argument 'momentun'"):
        optim.SGD([w], lr=0.1, momentun=0.9)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.Adam([])
    with pytest.raises(ValueError, match="require grad"):
        optim.SGD([nb.zeros(2)], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([w * 2], lr=0.1)
    with pytest.raises(TypeError, match="iterable"):
        optim.SGD(w, lr=0.1)
    single = optim.SGD([{"params": w, "lr": 0.5}])  # a group's params may be one tensor
    assert single.param_groups[0]["params"][0] is w
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [w]}, {"params": [w]}], lr=0.1)
    with pytest.raises(ValueError, match="learning rate|lr"):
        optim.Adam([w], lr=-1.0)
    with pytest.raises(TypeError, match="betas"):
        optim.Adam([w], betas=0.9)
    with pytest.raises(ValueError, match="finite"):
        optim.SGD([w], lr=math.nan)
    with pytest.raises(NotImplementedError, match="cycle_momentum"):
        S.OneCycleLR(optim.SGD([w], lr=0.1), max_lr=1.0, total_steps=10)
    with pytest.raises(ValueError, match="expected 1 or 1 lr_lambda|lr_lambda"):
        S.LambdaLR(optim.SGD([w], lr=0.1), [lambda e: 1.0, lambda e: 2.0])
    with pytest.raises(TypeError, match="closure"):
        optim.LBFGS([w]).step()
    with pytest.raises(TypeError, match="first-order"):
        S.StepLR(optim.LBFGS([w]), 2)


def test_lambda_errors_keep_the_python_exception():
    opt = optim.SGD([nn.Parameter(nb.zeros(2))], lr=1.0)

    def factor(epoch):
        if epoch == 2:
            raise ZeroDivisionError("no factor for epoch 2")
        return 0.5

    sched = S.LambdaLR(opt, factor)
    sched.step()
    with pytest.raises(ZeroDivisionError, match="epoch 2"):
        sched.step()
    assert opt.param_groups[0]["lr"] == 0.5


def test_chained_children_are_owned():
    opt = optim.SGD([nn.Parameter(nb.zeros(2))], lr=1.0)
    a, b = S.ConstantLR(opt, factor=0.5, total_iters=2), S.ExponentialLR(opt, gamma=0.9)
    chain = S.ChainedScheduler([a, b])
    chain.step()
    with pytest.raises(RuntimeError, match="part of a SequentialLR or ChainedScheduler"):
        a.step()


def test_set_grad_enabled_and_enable_grad():
    x = nb.tensor(np.array([1.0]), requires_grad=True)
    with nb.no_grad():
        with nb.enable_grad():
            assert (x * 2).requires_grad
        assert not (x * 2).requires_grad
    with nb.set_grad_enabled(False):
        assert not nb.is_grad_enabled()
    assert nb.is_grad_enabled()
    nb.set_grad_enabled(False)
    try:
        assert not (x * 2).requires_grad
    finally:
        nb.set_grad_enabled(True)
    assert (x * 2).requires_grad
