//! The Adam family: Adam, AdamW, Adamax, NAdam and RAdam, with PyTorch's single-tensor formulas.

use super::AdamStep;
use super::config::{config_struct, rule_boilerplate};
use super::{Optim, ParamState, Rule, check_betas, check_nonneg, ema_sq, l2_decay, lerp};
use nabla_core::{Backend, Error, Result};
use nabla_tensor::Tensor;

config_struct! {
    /// Hyper-parameters of [`Adam`] and [`AdamW`] (PyTorch's `torch.optim.Adam` defaults;
    /// [`AdamConfig::adamw`] gives `torch.optim.AdamW`'s).
    pub struct AdamConfig {
        /// Learning rate.
        pub lr: f64 = 1e-3,
        /// Coefficients of the running averages of the gradient and its square.
        pub betas: (f64, f64) = (0.9, 0.999),
        /// Added to the denominator for stability.
        pub eps: f64 = 1e-8,
        /// Weight decay: an L2 penalty, or decoupled when `decoupled_weight_decay`.
        pub weight_decay: f64 = 0.0,
        /// The AMSGrad variant (keeps the maximum of the second moments).
        pub amsgrad: bool = false,
        /// Ascend instead of descend.
        pub maximize: bool = false,
        /// Decoupled weight decay `p *= 1 - lr wd` (AdamW) instead of an L2 penalty.
        pub decoupled_weight_decay: bool = false,
    }
}

impl AdamConfig {
    /// `torch.optim.AdamW`'s defaults: decoupled weight decay of 0.01.
    pub fn adamw() -> Self {
        AdamConfig {
            weight_decay: 1e-2,
            decoupled_weight_decay: true,
            ..AdamConfig::default()
        }
    }
}

/// PyTorch's `torch.optim.Adam` (state `exp_avg`, `exp_avg_sq`, `max_exp_avg_sq` with AMSGrad).
pub type Adam<B> = Optim<B, AdamConfig>;

/// PyTorch's `torch.optim.AdamW`: [`Adam`] with decoupled weight decay; build it with
/// `AdamW::new(params, AdamConfig::adamw())`.
pub type AdamW<B> = Optim<B, AdamConfig>;

/// Weight decay before an Adam-style step: decoupled (`p * (1 - lr wd)`, the returned parameter) or
/// L2 (`g + wd p`, the returned gradient).
fn decay<B: Backend>(
    p: &Tensor<B>,
    g: &Tensor<B>,
    lr: f64,
    wd: f64,
    decoupled: bool,
) -> Result<(Tensor<B>, Tensor<B>)> {
    if wd == 0.0 {
        Ok((p.clone(), g.clone()))
    } else if decoupled {
        Ok((p.mul(1.0 - lr * wd)?, g.clone()))
    } else {
        Ok((p.clone(), l2_decay(g, p, wd)?))
    }
}

/// Updates the first and second moments `exp_avg`, `exp_avg_sq` and returns them.
fn moments<B: Backend>(
    st: &mut ParamState<B>,
    g: &Tensor<B>,
    (beta1, beta2): (f64, f64),
) -> Result<(Tensor<B>, Tensor<B>)> {
    let m = st.update_buffer("exp_avg", g, |m| lerp(m, g, 1.0 - beta1))?;
    let v = st.update_buffer("exp_avg_sq", g, |v| ema_sq(v, g, beta2))?;
    Ok((m, v))
}

fn check_adam_like(op: &'static str, lr: f64, eps: f64, betas: (f64, f64), wd: f64) -> Result<()> {
    check_nonneg(op, &[("learning rate", lr), ("epsilon value", eps)])?;
    check_betas(op, betas, false)?;
    check_nonneg(op, &[("weight_decay value", wd)])
}

impl Rule for AdamConfig {
    rule_boilerplate!(Adam, |c: &AdamConfig| if c.decoupled_weight_decay {
        "AdamW"
    } else {
        "Adam"
    });

    fn validate(&self) -> Result<()> {
        check_adam_like(
            self.name(),
            self.lr,
            self.eps,
            self.betas,
            self.weight_decay,
        )
    }

    /// PyTorch's Adam/AdamW formulas in one fused pass: the kernel reads the parameter, the gradient
    /// and the moments once and writes the new moments in place (their buffers are donated) and the
    /// new parameter, with the same elementary operations, in the same order, as PyTorch's
    /// single-tensor implementation.
    fn update<B: Backend>(
        &self,
        st: &mut ParamState<B>,
        p: &Tensor<B>,
        g: &Tensor<B>,
    ) -> Result<Tensor<B>> {
        self.update_donated(st, p.clone(), g)
    }

    fn update_donated<B: Backend>(
        &self,
        st: &mut ParamState<B>,
        p: Tensor<B>,
        g: &Tensor<B>,
    ) -> Result<Tensor<B>> {
        let kernel = AdamStep {
            lr: self.lr,
            beta1: self.betas.0,
            beta2: self.betas.1,
            eps: self.eps,
            weight_decay: self.weight_decay,
            decoupled_weight_decay: self.decoupled_weight_decay,
            amsgrad: self.amsgrad,
            step: st.step,
        }
        .kernel(p.dtype())?;
        let mut names = vec!["exp_avg", "exp_avg_sq"];
        if self.amsgrad {
            names.push("max_exp_avg_sq");
        }
        // The state hands over its only handles: the moments are donated to their new values, and
        // the parameter to its own.
        st.replace_buffers(&names, p, |p, state| {
            let moments = state.len();
            let mut inputs = vec![p, g.clone()];
            inputs.extend(state);
            let mut donate: Vec<Option<usize>> = (0..moments).map(|j| Some(2 + j)).collect();
            donate.push(Some(0));
            let mut out = Tensor::fused_many(&kernel, inputs, &donate)?;
            let p_new = out
                .pop()
                .ok_or_else(|| Error::invalid("Adam", "the update kernel returned no parameter"))?;
            Ok((out, p_new))
        })
    }
}

config_struct! {
    /// Hyper-parameters of [`Adamax`] (PyTorch's `torch.optim.Adamax` defaults).
    pub struct AdamaxConfig {
        /// Learning rate.
        pub lr: f64 = 2e-3,
        /// Coefficients of the running average of the gradient and of the infinity norm.
        pub betas: (f64, f64) = (0.9, 0.999),
        /// Added to the gradient magnitude for stability.
        pub eps: f64 = 1e-8,
        /// L2 penalty added to the gradient.
        pub weight_decay: f64 = 0.0,
        /// Ascend instead of descend.
        pub maximize: bool = false,
    }
}

/// PyTorch's `torch.optim.Adamax`, Adam with the infinity norm (state `exp_avg`, `exp_inf`).
pub type Adamax<B> = Optim<B, AdamaxConfig>;

impl Rule for AdamaxConfig {
    rule_boilerplate!(Adamax, |_: &AdamaxConfig| "Adamax");

    fn validate(&self) -> Result<()> {
        check_adam_like("Adamax", self.lr, self.eps, self.betas, self.weight_decay)
    }

    fn update<B: Backend>(
        &self,
        st: &mut ParamState<B>,
        p: &Tensor<B>,
        g: &Tensor<B>,
    ) -> Result<Tensor<B>> {
        let g = l2_decay(g, p, self.weight_decay)?;
        let m = st.update_buffer("exp_avg", &g, |m| lerp(m, &g, 1.0 - self.betas.0))?;
        let u = st.update_buffer("exp_inf", &g, |u| {
            u.mul(self.betas.1)?.maximum(g.abs()?.add(self.eps)?)
        })?;
        let clr = self.lr / (1.0 - self.betas.0.powf(st.step as f64));
        p.sub(m.div(&u)?.mul(clr)?)
    }
}

config_struct! {
    /// Hyper-parameters of [`NAdam`] (PyTorch's `torch.optim.NAdam` defaults).
    pub struct NAdamConfig {
        /// Learning rate.
        pub lr: f64 = 2e-3,
        /// Coefficients of the running averages of the gradient and its square.
        pub betas: (f64, f64) = (0.9, 0.999),
        /// Added to the denominator for stability.
        pub eps: f64 = 1e-8,
        /// Weight decay (L2, or decoupled when `decoupled_weight_decay`).
        pub weight_decay: f64 = 0.0,
        /// Momentum decay `psi` of the momentum schedule.
        pub momentum_decay: f64 = 4e-3,
        /// Decoupled weight decay (NAdamW).
        pub decoupled_weight_decay: bool = false,
        /// Ascend instead of descend.
        pub maximize: bool = false,
    }
}

/// PyTorch's `torch.optim.NAdam`, Adam with Nesterov momentum (state `exp_avg`, `exp_avg_sq` and the
/// scalar `mu_product`).
pub type NAdam<B> = Optim<B, NAdamConfig>;

impl Rule for NAdamConfig {
    rule_boilerplate!(NAdam, |_: &NAdamConfig| "NAdam");

    fn validate(&self) -> Result<()> {
        check_adam_like("NAdam", self.lr, self.eps, self.betas, self.weight_decay)?;
        check_nonneg("NAdam", &[("momentum_decay", self.momentum_decay)])
    }

    fn update<B: Backend>(
        &self,
        st: &mut ParamState<B>,
        p: &Tensor<B>,
        g: &Tensor<B>,
    ) -> Result<Tensor<B>> {
        let (beta1, beta2) = self.betas;
        let step = st.step as f64;
        let bias_correction2 = 1.0 - beta2.powf(step);
        let (p, g) = decay(
            p,
            g,
            self.lr,
            self.weight_decay,
            self.decoupled_weight_decay,
        )?;
        let mu = beta1 * (1.0 - 0.5 * 0.96f64.powf(step * self.momentum_decay));
        let mu_next = beta1 * (1.0 - 0.5 * 0.96f64.powf((step + 1.0) * self.momentum_decay));
        let mu_product = st.scalar("mu_product", 1.0) * mu;
        st.set_scalar("mu_product", mu_product);
        let (m, v) = moments(st, &g, self.betas)?;
        let denom = v.div(bias_correction2)?.sqrt()?.add(self.eps)?;
        let mu_product_next = mu_product * mu_next;
        let p = p.sub(
            g.div(&denom)?
                .mul(self.lr * (1.0 - mu) / (1.0 - mu_product))?,
        )?;
        p.sub(
            m.div(&denom)?
                .mul(self.lr * mu_next / (1.0 - mu_product_next))?,
        )
    }
}

config_struct! {
    /// Hyper-parameters of [`RAdam`] (PyTorch's `torch.optim.RAdam` defaults).
    pub struct RAdamConfig {
        /// Learning rate.
        pub lr: f64 = 1e-3,
        /// Coefficients of the running averages of the gradient and its square.
        pub betas: (f64, f64) = (0.9, 0.999),
        /// Added to the denominator for stability.
        pub eps: f64 = 1e-8,
        /// Weight decay (L2, or decoupled when `decoupled_weight_decay`).
        pub weight_decay: f64 = 0.0,
        /// Decoupled weight decay (RAdamW).
        pub decoupled_weight_decay: bool = false,
        /// Ascend instead of descend.
        pub maximize: bool = false,
    }
}

/// PyTorch's `torch.optim.RAdam`, rectified Adam: plain momentum steps until the variance estimate is
/// tractable (`rho_t > 5`), then rectified adaptive steps.
pub type RAdam<B> = Optim<B, RAdamConfig>;

impl Rule for RAdamConfig {
    rule_boilerplate!(RAdam, |_: &RAdamConfig| "RAdam");

    fn validate(&self) -> Result<()> {
        check_adam_like("RAdam", self.lr, self.eps, self.betas, self.weight_decay)
    }

    fn update<B: Backend>(
        &self,
        st: &mut ParamState<B>,
        p: &Tensor<B>,
        g: &Tensor<B>,
    ) -> Result<Tensor<B>> {
        let (beta1, beta2) = self.betas;
        let (p, g) = decay(
            p,
            g,
            self.lr,
            self.weight_decay,
            self.decoupled_weight_decay,
        )?;
        let (m, v) = moments(st, &g, self.betas)?;
        let step = st.step as f64;
        let bias_correction1 = 1.0 - beta1.powf(step);
        let bias_correction2 = 1.0 - beta2.powf(step);
        let corrected = m.div(bias_correction1)?;
        let rho_inf = 2.0 / (1.0 - beta2) - 1.0;
        let rho_t = rho_inf - 2.0 * step * beta2.powf(step) / bias_correction2;
        if rho_t > 5.0 {
            let rect = ((rho_t - 4.0) * (rho_t - 2.0) * rho_inf
                / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t))
                .sqrt();
            let adaptive = v
                .sqrt()?
                .add(self.eps)?
                .recip()?
                .mul(bias_correction2.sqrt())?;
            p.sub(corrected.mul(self.lr)?.mul(&adaptive)?.mul(rect)?)
        } else {
            p.sub(corrected.mul(self.lr)?)
        }
    }
}
