//! [`GraphExecutor`]: replays a traced [`Program`] on a real backend, freeing buffers after last use.

use super::graph::{Node, Program, TraceOp, short_dtype};
use crate::Tensor;
use nabla_core::{Backend, Error, FusedKernel, Layout, Result};
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
                        short_dtype(t.dtype()),
                        t.shape(),
                        short_dtype(info.dtype),
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
                (TraceOp::Fused(kernel), Some(k)) => {
                    // The donated buffer becomes the output: it is counted once, as the output.
                    let v = node
                        .inputs
                        .get(k)
                        .map(|o| o.value)
                        .ok_or_else(|| missing(i))?;
                    let donated = values[v].take().ok_or_else(|| missing(v))?;
                    live -= program.values[v].bytes();
                    self.run_fused(program, node, kernel, &values, Some((k, donated)))?
                }
                _ => self.execute(program, node, &values, inputs)?,
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
                            short_dtype(self.backend.storage_dtype(&storage)),
                            short_dtype(info.dtype),
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
        program: &Program,
        node: &Node,
        values: &[Option<B::Storage>],
        inputs: &[Tensor<B>],
    ) -> Result<Vec<B::Storage>> {
        let b = &self.backend;
        let arg = |k: usize| -> Result<(&B::Storage, &Layout)> {
            let o = node
                .inputs
                .get(k)
                .ok_or_else(|| Error::invalid("GraphExecutor::run", "node lacks an input"))?;
            let s = values[o.value].as_ref().ok_or_else(|| missing(o.value))?;
            Ok((s, &o.layout))
        };
        let out = &program.values[node.outputs[0]];
        let one = |s: B::Storage| vec![s];
        let two = |(s, t): (B::Storage, B::Storage)| vec![s, t];
        Ok(match &node.op {
            TraceOp::Input { index } => {
                let t = &inputs[*index];
                let l = t.layout();
                let whole = l.contiguous_range() == Some(0..t.numel())
                    && b.storage_len(t.storage()) == t.numel();
                if whole {
                    one(t.storage().clone())
                } else {
                    one(b.copy(t.storage(), l)?)
                }
            }
            TraceOp::Constant(data) => one(b.upload(data.clone())?),
            TraceOp::Full(value) => one(b.full(out.len(), *value, out.dtype)?),
            TraceOp::Random { dist, key } => one(b.random(*dist, out.len(), out.dtype, *key)?),
            TraceOp::Copy => {
                let (x, l) = arg(0)?;
                one(b.copy(x, l)?)
            }
            TraceOp::Unary(op) => {
                let (x, l) = arg(0)?;
                one(b.unary(*op, x, l)?)
            }
            TraceOp::Binary(op) => {
                let ((x, xl), (y, yl)) = (arg(0)?, arg(1)?);
                one(b.binary(*op, x, xl, y, yl)?)
            }
            TraceOp::Compare(op) => {
                let ((x, xl), (y, yl)) = (arg(0)?, arg(1)?);
                one(b.compare(*op, x, xl, y, yl)?)
            }
            TraceOp::Select => {
                let ((c, cl), (t, tl), (f, fl)) = (arg(0)?, arg(1)?, arg(2)?);
                one(b.select(c, cl, t, tl, f, fl)?)
            }
            TraceOp::Cast(dtype) => {
                let (x, l) = arg(0)?;
                one(b.cast(x, l, *dtype)?)
            }
            TraceOp::Reduce { op, axes } => {
                let (x, l) = arg(0)?;
                one(b.reduce(*op, x, l, axes)?)
            }
            TraceOp::ArgReduce { op, axis } => {
                let (x, l) = arg(0)?;
                one(b.arg_reduce(*op, x, l, *axis)?)
            }
            TraceOp::Cumsum { axis } => {
                let (x, l) = arg(0)?;
                one(b.cumsum(x, l, *axis)?)
            }
            TraceOp::Matmul => {
                let ((x, xl), (y, yl)) = (arg(0)?, arg(1)?);
                one(b.matmul(x, xl, y, yl)?)
            }
            TraceOp::Pad { pads, value } => {
                let (x, l) = arg(0)?;
                one(b.pad(x, l, pads, *value)?)
            }
            TraceOp::Concat { axis } => {
                let parts = (0..node.inputs.len())
                    .map(arg)
                    .collect::<Result<Vec<_>>>()?;
                one(b.concat(&parts, *axis)?)
            }
            TraceOp::Gather { axis } => {
                let ((x, xl), (i, il)) = (arg(0)?, arg(1)?);
                one(b.gather(x, xl, *axis, i, il)?)
            }
            TraceOp::IndexSelect { axis } => {
                let ((x, xl), (i, il)) = (arg(0)?, arg(1)?);
                one(b.index_select(x, xl, *axis, i, il)?)
            }
            TraceOp::ScatterAdd { axis } => {
                let ((d, dl), (i, il), (s, sl)) = (arg(0)?, arg(1)?, arg(2)?);
                one(b.scatter_add(d, dl, *axis, i, il, s, sl)?)
            }
            TraceOp::OneHot { classes, dtype } => {
                let (x, l) = arg(0)?;
                one(b.one_hot(x, l, *classes, *dtype)?)
            }
            TraceOp::Sort { axis, descending } => {
                let (x, l) = arg(0)?;
                two(b.sort(x, l, *axis, *descending)?)
            }
            TraceOp::Topk { axis, k, largest } => {
                let (x, l) = arg(0)?;
                two(b.topk(x, l, *axis, *k, *largest)?)
            }
            TraceOp::MaxPool2d(params) => {
                let (x, l) = arg(0)?;
                two(b.max_pool2d(x, l, params)?)
            }
            TraceOp::Conv2d(params) => {
                let ((x, xl), (w, wl)) = (arg(0)?, arg(1)?);
                one(b.conv2d(x, xl, w, wl, params)?)
            }
            TraceOp::Conv2dInputGrad { input_hw, params } => {
                let ((dy, dl), (w, wl)) = (arg(0)?, arg(1)?);
                one(b.conv2d_input_grad(dy, dl, w, wl, *input_hw, params)?)
            }
            TraceOp::Conv2dWeightGrad { kernel_hw, params } => {
                let ((x, xl), (dy, dl)) = (arg(0)?, arg(1)?);
                one(b.conv2d_weight_grad(x, xl, dy, dl, *kernel_hw, params)?)
            }
            TraceOp::Extension(call) => {
                let parts = (0..node.inputs.len())
                    .map(arg)
                    .collect::<Result<Vec<_>>>()?;
                one(b.extension(&call.0, &parts)?)
            }
            TraceOp::Fused(kernel) => self.run_fused(program, node, kernel, values, None)?,
        })
    }

    /// Runs a fused node, handing `donated` (operand index, buffer taken out of `values`) to the backend.
    fn run_fused(
        &self,
        program: &Program,
        node: &Node,
        kernel: &FusedKernel,
        values: &[Option<B::Storage>],
        mut donated: Option<(usize, B::Storage)>,
    ) -> Result<Vec<B::Storage>> {
        let mut donate = None;
        let mut ins = Vec::with_capacity(node.inputs.len());
        for (k, o) in node.inputs.iter().enumerate() {
            let storage = match donated.take_if(|(d, _)| *d == k) {
                Some((_, s)) => {
                    donate = Some(k);
                    s
                }
                None => values[o.value].clone().ok_or_else(|| missing(o.value))?,
            };
            ins.push((storage, &o.layout));
        }
        let out = &program.values[node.outputs[0]];
        Ok(vec![self.backend.fused(kernel, ins, &out.shape, donate)?])
    }
}

fn missing(v: usize) -> Error {
    Error::invalid(
        "GraphExecutor::run",
        format!("value %{v} was released before its last use (corrupt program)"),
    )
}
