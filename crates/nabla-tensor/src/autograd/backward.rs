//! The reverse pass: an iterative walk of the graph in reverse topological order that frees what it no
//! longer needs as it goes.

use super::accumulate::{Cotangent, THIN_PRODUCT_ROWS};
use super::extension::ExtensionRules;
use super::node::{Node, NodeKind, Saved};
use super::op::Op;
use super::parallel;
pub use super::parallel::ParallelBackward;
use super::rules::{self, SavedValues};
use crate::Tensor;
use nabla_core::{Backend, Error, Result};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// How [`Tensor::backward_opts`] runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackwardOptions {
    /// Record the reverse pass itself, so the gradients are tracked and can be differentiated again
    /// (PyTorch's `create_graph=True`). Implies `retain_graph`.
    pub create_graph: bool,
    /// Keep the values saved for the reverse pass so that backward can run through the graph again.
    /// Without it each saved value is freed as soon as its last consumer has run.
    pub retain_graph: bool,
    /// Whether independent branches of the graph may run their reverse rules on two threads
    /// (see [`ParallelBackward`]); the gradients are bitwise the same either way.
    pub parallel: ParallelBackward,
}

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

/// Receives each target node's complete gradient during [`stream_backward`].
pub(crate) type GradientSink<'a, B> = dyn FnMut(&Arc<Node<B>>, Tensor<B>) -> Result<()> + 'a;

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

/// What the reverse pass needs to run one node's rule, the same for every node.
pub(super) struct Pass<'a, B: Backend> {
    /// Keep saved values after use (a retained or recorded graph).
    pub(super) retain: bool,
    pub(super) create_graph: bool,
    pub(super) ext: Option<&'a ExtensionRules<B>>,
}

/// One addition to an input's cotangent, made by a node's reverse rule and applied by the loop in
/// the order the rule made them (the order that decides the bits of a sum).
pub(super) enum Contribution<B: Backend> {
    /// A full-shape cotangent, made by the rule of `op` (see [`Cotangent::add`]).
    Dense {
        slot: usize,
        grad: Tensor<B>,
        op: &'static str,
    },
    /// The cotangent of a unit-step slice (see [`Cotangent::add_slice`]).
    Slice {
        slot: usize,
        axis: usize,
        first: usize,
        grad: Tensor<B>,
    },
    /// A deferred matrix product (see [`Cotangent::add_product`]).
    Product {
        slot: usize,
        lhs: Tensor<B>,
        grad: Tensor<B>,
        rhs_transposed: bool,
    },
}

impl<B: Backend> Contribution<B> {
    /// Adds the contribution to its input's cotangent; `nodes` are the pass's nodes by slot.
    #[inline]
    pub(super) fn deliver(
        self,
        cotangents: &mut [Cotangent<B>],
        nodes: &[Arc<Node<B>>],
    ) -> Result<()> {
        match self {
            Contribution::Dense { slot, grad, op } => cotangents[slot].add(&nodes[slot], grad, op),
            Contribution::Slice {
                slot,
                axis,
                first,
                grad,
            } => cotangents[slot].add_slice(&nodes[slot], axis, first, grad),
            Contribution::Product {
                slot,
                lhs,
                grad,
                rhs_transposed,
            } => cotangents[slot].add_product(&nodes[slot], lhs, grad, rhs_transposed),
        }
    }
}

impl<B: Backend> Pass<'_, B> {
    /// Runs the reverse rule of the op node `node` for its complete cotangent `grad`, handing its
    /// contributions to the inputs with a slot in `needs` (a parent's slot, `None` for an input that
    /// needs no gradient) to `emit` in order; releases the node's saved values unless the graph is
    /// retained. Touches no state of the pass besides the node; `needed` is scratch space.
    #[inline]
    pub(super) fn execute(
        &self,
        node: &Arc<Node<B>>,
        grad: Option<Tensor<B>>,
        needs: &[Option<usize>],
        needed: &mut Vec<bool>,
        emit: &mut impl FnMut(Contribution<B>) -> Result<()>,
    ) -> Result<()> {
        let NodeKind::Op {
            op,
            parents,
            saved,
            origin,
        } = &node.kind
        else {
            return Ok(());
        };
        let Some(g) = grad.filter(|_| needs.iter().any(Option::is_some)) else {
            if !self.retain {
                *saved.lock().unwrap_or_else(|e| e.into_inner()) = Saved::Released;
            }
            return Ok(());
        };
        super::extension::ensure_rule(op, self.ext, super::extension::Mode::Reverse)?;
        let values = take_saved(node, op.name(), saved, self.retain, self.create_graph)?;
        let g = if self.create_graph || !g.requires_grad() {
            g
        } else {
            g.detach()
        };
        if let (Some((axis, first)), [Some(_)], [Some(slot)]) =
            (deferred_slice(op), parents.as_slice(), needs)
        {
            return emit(Contribution::Slice {
                slot: *slot,
                axis,
                first,
                grad: g,
            });
        }
        needed.clear();
        needed.extend(needs.iter().map(Option::is_some));
        if let Some(lhs) = deferred_product(op, &values, needs.get(1).copied().flatten()) {
            let Some(slot) = needs[1] else {
                unreachable!("deferred_product checked the right operand's slot");
            };
            emit(Contribution::Product {
                slot,
                lhs,
                grad: g.clone(),
                rhs_transposed: rules::is_transposed(values.input(1)?),
            })?;
            needed[1] = false;
        }
        let input_grads = reverse_rule(op, &values, &g, needed, self.ext, origin.as_deref())?;
        drop(values);
        for (slot, grad) in needs.iter().zip(input_grads) {
            if let (Some(slot), Some(grad)) = (*slot, grad) {
                emit(Contribution::Dense {
                    slot,
                    grad,
                    op: op.name(),
                })?;
            }
        }
        Ok(())
    }
}

/// `true` when `root` depends on a variable other than the transform inputs `marks`: a value the
/// transformed function captured from an outer transform or a [`Tensor::var`]. The transform must then
/// record its own derivative computation so that the outer one can differentiate through it.
pub(crate) fn captures_outer<B: Backend>(root: &Tensor<B>, marks: &[u64]) -> bool {
    let Some(root) = root.ad.clone() else {
        return false;
    };
    let mut seen = std::collections::HashSet::<u64, BuildHasherDefault<IdHasher>>::default();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if marks.contains(&node.id) || !seen.insert(node.id) {
            continue;
        }
        if matches!(node.kind, NodeKind::Leaf { .. }) {
            return true;
        }
        stack.extend(node.parents().iter().flatten().cloned());
    }
    false
}

/// The nodes reachable from a root, each with a slot number (the root is slot 0) and whether some
/// target is reachable from it (itself included).
pub(crate) struct Walk<B: Backend> {
    pub(crate) nodes: Vec<Arc<Node<B>>>,
    slots: HashMap<u64, usize, BuildHasherDefault<IdHasher>>,
    pub(crate) reaches: Vec<bool>,
    /// Slots in an order where every node comes after all of its inputs.
    pub(crate) post_order: Vec<usize>,
}

impl<B: Backend> Walk<B> {
    /// An iterative post-order walk (the graph is acyclic by construction, and may be a million nodes
    /// deep, so no recursion).
    pub(crate) fn new(root: &Arc<Node<B>>, is_target: &impl Fn(&Node<B>) -> bool) -> Self {
        let mut walk = Walk {
            nodes: vec![root.clone()],
            slots: HashMap::default(),
            reaches: vec![false],
            post_order: Vec::new(),
        };
        walk.slots.insert(root.id, 0);
        let mut done = vec![false];
        let mut stack: Vec<(usize, bool)> = vec![(0, false)];
        while let Some((i, expanded)) = stack.pop() {
            if expanded {
                let node = &walk.nodes[i];
                walk.reaches[i] = is_target(node)
                    || node
                        .parents()
                        .iter()
                        .flatten()
                        .any(|p| walk.reaches[walk.slots[&p.id]]);
                done[i] = true;
                walk.post_order.push(i);
                continue;
            }
            if done[i] {
                continue;
            }
            stack.push((i, true));
            let node = walk.nodes[i].clone();
            for p in node.parents().iter().flatten() {
                let j = match walk.slots.get(&p.id) {
                    Some(&j) => j,
                    None => {
                        let j = walk.nodes.len();
                        walk.slots.insert(p.id, j);
                        walk.nodes.push(p.clone());
                        walk.reaches.push(false);
                        done.push(false);
                        j
                    }
                };
                if !done[j] {
                    stack.push((j, false));
                }
            }
        }
        walk
    }

    pub(crate) fn slot(&self, node: &Node<B>) -> usize {
        self.slots[&node.id]
    }

    /// The slot of `input` when a target is reachable from it (the reverse pass sends it a
    /// cotangent), else `None`.
    pub(crate) fn reaching_slot(&self, input: &Node<B>) -> Option<usize> {
        Some(self.slot(input)).filter(|&j| self.reaches[j])
    }
}

/// Node ids come from a counter, so they hash well enough with one multiply; the default SipHash is a
/// quarter of the reverse pass's time on tiny tensors.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_u64(&mut self, id: u64) {
        self.0 = id.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// The input gradients of `op` from its reverse rule, checked for new non-finite values in anomaly
/// mode.
fn reverse_rule<B: Backend>(
    op: &Op<B>,
    values: &SavedValues<B>,
    g: &Tensor<B>,
    needed: &[bool],
    ext: Option<&ExtensionRules<B>>,
    origin: Option<&str>,
) -> Result<Vec<Option<Tensor<B>>>> {
    if !super::anomaly::is_anomaly_detection_enabled() {
        return rules::vjp(op, values, g, needed, ext);
    }
    let grads = super::anomaly::suspended(|| rules::vjp(op, values, g, needed, ext))?;
    let stage = op.stage("its reverse rule (backward)");
    check_rule(
        (op.name(), stage.as_str()),
        values,
        g,
        &grads,
        needed,
        origin,
    )?;
    Ok(grads)
}

/// The axis and first element of a slice whose cotangent is kept as a piece of its input's cotangent
/// (see [`Cotangent::add_slice`]) instead of being padded to the input's shape by the slice's rule:
/// a non-empty slice with unit step.
fn deferred_slice<B: Backend>(op: &Op<B>) -> Option<(usize, usize)> {
    match op {
        Op::Slice {
            axis,
            first,
            len,
            step: 1,
            ..
        } if *len > 0 => Some((*axis, *first)),
        _ => None,
    }
}

/// The left operand `a` of a product `a @ b` whose contribution `aᵀ g` to `b`'s cotangent is kept
/// as a deferred product (see [`Cotangent::add_product`]): both operands are real matrices (no batch
/// dimensions, no half precision), `a` has fewer than [`THIN_PRODUCT_ROWS`] rows, `b` needs a
/// cotangent (`rhs_slot`), and no anomaly check wants to see the contribution on its own.
fn deferred_product<B: Backend>(
    op: &Op<B>,
    values: &SavedValues<B>,
    rhs_slot: Option<usize>,
) -> Option<Tensor<B>> {
    if !matches!(
        op,
        Op::Matmul {
            precision: crate::Precision::Full
        }
    ) || rhs_slot.is_none()
        || super::anomaly::is_anomaly_detection_enabled()
    {
        return None;
    }
    let (a, b) = (values.input(0).ok()?, values.input(1).ok()?);
    let dtype = a.dtype();
    let thin = matches!(a.shape(), [m, _] if *m < THIN_PRODUCT_ROWS);
    (thin && b.rank() == 2 && dtype.is_float() && !dtype.is_half()).then(|| a.clone())
}

/// The saved values of `node`, re-attached to the graph when building a graph of gradients; released
/// from the node unless the graph is retained.
pub(crate) fn take_saved<B: Backend>(
    node: &Arc<Node<B>>,
    op: &'static str,
    saved: &std::sync::Mutex<Saved<B>>,
    retain: bool,
    reattach: bool,
) -> Result<SavedValues<B>> {
    let mut guard = saved.lock().unwrap_or_else(|e| e.into_inner());
    let held = if retain {
        match &*guard {
            Saved::Held { inputs, output } => (inputs.clone(), output.clone()),
            Saved::Released => return Err(released(op)),
        }
    } else {
        match std::mem::replace(&mut *guard, Saved::Released) {
            Saved::Held { inputs, output } => (inputs, output),
            Saved::Released => return Err(released(op)),
        }
    };
    drop(guard);
    let (mut inputs, mut output) = held;
    if reattach {
        for (input, parent) in inputs.iter_mut().zip(node.parents()) {
            if let Some(t) = input {
                t.ad = parent.clone();
            }
        }
        if let Some(t) = &mut output {
            t.ad = Some(node.clone());
        }
    }
    Ok(SavedValues { inputs, output })
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

/// The error for a second reverse pass through a graph whose saved values (here `op`'s) the first
/// pass freed: named after the user's call, not after the internal op.
fn released(op: &'static str) -> Error {
    Error::autodiff(
        "backward",
        format!(
            "this graph was already differentiated once (by backward or grad), which freed the \
             values its ops saved for the reverse pass (first missing: `{op}`); to differentiate it \
             again, keep the graph in the first call (retain_graph), or recompute the output"
        ),
    )
}

/// In anomaly mode, an error when a reverse rule made a NaN or an infinity out of a finite cotangent
/// and finite saved values, in a gradient some input needs (`needed`).
fn check_rule<B: Backend>(
    (op, stage): (&'static str, &str),
    values: &rules::SavedValues<B>,
    g: &Tensor<B>,
    grads: &[Option<Tensor<B>>],
    needed: &[bool],
    origin: Option<&str>,
) -> Result<()> {
    let mut read: Vec<&Tensor<B>> = vec![g];
    read.extend(values.inputs.iter().flatten());
    read.extend(values.output.iter());
    let used = grads.iter().zip(needed).filter(|(_, n)| **n);
    for grad in used.filter_map(|(g, _)| g.as_ref()) {
        super::anomaly::check(op, stage, &read, grad, origin)?;
    }
    Ok(())
}
