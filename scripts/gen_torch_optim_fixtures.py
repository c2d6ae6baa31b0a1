#!/usr/bin/env python3
"""Reference trajectories of PyTorch's optimizers, gradient clipping, L-BFGS and learning-rate
schedulers, for crates/nabla-nn/tests/{optim_torch,sched_torch}.rs.

Writes crates/nabla-nn/tests/fixtures/optim.json and sched.json. Everything is float64 with fixed
seeds. Run: python3 scripts/gen_torch_optim_fixtures.py
"""
import json
import os

import numpy as np
import torch

torch.set_default_dtype(torch.float64)
OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "nabla-nn", "tests", "fixtures")
STEPS = 10


def flat(t):
    return t.detach().reshape(-1).tolist()


# ---------------------------------------------------------------- the fixed problem
g = torch.Generator().manual_seed(0)
X = torch.randn(4, 3, generator=g)
T = torch.randn(4, 2, generator=g)
W0 = torch.randn(3, 2, generator=g)
B0 = torch.randn(2, generator=g)


def problem_loss(w, b):
    """mean((x @ w + b - t)^2) + 0.1 * sum(w^4) + 0.5 * sum(b^2)"""
    return ((X @ w + b - T) ** 2).mean() + 0.1 * (w**4).sum() + 0.5 * (b**2).sum()


def fresh_params():
    return (torch.nn.Parameter(W0.clone()), torch.nn.Parameter(B0.clone()))


def run_torch(make_opt):
    w, b = fresh_params()
    opt = make_opt(w, b)
    traj = []
    for _ in range(STEPS):
        opt.zero_grad()
        problem_loss(w, b).backward()
        opt.step()
        traj.append({"w": flat(w), "b": flat(b)})
    return traj


def run_lion(lr, betas, wd):
    """NumPy reference of Lion (Chen et al. 2023, Algorithm 2)."""
    w, b = fresh_params()
    ps = [w, b]
    m = [np.zeros(p.shape) for p in ps]
    traj = []
    for _ in range(STEPS):
        for p in ps:
            p.grad = None
        problem_loss(w, b).backward()
        with torch.no_grad():
            for i, p in enumerate(ps):
                gr = p.grad.numpy()
                c = betas[0] * m[i] + (1 - betas[0]) * gr
                new = p.numpy() * (1 - lr * wd) - lr * np.sign(c)
                m[i] = betas[1] * m[i] + (1 - betas[1]) * gr
                p.copy_(torch.from_numpy(new))
        traj.append({"w": flat(w), "b": flat(b)})
    return traj


O = torch.optim
CASES = {
    "sgd": ("sgd", {"lr": 0.1}, lambda w, b: O.SGD([w, b], lr=0.1)),
    "sgd_momentum": (
        "sgd",
        {"lr": 0.05, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01},
        lambda w, b: O.SGD([w, b], lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01),
    ),
    "sgd_nesterov": (
        "sgd",
        {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01},
        lambda w, b: O.SGD([w, b], lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
    ),
    "sgd_maximize": (
        "sgd",
        {"lr": 0.01, "momentum": 0.5, "maximize": True},
        lambda w, b: O.SGD([w, b], lr=0.01, momentum=0.5, maximize=True),
    ),
    "adam": ("adam", {"lr": 0.1}, lambda w, b: O.Adam([w, b], lr=0.1)),
    "adam_l2_amsgrad": (
        "adam",
        {"lr": 0.05, "betas": [0.8, 0.9], "weight_decay": 0.1, "amsgrad": True},
        lambda w, b: O.Adam([w, b], lr=0.05, betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True),
    ),
    "adamw": ("adamw", {"lr": 0.05}, lambda w, b: O.AdamW([w, b], lr=0.05)),
    "adamw_amsgrad_maximize": (
        "adamw",
        {"lr": 0.05, "weight_decay": 0.1, "amsgrad": True, "maximize": True},
        lambda w, b: O.AdamW([w, b], lr=0.05, weight_decay=0.1, amsgrad=True, maximize=True),
    ),
    "adamax": (
        "adamax",
        {"lr": 0.1, "weight_decay": 0.01},
        lambda w, b: O.Adamax([w, b], lr=0.1, weight_decay=0.01),
    ),
    "nadam": ("nadam", {"lr": 0.1}, lambda w, b: O.NAdam([w, b], lr=0.1)),
    "nadam_l2": (
        "nadam",
        {"lr": 0.05, "weight_decay": 0.1, "momentum_decay": 0.01},
        lambda w, b: O.NAdam([w, b], lr=0.05, weight_decay=0.1, momentum_decay=0.01),
    ),
    "nadam_decoupled": (
        "nadam",
        {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True},
        lambda w, b: O.NAdam([w, b], lr=0.05, weight_decay=0.1, decoupled_weight_decay=True),
    ),
    "radam": ("radam", {"lr": 0.1}, lambda w, b: O.RAdam([w, b], lr=0.1)),
    "radam_rectified": (
        "radam",
        {"lr": 0.1, "betas": [0.9, 0.8], "weight_decay": 0.05},
        lambda w, b: O.RAdam([w, b], lr=0.1, betas=(0.9, 0.8), weight_decay=0.05),
    ),
    "radam_decoupled": (
        "radam",
        {"lr": 0.1, "betas": [0.9, 0.8], "weight_decay": 0.1, "decoupled_weight_decay": True},
        lambda w, b: O.RAdam(
            [w, b], lr=0.1, betas=(0.9, 0.8), weight_decay=0.1, decoupled_weight_decay=True
        ),
    ),
    "rmsprop": ("rmsprop", {"lr": 0.01}, lambda w, b: O.RMSprop([w, b], lr=0.01)),
    "rmsprop_centered_momentum": (
        "rmsprop",
        {"lr": 0.01, "alpha": 0.9, "momentum": 0.9, "centered": True, "weight_decay": 0.01},
        lambda w, b: O.RMSprop(
            [w, b], lr=0.01, alpha=0.9, momentum=0.9, centered=True, weight_decay=0.01
        ),
    ),
    "adagrad": ("adagrad", {"lr": 0.1}, lambda w, b: O.Adagrad([w, b], lr=0.1)),
    "adagrad_opts": (
        "adagrad",
        {"lr": 0.1, "lr_decay": 0.1, "initial_accumulator_value": 0.5, "weight_decay": 0.01},
        lambda w, b: O.Adagrad(
            [w, b], lr=0.1, lr_decay=0.1, initial_accumulator_value=0.5, weight_decay=0.01
        ),
    ),
    "groups_sgd": (
        "sgd_groups",
        {},
        lambda w, b: O.SGD(
            [{"params": [w], "lr": 0.1, "momentum": 0.9}, {"params": [b], "lr": 0.01}], lr=0.5
        ),
    ),
    "groups_adam": (
        "adam_groups",
        {},
        lambda w, b: O.Adam(
            [{"params": [w], "lr": 0.1}, {"params": [b], "lr": 0.01, "weight_decay": 0.1}]
        ),
    ),
}


def optim_cases():
    out = []
    for name, (kind, opts, make) in CASES.items():
        out.append({"name": name, "kind": kind, "opts": opts, "trajectory": run_torch(make)})
    lion = {"lr": 0.01, "betas": [0.9, 0.99], "weight_decay": 0.1}
    out.append(
        {"name": "lion", "kind": "lion", "opts": lion, "trajectory": run_lion(0.01, (0.9, 0.99), 0.1)}
    )
    return out


def clip_cases():
    w, b = fresh_params()
    problem_loss(w, b).backward()
    grads = {"w": flat(w.grad), "b": flat(b.grad)}
    cases = []
    for max_norm, norm_type in [(0.5, 2.0), (0.5, float("inf")), (0.3, 1.0), (0.4, 3.0), (100.0, 2.0)]:
        gw, gb = w.grad.clone(), b.grad.clone()
        pw, pb = torch.nn.Parameter(W0.clone()), torch.nn.Parameter(B0.clone())
        pw.grad, pb.grad = gw, gb
        total = torch.nn.utils.clip_grad_norm_([pw, pb], max_norm, norm_type=norm_type)
        cases.append(
            {
                "max_norm": max_norm,
                "norm_type": "inf" if norm_type == float("inf") else norm_type,
                "total_norm": float(total),
                "w": flat(pw.grad),
                "b": flat(pb.grad),
            }
        )
    pw, pb = torch.nn.Parameter(W0.clone()), torch.nn.Parameter(B0.clone())
    pw.grad, pb.grad = w.grad.clone(), b.grad.clone()
    torch.nn.utils.clip_grad_value_([pw, pb], 0.2)
    value = {"clip": 0.2, "w": flat(pw.grad), "b": flat(pb.grad)}
    return {"grads": grads, "norm": cases, "value": value}


def rosenbrock(a, b):
    return (100.0 * (b - a**2) ** 2 + (1.0 - a) ** 2).sum()


A0 = [-1.5, 0.5, 1.2]
B0_R = [2.0, -0.5, 1.0]


def lbfgs_cases():
    out = []
    # Without a line search, Rosenbrock amplifies rounding quickly: in PyTorch itself a 1e-15 change of
    # the start moves the default run by 7e-10 after 2 steps and by 2e-6 after 3, so it stops at 2.
    configs = [
        ("lbfgs_default", {"lr": 1.0, "max_iter": 20, "line_search_fn": None}, 2),
        ("lbfgs_small", {"lr": 0.3, "max_iter": 7, "history_size": 3, "line_search_fn": None}, 4),
        ("lbfgs_wolfe", {"lr": 1.0, "max_iter": 20, "line_search_fn": "strong_wolfe"}, 3),
        ("lbfgs_wolfe_short", {"lr": 1.0, "max_iter": 5, "history_size": 2, "line_search_fn": "strong_wolfe"}, 5),
    ]
    for name, opts, steps in configs:
        a = torch.nn.Parameter(torch.tensor(A0))
        b = torch.nn.Parameter(torch.tensor(B0_R))
        opt = O.LBFGS([a, b], **opts)

        def closure():
            opt.zero_grad()
            loss = rosenbrock(a, b)
            loss.backward()
            return loss

        traj = []
        for _ in range(steps):
            loss = opt.step(closure)
            st = opt.state[a]
            traj.append(
                {
                    "loss": float(loss.detach()),
                    "a": flat(a),
                    "b": flat(b),
                    "func_evals": st["func_evals"],
                    "n_iter": st["n_iter"],
                }
            )
        out.append({"name": name, "opts": opts, "a0": A0, "b0": B0_R, "trajectory": traj})
    return out


# ---------------------------------------------------------------- schedulers
S = torch.optim.lr_scheduler
SCHED_STEPS = 30
METRICS = [1.0, 0.9, 0.95, 0.91, 0.9, 0.905, 0.8, 0.8, 0.8, 0.8, 0.85, 0.7, 0.71, 0.7, 0.7, 0.69,
           0.7, 0.7, 0.7, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]


def simple(cls, **kw):
    return lambda opt: cls(opt, **kw)


# The functions of LambdaLR and MultiplicativeLR, by the names the fixture gives them; the tests
# define the same functions under these names.
LAMBDAS = {
    "pow095": lambda e: 0.95**e,
    "inverse": lambda e: 1.0 / (1.0 + e),
    "const09": lambda e: 0.9,
    "halve_every_3": lambda e: 0.5 if e % 3 == 0 else 1.0,
}


def with_lambdas(cls, names):
    fns = [LAMBDAS[n] for n in names]
    return lambda opt: cls(opt, fns if len(fns) > 1 else fns[0])


SCHEDS = [
    ("StepLR", {"step_size": 5, "gamma": 0.5}, simple(S.StepLR, step_size=5, gamma=0.5)),
    ("MultiStepLR", {"milestones": [3, 7, 7, 15], "gamma": 0.3},
     simple(S.MultiStepLR, milestones=[3, 7, 7, 15], gamma=0.3)),
    ("ConstantLR", {"factor": 0.25, "total_iters": 4}, simple(S.ConstantLR, factor=0.25, total_iters=4)),
    ("LinearLR", {"start_factor": 0.1, "end_factor": 1.0, "total_iters": 10},
     simple(S.LinearLR, start_factor=0.1, end_factor=1.0, total_iters=10)),
    ("LinearLR", {"start_factor": 1.0, "end_factor": 0.2, "total_iters": 20},
     simple(S.LinearLR, start_factor=1.0, end_factor=0.2, total_iters=20)),
    ("ExponentialLR", {"gamma": 0.9}, simple(S.ExponentialLR, gamma=0.9)),
    ("CosineAnnealingLR", {"T_max": 10, "eta_min": 0.001},
     simple(S.CosineAnnealingLR, T_max=10, eta_min=0.001)),
    ("CosineAnnealingWarmRestarts", {"T_0": 5, "T_mult": 2, "eta_min": 0.001},
     simple(S.CosineAnnealingWarmRestarts, T_0=5, T_mult=2, eta_min=0.001)),
    ("CosineAnnealingWarmRestarts", {"T_0": 7, "T_mult": 1, "eta_min": 0.0},
     simple(S.CosineAnnealingWarmRestarts, T_0=7, T_mult=1, eta_min=0.0)),
    ("PolynomialLR", {"total_iters": 20, "power": 2.0}, simple(S.PolynomialLR, total_iters=20, power=2.0)),
    ("OneCycleLR", {"max_lr": [1.0, 0.5], "total_steps": 30, "anneal_strategy": "cos", "three_phase": False},
     lambda opt: S.OneCycleLR(opt, max_lr=[1.0, 0.5], total_steps=30, cycle_momentum=False)),
    ("OneCycleLR", {"max_lr": [0.8], "total_steps": 30, "anneal_strategy": "linear", "three_phase": True,
                    "pct_start": 0.25, "div_factor": 10.0, "final_div_factor": 100.0},
     lambda opt: S.OneCycleLR(opt, max_lr=0.8, total_steps=30, cycle_momentum=False, anneal_strategy="linear",
                              three_phase=True, pct_start=0.25, div_factor=10.0, final_div_factor=100.0)),
    ("SequentialLR", {"milestones": [5], "schedulers": [
        ["LinearLR", {"start_factor": 0.1, "end_factor": 1.0, "total_iters": 5}],
        ["CosineAnnealingLR", {"T_max": 20, "eta_min": 0.0}]]},
     lambda opt: S.SequentialLR(opt, [S.LinearLR(opt, start_factor=0.1, total_iters=5),
                                      S.CosineAnnealingLR(opt, T_max=20)], milestones=[5])),
    ("SequentialLR", {"milestones": [4, 12], "schedulers": [
        ["ConstantLR", {"factor": 0.5, "total_iters": 3}], ["ExponentialLR", {"gamma": 0.9}],
        ["StepLR", {"step_size": 3, "gamma": 0.5}]]},
     lambda opt: S.SequentialLR(opt, [S.ConstantLR(opt, factor=0.5, total_iters=3), S.ExponentialLR(opt, gamma=0.9),
                                      S.StepLR(opt, step_size=3, gamma=0.5)], milestones=[4, 12])),
    ("ChainedScheduler", {"schedulers": [
        ["ConstantLR", {"factor": 0.5, "total_iters": 5}], ["ExponentialLR", {"gamma": 0.9}]]},
     lambda opt: S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=5), S.ExponentialLR(opt, gamma=0.9)])),
    ("LambdaLR", {"lr_lambda": ["pow095", "inverse"]}, with_lambdas(S.LambdaLR, ["pow095", "inverse"])),
    ("LambdaLR", {"lr_lambda": ["inverse"]}, with_lambdas(S.LambdaLR, ["inverse"])),
    ("MultiplicativeLR", {"lr_lambda": ["const09"]}, with_lambdas(S.MultiplicativeLR, ["const09"])),
    ("MultiplicativeLR", {"lr_lambda": ["const09", "halve_every_3"]},
     with_lambdas(S.MultiplicativeLR, ["const09", "halve_every_3"])),
    ("SequentialLR", {"milestones": [6], "schedulers": [
        ["LambdaLR", {"lr_lambda": ["inverse"]}], ["MultiplicativeLR", {"lr_lambda": ["const09"]}]]},
     lambda opt: S.SequentialLR(opt, [S.LambdaLR(opt, LAMBDAS["inverse"]),
                                      S.MultiplicativeLR(opt, LAMBDAS["const09"])], milestones=[6])),
    ("ReduceLROnPlateau", {"mode": "min", "factor": 0.5, "patience": 2, "threshold": 0.01, "threshold_mode": "abs",
                           "cooldown": 1, "min_lr": [0.01, 0.0]},
     lambda opt: S.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=2, threshold=0.01, threshold_mode="abs",
                                     cooldown=1, min_lr=[0.01, 0.0])),
    ("ReduceLROnPlateau", {"mode": "max", "factor": 0.3, "patience": 1, "threshold": 0.05, "threshold_mode": "rel",
                           "cooldown": 0, "min_lr": [0.0]},
     lambda opt: S.ReduceLROnPlateau(opt, mode="max", factor=0.3, patience=1, threshold=0.05)),
]


def sched_cases():
    out = []
    for name, args, make in SCHEDS:
        p1 = torch.nn.Parameter(torch.zeros(2))
        p2 = torch.nn.Parameter(torch.zeros(2))
        opt = O.SGD([{"params": [p1], "lr": 0.1}, {"params": [p2], "lr": 0.05}], lr=0.1)
        sched = make(opt)
        lrs = []
        for i in range(SCHED_STEPS):
            lrs.append([float(g["lr"]) for g in opt.param_groups])
            opt.step()
            if name == "ReduceLROnPlateau":
                m = METRICS[i] if args["mode"] == "min" else 2.0 - METRICS[i]
                sched.step(m)
            else:
                sched.step()
        out.append({"name": name, "args": args, "lrs": lrs})
    return {"initial_lrs": [0.1, 0.05], "metrics": METRICS, "cases": out}


def main():
    optim = {
        "x": flat(X), "t": flat(T),
        "params": {"w": flat(W0), "b": flat(B0)},
        "steps": STEPS,
        "cases": optim_cases(),
        "clip": clip_cases(),
        "lbfgs": lbfgs_cases(),
    }
    with open(os.path.join(OUT, "optim.json"), "w") as f:
        json.dump(optim, f)
    with open(os.path.join(OUT, "sched.json"), "w") as f:
        json.dump(sched_cases(), f)


if __name__ == "__main__":
    main()
