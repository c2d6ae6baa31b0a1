//! One Adam/AdamW update as a fused kernel with several results, tagged so that a backend can run it
//! with a loop of its own ([`crate::KnownKernel::Adam`]).

use crate::{BinaryOp, DType, FusedBuilder, FusedKernel, KnownKernel, Result, UnaryOp};

/// The hyper-parameters of one Adam/AdamW update (PyTorch's `torch.optim.Adam` and `AdamW`
/// formulas, single-tensor implementation) at step `step`.
///
/// [`AdamStep::kernel`] builds the update as a [`FusedKernel`] over the inputs
/// `(param, grad, exp_avg, exp_avg_sq[, max_exp_avg_sq])` with the results
/// `(exp_avg, exp_avg_sq[, max_exp_avg_sq], param)`, the bracketed ones with `amsgrad` only.
///
/// ```
/// use nabla_core::{AdamStep, DType, KnownKernel};
/// let step = AdamStep { step: 1, ..AdamStep::default() };
/// let kernel = step.kernel(DType::F32)?;
/// assert_eq!((kernel.num_inputs(), kernel.outputs().len()), (4, 3));
/// assert!(matches!(kernel.known(), Some(KnownKernel::Adam(s)) if *s == step));
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamStep {
    /// Learning rate.
    pub lr: f64,
    /// Decay of the running average of the gradient.
    pub beta1: f64,
    /// Decay of the running average of its square.
    pub beta2: f64,
    /// Added to the denominator for stability.
    pub eps: f64,
    /// Weight decay: an L2 term added to the gradient, or decoupled (AdamW).
    pub weight_decay: f64,
    /// AdamW's decay: the parameter is scaled by `1 - lr * weight_decay` instead.
    pub decoupled_weight_decay: bool,
    /// Keep the running maximum of the second moments and divide by it.
    pub amsgrad: bool,
    /// The step number, 1 for the first update (for the bias corrections).
    pub step: u64,
}

impl Default for AdamStep {
    /// PyTorch's defaults at the first step.
    fn default() -> Self {
        AdamStep {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.0,
            decoupled_weight_decay: false,
            amsgrad: false,
            step: 1,
        }
    }
}

/// The constants of one update, each used as the kernel's steps use it (converted from `f64` to the
/// element type): a native kernel computes, in this order and with one rounding per operation,
///
/// ```text
/// g'  = l2_decay.map_or(g, |wd| g + p * wd)
/// m'  = m + (g' - m) * one_minus_beta1
/// v'  = v * beta2 + (g' * g') * one_minus_beta2
/// s   = amsgrad ? maximum(max, v') : v'          (max' = s)
/// p'  = param_decay.map_or(p, |c| p * c) - m' / (sqrt(s) / bias_correction2_sqrt + eps) * step_size
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamCoefficients {
    /// The L2 weight decay added to the gradient (Adam with `weight_decay`).
    pub l2_decay: Option<f64>,
    /// `1 - beta1`.
    pub one_minus_beta1: f64,
    /// `beta2`.
    pub beta2: f64,
    /// `1 - beta2`.
    pub one_minus_beta2: f64,
    /// AdamW's parameter factor `1 - lr * weight_decay`.
    pub param_decay: Option<f64>,
    /// `sqrt(1 - beta2^step)`.
    pub bias_correction2_sqrt: f64,
    /// `eps`.
    pub eps: f64,
    /// `lr / (1 - beta1^step)`.
    pub step_size: f64,
}

impl AdamStep {
    /// Number of state buffers: 2 (the moments), 3 with `amsgrad`.
    pub fn num_moments(&self) -> usize {
        if self.amsgrad { 3 } else { 2 }
    }

    /// The constants of this update.
    pub fn coefficients(&self) -> AdamCoefficients {
        let step = self.step as f64;
        let decay = self.weight_decay != 0.0;
        AdamCoefficients {
            l2_decay: (decay && !self.decoupled_weight_decay).then_some(self.weight_decay),
            one_minus_beta1: 1.0 - self.beta1,
            beta2: self.beta2,
            one_minus_beta2: 1.0 - self.beta2,
            param_decay: (decay && self.decoupled_weight_decay)
                .then_some(1.0 - self.lr * self.weight_decay),
            bias_correction2_sqrt: (1.0 - self.beta2.powf(step)).sqrt(),
            eps: self.eps,
            step_size: self.lr / (1.0 - self.beta1.powf(step)),
        }
    }

    /// The update as a fused kernel over values of `dtype` (see the type's documentation for its
    /// inputs and results), tagged [`KnownKernel::Adam`].
    pub fn kernel(&self, dtype: DType) -> Result<FusedKernel> {
        let c = self.coefficients();
        let mut k = FusedBuilder::new(dtype);
        let (p, g, m, v) = (k.input(), k.input(), k.input(), k.input());
        let g = match c.l2_decay {
            Some(wd) => {
                let decay = k.scale(p, wd);
                k.add(g, decay)
            }
            None => g,
        };
        // exp_avg + (1 - beta1) * (g - exp_avg): PyTorch's lerp.
        let d = k.sub(g, m);
        let d = k.scale(d, c.one_minus_beta1);
        let m_new = k.add(m, d);
        // exp_avg_sq * beta2 + (1 - beta2) * g * g.
        let v_decayed = k.scale(v, c.beta2);
        let g2 = k.mul(g, g);
        let g2 = k.scale(g2, c.one_minus_beta2);
        let v_new = k.add(v_decayed, g2);
        let (second, max_new) = if self.amsgrad {
            let max = k.input();
            let max_new = k.binary(BinaryOp::Maximum, max, v_new);
            (max_new, Some(max_new))
        } else {
            (v_new, None)
        };
        let p_base = match c.param_decay {
            Some(factor) => k.scale(p, factor),
            None => p,
        };
        let root = k.unary(UnaryOp::Sqrt, second);
        let bc2 = k.constant(c.bias_correction2_sqrt);
        let denom = k.div(root, bc2);
        let denom = k.offset(denom, c.eps);
        let ratio = k.div(m_new, denom);
        let delta = k.scale(ratio, c.step_size);
        let p_new = k.sub(p_base, delta);
        let mut results = vec![m_new, v_new];
        results.extend(max_new);
        results.push(p_new);
        Ok(k.finish_many(&results)?
            .with_known(KnownKernel::Adam(*self)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coefficients_follow_the_options() {
        let plain = AdamStep::default().coefficients();
        assert_eq!((plain.l2_decay, plain.param_decay), (None, None));
        assert!((plain.step_size - 1e-3 / 0.1).abs() < 1e-15);
        let l2 = AdamStep {
            weight_decay: 0.1,
            ..AdamStep::default()
        };
        assert_eq!(l2.coefficients().l2_decay, Some(0.1));
        let adamw = AdamStep {
            decoupled_weight_decay: true,
            ..l2
        };
        let c = adamw.coefficients();
        assert_eq!((c.l2_decay, c.param_decay), (None, Some(1.0 - 1e-3 * 0.1)));
        let ams = AdamStep {
            amsgrad: true,
            ..adamw
        }
        .kernel(DType::F64)
        .unwrap();
        assert_eq!((ams.num_inputs(), ams.outputs().len()), (5, 4));
    }
}
