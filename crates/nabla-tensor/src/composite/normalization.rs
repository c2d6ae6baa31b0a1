//! Statistics and normalisation: variance, standard deviation, layer normalisation and
//! p-norm normalisation.

use crate::Tensor;
use crate::fused_rows;
use nabla_core::{Backend, Error, Result, normalize_axis};

impl<B: Backend> Tensor<B> {
    /// Variance over `axes` (empty = all axes): `sum((x - mean)^2) / (N - correction)` where `N` counts
    /// the reduced elements, as `jnp.var(x, axis, ddof=correction)` and `torch.var(x, dim,
    /// correction=...)`. `correction = 0` is the population variance, 1 the unbiased estimate. Like
    /// PyTorch, it divides by `max(N - correction, 0)`: where `correction >= N` the result is `+inf`
    /// (NaN where all the reduced values are equal), and the variance of no elements is NaN. (JAX divides
    /// by `N - correction` as is, and gives negative values there.)
    ///
    /// Named `variance` because [`Tensor::var`] makes a variable.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 10.0, 16.0], [2, 3], &CpuBackend::new())?;
    /// assert_eq!(x.variance(&[1], false, 1)?.to_vec::<f64>()?, vec![1.0, 36.0]);
    /// assert_eq!(x.variance(&[1], true, 0)?.shape(), &[2, 1]);
    /// assert_eq!(x.variance(&[1], false, 5)?.to_vec::<f64>()?, vec![f64::INFINITY; 2]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn variance(&self, axes: &[isize], keepdims: bool, correction: usize) -> Result<Self> {
        if let Some(out) = self.half_in_f32(|x| x.variance(axes, keepdims, correction)) {
            return out;
        }
        self.check_real_float("variance")?;
        let n = self.reduced_count("variance", axes)?;
        let centered = self.sub(self.mean(axes, true)?)?;
        // PyTorch's degrees of freedom: never negative, so too large a correction gives inf or NaN.
        let dof = n.saturating_sub(correction);
        centered.square()?.sum(axes, keepdims)?.div(dof as f64)
    }

    /// Standard deviation, `sqrt(variance(axes, keepdims, correction))` (see [`Tensor::variance`]).
    ///
    /// Where the variance is exactly zero the value is 0 and, exactly as in JAX (`jnp.std`), the gradient
    /// is NaN: the derivative of `sqrt` at 0 is infinite and meets a zero derivative of the variance.
    /// Add a small constant under the root (`variance(..)?.add(eps)?.sqrt()`) when that can happen.
    pub fn std_dev(&self, axes: &[isize], keepdims: bool, correction: usize) -> Result<Self> {
        if let Some(out) = self.half_in_f32(|x| x.std_dev(axes, keepdims, correction)) {
            return out;
        }
        self.check_real_float("std_dev")?;
        self.variance(axes, keepdims, correction)?.sqrt()
    }

    /// Layer normalisation without affine parameters: `(x - mean) / sqrt(var + eps)` with the mean and
    /// the population variance taken over `axes` (empty = all axes), as
    /// `torch.nn.functional.layer_norm(x, normalized_shape, eps=eps)` when `axes` are the trailing
    /// `normalized_shape.len()` axes (for example `&[-1]`). The learnable scale and shift belong to a
    /// layer on top. Finite, with finite gradients, for constant inputs whenever `eps > 0`. Over
    /// trailing axes on the CPU it runs as one fused pass per row, with a fused backward.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let x = Tensor::from_vec(vec![1.0f64, 3.0, 2.0, 6.0], [2, 2], &CpuBackend::new())?;
    /// let y = x.layer_norm(&[-1], 0.0)?.to_vec::<f64>()?;
    /// for (a, b) in y.iter().zip([-1.0, 1.0, -1.0, 1.0]) {
    ///     assert!((a - b).abs() < 1e-12);
    /// }
    /// // A constant row stays finite thanks to eps.
    /// let c = Tensor::from_vec(vec![1e4f32; 3], [3], &CpuBackend::new())?;
    /// assert_eq!(c.layer_norm(&[-1], 1e-5)?.to_vec::<f32>()?, vec![0.0; 3]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn layer_norm(&self, axes: &[isize], eps: f64) -> Result<Self> {
        if let Some(out) = self.half_in_f32(|x| x.layer_norm(axes, eps)) {
            return out;
        }
        self.check_real_float("layer_norm")?;
        self.reduced_count("layer_norm", axes)?;
        if let Some(row_axes) = self.trailing_axes("layer_norm", axes)?
            && let Some(kernels) = fused_rows::applies(self, row_axes)
        {
            return fused_rows::layer_norm(kernels, self, row_axes, eps);
        }
        let centered = self.sub(self.mean(axes, true)?)?;
        let var = centered.square()?.mean(axes, true)?;
        centered.mul(var.add(eps)?.rsqrt()?)
    }

    /// Divides by the `p`-norm along `axis`, clamped below by `eps`: `x / max(||x||_p, eps)`, as
    /// `torch.nn.functional.normalize(x, p, dim=axis, eps=eps)`. `p` may be any positive number or
    /// `f64::INFINITY` (the largest magnitude).
    ///
    /// For finite `p` it is evaluated as `x / max(sum |x|^p, eps^p)^(1/p)`, the same value, so that a
    /// zero slice (where the norm is not differentiable) gets the finite gradient `1 / eps` instead of
    /// NaN. `eps^p` must be representable (for example `eps = 1e-12` with `p = 2` in float32).
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let x = Tensor::from_vec(vec![3.0f64, 4.0, 0.0, 0.0], [2, 2], &CpuBackend::new())?;
    /// assert_eq!(x.normalize(2.0, -1, 1e-12)?.to_vec::<f64>()?, vec![0.6, 0.8, 0.0, 0.0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn normalize(&self, p: f64, axis: isize, eps: f64) -> Result<Self> {
        if let Some(out) = self.half_in_f32(|x| x.normalize(p, axis, eps)) {
            return out;
        }
        const OP: &str = "normalize";
        self.check_real_float(OP)?;
        let axis = [normalize_axis(OP, axis, self.rank())? as isize];
        if p.is_nan() || p <= 0.0 {
            return Err(Error::invalid(
                OP,
                format!("the norm order p must be positive (or infinite), got {p}"),
            ));
        }
        let denom = if p == f64::INFINITY {
            self.abs()?.max(&axis, true)?.maximum(eps)?
        } else if p == 2.0 {
            let sq = self.square()?.sum(&axis, true)?;
            sq.maximum(eps * eps)?.sqrt()?
        } else {
            let s = self.abs()?.pow(p)?.sum(&axis, true)?;
            s.maximum(eps.powf(p))?.pow(1.0 / p)?
        };
        self.div(&denom)
    }
}
