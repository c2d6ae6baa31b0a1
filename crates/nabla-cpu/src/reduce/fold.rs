//! Folding runs of elements with an associative operation: multi-lane vectorised leaves combined
//! pairwise, so that float sums stay accurate (error growing with the logarithm of the length) and
//! fast.

use rayon::join;

/// Independent accumulators in a vectorised leaf (four AVX2 registers of `f32`).
pub(super) const LANES: usize = 32;
/// Longest contiguous run folded in one leaf.
pub(super) const LEAF: usize = 1024;
/// Longest strided run folded in one leaf (gathered into a stack buffer first).
const STRIDED_LEAF: usize = 128;
/// Runs at least this long are split across threads when parallelism is allowed.
pub(super) const PAR_LEAF: usize = 1 << 16;

crate::simd_kernel! {
    /// Folds a non-empty slice with `LANES` independent accumulators, then combines the lanes as a
    /// tree.
    pub(super) fn fold_lanes<T: Copy, F: Fn(T, T) -> T>(x: &[T], f: &F) -> T {
        if x.len() < LANES {
            let mut acc = x[0];
            for &v in &x[1..] {
                acc = f(acc, v);
            }
            return acc;
        }
        let mut acc: [T; LANES] = std::array::from_fn(|j| x[j]);
        let mut chunks = x[LANES..].chunks_exact(LANES);
        for c in &mut chunks {
            for j in 0..LANES {
                acc[j] = f(acc[j], c[j]);
            }
        }
        for (a, &v) in acc.iter_mut().zip(chunks.remainder()) {
            *a = f(*a, v);
        }
        let mut width = LANES;
        while width > 1 {
            width /= 2;
            for j in 0..width {
                acc[j] = f(acc[j], acc[j + width]);
            }
        }
        acc[0]
    }
}

crate::simd_kernel! {
    /// `dst[j] = f(dst[j], src[j])` over two slices of one length.
    pub(super) fn combine_into<T: Copy, F: Fn(T, T) -> T>(dst: &mut [T], src: &[T], f: &F) {
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = f(*d, s);
        }
    }
}

crate::simd_kernel! {
    /// `dst[j] = f(dst[j], f(f(a[j], b[j]), f(c[j], d[j])))` for four source rows `[a, b, c, d]`:
    /// one pass over `dst` per four rows.
    pub(super) fn combine4_into<T: Copy, F: Fn(T, T) -> T>(dst: &mut [T], src: [&[T]; 4], f: &F) {
        let n = dst.len();
        let [a, b, c, d] = src.map(|s| &s[..n]);
        for j in 0..n {
            dst[j] = f(dst[j], f(f(a[j], b[j]), f(c[j], d[j])));
        }
    }
}

/// Pairwise fold of a non-empty contiguous slice; halves longer than [`PAR_LEAF`] run on two
/// threads when `par` is set.
pub(super) fn fold_contiguous<T, F>(x: &[T], f: &F, par: bool) -> T
where
    T: Copy + Send + Sync,
    F: Fn(T, T) -> T + Sync,
{
    if x.len() <= LEAF {
        return fold_lanes(x, f);
    }
    let (l, r) = x.split_at(x.len() / 2);
    let (a, b) = if par && x.len() >= PAR_LEAF {
        join(|| fold_contiguous(l, f, par), || fold_contiguous(r, f, par))
    } else {
        (fold_contiguous(l, f, par), fold_contiguous(r, f, par))
    };
    f(a, b)
}

/// Pairwise fold of the `len >= 1` elements `x[off + t * stride]`, `t in 0..len`.
pub(super) fn fold_run<T, F>(x: &[T], off: usize, len: usize, stride: isize, f: &F, par: bool) -> T
where
    T: Copy + Send + Sync,
    F: Fn(T, T) -> T + Sync,
{
    if stride == 1 {
        return fold_contiguous(&x[off..off + len], f, par);
    }
    if len <= STRIDED_LEAF {
        let mut buf = [x[off]; STRIDED_LEAF];
        for (t, b) in buf[..len].iter_mut().enumerate() {
            *b = x[(off as isize + t as isize * stride) as usize];
        }
        return fold_lanes(&buf[..len], f);
    }
    let mid = len / 2;
    let right = (off as isize + mid as isize * stride) as usize;
    let (a, b) = if par && len >= PAR_LEAF {
        join(
            || fold_run(x, off, mid, stride, f, par),
            || fold_run(x, right, len - mid, stride, f, par),
        )
    } else {
        (
            fold_run(x, off, mid, stride, f, par),
            fold_run(x, right, len - mid, stride, f, par),
        )
    };
    f(a, b)
}
