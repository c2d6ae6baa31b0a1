//! [`TracingBackend`]: a backend whose buffers are symbolic values of a program being recorded.

use super::graph::{GraphBuilder, Program, TraceOp, TraceOperand, ValueId, ValueInfo};
use crate::Tensor;
use nabla_core::{DType, Error, Layout, Result, Shape};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

type Shared = Arc<Mutex<GraphBuilder>>;

/// A value of a traced program: the storage of a `Tensor<TracingBackend>`. Cheap to clone.
#[derive(Clone)]
pub struct TracedValue {
    pub(super) id: ValueId,
    pub(super) dtype: DType,
    pub(super) len: usize,
    graph: Shared,
}

impl TracedValue {
    /// Id of the value in the graph being recorded (programs renumber values).
    pub fn id(&self) -> ValueId {
        self.id
    }
}

impl fmt::Debug for TracedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TracedValue(%{}: {} x{})", self.id, self.dtype, self.len)
    }
}

impl PartialEq for TracedValue {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && Arc::ptr_eq(&self.graph, &other.graph)
    }
}

/// A traced tensor: a [`Tensor`] on the [`TracingBackend`], with every operation and operator of the
/// eager tensor. Operations record a program instead of computing; autodiff transforms
/// ([`crate::AdContext`], [`Tensor::grad`], [`crate::grad`], ...) on traced tensors return traced
/// tensors, which can be transformed again, compiled with [`crate::GraphCompiler`] and run with
/// [`crate::GraphExecutor`].
///
/// ```
/// use nabla_tensor::{AdContext, DType, GraphExecutor, Tensor, TracedTensor, TracingBackend};
/// use nabla_cpu::CpuBackend;
/// let tb = TracingBackend::new();
/// let x = TracedTensor::placeholder(&tb, [3], DType::F64)?;
/// let loss = x.sin()?.exp()?.sum_all()?;
/// let ad = AdContext::new();
/// let g = ad.grad(&loss, &x)?; // cos(x) exp(sin x), still traced
/// let v = TracedTensor::placeholder(&tb, [3], DType::F64)?;
/// let hv = ad.jvp(&g, &x, &v)?; // a Hessian-vector product
/// let program = tb.program(&[&g, &hv])?;
/// let cpu = CpuBackend::new();
/// let xs = Tensor::from_vec(vec![0.0f64, 1.0, 2.0], [3], &cpu)?;
/// let vs = Tensor::from_vec(vec![1.0f64, 0.0, 0.0], [3], &cpu)?;
/// let out = GraphExecutor::new(&cpu).run(&program, &[xs, vs])?;
/// assert_eq!(out[0].to_vec::<f64>()?[0], 1.0); // cos 0 · exp(sin 0)
/// assert_eq!(out[1].to_vec::<f64>()?, vec![1.0, 0.0, 0.0]); // (cos² - sin) exp(sin) at 0
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub type TracedTensor = Tensor<TracingBackend>;

impl Tensor<TracingBackend> {
    /// A typed program input of `tb`'s graph; see [`TracingBackend::placeholder`].
    pub fn placeholder(tb: &TracingBackend, shape: impl Into<Shape>, dtype: DType) -> Result<Self> {
        tb.placeholder(shape, dtype)
    }
}

/// A [`Backend`](nabla_core::Backend) that computes nothing: every op appends a node to a graph, so `Tensor<TracingBackend>`
/// is a traced tensor and every tensor op, composite and autodiff rule records a program. Each instance
/// owns its own graph; clones share it.
///
/// Start from [`TracingBackend::placeholder`] inputs, compute with ordinary tensor methods (or
/// [`crate::grad`], [`crate::jvp`], [`crate::hessian`], ...), snapshot with [`TracingBackend::program`]
/// and execute the result on a real backend with [`crate::GraphExecutor`]. Reading a traced value
/// ([`Tensor::to_vec`], [`Tensor::item`], printing) fails: it has no data until executed.
///
/// ```
/// use nabla_tensor::{GraphExecutor, Tensor, TracingBackend};
/// use nabla_cpu::CpuBackend;
/// use nabla_core::DType;
/// let tb = TracingBackend::new();
/// let x = tb.placeholder([3], DType::F64)?;
/// let y = (&x * &x)?.sum_all()?;
/// assert!(y.item::<f64>().is_err());
/// let program = tb.program(&[&y])?;
/// let cpu = CpuBackend::new();
/// let exec = GraphExecutor::new(&cpu);
/// let out = exec.run(&program, &[Tensor::from_vec(vec![1.0f64, 2.0, 3.0], [3], &cpu)?])?;
/// assert_eq!(out[0].item::<f64>()?, 14.0);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct TracingBackend {
    graph: Shared,
}

impl fmt::Debug for TracingBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let g = self.lock();
        write!(
            f,
            "TracingBackend({} nodes, {} values, {} inputs)",
            g.nodes.len(),
            g.values.len(),
            g.inputs.len()
        )
    }
}

impl TracingBackend {
    /// A backend recording into a fresh, empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, GraphBuilder> {
        self.graph.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A program input of the given shape and dtype; inputs are numbered in order of creation. A
    /// floating-point or complex placeholder is a variable named `input{index}`, so traced programs can
    /// be differentiated with respect to it ([`crate::AdContext`], [`Tensor::grad`]).
    pub fn placeholder(&self, shape: impl Into<Shape>, dtype: DType) -> Result<Tensor<Self>> {
        let shape = shape.into().into_dims();
        let index = self.lock().inputs.len();
        let v = self.record(TraceOp::Input { index }, &[], shape.clone(), dtype)?;
        let t = Tensor::from_storage(v, Layout::contiguous(shape), self)?;
        if dtype.is_float() || dtype.is_complex() {
            Tensor::var(format!("input{index}"), t)
        } else {
            Ok(t)
        }
    }

    /// Number of nodes recorded so far (before dead-code elimination).
    pub fn recorded_nodes(&self) -> usize {
        self.lock().nodes.len()
    }

    /// Snapshots the graph as a [`Program`] computing `outputs` (views allowed), keeping only the nodes
    /// they depend on plus every placeholder.
    pub fn program(&self, outputs: &[&Tensor<Self>]) -> Result<Program> {
        let outs = outputs
            .iter()
            .map(|t| self.operand("program", t.storage(), t.layout()))
            .collect::<Result<Vec<_>>>()?;
        Ok(self.lock().snapshot(&outs))
    }

    pub(super) fn operand(
        &self,
        op: &'static str,
        v: &TracedValue,
        layout: &Layout,
    ) -> Result<TraceOperand> {
        if !Arc::ptr_eq(&self.graph, &v.graph) {
            return Err(Error::invalid(
                op,
                format!(
                    "traced value %{} belongs to another TracingBackend's graph; \
                     trace a program with a single backend instance (clone it to share)",
                    v.id
                ),
            ));
        }
        Ok(TraceOperand {
            value: v.id,
            layout: layout.clone(),
        })
    }

    pub(super) fn record_n(
        &self,
        op: TraceOp,
        ins: &[(&TracedValue, &Layout)],
        outs: Vec<ValueInfo>,
    ) -> Result<Vec<TracedValue>> {
        let name = "trace";
        let inputs = ins
            .iter()
            .map(|(v, l)| self.operand(name, v, l))
            .collect::<Result<Vec<_>>>()?;
        let metas: Vec<(DType, usize)> = outs.iter().map(|i| (i.dtype, i.len())).collect();
        let ids = self.lock().push(op, inputs, outs);
        Ok(ids
            .into_iter()
            .zip(metas)
            .map(|(id, (dtype, len))| TracedValue {
                id,
                dtype,
                len,
                graph: self.graph.clone(),
            })
            .collect())
    }

    pub(super) fn record(
        &self,
        op: TraceOp,
        ins: &[(&TracedValue, &Layout)],
        shape: Vec<usize>,
        dtype: DType,
    ) -> Result<TracedValue> {
        let mut v = self.record_n(op, ins, vec![ValueInfo { dtype, shape }])?;
        Ok(v.remove(0))
    }
}
