//! Jacobians and Hessians of functions of several tensors with several outputs (JAX's `jacfwd`,
//! `jacrev` and `hessian` with `argnums` over every input and tuple outputs), and `linearize`: the
//! primal value with a linear function that pushes tangents through the graph recorded by that one
//! forward pass.

use super::forward::{check_tangents, jvp_n, push_forward};
use super::functional::{MarkedRun, grad_n, run_marked, vjp_n};
use crate::Tensor;
use crate::random_replay;
use nabla_core::{Backend, Result};

/// One Jacobian block per (output, input) pair: `blocks[i][j]` is `∂yᵢ/∂xⱼ`, of shape
/// `yᵢ.shape ++ xⱼ.shape`.
pub type JacobianBlocks<B> = Vec<Vec<Tensor<B>>>;

/// The outputs `which` of `ys`, flattened and joined into one vector (they share one dtype).
fn joined<B: Backend>(ys: &[Tensor<B>], which: &[usize]) -> Result<Tensor<B>> {
    let flat = which
        .iter()
        .map(|&i| ys[i].reshape([ys[i].numel()]))
        .collect::<Result<Vec<_>>>()?;
    match flat.as_slice() {
        [one] => Ok(one.clone()),
        _ => Tensor::cat(&flat.iter().collect::<Vec<_>>(), 0),
    }
}

/// The differentiable outputs grouped by dtype (one pass of JVPs or VJPs per group, usually one).
fn dtype_groups<B: Backend>(ys: &[Tensor<B>]) -> Vec<Vec<usize>> {
    let mut groups: Vec<(nabla_core::DType, Vec<usize>)> = Vec::new();
    for (i, y) in ys.iter().enumerate() {
        let d = y.dtype();
        if !(d.is_float() || d.is_complex()) {
            continue;
        }
        match groups.iter_mut().find(|(g, _)| *g == d) {
            Some((_, members)) => members.push(i),
            None => groups.push((d, vec![i])),
        }
    }
    groups.into_iter().map(|(_, members)| members).collect()
}

/// Splits a `[total, ...x.shape]` stack of rows (one per element of the joined outputs `which`) into
/// one block per output, of shape `y.shape ++ x.shape`, stored in `blocks[i][j]`.
fn place_rows<B: Backend>(
    rows: Tensor<B>,
    ys: &[Tensor<B>],
    which: &[usize],
    j: usize,
    blocks: &mut Partial<B>,
) -> Result<()> {
    let mut start = 0;
    for &i in which {
        let len = ys[i].numel();
        let mut full = ys[i].shape().to_vec();
        full.extend(&rows.shape()[1..]);
        blocks[i][j] = Some(rows.narrow(0, start, len)?.reshape(full)?);
        start += len;
    }
    Ok(())
}

/// Every block, with zeros (of the input's dtype) for the outputs that are not differentiable
/// (integers, booleans: JAX's `float0`).
fn fill_blocks<B: Backend>(
    blocks: Partial<B>,
    ys: &[Tensor<B>],
    xs: &[Tensor<B>],
) -> Result<JacobianBlocks<B>> {
    blocks
        .into_iter()
        .zip(ys)
        .map(|(row, y)| {
            row.into_iter()
                .zip(xs)
                .map(|(block, x)| match block {
                    Some(b) => Ok(b),
                    None => {
                        let mut shape = y.shape().to_vec();
                        shape.extend(x.shape());
                        Tensor::zeros(shape, x.dtype(), x.backend())
                    }
                })
                .collect()
        })
        .collect()
}

/// `[total, ...x.shape]` from per-element parts of `x`'s shape (zeros when there are none).
fn stack_parts<B: Backend>(
    parts: &[Tensor<B>],
    total: usize,
    like: &Tensor<B>,
) -> Result<Tensor<B>> {
    if parts.is_empty() {
        let mut shape = vec![total];
        shape.extend(like.shape());
        return Tensor::zeros(shape, like.dtype(), like.backend());
    }
    Tensor::stack(&parts.iter().collect::<Vec<_>>(), 0)
}

/// The unit tangent number `k` of `x`'s shape.
fn unit<B: Backend>(x: &Tensor<B>, k: usize) -> Result<Tensor<B>> {
    let mut data = vec![0.0f64; x.numel()];
    data[k] = 1.0;
    Tensor::from_f64s(data, x.shape().to_vec(), x.dtype(), x.backend())
}

/// Partly filled blocks: `blocks[i][j]` once computed.
type Partial<B> = Vec<Vec<Option<Tensor<B>>>>;

/// The blocks of `f` at `xs`, filled per group of outputs of one dtype by `group`, which gets the
/// function of `xs` joining that group's outputs into one vector, the outputs at `xs`, the group and
/// the blocks to fill. `f` runs once first; every later run repeats its random draws (a function with
/// dropout gets one mask for all its rows). Outputs of integers or booleans get zero blocks.
fn by_dtype_group<B, F, G>(f: &F, xs: &[Tensor<B>], mut group: G) -> Result<JacobianBlocks<B>>
where
    B: Backend,
    F: Fn(&[Tensor<B>]) -> Result<Vec<Tensor<B>>>,
    G: FnMut(
        &dyn Fn(&[Tensor<B>]) -> Result<Tensor<B>>,
        &[Tensor<B>],
        &[usize],
        &mut Partial<B>,
    ) -> Result<()>,
{
    let (ys, keys) = random_replay::record(|| f(xs));
    let ys: Vec<Tensor<B>> = ys?.iter().map(Tensor::detach).collect();
    let mut blocks = vec![vec![None; xs.len()]; ys.len()];
    for which in dtype_groups(&ys) {
        let joined_f = |xs: &[Tensor<B>]| random_replay::replay(&keys, || joined(&f(xs)?, &which));
        group(&joined_f, &ys, &which, &mut blocks)?;
    }
    fill_blocks(blocks, &ys, xs)
}

/// The Jacobian blocks of `f` at `xs` by forward mode (one JVP per input element): `blocks[i][j]` is
/// `∂yᵢ/∂xⱼ`, of shape `yᵢ.shape ++ xⱼ.shape`, as `jax.jacfwd(f, argnums=(0, ..., n-1))` with tuple
/// outputs. Outputs may have different dtypes; those of integers or booleans get zero blocks.
///
/// ```
/// # use nabla_tensor::{Tensor, jacfwd_n}; use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let (a, b) = (Tensor::from_vec(vec![1.0f64, 2.0], [2], &cpu)?, Tensor::scalar(3.0, nabla_core::DType::F64, &cpu)?);
/// // f(a, b) = (a * b, sum(a))
/// let j = jacfwd_n(|x: &[Tensor<CpuBackend>]| Ok(vec![x[0].mul(&x[1])?, x[0].sum_all()?]))(&[a, b])?;
/// assert_eq!(j[0][0].to_vec2::<f64>()?, vec![vec![3.0, 0.0], vec![0.0, 3.0]]); // ∂(a b)/∂a = b I
/// assert_eq!(j[0][1].to_vec::<f64>()?, vec![1.0, 2.0]); // ∂(a b)/∂b = a
/// assert_eq!(j[1][0].to_vec::<f64>()?, vec![1.0, 1.0]);
/// assert_eq!(j[1][1].shape(), &[] as &[usize]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn jacfwd_n<B, F>(f: F) -> impl Fn(&[Tensor<B>]) -> Result<JacobianBlocks<B>>
where
    B: Backend,
    F: Fn(&[Tensor<B>]) -> Result<Vec<Tensor<B>>>,
{
    move |xs| {
        let zeros = xs
            .iter()
            .map(|x| x.detach().zeros_like())
            .collect::<Result<Vec<_>>>()?;
        by_dtype_group(&f, xs, |joined_f, ys, which, blocks| {
            let total: usize = which.iter().map(|&i| ys[i].numel()).sum();
            for (j, x) in xs.iter().enumerate() {
                let mut columns = Vec::with_capacity(x.numel());
                for k in 0..x.numel() {
                    let mut tangents = zeros.clone();
                    tangents[j] = unit(x, k)?;
                    columns.push(jvp_n(joined_f, xs, &tangents)?.1);
                }
                // Columns `[total]` per element of `x`, stacked last: the rows `[total, ...x.shape]`.
                let mut shape = vec![total];
                shape.extend(x.shape());
                let rows = if columns.is_empty() {
                    Tensor::zeros(shape, ys[which[0]].dtype(), x.backend())?
                } else {
                    Tensor::stack(&columns.iter().collect::<Vec<_>>(), -1)?.reshape(shape)?
                };
                place_rows(rows, ys, which, j, blocks)?;
            }
            Ok(())
        })
    }
}

/// The Jacobian blocks of `f` at `xs` by reverse mode (one VJP per output element), laid out as
/// [`jacfwd_n`]'s, as `jax.jacrev(f, argnums=(0, ..., n-1))` with tuple outputs.
pub fn jacrev_n<B, F>(f: F) -> impl Fn(&[Tensor<B>]) -> Result<JacobianBlocks<B>>
where
    B: Backend,
    F: Fn(&[Tensor<B>]) -> Result<Vec<Tensor<B>>>,
{
    move |xs| {
        by_dtype_group(&f, xs, |joined_f, ys, which, blocks| {
            let flat = joined(ys, which)?;
            let mut rows: Vec<Vec<Tensor<B>>> = vec![Vec::with_capacity(flat.numel()); xs.len()];
            for k in 0..flat.numel() {
                let (_, grads) = vjp_n(joined_f, xs, &unit(&flat, k)?)?;
                for (j, g) in grads.into_iter().enumerate() {
                    rows[j].push(g);
                }
            }
            for (j, (parts, x)) in rows.iter().zip(xs).enumerate() {
                place_rows(stack_parts(parts, flat.numel(), x)?, ys, which, j, blocks)?;
            }
            Ok(())
        })
    }
}

/// The Hessian blocks of a scalar function of several tensors (forward over reverse): `h[i][j]` is
/// `∂²f/∂xᵢ∂xⱼ`, of shape `xᵢ.shape ++ xⱼ.shape`, as `jax.hessian(f, argnums=(0, ..., n-1))`.
///
/// ```
/// # use nabla_tensor::{Tensor, hessian_n}; use nabla_cpu::CpuBackend; use nabla_core::DType;
/// let cpu = CpuBackend::new();
/// let (x, y) = (Tensor::scalar(2.0, DType::F64, &cpu)?, Tensor::scalar(3.0, DType::F64, &cpu)?);
/// // f = x² y: [[2y, 2x], [2x, 0]]
/// let h = hessian_n(|v: &[Tensor<CpuBackend>]| v[0].square()?.mul(&v[1]))(&[x, y])?;
/// let values: Vec<f64> = h.iter().flatten().map(|b| b.item::<f64>()).collect::<Result<_, _>>()?;
/// assert_eq!(values, vec![6.0, 4.0, 4.0, 0.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn hessian_n<B, F>(f: F) -> impl Fn(&[Tensor<B>]) -> Result<JacobianBlocks<B>>
where
    B: Backend,
    F: Fn(&[Tensor<B>]) -> Result<Tensor<B>>,
{
    jacfwd_n(grad_n(f))
}

/// A function linearised at a point by [`linearize`] or [`linearize_n`]: [`Linearized::apply`] pushes
/// tangents through the graph that one forward pass recorded (the primal is not computed again), as
/// the function `jax.linearize` returns.
pub struct Linearized<B: Backend> {
    output: Tensor<B>,
    marks: Vec<Tensor<B>>,
    nested: bool,
}

impl<B: Backend> Linearized<B> {
    /// `J t`: the tangent of the output for one tangent per input (each of its input's shape).
    pub fn apply(&self, tangents: &[Tensor<B>]) -> Result<Tensor<B>> {
        const OP: &str = "linearize";
        check_tangents(OP, &self.marks, tangents)?;
        let nested = self.nested || tangents.iter().any(Tensor::requires_grad);
        let marks: Vec<(u64, Tensor<B>)> = self
            .marks
            .iter()
            .zip(tangents)
            .filter_map(|(m, t)| Some((m.node_id()?, t.clone())))
            .collect();
        match push_forward(&self.output, &marks, nested, None)? {
            Some(t) => Ok(t),
            None => self.output.detach().zeros_like(),
        }
    }
}

/// The value of `f` at `x` and its linearisation there: `lin.apply(&[t])` is `jvp(f, x, t).1` without
/// running `f` again (JAX's `jax.linearize`). The recorded graph is kept alive by `lin`.
///
/// ```
/// # use nabla_tensor::{Tensor, linearize}; use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let x = Tensor::from_vec(vec![0.0f64, 1.0], [2], &cpu)?;
/// let (y, lin) = linearize(|x: &Tensor<CpuBackend>| x.exp(), &x)?;
/// let t = Tensor::from_vec(vec![1.0f64, 0.5], [2], &cpu)?;
/// let tangent = lin.apply(&[t])?.to_vec::<f64>()?; // exp(x) t
/// assert!((tangent[0] - 1.0).abs() < 1e-15 && (tangent[1] - 0.5 * 1f64.exp()).abs() < 1e-15);
/// assert!((y.to_vec::<f64>()?[1] - 1f64.exp()).abs() < 1e-15);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn linearize<B, F>(f: F, x: &Tensor<B>) -> Result<(Tensor<B>, Linearized<B>)>
where
    B: Backend,
    F: FnOnce(&Tensor<B>) -> Result<Tensor<B>>,
{
    linearize_n(|xs| f(&xs[0]), std::slice::from_ref(x))
}

/// [`linearize`] for a function of several tensors: `lin.apply(tangents)` is `Σⱼ Jⱼ tⱼ`.
pub fn linearize_n<B, F>(f: F, xs: &[Tensor<B>]) -> Result<(Tensor<B>, Linearized<B>)>
where
    B: Backend,
    F: FnOnce(&[Tensor<B>]) -> Result<Tensor<B>>,
{
    let MarkedRun {
        marks,
        output,
        captures_outer,
        ..
    } = run_marked("linearize", f, xs)?;
    let nested = captures_outer || xs.iter().any(Tensor::requires_grad);
    let value = if nested {
        output.clone()
    } else {
        output.detach()
    };
    Ok((
        value,
        Linearized {
            output,
            marks,
            nested,
        },
    ))
}
