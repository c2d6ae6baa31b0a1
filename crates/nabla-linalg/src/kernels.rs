//! Host kernels on faer for solve, inverse and log-determinant (an LU factorisation with partial
//! pivoting per matrix of the batch), and the helpers every kernel of the family shares: the element
//! types ([`Field`]: f32, f64, complex64, complex128), the dtype dispatch ([`by_dtype!`]) and batch
//! iteration.

use faer::MatRef;
use faer::linalg::solvers::{DenseSolveCore as _, PartialPivLu, Solve as _};
use nabla_core::num_complex::{Complex32, Complex64};
use nabla_core::{Element, Error, HostData, HostView, Result};

/// The element types the kernels run on: real and complex floats.
pub(crate) trait Field: Element + faer::traits::ComplexField + Copy + Send + Sync {
    /// The real counterpart (itself for real types).
    type Re: Element + Copy;
    /// The modulus `|x|`.
    fn abs_f64(self) -> f64;
    /// The real part.
    fn re_f64(self) -> f64;
    /// The value `re + i im` (`im` is dropped for real types).
    fn from_parts(re: f64, im: f64) -> Self;
    /// The value `x` as the real counterpart.
    fn re_from_f64(x: f64) -> Self::Re;
    /// The value as complex128.
    fn to_c64(self) -> Complex64;
    /// The complex conjugate (the identity for real types).
    fn conj_val(self) -> Self;
}

macro_rules! real_field {
    ($($t:ty),*) => {$(
        impl Field for $t {
            type Re = $t;
            fn abs_f64(self) -> f64 {
                (self as f64).abs()
            }
            fn re_f64(self) -> f64 {
                self as f64
            }
            fn from_parts(re: f64, _im: f64) -> Self {
                re as $t
            }
            fn re_from_f64(x: f64) -> $t {
                x as $t
            }
            fn to_c64(self) -> Complex64 {
                Complex64::new(self as f64, 0.0)
            }
            fn conj_val(self) -> Self {
                self
            }
        }
    )*};
}
real_field!(f32, f64);

macro_rules! complex_field {
    ($($t:ty => $r:ty),*) => {$(
        impl Field for $t {
            type Re = $r;
            fn abs_f64(self) -> f64 {
                (self.re as f64).hypot(self.im as f64)
            }
            fn re_f64(self) -> f64 {
                self.re as f64
            }
            fn from_parts(re: f64, im: f64) -> Self {
                <$t>::new(re as $r, im as $r)
            }
            fn re_from_f64(x: f64) -> $r {
                x as $r
            }
            fn to_c64(self) -> Complex64 {
                Complex64::new(self.re as f64, self.im as f64)
            }
            fn conj_val(self) -> Self {
                self.conj()
            }
        }
    )*};
}
complex_field!(Complex32 => f32, Complex64 => f64);

/// Runs `$body` with `$t` bound to the element type of `$data` (f32, f64, complex64, complex128).
macro_rules! by_dtype {
    ($op:expr, $data:expr, $t:ident => $body:expr) => {
        match $data.dtype() {
            nabla_core::DType::F32 => {
                type $t = f32;
                $body
            }
            nabla_core::DType::F64 => {
                type $t = f64;
                $body
            }
            nabla_core::DType::C64 => {
                type $t = nabla_core::num_complex::Complex32;
                $body
            }
            nabla_core::DType::C128 => {
                type $t = nabla_core::num_complex::Complex64;
                $body
            }
            other => Err(nabla_core::Error::dtype($op, other)),
        }
    };
}
pub(crate) use by_dtype;

/// The typed elements of a validated input.
pub(crate) fn elems<'a, T: Field>(op: &'static str, x: &HostView<'a>) -> Result<&'a [T]> {
    T::slice_of(x.data).ok_or_else(|| Error::dtype(op, x.data.dtype()))
}

/// Batch size, rows and columns of a validated `[..., m, n]` shape.
pub(crate) fn batch_rows_cols(shape: &[usize]) -> (usize, usize, usize) {
    let r = shape.len();
    (shape[..r - 2].iter().product(), shape[r - 2], shape[r - 1])
}

/// Matrix `i` of a batch of `m x n` row-major matrices, as a faer view.
pub(crate) fn matrix<T: Field>(data: &[T], i: usize, m: usize, n: usize) -> MatRef<'_, T> {
    MatRef::from_row_major_slice(&data[i * m * n..(i + 1) * m * n], m, n)
}

/// Appends `m` to `out` in row-major order.
pub(crate) fn push_row_major<T: Field>(out: &mut Vec<T>, m: MatRef<'_, T>) {
    out.reserve(m.nrows() * m.ncols());
    for i in 0..m.nrows() {
        out.extend(m.row(i).iter().copied());
    }
}

/// Fails when the result holds a non-finite value (an ill-conditioned system overflowed).
pub(crate) fn check_finite<T: Field>(op: &'static str, out: &[T]) -> Result<()> {
    match out.iter().position(|v| !v.abs_f64().is_finite()) {
        Some(i) => Err(Error::invalid(
            op,
            format!(
                "result element {i} is {}: the matrix is too ill-conditioned for this dtype",
                out[i].to_c64()
            ),
        )),
        None => Ok(()),
    }
}

/// The LU factors of one `n x n` matrix; fails when it is singular (a zero or non-finite pivot).
pub(crate) fn factor<T: Field>(
    op: &'static str,
    a: MatRef<'_, T>,
    batch: usize,
) -> Result<PartialPivLu<T>> {
    let n = a.nrows();
    let lu = a.partial_piv_lu();
    let u = lu.U();
    for i in 0..n {
        let p = u[(i, i)];
        if p.abs_f64() == 0.0 || !p.abs_f64().is_finite() {
            return Err(Error::invalid(
                op,
                format!(
                    "matrix {batch} of the batch ({n}x{n}) is singular: pivot {i} of its LU \
                     factorisation is {}",
                    p.to_c64()
                ),
            ));
        }
    }
    Ok(lu)
}

fn solve_typed<T: Field>(a: &HostView<'_>, b: &HostView<'_>) -> Result<HostData> {
    const OP: &str = "linalg.solve";
    let (batch, n, _) = batch_rows_cols(a.shape);
    let k = b.shape[b.shape.len() - 1];
    let (ea, eb) = (elems::<T>(OP, a)?, elems::<T>(OP, b)?);
    let mut out = Vec::with_capacity(batch * n * k);
    for i in 0..batch {
        let lu = factor(OP, matrix(ea, i, n, n), i)?;
        push_row_major(&mut out, lu.solve(matrix(eb, i, n, k)).as_ref());
    }
    check_finite(OP, &out)?;
    Ok(T::into_host(out))
}

fn inverse_typed<T: Field>(a: &HostView<'_>) -> Result<HostData> {
    const OP: &str = "linalg.inv";
    let (batch, n, _) = batch_rows_cols(a.shape);
    let ea = elems::<T>(OP, a)?;
    let mut out = Vec::with_capacity(batch * n * n);
    for i in 0..batch {
        let lu = factor(OP, matrix(ea, i, n, n), i)?;
        push_row_major(&mut out, lu.inverse().as_ref());
    }
    check_finite(OP, &out)?;
    Ok(T::into_host(out))
}

fn logabsdet_typed<T: Field>(a: &HostView<'_>) -> Result<HostData> {
    const OP: &str = "linalg.logabsdet";
    let (batch, n, _) = batch_rows_cols(a.shape);
    let ea = elems::<T>(OP, a)?;
    let mut out = Vec::with_capacity(batch);
    for i in 0..batch {
        let lu = factor(OP, matrix(ea, i, n, n), i)?;
        let u = lu.U();
        let sum: f64 = (0..n).map(|j| u[(j, j)].abs_f64().ln()).sum();
        out.push(T::re_from_f64(sum));
    }
    Ok(<T::Re as Element>::into_host(out))
}

/// `A⁻¹ B` per matrix of the batch.
pub(crate) fn solve(a: &HostView<'_>, b: &HostView<'_>) -> Result<HostData> {
    by_dtype!("linalg.solve", a.data, T => solve_typed::<T>(a, b))
}

/// `A⁻¹` per matrix of the batch.
pub(crate) fn inverse(a: &HostView<'_>) -> Result<HostData> {
    by_dtype!("linalg.inv", a.data, T => inverse_typed::<T>(a))
}

/// `log |det A|` per matrix of the batch (real, also for complex `A`).
pub(crate) fn logabsdet(a: &HostView<'_>) -> Result<HostData> {
    by_dtype!("linalg.logabsdet", a.data, T => logabsdet_typed::<T>(a))
}
