//! Casting between every pair of dtypes with NumPy `astype` semantics, the one definition that every
//! backend's cast kernel and the host conversions ([`HostData::cast`]) follow.
//!
//! A source element is widened losslessly to a [`Scalar`] (`f64` for every real float, `i64` for every
//! integer that fits it and `u64` above, `Complex64`, or `bool`), and [`CastFrom`] narrows that to the destination type. After
//! inlining the variant is known, so each of the 225 (source, destination) loops is a plain loop.
//!
//! The rules:
//! - float to integer truncates toward zero and saturates at the integer range, NaN gives 0 (Rust `as`;
//!   NumPy leaves out-of-range values undefined). A negative float cast to an unsigned type therefore gives 0
//!   (`-1.0 -> 0`), whereas an integer wraps (`-1 -> 255`);
//! - integer to integer wraps (two's complement), integer to float rounds to nearest;
//! - to `bool`: non-zero (NaN counts as non-zero) is `true`; `bool` to a number gives 0 or 1;
//! - complex to real takes the real part; real to complex has a zero imaginary part;
//! - every rounding to `float16`/`bfloat16` is a single correct rounding: wider values first go to `f32`
//!   with round-to-odd, which makes the following round-to-nearest-even exact.

use crate::{DType, Element, HostData, Scalar, dispatch_dtype, with_host_data};
use half::{bf16, f16};
use num_complex::{Complex32, Complex64};

/// Conversion from a widened element.
pub trait CastFrom: Element {
    /// The value of `s` in this type, by the rules of the module documentation.
    fn cast_from(s: Scalar) -> Self;
}

/// Rounds `v` to `f32` with round-to-odd: exact values are kept, inexact ones go to the neighbour whose
/// last mantissa bit is 1. Rounding that result again to a format at least two bits narrower gives the
/// correctly rounded value of `v`.
#[inline(always)]
pub(crate) fn f64_to_f32_odd(v: f64) -> f32 {
    let f = v as f32;
    let back = f as f64;
    if back == v || !f.is_finite() || f.to_bits() & 1 == 1 {
        return f;
    }
    let bits = f.to_bits();
    f32::from_bits(if back.abs() < v.abs() {
        bits + 1
    } else {
        bits - 1
    })
}

/// [`f64_to_f32_odd`] for integers (every `i64` and `u64` value fits an `i128`).
#[inline(always)]
pub(crate) fn int_to_f32_odd(v: i128) -> f32 {
    let f = v as f32;
    let back = f as i128;
    if back == v || f.to_bits() & 1 == 1 {
        return f;
    }
    let bits = f.to_bits();
    f32::from_bits(if back.abs() < v.abs() {
        bits + 1
    } else {
        bits - 1
    })
}

macro_rules! cast_float {
    ($($t:ty),*) => {$(
        impl CastFrom for $t {
            #[inline(always)]
            fn cast_from(s: Scalar) -> Self {
                match s {
                    Scalar::F64(v) => v as $t,
                    Scalar::I64(v) => v as $t,
                    Scalar::U64(v) => v as $t,
                    Scalar::Bool(b) => b as u8 as $t,
                    Scalar::C128(c) => c.re as $t,
                }
            }
        }
    )*};
}
cast_float!(f32, f64);

macro_rules! cast_half {
    ($($t:ty),*) => {$(
        impl CastFrom for $t {
            #[inline(always)]
            fn cast_from(s: Scalar) -> Self {
                match s {
                    Scalar::F64(v) => <$t>::from_f32(f64_to_f32_odd(v)),
                    Scalar::I64(v) => <$t>::from_f32(int_to_f32_odd(v as i128)),
                    Scalar::U64(v) => <$t>::from_f32(int_to_f32_odd(v as i128)),
                    Scalar::Bool(b) => if b { <$t>::ONE } else { <$t>::ZERO },
                    Scalar::C128(c) => <$t>::from_f32(f64_to_f32_odd(c.re)),
                }
            }
        }
    )*};
}
cast_half!(f16, bf16);

macro_rules! cast_complex {
    ($($t:ty => $part:ty),*) => {$(
        impl CastFrom for $t {
            #[inline(always)]
            fn cast_from(s: Scalar) -> Self {
                match s {
                    Scalar::F64(v) => <$t>::new(v as $part, 0.0),
                    Scalar::I64(v) => <$t>::new(v as $part, 0.0),
                    Scalar::U64(v) => <$t>::new(v as $part, 0.0),
                    Scalar::Bool(b) => <$t>::new(b as u8 as $part, 0.0),
                    Scalar::C128(c) => <$t>::new(c.re as $part, c.im as $part),
                }
            }
        }
    )*};
}
cast_complex!(Complex32 => f32, Complex64 => f64);

macro_rules! cast_int {
    ($($t:ty),*) => {$(
        impl CastFrom for $t {
            #[inline(always)]
            fn cast_from(s: Scalar) -> Self {
                match s {
                    Scalar::F64(v) => v as $t,
                    Scalar::I64(v) => v as $t,
                    Scalar::U64(v) => v as $t,
                    Scalar::Bool(b) => b as $t,
                    Scalar::C128(c) => c.re as $t,
                }
            }
        }
    )*};
}
crate::for_int_types!(cast_int);

impl CastFrom for bool {
    #[inline(always)]
    fn cast_from(s: Scalar) -> Self {
        match s {
            Scalar::F64(v) => v != 0.0,
            Scalar::I64(v) => v != 0,
            Scalar::U64(v) => v != 0,
            Scalar::Bool(b) => b,
            Scalar::C128(c) => c.re != 0.0 || c.im != 0.0,
        }
    }
}

impl HostData {
    /// The values converted to `dtype` with NumPy `astype` semantics (the rules of [`CastFrom`]), on the
    /// host; `self` unchanged when it already has that dtype.
    ///
    /// ```
    /// use nabla_core::{DType, HostData};
    /// let x = HostData::F64(vec![1.5, -2.7, f64::NAN]);
    /// assert_eq!(x.clone().cast(DType::I64), HostData::I64(vec![1, -2, 0]));
    /// assert_eq!(x.cast(DType::Bool), HostData::Bool(vec![true, true, true]));
    /// ```
    pub fn cast(self, dtype: DType) -> HostData {
        if self.dtype() == dtype {
            return self;
        }
        with_host_data!(&self, values => dispatch_dtype!(dtype, D => D::into_host(
            values.iter().map(|v| D::cast_from(v.to_scalar())).collect()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The correctly rounded `f16` nearest to `v` (ties to even), by searching the neighbours of a guess.
    fn nearest_f16(v: f64) -> f16 {
        if v.abs() >= 65520.0 {
            return if v > 0.0 {
                f16::INFINITY
            } else {
                f16::NEG_INFINITY
            };
        }
        let guess = f16::from_f64(v);
        let mut best = guess;
        for cand in [
            f16::from_bits(guess.to_bits().wrapping_sub(1)),
            guess,
            f16::from_bits(guess.to_bits() + 1),
        ] {
            if !cand.is_finite() {
                continue;
            }
            let (db, dc) = ((best.to_f64() - v).abs(), (cand.to_f64() - v).abs());
            if dc < db || (dc == db && cand.to_bits() & 1 == 0) {
                best = cand;
            }
        }
        best
    }

    #[test]
    fn halves_round_once() {
        // Just above the midpoint between two f16 (bf16) values: rounding through f32 first would land on
        // the midpoint and round down to even.
        let v = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(
            f16::cast_from(Scalar::F64(v)).to_f64(),
            1.0 + 2f64.powi(-10)
        );
        let v = 1.0 + 2f64.powi(-8) + 2f64.powi(-40);
        assert_eq!(
            bf16::cast_from(Scalar::F64(v)).to_f64(),
            1.0 + 2f64.powi(-7)
        );
        let i = (1i64 << 40) + (1 << 32) + 1; // just above a bf16 midpoint
        assert_eq!(
            bf16::cast_from(Scalar::I64(i)).to_f64(),
            ((1i64 << 40) + (1 << 33)) as f64
        );
        assert_eq!(f16::cast_from(Scalar::I64(2049)).to_f64(), 2048.0);
        assert_eq!(f16::cast_from(Scalar::I64(2051)).to_f64(), 2052.0);
        // Exact and special values.
        assert_eq!(f16::cast_from(Scalar::F64(0.5)).to_f64(), 0.5);
        assert!(f16::cast_from(Scalar::F64(f64::NAN)).is_nan());
        assert_eq!(f16::cast_from(Scalar::F64(1e6)), f16::INFINITY);
        assert_eq!(f16::cast_from(Scalar::F64(-1e-30)).to_bits(), 0x8000);
        assert_eq!(bf16::cast_from(Scalar::F64(f64::MAX)), bf16::INFINITY);
    }

    #[test]
    fn f64_to_f16_is_correctly_rounded() {
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            // Values around the f16 range, with random low bits that f32 would discard.
            let v =
                f64::from_bits((s & 0x800F_FFFF_FFFF_FFFF) | ((0x3E0 + (s >> 52) % 0x40) << 52));
            let got = f16::cast_from(Scalar::F64(v));
            assert_eq!(got.to_bits(), nearest_f16(v).to_bits(), "{v:e}");
        }
    }

    #[test]
    fn round_to_odd_helpers() {
        assert_eq!(f64_to_f32_odd(1.5), 1.5);
        let v = 1.0 + 2f64.powi(-30);
        assert_eq!(f64_to_f32_odd(v).to_bits(), 1.0f32.to_bits() + 1);
        assert_eq!(f64_to_f32_odd(-v).to_bits(), (-1.0f32).to_bits() + 1);
        assert_eq!(f64_to_f32_odd(1e-300).to_bits(), 1);
        assert_eq!(f64_to_f32_odd(f64::INFINITY), f32::INFINITY);
        assert_eq!(
            int_to_f32_odd((1 << 30) + 1).to_bits(),
            ((1u32 << 30) as f32).to_bits() + 1
        );
        assert_eq!(int_to_f32_odd(i64::MIN as i128), i64::MIN as f32);
        assert_eq!(int_to_f32_odd(7), 7.0);
    }
}
