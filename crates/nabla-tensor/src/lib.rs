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
#![warn(missing_docs)]

mod autograd;
mod composite;
mod creation;
mod display;
mod elementwise;
mod fused_call;
mod index;
mod indexing;
mod linalg;
mod operand;
mod operators;
mod reduce;
mod shape_ops;
mod tensor;
mod trace;

pub use autograd::{
    AdContext, AdContextBuilder, BackwardOptions, ElementCheck, ExtensionRules, ForwardRule,
    GradCheckOptions, GradCheckReport, Gradients, InputCheck, NoGradGuard, ReverseRule, RuleArgs,
    check_gradients, check_second_order, grad, grad_n, hessian, hvp, is_grad_enabled, jacfwd,
    jacrev, jvp, jvp_n, no_grad, value_and_grad, value_and_grad_n, vjp, vjp_n,
};
pub use display::PrintOptions;
pub use index::{IndexOp, Indexer, Slice, s};
pub use nabla_core::{DType, Error, Result};
pub use operand::Operand;
pub use shape_ops::ReshapeDims;
pub use tensor::Tensor;
pub use trace::{
    CompileReport, ExtensionCall, GraphCompiler, GraphExecutor, IntoProgram, Node as TraceNode,
    Pass, PassReport, Program, RunStats, TraceOp, TraceOperand, TracedTensor, TracedValue,
    TracingBackend, ValueId, ValueInfo,
};
