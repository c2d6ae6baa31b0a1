//! One Adam/AdamW update as a native host loop (see [`crate::HostLoop`]): each element's update in
//! registers, one pass over the parameter, the gradient and the moments, with the operations, the
//! order and the roundings of the fused kernel's steps ([`AdamUpdate::kernel`]).

use crate::{BinaryOp, DType, FusedBuilder, FusedKernel, HostLoop, Result, UnaryOp};

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

/// An Adam/AdamW update of one parameter: the kernel's inputs are `(param, grad, exp_avg,
/// exp_avg_sq[, max_exp_avg_sq])` and its results `(exp_avg, exp_avg_sq[, max_exp_avg_sq], param)`,
/// the bracketed ones with `amsgrad` only; each result updates its input in place.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamUpdate {
    /// The update's constants.
    pub coefficients: AdamCoefficients,
    /// AMSGrad: keep the running maximum of the second moments and divide by it.
    pub amsgrad: bool,
}

impl AdamUpdate {
    /// For each result, the input it updates: the moments, then the parameter.
    pub fn updates(&self) -> &'static [usize] {
        if self.amsgrad {
            &[2, 3, 4, 0]
        } else {
            &[2, 3, 0]
        }
    }

    /// The update as a fused kernel over values of `dtype` (see the type's documentation for its
    /// inputs and results): the steps every backend can run, with the native loop attached
    /// ([`HostLoop::Adam`]) that host backends run instead.
    pub fn kernel(&self, dtype: DType) -> Result<FusedKernel> {
        let c = self.coefficients;
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
        k.finish_many(&results)?
            .with_host_loop(HostLoop::Adam(*self))
    }
}
