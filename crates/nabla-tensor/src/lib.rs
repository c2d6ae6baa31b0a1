//! Owns [`Tensor<B>`] and all it does: ops, eager and traced autodiff, `vmap`, the graph compiler.
//! Must not name a concrete backend: its only nabla dependency is `nabla-core` (CPU in tests).
//!
//! # Modules
//!
//! The tensor type and its constructors:
//! - `tensor`: [`Tensor`] itself, a backend buffer plus a strided layout and a dtype; host
//!   transfers (`from_vec`, `to_vec`, `item`), `cast`, `contiguous`, `to_backend`.
//! - `creation`: filled, ranged, identity and random tensors (`zeros`, `full`, `arange`,
//!   `linspace`, `eye`, `rand`, `randn`, `bernoulli`, ...).
//! - `operand`: [`Operand`], the right-hand side of a binary op: a tensor or a plain number.
//! - `operators`: `+`, `-`, `*`, `/` and negation on references, returning `Result`
//!   (`(&a + &b)?`).
//! - `complex`: `complex`, `polar` and `angle`, composed from primitives (no rules of their own).
//!
//! Primitive families: the methods that run the primitives of the `nabla-core` catalogue and
//! record them; every family's rules (what recording saves, reverse, forward and batching) are in
//! `rules/`, one file per family (`elementwise`, `reduce`, `movement`, `indexing`, `linalg`), with
//! the tables that route a primitive to them (`saves` and `vjp` in `rules/mod.rs`, `jvp` in
//! `forward.rs`, `batch` in `batch.rs`).
//! - `elementwise`: unary and binary math, comparisons, `where_` and `clamp`, with NumPy
//!   broadcasting.
//! - `reduce`: sums, products, extrema, `argmax`/`argmin`, means and `cumsum`.
//!
//! Views and indexing:
//! - `shape_ops`: shape and movement ops (`reshape`, `permute`, `t`, `broadcast_to`, `squeeze`,
//!   `narrow`, `flip`, `split`, ...), all zero-copy views except `pad`, `cat`, `stack` and copying
//!   reshapes.
//! - `index`: *basic* indexing by position, `t.i((.., 1..3, 2))` with integers, Rust ranges, [`s`]
//!   for steps and [`Indexer::NewAxis`]; the positions are known from the indexer alone, so the
//!   result is always a zero-copy view of the same buffer.
//! - `indexing`: ops driven by index *tensors* (data-dependent positions): `gather`,
//!   `index_select`, `scatter_add`, `index_add`, `one_hot`, `sort`, `argsort`, `topk` and
//!   `max_pool2d`; their results are new buffers, never views.
//!
//! Linear products and convolution:
//! - `linalg`: `matmul` (NumPy semantics, broadcast batch dimensions) and `conv2d` with its two
//!   gradient ops `conv2d_input_grad` and `conv2d_weight_grad`. Solvers and factorisations are not
//!   here: they are the extension family of `nabla-linalg`.
//!
//! Fast paths (the kernels are the backend's, [`nabla_core::fast_path`]; this crate holds no kernel
//! and no `unsafe`):
//! - `fused_rows/`: softmax and layer norm over the trailing axes as one pass per row, and their
//!   vector-Jacobian products, as an extension family with its own rules; used for `f32` and `f64`
//!   on a backend with fast-path kernels ([`nabla_core::Backend::fast_path_kernels`], the CPU's).
//! - `fused_relu`: ReLU and its vector-Jacobian product in one pass each, without the boolean mask
//!   of the composite, on the same backends.
//! - `fused_call`: `Tensor::fused` and `fused_many`, which run a hand-built fused elementwise
//!   kernel on tensors in one pass, optionally in place.
//!
//! Automatic differentiation:
//! - `autograd/`: the recorded graph and the reverse pass (`backward`, optionally on two threads),
//!   forward mode (`jvp`, `jacfwd`, `hessian`, `hvp`), the closure transforms (`grad`, `vjp`,
//!   `jacrev`, `linearize`, ...), [`AdContext`], custom rules ([`CustomFn`]) and [`checkpoint`],
//!   extension families' rules, `no_grad`, anomaly detection, gradient checking, and the
//!   per-primitive rules in `rules/`.
//! - `random_replay`: a function run again (a checkpointed block, a custom function's body) draws
//!   exactly the random numbers of its first run, dropout masks included.
//!
//! Composites:
//! - `composite/`: ops written only in differentiable primitives, with no rules of their own:
//!   activations, softmax and log-sum-exp, variance and normalisation, diagonals and triangles,
//!   and `einsum` (planned by [`einsum_path`]).
//!
//! Batching:
//! - `vmap/`: [`vmap()`] traces a function of one example and replays it on a whole batch through
//!   one batching rule per primitive (`rules.rs`); `view.rs` re-expresses traced views on batched
//!   values.
//!
//! Tracing and the compiler:
//! - `trace/`: [`TracingBackend`] records tensor code as a [`Program`] instead of computing;
//!   [`GraphExecutor`] replays a program on a real backend; `compiler/` holds the passes of
//!   [`GraphCompiler`] (common-subexpression and dead-code elimination, constant folding,
//!   algebraic simplification, elementwise fusion, product reassociation, buffer reuse).
//!
//! Printing:
//! - `display`: NumPy/PyTorch-style printing of tensors, configured by [`PrintOptions`].
//!
//! The layering of the crates, and the rules above, are described in the architecture chapter of
//! the book, `docs/src/architecture.md`.
//!
//! # The tensor
//!
//! The user-facing tensor of nabla.
//!
//! [`Tensor<B>`] is an n-dimensional array on a backend `B` (chosen at compile time) with a
//! runtime [`DType`]. It offers every primitive of the op catalogue as a method, NumPy
//! broadcasting, zero-copy views, operators that return `Result`, and NumPy-like printing.
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
//! complex64 and complex128 tensors are differentiable in every mode (eager and traced, reverse
//! and forward, to any order), under JAX's convention:
//!
//! - **Forward mode** (`jvp`) pushes a complex tangent `t` through a holomorphic op `f` as
//!   `f'(z)·t`; non-holomorphic ops use their real-linear tangent map (`conj`: `t ↦ conj(t)`,
//!   `real`: `t ↦ Re t`, `imag`: `t ↦ Im t`, `abs`: `t ↦ Re(conj(z)·t)/|z|`).
//! - **Reverse mode** (`vjp`, `backward`, `grad`) is the *linear transpose* of forward mode under
//!   the real pairing `⟨u, v⟩ = Re Σ uᵢ·vᵢ` (no conjugation), so that
//!   `Re Σ u·(J v) = Re Σ (Jᵀu)·v`. For holomorphic ops the cotangent is multiplied by `f'(z)`
//!   with no conjugate; a matrix product uses plain transposes (`dA = G Bᵀ`); a conjugate appears
//!   only through the non-holomorphic ops: `conj` transposes to `conj`, `real` to `u + 0i`, `imag`
//!   to `-i·u`, `abs` to `u·conj(z)/|z|` (0 at `z = 0`). Casting real to complex transposes to the
//!   real part of the cotangent, and complex to real (which keeps the real part) to `u + 0i`.
//! - **`grad` of a real loss** `L(z)` therefore returns `∂L/∂x − i ∂L/∂y` for `z = x + iy`: the
//!   *conjugate* of the steepest-ascent direction `∂L/∂x + i ∂L/∂y` (exactly what JAX returns;
//!   PyTorch returns the unconjugated one). Gradient descent on complex parameters steps along
//!   `-conj(grad)`. A complex output has no gradient without a cotangent: `backward`/`grad` fail
//!   and name the dtype (JAX requires `holomorphic=True`); `backward_with`/`vjp` with a cotangent
//!   of ones gives `f'(z)` for a holomorphic `f`.
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
#![forbid(unsafe_code)]

mod autocast;
mod autograd;
mod complex;
mod composite;
mod creation;
mod display;
mod elementwise;
mod fused_call;
mod fused_relu;
mod fused_rows;
mod half;
mod index;
mod indexing;
mod linalg;
mod operand;
mod operators;
mod random_replay;
mod reduce;
mod rules;
mod shape_ops;
mod tensor;
mod trace;
mod vmap;

pub use autocast::{
    AutocastGuard, autocast, autocast_conv_params, autocast_disabled, autocast_dtype,
    autocast_precision, check_autocast_dtype,
};
pub use autograd::{
    AdContext, AdContextBuilder, AnomalyGuard, BackwardOptions, CustomArgs, CustomFn,
    CustomForwardRule, CustomReverseRule, ElementCheck, ExtensionFamily, ExtensionRules,
    ForwardRule, GradCheckOptions, GradCheckReport, Gradients, InputCheck, JacobianBlocks,
    Linearized, NoGradGuard, ParallelBackward, Pullback, ReverseRule, RuleArgs, VarId,
    check_gradients, check_second_order, checkpoint, detect_anomaly, grad, grad_n, hessian,
    hessian_n, hvp, is_anomaly_detection_enabled, is_grad_enabled, is_recorded, jacfwd, jacfwd_n,
    jacrev, jacrev_n, jvp, jvp_n, linearize, linearize_n, no_grad, set_grad_enabled,
    value_and_grad, value_and_grad_n, vjp, vjp_fn_n, vjp_n,
};
pub use composite::{EinsumPath, einsum_path};
pub use display::PrintOptions;
pub use index::{IndexOp, Indexer, Slice, s};
pub use nabla_core::Precision;
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
