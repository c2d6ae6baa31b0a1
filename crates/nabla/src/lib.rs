//! # nabla
//!
//! Tensors, automatic differentiation and deep learning in Rust. This facade re-exports the pieces most
//! programs need; `use nabla::prelude::*;` brings them into scope.
//!
//! ```
//! use nabla::prelude::*;
//! let cpu = CpuBackend::new();
//! let mut rng = Generator::new(0);
//! let x = Tensor::randn([4, 3], DType::F32, &mut rng, &cpu)?;
//! let w = Tensor::ones([3, 2], DType::F32, &cpu)?;
//! let y = x.matmul(&w)?.maximum(0)?; // a dense layer with ReLU
//! assert_eq!(y.shape(), &[4, 2]);
//! println!("{y}");
//! # Ok::<(), nabla::Error>(())
//! ```
#![warn(missing_docs)]

pub use nabla_core as core;
pub use nabla_core::{
    ArgReduceOp, Backend, BinaryOp, CompareOp, Conv2dParams, DType, Device, Distribution, Element,
    Error, ExtensionOp, Generator, HostData, Layout, MemoryStats, MemoryTracked, ReduceOp, Result,
    Scalar, Shape, UnaryOp,
};
pub use nabla_cpu as cpu;
pub use nabla_cpu::CpuBackend;
pub use nabla_data as data;
pub use nabla_fft as fft;
pub use nabla_linalg as linalg;
pub use nabla_nn as nn;
pub use nabla_special as special;
/// Scalar automatic differentiation (`nabla-scalar`): dual numbers, the reverse-mode tape, static-shape
/// vectors and matrices, and `#[differentiate]`, whose generated code refers to this module.
///
/// ```
/// use nabla::scalar::differentiate;
///
/// #[differentiate]
/// fn f(x: f64, y: f64) -> f64 {
///     x * y + x.sin()
/// }
/// assert_eq!(f_grad(0.0, 2.0), (0.0, [3.0, 0.0]));
/// ```
pub mod scalar {
    pub use nabla_derive::differentiate;
    pub use nabla_scalar::*;
}
/// The backend chosen at run time (`nabla-any`): one tensor type for the CPU and (with the `wgpu`
/// feature) wgpu devices, with differentiable moves between them.
pub use nabla_any::{AnyBackend, AnyStorage};
pub use nabla_tensor::{
    AdContext, AdContextBuilder, AnomalyGuard, CompileReport, CustomArgs, CustomFn, EinsumPath,
    ExtensionFamily, ExtensionRules, GraphCompiler, GraphExecutor, IntoProgram, Pass, Program,
    RuleArgs, RunStats, TracedTensor, TracingBackend, Vmap, VmapOutputs, checkpoint,
    detect_anomaly, einsum_path, is_anomaly_detection_enabled, vmap,
};
pub use nabla_tensor::{
    BackwardOptions, ElementCheck, GradCheckOptions, GradCheckReport, Gradients, IndexOp, Indexer,
    InputCheck, JacobianBlocks, Linearized, NoGradGuard, Operand, ParallelBackward, PrintOptions,
    ReshapeDims, Slice, Tensor, check_gradients, check_second_order, grad, grad_n, hessian,
    hessian_n, hvp, is_grad_enabled, jacfwd, jacfwd_n, jacrev, jacrev_n, jvp, jvp_n, linearize,
    linearize_n, no_grad, s, value_and_grad, value_and_grad_n, vjp, vjp_n,
};
/// The GPU backend on wgpu (`nabla-wgpu`), with the `wgpu` feature.
#[cfg(feature = "wgpu")]
pub use nabla_wgpu as wgpu;
#[cfg(feature = "wgpu")]
pub use nabla_wgpu::WgpuBackend;

/// A tensor on the CPU backend.
pub type CpuTensor = Tensor<CpuBackend>;

/// A tensor on the wgpu backend (with the `wgpu` feature).
#[cfg(feature = "wgpu")]
pub type WgpuTensor = Tensor<WgpuBackend>;

/// The names most programs use: `use nabla::prelude::*;`.
pub mod prelude {
    pub use crate::{
        AdContext, Backend, BackwardOptions, Conv2dParams, CpuBackend, CpuTensor, DType, Error,
        Generator, GradCheckOptions, Gradients, IndexOp, Result, Scalar, Shape, Tensor,
        TracedTensor, TracingBackend, check_gradients, grad, grad_n, hessian, hvp, jacfwd, jacrev,
        jvp, no_grad, value_and_grad, vjp, vmap,
    };
}

/// The README's tour, compiled and run as a doctest so it stays true.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
