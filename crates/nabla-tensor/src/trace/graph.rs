//! The traced program IR: values, nodes, the graph builder and the snapshotted [`Program`].

use nabla_core::{
    ArgReduceOp, BinaryOp, CompareOp, Conv2dParams, DType, Distribution, ExtensionOp, HostData,
    Layout, Pool2dParams, ReduceOp, RngKey, Scalar, UnaryOp,
};
use std::fmt;
use std::sync::Arc;

/// Index of a value (a device buffer at run time) in a traced graph or [`Program`].
pub type ValueId = usize;

/// Static metadata of a traced value: the contiguous buffer a node produces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueInfo {
    /// Element type of the buffer.
    pub dtype: DType,
    /// Row-major shape of the buffer as the producing op defines it.
    pub shape: Vec<usize>,
}

impl ValueInfo {
    /// Number of elements of the buffer.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// `true` when the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Size of the buffer in bytes.
    pub fn bytes(&self) -> usize {
        self.len() * self.dtype.size_in_bytes()
    }
}

/// One input of a node: a value seen through the (static) view the op was called with.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceOperand {
    /// The value read.
    pub value: ValueId,
    /// The view of that value's buffer.
    pub layout: Layout,
}

/// The operation of a node, mirroring the methods of [`nabla_core::Backend`] with their parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum TraceOp {
    /// Program input number `index` (a placeholder), bound at run time.
    Input {
        /// Position among the program's inputs (order of creation).
        index: usize,
    },
    /// Host data baked into the program ([`nabla_core::Backend::upload`]).
    Constant(HostData),
    /// A buffer filled with one value ([`nabla_core::Backend::full`]).
    Full(Scalar),
    /// Random draws ([`nabla_core::Backend::random`]).
    Random {
        /// The distribution.
        dist: Distribution,
        /// Seed and counter of the first element.
        key: RngKey,
    },
    /// Materialisation of a view.
    Copy,
    /// Elementwise unary op.
    Unary(UnaryOp),
    /// Elementwise binary op.
    Binary(BinaryOp),
    /// Elementwise comparison.
    Compare(CompareOp),
    /// `cond ? on_true : on_false`.
    Select,
    /// Dtype conversion.
    Cast(DType),
    /// Reduction over axes (keepdims).
    Reduce {
        /// The reduction.
        op: ReduceOp,
        /// Reduced axes.
        axes: Vec<usize>,
    },
    /// Arg-max / arg-min along an axis.
    ArgReduce {
        /// The reduction.
        op: ArgReduceOp,
        /// Reduced axis.
        axis: usize,
    },
    /// Inclusive cumulative sum.
    Cumsum {
        /// Summed axis.
        axis: usize,
    },
    /// Batched matrix product.
    Matmul,
    /// Constant padding.
    Pad {
        /// `(before, after)` per dimension.
        pads: Vec<(usize, usize)>,
        /// Fill value.
        value: Scalar,
    },
    /// Concatenation along an axis.
    Concat {
        /// Joined axis.
        axis: usize,
    },
    /// `take_along_axis`.
    Gather {
        /// Indexed axis.
        axis: usize,
    },
    /// Selection of entries by a 1-D index.
    IndexSelect {
        /// Indexed axis.
        axis: usize,
    },
    /// Transpose of gather.
    ScatterAdd {
        /// Indexed axis.
        axis: usize,
    },
    /// One-hot encoding.
    OneHot {
        /// Number of classes.
        classes: usize,
        /// Output dtype.
        dtype: DType,
    },
    /// Stable sort (two outputs: values, positions).
    Sort {
        /// Sorted axis.
        axis: usize,
        /// Descending order.
        descending: bool,
    },
    /// Top-k (two outputs: values, positions).
    Topk {
        /// Axis.
        axis: usize,
        /// Number of entries kept.
        k: usize,
        /// Largest (else smallest).
        largest: bool,
    },
    /// 2-D max pooling (two outputs: values, flat positions of the maxima).
    MaxPool2d(Pool2dParams),
    /// 2-D convolution.
    Conv2d(Conv2dParams),
    /// Gradient of a 2-D convolution with respect to its input.
    Conv2dInputGrad {
        /// Spatial size of the input.
        input_hw: (usize, usize),
        /// Convolution parameters.
        params: Conv2dParams,
    },
    /// Gradient of a 2-D convolution with respect to its weights.
    Conv2dWeightGrad {
        /// Spatial size of the kernel.
        kernel_hw: (usize, usize),
        /// Convolution parameters.
        params: Conv2dParams,
    },
    /// An extension op ([`nabla_core::ExtensionOp`]), run with [`nabla_core::Backend::extension`].
    Extension(ExtensionCall),
    /// A fused elementwise kernel over the node's inputs (see [`nabla_core::FusedKernel`]), run with
    /// [`nabla_core::Backend::fused`]; built by the compiler's fusion pass.
    Fused(nabla_core::FusedKernel),
}

/// An extension op held by a program node; two calls are equal when the ops compute the same function
/// ([`ExtensionOp::same_as`]).
#[derive(Clone, Debug)]
pub struct ExtensionCall(pub Arc<dyn ExtensionOp>);

impl PartialEq for ExtensionCall {
    fn eq(&self, other: &Self) -> bool {
        self.0.same_as(other.0.as_ref())
    }
}

impl fmt::Display for TraceOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceOp::Input { index } => write!(f, "input {index}"),
            TraceOp::Constant(data) => {
                write!(f, "constant {}x{}", short_dtype(data.dtype()), data.len())
            }
            TraceOp::Full(v) => write!(f, "full {v}"),
            TraceOp::Random { dist, key } => {
                write!(f, "random {dist:?} seed={} offset={}", key.seed, key.offset)
            }
            TraceOp::Copy => write!(f, "copy"),
            TraceOp::Unary(op) => write!(f, "{}", op.name()),
            TraceOp::Binary(op) => write!(f, "{}", op.name()),
            TraceOp::Compare(op) => write!(f, "{}", op.name()),
            TraceOp::Select => write!(f, "select"),
            TraceOp::Cast(d) => write!(f, "cast {}", short_dtype(*d)),
            TraceOp::Reduce { op, axes } => write!(f, "reduce_{} axes={axes:?}", op.name()),
            TraceOp::ArgReduce { op, axis } => write!(f, "{} axis={axis}", op.name()),
            TraceOp::Cumsum { axis } => write!(f, "cumsum axis={axis}"),
            TraceOp::Matmul => write!(f, "matmul"),
            TraceOp::Pad { pads, value } => write!(f, "pad {pads:?} value={value}"),
            TraceOp::Concat { axis } => write!(f, "concat axis={axis}"),
            TraceOp::Gather { axis } => write!(f, "gather axis={axis}"),
            TraceOp::IndexSelect { axis } => write!(f, "index_select axis={axis}"),
            TraceOp::ScatterAdd { axis } => write!(f, "scatter_add axis={axis}"),
            TraceOp::OneHot { classes, dtype } => {
                write!(f, "one_hot classes={classes} dtype={}", short_dtype(*dtype))
            }
            TraceOp::Sort { axis, descending } => {
                write!(f, "sort axis={axis} descending={descending}")
            }
            TraceOp::Topk { axis, k, largest } => {
                write!(f, "topk axis={axis} k={k} largest={largest}")
            }
            TraceOp::MaxPool2d(p) => write!(f, "max_pool2d {p:?}"),
            TraceOp::Conv2d(p) => write!(f, "conv2d {p:?}"),
            TraceOp::Conv2dInputGrad { input_hw, params } => {
                write!(f, "conv2d_input_grad input_hw={input_hw:?} {params:?}")
            }
            TraceOp::Conv2dWeightGrad { kernel_hw, params } => {
                write!(f, "conv2d_weight_grad kernel_hw={kernel_hw:?} {params:?}")
            }
            TraceOp::Extension(call) => write!(f, "{}", call.0.name()),
            TraceOp::Fused(kernel) => write!(f, "fused[{kernel}]"),
        }
    }
}

/// One recorded operation: its op, its inputs (values with views) and the values it produces.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// What the node computes.
    pub op: TraceOp,
    /// Inputs in the order of the backend method's arguments.
    pub inputs: Vec<TraceOperand>,
    /// Produced values (two for sort and top-k, one otherwise).
    pub outputs: Vec<ValueId>,
}

/// The mutable graph a [`crate::TracingBackend`] appends to.
#[derive(Debug, Default)]
pub(crate) struct GraphBuilder {
    pub(crate) values: Vec<ValueInfo>,
    pub(crate) nodes: Vec<Node>,
    pub(crate) inputs: Vec<ValueId>,
}

impl GraphBuilder {
    /// Appends a node producing values described by `outs`; returns their ids.
    pub(crate) fn push(
        &mut self,
        op: TraceOp,
        inputs: Vec<TraceOperand>,
        outs: Vec<ValueInfo>,
    ) -> Vec<ValueId> {
        let ids: Vec<ValueId> = outs
            .into_iter()
            .map(|info| {
                self.values.push(info);
                self.values.len() - 1
            })
            .collect();
        if let TraceOp::Input { .. } = op {
            self.inputs.push(ids[0]);
        }
        self.nodes.push(Node {
            op,
            inputs,
            outputs: ids.clone(),
        });
        ids
    }

    /// Snapshots the nodes the `outputs` need (every input is kept), renumbering values densely.
    pub(crate) fn snapshot(&self, outputs: &[TraceOperand]) -> Program {
        let mut needed = vec![false; self.values.len()];
        for o in outputs {
            needed[o.value] = true;
        }
        let mut keep = vec![false; self.nodes.len()];
        for (i, node) in self.nodes.iter().enumerate().rev() {
            let is_input = matches!(node.op, TraceOp::Input { .. });
            if is_input || node.outputs.iter().any(|&v| needed[v]) {
                keep[i] = true;
                for operand in &node.inputs {
                    needed[operand.value] = true;
                }
            }
        }
        let mut renumber = vec![usize::MAX; self.values.len()];
        let mut values = Vec::new();
        let mut nodes = Vec::new();
        for (node, _) in self.nodes.iter().zip(&keep).filter(|(_, k)| **k) {
            let outs = node
                .outputs
                .iter()
                .map(|&v| {
                    renumber[v] = values.len();
                    values.push(self.values[v].clone());
                    renumber[v]
                })
                .collect();
            let ins = node
                .inputs
                .iter()
                .map(|o| TraceOperand {
                    value: renumber[o.value],
                    layout: o.layout.clone(),
                })
                .collect();
            nodes.push(Node {
                op: node.op.clone(),
                inputs: ins,
                outputs: outs,
            });
        }
        let outputs: Vec<TraceOperand> = outputs
            .iter()
            .map(|o| TraceOperand {
                value: renumber[o.value],
                layout: o.layout.clone(),
            })
            .collect();
        let inputs = self.inputs.iter().map(|&v| renumber[v]).collect();
        let mut last_use = vec![None; values.len()];
        for (i, node) in nodes.iter().enumerate() {
            for o in &node.inputs {
                last_use[o.value] = Some(i);
            }
        }
        for o in &outputs {
            last_use[o.value] = Some(usize::MAX);
        }
        Program {
            values,
            nodes,
            inputs,
            outputs,
            last_use,
            donations: Vec::new(),
        }
    }
}

/// A traced program: a straight-line list of nodes over values, with typed inputs and (possibly view)
/// outputs. Build one with [`crate::TracingBackend::program`], run it with [`crate::GraphExecutor`].
///
/// Its [`Display`](fmt::Display) prints one line per node, `%id: dtype[shape] = op operands`, where an
/// operand is `%id` when it reads the whole buffer in row-major order and otherwise
/// `%id[view SHAPE strides(..)]` (with `offset N` when the view starts past the buffer's start), then a
/// line `inputs:` and a line `outputs:`. A fused node prints its kernel, `fused[tanh(in0 * in1 + 1)]`,
/// and a node that overwrites an input buffer under the buffer-reuse plan ends with `(reuses %id)`.
///
/// ```
/// use nabla_tensor::TracingBackend;
/// use nabla_core::DType;
/// let tb = TracingBackend::new();
/// let a = tb.placeholder([4, 5], DType::F32)?;
/// let b = tb.placeholder([5, 3], DType::F32)?;
/// let y = a.matmul(&b)?.tanh()?;
/// let program = tb.program(&[&y, &y.t()?])?;
/// let text = program.to_string();
/// println!("{text}");
/// assert_eq!(
///     text,
///     "%0: f32[4,5] = input 0\n\
///      %1: f32[5,3] = input 1\n\
///      %2: f32[4,3] = matmul %0, %1\n\
///      %3: f32[4,3] = tanh %2\n\
///      inputs: %0, %1\n\
///      outputs: %3, %3[view 3x4 strides(1,3)]\n"
/// );
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Program {
    pub(crate) values: Vec<ValueInfo>,
    pub(crate) nodes: Vec<Node>,
    pub(crate) inputs: Vec<ValueId>,
    pub(crate) outputs: Vec<TraceOperand>,
    /// Index of the last node reading each value; `Some(usize::MAX)` for outputs, `None` if never read.
    pub(crate) last_use: Vec<Option<usize>>,
    /// Buffer-reuse plan: for node `i`, `donations[i]` is the operand whose buffer the node overwrites
    /// (fused nodes only). Empty when no plan was made.
    pub(crate) donations: Vec<Option<usize>>,
}

impl Program {
    /// Metadata of every value, indexed by [`ValueId`].
    pub fn values(&self) -> &[ValueInfo] {
        &self.values
    }

    /// The nodes in execution order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The value of each program input, in placeholder order.
    pub fn inputs(&self) -> &[ValueId] {
        &self.inputs
    }

    /// The outputs: values seen through the views the traced tensors had.
    pub fn outputs(&self) -> &[TraceOperand] {
        &self.outputs
    }

    /// Total bytes of every value of the program (what a run would hold without freeing anything).
    pub fn total_value_bytes(&self) -> usize {
        self.values.iter().map(ValueInfo::bytes).sum()
    }

    fn write_operand(&self, f: &mut fmt::Formatter<'_>, o: &TraceOperand) -> fmt::Result {
        write!(f, "%{}", o.value)?;
        let info = &self.values[o.value];
        let whole = o.layout.shape() == info.shape.as_slice()
            && o.layout.offset() == 0
            && o.layout.is_contiguous();
        if !whole {
            let dims = o.layout.shape();
            let shape = if dims.is_empty() {
                "scalar".to_string()
            } else {
                join(dims, "x")
            };
            write!(
                f,
                "[view {shape} strides({})",
                join(o.layout.strides(), ",")
            )?;
            if o.layout.offset() != 0 {
                write!(f, " offset {}", o.layout.offset())?;
            }
            write!(f, "]")?;
        }
        Ok(())
    }
}

/// Short dtype name for the IR (`f32`, `i64`, `bool`, ...).
pub(crate) fn short_dtype(d: DType) -> &'static str {
    match d {
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::C64 => "c64",
        DType::C128 => "c128",
        DType::I32 => "i32",
        DType::I64 => "i64",
        DType::U8 => "u8",
        DType::Bool => "bool",
    }
}

fn join<T: fmt::Display>(items: &[T], sep: &str) -> String {
    items
        .iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(sep)
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (node_index, node) in self.nodes.iter().enumerate() {
            for (i, &v) in node.outputs.iter().enumerate() {
                if i > 0 {
                    write!(f, ", ")?;
                }
                let info = &self.values[v];
                write!(
                    f,
                    "%{v}: {}[{}]",
                    short_dtype(info.dtype),
                    join(&info.shape, ",")
                )?;
            }
            write!(f, " = {}", node.op)?;
            for (i, o) in node.inputs.iter().enumerate() {
                write!(f, "{}", if i == 0 { " " } else { ", " })?;
                self.write_operand(f, o)?;
            }
            if let Some(k) = self.reused_operand(node_index) {
                write!(f, " (reuses %{})", node.inputs[k].value)?;
            }
            writeln!(f)?;
        }
        let inputs: Vec<String> = self.inputs.iter().map(|v| format!("%{v}")).collect();
        writeln!(f, "inputs: {}", inputs.join(", "))?;
        write!(f, "outputs:")?;
        for (i, o) in self.outputs.iter().enumerate() {
            write!(f, "{}", if i == 0 { " " } else { ", " })?;
            self.write_operand(f, o)?;
        }
        writeln!(f)
    }
}
