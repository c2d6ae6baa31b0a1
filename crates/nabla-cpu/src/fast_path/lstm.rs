//! The host kernels of the fused LSTM layer: the recurrence forwards and its vector-Jacobian
//! product backwards, each step one faer product (through [`crate::host_gemm`]) and one
//! row-parallel pass of the cell. Forwards, the input projections
//! are one product before the steps; backwards, the products with the input's and the weights'
//! cotangents run every [`CHUNK_STEPS`] steps, over those steps, while the gate cotangents they read
//! are still in cache.

use crate::simd_math::SimdFloat;
use faer::traits::ComplexField;
use faer::{MatMut, MatRef};
use nabla_core::fast_path::{LstmDims as Dims, LstmOp, time_of_step};
use nabla_core::{Element, Error, FastPath, HostAllocator, HostData, HostView, Result};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Batch rows per parallel task: rows of a few hundred units are a few microseconds of work each.
const ROWS_PER_TASK: usize = 8;

/// The float types the kernels run in.
trait LayerFloat: SimdFloat + Element + ComplexField {}
impl<T: SimdFloat + Element + ComplexField> LayerFloat for T {}

/// Runs `op` on inputs already validated by [`LstmOp::dims`].
pub(super) fn run_op(
    op: LstmOp,
    dims: Dims,
    views: &[HostView<'_>],
    alloc: &dyn HostAllocator,
) -> Result<HostData> {
    let data: Vec<&HostData> = views.iter().map(|v| v.data).collect();
    by_float_dtype!(op, views, run(op, &data, dims, alloc))
}

/// [`run_op`] in `T`.
fn run<T: LayerFloat>(
    op: LstmOp,
    data: &[&HostData],
    dims: Dims,
    alloc: &dyn HostAllocator,
) -> Result<Vec<T>> {
    let slices: Vec<&[T]> = data
        .iter()
        .map(|d| T::slice_of(d).ok_or_else(|| Error::dtype(op.name(), d.dtype())))
        .collect::<Result<_>>()?;
    let steps = Steps {
        len: dims.len,
        reverse: op.reverse(),
    };
    let [x, w_ih, w_hh, h0, c0, rest @ ..] = slices.as_slice() else {
        return Err(Error::invalid(op.name(), "wrong number of inputs"));
    };
    let inputs = Inputs {
        x,
        w_ih,
        w_hh,
        h0,
        c0,
    };
    match (op, rest) {
        (LstmOp::Layer { activations, .. }, &[bias]) => {
            forward(&inputs, bias, dims, steps, activations, alloc)
        }
        (LstmOp::LayerVjp { input_grad, .. }, &[states, cot]) => {
            let output = Cotangent { states, cot };
            backward(&inputs, output, input_grad, dims, steps, alloc)
        }
        _ => Err(Error::invalid(op.name(), "wrong number of inputs")),
    }
}

/// The layer's output and its cotangent, both `[6, L, N, H]`.
struct Cotangent<'a, T> {
    states: &'a [T],
    cot: &'a [T],
}

/// The inputs both kernels read: the input `[L, N, I]`, the weights `[4H, I]` and `[4H, H]`, and
/// the initial states `[N, H]`.
struct Inputs<'a, T> {
    x: &'a [T],
    w_ih: &'a [T],
    w_hh: &'a [T],
    h0: &'a [T],
    c0: &'a [T],
}

/// The order of the steps: `time(s)` is the time index of the `s`-th step run.
#[derive(Clone, Copy)]
struct Steps {
    len: usize,
    reverse: bool,
}

impl Steps {
    fn time(self, s: usize) -> usize {
        time_of_step(s, self.len, self.reverse)
    }

    /// The times of the chunk whose last run step is `end - 1`: run steps `end - count..end`, which
    /// are the times `first..first + count` (`count` at most [`CHUNK_STEPS`]) in one order or the
    /// other. Chunks are cut from the end of the run, backwards, which the reverse pass walks.
    fn chunk_ending(self, end: usize) -> std::ops::Range<usize> {
        let count = CHUNK_STEPS.min(end);
        let first = if self.reverse {
            self.len - end
        } else {
            end - count
        };
        first..first + count
    }
}

/// Steps per chunk of the backward products with the input's and the weights' cotangents: each runs
/// while the chunk's gate cotangents are still in cache, where one product over the whole sequence
/// would read them back from memory (the backward pass of the 2-layer benchmark LSTM is about 1 ms
/// faster per training step with chunks of 8 steps than with 4, 16 or the whole sequence).
const CHUNK_STEPS: usize = 8;

/// Views initialised elements as values.
///
/// # Safety
/// Every element of `s` must have been written.
unsafe fn assume_init<T>(s: &[MaybeUninit<T>]) -> &[T] {
    // SAFETY: `MaybeUninit<T>` has `T`'s layout, and the caller guarantees the elements are written.
    unsafe { &*(s as *const [MaybeUninit<T>] as *const [T]) }
}

/// Block `index` of `len` elements of `buf`.
fn block<T>(buf: &[T], index: usize, len: usize) -> &[T] {
    &buf[index * len..(index + 1) * len]
}

/// Views initialised elements as values, mutably.
///
/// # Safety
/// Every element of `s` must have been written.
unsafe fn assume_init_mut<T>(s: &mut [MaybeUninit<T>]) -> &mut [T] {
    // SAFETY: `MaybeUninit<T>` has `T`'s layout, and the caller guarantees the elements are written.
    unsafe { &mut *(s as *mut [MaybeUninit<T>] as *mut [T]) }
}

/// Block `write` of `buf` to write, and block `read`, another one, to read.
///
/// # Safety
/// Every element of block `read` must have been written.
unsafe fn read_and_write<T>(
    buf: &mut [MaybeUninit<T>],
    read: usize,
    write: usize,
    len: usize,
) -> (&[T], &mut [MaybeUninit<T>]) {
    debug_assert_ne!(read, write, "a step reads the state of another step");
    let split = read.max(write) * len;
    let (low, high) = buf.split_at_mut(split);
    let (r, w) = if read < write {
        (&low[read * len..(read + 1) * len], &mut high[..len])
    } else {
        (
            &high[..len] as &[_],
            &mut low[write * len..(write + 1) * len],
        )
    };
    // SAFETY: the caller guarantees that block `read` is written.
    (unsafe { assume_init(r) }, w)
}

/// The forward recurrence: the output `[6, L, N, H]` (activations, then `h` and `c` per step), or
/// `[2, L, N, H]` without `activations` (the activations then go to a scratch buffer).
fn forward<T: LayerFloat>(
    x: &Inputs<'_, T>,
    bias: &[T],
    d: Dims,
    steps: Steps,
    activations: bool,
    alloc: &dyn HostAllocator,
) -> Result<Vec<T>> {
    let (n, h) = (d.n, d.h);
    let (nh, lnh) = (n * h, d.len * n * h);
    let len = if activations { 6 * lnh } else { 2 * lnh };
    let mut out: Vec<T> = alloc.vec(len);
    let mut scratch: Vec<T> = Vec::new();
    let spare = &mut out.spare_capacity_mut()[..len];
    let (acts, states) = if activations {
        spare.split_at_mut(4 * lnh)
    } else {
        scratch.reserve_exact(4 * lnh);
        (&mut scratch.spare_capacity_mut()[..4 * lnh], spare)
    };
    let (hs, cs) = states.split_at_mut(lnh);
    let mut gh = vec![T::ZERO; 4 * nh];
    // The input projections `x W_ihᵀ` of every step, as one product, into the activations' blocks:
    // each step's cell reads its block and overwrites it with the activations.
    let rows = d.len * n;
    crate::host_gemm_uninit(
        "fused.lstm_layer",
        acts,
        MatRef::from_row_major_slice(x.x, rows, d.input),
        MatRef::from_row_major_slice(x.w_ih, 4 * h, d.input).transpose(),
    )?;
    // `W_hhᵀ` row-major: the products read it faster than the transposed view of `W_hh` (about 40
    // against 48 µs per step at H = 256, batch 32), which pays for the copy a few times over.
    let w_t = crate::host_transpose(x.w_hh, 4 * h, h)?;
    let w_t = MatRef::from_row_major_slice(&w_t, h, 4 * h);
    for s in 0..d.len {
        let t = steps.time(s);
        let (h_out, c_out, h_prev, c_prev);
        if s == 0 {
            (h_prev, c_prev) = (x.h0, x.c0);
            h_out = &mut hs[t * nh..(t + 1) * nh];
            c_out = &mut cs[t * nh..(t + 1) * nh];
        } else {
            let p = steps.time(s - 1);
            // SAFETY: the previous step, `p`, wrote its blocks of `hs` and `cs` whole.
            (h_prev, h_out) = unsafe { read_and_write(hs, p, t, nh) };
            // SAFETY: as above.
            (c_prev, c_out) = unsafe { read_and_write(cs, p, t, nh) };
        }
        if n > 0 {
            crate::host_gemm(
                "fused.lstm_layer",
                MatMut::from_row_major_slice_mut(&mut gh, n, 4 * h),
                false,
                MatRef::from_row_major_slice(h_prev, n, h),
                w_t,
            )?;
        }
        // SAFETY: the projection above wrote every block.
        let gates = unsafe { assume_init_mut(&mut acts[t * 4 * nh..(t + 1) * 4 * nh]) };
        type Row<'a, T> = (
            (
                &'a mut [T],
                (&'a mut [MaybeUninit<T>], &'a mut [MaybeUninit<T>]),
            ),
            (&'a [T], &'a [T]),
        );
        let row = |((g, (ho, co)), (gh, c)): Row<'_, T>| cell_row(g, [gh, bias], c, ho, co);
        if crate::pool_is_parallel() {
            gates
                .par_chunks_mut(4 * h)
                .zip(h_out.par_chunks_mut(h).zip(c_out.par_chunks_mut(h)))
                .zip(gh.par_chunks(4 * h).zip(c_prev.par_chunks(h)))
                .with_min_len(ROWS_PER_TASK)
                .for_each(row);
        } else {
            gates
                .chunks_mut(4 * h)
                .zip(h_out.chunks_mut(h).zip(c_out.chunks_mut(h)))
                .zip(gh.chunks(4 * h).zip(c_prev.chunks(h)))
                .for_each(row);
        }
    }
    // SAFETY: the steps above wrote every one of the `len` elements.
    unsafe { out.set_len(len) };
    Ok(out)
}

/// The vector-Jacobian product: `[dx (L·N·I), dh0 (N·H), dc0 (N·H), dw_ih (4H·I), dw_hh (4H·H),
/// db (4H)]`, without `dx` unless `input_grad`.
fn backward<T: LayerFloat>(
    x: &Inputs<'_, T>,
    output: Cotangent<'_, T>,
    input_grad: bool,
    d: Dims,
    steps: Steps,
    alloc: &dyn HostAllocator,
) -> Result<Vec<T>> {
    let (n, h) = (d.n, d.h);
    let (nh, lnh) = (n * h, d.len * n * h);
    let (states, cot) = (output.states, output.cot);
    let (acts, hs, cs) = (
        &states[..4 * lnh],
        block(states, 4, lnh),
        block(states, 5, lnh),
    );
    let (cot_h, cot_c) = (block(cot, 4, lnh), block(cot, 5, lnh));
    let lengths = d.vjp_lengths(input_grad);
    let [dx_len, dh0_len, dc0_len, dw_ih_len, dw_hh_len, _] = lengths;
    let len = lengths.iter().sum();
    let mut out: Vec<T> = alloc.vec(len);
    let spare = &mut out.spare_capacity_mut()[..len];
    let (dx, rest) = spare.split_at_mut(dx_len);
    let (dstates, weights) = rest.split_at_mut(dh0_len + dc0_len);
    for v in weights.iter_mut() {
        v.write(T::ZERO);
    }
    // SAFETY: written just above.
    let weights = unsafe { assume_init_mut(weights) };
    let (dw_ih, rest) = weights.split_at_mut(dw_ih_len);
    let (dw_hh, db) = rest.split_at_mut(dw_hh_len);
    // The cotangents reaching the state from the later steps (the cell adds the outside ones).
    let (mut dh_next, mut dc_next) = (vec![T::ZERO; nh], vec![T::ZERO; nh]);
    // The gate cotangents of one chunk's steps, in time order.
    let mut dg_chunk = vec![T::ZERO; CHUNK_STEPS.min(d.len) * 4 * nh];
    let w = MatRef::from_row_major_slice(x.w_hh, 4 * h, h);
    let mut chunk = steps.chunk_ending(d.len);
    let mut chunk_end = d.len;
    for s in (0..d.len).rev() {
        let t = steps.time(s);
        let c_prev = if s == 0 {
            x.c0
        } else {
            block(cs, steps.time(s - 1), nh)
        };
        let at = t - chunk.start;
        let dg = &mut dg_chunk[at * 4 * nh..(at + 1) * 4 * nh];
        let row_vjp = |(b, (dg, dc)): (usize, (&mut [T], &mut [T]))| {
            let r = b * h..(b + 1) * h;
            let row = RowIn {
                acts: &block(acts, t, 4 * nh)[b * 4 * h..(b + 1) * 4 * h],
                c: &c_prev[r.clone()],
                c_new: &block(cs, t, nh)[r.clone()],
                dh_out: &block(cot_h, t, nh)[r.clone()],
                dh_next: &dh_next[r.clone()],
                dc_out: &block(cot_c, t, nh)[r],
            };
            cell_vjp_row(&row, dg, dc)
        };
        if crate::pool_is_parallel() {
            dg.par_chunks_mut(4 * h)
                .zip(dc_next.par_chunks_mut(h))
                .enumerate()
                .with_min_len(ROWS_PER_TASK)
                .for_each(row_vjp);
        } else {
            dg.chunks_mut(4 * h)
                .zip(dc_next.chunks_mut(h))
                .enumerate()
                .for_each(row_vjp);
        }
        if n > 0 {
            crate::host_gemm(
                "fused.lstm_layer_vjp",
                MatMut::from_row_major_slice_mut(&mut dh_next, n, h),
                false,
                MatRef::from_row_major_slice(dg, n, 4 * h),
                w,
            )?;
        }
        if chunk_end - s == chunk.len() {
            let dg = &dg_chunk[..chunk.len() * 4 * nh];
            let weights = WeightCotangents { dw_ih, dw_hh, db };
            add_chunk_cotangents(x, hs, dg, chunk.clone(), d, steps, dx, weights)?;
            chunk_end = s;
            chunk = steps.chunk_ending(s);
        }
    }
    for (o, v) in dstates.iter_mut().zip(dh_next.iter().chain(&dc_next)) {
        o.write(*v);
    }
    // SAFETY: every one of the `len` elements is written above.
    unsafe { out.set_len(len) };
    Ok(out)
}

/// The cotangents of the weights and the bias, accumulated chunk by chunk.
struct WeightCotangents<'a, T> {
    dw_ih: &'a mut [T],
    dw_hh: &'a mut [T],
    db: &'a mut [T],
}

/// For the times `times` with gate cotangents `dg` (`[count, N, 4H]`): writes the input's cotangent
/// `dx = dG W_ih` for those times (unless `dx`, the whole input's, is empty: not asked for), and
/// adds their shares of the weights' and bias's cotangents.
#[allow(clippy::too_many_arguments)]
fn add_chunk_cotangents<T: LayerFloat>(
    x: &Inputs<'_, T>,
    hs: &[T],
    dg: &[T],
    times: std::ops::Range<usize>,
    d: Dims,
    steps: Steps,
    dx: &mut [MaybeUninit<T>],
    w: WeightCotangents<'_, T>,
) -> Result<()> {
    let (n, h, input) = (d.n, d.h, d.input);
    let rows = times.start * n..times.end * n;
    if rows.is_empty() {
        return Ok(());
    }
    let g = MatRef::from_row_major_slice(dg, rows.len(), 4 * h);
    const OP: &str = "fused.lstm_layer_vjp";
    if !dx.is_empty() {
        crate::host_gemm_uninit(
            OP,
            &mut dx[rows.start * input..rows.end * input],
            g,
            MatRef::from_row_major_slice(x.w_ih, 4 * h, input),
        )?;
    }
    crate::host_gemm(
        OP,
        MatMut::from_row_major_slice_mut(w.dw_ih, 4 * h, input),
        true,
        g.transpose(),
        MatRef::from_row_major_slice(
            &x.x[rows.start * input..rows.end * input],
            rows.len(),
            input,
        ),
    )?;
    add_recurrent_weight_cotangent(x.h0, hs, dg, times, d, steps, w.dw_hh)?;
    add_bias_cotangent(dg, h, w.db);
    Ok(())
}

/// `dW_hh += Σ_t dG_tᵀ h_prev(t)` (`[4H, H]`) over the times `times`, whose gate cotangents are
/// `dg`, as at most two products: the first run step's, against `h0`, and the others', whose
/// previous states are the other steps' outputs shifted by one step.
fn add_recurrent_weight_cotangent<T: LayerFloat>(
    h0: &[T],
    hs: &[T],
    dg: &[T],
    times: std::ops::Range<usize>,
    d: Dims,
    steps: Steps,
    dw: &mut [T],
) -> Result<()> {
    let (n, h) = (d.n, d.h);
    let nh = n * h;
    let mut product = |dg: &[T], hp: &[T], rows: usize| {
        crate::host_gemm(
            "fused.lstm_layer_vjp",
            MatMut::from_row_major_slice_mut(dw, 4 * h, h),
            true,
            MatRef::from_row_major_slice(dg, rows, 4 * h).transpose(),
            MatRef::from_row_major_slice(hp, rows, h),
        )
    };
    let gates = |t: usize| block(dg, t - times.start, 4 * nh);
    let start = steps.time(0);
    if times.contains(&start) {
        product(gates(start), h0, n)?;
    }
    // The other times read the output of the step before: `h_(t-1)` forwards, `h_(t+1)` in reverse.
    let rest = if steps.reverse {
        times.start..times.end.min(d.len - 1)
    } else {
        times.start.max(1)..times.end
    };
    if !rest.is_empty() {
        let g = &dg[(rest.start - times.start) * 4 * nh..(rest.end - times.start) * 4 * nh];
        let prev = if steps.reverse {
            rest.start + 1
        } else {
            rest.start - 1
        };
        product(g, &hs[prev * nh..(prev + rest.len()) * nh], rest.len() * n)?;
    }
    Ok(())
}

/// Columns of `db` per parallel task: each task reads its columns of every row of `dG`.
const BIAS_COLUMNS_PER_TASK: usize = 128;

/// `db += Σ dG` over the rows of `dg` (`[rows, 4H]`), column blocks in parallel.
fn add_bias_cotangent<T: LayerFloat>(dg: &[T], h: usize, db: &mut [T]) {
    db.par_chunks_mut(BIAS_COLUMNS_PER_TASK)
        .enumerate()
        .for_each(|(b, sum)| {
            let first = b * BIAS_COLUMNS_PER_TASK;
            for row in dg.chunks_exact(4 * h) {
                add_assign(sum, &row[first..first + sum.len()]);
            }
        });
}

crate::simd_kernel! {
    /// `acc += x`, elementwise (`x` at least as long as `acc`).
    fn add_assign<T: SimdFloat>(acc: &mut [T], x: &[T]) {
        let x = &x[..acc.len()];
        for (a, v) in acc.iter_mut().zip(x) {
            *a = *a + *v;
        }
    }
}

crate::simd_kernel! {
    /// One batch row of the cell. `gates` holds the input part of the gate pre-activations on
    /// entry, to which the recurrent part and the bias (`more`, each `[4H]`) are added, and the
    /// activations `[σ(i), σ(f), tanh(g), σ(o)]` on return; then the new states.
    fn cell_row<T: SimdFloat>(
        gates: &mut [T],
        more: [&[T]; 2],
        c: &[T],
        h_out: &mut [MaybeUninit<T>],
        c_out: &mut [MaybeUninit<T>],
    ) {
        let h = c.len();
        let gate = |k: usize| more.map(|p| &p[k * h..(k + 1) * h]);
        let ([ih, ib], [fh, fb]) = (gate(0), gate(1));
        let ([ch, cb], [oh, ob]) = (gate(2), gate(3));
        let (gi, rest) = gates.split_at_mut(h);
        let (gf, rest) = rest.split_at_mut(h);
        let (gg, go) = rest.split_at_mut(h);
        // Every slice exactly `h` long: no bounds check is left in the loop, which then vectorises
        // with no scalar remainder.
        let (go, h_out, c_out) = (&mut go[..h], &mut h_out[..h], &mut c_out[..h]);
        for j in 0..h {
            // In the composite's order: the bias joins the input part first.
            let (i, f) = ((gi[j] + ib[j] + ih[j]).sigmoid(), (gf[j] + fb[j] + fh[j]).sigmoid());
            let (cand, o) = ((gg[j] + cb[j] + ch[j]).tanh(), (go[j] + ob[j] + oh[j]).sigmoid());
            (gi[j], gf[j], gg[j], go[j]) = (i, f, cand, o);
            let c_new = f * c[j] + i * cand;
            c_out[j].write(c_new);
            h_out[j].write(o * c_new.tanh());
        }
    }
}

/// The inputs of one batch row of the vjp.
struct RowIn<'a, T> {
    /// The saved activations, `[σ(i), σ(f), tanh(g), σ(o)]`.
    acts: &'a [T],
    c: &'a [T],
    c_new: &'a [T],
    /// The outside cotangent of the row's `h`.
    dh_out: &'a [T],
    /// The cotangent of the row's `h` from the later steps.
    dh_next: &'a [T],
    /// The outside cotangent of the row's `c`.
    dc_out: &'a [T],
}

crate::simd_kernel! {
    /// One batch row of the vjp: `dg` is `[di, df, dg, do]`. `dc` holds the cotangent of the new
    /// `c` from the later step on entry, and that of the previous `c` on return.
    fn cell_vjp_row<T: SimdFloat>(x: &RowIn<'_, T>, dg: &mut [T], dc: &mut [T]) {
        let h = x.c.len();
        let (ai, rest) = x.acts.split_at(h);
        let (af, rest) = rest.split_at(h);
        let (ag, ao) = rest.split_at(h);
        let (di, rest) = dg.split_at_mut(h);
        let (df, rest) = rest.split_at_mut(h);
        let (dgg, d_o) = rest.split_at_mut(h);
        // Every slice exactly `h` long, as in `cell_row`.
        let (d_o, dc) = (&mut d_o[..h], &mut dc[..h]);
        let (ai, af, ag, ao) = (&ai[..h], &af[..h], &ag[..h], &ao[..h]);
        let (c_new, dh_out, dh_next, dc_out) =
            (&x.c_new[..h], &x.dh_out[..h], &x.dh_next[..h], &x.dc_out[..h]);
        let c_prev = &x.c[..h];
        let one = T::ONE;
        for j in 0..h {
            let (i, f, cand, o) = (ai[j], af[j], ag[j], ao[j]);
            let tc = c_new[j].tanh();
            let dh = dh_out[j] + dh_next[j];
            let dcj = dc[j] + dc_out[j] + dh * o * (one - tc * tc);
            d_o[j] = dh * tc * (o * (one - o));
            di[j] = dcj * cand * (i * (one - i));
            df[j] = dcj * c_prev[j] * (f * (one - f));
            dgg[j] = dcj * i * (one - cand * cand);
            dc[j] = dcj * f;
        }
    }
}
