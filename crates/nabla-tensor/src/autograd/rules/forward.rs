//! Forward (Jacobian-vector product) rules for every recorded primitive. They read the same saved
//! values as the reverse rules and are written in tensor ops, so they are differentiable too. Elementwise
//! and reduction rules reuse the reverse rules' derivative factors: for those ops the reverse rule
//! multiplies its cotangent by the local derivative, which is exactly what a tangent needs.

use super::{SavedValues, elementwise, reduce};
use crate::Tensor;
use crate::autograd::extension::{self, ExtensionRules};
use crate::autograd::op::Op;
use nabla_core::{Backend, Result, UnaryOp};

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
    let t0 = || t[0].as_ref();
    let linear = |f: &dyn Fn(&Tensor<B>) -> Result<Tensor<B>>| t0().map(f).transpose();
    match op {
        Op::Extension(e) => extension::jvp(e, overrides, &s.all_inputs()?, s.output()?, t),
        Op::Identity => Ok(t0().cloned()),
        // A complex-to-real op (abs, real, imag) has the tangent map `t ↦ Re(c t)` when its reverse
        // rule is `u ↦ u c`: the reverse rule applied to the tangent, then the real part.
        Op::Unary(u) => linear(&|t| {
            let d = elementwise::unary(*u, s, t)?;
            match u {
                UnaryOp::Abs | UnaryOp::Real | UnaryOp::Imag if d.dtype().is_complex() => d.real(),
                _ => Ok(d),
            }
        }),
        Op::Binary(b) => {
            let da = match &t[0] {
                Some(ta) => elementwise::binary(*b, s, ta, &[true, false])?.swap_remove(0),
                None => None,
            };
            let db = match &t[1] {
                Some(tb) => elementwise::binary(*b, s, tb, &[false, true])?.swap_remove(1),
                None => None,
            };
            sum_terms([da, db])
        }
        Op::Select => {
            let cond = s.input(0)?;
            let on_true = t[1].as_ref().map(|tt| cond.where_(tt, 0.0)).transpose()?;
            let on_false = t[2].as_ref().map(|tf| cond.where_(0.0, tf)).transpose()?;
            sum_terms([on_true, on_false])
        }
        // The tangent keeps the input's dtype here; the caller casts it to the node's.
        Op::Cast { .. } => Ok(t0().cloned()),
        Op::Transfer { to, .. } => linear(&|t| t.move_to(to)),
        Op::Reduce { op, axes, input } => {
            let signed: Vec<isize> = axes.iter().map(|&a| a as isize).collect();
            linear(&|t| reduce::reduce(*op, axes, input, s, t)?.sum(&signed, true))
        }
        Op::Cumsum { axis } => linear(&|t| t.cumsum(*axis as isize)),
        Op::Matmul => {
            let (a, b) = (s.input(0)?, s.input(1)?);
            let da = t[0].as_ref().map(|ta| ta.matmul(b)).transpose()?;
            let db = t[1].as_ref().map(|tb| a.matmul(tb)).transpose()?;
            sum_terms([da, db])
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
        Op::Concat { axis, sizes } => {
            if t.iter().all(Option::is_none) {
                return Ok(None);
            }
            let any = t.iter().flatten().next().expect("one tangent at least");
            let parts = t
                .iter()
                .zip(sizes)
                .map(|(ti, &n)| match ti {
                    Some(ti) => Ok(ti.clone()),
                    None => {
                        let mut shape = out.to_vec();
                        shape[*axis] = n;
                        Tensor::zeros(shape, any.dtype(), any.backend())
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            let refs: Vec<&Tensor<B>> = parts.iter().collect();
            Ok(Some(Tensor::cat(&refs, *axis as isize)?))
        }
        Op::Gather { axis, .. } => linear(&|t| t.gather(*axis as isize, s.input(1)?)),
        Op::IndexSelect { axis, .. } => linear(&|t| t.index_select(*axis as isize, s.input(1)?)),
        Op::ScatterAdd { axis } => {
            let index = s.input(1)?;
            let Some(any) = t[0].as_ref().or(t[2].as_ref()) else {
                return Ok(None);
            };
            let dst = match &t[0] {
                Some(td) => td.clone(),
                None => Tensor::zeros(out.to_vec(), any.dtype(), any.backend())?,
            };
            match &t[2] {
                Some(ts) => Ok(Some(dst.scatter_add(*axis as isize, index, ts)?)),
                None => Ok(Some(dst)),
            }
        }
        Op::Conv2d { params } => {
            let (x, w) = (s.input(0)?, s.input(1)?);
            let dx = t[0].as_ref().map(|tx| tx.conv2d(w, params)).transpose()?;
            let dw = t[1].as_ref().map(|tw| x.conv2d(tw, params)).transpose()?;
            sum_terms([dx, dw])
        }
        Op::Conv2dInputGrad { params, input_hw } => {
            let (h, w) = (s.input(0)?, s.input(1)?);
            let dh = t[0]
                .as_ref()
                .map(|th| th.conv2d_input_grad(w, *input_hw, params))
                .transpose()?;
            let dw = t[1]
                .as_ref()
                .map(|tw| h.conv2d_input_grad(tw, *input_hw, params))
                .transpose()?;
            sum_terms([dh, dw])
        }
        Op::Conv2dWeightGrad { params, kernel_hw } => {
            let (x, h) = (s.input(0)?, s.input(1)?);
            let dx = t[0]
                .as_ref()
                .map(|tx| tx.conv2d_weight_grad(h, *kernel_hw, params))
                .transpose()?;
            let dh = t[1]
                .as_ref()
                .map(|th| x.conv2d_weight_grad(th, *kernel_hw, params))
                .transpose()?;
            sum_terms([dx, dh])
        }
    }
}

/// The sum of the non-zero terms of a product rule.
fn sum_terms<B: Backend, const N: usize>(
    terms: [Option<Tensor<B>>; N],
) -> Result<Option<Tensor<B>>> {
    let mut total: Option<Tensor<B>> = None;
    for term in terms.into_iter().flatten() {
        total = Some(match total {
            Some(sum) => sum.add(&term)?,
            None => term,
        });
    }
    Ok(total)
}
