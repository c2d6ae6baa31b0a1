//! Fused elementwise kernels ([`nabla_core::Backend::fused_many`]) as one shader: the kernel's steps
//! are rendered with the same per-op WGSL expressions as the single-op kernels ([`wgsl::unary_expr`],
//! [`wgsl::binary_expr`], ...), each step a `let` of the map template's body, so a chain that the graph
//! compiler fused runs as one dispatch that reads each input once and writes only the results, as on
//! the CPU. One kernel description, rendered per backend.
//!
//! A kernel needing more storage bindings (parameters, inputs and results) than the adapter allows
//! per shader stage runs step by step instead ([`FusedKernel::evaluate_outputs_by_ops`]).

use crate::WgpuBackend;
use crate::elementwise::load_inputs;
use crate::kernel::check_len;
use crate::storage::{WgpuStorage, check_dtype};
use crate::wgsl::{self, store};
use nabla_core::{FusedKernel, FusedOp, Layout, Result};

const OP: &str = "fused";

impl WgpuBackend {
    /// Runs `kernel` on `inputs` (each viewed with the call's `shape`), one result buffer per kernel
    /// result; see the module documentation.
    pub(crate) fn fused_impl(
        &self,
        kernel: &FusedKernel,
        inputs: &[(WgpuStorage, &Layout)],
        shape: &[usize],
    ) -> Result<Vec<WgpuStorage>> {
        let metas: Vec<_> = inputs.iter().map(|(s, l)| (s.dtype(), l.shape())).collect();
        kernel.check_call(&metas, shape)?;
        let bindings = 1 + inputs.len() + kernel.outputs().len();
        if bindings > self.ctx.max_storage_buffers as usize {
            let refs: Vec<(&WgpuStorage, &Layout)> = inputs.iter().map(|(s, l)| (s, *l)).collect();
            return kernel.evaluate_outputs_by_ops(self, &refs, shape);
        }
        let n: usize = shape.iter().product();
        check_len(OP, n)?;
        let steps = kernel.steps();
        for step in steps {
            check_dtype(OP, step.dtype)?;
        }
        let outputs = kernel
            .outputs()
            .iter()
            .map(|&o| self.out(OP, steps[o].dtype, n))
            .collect::<Result<Vec<_>>>()?;
        if n == 0 {
            return Ok(outputs);
        }
        let (mut params, mut body) = load_inputs(n, inputs.iter().map(|(s, l)| (s, *l)));
        for (j, step) in steps.iter().enumerate() {
            let v = |a: usize| format!("s{a}");
            let operand = |a: usize| steps[a].dtype;
            let expr = match step.op {
                FusedOp::Input(k) => format!("x{k}"),
                FusedOp::Constant(c) => {
                    let p = params.words.len();
                    params.words.extend(wgsl::scalar_words(c, step.dtype)?);
                    wgsl::param(step.dtype, p)
                }
                FusedOp::Unary(op, a) => wgsl::unary_expr(op, operand(a), &v(a))?,
                FusedOp::Binary(op, a, b) => wgsl::binary_expr(op, operand(a), &v(a), &v(b))?,
                FusedOp::Compare(op, a, b) => wgsl::compare_expr(op, operand(a), &v(a), &v(b))?,
                FusedOp::Select(c, t, f) => format!("select({}, {}, {})", v(f), v(t), v(c)),
                FusedOp::Cast(to, a) => wgsl::cast_expr(operand(a), to, &v(a)),
            };
            body += &format!("let s{j} = {expr};\n");
        }
        for (k, &o) in kernel.outputs().iter().enumerate() {
            body += &store(steps[o].dtype, &format!("out{k}"), "i", &format!("s{o}"));
            body += "\n";
        }
        let storages: Vec<&WgpuStorage> = inputs.iter().map(|(s, _)| s).collect();
        let outs: Vec<&WgpuStorage> = outputs.iter().collect();
        self.map(OP, &params, &storages, &outs, &body)?;
        Ok(outputs)
    }
}
