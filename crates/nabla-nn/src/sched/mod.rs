//! Learning-rate schedulers (PyTorch's `torch.optim.lr_scheduler`).
//!
//! A scheduler is attached to an [`Optimizer`] when built (which, as in PyTorch, records each group's
//! `initial_lr` and sets the learning rate of epoch 0), then [`LrScheduler::step`] is called once per
//! epoch (or iteration) after the optimizer's step. The chainable schedulers update the optimizer's
//! current learning rates with PyTorch's recursive formulas, so several can be combined
//! ([`ChainedScheduler`], [`SequentialLR`]). Their state is JSON, for checkpoints.
//!
//! ```
//! use nabla_nn::optim::{Optimizer, Sgd, SgdConfig};
//! use nabla_nn::sched::{LrScheduler, StepLR};
//! use nabla_nn::Param;
//! use nabla_tensor::Tensor;
//! use nabla_cpu::CpuBackend;
//! let cpu = CpuBackend::new();
//! let w = Param::new(Tensor::from_vec(vec![1.0f64], [1], &cpu)?)?;
//! let mut opt = Sgd::new(vec![w], SgdConfig { lr: 0.1, ..Default::default() })?;
//! let mut sched = StepLR::new(&mut opt, 2, 0.5)?;
//! let mut lrs = Vec::new();
//! for _ in 0..5 {
//!     lrs.push(opt.lr(0));
//!     sched.step(&mut opt)?;
//! }
//! assert_eq!(lrs, [0.1, 0.1, 0.05, 0.05, 0.025]);
//! # Ok::<(), nabla_core::Error>(())
//! ```

use crate::optim::Optimizer;
use nabla_core::{Backend, Error, Result};
use serde_json::{Value, json};
use std::f64::consts::PI;

/// A learning-rate scheduler.
pub trait LrScheduler<B: Backend>: Send + Sync {
    /// Advances one epoch and sets the optimizer's learning rates.
    fn step(&mut self, opt: &mut dyn Optimizer<B>) -> Result<()>;

    /// Jumps to `epoch`, with the closed-form learning rate where there is one (PyTorch's deprecated
    /// `step(epoch)`, which [`SequentialLR`] uses at its milestones).
    fn step_to(&mut self, opt: &mut dyn Optimizer<B>, epoch: i64) -> Result<()>;

    /// The epoch of the last step (0 after construction).
    fn last_epoch(&self) -> i64;

    /// Steps back the epoch counter once without touching the optimizer (PyTorch's undo of the
    /// constructors' initial step inside [`SequentialLR`]).
    fn rewind(&mut self);

    /// The learning rates the last step set, per group.
    fn last_lr(&self) -> Vec<f64>;

    /// The scheduler's state as JSON.
    fn state(&self) -> Value;

    /// Restores a state from [`LrScheduler::state`] of the same kind of scheduler.
    fn load_state(&mut self, state: &Value) -> Result<()>;
}

fn lrs<B: Backend>(opt: &dyn Optimizer<B>) -> Vec<f64> {
    (0..opt.param_groups().len()).map(|i| opt.lr(i)).collect()
}

fn set_lrs<B: Backend>(opt: &mut dyn Optimizer<B>, values: &[f64]) {
    for (i, &lr) in values.iter().enumerate() {
        opt.set_lr(i, lr);
    }
}

/// Each group's `initial_lr`, set to its current learning rate where not yet recorded.
fn base_lrs<B: Backend>(opt: &mut dyn Optimizer<B>) -> Vec<f64> {
    opt.param_groups_mut()
        .iter_mut()
        .map(|g| *g.initial_lr.get_or_insert(g.options.lr()))
        .collect()
}

fn check_name(op: &'static str, state: &Value, name: &str) -> Result<()> {
    let saved = state["name"].as_str().unwrap_or("<missing>");
    if saved == name {
        Ok(())
    } else {
        Err(Error::invalid(
            op,
            format!("the state is of a {saved}, not of a {name}"),
        ))
    }
}

fn f64_list(v: &Value) -> Vec<f64> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_f64)
        .collect()
}

/// Implements [`LrScheduler::last_epoch`], [`LrScheduler::rewind`] and [`LrScheduler::last_lr`] for
/// a scheduler that keeps them in fields `last_epoch` and `last_lr`.
macro_rules! epoch_accessors {
    () => {
        fn last_epoch(&self) -> i64 {
            self.last_epoch
        }

        fn rewind(&mut self) {
            self.last_epoch -= 1;
        }

        fn last_lr(&self) -> Vec<f64> {
            self.last_lr.clone()
        }
    };
}

/// Restores `last_epoch` (kept where the state lacks it), `base_lrs` and `last_lr` from a saved
/// state.
fn load_progress(
    state: &Value,
    last_epoch: &mut i64,
    base_lrs: &mut Vec<f64>,
    last_lr: &mut Vec<f64>,
) {
    *last_epoch = state["last_epoch"].as_i64().unwrap_or(*last_epoch);
    *base_lrs = f64_list(&state["base_lrs"]);
    *last_lr = f64_list(&state["last_lr"]);
}

fn positive(op: &'static str, name: &str, v: f64) -> Result<()> {
    if v > 0.0 {
        Ok(())
    } else {
        Err(Error::invalid(
            op,
            format!("{name} must be positive, got {v}"),
        ))
    }
}

/// The formula of a chainable scheduler.
pub trait LrRule: Clone + std::fmt::Debug + Send + Sync {
    /// The scheduler's name (PyTorch's class name).
    fn name(&self) -> &'static str;

    /// Checks the arguments.
    fn validate(&self) -> Result<()>;

    /// The learning rate of `group` at `epoch` from its current value `lr` and its base `base`
    /// (PyTorch's `get_lr`).
    fn get_lr(&self, epoch: i64, lr: f64, base: f64, group: usize) -> Result<f64>;

    /// The closed-form learning rate at `epoch`, where PyTorch has one (`_get_closed_form_lr`).
    fn closed_form(&self, epoch: i64, base: f64, group: usize) -> Option<f64>;

    /// The learning rate the constructor's initial step sets (epoch 0), from the current `lr`; the
    /// same as [`LrRule::get_lr`] at epoch 0 unless the rule tells the initial step apart (PyTorch's
    /// `_is_initial`), as `MultiplicativeLR` does.
    fn initial_lr(&self, lr: f64, base: f64, group: usize) -> Result<f64> {
        self.get_lr(0, lr, base, group)
    }

    /// The arguments as JSON.
    fn to_json(&self) -> Value;
}

/// Which learning rate a scheduler step sets.
#[derive(Clone, Copy)]
enum Step {
    /// The constructor's step to epoch 0.
    Initial,
    /// The next epoch, from the current rates.
    Next,
    /// A jump to an epoch, in closed form where the rule has one.
    Jump,
}

/// A chainable scheduler following the rule `R`; see the aliases [`StepLR`], [`MultiStepLR`],
/// [`ConstantLR`], [`LinearLR`], [`ExponentialLR`], [`CosineAnnealingLR`], [`PolynomialLR`],
/// [`OneCycleLR`], [`LambdaLR`] and [`MultiplicativeLR`].
#[derive(Clone, Debug)]
pub struct Scheduler<R: LrRule> {
    rule: R,
    base_lrs: Vec<f64>,
    last_lr: Vec<f64>,
    last_epoch: i64,
}

impl<R: LrRule> Scheduler<R> {
    /// Attaches `rule` to `opt` and takes the initial step (epoch 0).
    pub fn with_rule<B: Backend>(opt: &mut dyn Optimizer<B>, rule: R) -> Result<Self> {
        rule.validate()?;
        let base_lrs = base_lrs(opt);
        let mut s = Scheduler {
            rule,
            base_lrs,
            last_lr: Vec::new(),
            last_epoch: 0,
        };
        s.apply(opt, Step::Initial)?;
        Ok(s)
    }

    /// The rule's arguments.
    pub fn rule(&self) -> &R {
        &self.rule
    }

    /// The base learning rates (each group's `initial_lr`).
    pub fn base_lrs(&self) -> &[f64] {
        &self.base_lrs
    }

    fn apply<B: Backend>(&mut self, opt: &mut dyn Optimizer<B>, step: Step) -> Result<()> {
        let current = lrs(opt);
        let epoch = self.last_epoch;
        let values = current
            .iter()
            .zip(&self.base_lrs)
            .enumerate()
            .map(|(i, (&lr, &base))| match step {
                Step::Initial => self.rule.initial_lr(lr, base, i),
                Step::Jump => match self.rule.closed_form(epoch, base, i) {
                    Some(v) => Ok(v),
                    None => self.rule.get_lr(epoch, lr, base, i),
                },
                Step::Next => self.rule.get_lr(epoch, lr, base, i),
            })
            .collect::<Result<Vec<f64>>>()?;
        set_lrs(opt, &values);
        self.last_lr = values;
        Ok(())
    }
}

impl<B: Backend, R: LrRule> LrScheduler<B> for Scheduler<R> {
    fn step(&mut self, opt: &mut dyn Optimizer<B>) -> Result<()> {
        self.last_epoch += 1;
        self.apply(opt, Step::Next)
    }

    fn step_to(&mut self, opt: &mut dyn Optimizer<B>, epoch: i64) -> Result<()> {
        self.last_epoch = epoch;
        self.apply(opt, Step::Jump)
    }

    epoch_accessors!();

    fn state(&self) -> Value {
        json!({
            "name": self.rule.name(), "last_epoch": self.last_epoch, "base_lrs": self.base_lrs,
            "last_lr": self.last_lr, "args": self.rule.to_json(),
        })
    }

    fn load_state(&mut self, state: &Value) -> Result<()> {
        check_name("LrScheduler::load_state", state, self.rule.name())?;
        load_progress(
            state,
            &mut self.last_epoch,
            &mut self.base_lrs,
            &mut self.last_lr,
        );
        Ok(())
    }
}

/// Declares a rule struct with public fields and its scheduler alias.
macro_rules! rule {
    ($(#[$m:meta])* $alias:ident = $name:ident { $($(#[$fm:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name { $($(#[$fm])* pub $field: $ty,)* }

        #[doc = concat!("PyTorch's `", stringify!($alias), "`: a [`Scheduler`] with the rule [`", stringify!($name), "`].")]
        pub type $alias = Scheduler<$name>;

        impl Scheduler<$name> {
            #[doc = concat!("Attaches a `", stringify!($alias), "` to `opt` (arguments as PyTorch's) and sets the learning rate of epoch 0.")]
            pub fn new<B: Backend>(opt: &mut dyn Optimizer<B>, $($field: $ty),*) -> Result<Self> {
                Scheduler::with_rule(opt, $name { $($field),* })
            }
        }
    };
}

mod compose;
mod lambda;
mod plateau;
mod restarts;
mod rules;

pub use compose::{ChainedScheduler, SequentialLR};
pub use lambda::{
    LambdaFactor, LambdaLR, LrLambda, LrLambdas, MultiplicativeFactor, MultiplicativeLR,
};
pub use plateau::{PlateauConfig, PlateauMode, ReduceLROnPlateau, ThresholdMode};
pub use restarts::CosineAnnealingWarmRestarts;
pub use rules::{
    Anneal, ConstantFactor, ConstantLR, CosineAnnealing, CosineAnnealingLR, ExponentialDecay,
    ExponentialLR, LinearLR, LinearRamp, MultiStepDecay, MultiStepLR, OneCycle, OneCycleLR,
    PolynomialDecay, PolynomialLR, StepDecay, StepLR,
};
