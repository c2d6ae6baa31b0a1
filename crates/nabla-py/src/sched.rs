//! `nabla_rs._nabla.optim.Scheduler`: nabla-nn's learning-rate schedulers over the optimizers of
//! `optim.rs`. `nabla_rs.optim.lr_scheduler` gives them PyTorch's classes and signatures.

use crate::error::{IntoPyResult, stash};
use crate::json::{Args, to_json, to_py};
use crate::optim::PyOptimizer;
use nabla_any::AnyBackend;
use nabla_core::{Error, Result};
use nabla_nn::optim::Optimizer;
use nabla_nn::sched::{
    Anneal, ChainedScheduler, ConstantLR, CosineAnnealingLR, CosineAnnealingWarmRestarts,
    ExponentialLR, LambdaLR, LinearLR, LrLambda, LrLambdas, LrScheduler, MultiStepLR,
    MultiplicativeLR, OneCycle, OneCycleLR, PlateauConfig, PlateauMode, PolynomialLR,
    ReduceLROnPlateau, SequentialLR, StepLR, ThresholdMode,
};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Arc;

type B = AnyBackend;

/// The scheduler behind a Python one.
enum Inner {
    /// A chainable scheduler.
    Chainable(Box<dyn LrScheduler<B>>),
    /// `CosineAnnealingWarmRestarts`, which also jumps to fractional epochs.
    Restarts(CosineAnnealingWarmRestarts),
    /// `ReduceLROnPlateau`, stepped with a metric.
    Plateau(ReduceLROnPlateau),
    /// Moved into a `SequentialLR` or `ChainedScheduler`, which steps it from now on.
    Taken,
}

/// A learning-rate scheduler of a `nabla_rs.optim` optimizer.
#[pyclass(name = "Scheduler", module = "nabla_rs._nabla.optim")]
pub struct PyScheduler {
    kind: String,
    inner: Inner,
}

/// Python callables as the factors of `LambdaLR` and `MultiplicativeLR`.
fn lambdas(functions: Vec<Py<PyAny>>) -> LrLambdas {
    LrLambdas(
        functions
            .into_iter()
            .map(|f| -> LrLambda {
                Arc::new(move |epoch| {
                    Python::attach(|py| {
                        f.call1(py, (epoch,))
                            .and_then(|r| r.extract::<f64>(py))
                            .map_err(stash)
                    })
                })
            })
            .collect(),
    )
}

fn plateau_config(a: &Args<'_>) -> Result<PlateauConfig> {
    let mode = match a.text("mode")? {
        "min" => PlateauMode::Min,
        "max" => PlateauMode::Max,
        other => return Err(a.bad("mode", &format!("'min' or 'max' (not {other:?})"))),
    };
    let threshold_mode = match a.text("threshold_mode")? {
        "rel" => ThresholdMode::Rel,
        "abs" => ThresholdMode::Abs,
        other => {
            return Err(a.bad("threshold_mode", &format!("'rel' or 'abs' (not {other:?})")));
        }
    };
    Ok(PlateauConfig {
        mode,
        factor: a.real("factor")?,
        patience: a.count("patience")?,
        threshold: a.real("threshold")?,
        threshold_mode,
        cooldown: a.count("cooldown")?,
        min_lr: a.reals("min_lr")?,
        eps: a.real("eps")?,
    })
}

fn one_cycle(a: &Args<'_>) -> Result<OneCycle> {
    let anneal_strategy = match a.text("anneal_strategy")? {
        "cos" => Anneal::Cos,
        "linear" => Anneal::Linear,
        other => {
            return Err(a.bad(
                "anneal_strategy",
                &format!("'cos' or 'linear' (not {other:?})"),
            ));
        }
    };
    Ok(OneCycle {
        max_lr: a.reals("max_lr")?,
        total_steps: a.int("total_steps")?,
        pct_start: a.real("pct_start")?,
        anneal_strategy,
        div_factor: a.real("div_factor")?,
        final_div_factor: a.real("final_div_factor")?,
        three_phase: a.flag("three_phase")?,
    })
}

/// The chainable scheduler `kind` attached to `opt`.
fn chainable(
    opt: &mut dyn Optimizer<B>,
    a: &Args<'_>,
    functions: Vec<Py<PyAny>>,
    children: Vec<Box<dyn LrScheduler<B>>>,
) -> Result<Box<dyn LrScheduler<B>>> {
    Ok(match a.kind {
        "StepLR" => Box::new(StepLR::new(opt, a.int("step_size")?, a.real("gamma")?)?),
        "MultiStepLR" => Box::new(MultiStepLR::new(
            opt,
            a.ints("milestones")?,
            a.real("gamma")?,
        )?),
        "ConstantLR" => Box::new(ConstantLR::new(
            opt,
            a.real("factor")?,
            a.int("total_iters")?,
        )?),
        "LinearLR" => Box::new(LinearLR::new(
            opt,
            a.real("start_factor")?,
            a.real("end_factor")?,
            a.int("total_iters")?,
        )?),
        "ExponentialLR" => Box::new(ExponentialLR::new(opt, a.real("gamma")?)?),
        "CosineAnnealingLR" => Box::new(CosineAnnealingLR::new(
            opt,
            a.int("T_max")?,
            a.real("eta_min")?,
        )?),
        "PolynomialLR" => Box::new(PolynomialLR::new(
            opt,
            a.int("total_iters")?,
            a.real("power")?,
        )?),
        "OneCycleLR" => Box::new(OneCycleLR::new(opt, one_cycle(a)?)?),
        "LambdaLR" => Box::new(LambdaLR::new(opt, lambdas(functions))?),
        "MultiplicativeLR" => Box::new(MultiplicativeLR::new(opt, lambdas(functions))?),
        "SequentialLR" => Box::new(SequentialLR::new(opt, children, a.ints("milestones")?)?),
        "ChainedScheduler" => Box::new(ChainedScheduler::new(opt, children)?),
        other => {
            return Err(Error::invalid(
                "lr_scheduler",
                format!("unknown scheduler {other:?}"),
            ));
        }
    })
}

impl PyScheduler {
    /// The scheduler as a part of a `SequentialLR` or `ChainedScheduler`, which owns it from now on.
    fn take(&mut self) -> PyResult<Box<dyn LrScheduler<B>>> {
        match std::mem::replace(&mut self.inner, Inner::Taken) {
            Inner::Chainable(s) => Ok(s),
            Inner::Restarts(s) => Ok(Box::new(s)),
            Inner::Plateau(s) => {
                self.inner = Inner::Plateau(s);
                Err(PyTypeError::new_err(
                    "ReduceLROnPlateau steps with a metric and cannot be chained",
                ))
            }
            Inner::Taken => Err(self.taken()),
        }
    }

    fn taken(&self) -> PyErr {
        PyRuntimeError::new_err(format!(
            "this {} is part of a SequentialLR or ChainedScheduler, which steps it",
            self.kind
        ))
    }
}

#[pymethods]
impl PyScheduler {
    /// `Scheduler(kind, optimizer, args, functions=[], children=[])`: scheduler `kind` (PyTorch's
    /// class name) with its arguments as a dict; `functions` are `lr_lambda`s and `children` the
    /// schedulers a `SequentialLR` or `ChainedScheduler` runs.
    #[new]
    #[pyo3(signature = (kind, optimizer, args, functions = Vec::new(), children = Vec::new()))]
    fn new(
        kind: String,
        optimizer: &Bound<'_, PyOptimizer>,
        args: &Bound<'_, PyDict>,
        functions: Vec<Py<PyAny>>,
        children: Vec<Bound<'_, PyScheduler>>,
    ) -> PyResult<Self> {
        let a = Args {
            op: "lr_scheduler",
            kind: &kind,
            json: to_json(args, &kind)?,
        };
        let mut engine = optimizer.try_borrow_mut()?;
        let opt: &mut dyn Optimizer<B> = engine.first_order()?;
        let inner = match kind.as_str() {
            "ReduceLROnPlateau" => {
                Inner::Plateau(ReduceLROnPlateau::new(opt, plateau_config(&a).py()?).py()?)
            }
            "CosineAnnealingWarmRestarts" => Inner::Restarts(
                CosineAnnealingWarmRestarts::new(
                    opt,
                    a.int("T_0").py()?,
                    a.int("T_mult").py()?,
                    a.real("eta_min").py()?,
                )
                .py()?,
            ),
            _ => {
                let mut parts = Vec::new();
                for c in &children {
                    parts.push(c.try_borrow_mut()?.take()?);
                }
                Inner::Chainable(chainable(opt, &a, functions, parts).py()?)
            }
        };
        Ok(PyScheduler { kind, inner })
    }

    /// One step: the next epoch; `value` is the metric of `ReduceLROnPlateau`, or the epoch to jump
    /// to (PyTorch's deprecated `step(epoch)`; fractional for `CosineAnnealingWarmRestarts`).
    #[pyo3(signature = (optimizer, value = None))]
    fn step(&mut self, optimizer: &Bound<'_, PyOptimizer>, value: Option<f64>) -> PyResult<()> {
        let mut engine = optimizer.try_borrow_mut()?;
        let opt: &mut dyn Optimizer<B> = engine.first_order()?;
        match (&mut self.inner, value) {
            (Inner::Plateau(s), Some(metric)) => {
                s.step(opt, metric);
                Ok(())
            }
            (Inner::Plateau(_), None) => Err(PyTypeError::new_err(
                "ReduceLROnPlateau.step() needs the metric: step(val_loss)",
            )),
            (Inner::Restarts(s), Some(epoch)) => s.step_epoch(opt, epoch).py(),
            (Inner::Restarts(s), None) => s.step(opt).py(),
            (Inner::Chainable(s), Some(epoch)) if epoch.fract() == 0.0 => {
                s.step_to(opt, epoch as i64).py()
            }
            (Inner::Chainable(_), Some(epoch)) => Err(PyValueError::new_err(format!(
                "{} jumps to whole epochs only, got {epoch}",
                self.kind
            ))),
            (Inner::Chainable(s), None) => s.step(opt).py(),
            (Inner::Taken, _) => Err(self.taken()),
        }
    }

    /// The learning rates the last step set, per group.
    fn get_last_lr(&self) -> PyResult<Vec<f64>> {
        match &self.inner {
            Inner::Chainable(s) => Ok(s.last_lr()),
            Inner::Restarts(s) => Ok(LrScheduler::<B>::last_lr(s)),
            Inner::Plateau(s) => Ok(s.last_lr().to_vec()),
            Inner::Taken => Err(self.taken()),
        }
    }

    /// The epoch of the last step.
    #[getter]
    fn last_epoch(&self) -> PyResult<i64> {
        match &self.inner {
            Inner::Chainable(s) => Ok(s.last_epoch()),
            Inner::Restarts(s) => Ok(LrScheduler::<B>::last_epoch(s)),
            Inner::Plateau(s) => Ok(s.state()["last_epoch"].as_i64().unwrap_or(0)),
            Inner::Taken => Err(self.taken()),
        }
    }

    /// The scheduler's state, as a dict.
    fn state_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let state = match &self.inner {
            Inner::Chainable(s) => s.state(),
            Inner::Restarts(s) => LrScheduler::<B>::state(s),
            Inner::Plateau(s) => s.state(),
            Inner::Taken => return Err(self.taken()),
        };
        to_py(py, &state)
    }

    /// Restores a state from `state_dict` of the same kind of scheduler.
    fn load_state_dict(&mut self, state: &Bound<'_, PyAny>) -> PyResult<()> {
        let state = to_json(state, "scheduler state")?;
        match &mut self.inner {
            Inner::Chainable(s) => s.load_state(&state).py(),
            Inner::Restarts(s) => LrScheduler::<B>::load_state(s, &state).py(),
            Inner::Plateau(s) => s.load_state(&state).py(),
            Inner::Taken => Err(self.taken()),
        }
    }
}
