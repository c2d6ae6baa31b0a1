//! `sum_to`: the reverse of broadcasting.

use crate::Tensor;
use nabla_core::{Backend, Error, Result, Shape};

impl<B: Backend> Tensor<B> {
    /// Sums `self` down to `shape`, which must broadcast to `self`'s shape: the transpose of
    /// [`Tensor::broadcast_to`], used to undo broadcasting in gradients.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend; use nabla_core::DType;
    /// let g = Tensor::ones([2, 3, 4], DType::F32, &CpuBackend::new())?;
    /// let s = g.sum_to([3, 1])?;
    /// assert_eq!(s.shape(), &[3, 1]);
    /// assert_eq!(s.to_vec::<f32>()?, vec![8.0; 3]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn sum_to(&self, shape: impl Into<Shape>) -> Result<Tensor<B>> {
        let shape = shape.into();
        let target = shape.dims();
        if target == self.shape() {
            return Ok(self.clone());
        }
        let bad = || {
            Error::shapes("sum_to", self.shape(), target)
                .with_hint("the target shape must broadcast to the tensor's shape")
        };
        if target.len() > self.rank() {
            return Err(bad());
        }
        let lead = self.rank() - target.len();
        let mut axes: Vec<isize> = (0..lead as isize).collect();
        for (i, &t) in target.iter().enumerate() {
            let d = self.shape()[lead + i];
            if t == d {
                continue;
            }
            if t != 1 {
                return Err(bad());
            }
            axes.push((lead + i) as isize);
        }
        self.sum(&axes, true)?.reshape(target.to_vec())
    }
}
