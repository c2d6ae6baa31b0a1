//! Common-subexpression elimination.
//!
//! Two nodes compute the same values when they have the same op (with the same parameters), read the
//! same values through equal layouts and produce values of the same dtypes and shapes. Every op of a
//! traced program is a pure function of those, including `Full`, `Constant` (compared by data) and
//! `Random` (the same key gives the same draws), so the later node is dropped and its readers read the
//! earlier one's outputs instead. Placeholders are never merged.
//!
//! A matrix product also matches the product of its operands' transposes in the other order:
//! `b @ aᵀ` is `(a @ bᵀ)ᵀ` (the last two axes swapped, equal batch dimensions), so the later one
//! becomes a `Copy` of a transposed view of the earlier one's output, which simplification then
//! forwards to its readers. A Hessian-vector product of `sum(tanh(X Xᵀ))` computes both `V Xᵀ` and
//! `X Vᵀ`. Each element of the two is the same sum of the same products (multiplication commutes
//! exactly) in the same order of the contracted axis, so the values are bit for bit the same on a
//! backend whose matrix product sums every element in one order (the CPU backend's does; a test
//! checks it over shapes that take every path of its kernels).
//!
//! Ops are compared bit for bit, structurally ([`Primitive::same_function`]): every parameter by its
//! bits (so `Full(0.0)` and `Full(-0.0)` stay apart, and equal NaNs merge), constants by their
//! elements' bits, extension ops by their explicit identity (name and parameters,
//! [`nabla_core::ExtensionOp::same_as`]). Program inputs are never merged.

use super::rebuild;
use crate::trace::graph::{Node, Program, TraceOp, TraceOperand, ValueId};
use nabla_core::{DType, Layout, Primitive, Result};
use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

/// A hash of the op's identity ([`Primitive::identity_words`]).
fn fingerprint(op: &TraceOp) -> u64 {
    let mut h = DefaultHasher::new();
    match op {
        TraceOp::Input { index } => (u64::MAX, *index).hash(&mut h),
        TraceOp::Primitive(p) => p.identity().hash(&mut h),
    }
    h.finish()
}

/// Bit-exact op equality (see the module documentation).
fn same_op(a: &TraceOp, b: &TraceOp) -> bool {
    match (a, b) {
        (TraceOp::Primitive(x), TraceOp::Primitive(y)) => x.same_function(y),
        (TraceOp::Input { index: i }, TraceOp::Input { index: j }) => i == j,
        (TraceOp::Input { .. }, TraceOp::Primitive(_))
        | (TraceOp::Primitive(_), TraceOp::Input { .. }) => false,
    }
}

/// Everything but the op's parameters that identifies a node's result.
#[derive(PartialEq, Eq, Hash)]
struct Key {
    op: u64,
    inputs: Vec<(ValueId, Layout)>,
    outputs: Vec<(DType, Vec<usize>)>,
}

impl Key {
    /// The key of the node computing `key`'s transposed result when `key` is a matrix product
    /// `a @ b` (`op` its fingerprint) of operands of equal rank (2 or more) and equal batch
    /// dimensions: the product `bᵀ @ aᵀ`, with the last two axes of each operand and of the output
    /// swapped.
    fn transposed_product(&self, op: &TraceOp) -> Option<Key> {
        let (TraceOp::Primitive(Primitive::Matmul), [(a, la), (b, lb)], [(dtype, shape)]) =
            (op, &self.inputs[..], &self.outputs[..])
        else {
            return None;
        };
        let rank = shape.len();
        let batch = rank.checked_sub(2)?;
        let equal_batches = la.rank() == rank
            && lb.rank() == rank
            && la.shape()[..batch] == shape[..batch]
            && lb.shape()[..batch] == shape[..batch];
        if !equal_batches {
            return None;
        }
        let swap = |l: &Layout| l.transpose(batch, batch + 1).ok();
        let mut twin_shape = shape.clone();
        twin_shape.swap(batch, batch + 1);
        Some(Key {
            op: self.op,
            inputs: vec![(*b, swap(lb)?), (*a, swap(la)?)],
            outputs: vec![(*dtype, twin_shape)],
        })
    }
}

/// A `Copy` into `out` of the transpose (last two axes) of `twin`'s output of shape `shape`.
fn transposed_copy(twin: ValueId, shape: &[usize], out: ValueId) -> Option<Node> {
    let rank = shape.len();
    let layout = Layout::contiguous(shape.to_vec())
        .transpose(rank - 2, rank - 1)
        .ok()?;
    Some(Node {
        op: TraceOp::Primitive(Primitive::Copy),
        inputs: vec![TraceOperand {
            value: twin,
            layout,
        }],
        outputs: vec![out],
    })
}

pub(crate) fn eliminate_common_subexpressions(program: &Program) -> Result<Program> {
    // Representative of each value: itself, or the earlier equal value it was merged into.
    let mut alias: Vec<ValueId> = (0..program.values.len()).collect();
    let remap = |o: &TraceOperand, alias: &[ValueId]| TraceOperand {
        value: alias[o.value],
        layout: o.layout.clone(),
    };
    let mut seen: HashMap<Key, Vec<usize>> = HashMap::new();
    let mut nodes = Vec::with_capacity(program.nodes.len());
    for node in &program.nodes {
        let mut node = node.clone();
        node.inputs = node.inputs.iter().map(|o| remap(o, &alias)).collect();
        if matches!(node.op, TraceOp::Input { .. }) {
            nodes.push(node);
            continue;
        }
        let key = Key {
            op: fingerprint(&node.op),
            inputs: node
                .inputs
                .iter()
                .map(|o| (o.value, o.layout.clone()))
                .collect(),
            outputs: node
                .outputs
                .iter()
                .map(|&v| (program.values[v].dtype, program.values[v].shape.clone()))
                .collect(),
        };
        let twin = key.transposed_product(&node.op).and_then(|twin_key| {
            let &j = seen.get(&twin_key)?.first()?;
            let (&twin, &out) = (nodes[j].outputs.first()?, node.outputs.first()?);
            transposed_copy(twin, &program.values[twin].shape, out)
        });
        let candidates = seen.entry(key).or_default();
        let earlier = candidates
            .iter()
            .copied()
            .find(|&j| same_op(&nodes[j].op, &node.op));
        if let (None, Some(copy)) = (earlier, twin) {
            nodes.push(copy);
            continue;
        }
        match earlier {
            Some(j) => {
                let first = &nodes[j];
                for (&dup, &kept) in node.outputs.iter().zip(&first.outputs) {
                    alias[dup] = kept;
                }
            }
            None => {
                candidates.push(nodes.len());
                nodes.push(node);
            }
        }
    }
    let outputs = program.outputs.iter().map(|o| remap(o, &alias)).collect();
    rebuild(&program.values, nodes, &program.inputs, outputs)
}
