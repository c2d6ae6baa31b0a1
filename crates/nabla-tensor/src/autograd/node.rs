//! Graph nodes: what a tracked tensor remembers about how it was made, and how ops record it.

use super::grad_mode::is_grad_enabled;
use super::op::{InputSpec, Op, SavedInputs};
use crate::Tensor;
use crate::rules;
use nabla_core::{Backend, DType, Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Node ids only need to be unique; a counter is cheaper than hashing pointers and never reused.
static NEXT_NODE_ID: AtomicU64 = AtomicU64::new(1);

fn next_node_id() -> u64 {
    NEXT_NODE_ID.fetch_add(1, Ordering::Relaxed)
}

/// `true` for the dtypes a variable can have: real floats (half precision included: its ops compute
/// in float32 and its gradients are rounded to it, as PyTorch's) and complex.
fn is_differentiable_dtype(dtype: DType) -> bool {
    dtype.is_float() || dtype.is_complex()
}

/// `true` for the dtypes an op output is tracked in: the differentiable ones.
fn is_tracked_dtype(dtype: DType) -> bool {
    is_differentiable_dtype(dtype)
}

/// One vertex of the derivative graph. Tensors hold an `Arc` to the node that produced them; a node
/// holds `Arc`s to the nodes of its tracked inputs, so the graph lives exactly as long as a tensor
/// that can reach it.
pub(crate) struct Node<B: Backend> {
    pub(crate) id: u64,
    pub(crate) shape: Vec<usize>,
    pub(crate) dtype: DType,
    pub(crate) kind: NodeKind<B>,
}

// Nodes live behind an `Arc` and most are ops, so boxing the op variant would only add an allocation.
#[allow(clippy::large_enum_variant)]
pub(crate) enum NodeKind<B: Backend> {
    /// A variable made by [`Tensor::var`] (or the marker of a functional transform).
    Leaf { name: Option<Arc<str>> },
    /// The output of a recorded op.
    Op {
        op: Op<B>,
        /// One entry per input: the input's node, or `None` for an input that needs no gradient.
        parents: Vec<Option<Arc<Node<B>>>>,
        saved: Mutex<Saved<B>>,
        /// Where the op was recorded, kept in anomaly-detection mode only.
        origin: Option<Box<str>>,
    },
}

/// The values a reverse rule reads, kept detached (without their nodes) so that a node never keeps
/// itself alive through its own output. Backward re-attaches them when it builds a graph of gradients.
pub(crate) enum Saved<B: Backend> {
    Held {
        inputs: Vec<Option<Tensor<B>>>,
        output: Option<Tensor<B>>,
        /// The inputs' dtypes and shapes, when the op's rules read them (else empty).
        specs: Vec<InputSpec>,
    },
    /// Backward already ran and freed the values.
    Released,
}

impl<B: Backend> Node<B> {
    pub(crate) fn leaf(name: Option<Arc<str>>, shape: &[usize], dtype: DType) -> Arc<Self> {
        Arc::new(Node {
            id: next_node_id(),
            shape: shape.to_vec(),
            dtype,
            kind: NodeKind::Leaf { name },
        })
    }

    /// The op nodes of the tracked inputs (empty for a leaf).
    pub(crate) fn parents(&self) -> &[Option<Arc<Node<B>>>] {
        match &self.kind {
            NodeKind::Leaf { .. } => &[],
            NodeKind::Op { parents, .. } => parents,
        }
    }
}

/// Dropping a long chain node by node would recurse once per node and overflow the stack for deep
/// graphs (a million-op chain); unlink parents iteratively instead.
impl<B: Backend> Drop for Node<B> {
    fn drop(&mut self) {
        let NodeKind::Op { parents, .. } = &mut self.kind else {
            return;
        };
        let mut stack: Vec<Arc<Node<B>>> = parents.drain(..).flatten().collect();
        while let Some(node) = stack.pop() {
            if let Some(mut inner) = Arc::into_inner(node)
                && let NodeKind::Op { parents, .. } = &mut inner.kind
            {
                stack.extend(parents.drain(..).flatten());
            }
        }
    }
}

/// Whether an op on `inputs` records its derivative: an input is tracked and recording is on (no
/// [`no_grad`](crate::no_grad) scope). Ops that keep extra state only for their reverse rule (the
/// fused LSTM layer's activations) ask this first.
///
/// ```
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::{Tensor, is_recorded, no_grad};
/// let cpu = CpuBackend::new();
/// let x = Tensor::var("x", Tensor::from_vec(vec![1.0f32], [1], &cpu)?)?;
/// let c = Tensor::from_vec(vec![2.0f32], [1], &cpu)?;
/// assert!(is_recorded(&[&x, &c]));
/// assert!(!is_recorded(&[&c]));
/// assert!(!no_grad(|| is_recorded(&[&x])));
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[inline]
pub fn is_recorded<B: Backend>(inputs: &[&Tensor<B>]) -> bool {
    inputs.iter().any(|t| t.ad.is_some()) && is_grad_enabled()
}

impl<B: Backend> Tensor<B> {
    /// Attaches the derivative record of `op` to a freshly computed `self` when any input is tracked and
    /// recording is on. `op` is a closure so that untracked computation builds nothing.
    #[inline]
    pub(crate) fn record(mut self, op: impl FnOnce() -> Op<B>, inputs: &[&Tensor<B>]) -> Tensor<B> {
        if !is_recorded(inputs) || !is_tracked_dtype(self.dtype()) {
            return self;
        }
        let op = op();
        // What the op's rules read, as its family states it (one table lookup per recorded op).
        let saves = rules::saves(&op);
        let kept = saves.inputs;
        // Nothing saved (add, sub, movement ops) costs no allocation.
        let saved_inputs = if kept == SavedInputs::NONE {
            Vec::new()
        } else {
            inputs
                .iter()
                .enumerate()
                .map(|(i, t)| kept.keeps(i).then(|| t.detach()))
                .collect()
        };
        let output = saves.output.then(|| self.detach());
        let specs = if saves.specs {
            inputs
                .iter()
                .map(|t| InputSpec {
                    dtype: t.dtype(),
                    shape: t.shape().to_vec(),
                })
                .collect()
        } else {
            Vec::new()
        };
        let node = Node {
            id: next_node_id(),
            shape: self.shape().to_vec(),
            dtype: self.dtype(),
            kind: NodeKind::Op {
                op,
                parents: inputs.iter().map(|t| t.ad.clone()).collect(),
                saved: Mutex::new(Saved::Held {
                    inputs: saved_inputs,
                    output,
                    specs,
                }),
                origin: if super::anomaly::is_anomaly_detection_enabled() {
                    super::anomaly::origin()
                } else {
                    None
                },
            },
        };
        self.ad = Some(Arc::new(node));
        self
    }

    /// [`Tensor::record`] for ops that compute new values: in anomaly-detection mode, an error when the
    /// op made a NaN or an infinity out of finite inputs.
    #[inline]
    pub(crate) fn record_checked(
        self,
        op: impl FnOnce() -> Op<B>,
        inputs: &[&Tensor<B>],
    ) -> Result<Tensor<B>> {
        if !super::anomaly::is_anomaly_detection_enabled() {
            return Ok(self.record(op, inputs));
        }
        let op = op();
        let (name, stage) = (op.name(), op.stage("forward"));
        let out = self.record(|| op, inputs);
        super::anomaly::check(name, &stage, inputs, &out, None)?;
        Ok(out)
    }

    /// `true` when gradients can flow back from this tensor to some variable.
    pub fn requires_grad(&self) -> bool {
        self.ad.is_some()
    }

    /// The same values, cut from the graph: nothing computed from the result flows back.
    pub fn detach(&self) -> Tensor<B> {
        let mut t = self.clone();
        t.ad = None;
        t
    }

    /// A tracked variable (a leaf of the graph) named `name`, holding the values of `data`; only
    /// float32/float64 and complex64/complex128 tensors can be variables (see the crate docs for the
    /// complex convention). Gradients are read back by handle or by name.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let cpu = CpuBackend::new();
    /// let w = Tensor::var("w", Tensor::from_vec(vec![1.0f64, 2.0, 3.0], [3], &cpu)?)?;
    /// let loss = w.square()?.sum_all()?;
    /// let grads = loss.backward()?;
    /// assert_eq!(grads.by_name("w").unwrap().to_vec::<f64>()?, vec![2.0, 4.0, 6.0]);
    /// assert!(Tensor::var("n", Tensor::from_vec(vec![1i64], [1], &cpu)?).is_err());
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn var(name: impl Into<String>, data: Tensor<B>) -> Result<Tensor<B>> {
        let name: String = name.into();
        data.as_leaf("var", Some(name.into()))
    }

    /// An unnamed tracked variable holding the values of `self` (PyTorch's `requires_grad_()`): a new
    /// leaf, cut from any graph `self` was in. Read its gradient by handle (`Gradients::get`).
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let x = Tensor::from_vec(vec![2.0f32], [1], &CpuBackend::new())?.leaf()?;
    /// assert!(x.is_leaf() && x.requires_grad());
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn leaf(&self) -> Result<Tensor<B>> {
        self.as_leaf("requires_grad", None)
    }

    /// An untracked tensor: the values of `data` as a constant that gradients do not flow into.
    pub fn constant(data: Tensor<B>) -> Tensor<B> {
        data.detach()
    }

    /// The name given to [`Tensor::var`], for a variable.
    pub fn var_name(&self) -> Option<&str> {
        match &self.ad.as_ref()?.kind {
            NodeKind::Leaf { name } => name.as_deref(),
            NodeKind::Op { .. } => None,
        }
    }

    /// `true` for a tracked variable (a graph leaf), `false` for computed or untracked tensors.
    pub fn is_leaf(&self) -> bool {
        matches!(
            self.ad.as_deref(),
            Some(Node {
                kind: NodeKind::Leaf { .. },
                ..
            })
        )
    }

    /// A new leaf with the values of `self` (detached from any graph it was in).
    pub(crate) fn as_leaf(&self, op: &'static str, name: Option<Arc<str>>) -> Result<Tensor<B>> {
        if !is_differentiable_dtype(self.dtype()) {
            return Err(Error::autodiff(
                op,
                format!(
                    "only floating-point and complex tensors (float16, bfloat16, float32, \
                     float64, complex64, complex128) can be differentiated, got {} (shape {:?}); \
                     cast it to a float dtype first if a derivative is really meant",
                    self.dtype(),
                    self.shape()
                ),
            ));
        }
        let mut t = self.clone();
        t.ad = Some(Node::leaf(name, self.shape(), self.dtype()));
        Ok(t)
    }

    /// A tracked identity of `self` whose node a functional transform differentiates at: it continues the
    /// graph `self` is in (so outer transforms see through it) or starts a new one.
    pub(crate) fn mark_input(&self, op: &'static str) -> Result<Tensor<B>> {
        if self.ad.is_none() {
            return self.as_leaf(op, None);
        }
        let node = Node {
            id: next_node_id(),
            shape: self.shape().to_vec(),
            dtype: self.dtype(),
            kind: NodeKind::Op {
                op: Op::Identity,
                parents: vec![self.ad.clone()],
                saved: Mutex::new(Saved::Held {
                    inputs: vec![None],
                    output: None,
                    specs: Vec::new(),
                }),
                origin: None,
            },
        };
        let mut t = self.clone();
        t.ad = Some(Arc::new(node));
        Ok(t)
    }

    /// The id of this tensor's graph node.
    pub(crate) fn node_id(&self) -> Option<u64> {
        self.ad.as_ref().map(|n| n.id)
    }
}
