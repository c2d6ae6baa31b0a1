//! The reverse pass on two threads: independent branches of the graph run their rules at once, and the
//! gradients keep the bits of the sequential pass.
//!
//! The sequential pass runs the nodes in an order that depends only on the graph's shape: a
//! last-in-first-out walk over the nodes whose consumers have all run. [`Plan`] replays that walk on
//! counts alone. The calling thread (the driver) then runs the nodes in the same order, and keeps a
//! second lane busy: whenever that lane is free, a node later in the order that is already complete
//! (all its consumers have run) and big enough goes to it, as a job of the rayon pool that another
//! thread takes. The driver goes on with its own nodes and takes in the lane's result when it
//! arrives, or waits for it (running pool work meanwhile) when its next node needs it. Per-head ops
//! of multi-head attention, the branches of an Inception block and the operands of a sum of
//! products run this way two at a time.
//!
//! A lane per pair of nodes (`rayon::join` on the driver's node and a partner) was tried first and
//! measured slower than one thread on per-head attention: each join woke a sleeping worker and then
//! put the driver to sleep until the partner finished, and a wake-up costs about 25 µs on the
//! development machine, half a per-head matrix product's reverse rule.
//!
//! A sum of three or more floating-point values depends on the order of its additions, so each
//! contribution is added to its input's cotangent in the order of the sequential pass. One that
//! arrives early (made on the lane ahead of its turn) is parked until the consumers before it in that
//! order have delivered theirs. Every cotangent then sees the same additions in the same order, and
//! the gradients are bitwise those of the sequential pass (see the tests).
//!
//! Memory stays near the sequential pass's: one node at a time runs ahead, and no node goes to the
//! lane while parked contributions hold more than the graph's largest node (a soft cap: the job
//! already running may park one more node's contributions).
//!
//! The pass runs this way only where it can gain and cannot change anything else: on a thread of a
//! rayon pool with two or more threads (the pool that `nabla_cpu::init_thread_pool` sets up for the
//! CPU kernels, whose splits depend on its size), on a backend whose kernels run on host threads (one
//! with fast-path kernels, as the CPU), without `create_graph` (whose
//! rules record new nodes) and without anomaly detection. Rules of custom functions re-run user code,
//! which may hold thread-local state, so they only run on the driver, as do the gradient sinks. A
//! graph in which no node has two different inputs made by ops (a chain) takes the sequential pass.

use super::accumulate::Cotangent;
use super::node::{Node, NodeKind};
use super::op::Op;
use super::pass::{BackwardOptions, Contribution, GradientSink, ParallelBackward, Pass, Walk};
use crate::Tensor;
use nabla_core::{Backend, Error, Primitive, Result};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Nodes of this much work or more are left to the driver: their kernels split across the pool's
/// threads (elementwise kernels from 32K elements, matrix products from 4M flops, which is 2^18 in
/// [`work`]'s units; the work of an elementwise rule counts its inputs and output together, so a
/// rule over 2^18 elements moves several times its kernels' threshold), so a lane gains nothing and
/// its job competes with them: the Hessian-vector product of `sum(tanh(X Xᵀ))` for a 256×256 `X`
/// ran 3% slower with them on the lane.
const LANE_MAX_WORK: usize = 1 << 18;

/// How many ready nodes past the driver's are looked at for the second lane.
const LANE_CANDIDATES: usize = 4;

#[cfg(test)]
#[path = "parallel_tests.rs"]
mod tests;

#[cfg(test)]
thread_local! {
    /// Nodes this thread's passes sent to the second lane, for the tests to see that it ran.
    static LANE_JOBS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The smallest work of a node worth running beside another under `opts`, or `None` when the pass
/// should run on one thread (see the module docs).
pub(super) fn min_work<B: Backend>(root: &Tensor<B>, opts: &BackwardOptions) -> Option<usize> {
    let min = match opts.parallel {
        ParallelBackward::Off => return None,
        ParallelBackward::Auto => ParallelBackward::AUTO_MIN_ELEMENTS,
        ParallelBackward::MinElements(n) => n.max(1),
    };
    let on_pool = rayon::current_thread_index().is_some() && rayon::current_num_threads() >= 2;
    let backend = root.backend();
    // Kernels that run on this process's threads (what fast-path kernels say) gain from a second
    // lane; a device queue would only serialise them.
    let host = !backend.is_symbolic() && backend.fast_path_kernels().is_some();
    let plain = !opts.create_graph && !super::anomaly::is_anomaly_detection_enabled();
    (on_pool && host && plain).then_some(min)
}

/// The work of a node's rule in elements read or written, at least its output's or its inputs'
/// together; for a matrix product, its multiply-adds over 8 (what one vector instruction does).
fn work<B: Backend>(node: &Node<B>) -> usize {
    let inputs: usize = node.parents().iter().flatten().map(|p| numel(p)).sum();
    let elements = numel(node).max(inputs);
    match &node.kind {
        NodeKind::Op {
            op: Op::Primitive(Primitive::Matmul | Primitive::MatmulRounded(_)),
            parents,
            ..
        } => {
            let depth = parents
                .first()
                .and_then(|lhs| lhs.as_ref()?.shape.last().copied());
            elements.max(numel(node).saturating_mul(depth.unwrap_or(0)) / 8)
        }
        _ => elements,
    }
}

fn numel<B: Backend>(node: &Node<B>) -> usize {
    node.shape.iter().product()
}

/// The sequential pass's order of the reachable nodes, by slot (for its own check).
#[cfg(debug_assertions)]
pub(super) fn sequential_order<B: Backend>(graph: &Walk<B>, pending: &[usize]) -> Vec<usize> {
    replay(graph, pending).0
}

/// Replays the sequential pass on counts: its order of the reachable nodes, by slot, and for each
/// node with two or more consumers those consumers' positions in that order, ascending.
fn replay<B: Backend>(graph: &Walk<B>, pending: &[usize]) -> (Vec<usize>, Vec<Vec<usize>>) {
    let mut left = pending.to_vec();
    let mut consumers = vec![Vec::new(); pending.len()];
    let mut order = Vec::with_capacity(pending.len());
    let mut ready = vec![0usize];
    while let Some(i) = ready.pop() {
        let position = order.len();
        order.push(i);
        let NodeKind::Op { parents, .. } = &graph.nodes[i].kind else {
            continue;
        };
        for j in parents
            .iter()
            .flatten()
            .filter_map(|p| graph.reaching_slot(p))
        {
            let seen: &mut Vec<usize> = &mut consumers[j];
            if pending[j] >= 2 && seen.last() != Some(&position) {
                seen.push(position);
            }
            left[j] -= 1;
            if left[j] == 0 {
                ready.push(j);
            }
        }
    }
    (order, consumers)
}

/// The sequential pass's order and what the ordered accumulation needs of it.
pub(super) struct Plan {
    /// Slots in the order the sequential pass runs them.
    order: Vec<usize>,
    /// Each slot's position in `order`.
    position: Vec<usize>,
    /// For each slot with two or more consumers, their positions in `order`, ascending (empty for
    /// the others).
    consumers: Vec<Vec<usize>>,
    /// Whether the node at each position may run on the second lane.
    lane: Vec<bool>,
    /// The bytes of the graph's largest node: the most that parked contributions may hold.
    parked_limit: usize,
}

impl Plan {
    /// The plan of a pass over `graph` (`pending`: each node's count of consumers), or `None` when
    /// no node may run on the second lane (see [`Plan::may_run_on_lane`]).
    pub(super) fn new<B: Backend>(
        graph: &Walk<B>,
        pending: &[usize],
        min_work: usize,
        is_target: &impl Fn(&Node<B>) -> bool,
    ) -> Option<Plan> {
        let (order, consumers) = replay(graph, pending);
        let mut position = vec![usize::MAX; graph.nodes.len()];
        for (k, &i) in order.iter().enumerate() {
            position[i] = k;
        }
        let lane = order
            .iter()
            .map(|&i| Self::may_run_on_lane(graph, &graph.nodes[i], min_work, is_target))
            .collect::<Vec<_>>();
        if !lane.contains(&true) {
            return None;
        }
        let parked_limit = graph
            .nodes
            .iter()
            .map(|n| numel(n).saturating_mul(n.dtype.size_in_bytes()))
            .max()
            .unwrap_or(0);
        Some(Plan {
            order,
            position,
            consumers,
            lane,
            parked_limit,
        })
    }

    /// Whether `node` may run on the second lane: an op whose work is at least `min_work` and below
    /// [`LANE_MAX_WORK`], with an input that needs a cotangent, whose rule is nabla's own (custom
    /// functions and extension ops run user code, which may keep thread-local state) and which is
    /// not a target (whose gradient goes to the sink in order, on the driver).
    fn may_run_on_lane<B: Backend>(
        graph: &Walk<B>,
        node: &Node<B>,
        min_work: usize,
        is_target: &impl Fn(&Node<B>) -> bool,
    ) -> bool {
        let NodeKind::Op { op, parents, .. } = &node.kind else {
            return false;
        };
        let user_code = matches!(op, Op::Custom(_) | Op::Extension(_));
        let needs_input = parents
            .iter()
            .flatten()
            .any(|p| graph.reaching_slot(p).is_some());
        !user_code
            && needs_input
            && !is_target(node)
            && (min_work..LANE_MAX_WORK).contains(&work(node))
    }
}

/// Contributions of one consumer to one input, made ahead of their turn.
struct Parked<B: Backend> {
    consumer: usize,
    contributions: Vec<Contribution<B>>,
}

/// The cotangents being collected, with what orders their additions.
struct Ledger<'a, B: Backend> {
    graph: &'a Walk<B>,
    plan: &'a Plan,
    cotangents: Vec<Cotangent<B>>,
    /// Consumers still to deliver to each node.
    pending: Vec<usize>,
    /// For each node with several consumers, how many of them (in order) have been added.
    added: Vec<usize>,
    parked: Vec<Vec<Parked<B>>>,
    parked_bytes: usize,
    /// Positions of the nodes whose consumers have all delivered and that have not run.
    ready: BTreeSet<usize>,
}

impl<B: Backend> Ledger<'_, B> {
    /// Delivers the contributions that the node at `consumer` (a position in the order) made for the
    /// inputs in `needs`: adds those whose turn it is, parks the others, and marks inputs whose last
    /// consumer this was as ready.
    fn deliver(
        &mut self,
        consumer: usize,
        needs: &[Option<usize>],
        mut contributions: Vec<Contribution<B>>,
    ) -> Result<()> {
        let mut inputs: Vec<usize> = needs.iter().flatten().copied().collect();
        inputs.sort_unstable();
        inputs.dedup();
        // Grouped by input, each input's in the order they were made (the sort is stable).
        contributions.sort_by_key(Contribution::slot);
        let mut made = contributions.into_iter().peekable();
        for j in inputs {
            let mut mine = Vec::new();
            while let Some(c) = made.next_if(|c| c.slot() == j) {
                mine.push(c);
            }
            let expected = &self.plan.consumers[j];
            if expected.is_empty() {
                self.add(mine)?;
            } else if expected[self.added[j]] == consumer {
                self.add(mine)?;
                self.added[j] += 1;
                self.drain(j)?;
            } else {
                self.parked_bytes += mine.iter().map(Contribution::bytes).sum::<usize>();
                self.parked[j].push(Parked {
                    consumer,
                    contributions: mine,
                });
            }
        }
        for &j in needs.iter().flatten() {
            self.pending[j] -= 1;
            if self.pending[j] == 0 {
                self.ready.insert(self.plan.position[j]);
            }
        }
        Ok(())
    }

    /// Adds the parked contributions to node `j` whose turn has come.
    fn drain(&mut self, j: usize) -> Result<()> {
        while let Some(&next) = self.plan.consumers[j].get(self.added[j])
            && let Some(k) = self.parked[j].iter().position(|p| p.consumer == next)
        {
            let parked = self.parked[j].swap_remove(k);
            self.parked_bytes -= parked
                .contributions
                .iter()
                .map(Contribution::bytes)
                .sum::<usize>();
            self.add(parked.contributions)?;
            self.added[j] += 1;
        }
        Ok(())
    }

    fn add(&mut self, contributions: Vec<Contribution<B>>) -> Result<()> {
        for c in contributions {
            c.deliver(&mut self.cotangents, &self.graph.nodes)?;
        }
        Ok(())
    }
}

impl<B: Backend> Contribution<B> {
    /// The slot of the input it adds to.
    fn slot(&self) -> usize {
        match self {
            Contribution::Dense { slot, .. }
            | Contribution::Slice { slot, .. }
            | Contribution::Product { slot, .. } => *slot,
        }
    }

    /// The bytes of the tensors it holds.
    fn bytes(&self) -> usize {
        let size = |t: &Tensor<B>| t.numel() * t.dtype().size_in_bytes();
        match self {
            Contribution::Dense { grad, .. } | Contribution::Slice { grad, .. } => size(grad),
            Contribution::Product { lhs, grad, .. } => size(lhs) + size(grad),
        }
    }
}

/// A reverse pass that runs ready nodes ahead of their turn on a second lane (see the module docs).
pub(super) struct Run<'a, B: Backend, T: Fn(&Node<B>) -> bool> {
    graph: &'a Walk<B>,
    plan: &'a Plan,
    pass: &'a Pass<'a, B>,
    is_target: &'a T,
}

/// What a node run on the second lane made: the contributions for its inputs (`needs`), or its error,
/// or the payload of its panic.
struct Finished<B: Backend> {
    at: usize,
    needs: Vec<Option<usize>>,
    made: std::thread::Result<Result<Vec<Contribution<B>>>>,
}

/// Why the second lane's node failed, kept until the driver reaches its place in the order.
enum LaneFailure {
    Error(Error),
    Panic(Box<dyn std::any::Any + Send>),
}

impl<'a, B: Backend, T: Fn(&Node<B>) -> bool> Run<'a, B, T> {
    pub(super) fn new(
        graph: &'a Walk<B>,
        plan: &'a Plan,
        pass: &'a Pass<'a, B>,
        is_target: &'a T,
    ) -> Self {
        Run {
            graph,
            plan,
            pass,
            is_target,
        }
    }

    /// Runs the pass from the root's cotangent in `cotangents`, with `pending` consumers per node,
    /// handing each target's gradient to `sink` in the sequential pass's order. An error is the one
    /// the sequential pass would meet first.
    pub(super) fn execute(
        self,
        cotangents: Vec<Cotangent<B>>,
        pending: Vec<usize>,
        sink: &mut GradientSink<'_, B>,
    ) -> Result<()> {
        let n = cotangents.len();
        let mut ledger = Ledger {
            graph: self.graph,
            plan: self.plan,
            cotangents,
            pending,
            added: vec![0; n],
            parked: (0..n).map(|_| Vec::new()).collect(),
            parked_bytes: 0,
            ready: BTreeSet::from([0]),
        };
        rayon::in_place_scope(|lane| self.drive(lane, &mut ledger, sink))
    }

    /// The driver's loop: every node in the sequential order, on this thread unless the second lane
    /// already ran it; one node at a time goes to the second lane.
    fn drive<'s>(
        &self,
        lane: &rayon::Scope<'s>,
        ledger: &mut Ledger<'_, B>,
        sink: &mut GradientSink<'_, B>,
    ) -> Result<()>
    where
        'a: 's,
    {
        let (send, receive) = std::sync::mpsc::channel::<Finished<B>>();
        let mut ran = vec![false; ledger.cotangents.len()];
        // The position of the node on the second lane.
        let mut in_flight: Option<usize> = None;
        // The second lane's failure waits for the driver to reach that node's place in the order, so
        // that an earlier node's error comes first, as in the sequential pass.
        let mut failed: Option<(usize, LaneFailure)> = None;
        for (position, &i) in self.plan.order.iter().enumerate() {
            if let Some(at) = in_flight {
                // Only the lane's own position waits: the nodes its contributions complete are its
                // inputs, which come after it in the order.
                let done = if at == position {
                    Some(wait_for(&receive))
                } else {
                    receive.try_recv().ok()
                };
                if let Some(done) = done {
                    in_flight = None;
                    let delivered = match done.made {
                        Ok(made) => made
                            .and_then(|made| ledger.deliver(done.at, &done.needs, made))
                            .map_err(LaneFailure::Error),
                        Err(panic) => Err(LaneFailure::Panic(panic)),
                    };
                    failed = delivered.err().map(|f| (done.at, f));
                }
            }
            if ran[i] {
                match failed.take() {
                    Some((at, LaneFailure::Error(err))) if at == position => return Err(err),
                    Some((at, LaneFailure::Panic(panic))) if at == position => {
                        std::panic::resume_unwind(panic)
                    }
                    other => failed = other,
                }
                continue;
            }
            debug_assert_eq!(ledger.pending[i], 0, "the driver's node is complete");
            ledger.ready.remove(&position);
            ran[i] = true;
            let node = &self.graph.nodes[i];
            let grad = ledger.cotangents[i].take(node)?;
            if !matches!(node.kind, NodeKind::Op { .. }) {
                // A leaf: nothing is left to add to its gradient.
                if let Some(g) = grad
                    && (self.is_target)(node)
                {
                    sink(node, g)?;
                }
                continue;
            }
            if let Some(g) = &grad
                && (self.is_target)(node)
            {
                sink(node, g.clone())?;
            }
            if in_flight.is_none()
                && failed.is_none()
                && ledger.parked_bytes <= self.plan.parked_limit
                && let Some(at) = self.next_for_lane(position, ledger)
            {
                ran[self.plan.order[at]] = true;
                in_flight = Some(at);
                self.send_to_lane(lane, at, ledger, send.clone());
            }
            let needs = self.needs(node);
            let made = contributions(self.pass, node, grad, &needs)?;
            ledger.deliver(position, &needs, made)?;
        }
        Ok(())
    }

    /// Runs the node at `at` on the second lane, with the driver's allocation limit, and sends what
    /// it made on `send`.
    fn send_to_lane<'s>(
        &self,
        lane: &rayon::Scope<'s>,
        at: usize,
        ledger: &mut Ledger<'_, B>,
        send: std::sync::mpsc::Sender<Finished<B>>,
    ) where
        'a: 's,
    {
        #[cfg(test)]
        LANE_JOBS.with(|p| p.set(p.get() + 1));
        let j = self.plan.order[at];
        ledger.ready.remove(&at);
        let node: &'a Arc<Node<B>> = &self.graph.nodes[j];
        let needs = self.needs(node);
        let cotangent = std::mem::take(&mut ledger.cotangents[j]);
        let limit = nabla_core::max_allocation_bytes();
        let pass: &'a Pass<'a, B> = self.pass;
        lane.spawn(move |_| {
            let run = || {
                nabla_core::with_allocation_limit(limit, || {
                    lane_contributions(pass, node, cotangent, &needs)
                })
            };
            let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run));
            // The driver has dropped the receiver when it returned early (an error): nothing then
            // waits for this.
            let _ = send.send(Finished { at, needs, made });
        });
    }

    /// The slot of each input of `node` that needs a cotangent.
    fn needs(&self, node: &Node<B>) -> Vec<Option<usize>> {
        node.parents()
            .iter()
            .map(|p| p.as_ref().and_then(|p| self.graph.reaching_slot(p)))
            .collect()
    }

    /// The position of a ready node after `position` that may run on the second lane (see
    /// [`Plan::may_run_on_lane`]) and has a cotangent.
    fn next_for_lane(&self, position: usize, ledger: &Ledger<'_, B>) -> Option<usize> {
        let candidates = ledger.ready.range(position + 1..);
        candidates
            .take(LANE_CANDIDATES)
            .copied()
            .find(|&at| self.plan.lane[at] && !ledger.cotangents[self.plan.order[at]].is_empty())
    }
}

/// The second lane's next message, running pool work (the lane's node among it, when no other
/// thread has taken it) while waiting.
fn wait_for<B: Backend>(receive: &std::sync::mpsc::Receiver<Finished<B>>) -> Finished<B> {
    loop {
        if let Ok(done) = receive.try_recv() {
            return done;
        }
        if rayon::yield_now() != Some(rayon::Yield::Executed) {
            std::thread::yield_now();
        }
    }
}

/// The contributions of `node`'s rule for cotangent `grad`, in the order the rule makes them.
fn contributions<B: Backend>(
    pass: &Pass<'_, B>,
    node: &Arc<Node<B>>,
    grad: Option<Tensor<B>>,
    needs: &[Option<usize>],
) -> Result<Vec<Contribution<B>>> {
    let mut made = Vec::with_capacity(needs.len());
    pass.execute(node, grad, needs, &mut Vec::new(), &mut |c| {
        made.push(c);
        Ok(())
    })?;
    Ok(made)
}

/// [`contributions`] on whichever thread runs the second lane's job (under the driver's allocation
/// limit): completes its cotangent there (joining slices and deferred products), and runs the rule
/// as the driver would, without recording and without anomaly detection (a pass with either runs on
/// one thread), whatever the thread that took the job was doing.
fn lane_contributions<B: Backend>(
    pass: &Pass<'_, B>,
    node: &Arc<Node<B>>,
    mut cotangent: Cotangent<B>,
    needs: &[Option<usize>],
) -> Result<Vec<Contribution<B>>> {
    let _no_grad = super::NoGradGuard::new();
    super::anomaly::suspended(|| {
        let grad = cotangent.take(node)?;
        contributions(pass, node, grad, needs)
    })
}
