//! Lion (EvoLved Sign Momentum, Chen et al. 2023): sign updates with decoupled weight decay.

use super::config::{config_struct, rule_boilerplate};
use super::{Optim, ParamState, Rule, check_betas, check_nonneg, lerp};
use nabla_core::{Backend, Result};
use nabla_tensor::Tensor;

config_struct! {
    /// Hyper-parameters of [`Lion`] (the paper's defaults).
    pub struct LionConfig {
        /// Learning rate (typically 3-10x smaller than AdamW's).
        pub lr: f64 = 1e-4,
        /// `beta1` interpolates the update direction, `beta2` the momentum.
        pub betas: (f64, f64) = (0.9, 0.99),
        /// Decoupled weight decay: `p *= 1 - lr wd`.
        pub weight_decay: f64 = 0.0,
        /// Ascend instead of descend.
        pub maximize: bool = false,
    }
}

/// Lion: `c = beta1 m + (1 - beta1) g; p = p (1 - lr wd) - lr sign(c); m = beta2 m + (1 - beta2) g`
/// (state `exp_avg`).
pub type Lion<B> = Optim<B, LionConfig>;

impl Rule for LionConfig {
    rule_boilerplate!(Lion, |_: &LionConfig| "Lion");

    fn validate(&self) -> Result<()> {
        const OP: &str = "Lion";
        check_nonneg(OP, &[("learning rate", self.lr)])?;
        check_betas(OP, self.betas, true)?;
        check_nonneg(OP, &[("weight_decay value", self.weight_decay)])
    }

    fn update<B: Backend>(
        &self,
        st: &mut ParamState<B>,
        p: &Tensor<B>,
        g: &Tensor<B>,
    ) -> Result<Tensor<B>> {
        let m = st.buffer_or("exp_avg", || g.zeros_like())?;
        let direction = m
            .mul(self.betas.0)?
            .add(g.mul(1.0 - self.betas.0)?)?
            .sign()?;
        st.set_buffer("exp_avg", lerp(&m, g, 1.0 - self.betas.1)?);
        let p = if self.weight_decay != 0.0 {
            p.mul(1.0 - self.lr * self.weight_decay)?
        } else {
            p.clone()
        };
        p.sub(direction.mul(self.lr)?)
    }
}
