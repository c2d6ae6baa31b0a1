//! Elementwise fusion: maximal groups of elementwise nodes become one [`Primitive::Fused`](nabla_core::Primitive::Fused) node.
//!
//! Elementwise nodes are unary, binary, comparison, select, cast and already fused nodes. A node joins
//! the group of the node reading its output when that output
//! - has exactly one reader in the whole program (one operand of one node), which is elementwise,
//! - is read as the whole buffer in row-major order (shape, offset 0, contiguous), with the reader's
//!   output shape,
//! - and is not a program output.
//!
//! So every intermediate of a group is computed and consumed inside the fused kernel and never
//! materialised. The fused node takes the group's external operands, each with its view (broadcasts,
//! transposes and slices are fine: the kernel reads through them), and sits where the group's last node
//! was, which keeps the order topological since every member only feeds the group. `full` values (and
//! one-element constants) read by a group become constants of the kernel, whatever the view; the node
//! producing one is dropped when the groups were its only readers.
//!
//! A group of a single node stays as it is, except when that node can write its result into one of its
//! input buffers (see [`super::reuse`]): it then becomes a one-op fused node, as only fused nodes take
//! part in buffer reuse. Kernels the core rejects ([`FusedKernel::new`]) leave their group unfused, so a
//! program that ran before fusion runs after it.

use super::rebuild;
use super::reuse::donor;
use crate::trace::graph::{Node, Program, TraceOp, TraceOperand, ValueId};
use nabla_core::{FusedKernel, FusedOp, FusedStep, Primitive, Result, Scalar};
use std::collections::HashMap;

/// `true` for the nodes fusion merges: one output of an elementwise kind
/// ([`nabla_core::PrimitiveKind::is_elementwise`]).
fn elementwise(node: &Node) -> bool {
    node.outputs.len() == 1
        && matches!(&node.op, TraceOp::Primitive(prim) if prim.kind().is_elementwise())
}

/// The one value every element of a `full` or one-element constant node has.
fn constant_value(node: &Node) -> Option<Scalar> {
    match &node.op {
        TraceOp::Primitive(Primitive::Full { value: v, .. }) => Some(*v),
        TraceOp::Primitive(Primitive::Constant(data)) if data.len() == 1 => data.get(0),
        _ => None,
    }
}

/// Builds the kernel of one group, whose members are in program order with the root last.
struct KernelBuilder<'p> {
    program: &'p Program,
    producer: &'p [Option<usize>],
    steps: Vec<FusedStep>,
    /// Step holding each member's output.
    member_step: HashMap<ValueId, usize>,
    /// The kernel's inputs (external operands) and the step reading each.
    inputs: Vec<(TraceOperand, usize)>,
    constants: Vec<(ValueId, usize)>,
}

impl KernelBuilder<'_> {
    fn push(&mut self, op: FusedOp, value: ValueId) -> usize {
        let dtype = self.program.values[value].dtype;
        self.steps.push(FusedStep::new(op, dtype));
        self.steps.len() - 1
    }

    /// The step giving the values of an operand of a member.
    fn operand(&mut self, o: &TraceOperand) -> usize {
        if let Some(&s) = self.member_step.get(&o.value) {
            return s;
        }
        if let Some(&(_, s)) = self.constants.iter().find(|(v, _)| *v == o.value) {
            return s;
        }
        let constant = self.producer[o.value].and_then(|p| constant_value(&self.program.nodes[p]));
        if let Some(c) = constant {
            let s = self.push(FusedOp::Constant(c), o.value);
            self.constants.push((o.value, s));
            return s;
        }
        if let Some((_, s)) = self.inputs.iter().find(|(x, _)| x == o) {
            return *s;
        }
        let s = self.push(FusedOp::Input(self.inputs.len()), o.value);
        self.inputs.push((o.clone(), s));
        s
    }

    /// Appends the steps of member `node`.
    fn member(&mut self, node: &Node) {
        let args: Vec<usize> = node.inputs.iter().map(|o| self.operand(o)).collect();
        let out = node.outputs[0];
        let arg = |k: usize| args.get(k).copied().unwrap_or(usize::MAX);
        let step = match &node.op {
            TraceOp::Primitive(Primitive::Unary(u)) => self.push(FusedOp::Unary(*u, arg(0)), out),
            TraceOp::Primitive(Primitive::Binary(b)) => {
                self.push(FusedOp::Binary(*b, arg(0), arg(1)), out)
            }
            TraceOp::Primitive(Primitive::Compare(c)) => {
                self.push(FusedOp::Compare(*c, arg(0), arg(1)), out)
            }
            TraceOp::Primitive(Primitive::Select) => {
                self.push(FusedOp::Select(arg(0), arg(1), arg(2)), out)
            }
            TraceOp::Primitive(Primitive::Cast(d)) => self.push(FusedOp::Cast(*d, arg(0)), out),
            TraceOp::Primitive(Primitive::Fused { kernel, .. }) => {
                // Inline the kernel, its inputs becoming this member's operands.
                let mut map = Vec::with_capacity(kernel.steps().len());
                for s in kernel.steps() {
                    let m = |a: usize| map.get(a).copied().unwrap_or(usize::MAX);
                    let op = match s.op {
                        FusedOp::Input(k) => {
                            map.push(arg(k));
                            continue;
                        }
                        FusedOp::Constant(c) => FusedOp::Constant(c),
                        FusedOp::Unary(u, a) => FusedOp::Unary(u, m(a)),
                        FusedOp::Binary(b, x, y) => FusedOp::Binary(b, m(x), m(y)),
                        FusedOp::Compare(c, x, y) => FusedOp::Compare(c, m(x), m(y)),
                        FusedOp::Select(c, t, f) => FusedOp::Select(m(c), m(t), m(f)),
                        FusedOp::Cast(d, a) => FusedOp::Cast(d, m(a)),
                    };
                    self.steps.push(FusedStep::new(op, s.dtype));
                    map.push(self.steps.len() - 1);
                }
                map.last().copied().unwrap_or(usize::MAX)
            }
            _ => usize::MAX,
        };
        self.member_step.insert(out, step);
    }
}

/// The one-op kernel of a lone elementwise node, reading its operands as inputs `0..n`.
fn single_kernel(program: &Program, node: &Node) -> Option<FusedKernel> {
    let mut steps: Vec<FusedStep> = node
        .inputs
        .iter()
        .enumerate()
        .map(|(k, o)| FusedStep::new(FusedOp::Input(k), program.values[o.value].dtype))
        .collect();
    let op = match &node.op {
        TraceOp::Primitive(Primitive::Unary(u)) => FusedOp::Unary(*u, 0),
        TraceOp::Primitive(Primitive::Binary(b)) => FusedOp::Binary(*b, 0, 1),
        TraceOp::Primitive(Primitive::Compare(c)) => FusedOp::Compare(*c, 0, 1),
        TraceOp::Primitive(Primitive::Select) => FusedOp::Select(0, 1, 2),
        TraceOp::Primitive(Primitive::Cast(d)) => FusedOp::Cast(*d, 0),
        _ => return None,
    };
    steps.push(FusedStep::new(op, program.values[node.outputs[0]].dtype));
    FusedKernel::new(steps).ok()
}

/// Fuses elementwise groups (see the module documentation).
pub(crate) fn fuse_elementwise(program: &Program) -> Result<Program> {
    let nodes = &program.nodes;
    let mut producer = vec![None; program.values.len()];
    let mut readers = vec![0usize; program.values.len()];
    for (i, node) in nodes.iter().enumerate() {
        node.outputs.iter().for_each(|&v| producer[v] = Some(i));
        node.inputs.iter().for_each(|o| readers[o.value] += 1);
    }
    let mut is_output = vec![false; program.values.len()];
    program
        .outputs
        .iter()
        .for_each(|o| is_output[o.value] = true);
    // Group roots, assigned from the last node backwards so that readers are placed before producers.
    let mut root: Vec<Option<usize>> = vec![None; nodes.len()];
    for i in (0..nodes.len()).rev() {
        if !elementwise(&nodes[i]) {
            continue;
        }
        let r = *root[i].get_or_insert(i);
        let shape = &program.values[nodes[i].outputs[0]].shape;
        for o in &nodes[i].inputs {
            let v = o.value;
            let info = &program.values[v];
            let whole = o.layout.shape() == info.shape.as_slice()
                && o.layout.contiguous_range() == Some(0..info.len());
            if let Some(p) = producer[v]
                && elementwise(&nodes[p])
                && root[p].is_none()
                && readers[v] == 1
                && !is_output[v]
                && whole
                && &info.shape == shape
            {
                root[p] = Some(r);
            }
        }
    }
    let mut members: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, r) in root.iter().enumerate() {
        if let Some(r) = r {
            members.entry(*r).or_default().push(i);
        }
    }
    // Build each kernel; a group that fails validation is left unfused.
    let mut fused: HashMap<usize, (FusedKernel, Vec<TraceOperand>)> = HashMap::new();
    for (&r, group) in &members {
        if group.len() < 2 {
            continue;
        }
        let mut b = KernelBuilder {
            program,
            producer: &producer,
            steps: Vec::new(),
            member_step: HashMap::new(),
            inputs: Vec::new(),
            constants: Vec::new(),
        };
        for &m in group {
            b.member(&nodes[m]);
        }
        if let Ok(kernel) = FusedKernel::new(b.steps) {
            let operands = b.inputs.into_iter().map(|(o, _)| o).collect();
            fused.insert(r, (kernel, operands));
        }
    }
    let in_fused_group = |i: usize| root[i].is_some_and(|r| fused.contains_key(&r));
    let mut new_nodes = Vec::with_capacity(nodes.len());
    for (i, node) in nodes.iter().enumerate() {
        match fused.get(&i) {
            Some((kernel, operands)) => new_nodes.push(Node {
                op: TraceOp::Primitive(Primitive::Fused {
                    kernel: kernel.clone(),
                    shape: program.values[node.outputs[0]].shape.clone(),
                }),
                inputs: operands.clone(),
                outputs: node.outputs.clone(),
            }),
            None if in_fused_group(i) => {}
            None => new_nodes.push(node.clone()),
        }
    }
    // Constant nodes whose every reader was fused into a kernel are no longer needed.
    let mut still_read = is_output;
    for node in &new_nodes {
        node.inputs.iter().for_each(|o| still_read[o.value] = true);
    }
    new_nodes.retain(|n| match (constant_value(n), n.outputs.first()) {
        (Some(_), Some(&v)) => still_read[v] || readers[v] == 0,
        _ => true,
    });
    let mut p = rebuild(
        &program.values,
        new_nodes,
        &program.inputs,
        program.outputs.clone(),
    )?;
    // Lone elementwise nodes that can overwrite an input become one-op fused nodes.
    for i in 0..p.nodes.len() {
        if matches!(p.nodes[i].op, TraceOp::Primitive(Primitive::Fused { .. }))
            || !elementwise(&p.nodes[i])
        {
            continue;
        }
        if donor(&p, i).is_some()
            && let Some(kernel) = single_kernel(&p, &p.nodes[i])
        {
            let shape = p.values[p.nodes[i].outputs[0]].shape.clone();
            p.nodes[i].op = TraceOp::Primitive(Primitive::Fused { kernel, shape });
        }
    }
    Ok(p)
}
