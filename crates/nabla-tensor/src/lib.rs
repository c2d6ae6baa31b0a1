//! The user-facing tensor of nabla.
//!
//! [`Tensor<B>`] is an n-dimensional array on a backend `B` (chosen at compile time) with a runtime
//! [`DType`]. It offers every primitive of the op catalogue as a method, NumPy broadcasting, zero-copy
//! views, operators that return `Result`, and NumPy-like printing.
//!
//! ```
//! use nabla_tensor::Tensor;
//! use nabla_cpu::CpuBackend;
//! use nabla_core::DType;
//! let cpu = CpuBackend::new();
//! let a = Tensor::arange(0.0, 6.0, 1.0, DType::F32, &cpu)?.reshape([2, 3])?;
//! let b = a.t()?.matmul(&a)?; // [3, 3]
//! assert_eq!(b.shape(), &[3, 3]);
//! assert_eq!(b.sum_all()?.item::<f32>()?, 153.0);
//! # Ok::<(), nabla_core::Error>(())
//! ```
//!
//! # Complex numbers and derivatives
//!
//! complex64 and complex128 tensors are differentiable in every mode (eager and traced, reverse and
//! forward, to any order), under JAX's convention:
//!
//! - **Forward mode** (`jvp`) pushes a complex tangent `t` through a holomorphic op `f` as
//!   `f'(z)·t`; non-holomorphic ops use their real-linear tangent map (`conj`: `t ↦ conj(t)`, `real`:
//!   `t ↦ Re t`, `imag`: `t ↦ Im t`, `abs`: `t ↦ Re(conj(z)·t)/|z|`).
//! - **Reverse mode** (`vjp`, `backward`, `grad`) is the *linear transpose* of forward mode under
//!   the real pairing `⟨u, v⟩ = Re Σ uᵢ·vᵢ` (no conjugation), so that
//!   `Re Σ u·(J v) = Re Σ (Jᵀu)·v`. For holomorphic ops the cotangent is multiplied by `f'(z)` with no
//!   conjugate; a matrix product uses plain transposes (`dA = G Bᵀ`); a conjugate appears only through
//!   the non-holomorphic ops: `conj` transposes to `conj`, `real` to `u + 0i`, `imag` to `-i·u`,
//!   `abs` to `u·conj(z)/|z|` (0 at `z = 0`). Casting real to complex transposes to the real part of
//!   the cotangent, and complex to real (which keeps the real part) to `u + 0i`.
//! - **`grad` of a real loss** `L(z)` therefore returns `∂L/∂x − i ∂L/∂y` for `z = x + iy`: the
//!   *conjugate* of the steepest-ascent direction `∂L/∂x + i ∂L/∂y` (exactly what JAX returns; PyTorch
//!   returns the unconjugated one). Gradient descent on complex parameters steps along
//!   `-conj(grad)`. A complex output has no gradient without a cotangent: `backward`/`grad` fail and
//!   name the dtype (JAX requires `holomorphic=True`); `backward_with`/`vjp` with a cotangent of ones
//!   gives `f'(z)` for a holomorphic `f`.
//!
//! Worked example, checked against JAX 0.10.2 (`jax.grad(lambda z: abs(z)**2)(3+4j) == 6-8j`):
//! `L = |z|² = x² + y²` has `∂L/∂x = 6`, `∂L/∂y = 8` at `3 + 4i`, so `grad` is `6 − 8i`.
//!
//! ```
//! use nabla_tensor::{Tensor, grad, jvp, vjp};
//! use nabla_cpu::CpuBackend;
//! use num_complex::Complex64 as C;
//! let cpu = CpuBackend::new();
//! let z = Tensor::from_vec(vec![C::new(3.0, 4.0)], [], &cpu)?;
//! // A real loss of a complex input: the conjugate of dL/dx + i dL/dy.
//! let g = grad(|z: &Tensor<CpuBackend>| z.abs()?.square())(&z)?;
//! assert_eq!(g.item::<C>()?, C::new(6.0, -8.0));
//! // Re(z * conj(w)) for w = 2 + i: JAX gives 2 - 1i.
//! let w = Tensor::from_vec(vec![C::new(2.0, 1.0)], [], &cpu)?;
//! let g = grad(|z: &Tensor<CpuBackend>| z.mul(w.conj()?)?.real())(&z)?;
//! assert_eq!(g.item::<C>()?, C::new(2.0, -1.0));
//! // Holomorphic z^2: forward and reverse both multiply by f'(z) = 2z = 6 + 8i, no conjugate.
//! let one = Tensor::from_vec(vec![C::new(1.0, 0.0)], [], &cpu)?;
//! let (_, t) = jvp(|z: &Tensor<CpuBackend>| z.square(), &z, &one)?;
//! let (_, u) = vjp(|z: &Tensor<CpuBackend>| z.square(), &z, &one)?;
//! assert_eq!((t.item::<C>()?, u.item::<C>()?), (C::new(6.0, 8.0), C::new(6.0, 8.0)));
//! // A complex output is not a loss.
//! let err = grad(|z: &Tensor<CpuBackend>| z.square())(&z).unwrap_err();
//! assert!(err.to_string().contains("complex128"), "{err}");
//! # Ok::<(), nabla_core::Error>(())
//! ```
#![warn(missing_docs)]

mod autograd;
mod complex;
mod composite;
mod creation;
mod display;
mod elementwise;
mod fused_call;
mod fused_relu;
mod fused_rows;
mod index;
mod indexing;
mod linalg;
mod operand;
mod operators;
mod random_replay;
mod reduce;
mod shape_ops;
mod tensor;
mod trace;
mod vmap;

pub use autograd::{
    AdContext, AdContextBuilder, AnomalyGuard, BackwardOptions, CustomArgs, CustomFn,
    CustomForwardRule, CustomReverseRule, ElementCheck, ExtensionFamily, ExtensionRules,
    ForwardRule, GradCheckOptions, GradCheckReport, Gradients, InputCheck, JacobianBlocks,
    Linearized, NoGradGuard, ParallelBackward, Pullback, ReverseRule, RuleArgs, VarId,
    check_gradients, check_second_order, checkpoint, detect_anomaly, grad, grad_n, hessian,
    hessian_n, hvp, is_anomaly_detection_enabled, is_grad_enabled, is_recorded, jacfwd, jacfwd_n,
    jacrev, jacrev_n, jvp, jvp_n, linearize, linearize_n, no_grad, value_and_grad,
    value_and_grad_n, vjp, vjp_fn_n, vjp_n,
};
pub use composite::{EinsumPath, einsum_path};
pub use display::PrintOptions;
pub use index::{IndexOp, Indexer, Slice, s};
pub use nabla_core::{DType, Error, ExtensionCall, Primitive, PrimitiveKind, Result};
pub use operand::Operand;
pub use shape_ops::ReshapeDims;
pub use tensor::Tensor;
pub use trace::{
    CompileReport, GraphCompiler, GraphExecutor, IntoProgram, Node as TraceNode, Pass, PassReport,
    Program, RunStats, TraceOp, TraceOperand, TracedTensor, TracedValue, TracingBackend, ValueId,
    ValueInfo,
};
pub use vmap::{Vmap, VmapOutputs, vmap};
