//! The primitive op catalogue: the small set of operations every backend implements.
//!
//! Everything else in nabla (softmax, layer norm, attention, ...) is composed from these in ordinary Rust.

use crate::{DType, Error, Result};

/// Defines an op enum from one list: each variant with its documentation and the name errors and
/// program dumps use. Generates the enum, `ALL` (every op, in declaration order), `COUNT` and `name`, so
/// no list of ops is written twice and a new variant is in `ALL` by construction.
macro_rules! op_catalogue {
    (
        $(#[doc = $doc:literal])*
        pub enum $name:ident { $($(#[doc = $vdoc:literal])* $variant:ident => $text:expr,)* }
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

/// An op enum (through [`op_catalogue!`]) from the list of `unary_ops!`, `binary_ops!` or
/// `compare_ops!`, invoked with the enum's name and doc lines: each entry's name is its method's.
macro_rules! op_enum {
    (
        [$name:ident, [$($doc:literal),*]]
        $($(#[doc = $vdoc:literal])* $variant:ident => $method:ident,)*
    ) => {
        op_catalogue! {
            $(#[doc = $doc])*
            pub enum $name { $($(#[doc = $vdoc])* $variant => stringify!($method),)* }
        }
    };
}

/// Invokes `$callback! { ... }` with the list of [`UnaryOp`]s, each `Variant => name` with its doc:
/// `name` is the op's [`UnaryOp::name`] and the name of its `Tensor` method (`nabla-tensor` makes
/// one method per entry), so a new unary op is named once, here.
#[doc(hidden)]
#[macro_export]
macro_rules! unary_ops {
    ($callback:ident $(, $extra:tt)*) => {
        $callback! {
            [$($extra),*]
            /// `-x` (wrapping for integers).
            Neg => neg,
            /// `|x|` (the modulus for complex input, with a real result).
            Abs => abs,
            /// `-1`, `0` or `1` (NaN stays NaN; for complex: `x / |x|`, 0 at 0).
            Sign => sign,
            /// `1 / x`.
            Recip => recip,
            /// `x * x`.
            Square => square,
            /// Square root.
            Sqrt => sqrt,
            /// `1 / sqrt(x)`.
            Rsqrt => rsqrt,
            /// `e^x`.
            Exp => exp,
            /// `e^x - 1`, accurate near zero.
            Expm1 => expm1,
            /// Natural logarithm.
            Log => log,
            /// `ln(1 + x)`, accurate near zero.
            Log1p => log1p,
            /// Sine.
            Sin => sin,
            /// Cosine.
            Cos => cos,
            /// Tangent.
            Tan => tan,
            /// Inverse sine.
            Asin => asin,
            /// Inverse cosine.
            Acos => acos,
            /// Inverse tangent.
            Atan => atan,
            /// Hyperbolic sine.
            Sinh => sinh,
            /// Hyperbolic cosine.
            Cosh => cosh,
            /// Hyperbolic tangent.
            Tanh => tanh,
            /// Inverse hyperbolic sine.
            Asinh => asinh,
            /// Inverse hyperbolic cosine.
            Acosh => acosh,
            /// Inverse hyperbolic tangent.
            Atanh => atanh,
            /// Logistic function `1 / (1 + e^-x)`, stable for large `|x|`.
            Sigmoid => sigmoid,
            /// Error function.
            Erf => erf,
            /// Round toward negative infinity.
            Floor => floor,
            /// Round toward positive infinity.
            Ceil => ceil,
            /// Round half to even (as NumPy and PyTorch do).
            Round => round,
            /// Round toward zero.
            Trunc => trunc,
            /// Logical not of a bool tensor.
            Not => logical_not,
            /// Complex conjugate (identity for real types).
            Conj => conj,
            /// Real part (complex input gives a real output).
            Real => real,
            /// Imaginary part (complex input gives a real output; real input gives zeros).
            Imag => imag,
            /// `true` where the value is NaN (bool output).
            IsNan => isnan,
            /// `true` where the value is finite (bool output).
            IsFinite => isfinite,
            /// `true` where the sign bit is set: negative numbers, `-0.0` and NaNs with the bit set (bool
            /// output; for integers, `x < 0`).
            SignBit => signbit,
            /// Bitwise not of an integer (`!x`, two's complement); logical not of a bool.
            BitNot => bitwise_invert,
        }
    };
}

crate::unary_ops!(
    op_enum,
    UnaryOp,
    ["Elementwise operations with one operand."]
);

impl UnaryOp {
    /// The dtype of the result for an input of `dtype`, or `None` if the op does not apply to it.
    ///
    /// Rules: half types support nothing (cast first); bool supports only `Not`; integers support the
    /// exact ops (`Neg`, `Abs`, `Sign`, `Square`, rounding, `Conj`, `Real`, `Imag`, `IsNan`, `IsFinite`,
    /// `SignBit`) and `BitNot`; complex types support the analytic functions (the inverse trigonometric
    /// and hyperbolic ones on their principal branches) but not `Erf` or rounding; `Abs`, `Real` and
    /// `Imag` of a complex input are real.
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
            SignBit => (dtype.is_float() || dtype.is_int()).then_some(DType::Bool),
            BitNot => (dtype.is_int() || dtype.is_bool()).then_some(dtype),
            Not => dtype.is_bool().then_some(DType::Bool),
            Real | Imag => (!dtype.is_bool()).then_some(dtype.real()),
            Abs if dtype.is_complex() => Some(dtype.real()),
            Neg | Abs | Square | Conj => (!dtype.is_bool()).then_some(dtype),
            Sign => (!dtype.is_bool()).then_some(dtype),
            Floor | Ceil | Round | Trunc => (dtype.is_float() || dtype.is_int()).then_some(dtype),
            Erf => dtype.is_float().then_some(dtype),
            Recip | Sqrt | Rsqrt | Exp | Expm1 | Log | Log1p | Sin | Cos | Tan | Asin | Acos
            | Atan | Sinh | Cosh | Tanh | Asinh | Acosh | Atanh | Sigmoid => {
                (dtype.is_float() || dtype.is_complex()).then_some(dtype)
            }
        }
    }
}

/// Invokes `$callback! { ... }` with the list of [`BinaryOp`]s, each `Variant => name` with its doc:
/// `name` is the op's [`BinaryOp::name`] and the name of its `Tensor` method (`nabla-tensor` makes
/// one method per entry), so a new op is named once, here.
#[doc(hidden)]
#[macro_export]
macro_rules! binary_ops {
    ($callback:ident $(, $extra:tt)*) => {
        $callback! {
            [$($extra),*]
            /// `a + b` (wrapping for integers; logical or for bool).
            Add => add,
            /// `a - b` (wrapping for integers).
            Sub => sub,
            /// `a * b` (wrapping for integers; logical and for bool).
            Mul => mul,
            /// `a / b`; integers use floor division like NumPy's `//`. The kernel gives 0 for an integer
            /// division by zero; `Tensor::div` refuses one with an error, as PyTorch does.
            Div => div,
            /// Remainder with the sign of the divisor (NumPy's `%`). The kernel gives 0 for an integer
            /// remainder by zero; `Tensor::rem` refuses one with an error.
            Rem => rem,
            /// `a ^ b`; integer powers with negative exponents give 0 (except bases 1 and -1).
            Pow => pow,
            /// Elementwise maximum (NaN propagates).
            Maximum => maximum,
            /// Elementwise minimum (NaN propagates).
            Minimum => minimum,
            /// Two-argument arctangent `atan2(a, b)` (real floats only).
            Atan2 => atan2,
            /// Logical and of bool tensors.
            And => logical_and,
            /// Logical or of bool tensors.
            Or => logical_or,
            /// Logical exclusive or of bool tensors.
            Xor => logical_xor,
            /// Bitwise and of integer tensors (logical and of bools).
            BitAnd => bitwise_and,
            /// Bitwise or of integer tensors (logical or of bools).
            BitOr => bitwise_or,
            /// Bitwise exclusive or of integer tensors (logical exclusive or of bools).
            BitXor => bitwise_xor,
            /// `a << b` for integers; a shift by the width or more (or by a negative count) gives 0.
            ShiftLeft => bitwise_left_shift,
            /// `a >> b` for integers, arithmetic for signed ones; a shift by the width or more (or by a
            /// negative count) gives 0, or -1 for a negative `a`.
            ShiftRight => bitwise_right_shift,
            /// The next representable float after `a` toward `b` (`b` when they are equal; NaN when
            /// either is).
            NextAfter => nextafter,
        }
    };
}

crate::binary_ops!(
    op_enum,
    BinaryOp,
    ["Elementwise operations with two operands of one dtype."]
);

impl BinaryOp {
    /// `true` if the op is defined for operands of `dtype` (the result has the same dtype).
    pub fn supports(self, dtype: DType) -> bool {
        use BinaryOp::*;
        if dtype.is_half() {
            return false;
        }
        match self {
            And | Or | Xor => dtype.is_bool(),
            BitAnd | BitOr | BitXor => dtype.is_int() || dtype.is_bool(),
            ShiftLeft | ShiftRight => dtype.is_int(),
            NextAfter => dtype.is_float(),
            Add | Mul | Maximum | Minimum => true,
            Sub | Div | Pow => !dtype.is_bool(),
            Rem | Atan2 if dtype.is_complex() => false,
            Rem => !dtype.is_bool(),
            Atan2 => dtype.is_float(),
        }
    }
}

/// Invokes `$callback! { ... }` with the list of [`CompareOp`]s, each `Variant => name` with its doc:
/// `name` is the op's [`CompareOp::name`] and the name of its `Tensor` method (`nabla-tensor` makes
/// one method per entry), so a new op is named once, here.
#[doc(hidden)]
#[macro_export]
macro_rules! compare_ops {
    ($callback:ident $(, $extra:tt)*) => {
        $callback! {
            [$($extra),*]
            /// `self == rhs` elementwise (bool result).
            Eq => eq,
            /// `self != rhs` elementwise (bool result).
            Ne => ne,
            /// `self < rhs` elementwise (bool result).
            Lt => lt,
            /// `self <= rhs` elementwise (bool result).
            Le => le,
            /// `self > rhs` elementwise (bool result).
            Gt => gt,
            /// `self >= rhs` elementwise (bool result).
            Ge => ge,
        }
    };
}

crate::compare_ops!(
    op_enum,
    CompareOp,
    ["Elementwise comparisons; the result is bool."]
);

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

/// How a matrix product or convolution multiplies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Precision {
    /// In the operands' dtype.
    #[default]
    Full,
    /// F32 operands rounded to bf16 (to nearest, ties to even), products summed in f32, F32 result:
    /// what autocast to bf16 runs.
    Bf16,
    /// F32 operands rounded to f16 (to nearest, ties to even; beyond 65504 to infinity, small values
    /// to f16's subnormals or zero), products summed in f32, F32 result: what autocast to f16 runs.
    F16,
}

impl Precision {
    /// The dtype each operand element rounds to, or `None` for [`Precision::Full`].
    pub fn rounding(self) -> Option<DType> {
        match self {
            Precision::Full => None,
            Precision::Bf16 => Some(DType::BF16),
            Precision::F16 => Some(DType::F16),
        }
    }

    /// Checks that a product at this precision can take `dtype` operands: any dtype at
    /// [`Precision::Full`]; only F32 when the operands round (autocast's products). The error names `op`.
    ///
    /// ```
    /// use nabla_core::{DType, Precision};
    /// assert!(Precision::Full.check_operand("matmul", DType::F64).is_ok());
    /// let err = Precision::Bf16.check_operand("matmul", DType::F64).unwrap_err();
    /// assert!(err.to_string().contains("float32"));
    /// ```
    pub fn check_operand(self, op: &'static str, dtype: DType) -> Result<()> {
        match self.rounding() {
            None => Ok(()),
            Some(_) if dtype == DType::F32 => Ok(()),
            Some(to) => Err(Error::dtype(op, dtype).with_hint(format!(
                "products with operands rounded to {to} (autocast) take float32 operands"
            ))),
        }
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
    /// How the products multiply: [`Precision::Bf16`] or [`Precision::F16`] round both F32 operands
    /// and sum in f32 (the convolution autocast runs); other dtypes must use [`Precision::Full`]. The
    /// convolution's derivatives keep the precision.
    pub precision: Precision,
}

/// The settings in PyTorch's keyword spelling, for messages:
/// `stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1`.
///
/// ```
/// let p = nabla_core::Conv2dParams { padding: (1, 2), ..Default::default() };
/// assert_eq!(p.to_string(), "stride=(1, 1), padding=(1, 2), dilation=(1, 1), groups=1");
/// ```
impl std::fmt::Display for Conv2dParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "stride={:?}, padding={:?}, dilation={:?}, groups={}",
            self.stride, self.padding, self.dilation, self.groups
        )
    }
}

impl Default for Conv2dParams {
    fn default() -> Self {
        Conv2dParams {
            stride: (1, 1),
            padding: (0, 0),
            dilation: (1, 1),
            groups: 1,
            precision: Precision::Full,
        }
    }
}

impl Conv2dParams {
    /// Output spatial size for an input of `(h, w)` and a kernel of `(kh, kw)`, or `None` when the
    /// (dilated) kernel does not fit into the padded input or a size overflows (see
    /// [`Conv2dParams::checked_output_size`], which tells the two apart).
    ///
    /// ```
    /// use nabla_core::Conv2dParams;
    /// let p = Conv2dParams { padding: (1, 1), ..Default::default() };
    /// assert_eq!(p.output_size((28, 28), (3, 3)), Some((28, 28)));
    /// let huge = Conv2dParams { padding: (usize::MAX / 2, usize::MAX / 2), ..Default::default() };
    /// assert_eq!(huge.output_size((4, 4), (1, 1)), None);
    /// ```
    pub fn output_size(
        &self,
        input: (usize, usize),
        kernel: (usize, usize),
    ) -> Option<(usize, usize)> {
        self.checked_output_size("conv2d", input, kernel)
            .ok()
            .flatten()
    }

    /// [`Conv2dParams::output_size`], with an error naming `op` when the padded input `h + 2 padding`
    /// or the dilated kernel `dilation (k − 1) + 1` is larger than `usize::MAX`; `Ok(None)` when the
    /// kernel does not fit (or a kernel dimension or stride is zero).
    ///
    /// ```
    /// use nabla_core::Conv2dParams;
    /// let huge = Conv2dParams { padding: (usize::MAX / 2, 0), ..Default::default() };
    /// let err = huge.checked_output_size("conv2d", (4, 4), (1, 1)).unwrap_err();
    /// assert!(err.to_string().contains("conv2d") && err.to_string().contains("padded"));
    /// let plain = Conv2dParams::default();
    /// assert_eq!(plain.checked_output_size("conv2d", (4, 4), (9, 9))?, None);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn checked_output_size(
        &self,
        op: &'static str,
        input: (usize, usize),
        kernel: (usize, usize),
    ) -> Result<Option<(usize, usize)>> {
        let one = |i: usize, k: usize, s: usize, p: usize, d: usize| -> Result<Option<usize>> {
            let Some((padded, span)) = window_sizes(op, i, k, p, d)? else {
                return Ok(None);
            };
            if s == 0 || span > padded {
                return Ok(None);
            }
            Ok(Some((padded - span) / s + 1))
        };
        let (s, p, d) = (self.stride, self.padding, self.dilation);
        let h = one(input.0, kernel.0, s.0, p.0, d.0)?;
        let w = one(input.1, kernel.1, s.1, p.1, d.1)?;
        Ok(h.zip(w))
    }

    /// The input channels of weights `[C_out, per_group, KH, KW]`: `per_group × groups`, or an error
    /// naming `op` when that overflows `usize`.
    ///
    /// ```
    /// use nabla_core::Conv2dParams;
    /// let p = Conv2dParams { groups: 4, ..Default::default() };
    /// assert_eq!(p.input_channels("conv2d", 3)?, 12);
    /// let huge = Conv2dParams { groups: usize::MAX, ..Default::default() };
    /// assert!(huge.input_channels("conv2d", 2).is_err());
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn input_channels(&self, op: &'static str, per_group: usize) -> Result<usize> {
        per_group.checked_mul(self.groups).ok_or_else(|| {
            Error::invalid(
                op,
                format!(
                    "{per_group} channels per group x {} groups overflow usize",
                    self.groups
                ),
            )
        })
    }
}

/// The padded input `i + 2p` and the dilated kernel `d (k − 1) + 1` of one axis of a window op, or
/// `None` for an empty kernel; an error naming `op` when either is larger than `usize::MAX`.
fn window_sizes(
    op: &'static str,
    i: usize,
    k: usize,
    p: usize,
    d: usize,
) -> Result<Option<(usize, usize)>> {
    let too_large = |what: String| {
        Error::invalid(
            op,
            format!("{what} is larger than usize::MAX; use a smaller padding or dilation"),
        )
    };
    let padded = p
        .checked_mul(2)
        .and_then(|both| both.checked_add(i))
        .ok_or_else(|| too_large(format!("the padded input size {i} + 2 x {p}")))?;
    if k == 0 {
        return Ok(None);
    }
    let span = d
        .checked_mul(k - 1)
        .and_then(|s| s.checked_add(1))
        .ok_or_else(|| too_large(format!("the dilated kernel size {d} x ({k} - 1) + 1")))?;
    Ok(Some((padded, span)))
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

/// The settings in PyTorch's keyword spelling, for messages:
/// `kernel_size=(2, 2), stride=(2, 2), padding=(0, 0), dilation=(1, 1), ceil_mode=False`.
///
/// ```
/// let p = nabla_core::Pool2dParams::square(2);
/// assert_eq!(
///     p.to_string(),
///     "kernel_size=(2, 2), stride=(2, 2), padding=(0, 0), dilation=(1, 1), ceil_mode=False"
/// );
/// ```
impl std::fmt::Display for Pool2dParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "kernel_size={:?}, stride={:?}, padding={:?}, dilation={:?}, ceil_mode={}",
            self.kernel,
            self.stride,
            self.padding,
            self.dilation,
            if self.ceil_mode { "True" } else { "False" }
        )
    }
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
        self.checked_output_size("max_pool2d", input).ok().flatten()
    }

    /// [`Pool2dParams::output_size`], with an error naming `op` when the padded input or the dilated
    /// window is larger than `usize::MAX`; `Ok(None)` when the parameters are invalid or no window fits.
    ///
    /// ```
    /// use nabla_core::Pool2dParams;
    /// let p = Pool2dParams { padding: (usize::MAX / 2, 0), ..Pool2dParams::square(usize::MAX) };
    /// assert!(p.checked_output_size("max_pool2d", (4, 4)).is_err());
    /// assert_eq!(Pool2dParams::square(2).checked_output_size("max_pool2d", (4, 4))?, Some((2, 2)));
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn checked_output_size(
        &self,
        op: &'static str,
        input: (usize, usize),
    ) -> Result<Option<(usize, usize)>> {
        let ceil = self.ceil_mode;
        let one = |i: usize, k: usize, s: usize, p: usize, d: usize| -> Result<Option<usize>> {
            if k == 0 || s == 0 || d == 0 {
                return Ok(None);
            }
            let Some((padded, span)) = window_sizes(op, i, k, p, d)? else {
                return Ok(None);
            };
            // 2p fits: window_sizes computed i + 2p.
            if 2 * p > span || span > padded {
                return Ok(None);
            }
            let room = padded - span;
            let mut out = if ceil { room.div_ceil(s) } else { room / s } + 1;
            // With ceil_mode the last window must start inside the input or the left padding (a
            // start past usize::MAX is past it).
            if ceil && (out - 1).checked_mul(s).is_none_or(|start| start >= i + p) {
                out -= 1;
            }
            Ok(Some(out))
        };
        let (k, s, p, d) = (self.kernel, self.stride, self.padding, self.dilation);
        let h = one(input.0, k.0, s.0, p.0, d.0)?;
        let w = one(input.1, k.1, s.1, p.1, d.1)?;
        Ok(h.zip(w))
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
