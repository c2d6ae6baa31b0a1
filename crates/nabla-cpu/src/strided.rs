//! Walking strided views: the shared machinery behind every elementwise kernel.
//!
//! Views are first coalesced (adjacent dimensions that can be walked as one are merged), then walked as
//! "rows": the innermost dimension is a tight loop, the outer dimensions are a counter. Rows are split
//! across threads when the view is large. The innermost loop is specialised for unit and zero strides so
//! that contiguous and broadcast-scalar operands vectorise.

mod transposed;

pub use transposed::host_transpose;

use crate::PARALLEL_THRESHOLD;
use nabla_core::Layout;
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Elements handled by one parallel task in contiguous kernels.
pub(crate) const CHUNK: usize = 1 << 14;

/// A view flattened for walking: outer dimensions, per-operand outer strides, and the inner row.
pub(crate) struct RowPlan<const K: usize> {
    outer_dims: Vec<usize>,
    outer_strides: [Vec<isize>; K],
    pub(crate) inner_len: usize,
    pub(crate) inner_strides: [isize; K],
    offsets: [isize; K],
}

impl<const K: usize> RowPlan<K> {
    /// Plans a walk over `K` views of one shape.
    pub(crate) fn new(layouts: [&Layout; K]) -> Self {
        let offsets = std::array::from_fn(|k| layouts[k].offset() as isize);
        // Views of rank 0 or 1 are a single row already: plan them without coalescing, which allocates.
        // Tiny tensors (and the broadcast cotangents of the reverse pass) take this path on every op, where
        // allocations are most of the cost. A length-1 row gets stride 0, as coalescing would give it.
        if layouts[0].rank() <= 1 {
            let n = layouts[0].numel();
            let row = layouts[0].rank() == 1 && n != 1;
            return RowPlan {
                outer_dims: Vec::new(),
                outer_strides: std::array::from_fn(|_| Vec::new()),
                inner_len: if row { n } else { n.min(1) },
                inner_strides: std::array::from_fn(
                    |k| {
                        if row { layouts[k].strides()[0] } else { 0 }
                    },
                ),
                offsets,
            };
        }
        let (dims, strides) = Layout::coalesce(&layouts);
        if dims.is_empty() {
            return RowPlan {
                outer_dims: Vec::new(),
                outer_strides: std::array::from_fn(|_| Vec::new()),
                inner_len: if layouts[0].numel() == 0 { 0 } else { 1 },
                inner_strides: [0; K],
                offsets,
            };
        }
        let last = dims.len() - 1;
        RowPlan {
            outer_dims: dims[..last].to_vec(),
            outer_strides: std::array::from_fn(|k| strides[k][..last].to_vec()),
            inner_len: dims[last],
            inner_strides: std::array::from_fn(|k| strides[k][last]),
            offsets,
        }
    }

    /// Number of rows.
    pub(crate) fn rows(&self) -> usize {
        self.outer_dims.iter().product()
    }

    /// Calls `f(row, offsets)` for rows `start..end`, where `offsets[k]` is operand `k`'s buffer offset of
    /// the row's first element.
    pub(crate) fn for_rows(&self, start: usize, end: usize, mut f: impl FnMut(usize, [usize; K])) {
        if start >= end {
            return;
        }
        let nd = self.outer_dims.len();
        let mut index = vec![0usize; nd];
        let mut offs = self.offsets;
        let mut rem = start;
        for ax in (0..nd).rev() {
            let d = self.outer_dims[ax];
            index[ax] = rem % d;
            rem /= d;
            for (k, o) in offs.iter_mut().enumerate() {
                *o += index[ax] as isize * self.outer_strides[k][ax];
            }
        }
        for row in start..end {
            f(row, offs.map(|o| o as usize));
            for ax in (0..nd).rev() {
                index[ax] += 1;
                for (k, o) in offs.iter_mut().enumerate() {
                    *o += self.outer_strides[k][ax];
                }
                if index[ax] < self.outer_dims[ax] {
                    break;
                }
                for (k, o) in offs.iter_mut().enumerate() {
                    *o -= self.outer_strides[k][ax] * self.outer_dims[ax] as isize;
                }
                index[ax] = 0;
            }
        }
    }

    /// Fills a new contiguous output of `rows * inner_len` elements, calling `fill(row_out, offsets)` once per
    /// row; rows are split across threads when the output is large.
    pub(crate) fn fill_rows<U: Send>(
        &self,
        fill: impl Fn(&mut [MaybeUninit<U>], [usize; K]) + Sync,
    ) -> Vec<U> {
        let rows = self.rows();
        let n = rows * self.inner_len;
        let mut out: Vec<U> = output_vec(n);
        if n > 0 {
            let spare = &mut out.spare_capacity_mut()[..n];
            let len = self.inner_len;
            if crate::splits(n, PARALLEL_THRESHOLD) && len > CHUNK {
                // Few long rows: split each row into pieces, each a task of its own.
                spare
                    .par_chunks_mut(len)
                    .enumerate()
                    .flat_map_iter(|(row, out)| {
                        out.chunks_mut(CHUNK)
                            .enumerate()
                            .map(move |(piece, c)| (row, piece * CHUNK, c))
                    })
                    .for_each(|(row, start, chunk)| {
                        self.for_rows(row, row + 1, |_, offs| {
                            let offs = std::array::from_fn(|k| {
                                (offs[k] as isize + start as isize * self.inner_strides[k]) as usize
                            });
                            fill(chunk, offs);
                        });
                    });
            } else if crate::splits(n, PARALLEL_THRESHOLD) && rows > 1 {
                let rows_per_task = (CHUNK / len).max(1);
                spare
                    .par_chunks_mut(rows_per_task * len)
                    .enumerate()
                    .for_each(|(task, chunk)| {
                        let first = task * rows_per_task;
                        let last = first + chunk.len() / len;
                        self.for_rows(first, last, |row, offs| {
                            let o = (row - first) * len;
                            fill(&mut chunk[o..o + len], offs);
                        });
                    });
            } else {
                self.for_rows(0, rows, |row, offs| {
                    fill(&mut spare[row * len..(row + 1) * len], offs)
                });
            }
        }
        // SAFETY: every row, and so every element of 0..n, was written by `fill`, which must initialise
        // all elements of the slice it is given (all callers in this crate write each element once).
        unsafe { out.set_len(n) };
        out
    }
}

/// An empty vector with room for `n` elements, for a kernel's output. On Linux, buffers of several
/// megabytes are marked for transparent huge pages (as NumPy does), so that first-touch page faults,
/// which otherwise dominate the cost of a large elementwise op, happen once per 2 MiB instead of 4 KiB.
pub(crate) fn output_vec<U>(n: usize) -> Vec<U> {
    if let Some(v) = crate::host_pool::take(n) {
        return v;
    }
    let v: Vec<U> = Vec::with_capacity(n);
    #[cfg(target_os = "linux")]
    advise_huge_pages(v.as_ptr() as usize, n * std::mem::size_of::<U>());
    v
}

/// A vector of `n` copies of `value` for a kernel's output, on a cached buffer when one of its size is
/// free (see [`output_vec`]); large outputs are filled by several threads. Kernels that accumulate into
/// their output (or write it through an API that needs initialised memory) start from this rather than
/// from `vec![value; n]`, whose fresh pages would be faulted in on every call.
pub(crate) fn filled_vec<T: Copy + Send + Sync>(n: usize, value: T) -> Vec<T> {
    let mut out: Vec<T> = output_vec(n);
    let spare = &mut out.spare_capacity_mut()[..n];
    if crate::splits(n, PARALLEL_THRESHOLD) {
        spare
            .par_chunks_mut(CHUNK)
            .for_each(|c| c.fill(MaybeUninit::new(value)));
    } else {
        spare.fill(MaybeUninit::new(value));
    }
    // SAFETY: all `n` elements were just written.
    unsafe { out.set_len(n) };
    out
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(addr: usize, bytes: usize) {
    use std::ffi::{c_int, c_void};
    const PAGE: usize = 4096;
    const MADV_HUGEPAGE: c_int = 14;
    unsafe extern "C" {
        fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
    }
    if bytes < (8 << 20) {
        return;
    }
    let start = addr.next_multiple_of(PAGE);
    let end = (addr + bytes) / PAGE * PAGE;
    if end > start {
        // SAFETY: the range lies inside an allocation this function's caller owns; the advice changes
        // only how the kernel backs the pages, never their contents, and a failure is harmless.
        unsafe {
            madvise(start as *mut c_void, end - start, MADV_HUGEPAGE);
        }
    }
}

/// Applies `f` to every element of a contiguous slice into `dst`, in parallel for large inputs.
pub(crate) fn map_contiguous<T, U, F>(src: &[T], f: &F) -> Vec<U>
where
    T: Copy + Sync,
    U: Send,
    F: Fn(T) -> U + Sync,
{
    let n = src.len();
    let mut out: Vec<U> = output_vec(n);
    let spare = &mut out.spare_capacity_mut()[..n];
    if crate::splits(n, PARALLEL_THRESHOLD) {
        spare
            .par_chunks_mut(CHUNK)
            .zip(src.par_chunks(CHUNK))
            .for_each(|(o, s)| apply1(s, o, f));
    } else {
        apply1(src, spare, f);
    }
    // SAFETY: apply1 wrote all n elements.
    unsafe { out.set_len(n) };
    out
}

/// Applies `f` elementwise to two contiguous slices of one length.
pub(crate) fn zip_contiguous<A, B, U, F>(a: &[A], b: &[B], f: &F) -> Vec<U>
where
    A: Copy + Sync,
    B: Copy + Sync,
    U: Send,
    F: Fn(A, B) -> U + Sync,
{
    let n = a.len();
    debug_assert_eq!(n, b.len());
    let mut out: Vec<U> = output_vec(n);
    let spare = &mut out.spare_capacity_mut()[..n];
    if crate::splits(n, PARALLEL_THRESHOLD) {
        spare
            .par_chunks_mut(CHUNK)
            .zip(a.par_chunks(CHUNK).zip(b.par_chunks(CHUNK)))
            .for_each(|(o, (a, b))| apply2(a, b, o, f));
    } else {
        apply2(a, b, spare, f);
    }
    // SAFETY: apply2 wrote all n elements.
    unsafe { out.set_len(n) };
    out
}

crate::simd_kernel! {
    /// The innermost unary loop, compiled for each SIMD level the CPU may have.
    pub(crate) fn apply1<T: Copy, U, F: Fn(T) -> U>(src: &[T], dst: &mut [MaybeUninit<U>], f: &F) {
        for (o, &s) in dst.iter_mut().zip(src) {
            o.write(f(s));
        }
    }
}

crate::simd_kernel! {
    /// The innermost binary loop, compiled for each SIMD level the CPU may have.
    pub(crate) fn apply2<A: Copy, B: Copy, U, F: Fn(A, B) -> U>(
        a: &[A],
        b: &[B],
        dst: &mut [MaybeUninit<U>],
        f: &F,
    ) {
        for ((o, &x), &y) in dst.iter_mut().zip(a).zip(b) {
            o.write(f(x, y));
        }
    }
}

/// Maps one strided view through `f` into a new contiguous vector.
pub(crate) fn map1<T, U, F>(x: &[T], lx: &Layout, f: F) -> Vec<U>
where
    T: Copy + Sync,
    U: Send,
    F: Fn(T) -> U + Sync,
{
    if let Some(r) = lx.contiguous_range() {
        return map_contiguous(&x[r], &f);
    }
    let plan = RowPlan::new([lx]);
    let [s] = plan.inner_strides;
    plan.fill_rows(|out, [o]| {
        let n = out.len();
        if s == 1 {
            apply1(&x[o..o + n], out, &f);
        } else if s == 0 {
            // A broadcast value (materialising `zeros_like` and friends): one value, repeated.
            let v = x[o];
            for slot in out.iter_mut() {
                slot.write(f(v));
            }
        } else {
            let mut p = o as isize;
            for v in out.iter_mut() {
                v.write(f(x[p as usize]));
                p += s;
            }
        }
    })
}

/// Maps two strided views of one shape through `f` into a new contiguous vector.
pub(crate) fn map2<A, B, U, F>(a: &[A], la: &Layout, b: &[B], lb: &Layout, f: F) -> Vec<U>
where
    A: Copy + Sync,
    B: Copy + Sync,
    U: Send,
    F: Fn(A, B) -> U + Sync,
{
    if let (Some(ra), Some(rb)) = (la.contiguous_range(), lb.contiguous_range()) {
        return zip_contiguous(&a[ra], &b[rb], &f);
    }
    if let Some(out) = transposed::map2_transposed(a, la, b, lb, &f) {
        return out;
    }
    let plan = RowPlan::new([la, lb]);
    let [sa, sb] = plan.inner_strides;
    plan.fill_rows(|out, [oa, ob]| {
        let n = out.len();
        match (sa, sb) {
            (1, 1) => apply2(&a[oa..oa + n], &b[ob..ob + n], out, &f),
            (1, 0) => {
                let y = b[ob];
                apply1(&a[oa..oa + n], out, &|x| f(x, y));
            }
            (0, 1) => {
                let x = a[oa];
                apply1(&b[ob..ob + n], out, &|y| f(x, y));
            }
            _ => {
                let (mut pa, mut pb) = (oa as isize, ob as isize);
                for v in out.iter_mut() {
                    v.write(f(a[pa as usize], b[pb as usize]));
                    pa += sa;
                    pb += sb;
                }
            }
        }
    })
}

/// Maps three strided views of one shape through `f` into a new contiguous vector.
pub(crate) fn map3<A, B, C, U, F>(
    a: &[A],
    la: &Layout,
    b: &[B],
    lb: &Layout,
    c: &[C],
    lc: &Layout,
    f: F,
) -> Vec<U>
where
    A: Copy + Sync,
    B: Copy + Sync,
    C: Copy + Sync,
    U: Send,
    F: Fn(A, B, C) -> U + Sync,
{
    let plan = RowPlan::new([la, lb, lc]);
    let [sa, sb, sc] = plan.inner_strides;
    plan.fill_rows(|out, [oa, ob, oc]| {
        let n = out.len();
        if [sa, sb, sc].iter().all(|s| *s == 0 || *s == 1) {
            // Unit-stride and broadcast-scalar rows (the common case): a loop that vectorises.
            Lane::of(a, oa, sa, n).then3(Lane::of(b, ob, sb, n), Lane::of(c, oc, sc, n), out, &f);
            return;
        }
        let (mut pa, mut pb, mut pc) = (oa as isize, ob as isize, oc as isize);
        for v in out.iter_mut() {
            v.write(f(a[pa as usize], b[pb as usize], c[pc as usize]));
            pa += sa;
            pb += sb;
            pc += sc;
        }
    })
}

/// One operand of an inner row with stride 1 (a slice of the row's length) or 0 (one repeated value).
enum Lane<'a, T> {
    Unit(&'a [T]),
    Splat(T),
}

/// Reads element `i` of a row operand; implemented by slices and repeated values, so that each
/// combination of operand kinds gets its own monomorphised (and vectorised) loop.
trait RowOperand<T>: Copy {
    /// The operand cut to exactly `n` elements (lets the compiler drop bounds checks).
    fn fit(self, n: usize) -> Self;
    fn at(self, i: usize) -> T;
}

impl<T: Copy> RowOperand<T> for &[T] {
    #[inline(always)]
    fn fit(self, n: usize) -> Self {
        &self[..n]
    }
    #[inline(always)]
    fn at(self, i: usize) -> T {
        self[i]
    }
}

/// A value repeated along the row.
#[derive(Clone, Copy)]
struct Splat<T>(T);

impl<T: Copy> RowOperand<T> for Splat<T> {
    #[inline(always)]
    fn fit(self, _: usize) -> Self {
        self
    }
    #[inline(always)]
    fn at(self, _: usize) -> T {
        self.0
    }
}

impl<'a, T: Copy> Lane<'a, T> {
    /// The row of `n` elements at `offset` with stride `stride` (0 or 1).
    fn of(x: &'a [T], offset: usize, stride: isize, n: usize) -> Self {
        if stride == 0 {
            Lane::Splat(x[offset])
        } else {
            Lane::Unit(&x[offset..offset + n])
        }
    }

    /// Picks the loop for this operand's kind, then for the other two.
    fn then3<B: Copy, C: Copy, U, F: Fn(T, B, C) -> U>(
        self,
        b: Lane<'_, B>,
        c: Lane<'_, C>,
        out: &mut [MaybeUninit<U>],
        f: &F,
    ) {
        match self {
            Lane::Unit(a) => then2(a, b, c, out, f),
            Lane::Splat(a) => then2(Splat(a), b, c, out, f),
        }
    }
}

fn then2<A: Copy, B: Copy, C: Copy, U, F, RA>(
    a: RA,
    b: Lane<'_, B>,
    c: Lane<'_, C>,
    out: &mut [MaybeUninit<U>],
    f: &F,
) where
    F: Fn(A, B, C) -> U,
    RA: RowOperand<A>,
{
    match b {
        Lane::Unit(b) => then1(a, b, c, out, f),
        Lane::Splat(b) => then1(a, Splat(b), c, out, f),
    }
}

fn then1<A: Copy, B: Copy, C: Copy, U, F, RA, RB>(
    a: RA,
    b: RB,
    c: Lane<'_, C>,
    out: &mut [MaybeUninit<U>],
    f: &F,
) where
    F: Fn(A, B, C) -> U,
    RA: RowOperand<A>,
    RB: RowOperand<B>,
{
    match c {
        Lane::Unit(c) => apply3(a, b, c, out, f),
        Lane::Splat(c) => apply3(a, b, Splat(c), out, f),
    }
}

crate::simd_kernel! {
    /// The innermost ternary loop, compiled for each SIMD level the CPU may have.
    fn apply3<A, B, C, U, F, RA, RB, RC>(a: RA, b: RB, c: RC, dst: &mut [MaybeUninit<U>], f: &F)
    where
        F: Fn(A, B, C) -> U,
        RA: RowOperand<A>,
        RB: RowOperand<B>,
        RC: RowOperand<C>,
    {
        let n = dst.len();
        let (a, b, c) = (a.fit(n), b.fit(n), c.fit(n));
        for (i, o) in dst.iter_mut().enumerate() {
            o.write(f(a.at(i), b.at(i), c.at(i)));
        }
    }
}

/// Copies a strided view into a new contiguous vector. Views whose source is column-major in their two
/// innermost (coalesced) dimensions, such as transposes, are copied in cache-sized tiles.
pub(crate) fn gather_view<T: Copy + Send + Sync>(x: &[T], lx: &Layout) -> Vec<T> {
    if let Some(r) = lx.contiguous_range() {
        let mut out = output_vec(r.len());
        out.extend_from_slice(&x[r]);
        return out;
    }
    let (dims, strides) = Layout::coalesce(&[lx]);
    let s = &strides[0];
    let nd = dims.len();
    if nd >= 2 && s[nd - 1] != 1 && s[nd - 2] == 1 {
        return transpose_tiles(x, lx, &dims, s);
    }
    map1(x, lx, |v| v)
}

/// Tiled copy for views whose second-innermost dimension has unit stride.
fn transpose_tiles<T: Copy + Send + Sync>(
    x: &[T],
    lx: &Layout,
    dims: &[usize],
    strides: &[isize],
) -> Vec<T> {
    const TILE: usize = 32;
    let nd = dims.len();
    let (rows, cols) = (dims[nd - 2], dims[nd - 1]);
    let col_stride = strides[nd - 1];
    let outer = Layout::from_parts(
        dims[..nd - 2].to_vec(),
        strides[..nd - 2].to_vec(),
        lx.offset(),
    )
    .expect("coalesced outer dims form a valid layout");
    let outer_offsets: Vec<usize> = outer.offsets().collect();
    let plane = rows * cols;
    let n = plane * outer_offsets.len();
    let mut out: Vec<T> = output_vec(n);
    let spare = &mut out.spare_capacity_mut()[..n];
    let tile_rows = rows.div_ceil(TILE);
    // One task per band of TILE output rows in one outer plane.
    let work = |band_index: usize, band: &mut [MaybeUninit<T>]| {
        let plane_index = band_index / tile_rows;
        let r0 = (band_index % tile_rows) * TILE;
        let base = outer_offsets[plane_index] as isize;
        let band_rows = band.len() / cols;
        for c0 in (0..cols).step_by(TILE) {
            let c1 = (c0 + TILE).min(cols);
            for c in c0..c1 {
                let src_col = base + c as isize * col_stride;
                for r in 0..band_rows {
                    band[r * cols + c].write(x[(src_col + (r0 + r) as isize) as usize]);
                }
            }
        }
    };
    let bands: Vec<(usize, &mut [MaybeUninit<T>])> = spare
        .chunks_mut(plane)
        .flat_map(|p| p.chunks_mut(TILE * cols))
        .enumerate()
        .collect();
    if crate::splits(n, PARALLEL_THRESHOLD) {
        bands.into_par_iter().for_each(|(i, band)| work(i, band));
    } else {
        bands.into_iter().for_each(|(i, band)| work(i, band));
    }
    // SAFETY: the bands partition the output and each band writes all of its rows and columns.
    unsafe { out.set_len(n) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reference<T: Copy>(x: &[T], l: &Layout) -> Vec<T> {
        l.offsets().map(|o| x[o]).collect()
    }

    fn arb_view() -> impl Strategy<Value = (Layout, usize)> {
        (prop::collection::vec(0usize..6, 0..5), any::<u64>()).prop_map(|(dims, seed)| {
            let mut l = Layout::contiguous(dims.clone());
            let mut s = seed;
            for ax in 0..dims.len() {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                match (s >> 33) % 5 {
                    0 => l = l.flip(ax).unwrap(),
                    1 if dims[ax] > 2 => l = l.slice(ax, 1, dims[ax] / 2, 2).unwrap(),
                    2 if dims[ax] == 1 => {
                        let mut shape = l.shape().to_vec();
                        shape[ax] = 3;
                        l = l.broadcast_to(&shape).unwrap();
                    }
                    _ => {}
                }
            }
            if l.rank() >= 2 && seed % 2 == 0 {
                l = l.transpose(0, l.rank() - 1).unwrap();
            }
            (l, dims.iter().product())
        })
    }

    proptest! {
        #[test]
        fn copies_match_reference((l, n) in arb_view()) {
            let x: Vec<i64> = (0..n as i64).collect();
            prop_assert_eq!(gather_view(&x, &l), reference(&x, &l));
            prop_assert_eq!(map1(&x, &l, |v| v * 2), reference(&x, &l).iter().map(|v| v * 2).collect::<Vec<_>>());
        }

        #[test]
        fn binary_walk_matches_reference((l, n) in arb_view()) {
            let x: Vec<i64> = (0..n as i64).collect();
            let c = Layout::contiguous(l.shape().to_vec());
            let y: Vec<i64> = (0..c.numel() as i64).map(|v| v * 10).collect();
            let got = map2(&x, &l, &y, &c, |a, b| a + b);
            let want: Vec<i64> = reference(&x, &l).iter().zip(&y).map(|(a, b)| a + b).collect();
            prop_assert_eq!(got, want);
            let got3 = map3(&x, &l, &y, &c, &x, &l, |a, b, c| a + b - c);
            prop_assert_eq!(got3, y.clone());
        }
    }

    #[test]
    fn rank_zero_and_one_views_walk_like_the_reference() {
        let x: Vec<i64> = (0..10).collect();
        let at7 = Layout::from_parts(vec![], vec![], 7).unwrap();
        let views = [
            at7.clone(),
            at7.broadcast_to(&[4]).unwrap(),
            Layout::contiguous([10]).flip(0).unwrap(),
            Layout::contiguous([10]).slice(0, 1, 4, 2).unwrap(),
            Layout::contiguous([10]).slice(0, 3, 1, 1).unwrap(),
            Layout::from_parts(vec![0], vec![1], 5).unwrap(),
        ];
        for l in &views {
            let plan = RowPlan::new([l]);
            assert_eq!(plan.rows() * plan.inner_len, l.numel(), "{l:?}");
            assert_eq!(
                map1(&x, l, |v| v + 1),
                reference(&x, l).iter().map(|v| v + 1).collect::<Vec<_>>()
            );
            let c = Layout::contiguous(l.shape().to_vec());
            let y: Vec<i64> = (0..l.numel() as i64).map(|v| 100 * v).collect();
            let want: Vec<i64> = reference(&x, l)
                .iter()
                .zip(&y)
                .map(|(a, b)| a + b)
                .collect();
            assert_eq!(map2(&x, l, &y, &c, |a, b| a + b), want, "{l:?}");
            assert_eq!(map2(&y, &c, &x, l, |a, b| a + b), want, "{l:?}");
        }
    }

    #[test]
    fn large_transpose_copy() {
        let l = Layout::contiguous([300, 200]).permute(&[1, 0]).unwrap();
        let x: Vec<u32> = (0..60_000).collect();
        assert_eq!(gather_view(&x, &l), reference(&x, &l));
        let l3 = Layout::contiguous([3, 100, 120])
            .permute(&[0, 2, 1])
            .unwrap();
        let x3: Vec<u32> = (0..36_000).collect();
        assert_eq!(gather_view(&x3, &l3), reference(&x3, &l3));
    }
}
