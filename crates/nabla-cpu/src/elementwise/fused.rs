//! The fused elementwise kernel ([`nabla_core::Backend::fused`]): one pass over the output in blocks.
//!
//! The output is cut into blocks of [`BLOCK_BYTES`] per step (1024 `f32`, 512 `f64`). For each block,
//! every step is evaluated into a block-local buffer (a "slot", reused once its last reader has run) with
//! the same element functions and multiversioned loops as the op-by-op kernels (see
//! [`super::fused_step`]), so results are bit-identical to running the ops one by one, while the
//! intermediates never leave L1. Blocks are split across threads as
//! the other elementwise kernels split their outputs (above [`PARALLEL_THRESHOLD`], in tasks of
//! [`CHUNK`] elements).
//!
//! Inputs are read in place when their view is contiguous, as one value when it is a broadcast scalar,
//! and otherwise gathered per block (row broadcasts, flips, slices, transposes), except that views with
//! a large innermost stride in outputs above [`MATERIALISE_ABOVE`] elements (big transposes) are first
//! copied with the tiled copy.
//!
//! Constant subexpressions (constants, broadcast-scalar inputs and ops over them only) are evaluated
//! once, before the loop. A donated input that is uniquely held becomes the output buffer; each block
//! reads its donated values into a slot before the result overwrites them.
//!
//! Kernels with several results ([`FusedKernel::with_outputs`]) write each result block into its own
//! output buffer (or donated input) in the same pass: a result nothing else reads goes straight into
//! its output, the others are copied there from their slot at the end of each block.
//!
//! The fast path covers kernels whose steps are all `f32` (or all `f64`) and `bool`; other kernels run
//! through [`FusedKernel::evaluate_by_ops`].

use super::fused_step::{AnyVal, Dst, Val, Walk, as_uninit, eval, gather, load, map_val, mismatch};
use super::traits::Real;
use crate::strided::{CHUNK, output_vec};
use crate::{CpuBackend, CpuStorage, PARALLEL_THRESHOLD};
use nabla_core::CastFrom;
use nabla_core::{DType, Element, Error, FusedKernel, FusedOp, HostLoop, Layout, Result};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Bytes of one step's block buffer.
const BLOCK_BYTES: usize = 4096;
/// Outputs above this many elements copy inputs with a large innermost stride first.
const MATERIALISE_ABOVE: usize = 1 << 21;
const OP: &str = "fused";

/// The float dtype of the fast path for `kernel`, if it has one: every step is `f32` or `bool`, or
/// every step is `f64` or `bool` (an all-`bool` kernel runs in the `f32` instantiation).
pub(crate) fn fast_dtype(kernel: &FusedKernel) -> Option<DType> {
    let mut float = None;
    for step in kernel.steps() {
        match step.dtype {
            DType::Bool => {}
            d @ (DType::F32 | DType::F64) => {
                if float.replace(d).is_some_and(|f| f != d) {
                    return None;
                }
            }
            _ => return None,
        }
    }
    Some(float.unwrap_or(DType::F32))
}

/// Runs a single-result `kernel`; see the module documentation.
pub(crate) fn fused(
    kernel: &FusedKernel,
    inputs: Vec<(CpuStorage, &Layout)>,
    shape: &[usize],
    donate: Option<usize>,
) -> Result<CpuStorage> {
    kernel.check_single_output()?;
    let mut out = fused_many(kernel, inputs, shape, &[donate])?;
    out.pop()
        .ok_or_else(|| Error::invalid(OP, "the kernel returned no result"))
}

/// Runs `kernel`, one buffer per result; `donate[j] = Some(k)` lets result `j` reuse input `k`'s buffer.
pub(crate) fn fused_many(
    kernel: &FusedKernel,
    inputs: Vec<(CpuStorage, &Layout)>,
    shape: &[usize],
    donate: &[Option<usize>],
) -> Result<Vec<CpuStorage>> {
    let metas: Vec<(DType, &[usize])> =
        inputs.iter().map(|(s, l)| (s.dtype(), l.shape())).collect();
    kernel.check_call(&metas, shape)?;
    for (s, l) in &inputs {
        s.check_layout(OP, l)?;
    }
    kernel.check_donations(donate, inputs.len())?;
    match fast_dtype(kernel) {
        Some(DType::F64) => finish::<f64>(kernel, inputs, shape, donate),
        Some(_) => finish::<f32>(kernel, inputs, shape, donate),
        None => {
            let refs: Vec<(&CpuStorage, &Layout)> = inputs.iter().map(|(s, l)| (s, *l)).collect();
            kernel.evaluate_outputs_by_ops(&CpuBackend, &refs, shape)
        }
    }
}

/// A kernel input's data: the typed buffer (from the view's first element, when contiguous).
enum Data<'a, T> {
    Real(&'a [T]),
    Bool(&'a [bool]),
}

/// How a kernel input is read.
enum Access {
    /// Directly, from the (contiguous) data.
    Contig,
    /// One value at this offset.
    Splat(usize),
    /// Gathered per block along a coalesced view.
    Gather(Walk),
    /// From the output buffer of this result, which it was donated to.
    Donor(usize),
}

/// Where a step's block values live.
#[derive(Clone, Copy, PartialEq)]
enum Place {
    /// One value for every element (constant subexpressions).
    Splat,
    /// The contiguous data of this input.
    Contig(usize),
    /// A block-local buffer of the step's lane type.
    Slot(usize),
    /// Written directly into the output buffer of this result.
    Out(usize),
}

/// Block-local buffers of each lane type.
struct Scratch<T> {
    real: Vec<Vec<T>>,
    boolean: Vec<Vec<bool>>,
}

/// Everything a block needs, prepared once per call.
struct Plan<'a, T> {
    kernel: &'a FusedKernel,
    data: Vec<Data<'a, T>>,
    access: Vec<Access>,
    place: Vec<Place>,
    splat_real: Vec<T>,
    splat_bool: Vec<bool>,
    /// Steps with per-block work, in order.
    work: Vec<usize>,
    slots: (usize, usize),
    block: usize,
}

/// One result's buffer: a donated input's (initialised, length `n`) or a fresh one (empty, capacity `n`).
enum OutBuf<T> {
    Real(Vec<T>),
    Bool(Vec<bool>),
}

impl<T: Real> OutBuf<T> {
    /// A fresh buffer for `n` elements of `dtype`.
    fn fresh(dtype: DType, n: usize) -> Self {
        match dtype {
            DType::Bool => OutBuf::Bool(output_vec(n)),
            _ => OutBuf::Real(output_vec(n)),
        }
    }

    /// Its first `n` elements as a destination (fresh buffers through their spare capacity).
    fn dst(&mut self, n: usize) -> Dst<'_, T> {
        fn slots<X: Copy>(v: &mut Vec<X>, n: usize) -> &mut [MaybeUninit<X>] {
            if v.len() == n {
                as_uninit(&mut v[..])
            } else {
                &mut v.spare_capacity_mut()[..n]
            }
        }
        match self {
            OutBuf::Real(v) => Dst::Real(slots(v, n)),
            OutBuf::Bool(v) => Dst::Bool(slots(v, n)),
        }
    }

    /// The storage, once every element has been written.
    fn into_storage(self, n: usize) -> CpuStorage {
        fn filled<X: Element>(mut v: Vec<X>, n: usize) -> CpuStorage {
            // SAFETY: `Plan::drive` wrote every element of `v[..n]` (`v` has capacity `n`).
            unsafe { v.set_len(n) };
            CpuStorage::from_vec(v)
        }
        match self {
            OutBuf::Real(v) => filled(v, n),
            OutBuf::Bool(v) => filled(v, n),
        }
    }
}

/// Runs a kernel whose floats are `T`, into new buffers or into the donated ones.
fn finish<T: Real + CastFrom>(
    kernel: &FusedKernel,
    mut inputs: Vec<(CpuStorage, &Layout)>,
    shape: &[usize],
    donate: &[Option<usize>],
) -> Result<Vec<CpuStorage>> {
    let n: usize = shape.iter().product();
    let dtypes = kernel.output_dtypes();
    // `donor[k] = Some(j)`: input `k`'s buffer became result `j`'s.
    let mut donor: Vec<Option<usize>> = vec![None; inputs.len()];
    let mut outs = Vec::with_capacity(dtypes.len());
    for (j, &dtype) in dtypes.iter().enumerate() {
        let mut out = None;
        if let Some(&Some(k)) = donate.get(j)
            && n > 0
            && let Some((s, l)) = inputs.get(k)
            && s.dtype() == dtype
            && s.len() == n
            && l.contiguous_range() == Some(0..n)
        {
            let s = std::mem::replace(&mut inputs[k].0, CpuStorage::from_vec(Vec::<T>::new()));
            match s.try_into_host() {
                Ok(host) => {
                    let bad = || Error::invalid(OP, "donated dtype");
                    out = Some(match dtype {
                        DType::Bool => OutBuf::Bool(bool::vec_of(host).ok_or_else(bad)?),
                        _ => OutBuf::Real(T::vec_of(host).ok_or_else(bad)?),
                    });
                    donor[k] = Some(j);
                }
                Err(s) => inputs[k].0 = s,
            }
        }
        outs.push(out.unwrap_or_else(|| OutBuf::fresh(dtype, n)));
    }
    if n == 0 {
        return Ok(outs.into_iter().map(|o| o.into_storage(0)).collect());
    }
    if let Some(host_loop) = kernel.host_loop()
        && native_loop(host_loop, &inputs, &donor, &mut outs, n)
    {
        return Ok(outs.into_iter().map(|o| o.into_storage(n)).collect());
    }
    // Large views whose innermost stride is not -1, 0 or 1 (big transposes) are copied once with the
    // tiled copy: gathering them row by row would touch a cache line (and often a page) per element.
    // Smaller ones are gathered per block, which measured faster than an extra buffer.
    let copies = inputs
        .iter()
        .map(|(s, l)| {
            let (_, strides) = Layout::coalesce(&[l]);
            let far = strides[0].last().is_some_and(|st| st.abs() > 1);
            Ok(
                if far && n > MATERIALISE_ABOVE && l.contiguous_range().is_none() {
                    Some(super::copy(s, l)?)
                } else {
                    None
                },
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let plan = Plan::new(kernel, &inputs, &copies, &donor)?;
    plan.drive(outs.iter_mut().map(|o| o.dst(n)).collect())?;
    Ok(outs.into_iter().map(|o| o.into_storage(n)).collect())
}

/// Runs a kernel's attached host loop ([`HostLoop`]) in the results' buffers: each result takes the
/// values of the input it updates first (donated ones already hold them). Returns `false`, having
/// written nothing the blocked evaluation relies on, when an input is not a contiguous view of `n`
/// elements, is donated to another result than the one updating it, or the loop declines the dtype.
fn native_loop<T: Real>(
    host_loop: &HostLoop,
    inputs: &[(CpuStorage, &Layout)],
    donor: &[Option<usize>],
    outs: &mut [OutBuf<T>],
    n: usize,
) -> bool {
    let updates = host_loop.updates();
    let contiguous = |k: usize| {
        let (s, l) = inputs.get(k)?;
        let r = l.contiguous_range().filter(|r| r.len() == n)?;
        s.typed::<T>(OP).ok()?.get(r)
    };
    let read_only: Vec<usize> = (0..inputs.len()).filter(|k| !updates.contains(k)).collect();
    let Some(reads) = read_only
        .iter()
        .map(|&k| contiguous(k).filter(|_| donor[k].is_none()))
        .collect::<Option<Vec<&[T]>>>()
    else {
        return false;
    };
    if outs.len() != updates.len()
        || updates.iter().enumerate().any(|(j, &k)| {
            donor[k].is_some_and(|d| d != j)
                || (donor[k].is_none() && contiguous(k).is_none())
                || !matches!(outs[j], OutBuf::Real(_))
        })
    {
        return false;
    }
    // Fresh buffers start from their input's values; donated ones already hold them.
    for (j, &k) in updates.iter().enumerate() {
        if let (OutBuf::Real(v), Some(x), None) = (&mut outs[j], contiguous(k), donor[k]) {
            v.clear();
            v.extend_from_slice(x);
        }
    }
    let mut results: Vec<&mut [T]> = outs
        .iter_mut()
        .filter_map(|o| match o {
            OutBuf::Real(v) => Some(&mut v[..]),
            OutBuf::Bool(_) => None,
        })
        .collect();
    crate::fast_path::run_host_loop(host_loop, &mut results, &reads)
}

impl<'a, T: Real + CastFrom> Plan<'a, T> {
    fn new(
        kernel: &'a FusedKernel,
        inputs: &'a [(CpuStorage, &Layout)],
        copies: &'a [Option<CpuStorage>],
        donor: &[Option<usize>],
    ) -> Result<Self> {
        let mut data = Vec::with_capacity(inputs.len());
        let mut access = Vec::with_capacity(inputs.len());
        for (k, ((s, l), copy)) in inputs.iter().zip(copies).enumerate() {
            let (buf, range, how) = if let Some(c) = copy {
                (c, 0..c.len(), Access::Contig)
            } else if let Some(j) = donor[k] {
                (s, 0..0, Access::Donor(j))
            } else if l.numel() <= 1 || l.strides().iter().all(|&st| st == 0) {
                (s, 0..s.len(), Access::Splat(l.offset()))
            } else if let Some(r) = l.contiguous_range() {
                (s, r, Access::Contig)
            } else {
                let (dims, strides) = Layout::coalesce(&[l]);
                let walk = Walk {
                    dims,
                    strides: strides.into_iter().next().unwrap_or_default(),
                    offset: l.offset() as isize,
                };
                (s, 0..s.len(), Access::Gather(walk))
            };
            data.push(match buf.dtype() {
                DType::Bool => Data::Bool(&buf.typed::<bool>(OP)?[range]),
                _ => Data::Real(&buf.typed::<T>(OP)?[range]),
            });
            access.push(how);
        }
        let steps = kernel.steps();
        let m = steps.len();
        let mut plan = Plan {
            kernel,
            data,
            access,
            place: vec![Place::Splat; m],
            splat_real: vec![T::ZERO; m],
            splat_bool: vec![false; m],
            work: Vec::new(),
            slots: (0, 0),
            block: (BLOCK_BYTES / std::mem::size_of::<T>()).max(64),
        };
        let last = kernel.last_readers();
        let outputs = kernel.outputs();
        // (step, result) for each input step reading a donated buffer.
        let donor_steps: Vec<(usize, usize)> = steps
            .iter()
            .enumerate()
            .filter_map(|(i, st)| match st.op {
                FusedOp::Input(k) => donor[k].map(|j| (i, j)),
                _ => None,
            })
            .collect();
        let (mut free_real, mut free_bool) = (Vec::new(), Vec::new());
        for (i, step) in steps.iter().enumerate() {
            let real = step.dtype != DType::Bool;
            let place = match step.op {
                FusedOp::Input(k) => match &plan.access[k] {
                    Access::Contig => Place::Contig(k),
                    Access::Splat(o) => {
                        match &plan.data[k] {
                            Data::Real(x) => plan.splat_real[i] = x[*o],
                            Data::Bool(x) => plan.splat_bool[i] = x[*o],
                        }
                        Place::Splat
                    }
                    Access::Gather(_) | Access::Donor(_) => Place::Slot(usize::MAX),
                },
                FusedOp::Constant(c) => {
                    plan.splat_real[i] = T::from_scalar(c);
                    plan.splat_bool[i] = bool::from_scalar(c);
                    Place::Splat
                }
                op if op.operands().all(|a| plan.place[a] == Place::Splat) => {
                    plan.fold(i)?;
                    Place::Splat
                }
                // A result nothing else reads goes straight into its output, once the input that
                // was donated to that output (if any) has been read into a slot.
                _ if last[i].is_none()
                    && let Some(j) = outputs.iter().position(|&o| o == i)
                    && donor_steps.iter().all(|&(step, to)| to != j || step < i) =>
                {
                    Place::Out(j)
                }
                _ => Place::Slot(usize::MAX),
            };
            plan.place[i] = match place {
                Place::Slot(_) => {
                    let (free, count) = if real {
                        (&mut free_real, &mut plan.slots.0)
                    } else {
                        (&mut free_bool, &mut plan.slots.1)
                    };
                    Place::Slot(free.pop().unwrap_or_else(|| {
                        *count += 1;
                        *count - 1
                    }))
                }
                other => other,
            };
            if matches!(plan.place[i], Place::Slot(_) | Place::Out(_)) {
                plan.work.push(i);
            }
            // Slots of steps read for the last time here (or never read) are free for later steps,
            // except results', which are copied to their outputs at the end of the block.
            let dead = (last[i].is_none()).then_some(i);
            for a in step
                .op
                .operands()
                .filter(|&a| last[a] == Some(i))
                .chain(dead)
                .filter(|a| !outputs.contains(a))
            {
                if let Place::Slot(s) = plan.place[a] {
                    let free = if steps[a].dtype != DType::Bool {
                        &mut free_real
                    } else {
                        &mut free_bool
                    };
                    if !free.contains(&s) {
                        free.push(s);
                    }
                }
            }
        }
        Ok(plan)
    }

    /// Evaluates step `i`, whose operands are all one value, once.
    fn fold(&mut self, i: usize) -> Result<()> {
        let step = self.kernel.steps()[i];
        let get = |a: usize| self.splat(a);
        if step.dtype == DType::Bool {
            let mut r = [false];
            eval(step.op, &get, Dst::Bool(as_uninit(&mut r)))?;
            self.splat_bool[i] = r[0];
        } else {
            let mut r = [T::ZERO];
            eval(step.op, &get, Dst::Real(as_uninit(&mut r)))?;
            self.splat_real[i] = r[0];
        }
        Ok(())
    }

    fn splat(&self, a: usize) -> AnyVal<'_, T> {
        if self.kernel.steps()[a].dtype == DType::Bool {
            AnyVal::Bool(Val::Splat(self.splat_bool[a]))
        } else {
            AnyVal::Real(Val::Splat(self.splat_real[a]))
        }
    }

    /// Step `a`'s values over the block `start..start + len`.
    fn val<'b>(&'b self, s: &'b Scratch<T>, a: usize, start: usize, len: usize) -> AnyVal<'b, T> {
        let real = self.kernel.steps()[a].dtype != DType::Bool;
        match self.place[a] {
            Place::Contig(k) => match &self.data[k] {
                Data::Real(x) => AnyVal::Real(Val::Slice(&x[start..start + len])),
                Data::Bool(x) => AnyVal::Bool(Val::Slice(&x[start..start + len])),
            },
            Place::Slot(slot) if real => AnyVal::Real(Val::Slice(&s.real[slot][..len])),
            Place::Slot(slot) => AnyVal::Bool(Val::Slice(&s.boolean[slot][..len])),
            Place::Splat | Place::Out(_) => self.splat(a),
        }
    }

    /// Fills the outputs (all of them, or one task's chunk of each per thread).
    fn drive(&self, outs: Vec<Dst<'_, T>>) -> Result<()> {
        let n = outs.first().map_or(0, Dst::len);
        if !crate::splits(n, PARALLEL_THRESHOLD) {
            return self.run_chunk(0, outs);
        }
        let mut tasks: Vec<Vec<Dst<'_, T>>> = (0..n.div_ceil(CHUNK))
            .map(|_| Vec::with_capacity(outs.len()))
            .collect();
        for out in outs {
            match out {
                Dst::Real(o) => {
                    for (task, c) in tasks.iter_mut().zip(o.chunks_mut(CHUNK)) {
                        task.push(Dst::Real(c));
                    }
                }
                Dst::Bool(o) => {
                    for (task, c) in tasks.iter_mut().zip(o.chunks_mut(CHUNK)) {
                        task.push(Dst::Bool(c));
                    }
                }
            }
        }
        tasks
            .into_par_iter()
            .enumerate()
            .try_for_each(|(c, outs)| self.run_chunk(c * CHUNK, outs))
    }

    /// Computes elements `start..start + len` of every output (`outs` holds those elements) block by
    /// block.
    fn run_chunk(&self, start: usize, mut outs: Vec<Dst<'_, T>>) -> Result<()> {
        let mut s = Scratch {
            real: (0..self.slots.0)
                .map(|i| vec![T::ZERO; self.block + 24 + 40 * i])
                .collect(),
            boolean: (0..self.slots.1)
                .map(|i| vec![false; self.block + 96 + 160 * i])
                .collect(),
        };
        let total = outs.first().map_or(0, Dst::len);
        let steps = self.kernel.steps();
        let mut off = 0;
        while off < total {
            let len = (total - off).min(self.block);
            let g = start + off;
            for &i in &self.work {
                let step = steps[i];
                let real = step.dtype != DType::Bool;
                match (self.place[i], step.op) {
                    // Gathered inputs, and donated ones (read from their output before it is written).
                    (Place::Slot(slot), FusedOp::Input(k)) => {
                        match (&self.access[k], &self.data[k]) {
                            (Access::Gather(w), Data::Real(x)) => {
                                gather(x, w, g, &mut s.real[slot][..len])
                            }
                            (Access::Gather(w), Data::Bool(x)) => {
                                gather(x, w, g, &mut s.boolean[slot][..len])
                            }
                            (Access::Donor(j), _) => match &outs[*j] {
                                Dst::Real(o) => load(&o[off..off + len], &mut s.real[slot][..len]),
                                Dst::Bool(o) => {
                                    load(&o[off..off + len], &mut s.boolean[slot][..len])
                                }
                            },
                            _ => return Err(mismatch()),
                        }
                    }
                    (Place::Slot(slot), op) => {
                        if real {
                            let mut buf = std::mem::take(&mut s.real[slot]);
                            let get = |a: usize| self.val(&s, a, g, len);
                            let r = eval(op, &get, Dst::Real(as_uninit(&mut buf[..len])));
                            s.real[slot] = buf;
                            r?;
                        } else {
                            let mut buf = std::mem::take(&mut s.boolean[slot]);
                            let get = |a: usize| self.val(&s, a, g, len);
                            let r = eval(op, &get, Dst::Bool(as_uninit(&mut buf[..len])));
                            s.boolean[slot] = buf;
                            r?;
                        }
                    }
                    (Place::Out(j), op) => {
                        let block = outs[j].block(off, len);
                        eval(op, &|a: usize| self.val(&s, a, g, len), block)?
                    }
                    _ => return Err(mismatch()),
                }
            }
            // Results kept in slots (or one value) are copied to their outputs.
            for (j, &o) in self.kernel.outputs().iter().enumerate() {
                if self.place[o] == Place::Out(j) {
                    continue;
                }
                match (self.val(&s, o, g, len), outs[j].block(off, len)) {
                    (AnyVal::Real(v), Dst::Real(d)) => map_val(v, d, &|x: T| x),
                    (AnyVal::Bool(v), Dst::Bool(d)) => map_val(v, d, &|x: bool| x),
                    _ => return Err(mismatch()),
                }
            }
            off += len;
        }
        Ok(())
    }
}
