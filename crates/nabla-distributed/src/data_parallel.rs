//! [`DataParallel`]: an optimizer that averages gradients over all ranks before it steps, in
//! buckets all-reduced while the backward pass is still running (PyTorch's
//! `DistributedDataParallel`).

use crate::agree::check_agreement;
use crate::comm::{Communicator, HostBuffer, Pending};
use nabla_core::{Backend, DType, Error, Result};
use nabla_nn::Param;
use nabla_nn::optim::{GradMap, Optimizer, OptimizerState, ParamGroup};
use nabla_tensor::{Tensor, VarId};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// PyTorch DDP's default bucket size: 25 MiB.
pub const DEFAULT_BUCKET_BYTES: usize = 25 << 20;

/// The element type a tensor travels in: floats in f32 (half precisions too) or f64, integers
/// and booleans as the bits of an i64 (broadcasts only: gradients are floats).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Carrier {
    F32,
    F64,
    Int,
}

impl Carrier {
    fn of(dtype: DType) -> Result<Carrier> {
        match dtype {
            DType::F16 | DType::BF16 | DType::F32 => Ok(Carrier::F32),
            DType::F64 => Ok(Carrier::F64),
            DType::C64 | DType::C128 => Err(Error::invalid(
                "DataParallel",
                format!("cannot broadcast or all-reduce {dtype} tensors (real dtypes only)"),
            )),
            // Every integer and bool travels exactly as the bits of an i64 (the cast back wraps to
            // the value).
            _ => Ok(Carrier::Int),
        }
    }

    fn bytes(self) -> usize {
        match self {
            Carrier::F32 => 4,
            Carrier::F64 | Carrier::Int => 8,
        }
    }

    /// The values in order (zeros of the given length for `None`) as one host buffer.
    fn pack<B: Backend>(self, values: Vec<(Option<Tensor<B>>, usize)>) -> Result<HostBuffer> {
        fn gather<B: Backend, T: nabla_core::Element + Copy + Default>(
            values: Vec<(Option<Tensor<B>>, usize)>,
            dtype: DType,
        ) -> Result<Vec<T>> {
            let mut flat = Vec::with_capacity(values.iter().map(|v| v.1).sum());
            for (value, numel) in values {
                match value {
                    Some(t) => flat.extend(t.detach().cast(dtype)?.to_vec::<T>()?),
                    None => flat.resize(flat.len() + numel, T::default()),
                }
            }
            Ok(flat)
        }
        Ok(match self {
            Carrier::F32 => HostBuffer::F32(gather::<B, f32>(values, DType::F32)?),
            Carrier::F64 => HostBuffer::F64(gather::<B, f64>(values, DType::F64)?),
            Carrier::Int => HostBuffer::U64(
                gather::<B, i64>(values, DType::I64)?
                    .into_iter()
                    .map(|v| v as u64)
                    .collect(),
            ),
        })
    }

    /// Cuts `buffer` (packed by [`Carrier::pack`]) into tensors of the shapes and dtypes of
    /// `params`, floats divided by `divisor` (the number of ranks for an average, 1 for a copy).
    fn unpack<B: Backend>(
        self,
        op: &'static str,
        buffer: &HostBuffer,
        params: &[Param<B>],
        divisor: usize,
    ) -> Result<Vec<Tensor<B>>> {
        let total: usize = params.iter().map(Param::numel).sum();
        if buffer.len() != total {
            return Err(Error::invalid(
                op,
                format!(
                    "expected {total} values back, got {} {}: the ranks' models differ",
                    buffer.len(),
                    buffer.kind()
                ),
            ));
        }
        let mut offset = 0;
        let mut out = Vec::with_capacity(params.len());
        for p in params {
            let range = offset..offset + p.numel();
            offset = range.end;
            let backend = p.data().backend().clone();
            let value = match (buffer, self) {
                (HostBuffer::F32(v), Carrier::F32) => {
                    Tensor::from_vec(divided(&v[range], divisor as f32), p.shape(), &backend)?
                }
                (HostBuffer::F64(v), Carrier::F64) => {
                    Tensor::from_vec(divided(&v[range], divisor as f64), p.shape(), &backend)?
                }
                (HostBuffer::U64(v), Carrier::Int) => {
                    let ints: Vec<i64> = v[range].iter().map(|&x| x as i64).collect();
                    Tensor::from_vec(ints, p.shape(), &backend)?
                }
                _ => {
                    return Err(Error::invalid(
                        op,
                        format!("got {} values back where {self:?} were sent", buffer.kind()),
                    ));
                }
            };
            out.push(value.cast(p.dtype())?);
        }
        Ok(out)
    }
}

/// Consecutive parameters (in [`DataParallel`]'s order) whose gradients travel together.
#[derive(Clone, Debug)]
struct Bucket {
    members: Range<usize>,
    carrier: Carrier,
}

/// How long the parts of the last step took, and what crossed the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepTimings {
    /// The backward pass, from its start until the last gradient was handed over (buckets
    /// all-reduced during this time overlap with it).
    pub backward: Duration,
    /// The wait for all-reduces after the backward pass ended: the communication not hidden.
    pub exposed_communication: Duration,
    /// The time the communicator spent inside this step's all-reduces (where it measures it).
    pub communication: Duration,
    /// The optimizer's update after the last bucket arrived, and the buffer broadcast.
    pub update: Duration,
    /// Bytes all-reduced.
    pub bytes: usize,
    /// Buckets all-reduced.
    pub buckets: usize,
}

impl StepTimings {
    /// The share of communication hidden behind the backward pass, `1 - exposed / communication`
    /// (0 when nothing was communicated).
    pub fn overlap(&self) -> f64 {
        let total = self.communication.as_secs_f64();
        if total <= 0.0 {
            return 0.0;
        }
        (1.0 - self.exposed_communication.as_secs_f64() / total).clamp(0.0, 1.0)
    }
}

/// Data-parallel training: wraps the optimizer of a model replicated on every rank, so that each
/// step uses the gradients averaged over all ranks (each rank computing them on its own part of
/// the global batch).
///
/// - At construction every rank takes rank 0's parameters and buffers (one broadcast), so that
///   the replicas start equal.
/// - [`Optimizer::backward_step`] groups the gradients into buckets of about `bucket_bytes`, in
///   the reverse order of the parameters (the order the backward pass produces them), and starts
///   each bucket's all-reduce as soon as all of its gradients are complete
///   ([`Tensor::backward_each`]), while the backward pass goes on. Buckets start in the same order
///   on every rank. Parameters that got no gradient in a step contribute zeros. The wrapped
///   optimizer steps with the averages: bucket by bucket as each arrives, while the later ones
///   are still being reduced, when it updates each parameter alone
///   ([`Optimizer::steps_each_parameter_alone`]: every first-order optimizer), otherwise once
///   the last bucket has arrived.
/// - After each step rank 0's buffers (batch-norm running statistics) are broadcast, as DDP's
///   `broadcast_buffers` does before each forward pass.
///
/// [`Optimizer::step`] and gradient accumulation ([`Optimizer::step_accumulated`]) average the
/// same way, after the fact. In a world of one rank it is the wrapped optimizer.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// # use nabla_nn::{Param, optim::{Optimizer, Sgd, SgdConfig}};
/// use nabla_distributed::{DataParallel, SingleProcess, DEFAULT_BUCKET_BYTES};
/// use std::sync::Arc;
/// let cpu = CpuBackend::new();
/// let w = Param::new(Tensor::from_vec(vec![1.0f32, -2.0], [2], &cpu)?)?;
/// let sgd = Sgd::new(vec![w.clone()], SgdConfig { lr: 0.5, ..Default::default() })?;
/// let mut opt = DataParallel::new(Box::new(sgd), Arc::new(SingleProcess), &[], DEFAULT_BUCKET_BYTES)?;
/// opt.backward_step(&w.value().square()?.sum_all()?)?; // gradient 2w, averaged over one rank
/// assert_eq!(w.value().to_vec::<f32>()?, vec![0.0, 0.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub struct DataParallel<B: Backend> {
    inner: Box<dyn Optimizer<B>>,
    comm: Arc<dyn Communicator>,
    /// The optimizer's parameters, last first.
    params: Vec<Param<B>>,
    buckets: Vec<Bucket>,
    /// The bucket of each parameter.
    bucket_of: Vec<usize>,
    buffers: Vec<Param<B>>,
    last: StepTimings,
}

impl<B: Backend> DataParallel<B> {
    /// Wraps `inner` (built over the model's parameters) to average gradients over `comm`'s ranks
    /// in buckets of about `bucket_bytes` ([`DEFAULT_BUCKET_BYTES`] is PyTorch's 25 MiB), keeping
    /// `buffers` (the model's [`Module::named_buffers`](nabla_nn::Module::named_buffers)) equal to
    /// rank 0's. Every rank must call this at the same point: it broadcasts rank 0's parameters and
    /// buffers.
    pub fn new(
        inner: Box<dyn Optimizer<B>>,
        comm: Arc<dyn Communicator>,
        buffers: &[Param<B>],
        bucket_bytes: usize,
    ) -> Result<Self> {
        if bucket_bytes == 0 {
            return Err(Error::invalid(
                "DataParallel::new",
                "bucket_bytes must be at least 1",
            ));
        }
        let mut params: Vec<Param<B>> = inner
            .param_groups()
            .iter()
            .flat_map(|g| g.params.iter().cloned())
            .collect();
        params.reverse();
        let buckets = plan_buckets(&params, bucket_bytes)?;
        let mut bucket_of = vec![0; params.len()];
        for (b, bucket) in buckets.iter().enumerate() {
            bucket_of[bucket.members.clone()].fill(b);
        }
        let dp = DataParallel {
            inner,
            comm,
            params,
            buckets,
            bucket_of,
            buffers: buffers.to_vec(),
            last: StepTimings::default(),
        };
        check_agreement(
            dp.comm.as_ref(),
            "the model",
            &dp.layout_record(bucket_bytes),
        )?;
        let everything: Vec<Param<B>> = dp.params.iter().chain(&dp.buffers).cloned().collect();
        broadcast_from_root(dp.comm.as_ref(), &everything)?;
        Ok(dp)
    }

    /// What every rank must agree on for the collectives to match: the bucket size, and each
    /// parameter's and buffer's shape and dtype, in the order they travel.
    fn layout_record(&self, bucket_bytes: usize) -> Vec<(String, String)> {
        let describe = |p: &Param<B>| format!("{:?} {}", p.shape(), p.dtype());
        let mut record = vec![(
            "the bucket size".to_string(),
            format!("{bucket_bytes} bytes"),
        )];
        record.push(("the parameter count".into(), self.params.len().to_string()));
        record.push(("the buffer count".into(), self.buffers.len().to_string()));
        let params = self.params.iter().enumerate();
        record.extend(params.map(|(i, p)| (format!("parameter {i}"), describe(p))));
        let buffers = self.buffers.iter().enumerate();
        record.extend(buffers.map(|(i, b)| (format!("buffer {i}"), describe(b))));
        record
    }

    /// The communicator.
    pub fn communicator(&self) -> &Arc<dyn Communicator> {
        &self.comm
    }

    /// How long the parts of the last step took.
    pub fn last_step(&self) -> StepTimings {
        self.last
    }

    /// The number of buckets gradients travel in.
    pub fn num_buckets(&self) -> usize {
        self.buckets.len()
    }

    /// The wrapped optimizer.
    pub fn inner(&self) -> &dyn Optimizer<B> {
        self.inner.as_ref()
    }

    /// Starts the all-reduce of bucket `b` from the gradients in `slots` (taken out; zeros
    /// where missing).
    fn launch(&self, b: usize, slots: &mut [Option<Tensor<B>>]) -> Result<Pending> {
        let bucket = &self.buckets[b];
        let mut values = Vec::with_capacity(bucket.members.len());
        for i in bucket.members.clone() {
            let p = &self.params[i];
            let g = slots[i].take();
            if let Some(g) = &g {
                check_grad(p, g)?;
            }
            values.push((g, p.numel()));
        }
        self.comm.all_reduce_sum(bucket.carrier.pack(values)?)
    }

    /// Waits for bucket `b`'s sum and puts the average of each member's gradient into `grads`.
    fn finish(&self, b: usize, pending: Pending, grads: &mut GradMap<B>) -> Result<()> {
        let bucket = &self.buckets[b];
        let members = &self.params[bucket.members.clone()];
        let sum = pending.wait()?;
        let means = bucket
            .carrier
            .unpack("DataParallel", &sum, members, self.comm.world_size())?;
        for (p, mean) in members.iter().zip(means) {
            grads.insert(p.id(), mean);
        }
        Ok(())
    }

    /// Starts the all-reduce of every bucket from `grads` (by parameter; zeros where missing).
    fn launch_all(&self, grads: &GradMap<B>) -> Result<Vec<Pending>> {
        let mut slots: Vec<Option<Tensor<B>>> = self
            .params
            .iter()
            .map(|p| grads.get(p.id()).cloned())
            .collect();
        (0..self.buckets.len())
            .map(|b| self.launch(b, &mut slots))
            .collect()
    }

    /// Waits for the buckets in order and steps the wrapped optimizer with the averages: bucket by
    /// bucket as each arrives (while later ones are still being reduced) when it updates each
    /// parameter alone, otherwise once with all of them; then brings the buffers in line. Returns
    /// the time spent waiting for buckets and the time spent updating.
    fn step_from(&mut self, pending: Vec<Pending>) -> Result<(Duration, Duration)> {
        let per_bucket = self.inner.steps_each_parameter_alone();
        let (mut waited, mut updating) = (Duration::ZERO, Duration::ZERO);
        let mut grads = GradMap::new();
        for (b, p) in pending.into_iter().enumerate() {
            let t = Instant::now();
            self.finish(b, p, &mut grads)?;
            waited += t.elapsed();
            if per_bucket {
                let t = Instant::now();
                self.inner.step_with(&grads)?;
                grads.clear();
                updating += t.elapsed();
            }
        }
        let t = Instant::now();
        if !per_bucket {
            self.inner.step_with(&grads)?;
        }
        self.sync_buffers()?;
        Ok((waited, updating + t.elapsed()))
    }

    /// Records the timings of a step whose collectives started when the communicator had been
    /// busy for `busy_before`.
    fn record(
        &mut self,
        backward: Duration,
        waited: Duration,
        updating: Duration,
        busy_before: Duration,
    ) {
        self.last = StepTimings {
            backward,
            exposed_communication: waited,
            communication: self.comm.collective_time().saturating_sub(busy_before),
            update: updating,
            bytes: self.bucket_bytes(),
            buckets: self.buckets.len(),
        };
    }

    /// The bytes a step all-reduces.
    fn bucket_bytes(&self) -> usize {
        self.buckets
            .iter()
            .map(|b| {
                let n: usize = self.params[b.members.clone()]
                    .iter()
                    .map(Param::numel)
                    .sum();
                n * b.carrier.bytes()
            })
            .sum()
    }

    /// Makes every rank's buffers equal to rank 0's.
    fn sync_buffers(&self) -> Result<()> {
        broadcast_from_root(self.comm.as_ref(), &self.buffers)
    }
}

/// Checks that `g` can be `p`'s gradient.
fn check_grad<B: Backend>(p: &Param<B>, g: &Tensor<B>) -> Result<()> {
    if g.shape() != p.shape().as_slice() {
        return Err(Error::shapes("DataParallel", g.shape(), &p.shape())
            .with_hint("a gradient must have its parameter's shape"));
    }
    Ok(())
}

/// Splits `params` (in order) into buckets of one wire type and about `bucket_bytes` each: a
/// bucket is closed once it holds at least `bucket_bytes`, so a parameter larger than that has a
/// bucket of its own.
fn plan_buckets<B: Backend>(params: &[Param<B>], bucket_bytes: usize) -> Result<Vec<Bucket>> {
    let mut buckets: Vec<Bucket> = Vec::new();
    let mut bytes = 0;
    for (i, p) in params.iter().enumerate() {
        let carrier = Carrier::of(p.dtype())?;
        if carrier == Carrier::Int {
            return Err(Error::invalid(
                "DataParallel",
                format!("cannot all-reduce gradients of {} parameters", p.dtype()),
            ));
        }
        match buckets.last_mut() {
            Some(last) if last.carrier == carrier && bytes < bucket_bytes => {
                last.members.end = i + 1;
            }
            _ => {
                buckets.push(Bucket {
                    members: i..i + 1,
                    carrier,
                });
                bytes = 0;
            }
        }
        bytes += p.numel() * carrier.bytes();
    }
    Ok(buckets)
}

/// Sets every parameter (or buffer) of `params` to rank 0's values, one broadcast per carrier.
pub(crate) fn broadcast_from_root<B: Backend>(
    comm: &dyn Communicator,
    params: &[Param<B>],
) -> Result<()> {
    if comm.world_size() == 1 || params.is_empty() {
        return Ok(());
    }
    let carriers = params
        .iter()
        .map(|p| Carrier::of(p.dtype()))
        .collect::<Result<Vec<_>>>()?;
    for carrier in [Carrier::F32, Carrier::F64, Carrier::Int] {
        let members: Vec<Param<B>> = params
            .iter()
            .zip(&carriers)
            .filter(|(_, c)| **c == carrier)
            .map(|(p, _)| p.clone())
            .collect();
        if members.is_empty() {
            continue;
        }
        let values = members
            .iter()
            .map(|p| (Some(p.data()), p.numel()))
            .collect();
        let got = comm.broadcast(carrier.pack(values)?, 0)?.wait()?;
        for (p, value) in members
            .iter()
            .zip(carrier.unpack("broadcast", &got, &members, 1)?)
        {
            p.set(value)?;
        }
    }
    Ok(())
}

impl<B: Backend> Optimizer<B> for DataParallel<B> {
    fn step_with(&mut self, grads: &GradMap<B>) -> Result<()> {
        if self.comm.world_size() == 1 {
            return self.inner.step_with(grads);
        }
        let busy = self.comm.collective_time();
        let pending = self.launch_all(grads)?;
        let (waited, updating) = self.step_from(pending)?;
        self.record(Duration::ZERO, waited, updating, busy);
        Ok(())
    }

    fn backward_step(&mut self, loss: &Tensor<B>) -> Result<()> {
        let start = Instant::now();
        if self.comm.world_size() == 1 {
            // Nothing to average: the wrapped optimizer's own step, fused into backward.
            self.inner.backward_step(loss)?;
            self.last = StepTimings {
                backward: start.elapsed(),
                ..StepTimings::default()
            };
            return Ok(());
        }
        let busy = self.comm.collective_time();
        let slot_of: HashMap<VarId, usize> = self
            .params
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.value().var_id().map(|id| (id, i)))
            .collect();
        let mut slots: Vec<Option<Tensor<B>>> = vec![None; self.params.len()];
        let mut missing: Vec<usize> = self.buckets.iter().map(|b| b.members.len()).collect();
        let mut pending = Vec::with_capacity(self.buckets.len());
        loss.backward_each(|id, g| {
            let Some(&i) = slot_of.get(&id) else {
                return Ok(());
            };
            slots[i] = Some(g);
            missing[self.bucket_of[i]] -= 1;
            // Buckets start in order on every rank, each once all of its gradients are in.
            while pending.len() < self.buckets.len() && missing[pending.len()] == 0 {
                pending.push(self.launch(pending.len(), &mut slots)?);
            }
            Ok(())
        })?;
        let backward = start.elapsed();
        // Parameters the loss does not depend on contribute zeros.
        while pending.len() < self.buckets.len() {
            pending.push(self.launch(pending.len(), &mut slots)?);
        }
        let (waited, updating) = self.step_from(pending)?;
        self.record(backward, waited, updating, busy);
        Ok(())
    }

    fn accumulate(&mut self, grads: &nabla_tensor::Gradients<B>) -> Result<()> {
        self.inner.accumulate(grads)
    }

    fn zero_grad(&mut self) {
        self.inner.zero_grad();
    }

    fn accumulated_mut(&mut self) -> &mut GradMap<B> {
        self.inner.accumulated_mut()
    }

    fn step_accumulated(&mut self) -> Result<()> {
        let local = self.inner.accumulated_mut().clone();
        self.step_with(&local)
    }

    fn param_groups(&self) -> &[ParamGroup<B>] {
        self.inner.param_groups()
    }

    fn param_groups_mut(&mut self) -> &mut [ParamGroup<B>] {
        self.inner.param_groups_mut()
    }

    fn state_dict(&self) -> OptimizerState<B> {
        self.inner.state_dict()
    }

    fn load_state_dict(&mut self, state: &OptimizerState<B>) -> Result<()> {
        self.inner.load_state_dict(state)
    }
}

/// Each of `values` divided by `divisor`.
fn divided<T: Copy + std::ops::Div<Output = T>>(values: &[T], divisor: T) -> Vec<T> {
    values.iter().map(|&x| x / divisor).collect()
}
