//! Forward mode: Jacobian-vector products pushed through the recorded graph, and the transforms built
//! on them (`jvp`, `jacfwd`, `jacrev`, `hessian`, `hvp`).
//!
//! `jvp(f, x, v)` runs `f` on a marked `x`, which records the graph as reverse mode does, then walks
//! that graph from the inputs to the output applying one forward rule per node. The forward rules read
//! the values the reverse rules saved and are written in tensor ops, so tangents are themselves
//! differentiable: every transform nests with every other (`jvp(grad(f))` is a Hessian-vector product,
//! `grad` of a `jvp` output works, and so on).

use super::extension_rules::ExtensionRules;
use super::functional::{MarkedRun, run_marked, vjp_n};
use super::node::{Node, NodeKind};
use super::op::{Op, View};
use super::pass::{Walk, take_saved};
use crate::Tensor;
use crate::autograd::grad;
use crate::rules;
use nabla_core::{Backend, Error, Primitive, Result};
use std::sync::Arc;

/// Pushes the `tangents` of the marked nodes `marks` forward to `root`, with extension ops' rules from
/// `ext`. `None` when the output does not depend on any marked input.
pub(crate) fn push_forward<B: Backend>(
    root: &Tensor<B>,
    marks: &[(u64, Tensor<B>)],
    nested: bool,
    ext: Option<&ExtensionRules<B>>,
) -> Result<Option<Tensor<B>>> {
    let Some(root_node) = root.ad.clone() else {
        return Ok(None);
    };
    let walk = Walk::new(&root_node, &|n| marks.iter().any(|(id, _)| *id == n.id));
    let mut tangents: Vec<Option<Tensor<B>>> = vec![None; walk.nodes.len()];
    for &i in &walk.post_order {
        if !walk.reaches[i] {
            continue;
        }
        let node = &walk.nodes[i];
        if let Some((_, t)) = marks.iter().find(|(id, _)| *id == node.id) {
            tangents[i] = Some(t.clone());
            continue;
        }
        let NodeKind::Op {
            op, parents, saved, ..
        } = &node.kind
        else {
            continue;
        };
        let inputs: Vec<Option<Tensor<B>>> = parents
            .iter()
            .map(|p| p.as_ref().and_then(|p| tangents[walk.slot(p)].clone()))
            .collect();
        if inputs.iter().all(Option::is_none) {
            continue;
        }
        super::extension::ensure_rule(op, ext, super::extension_rules::Mode::Forward)?;
        let values = take_saved(node, op.name(), saved, true, nested)?;
        let tangent = match (gram_form(op, parents, marks), &inputs[..]) {
            // x @ xᵀ: p = ẋ xᵀ. xᵀ @ x: p = xᵀ ẋ.
            (Some(Gram::RightIsLeftTransposed), [Some(ta), Some(_)]) => {
                Some(rules::gram_jvp(ta, values.input(1)?)?)
            }
            (Some(Gram::LeftIsRightTransposed), [Some(_), Some(tb)]) => {
                Some(rules::gram_jvp(values.input(0)?, tb)?)
            }
            _ => rules::jvp(op, &values, &inputs, &node.shape, ext)?,
        };
        tangents[i] = match tangent {
            Some(t) if t.dtype() != node.dtype => Some(t.cast(node.dtype)?),
            other => other,
        };
    }
    Ok(tangents[0].take())
}

/// Which operand of a Gram product is the other one's transpose.
enum Gram {
    /// `x @ xᵀ`.
    RightIsLeftTransposed,
    /// `xᵀ @ x`.
    LeftIsRightTransposed,
}

/// The form of `op` when it is a Gram product `x @ xᵀ` or `xᵀ @ x`: a matrix product of a node and
/// that node's transpose (an unmarked `Permute` swapping the last two axes, so that its tangent is
/// the transposed tangent of `x`). Its tangent then takes one product ([`rules::gram_jvp`]).
fn gram_form<B: Backend>(
    op: &Op<B>,
    parents: &[Option<Arc<Node<B>>>],
    marks: &[(u64, Tensor<B>)],
) -> Option<Gram> {
    let (Op::Primitive(Primitive::Matmul), [Some(a), Some(b)]) = (op, parents) else {
        return None;
    };
    let transposes = |t: &Arc<Node<B>>, x: &Arc<Node<B>>| {
        let NodeKind::Op {
            op: Op::View(View::Permute { perm }),
            parents: inner,
            ..
        } = &t.kind
        else {
            return false;
        };
        let rank = perm.len();
        let swaps_last_two = rank >= 2
            && perm
                .iter()
                .copied()
                .eq((0..rank - 2).chain([rank - 1, rank - 2]));
        swaps_last_two
            && matches!(&inner[..], [Some(inner)] if Arc::ptr_eq(inner, x))
            && !marks.iter().any(|(id, _)| *id == t.id)
    };
    if transposes(b, a) {
        Some(Gram::RightIsLeftTransposed)
    } else if transposes(a, b) {
        Some(Gram::LeftIsRightTransposed)
    } else {
        None
    }
}

/// Checks that each tangent matches its input in shape and dtype.
pub(super) fn check_tangents<B: Backend>(
    op: &'static str,
    xs: &[Tensor<B>],
    ts: &[Tensor<B>],
) -> Result<()> {
    if xs.len() != ts.len() {
        return Err(Error::invalid(
            op,
            format!("{} inputs but {} tangents", xs.len(), ts.len()),
        ));
    }
    for (x, t) in xs.iter().zip(ts) {
        x.check_matches(op, t, "each tangent must have its input's shape")?;
    }
    Ok(())
}

/// [`jvp`] for a function of several tensors: `(f(xs), Σᵢ Jᵢ vᵢ)`, one tangent per input.
pub fn jvp_n<B, F>(f: F, xs: &[Tensor<B>], tangents: &[Tensor<B>]) -> Result<(Tensor<B>, Tensor<B>)>
where
    B: Backend,
    F: FnOnce(&[Tensor<B>]) -> Result<Tensor<B>>,
{
    const OP: &str = "jvp";
    check_tangents(OP, xs, tangents)?;
    let MarkedRun {
        marks: marked,
        output: y,
        captures_outer,
        ..
    } = run_marked(OP, f, xs)?;
    let nested = captures_outer || xs.iter().chain(tangents).any(Tensor::requires_grad);
    let marks: Vec<(u64, Tensor<B>)> = marked
        .iter()
        .zip(tangents)
        .filter_map(|(m, t)| Some((m.node_id()?, t.clone())))
        .collect();
    let tangent = match push_forward(&y, &marks, nested, None)? {
        Some(t) => t,
        None => y.detach().zeros_like()?,
    };
    let y = if nested { y } else { y.detach() };
    Ok((y, tangent))
}

/// The forward-mode Jacobian-vector product of `f` at `x` along `tangent` (of `x`'s shape): returns
/// `(f(x), J v)`, as JAX's `jax.jvp`. It nests with every other transform.
///
/// ```
/// # use nabla_tensor::{Tensor, jvp, grad}; use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], [2], &cpu)?;
/// let v = Tensor::from_vec(vec![1.0f64, 0.5], [2], &cpu)?;
/// let (y, t) = jvp(|x: &Tensor<CpuBackend>| x.square(), &x, &v)?;
/// assert_eq!(t.to_vec::<f64>()?, vec![2.0, 2.0]); // 2 x v
/// // Forward over reverse: a Hessian-vector product of sum(x^3) is 6 x v.
/// let f = |x: &Tensor<CpuBackend>| x.pow(3.0)?.sum_all();
/// let (_, hv) = jvp(grad(f), &x, &v)?;
/// assert_eq!(hv.to_vec::<f64>()?, vec![6.0, 6.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn jvp<B, F>(f: F, x: &Tensor<B>, tangent: &Tensor<B>) -> Result<(Tensor<B>, Tensor<B>)>
where
    B: Backend,
    F: FnOnce(&Tensor<B>) -> Result<Tensor<B>>,
{
    jvp_n(
        |xs| f(&xs[0]),
        std::slice::from_ref(x),
        std::slice::from_ref(tangent),
    )
}

/// The unit tangents of `x`: one per element, each of `x`'s shape.
fn basis<B: Backend>(x: &Tensor<B>) -> Result<Vec<Tensor<B>>> {
    let n = x.numel();
    let eye = Tensor::eye(n, x.dtype(), x.backend())?;
    (0..n)
        .map(|i| eye.select_index(0, i as isize)?.reshape(x.shape().to_vec()))
        .collect()
}

/// Stacks per-element results into a Jacobian of shape `out ++ x.shape`: `parts` are its rows (one per
/// output element, each of `x`'s shape) when `rows`, else its columns (one per input element, each of
/// the output's shape).
fn assemble<B: Backend>(
    parts: &[Tensor<B>],
    x: &Tensor<B>,
    out: &[usize],
    rows: bool,
) -> Result<Tensor<B>> {
    let mut shape = out.to_vec();
    shape.extend_from_slice(x.shape());
    if parts.is_empty() {
        return Tensor::zeros(shape, x.dtype(), x.backend());
    }
    let refs: Vec<&Tensor<B>> = parts.iter().collect();
    Tensor::stack(&refs, if rows { 0 } else { -1 })?.reshape(shape)
}

/// The Jacobian of `f` at `x` by forward mode (one JVP per input element), of shape
/// `f(x).shape ++ x.shape`, as JAX's `jax.jacfwd`.
///
/// ```
/// # use nabla_tensor::{Tensor, jacfwd}; use nabla_cpu::CpuBackend;
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], [2], &CpuBackend::new())?;
/// let j = jacfwd(|x: &Tensor<CpuBackend>| x.square())(&x)?;
/// assert_eq!(j.to_vec2::<f64>()?, vec![vec![2.0, 0.0], vec![0.0, 4.0]]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn jacfwd<B, F>(f: F) -> impl Fn(&Tensor<B>) -> Result<Tensor<B>>
where
    B: Backend,
    F: Fn(&Tensor<B>) -> Result<Tensor<B>>,
{
    move |x| {
        let mut out_shape = None;
        let columns = basis(x)?
            .iter()
            .map(|v| {
                let (y, t) = jvp(&f, x, v)?;
                out_shape = Some(y.shape().to_vec());
                Ok(t)
            })
            .collect::<Result<Vec<_>>>()?;
        let out = match out_shape {
            Some(s) => s,
            None => f(x)?.shape().to_vec(),
        };
        assemble(&columns, x, &out, false)
    }
}

/// The Jacobian of `f` at `x` by reverse mode (one VJP per output element), of shape
/// `f(x).shape ++ x.shape`, as JAX's `jax.jacrev`.
pub fn jacrev<B, F>(f: F) -> impl Fn(&Tensor<B>) -> Result<Tensor<B>>
where
    B: Backend,
    F: Fn(&Tensor<B>) -> Result<Tensor<B>>,
{
    move |x| {
        let y = f(x)?;
        let rows = basis(&y.detach())?
            .iter()
            .map(|u| {
                Ok(vjp_n(|xs| f(&xs[0]), std::slice::from_ref(x), u)?
                    .1
                    .remove(0))
            })
            .collect::<Result<Vec<_>>>()?;
        assemble(&rows, x, y.shape(), true)
    }
}

/// The Hessian of a scalar function `f` at `x` (forward over reverse), of shape `x.shape ++ x.shape`.
///
/// ```
/// # use nabla_tensor::{Tensor, hessian}; use nabla_cpu::CpuBackend;
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], [2], &CpuBackend::new())?;
/// let h = hessian(|x: &Tensor<CpuBackend>| x.pow(3.0)?.sum_all())(&x)?;
/// assert_eq!(h.to_vec2::<f64>()?, vec![vec![6.0, 0.0], vec![0.0, 12.0]]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn hessian<B, F>(f: F) -> impl Fn(&Tensor<B>) -> Result<Tensor<B>>
where
    B: Backend,
    F: Fn(&Tensor<B>) -> Result<Tensor<B>>,
{
    jacfwd(grad(f))
}

/// The Hessian-vector product `H v` of a scalar function `f` at `x`, of `x`'s shape: the gradient of
/// the directional derivative `∇f · v` (reverse over forward, about two to three times a plain
/// gradient's cost; see [`AdContext::hvp`](crate::AdContext::hvp) for why not forward over reverse).
///
/// ```
/// # use nabla_tensor::{Tensor, hvp}; use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], [2], &cpu)?;
/// let v = Tensor::from_vec(vec![1.0f64, 1.0], [2], &cpu)?;
/// // f = x0² x1: H = [[2 x1, 2 x0], [2 x0, 0]].
/// let f = |x: &Tensor<CpuBackend>| x.select_index(0, 0)?.square()?.mul(&x.select_index(0, 1)?);
/// let hv = hvp(f, &x, &v)?;
/// assert_eq!(hv.to_vec::<f64>()?, vec![6.0, 2.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn hvp<B, F>(f: F, x: &Tensor<B>, v: &Tensor<B>) -> Result<Tensor<B>>
where
    B: Backend,
    F: Fn(&Tensor<B>) -> Result<Tensor<B>>,
{
    grad(|x: &Tensor<B>| jvp(&f, x, v).map(|(_, t)| t))(x)
}
