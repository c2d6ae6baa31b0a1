//! Jacobians and Hessians of functions of several tensors with several outputs (JAX's `jacfwd`,
//! `jacrev` and `hessian` with `argnums` over every input and tuple outputs), and `linearize`: the
//! primal value with a linear function that pushes tangents through the graph recorded by that one
//! forward pass.

use super::backward::captures_outer;
use super::forward::{check_tangents, jvp_n, push_forward};
use super::functional::{grad_n, vjp_n};
use crate::Tensor;
use nabla_core::{Backend, Error, Result};

/// One Jacobian block per (output, input) pair: `blocks[i][j]` is `∂yᵢ/∂xⱼ`, of shape
/// `yᵢ.shape ++ xⱼ.shape`.
pub type JacobianBlocks<B> = Vec<Vec<Tensor<B>>>;

/// The outputs of `f` flattened and joined into one vector, with their shapes.
fn flat_outputs<B: Backend>(ys: &[Tensor<B>]) -> Result<Tensor<B>> {
    let flat = ys
        .iter()
        .map(|y| y.reshape([y.numel()]))
        .collect::<Result<Vec<_>>>()?;
    match flat.as_slice() {
        [] => Err(Error::invalid(
            "jacobian",
            "the function returned no output",
        )),
        [one] => Ok(one.clone()),
        _ => Tensor::cat(&flat.iter().collect::<Vec<_>>(), 0),
    }
}

/// Splits a `[total, ...x.shape]` stack of rows (one per flattened output element) into one block per
/// output, of shape `y.shape ++ x.shape`.
fn split_rows<B: Backend>(
    rows: Tensor<B>,
    out_shapes: &[Vec<usize>],
    x: &Tensor<B>,
) -> Result<Vec<Tensor<B>>> {
    let mut start = 0;
    out_shapes
        .iter()
        .map(|shape| {
            let len: usize = shape.iter().product();
            let mut full = shape.clone();
            full.extend(x.shape());
            let block = rows.narrow(0, start, len)?.reshape(full)?;
            start += len;
            Ok(block)
        })
        .collect()
}

/// Stacks per-element results (`rows`: one per output element, each of `x`'s shape) into
/// `[total, ...x.shape]`.
fn stack_rows<B: Backend>(rows: &[Tensor<B>], total: usize, x: &Tensor<B>) -> Result<Tensor<B>> {
    if rows.is_empty() {
        let mut shape = vec![total];
        shape.extend(x.shape());
        return Tensor::zeros(shape, x.dtype(), x.backend());
    }
    Tensor::stack(&rows.iter().collect::<Vec<_>>(), 0)
}

/// The unit tangent number `k` of `x`'s shape.
fn unit<B: Backend>(x: &Tensor<B>, k: usize) -> Result<Tensor<B>> {
    let mut data = vec![0.0f64; x.numel()];
    data[k] = 1.0;
    Tensor::from_vec(data, x.shape().to_vec(), x.backend())?.cast(x.dtype())
}

/// The Jacobian blocks of `f` at `xs` by forward mode (one JVP per input element): `blocks[i][j]` is
/// `∂yᵢ/∂xⱼ`, of shape `yᵢ.shape ++ xⱼ.shape`, as `jax.jacfwd(f, argnums=(0, ..., n-1))` with tuple
/// outputs.
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
        let out_shapes: Vec<Vec<usize>> = f(xs)?.iter().map(|y| y.shape().to_vec()).collect();
        let total = out_shapes.iter().map(|s| s.iter().product::<usize>()).sum();
        let zeros = xs
            .iter()
            .map(|x| x.detach().zeros_like())
            .collect::<Result<Vec<_>>>()?;
        let mut by_input = Vec::with_capacity(xs.len());
        for (j, x) in xs.iter().enumerate() {
            let mut columns = Vec::with_capacity(x.numel());
            for k in 0..x.numel() {
                let mut tangents = zeros.clone();
                tangents[j] = unit(x, k)?;
                let (_, column) = jvp_n(|xs| flat_outputs(&f(xs)?), xs, &tangents)?;
                columns.push(column);
            }
            // Columns `[total]` per input element, as rows of the transposed Jacobian.
            let mut shape = vec![total];
            shape.extend(x.shape());
            let block = if columns.is_empty() {
                Tensor::zeros(shape, x.dtype(), x.backend())?
            } else {
                Tensor::stack(&columns.iter().collect::<Vec<_>>(), -1)?.reshape(shape)?
            };
            by_input.push(split_rows(block, &out_shapes, x)?);
        }
        Ok(transpose_blocks(by_input, out_shapes.len()))
    }
}

/// `by_input[j][i]` as `blocks[i][j]`.
fn transpose_blocks<B: Backend>(
    by_input: Vec<Vec<Tensor<B>>>,
    outputs: usize,
) -> JacobianBlocks<B> {
    let mut blocks: JacobianBlocks<B> = (0..outputs).map(|_| Vec::new()).collect();
    for column in by_input {
        for (i, block) in column.into_iter().enumerate() {
            blocks[i].push(block);
        }
    }
    blocks
}

/// The Jacobian blocks of `f` at `xs` by reverse mode (one VJP per output element), laid out as
/// [`jacfwd_n`]'s, as `jax.jacrev(f, argnums=(0, ..., n-1))` with tuple outputs.
pub fn jacrev_n<B, F>(f: F) -> impl Fn(&[Tensor<B>]) -> Result<JacobianBlocks<B>>
where
    B: Backend,
    F: Fn(&[Tensor<B>]) -> Result<Vec<Tensor<B>>>,
{
    move |xs| {
        let ys = f(xs)?;
        let out_shapes: Vec<Vec<usize>> = ys.iter().map(|y| y.shape().to_vec()).collect();
        let flat = flat_outputs(&ys)?.detach();
        let total = flat.numel();
        let mut rows: Vec<Vec<Tensor<B>>> = vec![Vec::with_capacity(total); xs.len()];
        for k in 0..total {
            let (_, grads) = vjp_n(|xs| flat_outputs(&f(xs)?), xs, &unit(&flat, k)?)?;
            for (j, g) in grads.into_iter().enumerate() {
                rows[j].push(g);
            }
        }
        let by_input = rows
            .iter()
            .zip(xs)
            .map(|(r, x)| split_rows(stack_rows(r, total, x)?, &out_shapes, x))
            .collect::<Result<Vec<_>>>()?;
        Ok(transpose_blocks(by_input, out_shapes.len()))
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
    const OP: &str = "linearize";
    let nested = xs.iter().any(Tensor::requires_grad);
    let marks = xs
        .iter()
        .map(|x| x.mark_input(OP))
        .collect::<Result<Vec<_>>>()?;
    let output = f(&marks)?;
    let ids: Vec<u64> = marks.iter().filter_map(Tensor::node_id).collect();
    let nested = nested || captures_outer(&output, &ids);
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
