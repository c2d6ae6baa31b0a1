//! Random draws on the host, the one definition of what [`crate::Backend::random`] returns.
//!
//! Element `i` is a pure function of the key and `i` ([`RngKey::uniform_f64`], [`RngKey::normal_f64`]),
//! computed in `f64` and converted once to the target dtype, so every backend produces the same numbers
//! and the work splits freely: [`random_host`] takes the [`Fill`] that runs the per-element function
//! (in order here, across threads on the CPU backend).

use crate::{
    CastFrom, DType, Distribution, Element, Error, HostData, Result, RngKey, Scalar, dispatch_dtype,
};
use half::{bf16, f16};

/// Fills an output of `len` elements with `f(i)` for each index `i`.
pub trait Fill {
    /// The vector `[f(0), f(1), ..., f(len - 1)]`.
    fn fill<T: Element>(&self, len: usize, f: impl Fn(u64) -> T + Sync) -> Vec<T>;
}

/// [`Fill`] in index order on the calling thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct InOrder;

impl Fill for InOrder {
    fn fill<T: Element>(&self, len: usize, f: impl Fn(u64) -> T + Sync) -> Vec<T> {
        (0..len as u64).map(f).collect()
    }
}

const OP: &str = "random";

/// Real float element types, which uniform and normal draws produce.
trait RandomFloat: CastFrom + PartialOrd {
    /// The largest value below `self` (for finite `self`).
    fn next_below(self) -> Self;
}

macro_rules! random_float {
    ($($t:ty => $bits:ty, $neg_tiny:expr);*) => {$(
        impl RandomFloat for $t {
            fn next_below(self) -> Self {
                let b = self.to_bits();
                let zero = <$t>::from_bits(0);
                if self > zero {
                    <$t>::from_bits(b - 1)
                } else if self == zero {
                    <$t>::from_bits($neg_tiny)
                } else {
                    <$t>::from_bits(b + 1)
                }
            }
        }
    )*};
}
random_float!(
    f16 => u16, 0x8001;
    bf16 => u16, 0x8001;
    f32 => u32, 0x8000_0001;
    f64 => u64, 0x8000_0000_0000_0001
);

/// Uniform draws `low + (high - low) u` on `[low, high)` in the precision of `T`. A draw that rounds up
/// to `high` in `T` becomes the largest value of `T` below `high` (or `low`, if `T` has nothing between).
fn uniform<T: RandomFloat>(
    len: usize,
    low: f64,
    high: f64,
    key: RngKey,
    fill: &impl Fill,
) -> Vec<T> {
    let hi = T::cast_from(Scalar::F64(high));
    let lo = T::cast_from(Scalar::F64(low));
    let below = hi.next_below();
    let cap = if below < lo { lo } else { below };
    fill.fill(len, |i| {
        let v = T::cast_from(Scalar::F64(low + (high - low) * key.uniform_f64(i)));
        if v >= hi { cap } else { v }
    })
}

/// Checks the parameters of `dist`.
fn validate(dist: Distribution) -> Result<()> {
    match dist {
        Distribution::Uniform { low, high } => {
            if !(low.is_finite() && high.is_finite() && low < high) {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "uniform needs finite bounds with low < high, got low = {low}, high = {high}"
                    ),
                ));
            }
        }
        Distribution::Normal { mean, std } => {
            if !(mean.is_finite() && std.is_finite() && std >= 0.0) {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "normal needs a finite mean and a finite std >= 0, got mean = {mean}, std = {std}"
                    ),
                ));
            }
        }
        Distribution::Bernoulli { p } => {
            if !(0.0..=1.0).contains(&p) {
                return Err(Error::invalid(
                    OP,
                    format!("bernoulli needs a probability 0 <= p <= 1, got p = {p}"),
                ));
            }
        }
    }
    Ok(())
}

fn unsupported(dtype: DType, what: &str) -> Error {
    Error::dtype(OP, dtype).with_hint(format!(
        "{what} draws need {}",
        match what {
            "bernoulli" => "a real float, integer or bool dtype",
            _ => "a real float dtype",
        }
    ))
}

/// `len` draws from `dist` as `dtype` (see [`crate::Backend::random`]), each element computed by
/// `fill`; an error for invalid parameters or a dtype the distribution does not produce.
///
/// ```
/// use nabla_core::{DType, Distribution, Generator, HostData, random_host, InOrder};
/// let key = Generator::new(7).next_key(4);
/// let coin = random_host(Distribution::Bernoulli { p: 1.0 }, 4, DType::Bool, key, &InOrder)?;
/// assert_eq!(coin, HostData::Bool(vec![true; 4]));
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn random_host(
    dist: Distribution,
    len: usize,
    dtype: DType,
    key: RngKey,
    fill: &impl Fill,
) -> Result<HostData> {
    validate(dist)?;
    match dist {
        Distribution::Uniform { low, high } => dispatch_dtype!(dtype, T, {
            half | real => Ok(T::into_host(uniform::<T>(len, low, high, key, fill))),
            _ => Err(unsupported(dtype, "uniform")),
        }),
        Distribution::Normal { mean, std } => dispatch_dtype!(dtype, T, {
            half | real => Ok(T::into_host(fill.fill::<T>(len, |i| {
                T::cast_from(Scalar::F64(mean + std * key.normal_f64(i)))
            }))),
            _ => Err(unsupported(dtype, "normal")),
        }),
        Distribution::Bernoulli { p } => {
            if dtype.is_complex() {
                return Err(unsupported(dtype, "bernoulli"));
            }
            Ok(dispatch_dtype!(dtype, T => {
                T::into_host(fill.fill::<T>(len, |i| T::cast_from(Scalar::Bool(key.uniform_f64(i) < p))))
            }))
        }
    }
}
