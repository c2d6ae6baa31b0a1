//! Factorisations and the ops built on them: cholesky, triangular solve, LU, det, slogdet, QR, lstsq.
//!
//! All ops take batches `[..., m, n]` of f32, f64, complex64 or complex128 matrices; ops with several
//! results pack them into one output `[..., total]` that the user function splits into views.
//!
//! | function | op | shapes | degenerate input |
//! |---|---|---|---|
//! | [`cholesky`](crate::cholesky) | `linalg.cholesky` | `[..., n, n] -> L [..., n, n]` | not positive definite: error naming the matrix and pivot |
//! | [`triangular_solve`](crate::triangular_solve) | `linalg.triangular_solve` | `A [..., n, n], B [..., n, k] -> X [..., n, k]` | zero diagonal: error |
//! | [`det`](crate::det) | `linalg.det` | `[..., n, n] -> [...]` | singular: `0` (derivatives: error) |
//! | [`slogdet`](crate::slogdet) | `linalg.slogdet` | `[..., n, n] -> sign, logabsdet [...]` | singular: `(0, -inf)` (derivatives: error) |
//! | [`lu`](crate::lu) | `linalg.lu` | `[..., m, n] -> P [m, m], L [m, k], U [k, n]` | factored; derivatives for any shape (`L`, `U` completed to square unit lower and upper factors, JAX's rule), with invertible leading `k x k` blocks |
//! | [`qr`](crate::qr), [`qr_full`](crate::qr_full) | `linalg.qr` | `[..., m, n] -> Q [m, k], R [k, n]` (full: `[m, m], [m, n]`) | derivatives of the op need `m >= n` (reduced) and invertible `R`; the user functions compose wide (`m < n`) QR from the square one, so it differentiates too |
//! | [`lstsq`](crate::lstsq) | (qr + triangular_solve) | `A [..., m, n], B [..., m, k] -> X [..., n, k]` | rank deficient: error |
//!
//! Rules (`ᵀ` swaps the last two axes, `ᴴ` also conjugates, `Φ` keeps the lower triangle with the
//! diagonal halved; complex types follow JAX: the reverse rule is the linear transpose of the forward
//! rule under `Σ uᵢvᵢ`):
//!
//! | op | forward (tangent) | reverse (cotangent) |
//! |---|---|---|
//! | cholesky | `dL = L Φ(L⁻¹ dA L⁻ᴴ)` | `gA = L⁻ᵀ Φ(Lᵀ G) conj(L)⁻¹` (symmetrised by the user function) |
//! | triangular_solve | `dX = A⁻¹(dB - tri(dA) X)` | `gB = A⁻ᵀ G`, `gA = -tri(gB Xᵀ)` |
//! | det | `dd = d tr(A⁻¹ dA)` | `gA = g d A⁻ᵀ` |
//! | slogdet | `dl = Re tr(A⁻¹ dA)`, `ds = s · i Im tr(A⁻¹ dA)` | `gA = gl A⁻ᵀ` (real) |
//! | lu | `F = L⁻¹ Pᵀ dA U⁻¹`, `dL = L tril(F, -1)`, `dU = triu(F) U` | `gA = P L⁻ᵀ (tril(Lᵀ G_L, -1) + triu(G_U Uᵀ)) U⁻ᵀ` |
//! | qr | `S = dA R⁻¹`, `C = Qᴴ S`, `Ω = tril(C,-1) - tril(C,-1)ᴴ`, `dQ = Q(Ω - C) + S`, `dR = (C - Ω) R` | `M = Qᵀ G_Q - G_R Rᵀ`, `gA = (Q(tril(M - Mᵀ, -1) - M) + G_Q) R⁻ᵀ` |
//!
//! (`tri` keeps the triangle of `A` the solve reads; for complex QR, `Ω` also holds `i Im diag(C)`.)

mod api;
mod kernels;
mod ops;
mod rules;

pub use api::{Triangular, cholesky, det, lstsq, lu, qr, qr_full, slogdet, triangular_solve};
pub use ops::{Cholesky, Det, Lu, Qr, SlogDet, TriangularSolve};

use nabla_core::Backend;
use nabla_tensor::ExtensionRules;
use ops::{CHOLESKY, DET, LU, QR, SLOGDET, TRIANGULAR_SOLVE};

/// Adds the rules of this module's ops to `rules`.
pub(crate) fn register<B: Backend>(rules: ExtensionRules<B>) -> ExtensionRules<B> {
    rules
        .forward(CHOLESKY, rules::cholesky_forward::<B>)
        .reverse(CHOLESKY, rules::cholesky_reverse::<B>)
        .forward(TRIANGULAR_SOLVE, rules::triangular_solve_forward::<B>)
        .reverse(TRIANGULAR_SOLVE, rules::triangular_solve_reverse::<B>)
        .forward(DET, rules::det_forward::<B>)
        .reverse(DET, rules::det_reverse::<B>)
        .forward(SLOGDET, rules::slogdet_forward::<B>)
        .reverse(SLOGDET, rules::slogdet_reverse::<B>)
        .forward(LU, rules::lu_forward::<B>)
        .reverse(LU, rules::lu_reverse::<B>)
        .forward(QR, rules::qr_forward::<B>)
        .reverse(QR, rules::qr_reverse::<B>)
}
