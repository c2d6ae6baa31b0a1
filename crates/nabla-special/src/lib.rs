//! Owns the special-function extension family: `lgamma`, `digamma`, `erfinv`, `ndtr`, Bessel and more.
//! Must not depend on a concrete backend: only `nabla-core` and `nabla-tensor` (and libm).
//!
//! The layering of the crates, and the rules above, are described in the architecture chapter of
//! the book, `docs/src/architecture.md`.
//!
//! Special functions for nabla, as an **extension op family** (like `nabla-linalg` and
//! `nabla-fft`): `scipy.special`'s and `torch.special`'s everyday functions over tensors of any
//! backend, differentiable to any order in forward and reverse mode, eager, traced and under
//! `vmap`.
//!
//! | function | definition | derivative |
//! |---|---|---|
//! | [`lgamma`] | `ln |Γ(x)|` | [`digamma`] |
//! | [`digamma`] | `ψ(x) = Γ'(x)/Γ(x)` | `polygamma(1, x)` |
//! | [`polygamma`] | `ψ⁽ⁿ⁾(x)` | `polygamma(n + 1, x)` |
//! | [`erfinv`] | inverse of `erf` on `(−1, 1)` | `(√π/2) e^{erfinv(x)²}` |
//! | [`i0`], [`i1`] | modified Bessel functions of the first kind | `i1`, `i0 − i1/x` |
//! | [`i0e`], [`i1e`] | `e^{−|x|} I₀(x)`, `e^{−|x|} I₁(x)` (no overflow) | through `i1e`, `i0e` |
//! | [`erfc`] | `1 − erf(x)`, accurate where tiny | `−(2/√π) e^{−x²}` |
//! | [`ndtr`], [`log_ndtr`] | `Φ(x) = ½ erfc(−x/√2)`, `ln Φ(x)` | `φ(x)`, `φ(x)/Φ(x)` |
//! | [`ndtri`] | inverse of `Φ` on `(0, 1)` | `1/φ(ndtri(p))` |
//! | [`xlogy`] | `x ln y`, 0 where `x = 0` | composed |
//! | [`logit`] | `ln(p / (1 − p))`, optionally clamped | composed |
//! | [`log_sigmoid`] | `ln σ(x) = −softplus(−x)`, stable for large `|x|` | composed |
//! | [`betaln`] | `ln |B(a, b)|`, accurate for large arguments | `ψ(a) − ψ(a + b)`, `ψ(b) − ψ(a + b)` |
//!
//! The first twelve run as one extension op ([`Special`]), `betaln` as another ([`Betaln`]), computed
//! in `f64` on the host by
//! documented algorithms (see the `scalar` module: `libm`'s `lgamma`, series and asymptotic
//! expansions with their truncation bounds, Halley steps for `erfinv`), checked against SciPy to
//! 1e-13 relative. On the CPU backend they run on the tensors' memory; other backends (wgpu) run
//! them through a host round trip. They take `f32` and `f64`; integers and half floats convert to
//! `f32` (as PyTorch promotes them); complex input is an error. The rest are ordinary tensor code.
//!
//! ```
//! use nabla_tensor::{Tensor, grad};
//! use nabla_cpu::CpuBackend;
//! let x = Tensor::from_vec(vec![0.5f64, 1.0, 4.0], [3], &CpuBackend::new())?;
//! let lg = nabla_special::lgamma(&x)?.to_vec::<f64>()?;
//! assert!((lg[0] - std::f64::consts::PI.sqrt().ln()).abs() < 1e-15 && lg[1] == 0.0);
//! // d/dx ln Γ(x) = ψ(x); ψ(1) = −γ.
//! let g = grad(|x: &Tensor<CpuBackend>| nabla_special::lgamma(x)?.sum_all())(&x)?.to_vec::<f64>()?;
//! assert!((g[1] + 0.5772156649015329).abs() < 1e-15);
//! # Ok::<(), nabla_core::Error>(())
//! ```
#![warn(missing_docs)]

mod ops;
mod rules;
mod scalar;

pub use ops::{Betaln, Special, SpecialFn};
pub use rules::{SpecialFamily, rules};

use nabla_core::{Backend, Error, Result};
use nabla_tensor::Tensor;

/// `x` as `f32` or `f64` ([`nabla_core::DType::real_float`]); complex input is an error naming `op`.
fn float_input<B: Backend>(op: &'static str, x: &Tensor<B>) -> Result<Tensor<B>> {
    match x.dtype().real_float() {
        Some(dtype) if dtype == x.dtype() => Ok(x.clone()),
        Some(dtype) => x.cast(dtype),
        None => Err(Error::UnsupportedDType {
            op,
            dtype: x.dtype(),
            hint: Some(format!("{op} is defined for real input only")),
        }),
    }
}

fn unary<B: Backend>(f: SpecialFn, x: &Tensor<B>) -> Result<Tensor<B>> {
    rules::apply(f, &float_input(f.name(), x)?)
}

/// `ln |Γ(x)|` elementwise (`torch.lgamma`, `scipy.special.gammaln`); `+∞` at the poles.
pub fn lgamma<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    unary(SpecialFn::Lgamma, x)
}

/// The digamma function `ψ(x) = d/dx ln Γ(x)` elementwise; `−∞` at 0, NaN at the negative integers
/// (as SciPy).
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let x = Tensor::from_vec(vec![1.0f64, 0.5], [2], &CpuBackend::new())?;
/// let v = nabla_special::digamma(&x)?.to_vec::<f64>()?;
/// assert!((v[0] + 0.5772156649015329).abs() < 1e-15);
/// assert!((v[1] + 0.5772156649015329 + 2.0 * 2f64.ln()).abs() < 1e-14);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn digamma<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    unary(SpecialFn::Digamma, x)
}

/// `ψ⁽ⁿ⁾(x)`, the `n`-th derivative of [`digamma`] (`n = 0` is digamma itself), elementwise.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let x = Tensor::from_vec(vec![1.0f64], [1], &CpuBackend::new())?;
/// // ψ'(1) = π²/6.
/// let v = nabla_special::polygamma(1, &x)?.item::<f64>()?;
/// assert!((v - std::f64::consts::PI.powi(2) / 6.0).abs() < 1e-14);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn polygamma<B: Backend>(n: u32, x: &Tensor<B>) -> Result<Tensor<B>> {
    if n == 0 {
        digamma(x)
    } else {
        unary(SpecialFn::Polygamma(n), x)
    }
}

/// The inverse error function elementwise: `erf(erfinv(y)) = y` on `(−1, 1)`, `±∞` at `±1`, NaN
/// outside.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let y = Tensor::from_vec(vec![0.5f64], [1], &CpuBackend::new())?;
/// assert!((nabla_special::erfinv(&y)?.item::<f64>()? - 0.4769362762044699).abs() < 1e-15);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn erfinv<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    unary(SpecialFn::Erfinv, x)
}

/// The modified Bessel function of the first kind of order 0, `I₀(x)`, elementwise.
pub fn i0<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    unary(SpecialFn::I0, x)
}

/// The exponentially scaled `e^{−|x|} I₀(x)`, finite for every finite `x`.
pub fn i0e<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    unary(SpecialFn::I0e, x)
}

/// The modified Bessel function of the first kind of order 1, `I₁(x)`, elementwise.
pub fn i1<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    unary(SpecialFn::I1, x)
}

/// The exponentially scaled `e^{−|x|} I₁(x)`.
pub fn i1e<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    unary(SpecialFn::I1e, x)
}

/// The complementary error function `erfc(x) = 1 − erf(x)` elementwise, with full relative
/// precision where it is tiny (`erfc(10) ≈ 2.1e-45`, which `1 − erf(10)` rounds to 0).
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let x = Tensor::from_vec(vec![10.0f64], [1], &CpuBackend::new())?;
/// let v = nabla_special::erfc(&x)?.item::<f64>()?;
/// assert!((v / 2.088487583762545e-45 - 1.0).abs() < 1e-13);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn erfc<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    unary(SpecialFn::Erfc, x)
}

/// The standard normal CDF `Φ(x) = ½ erfc(−x/√2)` elementwise (`scipy.special.ndtr`,
/// `jax.scipy.special.ndtr`), accurate in both tails.
pub fn ndtr<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    unary(SpecialFn::Ndtr, x)
}

/// The inverse of [`ndtr`] elementwise: `Φ(ndtri(p)) = p` on `(0, 1)`, `−∞` at 0, `+∞` at 1, NaN
/// outside (`scipy.special.ndtri`).
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let p = Tensor::from_vec(vec![0.975f64, 1e-300], [2], &CpuBackend::new())?;
/// let v = nabla_special::ndtri(&p)?.to_vec::<f64>()?;
/// assert!((v[0] - 1.959963984540054).abs() < 1e-14);
/// assert!((v[1] / -37.0470962993612 - 1.0).abs() < 1e-14);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn ndtri<B: Backend>(p: &Tensor<B>) -> Result<Tensor<B>> {
    unary(SpecialFn::Ndtri, p)
}

/// `ln Φ(x)` elementwise (`scipy.special.log_ndtr`), finite and accurate far into both tails
/// (`log_ndtr(−40) ≈ −804.6`, where `Φ` itself underflows).
pub fn log_ndtr<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    unary(SpecialFn::LogNdtr, x)
}

/// `x ln y`, with 0 wherever `x = 0` (even where `y` is 0, negative or infinite), broadcasting
/// (`scipy.special.xlogy`, `torch.xlogy`). Derivatives are JAX's, `∂x = ln y` and `∂y = x / y`,
/// except where `x = 0` and `ln y` is not finite: there both are 0 (JAX gives `−∞` and NaN).
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let x = Tensor::from_vec(vec![0.0f64, 2.0], [2], &cpu)?;
/// let y = Tensor::from_vec(vec![0.0f64, 1.0], [2], &cpu)?;
/// assert_eq!(nabla_special::xlogy(&x, &y)?.to_vec::<f64>()?, vec![0.0, 0.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn xlogy<B: Backend>(x: &Tensor<B>, y: &Tensor<B>) -> Result<Tensor<B>> {
    // Where x = 0 and ln y is not finite, y is replaced by 1: the product is then 0 with finite
    // derivatives; everywhere else x ln y is computed as it is.
    let non_positive = y.le(0.0)?;
    let infinite_log = non_positive.where_(&non_positive, &y.eq(f64::INFINITY)?)?; // y ≤ 0 or y = ∞
    let x_zero = x.eq(0.0)?;
    let replace = x_zero.where_(&infinite_log, &x_zero)?; // x = 0 and the above
    x.mul(&replace.where_(1.0, y)?.log()?)
}

/// `ln(p / (1 − p))`; with `eps`, `p` is first clamped to `[eps, 1 − eps]` (`torch.logit`).
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let p = Tensor::from_vec(vec![0.5f64, 0.0], [2], &CpuBackend::new())?;
/// let v = nabla_special::logit(&p, Some(1e-6))?.to_vec::<f64>()?;
/// assert_eq!(v[0], 0.0);
/// assert!((v[1] - (1e-6f64 / (1.0 - 1e-6)).ln()).abs() < 1e-9);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn logit<B: Backend>(p: &Tensor<B>, eps: Option<f64>) -> Result<Tensor<B>> {
    let p = match eps {
        Some(e) if (0.0..=0.5).contains(&e) => p.clamp(e, 1.0 - e)?,
        Some(e) => {
            return Err(Error::invalid(
                "special.logit",
                format!("eps must be in [0, 0.5], got {e}"),
            ));
        }
        None => p.clone(),
    };
    p.div(&p.neg()?.add(1.0)?)?.log()
}

/// `ln σ(x) = −softplus(−x)` (`torch.nn.functional.logsigmoid`, `jax.nn.log_sigmoid`), finite and
/// accurate for large `|x|`.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let x = Tensor::from_vec(vec![-1000.0f64, 0.0, 1000.0], [3], &CpuBackend::new())?;
/// let v = nabla_special::log_sigmoid(&x)?.to_vec::<f64>()?;
/// assert_eq!(v[0], -1000.0);
/// assert!((v[1] + 2f64.ln()).abs() < 1e-15 && v[2] == 0.0);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn log_sigmoid<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    x.neg()?.softplus()?.neg()
}

/// `ln |B(a, b)| = lgamma(a) + lgamma(b) − lgamma(a + b)`, broadcasting (`scipy.special.betaln`),
/// with the dtype rules of the other functions. Where the larger argument is 10 or more the
/// difference `lgamma(b) − lgamma(a + b)` cancels, so it is computed from Stirling's series instead
/// (as Cephes and TOMS 708 do): within about 1e-15 relative of the exact value for positive
/// arguments up to `1e300`, where the three-term sum loses up to 3e-7 (at `(1e10, 1e-3)`).
/// Derivatives are `ψ(a) − ψ(a + b)` and `ψ(b) − ψ(a + b)`, differences of [`digamma`], accurate to
/// about 1e-15 of the digamma values (so with fewer digits where `b ≪ a` makes them nearly equal).
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let a = Tensor::from_vec(vec![2.0f64], [1], &cpu)?;
/// let b = Tensor::from_vec(vec![3.0f64], [1], &cpu)?;
/// // B(2, 3) = 1/12.
/// assert!((nabla_special::betaln(&a, &b)?.item::<f64>()? + 12f64.ln()).abs() < 1e-14);
/// // No cancellation for a large argument: ln B(1e8, 5) = ln 24 − 5 ln 1e8 + O(1e-7).
/// let big = Tensor::from_vec(vec![1e8f64], [1], &cpu)?;
/// let five = Tensor::from_vec(vec![5.0f64], [1], &cpu)?;
/// let v = nabla_special::betaln(&big, &five)?.item::<f64>()?;
/// assert!((v + 88.92534998941388).abs() < 1e-13 * 88.9);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn betaln<B: Backend>(a: &Tensor<B>, b: &Tensor<B>) -> Result<Tensor<B>> {
    const OP: &str = "special.betaln";
    let (a, b) = (float_input(OP, a)?, float_input(OP, b)?);
    let dtype = a.dtype().promote(b.dtype());
    let shape = nabla_core::Shape::broadcast(OP, a.shape(), b.shape())?;
    let fit = |t: Tensor<B>| -> Result<Tensor<B>> {
        let t = if t.dtype() == dtype {
            t
        } else {
            t.cast(dtype)?
        };
        if t.shape() == shape.dims() {
            Ok(t)
        } else {
            t.broadcast_to(shape.clone())
        }
    };
    rules::apply_betaln(&fit(a)?, &fit(b)?)
}
