//! Softmax, log-softmax and log-sum-exp, all shifted by the maximum so that they cannot overflow.
//!
//! The maximum is detached: the result does not depend on the shift mathematically, so its gradient is
//! unchanged, and differentiating through `max` would only add terms that cancel (and split gradients
//! between tied maxima).

use crate::Tensor;
use crate::fused_rows;
use nabla_core::{Backend, Result, normalize_axis};

impl<B: Backend> Tensor<B> {
    /// The detached maximum over `axes` with kept dimensions, replaced by 0 where it is not finite (so
    /// that an all `-inf` slice gives `-inf` rather than NaN, as JAX's `logsumexp`).
    fn stable_shift(&self, axes: &[isize]) -> Result<Self> {
        let m = self.max(axes, true)?.detach();
        m.isfinite()?.where_(&m, 0.0)
    }

    /// `softmax(x)_i = e^(x_i) / sum_j e^(x_j)` along `axis` (`jax.nn.softmax`). Evaluated as
    /// `e^(x - max) / sum e^(x - max)`, so inputs like 1e4 neither overflow nor lose their gradient.
    /// Along the last axis on the CPU it runs as one fused pass per row, with a fused backward.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let x = Tensor::from_vec(vec![1e4f32, 1e4, -1e4], [3], &CpuBackend::new())?;
    /// assert_eq!(x.softmax(0)?.to_vec::<f32>()?, vec![0.5, 0.5, 0.0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn softmax(&self, axis: isize) -> Result<Self> {
        if let Some(out) = self.half_in_f32(|x| x.softmax(axis)) {
            return out;
        }
        self.check_real_float("softmax")?;
        let axis = normalize_axis("softmax", axis, self.rank())?;
        if axis + 1 == self.rank()
            && let Some(kernels) = fused_rows::applies(self, 1)
        {
            return fused_rows::softmax(kernels, self);
        }
        let axis = [axis as isize];
        let m = self.max(&axis, true)?.detach();
        let e = self.sub(&m)?.exp()?;
        e.div(e.sum(&axis, true)?)
    }

    /// `log(softmax(x))` along `axis`, computed as `x - logsumexp(x)` without ever forming the softmax
    /// (`jax.nn.log_softmax`): finite for finite inputs however large. Along the last axis on the CPU
    /// it runs as one fused pass per row, with a fused backward (so a cross-entropy over a large
    /// vocabulary makes one `[tokens, vocab]` array forward and one backward).
    pub fn log_softmax(&self, axis: isize) -> Result<Self> {
        if let Some(out) = self.half_in_f32(|x| x.log_softmax(axis)) {
            return out;
        }
        self.check_real_float("log_softmax")?;
        let axis = normalize_axis("log_softmax", axis, self.rank())?;
        if axis + 1 == self.rank()
            && let Some(kernels) = fused_rows::applies(self, 1)
        {
            return fused_rows::log_softmax(kernels, self);
        }
        let axis = [axis as isize];
        let shifted = self.sub(self.max(&axis, true)?.detach())?;
        let lse = shifted.exp()?.sum(&axis, true)?.log()?;
        shifted.sub(&lse)
    }

    /// `log(sum(e^x))` over `axes` (empty = all axes), keeping the reduced axes as size 1 when
    /// `keepdims` (`jax.scipy.special.logsumexp`). Stable for large inputs; gives `-inf` over a slice
    /// of `-inf`, and `+inf` when an input is `+inf`.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let x = Tensor::from_vec(vec![1e4f64, 1e4], [2], &CpuBackend::new())?;
    /// let y = x.logsumexp(&[0], false)?.item::<f64>()?;
    /// assert!((y - (1e4 + std::f64::consts::LN_2)).abs() < 1e-9);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn logsumexp(&self, axes: &[isize], keepdims: bool) -> Result<Self> {
        if let Some(out) = self.half_in_f32(|x| x.logsumexp(axes, keepdims)) {
            return out;
        }
        self.check_real_float("logsumexp")?;
        self.reduced_count("logsumexp", axes)?;
        let m = self.stable_shift(axes)?;
        let s = self.sub(&m)?.exp()?.sum(axes, keepdims)?.log()?;
        let m = m.reshape(s.shape().to_vec())?;
        s.add(&m)
    }
}
