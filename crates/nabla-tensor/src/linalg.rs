//! Matrix products and convolution.

use crate::Tensor;
use crate::autocast::autocast_precision;
use nabla_core::{Backend, Conv2dParams, Error, Precision, Primitive, Result, Shape};

/// The primitive of a matrix product at `precision`: the plain product at full precision (which the
/// compiler's reassociation and deduplication recognise), else the rounded one.
pub(crate) fn matmul_primitive(precision: Precision) -> Primitive {
    match precision {
        Precision::Full => Primitive::Matmul,
        rounded => Primitive::MatmulRounded(rounded),
    }
}

impl<B: Backend> Tensor<B> {
    /// Matrix product with NumPy `matmul` semantics: 1-D operands are promoted to a row (left) or column
    /// (right) vector and the added axis removed afterwards; leading batch dimensions broadcast.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend; use nabla_core::DType;
    /// let cpu = CpuBackend::new();
    /// let a = Tensor::ones([5, 1, 2, 3], DType::F32, &cpu)?;
    /// let b = Tensor::ones([4, 3, 6], DType::F32, &cpu)?;
    /// assert_eq!(a.matmul(&b)?.shape(), &[5, 4, 2, 6]);
    /// let v = Tensor::ones([3], DType::F32, &cpu)?;
    /// assert_eq!(a.matmul(&v)?.shape(), &[5, 1, 2]);
    /// assert!(b.matmul(&a).is_err());
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    ///
    /// Inside an [`autocast`](crate::autocast) scope, F32 operands multiply in the scope's type
    /// (bf16 or f16) with f32 accumulation ([`autocast_precision`]).
    pub fn matmul(&self, rhs: &Tensor<B>) -> Result<Self> {
        let dtype = self.dtype().promote(rhs.dtype());
        self.matmul_with(rhs, autocast_precision(dtype))
    }

    /// [`Tensor::matmul`] at the given precision, whatever the autocast state: with
    /// [`Precision::Bf16`] or [`Precision::F16`] the (promoted) operands must be F32. Its derivatives
    /// multiply at the same precision.
    pub fn matmul_with(&self, rhs: &Tensor<B>, precision: Precision) -> Result<Self> {
        const OP: &str = "matmul";
        self.check_device(OP, rhs)?;
        let dtype = self.dtype().promote(rhs.dtype());
        if self.dtype() != dtype || rhs.dtype() != dtype {
            // Mixed dtypes multiply in their promoted dtype (`DType::promote`).
            return self
                .cast_to(dtype)?
                .matmul_with(&rhs.cast_to(dtype)?, precision);
        }
        if matches!(precision, Precision::Full)
            && let Some(out) =
                self.half_in_f32(|x| x.matmul_with(&rhs.cast(nabla_core::DType::F32)?, precision))
        {
            return out;
        }
        precision.check_operand(OP, dtype)?;
        if self.rank() == 0 || rhs.rank() == 0 {
            return Err(Error::shapes(OP, self.shape(), rhs.shape())
                .with_hint("matmul needs operands of rank >= 1"));
        }
        let k = self.shape()[self.rank() - 1];
        if self.rank() > 2 && rhs.rank() <= 2 && rhs.shape()[0] == k {
            // [.., m, k] @ [k, n] is one [(..)·m, k] @ [k, n] product, as in PyTorch: one large
            // matmul instead of a batch of small ones, and the reverse pass makes the weight's
            // gradient already summed instead of one per batch element summed afterwards.
            let lead = &self.shape()[..self.rank() - 1];
            let rows = lead.iter().product::<usize>();
            let out = self.reshape([rows, k])?.matmul_with(rhs, precision)?;
            let mut shape = lead.to_vec();
            shape.extend(rhs.shape().get(1));
            return out.reshape(shape);
        }
        let a = if self.rank() == 1 {
            self.unsqueeze(0)?
        } else {
            self.clone()
        };
        let b = if rhs.rank() == 1 {
            rhs.unsqueeze(1)?
        } else {
            rhs.clone()
        };
        let (ar, br) = (a.rank(), b.rank());
        let (m, k) = (a.shape()[ar - 2], a.shape()[ar - 1]);
        let (k2, n) = (b.shape()[br - 2], b.shape()[br - 1]);
        if k != k2 {
            return Err(Error::shapes(OP, self.shape(), rhs.shape())
                .with_hint(format!("inner dimensions {k} and {k2} differ")));
        }
        let (a_batch, b_batch) = (&a.shape()[..ar - 2], &b.shape()[..br - 2]);
        let batch = Shape::broadcast(OP, a_batch, b_batch)
            .map_err(|_| {
                Error::shapes(OP, self.shape(), rhs.shape()).with_hint(format!(
                    "batch dimensions {a_batch:?} and {b_batch:?} do not broadcast"
                ))
            })?
            .into_dims();
        let mut out_shape = batch.clone();
        out_shape.extend([m, n]);
        nabla_core::check_allocation(OP, &out_shape, a.dtype())?;
        let mut a_shape = batch.clone();
        a_shape.extend([m, k]);
        let mut b_shape = batch.clone();
        b_shape.extend([k, n]);
        let (a, b) = (a.broadcast_to(a_shape)?, b.broadcast_to(b_shape)?);
        if a.dtype().is_bool() || a.dtype().is_half() {
            return Err(Error::dtype(OP, a.dtype()));
        }
        let product = matmul_primitive(precision);
        let mut out = Tensor::run_primitive(self.backend(), product, &[&a, &b], &out_shape)?;
        // Drop the row axis first: for 1-D @ 1-D the result [1, 1] then still has a last axis to drop.
        if self.rank() == 1 {
            out = out.squeeze(-2)?;
        }
        if rhs.rank() == 1 {
            out = out.squeeze(-1)?;
        }
        Ok(out)
    }

    /// 2-D convolution (cross-correlation) of `self: [N, C_in, H, W]` with `weight: [C_out, C_in / groups,
    /// KH, KW]`, as `torch.nn.functional.conv2d` without bias.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend; use nabla_core::{DType, Conv2dParams};
    /// let cpu = CpuBackend::new();
    /// let x = Tensor::ones([1, 1, 4, 4], DType::F32, &cpu)?;
    /// let w = Tensor::ones([2, 1, 3, 3], DType::F32, &cpu)?;
    /// let y = x.conv2d(&w, &Conv2dParams::default())?;
    /// assert_eq!(y.shape(), &[1, 2, 2, 2]);
    /// assert_eq!(y.to_vec::<f32>()?, vec![9.0; 8]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    ///
    /// Inside an [`autocast`](crate::autocast) scope, F32 operands multiply in the scope's type
    /// (bf16 or f16) with f32 accumulation (as [`Tensor::matmul`] does), unless `params` already
    /// asks for a rounding precision; [`Tensor::conv2d_with`] takes `params.precision` as it is.
    pub fn conv2d(&self, weight: &Tensor<B>, params: &Conv2dParams) -> Result<Self> {
        self.conv2d_with(weight, &crate::autocast_conv_params(params, self.dtype()))
    }

    /// [`Tensor::conv2d`] at `params.precision`, whatever the autocast scope says. At a rounding
    /// precision ([`Precision::Bf16`], [`Precision::F16`]) both operands must be F32; the derivatives
    /// multiply at the same precision.
    pub fn conv2d_with(&self, weight: &Tensor<B>, params: &Conv2dParams) -> Result<Self> {
        const OP: &str = "conv2d";
        self.check_device(OP, weight)?;
        self.check_same_dtype(OP, weight)?;
        params.precision.check_operand(OP, self.dtype())?;
        let (n, c_out, oh, ow) = conv_output_shape(OP, self.shape(), weight.shape(), params)?;
        nabla_core::check_allocation(OP, &[n, c_out, oh, ow], self.dtype())?;
        let conv = Primitive::Conv2d(*params);
        Tensor::run_primitive(self.backend(), conv, &[self, weight], &[n, c_out, oh, ow])
    }

    /// Gradient of [`Tensor::conv2d`] with respect to its input, for an input of spatial size `input_hw`.
    /// `self` is the output gradient `[N, C_out, H_out, W_out]`. It multiplies at `params.precision`
    /// (autocast does not change it).
    pub fn conv2d_input_grad(
        &self,
        weight: &Tensor<B>,
        input_hw: (usize, usize),
        params: &Conv2dParams,
    ) -> Result<Self> {
        const OP: &str = "conv2d_input_grad";
        self.check_device(OP, weight)?;
        self.check_same_dtype(OP, weight)?;
        params.precision.check_operand(OP, self.dtype())?;
        if self.rank() != 4 || weight.rank() != 4 {
            return Err(Error::shapes(OP, self.shape(), weight.shape())
                .with_hint("expected rank-4 tensors"));
        }
        let c_in = params.input_channels(OP, weight.shape()[1])?;
        let x_shape = [self.shape()[0], c_in, input_hw.0, input_hw.1];
        let expect = conv_output_shape(OP, &x_shape, weight.shape(), params)?;
        nabla_core::check_allocation(OP, &x_shape, self.dtype())?;
        if [expect.0, expect.1, expect.2, expect.3] != self.shape() {
            return Err(
                Error::shapes(OP, self.shape(), &[expect.0, expect.1, expect.2, expect.3])
                    .with_hint(format!(
                        "the output gradient does not match an input of spatial size {input_hw:?}"
                    )),
            );
        }
        let conv = Primitive::Conv2dInputGrad {
            params: *params,
            input_hw,
        };
        Tensor::run_primitive(self.backend(), conv, &[self, weight], &x_shape)
    }

    /// Gradient of [`Tensor::conv2d`] with respect to its weights, for a kernel of size `kernel_hw`.
    /// `self` is the input `[N, C_in, H, W]`, `grad_out` the output gradient. It multiplies at
    /// `params.precision` (autocast does not change it).
    pub fn conv2d_weight_grad(
        &self,
        grad_out: &Tensor<B>,
        kernel_hw: (usize, usize),
        params: &Conv2dParams,
    ) -> Result<Self> {
        const OP: &str = "conv2d_weight_grad";
        self.check_device(OP, grad_out)?;
        self.check_same_dtype(OP, grad_out)?;
        params.precision.check_operand(OP, self.dtype())?;
        if self.rank() != 4 || grad_out.rank() != 4 || params.groups == 0 {
            return Err(Error::shapes(OP, self.shape(), grad_out.shape())
                .with_hint("expected rank-4 tensors"));
        }
        let c_out = grad_out.shape()[1];
        if !self.shape()[1].is_multiple_of(params.groups) {
            return Err(Error::invalid(
                OP,
                format!(
                    "{} input channels are not divisible into {} groups",
                    self.shape()[1],
                    params.groups
                ),
            ));
        }
        let w_shape = [
            c_out,
            self.shape()[1] / params.groups,
            kernel_hw.0,
            kernel_hw.1,
        ];
        let expect = conv_output_shape(OP, self.shape(), &w_shape, params)?;
        nabla_core::check_allocation(OP, &w_shape, self.dtype())?;
        if [expect.0, expect.1, expect.2, expect.3] != grad_out.shape() {
            return Err(Error::shapes(
                OP,
                grad_out.shape(),
                &[expect.0, expect.1, expect.2, expect.3],
            )
            .with_hint("the output gradient does not match the input and kernel size"));
        }
        let conv = Primitive::Conv2dWeightGrad {
            params: *params,
            kernel_hw,
        };
        Tensor::run_primitive(self.backend(), conv, &[self, grad_out], &w_shape)
    }
}

/// Validates a convolution and returns `(N, C_out, H_out, W_out)`.
fn conv_output_shape(
    op: &'static str,
    x: &[usize],
    w: &[usize],
    p: &Conv2dParams,
) -> Result<(usize, usize, usize, usize)> {
    if x.len() != 4 || w.len() != 4 {
        return Err(Error::shapes(op, x, w)
            .with_hint("expected input [N, C, H, W] and weight [C_out, C_in/groups, KH, KW]"));
    }
    if p.groups == 0 || p.stride.0 == 0 || p.stride.1 == 0 || p.dilation.0 == 0 || p.dilation.1 == 0
    {
        return Err(Error::invalid(
            op,
            format!("groups, strides and dilations must be positive, got {p}"),
        ));
    }
    if w[1].checked_mul(p.groups) != Some(x[1]) || !w[0].is_multiple_of(p.groups) {
        return Err(Error::shapes(op, x, w).with_hint(format!(
            "input channels {} must equal weight channels {} x groups {}, and output channels {} must divide into the groups",
            x[1], w[1], p.groups, w[0]
        )));
    }
    let (oh, ow) = p
        .checked_output_size(op, (x[2], x[3]), (w[2], w[3]))?
        .ok_or_else(|| {
            Error::shapes(op, x, w).with_hint(format!(
                "the dilated kernel does not fit the padded input with {p}"
            ))
        })?;
    Ok((x[0], w[0], oh, ow))
}
