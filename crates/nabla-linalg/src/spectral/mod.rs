//! Spectral ops and the ops built on them: eigh, SVD, eigenvalues of general matrices, pinv, matrix
//! norms, matrix exponential.
//!
//! All take batches `[..., m, n]` of `f32`, `f64`, `complex64` or `complex128` matrices. Ops with
//! several results pack them into one output (see `crate::common`); the user functions return views
//! of it.
//!
//! | function | op | results | forward / reverse rule |
//! |---|---|---|---|
//! | [`eigh`](crate::eigh) | `linalg.eigh` | `w [..., n]` ascending (real), `V [..., n, n]`; the user function symmetrises the input, the op reads its lower triangle | `dw = diag(Vᴴ dA V)`, `dV = V (F ⊙ Vᴴ dA V)`, `Fᵢⱼ = 1/(wⱼ − wᵢ)`, on the Hermitian part of `dA` / its transpose |
//! | [`svd`](crate::svd) | `linalg.svd` | `U [..., m, k]`, `S [..., k]` descending (real), `Vh [..., k, n]` (full: `m x m`, `n x n`) | JAX's SVD JVP with `Fᵢⱼ = 1/(sⱼ² − sᵢ²)` / its linear transpose; full non-square: reverse mode drops the extra vectors' cotangents (PyTorch), forward mode is an error |
//! | [`svdvals`](crate::svdvals) | `linalg.svdvals` | `S [..., k]` (real dtype) | `ds = real(diag(Uᴴ dA V))` / `Ū diag(g) V̄h` |
//! | [`matrix_exp`](crate::matrix_exp) | `linalg.matrix_exp` | `exp(A) [..., n, n]` | `L(A, E)` = top-right block of `exp([[A, E], [0, A]])` / `L(Aᵀ, G)` |
//! | [`eigvals`](crate::eigvals) | `linalg.eigvals` | `λ [..., n]` complex, Schur order | `dλ = diag(V⁻¹ dA V)` / `V⁻ᵀ diag(g) Vᵀ` (real part for real input) |
//! | [`eig`](crate::eig) | `linalg.eig` | `w [..., n]`, `V [..., n, n]` complex, unit columns | `dλ = diag(M)`, `dV = V (F ⊙ M) − V diag(Re diag(VᴴV (F ⊙ M)))`, `M = V⁻¹ dA V`, `Fᵢⱼ = 1/(λⱼ − λᵢ)` / its linear transpose |
//! | [`pinv`](crate::pinv) | composed | `A⁺ [..., n, m]`, cutoff `rcond·max(s)` | through `svd` |
//! | [`matrix_norm`](crate::matrix_norm) | composed | `[...]`, ord fro, nuc, ±2, ±1, ±inf | through core ops and `svdvals` |
//!
//! Degenerate input: a NaN or infinity in the input is an error naming the op, the matrix of the
//! batch and the position; so is a matrix exponential that overflows. In derivatives, repeated
//! eigenvalues or singular values (within `tol = n·ε·max|λ|`) drop their `1/gap` terms (set to 0)
//! and singular values `≤ tol` get `1/s = 0`: the results are finite, and exact for functions that do
//! not depend on the basis chosen inside a degenerate subspace.

mod api;
mod expm;
mod kernels;
mod ops;
mod rules;

pub use api::{NormOrd, eig, eigh, eigvals, matrix_exp, matrix_norm, pinv, svd, svdvals};
pub use ops::{Eig, EigVals, Eigh, MatrixExp, Svd, SvdVals};

use nabla_core::Backend;
use nabla_tensor::ExtensionRules;

/// Adds the rules of this module's ops to `rules`.
pub(crate) fn register<B: Backend>(rules: ExtensionRules<B>) -> ExtensionRules<B> {
    rules::register(rules)
}
