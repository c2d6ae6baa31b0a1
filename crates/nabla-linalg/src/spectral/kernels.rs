//! Host kernels of the spectral ops on faer, generic over `f32`, `f64`, `complex64` and `complex128`.
//!
//! Each kernel reads contiguous row-major matrices (faer views them in place with
//! `MatRef::from_row_major_slice`), runs one factorisation per matrix of the batch and writes the
//! results packed per matrix (see `crate::common::Packing`). A single large matrix uses faer's own
//! parallelism; a batch runs its matrices sequentially each, spread over threads.

use super::expm;
use crate::kernels::{by_dtype, per_matrix};
use faer::diag::Diag;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::evd::{self, ComputeEigenvectors};
use faer::linalg::svd::{self, ComputeSvdVectors};
use faer::traits::ComplexField;
use faer::traits::math_utils::{abs, conj, from_real, is_finite, real};
use faer::{Mat, MatRef, Par};
use nabla_core::num_complex::{Complex32, Complex64};
use nabla_core::{Element, Error, HostAllocator, HostData, HostView, Result};
use std::ops::{Add, Mul, Sub};

/// The element types of the spectral kernels: faer scalars that are also nabla elements.
pub(super) trait Field:
    Element + ComplexField + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self>
{
    /// A real part (of `Self::Real`) as `f64`.
    fn real_to_f64(x: &Self::Real) -> f64;
    /// `Self` from an `f64` real value.
    fn of_f64(x: f64) -> Self;
    /// Real values in the real dtype of `Self` (`f32` for `f32` and `complex64`).
    fn real_host(values: Vec<f64>) -> HostData;
    /// Complex values `(re, im)` in the complex dtype of `Self` (`complex64` for `f32`).
    fn complex_host(values: Vec<(f64, f64)>) -> HostData;
}

macro_rules! field {
    ($t:ty, $re:ty, $cx:ident, $of:expr) => {
        impl Field for $t {
            fn real_to_f64(x: &$re) -> f64 {
                *x as f64
            }
            fn of_f64(x: f64) -> Self {
                $of(x)
            }
            fn real_host(values: Vec<f64>) -> HostData {
                <$re>::into_host(values.into_iter().map(|v| v as $re).collect())
            }
            fn complex_host(values: Vec<(f64, f64)>) -> HostData {
                $cx::into_host(
                    values
                        .into_iter()
                        .map(|(re, im)| $cx::new(re as $re, im as $re))
                        .collect(),
                )
            }
        }
    };
}

field!(f32, f32, Complex32, |x: f64| x as f32);
field!(f64, f64, Complex64, |x: f64| x);
field!(Complex32, f32, Complex32, |x: f64| Complex32::new(
    x as f32, 0.0
));
field!(Complex64, f64, Complex64, |x: f64| Complex64::new(x, 0.0));

/// The typed elements of a validated input.
fn elems<'a, T: Field>(op: &'static str, x: &HostView<'a>) -> Result<&'a [T]> {
    T::slice_of(x.data).ok_or_else(|| Error::dtype(op, x.data.dtype()))
}

/// Batch size and matrix dims `(batch, m, n)` of a validated `[..., m, n]` shape.
fn dims(shape: &[usize]) -> (usize, usize, usize) {
    let r = shape.len();
    (shape[..r - 2].iter().product(), shape[r - 2], shape[r - 1])
}

/// Fails when matrix `index` of the batch (`m x n`, row-major) holds a NaN or an infinity.
fn check_finite<T: Field>(op: &'static str, a: &[T], n: usize, index: usize) -> Result<()> {
    match a.iter().position(|x| !is_finite(x)) {
        Some(p) => Err(not_finite(op, index, (p / n.max(1), p % n.max(1)), &a[p])),
        None => Ok(()),
    }
}

/// [`check_finite`] on the lower triangle (diagonal included) of an `n x n` matrix: what eigh reads.
fn check_finite_lower<T: Field>(op: &'static str, a: &[T], n: usize, index: usize) -> Result<()> {
    for i in 0..n {
        if let Some(j) = a[i * n..i * n + i + 1].iter().position(|x| !is_finite(x)) {
            return Err(not_finite(op, index, (i, j), &a[i * n + j]));
        }
    }
    Ok(())
}

fn not_finite<T: Field>(op: &'static str, index: usize, (r, c): (usize, usize), x: &T) -> Error {
    Error::invalid(
        op,
        format!("matrix {index} of the batch holds a non-finite value at ({r}, {c}): {x:?}"),
    )
}

fn no_convergence(op: &'static str, index: usize) -> Error {
    Error::invalid(
        op,
        format!("matrix {index} of the batch: the iteration did not converge"),
    )
}

/// A workspace for faer's low-level routines.
fn workspace(req: faer::dyn_stack::StackReq) -> MemBuffer {
    MemBuffer::new(req)
}

/// Writes `m` into `out` in row-major order.
fn write_row_major<T: Field>(out: &mut [T], m: MatRef<'_, T>) {
    let cols = m.ncols();
    for i in 0..m.nrows() {
        for j in 0..cols {
            out[i * cols + j] = m[(i, j)];
        }
    }
}

fn eigh_typed<T: Field>(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    const OP: &str = "linalg.eigh";
    let (batch, n, _) = dims(a.shape);
    let ea = elems::<T>(OP, a)?;
    let flops = 9.0 * (n as f64).powi(3);
    let out = per_matrix(alloc, batch, n + n * n, flops, |i, par, o| {
        let m = &ea[i * n * n..(i + 1) * n * n];
        check_finite_lower(OP, m, n, i)?;
        if n == 0 {
            // An empty matrix has no eigenvalues (faer's routine needs n > 0).
            return Ok(());
        }
        let mut s = Diag::<T>::zeros(n);
        let mut u = Mat::<T>::zeros(n, n);
        let mut mem = workspace(evd::self_adjoint_evd_scratch::<T>(
            n,
            ComputeEigenvectors::Yes,
            par,
            Default::default(),
        ));
        evd::self_adjoint_evd(
            MatRef::from_row_major_slice(m, n, n),
            s.as_mut(),
            Some(u.as_mut()),
            par,
            MemStack::new(&mut mem),
            Default::default(),
        )
        .map_err(|_| no_convergence(OP, i))?;
        let (w, v) = o.split_at_mut(n);
        for (j, x) in s.column_vector().iter().enumerate() {
            w[j] = from_real(&real(x));
        }
        write_row_major(v, u.as_ref());
        Ok(())
    })?;
    Ok(T::into_host(out))
}

/// The singular vectors `U`, `V` of one matrix, when computed.
type Vectors<T> = Option<(Mat<T>, Mat<T>)>;

/// The SVD of one matrix: singular values and, unless `vectors` is `No`, `U` and `V`.
fn svd_one<T: Field>(
    op: &'static str,
    a: &[T],
    (m, n): (usize, usize),
    vectors: ComputeSvdVectors,
    index: usize,
    par: Par,
) -> Result<(Diag<T>, Vectors<T>)> {
    check_finite(op, a, n, index)?;
    let k = m.min(n);
    let mut s = Diag::<T>::zeros(k);
    let mut uv = match vectors {
        ComputeSvdVectors::No => None,
        ComputeSvdVectors::Thin => Some((Mat::<T>::zeros(m, k), Mat::<T>::zeros(n, k))),
        ComputeSvdVectors::Full => Some((Mat::<T>::zeros(m, m), Mat::<T>::zeros(n, n))),
    };
    if k == 0 {
        // No singular values (faer's routine needs m, n > 0); the full factors are identities.
        if let Some((u, v)) = &mut uv {
            for m in [u, v] {
                for i in 0..m.nrows().min(m.ncols()) {
                    m[(i, i)] = T::of_f64(1.0);
                }
            }
        }
        return Ok((s, uv));
    }
    let mut mem = workspace(svd::svd_scratch::<T>(
        m,
        n,
        vectors,
        vectors,
        par,
        Default::default(),
    ));
    let (u, v) = match &mut uv {
        Some((u, v)) => (Some(u.as_mut()), Some(v.as_mut())),
        None => (None, None),
    };
    svd::svd(
        MatRef::from_row_major_slice(a, m, n),
        s.as_mut(),
        u,
        v,
        par,
        MemStack::new(&mut mem),
        Default::default(),
    )
    .map_err(|_| no_convergence(op, index))?;
    Ok((s, uv))
}

fn svd_typed<T: Field>(
    a: &HostView<'_>,
    full_matrices: bool,
    alloc: &dyn HostAllocator,
) -> Result<HostData> {
    const OP: &str = "linalg.svd";
    let (batch, m, n) = dims(a.shape);
    let ea = elems::<T>(OP, a)?;
    let k = m.min(n);
    let (ku, kv) = if full_matrices { (m, n) } else { (k, k) };
    let vectors = if full_matrices {
        ComputeSvdVectors::Full
    } else {
        ComputeSvdVectors::Thin
    };
    let flops = 12.0 * (m * n) as f64 * m.max(n) as f64;
    let out = per_matrix(alloc, batch, m * ku + k + kv * n, flops, |i, par, o| {
        let mat = &ea[i * m * n..(i + 1) * m * n];
        let (s, uv) = svd_one(OP, mat, (m, n), vectors, i, par)?;
        let Some((u, v)) = uv else {
            return Err(Error::invalid(OP, "the SVD returned no singular vectors"));
        };
        let (ou, rest) = o.split_at_mut(m * ku);
        let (os, ovh) = rest.split_at_mut(k);
        write_row_major(ou, u.as_ref());
        for (j, x) in s.column_vector().iter().enumerate() {
            os[j] = from_real(&real(x));
        }
        for r in 0..kv {
            for c in 0..n {
                ovh[r * n + c] = conj(&v[(c, r)]);
            }
        }
        Ok(())
    })?;
    Ok(T::into_host(out))
}

fn svdvals_typed<T: Field>(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    const OP: &str = "linalg.svdvals";
    let (batch, m, n) = dims(a.shape);
    let ea = elems::<T>(OP, a)?;
    let k = m.min(n);
    let flops = 4.0 * (m * n) as f64 * m.max(n) as f64;
    let out = per_matrix(alloc, batch, k, flops, |i, par, o: &mut [f64]| {
        let mat = &ea[i * m * n..(i + 1) * m * n];
        let (s, _) = svd_one(OP, mat, (m, n), ComputeSvdVectors::No, i, par)?;
        for (j, x) in s.column_vector().iter().enumerate() {
            o[j] = T::real_to_f64(&real(x));
        }
        Ok(())
    })?;
    Ok(T::real_host(out))
}

fn matrix_exp_typed<T: Field>(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    const OP: &str = "linalg.matrix_exp";
    let (batch, n, _) = dims(a.shape);
    let ea = elems::<T>(OP, a)?;
    let flops = 20.0 * (n as f64).powi(3);
    let out = per_matrix(alloc, batch, n * n, flops, |i, par, o| {
        let m = &ea[i * n * n..(i + 1) * n * n];
        check_finite(OP, m, n, i)?;
        let e = expm::expm(MatRef::from_row_major_slice(m, n, n), par);
        write_row_major(o, e.as_ref());
        match o.iter().position(|x| !is_finite(x)) {
            Some(p) => Err(Error::invalid(
                OP,
                format!(
                    "matrix {i} of the batch: the result overflows ({:?} at ({}, {})); its 1-norm \
                     is too large for this dtype",
                    o[p],
                    p / n,
                    p % n
                ),
            )),
            None => Ok(()),
        }
    })?;
    Ok(T::into_host(out))
}

fn eigvals_typed<T: Field>(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    const OP: &str = "linalg.eigvals";
    let (batch, n, _) = dims(a.shape);
    let ea = elems::<T>(OP, a)?;
    let flops = 10.0 * (n as f64).powi(3);
    let out = per_matrix(alloc, batch, n, flops, |i, _par, o: &mut [(f64, f64)]| {
        let m = &ea[i * n * n..(i + 1) * n * n];
        check_finite(OP, m, n, i)?;
        let values = MatRef::from_row_major_slice(m, n, n)
            .eigenvalues()
            .map_err(|_| no_convergence(OP, i))?;
        for (slot, z) in o.iter_mut().zip(&values) {
            *slot = (T::real_to_f64(&z.re), T::real_to_f64(&z.im));
        }
        Ok(())
    })?;
    Ok(T::complex_host(out))
}

fn eig_typed<T: Field>(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    const OP: &str = "linalg.eig";
    let (batch, n, _) = dims(a.shape);
    let ea = elems::<T>(OP, a)?;
    let flops = 25.0 * (n as f64).powi(3);
    let out = per_matrix(
        alloc,
        batch,
        n + n * n,
        flops,
        |i, _par, o: &mut [(f64, f64)]| {
            let m = &ea[i * n * n..(i + 1) * n * n];
            check_finite(OP, m, n, i)?;
            let evd = MatRef::from_row_major_slice(m, n, n)
                .eigen()
                .map_err(|_| no_convergence(OP, i))?;
            let pair = |z: &nabla_core::num_complex::Complex<T::Real>| {
                (T::real_to_f64(&z.re), T::real_to_f64(&z.im))
            };
            let (w, v) = o.split_at_mut(n);
            for (slot, z) in w.iter_mut().zip(evd.S().column_vector().iter()) {
                *slot = pair(z);
            }
            let u = evd.U();
            for c in 0..n {
                let column: Vec<(f64, f64)> = (0..n).map(|r| pair(&u[(r, c)])).collect();
                let norm = column
                    .iter()
                    .map(|(re, im)| re.hypot(*im).powi(2))
                    .sum::<f64>()
                    .sqrt();
                let scale = if norm > 0.0 { norm.recip() } else { 1.0 };
                for (r, (re, im)) in column.into_iter().enumerate() {
                    v[r * n + c] = (re * scale, im * scale);
                }
            }
            Ok(())
        },
    )?;
    Ok(T::complex_host(out))
}

/// Eigenvalues and unit right eigenvectors of general matrices, packed `[w, V]`, complex.
pub(super) fn eig(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    by_dtype!("linalg.eig", a.data, T => eig_typed::<T>(a, alloc))
}

/// Eigenvalues (ascending) and eigenvectors of Hermitian matrices, packed `[w, V]` per matrix.
pub(super) fn eigh(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    by_dtype!("linalg.eigh", a.data, T => eigh_typed::<T>(a, alloc))
}

/// SVD packed `[U, S, Vh]` per matrix (reduced or full).
pub(super) fn svd(
    a: &HostView<'_>,
    full_matrices: bool,
    alloc: &dyn HostAllocator,
) -> Result<HostData> {
    by_dtype!("linalg.svd", a.data, T => svd_typed::<T>(a, full_matrices, alloc))
}

/// Singular values (descending) in the real dtype.
pub(super) fn svdvals(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    by_dtype!("linalg.svdvals", a.data, T => svdvals_typed::<T>(a, alloc))
}

/// The matrix exponential per matrix.
pub(super) fn matrix_exp(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    by_dtype!("linalg.matrix_exp", a.data, T => matrix_exp_typed::<T>(a, alloc))
}

/// Eigenvalues of general matrices, in the complex dtype.
pub(super) fn eigvals(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    by_dtype!("linalg.eigvals", a.data, T => eigvals_typed::<T>(a, alloc))
}

/// `|x|` of a faer scalar as `f64` (the 1-norm of the matrix exponential's scaling).
pub(super) fn abs_f64<T: Field>(x: &T) -> f64 {
    T::real_to_f64(&abs(x))
}
