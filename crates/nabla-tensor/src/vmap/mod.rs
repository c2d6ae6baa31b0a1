//! `vmap`: a function of one example, run on a whole batch at once.
//!
//! [`vmap`] traces the function once at the shape of one example (a [`Program`] of backend
//! primitives, with every transform the function applies already in it: `grad`, `jvp`, `hessian`,
//! custom rules, nested `vmap`) and replays that program on the batch, primitive by primitive, through
//! each primitive's batching rule (`rules/batch.rs` routes each primitive, in one exhaustive match over
//! the catalogue, to the rule in its family's module). The replay is written in ordinary tensor ops,
//! so its result is differentiable (`grad` of `vmap`) and, on traced tensors, recorded into the
//! enclosing program (`vmap` inside `jit`-style tracing, nested `vmap`).
//!
//! Semantics, as `jax.vmap`:
//! - `in_axes[i]` is the axis of input `i` that is mapped (negative counts from the end), or `None`
//!   for an input shared by every example; at least one input is mapped and all mapped axes have one
//!   size. `out_axes[j]` is where the batch axis goes in output `j` (an output that does not depend on
//!   a mapped input is broadcast along it); `None` requires the output to be the same for every
//!   example and returns it once.
//! - Random draws inside the function are made once and shared by every example: JAX's semantics for
//!   a key that is not batched. To draw per example, pass the noise in as a mapped input.
//! - The function sees traced tensors, so it cannot branch on their values; every tensor it uses must
//!   be an input (pass shared weights with `in_axes` `None`).
//! - Extension ops that map over leading dimensions (linear algebra) run once on the batch, others
//!   once per example. `grad` of a `vmap` through an extension op needs its rules from an
//!   [`AdContext`](crate::AdContext) built `with_extension_rules` (the traced program keeps the op, not
//!   the family that bound its rules); `vmap` of `grad` needs nothing.

mod view;

use crate::Tensor;
use crate::trace::{Program, TraceOp, TracedTensor, TracingBackend};
use nabla_core::{Backend, Error, Result};

/// A traced value during a batched replay: its tensor, with the batch dimension in front when
/// `batched`.
#[derive(Clone, Debug)]
pub(crate) struct BatchValue<B: Backend> {
    pub(crate) tensor: Tensor<B>,
    pub(crate) batched: bool,
}

impl<B: Backend> BatchValue<B> {
    pub(crate) fn new(tensor: Tensor<B>, batched: bool) -> Self {
        BatchValue { tensor, batched }
    }

    /// Number of leading batch dimensions (0 or 1).
    fn lead(&self) -> usize {
        usize::from(self.batched)
    }

    /// The tensor with the batch dimension, broadcast along it when the value is unbatched.
    pub(crate) fn expanded(&self, batch: usize) -> Result<Tensor<B>> {
        if self.batched {
            return Ok(self.tensor.clone());
        }
        let mut shape = vec![batch];
        shape.extend(self.tensor.shape());
        self.tensor.unsqueeze(0)?.broadcast_to(shape)
    }
}

/// `axis` of one example as an axis of the batch: one further along when the operand is batched.
pub(crate) fn batch_axis(axis: usize, batched: bool) -> isize {
    (axis + usize::from(batched)) as isize
}

/// Whether any operand has the batch dimension (then the op's output has it too).
pub(crate) fn any_batched<B: Backend>(operands: &[BatchValue<B>]) -> bool {
    operands.iter().any(|v| v.batched)
}

/// Every operand with the batch dimension (unbatched ones broadcast along it) when any operand has
/// it; otherwise the operands as they are.
pub(crate) fn expand_all<B: Backend>(
    operands: &[BatchValue<B>],
    batch: usize,
) -> Result<Vec<Tensor<B>>> {
    let lead = any_batched(operands);
    operands
        .iter()
        .map(|v| {
            if lead {
                v.expanded(batch)
            } else {
                Ok(v.tensor.clone())
            }
        })
        .collect()
}

/// [`expand_all`] of exactly `N` operands.
pub(crate) fn expand_n<B: Backend, const N: usize>(
    operands: &[BatchValue<B>],
    batch: usize,
) -> Result<[Tensor<B>; N]> {
    let all = expand_all(operands, batch)?;
    all.try_into().map_err(|v: Vec<Tensor<B>>| {
        nabla_core::Error::invalid("vmap", format!("expected {N} operands, got {}", v.len()))
    })
}

/// What a vmapped function returns: one traced tensor, a vector or a pair of them.
pub trait VmapOutputs {
    /// The outputs in order.
    fn into_outputs(self) -> Vec<TracedTensor>;
}

impl VmapOutputs for TracedTensor {
    fn into_outputs(self) -> Vec<TracedTensor> {
        vec![self]
    }
}

impl VmapOutputs for Vec<TracedTensor> {
    fn into_outputs(self) -> Vec<TracedTensor> {
        self
    }
}

impl VmapOutputs for (TracedTensor, TracedTensor) {
    fn into_outputs(self) -> Vec<TracedTensor> {
        vec![self.0, self.1]
    }
}

/// A function of one example mapped over a batch; build it with [`vmap`], set the axes with
/// [`Vmap::in_axes`] and [`Vmap::out_axes`], run it with [`Vmap::call`].
pub struct Vmap<F> {
    f: F,
    in_axes: Option<Vec<Option<isize>>>,
    out_axes: Vec<Option<isize>>,
}

/// Maps `f`, a function of the tensors of one example, over a batch: `vmap(f).call(&[&xs])` is
/// `stack([f(x) for x in xs])`, computed in one pass (see the [module docs](self) for the semantics).
/// By default every input is mapped along axis 0 and every output gets the batch axis first.
///
/// Per-example gradients, `vmap(grad(loss))` with shared weights:
///
/// ```
/// use nabla_tensor::{Tensor, grad, vmap};
/// use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let w = Tensor::from_vec(vec![1.0f64, -2.0, 0.5], [3], &cpu)?;
/// let xs = Tensor::from_vec(vec![1.0f64, 0.0, 2.0, 3.0, 1.0, -1.0], [2, 3], &cpu)?;
/// // d/dw of (w·x)² for each example: 2 (w·x) x.
/// let per_example = vmap(|t| {
///     let (w, x) = (&t[0], &t[1]);
///     grad(|w: &Tensor<_>| w.mul(x)?.sum_all()?.square())(w)
/// })
/// .in_axes(&[None, Some(0)])
/// .call1(&[&w, &xs])?;
/// assert_eq!(per_example.shape(), &[2, 3]);
/// assert_eq!(per_example.to_vec::<f64>()?, vec![4.0, 0.0, 8.0, 3.0, 1.0, -1.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn vmap<F, O>(f: F) -> Vmap<F>
where
    F: Fn(&[TracedTensor]) -> Result<O>,
    O: VmapOutputs,
{
    Vmap {
        f,
        in_axes: None,
        out_axes: vec![Some(0)],
    }
}

impl<F, O> Vmap<F>
where
    F: Fn(&[TracedTensor]) -> Result<O>,
    O: VmapOutputs,
{
    /// The mapped axis of each input (`None`: shared by every example); one entry per input.
    pub fn in_axes(mut self, axes: &[Option<isize>]) -> Self {
        self.in_axes = Some(axes.to_vec());
        self
    }

    /// Where the batch axis goes in each output (`None`: the output must not depend on the batch,
    /// and is returned once); one entry per output, or a single entry for all of them.
    pub fn out_axes(mut self, axes: &[Option<isize>]) -> Self {
        self.out_axes = axes.to_vec();
        self
    }

    /// Runs the mapped function on `inputs`: eagerly on a real backend (recorded for autodiff when an
    /// input is tracked), or recorded into the enclosing program on a [`TracingBackend`].
    pub fn call<B: Backend>(&self, inputs: &[&Tensor<B>]) -> Result<Vec<Tensor<B>>> {
        let first = inputs.first().ok_or_else(|| {
            Error::invalid("vmap", "the mapped function needs at least one input")
        })?;
        let (values, batch) = self.batch_inputs(inputs)?;
        let tb = TracingBackend::new();
        let placeholders = values
            .iter()
            .map(|v| tb.placeholder(v.tensor.shape()[v.lead()..].to_vec(), v.tensor.dtype()))
            .collect::<Result<Vec<_>>>()?;
        let outputs = (self.f)(&placeholders)?.into_outputs();
        let program = tb.program(&outputs.iter().collect::<Vec<_>>())?;
        let results = if batch == 0 {
            empty_batch(&program, first.backend())?
        } else {
            replay(&program, values, batch, first.backend())?
        };
        self.place_outputs(results, batch)
    }

    /// [`Vmap::call`] for a function with exactly one output.
    pub fn call1<B: Backend>(&self, inputs: &[&Tensor<B>]) -> Result<Tensor<B>> {
        let mut out = self.call(inputs)?;
        if out.len() != 1 {
            return Err(Error::invalid(
                "vmap",
                format!(
                    "call1 expects one output, the function returned {}",
                    out.len()
                ),
            ));
        }
        Ok(out.remove(0))
    }

    /// Each input with its mapped axis moved to the front, and the batch size.
    fn batch_inputs<B: Backend>(
        &self,
        inputs: &[&Tensor<B>],
    ) -> Result<(Vec<BatchValue<B>>, usize)> {
        let axes = match &self.in_axes {
            Some(axes) if axes.len() != inputs.len() => {
                return Err(Error::invalid(
                    "vmap",
                    format!(
                        "in_axes has {} entries for {} inputs",
                        axes.len(),
                        inputs.len()
                    ),
                ));
            }
            Some(axes) => axes.clone(),
            None => vec![Some(0); inputs.len()],
        };
        let mut batch: Option<(usize, usize)> = None;
        let mut values = Vec::with_capacity(inputs.len());
        for (i, (x, axis)) in inputs.iter().zip(&axes).enumerate() {
            let Some(axis) = *axis else {
                values.push(BatchValue::new((*x).clone(), false));
                continue;
            };
            let rank = x.rank() as isize;
            if axis < -rank || axis >= rank {
                return Err(Error::invalid(
                    "vmap",
                    format!(
                        "in_axes[{i}] = {axis} is out of range for input shape {:?}",
                        x.shape()
                    ),
                ));
            }
            let axis = axis.rem_euclid(rank.max(1)) as usize;
            let size = x.shape()[axis];
            match batch {
                Some((first, n)) if n != size => {
                    return Err(Error::invalid(
                        "vmap",
                        format!(
                            "mapped axes have different sizes: input {first} has {n}, input {i} has \
                             {size}"
                        ),
                    ));
                }
                Some(_) => {}
                None => batch = Some((i, size)),
            }
            values.push(BatchValue::new(move_axis(x, axis, 0)?, true));
        }
        let (_, batch) = batch.ok_or_else(|| {
            Error::invalid(
                "vmap",
                "every in_axes entry is None: at least one input must be mapped",
            )
        })?;
        Ok((values, batch))
    }

    /// Moves the batch axis of each result where `out_axes` says.
    fn place_outputs<B: Backend>(
        &self,
        results: Vec<BatchValue<B>>,
        batch: usize,
    ) -> Result<Vec<Tensor<B>>> {
        let count = results.len();
        if self.out_axes.len() != 1 && self.out_axes.len() != count {
            return Err(Error::invalid(
                "vmap",
                format!(
                    "out_axes has {} entries for {count} outputs",
                    self.out_axes.len()
                ),
            ));
        }
        results
            .into_iter()
            .enumerate()
            .map(|(j, value)| {
                let axis = self.out_axes[if self.out_axes.len() == 1 { 0 } else { j }];
                match axis {
                    None if value.batched => Err(Error::invalid(
                        "vmap",
                        format!("out_axes[{j}] is None but output {j} differs between examples"),
                    )),
                    None => Ok(value.tensor),
                    Some(axis) => {
                        let t = value.expanded(batch)?;
                        let rank = t.rank() as isize;
                        if axis < -rank || axis >= rank {
                            return Err(Error::invalid(
                                "vmap",
                                format!(
                                    "out_axes[{j}] = {axis} is out of range for an output of rank \
                                     {rank} (batch axis included)"
                                ),
                            ));
                        }
                        move_axis(&t, 0, axis.rem_euclid(rank) as usize)
                    }
                }
            })
            .collect()
    }
}

/// `x` with axis `from` moved to position `to` (the others keep their order).
fn move_axis<B: Backend>(x: &Tensor<B>, from: usize, to: usize) -> Result<Tensor<B>> {
    if from == to {
        return Ok(x.clone());
    }
    let mut perm: Vec<isize> = (0..x.rank() as isize)
        .filter(|&a| a != from as isize)
        .collect();
    perm.insert(to, from as isize);
    x.permute(&perm)
}

/// The outputs of `program` for a batch of no example: empty tensors of the traced shapes.
fn empty_batch<B: Backend>(program: &Program, backend: &B) -> Result<Vec<BatchValue<B>>> {
    program
        .outputs()
        .iter()
        .map(|o| {
            let mut shape = vec![0];
            shape.extend(o.layout.shape());
            let dtype = program.values()[o.value].dtype;
            Ok(BatchValue::new(Tensor::zeros(shape, dtype, backend)?, true))
        })
        .collect()
}

/// Runs `program` on batched inputs through each primitive's batching rule, releasing every value
/// after its last use.
fn replay<B: Backend>(
    program: &Program,
    inputs: Vec<BatchValue<B>>,
    batch: usize,
    backend: &B,
) -> Result<Vec<BatchValue<B>>> {
    let mut env: Vec<Option<BatchValue<B>>> = vec![None; program.values().len()];
    let infos = program.values();
    let read = |env: &[Option<BatchValue<B>>], o: &crate::trace::TraceOperand| {
        let value = env[o.value].as_ref().ok_or_else(|| {
            Error::invalid(
                "vmap",
                format!("value %{} is read before it is computed", o.value),
            )
        })?;
        view::read_operand(value, &o.layout, &infos[o.value])
    };
    for (i, node) in program.nodes().iter().enumerate() {
        let results = match &node.op {
            TraceOp::Input { index } => vec![inputs[*index].clone()],
            TraceOp::Primitive(p) => {
                let operands = node
                    .inputs
                    .iter()
                    .map(|o| read(&env, o))
                    .collect::<Result<Vec<_>>>()?;
                let outs: Vec<_> = node.outputs.iter().map(|&v| infos[v].clone()).collect();
                crate::rules::batch(p, &operands, &outs, batch, backend)?
            }
        };
        for (&v, value) in node.outputs.iter().zip(results) {
            if program.last_use[v].is_some() {
                env[v] = Some(value);
            }
        }
        for o in &node.inputs {
            if program.last_use[o.value] == Some(i) {
                env[o.value] = None;
            }
        }
    }
    program.outputs().iter().map(|o| read(&env, o)).collect()
}
