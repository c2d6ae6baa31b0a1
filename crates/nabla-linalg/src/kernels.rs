//! Host kernels on faer for solve, inverse and log-determinant (an LU factorisation with partial
//! pivoting per matrix of the batch), and the helpers every kernel of the family shares: the element
//! types ([`Field`]: f32, f64, complex64, complex128), the dtype dispatch ([`by_dtype!`]) and batch
//! iteration ([`per_matrix`]: faer's parallelism for one large matrix, threads over a batch).
//!
//! `linalg.solve` keeps the LU factors of `A` in its packed output, so that `linalg.lu_solve` (its
//! derivatives' solves with `A` and `Aᵀ`) does not factor `A` again.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::lu::partial_pivoting::{factor as faer_lu_factor, solve as faer_lu_solve};
use faer::linalg::solvers::{DenseSolveCore as _, PartialPivLu};
use faer::perm::PermRef;
use faer::{MatMut, MatRef, Par};
use nabla_core::num_complex::{Complex32, Complex64};
use nabla_core::{Element, Error, HostAllocator, HostData, HostView, Result};
use rayon::prelude::*;

/// The element types the kernels run on: real and complex floats.
pub(crate) trait Field:
    Element + faer::traits::ComplexField + Copy + Default + Send + Sync
{
    /// The real counterpart (itself for real types).
    type Re: Element + Copy + Default + Send;
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

/// Runs `$body` with `$t` bound to the element type of `$data` (a [`Field`]: f32, f64, complex64,
/// complex128), or an error naming the op `$op` for any other dtype.
macro_rules! by_dtype {
    ($op:expr, $data:expr, $t:ident => $body:expr) => {{
        let dtype = $data.dtype();
        nabla_core::dispatch_dtype!(dtype, $t, {
            real | complex => $body,
            _ => Err(nabla_core::Error::dtype($op, dtype)),
        })
    }};
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

/// Writes `m` into `out` (`m.nrows() * m.ncols()` elements) in row-major order.
pub(crate) fn write_row_major<T: Copy>(out: &mut [T], m: MatRef<'_, T>) {
    let cols = m.ncols();
    for (i, row) in out.chunks_mut(cols.max(1)).take(m.nrows()).enumerate() {
        for (j, x) in row.iter_mut().enumerate() {
            *x = m[(i, j)];
        }
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

/// Fails when `u` (the `U` factor of matrix `batch` of the batch) has a zero or non-finite pivot.
fn check_pivots<T: Field>(op: &'static str, u: MatRef<'_, T>, batch: usize) -> Result<()> {
    let n = u.nrows();
    match (0..n).find(|&i| !(u[(i, i)].abs_f64() > 0.0 && u[(i, i)].abs_f64().is_finite())) {
        Some(i) => Err(Error::invalid(
            op,
            format!(
                "matrix {batch} of the batch ({n}x{n}) is singular: pivot {i} of its LU \
                 factorisation is {}",
                u[(i, i)].to_c64()
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
    let lu = a.partial_piv_lu();
    check_pivots(op, lu.U(), batch)?;
    Ok(lu)
}

/// Elements per matrix of a solve's packed output for `A` `n x n` and `B` `n x k`: `X` (`n k`,
/// row-major), then the factors (`n² + n`, see [`factor_into`]).
pub(crate) fn solve_len(n: usize, k: usize) -> usize {
    n * k + n * n + n
}

/// Factors `aᵀ` (`n x n`) with partial pivoting, `P Aᵀ = L U`, into `factors` (`n² + n` elements):
/// the `L` (unit, below the diagonal) and `U` factors in column-major order, then the forward row
/// permutation as values of `T`. Factoring `Aᵀ` (pivoting `A`'s columns) lets the row-major `A` be
/// copied as it is into faer's column-major layout; solves with `A` are transposed solves with these
/// factors. Fails when `a` is singular.
fn factor_into<T: Field>(
    op: &'static str,
    a: MatRef<'_, T>,
    batch: usize,
    factors: &mut [T],
    par: Par,
) -> Result<()> {
    let n = a.nrows();
    let (lu, perm) = factors.split_at_mut(n * n);
    let mut lu = MatMut::from_column_major_slice_mut(lu, n, n);
    lu.copy_from(a.transpose());
    let (mut fwd, mut inv) = (vec![0usize; n], vec![0usize; n]);
    let scratch = faer_lu_factor::lu_in_place_scratch::<usize, T>(n, n, par, Default::default());
    faer_lu_factor::lu_in_place(
        lu.as_mut(),
        &mut fwd,
        &mut inv,
        par,
        MemStack::new(&mut MemBuffer::new(scratch)),
        Default::default(),
    );
    check_pivots(op, lu.as_ref(), batch)?;
    for (p, &f) in perm.iter_mut().zip(&fwd) {
        *p = T::from_parts(f as f64, 0.0);
    }
    Ok(())
}

/// Solves `A X = B` (`Aᵀ X = B` when `transpose`) for `b` (`n x k`) with the factors of `Aᵀ` from
/// [`factor_into`], writing `X` row-major into `x`. Fails when `factors` holds no permutation.
fn solve_with_factors<T: Field>(
    op: &'static str,
    factors: &[T],
    b: MatRef<'_, T>,
    transpose: bool,
    x: &mut [T],
    par: Par,
) -> Result<()> {
    let (n, k) = (b.nrows(), b.ncols());
    let (lu, perm) = factors.split_at(n * n);
    let mut fwd = Vec::with_capacity(n);
    let mut inv = vec![n; n];
    for (i, p) in perm.iter().enumerate() {
        let j = p.re_f64();
        let ok = j >= 0.0 && j < n as f64 && j.fract() == 0.0 && inv[j as usize] == n;
        if !ok {
            return Err(Error::invalid(
                op,
                format!("the factors hold no row permutation of size {n} (entry {i} is {j})"),
            ));
        }
        inv[j as usize] = i;
        fwd.push(j as usize);
    }
    let perm = PermRef::new_checked(&fwd, &inv, n);
    let lu = MatRef::from_column_major_slice(lu, n, n);
    for (i, row) in x.chunks_mut(k.max(1)).take(n).enumerate() {
        for (j, v) in row.iter_mut().enumerate() {
            *v = b[(i, j)];
        }
    }
    let rhs = MatMut::from_row_major_slice_mut(x, n, k);
    let scratch = faer_lu_solve::solve_in_place_scratch::<usize, T>(n, k, par);
    let mut buffer = MemBuffer::new(scratch);
    let stack = MemStack::new(&mut buffer);
    // The factors are those of Aᵀ: A X = B is their transposed solve.
    if transpose {
        faer_lu_solve::solve_in_place(lu, lu, perm, rhs, par, stack);
    } else {
        faer_lu_solve::solve_transpose_in_place(lu, lu, perm, rhs, par, stack);
    }
    Ok(())
}

/// Estimated flops of factoring an `n x n` matrix and solving for `k` columns.
fn solve_flops(n: usize, k: usize) -> f64 {
    let n = n as f64;
    2.0 / 3.0 * n * n * n + 2.0 * n * n * k as f64
}

fn solve_typed<T: Field>(
    a: &HostView<'_>,
    b: &HostView<'_>,
    alloc: &dyn HostAllocator,
) -> Result<HostData> {
    const OP: &str = "linalg.solve";
    let (batch, n, _) = batch_rows_cols(a.shape);
    let k = b.shape[b.shape.len() - 1];
    let (ea, eb) = (elems::<T>(OP, a)?, elems::<T>(OP, b)?);
    let out = per_matrix(
        alloc,
        batch,
        solve_len(n, k),
        solve_flops(n, k),
        |i, par, o| {
            let (x, factors) = o.split_at_mut(n * k);
            // faer's threaded LU was slower than its sequential one at n = 256 and 512 on 2 cores.
            factor_into(OP, matrix(ea, i, n, n), i, factors, Par::Seq)?;
            solve_with_factors(OP, factors, matrix(eb, i, n, k), false, x, par)?;
            check_finite(OP, x)
        },
    )?;
    Ok(T::into_host(out))
}

fn lu_solve_typed<T: Field>(
    factors: &HostView<'_>,
    b: &HostView<'_>,
    transpose: bool,
    alloc: &dyn HostAllocator,
) -> Result<HostData> {
    const OP: &str = "linalg.lu_solve";
    let (batch, n, k) = batch_rows_cols(b.shape);
    let (ef, eb) = (elems::<T>(OP, factors)?, elems::<T>(OP, b)?);
    let len = n * n + n;
    let flops = 2.0 * (n * n * k) as f64;
    per_matrix(alloc, batch, n * k, flops, |i, par, x| {
        let f = &ef[i * len..(i + 1) * len];
        solve_with_factors(OP, f, matrix(eb, i, n, k), transpose, x, par)?;
        check_finite(OP, x)
    })
    .map(T::into_host)
}

fn inverse_typed<T: Field>(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    const OP: &str = "linalg.inv";
    let (batch, n, _) = batch_rows_cols(a.shape);
    let ea = elems::<T>(OP, a)?;
    let flops = 2.0 * (n as f64).powi(3);
    let out = per_matrix(alloc, batch, n * n, flops, |i, _par, o| {
        let lu = factor(OP, matrix(ea, i, n, n), i)?;
        write_row_major(o, lu.inverse().as_ref());
        check_finite(OP, o)
    })?;
    Ok(T::into_host(out))
}

fn logabsdet_typed<T: Field>(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    const OP: &str = "linalg.logabsdet";
    let (batch, n, _) = batch_rows_cols(a.shape);
    let ea = elems::<T>(OP, a)?;
    let flops = 2.0 / 3.0 * (n as f64).powi(3);
    let out = per_matrix(alloc, batch, 1, flops, |i, _par, o: &mut [T::Re]| {
        let lu = factor(OP, matrix(ea, i, n, n), i)?;
        let u = lu.U();
        o[0] = T::re_from_f64((0..n).map(|j| u[(j, j)].abs_f64().ln()).sum());
        Ok(())
    })?;
    Ok(<T::Re as Element>::into_host(out))
}

/// `A⁻¹ B` per matrix of the batch, packed with `A`'s factors (see [`solve_len`]).
pub(crate) fn solve(
    a: &HostView<'_>,
    b: &HostView<'_>,
    alloc: &dyn HostAllocator,
) -> Result<HostData> {
    by_dtype!("linalg.solve", a.data, T => solve_typed::<T>(a, b, alloc))
}

/// `A⁻¹ B` (`A⁻ᵀ B` when `transpose`) per matrix of the batch, from `A`'s factors `[..., n² + n]`.
pub(crate) fn lu_solve(
    factors: &HostView<'_>,
    b: &HostView<'_>,
    transpose: bool,
    alloc: &dyn HostAllocator,
) -> Result<HostData> {
    by_dtype!("linalg.lu_solve", b.data, T => lu_solve_typed::<T>(factors, b, transpose, alloc))
}

/// `A⁻¹` per matrix of the batch.
pub(crate) fn inverse(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    by_dtype!("linalg.inv", a.data, T => inverse_typed::<T>(a, alloc))
}

/// `log |det A|` per matrix of the batch (real, also for complex `A`).
pub(crate) fn logabsdet(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    by_dtype!("linalg.logabsdet", a.data, T => logabsdet_typed::<T>(a, alloc))
}

/// Runs `one(i, par, out_i)` for every matrix `i` of the batch, where `out_i` is the `len` output
/// elements of matrix `i`, and returns all outputs. `flops` estimates the work per matrix.
///
/// A batch whose total work reaches `BATCH_FLOPS` is split over the threads of rayon's pool (the CPU
/// backend's), each running faer sequentially on its matrices (no synchronisation inside a
/// factorisation). One matrix is offered faer's rayon parallelism from `ONE_MATRIX_FLOPS` on; on the
/// 2-core machines we measure on it made eigh of n = 256 and 512 and many-column triangular solves
/// faster, while the LU and Cholesky factorisations themselves stayed faster sequential, so their
/// kernels pass `Par::Seq` to faer.
pub(crate) fn per_matrix<T, F>(
    alloc: &dyn HostAllocator,
    batch: usize,
    len: usize,
    flops: f64,
    one: F,
) -> Result<Vec<T>>
where
    T: Copy + Default + Send,
    F: Fn(usize, Par, &mut [T]) -> Result<()> + Sync,
{
    const ONE_MATRIX_FLOPS: f64 = 1e7;
    const BATCH_FLOPS: f64 = 2e6;
    // On a cached buffer when the backend's allocator has one of this size (outputs of a program run
    // again and again), so that its pages are not faulted in afresh on every call.
    let mut out = alloc.vec(batch * len);
    out.resize(batch * len, T::default());
    if len == 0 {
        // Empty results: still validate every matrix.
        (0..batch).try_for_each(|i| one(i, Par::Seq, &mut []))?;
        return Ok(out);
    }
    // The pool the work would run on (not `available_parallelism`, which reads the cgroup's files
    // on every call: about 10 µs, more than a small matrix's whole factorization).
    let threads = rayon::current_num_threads();
    if batch == 1 {
        let par = if flops >= ONE_MATRIX_FLOPS && threads > 1 {
            Par::rayon(0)
        } else {
            Par::Seq
        };
        one(0, par, &mut out)?;
        return Ok(out);
    }
    let threads = threads.min(batch);
    if threads <= 1 || flops * (batch as f64) < BATCH_FLOPS {
        for (i, o) in out.chunks_mut(len).enumerate() {
            one(i, Par::Seq, o)?;
        }
        return Ok(out);
    }
    let per = batch.div_ceil(threads);
    out.par_chunks_mut(per * len)
        .enumerate()
        .try_for_each(|(c, chunk)| {
            chunk
                .chunks_mut(len)
                .enumerate()
                .try_for_each(|(j, o)| one(c * per + j, Par::Seq, o))
        })?;
    Ok(out)
}
