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
//! let y = x.matmul(&w)?.relu_like()?;
//! assert_eq!(y.shape(), &[4, 2]);
//! # Ok::<(), nabla::Error>(())
//! # trait ReluLike: Sized { fn relu_like(&self) -> nabla::Result<Self>; }
//! # impl ReluLike for Tensor<CpuBackend> { fn relu_like(&self) -> nabla::Result<Self> { self.maximum(0) } }
//! ```
#![warn(missing_docs)]

pub use nabla_core as core;
pub use nabla_core::{
    ArgReduceOp, Backend, BinaryOp, CompareOp, Conv2dParams, DType, Device, Distribution, Element,
    Error, Generator, HostData, Layout, ReduceOp, Result, Scalar, Shape, UnaryOp,
};
pub use nabla_cpu as cpu;
pub use nabla_cpu::CpuBackend;
pub use nabla_tensor::{Operand, PrintOptions, ReshapeDims, Tensor};

/// A tensor on the CPU backend.
pub type CpuTensor = Tensor<CpuBackend>;

/// The names most programs use: `use nabla::prelude::*;`.
pub mod prelude {
    pub use crate::{
        Backend, Conv2dParams, CpuBackend, CpuTensor, DType, Error, Generator, Result, Scalar,
        Shape, Tensor,
    };
}
