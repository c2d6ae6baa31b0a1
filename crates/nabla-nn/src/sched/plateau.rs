//! Reducing the learning rate when a metric stops improving.

use super::*;

/// Whether [`ReduceLROnPlateau`] watches for a metric that should decrease or increase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlateauMode {
    /// The metric should decrease (a loss; `"min"`).
    Min,
    /// The metric should increase (an accuracy; `"max"`).
    Max,
}

/// How [`ReduceLROnPlateau`] measures a significant improvement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThresholdMode {
    /// Relative to the best value (`"rel"`): `best * (1 -/+ threshold)`.
    Rel,
    /// Absolute (`"abs"`): `best -/+ threshold`.
    Abs,
}

/// Arguments of [`ReduceLROnPlateau`], with PyTorch's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct PlateauConfig {
    /// Direction of improvement.
    pub mode: PlateauMode,
    /// `new_lr = lr * factor` (< 1).
    pub factor: f64,
    /// Epochs without improvement tolerated before reducing.
    pub patience: usize,
    /// Minimal significant change.
    pub threshold: f64,
    /// Relative or absolute threshold.
    pub threshold_mode: ThresholdMode,
    /// Epochs to wait after a reduction before counting again.
    pub cooldown: usize,
    /// Lower bound of the learning rate: one value for all groups or one per group.
    pub min_lr: Vec<f64>,
    /// Reductions smaller than this are skipped.
    pub eps: f64,
}

impl Default for PlateauConfig {
    fn default() -> Self {
        PlateauConfig {
            mode: PlateauMode::Min,
            factor: 0.1,
            patience: 10,
            threshold: 1e-4,
            threshold_mode: ThresholdMode::Rel,
            cooldown: 0,
            min_lr: vec![0.0],
            eps: 1e-8,
        }
    }
}

/// PyTorch's `ReduceLROnPlateau`: reduces the learning rates by `factor` when a metric has not
/// improved for `patience` epochs. It is stepped with the metric, so it is not an [`LrScheduler`].
#[derive(Clone, Debug)]
pub struct ReduceLROnPlateau {
    config: PlateauConfig,
    best: f64,
    num_bad_epochs: usize,
    cooldown_counter: usize,
    last_epoch: i64,
    last_lr: Vec<f64>,
}

impl ReduceLROnPlateau {
    /// Watches `opt` with `config`.
    pub fn new<B: Backend>(opt: &dyn Optimizer<B>, config: PlateauConfig) -> Result<Self> {
        const OP: &str = "ReduceLROnPlateau";
        if config.factor.is_nan() || config.factor >= 1.0 {
            return Err(Error::invalid(
                OP,
                format!("factor should be < 1.0, got {}", config.factor),
            ));
        }
        let groups = opt.param_groups().len();
        if config.min_lr.len() != 1 && config.min_lr.len() != groups {
            return Err(Error::invalid(
                OP,
                format!(
                    "expected 1 or {groups} values of min_lr, got {}",
                    config.min_lr.len()
                ),
            ));
        }
        let best = match config.mode {
            PlateauMode::Min => f64::INFINITY,
            PlateauMode::Max => f64::NEG_INFINITY,
        };
        Ok(ReduceLROnPlateau {
            config,
            best,
            num_bad_epochs: 0,
            cooldown_counter: 0,
            last_epoch: 0,
            last_lr: lrs(opt),
        })
    }

    fn is_better(&self, a: f64) -> bool {
        let (t, best) = (self.config.threshold, self.best);
        match (self.config.mode, self.config.threshold_mode) {
            (PlateauMode::Min, ThresholdMode::Rel) => a < best * (1.0 - t),
            (PlateauMode::Min, ThresholdMode::Abs) => a < best - t,
            (PlateauMode::Max, ThresholdMode::Rel) => a > best * (t + 1.0),
            (PlateauMode::Max, ThresholdMode::Abs) => a > best + t,
        }
    }

    /// Records the epoch's `metric` and reduces the learning rates after `patience` bad epochs.
    pub fn step<B: Backend>(&mut self, opt: &mut dyn Optimizer<B>, metric: f64) {
        self.last_epoch += 1;
        if self.is_better(metric) {
            self.best = metric;
            self.num_bad_epochs = 0;
        } else {
            self.num_bad_epochs += 1;
        }
        if self.cooldown_counter > 0 {
            self.cooldown_counter -= 1;
            self.num_bad_epochs = 0;
        }
        if self.num_bad_epochs > self.config.patience {
            for i in 0..opt.param_groups().len() {
                let old = opt.lr(i);
                let min_lr = self
                    .config
                    .min_lr
                    .get(i)
                    .or(self.config.min_lr.first())
                    .copied()
                    .unwrap_or(0.0);
                let new = (old * self.config.factor).max(min_lr);
                if old - new > self.config.eps {
                    opt.set_lr(i, new);
                }
            }
            self.cooldown_counter = self.config.cooldown;
            self.num_bad_epochs = 0;
        }
        self.last_lr = lrs(opt);
    }

    /// The learning rates after the last step.
    pub fn last_lr(&self) -> &[f64] {
        &self.last_lr
    }

    /// The best metric so far.
    pub fn best(&self) -> f64 {
        self.best
    }

    /// The state as JSON (counters and best value; infinities as null).
    pub fn state(&self) -> Value {
        json!({
            "name": "ReduceLROnPlateau", "best": self.best, "num_bad_epochs": self.num_bad_epochs,
            "cooldown_counter": self.cooldown_counter, "last_epoch": self.last_epoch,
            "last_lr": self.last_lr,
        })
    }

    /// Restores a state from [`ReduceLROnPlateau::state`].
    pub fn load_state(&mut self, state: &Value) -> Result<()> {
        check_name("ReduceLROnPlateau::load_state", state, "ReduceLROnPlateau")?;
        self.best = state["best"].as_f64().unwrap_or(match self.config.mode {
            PlateauMode::Min => f64::INFINITY,
            PlateauMode::Max => f64::NEG_INFINITY,
        });
        self.num_bad_epochs = state["num_bad_epochs"].as_u64().unwrap_or(0) as usize;
        self.cooldown_counter = state["cooldown_counter"].as_u64().unwrap_or(0) as usize;
        self.last_epoch = state["last_epoch"].as_i64().unwrap_or(0);
        self.last_lr = f64_list(&state["last_lr"]);
        Ok(())
    }
}
