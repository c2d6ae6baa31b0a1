//! Owns the dtypes, shapes, strided layouts, error type, primitive catalogue and `Backend` trait.
//! Must not depend on any other nabla crate: every other crate builds on this one.
//!
//! Core types of nabla: runtime dtypes and their element types, shapes, strided layouts, the error
//! type, the primitive op catalogue and the [`Backend`] trait that devices implement.
//!
//! Users normally reach these through the `nabla` facade crate. The layering of the crates, and
//! the rules above, are described in the architecture chapter of the book,
//! `docs/src/architecture.md`.
#![warn(missing_docs)]

mod backend;
mod cast;
mod dtype;
mod element;
mod error;
mod extension;
pub mod fast_path;
mod fused;
mod fused_builder;
mod host_loop;
mod layout;
mod limits;
mod memory;
mod ops;
mod primitive;
mod profile;
mod random;
mod rng;
mod scalar;
mod shape;
mod wrapper;

pub use backend::{Backend, Device, round_operand};
pub use cast::CastFrom;
pub use dtype::DType;
pub use element::{Element, HostData, HostSlice};
pub use error::{Error, Result};
pub use extension::{
    ExtensionOp, HostAllocator, HostView, OpIdentity, OutputSpec, SystemAllocator,
};
pub use fast_path::{FastKernels, FastPath, FastPathKernels, FastPathOp};
pub use fused::{FusedKernel, FusedOp, FusedStep};
pub use fused_builder::{FusedBuilder, KernelValue};
pub use host_loop::HostLoop;
pub use layout::{Layout, Offsets};
pub use limits::{
    check_allocation, is_allocation_limit_error, max_allocation_bytes, set_max_allocation_bytes,
    with_allocation_limit,
};
pub use memory::{MemoryCounter, MemoryStats, MemoryTracked, TrackedStorage};
pub use ops::{
    ArgReduceOp, BinaryOp, CompareOp, Conv2dParams, Distribution, Pool2dParams, Precision,
    ReduceOp, UnaryOp,
};
pub use primitive::{ExtensionCall, IdentityWords, Outputs, Primitive, PrimitiveKind};
pub use profile::{KernelTime, Profile, format_profile};
pub use random::{Fill, InOrder, random_host};
pub use rng::{Generator, RngKey, philox4x32_10};
pub use scalar::Scalar;
pub use shape::{Shape, checked_numel, contiguous_strides, normalize_axes, normalize_axis};
pub use wrapper::{FusedCall, Wrapped, Wrapper};

#[doc(hidden)]
pub use half;
#[doc(hidden)]
pub use num_complex;
