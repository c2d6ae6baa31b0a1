//! The primitive catalogue: every operation a backend runs, as a value.
//!
//! A [`Primitive`] names one method of [`crate::Backend`] together with its parameters. It is the one
//! vocabulary of every layer that records or replays backend work: the tracing backend records
//! primitives, a traced program's nodes hold them, the executor and constant folding replay them with
//! [`Primitive::dispatch`], and program dumps print them. Its output shapes and dtypes are computed in
//! one place ([`Primitive::output_specs`]).
//!
//! The enum is defined through one list that also generates [`PrimitiveKind`] (its fieldless
//! discriminant) with [`PrimitiveKind::ALL`] and [`PrimitiveKind::COUNT`], so tests can walk every
//! primitive without a hand-written list, and a new variant fails to compile until every exhaustive
//! match (dispatch, shape rule, printing, the compiler's tables) has its entry.

mod dispatch;
mod identity;
mod specs;

pub use dispatch::Outputs;
pub use identity::IdentityWords;

use crate::{
    ArgReduceOp, BinaryOp, CompareOp, Conv2dParams, DType, Distribution, ExtensionOp, FusedKernel,
    HostData, Pool2dParams, Precision, ReduceOp, RngKey, Scalar, UnaryOp,
};
use std::fmt;
use std::sync::Arc;

/// `true` when the flag `$want` is among the listed flags (the catalogue's `[...]` after a variant).
macro_rules! primitive_flag {
    ($want:ident;) => { false };
    (elementwise; elementwise $($rest:ident)*) => { true };
    (folds; folds $($rest:ident)*) => { true };
    ($want:ident; $other:ident $($rest:ident)*) => { primitive_flag!($want; $($rest)*) };
}

/// Defines the primitive enum and its fieldless kind from one list of variants. A variant's optional
/// flags after its name state what the compiler may do with it: `elementwise` (each output element
/// depends only on the inputs' elements at the same position, so fusion merges it) and `folds`
/// (constant folding evaluates it when its inputs are constants).
macro_rules! primitive_catalogue {
    (
        $(#[doc = $doc:literal])*
        pub enum $name:ident;
        $(#[doc = $kdoc:literal])*
        pub enum $kind:ident;
        {
            $(
                $(#[doc = $vdoc:literal])*
                $variant:ident $( ( $tfield:ident : $tuple:ty ) )? $( { $( $(#[doc = $fdoc:literal])* $field:ident : $fty:ty ),* $(,)? } )? => $text:literal $( [ $($flag:ident)* ] )?,
            )*
        }
    ) => {
        $(#[doc = $doc])*
        #[derive(Clone, Debug, PartialEq)]
        pub enum $name {
            $(
                $(#[doc = $vdoc])*
                $variant $( ( $tuple ) )? $( { $( $(#[doc = $fdoc])* $field : $fty ),* } )?,
            )*
        }

        $(#[doc = $kdoc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $kind {
            $( $(#[doc = $vdoc])* $variant, )*
        }

        impl $kind {
            /// Number of primitives.
            pub const COUNT: usize = [$(stringify!($variant)),*].len();

            /// Every primitive kind, in declaration order.
            pub const ALL: [$kind; $kind::COUNT] = [$($kind::$variant),*];

            /// The kind's name (`"unary"`, `"matmul"`, ...).
            pub fn name(self) -> &'static str {
                match self {
                    $($kind::$variant => $text,)*
                }
            }

            /// `true` for the elementwise kinds: each output element depends only on the inputs'
            /// elements at its own position (the primitives fusion merges).
            pub fn is_elementwise(self) -> bool {
                match self {
                    $($kind::$variant => primitive_flag!(elementwise; $($($flag)*)?),)*
                }
            }

            /// `true` for the kinds constant folding evaluates at compile time when every input is a
            /// constant; constants, random draws, extension ops and fused kernels are not.
            pub fn folds(self) -> bool {
                match self {
                    $($kind::$variant => primitive_flag!(folds; $($($flag)*)?),)*
                }
            }
        }

        impl $name {
            /// Which primitive this is, without its parameters.
            pub fn kind(&self) -> $kind {
                match self {
                    $($name::$variant { .. } => $kind::$variant,)*
                }
            }

            /// Appends the primitive's kind and parameters to `out` as words (see
            /// [`IdentityWords`]): equal words, the same function (extension ops aside, see
            /// [`Primitive::same_function`]).
            pub fn identity_words(&self, out: &mut Vec<u64>) {
                out.push(self.kind() as u64);
                match self {
                    $(
                        $name::$variant $( ( $tfield ) )? $( { $( $field ),* } )? => {
                            $( $tfield.identity_words(out); )?
                            $( $( $field.identity_words(out); )* )?
                        }
                    )*
                }
            }
        }
    };
}

primitive_catalogue! {
    /// One backend operation with its parameters: what a traced program's node computes, replayed on any
    /// backend by [`Primitive::dispatch`]. Inputs are passed separately, in the order of the backend
    /// method's arguments; every output shape and dtype follows from the inputs' through
    /// [`Primitive::output_specs`].
    ///
    /// ```
    /// use nabla_core::{DType, Primitive, PrimitiveKind, UnaryOp};
    /// let p = Primitive::Unary(UnaryOp::Exp);
    /// assert_eq!(p.kind(), PrimitiveKind::Unary);
    /// assert_eq!(p.to_string(), "exp");
    /// let out = p.output_specs(&[(DType::F32, &[2, 3])])?;
    /// assert_eq!(out[0].shape, vec![2, 3]);
    /// // What the compiler may do with it: fuse it with its neighbours, fold it on constants.
    /// assert!(p.kind().is_elementwise() && p.kind().folds());
    /// assert!(!PrimitiveKind::Matmul.is_elementwise() && !PrimitiveKind::Random.folds());
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub enum Primitive;
    /// The kind of a [`Primitive`], without parameters: [`PrimitiveKind::ALL`] lists every one.
    pub enum PrimitiveKind;
    {
        /// Host data uploaded as is ([`crate::Backend::upload`]).
        Constant(data: HostData) => "constant",
        /// `len` elements of `dtype`, all `value` ([`crate::Backend::full`]).
        Full {
            /// The fill value.
            value: Scalar,
            /// Number of elements.
            len: usize,
            /// Element type.
            dtype: DType,
        } => "full",
        /// `len` random draws of `dtype` ([`crate::Backend::random`]).
        Random {
            /// The distribution.
            dist: Distribution,
            /// Seed and counter of the first element.
            key: RngKey,
            /// Number of elements.
            len: usize,
            /// Element type.
            dtype: DType,
        } => "random",
        /// Materialisation of a view ([`crate::Backend::copy`]).
        Copy => "copy" [folds],
        /// Elementwise unary op.
        Unary(op: UnaryOp) => "unary" [elementwise folds],
        /// Elementwise binary op on two views of one shape.
        Binary(op: BinaryOp) => "binary" [elementwise folds],
        /// Elementwise comparison on two views of one shape.
        Compare(op: CompareOp) => "compare" [elementwise folds],
        /// `cond ? on_true : on_false` on three views of one shape.
        Select => "select" [elementwise folds],
        /// Conversion to a dtype.
        Cast(dtype: DType) => "cast" [elementwise folds],
        /// Reduction over axes, which are kept with size 1.
        Reduce {
            /// The reduction.
            op: ReduceOp,
            /// Reduced axes.
            axes: Vec<usize>,
        } => "reduce" [folds],
        /// Arg-max / arg-min along an axis (kept with size 1), as `I64` positions.
        ArgReduce {
            /// The reduction.
            op: ArgReduceOp,
            /// Reduced axis.
            axis: usize,
        } => "arg_reduce" [folds],
        /// Inclusive cumulative sum.
        Cumsum {
            /// Summed axis.
            axis: usize,
        } => "cumsum" [folds],
        /// Batched matrix product of two inputs with equal batch dimensions.
        Matmul => "matmul" [folds],
        /// [`Primitive::Matmul`] at a precision: F32 inputs with each element rounded to bf16 or f16 and
        /// the products summed in f32 (autocast's products).
        MatmulRounded(precision: Precision) => "matmul_rounded" [folds],
        /// Constant padding.
        Pad {
            /// `(before, after)` per dimension.
            pads: Vec<(usize, usize)>,
            /// Fill value.
            value: Scalar,
        } => "pad" [folds],
        /// Concatenation of any number of inputs along an axis.
        Concat {
            /// Joined axis.
            axis: usize,
        } => "concat" [folds],
        /// `take_along_axis` of `[x, index]`.
        Gather {
            /// Indexed axis.
            axis: usize,
        } => "gather" [folds],
        /// Selection of entries of `[x, index]` by a 1-D index.
        IndexSelect {
            /// Indexed axis.
            axis: usize,
        } => "index_select" [folds],
        /// Transpose of gather, on `[dst, index, src]`.
        ScatterAdd {
            /// Indexed axis.
            axis: usize,
        } => "scatter_add" [folds],
        /// One-hot encoding of integer classes (a new last axis).
        OneHot {
            /// Number of classes.
            classes: usize,
            /// Output dtype.
            dtype: DType,
        } => "one_hot" [folds],
        /// Stable sort (two outputs: values, `I64` positions).
        Sort {
            /// Sorted axis.
            axis: usize,
            /// Descending order.
            descending: bool,
        } => "sort" [folds],
        /// Top-k (two outputs: values, `I64` positions).
        Topk {
            /// Axis.
            axis: usize,
            /// Number of entries kept.
            k: usize,
            /// Largest (else smallest).
            largest: bool,
        } => "topk" [folds],
        /// 2-D max pooling (two outputs: values, flat `I64` positions of the maxima).
        MaxPool2d(params: Pool2dParams) => "max_pool2d" [folds],
        /// 2-D convolution of `[x, w]`.
        Conv2d(params: Conv2dParams) => "conv2d" [folds],
        /// Gradient of a 2-D convolution with respect to its input, on `[grad_out, w]`.
        Conv2dInputGrad {
            /// Spatial size of the input.
            input_hw: (usize, usize),
            /// Convolution parameters.
            params: Conv2dParams,
        } => "conv2d_input_grad" [folds],
        /// Gradient of a 2-D convolution with respect to its weights, on `[x, grad_out]`.
        Conv2dWeightGrad {
            /// Spatial size of the kernel.
            kernel_hw: (usize, usize),
            /// Convolution parameters.
            params: Conv2dParams,
        } => "conv2d_weight_grad" [folds],
        /// An extension op ([`ExtensionOp`]), run with [`crate::Backend::extension`].
        Extension(call: ExtensionCall) => "extension",
        /// A fused elementwise kernel over views of `shape` ([`crate::Backend::fused`]).
        Fused {
            /// The kernel.
            kernel: FusedKernel,
            /// The output shape (every input is a view of it).
            shape: Vec<usize>,
        } => "fused" [elementwise],
    }
}

/// An extension op held by a primitive; two calls are equal when the ops compute the same function
/// ([`ExtensionOp::same_as`]).
#[derive(Clone, Debug)]
pub struct ExtensionCall(pub Arc<dyn ExtensionOp>);

impl PartialEq for ExtensionCall {
    fn eq(&self, other: &Self) -> bool {
        self.0.same_as(other.0.as_ref())
    }
}

impl Primitive {
    /// The primitive's identity as words ([`Primitive::identity_words`]).
    pub fn identity(&self) -> Vec<u64> {
        let mut words = Vec::new();
        self.identity_words(&mut words);
        words
    }

    /// `true` when `self` and `other` compute the same function, bit for bit: equal identity words,
    /// and for extension ops the same op ([`ExtensionOp::same_as`]).
    ///
    /// ```
    /// use nabla_core::{DType, Primitive, Scalar};
    /// let full = |value: f64| Primitive::Full { value: Scalar::F64(value), len: 3, dtype: DType::F32 };
    /// assert!(full(1.5).same_function(&full(1.5)));
    /// // Equal as numbers, different bits: not the same function.
    /// assert!(!full(0.0).same_function(&full(-0.0)));
    /// assert!(full(f64::NAN).same_function(&full(f64::NAN)));
    /// ```
    pub fn same_function(&self, other: &Primitive) -> bool {
        let same_ops = match (self, other) {
            (Primitive::Extension(a), Primitive::Extension(b)) => a == b,
            _ => true,
        };
        same_ops && self.identity() == other.identity()
    }

    /// The op's own name for errors and dumps: the elementwise op's name for unary, binary and
    /// comparison primitives (`"exp"`, `"add"`), the extension op's name for extensions, otherwise the
    /// kind's name.
    pub fn name(&self) -> &str {
        match self {
            Primitive::Unary(op) => op.name(),
            Primitive::Binary(op) => op.name(),
            Primitive::Compare(op) => op.name(),
            Primitive::ArgReduce { op, .. } => op.name(),
            Primitive::Extension(call) => call.0.name(),
            Primitive::Constant(_)
            | Primitive::Full { .. }
            | Primitive::Random { .. }
            | Primitive::Copy
            | Primitive::Select
            | Primitive::Cast(_)
            | Primitive::Reduce { .. }
            | Primitive::Cumsum { .. }
            | Primitive::Matmul
            | Primitive::MatmulRounded(_)
            | Primitive::Pad { .. }
            | Primitive::Concat { .. }
            | Primitive::Gather { .. }
            | Primitive::IndexSelect { .. }
            | Primitive::ScatterAdd { .. }
            | Primitive::OneHot { .. }
            | Primitive::Sort { .. }
            | Primitive::Topk { .. }
            | Primitive::MaxPool2d(_)
            | Primitive::Conv2d(_)
            | Primitive::Conv2dInputGrad { .. }
            | Primitive::Conv2dWeightGrad { .. }
            | Primitive::Fused { .. } => self.kind().name(),
        }
    }
}

impl fmt::Display for Primitive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Primitive::Constant(data) => {
                write!(f, "constant {}x{}", data.dtype().short_name(), data.len())
            }
            Primitive::Full { value, .. } => write!(f, "full {value}"),
            Primitive::Random { dist, key, .. } => {
                write!(f, "random {dist:?} seed={} offset={}", key.seed, key.offset)
            }
            Primitive::Copy | Primitive::Select | Primitive::Matmul => f.write_str(self.name()),
            Primitive::MatmulRounded(precision) => match precision.rounding() {
                Some(to) => write!(f, "matmul_{}", to.short_name()),
                None => f.write_str("matmul"),
            },
            Primitive::Unary(op) => f.write_str(op.name()),
            Primitive::Binary(op) => f.write_str(op.name()),
            Primitive::Compare(op) => f.write_str(op.name()),
            Primitive::Cast(d) => write!(f, "cast {}", d.short_name()),
            Primitive::Reduce { op, axes } => write!(f, "reduce_{} axes={axes:?}", op.name()),
            Primitive::ArgReduce { op, axis } => write!(f, "{} axis={axis}", op.name()),
            Primitive::Cumsum { axis } => write!(f, "cumsum axis={axis}"),
            Primitive::Pad { pads, value } => write!(f, "pad {pads:?} value={value}"),
            Primitive::Concat { axis } => write!(f, "concat axis={axis}"),
            Primitive::Gather { axis } => write!(f, "gather axis={axis}"),
            Primitive::IndexSelect { axis } => write!(f, "index_select axis={axis}"),
            Primitive::ScatterAdd { axis } => write!(f, "scatter_add axis={axis}"),
            Primitive::OneHot { classes, dtype } => {
                write!(f, "one_hot classes={classes} dtype={}", dtype.short_name())
            }
            Primitive::Sort { axis, descending } => {
                write!(f, "sort axis={axis} descending={descending}")
            }
            Primitive::Topk { axis, k, largest } => {
                write!(f, "topk axis={axis} k={k} largest={largest}")
            }
            Primitive::MaxPool2d(p) => write!(f, "max_pool2d {p:?}"),
            Primitive::Conv2d(p) => write!(f, "conv2d {p:?}"),
            Primitive::Conv2dInputGrad { input_hw, params } => {
                write!(f, "conv2d_input_grad input_hw={input_hw:?} {params:?}")
            }
            Primitive::Conv2dWeightGrad { kernel_hw, params } => {
                write!(f, "conv2d_weight_grad kernel_hw={kernel_hw:?} {params:?}")
            }
            Primitive::Extension(call) => f.write_str(call.0.name()),
            Primitive::Fused { kernel, .. } => write!(f, "fused[{kernel}]"),
        }
    }
}
