//! The reverse pass: an iterative walk of the graph in reverse topological order that frees what it no
//! longer needs as it goes.

use super::accumulate::Cotangent;
use super::extension_rules::ExtensionRules;
use super::node::{Node, NodeKind};
use super::parallel;
use super::pass::{BackwardOptions, GradientSink, Pass, Walk};
use crate::Tensor;
use nabla_core::{Backend, Error, Result};
use std::collections::HashMap;
use std::sync::Arc;

/// The identity of a tracked tensor's graph node, as [`Tensor::var_id`] gives it and
/// [`Tensor::backward_each`] reports gradients under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(u64);

/// The gradients a reverse pass produced for the variables it reached, read by tensor handle or by name.
#[derive(Clone)]
pub struct Gradients<B: Backend> {
    by_node: HashMap<u64, Tensor<B>>,
    names: HashMap<Arc<str>, u64>,
}

impl<B: Backend> Gradients<B> {
    /// The gradient of the variable `var`, or `None` if the output does not depend on it.
    pub fn get(&self, var: &Tensor<B>) -> Option<&Tensor<B>> {
        self.by_node.get(&var.node_id()?)
    }

    /// The gradient of `var`, with zeros (of its shape and dtype) when the output does not depend on it.
    pub fn get_or_zeros(&self, var: &Tensor<B>) -> Result<Tensor<B>> {
        match self.get(var) {
            Some(g) => Ok(g.clone()),
            None => var.detach().zeros_like(),
        }
    }

    /// The gradient of the variable named `name` (as given to [`Tensor::var`]).
    pub fn by_name(&self, name: &str) -> Option<&Tensor<B>> {
        self.by_node.get(self.names.get(name)?)
    }

    /// The names of the variables that received a gradient, in no particular order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.keys().map(|k| k.as_ref())
    }

    /// Every gradient with the identity of its variable ([`Tensor::var_id`]), in no particular order.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let x = Tensor::from_vec(vec![3.0f64], [1], &CpuBackend::new())?.leaf()?;
    /// let grads = x.square()?.sum_all()?.backward()?;
    /// let all: Vec<_> = grads.iter().map(|(id, g)| (id, g.to_vec::<f64>().unwrap())).collect();
    /// assert_eq!(all, vec![(x.var_id().unwrap(), vec![6.0])]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (VarId, &Tensor<B>)> {
        self.by_node.iter().map(|(id, g)| (VarId(*id), g))
    }

    /// Gradients given by hand, each paired with its variable (a tracked tensor), for code that
    /// obtains them another way (a binding whose leaves accumulate their own `.grad`) and hands them
    /// to an API that reads [`Gradients`], such as L-BFGS's closure. They are found with
    /// [`Gradients::get`] and [`Gradients::iter`]; [`Gradients::by_name`] knows no names here.
    ///
    /// ```
    /// # use nabla_tensor::{Gradients, Tensor}; use nabla_cpu::CpuBackend;
    /// let cpu = CpuBackend::new();
    /// let x = Tensor::from_vec(vec![3.0f64], [1], &cpu)?.leaf()?;
    /// let grads = Gradients::from_pairs([(x.clone(), Tensor::from_vec(vec![6.0f64], [1], &cpu)?)])?;
    /// assert_eq!(grads.get(&x).unwrap().to_vec::<f64>()?, vec![6.0]);
    /// assert!(Gradients::from_pairs([(x.detach(), x.detach())]).is_err());
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn from_pairs(pairs: impl IntoIterator<Item = (Tensor<B>, Tensor<B>)>) -> Result<Self> {
        let mut by_node = HashMap::new();
        for (var, grad) in pairs {
            let Some(id) = var.node_id() else {
                return Err(Error::Autodiff {
                    op: "Gradients::from_pairs",
                    message: "a gradient was paired with an untracked tensor; pair it with the \
                              variable (a tensor that requires gradients)"
                        .to_string(),
                });
            };
            by_node.insert(id, grad.detach());
        }
        Ok(Gradients {
            by_node,
            names: HashMap::new(),
        })
    }

    /// Number of variables that received a gradient.
    pub fn len(&self) -> usize {
        self.by_node.len()
    }

    /// `true` when no variable received a gradient.
    pub fn is_empty(&self) -> bool {
        self.by_node.is_empty()
    }
}

impl<B: Backend> std::fmt::Debug for Gradients<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&str> = self.names().collect();
        names.sort_unstable();
        f.debug_struct("Gradients")
            .field("count", &self.len())
            .field("named", &names)
            .finish()
    }
}

/// The gradient that reached each target node, with the node (callers read leaf names from it).
pub(crate) type NodeGradients<B> = Vec<(Arc<Node<B>>, Tensor<B>)>;

/// Which nodes the reverse pass collects gradients for.
pub(crate) enum Targets<'a> {
    /// Every variable the output depends on.
    Leaves,
    /// These nodes only; the walk does not go past what cannot reach them.
    Nodes(&'a [u64]),
}

impl<B: Backend> Tensor<B> {
    /// Reverse-mode derivative of this scalar (one-element) tensor with respect to every variable it
    /// depends on.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let cpu = CpuBackend::new();
    /// let x = Tensor::var("x", Tensor::from_vec(vec![3.0f64], [1], &cpu)?)?;
    /// let y = x.mul(&x)?.mul(&x)?.sum_all()?; // x^3
    /// assert_eq!(y.backward()?.get(&x).unwrap().to_vec::<f64>()?, vec![27.0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn backward(&self) -> Result<Gradients<B>> {
        self.backward_opts(None, BackwardOptions::default())
    }

    /// Reverse-mode derivative of a tensor of any shape, weighted by `seed` (the cotangent, of this
    /// tensor's shape): the gradient of `sum(self * seed)`.
    pub fn backward_with(&self, seed: &Tensor<B>) -> Result<Gradients<B>> {
        self.backward_opts(Some(seed), BackwardOptions::default())
    }

    /// [`Tensor::backward`] / [`Tensor::backward_with`] with options; `create_graph` returns tracked
    /// gradients that can be differentiated again.
    ///
    /// ```
    /// # use nabla_tensor::{Tensor, BackwardOptions}; use nabla_cpu::CpuBackend;
    /// let cpu = CpuBackend::new();
    /// let x = Tensor::var("x", Tensor::from_vec(vec![2.0f64], [], &cpu)?)?;
    /// let y = x.pow(3.0)?;
    /// let opts = BackwardOptions { create_graph: true, ..Default::default() };
    /// let dy = y.backward_opts(None, opts)?.get(&x).unwrap().clone(); // 3x^2 = 12
    /// let d2y = dy.backward()?.get(&x).unwrap().item::<f64>()?; // 6x = 12
    /// assert_eq!((dy.item::<f64>()?, d2y), (12.0, 12.0));
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn backward_opts(
        &self,
        seed: Option<&Tensor<B>>,
        opts: BackwardOptions,
    ) -> Result<Gradients<B>> {
        const OP: &str = "backward";
        let seed = self.checked_seed(OP, seed)?;
        let names_and_grads = run_backward(self, seed, Targets::Leaves, opts, None)?;
        let mut by_node = HashMap::with_capacity(names_and_grads.len());
        let mut names = HashMap::new();
        for (node, grad) in names_and_grads {
            if let NodeKind::Leaf { name: Some(name) } = &node.kind
                && let Some(other) = names.insert(name.clone(), node.id)
                && other != node.id
            {
                return Err(Error::Autodiff {
                    op: "backward",
                    message: format!(
                        "two different variables are named `{name}`, so Gradients::by_name could \
                         not tell their gradients apart; give each Tensor::var its own name"
                    ),
                });
            }
            by_node.insert(node.id, grad);
        }
        Ok(Gradients { by_node, names })
    }

    /// The reverse pass of [`Tensor::backward`] (a scalar output), handing each variable's gradient
    /// to `each` as soon as it is complete, instead of collecting them: once every op that used the
    /// variable has run its reverse rule. A consumer can use and drop each gradient while it is
    /// still in cache and before the rest of the pass runs: an optimizer step fused into the
    /// backward pass (PyTorch's post-accumulate-grad hooks), which also never holds all gradients at
    /// once. Variables are identified by [`Tensor::var_id`]. An error from `each` stops the pass
    /// and is returned.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let cpu = CpuBackend::new();
    /// let x = Tensor::var("x", Tensor::from_vec(vec![3.0f64], [1], &cpu)?)?;
    /// let w = Tensor::var("w", Tensor::from_vec(vec![2.0f64], [1], &cpu)?)?;
    /// let y = x.mul(&w)?.sum_all()?;
    /// let mut seen = Vec::new();
    /// y.backward_each(|id, grad| {
    ///     let name = if Some(id) == x.var_id() { "x" } else { "w" };
    ///     seen.push((name, grad.to_vec::<f64>()?[0]));
    ///     Ok(())
    /// })?;
    /// seen.sort_by(|a, b| a.0.cmp(b.0));
    /// assert_eq!(seen, vec![("w", 3.0), ("x", 2.0)]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn backward_each(
        &self,
        mut each: impl FnMut(VarId, Tensor<B>) -> Result<()>,
    ) -> Result<()> {
        let seed = self.checked_seed("backward", None)?;
        stream_backward(
            self,
            seed,
            Targets::Leaves,
            BackwardOptions::default(),
            None,
            &mut |node, grad| each(VarId(node.id), grad),
        )
    }

    /// The identity under which [`Tensor::backward_each`] reports this tensor's gradient: `Some` for
    /// a tensor that is tracked (a [`Tensor::var`] or a value computed from one), `None` otherwise.
    pub fn var_id(&self) -> Option<VarId> {
        self.node_id().map(VarId)
    }

    /// Validates (or makes, for a one-element output) the cotangent that starts the reverse pass.
    pub(crate) fn checked_seed(
        &self,
        op: &'static str,
        seed: Option<&Tensor<B>>,
    ) -> Result<Tensor<B>> {
        if self.ad.is_none() {
            return Err(Error::autodiff(
                op,
                format!(
                    "the {} tensor of shape {:?} does not depend on any variable; make its inputs \
                     variables (tensors that require gradients) and compute it outside no_grad",
                    self.dtype(),
                    self.shape()
                ),
            ));
        }
        match seed {
            // As JAX's `grad` without `holomorphic=True`: a complex output is not a loss.
            None if self.dtype().is_complex() => Err(Error::autodiff(
                op,
                format!(
                    "the output is {} (shape {:?}), but a gradient needs a real scalar loss; take \
                     .real(), .abs() or .abs()?.square() of it, or pass the cotangent explicitly \
                     (backward_with / vjp with ones for the derivative of a holomorphic function)",
                    self.dtype(),
                    self.shape()
                ),
            )),
            None if self.numel() == 1 => self.detach().ones_like(),
            None => Err(not_one_element(op, self.shape())),
            Some(s) => {
                self.check_matches(op, s, "the seed must have the output's shape")?;
                Ok(s.clone())
            }
        }
    }

    /// Fails unless `other` (a seed, cotangent or tangent for `self`) has `self`'s device, shape and
    /// dtype; `hint` explains a shape mismatch.
    pub(crate) fn check_matches(
        &self,
        op: &'static str,
        other: &Tensor<B>,
        hint: &'static str,
    ) -> Result<()> {
        self.check_device(op, other)?;
        if other.shape() != self.shape() {
            return Err(Error::shapes(op, self.shape(), other.shape()).with_hint(hint));
        }
        self.check_same_dtype(op, other)
    }
}

/// Runs the reverse pass from `root` with cotangent `seed` and returns the gradient reaching each target
/// node (with the node, so callers can read leaf names). Extension ops take their rules from `ext`.
pub(crate) fn run_backward<B: Backend>(
    root: &Tensor<B>,
    seed: Tensor<B>,
    targets: Targets<'_>,
    opts: BackwardOptions,
    ext: Option<&ExtensionRules<B>>,
) -> Result<NodeGradients<B>> {
    let mut results = Vec::new();
    stream_backward(root, seed, targets, opts, ext, &mut |node, grad| {
        results.push((node.clone(), grad));
        Ok(())
    })?;
    Ok(results)
}

/// The reverse pass of [`run_backward`], handing each target's gradient to `sink` as soon as it is
/// complete (once every consumer of the target has run) instead of collecting them. An error from
/// `sink` stops the pass.
pub(crate) fn stream_backward<B: Backend>(
    root: &Tensor<B>,
    seed: Tensor<B>,
    targets: Targets<'_>,
    opts: BackwardOptions,
    ext: Option<&ExtensionRules<B>>,
    sink: &mut GradientSink<'_, B>,
) -> Result<()> {
    let Some(root_node) = root.ad.clone() else {
        return Ok(());
    };
    let is_target = |n: &Node<B>| match targets {
        Targets::Leaves => matches!(n.kind, NodeKind::Leaf { .. }),
        Targets::Nodes(ids) => ids.contains(&n.id),
    };
    let graph = Walk::new(&root_node, &is_target);
    if !graph.reaches[0] {
        return Ok(());
    }
    let min_work = parallel::min_work(root, &opts);
    let (mut pending, forks) = count_consumers(&graph, min_work.is_some());
    let mut cotangents: Vec<Cotangent<B>> = (0..graph.nodes.len())
        .map(|_| Cotangent::default())
        .collect();
    cotangents[0] = Cotangent::from_seed(seed);
    let pass = Pass {
        retain: opts.retain_graph || opts.create_graph,
        create_graph: opts.create_graph,
        ext,
    };
    if let Some(min_work) = min_work.filter(|_| forks)
        && let Some(plan) = parallel::Plan::new(&graph, &pending, min_work, &is_target)
    {
        let run = parallel::Run::new(&graph, &plan, &pass, &is_target);
        return run.execute(cotangents, pending, sink);
    }
    // The parallel pass replays this loop's order from the counts alone: check that it does.
    #[cfg(debug_assertions)]
    let (expected_order, mut popped) = (parallel::sequential_order(&graph, &pending), Vec::new());
    let mut ready = vec![0usize];
    // Reused per node: the slot of each input that needs a gradient, and the same as flags for the
    // rules.
    let (mut needs, mut needed) = (Vec::new(), Vec::new());
    while let Some(i) = ready.pop() {
        #[cfg(debug_assertions)]
        popped.push(i);
        let node = &graph.nodes[i];
        let grad = cotangents[i].take(node)?;
        let NodeKind::Op { parents, .. } = &node.kind else {
            // A leaf: nothing is left to add to its gradient.
            if let Some(g) = grad
                && is_target(node)
            {
                sink(node, g)?;
            }
            continue;
        };
        if let Some(g) = &grad
            && is_target(node)
        {
            sink(node, g.clone())?;
        }
        needs.clear();
        needs.extend(
            parents
                .iter()
                .map(|p| p.as_ref().and_then(|p| graph.reaching_slot(p))),
        );
        // Contributions are delivered as the rule makes them (a pass that runs rules elsewhere
        // would collect them and deliver them here, in the same order).
        pass.execute(node, grad, &needs, &mut needed, &mut |c| {
            c.deliver(&mut cotangents, &graph.nodes)
        })?;
        for &j in needs.iter().flatten() {
            pending[j] -= 1;
            if pending[j] == 0 {
                ready.push(j);
            }
        }
    }
    #[cfg(debug_assertions)]
    assert_eq!(popped, expected_order, "the replayed reverse order");
    Ok(())
}

/// For each node of `graph` that some target is reachable from, its consumers on such paths (how
/// many rules the reverse pass runs before its cotangent is complete); with `look_for_forks`, also
/// whether some node has two different inputs made by ops (without one, as in a chain, no two op
/// nodes are ever ready at once and the pass has nothing to run on a second lane).
fn count_consumers<B: Backend>(graph: &Walk<B>, look_for_forks: bool) -> (Vec<usize>, bool) {
    let (mut pending, mut forks) = (vec![0usize; graph.nodes.len()], false);
    for (i, node) in graph.nodes.iter().enumerate() {
        if graph.reaches[i] {
            let mut op_input = None;
            for p in node.parents().iter().flatten() {
                if let Some(j) = graph.reaching_slot(p) {
                    pending[j] += 1;
                    if look_for_forks && matches!(p.kind, NodeKind::Op { .. }) {
                        forks |= *op_input.get_or_insert(j) != j;
                    }
                }
            }
        }
    }
    (pending, forks)
}

/// The error for a missing seed on an output with more than one element.
pub(crate) fn not_one_element(op: &'static str, shape: &[usize]) -> Error {
    let fix = if op == "backward" {
        "use backward_with(seed) for other shapes"
    } else {
        "use vjp with a cotangent for other shapes"
    };
    Error::autodiff(
        op,
        format!("the output has shape {shape:?} but needs one element without a seed; {fix}"),
    )
}
