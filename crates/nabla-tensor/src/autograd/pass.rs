//! One step of the reverse pass and the graph it walks: the pass's options ([`BackwardOptions`],
//! [`ParallelBackward`]), the walk of the nodes reachable from a root ([`Walk`]) and the running of one
//! node's reverse rule ([`Pass`]), whose additions to its inputs' cotangents ([`Contribution`]) the
//! driver (module `backward`) or the second lane (module `parallel`) delivers.

use super::accumulate::{Cotangent, THIN_PRODUCT_ROWS};
use super::extension_rules::ExtensionRules;
use super::node::{Node, NodeKind, Saved};
use super::op::{Op, View};
use crate::Tensor;
use crate::rules::{self, SavedValues};
use nabla_core::{Backend, Error, Primitive, Result};
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

/// Whether the reverse pass may run independent branches of the graph on two threads
/// ([`BackwardOptions::parallel`]). The gradients are bitwise the same in every setting; only the
/// time differs.
///
/// ```
/// # use nabla_tensor::{Tensor, BackwardOptions, ParallelBackward}; use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let x = Tensor::var("x", Tensor::from_vec(vec![1.0f32, 2.0], [2], &cpu)?)?;
/// let y = x.exp()?.add(&x.sin()?)?.sum_all()?;
/// let opts = BackwardOptions { parallel: ParallelBackward::Off, ..Default::default() };
/// let one_thread = y.backward_opts(None, opts)?;
/// assert!(one_thread.get(&x).is_some());
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ParallelBackward {
    /// Run nodes whose rules touch at least [`ParallelBackward::AUTO_MIN_ELEMENTS`] elements on a
    /// second lane ahead of their turn, when
    /// the pass runs on a thread of a rayon pool with two or more threads (as after
    /// `nabla_cpu::init_thread_pool`) on the CPU backend, without `create_graph` and without anomaly
    /// detection. Elsewhere the pass runs on one thread.
    #[default]
    Auto,
    /// Always one thread.
    Off,
    /// As [`ParallelBackward::Auto`], with nodes whose rules touch at least this many elements on the
    /// second lane (1 sends every op node that is ready). Nodes of 2^18 elements or more always stay
    /// on the calling thread: their kernels already split across the pool's threads.
    MinElements(usize),
}

impl ParallelBackward {
    /// The work, in elements a rule reads or writes, from which [`ParallelBackward::Auto`] runs a
    /// node beside another: below it, handing the rule to the other thread costs more than it saves.
    pub const AUTO_MIN_ELEMENTS: usize = 1 << 13;
}

/// Receives each target node's complete gradient during the reverse pass
/// (`stream_backward`).
pub(crate) type GradientSink<'a, B> = dyn FnMut(&Arc<Node<B>>, Tensor<B>) -> Result<()> + 'a;

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
        super::extension::ensure_rule(op, self.ext, super::extension_rules::Mode::Reverse)?;
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
        Op::View(View::Slice {
            axis,
            first,
            len,
            step: 1,
        }) if *len > 0 => Some((*axis, *first)),
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
    if !matches!(op, Op::Primitive(Primitive::Matmul))
        || rhs_slot.is_none()
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
    op: &str,
    saved: &std::sync::Mutex<Saved<B>>,
    retain: bool,
    reattach: bool,
) -> Result<SavedValues<B>> {
    let mut guard = saved.lock().unwrap_or_else(|e| e.into_inner());
    let held = if retain {
        match &*guard {
            Saved::Held {
                inputs,
                output,
                specs,
            } => (inputs.clone(), output.clone(), specs.clone()),
            Saved::Released => return Err(released(op)),
        }
    } else {
        match std::mem::replace(&mut *guard, Saved::Released) {
            Saved::Held {
                inputs,
                output,
                specs,
            } => (inputs, output, specs),
            Saved::Released => return Err(released(op)),
        }
    };
    drop(guard);
    let (mut inputs, mut output, specs) = held;
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
    Ok(SavedValues {
        inputs,
        output,
        specs,
    })
}

/// The error for a second reverse pass through a graph whose saved values (here `op`'s) the first
/// pass freed: named after the user's call, not after the internal op.
fn released(op: &str) -> Error {
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
