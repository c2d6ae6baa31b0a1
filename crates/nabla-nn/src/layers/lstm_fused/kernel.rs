//! The host kernels of the fused LSTM layer: the recurrence forwards and its vector-Jacobian
//! product backwards, each step one faer product (through the CPU backend's
//! [`nabla_cpu::host_gemm`]) and one row-parallel pass of the cell.

use super::{Dims, LstmOp};
use faer::traits::ComplexField;
use faer::{MatMut, MatRef};
use nabla_core::simd_math::SimdFloat;
use nabla_core::{Element, Error, HostAllocator, HostData, Result};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Batch rows per parallel task: rows of a few hundred units are a few microseconds of work each.
const ROWS_PER_TASK: usize = 8;

/// The float types the kernels run in.
pub(super) trait LayerFloat: SimdFloat + Element + ComplexField {}
impl<T: SimdFloat + Element + ComplexField> LayerFloat for T {}

/// Runs `op` on inputs already validated by [`LstmOp::dims`].
pub(super) fn run<T: LayerFloat>(
    op: LstmOp,
    data: &[&HostData],
    dims: Dims,
    alloc: &dyn HostAllocator,
) -> Result<Vec<T>> {
    let slices: Vec<&[T]> = data
        .iter()
        .map(|d| T::slice_of(d).ok_or_else(|| Error::dtype(op.op_name(), d.dtype())))
        .collect::<Result<_>>()?;
    let steps = Steps {
        len: dims.len,
        reverse: op.reverse(),
    };
    match (op, slices.as_slice()) {
        (LstmOp::Layer { .. }, &[xw, w_hh, h0, c0, bias]) => {
            forward(&Inputs { w_hh, h0, c0 }, xw, bias, dims, steps, alloc)
        }
        (LstmOp::LayerVjp { .. }, &[w_hh, h0, c0, states, cot]) => {
            backward(&Inputs { w_hh, h0, c0 }, states, cot, dims, steps, alloc)
        }
        _ => Err(Error::invalid(op.op_name(), "wrong number of inputs")),
    }
}

/// The inputs both kernels read: the recurrent weight `[4H, H]` and the initial states `[N, H]`.
struct Inputs<'a, T> {
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
        super::time_of_step(s, self.len, self.reverse)
    }
}

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

/// The forward recurrence: the output `[6, L, N, H]` (activations, then `h` and `c` per step).
fn forward<T: LayerFloat>(
    x: &Inputs<'_, T>,
    xw: &[T],
    bias: &[T],
    d: Dims,
    steps: Steps,
    alloc: &dyn HostAllocator,
) -> Result<Vec<T>> {
    let (n, h) = (d.n, d.h);
    let nh = n * h;
    let len = 6 * d.len * nh;
    let mut out: Vec<T> = alloc.vec(len);
    let spare = &mut out.spare_capacity_mut()[..len];
    let (acts, states) = spare.split_at_mut(4 * d.len * nh);
    let (hs, cs) = states.split_at_mut(d.len * nh);
    let mut gh = vec![T::ZERO; 4 * nh];
    // `W_hhᵀ` row-major: the products read it faster than the transposed view of `W_hh` (about 40
    // against 48 µs per step at H = 256, batch 32), which pays for the copy a few times over.
    let w_t = nabla_cpu::host_transpose(x.w_hh, 4 * h, h)?;
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
            nabla_cpu::host_gemm(
                "fused.lstm_layer",
                MatMut::from_row_major_slice_mut(&mut gh, n, 4 * h),
                false,
                MatRef::from_row_major_slice(h_prev, n, h),
                w_t,
            )?;
        }
        let gi = block(xw, t, 4 * nh);
        acts[t * 4 * nh..(t + 1) * 4 * nh]
            .par_chunks_mut(4 * h)
            .zip(h_out.par_chunks_mut(h).zip(c_out.par_chunks_mut(h)))
            .zip(gi.par_chunks(4 * h).zip(gh.par_chunks(4 * h)))
            .zip(c_prev.par_chunks(h))
            .with_min_len(ROWS_PER_TASK)
            .for_each(|(((a, (ho, co)), (gi, gh)), c)| cell_row([gi, gh, bias], c, a, ho, co));
    }
    // SAFETY: the steps above wrote every one of the `len` elements.
    unsafe { out.set_len(len) };
    Ok(out)
}

/// The vector-Jacobian product: `[dxw (L·N·4H), dh0 (N·H), dc0 (N·H), dw_hh (4H·H), db (4H)]`.
fn backward<T: LayerFloat>(
    x: &Inputs<'_, T>,
    states: &[T],
    cot: &[T],
    d: Dims,
    steps: Steps,
    alloc: &dyn HostAllocator,
) -> Result<Vec<T>> {
    let (n, h) = (d.n, d.h);
    let (nh, lnh) = (n * h, d.len * n * h);
    let (acts, hs, cs) = (
        &states[..4 * lnh],
        block(states, 4, lnh),
        block(states, 5, lnh),
    );
    let (cot_h, cot_c) = (block(cot, 4, lnh), block(cot, 5, lnh));
    let len = 4 * lnh + 2 * nh + 4 * h * h + 4 * h;
    let mut out: Vec<T> = alloc.vec(len);
    let spare = &mut out.spare_capacity_mut()[..len];
    let (dxw, rest) = spare.split_at_mut(4 * lnh);
    let (dstates, rest) = rest.split_at_mut(2 * nh);
    let (dw, db) = rest.split_at_mut(4 * h * h);
    // The cotangents reaching the state from the later steps (the cell adds the outside ones).
    let (mut dh_next, mut dc_next) = (vec![T::ZERO; nh], vec![T::ZERO; nh]);
    let w = MatRef::from_row_major_slice(x.w_hh, 4 * h, h);
    for v in dw.iter_mut().chain(db.iter_mut()) {
        v.write(T::ZERO);
    }
    // SAFETY: written just above.
    let (dw, db) = unsafe { (assume_init_mut(dw), assume_init_mut(db)) };
    // Steps whose shares of `dW_hh` and `db` are not yet added: the run steps `s..unadded_end`.
    let mut unadded_end = d.len;
    for s in (0..d.len).rev() {
        let t = steps.time(s);
        let c_prev = if s == 0 {
            x.c0
        } else {
            block(cs, steps.time(s - 1), nh)
        };
        let dg = &mut dxw[t * 4 * nh..(t + 1) * 4 * nh];
        dg.par_chunks_mut(4 * h)
            .zip(dc_next.par_chunks_mut(h))
            .enumerate()
            .with_min_len(ROWS_PER_TASK)
            .for_each(|(b, (dg, dc))| {
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
            });
        // SAFETY: the rows above wrote the whole block.
        let dg = unsafe { assume_init(dg) };
        if n > 0 {
            nabla_cpu::host_gemm(
                "fused.lstm_layer_vjp",
                MatMut::from_row_major_slice_mut(&mut dh_next, n, h),
                false,
                MatRef::from_row_major_slice(dg, n, 4 * h),
                w,
            )?;
        }
        if unadded_end - s == WEIGHT_CHUNK_STEPS || s == 0 {
            // The run steps s..unadded_end are the times `first..first + count`.
            let count = unadded_end - s;
            let first = if steps.reverse {
                d.len - unadded_end
            } else {
                s
            };
            let span = first * 4 * nh..(first + count) * 4 * nh;
            // SAFETY: the steps s..unadded_end wrote their blocks of `dxw`, which are `span`.
            let dg = unsafe { assume_init(&dxw[span]) };
            add_recurrent_weight_cotangent(x.h0, hs, dg, first..first + count, d, steps, dw)?;
            add_bias_cotangent(dg, h, db);
            unadded_end = s;
        }
    }
    for (o, v) in dstates.iter_mut().zip(dh_next.iter().chain(&dc_next)) {
        o.write(*v);
    }
    // SAFETY: every one of the `len` elements is written above.
    unsafe { out.set_len(len) };
    Ok(out)
}

/// Steps per share of the weight and bias cotangents: the backward pass adds the share of these
/// steps while their gate cotangents are still in cache, where one product over the whole sequence
/// after the loop would read them all back from memory (about 1 ms faster per training step of the
/// 2-layer benchmark LSTM than 4 or 16 steps, or the whole sequence at once).
const WEIGHT_CHUNK_STEPS: usize = 8;

/// `dW_hh += Σ_t dG_tᵀ h_prev(t)` over the times `times` (`dg` their gate cotangents, `[4H, H]`), as
/// at most two products: the first run step's, against `h0`, and the others', whose previous states
/// are the other steps' outputs shifted by one step.
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
    if n == 0 {
        return Ok(());
    }
    let mut product = |dg: &[T], hp: &[T], rows: usize| {
        nabla_cpu::host_gemm(
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

nabla_core::simd_kernel! {
    /// `acc += x`, elementwise (`x` at least as long as `acc`).
    fn add_assign<T: SimdFloat>(acc: &mut [T], x: &[T]) {
        let x = &x[..acc.len()];
        for (a, v) in acc.iter_mut().zip(x) {
            *a = *a + *v;
        }
    }
}

nabla_core::simd_kernel! {
    /// One batch row of the cell: the gates are the sum of the three `parts` (the input part, the
    /// recurrent part and the bias, each `[4H]`); writes the activations `[σ(i), σ(f), tanh(g),
    /// σ(o)]` into `acts`, then the new states.
    fn cell_row<T: SimdFloat>(
        parts: [&[T]; 3],
        c: &[T],
        acts: &mut [MaybeUninit<T>],
        h_out: &mut [MaybeUninit<T>],
        c_out: &mut [MaybeUninit<T>],
    ) {
        let h = c.len();
        let gate = |k: usize| parts.map(|p| &p[k * h..(k + 1) * h]);
        let ([ii, ih, ib], [fi, fh, fb]) = (gate(0), gate(1));
        let ([ci, ch, cb], [oi, oh, ob]) = (gate(2), gate(3));
        let (ai, rest) = acts.split_at_mut(h);
        let (af, rest) = rest.split_at_mut(h);
        let (ag, ao) = rest.split_at_mut(h);
        // Every slice exactly `h` long: no bounds check is left in the loop, which then vectorises
        // with no scalar remainder.
        let (ao, h_out, c_out) = (&mut ao[..h], &mut h_out[..h], &mut c_out[..h]);
        for j in 0..h {
            // In the composite's order: the bias joins the input part first.
            let (i, f) = ((ii[j] + ib[j] + ih[j]).sigmoid(), (fi[j] + fb[j] + fh[j]).sigmoid());
            let (cand, o) = ((ci[j] + cb[j] + ch[j]).tanh(), (oi[j] + ob[j] + oh[j]).sigmoid());
            ai[j].write(i);
            af[j].write(f);
            ag[j].write(cand);
            ao[j].write(o);
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

nabla_core::simd_kernel! {
    /// One batch row of the vjp: `dg` is `[di, df, dg, do]`. `dc` holds the cotangent of the new
    /// `c` from the later step on entry, and that of the previous `c` on return.
    fn cell_vjp_row<T: SimdFloat>(x: &RowIn<'_, T>, dg: &mut [MaybeUninit<T>], dc: &mut [T]) {
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
            d_o[j].write(dh * tc * (o * (one - o)));
            di[j].write(dcj * cand * (i * (one - i)));
            df[j].write(dcj * c_prev[j] * (f * (one - f)));
            dgg[j].write(dcj * i * (one - cand * cand));
            dc[j] = dcj * f;
        }
    }
}
