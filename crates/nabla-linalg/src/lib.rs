//! Owns the `linalg` extension family: solvers, factorisations, spectral ops, kernels and rules.
//! Must not depend on a concrete backend: only `nabla-core` and `nabla-tensor` (kernels on faer).
//!
//! The layering of the crates, and the rules above, are described in the architecture chapter of
//! the book, `docs/src/architecture.md`.
//!
//! Linear algebra for nabla, built as an **extension op family**: the worked example of how a
//! crate outside the core adds ops with their kernels and derivative rules.
//!
//! The family works on batches of matrices `[..., m, n]` of f32, f64, complex64 and complex128:
//! - [`solve`] (`A⁻¹B`), [`inv`] (`A⁻¹`) and [`logabsdet`] (`log |det A|`);
//! - factorisations and what is built on them: [`cholesky`], [`triangular_solve`], [`det`],
//!   [`slogdet`], [`lu`], [`qr`], [`qr_full`], [`lstsq`] (table of shapes and rules in the
//!   `factor` module);
//! - spectral ops: [`eigh`], [`svd`], [`svdvals`], [`eigvals`], [`eig`], [`pinv`],
//!   [`matrix_norm`], [`matrix_exp`] (table in the `spectral` module).
//! - composed of those and core ops: [`vector_norm`], [`cross`], [`vecdot`], [`matrix_power`],
//!   [`multi_dot`], [`cond`], [`eigvalsh`], [`cholesky_upper`], [`pinvh`], [`tensorsolve`],
//!   [`tensorinv`].
//!
//! Every op has a forward and a reverse rule, correct for complex inputs under JAX's convention
//! (see `nabla_tensor`'s docs on complex numbers). Ops with several results (QR, SVD, eigh, LU,
//! slogdet) compute one packed tensor and return views of it, so their derivatives flow through
//! one graph node; [`solve`] also keeps `A`'s LU factors in its packed output, so its derivatives
//! solve with them instead of factoring `A` again. Singular input, a matrix that is not positive
//! definite and non-finite values are errors naming the op and the matrix of the batch; repeated
//! eigenvalues or singular values give finite derivatives (exact for losses that do not depend on
//! the basis chosen inside a degenerate subspace), as documented on each op.
//!
//! # Writing an extension family
//! 1. **Ops.** One type per op implementing [`nabla_core::ExtensionOp`]: a namespaced name
//!    (`"linalg.solve"`), `output_spec` (validates dtypes and shapes, gives the output's), and a
//!    `host_kernel` on contiguous host data (see `ops.rs`, `kernels.rs`). The CPU backend runs the
//!    host kernel on the tensors' memory; other backends run it through a host round trip unless
//!    their `Backend::extension` has a native kernel for the op's type.
//! 2. **User functions.** Thin functions calling [`Tensor::apply_family_op`] with the family type
//!    ([`Linalg`]), generic over the backend, so they work eagerly, on traced tensors (they record
//!    a program node that [`nabla_tensor::GraphExecutor`] runs) and under autodiff (they record a
//!    graph node with the family's rules bound).
//! 3. **Rules.** An [`nabla_tensor::ExtensionFamily`] whose `rules` returns a forward and a
//!    reverse rule per op, written in differentiable tensor ops (here they call the family's own
//!    ops, so derivatives of every order exist). They travel with each recorded op, so every
//!    transform (`backward`, `grad`, `jvp`, `hessian`, `jacrev`, an `AdContext`) differentiates
//!    the family with no setup; an `AdContext` may override them:
//!
//! ```
//! use nabla_tensor::{AdContext, Tensor};
//! use nabla_cpu::CpuBackend;
//! let cpu = CpuBackend::new();
//! let a = Tensor::var("a", Tensor::from_vec(vec![2.0f64, 1.0, 1.0, 3.0], [2, 2], &cpu)?)?;
//! let l = nabla_linalg::logabsdet(&a)?; // log 5
//! assert!((l.item::<f64>()? - 5f64.ln()).abs() < 1e-12);
//! let want = [0.6, -0.2, -0.2, 0.4]; // A⁻ᵀ
//! let h = AdContext::new().grad(&l, &a)?.to_vec::<f64>()?; // keeps the graph
//! let g = l.backward()?.get(&a).unwrap().to_vec::<f64>()?; // frees it
//! for ((x, y), w) in g.iter().zip(&h).zip(want) {
//!     assert!((x - w).abs() < 1e-12 && (y - w).abs() < 1e-12);
//! }
//! // The second derivative exists too: d²/da00² log|det A| = -(A⁻¹)00².
//! let d2 = nabla_tensor::hessian(|a: &Tensor<CpuBackend>| nabla_linalg::logabsdet(a))(&a.detach())?;
//! assert!((d2.to_vec::<f64>()?[0] + 0.36).abs() < 1e-12);
//! # Ok::<(), nabla_core::Error>(())
//! ```
#![warn(missing_docs)]

mod common;
mod composite;
mod factor;
mod kernels;
mod ops;
mod rules;
mod spectral;

pub use ops::{Inverse, LogAbsDet, Solve};
pub use rules::{Linalg, rules};

use nabla_core::{Backend, Result};
use nabla_tensor::Tensor;
use std::sync::Arc;

/// `A⁻¹ B` for `a` of shape `[..., n, n]` and `b` of shape `[..., n, k]` (matrices, the batch
/// dimensions broadcast against each other) or `[n]` (one vector, the result `[..., n]`). As in NumPy 2
/// (`numpy.linalg.solve`), `b` is a vector only when it is 1-D, whatever the rank of `a`: with `a`
/// `[2, 3, 3]`, `b` `[3, 2]` is one matrix (the result is `[2, 3, 2]`), and with `a` `[3, 3, 3]`,
/// `b` `[3, 3]` is one matrix broadcast over the batch (`[3, 3, 3]`). A batch of vectors `[..., n]` is
/// solved as `solve(a, &b.unsqueeze(-1)?)?.squeeze(-1)`.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend; use nabla_core::DType;
/// let cpu = CpuBackend::new();
/// let a = Tensor::from_vec(vec![2.0f64, 0.0, 0.0, 4.0], [2, 2], &cpu)?;
/// let b = Tensor::from_vec(vec![2.0f64, 8.0], [2, 1], &cpu)?;
/// assert_eq!(nabla_linalg::solve(&a, &b)?.to_vec::<f64>()?, vec![1.0, 2.0]);
/// // b [3, 3] against a batch [3, 3, 3] is a matrix, not three vectors.
/// let batch = Tensor::eye(3, DType::F64, &cpu)?.broadcast_to([3, 3, 3])?;
/// let b = Tensor::ones([3, 3], DType::F64, &cpu)?;
/// assert_eq!(nabla_linalg::solve(&batch, &b)?.shape(), &[3, 3, 3]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn solve<B: Backend>(a: &Tensor<B>, b: &Tensor<B>) -> Result<Tensor<B>> {
    let (a, b, vector) = composite::broadcast_rhs("linalg.solve", a, b)?;
    // The op validates the shapes; its output also holds A's factors, kept for the derivatives.
    let packed = Tensor::apply_family_op::<crate::Linalg>(Arc::new(Solve), &[&a, &b])?;
    let x = ops::solve_packing(b.shape())
        .unpack(&packed)?
        .into_iter()
        .next()
        .ok_or_else(|| nabla_core::Error::invalid("linalg.solve", "expected X"))?;
    if vector { x.squeeze(-1) } else { Ok(x) }
}

/// `A⁻¹` for `a` of shape `[..., n, n]`.
pub fn inv<B: Backend>(a: &Tensor<B>) -> Result<Tensor<B>> {
    Tensor::apply_family_op::<crate::Linalg>(Arc::new(Inverse), &[a])
}

/// `log |det A|` for `a` of shape `[..., n, n]`, of shape `[...]`.
pub fn logabsdet<B: Backend>(a: &Tensor<B>) -> Result<Tensor<B>> {
    Tensor::apply_family_op::<crate::Linalg>(Arc::new(LogAbsDet), &[a])
}

pub use composite::{
    cholesky_upper, cond, cross, eigvalsh, matrix_power, multi_dot, pinvh, tensorinv, tensorsolve,
    vecdot, vector_norm,
};

// --- factor ops ---
pub use factor::{
    Cholesky, Det, Lu, Qr, SlogDet, Triangular, TriangularSolve, cholesky, det, lstsq, lu, qr,
    qr_full, slogdet, triangular_solve,
};

// --- spectral ops ---
pub use spectral::{
    Eig, EigVals, Eigh, MatrixExp, NormOrd, Svd, SvdVals, eig, eigh, eigvals, matrix_exp,
    matrix_norm, pinv, svd, svdvals,
};
