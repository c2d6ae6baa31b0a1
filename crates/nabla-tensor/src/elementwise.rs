//! Elementwise math, comparisons and selection, with NumPy broadcasting.

use crate::{Operand, Tensor};
use nabla_core::{Backend, BinaryOp, CompareOp, Error, Primitive, Result, Shape, UnaryOp};

/// One method per [`UnaryOp`], named and documented by the list of [`nabla_core::unary_ops!`].
macro_rules! unary_methods {
    ([] $($(#[doc = $doc:literal])* $op:ident => $name:ident,)*) => {
        impl<B: Backend> Tensor<B> {
            $(
                $(#[doc = $doc])*
                pub fn $name(&self) -> Result<Self> {
                    self.unary(UnaryOp::$op)
                }
            )*
        }
    };
}

nabla_core::unary_ops!(unary_methods);

/// One method per [`BinaryOp`], named and documented by the list of [`nabla_core::binary_ops!`].
macro_rules! binary_methods {
    ([] $($(#[doc = $doc:literal])* $op:ident => $name:ident,)*) => {
        impl<B: Backend> Tensor<B> {
            $(
                $(#[doc = $doc])*
                ///
                /// `self` and `rhs` (a tensor or a scalar) broadcast to one shape (NumPy's rules).
                pub fn $name(&self, rhs: impl Operand<B>) -> Result<Self> {
                    self.binary(BinaryOp::$op, rhs)
                }
            )*
        }
    };
}

nabla_core::binary_ops!(binary_methods);

/// One method per [`CompareOp`], named and documented by the list of [`nabla_core::compare_ops!`].
macro_rules! compare_methods {
    ([] $($(#[doc = $doc:literal])* $op:ident => $name:ident,)*) => {
        impl<B: Backend> Tensor<B> {
            $(
                $(#[doc = $doc])*
                ///
                /// `self` and `rhs` (a tensor or a scalar) broadcast to one shape (NumPy's rules).
                pub fn $name(&self, rhs: impl Operand<B>) -> Result<Self> {
                    self.compare(CompareOp::$op, rhs)
                }
            )*
        }
    };
}

nabla_core::compare_ops!(compare_methods);

impl<B: Backend> Tensor<B> {
    /// Applies a unary primitive.
    pub fn unary(&self, op: UnaryOp) -> Result<Self> {
        if op.output_dtype(nabla_core::DType::F32).is_some()
            && let Some(out) = self.half_in_f32(|x| x.unary(op))
        {
            return out;
        }
        if op.output_dtype(self.dtype()).is_none() {
            return Err(Error::dtype(op.name(), self.dtype()));
        }
        Tensor::run_primitive(self.backend(), Primitive::Unary(op), &[self], self.shape())
    }

    /// Broadcasts `self` and `other` to their common shape (views only).
    pub fn broadcast_pair(&self, op: &'static str, other: &Tensor<B>) -> Result<(Self, Self)> {
        if self.shape() == other.shape() {
            return Ok((self.clone(), other.clone()));
        }
        let shape = Shape::broadcast(op, self.shape(), other.shape())?;
        // The op's result takes the broadcast shape: refuse what could not be allocated.
        nabla_core::check_allocation(op, shape.dims(), self.dtype())?;
        Ok((
            self.broadcast_to(shape.dims())?,
            other.broadcast_to(shape.dims())?,
        ))
    }

    fn prepare_pair(&self, op: &'static str, rhs: impl Operand<B>) -> Result<(Self, Self)> {
        let dtype = rhs.result_dtype(self.dtype());
        let mut rhs = rhs.into_operand(dtype, self.backend())?;
        self.check_device(op, &rhs)?;
        if rhs.dtype() != dtype {
            rhs = rhs.cast(dtype)?;
        }
        if self.dtype() != dtype {
            return self.cast(dtype)?.pair_with(op, rhs);
        }
        self.pair_with(op, rhs)
    }

    /// `self` and `rhs` (of one dtype) broadcast to one shape.
    fn pair_with(&self, op: &'static str, rhs: Self) -> Result<(Self, Self)> {
        if self.shape() == rhs.shape() {
            return Ok((self.clone(), rhs));
        }
        self.broadcast_pair(op, &rhs)
    }

    /// `self` in `dtype`: itself when it already is, else a (differentiable) cast.
    pub(crate) fn cast_to(&self, dtype: nabla_core::DType) -> Result<Self> {
        if self.dtype() == dtype {
            Ok(self.clone())
        } else {
            self.cast(dtype)
        }
    }

    /// Applies a binary primitive with broadcasting. Operands of different dtypes are promoted first
    /// ([`nabla_core::DType::promote`]; numbers are weak and keep the tensor's dtype within its
    /// category, [`nabla_core::Scalar::result_type`]).
    pub fn binary(&self, op: BinaryOp, rhs: impl Operand<B>) -> Result<Self> {
        let (a, b) = self.prepare_pair(op.name(), rhs)?;
        if op.supports(nabla_core::DType::F32)
            && let Some(out) = a.half_in_f32(|x| x.binary(op, b.cast(nabla_core::DType::F32)?))
        {
            return out;
        }
        if !op.supports(a.dtype()) {
            return Err(Error::dtype(op.name(), a.dtype()));
        }
        if matches!(op, BinaryOp::Div | BinaryOp::Rem) && a.dtype().is_int() {
            b.check_no_zero_divisor(op.name())?;
        }
        Tensor::run_primitive(self.backend(), Primitive::Binary(op), &[&a, &b], a.shape())
    }

    /// Fails, as PyTorch does, when this integer divisor holds a zero: integer division and remainder
    /// by zero have no value. Symbolic (traced) divisors cannot be read and are not checked; a
    /// compiled program's integer division by zero gives 0.
    fn check_no_zero_divisor(&self, op: &'static str) -> Result<()> {
        if self.backend().is_symbolic() || self.numel() == 0 {
            return Ok(());
        }
        let zeros = self.eq(0)?.cast(nabla_core::DType::I64)?.sum_all()?;
        match zeros.item::<i64>()? {
            0 => Ok(()),
            _ => Err(Error::invalid(
                op,
                format!(
                    "integer {op} by zero (the {} divisor holds a 0); cast to a float dtype for \
                     inf/NaN results",
                    self.dtype()
                ),
            )),
        }
    }

    /// Applies a comparison with broadcasting; the result is bool.
    pub fn compare(&self, op: CompareOp, rhs: impl Operand<B>) -> Result<Self> {
        let (a, b) = self.prepare_pair(op.name(), rhs)?;
        if let Some(out) = a.half_in_f32(|x| x.compare(op, b.cast(nabla_core::DType::F32)?)) {
            return out;
        }
        if !op.supports(a.dtype()) {
            return Err(Error::dtype(op.name(), a.dtype()));
        }
        // A boolean output: nothing is recorded.
        Tensor::run_primitive(self.backend(), Primitive::Compare(op), &[&a, &b], a.shape())
    }

    /// `cond ? on_true : on_false` elementwise, broadcasting all three (NumPy `where`). `self` is the
    /// bool condition.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let x = Tensor::from_vec(vec![-1.0f32, 2.0], [2], &CpuBackend::new())?;
    /// let relu = x.gt(0)?.where_(&x, 0)?;
    /// assert_eq!(relu.to_vec::<f32>()?, vec![0.0, 2.0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn where_(&self, on_true: impl Operand<B>, on_false: impl Operand<B>) -> Result<Self> {
        const OP: &str = "where";
        if !self.dtype().is_bool() {
            return Err(Error::UnsupportedDType {
                op: OP,
                dtype: self.dtype(),
                hint: Some("the condition must be bool; compare first, e.g. x.gt(0)".into()),
            });
        }
        // The branches' promoted dtype; numbers are weak (float32 when both are real numbers).
        let base = on_true
            .operand_dtype()
            .or(on_false.operand_dtype())
            .unwrap_or(nabla_core::DType::F32);
        let dtype = on_false.result_dtype(on_true.result_dtype(base));
        let t = on_true.into_operand(dtype, self.backend())?;
        let f = on_false.into_operand(dtype, self.backend())?;
        self.check_device(OP, &t)?;
        self.check_device(OP, &f)?;
        let (t, f) = (t.cast_to(dtype)?, f.cast_to(dtype)?);
        let shape = Shape::broadcast(OP, self.shape(), t.shape())?;
        let shape = Shape::broadcast(OP, shape.dims(), f.shape())?;
        nabla_core::check_allocation(OP, shape.dims(), t.dtype())?;
        let (c, t, f) = (
            self.broadcast_to(shape.dims())?,
            t.broadcast_to(shape.dims())?,
            f.broadcast_to(shape.dims())?,
        );
        Tensor::run_primitive(
            self.backend(),
            Primitive::Select,
            &[&c, &t, &f],
            shape.dims(),
        )
    }

    /// Clamps every element into `[min, max]`.
    pub fn clamp(&self, min: impl Operand<B>, max: impl Operand<B>) -> Result<Self> {
        self.maximum(min)?.minimum(max)
    }
}
