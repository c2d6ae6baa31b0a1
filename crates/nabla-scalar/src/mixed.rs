//! The operator boilerplate shared by the differentiable scalar types: compound assignment, mixed
//! arithmetic and comparisons with plain `f64` on both sides, and `Sum`.

/// Implements the compound assignment operators and the mixed operators with plain `f64` (both
/// sides) for a type that has the four binary operators and the `Scalar` shortcuts `add_f64`,
/// `mul_f64` and `div_f64`. `f64 / x` goes through `from_f64`.
macro_rules! mixed_and_assign_ops {
    ([$($gen:tt)*] $t:ty) => {
        impl<$($gen)*> core::ops::AddAssign for $t {
            #[inline]
            fn add_assign(&mut self, o: Self) {
                *self = *self + o;
            }
        }
        impl<$($gen)*> core::ops::SubAssign for $t {
            #[inline]
            fn sub_assign(&mut self, o: Self) {
                *self = *self - o;
            }
        }
        impl<$($gen)*> core::ops::MulAssign for $t {
            #[inline]
            fn mul_assign(&mut self, o: Self) {
                *self = *self * o;
            }
        }
        impl<$($gen)*> core::ops::DivAssign for $t {
            #[inline]
            fn div_assign(&mut self, o: Self) {
                *self = *self / o;
            }
        }
        impl<$($gen)*> core::ops::Add<f64> for $t {
            type Output = Self;
            #[inline]
            fn add(self, c: f64) -> Self {
                $crate::Scalar::add_f64(self, c)
            }
        }
        impl<$($gen)*> core::ops::Sub<f64> for $t {
            type Output = Self;
            #[inline]
            fn sub(self, c: f64) -> Self {
                $crate::Scalar::add_f64(self, -c)
            }
        }
        impl<$($gen)*> core::ops::Mul<f64> for $t {
            type Output = Self;
            #[inline]
            fn mul(self, c: f64) -> Self {
                $crate::Scalar::mul_f64(self, c)
            }
        }
        impl<$($gen)*> core::ops::Div<f64> for $t {
            type Output = Self;
            #[inline]
            fn div(self, c: f64) -> Self {
                $crate::Scalar::div_f64(self, c)
            }
        }
        impl<$($gen)*> core::ops::Add<$t> for f64 {
            type Output = $t;
            #[inline]
            fn add(self, x: $t) -> $t {
                $crate::Scalar::add_f64(x, self)
            }
        }
        impl<$($gen)*> core::ops::Sub<$t> for f64 {
            type Output = $t;
            #[inline]
            fn sub(self, x: $t) -> $t {
                $crate::Scalar::add_f64(-x, self)
            }
        }
        impl<$($gen)*> core::ops::Mul<$t> for f64 {
            type Output = $t;
            #[inline]
            fn mul(self, x: $t) -> $t {
                $crate::Scalar::mul_f64(x, self)
            }
        }
        impl<$($gen)*> core::ops::Div<$t> for f64 {
            type Output = $t;
            #[inline]
            fn div(self, x: $t) -> $t {
                <$t as $crate::Scalar>::from_f64(self) / x
            }
        }
        impl<$($gen)*> core::ops::AddAssign<f64> for $t {
            #[inline]
            fn add_assign(&mut self, c: f64) {
                *self = *self + c;
            }
        }
        impl<$($gen)*> core::ops::SubAssign<f64> for $t {
            #[inline]
            fn sub_assign(&mut self, c: f64) {
                *self = *self - c;
            }
        }
        impl<$($gen)*> core::ops::MulAssign<f64> for $t {
            #[inline]
            fn mul_assign(&mut self, c: f64) {
                *self = *self * c;
            }
        }
        impl<$($gen)*> core::ops::DivAssign<f64> for $t {
            #[inline]
            fn div_assign(&mut self, c: f64) {
                *self = *self / c;
            }
        }
        impl<$($gen)*> PartialEq<f64> for $t {
            #[inline]
            fn eq(&self, c: &f64) -> bool {
                $crate::Scalar::to_f64(*self) == *c
            }
        }
        impl<$($gen)*> PartialOrd<f64> for $t {
            #[inline]
            fn partial_cmp(&self, c: &f64) -> Option<core::cmp::Ordering> {
                $crate::Scalar::to_f64(*self).partial_cmp(c)
            }
        }
        impl<$($gen)*> PartialEq<$t> for f64 {
            #[inline]
            fn eq(&self, x: &$t) -> bool {
                *self == $crate::Scalar::to_f64(*x)
            }
        }
        impl<$($gen)*> PartialOrd<$t> for f64 {
            #[inline]
            fn partial_cmp(&self, x: &$t) -> Option<core::cmp::Ordering> {
                self.partial_cmp(&$crate::Scalar::to_f64(*x))
            }
        }
        impl<$($gen)*> core::iter::Sum for $t {
            fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
                iter.fold(<$t as $crate::Scalar>::zero(), |a, b| a + b)
            }
        }
    };
}
pub(crate) use mixed_and_assign_ops;
