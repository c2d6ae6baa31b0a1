//! The element trait that kernels are generic over, and host-side typed buffers.

use crate::{DType, Scalar};
use half::{bf16, f16};
use num_complex::{Complex32, Complex64};
use std::fmt::Debug;

/// A Rust type that is the element of one [`DType`].
///
/// Kernels are written once, generic over `T: Element`, and dispatched once per op on the runtime dtype.
///
/// ```
/// use nabla_core::{Element, DType};
/// assert_eq!(<f32 as Element>::DTYPE, DType::F32);
/// assert_eq!(f64::from_scalar(3i64.into()), 3.0);
/// ```
pub trait Element: Copy + Send + Sync + Debug + PartialEq + Default + 'static {
    /// The runtime dtype of this element type.
    const DTYPE: DType;
    /// Converts a scalar to this type with NumPy casting semantics (floats truncate toward zero for
    /// integers, integers wrap, non-zero becomes `true`).
    fn from_scalar(s: Scalar) -> Self;
    /// Converts this value to a scalar.
    fn to_scalar(self) -> Scalar;
    /// Wraps a typed vector into a [`HostData`].
    fn into_host(data: Vec<Self>) -> HostData;
    /// Borrows a typed slice out of a [`HostData`], if its dtype matches.
    fn slice_of(host: &HostData) -> Option<&[Self]>;
    /// Takes the typed vector out of a [`HostData`], if its dtype matches.
    fn vec_of(host: HostData) -> Option<Vec<Self>>;
    /// Wraps a typed slice into a [`HostSlice`].
    fn view_of(data: &[Self]) -> HostSlice<'_>;
    /// The typed slice inside a [`HostSlice`], if its dtype matches.
    fn slice_of_view(view: HostSlice<'_>) -> Option<&[Self]>;
    /// The additive identity.
    fn zero() -> Self {
        Self::default()
    }
    /// The multiplicative identity.
    fn one() -> Self {
        Self::from_scalar(Scalar::I64(1))
    }
}

/// Host-resident contiguous data of one dtype: what is uploaded to and read back from a backend.
#[derive(Clone, Debug, PartialEq)]
pub enum HostData {
    /// `f16` values.
    F16(Vec<f16>),
    /// `bf16` values.
    BF16(Vec<bf16>),
    /// `f32` values.
    F32(Vec<f32>),
    /// `f64` values.
    F64(Vec<f64>),
    /// `Complex<f32>` values.
    C64(Vec<Complex32>),
    /// `Complex<f64>` values.
    C128(Vec<Complex64>),
    /// `i8` values.
    I8(Vec<i8>),
    /// `i16` values.
    I16(Vec<i16>),
    /// `i32` values.
    I32(Vec<i32>),
    /// `i64` values.
    I64(Vec<i64>),
    /// `u8` values.
    U8(Vec<u8>),
    /// `u16` values.
    U16(Vec<u16>),
    /// `u32` values.
    U32(Vec<u32>),
    /// `u64` values.
    U64(Vec<u64>),
    /// `bool` values.
    Bool(Vec<bool>),
}

/// Runs `$body` with `$v` bound to the typed vector inside a [`HostData`] (or a reference to it), and `T`
/// aliased to its element type.
#[macro_export]
macro_rules! with_host_data {
    ($host:expr, $v:ident => $body:expr) => {
        match $host {
            $crate::HostData::F16($v) => $body,
            $crate::HostData::BF16($v) => $body,
            $crate::HostData::F32($v) => $body,
            $crate::HostData::F64($v) => $body,
            $crate::HostData::C64($v) => $body,
            $crate::HostData::C128($v) => $body,
            $crate::HostData::I8($v) => $body,
            $crate::HostData::I16($v) => $body,
            $crate::HostData::I32($v) => $body,
            $crate::HostData::I64($v) => $body,
            $crate::HostData::U8($v) => $body,
            $crate::HostData::U16($v) => $body,
            $crate::HostData::U32($v) => $body,
            $crate::HostData::U64($v) => $body,
            $crate::HostData::Bool($v) => $body,
        }
    };
}

impl HostData {
    /// The dtype of the values.
    pub fn dtype(&self) -> DType {
        self.as_slice().dtype()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        with_host_data!(self, v => v.len())
    }

    /// `true` when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element at `i` as a scalar, or `None` when out of range.
    pub fn get(&self, i: usize) -> Option<Scalar> {
        with_host_data!(self, v => v.get(i).map(|x| x.to_scalar()))
    }

    /// Converts every element to `f64` (real part for complex, 0/1 for bool). Handy in tests.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        with_host_data!(self, v => v.iter().map(|x| x.to_scalar().to_f64()).collect())
    }

    /// A borrowed view of the values.
    pub fn as_slice(&self) -> HostSlice<'_> {
        with_host_data!(self, v => Element::view_of(v.as_slice()))
    }

    /// The values as little-endian bytes, element after element (a complex value as its real then
    /// its imaginary part; a bool as one byte, 0 or 1): the layout of safetensors' and ONNX's raw
    /// data.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        fn flat<T: Copy, const N: usize>(values: &[T], to_le: impl Fn(T) -> [u8; N]) -> Vec<u8> {
            values.iter().flat_map(|&v| to_le(v)).collect()
        }
        match self {
            HostData::F16(v) => flat(v, f16::to_le_bytes),
            HostData::BF16(v) => flat(v, bf16::to_le_bytes),
            HostData::F32(v) => flat(v, f32::to_le_bytes),
            HostData::F64(v) => flat(v, f64::to_le_bytes),
            HostData::C64(v) => flat(v, |z| {
                let mut b = [0; 8];
                b[..4].copy_from_slice(&z.re.to_le_bytes());
                b[4..].copy_from_slice(&z.im.to_le_bytes());
                b
            }),
            HostData::C128(v) => flat(v, |z| {
                let mut b = [0; 16];
                b[..8].copy_from_slice(&z.re.to_le_bytes());
                b[8..].copy_from_slice(&z.im.to_le_bytes());
                b
            }),
            HostData::I8(v) => flat(v, i8::to_le_bytes),
            HostData::I16(v) => flat(v, i16::to_le_bytes),
            HostData::I32(v) => flat(v, i32::to_le_bytes),
            HostData::I64(v) => flat(v, i64::to_le_bytes),
            HostData::U8(v) => v.clone(),
            HostData::U16(v) => flat(v, u16::to_le_bytes),
            HostData::U32(v) => flat(v, u32::to_le_bytes),
            HostData::U64(v) => flat(v, u64::to_le_bytes),
            HostData::Bool(v) => v.iter().map(|&b| u8::from(b)).collect(),
        }
    }

    /// A vector of `len` copies of `value` converted to `dtype`.
    pub fn filled(dtype: DType, len: usize, value: Scalar) -> HostData {
        fn fill<T: Element>(len: usize, value: Scalar) -> HostData {
            T::into_host(vec![T::from_scalar(value); len])
        }
        dispatch_dtype!(dtype, T => fill::<T>(len, value))
    }
}

/// Borrowed host-resident contiguous data of one dtype: a [`HostData`] without ownership of the
/// elements, e.g. a view of a buffer that lives in memory owned by someone else.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HostSlice<'a> {
    /// `f16` values.
    F16(&'a [f16]),
    /// `bf16` values.
    BF16(&'a [bf16]),
    /// `f32` values.
    F32(&'a [f32]),
    /// `f64` values.
    F64(&'a [f64]),
    /// `Complex<f32>` values.
    C64(&'a [Complex32]),
    /// `Complex<f64>` values.
    C128(&'a [Complex64]),
    /// `i8` values.
    I8(&'a [i8]),
    /// `i16` values.
    I16(&'a [i16]),
    /// `i32` values.
    I32(&'a [i32]),
    /// `i64` values.
    I64(&'a [i64]),
    /// `u8` values.
    U8(&'a [u8]),
    /// `u16` values.
    U16(&'a [u16]),
    /// `u32` values.
    U32(&'a [u32]),
    /// `u64` values.
    U64(&'a [u64]),
    /// `bool` values.
    Bool(&'a [bool]),
}

/// Runs `$body` with `$v` bound to the typed slice (`&[T]`) inside a [`HostSlice`].
#[macro_export]
macro_rules! with_host_slice {
    ($slice:expr, $v:ident => $body:expr) => {
        match $slice {
            $crate::HostSlice::F16($v) => $body,
            $crate::HostSlice::BF16($v) => $body,
            $crate::HostSlice::F32($v) => $body,
            $crate::HostSlice::F64($v) => $body,
            $crate::HostSlice::C64($v) => $body,
            $crate::HostSlice::C128($v) => $body,
            $crate::HostSlice::I8($v) => $body,
            $crate::HostSlice::I16($v) => $body,
            $crate::HostSlice::I32($v) => $body,
            $crate::HostSlice::I64($v) => $body,
            $crate::HostSlice::U8($v) => $body,
            $crate::HostSlice::U16($v) => $body,
            $crate::HostSlice::U32($v) => $body,
            $crate::HostSlice::U64($v) => $body,
            $crate::HostSlice::Bool($v) => $body,
        }
    };
}

impl<'a> HostSlice<'a> {
    /// The dtype of the values.
    pub fn dtype(&self) -> DType {
        with_host_slice!(*self, v => element_dtype(v))
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        with_host_slice!(*self, v => v.len())
    }

    /// `true` when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element at `i` as a scalar, or `None` when out of range.
    pub fn get(&self, i: usize) -> Option<Scalar> {
        with_host_slice!(*self, v => v.get(i).map(|x| x.to_scalar()))
    }

    /// Converts every element to `f64` (real part for complex, 0/1 for bool). Handy in tests.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        with_host_slice!(*self, v => v.iter().map(|x| x.to_scalar().to_f64()).collect())
    }

    /// Copies the values into an owned [`HostData`].
    pub fn to_owned(&self) -> HostData {
        with_host_slice!(*self, v => Element::into_host(v.to_vec()))
    }
}

/// The dtype of a slice's element type.
fn element_dtype<T: Element>(_: &[T]) -> DType {
    T::DTYPE
}

/// Runs a body with the type alias `$T` set to the element type of the runtime dtype `$dtype`: the
/// one dtype-to-element-type dispatch, used by every crate.
///
/// - `dispatch_dtype!(dtype, T => body)` covers every dtype with one body.
/// - `dispatch_dtype!(dtype, T, { FAMILIES => body, ..., _ => otherwise })` chooses a body by the
///   dtype's family, where `FAMILIES` joins with `|` one or more of `half` (F16, BF16), `real` (F32,
///   F64), `complex` (C64, C128), `int` (the eight integer types) and `bool`; `_ => otherwise`
///   covers the dtypes no family named (and is left out when every dtype is named).
///
/// ```
/// use nabla_core::{DType, Element, dispatch_dtype};
/// let bits = |d: DType| dispatch_dtype!(d, T, {
///     real | complex => Some(8 * std::mem::size_of::<T>()),
///     _ => None,
/// });
/// assert_eq!(bits(DType::F32), Some(32));
/// assert_eq!(bits(DType::C128), Some(128));
/// assert_eq!(bits(DType::I8), None);
/// assert_eq!(dispatch_dtype!(DType::U16, T => T::DTYPE), DType::U16);
/// ```
#[macro_export]
macro_rules! dispatch_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::dispatch_dtype!($dtype, $T, { half | real | complex | int | bool => $body })
    };
    ($dtype:expr, $T:ident, { $($arms:tt)* }) => {
        $crate::__dtype_arms!(@arms [$dtype] $T [] $($arms)*)
    };
}

/// The match arms of [`dispatch_dtype!`], built one family at a time; the families' dtype lists.
#[doc(hidden)]
#[macro_export]
macro_rules! __dtype_arms {
    (@arms [$d:expr] $T:ident [$($done:tt)*] $(,)?) => {
        match $d {
            $($done)*
        }
    };
    (@arms [$d:expr] $T:ident [$($done:tt)*] _ => $otherwise:expr $(,)?) => {
        match $d {
            $($done)*
            _ => $otherwise,
        }
    };
    (@arms [$d:expr] $T:ident [$($done:tt)*] $($family:ident)|+ => $body:expr $(, $($rest:tt)*)?) => {
        $crate::__dtype_arms!(@family [$d] $T [$($done)*] ($body) [$($family)+] [$($($rest)*)?])
    };
    (@family [$d:expr] $T:ident [$($done:tt)*] ($body:expr) [] [$($rest:tt)*]) => {
        $crate::__dtype_arms!(@arms [$d] $T [$($done)*] $($rest)*)
    };
    (@family [$d:expr] $T:ident [$($done:tt)*] ($body:expr) [half $($more:ident)*] $rest:tt) => {
        $crate::__dtype_arms!(@types [$d] $T [$($done)*] ($body) [$($more)*] $rest
            [F16: $crate::half::f16, BF16: $crate::half::bf16])
    };
    (@family [$d:expr] $T:ident [$($done:tt)*] ($body:expr) [real $($more:ident)*] $rest:tt) => {
        $crate::__dtype_arms!(@types [$d] $T [$($done)*] ($body) [$($more)*] $rest [F32: f32, F64: f64])
    };
    (@family [$d:expr] $T:ident [$($done:tt)*] ($body:expr) [complex $($more:ident)*] $rest:tt) => {
        $crate::__dtype_arms!(@types [$d] $T [$($done)*] ($body) [$($more)*] $rest
            [C64: $crate::num_complex::Complex32, C128: $crate::num_complex::Complex64])
    };
    (@family [$d:expr] $T:ident [$($done:tt)*] ($body:expr) [int $($more:ident)*] $rest:tt) => {
        $crate::__dtype_arms!(@types [$d] $T [$($done)*] ($body) [$($more)*] $rest
            [I8: i8, I16: i16, I32: i32, I64: i64, U8: u8, U16: u16, U32: u32, U64: u64])
    };
    (@family [$d:expr] $T:ident [$($done:tt)*] ($body:expr) [bool $($more:ident)*] $rest:tt) => {
        $crate::__dtype_arms!(@types [$d] $T [$($done)*] ($body) [$($more)*] $rest [Bool: bool])
    };
    // One arm per dtype of a family: `$T` aliases its element type.
    (@types [$d:expr] $T:ident [$($done:tt)*] ($body:expr) $more:tt $rest:tt [$($v:ident: $t:ty),*]) => {
        $crate::__dtype_arms!(@family [$d] $T [$($done)*
            $($crate::DType::$v => {
                #[allow(dead_code)]
                type $T = $t;
                $body
            })*
        ] ($body) $more $rest)
    };
}

/// Invokes the macro `$callback` with the integer element types (`i8, i16, i32, i64, u8, u16, u32,
/// u64`), so that a trait is implemented for every integer type from one list.
#[macro_export]
macro_rules! for_int_types {
    ($callback:ident) => {
        $callback!(i8, i16, i32, i64, u8, u16, u32, u64);
    };
}

use crate::dispatch_dtype;

macro_rules! element_common {
    ($t:ty, $variant:ident) => {
        const DTYPE: DType = DType::$variant;
        fn into_host(data: Vec<Self>) -> HostData {
            HostData::$variant(data)
        }
        fn slice_of(host: &HostData) -> Option<&[Self]> {
            match host {
                HostData::$variant(v) => Some(v),
                _ => None,
            }
        }
        fn vec_of(host: HostData) -> Option<Vec<Self>> {
            match host {
                HostData::$variant(v) => Some(v),
                _ => None,
            }
        }
        fn view_of(data: &[Self]) -> HostSlice<'_> {
            HostSlice::$variant(data)
        }
        fn slice_of_view(view: HostSlice<'_>) -> Option<&[Self]> {
            match view {
                HostSlice::$variant(v) => Some(v),
                _ => None,
            }
        }
    };
}

macro_rules! element_real_float {
    ($($t:ty => $variant:ident),*) => {$(
        impl Element for $t {
            element_common!($t, $variant);
            fn from_scalar(s: Scalar) -> Self {
                s.to_f64() as $t
            }
            fn to_scalar(self) -> Scalar {
                Scalar::F64(self as f64)
            }
        }
    )*};
}
element_real_float!(f32 => F32, f64 => F64);

macro_rules! element_half {
    ($($t:ty => $variant:ident),*) => {$(
        impl Element for $t {
            element_common!($t, $variant);
            fn from_scalar(s: Scalar) -> Self {
                <$t>::from_f64(s.to_f64())
            }
            fn to_scalar(self) -> Scalar {
                Scalar::F64(self.to_f64())
            }
        }
    )*};
}
element_half!(f16 => F16, bf16 => BF16);

macro_rules! element_complex {
    ($($t:ty => $variant:ident, $part:ty),*) => {$(
        impl Element for $t {
            element_common!($t, $variant);
            fn from_scalar(s: Scalar) -> Self {
                let c = s.to_c128();
                <$t>::new(c.re as $part, c.im as $part)
            }
            fn to_scalar(self) -> Scalar {
                Scalar::C128(Complex64::new(self.re as f64, self.im as f64))
            }
        }
    )*};
}
element_complex!(Complex32 => C64, f32, Complex64 => C128, f64);

macro_rules! element_int {
    ($($t:ty => $variant:ident),*) => {$(
        impl Element for $t {
            element_common!($t, $variant);
            fn from_scalar(s: Scalar) -> Self {
                match s {
                    // Floats truncate toward zero; out-of-range values saturate, NaN becomes 0.
                    Scalar::F64(v) => v as $t,
                    Scalar::C128(c) => c.re as $t,
                    // Integers wrap, as in NumPy's astype.
                    Scalar::I64(v) => v as $t,
                    Scalar::U64(v) => v as $t,
                    Scalar::Bool(b) => b as $t,
                }
            }
            fn to_scalar(self) -> Scalar {
                Scalar::integer(self as i128)
            }
        }
    )*};
}
element_int!(
    i8 => I8,
    i16 => I16,
    i32 => I32,
    i64 => I64,
    u8 => U8,
    u16 => U16,
    u32 => U32,
    u64 => U64
);

impl Element for bool {
    element_common!(bool, Bool);
    fn from_scalar(s: Scalar) -> Self {
        s.to_bool()
    }
    fn to_scalar(self) -> Scalar {
        Scalar::Bool(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casting_follows_numpy() {
        assert_eq!(i32::from_scalar(Scalar::F64(-2.7)), -2);
        assert_eq!(u8::from_scalar(Scalar::I64(257)), 1);
        assert_eq!(i8::from_scalar(Scalar::I64(200)), -56);
        assert_eq!(u64::MAX.to_scalar(), Scalar::U64(u64::MAX));
        assert_eq!(u64::from_scalar(Scalar::I64(-1)), u64::MAX);
        assert_eq!(u16::from_scalar(Scalar::U64(u64::MAX)), u16::MAX);
        assert!(bool::from_scalar(Scalar::F64(0.1)));
        assert_eq!(f16::from_scalar(Scalar::F64(1.5)).to_f64(), 1.5);
        assert_eq!(
            Complex32::from_scalar(Scalar::I64(2)),
            Complex32::new(2.0, 0.0)
        );
    }

    #[test]
    fn dispatch_covers_every_dtype_and_exactly_the_integers() {
        for dt in DType::ALL {
            assert_eq!(dispatch_dtype!(dt, T => T::DTYPE), dt);
            let int = dispatch_dtype!(dt, T, { int => Some(T::DTYPE), _ => None });
            assert_eq!(int, dt.is_int().then_some(dt), "{dt}");
        }
        let ints = DType::ALL.into_iter().filter(|d| d.is_int()).count();
        assert_eq!(ints, 8);
    }

    #[test]
    fn host_data_round_trip() {
        let h = f32::into_host(vec![1.0, 2.0]);
        assert_eq!(h.dtype(), DType::F32);
        assert_eq!(f32::slice_of(&h), Some(&[1.0f32, 2.0][..]));
        assert_eq!(f64::slice_of(&h), None);
        assert_eq!(
            HostData::filled(DType::I64, 3, Scalar::F64(2.0)),
            HostData::I64(vec![2, 2, 2])
        );
    }

    #[test]
    fn host_slice_views_host_data() {
        let h = HostData::C64(vec![Complex32::new(1.0, 2.0), Complex32::new(3.0, 0.0)]);
        let v = h.as_slice();
        assert_eq!((v.dtype(), v.len(), v.is_empty()), (DType::C64, 2, false));
        assert_eq!(v.to_owned(), h);
        assert_eq!(v.get(1), Some(Scalar::C128(Complex64::new(3.0, 0.0))));
        assert_eq!(v.to_f64_vec(), h.to_f64_vec());
        assert_eq!(Complex32::slice_of_view(v), Complex32::slice_of(&h));
        assert_eq!(f32::slice_of_view(v), None);
        assert_eq!(with_host_slice!(v, s => s.len()), 2);
        let b = HostData::Bool(Vec::new());
        assert_eq!(b.as_slice(), bool::view_of(&[]));
        assert!(b.as_slice().is_empty());
        assert_eq!(b.as_slice().dtype(), DType::Bool);
    }
}
