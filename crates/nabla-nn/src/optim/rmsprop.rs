//! RMSprop: gradients scaled by a running root mean square, optionally centred and with momentum.

use super::config::{config_struct, rule_boilerplate};
use super::{Optim, ParamState, Rule, check_range, ema_sq, l2_decay, lerp};
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
        const OP: &str = "RMSprop";
        check_range(OP, "learning rate", self.lr, 0.0, f64::INFINITY, false)?;
        check_range(OP, "epsilon value", self.eps, 0.0, f64::INFINITY, false)?;
        check_range(
            OP,
            "momentum value",
            self.momentum,
            0.0,
            f64::INFINITY,
            false,
        )?;
        check_range(
            OP,
            "weight_decay value",
            self.weight_decay,
            0.0,
            f64::INFINITY,
            false,
        )?;
        check_range(OP, "alpha value", self.alpha, 0.0, f64::INFINITY, false)
    }

    fn update<B: Backend>(
        &self,
        st: &mut ParamState<B>,
        p: &Tensor<B>,
        g: &Tensor<B>,
    ) -> Result<Tensor<B>> {
        let g = l2_decay(g, p, self.weight_decay)?;
        let square_avg = ema_sq(
            &st.buffer_or("square_avg", || g.zeros_like())?,
            &g,
            self.alpha,
        )?;
        st.set_buffer("square_avg", square_avg.clone());
        let avg = if self.centered {
            let grad_avg = lerp(
                &st.buffer_or("grad_avg", || g.zeros_like())?,
                &g,
                1.0 - self.alpha,
            )?;
            st.set_buffer("grad_avg", grad_avg.clone());
            square_avg.sub(grad_avg.mul(&grad_avg)?)?.sqrt()?
        } else {
            square_avg.sqrt()?
        };
        let avg = avg.add(self.eps)?;
        if self.momentum > 0.0 {
            let buf = st.buffer_or("momentum_buffer", || g.zeros_like())?;
            let buf = buf.mul(self.momentum)?.add(g.div(&avg)?)?;
            st.set_buffer("momentum_buffer", buf.clone());
            p.sub(buf.mul(self.lr)?)
        } else {
            p.sub(g.div(&avg)?.mul(self.lr)?)
        }
    }
}
