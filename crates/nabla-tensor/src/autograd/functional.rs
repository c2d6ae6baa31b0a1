//! JAX-style transforms over closures: `grad`, `value_and_grad`, `vjp`. They nest: when an input is
//! itself tracked (by an outer transform or a variable), the inner reverse pass is recorded, so
//! `grad(grad(f))` is the second derivative.

use super::backward::{Targets, not_one_element, run_backward};
use super::pass::{BackwardOptions, captures_outer};
use crate::Tensor;
use nabla_core::{Backend, Result};

/// A function's value with one gradient per input.
type ValueAndGrads<B> = (Tensor<B>, Vec<Tensor<B>>);

/// A function run on marked copies of its inputs: what every functional transform differentiates.
pub(crate) struct MarkedRun<B: Backend> {
    /// The marked inputs `f` received.
    pub(crate) marks: Vec<Tensor<B>>,
    /// `f`'s output.
    pub(crate) output: Tensor<B>,
    /// The graph ids of the marks (inputs that can be differentiated).
    pub(crate) ids: Vec<u64>,
    /// `true` when the output also depends on tensors tracked outside the transform (so the
    /// transform's own pass must be recorded, as when an input is tracked).
    pub(crate) captures_outer: bool,
}

/// Runs `f` on marked copies of `xs` (marked for `op`).
pub(crate) fn run_marked<B: Backend>(
    op: &'static str,
    f: impl FnOnce(&[Tensor<B>]) -> Result<Tensor<B>>,
    xs: &[Tensor<B>],
) -> Result<MarkedRun<B>> {
    let marks = xs
        .iter()
        .map(|x| x.mark_input(op))
        .collect::<Result<Vec<_>>>()?;
    let output = f(&marks)?;
    let ids: Vec<u64> = marks.iter().filter_map(Tensor::node_id).collect();
    let captures_outer = captures_outer(&output, &ids);
    Ok(MarkedRun {
        marks,
        output,
        ids,
        captures_outer,
    })
}

/// Runs `f` on marked copies of `xs` and pulls `seed` (or 1 for a one-element output) back to them.
/// Returns the output (tracked only when the transform is nested) and one gradient per input.
fn pullback<B: Backend>(
    op: &'static str,
    f: impl FnOnce(&[Tensor<B>]) -> Result<Tensor<B>>,
    xs: &[Tensor<B>],
    seed: Option<&Tensor<B>>,
) -> Result<ValueAndGrads<B>> {
    let p = Pullback::record(op, f, xs, false)?;
    let grads = p.grads(seed)?;
    let y = if p.nested(seed) {
        p.run.output
    } else {
        p.run.output.detach()
    };
    Ok((y, grads))
}

/// The gradient function of a scalar function of one tensor (JAX's `jax.grad`).
///
/// ```
/// # use nabla_tensor::{Tensor, grad}; use nabla_cpu::CpuBackend;
/// let x = Tensor::from_vec(vec![2.0f64], [], &CpuBackend::new())?;
/// let cube = |x: &Tensor<CpuBackend>| x.pow(3.0);
/// assert_eq!(grad(cube)(&x)?.item::<f64>()?, 12.0); // 3x^2
/// assert_eq!(grad(grad(cube))(&x)?.item::<f64>()?, 12.0); // 6x
/// assert_eq!(grad(grad(grad(cube)))(&x)?.item::<f64>()?, 6.0);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn grad<B, F>(f: F) -> impl Fn(&Tensor<B>) -> Result<Tensor<B>>
where
    B: Backend,
    F: Fn(&Tensor<B>) -> Result<Tensor<B>>,
{
    move |x| {
        let (_, mut g) = pullback("grad", |xs| f(&xs[0]), std::slice::from_ref(x), None)?;
        Ok(g.remove(0))
    }
}

/// The value and gradient of a scalar function of one tensor (JAX's `jax.value_and_grad`).
pub fn value_and_grad<B, F>(f: F) -> impl Fn(&Tensor<B>) -> Result<(Tensor<B>, Tensor<B>)>
where
    B: Backend,
    F: Fn(&Tensor<B>) -> Result<Tensor<B>>,
{
    move |x| {
        let (y, mut g) = pullback(
            "value_and_grad",
            |xs| f(&xs[0]),
            std::slice::from_ref(x),
            None,
        )?;
        Ok((y, g.remove(0)))
    }
}

/// The gradients of a scalar function of several tensors with respect to each of them.
///
/// ```
/// # use nabla_tensor::{Tensor, grad_n}; use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let (a, b) = (Tensor::from_vec(vec![3.0f64], [], &cpu)?, Tensor::from_vec(vec![4.0f64], [], &cpu)?);
/// let g = grad_n(|v: &[Tensor<CpuBackend>]| v[0].mul(&v[1]))(&[a, b])?;
/// assert_eq!((g[0].item::<f64>()?, g[1].item::<f64>()?), (4.0, 3.0));
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn grad_n<B, F>(f: F) -> impl Fn(&[Tensor<B>]) -> Result<Vec<Tensor<B>>>
where
    B: Backend,
    F: Fn(&[Tensor<B>]) -> Result<Tensor<B>>,
{
    move |xs| Ok(pullback("grad", &f, xs, None)?.1)
}

/// The value and gradients of a scalar function of several tensors.
pub fn value_and_grad_n<B, F>(f: F) -> impl Fn(&[Tensor<B>]) -> Result<ValueAndGrads<B>>
where
    B: Backend,
    F: Fn(&[Tensor<B>]) -> Result<Tensor<B>>,
{
    move |xs| pullback("value_and_grad", &f, xs, None)
}

/// The vector-Jacobian product of `f` at `x` with `cotangent` (of the output's shape): returns
/// `(f(x), cotangentᵀ J)` as JAX's `jax.vjp` followed by the pullback.
///
/// ```
/// # use nabla_tensor::{Tensor, vjp}; use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], [2], &cpu)?;
/// let u = Tensor::from_vec(vec![1.0f64, 10.0], [2], &cpu)?;
/// let (y, g) = vjp(|x: &Tensor<CpuBackend>| x.square(), &x, &u)?;
/// assert_eq!(y.to_vec::<f64>()?, vec![1.0, 4.0]);
/// assert_eq!(g.to_vec::<f64>()?, vec![2.0, 40.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn vjp<B, F>(f: F, x: &Tensor<B>, cotangent: &Tensor<B>) -> Result<(Tensor<B>, Tensor<B>)>
where
    B: Backend,
    F: FnOnce(&Tensor<B>) -> Result<Tensor<B>>,
{
    let (y, mut g) = pullback(
        "vjp",
        |xs| f(&xs[0]),
        std::slice::from_ref(x),
        Some(cotangent),
    )?;
    Ok((y, g.remove(0)))
}

/// [`vjp`] for a function of several tensors: one cotangent-weighted gradient per input.
pub fn vjp_n<B, F>(
    f: F,
    xs: &[Tensor<B>],
    cotangent: &Tensor<B>,
) -> Result<(Tensor<B>, Vec<Tensor<B>>)>
where
    B: Backend,
    F: FnOnce(&[Tensor<B>]) -> Result<Tensor<B>>,
{
    pullback("vjp", f, xs, Some(cotangent))
}

/// The pullback of a function at a point, from [`vjp_fn_n`]: maps an output cotangent to one
/// gradient per input, as many times as needed (the recorded graph is kept).
pub struct Pullback<B: Backend> {
    /// The transform, for error messages.
    op: &'static str,
    run: MarkedRun<B>,
    /// The inputs, detached: zero gradients take their shapes.
    inputs: Vec<Tensor<B>>,
    /// `true` when an input is tracked by an outer transform (the pass is then recorded).
    inputs_tracked: bool,
    /// Keep the graph after a pass, so that the pullback can be applied again.
    reusable: bool,
}

impl<B: Backend> Pullback<B> {
    /// Runs `f` on marked copies of `xs`, ready to pull cotangents back.
    fn record(
        op: &'static str,
        f: impl FnOnce(&[Tensor<B>]) -> Result<Tensor<B>>,
        xs: &[Tensor<B>],
        reusable: bool,
    ) -> Result<Self> {
        Ok(Pullback {
            op,
            run: run_marked(op, f, xs)?,
            inputs: xs.iter().map(Tensor::detach).collect(),
            inputs_tracked: xs.iter().any(Tensor::requires_grad),
            reusable,
        })
    }

    /// `true` when the pass must be recorded: something outside the transform is tracked.
    fn nested(&self, seed: Option<&Tensor<B>>) -> bool {
        self.run.captures_outer || self.inputs_tracked || seed.is_some_and(Tensor::requires_grad)
    }

    /// One gradient per input for the output cotangent `seed` (1 for a one-element output).
    fn grads(&self, seed: Option<&Tensor<B>>) -> Result<Vec<Tensor<B>>> {
        let (op, y) = (self.op, &self.run.output);
        let nested = self.nested(seed);
        let found = if y.requires_grad() {
            let seed = y.checked_seed(op, seed)?;
            let opts = BackwardOptions {
                create_graph: nested,
                retain_graph: nested || self.reusable,
                ..Default::default()
            };
            run_backward(y, seed, Targets::Nodes(&self.run.ids), opts, None)?
        } else {
            if let Some(s) = seed {
                y.check_matches(op, s, "the cotangent must have the output's shape")?;
            }
            if seed.is_none() && y.numel() != 1 {
                return Err(not_one_element(op, y.shape()));
            }
            Vec::new()
        };
        self.run
            .marks
            .iter()
            .zip(&self.inputs)
            .map(|(m, x)| {
                let id = m.node_id();
                match found.iter().find(|(n, _)| Some(n.id) == id) {
                    Some((_, g)) => Ok(g.clone()),
                    None => x.zeros_like(),
                }
            })
            .collect()
    }

    /// `cotangentᵀ J` for each input (`None` seeds a one-element output with 1, as `grad`).
    pub fn apply(&self, cotangent: Option<&Tensor<B>>) -> Result<Vec<Tensor<B>>> {
        self.grads(cotangent)
    }
}

/// `f`'s value at `xs` and its [`Pullback`], which can be applied to many cotangents without running
/// `f` again: JAX's `y, vjp_fn = jax.vjp(f, *xs)`. Nests like [`vjp_n`] (the value is tracked when an
/// input is).
///
/// ```
/// # use nabla_tensor::{Tensor, vjp_fn_n}; use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], [2], &cpu)?;
/// let (y, pullback) = vjp_fn_n(|v: &[Tensor<CpuBackend>]| v[0].square(), &[x])?;
/// assert_eq!(y.to_vec::<f64>()?, vec![1.0, 4.0]);
/// for (u, want) in [(vec![1.0, 0.0], vec![2.0, 0.0]), (vec![0.0, 1.0], vec![0.0, 4.0])] {
///     let g = pullback.apply(Some(&Tensor::from_vec(u, [2], &cpu)?))?;
///     assert_eq!(g[0].to_vec::<f64>()?, want);
/// }
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn vjp_fn_n<B, F>(f: F, xs: &[Tensor<B>]) -> Result<(Tensor<B>, Pullback<B>)>
where
    B: Backend,
    F: FnOnce(&[Tensor<B>]) -> Result<Tensor<B>>,
{
    let p = Pullback::record("vjp", f, xs, true)?;
    let y = if p.run.captures_outer || p.inputs_tracked {
        p.run.output.clone()
    } else {
        p.run.output.detach()
    };
    Ok((y, p))
}
