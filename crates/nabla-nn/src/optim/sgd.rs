//! Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay.

use super::config::{config_struct, rule_boilerplate};
use super::{Optim, ParamState, Rule, check_nonneg, l2_decay};
use nabla_core::{Backend, Error, Result};
use nabla_tensor::Tensor;

config_struct! {
    /// Hyper-parameters of [`Sgd`], with PyTorch's defaults (`torch.optim.SGD`; PyTorch requires an
    /// explicit lr, here 1e-3).
    pub struct SgdConfig {
        /// Learning rate.
        pub lr: f64 = 1e-3,
        /// Momentum factor.
        pub momentum: f64 = 0.0,
        /// Dampening of the momentum.
        pub dampening: f64 = 0.0,
        /// L2 penalty added to the gradient.
        pub weight_decay: f64 = 0.0,
        /// Nesterov momentum (needs momentum > 0 and no dampening).
        pub nesterov: bool = false,
        /// Ascend instead of descend.
        pub maximize: bool = false,
    }
}

/// PyTorch's `torch.optim.SGD`:
/// `g += wd p; buf = momentum buf + (1 - dampening) g` (the first step sets `buf = g`);
/// `g = g + momentum buf` (Nesterov) or `buf`; `p -= lr g`.
pub type Sgd<B> = Optim<B, SgdConfig>;

impl Rule for SgdConfig {
    rule_boilerplate!(Sgd, |_: &SgdConfig| "SGD");

    fn validate(&self) -> Result<()> {
        const OP: &str = "SGD";
        check_nonneg(
            OP,
            &[
                ("learning rate", self.lr),
                ("momentum value", self.momentum),
                ("weight_decay value", self.weight_decay),
            ],
        )?;
        if self.nesterov && (self.momentum <= 0.0 || self.dampening != 0.0) {
            return Err(Error::invalid(
                OP,
                format!(
                    "Nesterov momentum requires a momentum and zero dampening (momentum {}, dampening {})",
                    self.momentum, self.dampening
                ),
            ));
        }
        Ok(())
    }

    fn update<B: Backend>(
        &self,
        st: &mut ParamState<B>,
        p: &Tensor<B>,
        g: &Tensor<B>,
    ) -> Result<Tensor<B>> {
        let mut g = l2_decay(g, p, self.weight_decay)?;
        if self.momentum != 0.0 {
            let buf = match st.buffer("momentum_buffer") {
                None => g.clone(),
                Some(b) => b.mul(self.momentum)?.add(g.mul(1.0 - self.dampening)?)?,
            };
            st.set_buffer("momentum_buffer", buf.clone());
            g = if self.nesterov {
                g.add(buf.mul(self.momentum)?)?
            } else {
                buf
            };
        }
        p.sub(g.mul(self.lr)?)
    }
}
