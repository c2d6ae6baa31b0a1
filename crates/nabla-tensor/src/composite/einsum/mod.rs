//! `einsum`: Einstein summation over any number of operands, as NumPy, JAX and PyTorch spell it
//! (`"ij,jk->ik"`, `"...ij,...jk"`, `"ii->i"`), composed of differentiable primitives.
//!
//! Each operand is first reduced on its own: a label repeated within it takes the diagonal (a
//! strided view), a size-1 dimension broadcast against a larger one is dropped, and a label no other
//! operand and not the output needs is summed. The operands are then contracted two at a time in the
//! order [`einsum_path`] plans (the cheapest by multiply-adds), each pair as one batched matrix
//! product (`permute` + `reshape` + `matmul`), and the result is summed and permuted to the output's
//! labels. Every step is a primitive with rules, so einsum is differentiable to any order, batches
//! under `vmap` and traces into programs.

mod parse;
mod plan;

use crate::Tensor;
use nabla_core::{Backend, Error, Result};
use parse::{Equation, Label, OP, parse};

/// A planned contraction order for [`Tensor::einsum`] (from [`einsum_path`]).
#[derive(Clone, Debug, PartialEq)]
pub struct EinsumPath {
    /// Pairs of positions in the current list of operands, contracted in turn; each pair's result
    /// goes to the end of the list (`numpy.einsum_path`'s convention).
    pub steps: Vec<(usize, usize)>,
    /// Multiply-adds of the planned order.
    pub flops: f64,
    /// Multiply-adds of contracting left to right, `((A B) C) ...`, for comparison.
    pub left_to_right_flops: f64,
}

/// The contraction order [`Tensor::einsum`] uses for operands of these shapes: every order is tried
/// for up to six operands (the cheapest), the cheapest next pair is taken beyond.
///
/// ```
/// // A chain A (10 x 1000), B (1000 x 10), C (10 x 1000): (A B) C is far cheaper than A (B C).
/// let path = nabla_tensor::einsum_path("ij,jk,kl->il", &[&[10, 1000], &[1000, 10], &[10, 1000]])?;
/// assert_eq!(path.steps, vec![(0, 1), (0, 1)]);
/// assert_eq!(path.flops, 200_000.0);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn einsum_path(equation: &str, shapes: &[&[usize]]) -> Result<EinsumPath> {
    let eq = parse(equation, shapes)?;
    let labels: Vec<Vec<Label>> = (0..shapes.len())
        .map(|k| reduced_labels(&eq, k, shapes[k]))
        .collect();
    let order = plan::plan(&labels, &eq.output, &eq.sizes);
    Ok(EinsumPath {
        steps: order.steps,
        flops: order.flops,
        left_to_right_flops: plan::left_to_right(&labels, &eq.output, &eq.sizes),
    })
}

/// Whether `label` of operand `k` is needed beyond it: by the output or another operand.
fn needed_elsewhere(eq: &Equation, k: usize, label: Label) -> bool {
    eq.output.contains(&label)
        || eq
            .inputs
            .iter()
            .enumerate()
            .any(|(j, ls)| j != k && ls.contains(&label))
}

/// The labels operand `k` (of `shape`) keeps after [`reduce`]: each once, broadcast dimensions
/// dropped, labels nobody else needs summed.
fn reduced_labels(eq: &Equation, k: usize, shape: &[usize]) -> Vec<Label> {
    let mut labels: Vec<Label> = Vec::new();
    for (&l, &n) in eq.inputs[k].iter().zip(shape) {
        let broadcast = n == 1 && eq.sizes[&l] > 1;
        if !labels.contains(&l) && !broadcast && needed_elsewhere(eq, k, l) {
            labels.push(l);
        }
    }
    labels
}

/// A tensor with one label per dimension.
struct Term<B: Backend> {
    t: Tensor<B>,
    labels: Vec<Label>,
}

impl<B: Backend> Term<B> {
    /// Sums the dimensions whose label `keep` rejects.
    fn sum_unless(self, keep: impl Fn(Label) -> bool) -> Result<Self> {
        let axes: Vec<isize> = (0..self.labels.len())
            .filter(|&p| !keep(self.labels[p]))
            .map(|p| p as isize)
            .collect();
        if axes.is_empty() {
            return Ok(self);
        }
        let labels = self.labels.iter().copied().filter(|&l| keep(l)).collect();
        Ok(Term {
            t: self.t.sum(&axes, false)?,
            labels,
        })
    }

    /// The positions of `labels` in this term.
    fn positions(&self, labels: &[Label]) -> Vec<isize> {
        labels
            .iter()
            .filter_map(|l| self.labels.iter().position(|m| m == l))
            .map(|p| p as isize)
            .collect()
    }
}

/// Operand `k` reduced on its own (see the module docs).
fn reduce<B: Backend>(eq: &Equation, k: usize, t: &Tensor<B>) -> Result<Term<B>> {
    let mut term = Term {
        t: t.clone(),
        labels: eq.inputs[k].clone(),
    };
    // A repeated label: the diagonal over its two dimensions, appended last.
    while let Some((p, q)) = (0..term.labels.len()).find_map(|p| {
        (p + 1..term.labels.len())
            .find(|&q| term.labels[q] == term.labels[p])
            .map(|q| (p, q))
    }) {
        term.t = term.t.diagonal(0, p as isize, q as isize)?;
        let l = term.labels.remove(q);
        term.labels.remove(p);
        term.labels.push(l);
    }
    for p in (0..term.labels.len()).rev() {
        if term.t.shape()[p] == 1 && eq.sizes[&term.labels[p]] > 1 {
            term.t = term.t.squeeze(p as isize)?;
            term.labels.remove(p);
        }
    }
    term.sum_unless(|l| needed_elsewhere(eq, k, l))
}

/// `a` and `b` contracted into one term keeping the labels of `keep` (the output's and those of the
/// operands still to come), as one batched matrix product.
fn contract_pair<B: Backend>(a: Term<B>, b: Term<B>, keep: &[Label]) -> Result<Term<B>> {
    let a = a.sum_unless(|l| b.labels.contains(&l) || keep.contains(&l))?;
    let b = b.sum_unless(|l| a.labels.contains(&l) || keep.contains(&l))?;
    let shared: Vec<Label> = a
        .labels
        .iter()
        .copied()
        .filter(|l| b.labels.contains(l))
        .collect();
    let (batch, summed): (Vec<Label>, Vec<Label>) = shared.iter().partition(|l| keep.contains(l));
    let only_a: Vec<Label> = a
        .labels
        .iter()
        .copied()
        .filter(|l| !shared.contains(l))
        .collect();
    let only_b: Vec<Label> = b
        .labels
        .iter()
        .copied()
        .filter(|l| !shared.contains(l))
        .collect();
    let size = |t: &Term<B>, ls: &[Label]| -> Vec<usize> {
        t.positions(ls)
            .iter()
            .map(|&p| t.t.shape()[p as usize])
            .collect()
    };
    let (batch_dims, a_dims, b_dims) = (size(&a, &batch), size(&a, &only_a), size(&b, &only_b));
    // An operand with an empty axis elsewhere may have groups whose sizes overflow.
    let n = |d: &[usize]| nabla_core::checked_numel("einsum", d);
    let (k, nb) = (n(&size(&a, &summed))?, n(&batch_dims)?);
    let order_a: Vec<Label> = [&batch[..], &only_a, &summed].concat();
    let order_b: Vec<Label> = [&batch[..], &summed, &only_b].concat();
    let lhs =
        a.t.permute(&a.positions(&order_a))?
            .reshape([nb, n(&a_dims)?, k])?;
    let rhs =
        b.t.permute(&b.positions(&order_b))?
            .reshape([nb, k, n(&b_dims)?])?;
    let dims: Vec<usize> = [&batch_dims[..], &a_dims, &b_dims].concat();
    Ok(Term {
        t: lhs.matmul(&rhs)?.reshape(dims)?,
        labels: [&batch[..], &only_a, &only_b].concat(),
    })
}

impl<B: Backend> Tensor<B> {
    /// Einstein summation of `operands` by `equation`, as `numpy.einsum` / `torch.einsum`: letters
    /// name dimensions, a letter in two operands is multiplied along, a letter absent from the output
    /// is summed, a letter repeated within one operand takes its diagonal, and `...` stands for
    /// broadcast dimensions. Without `->` the output is NumPy's implicit one (the `...` dimensions,
    /// then the letters used once, alphabetically). Three or more operands are contracted in the
    /// cheapest order ([`einsum_path`]). Differentiable to any order.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let cpu = CpuBackend::new();
    /// let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], [2, 2], &cpu)?;
    /// let b = Tensor::from_vec(vec![5.0f64, 6.0, 7.0, 8.0], [2, 2], &cpu)?;
    /// let ab = Tensor::einsum("ij,jk->ik", &[&a, &b])?;
    /// assert_eq!(ab.to_vec::<f64>()?, a.matmul(&b)?.to_vec::<f64>()?);
    /// assert_eq!(Tensor::einsum("ii", &[&a])?.item::<f64>()?, 5.0); // trace
    /// assert_eq!(Tensor::einsum("ij->j", &[&a])?.to_vec::<f64>()?, vec![4.0, 6.0]);
    /// let batched = Tensor::einsum("...ij,...jk", &[&a.unsqueeze(0)?, &b])?;
    /// assert_eq!(batched.shape(), &[1, 2, 2]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn einsum(equation: &str, operands: &[&Tensor<B>]) -> Result<Tensor<B>> {
        let first = operands
            .first()
            .ok_or_else(|| Error::invalid(OP, "needs at least one operand"))?;
        for (k, t) in operands.iter().enumerate().skip(1) {
            first
                .check_device(OP, t)
                .map_err(|e| e.with_hint(format!("operand {k} is on another device")))?;
        }
        let shapes: Vec<&[usize]> = operands.iter().map(|t| t.shape()).collect();
        let eq = parse(equation, &shapes)?;
        let mut terms = operands
            .iter()
            .enumerate()
            .map(|(k, t)| reduce(&eq, k, t))
            .collect::<Result<Vec<_>>>()?;
        let labels: Vec<Vec<Label>> = terms.iter().map(|t| t.labels.clone()).collect();
        for (i, j) in plan::plan(&labels, &eq.output, &eq.sizes).steps {
            let b = terms.remove(j);
            let a = terms.remove(i);
            let mut keep = eq.output.clone();
            keep.extend(terms.iter().flat_map(|t| t.labels.iter().copied()));
            terms.push(contract_pair(a, b, &keep)?);
        }
        let last = terms
            .pop()
            .ok_or_else(|| Error::invalid(OP, "no operand left after contracting"))?;
        let last = last.sum_unless(|l| eq.output.contains(&l))?;
        let perm = last.positions(&eq.output);
        if perm.len() != eq.output.len() {
            return Err(Error::invalid(
                OP,
                format!("{equation:?}: an output dimension was lost while contracting"),
            ));
        }
        last.t.permute(&perm)
    }
}
