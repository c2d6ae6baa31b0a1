//! The primitive op catalogue: the small set of operations every backend implements.
//!
//! Everything else in nabla (softmax, layer norm, attention, ...) is composed from these in ordinary Rust.

use crate::DType;

/// Defines an op enum from one list: each variant with its documentation and the name errors and
/// program dumps use. Generates the enum, `ALL` (every op, in declaration order), `COUNT` and `name`, so
/// no list of ops is written twice and a new variant is in `ALL` by construction.
macro_rules! op_catalogue {
    (
        $(#[doc = $doc:literal])*
        pub enum $name:ident { $($(#[doc = $vdoc:literal])* $variant:ident => $text:literal,)* }
    ) => {
        $(#[doc = $doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[doc = $vdoc])* $variant,)*
        }

        impl $name {
            /// Number of ops of this kind.
            pub const COUNT: usize = [$(stringify!($variant)),*].len();

            /// Every op of this kind, in declaration order.
            pub const ALL: [$name; $name::COUNT] = [$($name::$variant),*];

            /// The op's name as used in error messages and program dumps.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }
        }
    };
}

op_catalogue! {
    /// Elementwise operations with one operand.
    pub enum UnaryOp {
        /// `-x` (wrapping for integers).
        Neg => "neg",
        /// `|x|` (for complex: the modulus, a real number).
        Abs => "abs",
        /// `-1`, `0` or `1` (NaN stays NaN; for complex: `x / |x|`, 0 at 0).
        Sign => "sign",
        /// `1 / x`.
        Recip => "recip",
        /// `x * x`.
        Square => "square",
        /// Square root.
        Sqrt => "sqrt",
        /// `1 / sqrt(x)`.
        Rsqrt => "rsqrt",
        /// `e^x`.
        Exp => "exp",
        /// `e^x - 1`, accurate near 0.
        Expm1 => "expm1",
        /// Natural logarithm.
        Log => "log",
        /// `ln(1 + x)`, accurate near 0.
        Log1p => "log1p",
        /// Sine.
        Sin => "sin",
        /// Cosine.
        Cos => "cos",
        /// Tangent.
        Tan => "tan",
        /// Inverse sine.
        Asin => "asin",
        /// Inverse cosine.
        Acos => "acos",
        /// Inverse tangent.
        Atan => "atan",
        /// Hyperbolic sine.
        Sinh => "sinh",
        /// Hyperbolic cosine.
        Cosh => "cosh",
        /// Hyperbolic tangent.
        Tanh => "tanh",
        /// Logistic function `1 / (1 + e^-x)`, stable for large `|x|`.
        Sigmoid => "sigmoid",
        /// Error function.
        Erf => "erf",
        /// Round toward negative infinity.
        Floor => "floor",
        /// Round toward positive infinity.
        Ceil => "ceil",
        /// Round half to even (as NumPy and PyTorch do).
        Round => "round",
        /// Round toward zero.
        Trunc => "trunc",
        /// Logical not (bool only).
        Not => "logical_not",
        /// Complex conjugate (identity for real types).
        Conj => "conj",
        /// Real part (complex input gives a real output).
        Real => "real",
        /// Imaginary part (complex input gives a real output; real input gives zeros).
        Imag => "imag",
        /// `true` where the value is NaN (bool output).
        IsNan => "isnan",
        /// `true` where the value is finite (bool output).
        IsFinite => "isfinite",
    }
}

impl UnaryOp {
    /// The dtype of the result for an input of `dtype`, or `None` if the op does not apply to it.
    ///
    /// Rules: half types support nothing (cast first); bool supports only `Not`; integers support the
    /// exact ops (`Neg`, `Abs`, `Sign`, `Square`, rounding, `Conj`, `Real`, `Imag`, `IsNan`, `IsFinite`);
    /// complex types support the analytic functions but not `Erf`, the inverse trigonometric functions or
    /// rounding; `Abs`, `Real` and `Imag` of a complex input are real.
    ///
    /// ```
    /// use nabla_core::{UnaryOp, DType};
    /// assert_eq!(UnaryOp::Abs.output_dtype(DType::C64), Some(DType::F32));
    /// assert_eq!(UnaryOp::Exp.output_dtype(DType::I64), None);
    /// assert_eq!(UnaryOp::IsNan.output_dtype(DType::F32), Some(DType::Bool));
    /// ```
    pub fn output_dtype(self, dtype: DType) -> Option<DType> {
        use UnaryOp::*;
        if dtype.is_half() {
            return None;
        }
        match self {
            IsNan | IsFinite => (!dtype.is_bool()).then_some(DType::Bool),
            Not => dtype.is_bool().then_some(DType::Bool),
            Real | Imag => (!dtype.is_bool()).then_some(dtype.real()),
            Abs if dtype.is_complex() => Some(dtype.real()),
            Neg | Abs | Square | Conj => (!dtype.is_bool()).then_some(dtype),
            Sign => (!dtype.is_bool()).then_some(dtype),
            Floor | Ceil | Round | Trunc => (dtype.is_float() || dtype.is_int()).then_some(dtype),
            Erf | Asin | Acos | Atan => dtype.is_float().then_some(dtype),
            Recip | Sqrt | Rsqrt | Exp | Expm1 | Log | Log1p | Sin | Cos | Tan | Sinh | Cosh
            | Tanh | Sigmoid => (dtype.is_float() || dtype.is_complex()).then_some(dtype),
        }
    }
}

op_catalogue! {
    /// Elementwise operations with two operands of one dtype.
    pub enum BinaryOp {
        /// `a + b` (wrapping for integers; logical or for bool).
        Add => "add",
        /// `a - b` (wrapping for integers).
        Sub => "sub",
        /// `a * b` (wrapping for integers; logical and for bool).
        Mul => "mul",
        /// `a / b`; integers use floor division like NumPy's `//`. The kernel gives 0 for an integer
        /// division by zero; `Tensor::div` refuses one with an error, as PyTorch does.
        Div => "div",
        /// Remainder with the sign of the divisor (NumPy's `%`). The kernel gives 0 for an integer
        /// remainder by zero; `Tensor::rem` refuses one with an error.
        Rem => "rem",
        /// `a ^ b`; integer powers with negative exponents give 0 (except bases 1 and -1).
        Pow => "pow",
        /// Elementwise maximum (NaN propagates).
        Maximum => "maximum",
        /// Elementwise minimum (NaN propagates).
        Minimum => "minimum",
        /// Two-argument arctangent `atan2(a, b)` (real floats only).
        Atan2 => "atan2",
        /// Logical and (bool only).
        And => "logical_and",
        /// Logical or (bool only).
        Or => "logical_or",
        /// Logical exclusive or (bool only).
        Xor => "logical_xor",
    }
}

impl BinaryOp {
    /// `true` if the op is defined for operands of `dtype` (the result has the same dtype).
    pub fn supports(self, dtype: DType) -> bool {
        use BinaryOp::*;
        if dtype.is_half() {
            return false;
        }
        match self {
            And | Or | Xor => dtype.is_bool(),
            Add | Mul | Maximum | Minimum => true,
            Sub | Div | Pow => !dtype.is_bool(),
            Rem | Atan2 if dtype.is_complex() => false,
            Rem => !dtype.is_bool(),
            Atan2 => dtype.is_float(),
        }
    }
}

op_catalogue! {
    /// Elementwise comparisons; the result is bool.
    pub enum CompareOp {
        /// `a == b`.
        Eq => "eq",
        /// `a != b`.
        Ne => "ne",
        /// `a < b`.
        Lt => "lt",
        /// `a <= b`.
        Le => "le",
        /// `a > b`.
        Gt => "gt",
        /// `a >= b`.
        Ge => "ge",
    }
}

impl CompareOp {
    /// `true` if the comparison is defined for `dtype` (ordering is undefined for complex numbers).
    pub fn supports(self, dtype: DType) -> bool {
        !dtype.is_half() && (matches!(self, CompareOp::Eq | CompareOp::Ne) || !dtype.is_complex())
    }
}

op_catalogue! {
    /// Reductions over a set of axes.
    pub enum ReduceOp {
        /// Sum (0 for no elements).
        Sum => "sum",
        /// Product (1 for no elements).
        Prod => "prod",
        /// Maximum (NaN propagates; needs at least one element).
        Max => "max",
        /// Minimum (NaN propagates; needs at least one element).
        Min => "min",
    }
}

impl ReduceOp {
    /// `true` if the reduction is defined for `dtype` (bool supports `Max`/`Min` as any/all).
    pub fn supports(self, dtype: DType) -> bool {
        match self {
            _ if dtype.is_half() => false,
            ReduceOp::Sum | ReduceOp::Prod => !dtype.is_bool(),
            ReduceOp::Max | ReduceOp::Min => !dtype.is_complex(),
        }
    }
}

op_catalogue! {
    /// Index-returning reductions along one axis; the result is `I64`.
    pub enum ArgReduceOp {
        /// Index of the first maximum (a NaN counts as the maximum).
        ArgMax => "argmax",
        /// Index of the first minimum (a NaN counts as the minimum).
        ArgMin => "argmin",
    }
}

/// Parameters of a 2-D convolution over `[N, C, H, W]` inputs and `[C_out, C_in / groups, KH, KW]` weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Conv2dParams {
    /// Step between windows, `(height, width)`.
    pub stride: (usize, usize),
    /// Zero padding added on both sides, `(height, width)`.
    pub padding: (usize, usize),
    /// Spacing between kernel taps, `(height, width)`.
    pub dilation: (usize, usize),
    /// Number of channel groups (1 for an ordinary convolution).
    pub groups: usize,
}

impl Default for Conv2dParams {
    fn default() -> Self {
        Conv2dParams {
            stride: (1, 1),
            padding: (0, 0),
            dilation: (1, 1),
            groups: 1,
        }
    }
}

impl Conv2dParams {
    /// Output spatial size for an input of `(h, w)` and a kernel of `(kh, kw)`, or `None` when the
    /// (dilated) kernel does not fit into the padded input.
    ///
    /// ```
    /// use nabla_core::Conv2dParams;
    /// let p = Conv2dParams { padding: (1, 1), ..Default::default() };
    /// assert_eq!(p.output_size((28, 28), (3, 3)), Some((28, 28)));
    /// ```
    pub fn output_size(
        &self,
        input: (usize, usize),
        kernel: (usize, usize),
    ) -> Option<(usize, usize)> {
        let one = |i: usize, k: usize, s: usize, p: usize, d: usize| -> Option<usize> {
            let span = d.checked_mul(k.checked_sub(1)?)?.checked_add(1)?;
            let padded = i + 2 * p;
            if s == 0 || span > padded {
                return None;
            }
            Some((padded - span) / s + 1)
        };
        Some((
            one(
                input.0,
                kernel.0,
                self.stride.0,
                self.padding.0,
                self.dilation.0,
            )?,
            one(
                input.1,
                kernel.1,
                self.stride.1,
                self.padding.1,
                self.dilation.1,
            )?,
        ))
    }
}

/// Parameters of a 2-D max pooling over the last two dimensions of an input (`[N, C, H, W]`, or any
/// number of leading dimensions, each `H x W` plane pooled on its own), as in PyTorch's `MaxPool2d`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pool2dParams {
    /// Window size, `(height, width)`.
    pub kernel: (usize, usize),
    /// Step between windows, `(height, width)`.
    pub stride: (usize, usize),
    /// Implicit padding with negative infinity on both sides, `(height, width)`; at most half the
    /// dilated kernel.
    pub padding: (usize, usize),
    /// Spacing between window taps, `(height, width)`.
    pub dilation: (usize, usize),
    /// Round the output size up instead of down (a last window may start in the right/bottom padding
    /// but never wholly outside the padded-left input).
    pub ceil_mode: bool,
}

impl Pool2dParams {
    /// Non-overlapping `k x k` windows (stride `k`, no padding), the common `MaxPool2d(k)`.
    ///
    /// ```
    /// use nabla_core::Pool2dParams;
    /// let p = Pool2dParams::square(2);
    /// assert_eq!(p.output_size((28, 28)), Some((14, 14)));
    /// ```
    pub fn square(k: usize) -> Self {
        Pool2dParams {
            kernel: (k, k),
            stride: (k, k),
            padding: (0, 0),
            dilation: (1, 1),
            ceil_mode: false,
        }
    }

    /// Output spatial size for an input plane of `(h, w)` with PyTorch's rules, or `None` when the
    /// parameters are invalid (zero kernel, stride or dilation, padding over half the dilated kernel) or no
    /// window fits.
    ///
    /// ```
    /// use nabla_core::Pool2dParams;
    /// let p = Pool2dParams { ceil_mode: true, ..Pool2dParams::square(2) };
    /// assert_eq!(p.output_size((5, 5)), Some((3, 3)));
    /// ```
    pub fn output_size(&self, input: (usize, usize)) -> Option<(usize, usize)> {
        let ceil = self.ceil_mode;
        let one = |i: usize, k: usize, s: usize, p: usize, d: usize| -> Option<usize> {
            if k == 0 || s == 0 || d == 0 {
                return None;
            }
            let span = d.checked_mul(k - 1)?.checked_add(1)?;
            let padded = i.checked_add(2 * p)?;
            if 2 * p > span || span > padded {
                return None;
            }
            let room = padded - span;
            let mut out = if ceil { room.div_ceil(s) } else { room / s } + 1;
            // With ceil_mode the last window must start inside the input or the left padding.
            if ceil && (out - 1) * s >= i + p {
                out -= 1;
            }
            Some(out)
        };
        Some((
            one(
                input.0,
                self.kernel.0,
                self.stride.0,
                self.padding.0,
                self.dilation.0,
            )?,
            one(
                input.1,
                self.kernel.1,
                self.stride.1,
                self.padding.1,
                self.dilation.1,
            )?,
        ))
    }
}

/// A random distribution for [`crate::Backend::random`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Distribution {
    /// Uniform on `[low, high)`.
    Uniform {
        /// Inclusive lower bound.
        low: f64,
        /// Exclusive upper bound.
        high: f64,
    },
    /// Normal with the given mean and standard deviation.
    Normal {
        /// Mean.
        mean: f64,
        /// Standard deviation.
        std: f64,
    },
    /// 1 (or `true`) with probability `p`, else 0.
    Bernoulli {
        /// Probability of a one.
        p: f64,
    },
}
