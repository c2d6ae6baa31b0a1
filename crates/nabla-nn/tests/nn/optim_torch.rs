//! `nabla_nn::optim` against PyTorch: parameter trajectories of every optimizer over ten steps on a
//! fixed problem, gradient clipping and L-BFGS on Rosenbrock, from `tests/fixtures/optim.json`
//! (written by `scripts/gen_torch_optim_fixtures.py`, float64), plus state save/restore, frozen
//! parameters, gradient accumulation and argument errors.

use crate::torch_support::{T, floats};
use nabla_core::{Backend, Result};
use nabla_cpu::CpuBackend;
use nabla_nn::optim::{
    Adagrad, AdagradConfig, Adam, AdamConfig, AdamW, Adamax, AdamaxConfig, GradMap, Lbfgs,
    LbfgsConfig, LineSearch, Lion, LionConfig, NAdam, NAdamConfig, Optimizer, RAdam, RAdamConfig,
    RmsProp, RmsPropConfig, Sgd, SgdConfig, clip_grad_norm, clip_grad_norm_opts, clip_grad_value,
};
use nabla_nn::{Module, Param, Strictness, load_state_dict};
use serde_json::Value;

type Opt = Box<dyn Optimizer<CpuBackend>>;

fn fixture() -> &'static Value {
    crate::torch_support::fixture("optim.json")
}

fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}[{i}]: got {g}, PyTorch {w} (diff {:e})",
            (g - w).abs()
        );
    }
}

fn values(p: &Param<CpuBackend>) -> Vec<f64> {
    p.value().to_vec::<f64>().expect("f64 values")
}

#[derive(Module)]
#[module(crate = nabla_nn)]
struct Problem<B: Backend> {
    w: Param<B>,
    b: Param<B>,
}

struct Setup {
    model: Problem<CpuBackend>,
    x: T,
    t: T,
}

impl Setup {
    /// The problem at PyTorch's initial parameters, loaded by name.
    fn new(fx: &Value) -> Setup {
        let cpu = CpuBackend::new();
        let zeros = |shape: &[usize]| {
            Param::new(T::zeros(shape.to_vec(), nabla_core::DType::F64, &cpu).unwrap()).unwrap()
        };
        let model = Problem {
            w: zeros(&[3, 2]),
            b: zeros(&[2]),
        };
        let state = vec![
            (
                "w".to_string(),
                T::from_vec(floats(&fx["params"]["w"]), [3, 2], &cpu).unwrap(),
            ),
            (
                "b".to_string(),
                T::from_vec(floats(&fx["params"]["b"]), [2], &cpu).unwrap(),
            ),
        ];
        load_state_dict(&model, &state, Strictness::Strict).expect("names match PyTorch's");
        Setup {
            x: T::from_vec(floats(&fx["x"]), [4, 3], &cpu).unwrap(),
            t: T::from_vec(floats(&fx["t"]), [4, 2], &cpu).unwrap(),
            model,
        }
    }

    /// `mean((x @ w + b - t)^2) + 0.1 sum(w^4) + 0.5 sum(b^2)`.
    fn loss(&self) -> Result<T> {
        let (w, b) = (self.model.w.value(), self.model.b.value());
        let fit = self
            .x
            .matmul(&w)?
            .add(&b)?
            .sub(&self.t)?
            .square()?
            .mean_all()?;
        let reg = w.square()?.square()?.sum_all()?.mul(0.1)?;
        fit.add(reg)?.add(b.square()?.sum_all()?.mul(0.5)?)
    }

    fn grads(&self) -> nabla_tensor::Gradients<CpuBackend> {
        self.loss().and_then(|l| l.backward()).expect("backward")
    }

    fn check(&self, want: &Value, tol: f64, what: &str) {
        assert_close(
            &values(&self.model.w),
            &floats(&want["w"]),
            tol,
            &format!("{what} w"),
        );
        assert_close(
            &values(&self.model.b),
            &floats(&want["b"]),
            tol,
            &format!("{what} b"),
        );
    }
}

fn num(opts: &Value, key: &str, default: f64) -> f64 {
    opts[key].as_f64().unwrap_or(default)
}

fn flag(opts: &Value, key: &str) -> bool {
    opts[key].as_bool().unwrap_or(false)
}

fn betas(opts: &Value, default: (f64, f64)) -> (f64, f64) {
    opts["betas"].as_array().map_or(default, |b| {
        (b[0].as_f64().unwrap(), b[1].as_f64().unwrap())
    })
}

/// The nabla optimizer of a fixture case.
fn make(kind: &str, o: &Value, m: &Problem<CpuBackend>) -> Result<Opt> {
    let params = m.parameters();
    let wd = |d| num(o, "weight_decay", d);
    let lr = num(o, "lr", 0.0);
    Ok(match kind {
        "sgd" => Box::new(Sgd::new(
            params,
            SgdConfig {
                lr,
                momentum: num(o, "momentum", 0.0),
                dampening: num(o, "dampening", 0.0),
                weight_decay: wd(0.0),
                nesterov: flag(o, "nesterov"),
                maximize: flag(o, "maximize"),
            },
        )?),
        "adam" | "adamw" => {
            let base = if kind == "adamw" {
                AdamConfig::adamw()
            } else {
                AdamConfig::default()
            };
            let config = AdamConfig {
                lr,
                betas: betas(o, base.betas),
                weight_decay: wd(base.weight_decay),
                amsgrad: flag(o, "amsgrad"),
                maximize: flag(o, "maximize"),
                ..base
            };
            if kind == "adamw" {
                Box::new(AdamW::new(params, config)?)
            } else {
                Box::new(Adam::new(params, config)?)
            }
        }
        "adamax" => Box::new(Adamax::new(
            params,
            AdamaxConfig {
                lr,
                weight_decay: wd(0.0),
                ..Default::default()
            },
        )?),
        "nadam" => Box::new(NAdam::new(
            params,
            NAdamConfig {
                lr,
                weight_decay: wd(0.0),
                momentum_decay: num(o, "momentum_decay", 4e-3),
                decoupled_weight_decay: flag(o, "decoupled_weight_decay"),
                ..Default::default()
            },
        )?),
        "radam" => Box::new(RAdam::new(
            params,
            RAdamConfig {
                lr,
                betas: betas(o, (0.9, 0.999)),
                weight_decay: wd(0.0),
                decoupled_weight_decay: flag(o, "decoupled_weight_decay"),
                ..Default::default()
            },
        )?),
        "rmsprop" => Box::new(RmsProp::new(
            params,
            RmsPropConfig {
                lr,
                alpha: num(o, "alpha", 0.99),
                momentum: num(o, "momentum", 0.0),
                centered: flag(o, "centered"),
                weight_decay: wd(0.0),
                ..Default::default()
            },
        )?),
        "adagrad" => Box::new(Adagrad::new(
            params,
            AdagradConfig {
                lr,
                lr_decay: num(o, "lr_decay", 0.0),
                initial_accumulator_value: num(o, "initial_accumulator_value", 0.0),
                weight_decay: wd(0.0),
                ..Default::default()
            },
        )?),
        "lion" => Box::new(Lion::new(
            params,
            LionConfig {
                lr,
                betas: betas(o, (0.9, 0.99)),
                weight_decay: wd(0.0),
                ..Default::default()
            },
        )?),
        "sgd_groups" => {
            let mut opt = Sgd::new(
                vec![m.w.clone()],
                SgdConfig {
                    lr: 0.1,
                    momentum: 0.9,
                    ..Default::default()
                },
            )?;
            opt.add_param_group(
                vec![m.b.clone()],
                SgdConfig {
                    lr: 0.01,
                    ..Default::default()
                },
            )?;
            Box::new(opt)
        }
        "adam_groups" => {
            let mut opt = Adam::new(
                vec![m.w.clone()],
                AdamConfig {
                    lr: 0.1,
                    ..Default::default()
                },
            )?;
            opt.add_param_group(
                vec![m.b.clone()],
                AdamConfig {
                    lr: 0.01,
                    weight_decay: 0.1,
                    ..Default::default()
                },
            )?;
            Box::new(opt)
        }
        other => panic!("unknown optimizer kind {other}"),
    })
}

fn cases(fx: &Value) -> &Vec<Value> {
    fx["cases"].as_array().expect("cases")
}

#[test]
fn optimizers_match_pytorch_trajectories() -> Result<()> {
    let fx = fixture();
    for case in cases(fx) {
        let name = case["name"].as_str().unwrap();
        let s = Setup::new(fx);
        let mut opt = make(case["kind"].as_str().unwrap(), &case["opts"], &s.model)?;
        for (i, want) in case["trajectory"].as_array().unwrap().iter().enumerate() {
            opt.step(&s.grads())?;
            s.check(want, 1e-9, &format!("{name} step {}", i + 1));
        }
    }
    Ok(())
}

#[test]
fn param_groups_have_their_own_learning_rates() -> Result<()> {
    let fx = fixture();
    let s = Setup::new(fx);
    let mut opt = make("adam_groups", &Value::Null, &s.model)?;
    assert_eq!(opt.param_groups().len(), 2);
    assert_eq!((opt.lr(0), opt.lr(1)), (0.1, 0.01));
    assert_eq!(opt.param_groups()[1].weight_decay(), 0.1);
    opt.set_lr(1, 0.02);
    assert_eq!(opt.lr(1), 0.02);
    let mut sgd = Sgd::new(vec![s.model.w.clone()], SgdConfig::default())?;
    let dup = sgd.add_param_group(vec![s.model.w.clone()], SgdConfig::default());
    assert!(dup.unwrap_err().to_string().contains("more than one group"));
    Ok(())
}

#[test]
fn state_dict_restore_midway_continues_the_trajectory() -> Result<()> {
    let fx = fixture();
    for case in cases(fx) {
        let (name, kind) = (
            case["name"].as_str().unwrap(),
            case["kind"].as_str().unwrap(),
        );
        let traj = case["trajectory"].as_array().unwrap();
        let first = Setup::new(fx);
        let mut opt = make(kind, &case["opts"], &first.model)?;
        for _ in 0..4 {
            opt.step(&first.grads())?;
        }
        let saved = opt.state_dict();
        // A new model (new parameter identities) at the same values, and a new optimizer.
        let second = Setup::new(fx);
        load_state_dict(&second.model, &first.model.state_dict(), Strictness::Strict)?;
        let mut resumed = make(kind, &case["opts"], &second.model)?;
        resumed.load_state_dict(&saved)?;
        for (i, want) in traj.iter().enumerate().skip(4) {
            resumed.step(&second.grads())?;
            second.check(want, 1e-9, &format!("{name} resumed step {}", i + 1));
        }
    }
    Ok(())
}

#[test]
fn state_dict_names_and_mismatches() -> Result<()> {
    let fx = fixture();
    let s = Setup::new(fx);
    let mut adam = make(
        "adam",
        &serde_json::json!({"lr": 0.1, "amsgrad": true}),
        &s.model,
    )?;
    adam.step(&s.grads())?;
    let saved = adam.state_dict();
    let names: Vec<&str> = saved.tensors.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        names.contains(&"state.0.exp_avg") && names.contains(&"state.1.max_exp_avg_sq"),
        "{names:?}"
    );
    assert_eq!(saved.meta["state"]["1"]["step"], 1);
    let mut sgd = make("sgd", &serde_json::json!({"lr": 0.1}), &s.model)?;
    let err = sgd.load_state_dict(&saved).unwrap_err().to_string();
    assert!(err.contains("Adam") && err.contains("SGD"), "{err}");
    // Same optimizer over a parameter of another shape.
    let cpu = CpuBackend::new();
    let other = Problem {
        w: Param::new(T::zeros([2, 2], nabla_core::DType::F64, &cpu)?)?,
        b: Param::new(T::zeros([2], nabla_core::DType::F64, &cpu)?)?,
    };
    let mut adam2 = make(
        "adam",
        &serde_json::json!({"lr": 0.1, "amsgrad": true}),
        &other,
    )?;
    let err = adam2.load_state_dict(&saved).unwrap_err().to_string();
    assert!(err.contains("state.0.exp_avg"), "{err}");
    Ok(())
}

#[test]
fn frozen_parameter_stays_unchanged() -> Result<()> {
    let fx = fixture();
    let s = Setup::new(fx);
    let mut opt = make("adam", &serde_json::json!({"lr": 0.1}), &s.model)?;
    let (w0, b0) = (values(&s.model.w), values(&s.model.b));
    s.model.b.freeze();
    let grads = s.grads();
    opt.step(&grads)?;
    // Even a gradient handed in explicitly does not move a frozen parameter.
    let mut map = GradMap::new();
    map.insert(s.model.b.id(), s.model.b.data().ones_like()?);
    opt.step_with(&map)?;
    assert_eq!(values(&s.model.b), b0);
    assert_ne!(values(&s.model.w), w0);
    Ok(())
}

#[test]
fn accumulated_gradients_give_the_same_steps() -> Result<()> {
    let fx = fixture();
    let case = cases(fx)
        .iter()
        .find(|c| c["name"] == "sgd_momentum")
        .unwrap();
    let s = Setup::new(fx);
    let mut opt = make("sgd", &case["opts"], &s.model)?;
    for (i, want) in case["trajectory"]
        .as_array()
        .unwrap()
        .iter()
        .take(4)
        .enumerate()
    {
        opt.zero_grad();
        for _ in 0..2 {
            opt.accumulate(&s.loss()?.mul(0.5)?.backward()?)?;
        }
        assert_eq!(opt.accumulated_mut().len(), 2);
        opt.step_accumulated()?;
        s.check(want, 1e-12, &format!("accumulated step {}", i + 1));
    }
    Ok(())
}

#[test]
fn clipping_matches_pytorch() -> Result<()> {
    let fx = fixture();
    let clip = &fx["clip"];
    let s = Setup::new(fx);
    let (w, b) = (&s.model.w, &s.model.b);
    let grads = GradMap::from_gradients(&s.model.parameters(), &s.grads());
    let check = |map: &GradMap<CpuBackend>, want: &Value, what: &str| {
        assert_close(
            &map.get(w.id()).unwrap().to_vec::<f64>().unwrap(),
            &floats(&want["w"]),
            1e-12,
            what,
        );
        assert_close(
            &map.get(b.id()).unwrap().to_vec::<f64>().unwrap(),
            &floats(&want["b"]),
            1e-12,
            what,
        );
    };
    check(&grads, &clip["grads"], "gradients");
    for case in clip["norm"].as_array().unwrap() {
        let norm_type = case["norm_type"].as_f64().unwrap_or(f64::INFINITY);
        let mut g = grads.clone();
        let total = clip_grad_norm(&mut g, case["max_norm"].as_f64().unwrap(), norm_type)?;
        let what = format!("clip_grad_norm p={norm_type}");
        assert_close(
            &[total],
            &[case["total_norm"].as_f64().unwrap()],
            1e-12,
            &what,
        );
        check(&g, case, &what);
    }
    let mut g = grads.clone();
    clip_grad_value(&mut g, clip["value"]["clip"].as_f64().unwrap())?;
    check(&g, &clip["value"], "clip_grad_value");

    let mut bad = grads.clone();
    bad.insert(
        b.id(),
        T::from_vec(vec![f64::NAN, 1.0], [2], &CpuBackend::new())?,
    );
    let err = clip_grad_norm_opts(&mut bad, 1.0, 2.0, true)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("NaN") && err.contains("clip_grad_norm"),
        "{err}"
    );
    assert!(clip_grad_norm(&mut bad, 1.0, 2.0)?.is_nan());
    assert!(clip_grad_norm(&mut g, 1.0, -1.0).is_err());
    assert!(clip_grad_value(&mut g, -1.0).is_err());
    Ok(())
}

#[test]
fn argument_errors_name_the_optimizer() {
    let cpu = CpuBackend::new();
    let p = || vec![Param::new(T::zeros([2], nabla_core::DType::F64, &cpu).unwrap()).unwrap()];
    let err = Sgd::new(
        p(),
        SgdConfig {
            nesterov: true,
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("SGD") && err.contains("Nesterov"), "{err}");
    let err = Adam::new(
        p(),
        AdamConfig {
            betas: (0.9, 1.0),
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("Adam") && err.contains("beta parameter at index 1"),
        "{err}"
    );
    let err = RmsProp::new(
        p(),
        RmsPropConfig {
            lr: -1.0,
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("RMSprop") && err.contains("-1"), "{err}");
}

#[derive(Module)]
#[module(crate = nabla_nn)]
struct Rosenbrock<B: Backend> {
    a: Param<B>,
    b: Param<B>,
}

impl Rosenbrock<CpuBackend> {
    fn new(case: &Value) -> Self {
        let cpu = CpuBackend::new();
        let zeros = || Param::new(T::zeros([3], nabla_core::DType::F64, &cpu).unwrap()).unwrap();
        let r = Rosenbrock {
            a: zeros(),
            b: zeros(),
        };
        let state = vec![
            (
                "a".to_string(),
                T::from_vec(floats(&case["a0"]), [3], &cpu).unwrap(),
            ),
            (
                "b".to_string(),
                T::from_vec(floats(&case["b0"]), [3], &cpu).unwrap(),
            ),
        ];
        load_state_dict(&r, &state, Strictness::Strict).unwrap();
        r
    }

    /// `sum(100 (b - a^2)^2 + (1 - a)^2)` and its gradients.
    fn eval(&self) -> Result<(T, nabla_tensor::Gradients<CpuBackend>)> {
        let (a, b) = (self.a.value(), self.b.value());
        let loss = b
            .sub(a.square()?)?
            .square()?
            .mul(100.0)?
            .add(a.neg()?.add(1.0)?.square()?)?
            .sum_all()?;
        let grads = loss.backward()?;
        Ok((loss, grads))
    }

    fn check(&self, opt: &Lbfgs<CpuBackend>, loss: &T, want: &Value, what: &str) {
        assert_close(
            &values(&self.a),
            &floats(&want["a"]),
            1e-8,
            &format!("{what} a"),
        );
        assert_close(
            &values(&self.b),
            &floats(&want["b"]),
            1e-8,
            &format!("{what} b"),
        );
        assert_close(
            &[loss.item::<f64>().unwrap()],
            &[want["loss"].as_f64().unwrap()],
            1e-8,
            &format!("{what} loss"),
        );
        assert_eq!(
            opt.func_evals() as u64,
            want["func_evals"].as_u64().unwrap(),
            "{what} func_evals"
        );
        assert_eq!(
            opt.n_iter() as u64,
            want["n_iter"].as_u64().unwrap(),
            "{what} n_iter"
        );
    }
}

fn lbfgs_config(o: &Value) -> LbfgsConfig {
    LbfgsConfig {
        lr: num(o, "lr", 1.0),
        max_iter: o["max_iter"].as_u64().unwrap_or(20) as usize,
        history_size: o["history_size"].as_u64().unwrap_or(100) as usize,
        line_search_fn: o["line_search_fn"]
            .as_str()
            .map(|_| LineSearch::StrongWolfe),
        ..Default::default()
    }
}

#[test]
fn lbfgs_matches_pytorch_iterates() -> Result<()> {
    let fx = fixture();
    for case in fx["lbfgs"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let r = Rosenbrock::new(case);
        let mut opt = Lbfgs::new(r.parameters(), lbfgs_config(&case["opts"]))?;
        for (i, want) in case["trajectory"].as_array().unwrap().iter().enumerate() {
            let loss = opt.step(|| r.eval())?;
            r.check(&opt, &loss, want, &format!("{name} step {}", i + 1));
        }
    }
    Ok(())
}

#[test]
fn lbfgs_state_restore_continues() -> Result<()> {
    let fx = fixture();
    for case in fx["lbfgs"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let traj = case["trajectory"].as_array().unwrap();
        let r = Rosenbrock::new(case);
        let mut opt = Lbfgs::new(r.parameters(), lbfgs_config(&case["opts"]))?;
        for _ in 1..traj.len() {
            opt.step(|| r.eval())?;
        }
        let saved = opt.state_dict()?;
        let r2 = Rosenbrock::new(case);
        load_state_dict(&r2, &r.state_dict(), Strictness::Strict)?;
        let mut resumed = Lbfgs::new(r2.parameters(), LbfgsConfig::default())?;
        resumed.load_state_dict(&saved)?;
        assert_eq!(
            resumed.param_groups()[0].options,
            opt.param_groups()[0].options
        );
        let loss = resumed.step(|| r2.eval())?;
        r2.check(
            &resumed,
            &loss,
            &traj[traj.len() - 1],
            &format!("{name} resumed"),
        );
        let err = Sgd::new(r.parameters(), SgdConfig::default())?
            .load_state_dict(&saved)
            .unwrap_err();
        assert!(err.to_string().contains("LBFGS"), "{err}");
    }
    Ok(())
}
