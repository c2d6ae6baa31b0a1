//! Cosine annealing with warm restarts (SGDR).

use super::*;

/// PyTorch's `CosineAnnealingWarmRestarts` (SGDR): cosine annealing from the base rate to `eta_min`
/// over `T_i` epochs, restarting with `T_i` multiplied by `T_mult`.
#[derive(Clone, Debug)]
pub struct CosineAnnealingWarmRestarts {
    t_0: i64,
    t_mult: i64,
    eta_min: f64,
    t_i: f64,
    t_cur: f64,
    base_lrs: Vec<f64>,
    last_lr: Vec<f64>,
    last_epoch: i64,
}

impl CosineAnnealingWarmRestarts {
    /// Attaches the schedule to `opt` (first period `t_0` epochs, period factor `t_mult` >= 1,
    /// minimum `eta_min`) and sets the learning rate of epoch 0.
    pub fn new<B: Backend>(
        opt: &mut dyn Optimizer<B>,
        t_0: i64,
        t_mult: i64,
        eta_min: f64,
    ) -> Result<Self> {
        const OP: &str = "CosineAnnealingWarmRestarts";
        positive(OP, "T_0", t_0 as f64)?;
        if t_mult < 1 {
            return Err(Error::invalid(
                OP,
                format!("T_mult must be at least 1, got {t_mult}"),
            ));
        }
        let mut s = CosineAnnealingWarmRestarts {
            t_0,
            t_mult,
            eta_min,
            t_i: t_0 as f64,
            t_cur: -1.0,
            base_lrs: base_lrs(opt),
            last_lr: Vec::new(),
            last_epoch: -1,
        };
        s.step_epoch(opt, 0.0)?;
        Ok(s)
    }

    /// Jumps to a possibly fractional `epoch` (PyTorch's `step(epoch)`, e.g. `epoch + i / iters`).
    pub fn step_epoch<B: Backend>(&mut self, opt: &mut dyn Optimizer<B>, epoch: f64) -> Result<()> {
        if epoch.is_nan() || epoch < 0.0 {
            return Err(Error::invalid(
                "CosineAnnealingWarmRestarts",
                format!("expected a non-negative epoch, got {epoch}"),
            ));
        }
        let (t_0, t_mult) = (self.t_0 as f64, self.t_mult as f64);
        if epoch >= t_0 {
            if self.t_mult == 1 {
                self.t_cur = epoch % t_0;
            } else {
                let n = (epoch / t_0 * (t_mult - 1.0) + 1.0).log(t_mult).floor();
                self.t_cur = epoch - t_0 * (t_mult.powf(n) - 1.0) / (t_mult - 1.0);
                self.t_i = t_0 * t_mult.powf(n);
            }
        } else {
            self.t_i = t_0;
            self.t_cur = epoch;
        }
        self.last_epoch = epoch.floor() as i64;
        self.apply(opt);
        Ok(())
    }

    fn apply<B: Backend>(&mut self, opt: &mut dyn Optimizer<B>) {
        let cos = (PI * self.t_cur / self.t_i).cos();
        self.last_lr = self
            .base_lrs
            .iter()
            .map(|&base| self.eta_min + (base - self.eta_min) * (1.0 + cos) / 2.0)
            .collect();
        set_lrs(opt, &self.last_lr);
    }
}

impl<B: Backend> LrScheduler<B> for CosineAnnealingWarmRestarts {
    fn step(&mut self, opt: &mut dyn Optimizer<B>) -> Result<()> {
        if self.last_epoch < 0 {
            return self.step_epoch(opt, 0.0);
        }
        self.last_epoch += 1;
        self.t_cur += 1.0;
        if self.t_cur >= self.t_i {
            self.t_cur -= self.t_i;
            self.t_i *= self.t_mult as f64;
        }
        self.apply(opt);
        Ok(())
    }

    fn step_to(&mut self, opt: &mut dyn Optimizer<B>, epoch: i64) -> Result<()> {
        self.step_epoch(opt, epoch as f64)
    }

    epoch_accessors!();

    fn state(&self) -> Value {
        json!({
            "name": "CosineAnnealingWarmRestarts", "T_0": self.t_0, "T_mult": self.t_mult,
            "eta_min": self.eta_min, "T_i": self.t_i, "T_cur": self.t_cur, "base_lrs": self.base_lrs,
            "last_lr": self.last_lr, "last_epoch": self.last_epoch,
        })
    }

    fn load_state(&mut self, state: &Value) -> Result<()> {
        check_name(
            "LrScheduler::load_state",
            state,
            "CosineAnnealingWarmRestarts",
        )?;
        self.t_i = state["T_i"].as_f64().unwrap_or(self.t_i);
        self.t_cur = state["T_cur"].as_f64().unwrap_or(self.t_cur);
        load_progress(
            state,
            &mut self.last_epoch,
            &mut self.base_lrs,
            &mut self.last_lr,
        );
        Ok(())
    }
}
