//! Host kernels on faer: an LU factorisation with partial pivoting per matrix of the batch.

use faer::linalg::solvers::{DenseSolveCore as _, PartialPivLu, Solve as _};
use faer::{Mat, MatRef};
use nabla_core::{Element, Error, HostData, HostView, Result};

/// The real types the kernels run on.
trait Real: Element + faer::traits::RealField + Copy {
    fn to_f64(self) -> f64;
    fn from_f64(x: f64) -> Self;
}

impl Real for f32 {
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(x: f64) -> Self {
        x as f32
    }
}

impl Real for f64 {
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(x: f64) -> Self {
        x
    }
}

/// Runs `$body` with `$t` bound to the element type of `$data` (f32 or f64).
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
            other => Err(Error::dtype($op, other)),
        }
    };
}

/// The typed elements of a validated input.
fn elems<'a, T: Real>(op: &'static str, x: &HostView<'a>) -> Result<&'a [T]> {
    T::slice_of(x.data).ok_or_else(|| Error::dtype(op, x.data.dtype()))
}

/// The LU factors of one `n x n` matrix; fails when it is singular (a zero or non-finite pivot).
fn factor<T: Real>(op: &'static str, a: &[T], n: usize, batch: usize) -> Result<PartialPivLu<T>> {
    let lu = MatRef::from_row_major_slice(a, n, n).partial_piv_lu();
    let u = lu.U();
    for i in 0..n {
        let p = u[(i, i)].to_f64();
        if p == 0.0 || !p.is_finite() {
            return Err(Error::invalid(
                op,
                format!(
                    "matrix {batch} of the batch ({n}x{n}) is singular: pivot {i} of its LU \
                     factorisation is {p}"
                ),
            ));
        }
    }
    Ok(lu)
}

/// Appends `m` to `out` in row-major order.
fn push_row_major<T: Real>(out: &mut Vec<T>, m: &Mat<T>) {
    for i in 0..m.nrows() {
        for j in 0..m.ncols() {
            out.push(m[(i, j)]);
        }
    }
}

/// Fails when the result holds a non-finite value (an ill-conditioned system overflowed).
fn check_finite<T: Real>(op: &'static str, out: &[T]) -> Result<()> {
    match out.iter().position(|v| !v.to_f64().is_finite()) {
        Some(i) => Err(Error::invalid(
            op,
            format!(
                "result element {i} is {}: the matrix is too ill-conditioned for this dtype",
                out[i].to_f64()
            ),
        )),
        None => Ok(()),
    }
}

/// Batch size and matrix side of a validated `[..., n, n]` shape.
fn batch_and_side(shape: &[usize]) -> (usize, usize) {
    let n = shape[shape.len() - 1];
    (shape[..shape.len() - 2].iter().product(), n)
}

fn solve_typed<T: Real>(a: &HostView<'_>, b: &HostView<'_>) -> Result<HostData> {
    const OP: &str = "linalg.solve";
    let (batch, n) = batch_and_side(a.shape);
    let k = b.shape[b.shape.len() - 1];
    let (ea, eb) = (elems::<T>(OP, a)?, elems::<T>(OP, b)?);
    let mut out = Vec::with_capacity(batch * n * k);
    for i in 0..batch {
        let lu = factor(OP, &ea[i * n * n..(i + 1) * n * n], n, i)?;
        let rhs = MatRef::from_row_major_slice(&eb[i * n * k..(i + 1) * n * k], n, k);
        push_row_major(&mut out, &lu.solve(rhs));
    }
    check_finite(OP, &out)?;
    Ok(T::into_host(out))
}

fn inverse_typed<T: Real>(a: &HostView<'_>) -> Result<HostData> {
    const OP: &str = "linalg.inv";
    let (batch, n) = batch_and_side(a.shape);
    let ea = elems::<T>(OP, a)?;
    let mut out = Vec::with_capacity(batch * n * n);
    for i in 0..batch {
        let lu = factor(OP, &ea[i * n * n..(i + 1) * n * n], n, i)?;
        push_row_major(&mut out, &lu.inverse());
    }
    check_finite(OP, &out)?;
    Ok(T::into_host(out))
}

fn logabsdet_typed<T: Real>(a: &HostView<'_>) -> Result<HostData> {
    const OP: &str = "linalg.logabsdet";
    let (batch, n) = batch_and_side(a.shape);
    let ea = elems::<T>(OP, a)?;
    let mut out = Vec::with_capacity(batch);
    for i in 0..batch {
        let lu = factor(OP, &ea[i * n * n..(i + 1) * n * n], n, i)?;
        let u = lu.U();
        let sum: f64 = (0..n).map(|j| u[(j, j)].to_f64().abs().ln()).sum();
        out.push(T::from_f64(sum));
    }
    Ok(T::into_host(out))
}

/// `A⁻¹ B` per matrix of the batch.
pub(crate) fn solve(a: &HostView<'_>, b: &HostView<'_>) -> Result<HostData> {
    by_dtype!("linalg.solve", a.data, T => solve_typed::<T>(a, b))
}

/// `A⁻¹` per matrix of the batch.
pub(crate) fn inverse(a: &HostView<'_>) -> Result<HostData> {
    by_dtype!("linalg.inv", a.data, T => inverse_typed::<T>(a))
}

/// `log |det A|` per matrix of the batch.
pub(crate) fn logabsdet(a: &HostView<'_>) -> Result<HostData> {
    by_dtype!("linalg.logabsdet", a.data, T => logabsdet_typed::<T>(a))
}
