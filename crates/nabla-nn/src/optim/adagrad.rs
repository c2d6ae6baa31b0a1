//! Adagrad: per-element learning rates from the sum of squared gradients.

use super::config::{config_struct, rule_boilerplate};
use super::{Optim, ParamState, Rule, check_nonneg, l2_decay};
use nabla_core::{Backend, Result};
use nabla_tensor::Tensor;

config_struct! {
    /// Hyper-parameters of [`Adagrad`] (PyTorch's `torch.optim.Adagrad` defaults).
    pub struct AdagradConfig {
        /// Learning rate.
        pub lr: f64 = 1e-2,
        /// Learning-rate decay: step `t` uses `lr / (1 + (t - 1) lr_decay)`.
        pub lr_decay: f64 = 0.0,
        /// L2 penalty added to the gradient.
        pub weight_decay: f64 = 0.0,
        /// Starting value of the sum of squared gradients.
        pub initial_accumulator_value: f64 = 0.0,
        /// Added to the denominator for stability.
        pub eps: f64 = 1e-10,
        /// Ascend instead of descend.
        pub maximize: bool = false,
    }
}

/// PyTorch's `torch.optim.Adagrad` (state `sum`).
pub type Adagrad<B> = Optim<B, AdagradConfig>;

impl Rule for AdagradConfig {
    rule_boilerplate!(Adagrad, |_: &AdagradConfig| "Adagrad");

    fn validate(&self) -> Result<()> {
        check_nonneg(
            "Adagrad",
            &[
                ("learning rate", self.lr),
                ("lr_decay value", self.lr_decay),
                ("weight_decay value", self.weight_decay),
                ("initial_accumulator_value", self.initial_accumulator_value),
                ("epsilon value", self.eps),
            ],
        )
    }

    fn update<B: Backend>(
        &self,
        st: &mut ParamState<B>,
        p: &Tensor<B>,
        g: &Tensor<B>,
    ) -> Result<Tensor<B>> {
        let g = l2_decay(g, p, self.weight_decay)?;
        let clr = self.lr / (1.0 + (st.step as f64 - 1.0) * self.lr_decay);
        let sum = st.buffer_or("sum", || p.full_like(self.initial_accumulator_value))?;
        let sum = sum.add(g.mul(&g)?)?;
        st.set_buffer("sum", sum.clone());
        p.sub(g.div(sum.sqrt()?.add(self.eps)?)?.mul(clr)?)
    }
}
