//! The chainable schedulers: step, multi-step, constant, linear, exponential, cosine, polynomial
//! and one-cycle rules.

use super::*;

rule! {
    /// Multiplies the learning rate by `gamma` every `step_size` epochs.
    StepLR = StepDecay { /** Period of the decay. */ step_size: i64, /** Decay factor. */ gamma: f64 }
}

impl LrRule for StepDecay {
    fn name(&self) -> &'static str {
        "StepLR"
    }
    fn validate(&self) -> Result<()> {
        positive("StepLR", "step_size", self.step_size as f64)
    }
    fn get_lr(&self, epoch: i64, lr: f64, _: f64, _: usize) -> Result<f64> {
        Ok(if epoch == 0 || epoch % self.step_size != 0 {
            lr
        } else {
            lr * self.gamma
        })
    }
    fn closed_form(&self, epoch: i64, base: f64, _: usize) -> Option<f64> {
        Some(base * self.gamma.powi(epoch.div_euclid(self.step_size) as i32))
    }
    fn to_json(&self) -> Value {
        json!({"step_size": self.step_size, "gamma": self.gamma})
    }
}

rule! {
    /// Multiplies the learning rate by `gamma` at each milestone epoch.
    MultiStepLR = MultiStepDecay { /** Epochs of the decays (a repeated epoch decays repeatedly). */ milestones: Vec<i64>, /** Decay factor. */ gamma: f64 }
}

impl LrRule for MultiStepDecay {
    fn name(&self) -> &'static str {
        "MultiStepLR"
    }
    fn validate(&self) -> Result<()> {
        Ok(())
    }
    fn get_lr(&self, epoch: i64, lr: f64, _: f64, _: usize) -> Result<f64> {
        let count = self.milestones.iter().filter(|&&m| m == epoch).count();
        Ok(if count == 0 {
            lr
        } else {
            lr * self.gamma.powi(count as i32)
        })
    }
    fn closed_form(&self, epoch: i64, base: f64, _: usize) -> Option<f64> {
        let passed = self.milestones.iter().filter(|&&m| m <= epoch).count();
        Some(base * self.gamma.powi(passed as i32))
    }
    fn to_json(&self) -> Value {
        json!({"milestones": self.milestones, "gamma": self.gamma})
    }
}

rule! {
    /// Scales the learning rate by `factor` until epoch `total_iters`.
    ConstantLR = ConstantFactor { /** The scale (PyTorch's default 1/3). */ factor: f64, /** Epochs scaled (PyTorch's default 5). */ total_iters: i64 }
}

impl LrRule for ConstantFactor {
    fn name(&self) -> &'static str {
        "ConstantLR"
    }
    fn validate(&self) -> Result<()> {
        if (0.0..=1.0).contains(&self.factor) {
            Ok(())
        } else {
            Err(Error::invalid(
                "ConstantLR",
                format!("factor must lie in [0, 1], got {}", self.factor),
            ))
        }
    }
    fn get_lr(&self, epoch: i64, lr: f64, _: f64, _: usize) -> Result<f64> {
        Ok(if epoch == 0 {
            lr * self.factor
        } else if epoch != self.total_iters {
            lr
        } else {
            lr * (1.0 / self.factor)
        })
    }
    fn closed_form(&self, epoch: i64, base: f64, _: usize) -> Option<f64> {
        let done = if epoch >= self.total_iters { 1.0 } else { 0.0 };
        Some(base * (self.factor + done * (1.0 - self.factor)))
    }
    fn to_json(&self) -> Value {
        json!({"factor": self.factor, "total_iters": self.total_iters})
    }
}

rule! {
    /// Scales the learning rate by a factor going linearly from `start_factor` to `end_factor` over
    /// `total_iters` epochs (linear warm-up).
    LinearLR = LinearRamp {
        /** Factor at epoch 0, in (0, 1] (PyTorch's default 1/3). */ start_factor: f64,
        /** Factor from epoch `total_iters` on, in [0, 1] (default 1). */ end_factor: f64,
        /** Length of the ramp (default 5). */ total_iters: i64,
    }
}

impl LrRule for LinearRamp {
    fn name(&self) -> &'static str {
        "LinearLR"
    }
    fn validate(&self) -> Result<()> {
        if !(self.start_factor > 0.0 && self.start_factor <= 1.0) {
            return Err(Error::invalid(
                "LinearLR",
                format!("start_factor must lie in (0, 1], got {}", self.start_factor),
            ));
        }
        if !(0.0..=1.0).contains(&self.end_factor) {
            return Err(Error::invalid(
                "LinearLR",
                format!("end_factor must lie in [0, 1], got {}", self.end_factor),
            ));
        }
        positive("LinearLR", "total_iters", self.total_iters as f64)
    }
    fn get_lr(&self, epoch: i64, lr: f64, _: f64, _: usize) -> Result<f64> {
        let (s, e, n) = (self.start_factor, self.end_factor, self.total_iters as f64);
        Ok(if epoch == 0 {
            lr * s
        } else if epoch > self.total_iters {
            lr
        } else {
            lr * (1.0 + (e - s) / (n * s + (epoch - 1) as f64 * (e - s)))
        })
    }
    fn closed_form(&self, epoch: i64, base: f64, _: usize) -> Option<f64> {
        let (s, e, n) = (self.start_factor, self.end_factor, self.total_iters);
        Some(base * (s + (e - s) * epoch.min(n) as f64 / n as f64))
    }
    fn to_json(&self) -> Value {
        json!({"start_factor": self.start_factor, "end_factor": self.end_factor, "total_iters": self.total_iters})
    }
}

rule! {
    /// Multiplies the learning rate by `gamma` every epoch.
    ExponentialLR = ExponentialDecay { /** Decay factor. */ gamma: f64 }
}

impl LrRule for ExponentialDecay {
    fn name(&self) -> &'static str {
        "ExponentialLR"
    }
    fn validate(&self) -> Result<()> {
        Ok(())
    }
    fn get_lr(&self, epoch: i64, lr: f64, _: f64, _: usize) -> Result<f64> {
        Ok(if epoch == 0 { lr } else { lr * self.gamma })
    }
    fn closed_form(&self, epoch: i64, base: f64, _: usize) -> Option<f64> {
        Some(base * self.gamma.powi(epoch as i32))
    }
    fn to_json(&self) -> Value {
        json!({"gamma": self.gamma})
    }
}

rule! {
    /// Cosine annealing from the base learning rate to `eta_min` over `t_max` epochs (and back up
    /// over the next `t_max`, as PyTorch).
    CosineAnnealingLR = CosineAnnealing { /** Half period, in epochs. */ t_max: i64, /** Minimum learning rate. */ eta_min: f64 }
}

impl LrRule for CosineAnnealing {
    fn name(&self) -> &'static str {
        "CosineAnnealingLR"
    }
    fn validate(&self) -> Result<()> {
        positive("CosineAnnealingLR", "T_max", self.t_max as f64)
    }
    fn get_lr(&self, epoch: i64, lr: f64, base: f64, _: usize) -> Result<f64> {
        let t = self.t_max as f64;
        Ok(if epoch == 0 {
            lr
        } else if (epoch - 1 - self.t_max).rem_euclid(2 * self.t_max) == 0 {
            lr + (base - self.eta_min) * (1.0 - (PI / t).cos()) / 2.0
        } else {
            (1.0 + (PI * epoch as f64 / t).cos()) / (1.0 + (PI * (epoch - 1) as f64 / t).cos())
                * (lr - self.eta_min)
                + self.eta_min
        })
    }
    fn closed_form(&self, epoch: i64, base: f64, _: usize) -> Option<f64> {
        let cos = (PI * epoch as f64 / self.t_max as f64).cos();
        Some(self.eta_min + (base - self.eta_min) * (1.0 + cos) / 2.0)
    }
    fn to_json(&self) -> Value {
        json!({"T_max": self.t_max, "eta_min": self.eta_min})
    }
}

rule! {
    /// Polynomial decay to 0 over `total_iters` epochs.
    PolynomialLR = PolynomialDecay { /** Length of the decay (PyTorch's default 5). */ total_iters: i64, /** Power of the polynomial (default 1). */ power: f64 }
}

impl LrRule for PolynomialDecay {
    fn name(&self) -> &'static str {
        "PolynomialLR"
    }
    fn validate(&self) -> Result<()> {
        positive("PolynomialLR", "total_iters", self.total_iters as f64)
    }
    fn get_lr(&self, epoch: i64, lr: f64, _: f64, _: usize) -> Result<f64> {
        if epoch == 0 || epoch > self.total_iters {
            return Ok(lr);
        }
        let n = self.total_iters as f64;
        let e = epoch as f64;
        Ok(lr * ((1.0 - e / n) / (1.0 - (e - 1.0) / n)).powf(self.power))
    }
    fn closed_form(&self, epoch: i64, base: f64, _: usize) -> Option<f64> {
        let n = self.total_iters;
        Some(base * (1.0 - epoch.min(n) as f64 / n as f64).powf(self.power))
    }
    fn to_json(&self) -> Value {
        json!({"total_iters": self.total_iters, "power": self.power})
    }
}

/// How [`OneCycle`] anneals between its phases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anneal {
    /// Cosine annealing (`"cos"`, the default).
    Cos,
    /// Linear annealing (`"linear"`).
    Linear,
}

/// The rule of [`OneCycleLR`]: up from `max_lr / div_factor` to `max_lr` over `pct_start` of the
/// steps, then down to `initial / final_div_factor` (with a symmetric middle phase when
/// `three_phase`).
#[derive(Clone, Debug, PartialEq)]
pub struct OneCycle {
    /// Peak learning rate, one value for all groups or one per group.
    pub max_lr: Vec<f64>,
    /// Number of steps of the cycle.
    pub total_steps: i64,
    /// Fraction of the steps spent increasing (default 0.3).
    pub pct_start: f64,
    /// Annealing shape (default cosine).
    pub anneal_strategy: Anneal,
    /// `initial_lr = max_lr / div_factor` (default 25).
    pub div_factor: f64,
    /// `min_lr = initial_lr / final_div_factor` (default 1e4).
    pub final_div_factor: f64,
    /// Three phases (up, back down to the initial rate, then annihilation) instead of two.
    pub three_phase: bool,
}

impl OneCycle {
    /// PyTorch's defaults for a cycle peaking at `max_lr` over `total_steps` steps.
    pub fn new(max_lr: f64, total_steps: i64) -> Self {
        OneCycle {
            max_lr: vec![max_lr],
            total_steps,
            pct_start: 0.3,
            anneal_strategy: Anneal::Cos,
            div_factor: 25.0,
            final_div_factor: 1e4,
            three_phase: false,
        }
    }

    fn max_lr(&self, group: usize) -> f64 {
        self.max_lr
            .get(group)
            .or(self.max_lr.first())
            .copied()
            .unwrap_or(f64::NAN)
    }

    fn anneal(&self, start: f64, end: f64, pct: f64) -> f64 {
        match self.anneal_strategy {
            Anneal::Cos => end + (start - end) / 2.0 * ((PI * pct).cos() + 1.0),
            Anneal::Linear => (end - start) * pct + start,
        }
    }
}

/// PyTorch's `OneCycleLR` (without momentum cycling): a [`Scheduler`] with the rule [`OneCycle`].
pub type OneCycleLR = Scheduler<OneCycle>;

impl Scheduler<OneCycle> {
    /// Attaches a one-cycle schedule to `opt`: sets each group's `initial_lr` to `max_lr /
    /// div_factor` and takes the initial step.
    pub fn new<B: Backend>(opt: &mut dyn Optimizer<B>, rule: OneCycle) -> Result<Self> {
        let groups = opt.param_groups().len();
        if rule.max_lr.len() != 1 && rule.max_lr.len() != groups {
            return Err(Error::invalid(
                "OneCycleLR",
                format!(
                    "expected 1 or {groups} values of max_lr, got {}",
                    rule.max_lr.len()
                ),
            ));
        }
        for (i, g) in opt.param_groups_mut().iter_mut().enumerate() {
            let initial = rule.max_lr(i) / rule.div_factor;
            g.initial_lr = Some(initial);
            g.options.set_lr(initial);
        }
        Scheduler::with_rule(opt, rule)
    }
}

impl LrRule for OneCycle {
    fn name(&self) -> &'static str {
        "OneCycleLR"
    }
    fn validate(&self) -> Result<()> {
        positive("OneCycleLR", "total_steps", self.total_steps as f64)?;
        if !(0.0..=1.0).contains(&self.pct_start) {
            return Err(Error::invalid(
                "OneCycleLR",
                format!("pct_start must lie in [0, 1], got {}", self.pct_start),
            ));
        }
        Ok(())
    }
    fn get_lr(&self, epoch: i64, _: f64, base: f64, group: usize) -> Result<f64> {
        if epoch > self.total_steps {
            return Err(Error::invalid(
                "OneCycleLR",
                format!(
                    "tried to step {epoch} times; the total number of steps is {}",
                    self.total_steps
                ),
            ));
        }
        let (initial, max) = (base, self.max_lr(group));
        let min = initial / self.final_div_factor;
        let (n, p) = (self.total_steps as f64, self.pct_start);
        let phases: Vec<(f64, f64, f64)> = if self.three_phase {
            vec![
                (p * n - 1.0, initial, max),
                (2.0 * p * n - 2.0, max, initial),
                (n - 1.0, initial, min),
            ]
        } else {
            vec![(p * n - 1.0, initial, max), (n - 1.0, max, min)]
        };
        let step = epoch as f64;
        let mut start_step = 0.0;
        for (i, &(end_step, from, to)) in phases.iter().enumerate() {
            if step <= end_step || i == phases.len() - 1 {
                return Ok(self.anneal(from, to, (step - start_step) / (end_step - start_step)));
            }
            start_step = end_step;
        }
        Ok(initial)
    }
    fn closed_form(&self, _: i64, _: f64, _: usize) -> Option<f64> {
        None
    }
    fn to_json(&self) -> Value {
        json!({
            "max_lr": self.max_lr, "total_steps": self.total_steps, "pct_start": self.pct_start,
            "anneal_strategy": if self.anneal_strategy == Anneal::Cos { "cos" } else { "linear" },
            "div_factor": self.div_factor, "final_div_factor": self.final_div_factor,
            "three_phase": self.three_phase,
        })
    }
}
