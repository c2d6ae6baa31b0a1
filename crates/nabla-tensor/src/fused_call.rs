//! Running a hand-built fused elementwise kernel on tensors (one pass, optionally in place).

use crate::Tensor;
use nabla_core::{Backend, Error, FusedKernel, Result};

impl<B: Backend> Tensor<B> {
    /// Evaluates `kernel` (built with [`nabla_core::FusedBuilder`], say) on `inputs`, which all have one
    /// shape and the kernel's input dtypes, in a single pass of the backend's fused kernel.
    ///
    /// `donate = Some(k)` hands input `k`'s buffer over: when no other tensor shares it, the backend
    /// may write the result into it instead of allocating (an in-place update). The result is not
    /// recorded for autodiff, so tracked inputs are an error while gradients are enabled.
    ///
    /// ```
    /// use nabla_core::{DType, FusedBuilder};
    /// use nabla_tensor::Tensor;
    /// use nabla_cpu::CpuBackend;
    /// let cpu = CpuBackend::new();
    /// let mut k = FusedBuilder::new(DType::F32);
    /// let (a, b) = (k.input(), k.input());
    /// let ab = k.mul(a, b);
    /// let out = k.offset(ab, 1.0);
    /// let kernel = k.finish(out)?;
    /// let a = Tensor::from_vec(vec![1.0f32, 2.0], [2], &cpu)?;
    /// let b = Tensor::from_vec(vec![3.0f32, 4.0], [2], &cpu)?;
    /// let y = Tensor::fused(&kernel, vec![a, b], Some(0))?;
    /// assert_eq!(y.to_vec::<f32>()?, vec![4.0, 9.0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn fused(
        kernel: &FusedKernel,
        inputs: Vec<Tensor<B>>,
        donate: Option<usize>,
    ) -> Result<Tensor<B>> {
        kernel.check_single_output()?;
        let mut out = Self::fused_many(kernel, inputs, &[donate])?;
        out.pop()
            .ok_or_else(|| Error::invalid("fused", "the kernel returned no result"))
    }

    /// Evaluates a kernel with several results ([`FusedBuilder::finish_many`]) on `inputs` in a single
    /// pass, one tensor per result in the kernel's order. `donate` is empty or has one entry per
    /// result: `donate[j] = Some(k)` hands input `k`'s buffer to result `j` (an in-place update when no
    /// other tensor shares it), as for [`Tensor::fused`]. Not recorded for autodiff either.
    ///
    /// ```
    /// use nabla_core::{DType, FusedBuilder};
    /// use nabla_tensor::Tensor;
    /// use nabla_cpu::CpuBackend;
    /// let cpu = CpuBackend::new();
    /// // A running mean and its square, updated in place in one pass.
    /// let mut k = FusedBuilder::new(DType::F32);
    /// let (m, x) = (k.input(), k.input());
    /// let d = k.sub(x, m);
    /// let d = k.scale(d, 0.5);
    /// let m_new = k.add(m, d);
    /// let sq = k.mul(m_new, m_new);
    /// let kernel = k.finish_many(&[m_new, sq])?;
    /// let m = Tensor::from_vec(vec![0.0f32, 2.0], [2], &cpu)?;
    /// let x = Tensor::from_vec(vec![2.0f32, 4.0], [2], &cpu)?;
    /// let out = Tensor::fused_many(&kernel, vec![m, x], &[Some(0), None])?;
    /// assert_eq!(out[0].to_vec::<f32>()?, vec![1.0, 3.0]);
    /// assert_eq!(out[1].to_vec::<f32>()?, vec![1.0, 9.0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    ///
    /// [`FusedBuilder::finish_many`]: nabla_core::FusedBuilder::finish_many
    pub fn fused_many(
        kernel: &FusedKernel,
        inputs: Vec<Tensor<B>>,
        donate: &[Option<usize>],
    ) -> Result<Vec<Tensor<B>>> {
        const OP: &str = "fused";
        let first = inputs
            .first()
            .ok_or_else(|| Error::invalid(OP, "a fused kernel call needs at least one input"))?;
        let (shape, backend) = (first.shape().to_vec(), first.backend().clone());
        let mut calls = Vec::with_capacity(inputs.len());
        for (k, t) in inputs.iter().enumerate() {
            first.check_device(OP, t)?;
            if crate::is_recorded(&[t]) {
                return Err(Error::autodiff(
                    OP,
                    format!(
                        "input {k} requires a gradient, but a hand-built fused kernel is not \
                         differentiable; detach it or run under no_grad"
                    ),
                ));
            }
            calls.push((t.dtype(), t.shape()));
        }
        kernel.check_call(&calls, &shape)?;
        kernel.check_donations(donate, inputs.len())?;
        let results = kernel.outputs().len();
        let layouts: Vec<_> = inputs.iter().map(|t| t.layout().clone()).collect();
        let storages: Vec<_> = inputs.into_iter().map(Tensor::into_storage).collect();
        let args = storages.into_iter().zip(layouts.iter()).collect();
        let out = backend.fused_many(kernel, args, &shape, donate)?;
        if out.len() != results {
            return Err(Error::invalid(
                OP,
                format!("the backend returned {} results, not {results}", out.len()),
            ));
        }
        Ok(out
            .into_iter()
            .map(|s| Tensor::from_output(s, shape.clone(), &backend))
            .collect())
    }
}
