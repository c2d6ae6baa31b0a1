//! Element capabilities the reductions (and the integer matmul) need.

use nabla_core::Element;
use num_complex::{Complex32, Complex64};

/// Types with a sum and a product: real floats, complex numbers and integers (which wrap on overflow).
pub(crate) trait Arith: Element {
    /// `self + other` (wrapping for integers).
    fn add(self, other: Self) -> Self;
    /// `self * other` (wrapping for integers).
    fn mul(self, other: Self) -> Self;
}

macro_rules! arith_ops {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)]
            fn add(self, other: Self) -> Self {
                self + other
            }
            #[inline(always)]
            fn mul(self, other: Self) -> Self {
                self * other
            }
        }
    )*};
}
arith_ops!(f32, f64, Complex32, Complex64);

macro_rules! arith_wrapping {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)]
            fn add(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
            #[inline(always)]
            fn mul(self, other: Self) -> Self {
                self.wrapping_mul(other)
            }
        }
    )*};
}
nabla_core::for_int_types!(arith_wrapping);

/// The larger of two values; a NaN in either operand wins. For bool this is logical or.
#[inline(always)]
pub(crate) fn max_nan<T: PartialOrd>(acc: T, v: T) -> T {
    // `v != v` is true only for NaN; once `acc` is NaN, no comparison is true and it stays.
    #[allow(clippy::eq_op)]
    if (v > acc) | (v != v) { v } else { acc }
}

/// The smaller of two values; a NaN in either operand wins. For bool this is logical and.
#[inline(always)]
pub(crate) fn min_nan<T: PartialOrd>(acc: T, v: T) -> T {
    #[allow(clippy::eq_op)]
    if (v < acc) | (v != v) { v } else { acc }
}
