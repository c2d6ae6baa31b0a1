//! Host kernels of the factorisation ops on faer, one factorisation per matrix of the batch, writing
//! row-major results (packed per matrix for ops with several results). Batches run through
//! [`per_matrix`]: one large matrix uses faer's parallelism, a batch is spread over threads.

use super::ops::TriangularSolve;
use crate::kernels::{
    Field, batch_rows_cols, by_dtype, check_finite, elems, matrix, per_matrix, write_row_major,
};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{self as llt, LltError};
use faer::linalg::lu::partial_pivoting::factor::{lu_in_place, lu_in_place_scratch};
use faer::linalg::triangular_solve as tri;
use faer::{Mat, MatMut, MatRef, Par, Side};
use nabla_core::num_complex::Complex64;
use nabla_core::{Error, HostAllocator, HostData, HostView, Result};

/// The pivot `A_jj - |L_j,:j|²` at which the Cholesky factorisation of `a` stopped.
fn cholesky_pivot<T: Field>(a: MatRef<'_, T>, j: usize) -> f64 {
    let ajj = a[(j, j)].re_f64();
    if j == 0 {
        return ajj;
    }
    match a.get(..j, ..j).llt(Side::Lower) {
        Ok(llt) => {
            // Row j of L solves L₁₁ L_j,:jᴴ = A_j,:jᴴ.
            let mut v = Mat::<T>::from_fn(j, 1, |r, _| a[(j, r)].conj_val());
            tri::solve_lower_triangular_in_place(llt.L(), v.as_mut(), Par::Seq);
            ajj - (0..j).map(|r| v[(r, 0)].abs_f64().powi(2)).sum::<f64>()
        }
        Err(_) => f64::NAN,
    }
}

fn cholesky_typed<T: Field>(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    const OP: &str = "linalg.cholesky";
    let (batch, n, _) = batch_rows_cols(a.shape);
    let ea = elems::<T>(OP, a)?;
    let flops = (n as f64).powi(3) / 3.0;
    // Sequential even for one large matrix: faer's threaded Cholesky was slower at n = 256 and 512
    // on 2 cores.
    let out = per_matrix(alloc, batch, n * n, flops, |i, _par, o| {
        let par = Par::Seq;
        let m = matrix(ea, i, n, n);
        // faer's layout: a column-major copy of the lower triangle, factored in place.
        let mut l = Mat::<T>::zeros(n, n);
        l.copy_from_triangular_lower(m);
        let scratch = llt::cholesky_in_place_scratch::<T>(n, par, Default::default());
        let factored = llt::cholesky_in_place(
            l.as_mut(),
            Default::default(),
            par,
            MemStack::new(&mut MemBuffer::new(scratch)),
            Default::default(),
        );
        if let Err(LltError::NonPositivePivot { index }) = factored {
            return Err(Error::invalid(
                OP,
                format!(
                    "matrix {i} of the batch ({n}x{n}) is not positive definite (pivot {index} \
                     is {})",
                    cholesky_pivot(m, index)
                ),
            ));
        }
        // The lower triangle is L (faer leaves other values above the diagonal; `o` is zeros).
        for (r, row) in o.chunks_mut(n.max(1)).enumerate() {
            for (c, x) in row.iter_mut().enumerate().take(r + 1) {
                *x = l[(r, c)];
            }
        }
        check_finite(OP, o)
    })?;
    Ok(T::into_host(out))
}

fn triangular_solve_typed<T: Field>(
    a: &HostView<'_>,
    b: &HostView<'_>,
    op: TriangularSolve,
    alloc: &dyn HostAllocator,
) -> Result<HostData> {
    const OP: &str = "linalg.triangular_solve";
    let (batch, n, _) = batch_rows_cols(a.shape);
    let k = b.shape[b.shape.len() - 1];
    let (ea, eb) = (elems::<T>(OP, a)?, elems::<T>(OP, b)?);
    let flops = (n * n * k) as f64;
    // Tᵀ of a lower T is the upper triangle of the transposed view (a view: nothing is copied).
    let (unit, lower) = (op.unit_diagonal, op.lower != op.transpose);
    let out = per_matrix(alloc, batch, n * k, flops, |i, par, o| {
        let m = matrix(ea, i, n, n);
        let m = if op.transpose { m.transpose() } else { m };
        if !unit && let Some(j) = (0..n).find(|&j| m[(j, j)].abs_f64() == 0.0) {
            return Err(Error::invalid(
                OP,
                format!("matrix {i} of the batch ({n}x{n}) is singular: diagonal entry {j} is 0"),
            ));
        }
        o.copy_from_slice(&eb[i * n * k..(i + 1) * n * k]);
        let rhs = MatMut::from_row_major_slice_mut(o, n, k);
        match (lower, unit) {
            (true, false) => tri::solve_lower_triangular_in_place(m, rhs, par),
            (true, true) => tri::solve_unit_lower_triangular_in_place(m, rhs, par),
            (false, false) => tri::solve_upper_triangular_in_place(m, rhs, par),
            (false, true) => tri::solve_unit_upper_triangular_in_place(m, rhs, par),
        }
        check_finite(OP, o)
    })?;
    Ok(T::into_host(out))
}

/// `±1`: the sign of the row permutation `fwd` (its parity from the cycle count).
fn permutation_sign(fwd: &[usize]) -> f64 {
    let mut seen = vec![false; fwd.len()];
    let mut transpositions = 0;
    for start in 0..fwd.len() {
        let mut j = start;
        let mut len = 0;
        while !seen[j] {
            seen[j] = true;
            j = fwd[j];
            len += 1;
        }
        transpositions += len.max(1) - 1;
    }
    if transpositions % 2 == 0 { 1.0 } else { -1.0 }
}

/// The sign of the row permutation and the pivots (diagonal of `U`) of a square matrix's LU factors.
fn pivots<T: Field>(a: MatRef<'_, T>) -> (f64, Vec<Complex64>) {
    let lu = a.partial_piv_lu();
    let u = lu.U();
    let sign = permutation_sign(lu.P().arrays().0);
    (sign, (0..a.nrows()).map(|j| u[(j, j)].to_c64()).collect())
}

fn det_typed<T: Field>(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    let (batch, n, _) = batch_rows_cols(a.shape);
    let ea = elems::<T>("linalg.det", a)?;
    let flops = 2.0 / 3.0 * (n as f64).powi(3);
    let out = per_matrix(alloc, batch, 1, flops, |i, _par, o| {
        let (sign, pivots) = pivots(matrix(ea, i, n, n));
        let d = pivots.iter().product::<Complex64>() * sign;
        o[0] = T::from_parts(d.re, d.im);
        Ok(())
    })?;
    Ok(T::into_host(out))
}

fn slogdet_typed<T: Field>(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    let (batch, n, _) = batch_rows_cols(a.shape);
    let ea = elems::<T>("linalg.slogdet", a)?;
    let flops = 2.0 / 3.0 * (n as f64).powi(3);
    let out = per_matrix(alloc, batch, 2, flops, |i, _par, o| {
        let (perm_sign, pivots) = pivots(matrix(ea, i, n, n));
        // The sign is the phase of det A (±1 for real A); (0, -inf) when A is singular.
        let (sign, log) = if pivots.iter().any(|p| p.norm() == 0.0) {
            (Complex64::new(0.0, 0.0), f64::NEG_INFINITY)
        } else {
            let phase: Complex64 = pivots.iter().map(|p| p / p.norm()).product();
            (
                phase * perm_sign,
                pivots.iter().map(|p| p.norm().ln()).sum(),
            )
        };
        o[0] = T::from_parts(sign.re, sign.im);
        o[1] = T::from_parts(log, 0.0);
        Ok(())
    })?;
    Ok(T::into_host(out))
}

fn lu_typed<T: Field>(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    const OP: &str = "linalg.lu";
    let (batch, m, n) = batch_rows_cols(a.shape);
    let k = m.min(n);
    let ea = elems::<T>(OP, a)?;
    let flops = (m * n * k) as f64;
    let out = per_matrix(alloc, batch, m * m + m * k + k * n, flops, |i, par, o| {
        // Factored in place on a column-major copy, with the parallelism `per_matrix` chose (faer's
        // `partial_piv_lu` uses its global setting, which hands even a 2 x 2 to the thread pool,
        // and splits L and U into fresh matrices).
        let mut lu = matrix(ea, i, m, n).to_owned();
        let (mut fwd, mut inv) = (vec![0usize; m], vec![0usize; m]);
        let params = Default::default();
        let mut stack = MemBuffer::new(lu_in_place_scratch::<usize, T>(m, n, par, params));
        lu_in_place(
            lu.as_mut(),
            &mut fwd,
            &mut inv,
            par,
            MemStack::new(&mut stack),
            params,
        );
        let (p, rest) = o.split_at_mut(m * m);
        let (l, u) = rest.split_at_mut(m * k);
        let one = T::from_parts(1.0, 0.0);
        // Row r of P A is row fwd[r] of A, so A = P' L U with P'[fwd[r], r] = 1 (`o` is zeros).
        for (r, &f) in fwd.iter().enumerate() {
            p[f * m + r] = one;
        }
        // L (m x k): unit diagonal, the factor below it; U (k x n): on and above the diagonal.
        for r in 0..m {
            for c in 0..k.min(r) {
                l[r * k + c] = lu[(r, c)];
            }
            if r < k {
                l[r * k + r] = one;
            }
        }
        for r in 0..k {
            for c in r..n {
                u[r * n + c] = lu[(r, c)];
            }
        }
        check_finite(OP, o)
    })?;
    Ok(T::into_host(out))
}

fn qr_typed<T: Field>(a: &HostView<'_>, full: bool, alloc: &dyn HostAllocator) -> Result<HostData> {
    const OP: &str = "linalg.qr";
    let (batch, m, n) = batch_rows_cols(a.shape);
    let q = if full { m } else { m.min(n) };
    let ea = elems::<T>(OP, a)?;
    let flops = 4.0 * (m * n * q) as f64;
    let out = per_matrix(alloc, batch, m * q + q * n, flops, |i, _par, o| {
        let qr = matrix(ea, i, m, n).qr();
        let (oq, or) = o.split_at_mut(m * q);
        if full {
            write_row_major(oq, qr.compute_Q().as_ref());
            // R is m x n (or is zeros): the rows faer stores, upper triangular.
            let r = qr.R();
            for (row, dst) in or.chunks_mut(n.max(1)).take(r.nrows()).enumerate() {
                for (j, x) in dst.iter_mut().enumerate().skip(row) {
                    *x = r[(row, j)];
                }
            }
        } else {
            write_row_major(oq, qr.compute_thin_Q().as_ref());
            write_row_major(or, qr.thin_R());
        }
        check_finite(OP, o)
    })?;
    Ok(T::into_host(out))
}

/// The Cholesky factor per matrix of the batch.
pub(crate) fn cholesky(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    by_dtype!("linalg.cholesky", a.data, T => cholesky_typed::<T>(a, alloc))
}

/// `op(T)⁻¹ B` for the triangle `T` of `A` per matrix of the batch.
pub(crate) fn triangular_solve(
    a: &HostView<'_>,
    b: &HostView<'_>,
    op: TriangularSolve,
    alloc: &dyn HostAllocator,
) -> Result<HostData> {
    by_dtype!("linalg.triangular_solve", a.data, T => triangular_solve_typed::<T>(a, b, op, alloc))
}

/// `det A` per matrix of the batch.
pub(crate) fn det(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    by_dtype!("linalg.det", a.data, T => det_typed::<T>(a, alloc))
}

/// `(sign, log |det A|)` per matrix of the batch.
pub(crate) fn slogdet(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    by_dtype!("linalg.slogdet", a.data, T => slogdet_typed::<T>(a, alloc))
}

/// `(P, L, U)` per matrix of the batch.
pub(crate) fn lu(a: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    by_dtype!("linalg.lu", a.data, T => lu_typed::<T>(a, alloc))
}

/// `(Q, R)` per matrix of the batch.
pub(crate) fn qr(a: &HostView<'_>, full: bool, alloc: &dyn HostAllocator) -> Result<HostData> {
    by_dtype!("linalg.qr", a.data, T => qr_typed::<T>(a, full, alloc))
}
