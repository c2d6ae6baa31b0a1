//! Elementwise activation functions. Where a function has a kink, the derivative there is JAX's:
//! `relu'(0) = 0`, `leaky_relu'(0) = 1`, `elu'(0) = alpha`.

use crate::Tensor;
use nabla_core::{Backend, Result};

/// `sqrt(2 / pi)`, the scale inside the tanh approximation of GELU.
const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;

impl<B: Backend> Tensor<B> {
    /// Rectified linear unit `max(x, 0)`. The derivative at 0 is 0 (as `jax.nn.relu`), not the
    /// one-half that `maximum`'s tie rule would give; NaN stays NaN (as in PyTorch and JAX), and
    /// its cotangent passes through.
    ///
    /// ```
    /// # use nabla_tensor::{Tensor, grad}; use nabla_cpu::CpuBackend;
    /// let x = Tensor::from_vec(vec![-2.0f64, 0.0, 3.0], [3], &CpuBackend::new())?;
    /// assert_eq!(x.relu()?.to_vec::<f64>()?, vec![0.0, 0.0, 3.0]);
    /// let g = grad(|x: &Tensor<CpuBackend>| x.relu()?.sum_all())(&x)?;
    /// assert_eq!(g.to_vec::<f64>()?, vec![0.0, 0.0, 1.0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn relu(&self) -> Result<Self> {
        if let Some(out) = self.half_in_f32(|x| x.relu()) {
            return out;
        }
        self.check_real_float("relu")?;
        // One pass each way on the CPU backend (same values and derivatives, see `fused_relu`).
        if let Some(kernels) = crate::fused_rows::applies(self, 0) {
            return crate::fused_relu::relu(kernels, self);
        }
        self.le(0.0)?.where_(0.0, self)
    }

    /// Leaky ReLU: `x` for `x >= 0`, `negative_slope * x` below (as `jax.nn.leaky_relu`; the derivative
    /// at 0 is 1).
    pub fn leaky_relu(&self, negative_slope: f64) -> Result<Self> {
        if let Some(out) = self.half_in_f32(|x| x.leaky_relu(negative_slope)) {
            return out;
        }
        self.check_real_float("leaky_relu")?;
        self.ge(0.0)?.where_(self, self.mul(negative_slope)?)
    }

    /// Exact GELU, `x/2 * (1 + erf(x / sqrt 2))` (`jax.nn.gelu(x, approximate=False)`, PyTorch's default
    /// `gelu`). Finite with finite derivatives for any finite input: the tails tend to `x` and to 0.
    ///
    /// JAX writes `1 + erf(-z)` as `erfc(-z)`, which keeps relative accuracy far in the negative tail
    /// (below about -5, where the result is under 1e-6 in magnitude); there the two differ in the last
    /// digits only relative to the result, not to the input.
    pub fn gelu(&self) -> Result<Self> {
        if let Some(out) = self.half_in_f32(|x| x.gelu()) {
            return out;
        }
        self.check_real_float("gelu")?;
        let cdf = self
            .mul(std::f64::consts::FRAC_1_SQRT_2)?
            .erf()?
            .add(1.0)?
            .mul(0.5)?;
        self.mul(&cdf)
    }

    /// GELU with the tanh approximation, `x/2 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`
    /// (`jax.nn.gelu(x, approximate=True)`, PyTorch's `gelu(approximate="tanh")`).
    ///
    /// It is evaluated as `x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3))`, the same function, because
    /// `(1 + tanh z) / 2` cancels catastrophically for very negative `z` while the sigmoid does not.
    pub fn gelu_tanh(&self) -> Result<Self> {
        if let Some(out) = self.half_in_f32(|x| x.gelu_tanh()) {
            return out;
        }
        self.check_real_float("gelu_tanh")?;
        let inner = self
            .square()?
            .mul(0.044_715)?
            .add(1.0)?
            .mul(self)?
            .mul(2.0 * SQRT_2_OVER_PI)?;
        self.mul(inner.sigmoid()?)
    }

    /// SiLU (swish), `x * sigmoid(x)` (`jax.nn.silu`).
    pub fn silu(&self) -> Result<Self> {
        if let Some(out) = self.half_in_f32(|x| x.silu()) {
            return out;
        }
        self.check_real_float("silu")?;
        self.mul(self.sigmoid()?)
    }

    /// Softplus `log(1 + e^x)`, stable for any input and differentiable to any order everywhere
    /// (`jax.nn.softplus`): its derivative is `sigmoid(x)`.
    ///
    /// It selects between `x + log1p(e^-x)` for `x > 0` and `log1p(e^x)` otherwise, each evaluated at an
    /// input clamped to its own side so that the branch not taken can neither overflow nor send a NaN
    /// through the reverse pass. (The one-line `max(x, 0) + log1p(e^-|x|)` has the right value and first
    /// derivative but a zero second derivative at exactly 0, where the true one is 1/4.)
    ///
    /// ```
    /// # use nabla_tensor::{Tensor, grad}; use nabla_cpu::CpuBackend;
    /// let x = Tensor::from_vec(vec![-1e4f32, 0.0, 1e4], [3], &CpuBackend::new())?;
    /// let y = x.softplus()?.to_vec::<f32>()?;
    /// assert_eq!((y[0], y[2]), (0.0, 1e4));
    /// assert!((y[1] - std::f32::consts::LN_2).abs() < 1e-7);
    /// let g = grad(|x: &Tensor<CpuBackend>| x.softplus()?.sum_all())(&x)?;
    /// assert_eq!(g.to_vec::<f32>()?, vec![0.0, 0.5, 1.0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn softplus(&self) -> Result<Self> {
        if let Some(out) = self.half_in_f32(|x| x.softplus()) {
            return out;
        }
        self.check_real_float("softplus")?;
        let positive = self.gt(0.0)?;
        let xp = positive.where_(self, 0.0)?;
        let xn = positive.where_(0.0, self)?;
        let upper = xp.neg()?.exp()?.log1p()?.add(&xp)?;
        let lower = xn.exp()?.log1p()?;
        positive.where_(&upper, &lower)
    }

    /// ELU: `x` for `x > 0`, `alpha * (e^x - 1)` otherwise (`jax.nn.elu`; the derivative at 0 is
    /// `alpha`). The exponential only ever sees non-positive inputs, so large inputs cannot overflow.
    pub fn elu(&self, alpha: f64) -> Result<Self> {
        if let Some(out) = self.half_in_f32(|x| x.elu(alpha)) {
            return out;
        }
        self.check_real_float("elu")?;
        let positive = self.gt(0.0)?;
        let safe = positive.where_(0.0, self)?;
        positive.where_(self, safe.expm1()?.mul(alpha)?)
    }
}
