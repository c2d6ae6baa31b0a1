//! Helpers shared by the movement and sort kernels: an output buffer that several threads write at
//! disjoint positions, strided copies into a region of an output, and walking the lanes along one axis.

use crate::PARALLEL_THRESHOLD;
use crate::strided::{CHUNK, RowPlan};
use nabla_core::{Layout, Result};
use rayon::prelude::*;
use std::marker::PhantomData;
use std::mem::MaybeUninit;

/// A raw handle to an output buffer that several threads write at disjoint positions.
///
/// Every access is bounds-checked; the caller of the `unsafe` methods guarantees that no two threads touch
/// one position concurrently.
pub(crate) struct SharedOut<'a, T> {
    ptr: *mut T,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: the handle is only a pointer to a buffer it exclusively borrows; the unsafe accessors require
// callers to keep the positions written by different threads disjoint.
unsafe impl<T: Send> Send for SharedOut<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SharedOut<'_, T> {}

impl<'a, T: Copy> SharedOut<'a, T> {
    /// Wraps an uninitialised output.
    pub(crate) fn new(out: &'a mut [MaybeUninit<T>]) -> Self {
        SharedOut {
            ptr: out.as_mut_ptr().cast(),
            len: out.len(),
            _borrow: PhantomData,
        }
    }

    /// Wraps an initialised output.
    pub(crate) fn from_init(out: &'a mut [T]) -> Self {
        SharedOut {
            ptr: out.as_mut_ptr(),
            len: out.len(),
            _borrow: PhantomData,
        }
    }

    /// Writes `v` at position `i`.
    ///
    /// # Safety
    /// No other thread may access position `i` during the call.
    #[inline]
    pub(crate) unsafe fn write(&self, i: usize, v: T) {
        assert!(i < self.len, "output position {i} out of {}", self.len);
        // SAFETY: in bounds (checked above); exclusive per the caller's guarantee.
        unsafe { self.ptr.add(i).write(v) }
    }

    /// Reads position `i`.
    ///
    /// # Safety
    /// Position `i` must be initialised, and no other thread may write it during the call.
    #[inline]
    pub(crate) unsafe fn read(&self, i: usize) -> T {
        assert!(i < self.len, "output position {i} out of {}", self.len);
        // SAFETY: in bounds (checked above); initialised and not written concurrently per the caller.
        unsafe { self.ptr.add(i).read() }
    }

    /// Copies `src` to positions `start..start + src.len()`.
    ///
    /// # Safety
    /// No other thread may access those positions during the call.
    #[inline]
    pub(crate) unsafe fn write_slice(&self, start: usize, src: &[T]) {
        assert!(
            start <= self.len && src.len() <= self.len - start,
            "output range {start}+{} out of {}",
            src.len(),
            self.len
        );
        // SAFETY: the range is in bounds (checked above), `src` is a different, live allocation (the output
        // is exclusively borrowed by this handle), and the range is exclusive per the caller's guarantee.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.add(start), src.len()) }
    }
}

/// Copies `src` into an uninitialised slice of the same length.
pub(crate) fn write_slice<T: Copy>(dst: &mut [MaybeUninit<T>], src: &[T]) {
    assert_eq!(dst.len(), src.len());
    // SAFETY: equal lengths (checked above); `dst` is exclusively borrowed so the two cannot overlap, and
    // `MaybeUninit<T>` has the layout of `T`.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_mut_ptr().cast(), src.len()) }
}

/// Copies the view `ls` of `src` into `dst` at the positions of `ld`, a view of the same shape; splits the
/// copy across threads when it is large. Pairs of unit-stride rows are copied with `memcpy`; sources whose
/// innermost (coalesced) dimension is strided while the next one has unit stride, such as transposes, are
/// copied in cache-sized tiles.
///
/// # Safety
/// `ld` must be injective (distinct elements at distinct offsets), and no other thread may access its
/// positions during the call. Offsets are bounds-checked.
pub(crate) unsafe fn copy_into<T: Copy + Send + Sync>(
    dst: &SharedOut<'_, T>,
    ld: &Layout,
    src: &[T],
    ls: &Layout,
) {
    if ld.numel() == 0 {
        return;
    }
    let (dims, strides) = Layout::coalesce(&[ls, ld]);
    let nd = dims.len();
    if nd >= 2 && strides[0][nd - 1].abs() > 1 && strides[0][nd - 2].abs() == 1 {
        let offsets = [ls.offset() as isize, ld.offset() as isize];
        // SAFETY: forwarded from this function's contract.
        unsafe { copy_tiles(dst, src, &dims, &strides, offsets) };
        return;
    }
    let plan = RowPlan::new([ls, ld]);
    let (rows, len) = (plan.rows(), plan.inner_len);
    let [ss, sd] = plan.inner_strides;
    // Copies elements `seg` of every row in `r0..r1`.
    let copy = |r0: usize, r1: usize, seg: std::ops::Range<usize>| {
        plan.for_rows(r0, r1, |_, [os, od]| {
            if ss == 1 && sd == 1 {
                // SAFETY: positions of `ld` are injective and exclusive per this function's contract.
                unsafe { dst.write_slice(od + seg.start, &src[os + seg.start..os + seg.end]) };
            } else {
                let mut ps = os as isize + seg.start as isize * ss;
                let mut pd = od as isize + seg.start as isize * sd;
                for _ in seg.clone() {
                    // SAFETY: as above.
                    unsafe { dst.write(pd as usize, src[ps as usize]) };
                    ps += ss;
                    pd += sd;
                }
            }
        })
    };
    if !crate::splits(rows * len, PARALLEL_THRESHOLD) {
        copy(0, rows, 0..len);
    } else if len > CHUNK {
        // Long rows: one task per segment of one row.
        let segments = len.div_ceil(CHUNK);
        (0..rows * segments).into_par_iter().for_each(|t| {
            let (row, s) = (t / segments, t % segments);
            copy(row, row + 1, s * CHUNK..((s + 1) * CHUNK).min(len));
        });
    } else {
        let per_task = (CHUNK / len).max(1);
        (0..rows.div_ceil(per_task))
            .into_par_iter()
            .for_each(|t| copy(t * per_task, ((t + 1) * per_task).min(rows), 0..len));
    }
}

/// Side of the square tiles of [`copy_tiles`].
const TILE: usize = 32;

/// Tiled copy for a coalesced source whose second-innermost dimension has unit stride: each tile reads
/// source columns contiguously and writes a few destination rows, so neither side strides through memory.
///
/// # Safety
/// As [`copy_into`]; `dims`/`strides` are the coalesced `[src, dst]` walk with the given start offsets.
unsafe fn copy_tiles<T: Copy + Send + Sync>(
    dst: &SharedOut<'_, T>,
    src: &[T],
    dims: &[usize],
    strides: &[Vec<isize>],
    offsets: [isize; 2],
) {
    let nd = dims.len();
    let (rows, cols) = (dims[nd - 2], dims[nd - 1]);
    let (ssr, ssc, sdr, sdc) = (
        strides[0][nd - 2],
        strides[0][nd - 1],
        strides[1][nd - 2],
        strides[1][nd - 1],
    );
    // Start offsets of every plane (position of the outer dimensions), in row-major order.
    let mut planes = vec![offsets];
    for ax in (0..nd - 2).rev() {
        let step = [strides[0][ax], strides[1][ax]];
        planes = (0..dims[ax] as isize)
            .flat_map(|i| {
                planes
                    .iter()
                    .map(move |p| [p[0] + i * step[0], p[1] + i * step[1]])
            })
            .collect();
    }
    let bands = rows.div_ceil(TILE);
    // One task per band of TILE rows of one plane.
    let task = |t: usize| {
        let [s0, d0] = planes[t / bands];
        let r0 = (t % bands) * TILE;
        let r1 = (r0 + TILE).min(rows);
        for c0 in (0..cols).step_by(TILE) {
            for c in c0..(c0 + TILE).min(cols) {
                let (sc, dc) = (s0 + c as isize * ssc, d0 + c as isize * sdc);
                for r in r0..r1 {
                    let r = r as isize;
                    // SAFETY: positions of the destination are injective and exclusive per the contract.
                    unsafe { dst.write((dc + r * sdr) as usize, src[(sc + r * ssr) as usize]) };
                }
            }
        }
    };
    let tasks = planes.len() * bands;
    if crate::splits(rows * cols * planes.len(), PARALLEL_THRESHOLD) {
        (0..tasks).into_par_iter().for_each(task);
    } else {
        (0..tasks).for_each(task);
    }
}

/// `layout` without dimension `axis`.
pub(crate) fn drop_axis(layout: &Layout, axis: usize) -> Result<Layout> {
    let mut shape = layout.shape().to_vec();
    let mut strides = layout.strides().to_vec();
    shape.remove(axis);
    strides.remove(axis);
    Layout::from_parts(shape, strides, layout.offset())
}

/// Calls `f(state, x_offset, out_offset)` once per lane, where the lanes are the positions of `x_rest` and
/// `out_rest` (an input and an output layout of one shape, with the lane axis removed). When `work` (the
/// total number of elements the lanes hold) is large the lanes are split across threads, each task with
/// its own `init()` state (scratch buffers).
pub(crate) fn for_each_lane<S>(
    x_rest: &Layout,
    out_rest: &Layout,
    work: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize, usize) + Sync,
) {
    let plan = RowPlan::new([x_rest, out_rest]);
    let (rows, len) = (plan.rows(), plan.inner_len);
    let lanes = rows * len;
    if lanes == 0 {
        return;
    }
    let [sx, so] = plan.inner_strides;
    // Lanes `a..b` in row-major order.
    let run = |state: &mut S, a: usize, b: usize| {
        let (r0, r1) = (a / len, (b - 1) / len + 1);
        plan.for_rows(r0, r1, |row, [ox, oo]| {
            let k0 = if row == r0 { a % len } else { 0 };
            let k1 = if row == r1 - 1 {
                (b - 1) % len + 1
            } else {
                len
            };
            for k in k0..k1 {
                let k = k as isize;
                f(
                    state,
                    (ox as isize + k * sx) as usize,
                    (oo as isize + k * so) as usize,
                );
            }
        })
    };
    if crate::splits(work, PARALLEL_THRESHOLD) && lanes > 1 {
        let tasks = (rayon::current_num_threads() * 4).min(lanes);
        let per_task = lanes.div_ceil(tasks);
        (0..lanes.div_ceil(per_task)).into_par_iter().for_each(|t| {
            let mut state = init();
            run(&mut state, t * per_task, ((t + 1) * per_task).min(lanes));
        });
    } else {
        run(&mut init(), 0, lanes);
    }
}
