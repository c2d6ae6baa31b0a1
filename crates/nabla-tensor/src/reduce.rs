//! Reductions: sums, products, extrema, their arguments, means and cumulative sums.

use crate::Tensor;
use nabla_core::{
    ArgReduceOp, Backend, DType, Error, Primitive, ReduceOp, Result, normalize_axes, normalize_axis,
};

impl<B: Backend> Tensor<B> {
    /// Reduces over `axes` (negative allowed; empty means all axes), keeping reduced axes as size 1 when
    /// `keepdims`.
    pub fn reduce(&self, op: ReduceOp, axes: &[isize], keepdims: bool) -> Result<Self> {
        if let Some(out) = self.half_in_f32(|x| x.reduce(op, axes, keepdims)) {
            return out;
        }
        let axes = if axes.is_empty() {
            (0..self.rank()).collect()
        } else {
            normalize_axes(op.name(), axes, self.rank())?
        };
        // Bool sums and products count in int64, as NumPy does.
        let x = if self.dtype().is_bool() && matches!(op, ReduceOp::Sum | ReduceOp::Prod) {
            self.cast(DType::I64)?
        } else {
            self.clone()
        };
        if !op.supports(x.dtype()) {
            return Err(Error::dtype(op.name(), x.dtype()));
        }
        if matches!(op, ReduceOp::Max | ReduceOp::Min) && axes.iter().any(|&a| x.shape()[a] == 0) {
            return Err(Error::invalid(
                op.name(),
                format!(
                    "zero-size reduction over axes {axes:?} of shape {:?} has no identity",
                    x.shape()
                ),
            ));
        }
        let mut kept: Vec<usize> = x.shape().to_vec();
        for &a in &axes {
            kept[a] = 1;
        }
        let reduce = Primitive::Reduce {
            op,
            axes: axes.clone(),
        };
        let out = Tensor::run_primitive(x.backend(), reduce, &[&x], &kept)?;
        if keepdims {
            return Ok(out);
        }
        let dims: Vec<usize> = kept
            .iter()
            .enumerate()
            .filter(|(i, _)| !axes.contains(i))
            .map(|(_, &d)| d)
            .collect();
        out.reshape(dims)
    }

    /// Sum over `axes` (empty = all).
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2], &CpuBackend::new())?;
    /// assert_eq!(x.sum(&[0], false)?.to_vec::<f32>()?, vec![4.0, 6.0]);
    /// assert_eq!(x.sum(&[-1], true)?.shape(), &[2, 1]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn sum(&self, axes: &[isize], keepdims: bool) -> Result<Self> {
        self.reduce(ReduceOp::Sum, axes, keepdims)
    }

    /// Sum of all elements (rank 0).
    pub fn sum_all(&self) -> Result<Self> {
        self.reduce(ReduceOp::Sum, &[], false)
    }

    /// Product over `axes` (empty = all).
    pub fn prod(&self, axes: &[isize], keepdims: bool) -> Result<Self> {
        self.reduce(ReduceOp::Prod, axes, keepdims)
    }

    /// Maximum over `axes` (empty = all); NaN propagates.
    pub fn max(&self, axes: &[isize], keepdims: bool) -> Result<Self> {
        self.reduce(ReduceOp::Max, axes, keepdims)
    }

    /// Minimum over `axes` (empty = all); NaN propagates.
    pub fn min(&self, axes: &[isize], keepdims: bool) -> Result<Self> {
        self.reduce(ReduceOp::Min, axes, keepdims)
    }

    /// Maximum of all elements (rank 0).
    pub fn max_all(&self) -> Result<Self> {
        self.max(&[], false)
    }

    /// Minimum of all elements (rank 0).
    pub fn min_all(&self) -> Result<Self> {
        self.min(&[], false)
    }

    /// `true` where any element along `axes` (empty = all) is non-zero; `false` over no elements.
    pub fn any(&self, axes: &[isize], keepdims: bool) -> Result<Self> {
        self.ne(0)?.cast(DType::I64)?.sum(axes, keepdims)?.gt(0)
    }

    /// `true` where every element along `axes` (empty = all) is non-zero; `true` over no elements.
    pub fn all(&self, axes: &[isize], keepdims: bool) -> Result<Self> {
        self.eq(0)?.cast(DType::I64)?.sum(axes, keepdims)?.eq(0)
    }

    /// Mean over `axes` (empty = all); float and complex only.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 6.0], [2, 2], &CpuBackend::new())?;
    /// assert_eq!(x.mean(&[1], false)?.to_vec::<f64>()?, vec![1.5, 4.5]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn mean(&self, axes: &[isize], keepdims: bool) -> Result<Self> {
        if let Some(out) = self.half_in_f32(|x| x.mean(axes, keepdims)) {
            return out;
        }
        if !(self.dtype().is_float() || self.dtype().is_complex()) {
            return Err(Error::dtype("mean", self.dtype())
                .with_hint("mean needs a float or complex tensor; cast integers first"));
        }
        let count = self.reduced_count("mean", axes)?;
        self.sum(axes, keepdims)?.div(count as f64)
    }

    /// Mean of all elements (rank 0).
    pub fn mean_all(&self) -> Result<Self> {
        self.mean(&[], false)
    }

    fn arg_reduce(&self, op: ArgReduceOp, axis: isize, keepdims: bool) -> Result<Self> {
        if let Some(out) = self.half_in_f32(|x| x.arg_reduce(op, axis, keepdims)) {
            return out;
        }
        let a = normalize_axis(op.name(), axis, self.rank().max(1))?;
        let x = if self.rank() == 0 {
            self.reshape([1])?
        } else {
            self.clone()
        };
        if x.dtype().is_complex() || x.dtype().is_half() {
            return Err(Error::dtype(op.name(), x.dtype()));
        }
        if x.shape()[a] == 0 {
            return Err(Error::invalid(
                op.name(),
                format!("axis {axis} of shape {:?} is empty", x.shape()),
            ));
        }
        let mut shape = x.shape().to_vec();
        shape[a] = 1;
        let arg = Primitive::ArgReduce { op, axis: a };
        let out = Tensor::run_primitive(x.backend(), arg, &[&x], &shape)?;
        if keepdims && self.rank() > 0 {
            Ok(out)
        } else {
            out.squeeze(a as isize)
        }
    }

    /// Index (`I64`) of the first maximum along `axis`.
    pub fn argmax(&self, axis: isize, keepdims: bool) -> Result<Self> {
        self.arg_reduce(ArgReduceOp::ArgMax, axis, keepdims)
    }

    /// Index (`I64`) of the first minimum along `axis`.
    pub fn argmin(&self, axis: isize, keepdims: bool) -> Result<Self> {
        self.arg_reduce(ArgReduceOp::ArgMin, axis, keepdims)
    }

    /// Inclusive cumulative sum along `axis`.
    pub fn cumsum(&self, axis: isize) -> Result<Self> {
        if let Some(out) = self.half_in_f32(|x| x.cumsum(axis)) {
            return out;
        }
        let a = normalize_axis("cumsum", axis, self.rank())?;
        let x = if self.dtype().is_bool() {
            self.cast(DType::I64)?
        } else {
            self.clone()
        };
        if x.dtype().is_half() {
            return Err(Error::dtype("cumsum", x.dtype()));
        }
        Tensor::run_primitive(x.backend(), Primitive::Cumsum { axis: a }, &[&x], x.shape())
    }
}
