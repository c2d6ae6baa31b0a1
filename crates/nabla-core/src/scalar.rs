//! A single value of any dtype, used for fill values, padding values and `item()`.

use crate::DType;
use num_complex::Complex64;
use std::fmt;

/// One value of runtime type. Converts into the element type an op needs.
///
/// ```
/// use nabla_core::{Scalar, DType};
/// let s = Scalar::from(2.5f32);
/// assert_eq!(s.to_f64(), 2.5);
/// assert_eq!(Scalar::from(true).to_f64(), 1.0);
/// assert_eq!(Scalar::F64(1.5).natural_dtype(), DType::F64);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// A real number.
    F64(f64),
    /// A complex number.
    C128(Complex64),
    /// An integer.
    I64(i64),
    /// An integer above `i64::MAX` (only `uint64` values need it; smaller ones are [`Scalar::I64`]).
    U64(u64),
    /// A boolean.
    Bool(bool),
}

impl Scalar {
    /// The dtype a tensor of `dtype` combined with this number gives: numbers are "weak", as in
    /// PyTorch and JAX, so the tensor's dtype is kept unless the number is of a higher category
    /// (bool < integer < float < complex). Then it is that category's default: `i64` for an integer
    /// with a bool tensor, `f32` for a float with a bool or integer tensor, and the complex type of the
    /// tensor's precision for a complex number (`complex64` for integer, half and `f32` tensors,
    /// `complex128` for `f64`).
    ///
    /// ```
    /// use nabla_core::{DType, Scalar};
    /// assert_eq!(Scalar::F64(2.5).result_type(DType::F16), DType::F16);
    /// assert_eq!(Scalar::F64(2.5).result_type(DType::I64), DType::F32);
    /// assert_eq!(Scalar::I64(3).result_type(DType::Bool), DType::I64);
    /// let j = Scalar::C128(nabla_core::num_complex::Complex64::new(0.0, 1.0));
    /// assert_eq!(j.result_type(DType::F64), DType::C128);
    /// ```
    pub fn result_type(self, dtype: DType) -> DType {
        let category = match self {
            Scalar::Bool(_) => 0,
            Scalar::I64(_) | Scalar::U64(_) => 1,
            Scalar::F64(_) => 2,
            Scalar::C128(_) => 3,
        };
        if category <= dtype.category() {
            return dtype;
        }
        match (category, dtype) {
            (1, _) if matches!(self, Scalar::U64(_)) => DType::U64,
            (1, _) => DType::I64,
            (2, _) => DType::F32,
            (_, DType::F64) => DType::C128,
            _ => DType::C64,
        }
    }

    /// The value as `f64` (real part for complex, 0/1 for bool).
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::F64(v) => v,
            Scalar::C128(c) => c.re,
            Scalar::I64(v) => v as f64,
            Scalar::U64(v) => v as f64,
            Scalar::Bool(b) => b as u8 as f64,
        }
    }

    /// The integer `v` as [`Scalar::I64`] when it fits, else as [`Scalar::U64`] (wrapping above
    /// `u64::MAX`, which no element type reaches).
    pub fn integer(v: i128) -> Scalar {
        match i64::try_from(v) {
            Ok(v) => Scalar::I64(v),
            Err(_) => Scalar::U64(v as u64),
        }
    }

    /// The value as `i64` (truncating floats and saturating at the `i64` range; NaN maps to 0).
    pub fn to_i64(self) -> i64 {
        match self {
            Scalar::F64(v) => v as i64,
            Scalar::C128(c) => c.re as i64,
            Scalar::I64(v) => v,
            Scalar::U64(v) => i64::try_from(v).unwrap_or(i64::MAX),
            Scalar::Bool(b) => b as i64,
        }
    }

    /// The value when it is an integer (`true` and `false` as 1 and 0); `None` for real and complex
    /// numbers.
    ///
    /// ```
    /// use nabla_core::Scalar;
    /// assert_eq!(Scalar::from(u64::MAX).as_integer(), Some(u64::MAX as i128));
    /// assert_eq!(Scalar::F64(1.0).as_integer(), None);
    /// ```
    pub fn as_integer(self) -> Option<i128> {
        match self {
            Scalar::I64(v) => Some(v.into()),
            Scalar::U64(v) => Some(v.into()),
            Scalar::Bool(b) => Some(b.into()),
            Scalar::F64(_) | Scalar::C128(_) => None,
        }
    }

    /// The value as a complex number.
    pub fn to_c128(self) -> Complex64 {
        match self {
            Scalar::C128(c) => c,
            other => Complex64::new(other.to_f64(), 0.0),
        }
    }

    /// The value as a boolean (non-zero is `true`).
    pub fn to_bool(self) -> bool {
        match self {
            Scalar::F64(v) => v != 0.0,
            Scalar::C128(c) => c.re != 0.0 || c.im != 0.0,
            Scalar::I64(v) => v != 0,
            Scalar::U64(v) => v != 0,
            Scalar::Bool(b) => b,
        }
    }

    /// The dtype a literal of this kind gets by default (`F64`, `C128`, `I64`, `U64` for an integer
    /// above `i64::MAX`, or `Bool`).
    pub fn natural_dtype(self) -> DType {
        match self {
            Scalar::F64(_) => DType::F64,
            Scalar::C128(_) => DType::C128,
            Scalar::I64(_) => DType::I64,
            Scalar::U64(_) => DType::U64,
            Scalar::Bool(_) => DType::Bool,
        }
    }
}

macro_rules! scalar_from {
    ($($t:ty => $variant:ident as $as:ty),* $(,)?) => {$(
        impl From<$t> for Scalar {
            fn from(v: $t) -> Self { Scalar::$variant(v as $as) }
        }
    )*};
}
scalar_from!(f64 => F64 as f64, f32 => F64 as f64, i64 => I64 as i64, i32 => I64 as i64, i16 => I64 as i64, i8 => I64 as i64, u8 => I64 as i64, u16 => I64 as i64, u32 => I64 as i64);

impl From<u64> for Scalar {
    fn from(v: u64) -> Self {
        Scalar::integer(v as i128)
    }
}
impl From<usize> for Scalar {
    fn from(v: usize) -> Self {
        Scalar::integer(v as i128)
    }
}

impl From<bool> for Scalar {
    fn from(v: bool) -> Self {
        Scalar::Bool(v)
    }
}
impl From<Complex64> for Scalar {
    fn from(v: Complex64) -> Self {
        Scalar::C128(v)
    }
}
impl From<num_complex::Complex32> for Scalar {
    fn from(v: num_complex::Complex32) -> Self {
        Scalar::C128(Complex64::new(v.re as f64, v.im as f64))
    }
}
impl From<half::f16> for Scalar {
    fn from(v: half::f16) -> Self {
        Scalar::F64(v.to_f64())
    }
}
impl From<half::bf16> for Scalar {
    fn from(v: half::bf16) -> Self {
        Scalar::F64(v.to_f64())
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::F64(v) => write!(f, "{v}"),
            Scalar::C128(c) => write!(f, "{}{:+}j", c.re, c.im),
            Scalar::I64(v) => write!(f, "{v}"),
            Scalar::U64(v) => write!(f, "{v}"),
            Scalar::Bool(b) => write!(f, "{b}"),
        }
    }
}
