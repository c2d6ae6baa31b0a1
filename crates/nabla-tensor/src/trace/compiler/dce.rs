//! Dead-code elimination: drops every node none of whose outputs an output (transitively) needs.
//!
//! Input nodes (placeholders) are always kept, so the program keeps its inputs in order even when one
//! is unused. A node with several outputs (sort, top-k) is kept whole when any of them is needed.

use super::rebuild;
use crate::trace::graph::{Program, TraceOp};
use nabla_core::Result;

pub(crate) fn eliminate_dead_code(program: &Program) -> Result<Program> {
    let mut needed = vec![false; program.values.len()];
    for o in &program.outputs {
        needed[o.value] = true;
    }
    let mut keep = vec![false; program.nodes.len()];
    for (i, node) in program.nodes.iter().enumerate().rev() {
        let is_input = matches!(node.op, TraceOp::Input { .. });
        if is_input || node.outputs.iter().any(|&v| needed[v]) {
            keep[i] = true;
            for o in &node.inputs {
                needed[o.value] = true;
            }
        }
    }
    let nodes = program
        .nodes
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(n, _)| n.clone())
        .collect();
    rebuild(
        &program.values,
        nodes,
        &program.inputs,
        program.outputs.clone(),
    )
}
