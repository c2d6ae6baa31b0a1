//! Elementwise math, comparisons and selection, with NumPy broadcasting.

use crate::autograd::Op;
use crate::{Operand, Tensor};
use nabla_core::{Backend, BinaryOp, CompareOp, Error, Result, Shape, UnaryOp};

macro_rules! unary_methods {
    ($($(#[$doc:meta])* $name:ident => $op:ident),* $(,)?) => {
        impl<B: Backend> Tensor<B> {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> Result<Self> {
                    self.unary(UnaryOp::$op)
                }
            )*
        }
    };
}

unary_methods! {
    /// `-x`.
    neg => Neg,
    /// `|x|` (the modulus for complex input, with a real result).
    abs => Abs,
    /// The sign: -1, 0 or 1.
    sign => Sign,
    /// `1 / x`.
    recip => Recip,
    /// `x * x`.
    square => Square,
    /// Square root.
    sqrt => Sqrt,
    /// `1 / sqrt(x)`.
    rsqrt => Rsqrt,
    /// `e^x`.
    exp => Exp,
    /// `e^x - 1`, accurate near zero.
    expm1 => Expm1,
    /// Natural logarithm.
    log => Log,
    /// `ln(1 + x)`, accurate near zero.
    log1p => Log1p,
    /// Sine.
    sin => Sin,
    /// Cosine.
    cos => Cos,
    /// Tangent.
    tan => Tan,
    /// Inverse sine.
    asin => Asin,
    /// Inverse cosine.
    acos => Acos,
    /// Inverse tangent.
    atan => Atan,
    /// Hyperbolic sine.
    sinh => Sinh,
    /// Inverse hyperbolic sine.
    asinh => Asinh,
    /// Inverse hyperbolic cosine.
    acosh => Acosh,
    /// Inverse hyperbolic tangent.
    atanh => Atanh,
    /// Hyperbolic cosine.
    cosh => Cosh,
    /// Hyperbolic tangent.
    tanh => Tanh,
    /// Logistic sigmoid, stable for large inputs.
    sigmoid => Sigmoid,
    /// Error function.
    erf => Erf,
    /// Round toward negative infinity.
    floor => Floor,
    /// Round toward positive infinity.
    ceil => Ceil,
    /// Round half to even.
    round => Round,
    /// Round toward zero.
    trunc => Trunc,
    /// Logical not of a bool tensor.
    logical_not => Not,
    /// Complex conjugate.
    conj => Conj,
    /// Real part.
    real => Real,
    /// Imaginary part.
    imag => Imag,
    /// `true` where NaN.
    isnan => IsNan,
    /// `true` where finite.
    isfinite => IsFinite,
    /// `true` where the sign bit is set (`-0.0` and negative NaNs included; `x < 0` for integers).
    signbit => SignBit,
    /// Bitwise not of integers (logical not of bools).
    bitwise_invert => BitNot,
}

macro_rules! binary_methods {
    ($($(#[$doc:meta])* $name:ident => $op:ident),* $(,)?) => {
        impl<B: Backend> Tensor<B> {
            $(
                $(#[$doc])*
                pub fn $name(&self, rhs: impl Operand<B>) -> Result<Self> {
                    self.binary(BinaryOp::$op, rhs)
                }
            )*
        }
    };
}

binary_methods! {
    /// `self + rhs` with broadcasting.
    add => Add,
    /// `self - rhs` with broadcasting.
    sub => Sub,
    /// `self * rhs` with broadcasting.
    mul => Mul,
    /// `self / rhs` with broadcasting (floor division for integers).
    div => Div,
    /// Remainder with the sign of the divisor.
    rem => Rem,
    /// `self ^ rhs`.
    pow => Pow,
    /// Elementwise maximum (NaN propagates).
    maximum => Maximum,
    /// Elementwise minimum (NaN propagates).
    minimum => Minimum,
    /// `atan2(self, rhs)`.
    atan2 => Atan2,
    /// Logical and of bool tensors.
    logical_and => And,
    /// Logical or of bool tensors.
    logical_or => Or,
    /// Logical exclusive or of bool tensors.
    logical_xor => Xor,
    /// Bitwise and of integer tensors (logical and of bools).
    bitwise_and => BitAnd,
    /// Bitwise or of integer tensors (logical or of bools).
    bitwise_or => BitOr,
    /// Bitwise exclusive or of integer tensors (logical exclusive or of bools).
    bitwise_xor => BitXor,
    /// `self << rhs` for integer tensors (0 past the width).
    bitwise_left_shift => ShiftLeft,
    /// `self >> rhs` for integer tensors, arithmetic for signed ones.
    bitwise_right_shift => ShiftRight,
    /// The next representable float after `self` toward `rhs`.
    nextafter => NextAfter,
}

macro_rules! compare_methods {
    ($($(#[$doc:meta])* $name:ident => $op:ident),* $(,)?) => {
        impl<B: Backend> Tensor<B> {
            $(
                $(#[$doc])*
                pub fn $name(&self, rhs: impl Operand<B>) -> Result<Self> {
                    self.compare(CompareOp::$op, rhs)
                }
            )*
        }
    };
}

compare_methods! {
    /// `self == rhs` elementwise (bool result).
    eq => Eq,
    /// `self != rhs` elementwise (bool result).
    ne => Ne,
    /// `self < rhs` elementwise (bool result).
    lt => Lt,
    /// `self <= rhs` elementwise (bool result).
    le => Le,
    /// `self > rhs` elementwise (bool result).
    gt => Gt,
    /// `self >= rhs` elementwise (bool result).
    ge => Ge,
}

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
        let storage = self.backend().unary(op, self.storage(), self.layout())?;
        Tensor::from_output_dims(storage, self.shape(), self.backend())
            .record_checked(|| Op::Unary(op), &[self])
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
        let storage =
            self.backend()
                .binary(op, a.storage(), a.layout(), b.storage(), b.layout())?;
        Tensor::from_output_dims(storage, a.shape(), self.backend())
            .record_checked(|| Op::Binary(op), &[&a, &b])
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
        let storage =
            self.backend()
                .compare(op, a.storage(), a.layout(), b.storage(), b.layout())?;
        Ok(Tensor::from_output_dims(storage, a.shape(), self.backend()))
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
        let storage = self.backend().select(
            c.storage(),
            c.layout(),
            t.storage(),
            t.layout(),
            f.storage(),
            f.layout(),
        )?;
        Tensor::from_output(storage, shape, self.backend())
            .record_checked(|| Op::Select, &[&c, &t, &f])
    }

    /// Clamps every element into `[min, max]`.
    pub fn clamp(&self, min: impl Operand<B>, max: impl Operand<B>) -> Result<Self> {
        self.maximum(min)?.minimum(max)
    }
}
