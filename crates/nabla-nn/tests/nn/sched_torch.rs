//! `nabla_nn::sched` against PyTorch: the learning rates of two parameter groups over 30 steps of
//! each scheduler, from `tests/fixtures/sched.json` (written by
//! `scripts/gen_torch_optim_fixtures.py`), plus state save/restore and argument errors.

use crate::torch_support::floats;
use nabla_core::{DType, Result};
use nabla_cpu::CpuBackend;
use nabla_nn::Param;
use nabla_nn::optim::{Optimizer, Sgd, SgdConfig};
use nabla_nn::sched::{
    Anneal, ChainedScheduler, ConstantLR, CosineAnnealingLR, CosineAnnealingWarmRestarts,
    ExponentialLR, LambdaLR, LinearLR, LrLambda, LrLambdas, LrScheduler, MultiStepLR,
    MultiplicativeLR, OneCycle, OneCycleLR, PlateauConfig, PlateauMode, PolynomialLR,
    ReduceLROnPlateau, SequentialLR, StepLR, ThresholdMode,
};
use nabla_tensor::Tensor;
use serde_json::Value;
use std::sync::Arc;

type Sched = Box<dyn LrScheduler<CpuBackend>>;
type Opt = Sgd<CpuBackend>;

fn fixture() -> &'static Value {
    crate::torch_support::fixture("sched.json")
}

/// SGD with two groups at learning rates 0.1 and 0.05, as the fixture.
fn optimizer() -> Result<Opt> {
    let cpu = CpuBackend::new();
    let p = || Param::new(Tensor::zeros([2], DType::F64, &cpu)?);
    let mut opt = Sgd::new(
        vec![p()?],
        SgdConfig {
            lr: 0.1,
            ..Default::default()
        },
    )?;
    opt.add_param_group(
        vec![p()?],
        SgdConfig {
            lr: 0.05,
            ..Default::default()
        },
    )?;
    Ok(opt)
}

fn int(a: &Value, k: &str) -> i64 {
    a[k].as_i64()
        .unwrap_or_else(|| panic!("integer argument {k}"))
}

fn real(a: &Value, k: &str, default: f64) -> f64 {
    a[k].as_f64().unwrap_or(default)
}

fn children(opt: &mut Opt, a: &Value) -> Result<Vec<Sched>> {
    let list = a["schedulers"].as_array().expect("schedulers");
    list.iter()
        .map(|s| build(opt, s[0].as_str().unwrap(), &s[1]))
        .collect()
}

/// The functions the fixture names in `lr_lambda` (as `LAMBDAS` in the generator).
fn lambdas(a: &Value) -> LrLambdas {
    let named = |name: &str| -> LrLambda {
        match name {
            "pow095" => Arc::new(|e| Ok(0.95f64.powi(e as i32))),
            "inverse" => Arc::new(|e| Ok(1.0 / (1.0 + e as f64))),
            "const09" => Arc::new(|_| Ok(0.9)),
            "halve_every_3" => Arc::new(|e| Ok(if e % 3 == 0 { 0.5 } else { 1.0 })),
            other => panic!("unknown lr_lambda {other}"),
        }
    };
    let names = a["lr_lambda"].as_array().expect("lr_lambda");
    LrLambdas(names.iter().map(|n| named(n.as_str().unwrap())).collect())
}

/// The nabla scheduler of a fixture case, attached to `opt`.
fn build(opt: &mut Opt, name: &str, a: &Value) -> Result<Sched> {
    Ok(match name {
        "StepLR" => Box::new(StepLR::new(
            opt,
            int(a, "step_size"),
            real(a, "gamma", 0.1),
        )?),
        "MultiStepLR" => {
            let milestones = a["milestones"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m.as_i64().unwrap())
                .collect();
            Box::new(MultiStepLR::new(opt, milestones, real(a, "gamma", 0.1))?)
        }
        "ConstantLR" => Box::new(ConstantLR::new(
            opt,
            real(a, "factor", 1.0 / 3.0),
            int(a, "total_iters"),
        )?),
        "LinearLR" => Box::new(LinearLR::new(
            opt,
            real(a, "start_factor", 1.0 / 3.0),
            real(a, "end_factor", 1.0),
            int(a, "total_iters"),
        )?),
        "ExponentialLR" => Box::new(ExponentialLR::new(opt, real(a, "gamma", 0.0))?),
        "CosineAnnealingLR" => Box::new(CosineAnnealingLR::new(
            opt,
            int(a, "T_max"),
            real(a, "eta_min", 0.0),
        )?),
        "CosineAnnealingWarmRestarts" => Box::new(CosineAnnealingWarmRestarts::new(
            opt,
            int(a, "T_0"),
            int(a, "T_mult"),
            real(a, "eta_min", 0.0),
        )?),
        "PolynomialLR" => Box::new(PolynomialLR::new(
            opt,
            int(a, "total_iters"),
            real(a, "power", 1.0),
        )?),
        "OneCycleLR" => {
            let rule = OneCycle {
                max_lr: floats(&a["max_lr"]),
                pct_start: real(a, "pct_start", 0.3),
                anneal_strategy: if a["anneal_strategy"] == "linear" {
                    Anneal::Linear
                } else {
                    Anneal::Cos
                },
                div_factor: real(a, "div_factor", 25.0),
                final_div_factor: real(a, "final_div_factor", 1e4),
                three_phase: a["three_phase"].as_bool().unwrap_or(false),
                ..OneCycle::new(0.0, int(a, "total_steps"))
            };
            Box::new(OneCycleLR::new(opt, rule)?)
        }
        "SequentialLR" => {
            let inner = children(opt, a)?;
            let milestones = a["milestones"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m.as_i64().unwrap())
                .collect();
            Box::new(SequentialLR::new(opt, inner, milestones)?)
        }
        "ChainedScheduler" => {
            let inner = children(opt, a)?;
            Box::new(ChainedScheduler::new(opt, inner)?)
        }
        "LambdaLR" => Box::new(LambdaLR::new(opt, lambdas(a))?),
        "MultiplicativeLR" => Box::new(MultiplicativeLR::new(opt, lambdas(a))?),
        other => panic!("unknown scheduler {other}"),
    })
}

fn plateau_config(a: &Value) -> PlateauConfig {
    PlateauConfig {
        mode: if a["mode"] == "max" {
            PlateauMode::Max
        } else {
            PlateauMode::Min
        },
        factor: real(a, "factor", 0.1),
        patience: int(a, "patience") as usize,
        threshold: real(a, "threshold", 1e-4),
        threshold_mode: if a["threshold_mode"] == "abs" {
            ThresholdMode::Abs
        } else {
            ThresholdMode::Rel
        },
        cooldown: int(a, "cooldown") as usize,
        min_lr: floats(&a["min_lr"]),
        ..PlateauConfig::default()
    }
}

fn assert_lrs(got: &[f64], want: &Value, what: &str) {
    let want = floats(want);
    assert_eq!(got.len(), want.len(), "{what}: groups");
    for (g, w) in got.iter().zip(&want) {
        assert!(
            (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
            "{what}: got {got:?}, PyTorch {want:?}"
        );
    }
}

fn lrs(opt: &Opt) -> Vec<f64> {
    vec![opt.lr(0), opt.lr(1)]
}

fn cases(fx: &Value) -> impl Iterator<Item = (usize, &str, &Value, &Vec<Value>)> {
    let list = fx["cases"].as_array().expect("cases");
    list.iter().enumerate().map(|(i, c)| {
        (
            i,
            c["name"].as_str().unwrap(),
            &c["args"],
            c["lrs"].as_array().unwrap(),
        )
    })
}

#[test]
fn schedulers_match_pytorch() -> Result<()> {
    let fx = fixture();
    let metrics = floats(&fx["metrics"]);
    for (i, name, args, want) in cases(fx) {
        let mut opt = optimizer()?;
        if name == "ReduceLROnPlateau" {
            let mut sched = ReduceLROnPlateau::new(&opt, plateau_config(args))?;
            for (epoch, w) in want.iter().enumerate() {
                assert_lrs(&lrs(&opt), w, &format!("case {i} {name} epoch {epoch}"));
                let m = if args["mode"] == "max" {
                    2.0 - metrics[epoch]
                } else {
                    metrics[epoch]
                };
                sched.step(&mut opt, m);
            }
            continue;
        }
        let mut sched = build(&mut opt, name, args)?;
        for (epoch, w) in want.iter().enumerate() {
            assert_lrs(&lrs(&opt), w, &format!("case {i} {name} epoch {epoch}"));
            sched.step(&mut opt)?;
        }
    }
    Ok(())
}

#[test]
fn scheduler_state_restores_midway() -> Result<()> {
    let fx = fixture();
    for (i, name, args, want) in cases(fx) {
        if name == "ReduceLROnPlateau" {
            continue;
        }
        let mut opt = optimizer()?;
        let mut sched = build(&mut opt, name, args)?;
        for _ in 0..12 {
            sched.step(&mut opt)?;
        }
        let (saved_sched, saved_opt) = (sched.state(), opt.state_dict());
        // Fresh optimizer and scheduler, then both states restored.
        let mut opt2 = optimizer()?;
        let mut sched2 = build(&mut opt2, name, args)?;
        opt2.load_state_dict(&saved_opt)?;
        sched2.load_state(&saved_sched)?;
        assert_eq!(sched2.last_epoch(), sched.last_epoch(), "case {i} {name}");
        for (epoch, w) in want.iter().enumerate().skip(12) {
            assert_lrs(
                &lrs(&opt2),
                w,
                &format!("case {i} {name} resumed epoch {epoch}"),
            );
            sched2.step(&mut opt2)?;
        }
    }
    Ok(())
}

#[test]
fn plateau_state_restores_midway() -> Result<()> {
    let fx = fixture();
    let metrics = floats(&fx["metrics"]);
    let (_, _, args, want) = cases(fx).find(|c| c.1 == "ReduceLROnPlateau").unwrap();
    let mut opt = optimizer()?;
    let mut sched = ReduceLROnPlateau::new(&opt, plateau_config(args))?;
    for &m in &metrics[..10] {
        sched.step(&mut opt, m);
    }
    let mut opt2 = optimizer()?;
    opt2.load_state_dict(&opt.state_dict())?;
    let mut sched2 = ReduceLROnPlateau::new(&opt2, plateau_config(args))?;
    sched2.load_state(&sched.state())?;
    for epoch in 10..want.len() {
        assert_lrs(
            &lrs(&opt2),
            &want[epoch],
            &format!("resumed plateau epoch {epoch}"),
        );
        sched2.step(&mut opt2, metrics[epoch]);
    }
    assert_eq!(sched2.last_lr(), lrs(&opt2).as_slice());
    Ok(())
}

#[test]
fn bad_arguments_are_errors() -> Result<()> {
    let mut opt = optimizer()?;
    let err = StepLR::new(&mut opt, 0, 0.5).unwrap_err().to_string();
    assert!(err.contains("StepLR") && err.contains("step_size"), "{err}");
    let err = LinearLR::new(&mut opt, 0.0, 1.0, 5)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("LinearLR") && err.contains("start_factor"),
        "{err}"
    );
    let err = OneCycleLR::new(
        &mut opt,
        OneCycle {
            max_lr: vec![1.0, 2.0, 3.0],
            ..OneCycle::new(1.0, 10)
        },
    );
    assert!(err.unwrap_err().to_string().contains("max_lr"));
    let mut one = OneCycleLR::new(&mut opt, OneCycle::new(1.0, 2))?;
    one.step(&mut opt)?;
    one.step(&mut opt)?;
    let err = one.step(&mut opt).unwrap_err().to_string();
    assert!(
        err.contains("OneCycleLR") && err.contains("total number of steps is 2"),
        "{err}"
    );
    let err = ReduceLROnPlateau::new(
        &opt,
        PlateauConfig {
            factor: 1.0,
            ..Default::default()
        },
    );
    assert!(err.unwrap_err().to_string().contains("factor"));
    let err = SequentialLR::new(&mut opt, Vec::new(), vec![1])
        .err()
        .expect("error")
        .to_string();
    assert!(err.contains("SequentialLR"), "{err}");
    let mut step = StepLR::new(&mut opt, 3, 0.5)?;
    let state = ExponentialLR::new(&mut opt, 0.9)?;
    let err =
        LrScheduler::<CpuBackend>::load_state(&mut step, &LrScheduler::<CpuBackend>::state(&state));
    assert!(err.unwrap_err().to_string().contains("ExponentialLR"));
    Ok(())
}

#[test]
fn lambda_schedulers_check_their_functions() -> Result<()> {
    let mut opt = optimizer()?;
    let one: LrLambda = Arc::new(|_| Ok(1.0));
    let three = LrLambdas(vec![one.clone(), one.clone(), one.clone()]);
    let err = LambdaLR::new(&mut opt, three).unwrap_err().to_string();
    assert!(
        err.contains("LambdaLR") && err.contains("expected 1 or 2 lr_lambda"),
        "{err}"
    );
    let err = MultiplicativeLR::new(&mut opt, LrLambdas(Vec::new()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("MultiplicativeLR") && err.contains("empty"),
        "{err}"
    );
    // A function's error stops the step and leaves the learning rates as they were.
    let failing: LrLambda = Arc::new(|e| {
        if e < 2 {
            Ok(0.5)
        } else {
            Err(nabla_core::Error::invalid("lr_lambda", "refused epoch 2"))
        }
    });
    let mut sched = LambdaLR::new(&mut opt, LrLambdas(vec![failing]))?;
    LrScheduler::<CpuBackend>::step(&mut sched, &mut opt)?;
    let before = lrs(&opt);
    let err = LrScheduler::<CpuBackend>::step(&mut sched, &mut opt).unwrap_err();
    assert!(err.to_string().contains("refused epoch 2"), "{err}");
    assert_eq!(lrs(&opt), before);
    Ok(())
}
