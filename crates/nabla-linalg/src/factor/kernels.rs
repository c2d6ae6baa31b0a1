//! Host kernels of the factorisation ops on faer, one factorisation per matrix of the batch, writing
//! row-major results (packed per matrix for ops with several results).

use crate::kernels::{
    Field, batch_rows_cols, by_dtype, check_finite, elems, matrix, push_row_major,
};
use faer::linalg::cholesky::llt::factor::LltError;
use faer::linalg::triangular_solve as tri;
use faer::{Mat, MatMut, MatRef, Par, Side};
use nabla_core::num_complex::Complex64;
use nabla_core::{Error, HostData, HostView, Result};

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

fn cholesky_typed<T: Field>(a: &HostView<'_>) -> Result<HostData> {
    const OP: &str = "linalg.cholesky";
    let (batch, n, _) = batch_rows_cols(a.shape);
    let ea = elems::<T>(OP, a)?;
    let mut out = Vec::with_capacity(batch * n * n);
    for i in 0..batch {
        let m = matrix(ea, i, n, n);
        match m.llt(Side::Lower) {
            Ok(llt) => push_row_major(&mut out, llt.L()),
            Err(LltError::NonPositivePivot { index }) => {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "matrix {i} of the batch ({n}x{n}) is not positive definite (pivot {index} \
                         is {})",
                        cholesky_pivot(m, index)
                    ),
                ));
            }
        }
    }
    check_finite(OP, &out)?;
    Ok(T::into_host(out))
}

fn triangular_solve_typed<T: Field>(
    a: &HostView<'_>,
    b: &HostView<'_>,
    lower: bool,
    unit: bool,
) -> Result<HostData> {
    const OP: &str = "linalg.triangular_solve";
    let (batch, n, _) = batch_rows_cols(a.shape);
    let k = b.shape[b.shape.len() - 1];
    let ea = elems::<T>(OP, a)?;
    let mut out = elems::<T>(OP, b)?.to_vec();
    let par = if batch == 1 {
        faer::get_global_parallelism()
    } else {
        Par::Seq
    };
    for i in 0..batch {
        let m = matrix(ea, i, n, n);
        if !unit && let Some(j) = (0..n).find(|&j| m[(j, j)].abs_f64() == 0.0) {
            return Err(Error::invalid(
                OP,
                format!("matrix {i} of the batch ({n}x{n}) is singular: diagonal entry {j} is 0"),
            ));
        }
        let rhs = MatMut::from_row_major_slice_mut(&mut out[i * n * k..(i + 1) * n * k], n, k);
        match (lower, unit) {
            (true, false) => tri::solve_lower_triangular_in_place(m, rhs, par),
            (true, true) => tri::solve_unit_lower_triangular_in_place(m, rhs, par),
            (false, false) => tri::solve_upper_triangular_in_place(m, rhs, par),
            (false, true) => tri::solve_unit_upper_triangular_in_place(m, rhs, par),
        }
    }
    check_finite(OP, &out)?;
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

fn det_typed<T: Field>(a: &HostView<'_>) -> Result<HostData> {
    let (batch, n, _) = batch_rows_cols(a.shape);
    let ea = elems::<T>("linalg.det", a)?;
    let out = (0..batch)
        .map(|i| {
            let (sign, pivots) = pivots(matrix(ea, i, n, n));
            let d = pivots.iter().product::<Complex64>() * sign;
            T::from_parts(d.re, d.im)
        })
        .collect();
    Ok(T::into_host(out))
}

fn slogdet_typed<T: Field>(a: &HostView<'_>) -> Result<HostData> {
    let (batch, n, _) = batch_rows_cols(a.shape);
    let ea = elems::<T>("linalg.slogdet", a)?;
    let mut out = Vec::with_capacity(2 * batch);
    for i in 0..batch {
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
        out.push(T::from_parts(sign.re, sign.im));
        out.push(T::from_parts(log, 0.0));
    }
    Ok(T::into_host(out))
}

fn lu_typed<T: Field>(a: &HostView<'_>) -> Result<HostData> {
    let (batch, m, n) = batch_rows_cols(a.shape);
    let k = m.min(n);
    let ea = elems::<T>("linalg.lu", a)?;
    let mut out = Vec::with_capacity(batch * (m * m + m * k + k * n));
    for i in 0..batch {
        let lu = matrix(ea, i, m, n).partial_piv_lu();
        // Row r of P A is row fwd[r] of A, so A = P' L U with P'[fwd[r], r] = 1.
        let fwd = lu.P().arrays().0;
        let mut p = Mat::<T>::zeros(m, m);
        for (r, &f) in fwd.iter().enumerate() {
            p[(f, r)] = T::from_parts(1.0, 0.0);
        }
        push_row_major(&mut out, p.as_ref());
        push_row_major(&mut out, lu.L());
        push_row_major(&mut out, lu.U());
    }
    check_finite("linalg.lu", &out)?;
    Ok(T::into_host(out))
}

fn qr_typed<T: Field>(a: &HostView<'_>, full: bool) -> Result<HostData> {
    let (batch, m, n) = batch_rows_cols(a.shape);
    let q = if full { m } else { m.min(n) };
    let ea = elems::<T>("linalg.qr", a)?;
    let mut out = Vec::with_capacity(batch * (m * q + q * n));
    for i in 0..batch {
        let qr = matrix(ea, i, m, n).qr();
        if full {
            push_row_major(&mut out, qr.compute_Q().as_ref());
            // R is m x n, zero below the rows faer stores.
            let r = qr.R();
            let full_r = Mat::from_fn(m, n, |i, j| {
                if i < r.nrows() && j >= i {
                    r[(i, j)]
                } else {
                    T::from_parts(0.0, 0.0)
                }
            });
            push_row_major(&mut out, full_r.as_ref());
        } else {
            push_row_major(&mut out, qr.compute_thin_Q().as_ref());
            push_row_major(&mut out, qr.thin_R());
        }
    }
    check_finite("linalg.qr", &out)?;
    Ok(T::into_host(out))
}

/// The Cholesky factor per matrix of the batch.
pub(crate) fn cholesky(a: &HostView<'_>) -> Result<HostData> {
    by_dtype!("linalg.cholesky", a.data, T => cholesky_typed::<T>(a))
}

/// `A⁻¹ B` for triangular `A` per matrix of the batch.
pub(crate) fn triangular_solve(
    a: &HostView<'_>,
    b: &HostView<'_>,
    lower: bool,
    unit: bool,
) -> Result<HostData> {
    by_dtype!("linalg.triangular_solve", a.data, T => triangular_solve_typed::<T>(a, b, lower, unit))
}

/// `det A` per matrix of the batch.
pub(crate) fn det(a: &HostView<'_>) -> Result<HostData> {
    by_dtype!("linalg.det", a.data, T => det_typed::<T>(a))
}

/// `(sign, log |det A|)` per matrix of the batch.
pub(crate) fn slogdet(a: &HostView<'_>) -> Result<HostData> {
    by_dtype!("linalg.slogdet", a.data, T => slogdet_typed::<T>(a))
}

/// `(P, L, U)` per matrix of the batch.
pub(crate) fn lu(a: &HostView<'_>) -> Result<HostData> {
    by_dtype!("linalg.lu", a.data, T => lu_typed::<T>(a))
}

/// `(Q, R)` per matrix of the batch.
pub(crate) fn qr(a: &HostView<'_>, full: bool) -> Result<HostData> {
    by_dtype!("linalg.qr", a.data, T => qr_typed::<T>(a, full))
}
