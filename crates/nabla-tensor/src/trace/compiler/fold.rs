//! Constant folding.
//!
//! A node whose inputs are all constants (values produced by `Constant` or `Full` nodes, or folded
//! earlier in this pass) is evaluated at compile time on the backend the caller named
//! ([`crate::GraphCompiler::fold_on`]), by running a two-level program (its constant inputs, then the
//! node) with the [`GraphExecutor`], and replaced by one constant node
//! per output: a `Full` when every element has the same bits (cheaper and smaller), else a
//! `Constant` holding the data.
//!
//! Not folded: placeholders and anything depending on them; `Random` (deterministic, but possibly
//! large and cheap to draw on the device); a lone `Full` (already as cheap as a constant); any op this
//! pass does not know (extension ops, fused nodes); nodes with an output of more than
//! [`MAX_FOLDED_ELEMENTS`] elements; and nodes whose evaluation fails (left as they are, so the error
//! still happens when the program runs).

use super::rebuild;
use crate::Tensor;
use crate::trace::executor::GraphExecutor;
use crate::trace::graph::{GraphBuilder, Node, Program, TraceOp, TraceOperand, ValueId};
use nabla_core::{
    Backend, Device, Element, HostData, Layout, Primitive, Result, Scalar, with_host_data,
};
use std::sync::Arc;

/// Runs a program without inputs and reads its outputs back.
type RunConstants = dyn Fn(&Program) -> Result<Vec<HostData>> + Send + Sync;

/// Runs constant subprograms (no inputs) on the backend a compiler folds on.
#[derive(Clone)]
pub(super) struct Evaluator {
    run: Arc<RunConstants>,
    /// The device it evaluates on.
    pub(super) device: Device,
}

impl Evaluator {
    pub(super) fn on<B: Backend>(backend: &B) -> Self {
        let device = backend.device();
        let backend = backend.clone();
        let run = move |program: &Program| -> Result<Vec<HostData>> {
            GraphExecutor::new(&backend)
                .run(program, &[])?
                .iter()
                .map(Tensor::to_host)
                .collect()
        };
        Evaluator {
            run: Arc::new(run),
            device,
        }
    }
}

/// Largest output, in elements, a folded node may have.
const MAX_FOLDED_ELEMENTS: usize = 1 << 16;

/// Ops this pass evaluates when their inputs are constant: the catalogue's `folds` kinds
/// ([`nabla_core::PrimitiveKind::folds`]). Constants and random draws are what folding starts from or
/// leaves alone; extension and fused nodes are not evaluated at compile time.
fn foldable(op: &TraceOp) -> bool {
    match op {
        TraceOp::Primitive(prim) => prim.kind().folds(),
        TraceOp::Input { .. } => false,
    }
}

pub(crate) fn fold_constants(program: &Program, evaluator: &Evaluator) -> Result<Program> {
    // Index in `nodes` of the constant node producing each value, if it is a constant.
    let mut constant: Vec<Option<usize>> = vec![None; program.values.len()];
    let mut nodes: Vec<Node> = Vec::with_capacity(program.nodes.len());
    for node in &program.nodes {
        let candidate = foldable(&node.op)
            && !node.inputs.is_empty()
            && node.inputs.iter().all(|o| constant[o.value].is_some())
            && node
                .outputs
                .iter()
                .all(|&v| program.values[v].len() <= MAX_FOLDED_ELEMENTS);
        let folded = if candidate {
            evaluate(evaluator, program, node, &nodes, &constant)
        } else {
            None
        };
        match folded {
            Some(results) => {
                for (&v, data) in node.outputs.iter().zip(results) {
                    constant[v] = Some(nodes.len());
                    nodes.push(Node {
                        op: constant_op(data),
                        inputs: Vec::new(),
                        outputs: vec![v],
                    });
                }
            }
            None => {
                if matches!(
                    node.op,
                    TraceOp::Primitive(Primitive::Constant(_))
                        | TraceOp::Primitive(Primitive::Full { .. })
                ) {
                    constant[node.outputs[0]] = Some(nodes.len());
                }
                nodes.push(node.clone());
            }
        }
    }
    rebuild(
        &program.values,
        nodes,
        &program.inputs,
        program.outputs.clone(),
    )
}

/// Runs `node` with its constant inputs on the evaluator's backend; `None` when anything fails.
fn evaluate(
    evaluator: &Evaluator,
    program: &Program,
    node: &Node,
    nodes: &[Node],
    constant: &[Option<usize>],
) -> Option<Vec<HostData>> {
    let mut builder = GraphBuilder::default();
    let mut local: Vec<(ValueId, ValueId)> = Vec::new();
    let mut inputs = Vec::with_capacity(node.inputs.len());
    for o in &node.inputs {
        let id = match local.iter().find(|(v, _)| *v == o.value) {
            Some(&(_, id)) => id,
            None => {
                let op = nodes[constant[o.value]?].op.clone();
                let id = builder.values.len();
                builder.values.push(program.values[o.value].clone());
                builder.nodes.push(Node {
                    op,
                    inputs: Vec::new(),
                    outputs: vec![id],
                });
                local.push((o.value, id));
                id
            }
        };
        inputs.push(TraceOperand {
            value: id,
            layout: o.layout.clone(),
        });
    }
    let mut outputs = Vec::with_capacity(node.outputs.len());
    let mut outs = Vec::with_capacity(node.outputs.len());
    for &v in &node.outputs {
        let info = program.values[v].clone();
        outputs.push(TraceOperand {
            value: builder.values.len(),
            layout: Layout::row_major(&info.shape),
        });
        outs.push(builder.values.len());
        builder.values.push(info);
    }
    builder.nodes.push(Node {
        op: node.op.clone(),
        inputs,
        outputs: outs,
    });
    let tiny = builder.snapshot(&outputs);
    let results = (evaluator.run)(&tiny).ok()?;
    results
        .into_iter()
        .zip(&node.outputs)
        .map(|(data, &v)| {
            let info = &program.values[v];
            (data.len() == info.len() && data.dtype() == info.dtype).then_some(data)
        })
        .collect()
}

/// `true` when two scalars have the same bits (so `0.0` and `-0.0` differ).
fn same_bits(a: Scalar, b: Scalar) -> bool {
    match (a, b) {
        (Scalar::F64(x), Scalar::F64(y)) => x.to_bits() == y.to_bits(),
        (Scalar::C128(x), Scalar::C128(y)) => {
            x.re.to_bits() == y.re.to_bits() && x.im.to_bits() == y.im.to_bits()
        }
        (Scalar::I64(x), Scalar::I64(y)) => x == y,
        (Scalar::Bool(x), Scalar::Bool(y)) => x == y,
        _ => false,
    }
}

/// The node producing `data`: `Full` when all elements share their bits (and are not NaN), else
/// `Constant`.
fn constant_op(data: HostData) -> TraceOp {
    let uniform: Option<Scalar> = with_host_data!(&data, v => {
        v.first().map(|x| x.to_scalar()).filter(|&first| {
            let nan = match first {
                Scalar::F64(x) => x.is_nan(),
                Scalar::C128(c) => c.re.is_nan() || c.im.is_nan(),
                _ => false,
            };
            !nan && v.iter().all(|x| same_bits(x.to_scalar(), first))
        })
    });
    let prim = match uniform {
        Some(value) => Primitive::Full {
            value,
            len: data.len(),
            dtype: data.dtype(),
        },
        None => Primitive::Constant(data),
    };
    prim.into()
}
