//! Host kernels on rustfft (complex transforms) and realfft (real transforms).
//!
//! Every transform runs along one axis at a time. Lines along the last axis are contiguous and go to
//! the FFT in place; lines along any other axis are gathered into contiguous rows first and scattered
//! back afterwards. Rows are split across the thread pool in tasks of at least 32k elements. Plans are
//! made once per length and direction and kept for the life of the process.

use crate::ops::{Fft, Irfft, Rfft, absolute_axes};
use nabla_core::num_complex::Complex;
use nabla_core::{Element, Error, HostAllocator, HostData, HostView, Result};
use rayon::prelude::*;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use rustfft::{FftNum, FftPlanner};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

/// The plans of one float type, made on first use of each length.
pub(crate) struct Planners<T: FftNum> {
    complex: FftPlanner<T>,
    real: RealFftPlanner<T>,
}

impl<T: FftNum> Planners<T> {
    fn new() -> Self {
        Planners {
            complex: FftPlanner::new(),
            real: RealFftPlanner::new(),
        }
    }
}

/// `f32` or `f64`, with its plan cache.
pub(crate) trait FftFloat: FftNum + Element {
    /// The process-wide plans of this type.
    fn planners() -> &'static Mutex<Planners<Self>>;
    /// `x` rounded to this type.
    fn of(x: f64) -> Self;
}

static PLANNERS_F32: LazyLock<Mutex<Planners<f32>>> = LazyLock::new(|| Mutex::new(Planners::new()));
static PLANNERS_F64: LazyLock<Mutex<Planners<f64>>> = LazyLock::new(|| Mutex::new(Planners::new()));

impl FftFloat for f32 {
    fn planners() -> &'static Mutex<Planners<f32>> {
        &PLANNERS_F32
    }

    fn of(x: f64) -> f32 {
        x as f32
    }
}

impl FftFloat for f64 {
    fn planners() -> &'static Mutex<Planners<f64>> {
        &PLANNERS_F64
    }

    fn of(x: f64) -> f64 {
        x
    }
}

/// Runs `f` on the plan cache of `T` (a panic elsewhere cannot leave a plan half made, so a
/// poisoned lock is still usable).
fn with_planners<T: FftFloat, R>(f: impl FnOnce(&mut Planners<T>) -> R) -> R {
    let mut guard = T::planners().lock().unwrap_or_else(PoisonError::into_inner);
    f(&mut guard)
}

/// The lines of a row-major array along one axis: `outer` blocks of `len` positions of `inner`
/// contiguous elements.
#[derive(Clone, Copy, Debug)]
struct Lines {
    outer: usize,
    inner: usize,
    n_in: usize,
    n_out: usize,
}

impl Lines {
    /// The lines along `axis` of `shape`, mapped to lines of `n_out` elements.
    fn along(shape: &[usize], axis: usize, n_out: usize) -> Lines {
        Lines {
            outer: shape[..axis].iter().product(),
            inner: shape[axis + 1..].iter().product(),
            n_in: shape[axis],
            n_out,
        }
    }
}

/// How many rows of `row_len` elements one task takes: at least 32k elements, at most about four
/// tasks per thread.
fn rows_per_task(rows: usize, row_len: usize) -> usize {
    const MIN_ELEMENTS: usize = 1 << 15;
    let threads = rayon::current_num_threads().max(1);
    let by_size = MIN_ELEMENTS.div_ceil(row_len.max(1));
    let by_count = rows.div_ceil(threads * 4);
    by_size.max(by_count).max(1)
}

/// Calls `body(first_row, rows)` on consecutive groups of `per_task` rows of `out`, in parallel when
/// there is more than one group.
fn run_rows<O: Send>(
    out: &mut [O],
    row_len: usize,
    per_task: usize,
    body: impl Fn(usize, &mut [O]) + Sync,
) {
    let chunk = per_task * row_len.max(1);
    if out.len() <= chunk {
        body(0, out);
    } else {
        out.par_chunks_mut(chunk)
            .enumerate()
            .for_each(|(t, rows)| body(t * per_task, rows));
    }
}

/// Maps every line of `input` along an axis to a line of `out` (same layout, `n_out` long) with `f`,
/// which receives a group of whole lines as consecutive rows, input and output.
fn map_lines<I, O>(input: &[I], lines: Lines, out: &mut [O], f: &(dyn Fn(&[I], &mut [O]) + Sync))
where
    I: Copy + Send + Sync,
    O: Copy + Send + Sync + Default,
{
    let Lines {
        outer,
        inner,
        n_in,
        n_out,
    } = lines;
    let rows = outer * inner;
    if rows == 0 {
        return;
    }
    let per_task = rows_per_task(rows, n_in.max(n_out));
    if inner == 1 {
        run_rows(out, n_out, per_task, |first, out_rows| {
            let count = out_rows.len() / n_out;
            f(&input[first * n_in..(first + count) * n_in], out_rows);
        });
        return;
    }
    // Lines along an inner axis: gather them into rows, transform, scatter back.
    let mut moved = vec![O::default(); rows * n_out];
    run_rows(&mut moved, n_out, per_task, |first, out_rows| {
        let count = out_rows.len() / n_out;
        let mut gathered = Vec::with_capacity(count * n_in);
        for r in first..first + count {
            let base = (r / inner) * n_in * inner + r % inner;
            gathered.extend((0..n_in).map(|k| input[base + k * inner]));
        }
        f(&gathered, out_rows);
    });
    let moved = &moved;
    run_rows(
        out,
        inner,
        rows_per_task(outer * n_out, inner),
        |first, out_rows| {
            for (j, row) in out_rows.chunks_mut(inner).enumerate() {
                let (o, k) = ((first + j) / n_out, (first + j) % n_out);
                for (i, v) in row.iter_mut().enumerate() {
                    *v = moved[(o * inner + i) * n_out + k];
                }
            }
        },
    );
}

/// An output buffer of `len` zeros from the backend's allocator.
fn zeroed<T: Copy + Default>(len: usize, alloc: &dyn HostAllocator) -> Vec<T> {
    let mut v = alloc.vec(len);
    v.resize(len, T::default());
    v
}

/// Multiplies every element (real or complex) by `scale`, nothing when it is 1.
fn rescale<T: FftFloat, V: Copy + Send + std::ops::Mul<T, Output = V>>(data: &mut [V], scale: f64) {
    if scale != 1.0 {
        let s = T::of(scale);
        data.par_chunks_mut(1 << 15)
            .for_each(|c| c.iter_mut().for_each(|z| *z = *z * s));
    }
}

/// The unscaled complex transform of `data` (of `shape`) along each of `axes` in turn.
fn c2c_axes<T: FftFloat>(
    data: &[Complex<T>],
    shape: &[usize],
    axes: &[usize],
    inverse: bool,
    alloc: &dyn HostAllocator,
) -> Vec<Complex<T>> {
    let mut out = zeroed(data.len(), alloc);
    for (step, &axis) in axes.iter().enumerate() {
        let n = shape[axis];
        let plan = with_planners::<T, _>(|p| {
            if inverse {
                p.complex.plan_fft_inverse(n)
            } else {
                p.complex.plan_fft_forward(n)
            }
        });
        let f = |rows: &[Complex<T>], dst: &mut [Complex<T>]| {
            dst.copy_from_slice(rows);
            let mut scratch = vec![Complex::default(); plan.get_inplace_scratch_len()];
            plan.process_with_scratch(dst, &mut scratch);
        };
        let lines = Lines::along(shape, axis, n);
        if step == 0 {
            map_lines(data, lines, &mut out, &f);
        } else {
            let mut next = zeroed(data.len(), alloc);
            map_lines(&out, lines, &mut next, &f);
            out = next;
        }
    }
    out
}

/// The product of the lengths of `axes` in `shape`.
fn points(shape: &[usize], axes: &[usize]) -> usize {
    axes.iter().map(|&a| shape[a]).product()
}

fn c2c_typed<T: FftFloat>(
    op: &Fft,
    data: &[Complex<T>],
    shape: &[usize],
    alloc: &dyn HostAllocator,
) -> Result<Vec<Complex<T>>> {
    let axes = absolute_axes(crate::ops::FFT, &op.axes, shape)?;
    let mut out = c2c_axes(data, shape, &axes, op.inverse, alloc);
    rescale::<T, _>(&mut out, op.norm.scale(points(shape, &axes), op.inverse));
    Ok(out)
}

/// The kernel of [`Fft`].
pub(crate) fn fft(op: &Fft, x: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    if let Some(v) = Complex::<f32>::slice_of(x.data) {
        Ok(HostData::C64(c2c_typed(op, v, x.shape, alloc)?))
    } else if let Some(v) = Complex::<f64>::slice_of(x.data) {
        Ok(HostData::C128(c2c_typed(op, v, x.shape, alloc)?))
    } else {
        Err(Error::dtype(crate::ops::FFT, x.data.dtype()))
    }
}

fn r2c_typed<T: FftFloat>(
    op: &Rfft,
    data: &[T],
    shape: &[usize],
    alloc: &dyn HostAllocator,
) -> Result<Vec<Complex<T>>> {
    let axes = absolute_axes(crate::ops::RFFT, &op.axes, shape)?;
    let (&last, rest) = axes
        .split_last()
        .ok_or_else(|| Error::invalid(crate::ops::RFFT, "no axes"))?;
    let n = shape[last];
    let m = n / 2 + 1;
    let mut half_shape = shape.to_vec();
    half_shape[last] = m;
    let plan: Arc<dyn RealToComplex<T>> = with_planners::<T, _>(|p| p.real.plan_fft_forward(n));
    let failed = Mutex::new(None);
    let f = |rows: &[T], dst: &mut [Complex<T>]| {
        let mut input = rows.to_vec();
        let mut scratch = plan.make_scratch_vec();
        for (row, out) in input.chunks_mut(n).zip(dst.chunks_mut(m)) {
            if let Err(e) = plan.process_with_scratch(row, out, &mut scratch) {
                *failed.lock().unwrap_or_else(PoisonError::into_inner) = Some(e.to_string());
            }
        }
    };
    let mut half = zeroed(half_shape.iter().product(), alloc);
    map_lines(data, Lines::along(shape, last, m), &mut half, &f);
    if let Some(e) = failed.into_inner().unwrap_or_else(PoisonError::into_inner) {
        return Err(Error::invalid(crate::ops::RFFT, e));
    }
    let mut out = if rest.is_empty() {
        half
    } else {
        c2c_axes(&half, &half_shape, rest, false, alloc)
    };
    rescale::<T, _>(&mut out, op.norm.scale(points(shape, &axes), false));
    Ok(out)
}

/// The kernel of [`Rfft`].
pub(crate) fn rfft(op: &Rfft, x: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    if let Some(v) = f32::slice_of(x.data) {
        Ok(HostData::C64(r2c_typed(op, v, x.shape, alloc)?))
    } else if let Some(v) = f64::slice_of(x.data) {
        Ok(HostData::C128(r2c_typed(op, v, x.shape, alloc)?))
    } else {
        Err(Error::dtype(crate::ops::RFFT, x.data.dtype()))
    }
}

fn c2r_typed<T: FftFloat>(
    op: &Irfft,
    data: &[Complex<T>],
    shape: &[usize],
    alloc: &dyn HostAllocator,
) -> Result<Vec<T>> {
    let axes = absolute_axes(crate::ops::IRFFT, &op.axes, shape)?;
    let (&last, rest) = axes
        .split_last()
        .ok_or_else(|| Error::invalid(crate::ops::IRFFT, "no axes"))?;
    let (n, m) = (op.len, shape[last]);
    let partial;
    let spectrum = if rest.is_empty() {
        data
    } else {
        partial = c2c_axes(data, shape, rest, true, alloc);
        &partial[..]
    };
    let plan: Arc<dyn ComplexToReal<T>> = with_planners::<T, _>(|p| p.real.plan_fft_inverse(n));
    let failed = Mutex::new(None);
    let f = |rows: &[Complex<T>], dst: &mut [T]| {
        let mut input = rows.to_vec();
        let mut scratch = plan.make_scratch_vec();
        for (row, out) in input.chunks_mut(m).zip(dst.chunks_mut(n)) {
            // The imaginary parts of the zero and Nyquist frequencies do not exist in a real signal's
            // spectrum: ignored, as NumPy does.
            row[0].im = T::of(0.0);
            if n.is_multiple_of(2) {
                row[m - 1].im = T::of(0.0);
            }
            if let Err(e) = plan.process_with_scratch(row, out, &mut scratch) {
                *failed.lock().unwrap_or_else(PoisonError::into_inner) = Some(e.to_string());
            }
        }
    };
    let mut out_shape = shape.to_vec();
    out_shape[last] = n;
    let mut out: Vec<T> = zeroed(out_shape.iter().product(), alloc);
    map_lines(spectrum, Lines::along(shape, last, n), &mut out, &f);
    if let Some(e) = failed.into_inner().unwrap_or_else(PoisonError::into_inner) {
        return Err(Error::invalid(crate::ops::IRFFT, e));
    }
    rescale::<T, T>(&mut out, op.norm.scale(points(&out_shape, &axes), true));
    Ok(out)
}

/// The kernel of [`Irfft`].
pub(crate) fn irfft(op: &Irfft, x: &HostView<'_>, alloc: &dyn HostAllocator) -> Result<HostData> {
    if let Some(v) = Complex::<f32>::slice_of(x.data) {
        Ok(HostData::F32(c2r_typed(op, v, x.shape, alloc)?))
    } else if let Some(v) = Complex::<f64>::slice_of(x.data) {
        Ok(HostData::F64(c2r_typed(op, v, x.shape, alloc)?))
    } else {
        Err(Error::dtype(crate::ops::IRFFT, x.data.dtype()))
    }
}
