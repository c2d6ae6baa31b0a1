//! Composite ops built only from differentiable primitives: activations, softmax and its relatives,
//! statistics and normalisation.
//!
//! Nothing here has a derivative rule of its own. Each method is ordinary tensor code over primitives
//! that are recorded, so every composite is differentiable to any order, on every backend, for free.
//! Numerical stability is obtained by the choice of formula (subtracting a detached maximum, selecting
//! between two safe branches, ...), never by a special kernel. The one exception is speed: on the CPU,
//! softmax along the last axis and layer norm over trailing axes hand over to the fused row ops of
//! [`crate::fused_rows`], which compute the same formulas in one pass per row. The formulas follow JAX's
//! (`jax.nn`, `jax.numpy`) so that values and derivatives agree with it, including at the points
//! where a function is not differentiable.

mod activations;
mod diagonal;
mod einsum;
mod normalization;
mod softmax;

pub use einsum::{EinsumPath, einsum_path};

use crate::Tensor;
use nabla_core::{Backend, Error, Result, checked_numel, normalize_axes};

impl<B: Backend> Tensor<B> {
    /// Fails unless `self` holds float32 or float64 values (the dtypes composites compute in; a
    /// half-precision input runs a composite in float32 first, [`Tensor::half_in_f32`]).
    pub(crate) fn check_real_float(&self, op: &'static str) -> Result<()> {
        let dt = self.dtype();
        if dt.is_float() && !dt.is_half() {
            return Ok(());
        }
        Err(Error::dtype(op, dt).with_hint(format!(
            "{op} needs a float32 or float64 tensor; cast it to one first"
        )))
    }

    /// The number of elements reduced over `axes` (empty = all axes), checking the axes.
    pub(crate) fn reduced_count(&self, op: &'static str, axes: &[isize]) -> Result<usize> {
        if axes.is_empty() {
            return Ok(self.numel());
        }
        let dims: Vec<usize> = normalize_axes(op, axes, self.rank())?
            .iter()
            .map(|&a| self.shape()[a])
            .collect();
        // Other axes may be empty, so the reduced ones alone may overflow.
        checked_numel(op, &dims)
    }
}
