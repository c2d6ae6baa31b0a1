//! RMSprop: gradients scaled by a running root mean square, optionally centred and with momentum.

use super::config::{config_struct, rule_boilerplate};
use super::{Optim, ParamState, Rule, check_nonneg, ema_sq, l2_decay, lerp};
use nabla_core::{Backend, Result};
use nabla_tensor::Tensor;

config_struct! {
    /// Hyper-parameters of [`RmsProp`] (PyTorch's `torch.optim.RMSprop` defaults).
    pub struct RmsPropConfig {
        /// Learning rate.
        pub lr: f64 = 1e-2,
        /// Smoothing constant of the running average of squared gradients.
        pub alpha: f64 = 0.99,
        /// Added to the denominator for stability.
        pub eps: f64 = 1e-8,
        /// L2 penalty added to the gradient.
        pub weight_decay: f64 = 0.0,
        /// Momentum factor.
        pub momentum: f64 = 0.0,
        /// Normalise by the estimated variance (subtracting the squared mean gradient).
        pub centered: bool = false,
        /// Ascend instead of descend.
        pub maximize: bool = false,
    }
}

/// PyTorch's `torch.optim.RMSprop` (state `square_avg`, `momentum_buffer`, `grad_avg`).
pub type RmsProp<B> = Optim<B, RmsPropConfig>;

impl Rule for RmsPropConfig {
    rule_boilerplate!(RmsProp, |_: &RmsPropConfig| "RMSprop");

    fn validate(&self) -> Result<()> {
        check_nonneg(
            "RMSprop",
            &[
                ("learning rate", self.lr),
                ("epsilon value", self.eps),
                ("momentum value", self.momentum),
                ("weight_decay value", self.weight_decay),
                ("alpha value", self.alpha),
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
        let square_avg = st.update_buffer("square_avg", &g, |a| ema_sq(a, &g, self.alpha))?;
        let avg = if self.centered {
            let grad_avg = st.update_buffer("grad_avg", &g, |a| lerp(a, &g, 1.0 - self.alpha))?;
            square_avg.sub(grad_avg.mul(&grad_avg)?)?.sqrt()?
        } else {
            square_avg.sqrt()?
        };
        let avg = avg.add(self.eps)?;
        if self.momentum > 0.0 {
            let buf = st.update_buffer("momentum_buffer", &g, |b| {
                b.mul(self.momentum)?.add(g.div(&avg)?)
            })?;
            p.sub(buf.mul(self.lr)?)
        } else {
            p.sub(g.div(&avg)?.mul(self.lr)?)
        }
    }
}
