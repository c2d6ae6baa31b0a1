//! The forward (Jacobian-vector product) table: one entry per recorded primitive, routing to the rule
//! in its family's file. Forward rules read the same saved values as the reverse rules and are written
//! in tensor ops, so they are differentiable too; elementwise and reduction rules reuse the reverse
//! rules' derivative factors, which is exactly what a tangent needs.

use super::{SavedValues, elementwise, indexing, linalg, movement, reduce};
use crate::Tensor;
use crate::autograd::extension;
use crate::autograd::extension_rules::ExtensionRules;
use crate::autograd::op::Op;
use nabla_core::{Backend, Result};

/// The tangent of the output of `op` (of shape `out`), given the tangent of each input (`None` for
/// inputs with zero tangent). `None` when every contribution is zero. Extension ops take their rules
/// from `overrides` when it has them, else from their family's bound rules.
pub(crate) fn jvp<B: Backend>(
    op: &Op<B>,
    s: &SavedValues<B>,
    t: &[Option<Tensor<B>>],
    out: &[usize],
    overrides: Option<&ExtensionRules<B>>,
) -> Result<Option<Tensor<B>>> {
    // The tangent of a one-input linear op: `f` applied to the input's tangent.
    let linear = |f: &dyn Fn(&Tensor<B>) -> Result<Tensor<B>>| t[0].as_ref().map(f).transpose();
    match op {
        Op::Extension(e) => extension::jvp(e, overrides, &s.all_inputs()?, s.output()?, t),
        Op::Custom(c) => c.jvp(&s.all_inputs()?, s.output()?, t, overrides),
        Op::Identity => Ok(t[0].clone()),
        Op::Unary(u) => linear(&|t| elementwise::unary_jvp(*u, s, t)),
        Op::Binary(b) => elementwise::binary_jvp(*b, s, t),
        Op::Select => elementwise::select_jvp(s, t),
        // The tangent keeps the input's dtype here; the caller casts it to the node's.
        Op::Cast { .. } => Ok(t[0].clone()),
        Op::Transfer { to, .. } => linear(&|t| t.move_to(to)),
        Op::Reduce { op, axes, input } => linear(&|t| reduce::reduce_jvp(*op, axes, input, s, t)),
        Op::Cumsum { axis } => linear(&|t| t.cumsum(*axis as isize)),
        Op::Matmul { precision } => linalg::bilinear_jvp(s, t, |a, b| a.matmul_with(b, *precision)),
        Op::Conv2d { params } => linalg::bilinear_jvp(s, t, |x, w| x.conv2d_with(w, params)),
        Op::Conv2dInputGrad { params, input_hw } => {
            linalg::bilinear_jvp(s, t, |h, w| h.conv2d_input_grad(w, *input_hw, params))
        }
        Op::Conv2dWeightGrad { params, kernel_hw } => {
            linalg::bilinear_jvp(s, t, |x, h| x.conv2d_weight_grad(h, *kernel_hw, params))
        }
        Op::Reshape { .. } => linear(&|t| t.reshape(out.to_vec())),
        Op::Permute { perm } => {
            let perm: Vec<isize> = perm.iter().map(|&p| p as isize).collect();
            linear(&|t| t.permute(&perm))
        }
        Op::Broadcast { .. } => linear(&|t| t.broadcast_to(out.to_vec())),
        Op::Slice {
            axis,
            first,
            len,
            step,
            ..
        } => linear(&|t| t.slice_view(*axis, *first, *len, *step)),
        Op::Flip { axes } => {
            let axes: Vec<isize> = axes.iter().map(|&a| a as isize).collect();
            linear(&|t| t.flip(&axes))
        }
        Op::Pad { pads } => linear(&|t| t.pad(pads, 0.0)),
        Op::Concat { axis, sizes } => movement::concat_jvp(*axis, sizes, t, out),
        Op::Gather { axis, .. } => linear(&|t| t.gather(*axis as isize, s.input(1)?)),
        Op::IndexSelect { axis, .. } => linear(&|t| t.index_select(*axis as isize, s.input(1)?)),
        Op::ScatterAdd { axis } => indexing::scatter_add_jvp(*axis, s, t, out),
    }
}
