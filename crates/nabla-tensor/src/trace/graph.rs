//! The traced program IR: values, nodes, the graph builder and the snapshotted [`Program`].

use nabla_core::{DType, Layout, Primitive};
use std::fmt;

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

/// What a node of a traced program computes: a program input, or a backend [`Primitive`] (the one op
/// vocabulary shared with the executor, constant folding and every backend).
#[derive(Clone, Debug, PartialEq)]
pub enum TraceOp {
    /// Program input number `index` (a placeholder), bound at run time.
    Input {
        /// Position among the program's inputs (order of creation).
        index: usize,
    },
    /// A backend operation, replayed with [`Primitive::dispatch`].
    Primitive(Primitive),
}

impl TraceOp {
    /// The primitive the node runs, or `None` for a program input.
    pub fn primitive(&self) -> Option<&Primitive> {
        match self {
            TraceOp::Input { .. } => None,
            TraceOp::Primitive(p) => Some(p),
        }
    }
}

impl From<Primitive> for TraceOp {
    fn from(p: Primitive) -> Self {
        TraceOp::Primitive(p)
    }
}

impl fmt::Display for TraceOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceOp::Input { index } => write!(f, "input {index}"),
            TraceOp::Primitive(p) => write!(f, "{p}"),
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
                    info.dtype.short_name(),
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
