//! [`GraphExecutor`]: replays a traced [`Program`] on a real backend, freeing buffers after last use.

use super::graph::{Node, Program, TraceOp};
use crate::Tensor;
use nabla_core::{Backend, Error, FusedKernel, Primitive, Result};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Statistics of one [`GraphExecutor::run`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Nodes executed.
    pub nodes_executed: usize,
    /// Largest total size, in bytes, of the program values alive at once (inputs included): each node's
    /// inputs and outputs are alive together, and a value is released right after its last reader. An
    /// input buffer a fused node overwrites ([`crate::Program::reused_operand`]) is counted once, as the
    /// output.
    pub peak_buffer_bytes: usize,
    /// Values released before the end of the run because no later node reads them.
    pub values_freed: usize,
}

/// Executes [`Program`]s on backend `B`, replaying each node with `B`'s kernels in order.
///
/// ```
/// use nabla_tensor::{GraphExecutor, Tensor, TracingBackend};
/// use nabla_cpu::CpuBackend;
/// use nabla_core::DType;
/// let tb = TracingBackend::new();
/// let x = tb.placeholder([2, 2], DType::F32)?;
/// let program = tb.program(&[&x.exp()?.t()?])?;
/// let cpu = CpuBackend::new();
/// let exec = GraphExecutor::new(&cpu);
/// let out = exec.run(&program, &[Tensor::zeros([2, 2], DType::F32, &cpu)?])?;
/// assert_eq!(out[0].to_vec::<f32>()?, vec![1.0; 4]);
/// assert!(exec.last_run_stats().unwrap().peak_buffer_bytes > 0);
/// // Inputs are checked against the placeholders.
/// assert!(exec.run(&program, &[Tensor::zeros([3], DType::F32, &cpu)?]).is_err());
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Debug)]
pub struct GraphExecutor<B: Backend> {
    backend: B,
    stats: Mutex<Option<RunStats>>,
}

impl<B: Backend> GraphExecutor<B> {
    /// An executor running on `backend`.
    pub fn new(backend: &B) -> Self {
        GraphExecutor {
            backend: backend.clone(),
            stats: Mutex::new(None),
        }
    }

    /// The backend programs run on.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// Statistics of the last successful [`GraphExecutor::run`], if any.
    pub fn last_run_stats(&self) -> Option<RunStats> {
        *self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn check_inputs(&self, program: &Program, inputs: &[Tensor<B>]) -> Result<()> {
        if inputs.len() != program.inputs.len() {
            return Err(Error::invalid(
                "GraphExecutor::run",
                format!(
                    "the program has {} inputs (placeholders) but {} tensors were given",
                    program.inputs.len(),
                    inputs.len()
                ),
            ));
        }
        for (i, (t, &v)) in inputs.iter().zip(&program.inputs).enumerate() {
            let info = &program.values[v];
            if t.shape() != info.shape.as_slice() || t.dtype() != info.dtype {
                return Err(Error::invalid(
                    "GraphExecutor::run",
                    format!(
                        "input {i} is {}{:?} but placeholder {i} is {}{:?}",
                        t.dtype().short_name(),
                        t.shape(),
                        info.dtype.short_name(),
                        info.shape
                    ),
                ));
            }
            if t.backend().device() != self.backend.device() {
                return Err(Error::DeviceMismatch {
                    op: "GraphExecutor::run",
                    lhs: t.backend().device().to_string(),
                    rhs: self.backend.device().to_string(),
                });
            }
        }
        Ok(())
    }

    /// Runs `program` with `inputs` (one tensor per placeholder, of its shape and dtype) and returns the
    /// outputs, each a fresh tensor on `B` with the view the traced output had. Values are released as
    /// soon as no later node reads them; see [`GraphExecutor::last_run_stats`].
    pub fn run(&self, program: &Program, inputs: &[Tensor<B>]) -> Result<Vec<Tensor<B>>> {
        self.run_timed(program, inputs, None)
    }

    /// [`GraphExecutor::run`] that also returns the wall time of each node (in program order, waiting
    /// for the backend after every node), to find where a program spends its time.
    ///
    /// ```
    /// use nabla_tensor::{GraphExecutor, Tensor, TracingBackend};
    /// use nabla_cpu::CpuBackend;
    /// use nabla_core::DType;
    /// let tb = TracingBackend::new();
    /// let x = tb.placeholder([64, 64], DType::F32)?;
    /// let program = tb.program(&[&x.matmul(&x)?.tanh()?])?;
    /// let cpu = CpuBackend::new();
    /// let input = Tensor::ones([64, 64], DType::F32, &cpu)?;
    /// let (_, times) = GraphExecutor::new(&cpu).run_profiled(&program, &[input])?;
    /// assert_eq!(times.len(), program.nodes().len());
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn run_profiled(
        &self,
        program: &Program,
        inputs: &[Tensor<B>],
    ) -> Result<(Vec<Tensor<B>>, Vec<Duration>)> {
        let mut times = Vec::with_capacity(program.nodes.len());
        let out = self.run_timed(program, inputs, Some(&mut times))?;
        Ok((out, times))
    }

    fn run_timed(
        &self,
        program: &Program,
        inputs: &[Tensor<B>],
        mut times: Option<&mut Vec<Duration>>,
    ) -> Result<Vec<Tensor<B>>> {
        self.check_inputs(program, inputs)?;
        let mut values: Vec<Option<B::Storage>> = vec![None; program.values.len()];
        let mut stats = RunStats::default();
        let mut live = 0usize;
        for (i, node) in program.nodes.iter().enumerate() {
            let start = times.is_some().then(Instant::now);
            let outs = match (&node.op, program.reused_operand(i)) {
                (TraceOp::Primitive(Primitive::Fused { kernel, shape }), Some(k)) => {
                    // The donated buffer becomes the output: it is counted once, as the output.
                    let v = node
                        .inputs
                        .get(k)
                        .map(|o| o.value)
                        .ok_or_else(|| missing(i))?;
                    let donated = values[v].take().ok_or_else(|| missing(v))?;
                    live -= program.values[v].bytes();
                    self.run_fused_donating(node, (kernel, shape), &values, (k, donated))?
                }
                _ => self.execute(node, &values, inputs)?,
            };
            for (&v, storage) in node.outputs.iter().zip(outs) {
                let info = &program.values[v];
                let len = self.backend.storage_len(&storage);
                if len != info.len() || self.backend.storage_dtype(&storage) != info.dtype {
                    return Err(Error::Backend {
                        backend: self.backend.name().to_string(),
                        message: format!(
                            "node {i} ({}) produced {} x{len} where the trace expected {}{:?}",
                            node.op,
                            self.backend.storage_dtype(&storage).short_name(),
                            info.dtype.short_name(),
                            info.shape
                        ),
                    });
                }
                live += info.bytes();
                values[v] = Some(storage);
            }
            if let (Some(times), Some(start)) = (times.as_deref_mut(), start) {
                self.backend.synchronize()?;
                times.push(start.elapsed());
            }
            stats.peak_buffer_bytes = stats.peak_buffer_bytes.max(live);
            stats.nodes_executed += 1;
            let read = node.inputs.iter().map(|o| o.value);
            for v in read.chain(node.outputs.iter().copied()) {
                let dead = match program.last_use[v] {
                    Some(last) => last == i,
                    None => true,
                };
                if dead && values[v].take().is_some() {
                    live -= program.values[v].bytes();
                    stats.values_freed += 1;
                }
            }
        }
        let outputs = program
            .outputs
            .iter()
            .map(|o| {
                let storage = values[o.value].clone().ok_or_else(|| missing(o.value))?;
                Tensor::from_storage(storage, o.layout.clone(), &self.backend)
            })
            .collect::<Result<Vec<_>>>()?;
        *self.stats.lock().unwrap_or_else(|e| e.into_inner()) = Some(stats);
        Ok(outputs)
    }

    /// Runs one node; returns its output buffers.
    fn execute(
        &self,
        node: &Node,
        values: &[Option<B::Storage>],
        inputs: &[Tensor<B>],
    ) -> Result<Vec<B::Storage>> {
        let b = &self.backend;
        match &node.op {
            TraceOp::Input { index } => {
                let t = inputs.get(*index).ok_or_else(|| {
                    Error::invalid("GraphExecutor::run", format!("no input {index}"))
                })?;
                let l = t.layout();
                let whole = l.contiguous_range() == Some(0..t.numel())
                    && b.storage_len(t.storage()) == t.numel();
                Ok(vec![if whole {
                    t.storage().clone()
                } else {
                    b.copy(t.storage(), l)?
                }])
            }
            TraceOp::Primitive(prim) => {
                let args = node
                    .inputs
                    .iter()
                    .map(|o| {
                        let s = values[o.value].as_ref().ok_or_else(|| missing(o.value))?;
                        Ok((s, &o.layout))
                    })
                    .collect::<Result<Vec<_>>>()?;
                prim.dispatch(b, &args)
            }
        }
    }

    /// Runs a fused node whose input `k` gives its buffer (`donated`, taken out of `values`) to the
    /// output.
    fn run_fused_donating(
        &self,
        node: &Node,
        (kernel, shape): (&FusedKernel, &[usize]),
        values: &[Option<B::Storage>],
        (k, donated): (usize, B::Storage),
    ) -> Result<Vec<B::Storage>> {
        let mut donated = Some(donated);
        let mut ins = Vec::with_capacity(node.inputs.len());
        for (j, o) in node.inputs.iter().enumerate() {
            let storage = match donated.take_if(|_| j == k) {
                Some(s) => s,
                None => values[o.value].clone().ok_or_else(|| missing(o.value))?,
            };
            ins.push((storage, &o.layout));
        }
        Ok(vec![self.backend.fused(kernel, ins, shape, Some(k))?])
    }
}

fn missing(v: usize) -> Error {
    Error::invalid(
        "GraphExecutor::run",
        format!("value %{v} was released before its last use (corrupt program)"),
    )
}
