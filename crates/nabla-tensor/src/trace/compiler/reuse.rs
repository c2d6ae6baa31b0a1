//! Buffer-reuse planning: which fused node may write its result into one of its input buffers.
//!
//! From the liveness of every value ([`Program::last_use`]), a fused node may overwrite an input buffer
//! when that node is the buffer's last reader, reads it once, as the whole contiguous buffer in
//! row-major order, and the buffer has the output's dtype and element count; program inputs (owned by
//! the caller) and program outputs are never overwritten. The plan is stored in the program
//! ([`Program::reused_operand`], printed as a ` (reuses %N)` suffix); [`crate::GraphExecutor`] hands the
//! buffer to [`nabla_core::Backend::fused`], which writes into it when nothing else holds it (the CPU
//! backend does), and counts it once in [`crate::RunStats::peak_buffer_bytes`].

use crate::trace::graph::{Program, TraceOp};
use nabla_core::{Primitive, Result};

/// The operand of node `i` whose buffer the node may overwrite with its single output, if any (the
/// first eligible one), ignoring whether the node is a fused node.
pub(super) fn donor(program: &Program, i: usize) -> Option<usize> {
    let node = &program.nodes[i];
    let [out] = node.outputs[..] else {
        return None;
    };
    let info = &program.values[out];
    if info.is_empty() {
        return None;
    }
    node.inputs.iter().position(|o| {
        let v = o.value;
        let value = &program.values[v];
        program.last_use[v] == Some(i)
            && value.dtype == info.dtype
            && value.len() == info.len()
            && o.layout.contiguous_range() == Some(0..value.len())
            && node.inputs.iter().filter(|p| p.value == v).count() == 1
            && !program.inputs.contains(&v)
            && !program.outputs.iter().any(|p| p.value == v)
    })
}

/// Plans buffer reuse for every fused node (see the module documentation).
pub(crate) fn plan_buffer_reuse(program: &Program) -> Result<Program> {
    let mut p = program.clone();
    p.donations = (0..p.nodes.len())
        .map(|i| match p.nodes[i].op {
            TraceOp::Primitive(Primitive::Fused { .. }) => donor(&p, i),
            _ => None,
        })
        .collect();
    if p.donations.iter().all(Option::is_none) {
        p.donations.clear();
    }
    Ok(p)
}

impl Program {
    /// Under the buffer-reuse plan of [`crate::GraphCompiler`], the operand (index into
    /// the node's `inputs`) of node `node` whose buffer that node overwrites with its result;
    /// `None` when it allocates a new one (and for programs compiled without the plan).
    pub fn reused_operand(&self, node: usize) -> Option<usize> {
        self.donations.get(node).copied().flatten()
    }

    /// The peak of the bytes held by live program values when the program runs with its buffer-reuse
    /// plan, counted as [`crate::RunStats::peak_buffer_bytes`] counts them (each node's inputs and
    /// outputs alive together, values released after their last reader, an overwritten input counted
    /// once): what a [`crate::GraphExecutor`] run reports.
    pub fn planned_peak_bytes(&self) -> usize {
        let mut alive = vec![false; self.values.len()];
        let (mut live, mut peak) = (0usize, 0usize);
        for (i, node) in self.nodes.iter().enumerate() {
            if let (TraceOp::Primitive(Primitive::Fused { .. }), Some(k)) =
                (&node.op, self.reused_operand(i))
                && let Some(o) = node.inputs.get(k)
                && std::mem::take(&mut alive[o.value])
            {
                live -= self.values[o.value].bytes();
            }
            for &v in &node.outputs {
                live += self.values[v].bytes();
                alive[v] = true;
            }
            peak = peak.max(live);
            let read = node.inputs.iter().map(|o| o.value);
            for v in read.chain(node.outputs.iter().copied()) {
                let dead = self.last_use[v].is_none_or(|last| last == i);
                if dead && std::mem::take(&mut alive[v]) {
                    live -= self.values[v].bytes();
                }
            }
        }
        peak
    }
}
