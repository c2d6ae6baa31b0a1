//! The forward (Jacobian-vector product) table: one entry per recorded primitive, routing to the rule
//! in its family's file. Forward rules read the same saved values as the reverse rules and are written
//! in tensor ops, so they are differentiable too; elementwise and reduction rules reuse the reverse
//! rules' derivative factors, which is exactly what a tangent needs.

use super::{SavedValues, elementwise, indexing, linalg, movement, reduce};
use crate::autograd::ExtensionRules;
use crate::autograd::extension;
use crate::autograd::op::Op;
use crate::{Precision, Tensor};
use nabla_core::{Backend, Primitive, Result};

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
    match op {
        Op::Extension(e) => extension::jvp(e, overrides, &s.all_inputs()?, s.output()?, t),
        Op::Custom(c) => c.jvp(&s.all_inputs()?, s.output()?, t, overrides),
        Op::Identity => Ok(t[0].clone()),
        Op::Transfer { to, .. } => linear(t, |t| t.move_to(to)),
        Op::View(v) => linear(t, |t| movement::view_jvp(v, t, out)),
        Op::Primitive(p) => primitive_jvp(p, s, t, out),
    }
}

/// The tangent of a one-input linear op: `f` applied to the input's tangent.
fn linear<B: Backend>(
    t: &[Option<Tensor<B>>],
    f: impl FnOnce(&Tensor<B>) -> Result<Tensor<B>>,
) -> Result<Option<Tensor<B>>> {
    t[0].as_ref().map(f).transpose()
}

/// [`jvp`] of a backend primitive, routed to its family.
fn primitive_jvp<B: Backend>(
    p: &Primitive,
    s: &SavedValues<B>,
    t: &[Option<Tensor<B>>],
    out: &[usize],
) -> Result<Option<Tensor<B>>> {
    let product =
        |precision: Precision| linalg::bilinear_jvp(s, t, |a, b| a.matmul_with(b, precision));
    match p {
        Primitive::Copy => Ok(t[0].clone()),
        Primitive::Unary(u) => linear(t, |t| elementwise::unary_jvp(*u, s, t)),
        Primitive::Binary(b) => elementwise::binary_jvp(*b, s, t),
        Primitive::Select => elementwise::select_jvp(s, t),
        // The tangent keeps the input's dtype here; the caller casts it to the node's.
        Primitive::Cast(_) => Ok(t[0].clone()),
        Primitive::Reduce { op, axes } => linear(t, |t| reduce::reduce_jvp(*op, axes, s, t)),
        Primitive::Cumsum { axis } => linear(t, |t| t.cumsum(*axis as isize)),
        Primitive::Matmul => product(Precision::Full),
        Primitive::MatmulRounded(precision) => product(*precision),
        Primitive::Conv2d(params) => linalg::bilinear_jvp(s, t, |x, w| x.conv2d_with(w, params)),
        Primitive::Conv2dInputGrad { params, input_hw } => {
            linalg::bilinear_jvp(s, t, |h, w| h.conv2d_input_grad(w, *input_hw, params))
        }
        Primitive::Conv2dWeightGrad { params, kernel_hw } => {
            linalg::bilinear_jvp(s, t, |x, h| x.conv2d_weight_grad(h, *kernel_hw, params))
        }
        Primitive::Pad { pads, .. } => linear(t, |t| t.pad(pads, 0.0)),
        Primitive::Concat { axis } => movement::concat_jvp(*axis, s, t),
        Primitive::Gather { axis } => linear(t, |t| t.gather(*axis as isize, s.input(1)?)),
        Primitive::IndexSelect { axis } => {
            linear(t, |t| t.index_select(*axis as isize, s.input(1)?))
        }
        Primitive::ScatterAdd { axis } => indexing::scatter_add_jvp(*axis, s, t, out),
        super::unrecorded!() => Err(super::not_recorded(p, "jvp")),
    }
}
