//! Initialisers with PyTorch's formulas (`torch.nn.init`), all drawing from an explicit seeded
//! [`Generator`] so that runs are reproducible.
//!
//! Fans follow PyTorch: for a weight of shape `[out, in, k...]`, `fan_in = in * prod(k)` and
//! `fan_out = out * prod(k)`.
//!
//! ```
//! use nabla_nn::init::{self, FanMode, Nonlinearity};
//! use nabla_core::{DType, Generator};
//! use nabla_cpu::CpuBackend;
//! let cpu = CpuBackend::new();
//! let mut rng = Generator::new(0);
//! let w = init::kaiming_uniform([64, 32], 0.0, FanMode::FanIn, Nonlinearity::Relu, DType::F32, &mut rng, &cpu)?;
//! let bound = (6.0f32 / 32.0).sqrt();
//! assert!(w.to_vec::<f32>()?.iter().all(|v| v.abs() <= bound));
//! # Ok::<(), nabla_core::Error>(())
//! ```

use nabla_core::{Backend, DType, Distribution, Error, Generator, Result, Shape};
use nabla_tensor::Tensor;
use rayon::prelude::*;

/// Which fan a Kaiming initialiser preserves the variance of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FanMode {
    /// Preserve the variance of the forward pass (PyTorch's default, `mode="fan_in"`).
    FanIn,
    /// Preserve the variance of the backward pass.
    FanOut,
}

/// The nonlinearity a gain is computed for (`torch.nn.init.calculate_gain`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Nonlinearity {
    /// Identity and convolutions: gain 1.
    Linear,
    /// Sigmoid: gain 1.
    Sigmoid,
    /// Tanh: gain 5/3.
    Tanh,
    /// ReLU: gain √2.
    Relu,
    /// Leaky ReLU with this negative slope: gain √(2 / (1 + slope²)).
    LeakyRelu(f64),
    /// SELU: gain 3/4.
    Selu,
}

/// The recommended gain for `nonlinearity`, as `torch.nn.init.calculate_gain`.
pub fn calculate_gain(nonlinearity: Nonlinearity) -> f64 {
    match nonlinearity {
        Nonlinearity::Linear | Nonlinearity::Sigmoid => 1.0,
        Nonlinearity::Tanh => 5.0 / 3.0,
        Nonlinearity::Relu => 2f64.sqrt(),
        Nonlinearity::LeakyRelu(slope) => (2.0 / (1.0 + slope * slope)).sqrt(),
        Nonlinearity::Selu => 0.75,
    }
}

/// `(fan_in, fan_out)` of a weight shape; needs at least two dimensions.
pub fn fans(shape: &[usize]) -> Result<(usize, usize)> {
    if shape.len() < 2 {
        return Err(Error::invalid(
            "init::fans",
            format!(
                "fan in and fan out need a weight with at least 2 dimensions, got shape {shape:?}"
            ),
        ));
    }
    let receptive: usize = shape[2..].iter().product();
    Ok((shape[1] * receptive, shape[0] * receptive))
}

/// Every element equal to `value`.
pub fn constant<B: Backend>(
    shape: impl Into<Shape>,
    value: f64,
    dtype: DType,
    backend: &B,
) -> Result<Tensor<B>> {
    Tensor::full(shape, value, dtype, backend)
}

/// PyTorch's default bias bound `1/√fan_in` (0 for an empty fan): biases are drawn from
/// `U(-bound, bound)`.
pub(crate) fn bias_bound(fan_in: usize) -> f64 {
    if fan_in > 0 {
        1.0 / (fan_in as f64).sqrt()
    } else {
        0.0
    }
}

/// Uniform on `[low, high)`.
pub fn uniform<B: Backend>(
    shape: impl Into<Shape>,
    low: f64,
    high: f64,
    dtype: DType,
    rng: &mut Generator,
    backend: &B,
) -> Result<Tensor<B>> {
    if low.is_nan() || high.is_nan() || low > high {
        return Err(Error::invalid(
            "init::uniform",
            format!("needs low <= high, got [{low}, {high})"),
        ));
    }
    Tensor::uniform(shape, low, high, dtype, rng, backend)
}

/// Normal with mean `mean` and standard deviation `std`.
pub fn normal<B: Backend>(
    shape: impl Into<Shape>,
    mean: f64,
    std: f64,
    dtype: DType,
    rng: &mut Generator,
    backend: &B,
) -> Result<Tensor<B>> {
    if std.is_nan() || std < 0.0 {
        return Err(Error::invalid(
            "init::normal",
            format!("needs std >= 0, got {std}"),
        ));
    }
    Tensor::normal(shape, mean, std, dtype, rng, backend)
}

/// Xavier/Glorot uniform: `U(-a, a)` with `a = gain * √(6 / (fan_in + fan_out))`.
pub fn xavier_uniform<B: Backend>(
    shape: impl Into<Shape>,
    gain: f64,
    dtype: DType,
    rng: &mut Generator,
    backend: &B,
) -> Result<Tensor<B>> {
    let shape = shape.into();
    let (fan_in, fan_out) = fans(shape.dims())?;
    let a = gain * (6.0 / (fan_in + fan_out) as f64).sqrt();
    uniform(shape, -a, a, dtype, rng, backend)
}

/// Xavier/Glorot normal: `N(0, std²)` with `std = gain * √(2 / (fan_in + fan_out))`.
pub fn xavier_normal<B: Backend>(
    shape: impl Into<Shape>,
    gain: f64,
    dtype: DType,
    rng: &mut Generator,
    backend: &B,
) -> Result<Tensor<B>> {
    let shape = shape.into();
    let (fan_in, fan_out) = fans(shape.dims())?;
    let std = gain * (2.0 / (fan_in + fan_out) as f64).sqrt();
    normal(shape, 0.0, std, dtype, rng, backend)
}

/// The standard deviation a Kaiming initialiser aims for.
fn kaiming_std(
    op: &'static str,
    shape: &[usize],
    a: f64,
    mode: FanMode,
    nonlinearity: Nonlinearity,
) -> Result<f64> {
    let (fan_in, fan_out) = fans(shape)?;
    let fan = match mode {
        FanMode::FanIn => fan_in,
        FanMode::FanOut => fan_out,
    };
    if fan == 0 {
        return Err(Error::invalid(
            op,
            format!("a zero fan for shape {shape:?}: nothing to scale by"),
        ));
    }
    // PyTorch passes `a` as the leaky-ReLU slope whatever the nonlinearity says.
    let gain = match nonlinearity {
        Nonlinearity::LeakyRelu(_) | Nonlinearity::Relu if a != 0.0 => {
            calculate_gain(Nonlinearity::LeakyRelu(a))
        }
        other => calculate_gain(other),
    };
    Ok(gain / (fan as f64).sqrt())
}

/// Kaiming/He uniform: `U(-b, b)` with `b = gain * √(3 / fan)`; `a` is the leaky-ReLU slope
/// (PyTorch's `kaiming_uniform_(w, a, mode, nonlinearity)`).
pub fn kaiming_uniform<B: Backend>(
    shape: impl Into<Shape>,
    a: f64,
    mode: FanMode,
    nonlinearity: Nonlinearity,
    dtype: DType,
    rng: &mut Generator,
    backend: &B,
) -> Result<Tensor<B>> {
    let shape = shape.into();
    let std = kaiming_std("init::kaiming_uniform", shape.dims(), a, mode, nonlinearity)?;
    let bound = 3f64.sqrt() * std;
    uniform(shape, -bound, bound, dtype, rng, backend)
}

/// Kaiming/He normal: `N(0, std²)` with `std = gain / √fan`.
pub fn kaiming_normal<B: Backend>(
    shape: impl Into<Shape>,
    a: f64,
    mode: FanMode,
    nonlinearity: Nonlinearity,
    dtype: DType,
    rng: &mut Generator,
    backend: &B,
) -> Result<Tensor<B>> {
    let shape = shape.into();
    let std = kaiming_std("init::kaiming_normal", shape.dims(), a, mode, nonlinearity)?;
    normal(shape, 0.0, std, dtype, rng, backend)
}

/// Normal `N(mean, std²)` truncated to `(low, high)` bounds, drawn by inverting the normal CDF on a uniform
/// sample of `[Φ(low), Φ(high)]` (PyTorch's method), so no value is ever outside the bounds.
pub fn trunc_normal<B: Backend>(
    shape: impl Into<Shape>,
    mean: f64,
    std: f64,
    (low, high): (f64, f64),
    dtype: DType,
    rng: &mut Generator,
    backend: &B,
) -> Result<Tensor<B>> {
    const OP: &str = "init::trunc_normal";
    if std.is_nan() || std < 0.0 || low.is_nan() || high.is_nan() || low >= high {
        return Err(Error::invalid(
            OP,
            format!("needs std >= 0 and low < high, got std {std}, bounds [{low}, {high}]"),
        ));
    }
    let shape = shape.into();
    let cdf = |x: f64| 0.5 * (1.0 + libm::erf((x - mean) / (std * 2f64.sqrt())));
    let (lo, hi) = (cdf(low), cdf(high));
    let uniform = Distribution::Uniform {
        low: 0.0,
        high: 1.0,
    };
    let u = Tensor::<B>::random_f64s(shape.clone(), uniform, rng)?;
    // Rayon's threads share the inversions (a ViT-B's 86M weights take seconds on one core).
    let values: Vec<f64> = u
        .par_iter()
        .map(|&u| {
            let p =
                (2.0 * (lo + u * (hi - lo)) - 1.0).clamp(-1.0 + f64::EPSILON, 1.0 - f64::EPSILON);
            (mean + std * 2f64.sqrt() * erfinv(p)).clamp(low, high)
        })
        .collect();
    Tensor::from_f64s(values, shape, dtype, backend)
}

/// A (semi-)orthogonal matrix scaled by `gain`, flattened from the trailing dimensions as PyTorch's
/// `orthogonal_` does: rows (or columns, whichever are fewer) are orthonormal. Drawn as the Q factor
/// of a normal matrix's QR decomposition, with signs fixed by R's diagonal so the draw is uniform.
pub fn orthogonal<B: Backend>(
    shape: impl Into<Shape>,
    gain: f64,
    dtype: DType,
    rng: &mut Generator,
    backend: &B,
) -> Result<Tensor<B>> {
    let shape = shape.into();
    let dims = shape.dims();
    if dims.len() < 2 {
        return Err(Error::invalid(
            "init::orthogonal",
            format!("needs at least 2 dimensions, got shape {dims:?}"),
        ));
    }
    let rows = dims[0];
    let cols: usize = dims[1..].iter().product();
    // Orthonormalise the columns of a tall matrix; transpose at the end for a wide one.
    let (tall_rows, tall_cols) = (rows.max(cols), rows.min(cols));
    let normal = Distribution::Normal {
        mean: 0.0,
        std: 1.0,
    };
    let a = Tensor::<B>::random_f64s([tall_rows, tall_cols], normal, rng)?;
    let q = thin_q(&a, tall_rows, tall_cols);
    let mut out = vec![0.0; rows * cols];
    for i in 0..tall_rows {
        for j in 0..tall_cols {
            let v = gain * q[i * tall_cols + j];
            if rows >= cols {
                out[i * cols + j] = v;
            } else {
                out[j * cols + i] = v;
            }
        }
    }
    Tensor::from_f64s(out, shape, dtype, backend)
}

/// The thin Q factor (`m x n`, row-major, `m >= n`) of `a` with R's diagonal positive, by
/// Gram-Schmidt with re-orthogonalisation.
fn thin_q(a: &[f64], m: usize, n: usize) -> Vec<f64> {
    let mut q = a.to_vec();
    for j in 0..n {
        let mut r_jj = 0.0;
        for _pass in 0..2 {
            for k in 0..j {
                let dot: f64 = (0..m).map(|i| q[i * n + k] * q[i * n + j]).sum();
                for i in 0..m {
                    q[i * n + j] -= dot * q[i * n + k];
                }
            }
        }
        let norm = (0..m).map(|i| q[i * n + j].powi(2)).sum::<f64>().sqrt();
        // The diagonal of R is the norm after projection, positive, so no sign flip is needed; a
        // degenerate column (probability zero) falls back to a unit vector.
        if norm > 0.0 {
            r_jj = norm;
        }
        for i in 0..m {
            q[i * n + j] = if r_jj > 0.0 {
                q[i * n + j] / r_jj
            } else {
                f64::from(i == j)
            };
        }
    }
    q
}

/// The inverse error function on (-1, 1): Giles' single-precision approximation refined by two Newton
/// steps on `libm`'s `erf`.
fn erfinv(p: f64) -> f64 {
    let w = -((1.0 - p) * (1.0 + p)).ln();
    let mut x = if w < 5.0 {
        let w = w - 2.5;
        let mut r = 2.810_226_36e-08;
        for c in [
            3.432_739_39e-07,
            -3.523_387_7e-06,
            -4.391_506_54e-06,
            0.000_218_580_87,
            -0.001_253_725_03,
            -0.004_177_681_64,
            0.246_640_727,
            1.501_409_41,
        ] {
            r = c + r * w;
        }
        r * p
    } else {
        let w = w.sqrt() - 3.0;
        let mut r = -0.000_200_214_257;
        for c in [
            0.000_100_950_558,
            0.001_349_343_22,
            -0.003_673_428_44,
            0.005_739_507_73,
            -0.007_622_461_3,
            0.009_438_870_47,
            1.001_674_06,
            2.832_976_82,
        ] {
            r = c + r * w;
        }
        r * p
    };
    for _ in 0..2 {
        let err = libm::erf(x) - p;
        x -= err / (2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp());
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erfinv_inverts_erf() {
        for p in [-0.999, -0.5, -1e-3, 0.0, 0.25, 0.9, 0.999_999] {
            assert!((libm::erf(erfinv(p)) - p).abs() < 1e-13, "erfinv({p})");
        }
        // erfinv(0.5) to 16 digits.
        assert!((erfinv(0.5) - 0.476_936_276_204_469_9).abs() < 1e-15);
    }

    #[test]
    fn q_factor_is_orthonormal() {
        let (m, n) = (7, 4);
        let a: Vec<f64> = (0..m * n)
            .map(|i| ((i * 37 % 11) as f64 - 5.0) / 3.0)
            .collect();
        let q = thin_q(&a, m, n);
        for j in 0..n {
            for k in 0..n {
                let dot: f64 = (0..m).map(|i| q[i * n + j] * q[i * n + k]).sum();
                assert!((dot - f64::from(j == k)).abs() < 1e-12);
            }
        }
    }
}
