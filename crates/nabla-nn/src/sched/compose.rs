//! Combining schedulers: one after another ([`SequentialLR`]) or together ([`ChainedScheduler`]).

use super::*;

/// Implements [`LrScheduler::rewind`] (of every child) and [`LrScheduler::last_lr`] for a
/// composite scheduler with fields `schedulers` and `last_lr`.
macro_rules! children_accessors {
    () => {
        fn rewind(&mut self) {
            for s in &mut self.schedulers {
                s.rewind();
            }
        }

        fn last_lr(&self) -> Vec<f64> {
            self.last_lr.clone()
        }
    };
}

/// Runs several schedulers one after another: `schedulers[i]` from epoch `milestones[i - 1]` on
/// (PyTorch's `SequentialLR`, e.g. a [`LinearLR`] warm-up then a [`CosineAnnealingLR`]).
pub struct SequentialLR<B: Backend> {
    schedulers: Vec<Box<dyn LrScheduler<B>>>,
    milestones: Vec<i64>,
    last_epoch: i64,
    last_lr: Vec<f64>,
}

impl<B: Backend> SequentialLR<B> {
    /// Chains `schedulers` (all built on `opt`) at `milestones` (one fewer than the schedulers):
    /// resets the learning rates to their initial values, undoes the schedulers' initial steps and
    /// takes the first one's initial step again, as PyTorch.
    pub fn new(
        opt: &mut dyn Optimizer<B>,
        mut schedulers: Vec<Box<dyn LrScheduler<B>>>,
        milestones: Vec<i64>,
    ) -> Result<Self> {
        if schedulers.is_empty() || milestones.len() + 1 != schedulers.len() {
            return Err(Error::invalid(
                "SequentialLR",
                format!(
                    "expected one milestone fewer than schedulers, got {} schedulers and {} milestones",
                    schedulers.len(),
                    milestones.len()
                ),
            ));
        }
        let initial = base_lrs(opt);
        set_lrs(opt, &initial);
        for s in &mut schedulers {
            s.rewind();
        }
        let idx = milestones.iter().filter(|&&m| m <= 0).count();
        schedulers[idx].step(opt)?;
        let last_lr = schedulers[idx].last_lr();
        Ok(SequentialLR {
            schedulers,
            milestones,
            last_epoch: 0,
            last_lr,
        })
    }
}

impl<B: Backend> LrScheduler<B> for SequentialLR<B> {
    fn step(&mut self, opt: &mut dyn Optimizer<B>) -> Result<()> {
        self.last_epoch += 1;
        let idx = self
            .milestones
            .iter()
            .filter(|&&m| m <= self.last_epoch)
            .count();
        let scheduler = &mut self.schedulers[idx];
        if idx > 0 && self.milestones[idx - 1] == self.last_epoch {
            scheduler.step_to(opt, 0)?;
        } else {
            scheduler.step(opt)?;
        }
        self.last_lr = scheduler.last_lr();
        Ok(())
    }

    fn step_to(&mut self, opt: &mut dyn Optimizer<B>, epoch: i64) -> Result<()> {
        while self.last_epoch < epoch {
            self.step(opt)?;
        }
        Ok(())
    }

    fn last_epoch(&self) -> i64 {
        self.last_epoch
    }

    children_accessors!();

    fn state(&self) -> Value {
        let inner = child_states(&self.schedulers);
        json!({
            "name": "SequentialLR", "milestones": self.milestones, "last_epoch": self.last_epoch,
            "last_lr": self.last_lr, "schedulers": inner,
        })
    }

    fn load_state(&mut self, state: &Value) -> Result<()> {
        check_name("LrScheduler::load_state", state, "SequentialLR")?;
        load_children(&mut self.schedulers, &state["schedulers"])?;
        self.last_epoch = state["last_epoch"].as_i64().unwrap_or(self.last_epoch);
        self.last_lr = f64_list(&state["last_lr"]);
        Ok(())
    }
}

/// The states of the child schedulers.
fn child_states<B: Backend>(schedulers: &[Box<dyn LrScheduler<B>>]) -> Vec<Value> {
    schedulers.iter().map(|s| s.state()).collect()
}

/// Restores the child schedulers from their saved states (as many as there are children).
fn load_children<B: Backend>(
    schedulers: &mut [Box<dyn LrScheduler<B>>],
    states: &Value,
) -> Result<()> {
    let states = states.as_array().map(Vec::as_slice).unwrap_or(&[]);
    if states.len() != schedulers.len() {
        return Err(Error::invalid(
            "LrScheduler::load_state",
            format!(
                "the state has {} schedulers, this one {}",
                states.len(),
                schedulers.len()
            ),
        ));
    }
    for (s, v) in schedulers.iter_mut().zip(states) {
        s.load_state(v)?;
    }
    Ok(())
}

/// Steps several schedulers together each epoch, so their factors multiply (PyTorch's
/// `ChainedScheduler`).
pub struct ChainedScheduler<B: Backend> {
    schedulers: Vec<Box<dyn LrScheduler<B>>>,
    last_lr: Vec<f64>,
}

impl<B: Backend> ChainedScheduler<B> {
    /// Chains `schedulers` (all built on `opt`; at least one).
    pub fn new(opt: &dyn Optimizer<B>, schedulers: Vec<Box<dyn LrScheduler<B>>>) -> Result<Self> {
        if schedulers.is_empty() {
            return Err(Error::invalid(
                "ChainedScheduler",
                "expects at least one scheduler",
            ));
        }
        Ok(ChainedScheduler {
            schedulers,
            last_lr: lrs(opt),
        })
    }
}

impl<B: Backend> LrScheduler<B> for ChainedScheduler<B> {
    fn step(&mut self, opt: &mut dyn Optimizer<B>) -> Result<()> {
        for s in &mut self.schedulers {
            s.step(opt)?;
        }
        self.last_lr = lrs(opt);
        Ok(())
    }

    fn step_to(&mut self, opt: &mut dyn Optimizer<B>, epoch: i64) -> Result<()> {
        for s in &mut self.schedulers {
            s.step_to(opt, epoch)?;
        }
        self.last_lr = lrs(opt);
        Ok(())
    }

    fn last_epoch(&self) -> i64 {
        self.schedulers.last().map_or(0, |s| s.last_epoch())
    }

    children_accessors!();

    fn state(&self) -> Value {
        let inner = child_states(&self.schedulers);
        json!({"name": "ChainedScheduler", "last_lr": self.last_lr, "schedulers": inner})
    }

    fn load_state(&mut self, state: &Value) -> Result<()> {
        check_name("LrScheduler::load_state", state, "ChainedScheduler")?;
        load_children(&mut self.schedulers, &state["schedulers"])?;
        self.last_lr = f64_list(&state["last_lr"]);
        Ok(())
    }
}
