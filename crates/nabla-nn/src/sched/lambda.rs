//! Schedulers driven by a user function of the epoch: PyTorch's `LambdaLR` (the base rate times
//! the function) and `MultiplicativeLR` (the current rate times the function).

use super::*;
use std::sync::Arc;

/// A function of the epoch giving a learning-rate factor; an error stops the scheduler's step.
pub type LrLambda = Arc<dyn Fn(i64) -> Result<f64> + Send + Sync>;

/// One function for every group, or one per group (PyTorch's `lr_lambda`, a function or a list).
#[derive(Clone)]
pub struct LrLambdas(pub Vec<LrLambda>);

impl std::fmt::Debug for LrLambdas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LrLambdas({} functions)", self.0.len())
    }
}

impl LrLambdas {
    /// The factor of `group` at `epoch`.
    fn factor(&self, op: &'static str, epoch: i64, group: usize) -> Result<f64> {
        let f = match self.0.as_slice() {
            [one] => one,
            many => many.get(group).ok_or_else(|| {
                Error::invalid(
                    op,
                    format!(
                        "{} lr_lambda functions for an optimizer with more groups (group {group})",
                        many.len()
                    ),
                )
            })?,
        };
        f(epoch)
    }

    fn validate(&self, op: &'static str) -> Result<()> {
        if self.0.is_empty() {
            return Err(Error::invalid(op, "lr_lambda is an empty list"));
        }
        Ok(())
    }
}

/// Checks that `lambdas` has one function or one per group of `opt` (PyTorch's check).
fn check_groups<B: Backend>(
    op: &'static str,
    opt: &dyn Optimizer<B>,
    lambdas: &LrLambdas,
) -> Result<()> {
    lambdas.validate(op)?;
    let groups = opt.param_groups().len();
    match lambdas.0.len() {
        1 => Ok(()),
        n if n == groups => Ok(()),
        n => Err(Error::invalid(
            op,
            format!("expected 1 or {groups} lr_lambda functions (one per group), got {n}"),
        )),
    }
}

/// The rule of [`LambdaLR`]: `lr = base · lr_lambda(epoch)`.
#[derive(Clone, Debug)]
pub struct LambdaFactor {
    /// The factor of each epoch.
    pub lr_lambda: LrLambdas,
}

/// PyTorch's `LambdaLR`: a [`Scheduler`] with the rule [`LambdaFactor`].
pub type LambdaLR = Scheduler<LambdaFactor>;

impl Scheduler<LambdaFactor> {
    /// Attaches `LambdaLR(opt, lr_lambda)` and sets the learning rate of epoch 0.
    pub fn new<B: Backend>(opt: &mut dyn Optimizer<B>, lr_lambda: LrLambdas) -> Result<Self> {
        check_groups("LambdaLR", opt, &lr_lambda)?;
        Scheduler::with_rule(opt, LambdaFactor { lr_lambda })
    }
}

impl LrRule for LambdaFactor {
    fn name(&self) -> &'static str {
        "LambdaLR"
    }
    fn validate(&self) -> Result<()> {
        self.lr_lambda.validate("LambdaLR")
    }
    fn get_lr(&self, epoch: i64, _: f64, base: f64, group: usize) -> Result<f64> {
        Ok(base * self.lr_lambda.factor("LambdaLR", epoch, group)?)
    }
    fn closed_form(&self, _: i64, _: f64, _: usize) -> Option<f64> {
        None
    }
    fn to_json(&self) -> Value {
        // Functions are not saved, as in PyTorch (its state dict leaves plain functions out).
        json!({})
    }
}

/// The rule of [`MultiplicativeLR`]: every step after the first, `lr = lr · lr_lambda(epoch)`.
#[derive(Clone, Debug)]
pub struct MultiplicativeFactor {
    /// The factor of each epoch.
    pub lr_lambda: LrLambdas,
}

/// PyTorch's `MultiplicativeLR`: a [`Scheduler`] with the rule [`MultiplicativeFactor`].
pub type MultiplicativeLR = Scheduler<MultiplicativeFactor>;

impl Scheduler<MultiplicativeFactor> {
    /// Attaches `MultiplicativeLR(opt, lr_lambda)` and sets the learning rate of epoch 0.
    pub fn new<B: Backend>(opt: &mut dyn Optimizer<B>, lr_lambda: LrLambdas) -> Result<Self> {
        check_groups("MultiplicativeLR", opt, &lr_lambda)?;
        Scheduler::with_rule(opt, MultiplicativeFactor { lr_lambda })
    }
}

impl LrRule for MultiplicativeFactor {
    fn name(&self) -> &'static str {
        "MultiplicativeLR"
    }
    fn validate(&self) -> Result<()> {
        self.lr_lambda.validate("MultiplicativeLR")
    }
    fn get_lr(&self, epoch: i64, lr: f64, _: f64, group: usize) -> Result<f64> {
        // Every step but the constructor's multiplies, a jump to epoch 0 (inside SequentialLR)
        // included, as in PyTorch 2.15.
        Ok(lr * self.lr_lambda.factor("MultiplicativeLR", epoch, group)?)
    }
    fn initial_lr(&self, lr: f64, _: f64, _: usize) -> Result<f64> {
        Ok(lr)
    }
    fn closed_form(&self, _: i64, _: f64, _: usize) -> Option<f64> {
        None
    }
    fn to_json(&self) -> Value {
        json!({})
    }
}
